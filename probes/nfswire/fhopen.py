"""File handle -> path on the NFS server itself, by open_by_handle_at(2).

For handles whose name binding never crossed the wire (a client looked the file
up before the agent started): the handle's bytes are decoded into the kernel
file handle the server built them from (nfs-ganesha's VFS FSAL, or knfsd), that
handle is reopened on the filesystem it names, and the path of the resulting fd
(``/proc/self/fd/N``) is mapped to the export's client-side path, the one the
bindings use, so that a file has one name whichever way it was found.

Needs CAP_DAC_READ_SEARCH in the initial user namespace (``why_off``). Opening
is bounded (``CachedOpener``): answers are cached, failures retried with backoff,
and at most ``rate`` handles are opened per second.
"""

from __future__ import annotations

import ctypes
import logging
import os
import re
import struct
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..bpf.libbpf import capabilities

log = logging.getLogger("loupe.nfswire")

MAX_HANDLE_SZ = 128  # the kernel's limit on f_handle (fs/fhandle.c)
CAP_DAC_READ_SEARCH = 2

# ---------------------------------------------------------------- nfs-ganesha

# The NFS layer's header (src/include/nfs_fh.h): version 0x43, flags, export id
# (big-endian), length of the FSAL's opaque part. Trailing bytes pad to 4.
GANESHA_FH_VERSION = 0x43
GANESHA_FLAG_DS = 0x01  # a pNFS data server handle: no FSAL handle inside
GANESHA_FSAL_BIG_ENDIAN = 0x40
# The VFS FSAL's opaque part (FSAL_VFS/os/linux/handle_syscalls.c): a flags byte
# (fsid type in the low 5 bits, the size of the kernel handle type in the top 2),
# the fsid, the kernel's handle_type, then its f_handle bytes.
VFS_TYPE_SIZE = {0x40: 1, 0x80: 2, 0xC0: 4}
VFS_DUMMY = 0x20  # an export root placeholder, not a kernel handle
VFS_FSID_SIZE = {0: 0, 1: 8, 2: 8, 3: 16, 4: 8, 5: 8}  # enum fsid_type -> bytes
GANESHA_FSID_STATFS, GANESHA_FSID_DEVICE = 4, 5  # FSID_TWO_UINT32 (statfs f_fsid), FSID_DEVICE

# ---------------------------------------------------------------- knfsd

# fs/nfsd/nfsfh.h: version 1, auth type 0, fsid type, fileid type; the fsid
# (length by type); the fileid, which is exportfs_encode_fh()'s output, i.e. the
# kernel handle of type fileid_type. FILEID_ROOT (0): the export root, no fileid.
KNFSD_FSID_LEN = {0: 8, 1: 4, 2: 12, 3: 8, 4: 8, 5: 8, 6: 16, 7: 24}
KNFSD_FSID_DEV, KNFSD_FSID_MAJOR_MINOR, KNFSD_FSID_ENCODE_DEV = 0, 2, 3
FILEID_ROOT, FILEID_INVALID = 0, 0xFF


@dataclass(frozen=True)
class KernelHandle:
    """What open_by_handle_at needs, and how the wire handle names its filesystem."""

    server: str  # "ganesha" or "knfsd": how ``fsid`` reads
    fsid_type: int
    fsid: bytes
    handle_type: int  # the kernel's fid type; FILEID_ROOT with knfsd = the export root
    f_handle: bytes
    export_id: int | None = None  # nfs-ganesha's Export_Id
    big_endian: bool = False


