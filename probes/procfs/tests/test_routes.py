"""Which interface reaches a client: the route decoders and the longest-prefix match,
table-driven over route tables the kernel printed (testdata/routes/nas/README)."""

from __future__ import annotations

import ipaddress
import shutil
import sys
from pathlib import Path

import pytest

from loupe_probes.procfs.routes import Route, Routes, RouteTable, ipv4_local, ipv4_routes, ipv6_routes

NAS = Path(__file__).resolve().parent.parent / "testdata" / "routes" / "nas"


def _read(name: str) -> str:
    return (NAS / "net" / name).read_text()


@pytest.fixture(scope="module")
def table() -> RouteTable:
    # The fixture was printed on x86: /proc/net/route's words are little-endian there.
    return RouteTable(ipv4_routes(_read("route"), "little") + ipv4_local(_read("fib_trie"))
                      + ipv6_routes(_read("ipv6_route")))


@pytest.mark.parametrize("addr, interface", [
    # IPv4: the main table
    ("10.1.7.9", "bond0.100"),  # a VLAN on the bond: its own name, whose speed the kernel reports
    ("10.2.0.77", "bond0.200"),
    ("10.1.2.3", "eth4"),  # a /32 inside bond0.100's /16: the longest prefix wins
    ("172.20.1.1", "bond0.200"),  # via a gateway on that VLAN
    ("192.168.5.20", "eth2"),  # 192.168.5.0/24 on eth2 (metric 0) and eth3 (metric 200): the lowest
    ("203.0.113.9", "eth2"),  # a multipath route: /proc/net/route shows its first path only
    ("8.8.8.8", "bond0"),  # the default route
    ("10.8.1.1", "bond0"),  # 10.8.0.0/16 is unreachable: skipped, so the default route's
    ("10.9.1.1", "bond0"),  # a blackhole likewise
    # IPv4: this host's own addresses and 127.0.0.0/8 go through loopback
    ("10.1.0.5", "lo"),
    ("192.168.5.1", "lo"),
    ("127.0.0.1", "lo"),
    ("127.3.4.5", "lo"),
    # IPv6 (ipv6_route lists every table)
    ("2001:db8:1::77", "bond0.100"),
    ("2001:db8:3:7::1", "eth3"),  # a /64 inside a /48 routed via bond0.200
    ("2001:db8:3:8::1", "bond0.200"),
    ("2001:db8:5::9", "eth3"),  # eth2 (metric 100) or eth3 (metric 50)
    ("2001:db8:6::9", None),  # ECMP: eth2 and eth3 at the same metric, no single answer
    ("2001:db8:7::1", "bond0.100"),  # only a source-specific route: the default route
    ("2001:db8:dead::1", "bond0.100"),  # unreachable /48 skipped
    ("2606:4700::1111", "bond0.100"),  # the default route, ::/0
    ("2001:db8:1::5", "lo"),  # RTF_LOCAL: its own address
    ("::1", "lo"),
    ("fe80::1", None),  # link-local: every interface has fe80::/64, the address alone cannot say
    # not addresses
    ("(unconnected)", None),
    ("(other)", None),
    ("", None),
])
def test_interface_of_an_address(table: RouteTable, addr: str, interface: str | None) -> None:
    assert table.interface(addr) == interface


def test_ipv4_routes_decode_words_in_host_order() -> None:
    head = "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n"
    little = head + "eth1\t0000010A\t00000000\t0001\t0\t0\t5\t0000FFFF\t0\t0\t0\n"
    big = head + "eth1\t0A010000\t00000000\t0001\t0\t0\t5\tFFFF0000\t0\t0\t0\n"
    want = [Route(ipaddress.ip_network("10.1.0.0/16"), "eth1", 5)]
    assert ipv4_routes(little, "little") == want
    assert ipv4_routes(big, "big") == want


@pytest.mark.parametrize("decode, text, says", [
    (ipv4_routes, "Iface\tDestination\nbond0\t00000000\t010200C0\n", "/proc/net/route line 2: 3 fields"),
    (ipv4_routes, "head\nbond0 zz 0 0001 0 0 0 00000000\n", "invalid literal"),
    (ipv6_routes, "fe80 40 0 0 0 0 0 0 1 eth0\n", "/proc/net/ipv6_route line 1: cannot read"),
])
def test_unreadable_tables_say_which_file_and_line(decode, text, says) -> None:
    with pytest.raises(ValueError, match=says):
        decode(text)


def test_fib_trie_gives_the_local_prefixes() -> None:
    nets = {str(r.net) for r in ipv4_local(_read("fib_trie"))}
    # each once, though the file prints the main and the local table
    assert nets == {"10.1.0.5/32", "10.2.0.5/32", "127.0.0.0/8", "127.0.0.1/32", "192.0.2.10/32",
                    "192.168.5.1/32", "198.51.100.1/32"}


def test_routes_are_read_again_after_refresh_and_missing_files_are_no_routes(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    (proc / "net").mkdir(parents=True)
    if sys.byteorder != "little":
        pytest.skip("the fixture's /proc/net/route was printed on a little-endian machine")
    shutil.copy(NAS / "net" / "route", proc / "net" / "route")  # no IPv6, no fib_trie
    now = [0.0]
    r = Routes(proc, refresh=10, clock=lambda: now[0])
    assert (r.interface("10.1.7.9"), r.interface("2001:db8:1::77"), r.interface("10.1.0.5")) == \
        ("bond0.100", "", "bond0.100")  # without fib_trie its own address is not known as local
    assert r.error == ""
    shutil.copy(NAS / "net" / "fib_trie", proc / "net" / "fib_trie")
    now[0] = 9.0
    assert r.interface("10.1.0.5") == "bond0.100"  # not read again yet
    now[0] = 10.0
    assert r.interface("10.1.0.5") == "lo"
    (proc / "net" / "ipv6_route").write_text("not a route\n")
    now[0] = 20.0
    assert r.interface("10.1.7.9") == "bond0.100" and r.interface("2001:db8:1::77") == ""
    assert "ipv6_route" in r.error and "line 1" in r.error
