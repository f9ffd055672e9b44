"""The statistics model: families, dimensions, histogram bucket schemes and metrics.

A *family* is one stream of measurements that share dimensions (every NFS
operation, every disk I/O, ...). Frames carry rows of a family; the store keeps
one table per family and tier. A *metric* is a family plus the value column it
sums and a scale, e.g. ``nfs.ops`` sums ``count`` and ``nfs.bytes`` sums ``bytes``.
Because every row carries every dimension of its family, any breakdown can be
asked of any stored second: nothing has to be enabled in advance.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Value = Literal["count", "bytes", "lat_sum"]


@dataclass(frozen=True)
class Histogram:
    """A log2 histogram dimension.

    Bucket ``e`` holds values ``v`` with ``2**e <= v < 2**(e+1)``. The lowest
    bucket ``lo`` also takes everything below ``2**lo`` and the highest bucket
    ``hi`` everything at or above ``2**hi``, so the declared range is closed and
    every value has a bucket. Agents clamp with :func:`bucket_of`.
    """

    name: str
    unit: str  # unit of the bucketed value: "ns" or "bytes"
    lo: int
    hi: int
    label: str

    @property
    def buckets(self) -> range:
        return range(self.lo, self.hi + 1)

    def column(self, e: int) -> str:
        return f"{self.name[0]}{e}"  # l20, s12, o30

    @property
    def columns(self) -> list[str]:
        return [self.column(e) for e in self.buckets]

    def bucket_of(self, v: int) -> int:
        e = int(v).bit_length() - 1 if v > 0 else self.lo
        return min(max(e, self.lo), self.hi)

    def bounds(self, e: int) -> tuple[int, int | None]:
        """Lower (inclusive) and upper (exclusive, None = unbounded) value of bucket e."""
        lo = 0 if e == self.lo else 2**e
        hi = None if e == self.hi else 2 ** (e + 1)
        return lo, hi


LATENCY = Histogram("latency", "ns", lo=10, hi=35, label="latency")  # <2 µs .. >=34 s
SIZE = Histogram("size", "bytes", lo=9, hi=24, label="I/O size")  # <1 KiB .. >=16 MiB
OFFSET = Histogram("offset", "bytes", lo=12, hi=45, label="offset")  # <8 KiB .. >=32 TiB
HISTOGRAMS = {h.name: h for h in (LATENCY, SIZE, OFFSET)}


@dataclass(frozen=True)
class Family:
    name: str
    dims: tuple[str, ...]  # string dimensions, in storage sort order after host
    hists: tuple[Histogram, ...] = ()
    # Files beyond the top K per (host, second) fold into FILE_OTHER; see store docs.
    fold_dim: str | None = None
    # Dimensions of few values that rarely grow (hosts, ops, shares): the settled seconds store
    # them as codes (see DuckDBStore.admit_codes); the others (clients, files) as strings.
    coded: tuple[str, ...] = ()

    @property
    def all_dims(self) -> tuple[str, ...]:
        return self.dims + tuple(h.name for h in self.hists)


FILE_OTHER = "(other files)"

# Dimensions whose values are paths: they take a prefix filter (`file^=/export/home`) and fold
# into a directory tree. Values that are not paths (FILE_OTHER, `fh:<hash>`) never match a prefix.
PATH_DIMS = ("file", "share")
PREFIX_OP = "^"  # in a filter's name: `file^` filters file by path prefix

FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("nfs", ("host", "client", "proto", "op", "share", "file"), (LATENCY, SIZE, OFFSET), fold_dim="file",
               coded=("host", "proto", "op", "share")),
        Family("disk", ("host", "disk", "op"), (LATENCY, SIZE, OFFSET), coded=("host", "disk", "op")),
        Family("cpu", ("host", "cpu", "mode", "application"), coded=("host", "cpu", "mode")),
        Family("net", ("host", "interface", "direction", "client", "port"), coded=("host", "interface", "direction")),
        # A gauge: each second's row carries the interface's capacity (see net.link).
        Family("net_link", ("host", "interface"), coded=("host", "interface")),
        Family("tcp", ("host", "client", "port"), coded=("host",)),
        Family("zfs_arc", ("host", "cache", "result"), coded=("host", "cache", "result")),
        Family("zfs_txg", ("host", "pool"), (LATENCY,), coded=("host", "pool")),
    )
}


@dataclass(frozen=True)
class Metric:
    name: str
    family: str
    value: Value
    unit: str
    scale: float  # multiply the per-second sum of `value` by this to get `unit`
    dims: tuple[str, ...]
    noun: str  # "NFS operations per second"
    description: str
    # Histogram dimensions this metric may be broken down by (weights are counts).
    hists: tuple[str, ...] = field(default=())
    # Measured at two granularities by different sources: (marker dim, detail dims,
    # base-only dims). Rows with the marker set are the detail layer; see query.layer_of.
    layer: tuple[str, tuple[str, ...], tuple[str, ...]] | None = None

    @property
    def all_dims(self) -> tuple[str, ...]:
        return self.dims + self.hists


# Per-interface rows come from procfs, per-client rows from the BPF socket probe; both carry
# the interface (a client's: the one its route names), so only client and port pick a layer.
NET_LAYER = ("client", ("client", "port"), ())

METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("nfs.ops", "nfs", "count", "ops/s", 1.0, ("host", "proto", "op", "client", "share", "file"),
               "NFS operations per second", "NFS operations completed by the server.", ("latency", "size", "offset")),
        Metric("nfs.bytes", "nfs", "bytes", "bytes/s", 1.0, ("host", "proto", "op", "client", "share", "file"),
               "NFS bytes per second", "Payload bytes read and written over NFS."),
        # Little's law: the latencies of a second's operations, summed (ns), are the mean number in flight.
        Metric("nfs.inflight", "nfs", "lat_sum", "ops in flight", 1e-9,
               ("host", "proto", "op", "client", "share", "file"), "NFS operations in flight",
               "Operations the server was serving at once, on average: ops/s times their mean latency."),
        Metric("disk.ops", "disk", "count", "ops/s", 1.0, ("host", "disk", "op"),
               "disk operations per second", "Block I/O requests completed.", ("latency", "size", "offset")),
        Metric("disk.bytes", "disk", "bytes", "bytes/s", 1.0, ("host", "disk", "op"),
               "disk bytes per second", "Bytes transferred by block I/O."),
        # The same law for block I/O: iostat's average queue size (aqu-sz).
        Metric("disk.inflight", "disk", "lat_sum", "I/Os in flight", 1e-9, ("host", "disk", "op"),
               "disk I/Os in flight", "Block I/O requests the disk was serving at once, on average: "
               "I/Os per second times their mean latency."),
        # cpu rows carry CPU time in microseconds in `count`: 1e6 us in a second is 100 %.
        Metric("cpu.util", "cpu", "count", "percent", 1e-4, ("host", "cpu", "mode", "application"),
               "CPU percent utilization", "CPU time as percent of one CPU; a 4-CPU host can reach 400 %.",
               layer=("application", ("application",), ())),
        # Per-client rows (BPF socket probe) carry client, local port and the interface of the
        # client's route; per-interface rows (procfs) carry interface, not client.
        Metric("net.bytes", "net", "bytes", "bytes/s", 1.0, ("host", "interface", "direction", "client", "port"),
               "network bytes per second", "Bytes sent and received.", layer=NET_LAYER),
        Metric("net.packets", "net", "count", "packets/s", 1.0, ("host", "interface", "direction", "client", "port"),
               "network packets per second", "Packets (procfs) or socket sends and receives (BPF) per second.",
               layer=NET_LAYER),
        # The kernel's link speed (/sys/class/net/<if>/speed) each way, as bytes/s: each second
        # stores it, so a period's mean is the capacity. No row where the speed is unknown.
        Metric("net.link", "net_link", "bytes", "bytes/s", 1.0, ("host", "interface"),
               "network link capacity in bytes per second",
               "Each interface's speed as the kernel reports it, in bytes per second each way (a full-duplex "
               "link carries it in and out at once); interfaces without a known speed (virtual links, a link "
               "that is down) have none."),
        Metric("tcp.retransmits", "tcp", "count", "retransmits/s", 1.0, ("host", "client", "port"),
               "TCP retransmits per second", "TCP segments retransmitted, by remote address and local port."),
        Metric("zfs.arc", "zfs_arc", "count", "accesses/s", 1.0, ("host", "cache", "result"),
               "ZFS cache accesses per second", "ARC and L2ARC lookups by result (hit, miss, iohit)."),
        Metric("zfs.txg", "zfs_txg", "count", "syncs/s", 1.0, ("host", "pool"),
               "ZFS txg syncs per second", "Transaction groups synced, with their sync time.", ("latency",)),
        Metric("zfs.txg_bytes", "zfs_txg", "bytes", "bytes/s", 1.0, ("host", "pool"),
               "ZFS txg bytes per second", "Bytes written by synced transaction groups."),
    )
}

# How dimensions read in a statistic's English name.
DIM_PHRASE = {
    "host": "host", "proto": "protocol", "op": "type", "client": "client", "share": "share",
    "file": "file", "latency": "latency", "size": "size", "offset": "offset", "disk": "disk",
    "cpu": "CPU", "mode": "mode", "application": "application", "interface": "interface",
    "direction": "direction", "port": "local port", "cache": "cache", "result": "result", "pool": "pool",
}


class CatalogError(ValueError):
    """A name that is not in the catalog; the message lists the valid ones."""


def metric(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise CatalogError(f"unknown metric {name!r}; valid metrics: {', '.join(METRICS)}") from None


def check_dim(m: Metric, dim: str, *, allow_hist: bool = True) -> str:
    valid = m.all_dims if allow_hist else m.dims
    if dim not in valid:
        raise CatalogError(f"unknown dimension {dim!r} for {m.name}; valid dimensions: {', '.join(valid)}")
    return dim


def check_hist(m: Metric, dim: str) -> Histogram:
    if dim not in m.hists:
        valid = ", ".join(m.hists) or "(none)"
        raise CatalogError(f"{dim!r} is not a histogram dimension of {m.name}; valid: {valid}")
    return HISTOGRAMS[dim]


def statistic_name(metric_name: str, where: dict[str, list[str]] | None = None, by: str | None = None) -> str:
    """English name in Fishworks' style.

    >>> statistic_name("nfs.ops", {"op": ["read"], "client": ["10.0.0.7"]}, "file")
    'NFS operations per second of type read for client 10.0.0.7 broken down by file'
    """
    m = metric(metric_name)
    parts = [m.noun]
    where = where or {}
    for dim in sorted(where, key=lambda d: (d != "op", d)):
        vals = where[dim]
        shown = vals[0] if len(vals) == 1 else "{" + ", ".join(vals) + "}"
        if dim == "op":
            parts.append(f"of type {shown}")
        elif dim.endswith(PREFIX_OP):
            base = dim[: -len(PREFIX_OP)]
            parts.append(f"for {DIM_PHRASE.get(base, base)} under {shown}")
        else:
            parts.append(f"for {DIM_PHRASE.get(dim, dim)} {shown}")
    if by:
        parts.append(f"broken down by {DIM_PHRASE.get(by, by)}")
    return " ".join(parts)


def fmt_amount(v: float, unit: str) -> str:
    """A value of a histogram's unit (ns, else bytes) as people read it: "2.25 ms", "9.18 KiB"."""
    if unit == "ns":
        for div, u in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
            if v >= div:
                return f"{v / div:.3g} {u}"
        return f"{v:.0f} ns"
    for div, u in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if v >= div:
            return f"{v / div:.3g} {u}"
    return f"{v:.0f} B"


def bucket_label(h, e: int) -> str:
    lo, hi = h.bounds(e)
    if hi is None:
        return f"≥ {fmt_amount(lo, h.unit)}"
    if lo == 0:
        return f"< {fmt_amount(hi, h.unit)}"
    return f"{fmt_amount(lo, h.unit)} – {fmt_amount(hi, h.unit)}"
