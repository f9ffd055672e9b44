import time

import pytest
from factories import NOW

from loupe.store.duckdb_store import DuckDBStore


@pytest.fixture
def store(tmp_path):
    s = DuckDBStore(tmp_path / "t.duckdb", retain={"second": 48 * 3600, "minute": 30 * 86400, "hour": 365 * 86400},
                    clock=lambda: NOW)
    yield s
    s.close()


@pytest.fixture
def now():
    return NOW


@pytest.fixture
def wallclock():
    return int(time.time())
