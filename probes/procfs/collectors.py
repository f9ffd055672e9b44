"""Counters from /proc (and /sys) turned into per-second rows, without root.

Every procfs counter is cumulative since boot, so each source keeps the previous
reading and reports the difference. The first collect only primes. Paths are
constructor arguments so tests read committed snapshots from ``testdata/``.

Interval choice: the agent calls ``collect(ts)`` once per second. If it was late
and ``n = ts - previous ts`` seconds passed, the delta is divided by ``n`` and
reported for ``ts`` alone: every stored second keeps a true per-second rate (no
200 % CPU spike after a stall), and the seconds in between stay empty. When the
time that really passed between the two readings is off from ``n`` by more than
IRREGULAR (the first interval after start often is: the priming read came late in
its second), the delta is divided by that time instead, so the point shows the
rate and not a dip; regular intervals keep exact counts.

CPU time needs no clock at all: each CPU's ticks across its modes are the time
that CPU saw pass, so its modes are shared out of one second by their tick
ratio, as mpstat does. Reading jitter (a read 0.2 s late moves 20 ticks) then
cannot make a busy 2-CPU host read 164 % or 240 %.
"""

from __future__ import annotations

import abc
import os
import time
from pathlib import Path

from ..source import Collected, status_entry

Key = tuple[str, ...]
Counters = dict[Key, tuple[int, ...]]

CPU_MODES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
SECTOR = 512  # /proc/diskstats counts 512-byte sectors whatever the device's block size
IRREGULAR = 0.2  # relative difference between seconds passed and seconds stepped
MBPS = 125_000  # bytes per second in a Mb/s
SPEED_REFRESH = 10.0  # seconds between readings of the link speeds


class _DeltaSource(abc.ABC):
    """Reads a counter table, diffs it against the previous reading, builds rows."""

    name = ""
    family = ""
    replayable = False
    per_second = False  # rows() already gives per-second rates: no division by the interval
    clock = staticmethod(time.monotonic)  # when each reading was taken (tests set their own)

    def __init__(self, host: str, proc: str | Path = "/proc", sys: str | Path = "/sys") -> None:
        self.host = host
        self.proc = Path(proc)
        self.sys = Path(sys)
        self.families = (self.family,)
        self._prev: tuple[int, Counters, float] | None = None
        self._state, self._reason = "active", ""

    @abc.abstractmethod
    def read(self) -> Counters:
        """Current cumulative counters from procfs."""

    @abc.abstractmethod
    def rows(self, deltas: Counters) -> list[dict]:
        """Frame rows from per-second deltas."""

    def status(self) -> list[dict]:
        return [status_entry(self.name, self.families, self._state, self._reason)]  # type: ignore[arg-type]

    def collect(self, ts: int) -> Collected:
        try:
            cur = self.read()
        except FileNotFoundError as e:
            self._state, self._reason, self._prev = "off", f"{e.filename} not found (not Linux?)", None
            return []
        except (OSError, ValueError, IndexError) as e:
            self._state, self._reason, self._prev = "error", f"cannot read counters: {e}", None
            return []
        self._state, self._reason = "active", ""
        prev, self._prev = self._prev, (ts, cur, self.clock())
        if prev is None:
            return []
        deltas: Counters = {}
        for key, now in cur.items():
            old = prev[1].get(key)
            if old is None:
                continue  # device or CPU appeared since the last reading
            d = tuple(a - b for a, b in zip(now, old))
            if min(d) < 0:
                continue  # counter wrapped or was reset: this interval is unknowable
            deltas[key] = d
        rows = self.rows(deltas)
        n: float = ts - prev[0]
        passed = self._prev[2] - prev[2]
        if n > 0 and abs(passed - n) > IRREGULAR * n:
            n = passed
        if n > 0 and n != 1 and not self.per_second:
            for r in rows:
                for k in ("count", "bytes", "lat_sum"):
                    if k in r:
                        r[k] = round(r[k] / n)
            rows = [r for r in rows if r.get("count") or r.get("bytes")]
        return [(self.family, self.host, rows)] if rows else []


class CpuSource(_DeltaSource):
    """/proc/stat: CPU microseconds per second per CPU and mode (``count``, as cpu.util expects)."""

    name = "procfs.cpu"
    family = "cpu"
    per_second = True

    def read(self) -> Counters:
        out: Counters = {}
        for line in (self.proc / "stat").read_text().splitlines():
            f = line.split()
            if f and f[0].startswith("cpu") and f[0] != "cpu":  # per CPU; "cpu" is their sum
                # One key per mode: iowait may step backwards (a known kernel quirk)
                # and that must cost only that mode's row.
                for mode, ticks in zip(CPU_MODES, f[1:]):
                    out[(f[0], mode)] = (int(ticks),)
        return out

    def rows(self, deltas: Counters) -> list[dict]:
        # application stays empty: only a scheduler probe (BPF) can attribute CPU time.
        # A mode dropped from deltas (iowait stepping back) is left out of its CPU's total.
        total: dict[str, int] = {}
        for (cpu, _), (ticks,) in deltas.items():
            total[cpu] = total.get(cpu, 0) + ticks
        return [{"dims": {"cpu": cpu, "mode": mode}, "count": round(ticks * 1_000_000 / total[cpu])}
                for (cpu, mode), (ticks,) in sorted(deltas.items(), key=_natural_key) if ticks]


