"""The knfsd probe's decoders, table-driven, and its state on this host.

The probe itself runs against a real knfsd in the QEMU guest:
tests/kernel/test_nfsd_probe.py (``make test-kernel``)."""

from __future__ import annotations

import ctypes
import struct
from pathlib import Path

import pytest
from loupe.catalog import FILE_OTHER
from loupe_probes.bpf import libbpf
from loupe_probes.nfsd.probe import (
    ID_ROOT,
    NO_NFSD,
    STATS,
    TRACEPOINTS,
    Key,
    Name,
    NfsdProbe,
    Val,
    btf_strings,
    decode_key,
    decode_name,
    decode_stats,
    file_label,
    missing_tracepoints,
)
from loupe_probes.registry import PROBES, Options, build

HERE = Path(__file__).resolve().parent
OBJ_DIR = HERE.parent


def key(addr: bytes, family: int, proto: int, op: int, file: int = 0, share: int = 0) -> bytes:
    k = Key(file=file, share=share, op=op, proto=proto, family=family)
    k.addr[:] = list(addr.ljust(16, b"\0"))
    return bytes(k)


def name(parent: int, text: bytes, length: int | None = None) -> bytes:
    n = Name(parent=parent, len=len(text) if length is None else length)
    n.name[:len(text)] = list(text)
    return bytes(n)


def val(count: int, nbytes: int = 0, lat: int = 0, lat_b: int | None = None, size_b: int | None = None,
        off_b: int | None = None) -> bytes:
    v = Val(count=count, bytes=nbytes, lat_sum=lat)
    if lat_b is not None:
        v.lat[lat_b] = count
    if size_b is not None:
        v.size[size_b] = count
    if off_b is not None:
        v.off[off_b] = count
    return bytes(v)


def test_layouts_match_the_bpf_header():
    """nfsd.bpf.h's structs, by size: key 40, value 3 + 26 + 16 + 34 u64, name 16 + 256."""
    assert ctypes.sizeof(Key) == 40
    assert ctypes.sizeof(Val) == 8 * (3 + 26 + 16 + 34)
    assert ctypes.sizeof(Name) == 16 + 256
    text = (OBJ_DIR / "nfsd.bpf.h").read_text()
    assert "NFSD_NAME_MAX 256" in text and "NFSD_STATS_N 6" in text and len(STATS) == 6


@pytest.mark.parametrize("parent, raw, length, want", [
    (0x1234, b"data", None, (0x1234, "data")),
    (ID_ROOT, b"", 0, (ID_ROOT, "")),  # "/" itself
    (0xABCDEF, b"", 0, (0xABCDEF, "")),  # a mount's root: the path of its mount point
    (7, "caf\u00e9".encode(), None, (7, "caf\u00e9")),
    (7, b"bad\xff", None, (7, "bad\udcff")),  # not UTF-8: kept byte for byte
    (9, b"x" * 255, None, (9, "x" * 255)),  # NAME_MAX
    (9, b"abc", 400, (9, "abc")),  # a length past the buffer is clamped
])
def test_decode_name(parent, raw, length, want):
    assert decode_name(name(parent, raw, length)) == want


@pytest.mark.parametrize("addr, family, proto, op, want", [
    (bytes([10, 99, 0, 11]), 4, 1, 6, {"client": "10.99.0.11", "proto": "v3", "op": "read"}),
    (bytes([10, 99, 0, 11]), 4, 1, 7, {"client": "10.99.0.11", "proto": "v3", "op": "write"}),
    (bytes([10, 99, 0, 11]), 4, 1, 3, {"client": "10.99.0.11", "proto": "v3", "op": "lookup"}),
    (bytes([10, 99, 0, 12]), 4, 4, 25, {"client": "10.99.0.12", "proto": "v4.2", "op": "read"}),
    (bytes([10, 99, 0, 12]), 4, 4, 38, {"client": "10.99.0.12", "proto": "v4.2", "op": "write"}),
    (bytes([10, 99, 0, 12]), 4, 3, 53, {"client": "10.99.0.12", "proto": "v4.1", "op": "sequence"}),
    (bytes([10, 99, 0, 12]), 4, 2, 22, {"client": "10.99.0.12", "proto": "v4.0", "op": "putfh"}),
    (bytes([10, 99, 0, 12]), 4, 2, 0, {"client": "10.99.0.12", "proto": "v4.0", "op": "null"}),
    (bytes.fromhex("20010db8000000000000000000000001"), 6, 4, 9,
     {"client": "2001:db8::1", "proto": "v4.2", "op": "getattr"}),
    (bytes.fromhex("00000000000000000000ffff0a63000b"), 6, 1, 1,
     {"client": "10.99.0.11", "proto": "v3", "op": "getattr"}),
    (bytes(16), 0, 1, 0, {"client": "", "proto": "v3", "op": "null"}),  # no address family
])
def test_decode_key(addr, family, proto, op, want):
    got = decode_key(key(addr, family, proto, op, file=0x55, share=0x66))
    assert got == {**want, "file": 0x55, "share": 0x66}


