"""The demo NAS's fixed cast: shares, protocols, workloads, clients, and how load moves.

Workloads follow the filebench metric set used to characterise the Sun Storage
7000 (streaming reads with 1 and 10-20 threads, cached and cold; streaming writes;
8 KiB O_DSYNC writes; 8 KiB random reads; small-file creates) plus home-directory
metadata traffic. Everything here is a pure function of (seed, client count, ts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

SHARES = ("/export/home", "/export/bench", "/export/scratch", "/export/db", "/export/media")
HOME, BENCH, SCRATCH, DB, MEDIA = range(len(SHARES))

PROTOS = ("v3", "v4.0", "v4.1", "v4.2")
PROTO_SHARE = (0.40, 0.15, 0.25, 0.20)

# Abstract operations; each protocol names them its own way (NFSv4 creates with OPEN,
# lists with READDIR and has CLOSE; NFSv3 has READDIRPLUS and no CLOSE).
READ, WRITE, COMMIT, GETATTR, LOOKUP, ACCESS, READDIR, CREATE, SETATTR, CLOSE = range(10)
OP_NAMES = {
    False: ("read", "write", "commit", "getattr", "lookup", "access", "readdirplus", "create", "setattr", "close"),
    True: ("read", "write", "commit", "getattr", "lookup", "access", "readdir", "open", "setattr", "close"),
}

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
US, MS = 1_000, 1_000_000  # in ns


@dataclass(frozen=True)
class Stream:
    """Sequential I/O: each thread streams through its own large file."""

    threads: tuple[int, int]  # min, max threads per client
    rate: float  # bytes/s per client at load 1
    write: bool = False
    io: int = MiB
    hit: float = 1.0  # read cache hit ratio
    hit_lat: float = 300 * US  # median latency of a cached read, or of a write
    file_size: int = 2 * GiB
    cap: float | None = None  # wire bytes/s limit of the client's link
    share: int = BENCH


@dataclass(frozen=True)
class Random:
    """8 KiB random reads over a working set of many files."""

    rate: float  # ops/s per client at load 1
    hit: float
    hit_lat: float = 35 * US


@dataclass(frozen=True)
class Workload:
    name: str
    spec: Stream | Random | None  # None: the kind has its own generator in nas.py


WORKLOADS = (
    Workload("stream_read_1t", Stream((1, 1), 60e6, hit=0.97)),
    Workload("stream_read_cold", Stream((10, 20), 45e6, hit=0.15)),
    Workload("stream_write_1t", Stream((1, 1), 25e6, write=True, hit_lat=700 * US)),
    Workload("stream_write_20t", Stream((20, 20), 22e6, write=True, hit_lat=900 * US)),
    Workload("random_read", Random(1800, hit=0.70)),
    Workload("random_read_cold", Random(1100, hit=0.20)),
    Workload("sync_write", None),
    Workload("file_create", None),
    Workload("metadata", None),
    # The special actors: one client behind a 1 GbE link, one single-threaded.
    Workload("net_limited", Stream((4, 4), 300e6, hit=0.99, cap=117e6, share=MEDIA)),
    Workload("latency_bound", None),
)
W = {w.name: i for i, w in enumerate(WORKLOADS)}
NET_LIMITED_CLIENT, LATENCY_BOUND_CLIENT = 1, 2  # 10.0.0.2 and 10.0.0.3
# Regular clients cycle through this list, so 20 clients show every workload.
CYCLE = ("random_read", "stream_read_1t", "metadata", "stream_write_1t", "sync_write", "stream_read_cold",
         "file_create", "metadata", "random_read_cold", "stream_write_20t", "random_read", "metadata",
         "stream_read_1t", "sync_write", "file_create", "random_read", "stream_read_cold", "metadata")


def client_ip(i: int) -> str:
    """10.0.0.1 .. 10.0.0.250, then 10.0.1.1 ...: never a .0 or .255 host."""
    return f"10.0.{i // 250}.{i % 250 + 1}"


def hash64(*parts: np.ndarray | int) -> np.ndarray:
    """splitmix64 over the parts: stable file identities without storing any."""
    x = np.zeros(np.broadcast(*[np.asarray(p) for p in parts]).shape, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for p in parts:
            x = x ^ np.asarray(p).astype(np.uint64)
            x = x + np.uint64(0x9E3779B97F4A7C15)
            x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            x = x ^ (x >> np.uint64(31))
    return x


def leaf_of(keys: np.ndarray) -> np.ndarray:
    """The file name a key stands for: 1..64."""
    return (np.asarray(keys).astype(np.uint64) % np.uint64(64) + np.uint64(1)).astype(np.int64)


_HEX2 = [f"{i:02x}" for i in range(256)]
_HEX1 = [f"{i:x}" for i in range(16)]


def paths(share: np.ndarray, keys: np.ndarray, leaf: np.ndarray) -> list[str]:
    """share/[00-ff]/[00-ff]/[0-f]/[1-64] per row; leaf 0 gives the directory itself."""
    k = np.asarray(keys).astype(np.uint64)
    a, b, c = (((k >> np.uint64(s)) & np.uint64(m)).tolist() for s, m in ((24, 255), (16, 255), (12, 15)))
    h2, h1 = _HEX2, _HEX1
    return [f"{SHARES[s]}/{h2[x]}/{h2[y]}/{h1[z]}/{n}" if n else f"{SHARES[s]}/{h2[x]}/{h2[y]}/{h1[z]}"
            for s, x, y, z, n in zip(np.asarray(share).tolist(), a, b, c, np.asarray(leaf).tolist())]


class Population:
    """The clients and their static traits, drawn once from the seed."""

    def __init__(self, n: int, seed: int) -> None:
        if n < 1:
            raise ValueError("the demo NAS needs at least one client")
        self.n, self.seed = n, seed
        self.ips = np.array([client_ip(i) for i in range(n)], dtype=object)
        r = np.random.default_rng([seed, 1])
        cycle = np.array([W[c] for c in CYCLE])[r.permutation(len(CYCLE))]
        idx = np.arange(n)
        self.workload = cycle[idx % len(cycle)]
        if n > NET_LIMITED_CLIENT:
            self.workload[NET_LIMITED_CLIENT] = W["net_limited"]
        if n > LATENCY_BOUND_CLIENT:
            self.workload[LATENCY_BOUND_CLIENT] = W["latency_bound"]
        self.proto = r.choice(len(PROTOS), size=n, p=PROTO_SHARE)
        self.v4 = self.proto > 0
        self.weight = r.uniform(0.7, 1.3, n)  # some clients are simply busier
        self.phase = r.uniform(0, 2 * math.pi, n)
        self.period = r.uniform(180, 720, n)
        self.threads = np.ones(n, dtype=np.int64)
        for i, w in enumerate(WORKLOADS):
            if isinstance(w.spec, Stream):
                sel = self.workload == i
                self.threads[sel] = r.integers(w.spec.threads[0], w.spec.threads[1] + 1, sel.sum())
        self.walk = r.integers(0, 1 << 30, (n, 2))  # per-client start and stride through working sets
        # A third of the clients also read the hot file (a popular image everyone opens).
        self.hot_readers = np.flatnonzero((idx % 3 == 0) & (self.workload != W["latency_bound"]))
        self.hot_key = int(hash64(seed, 0x407)[()])
        # At 10,000 clients each client does less, so the NAS stays a plausible box; the
        # special actors keep their character at any scale.
        special = (self.workload == W["net_limited"]) | (self.workload == W["latency_bound"])
        self.scale = np.where(special, 1.0, 1.0 if n <= 20 else (20 / n) ** 0.85)
        self.global_phase = r.uniform(0, 2 * math.pi, 2)


@dataclass
class Second:
    ts: int
    rng: np.random.Generator
    load: np.ndarray  # per-client multiplier of the workload's nominal rate
    lat_mult: float  # how much busier than usual the pool is: stretches queueing latencies


def second(pop: Population, ts: int) -> Second:
    """Load for one second: a slow sinusoid, per-client drift, noise, and occasional bursts."""
    rng = np.random.default_rng([pop.seed, ts])
    p1, p2 = pop.global_phase
    g = 1 + 0.30 * math.sin(2 * math.pi * ts / 900 + p1) + 0.12 * math.sin(2 * math.pi * ts / 131 + p2)
    env, target = burst(pop.seed, ts)
    drift = 1 + 0.2 * np.sin(2 * math.pi * ts / pop.period + pop.phase)
    load = g * drift * pop.weight * np.exp(rng.normal(0, 0.06, pop.n)) * pop.scale
    if env:
        load[pop.workload == target] *= 1 + env
    return Second(ts, rng, load, 0.7 + 0.3 * g + 0.4 * env)


BURST_WINDOW = 300


def burst(seed: int, ts: int) -> tuple[float, int]:
    """(envelope, workload) of the burst covering ts, if any: most 5-minute windows have one."""
    w = ts // BURST_WINDOW
    r = np.random.default_rng([seed, 0xB, w])
    if r.random() > 0.6:
        return 0.0, -1
    start, dur = int(r.integers(0, BURST_WINDOW - 60)), int(r.integers(15, 60))
    amp, target = float(r.uniform(0.6, 1.5)), int(r.choice([W[c] for c in CYCLE]))
    x = ts - w * BURST_WINDOW - start
    if not 0 <= x < dur:
        return 0.0, -1
    return amp * math.sin(math.pi * (x + 0.5) / dur) ** 2, target
