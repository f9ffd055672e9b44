"""The knfsd probe: the Linux kernel NFS server's own tracepoints, per client x
proto x op x file, with latency, size and offset histograms.

Where the wire probe (``loupe_probes.nfswire``) decodes ONC RPC from packets and
learns names from what crosses the wire, this one reads the server's structures
(``nfsd.bpf.c``): the client, procedure and execution time of each request from
``svc_rqst``, every NFSv4 op of a COMPOUND under its own name, and file and share
(export) paths from the dentries themselves. Both give the same ``nfs`` rows, and
reuse the same op-name tables, client formatting and path rebuilding.
"""

from __future__ import annotations

import ctypes
import struct
from pathlib import Path

from ..bpf import libbpf
from ..bpf.probe import BpfProbe
from ..nfswire.names import Resolver
from ..nfswire.probe import finish, kept_file, row
from ..nfswire.wire import Val, client_addr, op_name, proto_name  # same value layout
from ..source import Collected

NAME_MAX = 256
MAX_OPS = 16
ID_NONE, ID_ROOT = 0, 1  # nfsd.bpf.h; the same sentinels as the wire probe's FH_NONE, FH_ROOT

# Informational counters (the `stats` map), in nfsd.bpf.h's order.
STATS = ("requests", "compounds", "ops_late", "name_lost", "too_deep", "renamed")

# What the probe attaches to: (tracepoint system, event). All required.
TRACEPOINTS = (
    ("sunrpc", "svc_stats_latency"),
    ("nfsd", "nfsd_compound"),
    ("nfsd", "nfsd_compound_status"),
    ("nfsd", "nfsd_fh_verify"),
    ("nfsd", "nfsd_read_io_done"),
    ("nfsd", "nfsd_write_io_done"),
)
NO_NFSD = "no nfsd tracepoints on this kernel (is nfsd loaded?)"


class Key(ctypes.Structure):
    _fields_ = [("addr", ctypes.c_uint8 * 16), ("file", ctypes.c_uint64), ("share", ctypes.c_uint64),
                ("op", ctypes.c_uint16), ("proto", ctypes.c_uint8), ("family", ctypes.c_uint8),
                ("pad", ctypes.c_uint32)]


class Name(ctypes.Structure):
    _fields_ = [("parent", ctypes.c_uint64), ("len", ctypes.c_uint16), ("pad", ctypes.c_uint8 * 6),
                ("name", ctypes.c_uint8 * NAME_MAX)]


def file_label(h: int) -> str:
    """A file whose path is not known (yet): its id, unique per (device, inode)."""
    return f"inode:{h:016x}"


def decode_name(value: bytes) -> tuple[int, str]:
    """A `names` value -> (parent id, name); an empty name is a mount's root."""
    n = Name.from_buffer_copy(value.ljust(ctypes.sizeof(Name), b"\0"))
    length = min(n.len, NAME_MAX)
    return n.parent, bytes(n.name[:length]).split(b"\0", 1)[0].decode("utf-8", "surrogateescape")


def decode_key(kb: bytes) -> dict[str, object]:
    """A `counts` key -> client, proto, op and the raw file/share ids."""
    k = Key.from_buffer_copy(kb)
    return {"client": client_addr(k.family, bytes(k.addr)) if k.family in (4, 6) else "",
            "proto": proto_name(k.proto), "op": op_name(k.proto, k.op), "file": k.file, "share": k.share}


def decode_stats(value: bytes) -> dict[str, int]:
    return dict(zip(STATS, struct.unpack(f"<{len(STATS)}Q", value[:8 * len(STATS)])))


def btf_strings(path: Path) -> set[str]:
    """Every name in a BTF file (vmlinux or a module's split BTF): its string section."""
    try:
        raw = path.read_bytes()
    except OSError:
        return set()
    if len(raw) < 24:
        return set()
    hdr_len = int.from_bytes(raw[4:8], "little")
    str_off = int.from_bytes(raw[16:20], "little")
    str_len = int.from_bytes(raw[20:24], "little")
    strings = raw[hdr_len + str_off:hdr_len + str_off + str_len]
    return {s.decode(errors="replace") for s in strings.split(b"\0") if s}


