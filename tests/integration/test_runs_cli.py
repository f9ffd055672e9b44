"""`loupe run` as a user runs it: around a real command (fio), against a real `loupe serve`."""

import json
import os
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


def loupe_run(*args, data_dir=None, timeout=120):
    # LOUPE_DATA_DIR as on the server's machine: `loupe run` finds the server's operator token there.
    env = {**os.environ, **({"LOUPE_DATA_DIR": str(data_dir)} if data_dir else {})}
    env.pop("LOUPE_API_TOKEN", None)
    return subprocess.run([sys.executable, "-m", "loupe.cli", "run", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout, env=env)


def test_loupe_run_marks_the_run_imports_fio_and_prints_the_verdict(server_factory, tmp_path):
    if not shutil.which("fio"):
        unavailable("fio is not installed (make deps installs it)")
    s = server_factory("--no-local-agent")
    out = tmp_path / "fio.json"
    r = loupe_run("--name", "local write", "--server", s.base, "--results", str(out), "--client", "10.0.0.7", "--",
                  "fio", "--name=w", f"--filename={tmp_path / 'f'}", "--size=1M", "--bs=64k", "--rw=write",
                  "--output-format=json", f"--output={out}", data_dir=s.data_dir)
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
    r = loupe_run("--name", "fails", "--server", s.base, "--", sys.executable, "-c", "import sys; sys.exit(5)",
                  data_dir=s.data_dir)
    assert r.returncode == 5, r.stderr
    [run] = s.get("/api/v1/runs")["runs"]
    assert run["exit_code"] == 5 and not run["running"] and run["results"] == []
    r = loupe_run("--name", "x", "--server", f"http://127.0.0.1:{free_port()}", "--", "true")
    assert r.returncode == 2 and "cannot reach Loupe at http://127.0.0.1:" in r.stderr
    r = loupe_run("--name", "x", "--server", s.base)
    assert r.returncode == 2 and "give the benchmark's command after --" in r.stderr
    r = loupe_run("--name", "typo", "--server", s.base, "--", "no-such-benchmark-binary", data_dir=s.data_dir)
    assert r.returncode == 127 and "cannot start no-such-benchmark-binary" in r.stderr
    assert [x["name"] for x in s.get("/api/v1/runs")["runs"]] == ["fails"]  # no run left for it
    # without a token (not on the server's machine, none given) the error says what to give
    r = loupe_run("--name", "anon", "--server", s.base, "--", "true", data_dir=s.data_dir / "elsewhere")
    assert r.returncode == 2 and "401" in r.stderr and "--token" in r.stderr, r.stderr
