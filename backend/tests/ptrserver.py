"""A real DNS server on 127.0.0.1 (UDP, a free port) answering PTR queries from a table, for the
client name tests. It counts the queries per address, and can answer some addresses slowly."""

import ipaddress
import threading
import time
from collections import Counter

from dnslib import PTR, QTYPE, RCODE, RR
from dnslib.server import BaseResolver, DNSLogger, DNSServer


def address_of(qname: str) -> str | None:
    """'7.0.0.10.in-addr.arpa.' -> '10.0.0.7'; nibble ip6.arpa names -> the IPv6 address."""
    labels = qname.rstrip(".").split(".")
    try:
        if labels[-2:] == ["in-addr", "arpa"] and len(labels) == 6:
            return str(ipaddress.IPv4Address(".".join(reversed(labels[:4]))))
        if labels[-2:] == ["ip6", "arpa"] and len(labels) == 34:
            h = "".join(reversed(labels[:32]))
            return str(ipaddress.IPv6Address(":".join(h[i:i + 4] for i in range(0, 32, 4))))
    except ValueError:
        return None
    return None


class _Resolver(BaseResolver):
    def __init__(self, server: "PtrServer") -> None:
        self.s = server

    def resolve(self, request, handler):
        qname = str(request.q.qname)
        addr = address_of(qname)
        with self.s.lock:
            self.s.queries[addr or qname] += 1
        delay = self.s.slow.get(addr or "", 0.0)
        if delay:
            time.sleep(delay)
        reply = request.reply()
        name = self.s.names.get(addr or "")
        if request.q.qtype == QTYPE.PTR and name:
            reply.add_answer(RR(request.q.qname, QTYPE.PTR, rdata=PTR(name + "."), ttl=60))
        else:
            reply.header.rcode = RCODE.NXDOMAIN
        return reply


class PtrServer:
    def __init__(self, names: dict[str, str], slow: dict[str, float] | None = None) -> None:
        self.names, self.slow = dict(names), dict(slow or {})
        self.queries: Counter[str] = Counter()
        self.lock = threading.Lock()
        quiet = DNSLogger(log="-recv,-send,-request,-reply,-truncated,-error,-data", prefix=False)
        self.server = DNSServer(_Resolver(self), address="127.0.0.1", port=0, logger=quiet)
        self.port = self.server.server.server_address[1]
        self.address = f"127.0.0.1:{self.port}"

    def asked(self, address: str) -> int:
        with self.lock:
            return self.queries[address]

    def __enter__(self) -> "PtrServer":
        self.server.start_thread()
        return self

    def __exit__(self, *exc) -> None:
        self.server.stop()
        self.server.server.server_close()
