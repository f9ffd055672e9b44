"""The libbpf binding and the probe base: decoders table-driven, maps against the real kernel."""

import re
import struct

import pytest

from loupe_probes.bpf import libbpf
from loupe_probes.bpf.libbpf import BpfError, BpfObject
from loupe_probes.bpf.probe import hist_dict, u64_delta
from loupe_probes.bpf.testing import REPO, require_bpf

DISK_OBJ = REPO / "probes" / "disk" / "disk.bpf.o"


@pytest.mark.parametrize("capeff, ok", [
    ("000001ffffffffff", True),   # root
    ("0000000000000000", False),  # no capabilities
    ("0000000000200000", True),   # CAP_SYS_ADMIN only (before 5.8 that was the way)
    ("000000c000000000", True),   # CAP_BPF + CAP_PERFMON
    ("0000008000000000", False),  # CAP_BPF alone cannot attach tracing programs
])
def test_capabilities(capeff, ok):
    assert libbpf.has_bpf_caps(f"Name:\tx\nCapEff:\t{capeff}\n") is ok


@pytest.mark.parametrize("now, before, expect", [
    ((5, 7), (2, 7), (3, 0)),
    ((5, 7), None, (5, 7)),
    ((1, 0), (3, 0), (0, 0)),  # a counter never goes back: a reset reads as zero, not negative
])
def test_u64_delta(now, before, expect):
    pack = lambda t: struct.pack(f"<{len(t)}Q", *t)  # noqa: E731
    assert u64_delta(pack(now), pack(before) if before else None) == pack(expect)


@pytest.mark.parametrize("counts, lo, expect", [
    ([0, 3, 0, 1], 10, {"11": 3, "13": 1}),
    ([0, 0], 9, {}),
    ([7], 12, {"12": 7}),
])
def test_hist_dict(counts, lo, expect):
    assert hist_dict(counts, lo) == expect


def test_missing_object_says_how_to_build_it(tmp_path):
    with pytest.raises(BpfError, match="not built"):
        BpfObject(tmp_path / "nope.bpf.o")


def test_btf_names_this_kernels_tracepoints():
    if not libbpf.BTF_VMLINUX.exists():
        pytest.skip("no /sys/kernel/btf/vmlinux")
    assert libbpf.btf_has("btf_trace_sched_switch")
    assert not libbpf.btf_has("btf_trace_no_such_tracepoint")


def test_batch_drain_returns_every_entry_once_and_empties_the_map():
    require_bpf(DISK_OBJ)
    with BpfObject(DISK_OBJ) as obj:
        m = obj.map("io")
        assert (m.key_size, m.max_entries, m.percpu) == (8, 4096, True)
        assert m.value_bytes == m.stride * m.ncpus  # a per-CPU value: one slice per possible CPU
        n = 3000  # more than one batch chunk's worth of hash buckets
        for i in range(n):
            m.update(struct.pack("<IB3x", i, i % 5), struct.pack("<Q", i) + bytes(m.value_size - 8))
        got = m.drain()
        assert len(got) == n
        assert sorted(struct.unpack_from("<I", k)[0] for k, _ in got) == list(range(n))
        assert all(struct.unpack_from("<Q", v)[0] == struct.unpack_from("<I", k)[0] for k, v in got)
        assert all(len(v) == m.value_bytes and not any(v[m.stride:]) for _, v in got)  # other CPUs' slices
        assert m.drain() == []
        with pytest.raises(BpfError, match="array"):
            obj.map("drops").drain()
        with pytest.raises(BpfError, match="no map 'nope'"):
            obj.map("nope")
        with pytest.raises(BpfError, match="no program 'nope'"):
            obj.attach("nope")


def test_an_mmapable_array_is_shared_with_the_kernel_and_others_say_why_not():
    obj_path = REPO / "probes" / "nfswire" / "nfswire.bpf.o"
    require_bpf(obj_path)
    with BpfObject(obj_path) as obj:
        m = obj.map("row_used")  # u64 values
        mm = m.mmap()
        try:
            struct.pack_into("<Q", mm, 8 * 5, 0xABCDEF)  # value 5, written through the mapping
            assert struct.unpack("<Q", m.lookup((5).to_bytes(4, "little")))[0] == 0xABCDEF
            m.update((7).to_bytes(4, "little"), struct.pack("<Q", 42))  # and the other way
            assert struct.unpack_from("<Q", mm, 8 * 7)[0] == 42
        finally:
            mm.close()
        with pytest.raises(BpfError, match="mapping map settings"):
            obj.map("settings").mmap()  # an array made without BPF_F_MMAPABLE
        with pytest.raises(BpfError, match="names is not an array"):
            obj.map("names").mmap()
    assert libbpf.grace_period() is None  # membarrier(MEMBARRIER_CMD_GLOBAL) on this kernel


