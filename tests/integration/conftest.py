"""Shared fixtures of the integration tests: a real `loupe serve` process on a free port,
started and stopped by PID."""

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

    def post(self, path, body, expect=200):
        r = httpx.post(self.base + path, json=body, timeout=10)
        assert r.status_code == expect, r.text
        return r.json()

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
