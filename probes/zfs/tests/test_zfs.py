"""The ZFS source against committed kstat snapshots (OpenZFS 2.1 and 2.2 formats), table-driven."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from loupe_probes.zfs import ZfsSource, parse_arcstats, parse_txgs

DATA = Path(__file__).resolve().parent.parent / "testdata"


def _two_snapshots(version: str, tmp_path: Path, t0: int = 100, t1: int = 101):
    proc = tmp_path / "proc"
    shutil.copytree(DATA / version / "snap1", proc, dirs_exist_ok=True)
    src = ZfsSource("nas1", proc)
    assert src.collect(t0) == []  # first collect only primes
    shutil.copytree(DATA / version / "snap2", proc, dirs_exist_ok=True)
    return src, {fam: rows for fam, host, rows in src.collect(t1)}


EXPECTED = {
    # 2.2: iohits exist; L2ARC present; tank committed txgs 8541949 and 8541950 since the
    # first reading (8541948 was already committed then); backup only has an open txg.
    "zfs-2.2": {
        "zfs_arc": [({"cache": "arc", "result": "hit"}, 41210), ({"cache": "arc", "result": "iohit"}, 37),
                    ({"cache": "arc", "result": "miss"}, 1290), ({"cache": "l2arc", "result": "hit"}, 310),
                    ({"cache": "l2arc", "result": "miss"}, 980)],
        "zfs_txg": [({"pool": "tank"}, 2, 612354048 + 3178496, 35651584 + 3145728, {"29": 1, "21": 1})],
        "reason": "",
    },
    # 2.1: no iohits, no cache device (l2 counters stay 0: no rows), txg history off.
    "zfs-2.1": {
        "zfs_arc": [({"cache": "arc", "result": "hit"}, 2500), ({"cache": "arc", "result": "miss"}, 12)],
        "zfs_txg": [],
        "reason": "zfs_txg_history",
    },
}


@pytest.mark.parametrize("version", list(EXPECTED))
def test_snapshots(version, tmp_path):
    src, out = _two_snapshots(version, tmp_path)
    exp = EXPECTED[version]
    assert [(r["dims"], r["count"]) for r in out.get("zfs_arc", [])] == exp["zfs_arc"]
    assert [(r["dims"], r["count"], r["lat_sum"], r["bytes"], r["hist"]["latency"])
            for r in out.get("zfs_txg", [])] == exp["zfs_txg"]
    st = src.status()[0]
    assert st["state"] == "active" and st["families"] == ["zfs_arc", "zfs_txg"]
    assert exp["reason"] in st["reason"] and bool(st["reason"]) == bool(exp["reason"])


def test_txgs_reported_once(tmp_path):
    src, out = _two_snapshots("zfs-2.2", tmp_path)
    assert out["zfs_txg"]
    again = {fam: rows for fam, _, rows in src.collect(102)}
    assert "zfs_txg" not in again  # same history: nothing new committed
    assert "zfs_arc" not in again  # same counters: nothing happened


def test_late_reading_divides_arc_deltas(tmp_path):
    _, out = _two_snapshots("zfs-2.2", tmp_path, t0=100, t1=105)
    assert [(r["dims"]["result"], r["count"]) for r in out["zfs_arc"] if r["dims"]["cache"] == "arc"] == \
        [("hit", 8242), ("iohit", 7), ("miss", 258)]
    # txg syncs are events: all of them, once
    assert out["zfs_txg"][0]["count"] == 2


def test_counter_reset_is_skipped(tmp_path):
    proc = tmp_path / "proc"
    shutil.copytree(DATA / "zfs-2.2" / "snap2", proc)
    src = ZfsSource("nas1", proc)
    src.collect(100)
    shutil.copytree(DATA / "zfs-2.2" / "snap1", proc, dirs_exist_ok=True)  # counters went backwards
    assert [f for f, _, _ in src.collect(101)] == []


def test_no_zfs(tmp_path):
    src = ZfsSource("nas1", tmp_path)
    assert src.collect(1) == []
    st = src.status()[0]
    assert st["state"] == "off"
    assert st["reason"] == f"no ZFS ({tmp_path}/spl/kstat/zfs missing)"


def test_unreadable_arcstats_is_an_error(tmp_path):
    (tmp_path / "spl" / "kstat" / "zfs").mkdir(parents=True)
    src = ZfsSource("nas1", tmp_path)
    assert src.collect(1) == []
    st = src.status()[0]
    assert st["state"] == "error" and "arcstats" in st["reason"]


@pytest.mark.parametrize("text, expect", [
    ("13 1 0x01 3 144 1 2\nname                            type data\nhits 4 10\nmisses 4 2\n",
     {"hits": 10, "misses": 2}),
    ("name type data\nhits 4 7\narc_no_grow 1 0\nbogus line\n", {"hits": 7, "arc_no_grow": 0}),
    ("1 1 0x01 1 1 1 1\nname type data\nzfs_version 7 2.2.2-1\nhits 4 3\n", {"hits": 3}),
])
def test_parse_arcstats(text, expect):
    assert parse_arcstats(text) == expect


def test_parse_arcstats_rejects_other_text():
    with pytest.raises(ValueError, match="named kstat"):
        parse_arcstats("hello\n")


@pytest.mark.parametrize("text, expect", [
    ("18 0 0x01 0 0 1 2\ntxg birth state ndirty nread nwritten reads writes otime qtime wtime stime\n", []),
    ("txg birth state stime\n5 100 C 2000\n6 200 O 0\n",
     [{"txg": 5, "birth": 100, "state": "C", "stime": 2000}, {"txg": 6, "birth": 200, "state": "O", "stime": 0}]),
    ("txg birth state stime\n5 100 C\n", []),  # a torn line is skipped
])
def test_parse_txgs(text, expect):
    assert parse_txgs(text) == expect


def test_parse_txgs_rejects_other_text():
    with pytest.raises(ValueError, match="txgs history"):
        parse_txgs("name type data\nhits 4 1\n")
