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

from loupe_probes.transport import tls_context

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, data_dir: Path, *args: str, env: dict | None = None, port: int | None = None):
        self.port = port or free_port()
        cert = (env or {}).get("LOUPE_TLS_CERT")
        self.base = f"{'https' if cert else 'http'}://127.0.0.1:{self.port}"
        # Under TLS, trust exactly the server's certificate, as its own agents do.
        self.verify = tls_context(cert) if cert else True
        self.log = open(data_dir.parent / f"serve-{self.port}.log", "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "loupe.cli", "serve", "--data-dir", str(data_dir), "--port", str(self.port), *args],
            stdout=self.log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}, cwd=ROOT,
        )
        self.data_dir = data_dir
        deadline = time.time() + 30
        while time.time() < deadline:
            assert self.proc.poll() is None, Path(self.log.name).read_text()
            try:
                if httpx.get(self.base + "/healthz", timeout=1, verify=self.verify).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            raise AssertionError("server did not answer /healthz in 30 s")
        # The operator token the server keeps for `loupe run` on its own machine: reads and runs.
        self.http = httpx.Client(base_url=self.base, timeout=10, verify=self.verify, headers={
            "Authorization": f"Bearer {(data_dir / 'cli.token').read_text().strip()}"})

    def post(self, path, body, expect=200):
        r = self.http.post(path, json=body)
        assert r.status_code == expect, r.text
        return r.json()

    def get(self, path, **params):
        r = self.http.get(path, params=params)
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
        self.http.close()
        self.log.close()


@pytest.fixture
def server_factory(tmp_path):
    started = []

    def start(*args, data_dir=None, env=None, port=None):
        s = Server(data_dir or tmp_path / "data", *args, env=env, port=port)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop(signal.SIGKILL)


class NfsLab:
    """The NFS lab's parts, and a `loupe serve` whose local agent runs only the NFS wire decoder."""

    def __init__(self, server_factory):
        from loupe.lab import Ganesha, Lab

        self.Lab, self.Ganesha, self._servers = Lab, Ganesha, server_factory

    def serve(self, lab, ganesha, export: str, also: tuple[str, ...] = ()) -> Server:
        """`also`: more local sources (e.g. bpf.net, procfs.net), each awaited active too."""
        from loupe.labcli import wire_decoder_env

        env = wire_decoder_env(lab, ganesha, export)
        env["LOUPE_LOCAL_SOURCES"] = ",".join((env["LOUPE_LOCAL_SOURCES"], *also))
        s = self._servers(env=env)
        for name in ("bpf.nfswire", *also):
            s.wait_for(lambda: any(x["name"] == name and x["state"] == "active"
                                   for x in s.get("/api/v1/sources")["sources"]), what=f"{name} active")
        return s


@pytest.fixture
def nfs_lab(server_factory):
    """The NFS lab, once it can run here: root, BPF and the lab packages."""
    require_lab("nfs-cat", "nfs-cp")
    return NfsLab(server_factory)


def require_lab(*tools: str) -> None:
    """Root, BPF, the wire decoder's object and the lab's tools (`tools` besides ip, ganesha and rpcbind)."""
    import shutil

    from loupe_probes.bpf.testing import REPO, require_bpf, unavailable

    if os.geteuid() != 0:
        unavailable("needs root: network namespaces, a bridge, nfs-ganesha and BPF")
    require_bpf(REPO / "probes" / "nfswire" / "nfswire.bpf.o")
    missing = [t for t in ("ip", "ganesha.nfsd", "rpcbind", *tools) if shutil.which(t) is None]
    if missing:
        unavailable(f"not installed: {', '.join(missing)} (make deps installs the lab packages)")


@pytest.fixture(name="require_lab")
def _require_lab_fixture():
    """`require_lab` for test modules (a conftest is not importable by name here)."""
    return require_lab
