"""`loupe run` as a user runs it: around a real command (fio), against a real `loupe serve`."""

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from loupe_probes.bpf.testing import unavailable

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def loupe_run(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "loupe.cli", "run", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)


def test_loupe_run_marks_the_run_imports_fio_and_prints_the_verdict(server_factory, tmp_path):
    if not shutil.which("fio"):
        unavailable("fio is not installed (make deps installs it)")
    s = server_factory("--no-local-agent")
    out = tmp_path / "fio.json"
    r = loupe_run("--name", "local write", "--server", s.base, "--results", str(out), "--client", "10.0.0.7", "--",
                  "fio", "--name=w", f"--filename={tmp_path / 'f'}", "--size=1M", "--bs=64k", "--rw=write",
                  "--output-format=json", f"--output={out}")
    # fio succeeded, but nothing crossed an NFS wire for 10.0.0.7 here: the report fails, exit 3
    assert r.returncode == 3, r.stderr
    assert "verdict fail" in r.stderr and "10.0.0.7: no NFS reads or writes from this address" in r.stderr
    [run] = s.get("/api/v1/runs")["runs"]
    assert run["name"] == "local write" and not run["running"] and run["exit_code"] == 0
    assert run["end"] > run["start"] and run["command"][0] == "fio"
    fio = json.loads(out.read_text())["jobs"][0]
    assert run["results"] == [dict(client="10.0.0.7", read_bytes=0, write_bytes=fio["write"]["io_bytes"], read_ops=0,
                                   write_ops=fio["write"]["total_ios"], create_ops=0,
                                   runtime=fio["write"]["runtime"] / 1000)]
    assert run["results"][0]["write_bytes"] == 1 << 20
    rep = s.get(f"/api/v1/runs/{run['id']}/report")
    assert rep["verdict"] == "fail" and rep["failed"] == ["10.0.0.7"]


def test_loupe_run_passes_on_the_commands_exit_status_and_names_an_unreachable_server(server_factory):
    s = server_factory("--no-local-agent")
    r = loupe_run("--name", "fails", "--server", s.base, "--", sys.executable, "-c", "import sys; sys.exit(5)")
    assert r.returncode == 5, r.stderr
    [run] = s.get("/api/v1/runs")["runs"]
    assert run["exit_code"] == 5 and not run["running"] and run["results"] == []
    r = loupe_run("--name", "x", "--server", f"http://127.0.0.1:{free_port()}", "--", "true")
    assert r.returncode == 2 and "cannot reach Loupe at http://127.0.0.1:" in r.stderr
    r = loupe_run("--name", "x", "--server", s.base)
    assert r.returncode == 2 and "give the benchmark's command after --" in r.stderr
    r = loupe_run("--name", "typo", "--server", s.base, "--", "no-such-benchmark-binary")
    assert r.returncode == 127 and "cannot start no-such-benchmark-binary" in r.stderr
    assert [x["name"] for x in s.get("/api/v1/runs")["runs"]] == ["fails"]  # no run left for it