def ganesha_handle(fh: bytes) -> KernelHandle | None:
    """The kernel handle inside an nfs-ganesha VFS FSAL handle, or None."""
    if len(fh) < 5 or fh[0] != GANESHA_FH_VERSION:
        return None
    flags, export_id, n = fh[1], int.from_bytes(fh[2:4], "big"), fh[4]
    if flags & GANESHA_FLAG_DS or export_id == 0 or n == 0 or 5 + n > len(fh):
        return None  # export 0 is the NFSv4 pseudo filesystem: not on disk
    opaque = fh[5:5 + n]
    head = opaque[0]
    fsid_len, type_len = VFS_FSID_SIZE.get(head & 0x1F), VFS_TYPE_SIZE.get(head & 0xC0)
    if head & VFS_DUMMY or fsid_len is None or type_len is None:
        return None
    pos = 1 + fsid_len
    body = opaque[pos + type_len:]
    if not 4 <= len(body) <= MAX_HANDLE_SZ:
        return None
    big = bool(flags & GANESHA_FSAL_BIG_ENDIAN)
    htype = int.from_bytes(opaque[pos:pos + type_len], "big" if big else "little", signed=type_len > 1)
    return KernelHandle("ganesha", head & 0x1F, bytes(opaque[1:pos]), htype, bytes(body), export_id, big)


def ganesha_wire(k: KernelHandle) -> bytes:
    """The handle nfs-ganesha's VFS FSAL puts on the wire for ``k`` (NFSv4: unpadded)."""
    type_len = 1 if 0 <= k.handle_type <= 0xFF else 2 if -0x8000 <= k.handle_type < 0x8000 else 4
    order = "big" if k.big_endian else "little"
    head = k.fsid_type | {1: 0x40, 2: 0x80, 4: 0xC0}[type_len]
    opaque = bytes([head]) + k.fsid + k.handle_type.to_bytes(type_len, order, signed=type_len > 1) + k.f_handle
    flags = GANESHA_FSAL_BIG_ENDIAN if k.big_endian else 0
    return bytes([GANESHA_FH_VERSION, flags]) + (k.export_id or 0).to_bytes(2, "big") + bytes([len(opaque)]) + opaque


def knfsd_handle(fh: bytes) -> KernelHandle | None:
    """The kernel handle inside a knfsd (Linux NFS server) handle, or None."""
    if len(fh) < 4 or fh[0] != 1 or fh[1] != 0:
        return None
    fsid_type, fileid_type = fh[2], fh[3]
    klen = KNFSD_FSID_LEN.get(fsid_type)
    if klen is None or len(fh) < 4 + klen or fileid_type == FILEID_INVALID:
        return None
    fileid = fh[4 + klen:]
    if fileid_type == FILEID_ROOT:
        ok = not fileid
    else:
        ok = 0 < len(fileid) <= MAX_HANDLE_SZ and len(fileid) % 4 == 0
    return KernelHandle("knfsd", fsid_type, bytes(fh[4:4 + klen]), fileid_type, bytes(fileid)) if ok else None


def kernel_handle(fh: bytes) -> KernelHandle | None:
    return ganesha_handle(fh) or knfsd_handle(fh)


def fs_key(k: KernelHandle) -> tuple | None:
    """How ``k`` names its filesystem: ("statfs", f_fsid as 8 bytes) or ("dev",
    major, minor); None when only the kernel's export table can tell (knfsd's
    fsid= numbers and UUIDs) or the type is not supported (ganesha's UUIDs)."""
    f = k.fsid
    if k.server == "ganesha":
        if k.fsid_type == GANESHA_FSID_STATFS:
            return ("statfs", f)
        if k.fsid_type == GANESHA_FSID_DEVICE:
            major, minor = struct.unpack(">II" if k.big_endian else "<II", f[:8])
            return ("dev", major, minor)
        return None
    if k.fsid_type == KNFSD_FSID_DEV:
        (w,) = struct.unpack(">I", f[:4])
        return ("dev", w >> 16, w & 0xFFFF)
    if k.fsid_type == KNFSD_FSID_MAJOR_MINOR:
        return ("dev", *struct.unpack(">II", f[:8]))
    if k.fsid_type == KNFSD_FSID_ENCODE_DEV:  # new_encode_dev()
        (d,) = struct.unpack("<I", f[:4])
        return ("dev", (d & 0xFFF00) >> 8, (d & 0xFF) | ((d >> 12) & 0xFFF00))
    return None


