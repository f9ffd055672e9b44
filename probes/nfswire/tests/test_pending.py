"""The decoder's pending-call and flow tables, on crafted packets run through its
programs in this kernel (BPF_PROG_TEST_RUN: real programs, no interface): a call
whose slot is taken before its reply is counted (overwritten, or expired once
stale), a retransmitted call keeps one slot, the same XID from two clients stays
apart, a COMPOUND longer than a slot keeps every op, a head longer than the
first copy is read on, a reply to a call that is
no NFS op (NFSACL) is matched but not counted, a cut record head survives its
segment being seen twice (bridge port, then bridge), and an OPEN that creates
counts as `open_create`, apart from a plain OPEN."""

from __future__ import annotations

import struct
import time
from collections import Counter
from pathlib import Path

import pytest

from loupe.lab.nfs3 import GETATTR, NFS_PROG, UNSTABLE, WRITE, call_body, opaque, record
from loupe_probes.bpf.testing import require_bpf
from loupe_probes.nfswire.rows import RowTable

OBJ = Path(__file__).resolve().parents[1] / "nfswire.bpf.o"
SERVER = bytes([10, 9, 0, 1])
FH = bytes(range(28))
BUCKETS = 8192  # PEND_BUCKETS: XIDs this far apart share a bucket (of 4 slots)
FATTR3 = struct.pack(">IIIIIQQIIQQIIIIII", 1, 0o644, 1, 0, 0, 512, 512, 0, 0, 1, 7, 0, 0, 0, 0, 0, 0)
ACCEPTED = struct.pack(">IIIII", 1, 0, 0, 0, 0)  # REPLY, MSG_ACCEPTED, AUTH_NONE verifier, SUCCESS


