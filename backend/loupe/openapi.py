"""Print the OpenAPI document (the TypeScript client is generated from it)."""

import json

from .api.main import create_app
from .config import Settings


def main() -> None:
    app = create_app(Settings(data_dir="/nonexistent"), start_agent=False)
    print(json.dumps(app.openapi(), indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
