"""Table-driven tests of the nfswire decoders: op names, clients, handle hash,
path resolution from name bindings, READDIRPLUS3 XDR, row merging."""

from __future__ import annotations

import struct

import pytest

from loupe_probes.nfswire.names import Resolver, fh_label
from loupe_probes.nfswire.probe import merge
from loupe_probes.nfswire.wire import (FH_NONE, FH_ROOT, OP_GSS_PRIV, OP_OPEN_CREATE, OP_UNPARSED, client_addr,
                                       fh_hash, op_name, parse_readdirplus, proto_name)


@pytest.mark.parametrize("proto, op, name", [
    (1, 0, "null"), (1, 1, "getattr"), (1, 3, "lookup"), (1, 6, "read"), (1, 7, "write"), (1, 8, "create"),
    (1, 17, "readdirplus"), (1, 21, "commit"), (1, 22, "proc22"),
    (2, 0, "null"), (2, 3, "access"), (2, 9, "getattr"), (2, 18, "open"), (2, 22, "putfh"), (2, 24, "putrootfh"),
    (2, 25, "read"), (2, 38, "write"), (3, 53, "sequence"), (3, 42, "exchange_id"), (4, 69, "seek"),
    (4, 71, "clone"), (4, 10044, "illegal"), (4, 999, "op999"),
    (1, OP_GSS_PRIV, "(encrypted)"), (3, OP_UNPARSED, "(unparsed)"),
    (2, OP_OPEN_CREATE, "open_create"), (4, OP_OPEN_CREATE, "open_create"), (1, OP_OPEN_CREATE, "proc65533"),
    (4, 0xFFFC, "op65532"),  # a wire op number past the table's end, as the decoder clamps it
])
def test_op_names(proto, op, name):
    assert op_name(proto, op) == name


@pytest.mark.parametrize("proto, name", [(1, "v3"), (2, "v4.0"), (3, "v4.1"), (4, "v4.2"), (9, "proto9")])
def test_proto_names(proto, name):
    assert proto_name(proto) == name


@pytest.mark.parametrize("family, addr, shown", [
    (4, bytes([10, 77, 0, 11]) + bytes(12), "10.77.0.11"),
    (4, bytes([192, 168, 1, 200]) + b"\xff" * 12, "192.168.1.200"),  # bytes past the IPv4 address ignored
    (6, bytes.fromhex("20010db8000000000000000000000001"), "2001:db8::1"),
    (6, bytes.fromhex("fe80000000000000021122fffe334455"), "fe80::211:22ff:fe33:4455"),
    (6, bytes.fromhex("00000000000000000000ffff0a4d000b"), "10.77.0.11"),  # IPv4-mapped
    (6, bytes(16), "::"),
])
def test_client_addr(family, addr, shown):
    assert client_addr(family, addr) == shown


def _ref_hash(data: bytes, seed: int = 0) -> int:
    """The same construction written out byte by byte, as an independent reference."""
    m = (1 << 64) - 1
    h = 0xCBF29CE484222325 ^ seed ^ len(data)
    for i in range(0, len(data), 8):
        w = 0
        for j, b in enumerate(data[i:i + 8]):
            w |= b << (8 * j)
        h = ((h ^ w) * 0x100000001B3) & m
        h ^= h >> 29
    return h + 16 if h < 16 else h


@pytest.mark.parametrize("data", [b"\x01", bytes(range(8)), bytes(range(28)), bytes(range(64)),
                                  bytes(range(100, 228)), b"\xff" * 36])
def test_fh_hash_matches_reference(data):
    assert fh_hash(data) == _ref_hash(data)
    assert fh_hash(data) >= 16  # below 16: sentinels


def test_fh_hash_separates_length_and_seed():
    assert fh_hash(b"\x00" * 8) != fh_hash(b"\x00" * 4)
    assert fh_hash(b"abc", seed=5) != fh_hash(b"abc")


# ---------------------------------------------------------------- resolver

BINDINGS = [  # (child, parent, name)
    (100, FH_ROOT, "export"),   # MOUNT /export, or PUTROOTFH + LOOKUP export + GETFH
    (101, 100, "a"),
    (102, 101, "b.txt"),
    (103, 100, "c/d"),          # two LOOKUPs in one COMPOUND, bound at once
    (104, FH_ROOT, ""),         # GETFH after PUTROOTFH: the pseudo root itself
    (105, 106, "orphan"),       # parent never seen
    (107, 108, "x"), (108, 107, "y"),  # a cycle (stale bindings): no path
]


@pytest.mark.parametrize("h, path", [
    (FH_ROOT, "/"), (100, "/export"), (101, "/export/a"), (102, "/export/a/b.txt"), (103, "/export/c/d"),
    (104, "/"), (105, None), (107, None), (999, None),
])
def test_paths_from_bindings(h, path):
    r = Resolver(["/export"])
    for c, p, n in BINDINGS:
        r.bind(c, p, n)
    assert r.path(h) == path


@pytest.mark.parametrize("h, file", [(FH_NONE, ""), (102, "/export/a/b.txt"), (999, fh_label(999)),
                                     (0xDEADBEEF, "fh:00000000deadbeef")])
