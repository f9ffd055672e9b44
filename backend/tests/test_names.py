"""Client names: hosts-file parsing, the policy's order, and reverse DNS against a real DNS server."""

import time

import pytest
from ptrserver import PtrServer, address_of

from loupe.config import Settings
from loupe.names import HostsFile, NameResolver, canonical, parse_hosts, parse_policy, parse_server


@pytest.mark.parametrize(("text", "expected"), [
    ("10.0.0.7 nfs-a\n", {"10.0.0.7": "nfs-a"}),
    # the first name of a line is the name; the rest are aliases
    ("10.0.0.7\tnfs-a.lab.example nfs-a  a7\n", {"10.0.0.7": "nfs-a.lab.example"}),
    # comments, whole-line and trailing; blank lines; a line with no name
    ("# clients\n\n10.0.0.7 nfs-a # the build box\n10.0.0.8\n   \n#10.0.0.9 gone\n", {"10.0.0.7": "nfs-a"}),
    # the first line naming an address wins, as in the C library's reverse lookup
    ("10.0.0.7 first\n10.0.0.7 second\n", {"10.0.0.7": "first"}),
    # IPv6 is keyed by its canonical spelling; an IPv4-mapped address by the IPv4 one
    ("2001:DB8:0:0::0001 six\n::ffff:10.0.0.9 mapped\n", {"2001:db8::1": "six", "10.0.0.9": "mapped"}),
    # lines whose address does not parse are skipped, not fatal
    ("10.0.0.300 bad\nnot-an-address name\n10.0.0.7 good\n", {"10.0.0.7": "good"}),
    # a name that cannot be shown is skipped for the next one on the line
    ("10.0.0.7 " + "x" * 300 + " short\n", {"10.0.0.7": "short"}),
    ("127.0.0.1 localhost\n::1 localhost ip6-localhost\n", {"127.0.0.1": "localhost", "::1": "localhost"}),
    ("", {}),
])
def test_hosts_file_parsing(text, expected):
    assert parse_hosts(text) == expected


@pytest.mark.parametrize(("given", "expected"), [
    ("10.0.0.7", "10.0.0.7"), (" 10.0.0.7 ", "10.0.0.7"), ("2001:DB8::0001", "2001:db8::1"),
    ("::ffff:10.0.0.7", "10.0.0.7"), ("10.0.0.300", None), ("nfs-a", None), ("", None), ("10.0.0.007", None),
])
def test_canonical_addresses(given, expected):
    assert canonical(given) == expected


# A setting's text: what it reads as (a tuple), or the words of the error refusing it (a string).
@pytest.mark.parametrize(("parse", "text", "expected"), [
    (parse_policy, "table,hosts,dns", ("table", "hosts", "dns")), (parse_policy, "DNS, table", ("dns", "table")),
    (parse_policy, "", ()), (parse_policy, "none", ()),
    (parse_policy, "table,ldap", "unknown client name source 'ldap'"),
    (parse_policy, "dns,table,dns", "'dns' is listed twice"),
    (parse_server, "127.0.0.1:5353", ("127.0.0.1", 5353)), (parse_server, "192.0.2.1", ("192.0.2.1", 53)),
    (parse_server, "[::1]:5300", ("::1", 5300)), (parse_server, "::1", ("::1", 53)),
    (parse_server, "dns.example:53", "is not an IPv4 or IPv6 address"), (parse_server, "127.0.0.1:0", "port '0'"),
    (parse_server, "127.0.0.1:http", "port 'http'"), (parse_server, "[::1", "write \\[IPv6\\]:port"),
])
def test_setting_text(parse, text, expected):
    if isinstance(expected, tuple):
        assert parse(text) == expected
    else:
        with pytest.raises(ValueError, match=expected):
            parse(text)


def test_the_test_server_reads_reverse_names():
    assert address_of("7.0.0.10.in-addr.arpa.") == "10.0.0.7"
    assert address_of("1." + "0." * 23 + "8.b.d.0.1.0.0.2.ip6.arpa.") == "2001:db8::1"


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def settled(resolver: NameResolver, timeout: float = 10.0) -> None:
    """Wait until no reverse lookup is queued or running."""
    end = time.monotonic() + timeout
    while resolver.dns and resolver.dns.cache_counts()[2]:
        assert time.monotonic() < end, "reverse lookups did not finish"
        time.sleep(0.01)


