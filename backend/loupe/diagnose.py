"""Why is this client slow? The facts about one client over a window, from the stored
statistics, and a verdict that states each reason with the statistic behind it.

The reasoning rests on Little's law: the server's per-second sum of an operation's latencies is
the mean number of those operations in flight (``nfs.inflight``). A client with about one op in
flight is pacing itself; one whose ops take many times longer than the same ops of the other
clients on the same server is losing the time between itself and the server; one whose ops are
slow like everyone's is waiting on the server.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .catalog import METRICS, fmt_amount
from .store.base import Statistic
from .timerange import Window

IO_OPS = ("read", "write")
RETRANSMITS_PER_S = 1.0  # at or above this, the link is the suspect whatever else holds
ONE_IN_FLIGHT = 1.5  # below this many ops in flight, the client waits for each reply
NETWORK_RATIO = 5.0  # its ops this many times slower than the other clients' same ops
SLOW_SERVER_S = 0.020  # mean latency of the busiest op above which the server is called slow
SMALL_IO = 16 * 1024


@dataclass
class OpFacts:
    op: str
    ops_per_s: float
    bytes_per_s: float
    inflight: float
    mean_latency_s: float | None
    others_latency_s: float | None  # the same op of every other client on the host(s)


@dataclass
class DiskFacts:
    disk: str
    ops_per_s: float
    inflight: float
    mean_latency_s: float | None


@dataclass
class Facts:
    client: str
    seconds: int
    ops_per_s: float
    bytes_per_s: float
    inflight: float
    busy_fraction: float  # seconds with at least one op, of the window
    mean_io_bytes: float | None  # bytes per read or write
    retransmits_per_s: float | None  # None: no TCP probe data for this window
    by_op: list[OpFacts]
    size_mix: list[tuple[int, float]] = field(default_factory=list)  # (log2 bucket, share of ops)
    traffic_share: float | None = None  # its NFS bytes, of every client's on the host(s)
    wire_bytes_per_s: float | None = None  # its bytes on the wire both ways (None: no socket probe)
    disks: list[DiskFacts] = field(default_factory=list)  # the server's disks, most loaded first


@dataclass
class Reason:
    text: str
    metric: str  # the statistic that shows it
    by: str | None = None
    where: dict[str, list[str]] = field(default_factory=dict)


def _stat(metric: str, by: str | None, where: dict[str, list[str]]) -> Statistic:
    return Statistic(METRICS[metric], by, tuple(sorted((k, tuple(v)) for k, v in where.items())))


def _means(store, metric: str, by: str | None, where: dict, window: Window) -> dict[str, float]:
    agg = store.aggregate(_stat(metric, by, where), window, 1000)
    if by is None:
        return {"": sum(agg.total) / max(1, len(agg.total))}
    return dict(zip(agg.keys, agg.key_means))


def gather(store, client: str, whole: Window, series: Window, host: str | None = None) -> Facts:
    """`whole`: one point spanning the window; `series`: points across it (for busy seconds)."""
    base = {"host": [host]} if host else {}
    me = dict(base, client=[client])
    ops = _means(store, "nfs.ops", "op", me, whole)
    byts = _means(store, "nfs.bytes", "op", me, whole)
    infl = _means(store, "nfs.inflight", "op", me, whole)
    all_ops = _means(store, "nfs.ops", "op", base, whole)
    all_infl = _means(store, "nfs.inflight", "op", base, whole)
    by_op = []
    for op in sorted(ops, key=lambda o: -infl.get(o, 0.0)):
        n, f = ops[op], infl.get(op, 0.0)
        on, of = all_ops.get(op, 0.0) - n, all_infl.get(op, 0.0) - f
        by_op.append(OpFacts(op, n, byts.get(op, 0.0), f, f / n if n else None, of / on if on > 1e-9 else None))
    total = store.aggregate(_stat("nfs.ops", None, me), series, 1)
    active = [i for i, v in enumerate(total.total) if v > 0]
    # between its first and last activity: before it started or after it stopped is not think time
    busy = len(active) / (active[-1] - active[0] + 1) if active else 0.0
    io_ops = sum(ops.get(o, 0.0) for o in IO_OPS)
    io_bytes = sum(byts.get(o, 0.0) for o in IO_OPS)
    retrans = None
    rt = store.aggregate(_stat("tcp.retransmits", None, me), whole, 1)
    if rt.last_index >= 0 or any(rt.total):
        retrans = sum(rt.total) / max(1, len(rt.total))
    all_bytes = sum(_means(store, "nfs.bytes", None, base, whole).values())
    wire = store.aggregate(_stat("net.bytes", None, me), whole, 1)
    d_ops = _means(store, "disk.ops", "disk", base, whole)
    d_infl = _means(store, "disk.inflight", "disk", base, whole)
    disks = sorted((DiskFacts(d, n, d_infl.get(d, 0.0), d_infl.get(d, 0.0) / n if n else None)
                    for d, n in d_ops.items() if n > 0), key=lambda x: -x.inflight)
    hm = store.heatmap(_stat("nfs.ops", None, dict(me, op=list(IO_OPS))), "size", whole)
    per_bucket: dict[int, float] = {}
    for _, b, rate in hm.cells:
        per_bucket[hm.buckets[b]] = per_bucket.get(hm.buckets[b], 0.0) + rate
    mix_total = sum(per_bucket.values())
    return Facts(client=client, seconds=whole.seconds, ops_per_s=sum(ops.values()), bytes_per_s=sum(byts.values()),
                 inflight=sum(infl.values()), busy_fraction=busy,
                 mean_io_bytes=io_bytes / io_ops if io_ops else None, retransmits_per_s=retrans, by_op=by_op,
                 size_mix=[(e, r / mix_total) for e, r in sorted(per_bucket.items())] if mix_total else [],
                 traffic_share=sum(byts.values()) / all_bytes if all_bytes > 0 else None,
                 wire_bytes_per_s=sum(wire.total) / len(wire.total) if any(wire.total) else None, disks=disks)


def _ms(s: float) -> str:
    return fmt_amount(s * 1e9, "ns")


def _size(b: float) -> str:
    return fmt_amount(b, "bytes")


def verdict(f: Facts) -> tuple[str, list[Reason]]:
    """(kind, reasons): kind is idle, network-bound, client-bound, server-latency-bound or healthy."""
    me = {"client": [f.client]}
    if f.ops_per_s < 0.5:
        return "idle", [Reason(f"{f.client} made {f.ops_per_s:.2g} NFS operations per second in this window",
                               "nfs.ops", None, me)]
    top = f.by_op[0] if f.by_op else None
    if f.retransmits_per_s is not None and f.retransmits_per_s >= RETRANSMITS_PER_S:
        return "network-bound", [Reason(f"TCP retransmits {f.retransmits_per_s:.3g} segments per second to it: "
                                        "the link drops or reorders its traffic", "tcp.retransmits", None, me)]
    # Before the client-bound test: behind a slow link the server sees one call at a time, each
    # as slow as its transfer, while the same ops of the other clients are quick.
    if (top and top.mean_latency_s is not None and top.others_latency_s
            and top.mean_latency_s > NETWORK_RATIO * top.others_latency_s and top.mean_latency_s > 2e-3):
        reasons = [Reason(
            f"its {top.op}s take {_ms(top.mean_latency_s)} on average, {top.mean_latency_s / top.others_latency_s:.0f}× "
            f"what the other clients' {top.op}s take on this server ({_ms(top.others_latency_s)}), with "
            f"{top.inflight:.2g} in flight: the time is spent between it and the server (its link or a shaped rate)",
            "nfs.inflight", "client", {"op": [top.op]})]
        if f.wire_bytes_per_s is not None:
            reasons.append(Reason(f"its link carries {_size(f.wire_bytes_per_s)}/s of its traffic both ways"
                                  + (f", {100 * f.traffic_share:.2g} % of the server's NFS bytes"
                                     if f.traffic_share is not None else ""), "net.bytes", "direction", me))
        return "network-bound", reasons
    if f.inflight < ONE_IN_FLIGHT:
        reasons = [Reason(f"about {f.inflight:.2g} operations in flight on average: it waits for each reply "
                          "before it sends the next, so its own pace sets the rate", "nfs.inflight", "op", me)]
        if f.mean_io_bytes is not None and f.mean_io_bytes < SMALL_IO:
            reasons.append(Reason(f"small I/Os: {_size(f.mean_io_bytes)} per read or write on average",
                                  "nfs.ops", "size", me))
        if f.busy_fraction < 0.9:
            reasons.append(Reason(f"idle in {100 * (1 - f.busy_fraction):.0f} % of the seconds: think time between "
                                  "requests", "nfs.ops", None, me))
        if top and top.mean_latency_s is not None:
            reasons.append(Reason(f"each {top.op} takes {_ms(top.mean_latency_s)} at the server",
                                  "nfs.ops", "latency", dict(me, op=[top.op])))
        return "client-bound", reasons
    if top and top.mean_latency_s is not None and top.mean_latency_s > SLOW_SERVER_S:
        reasons = [Reason(
            f"the server takes {_ms(top.mean_latency_s)} per {top.op} on average while the client keeps "
            f"{f.inflight:.2g} operations in flight" + (f"; the other clients' {top.op}s take {_ms(top.others_latency_s)}"
                                                        if top.others_latency_s else ""),
            "nfs.ops", "latency", dict(me, op=[top.op]))]
        disk = f.disks[0] if f.disks else None
        if disk and disk.mean_latency_s is not None:
            reasons.append(Reason(
                f"its busiest disk, {disk.disk}, has {disk.inflight:.2g} I/Os in flight at "
                f"{_ms(disk.mean_latency_s)} each ({disk.ops_per_s:.3g} I/Os per second)",
                "disk.ops", "latency", {"disk": [disk.disk]}))
        return "server-latency-bound", reasons
    lat = f" at {_ms(top.mean_latency_s)} per {top.op}" if top and top.mean_latency_s is not None else ""
    return "healthy", [Reason(f"{f.inflight:.2g} operations in flight{lat}: the client keeps the server busy and "
                              "the server answers promptly", "nfs.inflight", "op", me)]