def test_decode_stats():
    raw = struct.pack("<6Q", 10, 4, 0, 1, 0, 2)
    assert decode_stats(raw) == {"requests": 10, "compounds": 4, "ops_late": 0, "name_lost": 1,
                                 "too_deep": 0, "renamed": 2}


def btf_blob(names: list[str]) -> bytes:
    """A BTF file with only a string section: enough for btf_strings()."""
    strings = b"\0" + b"".join(n.encode() + b"\0" for n in names)
    hdr = struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, 0, 0, len(strings))
    return hdr + strings


def test_btf_strings(tmp_path):
    (tmp_path / "b").write_bytes(btf_blob(["btf_trace_nfsd_compound", "svc_fh"]))
    assert btf_strings(tmp_path / "b") == {"btf_trace_nfsd_compound", "svc_fh"}
    assert btf_strings(tmp_path / "missing") == set()
    (tmp_path / "short").write_bytes(b"\x9f\xeb")
    assert btf_strings(tmp_path / "short") == set()


ALL = [f"{s}:{e}" for s, e in TRACEPOINTS]


@pytest.mark.parametrize("present, missing, any_nfsd", [
    (ALL, [], True),
    ([], ALL, False),
    (["sunrpc:svc_stats_latency"], ALL[1:], False),  # sunrpc (the NFS client has it) but no nfsd
    ([t for t in ALL if t != "nfsd:nfsd_fh_verify"], ["nfsd:nfsd_fh_verify"], True),
])
def test_missing_tracepoints_from_tracefs(tmp_path, present, missing, any_nfsd):
    for t in present:
        s, e = t.split(":")
        (tmp_path / "events" / s / e).mkdir(parents=True)
    assert missing_tracepoints(tmp_path, tmp_path / "btf") == (missing, any_nfsd)


@pytest.mark.parametrize("files, missing, any_nfsd", [
    ({"vmlinux": []}, ALL, False),
    ({"vmlinux": [], "sunrpc": ["btf_trace_svc_stats_latency"],
      "nfsd": [f"btf_trace_{e}" for s, e in TRACEPOINTS if s == "nfsd"]}, [], True),
    ({"vmlinux": [f"btf_trace_{e}" for _, e in TRACEPOINTS]}, [], True),  # built in
    ({"vmlinux": [], "nfsd": ["btf_trace_nfsd_compound"]}, [t for t in ALL if t != "nfsd:nfsd_compound"], True),
])
def test_missing_tracepoints_from_btf(tmp_path, files, missing, any_nfsd):
    for f, names in files.items():
        (tmp_path / f).write_bytes(btf_blob(names))
    assert missing_tracepoints(None, tmp_path) == (missing, any_nfsd)


@pytest.mark.parametrize("present, reason", [
    ([], NO_NFSD),
    (["sunrpc:svc_stats_latency"], NO_NFSD),
    ([t for t in ALL if t != "nfsd:nfsd_read_io_done"],
     "this kernel's nfsd lacks the tracepoints nfsd:nfsd_read_io_done (Linux 6.1 has them)"),
    (ALL, "nfsd has no BTF (/sys/kernel/btf/nfsd); tp_btf needs CONFIG_DEBUG_INFO_BTF_MODULES=y"),
])
def test_requirements(tmp_path, present, reason):
    tf = tmp_path / "tracing"
    for t in present:
        s, e = t.split(":")
        (tf / "events" / s / e).mkdir(parents=True)
    (tmp_path / "btf").mkdir()
    (tmp_path / "btf" / "vmlinux").write_bytes(btf_blob([]))
    probe = NfsdProbe("nas1", tracefs=tf, btf_dir=tmp_path / "btf")
    assert probe.requirements() == reason
    (tmp_path / "btf" / "nfsd").write_bytes(btf_blob(["btf_trace_nfsd_compound"]))
    if present == ALL:
        assert probe.requirements() is None


