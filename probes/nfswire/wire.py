"""What nfswire.bpf.c hands over, and how it reads: map layouts (mirroring
``nfswire.bpf.h``), op-number tables, client addresses, the handle hash, and the
XDR of a READDIRPLUS3 reply head."""

from __future__ import annotations

import ctypes
import ipaddress
import struct

from ..bpf.probe import HistVal

FH_MAX, NAME_MAX, DIRCHUNK = 128, 512, 4096
FH_NONE, FH_ROOT = 0, 1
OP_OPEN_CREATE, OP_GSS_PRIV, OP_UNPARSED = 0xFFFD, 0xFFFE, 0xFFFF  # nfswire.bpf.h; no NFS op has these

PROTOS = {1: "v3", 2: "v4.0", 3: "v4.1", 4: "v4.2"}

# NFSv3 procedures, RFC 1813 s.3.3
V3_PROCS = (
    "null", "getattr", "setattr", "lookup", "access", "readlink", "read", "write", "create",
    "mkdir", "symlink", "mknod", "remove", "rmdir", "rename", "link", "readdir", "readdirplus",
    "fsstat", "fsinfo", "pathconf", "commit",
)

# NFSv4.x operations: RFC 7530 s.16 (3-39), RFC 8881 s.18 (40-58), RFC 7862 (59-71), RFC 8276 (72-75)
V4_OPS = {
    3: "access", 4: "close", 5: "commit", 6: "create", 7: "delegpurge", 8: "delegreturn",
    9: "getattr", 10: "getfh", 11: "link", 12: "lock", 13: "lockt", 14: "locku", 15: "lookup",
    16: "lookupp", 17: "nverify", 18: "open", 19: "openattr", 20: "open_confirm",
    21: "open_downgrade", 22: "putfh", 23: "putpubfh", 24: "putrootfh", 25: "read", 26: "readdir",
    27: "readlink", 28: "remove", 29: "rename", 30: "renew", 31: "restorefh", 32: "savefh",
    33: "secinfo", 34: "setattr", 35: "setclientid", 36: "setclientid_confirm", 37: "verify",
    38: "write", 39: "release_lockowner", 40: "backchannel_ctl", 41: "bind_conn_to_session",
    42: "exchange_id", 43: "create_session", 44: "destroy_session", 45: "free_stateid",
    46: "get_dir_delegation", 47: "getdeviceinfo", 48: "getdevicelist", 49: "layoutcommit",
    50: "layoutget", 51: "layoutreturn", 52: "secinfo_no_name", 53: "sequence", 54: "set_ssv",
    55: "test_stateid", 56: "want_delegation", 57: "destroy_clientid", 58: "reclaim_complete",
    59: "allocate", 60: "copy", 61: "copy_notify", 62: "deallocate", 63: "io_advise",
    64: "layouterror", 65: "layoutstats", 66: "offload_cancel", 67: "offload_status",
    68: "read_plus", 69: "seek", 70: "write_same", 71: "clone", 72: "getxattr", 73: "setxattr",
    74: "listxattrs", 75: "removexattr", 10044: "illegal",
}


def op_name(proto: int, op: int) -> str:
    """The op's lowercase name as the catalog shows it (``read``, ``putfh``, ...)."""
    if op == OP_GSS_PRIV:
        return "(encrypted)"  # RPCSEC_GSS privacy: the procedure is not visible
    if op == OP_UNPARSED:
        return "(unparsed)"  # a COMPOUND op past what the first segment showed
    if proto == 1:
        return V3_PROCS[op] if op < len(V3_PROCS) else f"proc{op}"
    if proto in (2, 3, 4) and op == 0:
        return "null"  # NFSv4 NULL procedure (COMPOUND is procedure 1)
    if proto in (2, 3, 4) and op == OP_OPEN_CREATE:
        return "open_create"  # OPEN with OPEN4_CREATE: how an NFSv4 client creates a file
    return V4_OPS.get(op, f"op{op}")


def proto_name(proto: int) -> str:
    return PROTOS.get(proto, f"proto{proto}")


def client_addr(family: int, addr: bytes) -> str:
    """The client as shown: dotted IPv4, compressed IPv6 (IPv4-mapped shown as IPv4)."""
    if family == 4:
        return str(ipaddress.IPv4Address(bytes(addr[:4])))
    a = ipaddress.IPv6Address(bytes(addr[:16]))
    return str(a.ipv4_mapped) if a.ipv4_mapped else str(a)


_M64 = (1 << 64) - 1


def fh_hash(data: bytes, seed: int = 0) -> int:
    """The kernel's buf_hash(): 64-bit little-endian words, the last zero-padded."""
    h = (0xCBF29CE484222325 ^ seed ^ len(data)) & _M64
    for i in range(0, min(len(data), FH_MAX), 8):
        w = int.from_bytes(data[i:i + 8].ljust(8, b"\0"), "little")
        h = ((h ^ w) * 0x100000001B3) & _M64
        h ^= h >> 29
    return h + 16 if h < 16 else h


