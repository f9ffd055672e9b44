"""The synthetic NAS "demo-nas": NFS, disk, CPU and network rows that agree with each other.

``frames_for(ts)`` is a pure function of (seed, clients, ts), so history can be
backfilled and tests repeat. Each second:

1. every client runs its workload (see ``model.WORKLOADS``) and NFS rows are built
   per (client, op, file) with latency, size and offset histograms;
2. what NFS did becomes disk work: read cache misses are disk reads (8 KiB random
   or 128 KiB prefetch records, with the same millisecond latency the NFS misses
   saw), written data reaches the mirrored data disks in 5-second transaction
   groups, and synchronous operations are intent-log writes plus cache flushes on
   the mirrored log SSDs;
3. network rows per client carry the NFS payload plus RPC and TCP/IP overhead,
   so wire bytes are always at least the NFS bytes;
4. CPU time per CPU, mode and application follows ops, bytes, disk I/O and packets;
5. the NIC's link capacity (``net_link``), sized to the population (:func:`link_mbps`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..source import Collected, status_entry
from . import hist
from .model import (ACCESS, BENCH, CLOSE, COMMIT, CREATE, DB, GETATTR, HOME, LOOKUP, MEDIA, MS, READ, READDIR,
                    SCRATCH, SETATTR, US, WORKLOADS, WRITE, GiB, KiB, MiB, Population, Random, Second, Stream, hash64,
                    second)
from .table import NfsTable, Table

# Disks: two JBODs of 22 mirrored 7,200 rpm SATA drives (~120 random IOPS each, as the
# 7410 delivered) and a mirrored pair of log SSDs.
HDDS = tuple("sd" + ("" if i < 26 else "a") + chr(ord("a") + i % 26) for i in range(44))
SLOGS = ("nvme0n1", "nvme1n1")
HDD_BYTES, SLOG_BYTES = 4 * 10**12, 16 * GiB
HDD_RANDOM_LAT, HDD_STREAM_LAT, HDD_WRITE_LAT = 6.5 * MS, 3.0 * MS, 12 * MS
SLOG_LAT, FLUSH_LAT = 45 * US, 30 * US
RECORD, TXG_IO = 128 * KiB, 256 * KiB
TXG_PULSE = (0.15, 0.15, 0.15, 0.35, 4.2)  # mean 1: a transaction group syncs every 5 s
NFS_OVERHEAD = 150 * US  # server time around a disk read

# Network: TCP segments on a 1500-byte MTU, RPC headers per call and reply.
MSS, FRAME_HDR, RPC_CALL, RPC_REPLY = 1448, 66, 160, 140
NIC = "ixgbe0"
# The NIC's speed grows with the population, as a bigger NAS would have: the smallest common
# Ethernet speed with 0.5 Gbit/s a client (20 clients peak near 40 % of 10 Gbit/s), past 400
# Gbit/s a bond of 400 Gbit/s ports (the kernel reports a bond's speed as its ports' sum).
SPEEDS_GBPS, GBPS_PER_CLIENT = (10, 25, 40, 100, 200, 400), 0.5


def link_mbps(clients: int) -> int:
    need = GBPS_PER_CLIENT * clients
    gbps = next((g for g in SPEEDS_GBPS if g >= need), None) or 400 * math.ceil(need / 400)
    return 1000 * gbps

NCPU, RSS_QUEUES = 16, 8

# Per-workload constants that are not worth a dataclass field.
RANDOM_FILES_PER_SECOND, RANDOM_WORKING_SET, RANDOM_FILE = 24, 4096, 8 * MiB
SYNC_RATE, SYNC_FILES, SYNC_LAT, DB_FILE = 1100.0, 8, 450 * US, 4 * GiB
CREATE_RATE, CREATE_MAX = 25.0, 64  # at most 64 leaves per directory in the path scheme
CREATE_LAT = {CREATE: 900 * US, SETATTR: 600 * US, WRITE: 150 * US, COMMIT: 700 * US, CLOSE: 40 * US,
              LOOKUP: 40 * US, GETATTR: 25 * US}
META_RATE, META_FILES, META_WORKING_SET = 600.0, 12, 4096
META_OPS = (GETATTR, LOOKUP, ACCESS, READDIR, READ)
META_MIX = (0.45, 0.25, 0.15, 0.05, 0.10)
META_LAT = {GETATTR: 20 * US, LOOKUP: 35 * US, ACCESS: 20 * US, READDIR: 120 * US}
HOT_RATE, HOT_IO, HOT_FILE = 40.0, 64 * KiB, 256 * MiB
COMMIT_LAT = 5 * MS
LATBOUND_LAT, LATBOUND_THINK, LATBOUND_RATE = 800 * US, 0.97, 8e6


def ranks(n: np.ndarray) -> np.ndarray:
    """0..n[i]-1 for each i, concatenated."""
    return np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)


def split(total: np.ndarray, parts: np.ndarray) -> np.ndarray:
    """Divide each total over its parts as evenly as integers allow (one entry per part)."""
    r = ranks(parts)
    return np.repeat(total // np.maximum(parts, 1), parts) + (r < np.repeat(total % np.maximum(parts, 1), parts))


@dataclass
class DiskWork:
    random_reads: int = 0  # 8 KiB records read from disk
    stream_read_bytes: int = 0
    write_bytes: int = 0  # dirty data for the next transaction group
    slog_ops: int = 0  # intent-log writes (synchronous operations)
    slog_bytes: int = 0


class SyntheticNAS:
    """A deterministic NAS for demos and load tests (a Source)."""

    name = "synthetic"
    families = ("nfs", "disk", "cpu", "net", "net_link")
    replayable = True

    def __init__(self, clients: int = 20, seed: int = 7, host: str = "demo-nas") -> None:
        self.pop = Population(clients, seed)
        self.host = host
        r = np.random.default_rng([seed, 2])
        self._hdd_weight = r.uniform(0.9, 1.1, len(HDDS))  # disks are never perfectly balanced
        self._cpu_weight = r.uniform(0.8, 1.2, NCPU)
        self._link = [{"dims": {"interface": NIC}, "bytes": link_mbps(clients) * 125_000}]  # bytes/s each way

    def status(self) -> list[dict]:
        return [status_entry(f"synthetic.{f}", (f,), "active", "synthetic demo data", demo=True)
                for f in self.families]

    def collect(self, ts: int) -> Collected:
        return self.frames_for(ts)

    def frames_for(self, ts: int) -> Collected:
        s = second(self.pop, ts)
        nfs, work = NfsTable(self.pop), DiskWork()
        for i, w in enumerate(WORKLOADS):
            idx = np.flatnonzero(self.pop.workload == i)
            if not idx.size:
                continue
            if isinstance(w.spec, Stream):
                self._stream(s, idx, i, w.spec, nfs, work)
            elif isinstance(w.spec, Random):
                self._random(s, idx, w.spec, nfs, work)
            else:
                getattr(self, "_" + w.name)(s, idx, nfs, work)
        self._hot_file(s, nfs, work)
        ops, rd, wr = nfs.per_client()
        disk_rows, disk_ops, disk_bytes = self._disk(s, work)
        net_rows, packets = self._net(ops, rd, wr)
        cpu_rows = self._cpu(s, ops.sum(), rd.sum() + wr.sum(), disk_ops, disk_bytes, packets, work.random_reads)
        h = self.host
        return [("nfs", h, nfs.rows()), ("disk", h, disk_rows), ("cpu", h, cpu_rows), ("net", h, net_rows),
                ("net_link", h, [dict(r) for r in self._link])]

    # ------------------------------------------------------------------ NFS workloads
    def _stream(self, s: Second, idx: np.ndarray, wid: int, spec: Stream, nfs: NfsTable, work: DiskWork) -> None:
        threads = self.pop.threads[idx]
        ops = s.rng.poisson(spec.rate * s.load[idx] / spec.io)
        if spec.cap:
            # Upper bound of wire bytes per read: payload, RPC reply, a header per segment
            # and one more for the ACKs of the client's calls; so the link is never exceeded.
            per_op = spec.io + RPC_REPLY + FRAME_HDR * (math.ceil((spec.io + RPC_REPLY) / MSS) + 1)
            ops = np.minimum(ops, int(spec.cap // per_op))
        c, t = np.repeat(idx, threads), ranks(threads)
        n = split(ops, threads)
        # Each thread moves through its own file at its nominal rate; past the end it starts the next file.
        travelled = s.ts * (spec.rate / np.repeat(threads, threads))
        pos = travelled % spec.file_size
        key = hash64(self.pop.seed, c, t, (travelled // spec.file_size).astype(np.int64), wid)
        off = (pos, np.minimum(pos + n * spec.io, spec.file_size))
        if spec.write:
            nfs.io(c, WRITE, spec.share, key, n, spec.hit_lat * s.lat_mult, spec.io, sigma=0.35, off=off)
            commits = (n > 0).astype(np.int64)  # the client commits each file it wrote, once a second
            nfs.io(c, COMMIT, spec.share, key, commits, COMMIT_LAT * s.lat_mult)
            work.write_bytes += int(n.sum()) * spec.io
            work.slog_ops += int(commits.sum())
            work.slog_bytes += int(commits.sum()) * 4 * KiB
        else:
            hits = s.rng.binomial(n, spec.hit)
            nfs.io(c, READ, spec.share, key, hits, spec.hit_lat, spec.io, n2=n - hits,
                   lat2=HDD_STREAM_LAT * s.lat_mult + NFS_OVERHEAD, off=off)
            work.stream_read_bytes += int((n - hits).sum()) * spec.io

    def _walk(self, s: Second, idx: np.ndarray, per_client: np.ndarray, working_set: int, tag: int):
        """Distinct files of each client's working set for this second (an odd stride never repeats)."""
        c = np.repeat(idx, per_client)
        start, stride = self.pop.walk[c, 0], self.pop.walk[c, 1] * 2 + 1
        slot = (start + s.ts * 7919 + ranks(per_client) * stride) % working_set
        return c, hash64(self.pop.seed, c, slot, tag)

    def _random(self, s: Second, idx: np.ndarray, spec: Random, nfs: NfsTable, work: DiskWork) -> None:
        ops = s.rng.poisson(spec.rate * s.load[idx])
        # Many files, several reads each: keeps rows bounded when a client does few ops.
        nfiles = np.minimum(-(-ops // 3), RANDOM_FILES_PER_SECOND)
        c, key = self._walk(s, idx, nfiles, RANDOM_WORKING_SET, 0x5A)
        n = split(ops, nfiles)
        hits = s.rng.binomial(n, spec.hit)
        nfs.io(c, READ, BENCH, key, hits, spec.hit_lat, 8 * KiB, n2=n - hits,
               lat2=HDD_RANDOM_LAT * s.lat_mult + NFS_OVERHEAD, off=(0, RANDOM_FILE))
        work.random_reads += int((n - hits).sum())

    def _sync_write(self, s: Second, idx: np.ndarray, nfs: NfsTable, work: DiskWork) -> None:
        ops = s.rng.poisson(SYNC_RATE * s.load[idx])
        files_per = np.minimum(-(-ops // 8), SYNC_FILES)
        c = np.repeat(idx, files_per)
        key = hash64(self.pop.seed, c, ranks(files_per), 0xDB)  # a database's few data files
        nfs.io(c, WRITE, DB, key, split(ops, files_per), SYNC_LAT * s.lat_mult, 8 * KiB,
               sigma=0.45, off=(0, DB_FILE))
        self._logged(work, int(ops.sum()), 8 * KiB)

    @staticmethod
    def _logged(work: DiskWork, ops: int, io: int) -> None:
        """Synchronous operations: an intent-log record now, their data again with the next txg."""
        work.slog_ops += ops
        work.slog_bytes += ops * (io + 4 * KiB)
        work.write_bytes += ops * io

    def _file_create(self, s: Second, idx: np.ndarray, nfs: NfsTable, work: DiskWork) -> None:
        k = np.minimum(s.rng.poisson(CREATE_RATE * s.load[idx]), CREATE_MAX)
        dir_key = hash64(self.pop.seed, idx, s.ts, 0xC4)  # a new directory each second: new names
        c = np.repeat(idx, k)
        keys, leaf = np.repeat(dir_key, k), ranks(k) + 1
        one = np.ones(len(c), np.int64)
        v4 = self.pop.v4[c]
        # NFSv3: CREATE, SETATTR, WRITE, COMMIT; NFSv4: OPEN, WRITE, COMMIT, CLOSE.
        for op, count in ((CREATE, one), (SETATTR, one * ~v4), (WRITE, one), (COMMIT, one), (CLOSE, one * v4)):
            io = 8 * KiB if op == WRITE else 0
            nfs.io(c, op, SCRATCH, keys, count, CREATE_LAT[op] * s.lat_mult, io, leaf=leaf, sigma=0.4, off=(0, io))
        for op in (LOOKUP, GETATTR):  # the client looks each name up (absent) and revalidates the directory
            nfs.io(idx, op, SCRATCH, dir_key, k, CREATE_LAT[op], leaf=0, sigma=0.4)
        created = int(k.sum())
        self._logged(work, 3 * created, 0)  # create, setattr or close, commit: one log record each
        work.slog_bytes += created * 8 * KiB
        work.write_bytes += created * 8 * KiB

    def _metadata(self, s: Second, idx: np.ndarray, nfs: NfsTable, work: DiskWork) -> None:
        ops = s.rng.poisson(META_RATE * s.load[idx])
        nfiles = np.minimum(-(-ops // 8), META_FILES)
        c, key = self._walk(s, idx, nfiles, META_WORKING_SET, 0x40E)
        per_op = s.rng.multinomial(split(ops, nfiles), META_MIX)
        for j, op in enumerate(META_OPS):
            n = per_op[:, j]
            if op == READ:  # small files, mostly cached
                hits = s.rng.binomial(n, 0.95)
                nfs.io(c, READ, HOME, key, hits, 30 * US, 4 * KiB, n2=n - hits,
                       lat2=HDD_RANDOM_LAT * s.lat_mult + NFS_OVERHEAD, off=(0, 64 * KiB))
                work.random_reads += int((n - hits).sum())
            else:
                nfs.io(c, op, HOME, key, n, META_LAT[op] * (0.9 + 0.1 * s.lat_mult))

    def _latency_bound(self, s: Second, idx: np.ndarray, nfs: NfsTable, work: DiskWork) -> None:
        """One thread, one synchronous 8 KiB write in flight: ops/s is 1 / latency."""
        med, sigma = LATBOUND_LAT * s.lat_mult, 0.35
        for c in idx.tolist():
            # Run the closed loop: the next write starts when the previous one returns.
            draws = s.rng.lognormal(math.log(med), sigma, int(2e9 / med) + 16).round()
            n = int(np.searchsorted(np.cumsum(draws), LATBOUND_THINK * 1e9, side="right"))
            pos = (s.ts * LATBOUND_RATE) % GiB  # appends to a redo log
            client = np.array([c])
            nfs.io(client, WRITE, DB, hash64(self.pop.seed, client, 0x1B), [n], med, 8 * KiB,
                   sigma=sigma, off=(pos, pos + n * 8 * KiB), lat_sum=int(draws[:n].sum()))
            self._logged(work, n, 8 * KiB)

    def _hot_file(self, s: Second, nfs: NfsTable, work: DiskWork) -> None:
        """Many clients read one popular file; cached, so microseconds."""
        idx = self.pop.hot_readers
        ops = s.rng.poisson(HOT_RATE * s.load[idx])
        keys = np.full(len(idx), self.pop.hot_key, dtype=np.uint64)
        hits = s.rng.binomial(ops, 0.995)
        nfs.io(idx, READ, MEDIA, keys, hits, 90 * US, HOT_IO, n2=ops - hits,
               lat2=HDD_STREAM_LAT * s.lat_mult + NFS_OVERHEAD, off=(0, HOT_FILE))
        nfs.io(idx, GETATTR, MEDIA, keys, ops // 8, 20 * US)  # close-to-open revalidation
        work.stream_read_bytes += int((ops - hits).sum()) * HOT_IO

    # ------------------------------------------------------------------ derived families
    def _disk(self, s: Second, work: DiskWork) -> tuple[list[dict], int, int]:
        t = Table(("disk", "op"))
        w = (self._hdd_weight / self._hdd_weight.sum())[None, :]
        random_r = hist.apportion(np.array([work.random_reads]), w)[0]
        stream_r = hist.apportion(np.array([-(-work.stream_read_bytes // RECORD)]), w)[0]
        # Mirrors write everything twice; dirty data leaves in a pulse when the txg syncs.
        txg_bytes = 2 * work.write_bytes * TXG_PULSE[s.ts % len(TXG_PULSE)]
        writes = hist.apportion(np.array([int(txg_bytes // TXG_IO)]), w)[0]
        hdds, slogs = np.array(HDDS), np.array(SLOGS)
        t.add(dict(disk=hdds, op="read"), random_r, HDD_RANDOM_LAT * s.lat_mult, 8 * KiB,
              n2=stream_r, lat2=HDD_STREAM_LAT * s.lat_mult, io2=RECORD, off=(0, HDD_BYTES))
        t.add(dict(disk=hdds, op="write"), writes, HDD_WRITE_LAT * s.lat_mult, TXG_IO, sigma=0.6,
              off=(0, HDD_BYTES))
        log_ops = np.full(len(slogs), work.slog_ops)
        log_io = work.slog_bytes // max(work.slog_ops, 1)
        t.add(dict(disk=slogs, op="write"), log_ops, SLOG_LAT, log_io, sigma=0.35, off=(0, SLOG_BYTES))
        flushes = -(-log_ops // 3)  # concurrent commits share one cache flush
        t.add(dict(disk=slogs, op="flush"), flushes, FLUSH_LAT, sigma=0.35)
        rows = t.rows()
        return rows, sum(r["count"] for r in rows), sum(r["bytes"] for r in rows)

    def _net(self, ops: np.ndarray, rd: np.ndarray, wr: np.ndarray) -> tuple[list[dict], int]:
        inp, outp = wr + ops * RPC_CALL, rd + ops * RPC_REPLY
        in_data, out_data = np.ceil(inp / MSS), np.ceil(outp / MSS)
        in_pk, out_pk = in_data + np.ceil(out_data / 2), out_data + np.ceil(in_data / 2)  # delayed ACKs
        in_b, out_b = inp + in_pk * FRAME_HDR, outp + out_pk * FRAME_HDR
        active = np.flatnonzero(ops > 0)
        # As a real host reports it: per-interface totals (procfs.net) and, as a second
        # layer of the same bytes, per client and local port (bpf.net, with the interface its
        # route names); the catalog's layer rule makes each statistic read one of them.
        rows = [{"dims": {"interface": NIC, "direction": "in"}, "count": int(in_pk.sum()), "bytes": int(in_b.sum())},
                {"dims": {"interface": NIC, "direction": "out"}, "count": int(out_pk.sum()),
                 "bytes": int(out_b.sum())}]
        columns = (x[active].astype(np.int64).tolist() for x in (in_pk, in_b, out_pk, out_b))
        for ip, pk_in, b_in, pk_out, b_out in zip(self.pop.ips[active].tolist(), *columns):
            rows.append({"dims": {"client": ip, "port": "2049", "direction": "in", "interface": NIC}, "count": pk_in,
                         "bytes": b_in})
            rows.append({"dims": {"client": ip, "port": "2049", "direction": "out", "interface": NIC},
                         "count": pk_out, "bytes": b_out})
        return [r for r in rows if r["count"] or r["bytes"]], int(in_pk.sum() + out_pk.sum())

    def _cpu(self, s: Second, ops: float, nfs_bytes: float, disk_ops: int, disk_bytes: int, packets: int,
             disk_reads: int) -> list[dict]:
        # Microseconds of CPU per second, from per-op, per-byte and per-packet costs.
        work = {
            ("system", "nfsd"): 30 * ops + 0.001 * nfs_bytes,
            ("system", "zfs"): 0.002 * disk_bytes + 0.0005 * nfs_bytes + 20 * disk_ops,
            ("system", "kworker"): 2000 + 15 * disk_ops,
            ("irq", "ixgbe"): 0.5 * packets,
            ("softirq", "ksoftirqd"): 2.0 * packets,
            ("user", "loupe-agent"): 8000.0,
            ("user", "sshd"): 300.0,
        }
        spread = self._cpu_weight * s.rng.uniform(0.9, 1.1, NCPU)
        rss = np.where(np.arange(NCPU) < RSS_QUEUES, spread, 0)  # NIC interrupts land on the queue CPUs
        per = {key: us * (w := rss if key[0] in ("irq", "softirq") else spread) / w.sum() for key, us in work.items()}
        used = sum(per.values())
        squeeze = np.minimum(1.0, 0.98e6 / np.maximum(used, 1))  # a saturated CPU cannot do more
        rows = []
        for c in range(NCPU):
            cpu = f"cpu{c}"
            busy = 0
            by_mode: dict[str, int] = {}
            for (mode, app), us in per.items():
                v = int(us[c] * squeeze[c])
                busy += v
                by_mode[mode] = by_mode.get(mode, 0) + v
                # the per-application layer (bpf.cpu on a real host)
                rows.append({"dims": {"cpu": cpu, "mode": mode, "application": app}, "count": v})
            # the per-mode layer (procfs.cpu): the same time, plus what no application used
            rows += [{"dims": {"cpu": cpu, "mode": mode}, "count": v} for mode, v in by_mode.items()]
            free = 1_000_000 - busy
            iowait = int(free * min(0.5, disk_reads / 40_000))  # idle while nfsd threads wait on disks
            rows.append({"dims": {"cpu": cpu, "mode": "iowait"}, "count": iowait})
            rows.append({"dims": {"cpu": cpu, "mode": "idle"}, "count": free - iowait})
        return [r for r in rows if r["count"]]
