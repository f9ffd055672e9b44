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
import json
import os
import socket
import struct
import sys
import time

NFS_PROG, MOUNT_PROG = 100003, 100005
GETATTR, LOOKUP, ACCESS, READ = 1, 3, 4, 6
PROC_NAMES = {GETATTR: "getattr", ACCESS: "access", READ: "read"}


def _auth_sys() -> bytes:
    machine = b"loupe-bench"
    body = struct.pack(">II", 0, len(machine)) + machine + b"\0" * (-len(machine) % 4) + struct.pack(">III", 0, 0, 0)
    return struct.pack(">II", 1, len(body)) + body + struct.pack(">II", 0, 0)  # AUTH_SYS cred, AUTH_NONE verf


AUTH = _auth_sys()


def opaque(b: bytes) -> bytes:
    return struct.pack(">I", len(b)) + b + b"\0" * (-len(b) % 4)


def call_body(prog: int, vers: int, proc: int, args: bytes) -> bytes:
    """Everything after the XID of an ONC RPC call."""
    return struct.pack(">IIIII", 0, 2, prog, vers, proc) + AUTH + args


def record(xid: int, body: bytes) -> bytes:
    return struct.pack(">II", 0x80000000 | (len(body) + 4), xid) + body


class RpcError(RuntimeError):
    pass


def recv_record(s: socket.socket) -> bytes:
    out = b""
    while True:
        mark = _recv_exact(s, 4)
        (m,) = struct.unpack(">I", mark)
        out += _recv_exact(s, m & 0x7FFFFFFF)
        if m & 0x80000000:
            return out


def _recv_exact(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise RpcError("the server closed the connection")
        buf += chunk
    return bytes(buf)


def rpc(s: socket.socket, xid: int, prog: int, vers: int, proc: int, args: bytes) -> bytes:
    """One synchronous call; returns the results after accept_stat (SUCCESS)."""
    s.sendall(record(xid, call_body(prog, vers, proc, args)))
    r = recv_record(s)
    rxid, mtype, rstat = struct.unpack_from(">III", r)
    if rxid != xid or mtype != 1 or rstat != 0:
        raise RpcError(f"call {prog}/{vers}/{proc}: reply xid {rxid} type {mtype} stat {rstat}")
    (vlen,) = struct.unpack_from(">I", r, 16)
    p = 20 + vlen + (-vlen % 4)
    (accept,) = struct.unpack_from(">I", r, p)
    if accept:
        raise RpcError(f"call {prog}/{vers}/{proc}: accept_stat {accept}")
    return r[p + 4:]


def connect(server: str, port: int) -> socket.socket:
    """A connection from a reserved port (< 1024): NFS servers may insist on it."""
    for lport in range(1023, 600, -1):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", lport))
            s.connect((server, port))
        except OSError:
            s.close()
            continue
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s
    raise RpcError(f"no reserved local port could connect to {server}:{port}")


def mount(server: str, mount_port: int, export: str) -> bytes:
    s = connect(server, mount_port)
    try:
        res = rpc(s, 1, MOUNT_PROG, 3, 1, opaque(export.encode()))
    finally:
        s.close()
    (status,) = struct.unpack_from(">I", res)
    if status:
        raise RpcError(f"MOUNT {export}: status {status}")
    (n,) = struct.unpack_from(">I", res, 4)
    return res[8:8 + n]


def lookup(s: socket.socket, xid: int, dirfh: bytes, name: str) -> bytes:
    res = rpc(s, xid, NFS_PROG, 3, LOOKUP, opaque(dirfh) + opaque(name.encode()))
    (status,) = struct.unpack_from(">I", res)
    if status:
        raise RpcError(f"LOOKUP {name}: nfsstat3 {status}")
    (n,) = struct.unpack_from(">I", res, 4)
    return res[8:8 + n]


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
    outstanding = 0
    buf = bytearray()
    stop_at = time.monotonic() + a.seconds
    t0 = time.monotonic()

    def send(n: int) -> None:
        nonlocal xid, outstanding
        parts = []
        for _ in range(n):
            xid += 1
            parts.append(record(xid, bodies[xid % 3]))
            sent[procs[xid % 3]] += 1
        s.sendall(b"".join(parts))
        outstanding += n

    send(a.depth)
    sending = True
    while outstanding:
        chunk = s.recv(1 << 20)
        if not chunk:
            raise RpcError("the server closed the connection")
        buf += chunk
        pos, done = 0, 0
        while len(buf) - pos >= 4:
            (m,) = struct.unpack_from(">I", buf, pos)
            end = pos + 4 + (m & 0x7FFFFFFF)
            if end > len(buf):
                break
            # xid, REPLY, MSG_ACCEPTED, verf (AUTH_NONE, 0), SUCCESS, nfsstat3
            rxid, _, rstat, _, vlen = struct.unpack_from(">IIIII", buf, pos + 4)
            ok = rstat == 0 and vlen == 0 and struct.unpack_from(">II", buf, pos + 24) == (0, 0)
            if ok:
                got[procs[rxid % 3]] += 1
            else:
                failed += 1
            pos = end
            done += 1
        del buf[:pos]
        outstanding -= done
        if sending and time.monotonic() >= stop_at:
            sending = False
        if sending and done:
            send(done)
    wall = time.monotonic() - t0
    s.close()
    return {"ops": {PROC_NAMES[p]: got[p] for p in procs}, "sent": sum(sent.values()),
            "setup_ops": {"lookup": 1}, "failed": failed, "wall_s": wall,
            "ops_per_s": sum(got.values()) / wall if wall else 0.0}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--server", required=True)
    p.add_argument("--port", type=int, default=2049)
    p.add_argument("--mount-port", type=int, required=True)
    p.add_argument("--export", default="/export")
    p.add_argument("--file", required=True)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--depth", type=int, default=64, help="calls in flight")
    p.add_argument("--read-size", type=int, default=512)
    p.add_argument("--start-at", type=float, default=0, help="wall clock time to start at (time.time())")
    a = p.parse_args(argv)
    if a.start_at:
        time.sleep(max(0.0, a.start_at - time.time()))
    try:
        out = run(a)
    except (OSError, RpcError) as e:
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}), flush=True)
        return 1
    out["pid"] = os.getpid()
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
