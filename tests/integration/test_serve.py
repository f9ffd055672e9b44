"""`loupe serve` as a user runs it: a real process on a free port, this machine's procfs data,
the demo NAS, and a kill -9 restart. Servers are started and stopped by PID."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, data_dir: Path, *args: str, env: dict | None = None):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = open(data_dir.parent / f"serve-{self.port}.log", "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "loupe.cli", "serve", "--data-dir", str(data_dir), "--port", str(self.port), *args],
            stdout=self.log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}, cwd=ROOT,
        )
        deadline = time.time() + 30
        while time.time() < deadline:
            assert self.proc.poll() is None, Path(self.log.name).read_text()
            try:
                if httpx.get(self.base + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise AssertionError("server did not answer /healthz in 30 s")

    def get(self, path, **params):
        r = httpx.get(self.base + path, params=params, timeout=10)
        assert r.status_code == 200, r.text
        return r.json()

    def wait_for(self, pred, timeout=20, what=""):
        deadline = time.time() + timeout
        while time.time() < deadline:
            v = pred()
            if v:
                return v
            time.sleep(0.5)
        raise AssertionError(f"timed out waiting for {what}; log:\n{Path(self.log.name).read_text()[-3000:]}")

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


@pytest.fixture
def server_factory(tmp_path):
    started = []

    def start(*args, data_dir=None, env=None):
        s = Server(data_dir or tmp_path / "data", *args, env=env)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop(signal.SIGKILL)


def _active(s, family):
    return s.get("/api/v1/sources")["families"].get(family)


def test_serve_shows_this_machines_real_cpu_disk_and_network(server_factory):
    s = server_factory()
    s.wait_for(lambda: all(_active(s, f) for f in ("cpu", "net")), what="procfs sources active")
    q = s.wait_for(lambda: (lambda r: r if sum(r["total"]) > 0 else None)(
        s.get("/api/v1/query", metric="cpu.util", by="mode", start="-30s", step=1)), what="cpu data")
    # Real /proc/stat deltas: all modes of all CPUs add up to about 100 % per CPU each second
    ncpu = os.cpu_count()
    full = [t for t in q["total"] if t > 0][:-1] or [t for t in q["total"] if t > 0]
    assert all(abs(t - 100 * ncpu) < 15 * ncpu for t in full), (full, ncpu)
    assert {x["key"] for x in q["series"]} & {"user", "system", "idle"}
    net = s.wait_for(lambda: (lambda r: r if r["series"] else None)(
        s.get("/api/v1/query", metric="net.bytes", by="interface", start="-30s", step=1)), what="net data")
    assert "lo" in {x["key"] for x in net["series"]} or net["elements"] >= 1
    src = s.get("/api/v1/sources")
    assert src["families"]["nfs"] is False  # no NFS source without --demo or BPF
    assert "needs the BPF agent" in src["missing"]["nfs"]
    assert all(not x["demo"] for x in src["sources"])


def test_demo_nas_with_history_and_drilldown(server_factory):
    s = server_factory("--demo", "--demo-backfill", "120")
    q = s.wait_for(lambda: (lambda r: r if r["elements"] >= 20 else None)(
        s.get("/api/v1/query", metric="nfs.ops", by="client", start="-2m", top=10)), timeout=60,
        what="20 demo clients")
    assert q["statistic"]["name"] == "NFS operations per second broken down by client"
    # history: the backfilled minute before the server started has data
    assert sum(q["total"][: len(q["total"]) // 2]) > 0
    client = q["series"][0]["key"]
    f = s.get("/api/v1/query", metric="nfs.ops", by="file", where=f"client={client}", start="-2m")
    assert f["series"] and f["statistic"]["name"] == \
        f"NFS operations per second for client {client} broken down by file"
    hm = s.get("/api/v1/heatmap", metric="nfs.ops", dim="latency", where=[f"client={client}",
               f"file={f['series'][0]['key']}"], start="-2m")
    assert hm["cells"] and hm["buckets"]
    src = s.get("/api/v1/sources")
    assert any(x["demo"] and x["host"] == "demo-nas" for x in src["sources"])


def test_kill_9_restart_keeps_acknowledged_data(server_factory, tmp_path):
    data = tmp_path / "crash"
    env = {"LOUPE_INGEST_TOKEN": "t"}
    s = server_factory("--no-local-agent", data_dir=data, env=env)
    now = int(time.time())
    acked = 0
    for i in range(40):
        fr = {"source": "k@h", "seq": i + 1, "ts": now - 60 + i, "family": "nfs", "host": "h",
              "rows": [{"dims": {"client": "c1", "op": "read"}, "count": 10}]}
        r = httpx.post(s.base + "/api/v1/ingest", json={"frames": [fr]}, headers={"Authorization": "Bearer t"})
        assert r.json()["accepted"] == 1
        acked += 1
    s.stop(signal.SIGKILL)
    s2 = server_factory("--no-local-agent", data_dir=data, env=env)
    q = s2.get("/api/v1/query", metric="nfs.ops", start=str(now - 120), end=str(now), step=1)
    assert sum(q["total"]) == 10.0 * acked  # every acknowledged frame, once
    # replaying the same frames after the restart stores nothing twice
    fr = {"source": "k@h", "seq": 5, "ts": now - 56, "family": "nfs", "host": "h", "rows": [{"count": 99}]}
    r = httpx.post(s2.base + "/api/v1/ingest", json={"frames": [fr]}, headers={"Authorization": "Bearer t"})
    assert r.json()["duplicates"] == 1