def missing_tracepoints(tracefs: Path | None, btf_dir: Path) -> tuple[list[str], bool]:
    """(tracepoints this kernel lacks, whether nfsd's tracepoints exist at all).

    Looked up in tracefs when mounted, else in the BTF of vmlinux, nfsd and
    sunrpc (they are modules on most kernels; tp_btf needs that BTF anyway)."""
    if tracefs is not None:
        have = {(s, e) for s, e in TRACEPOINTS if (tracefs / "events" / s / e).is_dir()}
    else:
        names = set()
        for f in ("vmlinux", "nfsd", "sunrpc"):
            names |= btf_strings(btf_dir / f)
        have = {(s, e) for s, e in TRACEPOINTS if f"btf_trace_{e}" in names}
    missing = [f"{s}:{e}" for s, e in TRACEPOINTS if (s, e) not in have]
    return missing, any(s == "nfsd" for s, _ in have)


class NfsdProbe(BpfProbe):
    name = "bpf.nfsd"
    families = ("nfs",)
    OBJECT = "nfsd.bpf.o"
    PROGRAMS = ("svc_stats_latency", "nfsd_compound", "nfsd_compound_status", "nfsd_fh_verify",
                "nfsd_read_io_done", "nfsd_write_io_done")
    OPTIONAL_PROGRAMS = ("nfsd_rename",)  # fexit/d_move: names follow renames
    # `counts` before `names`: a file is named before any of its ops is counted, so
    # every row drained has its names in the same second's drain.
    DRAIN = ("counts", "spill", "names")
    SIZES = {"counts": "LOUPE_NFSD_KEYS"}
    COUNTERS = ("drops", "other", "stats")
    # On a knfsd server the wire decoder would count the same operations again.
    replaces = ("bpf.nfswire",)

    def __init__(self, host: str, *, tracefs: Path | None | bool = True, btf_dir: str | Path = "/sys/kernel/btf",
                 max_names: int = 500_000, **kw) -> None:
        super().__init__(host, **kw)
        self._tracefs = libbpf.tracefs() if tracefs is True else (tracefs or None)
        self._btf_dir = Path(btf_dir)
        self.resolver = Resolver(max_entries=max_names)
        self.stats = dict.fromkeys(STATS, 0)

    def requirements(self) -> str | None:
        missing, any_nfsd = missing_tracepoints(self._tracefs, self._btf_dir)
        if not any_nfsd:
            return NO_NFSD
        if missing:
            return f"this kernel's nfsd lacks the tracepoints {', '.join(missing)} (Linux 6.1 has them)"
        if self._tracefs is not None and not (self._btf_dir / "nfsd").exists() and \
                "btf_trace_nfsd_compound" not in btf_strings(self._btf_dir / "vmlinux"):
            return "nfsd has no BTF (/sys/kernel/btf/nfsd); tp_btf needs CONFIG_DEBUG_INFO_BTF_MODULES=y"
        return None

    def bind_names(self, items: list[tuple[bytes, bytes]]) -> None:
        for kb, vb in items:
            parent, name = decode_name(vb)
            self.resolver.bind(int.from_bytes(kb[:8], "little"), parent, name)
        if items and len(self.resolver.parents) >= self.resolver.max_entries and self.obj is not None:
            # names were forgotten: let the kernel send them again on next sight
            self.obj.map("seen").clear()

    def path(self, h: int) -> str:
        if h == ID_NONE:
            return ""
        p = self.resolver.path(h)
        return p if p is not None else file_label(h)

    def decode(self, drained: dict[str, list[tuple[bytes, bytes]]], ts: int) -> Collected:
        self.bind_names(drained.get("names", []))
        st = drained.get("stats")
        if st:
            for n, v in decode_stats(st[0][1]).items():
                self.stats[n] += v
        rows = []
        for table in ("counts", "spill"):
            for kb, vb in drained.get(table, ()):
                v = Val.from_buffer_copy(vb)
                if not v.count:
                    continue
                k = decode_key(kb)
                rows.append(row({"client": k["client"], "proto": k["proto"], "op": k["op"],
                                 "share": self.path(k["share"]),
                                 "file": kept_file(table, self.path(k["file"]))}, v))
        return finish(rows, drained, self.host)


__all__ = ["NO_NFSD", "TRACEPOINTS", "NfsdProbe", "missing_tracepoints"]
