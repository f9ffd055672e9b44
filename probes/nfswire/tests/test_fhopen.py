"""Naming files by open_by_handle_at: the handle decoders (nfs-ganesha VFS,
knfsd) table-driven, the config and /proc parsers, the cache's bounds on a
clock, and the opener on real files of this host's filesystems."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from loupe_probes.nfswire.fhopen import (CachedOpener, Export, Exports, HandleOpener, KernelHandle, fs_key,
                                         ganesha_exports, ganesha_handle, ganesha_wire, kernel_handle, knfsd_handle,
                                         knfsd_root_ino, name_to_handle_at, parse_expkeys, parse_mountinfo,
                                         why_off)

# Handles nfs-ganesha 4.3 (Debian 12, VFS FSAL, an ext4 export) put on the wire in
# the lab: NFSv3 handles are padded to 4 bytes, NFSv4 ones are not.
FSID = bytes.fromhex("0bbef898cf795d93")  # statfs f_fsid of that ext4
GANESHA_REAL = [
    ("4300000112440bbef898cf795d930112279900332d731f00", "12279900332d731f"),  # v3, a directory
    ("4300000112440bbef898cf795d930121279900d82fe11400", "21279900d82fe114"),  # v3, a file
    ("4300000112440bbef898cf795d9301912699006218fe7e", "912699006218fe7e"),    # v4, the export root
    ("4300000112440bbef898cf795d930131279900cedba991", "31279900cedba991"),    # v4, a file
]


@pytest.mark.parametrize("wire, f_handle", GANESHA_REAL)
def test_ganesha_handles_seen_on_the_wire(wire, f_handle):
    k = ganesha_handle(bytes.fromhex(wire))
    assert k == KernelHandle("ganesha", 4, FSID, 1, bytes.fromhex(f_handle), export_id=1)
    assert kernel_handle(bytes.fromhex(wire)) == k
    assert fs_key(k) == ("statfs", FSID)


def _ganesha(head: int, fsid: bytes, htype: bytes, body: bytes, *, flags: int = 0, export: int = 7,
             fs_len: int | None = None) -> bytes:
    opaque = bytes([head]) + fsid + htype + body
    return bytes([0x43, flags]) + struct.pack(">H", export) + bytes([len(opaque) if fs_len is None else fs_len]) + opaque


BODY = bytes(range(1, 13))  # a 12-byte kernel handle (xfs, btrfs: FILEID_INO32_GEN_PARENT...)


@pytest.mark.parametrize("fh, kind", [
    (_ganesha(0x44, FSID, b"\x81", BODY), (4, FSID, 0x81, BODY, 7, False)),  # type 0x81 (FILEID_INO64_GEN) in a byte
    (_ganesha(0x85, struct.pack("<II", 8, 3), struct.pack("<h", 0x4D), BODY),  # 16-bit type, FSID_DEVICE 8:3
     (5, struct.pack("<II", 8, 3), 0x4D, BODY, 7, False)),
    (_ganesha(0xC0, b"", struct.pack("<i", -2), BODY), (0, b"", -2, BODY, 7, False)),  # no fsid, 32-bit signed type
    (_ganesha(0x85, struct.pack(">II", 8, 3), struct.pack(">h", 0x4D), BODY, flags=0x40),  # a big-endian FSAL
     (5, struct.pack(">II", 8, 3), 0x4D, BODY, 7, True)),
    (_ganesha(0x43, bytes(16), b"\x01", BODY, export=0x1234), (3, bytes(16), 1, BODY, 0x1234, False)),
    (_ganesha(0x44, FSID, b"\x01", BODY) + b"\0\0", (4, FSID, 1, BODY, 7, False)),  # padding past fs_len ignored
])
def test_ganesha_handle_layouts(fh, kind):
    k = ganesha_handle(fh)
    assert (k.fsid_type, k.fsid, k.handle_type, k.f_handle, k.export_id, k.big_endian) == kind
    assert ganesha_handle(ganesha_wire(k)) == k  # the encoder the tests and the bench use is its inverse


@pytest.mark.parametrize("fh", [
    b"", b"\x43\x00\x00\x01",                                       # shorter than the header
    bytes.fromhex(GANESHA_REAL[1][0])[:20],                          # cut inside the FSAL part (fs_len says 18)
    b"\x41" + bytes.fromhex(GANESHA_REAL[1][0])[1:],                 # an older ganesha handle version
    _ganesha(0x44, FSID, b"\x01", BODY, flags=0x01),                 # a pNFS DS handle
    _ganesha(0x44, FSID, b"\x01", BODY, export=0),                   # the NFSv4 pseudo filesystem
    _ganesha(0x64, FSID, b"", b""),                                  # a DUMMY handle
    _ganesha(0x04, FSID, b"\x01", BODY),                             # no handle type size
    _ganesha(0x46, FSID, b"\x01", BODY),                             # fsid type 6: unknown
    _ganesha(0x44, FSID, b"\x01", b"\x01\x02\x03"),                  # kernel handle under 4 bytes
    _ganesha(0x44, FSID, b"\x01", BODY, fs_len=0),
])
def test_bad_ganesha_handles(fh):
    assert ganesha_handle(fh) is None


def _knfsd(fsid_type: int, fsid: bytes, fileid_type: int, fileid: bytes) -> bytes:
    return bytes([1, 0, fsid_type, fileid_type]) + fsid + fileid


INO_GEN = struct.pack("<II", 0x1234, 0xBEEF)
UUID = bytes(range(16))


@pytest.mark.parametrize("fh, kind, key", [
    # fsid=1 in /etc/exports (FSID_NUM), ext4-style FILEID_INO32_GEN: only knfsd's table knows the export
    (_knfsd(1, struct.pack("<I", 1), 1, INO_GEN), (1, struct.pack("<I", 1), 1, INO_GEN), None),
    # FSID_ENCODE_DEV of 8:1 (new_encode_dev = 0x801) + root inode 2, FILEID_INO32_GEN_PARENT (subtree_check)
    (_knfsd(3, struct.pack("<II", 0x801, 2), 2, INO_GEN + INO_GEN),
     (3, struct.pack("<II", 0x801, 2), 2, INO_GEN + INO_GEN), ("dev", 8, 1)),
    # a large device: 259:65539 encodes as 0x10010303
    (_knfsd(3, struct.pack("<II", 0x10010303, 2), 1, INO_GEN), None, ("dev", 259, 65539)),
    (_knfsd(0, struct.pack(">I", (8 << 16) | 17) + struct.pack("<I", 2), 1, INO_GEN), None, ("dev", 8, 17)),
    (_knfsd(2, struct.pack(">II", 253, 4) + struct.pack("<I", 128), 1, INO_GEN), None, ("dev", 253, 4)),
    (_knfsd(7, struct.pack("<Q", 2) + UUID, 0x81, struct.pack("<QI", 1 << 40, 9)),  # UUID16_INUM, INO64_GEN
     (7, struct.pack("<Q", 2) + UUID, 0x81, struct.pack("<QI", 1 << 40, 9)), None),
    (_knfsd(6, UUID, 0, b""), (6, UUID, 0, b""), None),  # FILEID_ROOT: the export root itself
])
def test_knfsd_handle_layouts(fh, kind, key):
    k = knfsd_handle(fh)
    assert k is not None and k.server == "knfsd" and kernel_handle(fh) == k
    if kind:
        assert (k.fsid_type, k.fsid, k.handle_type, k.f_handle) == kind
    assert fs_key(k) == key


@pytest.mark.parametrize("fh, ino", [
    (_knfsd(3, struct.pack("<II", 0x801, 77), 0, b""), 77),
    (_knfsd(0, struct.pack(">I", 0x80011) + struct.pack("<I", 5), 0, b""), 5),
    (_knfsd(2, struct.pack(">II", 8, 1) + struct.pack("<I", 9), 0, b""), 9),
    (_knfsd(1, struct.pack("<I", 1), 0, b""), None),
])
def test_knfsd_root_inode(fh, ino):
    assert knfsd_root_ino(knfsd_handle(fh)) == ino


@pytest.mark.parametrize("fh", [
    b"", b"\x01\x00\x01",
    _knfsd(1, b"\x01\x00", 1, b""),                    # cut inside the fsid
    _knfsd(8, bytes(8), 1, INO_GEN),                   # fsid type 8: unknown
    bytes([2, 0, 1, 1]) + bytes(4) + INO_GEN,          # version 2
    bytes([1, 1, 1, 1]) + bytes(4) + INO_GEN,          # an auth type (long deprecated)
    _knfsd(1, bytes(4), 1, b""),                       # a file handle without its fileid
    _knfsd(1, bytes(4), 1, INO_GEN[:6]),               # fileid not whole 4-byte words
    _knfsd(1, bytes(4), 0, INO_GEN),                   # FILEID_ROOT with a fileid after it
    _knfsd(1, bytes(4), 0xFF, INO_GEN),                # FILEID_INVALID
    _knfsd(1, bytes(4), 1, bytes(132)),                # longer than any kernel handle
])
def test_bad_knfsd_handles(fh):
    assert knfsd_handle(fh) is None


def test_ganesha_and_knfsd_handles_do_not_mix():
    assert knfsd_handle(bytes.fromhex(GANESHA_REAL[0][0])) is None
    assert ganesha_handle(_knfsd(1, bytes(4), 1, INO_GEN)) is None


# ---------------------------------------------------------------- /proc and config parsers

MOUNTINFO = """\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
25 22 0:21 / /proc rw - proc proc rw
40 22 254:0 /srv/data /mnt/bind\\040here rw - ext4 /dev/vda rw
41 22 0:45 / /mnt/nfs rw - nfs4 server:/x rw
bad line
"""


def test_mountinfo():
    ms = parse_mountinfo(MOUNTINFO)
    assert [(m.path, m.major, m.minor, m.root, m.fstype) for m in ms] == [
        ("/", 254, 0, "/", "ext4"), ("/proc", 0, 21, "/", "proc"),
        ("/mnt/bind here", 254, 0, "/srv/data", "ext4"), ("/mnt/nfs", 0, 45, "/", "nfs4")]


def test_knfsd_export_keys():
    text = ("#domain fsidtype fsid [path]\n"
            "* 1 0x00000001 /srv/export\n"
            "* 6 0x0302010007060504 /srv/with\\040space\n"   # two words, each printed in host order
            "* 7 0x000000020000000000000000000000000000000000000000\n")  # negative entry: no path
    assert parse_expkeys(text) == {(1, struct.pack("<I", 1)): "/srv/export",
                                   (6, struct.pack("<II", 0x03020100, 0x07060504)): "/srv/with space"}


def test_exports_of_the_labs_ganesha_config():
    from loupe.lab.ganesha import Ganesha

    g = Ganesha.__new__(Ganesha)  # its config text only: no server is started
    g.dir, g.bind_ip, g.port, g.mount_port, g.v3 = Path("/tmp/lab"), "10.0.0.1", 2049, 4000, True
    g.exports = ["/export", "/data/deep"]
    assert ganesha_exports(g.config()) == [Export("/tmp/lab/exports/export", "/export", 1),
                                           Export("/tmp/lab/exports/data_deep", "/data/deep", 2)]


CONF = """
# a comment { with braces }
NFS_CORE_PARAM { Mount_Path_Pseudo = false; Protocols = 3, 4; }
EXPORT_DEFAULTS { Protocols = 4 }
EXPORT {
    Export_Id = 10;  Path = "/srv/a";   Pseudo = /a;   # served over v4 (the defaults): its pseudo path
    FSAL { Name = VFS; }
    CLIENT { Clients = 10.0.0.0/8; Access_Type = RW; }
}
EXPORT { Export_Id = 11; Path = '/srv/b'; Pseudo = "/b"; Protocols = 3; FSAL { Name = VFS; } }
EXPORT { Export_Id = 12; Path = /srv/c; Protocols = NFS3, NFS4; }
EXPORT { Export_Id = 13; Pseudo = /nopath; }
%include "more.conf"
"""


def test_ganesha_config_grammar():
    included = []

    def include(name):
        included.append(name)
        return 'EXPORT { Export_Id = 14; Path = "/srv/d"; Pseudo = "/d"; }'

    assert ganesha_exports(CONF, include) == [
        Export("/srv/a", "/a", 10),
        Export("/srv/b", "/srv/b", 11),  # NFSv3 only and Mount_Path_Pseudo false: mounted by its Path
        Export("/srv/c", "/srv/c", 12),  # no pseudo path
        Export("/srv/d", "/d", 14)]
    assert included == ["more.conf"]
    mounted_by_pseudo = CONF.replace("Mount_Path_Pseudo = false", "Mount_Path_Pseudo = true")
    assert ganesha_exports(mounted_by_pseudo)[1] == Export("/srv/b", "/b", 11)


def test_a_config_including_itself_ends():
    conf = 'EXPORT { Export_Id = 1; Path = /s; Pseudo = /p; } %include "self.conf"'
    assert set(ganesha_exports(conf, lambda name: conf)) == {Export("/s", "/p", 1)}
    assert ganesha_exports("EXPORT {" * 3000 + "Path = /s;") == []  # nesting past 8 blocks is not followed


@pytest.mark.parametrize("real, export_id, client", [
    ("/srv/a/x/y.bin", None, "/a/x/y.bin"),
    ("/srv/a", None, "/a"),
    ("/srv/a/deep/f", None, "/deep-view/f"),    # the longest server path wins
    ("/srv/ab/f", None, None),                   # a prefix, not a parent directory: under no export
    ("/srv/twice/f", 21, "/t1/f"),               # the same directory exported twice: the handle's export id picks
    ("/srv/twice/f", 22, "/t2/f"),
    ("/elsewhere/f", None, None),
    ("/srv/k/f", None, "/srv/k/f"),              # knfsd-style: clients see the server's path
])
def test_server_paths_as_clients_see_them(real, export_id, client):
    found = [Export("/srv/twice", "/t1", 21), Export("/srv/twice", "/t2", 22)]
    ex = Exports(["/a=/srv/a", "/deep-view=/srv/a/deep", "/srv/k"], discover=lambda: found)
    assert ex.client_path(real, export_id) == client


def test_with_no_export_known_paths_are_taken_as_they_are():
    assert Exports([], discover=lambda: []).client_path("/srv/x/f") == "/srv/x/f"


def test_ganesha_exports_are_rediscovered_at_most_every_30_seconds():
    now, calls = [0.0], []

    def discover():
        calls.append(now[0])
        return [Export("/srv/new", "/new")] if now[0] >= 40 else []

    ex = Exports(["/old=/srv/old"], discover=discover, clock=lambda: now[0])
    assert ex.client_path("/srv/new/f") is None and calls == [0.0]
    now[0] = 10
    assert ex.client_path("/srv/new/f") is None and calls == [0.0]  # too soon to look again
    now[0] = 40
    assert ex.client_path("/srv/new/f") == "/new/f" and calls == [0.0, 40]
    assert ex.client_path("/srv/old/g") == "/old/g" and calls == [0.0, 40]  # a hit needs no discovery


@pytest.mark.parametrize("capeff, uid_map, why", [
    ("000001ffffffffff", "0 0 4294967295", None),
    ("0000000000000004", "         0          0 4294967295\n", None),  # CAP_DAC_READ_SEARCH alone is enough
    ("000001fffffffffb", "0 0 4294967295", "needs CAP_DAC_READ_SEARCH"),
    ("000001ffffffffff", "0 100000 65536", "needs the initial user namespace"),
])
def test_why_off(capeff, uid_map, why):
    got = why_off(f"Name:\tx\nCapEff:\t{capeff}\n", uid_map)
    assert (got is None) if why is None else (why in got)


# ---------------------------------------------------------------- the cache's bounds

class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _cached(paths: dict[int, str | None], clock: Clock, **kw) -> tuple[CachedOpener, list[int]]:
    opened: list[int] = []

    def resolve(fh: bytes) -> str | None:
        h = int.from_bytes(fh, "little")
        opened.append(h)
        return paths.get(h)

    return CachedOpener(lambda h: h.to_bytes(8, "little") if h < 1000 else None, resolve, clock=clock, **kw), opened


def test_answers_are_cached_then_checked_again():
    clock = Clock()
    c, opened = _cached({1: "/a"}, clock, ttl=300)
    assert [c(1), c(1)] == ["/a", "/a"] and opened == [1]
    clock.t += 299
    assert c(1) == "/a" and opened == [1]
    clock.t += 2
    assert c(1) == "/a" and opened == [1, 1]  # past its ttl: opened again (a rename shows)


def test_failures_are_retried_with_backoff():
    clock = Clock()
    paths: dict[int, str | None] = {2: None}
    c, opened = _cached(paths, clock, retry=5, retry_max=20)
    tries = []
    for _ in range(60):
        n = len(opened)
        c(2)
        if len(opened) > n:
            tries.append(clock.t - 1000)
        clock.t += 1
    assert tries == [0, 5, 15, 35, 55]  # 5, 10, 20, then capped at 20 s
    paths[2] = "/back"
    clock.t += 20
    assert c(2) == "/back"
    assert c(3000) is None and opened.count(3000) == 0  # the kernel no longer has the handle's bytes: nothing to open


def test_opens_are_bounded_per_second():
    clock = Clock()
    c, opened = _cached({h: f"/f{h}" for h in range(900)}, clock, rate=50)
    first = [c(h) for h in range(120)]  # a flood of unknown handles in one second
    assert len(opened) == 50 and first[:50] == [f"/f{h}" for h in range(50)] and first[50:] == [None] * 70
    assert c.deferred == 70
    clock.t += 1
    assert [c(h) for h in range(120)][:100] == [f"/f{h}" for h in range(100)] and len(opened) == 100
    clock.t += 0.5
    [c(h) for h in range(120, 200)]
    assert len(opened) == 125  # half a second refills half the budget


def test_a_failing_resolver_costs_the_name_only(caplog):
    clock = Clock()

    def broken(fh: bytes) -> str:
        raise RuntimeError("a bug")

    c = CachedOpener(lambda h: b"x", broken, clock=clock)
    assert c(5) is None and c.failed == 1 and "naming file handle 0000000000000005" in caplog.text


def test_the_cache_is_bounded():
    clock = Clock()
    c, _ = _cached({}, clock, max_entries=10, rate=1000)
    for h in range(100):
        c(h)
    assert list(c.cache) == list(range(90, 100))


# ---------------------------------------------------------------- real files

def _require_caps():
    why = why_off()
    if why:
        pytest.skip(f"open_by_handle_at here {why}")


def _ganesha_wire(path: Path, export_id: int) -> bytes:
    """The handle nfs-ganesha's VFS FSAL would give ``path`` (statfs fsid)."""
    htype, body = name_to_handle_at(path)
    return ganesha_wire(KernelHandle("ganesha", 4, struct.pack("<Q", os.statvfs(path).f_fsid), htype, body, export_id))


