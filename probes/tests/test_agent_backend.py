"""The agent against the real backend (uvicorn on a loopback port): the frame contract holds end to end."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import httpx
import pytest
import uvicorn

from loupe.api.main import create_app
from loupe.config import Settings
from loupe_probes.agent import make_agent

TOKEN = "contract-token"


@pytest.fixture
def server(tmp_path: Path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = Settings(data_dir=tmp_path, port=port, local_agent=False, ingest_token=TOKEN)
    srv = uvicorn.Server(uvicorn.Config(create_app(settings, start_agent=False), host="127.0.0.1", port=port,
                                        log_level="warning"))
    t = threading.Thread(target=srv.run, daemon=True)
    t.start()
    deadline = time.time() + 20
    while not srv.started:
        assert time.time() < deadline and t.is_alive(), "backend did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    t.join(timeout=10)


def test_backend_stores_everything_the_agent_sends(server: str) -> None:
    agent = make_agent(server, TOKEN, ["procfs", "synthetic"], demo_clients=5, seed=3, backfill=20, host="box")
    assert agent.run(threading.Event(), once=True)
    s = agent.stats
    assert s["sent"] >= 4 * 21 + 1 and s["accepted"] == s["sent"] and s["refused"] == s["duplicates"] == 0
    listed = httpx.get(f"{server}/api/v1/sources").json()
    by_name = {x["name"]: x for x in listed["sources"]}
    assert by_name["synthetic.nfs"]["demo"] and by_name["synthetic.nfs"]["host"] == "demo-nas"
    assert by_name["procfs.cpu"]["state"] == "active" and not by_name["procfs.cpu"]["demo"]
    q = httpx.get(f"{server}/api/v1/query", params={"metric": "nfs.ops", "start": "-2m", "end": "now"}).json()
    assert sum(q["total"]) > 0
