"""Which interface reaches an address: the kernel's routes, as /proc shows them, decoded.

``/proc/net/route`` is IPv4's main table; ``/proc/net/fib_trie`` adds the local table, whose
``LOCAL`` entries are this host's own addresses (and 127.0.0.0/8), which the kernel reaches
through the loopback device whatever device holds them. ``/proc/net/ipv6_route`` lists every
IPv6 table at once, local entries flagged ``RTF_LOCAL`` (or ``RTF_ANYCAST``).

The lookup is the kernel's: local routes first, then the longest prefix, then the lowest
metric. Two routes left tied through different devices (ECMP, or a link-local fe80::/64 on
every interface, which an address without its scope cannot choose between) give no answer
rather than a guess. Policy routing (``ip rule``) is not seen: IPv4 shows its main table only.

The decoders are pure functions of the files' text; :class:`Routes` reads them now and then.
"""

from __future__ import annotations

import ipaddress
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

LOOPBACK = "lo"
# include/uapi/linux/route.h, include/uapi/linux/ipv6_route.h
RTF_UP, RTF_REJECT = 0x0001, 0x0200
RTF_ANYCAST, RTF_LOCAL = 0x00100000, 0x80000000


@dataclass(frozen=True)
class Route:
    net: Network
    interface: str
    metric: int = 0
    local: bool = False  # one of this host's own addresses: delivered through the loopback device


def ipv4_routes(text: str, byteorder: str = sys.byteorder) -> list[Route]:
    """/proc/net/route: Iface Destination Gateway Flags RefCnt Use Metric Mask ...; addresses
    are the 32-bit network-order value printed as a host-order hex integer."""
    out = []
    for n, line in enumerate(text.splitlines()[1:], 2):
        f = line.split()
        if not f:
            continue
        if len(f) < 8:
            raise ValueError(f"/proc/net/route line {n}: {len(f)} fields, expected at least 8")
        flags = int(f[3], 16)
        if not flags & RTF_UP or flags & RTF_REJECT or f[0] == "*":
            continue  # down, unreachable, prohibit or blackhole: no device carries it
        dest = ipaddress.IPv4Address(int(f[1], 16).to_bytes(4, byteorder))  # type: ignore[arg-type]
        mask = ipaddress.IPv4Address(int(f[7], 16).to_bytes(4, byteorder))  # type: ignore[arg-type]
        out.append(Route(ipaddress.IPv4Network(f"{dest}/{mask}", strict=False), f[0], int(f[6])))
    return out


def ipv4_local(text: str) -> list[Route]:
    """/proc/net/fib_trie: each leaf ``|-- a.b.c.d`` is followed by its prefixes, one a line
    (``/32 host LOCAL``); the LOCAL ones are this host's addresses."""
    out: set[Network] = set()
    leaf = None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("|--"):
            leaf = s[3:].strip()
        elif s.startswith("/") and leaf is not None:
            f = s.split()
            if f[-1] == "LOCAL":
                out.add(ipaddress.IPv4Network(f"{leaf}{f[0]}", strict=False))
        elif s.startswith("+--") or s.endswith(":"):  # an inner node, or a table's name
            leaf = None
    return [Route(net, LOOPBACK, local=True) for net in sorted(out)]  # type: ignore[type-var]


def ipv6_routes(text: str) -> list[Route]:
    """/proc/net/ipv6_route: dest plen src plen next_hop metric refcnt use flags device, in hex."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        f = line.split()
        if not f:
            continue
        if len(f) != 10 or len(f[0]) != 32:
            raise ValueError(f"/proc/net/ipv6_route line {n}: cannot read {line.strip()!r}")
        flags = int(f[8], 16)
        if not flags & RTF_UP or flags & RTF_REJECT or int(f[3], 16):
            continue  # down or unreachable; a source-specific route applies to some sources only
        net = ipaddress.IPv6Network((bytes.fromhex(f[0]), int(f[1], 16)), strict=False)
        local = bool(flags & (RTF_LOCAL | RTF_ANYCAST))
        out.append(Route(net, LOOPBACK if local else f[9], int(f[5], 16), local))
    return out


class RouteTable:
    """Longest-prefix match over routes, indexed by prefix length: a lookup costs one dict
    probe per length in use, however many routes there are."""

    def __init__(self, routes: Iterable[Route]) -> None:
        # (version, local) -> prefix length -> network address -> routes
        self._by: dict[tuple[int, bool], dict[int, dict[int, list[Route]]]] = {}
        for r in routes:
            plens = self._by.setdefault((r.net.version, r.local), {})
            plens.setdefault(r.net.prefixlen, {}).setdefault(int(r.net.network_address), []).append(r)
        # per table, its prefix lengths longest first, each with its mask
        self._order = {k: [(p, ((1 << p) - 1) << (128 if k[0] == 6 else 32) - p) for p in sorted(v, reverse=True)]
                       for k, v in self._by.items()}

    def interface(self, addr: str) -> str | None:
        """The interface the kernel would send to ``addr`` through; None when no route (or a
        tie between devices) decides, or ``addr`` is not an address."""
        try:
            a = ipaddress.ip_address(addr)
        except ValueError:
            return None
        n = int(a)
        for local in (True, False):
            key = (a.version, local)
            for plen, mask in self._order.get(key, ()):
                hit = self._by[key][plen].get(n & mask)
                if hit:
                    best = min(r.metric for r in hit)
                    devices = {r.interface for r in hit if r.metric == best}
                    return devices.pop() if len(devices) == 1 else None
        return None


FILES = (("route", ipv4_routes), ("fib_trie", ipv4_local), ("ipv6_route", ipv6_routes))
MAX_CACHED = 1 << 16  # addresses whose interface is remembered (the socket probe keeps 16,384 keys)


class Routes:
    """This host's routes, read again every ``refresh`` seconds; a file that is missing (no
    IPv6) or unreadable leaves its part of the table empty. Each address is looked up once
    while the files stay the same (a lookup costs tens of µs; thousands of clients would
    otherwise cost a noticeable part of a second at each reading)."""

    def __init__(self, proc: str | Path = "/proc", refresh: float = 10.0, clock=time.monotonic) -> None:
        self.proc = Path(proc)
        self.refresh, self.clock = refresh, clock
        self._table: RouteTable | None = None
        self._texts: list[str | None] = []
        self._read_at = 0.0
        self._cache: dict[str, str] = {}
        self.error = ""  # why a file could not be read or decoded, at the last reading

    def table(self) -> RouteTable:
        now = self.clock()
        if self._table is not None and now - self._read_at < self.refresh:
            return self._table
        self._read_at = now
        texts: list[str | None] = []
        errors = []
        for name, _ in FILES:
            try:
                texts.append((self.proc / "net" / name).read_text())
            except FileNotFoundError:
                texts.append("")
            except OSError as e:
                texts.append(None)
                errors.append(f"{self.proc / 'net' / name}: {e}")
        if self._table is None or texts != self._texts:
            routes: list[Route] = []
            for (name, decode), text in zip(FILES, texts):
                try:
                    routes += decode(text) if text else []
                except ValueError as e:
                    errors.append(f"{self.proc / 'net' / name}: {e}")
            self._table, self._texts, self._cache = RouteTable(routes), texts, {}
            self.error = "; ".join(errors)
        return self._table

    def interface(self, addr: str) -> str:
        """``addr``'s interface, or "" when the routes do not say."""
        table = self.table()
        got = self._cache.get(addr)
        if got is None:
            if len(self._cache) >= MAX_CACHED:
                self._cache.clear()
            got = self._cache[addr] = table.interface(addr) or ""
        return got