def test_file_labels(h, file):
    r = Resolver()
    for c, p, n in BINDINGS:
        r.bind(c, p, n)
    assert r.file(h) == file


def test_rebinding_moves_a_file_and_the_map_is_bounded():
    r = Resolver(max_entries=3)
    r.bind(10, FH_ROOT, "e")
    r.bind(11, 10, "old")
    r.bind(11, 10, "new")  # renamed
    assert r.path(11) == "/e/new"
    r.bind(12, 10, "f")
    r.bind(13, 10, "g")  # evicts the least recently bound (10)
    assert len(r.parents) == 3 and r.path(13) is None


OPENED = {106: "/export/opened", 300: "/"}  # what the opener names (open_by_handle_at on the server)


@pytest.mark.parametrize("h, file, asked", [
    (102, "/export/a/b.txt", []),             # bindings reach the root: the opener is not asked
    (106, "/export/opened", [106]),           # no binding at all
    (105, "/export/opened/orphan", [106]),    # bindings stop at 106: its opened path, then the names below
    (999, fh_label(999), [999]),              # the opener cannot name it either
    (107, fh_label(107), []),                 # a cycle: nothing to ask about
    (301, "/top", [300]),                     # an opened root: no doubled slash
])
def test_opener_names_where_bindings_stop(h, file, asked):
    seen = []
    r = Resolver(["/export"], opener=lambda x: seen.append(x) or OPENED.get(x))
    for c, p, n in BINDINGS + [(301, 300, "top")]:
        r.bind(c, p, n)
    assert (r.file(h), seen) == (file, asked)
    assert r.path(h) == (file if not asked and not file.startswith("fh:") else None)  # path(): bindings only


@pytest.mark.parametrize("exports, path, share", [
    (["/export"], "/export/a/b", "/export"),
    (["/export"], "/export", "/export"),
    (["/export", "/export/deep"], "/export/deep/x", "/export/deep"),  # longest wins
    (["/export"], "/exporter/x", "/exporter"),  # not a prefix by component: first component
    ([], "/home/u/f", "/home"),
    ([], "/", "/"),
    (["/export"], "fh:00000000000000ff", ""),
    (["/export"], "", ""),
])
def test_share_of_path(exports, path, share):
    assert Resolver(exports).share(path) == share


# ---------------------------------------------------------------- READDIRPLUS3

def _xdr_str(b: bytes) -> bytes:
    return struct.pack(">I", len(b)) + b + b"\0" * (-len(b) % 4)


def _rdp_reply(entries, *, attrs=True, status=0) -> bytes:
    out = struct.pack(">IIII", 0x1234, 1, 0, 0) + struct.pack(">I", 0) + struct.pack(">II", 0, status)
    if status:
        return out
    out += struct.pack(">I", 1) + bytes(84) + bytes(8)  # dir attributes, cookieverf
    for i, (name, fh) in enumerate(entries):
        out += struct.pack(">I", 1) + struct.pack(">Q", 1000 + i) + _xdr_str(name) + struct.pack(">Q", i + 1)
        out += (struct.pack(">I", 1) + bytes(84)) if attrs else struct.pack(">I", 0)
        out += (struct.pack(">I", 1) + _xdr_str(fh)) if fh else struct.pack(">I", 0)
    return out + struct.pack(">II", 0, 1)  # no more entries, eof


FH1, FH2 = bytes(range(28)), bytes(range(40, 76))


@pytest.mark.parametrize("msg, entries", [
    (_rdp_reply([(b".", FH1), (b"a.txt", FH2)]), [(".", FH1), ("a.txt", FH2)]),
    (_rdp_reply([(b"noattrs", FH1)], attrs=False), [("noattrs", FH1)]),
    (_rdp_reply([(b"nohandle", b""), (b"b", FH2)]), [("b", FH2)]),
    (_rdp_reply([(b"a", FH1), (b"cut", FH2)])[:-60], [("a", FH1)]),  # head cut inside an entry
    (_rdp_reply([], status=2), []),  # NFS3ERR_NOENT
    (b"\x00\x01", []),
])
def test_readdirplus_entries(msg, entries):
    assert parse_readdirplus(msg) == entries


def test_merge_sums_rows_with_the_same_dims():
    d = {"client": "c", "proto": "v3", "op": "read", "share": "/e", "file": "/e/f"}
    rows = [{"dims": dict(d), "count": 1, "bytes": 10, "lat_sum": 5, "hist": {"latency": {"12": 1}}},
            {"dims": dict(d), "count": 2, "bytes": 20, "lat_sum": 7, "hist": {"latency": {"12": 1, "13": 1}}},
            {"dims": {**d, "file": "/e/g"}, "count": 1, "bytes": 1, "lat_sum": 1, "hist": {}}]
    out = merge(rows)
    assert len(out) == 2
    m = next(r for r in out if r["dims"]["file"] == "/e/f")
    assert (m["count"], m["bytes"], m["lat_sum"], m["hist"]) == (3, 30, 12, {"latency": {"12": 2, "13": 1}})