# ---------------------------------------------------------------- decode: ids -> paths, rows

ROOT_FS, SRV, EXPORT_MP, EXPORT, C1, DATA1, C2, DATA2 = 0x10, 0x11, 0x12, 0x20, 0x21, 0x22, 0x23, 0x24
NAMES = [  # what the kernel's walk sends: / (ext4) > srv > export (mount point) | tmpfs root > c1 > data ...
    (ROOT_FS, ID_ROOT, b""), (SRV, ROOT_FS, b"srv"), (EXPORT_MP, SRV, b"export"),
    (EXPORT, EXPORT_MP, b""),  # the tmpfs mounted on /srv/export: a mount root, no name of its own
    (C1, EXPORT, b"c1"), (DATA1, C1, b"data"), (C2, EXPORT, b"c2"), (DATA2, C2, b"data"),
]
C1_ADDR, C2_ADDR = bytes([10, 99, 0, 11]), bytes([10, 99, 0, 12])


def drained(counts, names=NAMES, other=None, stats=(0,) * 6):
    return {"counts": counts,
            "names": [(h.to_bytes(8, "little"), name(p, n)) for h, p, n in names],
            "other": [(b"\0" * 4, other or bytes(ctypes.sizeof(Val)))],
            "stats": [(b"\0" * 4, struct.pack("<6Q", *stats))],
            "drops": [(b"\0" * 4, bytes(8))]}


@pytest.mark.parametrize("counts, want", [
    # NFSv3 READ of /srv/export/c1/data: 3 ops of 16 KiB at offsets in [32 KiB, 64 KiB)
    ([(key(C1_ADDR, 4, 1, 6, DATA1, EXPORT), val(3, 3 * 16384, 3000, lat_b=1, size_b=5, off_b=3))],
     [({"client": "10.99.0.11", "proto": "v3", "op": "read", "share": "/srv/export",
        "file": "/srv/export/c1/data"}, 3, 49152, {"latency": {"11": 3}, "size": {"14": 3}, "offset": {"15": 3}})]),
    # NFSv4.2 ops of one COMPOUND: SEQUENCE (no file), PUTFH, WRITE
    ([(key(C2_ADDR, 4, 4, 53), val(1, lat=900, lat_b=0)),
      (key(C2_ADDR, 4, 4, 22, DATA2, EXPORT), val(1, lat=900, lat_b=0)),
      (key(C2_ADDR, 4, 4, 38, DATA2, EXPORT), val(1, 65536, 900, lat_b=0, size_b=7, off_b=0))],
     [({"client": "10.99.0.12", "proto": "v4.2", "op": "putfh", "share": "/srv/export",
        "file": "/srv/export/c2/data"}, 1, 0, {"latency": {"10": 1}}),
      ({"client": "10.99.0.12", "proto": "v4.2", "op": "sequence", "share": "", "file": ""}, 1, 0,
       {"latency": {"10": 1}}),
      ({"client": "10.99.0.12", "proto": "v4.2", "op": "write", "share": "/srv/export",
        "file": "/srv/export/c2/data"}, 1, 65536, {"latency": {"10": 1}, "size": {"16": 1}, "offset": {"12": 1}})]),
    # the export root itself (GETATTR on the share): file == share
    ([(key(C1_ADDR, 4, 1, 1, EXPORT, EXPORT), val(2))],
     [({"client": "10.99.0.11", "proto": "v3", "op": "getattr", "share": "/srv/export", "file": "/srv/export"},
       2, 0, {})]),
    # a file never named (its walk was lost): its id, not a wrong path
    ([(key(C1_ADDR, 4, 1, 6, 0xDEAD, EXPORT), val(1, 4096))],
     [({"client": "10.99.0.11", "proto": "v3", "op": "read", "share": "/srv/export",
        "file": file_label(0xDEAD)}, 1, 4096, {})]),
    # rows with no count (an emptied key) are left out
    ([(key(C1_ADDR, 4, 1, 6, DATA1, EXPORT), val(0))], []),
])
def test_decode_rows(counts, want):
    probe = NfsdProbe("nas1", tracefs=None, btf_dir="/nonexistent")
    out = probe.decode(drained(counts), 100)
    if not want:
        assert out == []
        return
    (family, host, rows), = out
    assert (family, host) == ("nfs", "nas1")
    got = [(r["dims"], r["count"], r["bytes"], r["hist"]) for r in rows]
    assert got == want


