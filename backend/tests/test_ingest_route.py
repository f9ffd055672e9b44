"""POST /api/v1/ingest with a bad JSON body: an error that names the problem."""

import pytest
from factories import ADMIN_PW
from fastapi.testclient import TestClient

from loupe.api.main import create_app
from loupe.config import Settings

TOKEN = "route-token"
AUTH = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}


@pytest.fixture
def client(tmp_path):
    app = create_app(Settings(data_dir=tmp_path, local_agent=False, ingest_token=TOKEN, admin_password=ADMIN_PW))
    with TestClient(app) as c:
        yield c


@pytest.mark.parametrize("content, status, detail, want", [
    (b"", 422, "Field required", {"type": "missing", "loc": ["body"]}),
    (b'{"frames": [', 422, "12: JSON decode error", {"type": "json_invalid", "loc": ["body", 12]}),
    (b'{"frames": 3}', 422, "frames: Input should be a valid list", {"type": "list_type", "loc": ["body", "frames"]}),
    (b'{"frames": [], "agent": ' + b"[" * 5000 + b"]" * 5000 + b"}", 400, "parsing the body", None),
])
def test_bad_json_bodies_get_the_error_that_names_the_problem(client, content, status, detail, want):
    r = client.post("/api/v1/ingest", content=content, headers=AUTH)
    assert r.status_code == status and detail in r.json()["detail"], r.text
    if want is not None:
        assert {k: r.json()["errors"][0][k] for k in want} == want
