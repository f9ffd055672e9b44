"""The CPU probe: mode split and naming (table-driven) and, as root, a real busy
process pinned to one CPU, measured by the probe and by the kernel's own clock."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loupe.frame import Frame
from loupe_probes.bpf.testing import require_bpf
from loupe_probes.cpu import CpuProbe, application, split_modes
from loupe_probes.cpu.probe import OTHER, CpuKey, CpuVal


@pytest.mark.parametrize("us, utime, stime, niced, expect", [
    (1_000_000, 250, 0, False, [("user", 1_000_000)]),
    (1_000_000, 0, 4, False, [("system", 1_000_000)]),
    (1_000_000, 3, 1, False, [("user", 750_000), ("system", 250_000)]),
    (1_000_000, 3, 1, True, [("nice", 750_000), ("system", 250_000)]),
    (999, 1, 2, False, [("user", 333), ("system", 666)]),  # parts always sum to the whole
    (120, 0, 0, False, [("", 120)]),  # no tick landed: no honest split
    (0, 5, 5, False, []),
])
def test_split_modes(us, utime, stime, niced, expect):
    parts = split_modes(us, utime, stime, niced)
    assert parts == expect
    assert sum(v for _, v in parts) == us


@pytest.mark.parametrize("comm, pid, name", [
    (b"nfsd\0\0\0\0\0\0\0\0\0\0\0\0", 0, "nfsd"),
    (b"ganesha.nfsd\0\0\0\0", 812, "ganesha.nfsd[812]"),
    (b"kworker/u8:2\0junk", 0, "kworker/u8:2"),  # bytes after the NUL are not the name
    (b"0123456789abcde\0", 0, "0123456789abcde"),  # TASK_COMM_LEN - 1 characters
    (b"\0" * 16, 0, "(unnamed)"),
    (b"caf\xc3\xa9\xff\0", 0, "caf\u00e9\ufffd"),  # not UTF-8: replaced, not an error
])
def test_application(comm, pid, name):
    assert application(comm, pid) == name


def _k(cpu: int, comm: bytes, pid: int = 0, niced: int = 0) -> bytes:
    return bytes(CpuKey(cpu, pid, comm, niced))


def test_decode():
    """Rows per cpu x mode x application in µs; keys differing only after the NUL merge;
    overflow shows as (other); frames are valid."""
    drained = {
        "oncpu": [(_k(0, b"nfsd"), bytes(CpuVal(2_000_000, 0, 8_000_000))),
                  (_k(1, b"fio"), bytes(CpuVal(500_000_000, 100_000_000, 25_000_000))),
                  (_k(1, b"fio\0x"), bytes(CpuVal(500_000_000, 100_000_000, 25_000_000))),
                  (_k(1, b"backup", niced=1), bytes(CpuVal(10_000_000, 4_000_000, 4_000_000))),
                  (_k(10, b"sh"), bytes(CpuVal(40_000, 0, 0)))],
        "other": [(bytes(4), bytes(CpuVal(3_000_000, 1, 1)))],
    }
    out = CpuProbe("h1", per_pid=False).decode(drained, 1)
    assert [(f, h) for f, h, _ in out] == [("cpu", "h1")]
    rows = [(r["dims"]["cpu"], r["dims"]["mode"], r["dims"]["application"], r["count"]) for r in out[0][2]]
    assert rows == [
        ("", "system", OTHER, 1500), ("", "user", OTHER, 1500),
        ("cpu0", "system", "nfsd", 2000),
        ("cpu1", "nice", "backup", 5000), ("cpu1", "system", "backup", 5000),
        ("cpu1", "system", "fio", 200_000), ("cpu1", "user", "fio", 800_000),
        ("cpu10", "", "sh", 40),
    ]
    Frame(source="bpf.cpu@h1", seq=1, ts=1, family="cpu", host="h1", rows=out[0][2])


@pytest.mark.parametrize("env, expect", [("1", True), ("true", True), ("0", False), ("", False)])
def test_per_pid_option(monkeypatch, env, expect):
    monkeypatch.setenv("LOUPE_CPU_PER_PID", env)
    assert CpuProbe("h").per_pid is expect


# ---------------------------------------------------------------------- a real busy process

BURN = r"""
import ctypes, os, sys, time
cpu, name, seconds = int(sys.argv[1]), sys.argv[2].encode(), float(sys.argv[3])
os.sched_setaffinity(0, {cpu})  # returns once the task runs there
ctypes.CDLL(None).prctl(15, name, 0, 0, 0)  # PR_SET_NAME
time.sleep(0.02)  # switch out: the next stint starts under the new name
t0 = time.thread_time_ns()
x = 0
while time.thread_time_ns() - t0 < seconds * 1e9:
    for i in range(20000):  # user-space work; the clock is a system call, read rarely
        x += i * i
print(time.thread_time_ns() - t0, flush=True)
os._exit(0)
"""


def _exec_ns(pid: int) -> int:
    """The kernel's own sum_exec_runtime of a task (ns), from /proc/<pid>/schedstat."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


def _time_of(out, name: str) -> dict[tuple[str, str], int]:
    got: dict[tuple[str, str], int] = {}
    for _, _, rows in out:
        for r in rows:
            if r["dims"]["application"] == name:
                k = (r["dims"]["cpu"], r["dims"]["mode"])
                got[k] = got.get(k, 0) + r["count"]
    return got


@pytest.mark.parametrize("per_pid", [False, True])
def test_busy_process_on_one_cpu(per_pid):
    require_bpf()
    cpu = max(os.sched_getaffinity(0))
    name = f"loupe-burn-{secrets.token_hex(2)}"
    probe = CpuProbe("testhost", per_pid=per_pid)
    child = None
    try:
        assert probe.start(), probe.reason
        probe.collect(0)
        child = subprocess.Popen([sys.executable, "-c", BURN, str(cpu), name, "1.5"], stdout=subprocess.PIPE,
                                 text=True)
        while _exec_ns(child.pid) < 800_000_000 and child.poll() is None:
            time.sleep(0.05)  # wait until it has burnt well over a flush interval
        middle = probe.collect(1)
        measured_ns = int(child.communicate(timeout=60)[0])
        assert child.returncode == 0
        end = probe.collect(2)
        st = probe.status()[0]
    finally:
        if child is not None and child.poll() is None:
            child.kill()
        probe.close()
    app = f"{name}[{child.pid}]" if per_pid else name
    mid, fin = _time_of(middle, app), _time_of(end, app)
    total: dict[tuple[str, str], int] = {}
    for part in (mid, fin):
        for k, v in part.items():
            total[k] = total.get(k, 0) + v
    mine = sum(v for (c, _), v in total.items() if c == f"cpu{cpu}")
    elsewhere = sum(v for (c, _), v in total.items() if c != f"cpu{cpu}")
    measured_us = measured_ns / 1000
    assert abs(mine - measured_us) <= 0.05 * measured_us, (mine, measured_us, total)
    assert elsewhere == 0, total  # pinned before it was renamed
    # A busy loop in user space: the tick samples put nearly all of it in user mode.
    assert total.get((f"cpu{cpu}", "user"), 0) >= 0.9 * mine, total
    if "cpu_tick" not in st["reason"]:
        # Credited while it ran, not only when it stopped (the timer flush).
        assert sum(mid.values()) >= 0.5 * 800_000, (mid, fin)
    assert st["state"] == "active" and st["cost"]["runs_per_s"] > 0, st
    for out in (middle, end):
        for fam, host, rows in out:
            Frame(source="bpf.cpu@testhost", seq=1, ts=1, family=fam, host=host, rows=rows)
