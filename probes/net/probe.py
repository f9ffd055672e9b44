"""The network probe's declaration: map layouts (mirroring ``net.bpf.h``) and decoding.

Rows of family ``net`` carry client, local port, direction and the interface the
client is reached through: the one this host's route to its address names (a
longest-prefix match over /proc/net/route and /proc/net/ipv6_route, ``procfs.routes``;
"" when no route decides). Per-interface totals stay with procfs.net, and the
catalog's layer rule keeps the two from being added together. ``count`` is socket calls
(sends or receives that moved data), ``bytes`` the payload they moved. Family
``tcp`` counts retransmitted segments per client and local port.

A socket with no peer (unconnected UDP: a DNS or NFS-over-UDP server answering
many clients on one socket) has no client to name: it is reported as client
``(unconnected)`` with its local port, so totals stay whole.
"""

from __future__ import annotations

import ctypes
import functools
import ipaddress
import os

import numpy as np

from ..bpf import libbpf
from ..bpf.probe import BpfProbe
from ..procfs.routes import Routes
from ..source import Collected

DIRECTIONS = ("in", "out")
UNCONNECTED = "(unconnected)"
OTHER = "(other)"


class NetKey(ctypes.Structure):
    _fields_ = [("addr", ctypes.c_uint8 * 16), ("port", ctypes.c_uint16), ("dir", ctypes.c_uint8),
                ("pad", ctypes.c_uint8)]


class NetVal(ctypes.Structure):
    _fields_ = [("calls", ctypes.c_uint64), ("bytes", ctypes.c_uint64)]


class RetransKey(ctypes.Structure):
    _fields_ = [("addr", ctypes.c_uint8 * 16), ("port", ctypes.c_uint16), ("pad", ctypes.c_uint8 * 2)]


class RetransVal(ctypes.Structure):
    _fields_ = [("segs", ctypes.c_uint64)]


# numpy views of the same layouts, to decode thousands of keys a second without a
# Python object per key and per CPU
KEY_DTYPE = np.dtype([("addr", "V16"), ("port", "<u2"), ("dir", "u1"), ("pad", "u1")])


@functools.lru_cache(maxsize=65536)  # the same clients come back every second
def addr_str(raw: bytes) -> str:
    """16 address bytes as people write them: IPv4 (also when IPv4-mapped), IPv6
    compressed (RFC 5952), ``(unconnected)`` for all zeros (no peer)."""
    raw = bytes(raw)
    if len(raw) != 16:
        raise ValueError(f"an address key is 16 bytes, got {len(raw)}")
    if not any(raw):
        return UNCONNECTED
    a = ipaddress.IPv6Address(raw)
    return str(a.ipv4_mapped) if a.ipv4_mapped is not None else a.compressed


class NetProbe(BpfProbe):
    name = "bpf.net"
    families = ("net", "tcp")
    OBJECT = "net.bpf.o"
    PROGRAMS = ("net_send", "net_recv")
    OPTIONAL_PROGRAMS = ("net_retransmit",)
    DRAIN = ("sock", "retrans")
    COUNTERS = ("drops", "other_in", "other_out", "retrans_other")

    def __init__(self, host: str, *, proc: str | os.PathLike = "/proc", **kw) -> None:
        super().__init__(host, **kw)
        self.routes = Routes(proc)

    def status(self) -> list[dict]:
        st = super().status()
        if self.routes.error and st[0]["state"] == "active":
            why = f"clients' interfaces unknown: {self.routes.error}"
            st[0]["reason"] = "; ".join(x for x in (st[0]["reason"], why) if x)
        return st

    def requirements(self) -> str | None:
        for tp in ("sock_send_length", "sock_recv_length"):
            if not libbpf.btf_has(f"btf_trace_{tp}"):
                return f"no sock:{tp} tracepoint in this kernel's BTF (it arrived in Linux 6.3)"
        return None

    def decode(self, drained: dict[str, list[tuple[bytes, bytes]]], ts: int) -> Collected:
        assert self.obj is not None
        sock = self.obj.map("sock")
        clients: list[str] = []
        ifaces: list[str] = []
        ports: list[str] = []
        dirs: list[str] = []
        calls: list[int] = []
        nbytes: list[int] = []
        entries = drained["sock"]
        if entries:
            keys = np.frombuffer(b"".join(k for k, _ in entries), dtype=KEY_DTYPE)
            vals = np.frombuffer(b"".join(v for _, v in entries), dtype="<u8").reshape(
                len(entries), sock.ncpus, sock.stride // 8)[:, :, :2].sum(axis=1)  # per-CPU slices summed
            live = vals[:, 0] > 0
            keys, vals = keys[live], vals[live]
            # one row per (address, port, direction); a direction the probe does not know counts as "in"
            k = np.empty(len(keys), dtype=[("addr", "V16"), ("port", "<u2"), ("dir", "u1")])
            k["addr"], k["port"] = keys["addr"], keys["port"]
            k["dir"] = np.where(keys["dir"] < len(DIRECTIONS), keys["dir"], DIRECTIONS.index("in"))
            uniq, inv = np.unique(k, return_inverse=True)
            sums = np.zeros((len(uniq), 2), dtype=np.uint64)
            np.add.at(sums, inv.reshape(-1), vals)
            addrs, ainv = np.unique(uniq["addr"], return_inverse=True)  # strings once per address and port
            names = [addr_str(a.tobytes()) for a in addrs]
            clients = np.array(names, dtype=object)[ainv.reshape(-1)].tolist()
            ifaces = np.array([self.routes.interface(n) for n in names], dtype=object)[ainv.reshape(-1)].tolist()
            pvals, pinv = np.unique(uniq["port"], return_inverse=True)
            ports = np.array([str(p) for p in pvals.tolist()], dtype=object)[pinv.reshape(-1)].tolist()
            dirs = np.array(DIRECTIONS, dtype=object)[uniq["dir"]].tolist()
            calls, nbytes = sums[:, 0].tolist(), sums[:, 1].tolist()
        for d, counter in (("in", "other_in"), ("out", "other_out")):
            v = NetVal.from_buffer_copy(drained[counter][0][1])
            if v.calls:  # the sock map was full: totals kept, detail lost
                clients.append(OTHER)
                ifaces.append("")
                ports.append("")
                dirs.append(d)
                calls.append(v.calls)
                nbytes.append(v.bytes)
        tcp: dict[tuple[str, str], int] = {}
        for kb, vb in drained["retrans"]:
            k, v = RetransKey.from_buffer_copy(kb), RetransVal.from_buffer_copy(vb)
            key = (addr_str(bytes(k.addr)), str(k.port))
            tcp[key] = tcp.get(key, 0) + v.segs
        other = RetransVal.from_buffer_copy(drained["retrans_other"][0][1])
        if other.segs:
            tcp[(OTHER, "")] = tcp.get((OTHER, ""), 0) + other.segs

        out: Collected = []
        if calls:  # as columns: thousands of clients a second without a Python object per row
            out.append(("net", self.host, {"n": len(calls), "dims": {"client": clients, "port": ports,
                                                                     "direction": dirs, "interface": ifaces},
                                           "count": calls, "bytes": nbytes}))
        trows = [{"dims": {"client": c, "port": p}, "count": n} for (c, p), n in sorted(tcp.items()) if n]
        if trows:
            out.append(("tcp", self.host, trows))
        return out