def knfsd_root_ino(k: KernelHandle) -> int | None:
    """The export root's inode number, where knfsd's fsid carries it."""
    at = {KNFSD_FSID_DEV: 4, KNFSD_FSID_ENCODE_DEV: 4, KNFSD_FSID_MAJOR_MINOR: 8}.get(k.fsid_type)
    return None if at is None or k.server != "knfsd" else struct.unpack("<I", k.fsid[at:at + 4])[0]


# ---------------------------------------------------------------- the syscalls

class _FileHandle(ctypes.Structure):
    _fields_ = [("handle_bytes", ctypes.c_uint), ("handle_type", ctypes.c_int),
                ("f_handle", ctypes.c_ubyte * MAX_HANDLE_SZ)]


_libc: ctypes.CDLL | None = None


def _c() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _check(rc: int) -> int:
    if rc < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return rc


def open_by_handle_at(mount_fd: int, handle_type: int, f_handle: bytes, flags: int = os.O_PATH) -> int:
    """The fd of the file ``(handle_type, f_handle)`` names on ``mount_fd``'s filesystem."""
    if len(f_handle) > MAX_HANDLE_SZ:
        raise OSError(22, "handle too long")
    fh = _FileHandle(len(f_handle), handle_type)
    ctypes.memmove(fh.f_handle, f_handle, len(f_handle))
    return _check(_c().open_by_handle_at(mount_fd, ctypes.byref(fh), flags | os.O_CLOEXEC))


def name_to_handle_at(path: str | os.PathLike) -> tuple[int, bytes]:
    """(handle_type, f_handle) of ``path``: what a server puts in its handles."""
    fh = _FileHandle(MAX_HANDLE_SZ)
    mnt = ctypes.c_int()
    _check(_c().name_to_handle_at(-100, os.fsencode(path), ctypes.byref(fh), ctypes.byref(mnt), 0))  # AT_FDCWD
    return fh.handle_type, bytes(fh.f_handle[:fh.handle_bytes])


def why_off(status: str | None = None, uid_map: str | None = None) -> str | None:
    """Why open_by_handle_at cannot work in this process, or None."""
    eff = capabilities(status)
    try:
        uid_map = uid_map if uid_map is not None else Path("/proc/self/uid_map").read_text()
    except OSError as e:
        return f"cannot read this process's user namespace: {e}"
    if eff is None or not eff >> CAP_DAC_READ_SEARCH & 1:
        return "needs CAP_DAC_READ_SEARCH (root)"
    if uid_map.split()[:3] != ["0", "0", "4294967295"]:
        return "needs the initial user namespace (the kernel refuses it in a container's own)"
    return None


# ---------------------------------------------------------------- filesystems

# Filesystems never statfs'd while looking for an fsid: a dead server would hang us.
REMOTE_FS = {"nfs", "nfs4", "cifs", "smb3", "smbfs", "ceph", "glusterfs", "9p", "afs", "lustre", "autofs",
             "sshfs", "davfs", "ncpfs", "beegfs", "gpfs"}


