"""The network probe: address decoding (table-driven) and, as root, real TCP traffic
from three network namespaces to a server in this one, and real retransmits."""

from __future__ import annotations

import ipaddress
import secrets
import shutil
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from loupe.columns import columns_to_rows, is_columns
from loupe.frame import Frame
from loupe_probes.bpf import libbpf
from loupe_probes.bpf.testing import REPO, build_objects, require_bpf
from loupe_probes.net import NetProbe, addr_str
from loupe_probes.net.probe import NetKey, NetVal, OTHER, UNCONNECTED

HERE = Path(__file__).resolve().parent
ROUTES = REPO / "probes" / "procfs" / "testdata" / "routes" / "nas"  # a NAS's routes: default via bond0
MiB = 1 << 20


def v4mapped(a: str) -> bytes:
    return bytes(10) + b"\xff\xff" + ipaddress.IPv4Address(a).packed


@pytest.mark.parametrize("raw, text", [
    (v4mapped("10.78.3.2"), "10.78.3.2"),
    (v4mapped("127.0.0.1"), "127.0.0.1"),
    (v4mapped("255.255.255.255"), "255.255.255.255"),
    (v4mapped("0.0.0.1"), "0.0.0.1"),
    (ipaddress.IPv6Address("::1").packed, "::1"),
    (ipaddress.IPv6Address("fd00:0:0:0:0:0:0:2").packed, "fd00::2"),
    (ipaddress.IPv6Address("2001:db8:0:1:1:1:1:1").packed, "2001:db8:0:1:1:1:1:1"),  # RFC 5952: no :: for one group
    (ipaddress.IPv6Address("2001:0:0:1:0:0:0:1").packed, "2001:0:0:1::1"),  # the longest zero run
    (ipaddress.IPv6Address("fe80::fc:ff:fe00:1").packed, "fe80::fc:ff:fe00:1"),
    (ipaddress.IPv6Address("::ffff:0:1.2.3.4").packed, "::ffff:0:102:304"),  # IPv4-translated is not mapped
    (ipaddress.IPv6Address("64:ff9b::a00:1").packed, "64:ff9b::a00:1"),
    (bytes(16), UNCONNECTED),
])
def test_addr_str(raw, text):
    assert addr_str(raw) == text


@pytest.mark.parametrize("raw", [b"", bytes(4), bytes(17)])
def test_addr_str_rejects_wrong_length(raw):
    with pytest.raises(ValueError, match="16 bytes"):
        addr_str(raw)


class _FakeMap:
    """A per-CPU map on a 2-CPU machine: decode sums the CPUs' slices."""

    percpu = True
    ncpus = 2
    stride = 16


class _FakeObj:
    def map(self, name):
        return _FakeMap()


def _as_rows(rows) -> list[dict]:
    return columns_to_rows(rows) if is_columns(rows) else rows


def _frame(fam: str, host: str, rows) -> Frame:
    shape = {"v": 2, "columns": rows} if is_columns(rows) else {"rows": rows}
    return Frame(source=f"bpf.net@{host}", seq=1, ts=1, family=fam, host=host, **shape)


def _key(addr: str, port: int, d: int) -> bytes:
    return bytes(NetKey((*v4mapped(addr),), port, d, 0))


@pytest.mark.parametrize("drained, net_rows, tcp_rows", [
    ({"sock": [(_key("10.0.0.7", 2049, 0), bytes(NetVal(3, 300))),
               (_key("10.0.0.7", 2049, 1), bytes(NetVal(2, 90))),
               (_key("10.1.7.9", 2049, 1), bytes(NetVal(1, 50))),
               (_key("10.1.0.5", 2049, 1), bytes(NetVal(1, 20)))]},
     [({"client": "10.0.0.7", "port": "2049", "direction": "in", "interface": "bond0"}, 3, 300),
      ({"client": "10.0.0.7", "port": "2049", "direction": "out", "interface": "bond0"}, 2, 90),
      ({"client": "10.1.7.9", "port": "2049", "direction": "out", "interface": "bond0.100"}, 1, 50),
      ({"client": "10.1.0.5", "port": "2049", "direction": "out", "interface": "lo"}, 1, 20)], []),
    ({"sock": [(bytes(NetKey((0,) * 16, 53, 0, 0)), bytes(NetVal(1, 40)))],
      "other_out": [(bytes(4), bytes(NetVal(4, 4000)))],
      "retrans": [(bytes(16) + (111).to_bytes(2, "little") + bytes(2), (5).to_bytes(8, "little"))]},
     [({"client": OTHER, "port": "", "direction": "out", "interface": ""}, 4, 4000),
      ({"client": UNCONNECTED, "port": "53", "direction": "in", "interface": ""}, 1, 40)],
     [({"client": UNCONNECTED, "port": "111"}, 5)]),
    # a key whose counters are all zero (idle since the last drain) gives no row; an unknown
    # direction counts as "in" and merges with the "in" key of the same socket
    ({"sock": [(_key("10.0.0.8", 2049, 0), bytes(NetVal(0, 0))),
               (_key("10.0.0.9", 2049, 0), bytes(NetVal(1, 10))),
               (_key("10.0.0.9", 2049, 7), bytes(NetVal(2, 20)))]},
     [({"client": "10.0.0.9", "port": "2049", "direction": "in", "interface": "bond0"}, 3, 30)], []),
])
def test_decode(drained, net_rows, tcp_rows):
    """decode() on hand-built map contents: one row per key, each with the interface of its
    route (its own address: loopback), overflow as (other), frames valid."""
    if sys.byteorder != "little":
        pytest.skip("the routes fixture's /proc/net/route was printed on a little-endian machine")
    p = NetProbe("h1", proc=ROUTES)
    p.obj = _FakeObj()  # decode only asks a map for its per-CPU layout
    # per-CPU values: this CPU's counts, then an idle CPU's zeros
    drained = {**drained, "sock": [(k, v + bytes(16)) for k, v in drained.get("sock", [])]}
    full = {"sock": [], "retrans": [], "other_in": [(bytes(4), bytes(16))], "other_out": [(bytes(4), bytes(16))],
            "retrans_other": [(bytes(4), bytes(8))], **drained}
    raw = p.decode(full, 1)
    for fam, host, rows in raw:  # net comes as columns; either shape must make a valid frame
        _frame(fam, host, rows)
    out = {fam: _as_rows(rows) for fam, _, rows in raw}
    assert sorted(((r["dims"], r["count"], r["bytes"]) for r in out.get("net", [])), key=repr) == \
        sorted(net_rows, key=repr)
    assert [(r["dims"], r["count"]) for r in out.get("tcp", [])] == tcp_rows


