"""Fixtures of the knfsd guest tests (``pytest -m kernel tests/kernel``, i.e. ``make test-kernel``).

``guest_image``: the cached guest image (built on first use, ~2-3 min; skips when
root, qemu or debootstrap is missing). ``knfsd_guest``: a function that boots the
guest, optionally starts a background command in it (e.g. the Loupe agent pushing
to ``http://10.0.2.2:PORT``), runs the knfsd + fio scenario and returns a
``guest.Scenario`` (fio's JSON per client, mount lines, nfsd counters, the
command's log). ``loupe_server``: a real ``loupe serve`` on the host, on a free port;
``loupe_server_on``: a function that starts one on a given data directory.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import guest  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "kernel: boots the knfsd QEMU guest (make test-kernel); needs root and qemu")


@pytest.fixture(scope="session")
def guest_image() -> Path:
    if why := guest.missing_prerequisites():
        pytest.skip(why)
    return guest.build_image()


@pytest.fixture(scope="session")
def knfsd_guest(guest_image, tmp_path_factory):
    """Call with the keywords of ``guest.knfsd_scenario``; each call is one boot."""

    def scenario(**kw) -> guest.Scenario:
        kw.setdefault("job_dir", tmp_path_factory.mktemp("knfsd-job"))
        return guest.knfsd_scenario(image=guest_image, **kw)

    return scenario


class LoupeServer:
    """``loupe serve`` on 127.0.0.1:<free port> with an ingest token; stopped by PID."""

    def __init__(self, data_dir: Path):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.token = secrets.token_hex(16)
        self.base = f"http://127.0.0.1:{self.port}"
        self.guest_url = f"http://{guest.HOST_FROM_GUEST}:{self.port}"  # the same server, seen from the guest
        data_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = data_dir / "serve.log"
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "loupe.cli", "serve", "--no-local-agent", "--host", "127.0.0.1",
             "--port", str(self.port), "--data-dir", str(data_dir)],
            stdout=self._log, stderr=subprocess.STDOUT, cwd=guest.REPO,
            env={**os.environ, "LOUPE_INGEST_TOKEN": self.token})
        import httpx

        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"loupe serve exited {self.proc.returncode}:\n{self.log_path.read_text()}")
            try:
                if httpx.get(self.base + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"loupe serve did not answer /healthz:\n{self.log_path.read_text()}")
            time.sleep(0.2)
        # The operator token the server keeps for programs on its machine; the guest's scripts use it too.
        self.api_token = (data_dir / "cli.token").read_text().strip()

    def get(self, path: str, **params):
        return self._call("GET", path, params=params)

    def post(self, path: str, body: dict):
        return self._call("POST", path, json=body)

    def _call(self, method: str, path: str, **kw):
        import httpx

        r = httpx.request(method, self.base + path, timeout=10, headers={"Authorization": f"Bearer {self.api_token}"},
                          **kw)
        r.raise_for_status()
        return r.json()

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._log.close()


@pytest.fixture(scope="module")
def loupe_server(tmp_path_factory):
    server = LoupeServer(tmp_path_factory.mktemp("loupe-server"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def loupe_server_on():
    """Call with a data directory (e.g. one a `loupe lab` left behind); stopped after the test."""
    started = []

    def start(data_dir: Path) -> LoupeServer:
        started.append(LoupeServer(data_dir))
        return started[-1]

    yield start
    for server in started:
        server.stop()