# /proc/diskstats columns after major, minor, name (Documentation/admin-guide/iostats.rst):
# op -> (completed ops, sectors, ms spent). Discard (4.18+) and flush (5.5+) may be absent.
_DISK_FIELDS = {"read": (0, 2, 3), "write": (4, 6, 7), "discard": (11, 13, 14), "flush": (15, None, 16)}


class DiskSource(_DeltaSource):
    """/proc/diskstats for whole disks: ops, bytes and summed latency per disk and op."""

    name = "procfs.disk"
    family = "disk"

    def _whole_disks(self) -> set[str]:
        # Partitions are not in /sys/block. ram and loop devices are memory or files on
        # another disk, whose I/O would otherwise count twice.
        return {d for d in os.listdir(self.sys / "block") if not d.startswith(("ram", "loop"))}

    def read(self) -> Counters:
        disks = self._whole_disks()
        out: Counters = {}
        for line in (self.proc / "diskstats").read_text().splitlines():
            f = line.split()
            if len(f) < 14 or f[2] not in disks:
                continue
            v = [int(x) for x in f[3:]]
            for op, (ios, sectors, ms) in _DISK_FIELDS.items():
                if ms < len(v):
                    out[(f[2], op)] = (v[ios], v[sectors] if sectors is not None else 0, v[ms])
        return out

    def rows(self, deltas: Counters) -> list[dict]:
        # No histograms: procfs has only sums. Zero-count rows (idle disks) are skipped.
        return [{"dims": {"disk": disk, "op": op}, "count": ios, "bytes": sectors * SECTOR,
                 "lat_sum": ms * 1_000_000}
                for (disk, op), (ios, sectors, ms) in sorted(deltas.items(), key=_natural_key)
                if ios]


class NetSource(_DeltaSource):
    """/proc/net/dev: packets and bytes per interface and direction; and each interface's link
    capacity (family ``net_link``) from /sys/class/net/<if>/speed."""

    name = "procfs.net"
    family = "net"

    def __init__(self, host: str, proc: str | Path = "/proc", sys: str | Path = "/sys") -> None:
        super().__init__(host, proc, sys)
        self.families = ("net", "net_link")
        self._speeds: dict[str, int | None] = {}  # interface -> Mb/s, None: unknown
        self._speeds_at: float | None = None

    def read(self) -> Counters:
        out: Counters = {}
        for line in (self.proc / "net" / "dev").read_text().splitlines()[2:]:  # two header lines
            iface, sep, rest = line.partition(":")
            if not sep:
                continue
            v = [int(x) for x in rest.split()]
            out[(iface.strip(), "in")] = (v[1], v[0])  # receive: bytes, packets, ...
            out[(iface.strip(), "out")] = (v[9], v[8])  # transmit starts at column 8
        return out

    def rows(self, deltas: Counters) -> list[dict]:
        # client stays empty: per-client traffic needs a socket probe (BPF).
        return [{"dims": {"interface": iface, "direction": direction}, "count": packets, "bytes": nbytes}
                for (iface, direction), (packets, nbytes) in sorted(deltas.items()) if packets or nbytes]

    def collect(self, ts: int) -> Collected:
        out = super().collect(ts)
        if self._prev is None:
            return out  # /proc/net/dev could not be read: no interfaces to look up
        links = self.links({iface for iface, _ in self._prev[1]}, self._prev[2])
        return out + [("net_link", self.host, links)] if links else out

    def links(self, interfaces: set[str], now: float) -> list[dict]:
        """A gauge, not a counter: each second's row carries the capacity (bytes/s each way), so
        its mean over any period is the capacity. Read again every SPEED_REFRESH seconds (each
        read asks the driver under the RTNL lock), and at once for an interface not seen before.
        An interface without a speed has no row: unknown, never 0."""
        if self._speeds_at is None or now - self._speeds_at >= SPEED_REFRESH or interfaces - set(self._speeds):
            self._speeds = {i: link_speed(self.sys / "class" / "net" / i / "speed") for i in interfaces}
            self._speeds_at = now
        return [{"dims": {"interface": i}, "bytes": mbps * MBPS}
                for i, mbps in sorted(self._speeds.items()) if i in interfaces and mbps]


def parse_speed(text: str) -> int | None:
    """/sys/class/net/<if>/speed in Mb/s; None where the kernel knows none. Virtual links report
    -1 (SPEED_UNKNOWN), older kernels and drivers that value unsigned (4294967295) or 16 bits
    wide (65535), a link that is down 0 or, on some drivers, -1."""
    try:
        v = int(text.strip())
    except ValueError:
        return None
    return v if 0 < v < 65535 or 65535 < v < 2**32 - 1 else None


def link_speed(path: Path) -> int | None:
    """The speed file's value; None when it cannot be read (EINVAL without a carrier or from a
    device with no ethtool link settings, lo included; no such file)."""
    try:
        return parse_speed(path.read_text())
    except OSError:
        return None


def _natural_key(item: tuple[Key, tuple[int, ...]]) -> tuple:
    """Sort rows by device as people count: cpu2 before cpu10, sdb before sdaa; then as read."""
    name = item[0][0]
    head = name.rstrip("0123456789")
    tail = name[len(head):]
    return (len(head), head, int(tail) if tail else -1)
