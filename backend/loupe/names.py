"""Client names: a client address shown as a host name, from an ordered policy of sources.

Sources (LOUPE_CLIENT_NAMES, first with a name wins):
- ``table``: the admin's mapping table, kept in the store (``config_put('client_names', ...)``);
- ``hosts``: a file in /etc/hosts format (LOUPE_HOSTS_FILE), read again when it changes;
- ``dns``: reverse DNS (PTR) through LOUPE_DNS_SERVER, or the name servers of /etc/resolv.conf.

A request never waits for DNS. An address that is not cached is answered as itself and queued
for a small pool of worker threads; its answer is cached (names for LOUPE_DNS_TTL, failures and
timeouts for LOUPE_DNS_NEGATIVE_TTL), so the next request has the name. An expired name is still
given while it is looked up again, so a chart's legend does not flick back to addresses.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import queue
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .config import Settings
    from .store.base import Statistic, Store

log = logging.getLogger("loupe.names")

SOURCES = ("table", "hosts", "dns")
CONFIG_KEY = "client_names"
MAX_NAME = 253  # a DNS name's length limit; names from any source are held to it
MAX_TABLE = 10_000
HOSTS_RECHECK_S = 2.0  # how often the hosts file's mtime is looked at, at most
HOSTS_MAX_BYTES = 16 << 20
DNS_QUEUE = 4096  # addresses waiting for a lookup; beyond it they are asked again by a later request
DNS_CACHE = 100_000


# ------------------------------------------------------------------ pure parts
def canonical(address: str) -> str | None:
    """The one spelling of an address used as a key ('2001:DB8::0001' -> '2001:db8::1',
    '::ffff:10.0.0.7' -> '10.0.0.7'), or None if it is not an IPv4 or IPv6 address."""
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip)


def address_order(address: str) -> tuple[int, int, str]:
    """Sort key: IPv4 before IPv6, numerically within each."""
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
        return ip.version, int(ip), address
    except ValueError:
        return 9, 0, address


def name_problem(name: str) -> str | None:
    """Why `name` (already stripped) cannot be shown as a client's name, or None if it can.
    Control and format characters are refused: a newline breaks tables, and a right-to-left
    override would make a name read as another."""
    if not name:
        return "is empty"
    if len(name) > MAX_NAME:
        return f"is {len(name)} characters long; at most {MAX_NAME}"
    bad = next((c for c in name if unicodedata.category(c).startswith("C")), None)
    if bad is not None:
        return f"holds the control character U+{ord(bad):04X}"
    return None


def parse_policy(text: str) -> tuple[str, ...]:
    """'table,hosts,dns' -> ('table', 'hosts', 'dns'); '' or 'none' -> () (addresses only)."""
    items = [s.strip().lower() for s in text.split(",") if s.strip()]
    if items == ["none"]:
        return ()
    for s in items:
        if s not in SOURCES:
            raise ValueError(f"unknown client name source {s!r}; valid: {', '.join(SOURCES)} (or none)")
    dup = next((s for i, s in enumerate(items) if s in items[:i]), None)
    if dup:
        raise ValueError(f"client name source {dup!r} is listed twice")
    return tuple(items)


def parse_server(text: str) -> tuple[str, int]:
    """A DNS server 'address[:port]': '127.0.0.1:5353', '[::1]:53', '192.0.2.1' (port 53)."""
    t = text.strip()
    host, port = t, 53
    if t.startswith("["):
        host, sep, rest = t[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise ValueError(f"cannot read DNS server {text!r}: write [IPv6]:port")
        if rest:
            port = _port(rest[1:], text)
    elif t.count(":") == 1:
        host, p = t.split(":")
        port = _port(p, text)
    if canonical(host) is None:
        raise ValueError(f"DNS server {text!r}: {host!r} is not an IPv4 or IPv6 address")
    return canonical(host) or host, port


def _port(p: str, text: str) -> int:
    if not p.isdigit() or not 0 < int(p) < 65536:
        raise ValueError(f"DNS server {text!r}: port {p!r} is not 1-65535")
    return int(p)


def parse_hosts(text: str) -> dict[str, str]:
    """An /etc/hosts-format text -> {canonical address: its first name}.

    Like the C library's reverse lookup, the first line naming an address wins and a line's first
    name is the one given (the others are aliases). Comments, blank lines, lines whose address does
    not parse and names that cannot be shown are skipped."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split()
        if len(fields) < 2:
            continue
        addr = canonical(fields[0])
        if addr is None or addr in out:
            continue
        name = next((n for n in fields[1:] if name_problem(n) is None), None)
        if name is not None:
            out[addr] = name
    return out


