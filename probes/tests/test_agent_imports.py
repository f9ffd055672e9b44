"""The agent runs where only python3 and numpy are installed (a NAS head, the knfsd guest).

Every agent module is imported in a fresh interpreter that refuses the backend's
own dependencies, laid out as the guest lays it out (``loupe`` and ``loupe_probes``
on PYTHONPATH), so a backend-only import in the agent's path fails here and not
only in the guest.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BACKEND_ONLY = ("pydantic", "pydantic_settings", "fastapi", "starlette", "uvicorn", "duckdb", "pyarrow", "httpx")

SCRIPT = r"""
import importlib, importlib.abc, sys
refused = set(sys.argv[1].split(","))

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in refused:
            raise ModuleNotFoundError(f"No module named {name!r} (not installed on an agent-only host)")
        return None

sys.meta_path.insert(0, Refuse())
for mod in sys.argv[2:]:
    importlib.import_module(mod)
print("imported", len(sys.argv) - 2)
"""


def agent_modules() -> list[str]:
    mods = []
    for p in sorted((REPO / "probes").rglob("*.py")):
        rel = p.relative_to(REPO / "probes")
        if "tests" in rel.parts or rel.name.startswith("test_"):
            continue
        parts = ["loupe_probes", *rel.with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        mods.append(".".join(parts))
    return mods


def test_every_agent_module_imports_without_the_backends_dependencies(tmp_path):
    (tmp_path / "loupe").symlink_to(REPO / "backend" / "loupe")
    (tmp_path / "loupe_probes").symlink_to(REPO / "probes")
    mods = agent_modules()
    assert "loupe_probes.agent" in mods and len(mods) > 10
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, ",".join(BACKEND_ONLY), *mods], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == f"imported {len(mods)}"
