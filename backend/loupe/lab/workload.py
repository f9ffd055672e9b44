"""The lab's client workloads (the seed's metric set), run inside one client's network namespace:

    ip netns exec NS python -m loupe.lab.workload --server IP --mount-port P --workload random-read \\
        --seconds 10 --file data-c1.bin --tag c1

Each keeps as many NFSv3 calls in flight on one TCP connection as the workload has client
threads, for --seconds, then drains them and prints one JSON line: what this client itself
counted (bytes and ops that the server answered OK, per direction, and how long it ran), the way
a benchmark reports it. A "thread" is an outstanding call: on the wire that is what threads are.
"""

from __future__ import annotations

import argparse
import os
import random
import struct
import sys
import time
from dataclasses import dataclass, replace

from .nfs3 import (COMMIT, CREATE, FILE_SYNC, NFS_PROG, READ, UNSTABLE, WRITE, RpcError, add_client_args, call_body,
                   connect, lookup, mount, opaque, pipeline, record, rpc, run_client)

KiB = 1024


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    depth: int  # calls in flight: the client's threads
    kind: str  # read, write, create
    io: int = 0  # bytes per call
    pattern: str = "seq"  # seq or random
    stable: int = UNSTABLE
    cold: bool = False  # the server's caches are dropped first (the lab does it)


WORKLOADS = {w.name: w for w in (
    Workload("stream-read-light", "Stream Read light", 1, "read", 64 * KiB),
    Workload("cold-stream-read", "Cold Stream Read", 20, "read", 64 * KiB, cold=True),
    Workload("stream-write-light", "Stream Write light", 1, "write", 64 * KiB),
    Workload("stream-write", "Stream Write", 20, "write", 64 * KiB),
    Workload("sync-write", "Sync write", 128, "write", 8 * KiB, stable=FILE_SYNC),
    Workload("random-read", "Random Read", 128, "read", 8 * KiB, "random"),
    Workload("cold-random-read", "Cold Random Read", 20, "read", 8 * KiB, "random", cold=True),
    Workload("filecreate", "Filecreate", 8, "create"),
)}


def _skip_attr(res: bytes, p: int) -> int:
    """Past a post_op_attr (a flag, then fattr3 of 84 bytes when set)."""
    (follows,) = struct.unpack_from(">I", res, p)
    return p + 4 + (84 if follows else 0)


def _create(s, xid: int, dirfh: bytes, name: str) -> bytes:
    """CREATE (UNCHECKED, no attributes set); the new file's handle."""
    res = rpc(s, xid, NFS_PROG, 3, CREATE, opaque(dirfh) + opaque(name.encode()) + struct.pack(">I", 0) + b"\0" * 24)
    (status, follows) = struct.unpack_from(">II", res)
    if status or not follows:
        raise RpcError(f"CREATE {name}: nfsstat3 {status}")
    (n,) = struct.unpack_from(">I", res, 8)
    return res[12:12 + n]


def run(a: argparse.Namespace) -> dict:
    w = WORKLOADS[a.workload]
    if a.depth or a.io:  # a variation of the seed workload, e.g. one 4 KiB sync write at a time
        w = replace(w, depth=a.depth or w.depth, io=a.io or w.io)
    root = mount(a.server, a.mount_port, a.export)
    s = connect(a.server, a.port)
    xid = 10
    if w.kind == "read":
        fh = lookup(s, xid, root, a.file)
        size = a.file_size
    elif w.kind == "write":
        fh = _create(s, xid, root, f"{a.tag}-{w.name}-{os.getpid()}.bin")
    rng = random.Random(a.seed)
    offset = 0
    n_created = 0
    counts = {"read_bytes": 0, "write_bytes": 0, "read_ops": 0, "write_ops": 0, "create_ops": 0, "errors": 0}
    payload = os.urandom(w.io) if w.kind == "write" else b""
    # the body of each call in flight, by XID; what it was is what its reply counts for
    inflight: dict[int, str] = {}

    def next_call() -> tuple[int, bytes]:
        nonlocal xid, offset, n_created
        xid += 1
        if w.kind == "read":
            if w.pattern == "random":
                off = rng.randrange(0, max(1, size // w.io)) * w.io
            else:
                off, offset = offset, (offset + w.io) % max(w.io, size - size % w.io)
            args = opaque(fh) + struct.pack(">QI", off, w.io)
            proc, what = READ, "read"
        elif w.kind == "write":
            args = opaque(fh) + struct.pack(">QII", offset, w.io, w.stable) + opaque(payload)
            offset += w.io
            proc, what = WRITE, "write"
        else:
            n_created += 1
            name = f"{a.tag}-f{os.getpid()}-{n_created}"
            args = opaque(root) + opaque(name.encode()) + struct.pack(">I", 0) + b"\0" * 24
            proc, what = CREATE, "create"
        inflight[xid] = what
        return xid, record(xid, call_body(NFS_PROG, 3, proc, args))

    def count(what: str, res: bytes) -> None:
        (status,) = struct.unpack_from(">I", res)
        if status:
            counts["errors"] += 1
        elif what == "read":  # READ3resok: post_op_attr, count, eof, data
            (n,) = struct.unpack_from(">I", res, _skip_attr(res, 4))
            counts["read_bytes"] += n
            counts["read_ops"] += 1
        elif what == "write":  # WRITE3resok: wcc_data (pre_op_attr, post_op_attr), count, committed, verf
            (pre,) = struct.unpack_from(">I", res, 4)
            (n,) = struct.unpack_from(">I", res, _skip_attr(res, 8 + (24 if pre else 0)))
            counts["write_bytes"] += n
            counts["write_ops"] += 1
        else:
            counts["create_ops"] += 1

    def on_reply(xid: int, ok: bool, res: bytes) -> None:
        what = inflight.pop(xid)
        if ok:
            count(what, res)
        else:
            counts["errors"] += 1

    start_wall = time.time()
    runtime = pipeline(s, w.depth, a.seconds, next_call, on_reply)
    if w.kind == "write" and w.stable == UNSTABLE:  # what a streaming writer does at close
        xid += 1
        rpc(s, xid, NFS_PROG, 3, COMMIT, opaque(fh) + struct.pack(">QI", 0, 0))
    s.close()
    return dict(counts, workload=w.name, start=start_wall, runtime=runtime, depth=w.depth)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_client_args(p)
    p.add_argument("--workload", choices=sorted(WORKLOADS), required=True)
    p.add_argument("--file", default="", help="for reads: the file under the export")
    p.add_argument("--file-size", type=int, default=0, help="for reads: its size")
    p.add_argument("--tag", default="c", help="prefix of the names this client creates")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--depth", type=int, default=0, help="calls in flight, instead of the workload's")
    p.add_argument("--io", type=int, default=0, help="bytes per read or write, instead of the workload's")
    a = p.parse_args(argv)
    if WORKLOADS[a.workload].kind == "read" and not (a.file and a.file_size):
        p.error("a read workload needs --file and --file-size")
    return run_client(run, a)

if __name__ == "__main__":
    sys.exit(main())
