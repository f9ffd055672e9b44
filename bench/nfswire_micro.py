"""The NFS wire decoder's cost per packet kind, in isolation (BPF_PROG_TEST_RUN).

Crafted Ethernet/IPv4/TCP frames run through the decoder's tc programs in the
kernel, without attaching them anywhere: a pure ACK to port 2049, a segment of
another port, a GETATTR call and its reply, READ replies with 512 and 2048 bytes of data, and a
segment of 16 pipelined calls and one of 16 replies (what TSO/GRO hand to tc
under load). The kernel times each run; we report the median of many runs of
each kind, in ns. TCP sequence numbers advance like a real stream, so the
per-flow state takes its steady-state path.

With ``--cold MIB``, a buffer of that size (more than the CPU's L2 cache) is
written before each run, so the run finds its code and data in L3 or memory
rather than in L1/L2: closer to a server under load, whose kernel and NFS server
evict the decoder's lines between packets, than back-to-back runs are.

    python -m bench.nfswire_micro [--object probes/nfswire/nfswire.bpf.o] [--runs 3000]
    python -m bench.nfswire_micro --object old.bpf.o --object new.bpf.o --runs 1000 --rounds 7 --save
    python -m bench.nfswire_micro --object old.bpf.o --object new.bpf.o --runs 300 --rounds 7 --cold 4
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import struct
import sys
import time
from pathlib import Path

from bench.nfsload import ACCESS, GETATTR, NFS_PROG, READ, call_body, opaque

ROOT = Path(__file__).resolve().parent.parent
OBJECT = ROOT / "probes" / "nfswire" / "nfswire.bpf.o"
CLIENT, SERVER = bytes([10, 9, 0, 11]), bytes([10, 9, 0, 1])
CPORT = 800
FH = bytes(range(28))  # a ganesha-sized v3 handle


def frame(src: bytes, dst: bytes, sport: int, dport: int, seq: int, payload: bytes, flags: int = 0x18) -> bytes:
    tcp = struct.pack(">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, 1, 5 << 4, flags, 65535, 0, 0)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), 0, 0x4000, 64, 6, 0, src, dst)
    eth = b"\x02\0\0\0\0\x01" + b"\x02\0\0\0\0\x02" + b"\x08\x00"
    return eth + ip + tcp + payload


def mark(msg: bytes) -> bytes:
    return struct.pack(">I", 0x80000000 | len(msg)) + msg


FATTR3 = struct.pack(">IIIIIQQIIQQIIIIII", 1, 0o644, 1, 0, 0, 512, 512, 0, 0, 1, 7, 0, 0, 0, 0, 0, 0)
assert len(FATTR3) == 84


def reply_msg(xid: int, results: bytes) -> bytes:
    return struct.pack(">IIIIIII", xid, 1, 0, 0, 0, 0, 0) + results  # accepted, AUTH_NONE, SUCCESS, NFS3_OK


def call_msg(xid: int, proc: int) -> bytes:
    args = {GETATTR: opaque(FH), ACCESS: opaque(FH) + struct.pack(">I", 0x1F),
            READ: opaque(FH) + struct.pack(">QI", 0, 512)}[proc]
    return struct.pack(">I", xid) + call_body(NFS_PROG, 3, proc, args)


def reply_for(xid: int, proc: int, read_size: int = 512) -> bytes:
    if proc == GETATTR:
        return reply_msg(xid, FATTR3)
    if proc == ACCESS:
        return reply_msg(xid, struct.pack(">I", 1) + FATTR3 + struct.pack(">I", 0x1F))
    data = b"x" * read_size
    return reply_msg(xid, struct.pack(">I", 1) + FATTR3 + struct.pack(">III", read_size, 0, read_size) + data)


class Runner:
    def __init__(self, obj_path: Path, cold_bytes: int = 0) -> None:
        from loupe_probes.bpf import libbpf
        from loupe_probes.nfswire.wire import Config

        self.obj = libbpf.BpfObject(obj_path)
        m = self.obj.map("settings")  # an older object's config may be shorter
        m.update((0).to_bytes(4, "little"), bytes(Config(port=2049))[:m.value_size])
        self.cseq, self.sseq = 1000, 5000
        self.evict = ctypes.create_string_buffer(cold_bytes) if cold_bytes else None
        self.evictions = 0

    def run(self, way: str, data: bytes) -> int:
        if self.evict is not None:  # out of L1/L2: what the run touches comes from L3 or memory
            self.evictions += 1
            ctypes.memset(self.evict, self.evictions & 0xFF, len(self.evict))
        return self.obj.test_run("nfswire_ingress" if way == "in" else "nfswire_egress", data)[1]

    def call(self, payload: bytes) -> int:
        f = frame(CLIENT, SERVER, CPORT, 2049, self.cseq, payload)
        self.cseq += len(payload)
        return self.run("in", f)

    def reply(self, payload: bytes) -> int:
        f = frame(SERVER, CLIENT, 2049, CPORT, self.sseq, payload)
        self.sseq += len(payload)
        return self.run("out", f)

    def stats(self) -> dict[str, int]:
        from loupe_probes.bpf.probe import sum_percpu
        from loupe_probes.nfswire.wire import STATS

        m = self.obj.map("wire")
        v = sum_percpu(m, m.lookup((0).to_bytes(4, "little")))
        n = min(len(STATS), len(v) // 8)  # an older object keeps fewer counters
        return dict(zip(STATS, struct.unpack(f"<{n}Q", v[:8 * n])))

    def close(self) -> None:
        self.obj.close()


KINDS = ("ack", "other_port", "getattr_call", "getattr_reply", "read_call", "read_reply_512", "read_reply_2k",
         "calls_x16", "replies_x16")


class Stream:
    """One object's programs fed a connection's packets; `round` times each kind `runs` times."""

    def __init__(self, obj_path: Path, cold_bytes: int = 0) -> None:
        self.r = Runner(obj_path, cold_bytes)
        # open both directions' flows as a connection would (SYN on each side)
        self.r.run("in", frame(CLIENT, SERVER, CPORT, 2049, self.r.cseq - 1, b"", 0x02))
        self.r.run("out", frame(SERVER, CLIENT, 2049, CPORT, self.r.sseq - 1, b"", 0x12))
        self.xid, self.sent = 1, 0

    def round(self, runs: int) -> dict[str, float]:
        r, t = self.r, {k: [] for k in KINDS}
        for _ in range(runs):
            t["ack"].append(r.run("in", frame(CLIENT, SERVER, CPORT, 2049, r.cseq, b"", 0x10)))
            t["other_port"].append(r.run("in", frame(CLIENT, SERVER, 40000, 22, 1, b"y" * 100)))
            self.xid += 1
            t["getattr_call"].append(r.call(mark(call_msg(self.xid, GETATTR))))
            t["getattr_reply"].append(r.reply(mark(reply_for(self.xid, GETATTR))))
            self.xid += 1
            t["read_call"].append(r.call(mark(call_msg(self.xid, READ))))
            t["read_reply_512"].append(r.reply(mark(reply_for(self.xid, READ))))
            self.xid += 1
            r.call(mark(call_msg(self.xid, READ)))
            t["read_reply_2k"].append(r.reply(mark(reply_for(self.xid, READ, 2048))))
            procs = [(GETATTR, ACCESS, READ)[i % 3] for i in range(16)]
            xids = list(range(self.xid + 1, self.xid + 17))
            self.xid += 16
            t["calls_x16"].append(r.call(b"".join(mark(call_msg(x, p)) for x, p in zip(xids, procs))))
            t["replies_x16"].append(r.reply(b"".join(mark(reply_for(x, p, 64)) for x, p in zip(xids, procs))))
        self.sent += runs * 19
        return {k: statistics.median(v) for k, v in t.items()}

    def in_sync(self) -> dict:
        """Every call decoded and answered: the stream never lost sync."""
        st = self.r.stats()
        return {"calls_decoded": st["calls"], "replies_matched": st["replies"], "calls_sent": self.sent,
                "in_sync": st["calls"] == self.sent and st["replies"] == self.sent and st["unmatched"] == 0
                and st["desync"] == 0}


def per_op(r: dict[str, float]) -> dict[str, float]:
    return {"per_op_single": r["getattr_call"] + r["getattr_reply"],
            "per_op_in_x16_segments": (r["calls_x16"] + r["replies_x16"]) / 16}


def summary(rounds: list[dict[str, float]], peer: list[dict[str, float]] | None = None) -> dict:
    """Medians over rounds; with a peer (the first object, its rounds run next to
    these), also the median of the per-round ratios to it: steadier than a ratio
    of medians when the machine's load drifts between rounds."""
    out = {k: statistics.median(r[k] for r in rounds) for k in KINDS}
    out.update(per_op(out))
    if peer is not None:
        out["ratio_to_first"] = {k: round(statistics.median(
            {**a, **per_op(a)}[k] / {**b, **per_op(b)}[k] for a, b in zip(rounds, peer)), 3)
            for k in (*KINDS, "per_op_single", "per_op_in_x16_segments")}
    return out


