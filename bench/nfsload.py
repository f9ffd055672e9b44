"""A pipelined NFSv3 load client: one TCP connection, many outstanding XIDs.

Mounts an export (MOUNT v3 MNT), looks one file up, then keeps ``--depth`` calls
in flight (GETATTR, ACCESS and READ of ``--read-size`` bytes, in turn) for
``--seconds``, drains every outstanding reply and prints one JSON line: the
replies it got per procedure, the failures, and the window it measured.

Run inside a client's network namespace:

    ip netns exec <ns> python -m bench.nfsload --server 10.77.1.1 --mount-port 40123 \
        --export /export --file f0 --seconds 10 --depth 64
"""

from __future__ import annotations

import argparse
import os
import struct
import sys

from loupe.lab.nfs3 import (ACCESS, GETATTR, MOUNT_PROG, NFS_PROG, READ, RpcError, add_client_args,  # noqa: F401
                            call_body, connect, lookup, mount, opaque, record, pipeline, recv_record, rpc,
                            run_client)

PROC_NAMES = {GETATTR: "getattr", ACCESS: "access", READ: "read"}


def run(a: argparse.Namespace) -> dict:
    root = mount(a.server, a.mount_port, a.export)
    s = connect(a.server, a.port)
    fh = lookup(s, 1, root, a.file)
    bodies = [call_body(NFS_PROG, 3, GETATTR, opaque(fh)),
              call_body(NFS_PROG, 3, ACCESS, opaque(fh) + struct.pack(">I", 0x1F)),
              call_body(NFS_PROG, 3, READ, opaque(fh) + struct.pack(">QI", 0, a.read_size))]
    procs = (GETATTR, ACCESS, READ)
    # every call is a template with its XID patched in: xid % 3 picks the procedure
    xid = 3 * 1000
    sent = {p: 0 for p in procs}
    got = {p: 0 for p in procs}
    failed = 0

    def make_call() -> tuple[int, bytes]:
        nonlocal xid
        xid += 1
        sent[procs[xid % 3]] += 1
        return xid, record(xid, bodies[xid % 3])

    def on_reply(rxid: int, ok: bool, res: bytes) -> None:
        nonlocal failed
        if ok and struct.unpack_from(">I", res)[0] == 0:  # and nfsstat3 NFS3_OK
            got[procs[rxid % 3]] += 1
        else:
            failed += 1

    wall = pipeline(s, a.depth, a.seconds, make_call, on_reply)
    s.close()
    return {"ops": {PROC_NAMES[p]: got[p] for p in procs}, "sent": sum(sent.values()),
            "setup_ops": {"lookup": 1}, "failed": failed, "wall_s": wall,
            "ops_per_s": sum(got.values()) / wall if wall else 0.0}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_client_args(p)
    p.add_argument("--file", required=True)
    p.add_argument("--depth", type=int, default=64, help="calls in flight")
    p.add_argument("--read-size", type=int, default=512)
    return run_client(lambda a: dict(run(a), pid=os.getpid()), p.parse_args(argv))

if __name__ == "__main__":
    sys.exit(main())
