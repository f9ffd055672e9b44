"""Webhook posts: where a receiver may be (LOUPE_WEBHOOK_ALLOW), and one POST to it.

A webhook URL is chosen by an admin, but the server makes the request: without limits it could
be pointed at services only the server can reach. Posts go to an address the policy allows, the
one checked (resolved once), and follow no redirect.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
# Cloud metadata services answer on link-local addresses (169.254.169.254) and, on AWS over IPv6,
# on fd00:ec2::254: a webhook must not be a way to make the server read them, so they are refused
# unless listed.
METADATA = (ipaddress.ip_network("169.254.0.0/16"), ipaddress.ip_network("fe80::/10"),
            ipaddress.ip_network("fd00:ec2::254/128"))


class ReceiverRefused(ValueError):
    """A webhook receiver this server may not post to; the message says why."""


@dataclass(frozen=True)
class ReceiverPolicy:
    """Where webhook receivers may be (LOUPE_WEBHOOK_ALLOW): networks and host names. Unset, any
    address but link-local, unspecified and multicast ones. A listed name is trusted with whatever
    it resolves to; any other host must resolve to a listed network. The address checked is the
    address connected to (no second lookup, so a name cannot change its answer in between)."""

    networks: tuple[Network, ...] = ()
    hosts: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, text: str) -> ReceiverPolicy:
        nets, hosts = [], set()
        for item in (x.strip() for x in text.split(",")):
            if not item:
                continue
            try:
                nets.append(ipaddress.ip_network(item, strict=False))
                continue
            except ValueError:
                pass
            name = item.lower().rstrip(".")
            if not all(part and len(part) <= 63 and part.replace("-", "").isalnum() for part in name.split(".")):
                raise ValueError(f"webhook_allow: {item!r} is neither a network (10.0.0.0/8, 2001:db8::/32, "
                                 "192.0.2.7) nor a host name")
            hosts.add(name)
        return cls(tuple(nets), frozenset(hosts))

    @property
    def listed(self) -> bool:
        return bool(self.networks or self.hosts)

    def describe(self) -> str:
        if not self.listed:
            return "unset LOUPE_WEBHOOK_ALLOW refuses link-local, metadata, unspecified and multicast addresses"
        return "LOUPE_WEBHOOK_ALLOW=" + ",".join([str(n) for n in self.networks] + sorted(self.hosts))

    def allows(self, ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        if self.listed:
            return any(ip in n for n in self.networks)
        return not (ip.is_unspecified or ip.is_multicast or any(ip in n for n in METADATA))

    def address(self, host: str, port: int, *, resolve: Callable = socket.getaddrinfo) -> str:
        """The address to connect to for `host`, or ReceiverRefused naming why there is none."""
        try:
            addrs = [ipaddress.ip_address(host)]
        except ValueError:
            try:
                addrs = list(dict.fromkeys(ipaddress.ip_address(i[4][0].split("%")[0])
                                           for i in resolve(host, port, type=socket.SOCK_STREAM)))
            except (OSError, UnicodeError) as e:
                raise ReceiverRefused(f"receiver host {host!r} does not resolve: {e}") from None
            if host.lower().rstrip(".") in self.hosts:
                return str(addrs[0])
        for ip in addrs:
            if self.allows(ip):
                return str(ip)
        raise ReceiverRefused(f"receiver {host} ({', '.join(map(str, addrs))}) is at no allowed address: "
                              f"{self.describe()}")

    def check_url(self, url: str) -> None:
        """At a rule's save: refuse a receiver that is surely not allowed (an address, or under a list,
        a name that is not listed and resolves to no listed network). Unlisted names under no list
        are checked at each post, where they are resolved anyway."""
        u = urlsplit(url)
        host = u.hostname or ""
        try:
            ipaddress.ip_address(host)
        except ValueError:
            if not self.listed or host.lower().rstrip(".") in self.hosts:
                return
        self.address(host, u.port or (443 if u.scheme == "https" else 80))


def post(url: str, body: bytes, headers: dict[str, str], timeout: float,
         policy: ReceiverPolicy = ReceiverPolicy()) -> tuple[bool, int | None, str | None]:
    """One POST: (2xx?, HTTP status, what went wrong). Connects to the address `policy` allows,
    and follows no redirect (a redirect could lead anywhere the policy refuses)."""
    u = urlsplit(url)
    https = u.scheme == "https"
    port = u.port or (443 if https else 80)
    try:
        ip = policy.address(u.hostname or "", port)
    except ReceiverRefused as e:
        return False, None, str(e)
    conn = (http.client.HTTPSConnection(u.hostname, port, timeout=timeout, context=ssl.create_default_context())
            if https else http.client.HTTPConnection(u.hostname, port, timeout=timeout))
    # http.client's one hook for the socket: connect to the checked address, while the Host header,
    # TLS name and certificate check keep using the URL's host name.
    conn._create_connection = lambda addr, t=None, src=None: socket.create_connection((ip, addr[1]), t, src)
    try:
        conn.request("POST", (u.path or "/") + (f"?{u.query}" if u.query else ""), body=body, headers=headers)
        r = conn.getresponse()
        r.read(65536)
        if 200 <= r.status < 300:
            return True, r.status, None
        if 300 <= r.status < 400:
            return False, r.status, (f"HTTP {r.status} {r.reason}: redirects are not followed "
                                     f"(to {r.getheader('Location') or 'nowhere given'})")
        return False, r.status, f"HTTP {r.status} {r.reason}"
    except (OSError, http.client.HTTPException, ValueError) as e:
        return False, None, f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
    finally:
        conn.close()