def client_addresses(stat: Statistic, keys: Iterable[str] = ()) -> list[str]:
    """The client addresses a result shows: its breakdown keys when broken down by client, and
    the client filter's values."""
    out = list(keys) if stat.by == "client" else []
    out += stat.where_dict.get("client", [])
    return out


# ------------------------------------------------------------------ sources
class HostsFile:
    """An /etc/hosts-format file, read again when its mtime, size or inode change."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.monotonic) -> None:
        self.path = Path(path)
        self.clock = clock
        self._lock = threading.Lock()
        self._checked = -1e18
        self._sig: tuple | None = None
        self._names: dict[str, str] = {}
        self.problem: str | None = None

    def names(self) -> dict[str, str]:
        now = self.clock()
        if now - self._checked < HOSTS_RECHECK_S:
            return self._names
        with self._lock:
            if now - self._checked >= HOSTS_RECHECK_S:
                self._checked = now
                self._reload()
        return self._names

    def _reload(self) -> None:
        try:
            st = os.stat(self.path)
        except OSError as e:
            self._sig, self._names = None, {}
            self.problem = f"cannot read {self.path}: {e.strerror}"
            return
        sig = (st.st_mtime_ns, st.st_size, st.st_ino)
        if sig == self._sig:
            return
        try:
            with open(self.path, "rb") as f:
                text = f.read(HOSTS_MAX_BYTES).decode("utf-8", "replace")
        except OSError as e:
            self._names, self.problem = {}, f"cannot read {self.path}: {e.strerror}"
            return
        self._sig, self._names, self.problem = sig, parse_hosts(text), None


@dataclass
class DnsStats:
    lookups: int = 0
    found: int = 0
    not_found: int = 0
    timeouts: int = 0
    failures: int = 0
    dropped: int = 0  # the queue was full: asked again by a later request


@dataclass
class _Entry:
    name: str | None
    expires: float


class ReverseDNS:
    """PTR lookups on a bounded pool of threads, cached with a positive and a negative TTL.

    `lookup` only reads the cache: it never waits for the network."""

    def __init__(self, server: tuple[str, int] | None, *, timeout: float, ttl: float, negative_ttl: float,
                 workers: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.server, self.timeout, self.ttl, self.negative_ttl = server, timeout, ttl, negative_ttl
        self.workers, self.clock = workers, clock
        self.stats = DnsStats()
        self.problem: str | None = None
        self._cache: OrderedDict[str, _Entry] = OrderedDict()
        self._pending: set[str] = set()
        self._queue: queue.Queue[str | None] = queue.Queue(DNS_QUEUE)
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._resolver = self._make_resolver()

    def _make_resolver(self):
        import dns.resolver

        try:
            if self.server is None:  # the system's name servers
                r = dns.resolver.Resolver(configure=True)
            else:
                r = dns.resolver.Resolver(configure=False)
                r.nameservers = [self.server[0]]
                r.port = self.server[1]
        except Exception as e:  # no /etc/resolv.conf, or no name server in it
            self.problem = f"no name server: {e}; set LOUPE_DNS_SERVER"
            return None
        r.timeout = r.lifetime = self.timeout
        r.cache = None  # the cache here has the negative TTL and the stale-while-refresh rule
        return r

    def describe(self) -> str:
        if self.server is not None:
            host, port = self.server
            return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        if self._resolver is None:
            return "system (none)"
        return "system (" + ", ".join(str(n) for n in self._resolver.nameservers) + ")"

    def lookup(self, address: str) -> str | None:
        """The cached name of a canonical address (None: none, or not known yet); queue a lookup
        when it is not cached or its entry has expired."""
        now = self.clock()
        e = self._cache.get(address)
        if e is not None and e.expires > now:
            return e.name
        self._ask(address)
        return e.name if e is not None else None  # an expired name stays until its refresh lands

    def _ask(self, address: str) -> None:
        if self._resolver is None or self._closed:
            return
        with self._lock:
            if address in self._pending:
                return
            if not self._threads:
                for i in range(self.workers):
                    t = threading.Thread(target=self._work, name=f"loupe-dns-{i}", daemon=True)
                    t.start()
                    self._threads.append(t)
            try:
                self._queue.put_nowait(address)
            except queue.Full:
                self.stats.dropped += 1  # under the lock
                return
            self._pending.add(address)

    def _work(self) -> None:
        while True:
            address = self._queue.get()
            if address is None:
                return
            try:
                name, outcome = self.resolve(address)
            except Exception:  # never lose a worker: log, and keep the address unnamed for a while
                log.exception("reverse DNS of %s failed", address)
                name, outcome = None, "failures"
            with self._lock:
                self.stats.lookups += 1
                setattr(self.stats, outcome, getattr(self.stats, outcome) + 1)
                ttl = self.ttl if name is not None else self.negative_ttl
                self._cache[address] = _Entry(name, self.clock() + ttl)
                self._cache.move_to_end(address)
                while len(self._cache) > DNS_CACHE:
                    self._cache.popitem(last=False)
                self._pending.discard(address)

    def resolve(self, address: str) -> tuple[str | None, str]:
        """One PTR lookup, waiting at most the timeout: (name or None, outcome: the DnsStats
        counter it adds to)."""
        import dns.exception
        import dns.resolver
        import dns.reversename

        try:
            ans = self._resolver.resolve(dns.reversename.from_address(address), "PTR",
                                         lifetime=self.timeout, raise_on_no_answer=False)
        except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
            return None, "not_found"
        except dns.exception.Timeout:
            return None, "timeouts"
        except dns.exception.DNSException as e:  # SERVFAIL, refused, no reachable server
            log.debug("reverse DNS of %s: %s", address, e)
            return None, "failures"
        for rr in ans.rrset or ():
            name = rr.target.to_text(omit_final_dot=True)
            if name_problem(name) is None:
                return name, "found"
        return None, "not_found"

    def cache_counts(self) -> tuple[int, int, int]:
        """(names cached, addresses cached without a name, lookups waiting or running)."""
        with self._lock:
            named = sum(1 for e in self._cache.values() if e.name is not None)
            return named, len(self._cache) - named, len(self._pending)

    def close(self) -> None:
        self._closed = True
        for _ in self._threads:
            try:
                self._queue.put_nowait(None)
            except queue.Full:  # daemon threads: they end with the process
                break
        end = time.monotonic() + self.timeout + 1  # a lookup in flight ends by its timeout
        for t in self._threads:
            t.join(timeout=max(0.0, end - time.monotonic()))


# ------------------------------------------------------------------ the resolver
@dataclass
class NameTable:
    names: dict[str, str] = field(default_factory=dict)  # canonical address -> name
    set_by: str | None = None
    set_at: float | None = None


class NameResolver:
    """The policy in force: `names(addresses)` answers from memory, at once."""

    def __init__(self, settings: Settings, store: Store, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings, self.store = settings, store
        self.order = parse_policy(settings.client_names)
        self.hosts = HostsFile(settings.hosts_file, clock)
        server = parse_server(settings.dns_server) if settings.dns_server else None
        self.dns = ReverseDNS(server, timeout=settings.dns_timeout, ttl=settings.dns_ttl,
                              negative_ttl=settings.dns_negative_ttl, workers=settings.dns_workers,
                              clock=clock) if "dns" in self.order else None
        self._table = self._load()

    def _load(self) -> NameTable:
        doc = self.store.config_get(CONFIG_KEY) or {}
        names = {}
        for addr, name in (doc.get("names") or {}).items():
            a = canonical(str(addr))
            if a is not None and isinstance(name, str) and name_problem(name) is None:
                names[a] = name
        return NameTable(names, doc.get("set_by"), doc.get("set_at"))

    @property
    def table(self) -> NameTable:
        return self._table

    def set_table(self, names: dict[str, str], by: str, at: float) -> NameTable:
        """Replace the mapping table (canonical addresses, checked names); saved in the store."""
        ordered = dict(sorted(names.items(), key=lambda kv: address_order(kv[0])))
        self.store.config_put(CONFIG_KEY, {"names": ordered, "set_by": by, "set_at": at})
        self._table = NameTable(ordered, by, at)
        return self._table

    def name(self, address: str) -> str | None:
        a = canonical(address)
        if a is None:
            return None
        for source in self.order:
            if source == "table":
                n = self._table.names.get(a)
            elif source == "hosts":
                n = self.hosts.names().get(a)
            else:
                n = self.dns.lookup(a) if self.dns else None
            if n is not None:
                return n
        return None

    def names(self, addresses: Iterable[str]) -> dict[str, str]:
        """{address as given: name} for those with a name; the rest are shown as themselves."""
        out = {}
        for a in addresses:
            if a not in out and (n := self.name(a)) is not None:
                out[a] = n
        return out

    def close(self) -> None:
        if self.dns:
            self.dns.close()