# ---------------------------------------------------------------------- real traffic

def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


@dataclass
class Lab:
    server: str  # address of this namespace's bridge
    bridge: str = ""
    clients: dict[str, str] = field(default_factory=dict)  # namespace -> address
    host_if: dict[str, str] = field(default_factory=dict)  # namespace -> this side's veth


def _free_subnet() -> int:
    used = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
    for _ in range(100):
        n = secrets.randbelow(256)
        if f"10.78.{n}." not in used:
            return n
    raise RuntimeError("no free 10.78.x.0/24 subnet")


@pytest.fixture
def lab():
    """Three namespaces with veths bridged into this one; everything deleted afterwards."""
    require_bpf()
    if shutil.which("ip") is None:
        pytest.skip("iproute2 (ip) not installed")
    tag = secrets.token_hex(3)
    n = _free_subnet()
    br = f"lpb{tag}"
    lab = Lab(server=f"10.78.{n}.1", bridge=br)
    namespaces: list[str] = []
    try:
        _ip("link", "add", br, "type", "bridge")
        _ip("addr", "add", f"{lab.server}/24", "dev", br)
        _ip("link", "set", br, "up")
        for i, letter in enumerate("abc"):
            ns, host_if, peer = f"loupe-{tag}-{letter}", f"lp{tag}{letter}", f"lp{tag}{letter}n"
            _ip("netns", "add", ns)
            namespaces.append(ns)
            _ip("link", "add", host_if, "type", "veth", "peer", "name", peer, "netns", ns)
            _ip("link", "set", host_if, "master", br, "up")
            _ip("-n", ns, "addr", "add", f"10.78.{n}.{2 + i}/24", "dev", peer)
            _ip("-n", ns, "link", "set", peer, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            lab.clients[ns] = f"10.78.{n}.{2 + i}"
            lab.host_if[ns] = host_if
        yield lab
    finally:
        for ns in namespaces:
            _ip("netns", "del", ns, check=False)  # takes its veth, and so the peer, with it
        _ip("link", "del", br, check=False)


class Server(threading.Thread):
    """A TCP server in this namespace: per connection, read to EOF, then send the reply
    size asked for by the client address; it records what it received and sent per peer."""

    def __init__(self, addr: str, replies: dict[str, int]) -> None:
        super().__init__(daemon=True)
        self.sock = socket.create_server((addr, 0))
        self.sock.settimeout(120)
        self.port = self.sock.getsockname()[1]
        self.replies = replies
        self.received: dict[str, int] = {}
        self.sent: dict[str, int] = {}
        self.errors: list[BaseException] = []

    def run(self) -> None:
        workers = []
        try:
            for _ in range(len(self.replies)):
                conn, (peer, _) = self.sock.accept()
                t = threading.Thread(target=self._serve, args=(conn, peer), daemon=True)
                t.start()
                workers.append(t)
        except BaseException as e:  # surfaced by the test
            self.errors.append(e)
        for t in workers:
            t.join(120)
        self.sock.close()

    def _serve(self, conn: socket.socket, peer: str) -> None:
        try:
            with conn:
                conn.settimeout(120)
                got = 0
                while chunk := conn.recv(1 << 16):
                    got += len(chunk)
                self.received[peer] = got
                conn.sendall(b"r" * self.replies[peer])
                self.sent[peer] = self.replies[peer]
        except BaseException as e:
            self.errors.append(e)


CLIENT = r"""
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=120)
n = int(sys.argv[3]); buf = b"q" * 65536; sent = 0
while sent < n:
    sent += s.send(buf[:min(len(buf), n - sent)])
s.shutdown(socket.SHUT_WR)
got = 0
while chunk := s.recv(1 << 16):
    got += len(chunk)
print(sent, got)
"""


def _run_clients(lab: Lab, server: Server, sizes: dict[str, int]) -> dict[str, tuple[int, int]]:
    """Each namespace's client sends its size and reads the reply; -> addr: (sent, received)."""
    procs = {ns: subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", CLIENT, lab.server,
                                   str(server.port), str(size)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for ns, size in sizes.items()}
    out = {}
    for ns, p in procs.items():
        stdout, stderr = p.communicate(timeout=180)
        assert p.returncode == 0, f"client in {ns} failed: {stderr}"
        sent, got = map(int, stdout.split())
        out[lab.clients[ns]] = (sent, got)
    server.join(180)
    assert not server.errors, server.errors
    return out


def _rows(out, family: str) -> list[dict]:
    return [r for fam, _, rows in out for r in _as_rows(rows) if fam == family]


def test_bytes_per_client(lab: Lab):
    sizes = dict(zip(lab.clients, (3 * MiB, 5 * MiB, 7 * MiB)))
    replies = dict(zip(lab.clients.values(), (1 * MiB, 2 * MiB, 3 * MiB)))
    server = Server(lab.server, replies)
    probe = NetProbe("testhost")
    try:
        assert probe.start(), probe.reason
        probe.collect(0)  # drain what came before
        server.start()
        clients = _run_clients(lab, server, sizes)
        out = probe.collect(1)
        st = probe.status()[0]
    finally:
        probe.close()
    assert st["state"] == "active" and st["cost"]["runs_per_s"] > 0, st
    rows = _rows(out, "net")
    for fam, host, rs in out:
        _frame(fam, host, rs)
    port = str(server.port)
    for addr, (sent, got) in clients.items():
        assert server.received[addr] == sent and got == replies[addr], (addr, sent, got)
        mine = {r["dims"]["direction"]: r for r in rows if r["dims"]["client"] == addr and r["dims"]["port"] == port}
        assert set(mine) == {"in", "out"}, (addr, port, rows)
        assert abs(mine["in"]["bytes"] - sent) <= 0.02 * sent, (addr, mine["in"], sent)
        assert abs(mine["out"]["bytes"] - replies[addr]) <= 0.02 * replies[addr], (addr, mine["out"], replies[addr])
        assert mine["in"]["count"] >= 1 and mine["out"]["count"] >= 1
        # the route to the namespaces names the bridge: the interface they are reached through
        assert mine["in"]["dims"]["interface"] == mine["out"]["dims"]["interface"] == lab.bridge, mine
    # The clients' own sockets (in their namespaces) are seen too, from their side:
    # the server's address, an ephemeral local port, and the same bytes the other way.
    theirs = [r for r in rows if r["dims"]["client"] == lab.server and r["dims"]["direction"] == "out"]
    assert sorted(r["bytes"] for r in theirs if r["bytes"] in sizes.values()) == sorted(sizes.values()), theirs


def _retrans_segs() -> int:
    lines = [ln.split() for ln in Path("/proc/net/snmp").read_text().splitlines() if ln.startswith("Tcp:")]
    return int(lines[1][lines[0].index("RetransSegs")])


@pytest.fixture
def lossy_object(tmp_path):
    """The test's packet-dropping tc program, compiled here (it is not part of the product)."""
    require_bpf()
    err = build_objects()  # vmlinux.h
    if err:
        pytest.fail(err)
    obj = tmp_path / "lossy.bpf.o"
    r = subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-I", str(REPO / "build" / "bpf"),
                        "-c", str(HERE / "lossy.bpf.c"), "-o", str(obj)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return obj


def test_retransmits_per_client(lab: Lab, lossy_object: Path):
    """30 % of the packets towards one namespace are dropped: the server retransmits to it."""
    ns = next(iter(lab.clients))
    addr = lab.clients[ns]
    server = Server(lab.server, {addr: 1 * MiB})
    probe = NetProbe("testhost")
    drop = libbpf.BpfObject(lossy_object)
    try:
        assert probe.start(), probe.reason
        assert "net_retransmit" not in probe.reason, probe.reason  # the optional program attached
        drop.attach_tc("lossy", socket.if_nametoindex(lab.host_if[ns]), ingress=False)
        probe.collect(0)
        before = _retrans_segs()
        server.start()
        _run_clients(lab, server, {ns: 1000})
        after = _retrans_segs()
        out = probe.collect(1)
    finally:
        drop.close()
        probe.close()
    rows = _rows(out, "tcp")
    mine = [r for r in rows if r["dims"] == {"client": addr, "port": str(server.port)}]
    assert mine and mine[0]["count"] > 0, rows
    # Segments, as the kernel counts them: this namespace's TcpRetransSegs moved at
    # least as much (other connections here may have retransmitted too).
    assert mine[0]["count"] <= after - before, (mine, after - before)
    for fam, host, rs in out:
        _frame(fam, host, rs)
