"""The disk probe's declaration: the `io` map's layout and how keys decode.

Mirrors ``disk.bpf.h``. Rows carry the catalog's histograms (latency in ns,
size and offset in bytes); exponents are the catalog's, so the BPF bucket index
``i`` is exponent ``LO + i``.
"""

from __future__ import annotations

import ctypes
from pathlib import Path


from ..bpf import libbpf
from ..bpf.probe import BpfProbe, HistVal, hist_row, sum_percpu
from ..source import Collected

OPS = ("read", "write", "flush", "discard", "other")
MINORBITS = 20  # the kernel's dev_t: MKDEV(ma, mi) = ma << 20 | mi (include/linux/kdev_t.h)


class DiskKey(ctypes.Structure):
    _fields_ = [("dev", ctypes.c_uint32), ("op", ctypes.c_uint8), ("pad", ctypes.c_uint8 * 3)]


DiskVal = HistVal  # disk.bpf.h's disk_val


def split_dev(dev: int) -> tuple[int, int]:
    """Kernel-internal dev_t -> (major, minor)."""
    return dev >> MINORBITS, dev & ((1 << MINORBITS) - 1)


def dev_name(dev: int, sys: str | Path = "/sys") -> str:
    """The block device's name (``sda``, ``nvme0n1``) from /sys/dev/block/MAJ:MIN/uevent;
    ``MAJ:MIN`` when the device is gone (the name is still unique and stable)."""
    major, minor = split_dev(dev)
    try:
        for line in (Path(sys) / "dev" / "block" / f"{major}:{minor}" / "uevent").read_text().splitlines():
            if line.startswith("DEVNAME="):
                return line[len("DEVNAME="):]
    except OSError:
        pass
    return f"{major}:{minor}"


class DiskNames:
    """dev_t -> name, cached; devices come and go rarely, so a miss re-reads sysfs."""

    def __init__(self, sys: str | Path = "/sys") -> None:
        self.sys = sys
        self._cache: dict[int, str] = {}

    def __call__(self, dev: int) -> str:
        name = self._cache.get(dev)
        if name is None or ":" in name:
            name = self._cache[dev] = dev_name(dev, self.sys)
        return name


def skipped(name: str) -> bool:
    # As procfs.disk: loop and ram devices are files or memory whose I/O reaches a
    # real disk again (or never); counting them would double the totals.
    return name.startswith(("loop", "ram", "zram"))


row = hist_row


class DiskProbe(BpfProbe):
    name = "bpf.disk"
    families = ("disk",)
    OBJECT = "disk.bpf.o"
    PROGRAMS = ("disk_issue", "disk_complete")
    DRAIN = ("io",)
    COUNTERS = ("drops", "other")
    replaces = ("procfs.disk",)

    def __init__(self, host: str, sys: str | Path = "/sys", **kw) -> None:
        super().__init__(host, **kw)
        self.names = DiskNames(sys)

    def requirements(self) -> str | None:
        for tp in ("block_rq_issue", "block_rq_complete"):
            if not libbpf.btf_has(f"btf_trace_{tp}"):
                return f"no block:{tp} tracepoint in this kernel's BTF (tp_btf needs Linux 5.5+)"
        return None

    def decode(self, drained: dict[str, list[tuple[bytes, bytes]]], ts: int) -> Collected:
        assert self.obj is not None
        io = self.obj.map("io")  # per-CPU: each value is one slice per CPU
        rows = []
        for kb, vb in drained["io"]:
            k, v = DiskKey.from_buffer_copy(kb), DiskVal.from_buffer_copy(sum_percpu(io, vb))
            name = self.names(k.dev) if k.dev else "(unknown)"
            if not v.count or skipped(name):
                continue
            rows.append(row({"disk": name, "op": OPS[k.op] if k.op < len(OPS) else "other"}, v))
        other = DiskVal.from_buffer_copy(drained["other"][0][1])
        if other.count:  # the io map was full: totals kept, detail lost
            rows.append(row({"disk": "(other)", "op": "other"}, other))
        rows.sort(key=lambda r: (r["dims"]["disk"], r["dims"]["op"]))
        return [("disk", self.host, rows)] if rows else []