def _unescape(s: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


@dataclass(frozen=True)
class Mount:
    path: str
    major: int
    minor: int
    root: str  # the directory of the filesystem mounted here ("/" unless a bind mount)
    fstype: str


def parse_mountinfo(text: str) -> list[Mount]:
    out = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        f = left.split()
        if not sep or len(f) < 5 or ":" not in f[2]:
            continue
        major, minor = (int(x) for x in f[2].split(":"))
        out.append(Mount(_unescape(f[4]), major, minor, _unescape(f[3]), right.split()[0] if right else ""))
    return out


def parse_expkeys(text: str) -> dict[tuple[int, bytes], str]:
    """knfsd's fsid -> export path cache (/proc/net/rpc/nfsd.fh/content): lines
    ``domain fsidtype 0x<u32 words in host order> [path]``."""
    out = {}
    for line in text.splitlines():
        f = line.split(" ", 3)
        if line.startswith("#") or len(f) < 4 or not f[2].startswith("0x"):
            continue
        hexs = f[2][2:]
        try:
            fsid = b"".join(struct.pack("<I", int(hexs[i:i + 8], 16)) for i in range(0, len(hexs), 8))
            out[(int(f[1]), fsid)] = _unescape(f[3])
        except ValueError:
            continue
    return out


class Filesystems:
    """Finds and keeps an fd on the filesystem a kernel handle belongs to.

    Mount fds are closed after ``idle`` seconds unused, so the agent does not keep
    an unexported filesystem from being unmounted for longer than that."""

    REFRESH = 10.0  # seconds between rereads of the mount table when an fsid is not found

    def __init__(self, proc: str = "/proc", idle: float = 30.0, clock: Callable[[], float] = time.monotonic,
                 roots: Callable[[], Iterable[str]] = tuple) -> None:
        self.proc, self.idle, self.clock, self.roots = Path(proc), idle, clock, roots
        self.fds: dict[tuple, list] = {}  # key -> [fd, last used]
        self._index: dict[tuple, str] = {}
        self._read_at = -1e18
        self._expkeys: dict[tuple[int, bytes], str] = {}
        self._expkeys_at = -1e18

    def _reindex(self) -> None:
        try:
            mounts = parse_mountinfo((self.proc / "self" / "mountinfo").read_text())
        except OSError:
            mounts = []
        # a filesystem's whole-tree mount first, so fd paths are the ones the server uses
        mounts.sort(key=lambda m: (m.root != "/", len(m.path)))
        index: dict[tuple, str] = {}
        for m in mounts:
            if m.fstype in REMOTE_FS or m.fstype.startswith("fuse"):
                continue
            index.setdefault(("dev", m.major, m.minor), m.path)
            try:
                fsid = os.statvfs(m.path).f_fsid
            except OSError:
                continue
            if fsid:  # 0 is shared by filesystems that have none: it names none of them
                index.setdefault(("statfs", struct.pack("<Q", fsid)), m.path)
        self._index, self._read_at = index, self.clock()

    def _lookup(self, key: tuple) -> str | None:
        if key not in self._index and self.clock() - self._read_at >= self.REFRESH:
            self._reindex()
        return self._index.get(key)

    def expkey(self, k: KernelHandle) -> str | None:
        """The export path knfsd itself maps ``k``'s fsid to, while it has it cached."""
        key = (k.fsid_type, k.fsid)
        if key not in self._expkeys and self.clock() - self._expkeys_at >= self.REFRESH:
            try:
                self._expkeys = parse_expkeys((self.proc / "net" / "rpc" / "nfsd.fh" / "content").read_text())
            except OSError:
                self._expkeys = {}
            self._expkeys_at = self.clock()
        return self._expkeys.get(key)

    def locate(self, k: KernelHandle) -> tuple[tuple, str] | None:
        """(cache key, a directory on ``k``'s filesystem), or None."""
        key = fs_key(k)
        path = self._lookup(key) if key else None
        if path is None and k.server == "knfsd":
            path = self.expkey(k)
            key = ("export", path)
        return (key, path) if path else None

    def fd(self, k: KernelHandle) -> int | None:
        self.sweep()
        where = self.locate(k)
        if where is None:
            return None
        key, path = where
        entry = self.fds.get(key)
        if entry is None:
            try:
                entry = self.fds[key] = [os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), 0.0]
            except OSError:
                return None
        entry[1] = self.clock()
        return entry[0]

    def root_path(self, k: KernelHandle) -> str | None:
        """The path of a knfsd export root handle (FILEID_ROOT: no kernel handle inside)."""
        path = self.expkey(k)
        if path is not None:
            return path
        key, ino = fs_key(k), knfsd_root_ino(k)
        if key is None or ino is None:
            return None
        for p in self.roots():
            try:
                st = os.stat(p)
            except OSError:
                continue
            if (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino & 0xFFFFFFFF) == (key[1], key[2], ino):
                return p
        return None

    def sweep(self) -> None:
        now = self.clock()
        for key in [k for k, (_, used) in self.fds.items() if now - used > self.idle]:
            os.close(self.fds.pop(key)[0])

    def close(self) -> None:
        for fd, _ in self.fds.values():
            os.close(fd)
        self.fds.clear()


