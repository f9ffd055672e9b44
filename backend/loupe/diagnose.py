"""Why is this client slow? The facts about one client over a window, from the stored
statistics, and a verdict that states each reason with the statistic behind it.

The reasoning rests on Little's law: the server's per-second sum of an operation's latencies is
the mean number of those operations in flight (``nfs.inflight``). A client with about one op in
flight is pacing itself; one whose ops take many times longer than the same ops of the other
clients on the same server is losing the time between itself and the server; one whose ops are
slow like everyone's is waiting on the server.

A client's link is the interface the server reaches it through (the one its route names,
stamped on its socket rows by the agent), with the capacity the kernel reports for it
(``net.link``). A link is a duplex pipe: each direction carries its speed, so the client's
share is its busier direction's bytes over the capacity, and so is the link's utilisation
(everything through the interface, ``net.bytes`` per interface). At NEAR_LINK of it, a mean over
the window, the link is full most of that time: TCP's payload rarely gets much above 90-95 %
of a line's rate, and queues (so latency) build well before.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .catalog import METRICS, fmt_amount
from .query import layer_of
from .store.base import Statistic
from .timerange import Window

IO_OPS = ("read", "write")
RETRANSMITS_PER_S = 1.0  # at or above this, the link is the suspect whatever else holds...
# ...if they are also this share of the segments it was sent: the kernel counts tail loss probes as
# retransmits (a healthy stream over a veth here drew 6.5 a second at 227 MB/s, 0.004 % of its
# segments, every one a spurious probe answered by a DSACK), where a lossy link retransmits more.
LOSSY_SHARE = 0.001
MSS = 1448  # an Ethernet TCP segment's payload, for the segments a client's bytes took
ONE_IN_FLIGHT = 1.5  # below this many ops in flight, the client waits for each reply
NETWORK_RATIO = 5.0  # its ops this many times slower than the other clients' same ops
SLOW_SERVER_S = 0.020  # mean latency of the busiest op above which the server is called slow
SMALL_IO = 16 * 1024
NEAR_LINK = 0.8  # a direction at or above this share of its link's capacity: the link is the limit
TOWARDS = {"out": "from the server to it", "in": "from it to the server"}  # net.bytes directions, client rows
THROUGH = {"out": "out of the server", "in": "into the server"}  # the same, for the whole interface


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
class LinkFacts:
    host: str
    interface: str  # the one the server reaches the client through
    capacity: float | None  # bytes/s each way; None: the kernel reports no speed for it
    client: dict[str, float]  # direction -> the client's bytes/s through it
    total: dict[str, float]  # direction -> everything through it (empty: no per-interface data)

    def _busier(self, per: dict[str, float]) -> tuple[str, float | None]:
        d = max(("out", "in"), key=lambda x: per.get(x, 0.0))  # out first: reads win a tie
        return d, (per.get(d, 0.0) / self.capacity if self.capacity and per else None)

    @property
    def share(self) -> tuple[str, float | None]:
        """The client's busier direction and its share of the capacity (None: speed unknown)."""
        return self._busier(self.client)

    @property
    def utilisation(self) -> tuple[str, float | None]:
        """The interface's busier direction and how full it is (None: unknown)."""
        return self._busier(self.total)


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
    link: LinkFacts | None = None  # None: no socket rows name its interface


@dataclass
class Reason:
    text: str
    metric: str  # the statistic that shows it
    by: str | None = None
    where: dict[str, list[str]] = field(default_factory=dict)


def _stat(metric: str, by: str | None, where: dict[str, list[str]]) -> Statistic:
    m = METRICS[metric]
    return Statistic(m, by, tuple(sorted((k, tuple(v)) for k, v in where.items())), layer=layer_of(m, by, where))


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
                 inflight=sum(infl.values()), busy_fraction=busy, link=_link(store, client, whole, series, host),
                 mean_io_bytes=io_bytes / io_ops if io_ops else None, retransmits_per_s=retrans, by_op=by_op,
                 size_mix=[(e, r / mix_total) for e, r in sorted(per_bucket.items())] if mix_total else [],
                 traffic_share=sum(byts.values()) / all_bytes if all_bytes > 0 else None,
                 wire_bytes_per_s=sum(wire.total) / len(wire.total) if any(wire.total) else None, disks=disks)


