"""The CPU probe's declaration: map layouts (mirroring ``cpu.bpf.h``) and decoding.

Rows of family ``cpu`` carry cpu, mode and application; ``count`` is CPU
microseconds (1e6 per second is 100 % of one CPU), exact: measured from context
switch to context switch (and at timer interrupts for tasks that run on).

Mode: the kernel samples where each timer tick lands (user or kernel) into the
task's utime/stime, the same sampling /proc/stat's user/system come from. The
exact on-CPU time of a row is split in the ratio of those samples; a row no tick
landed in (an application that ran only briefly) has no split and keeps mode
``""``. User time of a task with nice > 0 is ``nice``, as in /proc/stat.
Interrupts serviced while a task ran are inside its time (as a stopwatch sees it).

``LOUPE_CPU_PER_PID=1`` keys by process too: application ``name[pid]``.
"""

from __future__ import annotations

import ctypes
import os

from ..bpf import libbpf
from ..bpf.libbpf import BpfObject
from ..bpf.probe import BpfProbe
from ..source import Collected

COMM_LEN = 16
OTHER = "(other)"


class CpuKey(ctypes.Structure):
    _fields_ = [("cpu", ctypes.c_uint32), ("pid", ctypes.c_uint32), ("comm", ctypes.c_char * COMM_LEN),
                ("niced", ctypes.c_uint8), ("pad", ctypes.c_uint8 * 3)]


class CpuVal(ctypes.Structure):
    _fields_ = [("ns", ctypes.c_uint64), ("utime", ctypes.c_uint64), ("stime", ctypes.c_uint64)]


class CpuConfig(ctypes.Structure):
    _fields_ = [("per_pid", ctypes.c_uint32), ("pad", ctypes.c_uint32)]


def application(comm: bytes, pid: int) -> str:
    """The application's name: the process name, with ``[pid]`` when keyed per process."""
    name = comm.split(b"\0", 1)[0].decode("utf-8", "replace") or "(unnamed)"
    return f"{name}[{pid}]" if pid else name


def split_modes(us: int, utime: int, stime: int, niced: bool) -> list[tuple[str, int]]:
    """Split ``us`` microseconds into (mode, us) in the ratio utime:stime; no ratio
    (no tick sampled) keeps them unsplit under mode ``""``. Parts sum to ``us``."""
    if us <= 0:
        return []
    if utime + stime == 0:
        return [("", us)]
    user = round(us * utime / (utime + stime))
    parts = [("nice" if niced else "user", user), ("system", us - user)]
    return [(m, v) for m, v in parts if v]


def per_pid_from_env() -> bool:
    return os.environ.get("LOUPE_CPU_PER_PID", "").strip().lower() in ("1", "true", "yes", "on")


class CpuProbe(BpfProbe):
    name = "bpf.cpu"
    families = ("cpu",)
    OBJECT = "cpu.bpf.o"
    PROGRAMS = ("cpu_switch",)
    OPTIONAL_PROGRAMS = ("cpu_tick",)
    CUMULATIVE = ("oncpu",)  # running tasks are credited every few ms: never delete a busy key
    COUNTERS = ("drops", "other")

    def __init__(self, host: str, per_pid: bool | None = None, **kw) -> None:
        super().__init__(host, **kw)
        self.per_pid = per_pid_from_env() if per_pid is None else per_pid

    def requirements(self) -> str | None:
        if not libbpf.btf_has("btf_trace_sched_switch"):
            return "no sched:sched_switch tracepoint in this kernel's BTF (tp_btf needs Linux 5.5+)"
        return None

    def prepare(self, obj: BpfObject) -> None:
        obj.map("cpu_config").update((0).to_bytes(4, "little"), bytes(CpuConfig(int(self.per_pid), 0)))
        obj.map("running").clear()  # stints from before a suspend are not anyone's now

    def decode(self, drained: dict[str, list[tuple[bytes, bytes]]], ts: int) -> Collected:
        acc: dict[tuple[int, str, bool], list[int]] = {}
        for kb, vb in drained["oncpu"]:
            k, v = CpuKey.from_buffer_copy(kb), CpuVal.from_buffer_copy(vb)
            a = acc.setdefault((k.cpu, application(k.comm, k.pid), bool(k.niced)), [0, 0, 0])
            a[0] += v.ns
            a[1] += v.utime
            a[2] += v.stime
        rows: dict[tuple[str, str, str], int] = {}
        for (cpu, app, niced), (ns, ut, st) in acc.items():
            for mode, us in split_modes(round(ns / 1000), ut, st, niced):
                key = (f"cpu{cpu}", mode, app)
                rows[key] = rows.get(key, 0) + us
        other = CpuVal.from_buffer_copy(drained["other"][0][1])
        for mode, us in split_modes(round(other.ns / 1000), other.utime, other.stime, False):
            rows[("", mode, OTHER)] = rows.get(("", mode, OTHER), 0) + us  # the map was full
        out = [{"dims": {"cpu": c, "mode": m, "application": a}, "count": us}
               for (c, m, a), us in sorted(rows.items(), key=lambda kv: (len(kv[0][0]), kv[0]))]
        return [("cpu", self.host, out)] if out else []
