"""The agent against the real backend (uvicorn on a loopback port): the frame contract holds end to end."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import uvicorn

from loupe.api.main import create_app
from loupe.config import Settings
from loupe_probes.agent import make_agent
from loupe_probes.spool import Spool

TOKEN = "contract-token"
ADMIN_PW = "agent-tests-admin-password"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def _backend(data_dir: Path, port: int) -> Iterator:
    """The backend serving on ``port`` until the block ends; yields its app (``app.state.loupe``)."""
    settings = Settings(data_dir=data_dir, port=port, local_agent=False, ingest_token=TOKEN, admin_password=ADMIN_PW)
    app = create_app(settings, start_agent=False)
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    t = threading.Thread(target=srv.run, daemon=True)
    t.start()
    deadline = time.time() + 20
    while not srv.started:
        assert time.time() < deadline and t.is_alive(), "backend did not start"
        time.sleep(0.05)
    try:
        yield app
    finally:
        srv.should_exit = True
        t.join(timeout=10)


@pytest.fixture
def server(tmp_path: Path):
    port = _free_port()
    with _backend(tmp_path, port):
        yield f"http://127.0.0.1:{port}"


def _viewer(server: str) -> httpx.Client:
    """A signed-in client that may read the API."""
    c = httpx.Client(base_url=server)
    r = c.post("/api/v1/auth/login", json={"user": "admin", "password": ADMIN_PW})
    assert r.status_code == 200, r.text
    return c


def test_backend_stores_everything_the_agent_sends(server: str) -> None:
    agent = make_agent(server, TOKEN, ["procfs", "synthetic"], demo_clients=5, seed=3, backfill=20, host="box")
    assert agent.run(threading.Event(), once=True)
    s = agent.stats
    assert s["sent"] >= 4 * 21 + 1 and s["accepted"] == s["sent"] and s["refused"] == s["duplicates"] == 0
    api = _viewer(server)
    listed = api.get("/api/v1/sources").json()
    by_name = {x["name"]: x for x in listed["sources"]}
    assert by_name["synthetic.nfs"]["demo"] and by_name["synthetic.nfs"]["host"] == "demo-nas"
    assert by_name["procfs.cpu"]["state"] == "active" and not by_name["procfs.cpu"]["demo"]
    q = api.get("/api/v1/query", params={"metric": "nfs.ops", "start": "-2m", "end": "now"}).json()
    assert sum(q["total"]) > 0


def test_frames_spooled_while_the_backend_is_down_survive_kill_9_and_are_stored_once_in_order(tmp_path: Path) -> None:
    port = _free_port()
    url, state = f"http://127.0.0.1:{port}", tmp_path / "agent"
    # 1. No backend: the agent (a real process) spools what it makes, until it is killed by SIGKILL.
    started = time.time()
    proc = subprocess.Popen([sys.executable, "-m", "loupe_probes.agent", "--server", url, "--token", TOKEN,
                             "--sources", "synthetic", "--demo-clients", "2", "--backfill", "3",
                             "--state-dir", str(state)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        while time.time() < started + 4 or not any(p.stat().st_size for p in state.glob("spool/*.seg")):
            assert time.time() < started + 30, "the agent spooled nothing"
            assert proc.poll() is None, proc.communicate()[0]
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        killed = time.time()
    finally:
        if proc.poll() is None:
            proc.kill()
    spooled = Spool.pending(state / "spool")
    assert {q.source for q in spooled} == {"synthetic@demo-nas"}
    for fam in ("nfs", "disk", "cpu", "net"):  # every second from the backfill's first up to the kill
        ts = [q.ts for q in spooled if q.family == fam]
        assert ts == list(range(ts[0], ts[-1] + 1)), (fam, ts)
        assert ts[0] <= int(started) and ts[-1] >= int(killed) - 3, (fam, ts, started, killed)
    # 2. The backend comes up and the agent starts again on the same state dir.
    with _backend(tmp_path / "data", port) as app:
        store = app.state.loupe.store
        stored: list[tuple[str, int, int]] = []  # (source, seq, ts) in the order the store took them
        ingest = store.ingest

        def recording(frames, **kw):
            out = ingest(frames, **kw)
            # the store takes a request's frames by (source, seq), whatever their order in the body
            stored.extend((f.source, f.seq, f.ts) for f in sorted(frames, key=lambda f: (f.source, f.seq))
                          if (f.source, f.seq) in out.stored)
            return out

        store.ingest = recording
        agent = make_agent(url, TOKEN, ["synthetic"], demo_clients=2, state_dir=state)
        stop = threading.Event()
        t = threading.Thread(target=agent.run, args=(stop,), daemon=True)
        t.start()
        deadline = time.time() + 30
        while len(stored) < len(spooled) + 8 and time.time() < deadline:  # and two seconds made since
            time.sleep(0.1)
        stop.set()
        t.join(timeout=15)
        assert not t.is_alive()
        # Every spooled frame, first and in order, with its own seq; then the new ones, after them.
        assert stored[:len(spooled)] == [(q.source, q.seq, q.ts) for q in spooled]
        assert len(stored) >= len(spooled) + 8 and stored[len(spooled)][2] > spooled[-1].ts
        assert [seq for _, seq, _ in stored] == sorted({seq for _, seq, _ in stored})  # none twice
        assert agent.stats["accepted"] == len(stored) and agent.stats["duplicates"] == 0
        assert store.high_water() == {"synthetic@demo-nas": stored[-1][1]}
        # 3. Killed after a delivery, before it wrote down how far it got: the frames go again,
        # and the backend counts them as duplicates instead of storing them twice.
        (state / "spool" / "ack.json").unlink()
        again = Spool.pending(state / "spool")
        assert again and [(q.source, q.seq, q.ts) for q in again] == stored[len(stored) - len(again):]
        before = len(stored)
        third = make_agent(url, TOKEN, ["synthetic"], demo_clients=2, state_dir=state)
        assert third.run(threading.Event(), once=True)
        assert third.stats["duplicates"] == len(again) and third.stats["accepted"] == len(stored) - before > 0
        assert [seq for _, seq, _ in stored] == sorted({seq for _, seq, _ in stored})
        assert Spool.pending(state / "spool") == []