def _knfsd_wire(path: Path, root: Path) -> bytes:
    """The handle knfsd would give ``path`` under export ``root`` (fsid type 3: device + root inode)."""
    st = os.stat(root)
    dev = (os.minor(st.st_dev) & 0xFF) | (os.major(st.st_dev) << 8) | ((os.minor(st.st_dev) & ~0xFF) << 12)
    fsid = struct.pack("<II", dev, st.st_ino & 0xFFFFFFFF)
    if path == root:
        return _knfsd(3, fsid, 0, b"")
    htype, body = name_to_handle_at(path)
    return _knfsd(3, fsid, htype, body)


@pytest.fixture
def tree(tmp_path):
    _require_caps()
    root = tmp_path / "srv" / "export"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a file.bin").write_bytes(b"a")
    (root / "top.bin").write_bytes(b"b")
    try:
        name_to_handle_at(root / "top.bin")
    except OSError as e:
        pytest.skip(f"{tmp_path}'s filesystem makes no file handles: {e}")
    return root


def test_ganesha_handles_of_real_files_name_them_as_clients_see_them(tree):
    op = HandleOpener(discover=lambda: [Export(str(tree), "/export", 5), Export(str(tree), "/other", 6)])
    try:
        assert op(_ganesha_wire(tree / "sub" / "a file.bin", 5)) == "/export/sub/a file.bin"
        assert op(_ganesha_wire(tree / "sub", 5)) == "/export/sub"
        assert op(_ganesha_wire(tree / "top.bin", 6)) == "/other/top.bin"
        gone = _ganesha_wire(tree / "top.bin", 5)
        (tree / "top.bin").unlink()
        assert op(gone) is None  # ESTALE: the file is deleted
        assert len(op.fs.fds) == 1  # one mount fd for the filesystem, kept
    finally:
        op.close()
    assert not op.fs.fds