def resolver_for(tmp_path, store, policy, *, dns=None, clock=None, **kw):
    s = Settings(data_dir=tmp_path, client_names=policy, hosts_file=tmp_path / "hosts", dns_server=dns, **kw)
    return NameResolver(s, store, clock=clock or time.monotonic)


ADDRS = ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"]


# (policy, names before any DNS answer, names once DNS has answered, addresses DNS was asked about:
# an address an earlier source names is never looked up)
@pytest.mark.parametrize(("policy", "before", "after", "asked"), [
    ("table,hosts,dns",
     {"10.0.0.1": "from-table", "10.0.0.2": "hosts-two"},
     {"10.0.0.1": "from-table", "10.0.0.2": "hosts-two", "10.0.0.3": "dns-three"}, 2),
    ("dns,hosts,table",  # while DNS has not answered, the later sources stand in
     {"10.0.0.1": "from-hosts", "10.0.0.2": "hosts-two"},
     {"10.0.0.1": "from-dns", "10.0.0.2": "dns-two", "10.0.0.3": "dns-three"}, 4),
    ("hosts,table,dns",
     {"10.0.0.1": "from-hosts", "10.0.0.2": "hosts-two"},
     {"10.0.0.1": "from-hosts", "10.0.0.2": "hosts-two", "10.0.0.3": "dns-three"}, 2),
    ("table,dns",
     {"10.0.0.1": "from-table"},
     {"10.0.0.1": "from-table", "10.0.0.2": "dns-two", "10.0.0.3": "dns-three"}, 3),
    ("table,hosts", {"10.0.0.1": "from-table", "10.0.0.2": "hosts-two"},
     {"10.0.0.1": "from-table", "10.0.0.2": "hosts-two"}, 0),
    ("hosts", {"10.0.0.1": "from-hosts", "10.0.0.2": "hosts-two"},
     {"10.0.0.1": "from-hosts", "10.0.0.2": "hosts-two"}, 0),
    ("table", {"10.0.0.1": "from-table"}, {"10.0.0.1": "from-table"}, 0),
    ("dns", {}, {"10.0.0.1": "from-dns", "10.0.0.2": "dns-two", "10.0.0.3": "dns-three"}, 4),
    ("none", {}, {}, 0),
])
def test_policy_order_first_name_wins(tmp_path, store, policy, before, after, asked):
    (tmp_path / "hosts").write_text("10.0.0.1 from-hosts\n10.0.0.2 hosts-two\n")
    dns = {"10.0.0.1": "from-dns", "10.0.0.2": "dns-two", "10.0.0.3": "dns-three"}
    with PtrServer(dns) as srv:
        r = resolver_for(tmp_path, store, policy, dns=srv.address)
        r.set_table({"10.0.0.1": "from-table"}, "admin", 1.0)
        try:
            assert r.names(ADDRS) == before
            settled(r)
            assert r.names(ADDRS) == after
            # not a name: asked of no source, and never looked up
            assert r.names(["", "(other)", "nfs-a"]) == {}
            assert sum(srv.queries.values()) == asked
        finally:
            r.close()


def test_the_mapping_table_is_kept_in_the_store(tmp_path, store):
    r = resolver_for(tmp_path, store, "table")
    r.set_table({"10.0.0.9": "nine", "2001:db8::1": "six", "10.0.0.10": "ten"}, "admin", 5.0)
    again = resolver_for(tmp_path, store, "table")
    assert list(again.table.names.items()) == [("10.0.0.9", "nine"), ("10.0.0.10", "ten"), ("2001:db8::1", "six")]
    assert (again.table.set_by, again.table.set_at) == ("admin", 5.0)
    # a result's key is answered as the API gave it, whatever its spelling
    assert again.names(["2001:DB8::0001", "::ffff:10.0.0.9"]) == {"2001:DB8::0001": "six", "::ffff:10.0.0.9": "nine"}


