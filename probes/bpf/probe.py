"""The base of every BPF probe: load, attach, drain once a second, report cost.

A probe is a folder ``probes/<name>/`` with ``<name>.bpf.c`` (built by ``make bpf``
into ``<name>.bpf.o`` beside it) and a subclass of :class:`BpfProbe` declaring
what to attach and which maps to drain; its ``decode`` turns the drained
key/value bytes into frame rows. Everything else (privilege checks, the reason a
probe is off, suspend/resume, run-time cost, overflow counters) lives here.

Map conventions, shared with ``include/loupe.bpf.h``:

* maps listed in ``DRAIN`` are hash maps, drained (batch lookup-and-delete) each
  second: the kernel aggregates, user space only hands the totals on;
* maps listed in ``COUNTERS`` are arrays of u64 counters (``drops``, the ``other``
  overflow row) that cannot be drained atomically: they are read cumulatively,
  and ``decode`` gets the per-second difference.
"""

from __future__ import annotations

import ctypes
import logging
import os
import resource
import struct
import sys
import threading
import time
from pathlib import Path

from loupe.catalog import LATENCY, OFFSET, SIZE

from ..source import Collected, status_entry
from . import libbpf
from .libbpf import BpfError, BpfObject

log = logging.getLogger("loupe.bpf")

IDLE_SECONDS = 10  # a CUMULATIVE key unchanged this long is deleted (its race is then harmless)
STATS_MODES = ("on", "sampled", "off")


def stats_mode() -> tuple[str, int]:
    """``LOUPE_BPF_STATS`` (on, sampled, off; default on) and, when sampled, one
    second held in every ``LOUPE_BPF_STATS_EVERY`` (default 10). A bad value names
    its variable."""
    mode = os.environ.get("LOUPE_BPF_STATS", "").strip().lower() or "on"
    if mode not in STATS_MODES:
        raise BpfError(f"LOUPE_BPF_STATS={mode!r}: one of {', '.join(STATS_MODES)}")
    raw = os.environ.get("LOUPE_BPF_STATS_EVERY", "").strip() or "10"
    if not raw.isdigit() or not 2 <= int(raw) <= 3600:
        raise BpfError(f"LOUPE_BPF_STATS_EVERY={raw!r}: a whole number of seconds from 2 to 3600")
    return mode, int(raw)


