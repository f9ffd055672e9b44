"""procfs sources against two committed snapshots: exact deltas, table-driven."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from loupe.frame import Frame
from loupe_probes.procfs import CpuSource, DiskSource, NetSource
from loupe_probes.procfs.collectors import MBPS, SPEED_REFRESH, parse_speed

DATA = Path(__file__).resolve().parent.parent / "testdata"
SYS = DATA / "sys"


def _snapshot(proc: Path, name: str) -> None:
    shutil.copytree(DATA / name, proc, dirs_exist_ok=True)


def _two_snapshots(make, tmp_path: Path, t0: int = 100, t1: int = 101, passed: float | None = None):
    """Collect at second t0, then t1; `passed`: seconds between the readings (default t1 - t0)."""
    proc = tmp_path / "proc"
    _snapshot(proc, "snap1")
    src = make(proc)
    clock = iter([0.0, float(t1 - t0) if passed is None else passed])
    src.clock = lambda: next(clock)
    # first collect only primes the counters (a gauge, net_link, already reports)
    assert [f for f, _, _ in src.collect(t0)] == (["net_link"] if src.family == "net" else [])
    _snapshot(proc, "snap2")
    return src, src.collect(t1)


SOURCES = {
    "cpu": lambda proc: CpuSource("h1", proc, SYS),
    "disk": lambda proc: DiskSource("h1", proc, SYS),
    "net": lambda proc: NetSource("h1", proc, SYS),
}


def share(ticks: int, total: int) -> int:
    """A mode's microseconds in one second: its share of its CPU's ticks."""
    return round(ticks * 1_000_000 / total)


EXPECTED = {
    # cpu0 saw 95 ticks, cpu1 96 once its iowait, which went backwards (kernel quirk), is
    # dropped; cpu2 appeared: skipped. Each CPU's modes share out one second.
    "cpu": [
        ({"cpu": "cpu0", "mode": "user"}, share(30, 95), 0, 0),
        ({"cpu": "cpu0", "mode": "system"}, share(20, 95), 0, 0),
        ({"cpu": "cpu0", "mode": "idle"}, share(45, 95), 0, 0),
        ({"cpu": "cpu1", "mode": "user"}, share(10, 96), 0, 0),
        ({"cpu": "cpu1", "mode": "system"}, share(5, 96), 0, 0),
        ({"cpu": "cpu1", "mode": "idle"}, share(80, 96), 0, 0),
        ({"cpu": "cpu1", "mode": "softirq"}, share(1, 96), 0, 0),
    ],
    # Whole disks only (no vda1, ram0, loop0); sda has the short pre-4.18 line; nvme0n1's
    # read counters were reset (skipped); idle ops and zram0 produce nothing.
    "disk": [
        ({"disk": "sda", "op": "write"}, 5, 80 * 512, 12_000_000),
        ({"disk": "vda", "op": "read"}, 12, 2048 * 512, 30_000_000),
        ({"disk": "vda", "op": "write"}, 40, 800 * 512, 55_000_000),
        ({"disk": "vda", "op": "discard"}, 2, 4096 * 512, 3_000_000),
        ({"disk": "vda", "op": "flush"}, 10, 0, 7_000_000),
        ({"disk": "nvme0n1", "op": "write"}, 3, 48 * 512, 3_000_000),
    ],
    # ifb0 idle; wlan0 transmit bytes wrapped: that row is skipped.
    "net": [
        ({"interface": "eth0", "direction": "in"}, 100, 150_000, 0),
        ({"interface": "eth0", "direction": "out"}, 50, 4_000, 0),
        ({"interface": "lo", "direction": "in"}, 10, 1_000, 0),
        ({"interface": "lo", "direction": "out"}, 10, 1_000, 0),
        ({"interface": "wlan0", "direction": "in"}, 4, 3_000, 0),
    ],
}


# Link capacities (net_link) beside them: eth0's speed file says 10000 Mb/s; wlan0's says -1
# (unknown) and lo and ifb0 have none: no row, never a capacity of 0.
LINKS = [({"interface": "eth0"}, 0, 10_000 * MBPS, 0)]


def _table(rows: list[dict]) -> list[tuple]:
    return [(r["dims"], r.get("count", 0), r.get("bytes", 0), r.get("lat_sum", 0)) for r in rows]


@pytest.mark.parametrize("family", list(SOURCES))
def test_exact_deltas(family: str, tmp_path: Path) -> None:
    _, out = _two_snapshots(SOURCES[family], tmp_path)
    assert [(f, h) for f, h, _ in out] == [(family, "h1")] + ([("net_link", "h1")] if family == "net" else [])
    rows = out[0][2]
    assert sorted(map(repr, _table(rows))) == sorted(map(repr, EXPECTED[family]))
    for fam, _, rs in out:
        Frame(source=f"procfs.{family}@h1", seq=1, ts=101, family=fam, host="h1", rows=rs)
    if family == "net":
        assert _table(out[1][2]) == LINKS


@pytest.mark.parametrize("text, mbps", [
    ("10000\n", 10_000), ("1000", 1000), ("2500\n", 2500), ("25000", 25_000), ("100000", 100_000),
    ("400000\n", 400_000), ("10", 10),
    ("-1\n", None),  # SPEED_UNKNOWN: virtual links (bridges without ports, tun without a carrier, ...)
    ("4294967295", None),  # the same, printed unsigned by older kernels
    ("65535", None),  # the same in the 16-bit field of older drivers
    ("0", None),  # some drivers while the link is down
    ("", None), ("fast", None), ("10000 Mb/s", None),
])
def test_link_speed_decoding(text, mbps):
    assert parse_speed(text) == mbps


def test_link_speeds_are_a_gauge_read_every_few_seconds(tmp_path: Path) -> None:
    """Each second carries the capacity (also the priming one); a speed change shows after
    SPEED_REFRESH seconds, a new interface at once; unknown speeds give no row."""
    proc, sys_ = tmp_path / "proc", tmp_path / "sys"
    _snapshot(proc, "snap1")
    shutil.copytree(SYS, sys_)
    src = NetSource("h1", proc, sys_)
    now = [0.0]
    src.clock = lambda: now[0]

    def links(ts):
        now[0] = float(ts)
        return [_table(rows) for fam, _, rows in src.collect(ts) if fam == "net_link"]

    assert links(100) == [LINKS]  # priming: no net rows yet, but the capacity is known
    (sys_ / "class/net/eth0/speed").write_text("1000\n")
    (sys_ / "class/net/wlan0/speed").write_text("300\n")
    assert links(101) == [LINKS]  # not read again yet
    assert links(100 + int(SPEED_REFRESH)) == [[({"interface": "eth0"}, 0, 1000 * MBPS, 0),
                                                ({"interface": "wlan0"}, 0, 300 * MBPS, 0)]]
    (sys_ / "class/net/eth0/speed").write_text("-1\n")
    (sys_ / "class/net/wlan0/speed").unlink()
    (sys_ / "class/net/bond0").mkdir()
    (sys_ / "class/net/bond0/speed").write_text("20000\n")
    with open(proc / "net" / "dev", "a") as f:
        f.write(" bond0: 10 1 0 0 0 0 0 0 20 2 0 0 0 0 0 0\n")
    # bond0 is new: every speed is read again, eth0's now unknown, wlan0's gone
    assert links(102 + int(SPEED_REFRESH)) == [[({"interface": "bond0"}, 0, 20_000 * MBPS, 0)]]


def test_cpu_rows_in_natural_order(tmp_path: Path) -> None:
    _, out = _two_snapshots(SOURCES["cpu"], tmp_path)
    assert [r["dims"]["cpu"] for r in out[0][2]] == ["cpu0"] * 3 + ["cpu1"] * 4


@pytest.mark.parametrize("family", ["disk", "net"])
def test_late_tick_is_normalised_to_one_second(family: str, tmp_path: Path) -> None:
    _, out = _two_snapshots(SOURCES[family], tmp_path, t0=100, t1=102)
    got = {repr(dims): (c, b, lat) for dims, c, b, lat in _table(out[0][2])}
    want = {repr(dims): (round(c / 2), round(b / 2), round(lat / 2)) for dims, c, b, lat in EXPECTED[family]}
    assert got == want


@pytest.mark.parametrize("family", ["disk", "net"])
@pytest.mark.parametrize("passed, divisor", [(0.75, 0.75), (1.3, 1.3), (0.85, 1), (1.15, 1)])
def test_an_irregular_interval_is_reported_as_its_rate(family: str, passed: float, divisor: float,
                                                       tmp_path: Path) -> None:
    """The first interval after start is often short (the priming read came late in its
    second): beyond 20 % off, the delta is divided by the time that passed."""
    _, out = _two_snapshots(SOURCES[family], tmp_path, passed=passed)
    got = {repr(dims): c for dims, c, _, _ in _table(out[0][2])}
    assert got == {repr(dims): round(c / divisor) for dims, c, _, _ in EXPECTED[family]}


@pytest.mark.parametrize("t1, passed", [(101, 0.82), (101, 1.15), (102, 2.0), (103, 0.9)])
def test_cpu_shares_are_whatever_the_interval(t1: int, passed: float, tmp_path: Path) -> None:
    """Ticks are the CPU's own clock: late, early or skipped readings give the same percent."""
    _, out = _two_snapshots(SOURCES["cpu"], tmp_path, t1=t1, passed=passed)
    assert sorted(map(repr, _table(out[0][2]))) == sorted(map(repr, EXPECTED["cpu"]))