def test_a_map_resized_at_load_holds_that_many_keys():
    require_bpf(DISK_OBJ)
    with BpfObject(DISK_OBJ, resize={"io": 64}) as obj:
        m = obj.map("io")
        assert m.max_entries == 64
        for i in range(64):
            m.update(struct.pack("<IB3x", i, 0), bytes(m.value_bytes))
        with pytest.raises(BpfError):  # the 65th key: the kernel's table is that small
            m.update(struct.pack("<IB3x", 64, 0), bytes(m.value_bytes))
    with pytest.raises(BpfError, match="sizing map nope of disk.bpf.o to 8 entries: the object has no such map"):
        BpfObject(DISK_OBJ, resize={"nope": 8})


@pytest.mark.parametrize("value, error", [
    ("", None), ("512", None), (" 1048576 ", None),
    ("0", "LOUPE_TEST_KEYS='0': not a whole number of keys from 1 to 1048576"),
    ("-5", "LOUPE_TEST_KEYS='-5'"), ("16k", "LOUPE_TEST_KEYS='16k'"), ("1048577", "LOUPE_TEST_KEYS='1048577'"),
])
def test_map_sizes_from_the_environment(monkeypatch, value, error):
    from loupe_probes.bpf.probe import BpfProbe

    class P(BpfProbe):
        SIZES = {"io": "LOUPE_TEST_KEYS"}

    monkeypatch.setenv("LOUPE_TEST_KEYS", value)
    if error is None:
        assert P("h").sizes() == ({"io": int(value)} if value else {})
    else:
        with pytest.raises(BpfError, match=re.escape(error)):
            P("h").sizes()


def test_a_bad_map_size_turns_the_probe_off_with_the_variables_name(monkeypatch):
    require_bpf(DISK_OBJ)
    from loupe_probes.disk import DiskProbe

    class Sized(DiskProbe):
        SIZES = {"io": "LOUPE_TEST_KEYS"}

    monkeypatch.setenv("LOUPE_TEST_KEYS", "lots")
    p = Sized("h", object_dir=DISK_OBJ.parent)
    assert not p.start()
    assert p.state == "error" and "LOUPE_TEST_KEYS='lots'" in p.reason
    monkeypatch.setenv("LOUPE_TEST_KEYS", "128")
    p = Sized("h", object_dir=DISK_OBJ.parent)
    try:
        assert p.start() and p.obj.map("io").max_entries == 128
    finally:
        p.close()


def test_a_probe_loading_in_the_background_says_so_and_collects_nothing():
    import threading

    from loupe_probes.disk import DiskProbe

    gate = threading.Event()

    class Slow(DiskProbe):
        def requirements(self):
            gate.wait(10)  # as a long verification would
            return "held off by the test"

    p = Slow("h")
    t = p.start_in_background()
    try:
        st = p.status()[0]
        assert st["state"] == "off" and "loading" in st["reason"]
        assert p.collect(1) == []
    finally:
        gate.set()
        t.join(10)
    st = p.status()[0]
    assert not p.loading and st["state"] == "off"
    assert st["reason"] in ("held off by the test", libbpf.why_not_bpf())


def test_cumulative_maps_are_differenced_and_idle_keys_deleted():
    require_bpf(DISK_OBJ)
    from loupe_probes.bpf.probe import IDLE_SECONDS, BpfProbe

    p = BpfProbe("h", object_dir=DISK_OBJ.parent)
    with BpfObject(DISK_OBJ) as obj:
        p.obj = obj
        m = obj.map("io")
        key = struct.pack("<IB3x", 7, 1)
        m.update(key, struct.pack("<QQ", 5, 4096))
        assert [(k, struct.unpack_from("<QQ", v)) for k, v in p._deltas("io")[0]] == [(key, (5, 4096))]
        m.update(key, struct.pack("<QQ", 8, 6144))  # grew by 3 ops, 2 KiB: only the growth is reported
        assert [struct.unpack_from("<QQ", v) for _, v in p._deltas("io")[0]] == [(3, 2048)]
        for _ in range(IDLE_SECONDS - 1):
            assert p._deltas("io") == ([], 1)  # unchanged: nothing to report, kept
        assert p._deltas("io") == ([], 1) and m.items() == []  # idle long enough: deleted
        p.obj = None
