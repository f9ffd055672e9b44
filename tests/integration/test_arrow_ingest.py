"""Frame version 3 end to end: a real `loupe agent` process pushing Arrow IPC to a real `loupe serve`,
its spool replayed after the server was away, and its fall-back to JSON behind a server that refuses
Arrow (a real HTTP server in front of `loupe serve`). Processes are started and stopped by PID."""

import http.client
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from loupe.arrow_ipc import MEDIA_TYPE
from loupe_probes.registry import Options, build
from loupe_probes.spool import Spool

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "arrow-token"
ENV = {"LOUPE_INGEST_TOKEN": TOKEN}
CLIENTS, SEED = 3, 11


def agent(url: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "loupe.cli", "agent", "--server", url, "--token", TOKEN,
                             "--sources", "synthetic", "--demo-clients", str(CLIENTS), "--seed", str(SEED), *args],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def run_once(url: str, *args: str) -> str:
    proc = agent(url, "--once", *args)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    return out


def expected_ops(seconds) -> dict[int, float]:
    """NFS operations per second as the synthetic NAS makes them (a pure function of seed and second)."""
    nas = build(["synthetic"], Options(host="x", demo_clients=CLIENTS, seed=SEED))[0]
    return {ts: float(sum(r.get("count", 0) for fam, _, rows in nas.collect(ts) if fam == "nfs" for r in rows))
            for ts in seconds}


def stored_ops(server, seconds) -> dict[int, float]:
    q = server.get("/api/v1/query", metric="nfs.ops", start=str(min(seconds)), end=str(max(seconds) + 1), step=1)
    return {ts: v for ts, v in zip(q["timestamps"], q["total"]) if ts in seconds}


def ingest_requests(server) -> dict[str, float]:
    text = server.http.get("/metrics").text
    return {fmt: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
            for fmt in ("json", "arrow") if line.startswith(f'loupe_ingest_requests_total{{format="{fmt}"}}')}


def test_the_agent_sends_arrow_and_the_server_stores_every_operation(server_factory):
    s = server_factory("--no-local-agent", env=ENV)
    start = int(time.time())
    out = run_once(s.base, "--backfill", "20")
    assert "does not read frame version 3" not in out
    seconds = set(range(start - 15, start))  # backfilled, whenever in its first seconds the agent started
    assert stored_ops(s, seconds) == expected_ops(seconds)
    counts = ingest_requests(s)
    assert counts["arrow"] >= 1 and counts["json"] == 0, counts


def test_a_spool_of_arrow_frames_is_replayed_once_the_server_is_back(server_factory, tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    state = tmp_path / "agent"
    url = f"http://127.0.0.1:{port}"
    proc = agent(url, "--state-dir", str(state), "--backfill", "5")
    try:  # nothing listens on the port: the agent spools what it makes (4 families a second)
        deadline = time.time() + 30
        while _segments(state).count(b"LSP2") < 4 * 8:
            assert time.time() < deadline and proc.poll() is None, "the agent spooled nothing"
            time.sleep(0.5)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    spooled = Spool.pending(state / "spool")
    assert all(q.arrow and not q.json for q in spooled)  # version 3, on disk as Arrow parts
    raw = _segments(state)
    assert raw.count(b"LSP2") >= len(spooled) and b"LSP1" not in raw
    s = server_factory("--no-local-agent", env=ENV, port=port)
    run_once(url, "--state-dir", str(state))
    seconds = {q.ts for q in spooled if q.family == "nfs"}
    assert stored_ops(s, seconds) == expected_ops(seconds)
    assert Spool.pending(state / "spool") == [] and ingest_requests(s)["json"] == 0


def _segments(state: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((state / "spool").glob("*.seg")))


class RefusesArrow:
    """A real HTTP server in front of `loupe serve` that answers 415 to Arrow bodies, as a server
    without frame version 3 would, and passes everything else through."""

    def __init__(self, backend_port: int) -> None:
        self.seen: list[tuple[str, int]] = []  # (content type, status answered)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                ctype = self.headers.get("Content-Type", "")
                if ctype == MEDIA_TYPE:
                    status, out = 415, b'{"detail": "unsupported media type"}'
                else:
                    conn = http.client.HTTPConnection("127.0.0.1", backend_port, timeout=30)
                    conn.request("POST", self.path, body=body, headers={
                        "Content-Type": ctype, "Authorization": self.headers.get("Authorization", "")})
                    resp = conn.getresponse()
                    status, out = resp.status, resp.read()
                    conn.close()
                outer.seen.append((ctype, status))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_behind_a_server_that_refuses_arrow_the_agent_sends_json_and_says_so_once(server_factory):
    s = server_factory("--no-local-agent", env=ENV)
    proxy = RefusesArrow(s.port)
    try:
        start = int(time.time())
        out = run_once(proxy.url, "--backfill", "20")
    finally:
        proxy.close()
    assert out.count("does not read frame version 3") == 1, out
    assert proxy.seen[0] == (MEDIA_TYPE, 415)
    assert all(status == 200 for ctype, status in proxy.seen[1:]) and len(proxy.seen) >= 2
    assert {ctype for ctype, _ in proxy.seen[1:]} == {"application/json"}  # no Arrow again for a while
    seconds = set(range(start - 15, start))  # backfilled, whenever in its first seconds the agent started
    assert stored_ops(s, seconds) == expected_ops(seconds)
    counts = ingest_requests(s)
    assert counts["json"] == len(proxy.seen) - 1 and counts["arrow"] == 0, counts