def measure(objects: list[Path], runs: int = 3000, rounds: int = 1, cold_mib: float = 0) -> dict:
    """Each object's median per kind; with several objects and rounds, their rounds
    alternate, so that all see the same load on a shared machine (medians of rounds)."""
    streams = [Stream(o, int(cold_mib * (1 << 20))) for o in objects]
    try:
        per: list[list[dict]] = [[] for _ in objects]
        for i in range(rounds):
            order = range(len(objects)) if i % 2 == 0 else reversed(range(len(objects)))
            for j in order:
                per[j].append(streams[j].round(runs))
        return {str(o): {**summary(per[j], per[0] if j else None), **streams[j].in_sync(), "rounds": per[j]}
                for j, o in enumerate(objects)}
    finally:
        for s in streams:
            s.r.close()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--object", type=Path, action="append",
                   help="a decoder object; repeat to compare objects in the same run (default: the built one)")
    p.add_argument("--runs", type=int, default=3000, help="runs of each packet kind per round")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--cold", type=float, default=0, metavar="MIB",
                   help="write a buffer of MIB MiB before each run (caches cold); 0: off")
    p.add_argument("--save", action="store_true", help="also write bench/results/nfswire_micro-<UTC>.json")
    a = p.parse_args(argv)
    if a.cold < 0:
        p.error(f"--cold must be 0 (off) or a size in MiB, not {a.cold}")
    started, load_before = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), os.getloadavg()
    res = measure(a.object or [OBJECT], a.runs, a.rounds, a.cold)
    print(json.dumps({o: {k: v for k, v in r.items() if k != "rounds"} for o, r in res.items()}, indent=1))
    if a.save:
        out = ROOT / "bench" / "results" / ("nfswire_micro-" + time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + ".json")
        out.write_text(json.dumps({"started": started, "runs": a.runs, "rounds": a.rounds, "cold_mib": a.cold,
                                   "load_average_before": load_before, "load_average_after": os.getloadavg(),
                                   "kernel": os.uname().release, "results": res}, indent=1) + "\n")
        print(f"wrote {out.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