# ---------------------------------------------------------------- map layouts

class Key(ctypes.Structure):
    _fields_ = [("addr", ctypes.c_uint8 * 16), ("fh", ctypes.c_uint64), ("op", ctypes.c_uint16),
                ("proto", ctypes.c_uint8), ("family", ctypes.c_uint8), ("cpu", ctypes.c_uint32)]


Val = HistVal  # nfswire.bpf.h's val (spill, other)


class Row(ctypes.Structure):
    """nfswire.bpf.h's nfsw_row: a key's counts for one second on one CPU, with
    HistVal's fields (its buckets 32-bit)."""
    _fields_ = [("tag", ctypes.c_uint64), ("key", Key), ("count", ctypes.c_uint64), ("lat_sum", ctypes.c_uint64),
                ("bytes", ctypes.c_uint64)] + [
                   (f, ctypes.c_uint32 * (getattr(HistVal, f).size // 8)) for f in ("lat", "size", "off")] + [
                   ("pad", ctypes.c_uint8 * 16)]


assert ctypes.sizeof(Key) == 32 and ctypes.sizeof(Row) == 384


class Bind(ctypes.Structure):
    _fields_ = [("parent", ctypes.c_uint64), ("name_len", ctypes.c_uint16), ("fh_len", ctypes.c_uint8),
                ("kind", ctypes.c_uint8), ("pad", ctypes.c_uint32), ("fh", ctypes.c_uint8 * FH_MAX),
                ("name", ctypes.c_uint8 * NAME_MAX)]


class DirKey(ctypes.Structure):
    _fields_ = [("dir", ctypes.c_uint64), ("xid", ctypes.c_uint32), ("pad", ctypes.c_uint32)]


class DirChunk(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint32), ("pad", ctypes.c_uint32), ("data", ctypes.c_uint8 * DIRCHUNK)]


class Fh(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint8), ("pad", ctypes.c_uint8 * 7), ("data", ctypes.c_uint8 * FH_MAX)]


class Config(ctypes.Structure):
    _fields_ = [("port", ctypes.c_uint16), ("mount_port", ctypes.c_uint16), ("flags", ctypes.c_uint32),
                ("stale_ms", ctypes.c_uint32), ("pad", ctypes.c_uint32)]


STATS = ("records", "calls", "replies", "unmatched", "partial", "desync", "resync", "bind_lost",
         "gss_privacy", "unparsed", "dir_lost", "not_rpc", "overwritten", "expired",
         "refilled")


# ---------------------------------------------------------------- XDR

class XdrError(ValueError):
    """The bytes end before the structure does (a truncated head is expected)."""


class Xdr:
    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data, self.pos = data, pos

    def u32(self) -> int:
        if self.pos + 4 > len(self.data):
            raise XdrError("truncated")
        (v,) = struct.unpack_from(">I", self.data, self.pos)
        self.pos += 4
        return v

    def u64(self) -> int:
        return (self.u32() << 32) | self.u32()

    def opaque(self, max_len: int = 1 << 20) -> bytes:
        n = self.u32()
        if n > max_len:
            raise XdrError(f"opaque of {n} bytes exceeds {max_len}")
        end = self.pos + n
        if end > len(self.data):
            raise XdrError("truncated")
        b = self.data[self.pos:end]
        self.pos = end + (-n % 4)
        return b

    def skip(self, n: int) -> None:
        if self.pos + n > len(self.data):
            raise XdrError("truncated")
        self.pos += n


def parse_readdirplus(msg: bytes) -> list[tuple[str, bytes]]:
    """(name, file handle) of each entry in the head of a READDIRPLUS3 reply
    (RFC 1813 s.3.3.17), from the RPC message's XID on. Entries cut off by the end
    of the head are left out; entries without a handle too."""
    x = Xdr(msg)
    out: list[tuple[str, bytes]] = []
    try:
        x.u32()  # xid
        if x.u32() != 1 or x.u32() != 0:  # REPLY, MSG_ACCEPTED
            return out
        x.u32()
        x.opaque(400)  # verifier
        if x.u32() != 0 or x.u32() != 0:  # SUCCESS, NFS3_OK
            return out
        if x.u32():
            x.skip(84)  # dir_attributes: fattr3
        x.skip(8)  # cookieverf
        while x.u32():  # value_follows
            x.u64()  # fileid
            name = x.opaque(255).decode("utf-8", "surrogateescape")
            x.u64()  # cookie
            if x.u32():
                x.skip(84)  # name_attributes
            fh = x.opaque(64) if x.u32() else b""
            if fh:
                out.append((name, fh))
    except XdrError:
        pass
    return out