def frame(src: bytes, dst: bytes, sport: int, dport: int, seq: int, payload: bytes, flags: int = 0x18) -> bytes:
    tcp = struct.pack(">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, 1, 5 << 4, flags, 65535, 0, 0)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 40 + len(payload), 0, 0x4000, 64, 6, 0, src, dst)
    return b"\x02\0\0\0\0\x01\x02\0\0\0\0\x02\x08\x00" + ip + tcp + payload


def getattr_call(xid: int) -> bytes:
    return record(xid, call_body(NFS_PROG, 3, GETATTR, opaque(FH)))


def getattr_reply(xid: int) -> bytes:
    return record(xid, ACCEPTED + struct.pack(">I", 0) + FATTR3)


class Decoder:
    """The decoder's object loaded (not attached); its counters and rows read back."""

    def __init__(self, path: Path = OBJ, **config) -> None:
        from loupe_probes.bpf.libbpf import BpfObject
        from loupe_probes.nfswire.wire import Config

        self.obj = BpfObject(path)
        self.obj.map("settings").update(b"\0\0\0\0", bytes(Config(port=2049, **config)))
        self.table = RowTable(self.obj)

    def stats(self) -> dict[str, int]:
        from loupe_probes.bpf.probe import sum_percpu
        from loupe_probes.nfswire.wire import STATS

        m = self.obj.map("wire")
        return dict(zip(STATS, struct.unpack(f"<{len(STATS)}Q", sum_percpu(m, m.lookup(b"\0\0\0\0")))))

    def ops(self) -> Counter:
        """(client, proto, op, fh) -> ops counted, over every CPU's rows."""
        from loupe_probes.nfswire.wire import client_addr, op_name, proto_name

        out: Counter = Counter()
        for r in self.table.read(self.table.gen):
            k = r.key
            out[(client_addr(k.family, bytes(k.addr)), proto_name(k.proto), op_name(k.proto, k.op), k.fh)] += r.count
        return out

    def close(self) -> None:
        self.table.close()
        self.obj.close()


class Conn:
    """One TCP connection to port 2049: calls in at ingress, replies out at egress,
    sequence numbers advancing as on the wire."""

    def __init__(self, dec: Decoder, client: str = "10.9.0.11", port: int = 800) -> None:
        self.dec, self.client, self.port = dec, bytes(map(int, client.split("."))), port
        self.cseq, self.sseq = 1000, 5000
        self.send("nfswire_ingress", self.client, SERVER, port, 2049, self.cseq - 1, b"", 0x02)  # SYN
        self.send("nfswire_egress", SERVER, self.client, 2049, port, self.sseq - 1, b"", 0x12)  # SYN-ACK

    def send(self, prog: str, *frame_args) -> None:
        self.dec.obj.test_run(prog, frame(*frame_args))

    def calls(self, payload: bytes, seq: int | None = None) -> None:
        """One segment of call records (at ``seq``: again, as a second interface sees it)."""
        self.send("nfswire_ingress", self.client, SERVER, self.port, 2049, self.cseq if seq is None else seq, payload)
        if seq is None:
            self.cseq += len(payload)

    def replies(self, payload: bytes) -> None:
        self.send("nfswire_egress", SERVER, self.client, 2049, self.port, self.sseq, payload)
        self.sseq += len(payload)


@pytest.fixture
def dec():
    require_bpf(OBJ)
    d = Decoder()
    yield d
    d.close()


BUILD = Path(__file__).resolve().parents[3] / "build" / "bpf"


@pytest.mark.parametrize("name, counted", [("nfswire-hook.bpf.o", 0), ("nfswire-floor.bpf.o", 3)])
def test_the_benchmarks_baselines_load_and_the_floor_matches_calls_to_replies(name, counted):
    """bench.nfswire runs these beside the decoder: the empty programs count
    nothing; the floor matches each call of a segment to its reply by XID and
    counts it, which is the work it stands for."""
    require_bpf(BUILD / name)
    d = Decoder(BUILD / name)
    try:
        c = Conn(d)
        c.calls(b"".join(getattr_call(x) for x in (7, 8, 9)))
        c.replies(b"".join(getattr_reply(x) for x in (9, 7)))
        c.replies(getattr_reply(8) + getattr_reply(10))  # 10: never called
        assert sum(d.ops().values()) == counted
        if counted:
            assert {k[0] for k in d.ops()} == {"10.9.0.11"}
    finally:
        d.close()


def getattrs(dec: Decoder) -> dict[str, int]:
    out: Counter = Counter()
    for (client, _proto, op, _fh), n in dec.ops().items():
        if op == "getattr":
            out[client] += n
    return dict(out)


def test_a_call_finding_its_bucket_full_takes_the_oldest_slot_and_counts_it(dec):
    c, x = Conn(dec), 7
    for k in range(5):  # five calls in flight, one bucket of four slots
        c.calls(getattr_call(x + k * BUCKETS))
    s = dec.stats()
    assert (s["calls"], s["overwritten"], s["expired"]) == (5, 1, 0), s
    c.replies(getattr_reply(x))  # the oldest: its slot went to the fifth call
    assert (dec.stats()["unmatched"], dec.stats()["replies"]) == (1, 0)
    c.replies(b"".join(getattr_reply(x + k * BUCKETS) for k in range(1, 5)))
    s = dec.stats()
    assert (s["replies"], s["unmatched"]) == (4, 1), s
    assert getattrs(dec) == {"10.9.0.11": 4}


@pytest.mark.parametrize("order", ["big", "little"])
def test_many_calls_in_flight_with_consecutive_xids_take_a_slot_each(dec, order):
    """A client's XIDs count up in the wire's byte order (libnfs) or in its own
    (Linux, x86: the first byte on the wire changes): 64 calls in flight either
    way, none overwritten."""
    c = Conn(dec)
    xids = [int.from_bytes((0x12345600 + i).to_bytes(4, order), "big") for i in range(64)]
    for i in range(0, 64, 16):  # a test run takes up to a page
        c.calls(b"".join(getattr_call(x) for x in xids[i:i + 16]))
    for i in range(0, 64, 16):
        c.replies(b"".join(getattr_reply(x) for x in xids[i:i + 16]))
    s = dec.stats()
    assert (s["calls"], s["replies"], s["unmatched"], s["overwritten"]) == (64, 64, 0, 0), s


def test_a_call_unanswered_past_stale_ms_is_counted_expired_when_its_slot_is_taken():
    require_bpf(OBJ)
    dec = Decoder(stale_ms=1)
    try:
        c, x = Conn(dec), 11
        for k in range(4):
            c.calls(getattr_call(x + k * BUCKETS))
        time.sleep(0.02)
        c.calls(getattr_call(x + 4 * BUCKETS))
        s = dec.stats()
        assert (s["overwritten"], s["expired"]) == (0, 1), s
        c.replies(b"".join(getattr_reply(x + k * BUCKETS) for k in range(5)))
        s = dec.stats()
        assert (s["replies"], s["unmatched"]) == (4, 1), s
    finally:
        dec.close()


def test_a_retransmitted_call_keeps_one_slot(dec):
    c = Conn(dec)
    c.calls(getattr_call(42))
    c.calls(getattr_call(42))  # the client sent it again: still one call pending
    c.calls(b"".join(getattr_call(42 + k * BUCKETS) for k in range(1, 4)))  # the bucket's other three slots
    s = dec.stats()
    assert (s["calls"], s["overwritten"], s["expired"]) == (5, 0, 0), s
    c.replies(getattr_reply(42))
    c.replies(getattr_reply(42))  # the server answered both: the second finds no call
    c.replies(b"".join(getattr_reply(42 + k * BUCKETS) for k in range(1, 4)))
    s = dec.stats()
    assert (s["replies"], s["unmatched"]) == (4, 1), s
    assert getattrs(dec) == {"10.9.0.11": 4}


def test_the_same_xid_from_two_clients_and_two_ports_stays_apart(dec):
    conns = [Conn(dec, "10.9.0.11", 800), Conn(dec, "10.9.0.12", 800), Conn(dec, "10.9.0.11", 801)]
    for i, c in enumerate(conns):
        c.calls(b"".join(getattr_call(500 + k) for k in range(i + 1)))
    for c in reversed(conns):
        c.replies(b"".join(getattr_reply(500 + k) for k in reversed(range(conns.index(c) + 1))))
    s = dec.stats()
    assert (s["calls"], s["replies"], s["unmatched"], s["overwritten"]) == (6, 6, 0, 0), s
    assert getattrs(dec) == {"10.9.0.11": 4, "10.9.0.12": 2}


def test_a_reply_to_a_call_that_is_no_nfs_op_is_matched_and_not_counted(dec):
    """NFSACL (which the Linux NFSv3 client probes on port 2049) and an RPCSEC_GSS
    context call: their replies are no unmatched replies, and count no op."""
    gss_init = struct.pack(">II", 6, 20) + struct.pack(">IIIII", 1, 1, 0, 1, 0) + struct.pack(">II", 0, 0)
    c = Conn(dec)
    c.calls(record(60, call_body(100227, 3, 0, b"")) + record(61, call_body(100227, 3, 1, opaque(FH))))
    c.calls(record(62, struct.pack(">IIIII", 0, 2, NFS_PROG, 3, 0) + gss_init))
    c.replies(record(60, ACCEPTED) + record(61, ACCEPTED + b"\0" * 16) + record(62, ACCEPTED + b"\0" * 8))
    s = dec.stats()
    assert (s["calls"], s["replies"], s["unmatched"], s["not_rpc"]) == (0, 0, 0, 0), s
    assert dec.ops() == Counter()


# NFSv4.1 operations (RFC 8881) and their arguments / results
SEQUENCE, PUTFH, GETATTR4, ACCESS, SAVEFH, RESTOREFH, GETFH = 53, 22, 9, 3, 32, 31, 10
ARGS = {SEQUENCE: b"s" * 16 + struct.pack(">IIII", 1, 0, 0, 0),
        GETATTR4: struct.pack(">II", 1, 0x10), ACCESS: struct.pack(">I", 0x1F), SAVEFH: b"", RESTOREFH: b"",
        GETFH: b""}
RESULTS = {SEQUENCE: b"s" * 16 + struct.pack(">IIIII", 1, 0, 0, 0, 0), PUTFH: b"",
           GETATTR4: struct.pack(">II", 1, 0x10) + opaque(b"\0" * 8), ACCESS: struct.pack(">II", 0x1F, 0x1F),
           SAVEFH: b"", RESTOREFH: b""}


def compound_call(xid: int, ops: list[int], fh: bytes) -> bytes:
    args = opaque(b"") + struct.pack(">II", 1, len(ops)) + b"".join(
        struct.pack(">I", op) + (opaque(fh) if op == PUTFH else ARGS[op]) for op in ops)
    return record(xid, call_body(NFS_PROG, 4, 1, args))


def compound_reply(xid: int, ops: list[int], fh: bytes) -> bytes:
    res = struct.pack(">I", 0) + opaque(b"") + struct.pack(">I", len(ops)) + b"".join(
        struct.pack(">II", op, 0) + (opaque(fh) if op == GETFH else RESULTS[op]) for op in ops)
    return record(xid, ACCEPTED + res)


def test_compounds_longer_than_a_slot_keep_every_op_and_its_file(dec):
    from loupe_probes.nfswire.wire import fh_hash

    names = {SEQUENCE: "sequence", PUTFH: "putfh", GETATTR4: "getattr", ACCESS: "access", SAVEFH: "savefh",
             RESTOREFH: "restorefh", GETFH: "getfh"}
    # 14 and 12 ops: past a slot's first line (1), its second (8), into its extension;
    # both calls first, so that each reply must find its own call's ops in the table
    longer = [SEQUENCE, PUTFH, GETATTR4, ACCESS, SAVEFH, RESTOREFH, GETFH, SAVEFH, RESTOREFH, GETATTR4, ACCESS,
              GETFH, SAVEFH, RESTOREFH]
    other = [SEQUENCE, PUTFH, SAVEFH, RESTOREFH, SAVEFH, RESTOREFH, SAVEFH, RESTOREFH, GETFH, GETFH, ACCESS, ACCESS]
    c = Conn(dec)
    c.calls(compound_call(900, longer, FH))
    c.calls(compound_call(901, other, FH[::-1]))
    c.replies(compound_reply(900, longer, FH))
    c.replies(compound_reply(901, other, FH[::-1]))
    s = dec.stats()
    assert (s["calls"], s["replies"], s["unmatched"], s["unparsed"]) == (2, 2, 0, 0), s
    want: Counter = Counter()
    for ops, fh in ((longer, FH), (other, FH[::-1])):
        for op in ops:
            want[("10.9.0.11", "v4.1", names[op], 0 if op == SEQUENCE else fh_hash(fh))] += 1
    assert dec.ops() == want


def test_the_same_xid_from_clients_sharing_a_bucket_stays_apart(dec):
    """Enough clients that some share a bucket for one XID (about 5 pairs among
    300 in 8192 buckets): each reply still takes its own client's call."""
    from loupe_probes.nfswire.wire import fh_hash

    clients = [f"10.9.{1 + i // 200}.{1 + i % 200}" for i in range(300)]
    conns = [Conn(dec, ip) for ip in clients]
    for i, c in enumerate(conns):
        c.calls(record(4242, call_body(NFS_PROG, 3, GETATTR, opaque(i.to_bytes(4, "big") * 4))))
    for c in conns:
        c.replies(getattr_reply(4242))
    s = dec.stats()
    assert (s["calls"], s["replies"], s["unmatched"], s["overwritten"]) == (300, 300, 0, 0), s
    want = {(ip, "v3", "getattr", fh_hash(i.to_bytes(4, "big") * 4)): 1 for i, ip in enumerate(clients)}
    assert dict(dec.ops()) == want


def long_cred_call(xid: int, vers: int, proc: int, args: bytes) -> bytes:
    """A call whose AUTH_SYS credential (a 200-byte machine name, 16 groups) ends
    past the first 256 bytes the decoder copies of a record."""
    body = struct.pack(">I", 0) + opaque(b"m" * 200) + struct.pack(">III", 0, 0, 16) + struct.pack(">16I", *range(16))
    return record(xid, struct.pack(">IIIII", 0, 2, NFS_PROG, vers, proc) + struct.pack(">I", 1) + opaque(body)
                  + struct.pack(">II", 0, 0) + args)


def test_a_head_past_the_first_copy_is_decoded(dec):
    from loupe_probes.nfswire.wire import fh_hash

    ops = [SEQUENCE, PUTFH, GETATTR4, ACCESS]
    compound = opaque(b"") + struct.pack(">II", 1, len(ops)) + b"".join(
        struct.pack(">I", op) + (opaque(FH) if op == PUTFH else ARGS[op]) for op in ops)
    c = Conn(dec)
    c.calls(long_cred_call(300, 3, GETATTR, opaque(FH)) + long_cred_call(301, 4, 1, compound))
    c.replies(getattr_reply(300) + compound_reply(301, ops, FH))
    s = dec.stats()
    assert (s["calls"], s["replies"], s["unmatched"], s["unparsed"]) == (2, 2, 0, 0), s
    assert dec.ops() == Counter({("10.9.0.11", "v3", "getattr", fh_hash(FH)): 1,
                                 ("10.9.0.11", "v4.1", "sequence", 0): 1,
                                 **{("10.9.0.11", "v4.1", op, fh_hash(FH)): 1 for op in ("putfh", "getattr", "access")}})


@pytest.mark.parametrize("machine", [60, 84, 88, 100, 132])
def test_a_writes_offset_and_count_are_read_wherever_a_long_credential_puts_them(dec, machine):
    """A v3 WRITE's handle, offset and count after an AUTH_SYS credential of any length
    (the machine name's: the arguments end before, across and past the first copy's end):
    past the first copy, as much more is copied as the handle's length says."""
    body = struct.pack(">I", 0) + opaque(b"m" * machine) + struct.pack(">III", 0, 0, 16) + struct.pack(">16I", *range(16))
    call = record(400, struct.pack(">IIIII", 0, 2, NFS_PROG, 3, WRITE) + struct.pack(">I", 1) + opaque(body)
                  + struct.pack(">II", 0, 0) + opaque(FH) + struct.pack(">QII", 1 << 20, 1000, UNSTABLE)
                  + opaque(b"d" * 1000))
    reply = record(400, ACCEPTED + struct.pack(">IIIII", 0, 0, 0, 1000, UNSTABLE) + bytes(8))
    c = Conn(dec)
    c.calls(call)
    c.replies(reply)
    (r,) = dec.table.read(dec.table.gen)
    assert (r.count, r.bytes) == (1, 1000)
    assert list(r.off).index(1) == 20 - 12 and sum(r.off) == 1, list(r.off)  # log2(1 MiB), OFFSET from 2^12
    assert list(r.size).index(1) == 9 - 9, list(r.size)  # log2(1000), SIZE from 2^9


def test_a_cut_head_survives_its_segment_seen_again_on_a_second_interface(dec):
    c = Conn(dec)
    first, second = getattr_call(77), getattr_call(78)
    cut = len(first) + 40  # the second call's head ends 40 bytes into it
    seg1, seg2 = (first + second)[:cut], (first + second)[cut:]
    start = c.cseq
    c.calls(seg1)
    c.calls(seg1, seq=start)  # the same segment on the bridge, after its port
    c.calls(seg2)
    c.calls(seg2, seq=start + len(seg1))
    s = dec.stats()
    assert (s["calls"], s["partial"], s["desync"]) == (2, 0, 0), s
    c.replies(getattr_reply(77) + getattr_reply(78))
    assert getattrs(dec) == {"10.9.0.11": 2}


# OPEN (RFC 8881 s.18.16): openflag4 and createhow4 as a client sends them, then CLAIM_NULL and the name
OPEN = 18
DIR_FH, OLD_FH, NEW_FH = bytes(range(100, 124)), bytes(range(40, 72)), bytes(range(72, 104))
FATTR_SIZE0 = struct.pack(">II", 1, 0x10) + opaque(bytes(8))  # bitmap {size}, size = 0
CREATEHOW = {"unchecked4": struct.pack(">I", 0) + FATTR_SIZE0, "guarded4": struct.pack(">I", 1) + FATTR_SIZE0,
             "exclusive4": struct.pack(">I", 2) + b"v" * 8,
             "exclusive4_1": struct.pack(">I", 3) + b"v" * 8 + FATTR_SIZE0}


def open_args(name: bytes, createhow: bytes | None) -> bytes:
    how = struct.pack(">I", 0) if createhow is None else struct.pack(">I", 1) + createhow  # OPEN4_NOCREATE/CREATE
    return (struct.pack(">IIIQ", 0, 2, 0, 77) + opaque(b"owner-1") + how  # seqid, WRITE, DENY_NONE, clientid
            + struct.pack(">I", 0) + opaque(name))  # CLAIM_NULL, file


def open_compound(xid: int, name: bytes, createhow: bytes | None) -> bytes:
    args = opaque(b"") + struct.pack(">II", 1, 4) + struct.pack(">I", SEQUENCE) + ARGS[SEQUENCE] + \
        struct.pack(">I", PUTFH) + opaque(DIR_FH) + struct.pack(">I", OPEN) + open_args(name, createhow) + \
        struct.pack(">I", GETFH)
    return record(xid, call_body(NFS_PROG, 4, 1, args))


def open_reply(xid: int, fh: bytes) -> bytes:
    # stateid, change_info4, rflags, attrset {}, OPEN_DELEGATE_NONE
    res = b"t" * 16 + struct.pack(">IQQ", 1, 5, 6) + struct.pack(">III", 0, 0, 0)
    ops = struct.pack(">II", SEQUENCE, 0) + RESULTS[SEQUENCE] + struct.pack(">II", PUTFH, 0) + \
        struct.pack(">II", OPEN, 0) + res + struct.pack(">II", GETFH, 0) + opaque(fh)
    return record(xid, ACCEPTED + struct.pack(">I", 0) + opaque(b"") + struct.pack(">I", 4) + ops)


@pytest.mark.parametrize("how", list(CREATEHOW))
def test_an_open_that_creates_counts_as_open_create_and_a_plain_open_as_open(dec, how):
    """OPEN4_CREATE is how an NFSv4 client creates a file: counted as `open_create`, so that a
    run's creates can be checked, with its reply matched and its file the handle the reply
    returns; an OPEN4_NOCREATE of an existing file stays `open`."""
    from loupe_probes.nfswire.wire import Bind, Key, Val, fh_hash

    c = Conn(dec)
    c.calls(open_compound(1200, b"old.txt", None) + open_compound(1201, b"new.txt", CREATEHOW[how]))
    c.replies(open_reply(1201, NEW_FH) + open_reply(1200, OLD_FH))
    s = dec.stats()
    assert (s["calls"], s["replies"], s["unmatched"], s["unparsed"]) == (2, 2, 0, 0), s
    me = "10.9.0.11"
    assert dec.ops() == Counter({(me, "v4.1", "sequence", 0): 2, (me, "v4.1", "putfh", fh_hash(DIR_FH)): 2,
                                 (me, "v4.1", "open", fh_hash(OLD_FH)): 1,
                                 (me, "v4.1", "open_create", fh_hash(NEW_FH)): 1,
                                 (me, "v4.1", "getfh", fh_hash(OLD_FH)): 1,
                                 (me, "v4.1", "getfh", fh_hash(NEW_FH)): 1})
    for r in dec.table.read(dec.table.gen):  # each with its latency
        assert sum(r.lat) == r.count, (r.key.op, list(r.lat))
    binds = {int.from_bytes(kb[:8], "little"): Bind.from_buffer_copy(vb) for kb, vb in dec.obj.map("binds").items()}
    new = binds[fh_hash(NEW_FH)]  # the created file is named, under its directory, by the handle returned
    assert (bytes(new.name[:new.name_len]), new.parent) == (b"new.txt", fh_hash(DIR_FH))


@pytest.mark.parametrize("cut", [1, 2, 3])
def test_a_record_mark_cut_by_a_segments_end_is_joined_with_the_next(dec, cut):
    """Back-to-back calls fill segments whatever the record marks: a mark's first `cut` bytes
    end one segment and the rest start the next. That call is decoded, and so is the stream
    after it (a segment past a call's payload seldom starts with a record)."""
    c = Conn(dec)
    calls = [getattr_call(90 + i) for i in range(4)]
    stream = b"".join(calls)
    at = len(calls[0]) + cut  # inside the second call's mark
    tail = len(calls[0]) + len(calls[1]) + 10  # the third segment starts inside the third call
    for seg in (stream[:at], stream[at:tail], stream[tail:]):
        c.calls(seg)
    s = dec.stats()
    assert (s["calls"], s["partial"], s["desync"], s["resync"]) == (4, 0, 0, 0), s
    c.replies(b"".join(getattr_reply(90 + i) for i in range(4)))
    assert getattrs(dec) == {"10.9.0.11": 4}


def write_call(xid: int, offset: int, data: bytes) -> bytes:
    from loupe.lab.nfs3 import FILE_SYNC

    return record(xid, call_body(NFS_PROG, 3, WRITE, opaque(FH) + struct.pack(">QII", offset, len(data), FILE_SYNC)
                                 + opaque(data)))


def write_reply(xid: int, count: int) -> bytes:
    # WRITE3resok: wcc_data without attributes, count, committed (FILE_SYNC), verifier
    return record(xid, ACCEPTED + struct.pack(">IIIII", 0, 0, 0, count, 2) + b"v" * 8)


@pytest.mark.parametrize("seed", range(8))
def test_a_stream_of_writes_cut_anywhere_is_decoded_whole(dec, seed):
    """8 KiB and 4 KiB WRITEs back to back (a client with many in flight), with GETATTRs between
    them, in segments of 260 bytes to an MSS and more cut wherever TCP may cut them: inside a
    record's mark, inside its head, inside its payload. Every call is decoded and its reply
    matched, and every op counted. (A head cut twice, by a segment shorter than the head, is
    not decoded: README Limits.)"""
    import random

    rnd = random.Random(seed)
    c = Conn(dec)
    sizes = [rnd.choice((8192, 8192, 4096, 0)) for _ in range(48)]  # 0: a GETATTR
    records = [write_call(200 + i, i << 13, bytes([i]) * n) if n else getattr_call(200 + i)
               for i, n in enumerate(sizes)]
    stream = b"".join(records)
    wanted, at = [], 0  # where to cut: 1-3 bytes into a mark, or into a head, of every other record
    for r in records:
        if rnd.random() < 0.5:
            wanted.append(at + rnd.choice((1, 2, 3, rnd.randint(4, 90))))
        at += len(r)
    pos, ends = 0, []
    while pos < len(stream):
        end = next((w for w in wanted if w >= pos + 260), len(stream))
        end = min(end, pos + 1448 + rnd.randint(0, 400))
        c.calls(stream[pos:end])
        pos = end
        ends.append(end)
    starts = _starts(records)
    into = [e - max(a for a in starts if a <= e) for e in ends[:-1]]  # how far into its record each cut is
    assert sum(1 for d in into if 0 < d < 4) >= 2 and sum(1 for d in into if 4 <= d < 90) >= 2, into
    s = dec.stats()
    assert (s["calls"], s["partial"], s["desync"], s["resync"]) == (len(sizes), 0, 0, 0), s
    replies = b"".join(write_reply(200 + i, n) if n else getattr_reply(200 + i) for i, n in enumerate(sizes))
    for i in range(0, len(replies), 1448):
        c.replies(replies[i:i + 1448])
    s = dec.stats()
    assert (s["replies"], s["unmatched"]) == (len(sizes), 0), s
    ops = Counter()
    for (_client, _proto, op, _fh), n in dec.ops().items():
        ops[op] += n
    assert ops == Counter(write=sum(1 for n in sizes if n), getattr=sizes.count(0)), ops


def _starts(records: list[bytes]) -> list[int]:
    out, at = [], 0
    for r in records:
        out.append(at)
        at += len(r)
    return out


def test_ops_past_a_full_key_table_keep_their_client_without_their_file(dec):
    """A flood of new files fills `rows` (16,384 rows a second, two buckets of 4 per key):
    the ops past it go to `spill` under their client, with no file (fh 0), not to the
    client-less `other` row; every op is counted once."""
    from loupe_probes.nfswire.wire import Key, Val, client_addr, op_name

    def call(i: int) -> bytes:
        return record(i, call_body(NFS_PROG, 3, GETATTR, opaque(i.to_bytes(4, "big") + FH[4:])))

    flood, late = Conn(dec), Conn(dec, "10.9.0.12", 801)
    n = 16384
    for i in range(0, n, 16):
        flood.calls(b"".join(call(x) for x in range(i + 1, i + 17)))
        flood.replies(b"".join(getattr_reply(x) for x in range(i + 1, i + 17)))
    for i in range(0, 48, 16):
        late.calls(b"".join(call(x) for x in range(n + i + 1, n + i + 17)))
        late.replies(b"".join(getattr_reply(x) for x in range(n + i + 1, n + i + 17)))
    counted = dec.table.read(dec.table.gen)
    spilled = [(Key.from_buffer_copy(kb), Val.from_buffer_copy(vb)) for kb, vb in dec.obj.map("spill").items()]
    rows = {}
    for table, entries in (("counts", [(r.key, r) for r in counted]), ("spill", spilled)):
        got: Counter = Counter()
        for k, v in entries:
            assert op_name(k.proto, k.op) == "getattr"
            assert table == "counts" or k.fh == 0, "a spilled row keeps no file"
            got[client_addr(k.family, bytes(k.addr))] += v.count
        rows[table] = got
    other = Val.from_buffer_copy(dec.obj.map("other").lookup(b"\0\0\0\0"))
    assert other.count == 0, "an op went to the client-less (other) row"
    assert all(r.count == 1 for r in counted), "a key took two rows"
    # two buckets of 4 hold a flood of 16,384 new keys to about 89 % before one spills
    assert rows["spill"]["10.9.0.12"] > 0 and 0.85 * n < len(counted) <= n
    assert rows["counts"] + rows["spill"] == Counter({"10.9.0.11": n, "10.9.0.12": 48})


def segments(c: Conn, xids: list[list[int]]) -> list[tuple[int, bytes]]:
    """Segments of GETATTR calls, one list of XIDs each, at their sequence numbers (not sent)."""
    out, seq = [], c.cseq
    for group in xids:
        payload = b"".join(getattr_call(x) for x in group)
        out.append((seq, payload))
        seq += len(payload)
    c.cseq = seq
    return out


@pytest.mark.parametrize("order,refilled", [((0, 2, 1, 3), 1), ((0, 3, 1, 2), 2), ((0, 3, 1, 2, 1), 2)])
def test_a_segment_that_comes_after_a_later_one_is_decoded_into_its_gap(dec, order, refilled):
    """A network reorders segments, or one is lost and retransmitted after later ones came: the
    decoder picks the stream up again at the later segment (resync) and decodes the late ones
    into the hole it left, from its first record on, without moving the stream's position; a
    late segment seen twice (a bridge and its port) counts once."""
    c = Conn(dec)
    segs = segments(c, [[1, 2], [3, 4], [5, 6], [7, 8]])
    for i in order:
        c.calls(segs[i][1], seq=segs[i][0])
    c.calls(getattr_call(9))  # the stream goes on where it was
    s = dec.stats()
    assert (s["calls"], s["resync"], s["refilled"], s["partial"], s["desync"]) == (9, 1, refilled, 0, 0), s
    c.replies(b"".join(getattr_reply(x) for x in range(1, 10)))
    assert dec.stats()["unmatched"] == 0
    assert getattrs(dec) == {"10.9.0.11": 9}


def test_a_retransmission_covering_the_gap_and_more_counts_each_call_once(dec):
    """The late segment holds the hole and the segment decoded after it (a retransmission
    coalesced by GRO): only the hole's calls are decoded from it."""
    c = Conn(dec)
    (s0, a), (s1, b), (s2, cc) = segments(c, [[1, 2], [3, 4], [5, 6]])
    c.calls(a, seq=s0)
    c.calls(cc, seq=s2)
    c.calls(b + cc, seq=s1)
    s = dec.stats()
    assert (s["calls"], s["resync"], s["refilled"]) == (6, 1, 1), s
    c.replies(b"".join(getattr_reply(x) for x in range(1, 7)))
    assert getattrs(dec) == {"10.9.0.11": 6}


def test_a_late_segment_that_is_not_the_holes_start_is_not_decoded(dec):
    """One hole per flow, filled from its start: a late segment inside it whose record marks
    are unknown (its predecessor still missing) is left alone, and the one before it fills the
    hole's start."""
    c = Conn(dec)
    segs = segments(c, [[1], [2], [3], [4]])
    for i in (0, 3, 2, 1):
        c.calls(segs[i][1], seq=segs[i][0])
    s = dec.stats()
    assert (s["calls"], s["resync"], s["refilled"]) == (3, 1, 1), s


def test_a_new_connection_on_the_same_port_forgets_the_last_ones_hole(dec):
    """The hole of a connection that ended with it open is not the next connection's, even
    where the new one's first segment happens to cover its sequence number."""
    c = Conn(dec)
    (s0, a), (s1, b), (s2, cc) = segments(c, [[1], [2], [3]])
    c.calls(a, seq=s0)
    c.calls(cc, seq=s2)  # b never comes: the hole [s1, s2) stays open
    c.send("nfswire_ingress", c.client, SERVER, c.port, 2049, s1 - 1, b"", 0x02)  # SYN: its data from s1
    c.cseq = s1
    c.calls(getattr_call(10) + getattr_call(11))
    c.calls(getattr_call(12))
    s = dec.stats()
    assert (s["calls"], s["resync"], s["refilled"]) == (5, 1, 0), s


def test_counts_are_handed_over_once_across_the_generation_flip(dec):
    """The counts live in two generations of rows written in place: a drain moves the
    programs to the other one, waits out an RCU grace period, then reads and zeroes
    the one they left. Each op is handed over once, in the drain after it, never twice."""
    from loupe_probes.nfswire.wire import client_addr

    def getattrs_drained() -> Counter:
        out: Counter = Counter()
        for r in dec.table.drain():
            out[client_addr(r.key.family, bytes(r.key.addr))] += r.count
        return out

    a, b = Conn(dec), Conn(dec, "10.9.0.12", 801)
    gen = dec.table.gen
    a.calls(b"".join(getattr_call(x) for x in range(1, 11)))
    a.replies(b"".join(getattr_reply(x) for x in range(1, 11)))
    assert getattrs_drained() == Counter({"10.9.0.11": 10})
    assert dec.table.why_no_grace is None, dec.table.why_no_grace  # membarrier waited for the programs
    assert dec.table.gen == gen ^ 1 and dec.table.claimed(gen) == 0
    b.calls(getattr_call(1))  # answered after the next flip: counted in the drain after its reply
    a.calls(b"".join(getattr_call(x) for x in range(11, 18)))
    a.replies(b"".join(getattr_reply(x) for x in range(11, 18)))
    assert getattrs_drained() == Counter({"10.9.0.11": 7})
    b.replies(getattr_reply(1))
    assert getattrs_drained() == Counter({"10.9.0.12": 1})
    assert getattrs_drained() == Counter() and dec.table.read(0) == [] and dec.table.read(1) == []
    assert dec.stats()["unmatched"] == 0