def test_knfsd_handles_of_real_files(tree):
    op = HandleOpener([str(tree)], discover=None)
    try:
        assert op(_knfsd_wire(tree / "sub" / "a file.bin", tree)) == f"{tree}/sub/a file.bin"
        assert op(_knfsd_wire(tree, tree)) == str(tree)  # FILEID_ROOT: found among the exports by inode
    finally:
        op.close()


def test_a_handle_of_another_filesystem_is_not_opened(tree):
    wire = bytearray(_ganesha_wire(tree / "top.bin", 1))
    wire[6:14] = bytes(8)  # an fsid no filesystem here has
    op = HandleOpener(discover=None)
    try:
        assert op(bytes(wire)) is None and not op.fs.fds
    finally:
        op.close()


def test_mount_fds_are_closed_when_idle(tree):
    clock = Clock()
    op = HandleOpener(discover=None, clock=clock)
    try:
        assert op(_ganesha_wire(tree / "top.bin", 1)) == str(tree / "top.bin")
        (fd, _), = op.fs.fds.values()
        clock.t += 31
        op.fs.sweep()
        assert not op.fs.fds
        with pytest.raises(OSError):
            os.fstat(fd)
    finally:
        op.close()


def test_without_the_capability_the_opener_is_off_and_the_status_says_why():
    """A real process without CAP_DAC_READ_SEARCH (setpriv drops it), building the probe."""
    _require_caps()
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    code = ("from loupe_probes.nfswire import NfsWireProbe\n"
            "p = NfsWireProbe('nas', ifaces=['lo'])\n"
            "print(p.resolver.opener is None, p.by_handle is None, p.notes)\n")
    r = subprocess.run(["setpriv", "--inh-caps=-dac_read_search", "--bounding-set=-dac_read_search",
                        sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.startswith("True True ['files no binding names show as fh:<hash>: open_by_handle_at "
                               "needs CAP_DAC_READ_SEARCH"), r.stdout + r.stderr
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "False False []"


def test_a_file_the_kernel_cannot_name_is_not_named(tmp_path):
    """A freshly mounted filesystem has no cached directory entries: opened by
    handle, a directory is reconnected to its path by the kernel, a file is not
    (its fd reads "/"), until something looks it up by name."""
    _require_caps()
    if shutil.which("mkfs.ext4") is None:
        pytest.skip("mkfs.ext4 (e2fsprogs) is not installed")
    img, mnt = tmp_path / "fs.img", tmp_path / "mnt"
    mnt.mkdir()
    with open(img, "wb") as f:
        f.truncate(16 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(img)], check=True)
    mount = ["mount", "-o", "loop", str(img), str(mnt)]
    if subprocess.run(mount, capture_output=True).returncode:
        pytest.skip("cannot loop-mount a filesystem image here")
    try:
        (mnt / "d").mkdir()
        (mnt / "d" / "f.bin").write_bytes(b"x")
        dir_wire, file_wire = (_ganesha_wire(mnt / p, 1) for p in ("d", "d/f.bin"))
        subprocess.run(["umount", str(mnt)], check=True)
        subprocess.run(mount, check=True)
        op = HandleOpener(discover=None)
        try:
            assert op(file_wire) is None
            assert op(dir_wire) == str(mnt / "d")
            os.stat(mnt / "d" / "f.bin")  # a lookup by name, as the server does for a client's LOOKUP
            assert op(file_wire) == str(mnt / "d" / "f.bin")
        finally:
            op.close()
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


@pytest.mark.parametrize("rate", ["abc", "0", "-5", "nan"])
def test_a_bad_open_rate_is_refused_by_name(rate, monkeypatch):
    from loupe_probes.nfswire import NfsWireProbe

    monkeypatch.setenv("LOUPE_NFSWIRE_OPEN_RATE", rate)
    with pytest.raises(ValueError, match="LOUPE_NFSWIRE_OPEN_RATE must be a number"):
        NfsWireProbe("nas", ifaces=["lo"])


@pytest.mark.parametrize("setting, on", [("0", False), ("off", False), ("1", True), ("", True)])
def test_the_opener_can_be_turned_off(setting, on, monkeypatch):
    from loupe_probes.nfswire import NfsWireProbe

    _require_caps()
    monkeypatch.setenv("LOUPE_NFSWIRE_OPEN_BY_HANDLE", setting)
    p = NfsWireProbe("nas", ifaces=["lo"])
    assert (p.by_handle is not None, p.resolver.opener is not None) == (on, on)
    assert p.notes == ([] if on else ["files no binding names show as fh:<hash>: open_by_handle_at turned off "
                                      "(LOUPE_NFSWIRE_OPEN_BY_HANDLE=0)"])