def test_same_counters_give_nothing(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    _snapshot(proc, "snap1")
    src = NetSource("h1", proc, SYS)
    src.collect(1)
    assert [fam for fam, _, _ in src.collect(2)] == ["net_link"]  # the capacities, no traffic
    assert src.status()[0]["state"] == "active" and src.status()[0]["families"] == ["net", "net_link"]


def test_missing_files_turn_the_source_off_then_recover(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    src = DiskSource("h1", proc, SYS)
    assert src.collect(1) == []
    (st,) = src.status()
    assert st["state"] == "off" and "diskstats" in st["reason"] and st["families"] == ["disk"]
    assert st["demo"] is False
    _, out = _two_snapshots(lambda p: src, tmp_path, t0=2, t1=3)
    assert len(out[0][2]) == len(EXPECTED["disk"])
    assert src.status()[0]["state"] == "active"


def test_unparsable_file_is_an_error_not_a_crash(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    (proc / "net").mkdir(parents=True)
    (proc / "net" / "dev").write_text("h1\nh2\n  eth0: 1 2 x\n")
    src = NetSource("h1", proc, SYS)
    assert src.collect(1) == []
    assert src.status()[0]["state"] == "error"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs a real /proc")
def test_real_proc_validates() -> None:
    sources = [CpuSource("real"), DiskSource("real"), NetSource("real")]
    t = int(time.time())
    for s in sources:
        s.collect(t)
    time.sleep(1.05)
    out = [x for s in sources for x in s.collect(t + 1)]
    fams = {f for f, _, _ in out}
    assert "cpu" in fams  # CPU time always passes; disks and NICs may be idle
    cpu_us = sum(r["count"] for f, _, rows in out if f == "cpu" for r in rows)
    assert abs(cpu_us - 1e6 * os.cpu_count()) <= 8 * os.cpu_count()  # rounding of 8 modes
    for fam, host, rows in out:
        Frame(source="procfs@real", seq=1, ts=t + 1, family=fam, host=host, rows=rows)
