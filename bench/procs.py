"""What the load and soak benchmarks share: a free port, /proc samples, and a real `loupe serve`
started and stopped by PID."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_sample(pid: int) -> tuple[float, int]:
    """(CPU seconds so far, RSS bytes) of a process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    rss = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    return cpu, rss


@contextmanager
def served(tmp: Path, args: list[str], env: dict[str, str]):
    """`loupe serve ARGS --port P --data-dir TMP/data`, healthy, as (process, base URL); its log is TMP/serve.log."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = open(tmp / "serve.log", "w")
    srv = subprocess.Popen([sys.executable, "-m", "loupe.cli", "serve", *args, "--port", str(port),
                            "--data-dir", str(tmp / "data")], stdout=log, stderr=subprocess.STDOUT,
                           env=dict(os.environ, **env), cwd=ROOT)
    try:
        deadline = time.time() + 120
        while True:
            try:
                if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.time() > deadline or srv.poll() is not None:
                raise SystemExit(f"loupe serve did not start; log: {tmp / 'serve.log'}")
            time.sleep(0.2)
        yield srv, base
    finally:
        srv.send_signal(signal.SIGTERM)
        try:
            srv.wait(30)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()
        log.close()