# ---------------------------------------------------------------- exports

@dataclass(frozen=True)
class Export:
    server: str  # the directory on this host
    client: str  # the path clients see it as
    export_id: int | None = None  # nfs-ganesha's Export_Id


def configured_exports(entries: Iterable[str]) -> list[Export]:
    """``client=server`` (e.g. ``/export=/srv/nfs/export``) or a path that clients
    see as it is on the server (knfsd's NFSv3 mounts)."""
    out = []
    for e in entries:
        client, _, server = e.partition("=")
        client = client.rstrip("/") or "/"
        out.append(Export(_real(server or client), client))
    return out


def _real(p: str) -> str:
    return os.path.realpath(p) if p.startswith("/") else p


_TOKEN = re.compile(r'#[^\n]*|"((?:[^"\\]|\\.)*)"|\'([^\']*)\'|([{};=,])|([^\s{};=,"\'#]+)')


def parse_ganesha_conf(text: str, include: Callable[[str], str] | None = None,
                       _depth: int = 0) -> list[tuple[str, dict, list]]:
    """nfs-ganesha's config as blocks: (name lowercased, {param lowercased: [values]},
    sub-blocks). ``%include "file"`` reads through ``include``; includes and blocks
    nest 8 deep at most (a file including itself ends there)."""
    toks: list[tuple[str, str]] = []  # (kind, text): kind "s"tring, "p"unct, "w"ord
    for m in _TOKEN.finditer(text):
        if m.group(0).startswith("#"):
            continue
        if m.group(3):
            toks.append(("p", m.group(3)))
        elif m.group(4) is not None:
            toks.append(("w", m.group(4)))
        else:
            toks.append(("s", m.group(1) if m.group(1) is not None else m.group(2)))
    pos = 0

    def block_items(depth: int) -> tuple[dict, list]:
        nonlocal pos
        params: dict[str, list[str]] = {}
        blocks: list[tuple[str, dict, list]] = []
        while pos < len(toks):
            kind, t = toks[pos]
            if (kind, t) == ("p", "}"):
                pos += 1
                return params, blocks
            pos += 1
            if kind == "w" and t.lower() == "%include" and pos < len(toks):
                if include is not None and _depth < 8:
                    try:
                        blocks += parse_ganesha_conf(include(toks[pos][1]), include, _depth + 1)
                    except OSError:
                        pass
                pos += 1
                continue
            nxt = toks[pos] if pos < len(toks) else ("", "")
            if nxt == ("p", "{") and depth < 8:
                pos += 1
                p, b = block_items(depth + 1)
                blocks.append((t.lower(), p, b))
            elif nxt == ("p", "="):
                pos += 1
                values = []
                while pos < len(toks) and toks[pos] not in (("p", ";"), ("p", "}")):
                    if toks[pos][0] != "p":
                        values.append(toks[pos][1])
                    pos += 1
                if pos < len(toks) and toks[pos] == ("p", ";"):
                    pos += 1
                params[t.lower()] = values
        return params, blocks

    return block_items(0)[1]


def _bool(values: list[str], default: bool) -> bool:
    return values[0].lower() in ("true", "yes", "on", "1") if values else default


def _serves_v4(values: list[str] | None) -> bool:
    return values is None or any("4" in v for v in values)  # nfs-ganesha serves 3 and 4 unless told