class StatsHold:
    """BPF run-time stats (BPF_ENABLE_STATS; kernel.bpf_stats_enabled shows only what
    was written to it) as the probes hold them. While they are on the kernel times
    every BPF program run on the host, not only Loupe's (two clock reads a run: 69 ns
    on the benchmark VM, docs/PERFORMANCE.md). So besides holding it while any probe
    runs (on), it can be held one second in every ``every`` (sampled: the probes'
    rates are then per second held) or never (off). ``held()`` is the seconds held
    so far, which rates are taken over."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stats: libbpf.Stats | None = None
        self._users = 0
        self._since: float | None = None  # monotonic time it was last turned on
        self._total = 0.0
        self.mode, self.every = "on", 10

    def acquire(self, mode: str, every: int) -> None:
        with self._lock:
            self._users += 1
            self.mode, self.every = mode, every
            if mode == "on":
                self._on()

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users <= 0:
                self._users = 0
                self._off()

    def tick(self, now: float) -> None:
        """Sampled: on through the seconds whose number is a multiple of ``every``,
        from the first collect in one to the first collect after it."""
        with self._lock:
            if self.mode != "sampled" or not self._users:
                return
            if int(now) % self.every == 0:
                self._on()
            else:
                self._off()

    def held(self) -> float:
        with self._lock:
            return self._total + (time.monotonic() - self._since if self._since is not None else 0.0)

    def _on(self) -> None:
        if self._stats is not None:
            return
        self._stats = libbpf.enable_stats()
        if self._stats.error:
            log.info("BPF run-time stats unavailable: %s", self._stats.error)
        else:
            self._since = time.monotonic()

    def _off(self) -> None:
        if self._stats is None:
            return
        if self._since is not None:
            self._total += time.monotonic() - self._since
        self._stats.close()
        self._stats, self._since = None, None


STATS = StatsHold()


def u64_delta(now: bytes, before: bytes | None) -> bytes:
    """Element-wise difference of two u64 arrays (a counter map's value), floored at 0."""
    n = len(now) // 8
    a = struct.unpack(f"<{n}Q", now[:n * 8])
    b = struct.unpack(f"<{n}Q", before[:n * 8]) if before else (0,) * n
    return struct.pack(f"<{n}Q", *(max(0, x - y) for x, y in zip(a, b)))


def sum_percpu(m: libbpf.BpfMap, value: bytes) -> bytes:
    """Add up a per-CPU value's slices, as u64 arrays."""
    if not m.percpu:
        return value
    parts = m.per_cpu(value)
    n = m.value_size // 8
    total = [0] * n
    for p in parts:
        for i, x in enumerate(struct.unpack(f"<{n}Q", p[:n * 8])):
            total[i] += x
    return struct.pack(f"<{n}Q", *total)


class BpfProbe:
    """A Source backed by one CO-RE BPF object. Subclasses fill in the declaration."""

    name = "bpf.example"
    families: tuple[str, ...] = ()
    OBJECT = ""  # "<name>.bpf.o", found next to the subclass's module
    PROGRAMS: tuple[str, ...] = ()  # must attach, or the probe is off
    OPTIONAL_PROGRAMS: tuple[str, ...] = ()  # attached when the kernel allows; reported otherwise
    DRAIN: tuple[str, ...] = ()
    CUMULATIVE: tuple[str, ...] = ()  # hash maps of u64 counters read and differenced, not drained
    COUNTERS: tuple[str, ...] = ("drops",)
    # map -> the environment variable that sets its max_entries at load (a site with more keys a
    # second than the built-in size sets it larger, rather than lose the detail to the overflow row)
    SIZES: dict[str, str] = {}
    MAX_SIZE = 1 << 20
    replayable = False
    replaces: tuple[str, ...] = ()  # registry names this probe supersedes while active

    def __init__(self, host: str, *, object_dir: str | os.PathLike | None = None) -> None:
        self.host = host
        self._dir = Path(object_dir) if object_dir else Path(sys.modules[type(self).__module__].__file__).parent
        self.obj: BpfObject | None = None
        self.state = "off"
        self.reason = ""
        self.notes: list[str] = []  # optional programs that did not attach, and why
        self._started = False
        self.loading = False  # start() running (possibly in another thread)
        self._suspended = False
        self._counters: dict[str, bytes] = {}
        self._cum: dict[str, dict[bytes, list]] = {}  # CUMULATIVE map -> key -> [last value, idle seconds]
        self._prog_prev: dict[str, tuple[int, int]] = {}
        self._held_prev = 0.0
        self._run_cost: dict[str, float] = {}  # sampled: the last second held
        self._run_cost_at = 0.0
        self._lock = threading.Lock()
        self.cost: dict[str, float] = {}
        self.drops_total = 0
        self.missed_total = 0
        self._miss_prev: dict[str, int] = {}

    # ------------------------------------------------------------------ hooks
    def requirements(self) -> str | None:
        """Why this probe cannot run on this kernel (checked before loading), or None."""
        return None

    def prepare(self, obj: BpfObject) -> None:
        """After load, before attach: write config maps, attach tc programs, ..."""

    def decode(self, drained: dict[str, list[tuple[bytes, bytes]]], ts: int) -> Collected:
        raise NotImplementedError

    def drain_more(self) -> tuple[dict[str, list], float]:
        """Tables of the probe's own kind (not DRAIN's hash maps), handed to ``decode``
        with them each second, and the fullest one's fill (0..1); reset on resume."""
        return {}, 0.0

    # ------------------------------------------------------------------ lifecycle
    @property
    def object_path(self) -> Path:
        return self._dir / self.OBJECT

    def start(self) -> bool:
        """Load and attach; afterwards ``state``/``reason`` say how it went. Idempotent."""
        with self._lock:
            try:
                if self._started:
                    return self.state == "active"
                self._started = True
                self.loading = True
                return self._start()
            finally:
                self.loading = False

    def start_in_background(self) -> threading.Thread:
        """Load in a thread: the verifier may take seconds for a large program, and the
        other sources should not wait for it. Until loaded, the probe reports "off"
        (loading) and collects nothing; a source it replaces keeps counting meanwhile."""
        self.loading = True
        t = threading.Thread(target=self.start, name=f"load-{self.name}", daemon=True)
        t.start()
        return t

    def _start(self) -> bool:
        why = libbpf.why_not_bpf() or self.requirements()
        if why:
            self.state, self.reason = "off", why
            log.info("%s off: %s", self.name, why)
            return False
        try:
            mode, every = stats_mode()
            self._load()
        except BpfError as e:
            self.state, self.reason = "error", str(e)[:500]
            log.warning("%s: %s", self.name, e)
            self._close_obj()
            return False
        if mode == "sampled":
            self.notes.append(f"run time sampled 1 s in {every} (LOUPE_BPF_STATS=sampled)")
        elif mode == "off":
            self.notes.append("run time not measured (LOUPE_BPF_STATS=off)")
        self.state, self.reason = "active", "; ".join(self.notes)
        STATS.acquire(mode, every)
        self._prog_prev, self._held_prev = self.obj.prog_stats(), STATS.held()
        return True

    def sizes(self) -> dict[str, int]:
        """The maps' sizes set by the environment (``SIZES``); a bad value names its variable."""
        out = {}
        for m, var in self.SIZES.items():
            raw = os.environ.get(var, "").strip()
            if not raw:
                continue
            if not raw.isdigit() or not 1 <= int(raw) <= self.MAX_SIZE:
                raise BpfError(f"{var}={raw!r}: not a whole number of keys from 1 to {self.MAX_SIZE}")
            out[m] = int(raw)
        return out

    def _load(self) -> None:
        skip: list[str] = []
        resize = self.sizes()
        try:
            obj = BpfObject(self.object_path, resize=resize)
        except BpfError as first:
            if not self.OPTIONAL_PROGRAMS:
                raise
            # An optional program (e.g. fentry, which some kernels refuse) may be what
            # failed to load; the required ones still give a working probe without it.
            skip = list(self.OPTIONAL_PROGRAMS)
            obj = BpfObject(self.object_path, skip=tuple(skip), resize=resize)
            self.notes.append(f"optional {', '.join(skip)} not loaded: {first}")
        self.obj = obj
        self.prepare(obj)
        for p in self.PROGRAMS:
            obj.attach(p)
        for p in self.OPTIONAL_PROGRAMS:
            if p in skip:
                continue
            try:
                obj.attach(p)
            except BpfError as e:
                self.notes.append(f"optional {p} not attached: {e}")
        for name in self.COUNTERS:
            self._counters[name] = self._read_counter(name)
        self._miss_prev = obj.prog_misses()

    def _deltas(self, name: str) -> tuple[list[tuple[bytes, bytes]], int]:
        """A cumulative map's growth since the last second, per key, and its key count.

        Draining deletes an element that a program on another CPU may be adding to at
        that moment, losing that addition. A map whose keys stay busy (a task running
        on a CPU is credited every few ms) is read without deleting instead, and
        differenced here; a key deleted only after IDLE_SECONDS without growth."""
        assert self.obj is not None
        m = self.obj.map(name)
        prev = self._cum.setdefault(name, {})
        out, idle = [], []
        items = m.items()
        for k, v in items:
            before = prev.get(k)
            if before is not None and before[0] == v:
                before[1] += 1
                if before[1] >= IDLE_SECONDS:
                    idle.append(k)
                continue
            out.append((k, u64_delta(v, before[0] if before else None)))
            prev[k] = [v, 0]
        for k in idle:
            m.delete(k)
            prev.pop(k, None)
        if len(prev) > len(items):  # keys deleted elsewhere (a resume clears the maps)
            live = {k for k, _ in items}
            for k in [k for k in prev if k not in live]:
                del prev[k]
        return out, len(items)

    def _read_counter(self, name: str) -> bytes:
        assert self.obj is not None
        m = self.obj.map(name)
        value = m.lookup((0).to_bytes(4, "little")) or bytes(m.value_bytes)
        return sum_percpu(m, value)

    def close(self) -> None:
        with self._lock:
            was = self.obj is not None
            self._close_obj()
            if was:
                STATS.release()
            self._started = False
            if self.state == "active":
                self.state, self.reason = "off", "stopped"

    def _close_obj(self) -> None:
        if self.obj is not None:
            self.obj.close()
            self.obj = None

    # ------------------------------------------------------------------ suspend / resume
    def suspend(self) -> None:
        """Detach every program: no overhead at all until resumed (maps are kept)."""
        with self._lock:
            if self.obj is not None and not self._suspended:
                self.obj.detach()
            self._suspended = True

    def resume(self) -> None:
        with self._lock:
            if not self._suspended:
                return
            self._suspended = False
            if self.obj is None:
                return
            for name in self.DRAIN + self.CUMULATIVE:
                self.obj.map(name).clear()  # half a second of stale data would land on the next tick
            self.drain_more()
            self._cum.clear()
            self.prepare(self.obj)
            for p in self.PROGRAMS:
                self.obj.attach(p)
            for p in self.OPTIONAL_PROGRAMS:
                if self.obj.has_program(p):
                    try:
                        self.obj.attach(p)
                    except BpfError:
                        pass
            for name in self.COUNTERS:
                self._counters[name] = self._read_counter(name)

    @property
    def suspended(self) -> bool:
        return self._suspended

    # ------------------------------------------------------------------ Source
    def status(self) -> list[dict]:
        if self.loading:
            return [status_entry(self.name, self.families, "off", "loading: the kernel is verifying its programs")]
        if not self._started:
            self.start()
        state, reason = self.state, self.reason
        if self._suspended and state == "active":
            state, reason = "suspended", "suspended from the API; programs detached"
        st = status_entry(self.name, self.families, state, reason)
        if self.cost:
            st["cost"] = dict(self.cost)
        return [st]

    def collect(self, ts: int) -> Collected:
        if self.loading:
            return []
        if not self._started:
            self.start()
        with self._lock:
            STATS.tick(time.time())  # also while suspended: sampled seconds end on time
            if self.obj is None or self._suspended:
                self.cost = {}
                return []
            t0 = time.perf_counter()
            ru0 = resource.getrusage(resource.RUSAGE_THREAD) if hasattr(resource, "RUSAGE_THREAD") else None
            drained = {name: self.obj.map(name).drain() for name in self.DRAIN}
            fill = max((len(drained[n]) / max(1, self.obj.map(n).max_entries) for n in self.DRAIN), default=0.0)
            more, more_fill = self.drain_more()
            drained.update(more)
            fill = max(fill, more_fill)
            for name in self.CUMULATIVE:
                drained[name], n = self._deltas(name)
                fill = max(fill, n / max(1, self.obj.map(name).max_entries))
            for name in self.COUNTERS:
                now = self._read_counter(name)
                drained[name] = [((0).to_bytes(4, "little"), u64_delta(now, self._counters.get(name)))]
                self._counters[name] = now
            drops = drained.get("drops", [(b"", bytes(8))])[0][1]
            dropped = int.from_bytes(drops[:8], "little") if drops else 0
            self.drops_total += dropped
            out = self.decode(drained, ts)
            self.cost = self._cost(fill, dropped, time.perf_counter() - t0, ru0)
            return out

    def _cost(self, fill: float, dropped: int, wall: float, ru0) -> dict[str, float]:
        assert self.obj is not None
        counters, held = self.obj.prog_counters(), STATS.held()  # one info read per program
        misses = {p: m for p, (_, _, m) in counters.items()}
        missed = sum(max(0, m - self._miss_prev.get(p, 0)) for p, m in misses.items())
        self._miss_prev = misses
        self.missed_total += missed
        stats = {p: (c, t) for p, (c, t, _) in counters.items()}
        runs = sum(max(0, c - self._prog_prev.get(p, (0, 0))[0]) for p, (c, _) in stats.items())
        ns = sum(max(0, t - self._prog_prev.get(p, (0, 0))[1]) for p, (_, t) in stats.items())
        secs = held - self._held_prev
        self._prog_prev, self._held_prev = stats, held
        cost: dict[str, float] = {}
        if STATS.mode == "on":  # held throughout: the last second's
            cost = {"runs_per_s": float(runs), "bpf_cpu_pct": ns / 1e7, "ns_per_run": (ns / runs) if runs else 0.0}
        elif STATS.mode == "sampled":  # per second held, from the last second held
            if secs >= 0.5:
                self._run_cost = {"runs_per_s": runs / secs, "bpf_cpu_pct": ns / secs / 1e7,
                                  "ns_per_run": (ns / runs) if runs else 0.0}
                self._run_cost_at = time.monotonic()
            if self._run_cost:
                cost = {**self._run_cost, "stats_age_s": round(time.monotonic() - self._run_cost_at, 1),
                        "stats_every_s": float(STATS.every)}
        cost.update({
            "map_fill": round(fill, 4),
            "dropped": float(dropped),
            "dropped_total": float(self.drops_total),
            # runs the kernel skipped because the program was already running on that
            # CPU (an interrupt nested in it): those events are not counted at all
            "missed": float(missed),
            "missed_total": float(self.missed_total),
            "drain_ms": wall * 1e3,
        })
        if ru0 is not None:
            ru1 = resource.getrusage(resource.RUSAGE_THREAD)
            cost["drain_cpu_ms"] = ((ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)) * 1e3
        return cost


class HistVal(ctypes.Structure):
    """The value layout shared by probes that count events with histograms (include/
    loupe.bpf.h's convention, e.g. disk_val, the NFS probes' val): count, bytes, summed
    latency, then log2 buckets over the catalog's LATENCY, SIZE and OFFSET bounds."""

    _fields_ = [("count", ctypes.c_uint64), ("bytes", ctypes.c_uint64), ("lat_sum", ctypes.c_uint64),
                ("lat", ctypes.c_uint64 * (LATENCY.hi - LATENCY.lo + 1)),
                ("size", ctypes.c_uint64 * (SIZE.hi - SIZE.lo + 1)),
                ("off", ctypes.c_uint64 * (OFFSET.hi - OFFSET.lo + 1))]


def hist_row(dims: dict[str, str], v: HistVal) -> dict:
    """A frame row from a HistVal: empty histograms left out."""
    hist = {"latency": hist_dict(v.lat, LATENCY.lo), "size": hist_dict(v.size, SIZE.lo),
            "offset": hist_dict(v.off, OFFSET.lo)}
    return {"dims": dims, "count": v.count, "bytes": v.bytes, "lat_sum": v.lat_sum,
            "hist": {k: h for k, h in hist.items() if h}}


def hist_dict(counts, lo: int) -> dict[str, int]:
    """A BPF histogram array (index 0 = exponent ``lo``) as a frame ``hist`` entry."""
    return {str(lo + i): int(c) for i, c in enumerate(counts) if c}