def _link(store, client: str, whole: Window, series: Window, host: str | None) -> LinkFacts | None:
    """The interface most of the client's socket bytes went through (on the host with most of
    them, unless asked for one), its capacity and its traffic."""
    me = {"client": [client]}
    if host is None:
        hosts = _means(store, "net.bytes", "host", me, whole)
        if not hosts:
            return None
        host = max(hosts, key=lambda h: hosts[h])
    me["host"] = [host]
    ifaces = {i: v for i, v in _means(store, "net.bytes", "interface", me, whole).items() if i}
    if not ifaces:
        return None  # no route named one (or the agent predates interfaces on socket rows)
    iface = max(ifaces, key=lambda i: ifaces[i])
    where = {"host": [host], "interface": [iface]}
    # a gauge: its largest point, so a second the agent skipped does not lower it
    cap = store.aggregate(_stat("net.link", None, where), series, 1)
    return LinkFacts(host, iface, max(cap.total, default=0.0) or None,
                     _means(store, "net.bytes", "direction", dict(where, client=[client]), whole),
                     _means(store, "net.bytes", "direction", where, whole))


def fmt_link(bytes_per_s: float) -> str:
    """A link's speed as vendors write it: "10 Gbit/s", "2.5 Gbit/s", "100 Mbit/s"."""
    bits = bytes_per_s * 8
    for div, u in ((1e12, "Tbit/s"), (1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s")):
        if bits >= div:
            return f"{bits / div:.3g} {u}"
    return f"{bits:.0f} bit/s"


def _pct(share: float) -> str:
    return f"{100 * share:.2g} %" if share < 0.995 else f"{100 * share:.0f} %"


def _link_reasons(f: Facts) -> list[Reason]:
    """Network-bound reasons from the link: the client, or the link as a whole, near capacity."""
    L = f.link
    if L is None or L.capacity is None:
        return []
    where = {"host": [L.host], "interface": [L.interface]}
    speed = f"{L.interface}'s {fmt_link(L.capacity)}"
    d, share = L.share
    if share is not None and share >= NEAR_LINK:
        return [Reason(f"it uses {_pct(share)} of {speed}: {_size(L.client[d])}/s {TOWARDS[d]}, near all the "
                       "link carries each way", "net.bytes", "direction", dict(where, client=[f.client]))]
    ld, util = L.utilisation
    if util is not None and util >= NEAR_LINK:
        mine = L.client.get(ld, 0.0) / L.total[ld] if L.total.get(ld) else 0.0
        return [Reason(f"{L.interface}, the link it is reached through, carries {_pct(util)} of its "
                       f"{fmt_link(L.capacity)} {THROUGH[ld]} ({_size(L.total[ld])}/s), {_pct(mine)} of that "
                       "this client's: the link is full", "net.bytes", "direction", where)]
    return []


def _link_note(f: Facts) -> str:
    """Where the time is lost beyond the server: the client's share of the server's link."""
    L = f.link
    if L is None:
        return ""
    if L.capacity is None:
        return (f"; {L.interface}'s speed is unknown (the kernel reports none for it), so its share of the "
                "link cannot be said")
    d, share = L.share
    return f"; {_pct(share or 0.0)} of {L.interface}'s {fmt_link(L.capacity)} {TOWARDS[d]}"


def _ms(s: float) -> str:
    return fmt_amount(s * 1e9, "ns")


def _size(b: float) -> str:
    return fmt_amount(b, "bytes")


def _lossy(f: Facts) -> bool:
    """Retransmits enough, and a large enough share of its segments (when its bytes are known), to
    blame the link."""
    r = f.retransmits_per_s
    if r is None or r < RETRANSMITS_PER_S:
        return False
    return not f.wire_bytes_per_s or r * MSS / f.wire_bytes_per_s >= LOSSY_SHARE


def verdict(f: Facts) -> tuple[str, list[Reason]]:
    """(kind, reasons): kind is idle, network-bound, client-bound, server-latency-bound or healthy."""
    me = {"client": [f.client]}
    if f.ops_per_s < 0.5:
        return "idle", [Reason(f"{f.client} made {f.ops_per_s:.2g} NFS operations per second in this window",
                               "nfs.ops", None, me)]
    top = f.by_op[0] if f.by_op else None
    net = _link_reasons(f)
    if _lossy(f):
        share = f" ({_pct(f.retransmits_per_s * MSS / f.wire_bytes_per_s)} of them)" if f.wire_bytes_per_s else ""
        net.insert(0, Reason(f"TCP retransmits {f.retransmits_per_s:.3g} segments per second to it{share}: "
                             "the link drops or reorders its traffic", "tcp.retransmits", None, me))
    if net:
        return "network-bound", net
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
                                     if f.traffic_share is not None else "") + _link_note(f),
                                  "net.bytes", "direction", me))
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