def ganesha_exports(text: str, include: Callable[[str], str] | None = None) -> list[Export]:
    """The EXPORTs of an nfs-ganesha config: Path on this host, seen by clients
    at Pseudo (NFSv4, and NFSv3 with Mount_Path_Pseudo), else at Path."""
    blocks = parse_ganesha_conf(text, include)
    core = next((p for n, p, _ in blocks if n == "nfs_core_param"), {})
    defaults = next((p for n, p, _ in blocks if n == "export_defaults"), {})
    mount_pseudo = _bool(core.get("mount_path_pseudo", []), False)
    out = []
    for name, p, _ in blocks:
        if name != "export" or not p.get("path"):
            continue
        path, pseudo = p["path"][0], (p.get("pseudo") or [""])[0]
        protocols = p.get("protocols", defaults.get("protocols", core.get("protocols")))
        client = pseudo if pseudo and (mount_pseudo or _serves_v4(protocols)) else path
        try:
            eid = int(p.get("export_id", [""])[0])
        except ValueError:
            eid = None
        out.append(Export(_real(path), client.rstrip("/") or "/", eid))
    return out


def running_ganesha_exports(proc: str = "/proc") -> list[Export]:
    """The exports of every nfs-ganesha running on this host, from the config
    file each was started with (``-f``, else /etc/ganesha/ganesha.conf)."""
    out: list[Export] = []
    for d in Path(proc).iterdir():
        if not d.name.isdigit():
            continue
        try:
            if (d / "comm").read_text().strip() != "ganesha.nfsd":
                continue
            argv = [a.decode(errors="surrogateescape") for a in (d / "cmdline").read_bytes().split(b"\0")]
            cwd = os.readlink(d / "cwd")
        except OSError:
            continue
        conf = "/etc/ganesha/ganesha.conf"
        for i, a in enumerate(argv):
            if a == "-f" and i + 1 < len(argv):
                conf = argv[i + 1]
            elif a.startswith("-f") and len(a) > 2:
                conf = a[2:]
        conf = os.path.join(cwd, conf)

        def include(name: str, base: str = os.path.dirname(conf)) -> str:
            return Path(os.path.join(base, name)).read_text()

        try:
            out += ganesha_exports(Path(conf).read_text(), include)
        except OSError:
            continue
    return out


