"""The disk probe: decoders (table-driven) and, as root, real O_DIRECT I/O on the root disk."""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import pytest

from loupe_probes.bpf.testing import REPO, require_bpf
from loupe_probes.disk import DiskProbe, dev_name
from loupe_probes.disk.probe import MINORBITS, OPS, skipped, split_dev


@pytest.mark.parametrize("dev, expect", [
    ((254 << MINORBITS) | 0, (254, 0)),
    ((8 << MINORBITS) | 16, (8, 16)),
    ((259 << MINORBITS) | 1, (259, 1)),
    (0, (0, 0)),
])
def test_split_dev(dev, expect):
    assert split_dev(dev) == expect


@pytest.fixture
def fake_sys(tmp_path):
    for mm, name in (("8:0", "sda"), ("259:0", "nvme0n1"), ("254:16", "vdb")):
        d = tmp_path / "dev" / "block" / mm
        d.mkdir(parents=True)
        (d / "uevent").write_text(f"MAJOR={mm.split(':')[0]}\nMINOR={mm.split(':')[1]}\nDEVNAME={name}\nDEVTYPE=disk\n")
    return tmp_path


@pytest.mark.parametrize("major, minor, name", [
    (8, 0, "sda"), (259, 0, "nvme0n1"), (254, 16, "vdb"),
    (8, 32, "8:32"),  # gone or unknown: MAJ:MIN, still unique
])
def test_dev_name(fake_sys, major, minor, name):
    assert dev_name((major << MINORBITS) | minor, fake_sys) == name


@pytest.mark.parametrize("name, skip", [("loop0", True), ("ram1", True), ("zram0", True), ("sda", False),
                                        ("nvme0n1", False), ("vda", False)])
def test_virtual_devices_are_skipped(name, skip):
    assert skipped(name) is skip


# ---------------------------------------------------------------------- real I/O

def _disk_of(path: Path, sys: Path = Path("/sys")) -> str | None:
    """Whole-disk name holding ``path``'s file system, or None (tmpfs, overlay...)."""
    st = os.stat(path)
    node = sys / "dev" / "block" / f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    if not node.exists():
        return None
    real = node.resolve()
    if (real / "partition").exists():
        real = real.parent
    return real.name


def _direct_io(path: Path, total: int, bs: int, write: bool) -> None:
    buf = mmap.mmap(-1, bs)  # page-aligned, as O_DIRECT requires
    buf.write(os.urandom(bs))
    fd = os.open(path, (os.O_WRONLY if write else os.O_RDONLY) | os.O_DIRECT)
    try:
        for off in range(0, total, bs):
            if write:
                assert os.pwritev(fd, [buf], off) == bs
            else:
                assert os.preadv(fd, [buf], off) == bs
    finally:
        os.close(fd)


def _diskstats(disk: str) -> dict[str, tuple[int, int]]:
    """The kernel's own per-disk counters: op -> (completed ios, bytes)."""
    for line in Path("/proc/diskstats").read_text().splitlines():
        f = line.split()
        if f[2] == disk:
            return {"read": (int(f[3]), int(f[5]) * 512), "write": (int(f[7]), int(f[9]) * 512)}
    raise AssertionError(f"{disk} not in /proc/diskstats")


missed: list[float] = []


def _phase(probe: DiskProbe, disk: str, fn) -> tuple[dict[str, dict], dict[str, tuple[int, int]]]:
    """Rows the probe saw for ``disk`` during ``fn``, and /proc/diskstats' deltas."""
    probe.collect(0)  # drain whatever came before
    before = _diskstats(disk)
    fn()
    after = _diskstats(disk)
    rows = probe.collect(1)
    missed.append(probe.cost["missed"])
    out: dict[str, dict] = {}
    for _, _, rs in rows:
        for r in rs:
            if r["dims"]["disk"] == disk:
                out[r["dims"]["op"]] = r
    return out, {op: (after[op][0] - before[op][0], after[op][1] - before[op][1]) for op in after}


@pytest.mark.parametrize("bs, total", [(4096, 32 << 20), (1 << 20, 256 << 20)])
def test_direct_io_is_counted_exactly(bs, total):
    require_bpf()
    work = REPO / "build" / "disktest"
    work.mkdir(parents=True, exist_ok=True)
    disk = _disk_of(work)
    if disk is None or skipped(disk):
        pytest.skip(f"{work} is not on a block device the probe reports (tmpfs/overlay/loop)")
    f = work / f"direct-{bs}.bin"
    # Allocate and write back first: O_DIRECT overwrites of written blocks are pure data
    # I/O, with no extent conversion or journal writes mixed into the numbers.
    with open(f, "wb") as fh:
        fh.write(os.urandom(total))
        fh.flush()
        os.fsync(fh.fileno())

    probe = DiskProbe("testhost")
    try:
        assert probe.start(), probe.reason
        wrote = _phase(probe, disk, lambda: _direct_io(f, total, bs, write=True))
        read = _phase(probe, disk, lambda: _direct_io(f, total, bs, write=False))
        st = probe.status()[0]
        assert st["state"] == "active" and st["cost"]["runs_per_s"] > 0
    finally:
        probe.close()
        f.unlink(missing_ok=True)

    for op, (rows, kernel) in (("write", wrote), ("read", read)):
        r = rows.get(op)
        assert r is not None, f"no {op} rows for {disk}: {rows}"
        k_ops, k_bytes = kernel[op]
        # Other processes may add I/O of their own to the same disk meanwhile; the
        # kernel's own counters see that too, so agreement is checked against them.
        # Our own I/O is there (within 2%, and less any runs the kernel skipped and
        # reported as missed: an interrupt nested in the probe on the same CPU), and
        # nothing beyond what the kernel itself counted.
        slack = missed[-1] if op == "read" else missed[-2]
        assert 0.98 * total - slack * bs <= r["bytes"] <= 1.02 * k_bytes, (op, r["bytes"], total, k_bytes, slack)
        # The block layer splits large I/Os (max_sectors_kb, max_segments), so the
        # device's op count comes from the kernel's own counters, not from bs.
        assert k_ops >= total // bs
        assert 0.98 * (total // bs) - slack <= r["count"] <= 1.02 * k_ops, (op, r["count"], total // bs, k_ops, slack)
        # Each application I/O is one request of bs bytes, or, where the queue's
        # limits split it, one just under bs plus a small rest.
        sizes = {int(e): n for e, n in r["hist"]["size"].items()}
        exp = bs.bit_length() - 1
        assert 0.98 * (total // bs) <= sum(sizes.values()) <= r["count"]  # zero-byte ops (flushes) have no size
        top = max(sizes, key=lambda e: sizes[e] << e)  # most bytes: ours, whatever else ran
        assert top == exp or (top == exp - 1 and exp > 12), (op, sizes, exp)
        assert sum(n for e, n in sizes.items() if e >= exp - 1) >= 0.98 * (total // bs), (op, sizes, exp)
        # Bucket e holds sizes in [2^e, 2^(e+1)): the bytes must fit the buckets.
        assert sum(n << e for e, n in sizes.items()) <= r["bytes"] < sum(n << (e + 1) for e, n in sizes.items())
        assert sum(r["hist"]["latency"].values()) == r["count"]
        assert r["lat_sum"] > 0
    assert OPS.index("read") == 0 and OPS.index("write") == 1