def test_the_hosts_file_is_read_again_when_it_changes(tmp_path):
    path, clock = tmp_path / "hosts", Clock()
    path.write_text("10.0.0.1 old\n")
    h = HostsFile(path, clock)
    assert h.names() == {"10.0.0.1": "old"} and h.problem is None
    path.write_text("10.0.0.1 renamed-one\n10.0.0.2 two\n")
    assert h.names() == {"10.0.0.1": "old"}  # looked at again after a couple of seconds, not per request
    clock.t += 3
    assert h.names() == {"10.0.0.1": "renamed-one", "10.0.0.2": "two"}
    path.unlink()
    clock.t += 3
    assert h.names() == {} and "cannot read" in h.problem


def test_reverse_dns_resolves_caches_and_keeps_failures_for_the_negative_ttl(tmp_path, store):
    clock = Clock()
    with PtrServer({"10.0.0.7": "nfs-a.lab.example", "2001:db8::1": "six.lab.example"}) as srv:
        r = resolver_for(tmp_path, store, "dns", dns=srv.address, clock=clock, dns_ttl=600, dns_negative_ttl=60)
        try:
            r.names(["2001:DB8::1"])  # IPv6: an ip6.arpa query
            settled(r)
            assert r.names(["2001:DB8::1"]) == {"2001:DB8::1": "six.lab.example"}
            assert r.names(["10.0.0.7", "10.0.0.8"]) == {}  # not known yet: shown as addresses, asked in the background
            settled(r)
            assert r.names(["10.0.0.7", "10.0.0.8"]) == {"10.0.0.7": "nfs-a.lab.example"}
            for _ in range(5):  # the cache answers: the server is asked once per address
                r.names(["10.0.0.7", "10.0.0.8"])
            settled(r)
            assert (srv.asked("10.0.0.7"), srv.asked("10.0.0.8")) == (1, 1)
            assert (r.dns.stats.found, r.dns.stats.not_found) == (2, 1)  # with the IPv6 one
            assert r.dns.cache_counts() == (2, 1, 0)

            # past the negative TTL the unnamed address is asked again; the name is still fresh
            srv.names["10.0.0.8"] = "late.lab.example"
            clock.t += 61
            assert r.names(["10.0.0.8"]) == {}
            settled(r)
            assert r.names(["10.0.0.7", "10.0.0.8"]) == {"10.0.0.7": "nfs-a.lab.example", "10.0.0.8": "late.lab.example"}
            assert (srv.asked("10.0.0.7"), srv.asked("10.0.0.8")) == (1, 2)

            # past the TTL a name is looked up again, and the old one is shown until the answer lands
            srv.names["10.0.0.7"] = "renamed.lab.example"
            clock.t += 601
            assert r.names(["10.0.0.7"]) == {"10.0.0.7": "nfs-a.lab.example"}
            settled(r)
            assert r.names(["10.0.0.7"]) == {"10.0.0.7": "renamed.lab.example"}
            assert srv.asked("10.0.0.7") == 2
        finally:
            r.close()


def test_a_slow_server_times_out_without_holding_up_an_answer(tmp_path, store):
    clock = Clock()
    with PtrServer({"10.0.0.7": "nfs-a", "10.0.0.9": "too-late"}, slow={"10.0.0.9": 2.0}) as srv:
        r = resolver_for(tmp_path, store, "dns", dns=srv.address, clock=clock, dns_timeout=0.3,
                         dns_negative_ttl=60)
        try:
            r.names(["10.0.0.7"])
            settled(r)
            t0 = time.monotonic()
            assert r.names(["10.0.0.9", "10.0.0.7"]) == {"10.0.0.7": "nfs-a"}
            assert time.monotonic() - t0 < 0.1  # the answer did not wait for the slow lookup
            assert r.dns.cache_counts()[2] == 1  # which is still running
            for _ in range(20):  # and other requests are answered meanwhile
                assert r.names(["10.0.0.7", "10.0.0.9"]) == {"10.0.0.7": "nfs-a"}
            settled(r)
            took = time.monotonic() - t0
            assert took < 1.5, f"the lookup took {took:.2f} s; the timeout is 0.3 s and the server needs 2 s"
            assert r.dns.stats.timeouts == 1
            # a timeout is kept like a failure: not asked again before the negative TTL
            assert r.names(["10.0.0.9"]) == {}
            assert r.dns.cache_counts()[2] == 0 and srv.asked("10.0.0.9") == 1
        finally:
            r.close()
