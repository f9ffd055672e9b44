"""A minimal NFSv3 client over ONC RPC on TCP: the lab's clients and the benchmarks use it to
drive real NFS traffic with many calls in flight on one connection (what several client threads
put on the wire), without a kernel NFS client.
"""

from __future__ import annotations

import json
import socket
import struct
import time

NFS_PROG, MOUNT_PROG = 100003, 100005
GETATTR, LOOKUP, ACCESS, READ, WRITE, CREATE, COMMIT = 1, 3, 4, 6, 7, 8, 21
UNSTABLE, FILE_SYNC = 0, 2


def _auth_sys() -> bytes:
    machine = b"loupe-lab"
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


def add_client_args(p) -> None:
    """The arguments every lab client command takes (argparse)."""
    p.add_argument("--server", required=True)
    p.add_argument("--port", type=int, default=2049)
    p.add_argument("--mount-port", type=int, required=True)
    p.add_argument("--export", default="/export")
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--start-at", type=float, default=0, help="wall clock time to start at (time.time())")


def run_client(run, a) -> int:
    """Wait for --start-at, run, and print one JSON line: the result, or {"error": ...} (exit 1)."""
    if a.start_at:
        time.sleep(max(0.0, a.start_at - time.time()))
    try:
        out = run(a)
    except (OSError, RpcError) as e:
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}), flush=True)
        return 1
    print(json.dumps(out), flush=True)
    return 0


def take_replies(buf: bytearray) -> list[tuple[int, bool, bytes]]:
    """The complete single-fragment replies at the front of `buf` (removed from it), as (xid, ok,
    results after accept_stat); ok: accepted, AUTH_NONE verifier, SUCCESS."""
    out = []
    pos = 0
    while len(buf) - pos >= 4:
        (m,) = struct.unpack_from(">I", buf, pos)
        end = pos + 4 + (m & 0x7FFFFFFF)
        if end > len(buf):
            break
        # xid, REPLY, MSG_ACCEPTED, verf (AUTH_NONE, 0), accept_stat
        rxid, _, rstat, _, vlen = struct.unpack_from(">IIIII", buf, pos + 4)
        ok = rstat == 0 and vlen == 0 and struct.unpack_from(">I", buf, pos + 24)[0] == 0
        out.append((rxid, ok, bytes(buf[pos + 28:end])))
        pos = end
    del buf[:pos]
    return out


def pipeline(s: socket.socket, depth: int, seconds: float, make_call, on_reply) -> float:
    """Keep `depth` calls in flight on `s` for `seconds`, then wait for every reply; returns the
    seconds it took. ``make_call()`` gives the next call as (xid, record); ``on_reply(xid, ok,
    results)`` gets each reply to one of them (see :func:`take_replies`)."""
    t0 = time.monotonic()
    stop_at = t0 + seconds
    inflight: set[int] = set()

    def send(n: int) -> None:
        parts = []
        for _ in range(n):
            xid, rec = make_call()
            inflight.add(xid)
            parts.append(rec)
        s.sendall(b"".join(parts))

    send(depth)
    buf = bytearray()
    while inflight:
        chunk = s.recv(1 << 20)
        if not chunk:
            raise RpcError("the server closed the connection")
        buf += chunk
        done = 0
        for xid, ok, res in take_replies(buf):
            if xid in inflight:
                inflight.discard(xid)
                on_reply(xid, ok, res)
                done += 1
        if done and time.monotonic() < stop_at:
            send(done)
    return time.monotonic() - t0