def test_decode_names_persist_across_seconds_and_other_row():
    probe = NfsdProbe("nas1", tracefs=None, btf_dir="/nonexistent")
    assert probe.decode(drained([], stats=(5, 2, 0, 0, 0, 0)), 1) == []
    assert probe.stats["requests"] == 5 and probe.stats["compounds"] == 2
    # second 2: no new names, a row for a file named in second 1, and the overflow row
    out = probe.decode(drained([(key(C1_ADDR, 4, 1, 7, DATA1, EXPORT), val(4, 4 * 8192))], names=[],
                               other=val(9, 100), stats=(1, 0, 0, 0, 0, 1)), 2)
    rows = {r["dims"]["op"]: r for r in out[0][2]}
    assert rows["write"]["dims"]["file"] == "/srv/export/c1/data" and rows["write"]["bytes"] == 32768
    assert rows["other"]["dims"] == {"client": "(other)", "proto": "", "op": "other", "share": "", "file": ""}
    assert rows["other"]["count"] == 9
    assert probe.stats["requests"] == 6 and probe.stats["renamed"] == 1


def test_decode_spilled_ops_keep_their_client_without_a_file():
    """Ops counted in `spill` when `counts` was full (the kernel set their file id to NONE): each
    client keeps its ops, with the share, their file "(other files)" as the store shows the files
    it folds; none of them are (other)."""
    probe = NfsdProbe("nas1", tracefs=None, btf_dir="/nonexistent")
    d = drained([(key(C1_ADDR, 4, 1, 8, DATA1, EXPORT), val(1))])  # v3 CREATE with its file
    d["spill"] = [(key(C1_ADDR, 4, 1, 8, 0, EXPORT), val(40)), (key(C2_ADDR, 4, 4, 0xFFFD, 0, EXPORT), val(25))]
    rows = {(r["dims"]["client"], r["dims"]["op"], r["dims"]["file"]): r for r in probe.decode(d, 1)[0][2]}
    assert rows[("10.99.0.11", "create", "/srv/export/c1/data")]["count"] == 1
    assert rows[("10.99.0.11", "create", FILE_OTHER)]["count"] == 40
    assert rows[("10.99.0.12", "open_create", FILE_OTHER)]["count"] == 25
    assert rows[("10.99.0.12", "open_create", FILE_OTHER)]["dims"]["share"] == "/srv/export"
    assert not any(c == "(other)" for c, _, _ in rows)


def test_the_key_table_is_sized_by_loupe_nfsd_keys(monkeypatch):
    monkeypatch.setenv("LOUPE_NFSD_KEYS", "65536")
    assert NfsdProbe("nas1", tracefs=None, btf_dir="/nonexistent").sizes() == {"counts": 65536}


def test_decode_rename_moves_the_path():
    """A renamed file's new name (from fexit/d_move) replaces the old one."""
    probe = NfsdProbe("nas1", tracefs=None, btf_dir="/nonexistent")
    k = key(C1_ADDR, 4, 1, 6, DATA1, EXPORT)
    assert probe.decode(drained([(k, val(1))]), 1)[0][2][0]["dims"]["file"] == "/srv/export/c1/data"
    out = probe.decode(drained([(k, val(1))], names=[(DATA1, C2, b"moved")]), 2)
    assert out[0][2][0]["dims"]["file"] == "/srv/export/c2/moved"


def test_registry_has_the_probe():
    assert "bpf.nfsd" in PROBES
    (src,) = build(["bpf.nfsd"], Options(host="nas1"))
    assert isinstance(src, NfsdProbe) and src.families == ("nfs",) and not src.replayable
    assert src.replaces == ("bpf.nfswire",)


def _nfsd_here() -> bool:
    tf = libbpf.tracefs()
    return (tf is not None and (tf / "events" / "nfsd").is_dir()) or Path("/sys/kernel/btf/nfsd").exists() \
        or Path("/sys/module/nfsd").exists()


def test_off_on_this_host_without_nfsd():
    """This host has no kernel NFS server: the probe is off, says why, and collects nothing."""
    if why := libbpf.why_not_bpf():
        pytest.skip(f"BPF probes cannot run here: {why}")
    if _nfsd_here():
        pytest.skip("nfsd is loaded on this machine: the guest test covers the probe running")
    probe = NfsdProbe("nas1")
    try:
        (st,) = probe.status()
        assert st["name"] == "bpf.nfsd" and st["families"] == ["nfs"]
        assert (st["state"], st["reason"]) == ("off", NO_NFSD)
        assert probe.collect(1) == []
        assert probe.obj is None
    finally:
        probe.close()