class Exports:
    """Server paths -> the paths clients see: configured ones, plus the running
    nfs-ganesha servers' exports (reread when a path falls under none)."""

    REDISCOVER = 30.0

    def __init__(self, entries: Iterable[str] = (), *, discover: Callable[[], list[Export]] | None = running_ganesha_exports,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.configured = configured_exports(entries)
        self.discover, self.clock = discover, clock
        self.found: list[Export] = []
        self._found_at = -1e18

    def all(self) -> list[Export]:
        return self.configured + self.found

    def _refresh(self) -> None:
        if self.discover is not None and self.clock() - self._found_at >= self.REDISCOVER:
            try:
                self.found = self.discover()
            except OSError:
                self.found = []
            self._found_at = self.clock()

    def client_path(self, real: str, export_id: int | None = None) -> str | None:
        """How clients see ``real``; None when exports are known and it is under none.
        With no export known at all, paths are taken as clients see them (knfsd)."""
        best = self._best(real, export_id)
        if best is None:
            self._refresh()
            best = self._best(real, export_id)
        if best is None:
            return None if self.all() else real
        rest = real[len(best.server):] if best.server != "/" else real
        return (best.client.rstrip("/") + rest) or "/"

    def _best(self, real: str, export_id: int | None) -> Export | None:
        under = [e for e in self.all() if e.server == "/" or real == e.server or real.startswith(e.server + "/")]
        return max(under, key=lambda e: (export_id is not None and e.export_id == export_id, len(e.server)),
                   default=None)

    def roots(self) -> list[str]:
        return [e.server for e in self.all()]


# ---------------------------------------------------------------- the opener

class HandleOpener:
    """Wire handle bytes -> the path clients see, by open_by_handle_at; None when
    the handle is not one this host's server made, or its file is gone (ESTALE)."""

    def __init__(self, exports: Iterable[str] = (), *, proc: str = "/proc",
                 discover: Callable[[], list[Export]] | None = running_ganesha_exports,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.exports = Exports(exports, discover=discover, clock=clock)
        self.fs = Filesystems(proc, clock=clock, roots=self.exports.roots)

    def __call__(self, fh: bytes) -> str | None:
        k = kernel_handle(fh)
        if k is None:
            return None
        if k.server == "knfsd" and k.handle_type == FILEID_ROOT:
            real = self.fs.root_path(k)
        else:
            mount_fd = self.fs.fd(k)
            real = self.real_path(mount_fd, k) if mount_fd is not None else None
        return self.exports.client_path(real, k.export_id) if real else None

    @staticmethod
    def real_path(mount_fd: int, k: KernelHandle) -> str | None:
        try:
            fd = open_by_handle_at(mount_fd, k.handle_type, k.f_handle)
        except OSError:
            return None  # ESTALE: deleted; EINVAL/EBADF...: not this filesystem's handle
        try:
            path = os.readlink(f"/proc/self/fd/{fd}")
            st = os.fstat(fd)
        except OSError:
            return None
        finally:
            os.close(fd)
        if not path.startswith("/") or path.endswith(" (deleted)"):
            return None
        try:
            again = os.stat(path, follow_symlinks=False)
        except OSError:
            return None
        # A file whose dentry the kernel had to rebuild from the handle alone is
        # "disconnected": its fd path is not a real path, and must not be shown.
        return path if (again.st_dev, again.st_ino) == (st.st_dev, st.st_ino) else None

    def close(self) -> None:
        self.fs.close()


class CachedOpener:
    """Handle hash -> path with bounded cost: answers are kept ``ttl`` seconds,
    failures retried after ``retry`` seconds doubling up to ``retry_max``, and at
    most ``rate`` handles are opened per second (past that, a handle keeps its
    last answer, or none, until the next second)."""

    def __init__(self, fetch: Callable[[int], bytes | None], resolve: Callable[[bytes], str | None], *,
                 rate: float = 200.0, ttl: float = 300.0, retry: float = 5.0, retry_max: float = 300.0,
                 max_entries: int = 65536, clock: Callable[[], float] = time.monotonic) -> None:
        self.fetch, self.resolve, self.clock = fetch, resolve, clock
        self.rate, self.ttl, self.retry, self.retry_max, self.max_entries = rate, ttl, retry, retry_max, max_entries
        self.cache: OrderedDict[int, tuple[str | None, float, int]] = OrderedDict()  # h -> (path, until, failures)
        self.tokens, self._t = rate, clock()
        self.opened = self.failed = self.deferred = 0

    def _take(self, now: float) -> bool:
        self.tokens = min(self.rate, self.tokens + (now - self._t) * self.rate)
        self._t = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True

    def __call__(self, h: int) -> str | None:
        now = self.clock()
        old = self.cache.get(h)
        if old is not None and now < old[1]:
            return old[0]
        if not self._take(now):
            self.deferred += 1
            return old[0] if old else None
        fh = self.fetch(h)
        try:
            path = self.resolve(fh) if fh else None
        except Exception:  # naming is best effort: a failure here must not cost the counts
            log.exception("naming file handle %016x", h)
            path = None
        if path is None:
            fails = old[2] + 1 if old is not None and old[0] is None else 0
            self.failed += 1
            self.cache[h] = (None, now + min(self.retry_max, self.retry * 2 ** fails), fails)
        else:
            self.opened += 1
            self.cache[h] = (path, now + self.ttl, 0)
        self.cache.move_to_end(h)
        while len(self.cache) > self.max_entries:
            self.cache.popitem(last=False)
        return path
