"""Store correctness on a real DuckDB file."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import duckdb
import pytest
from factories import NOW, nfs_frame, random_nfs_frames

from loupe.catalog import FILE_OTHER, METRICS
from loupe.frame import Frame
from loupe.store.base import Statistic
from loupe.store.duckdb_store import DuckDBStore
from loupe.timerange import Window

OPS = METRICS["nfs.ops"]
BYTES = METRICS["nfs.bytes"]


def stat(metric=OPS, by=None, **where):
    return Statistic(metric, by, tuple((k, tuple(v)) for k, v in sorted(where.items())))


def test_rates_per_second_and_per_step(store):
    frames = [nfs_frame(NOW + i, [("10.0.0.1", "read", "/a", 10 * (i + 1), 100 * (i + 1), {})]) for i in range(10)]
    out = store.ingest(frames, received_at=NOW + 11)
    assert (out.accepted, out.duplicates, out.rows) == (10, 0, 10)
    agg = store.aggregate(stat(), Window(NOW, NOW + 10, 1, "second"), 10)
    assert agg.total == [10.0 * (i + 1) for i in range(10)]
    agg = store.aggregate(stat(), Window(NOW, NOW + 10, 5, "second"), 10)
    assert agg.total == [(10 + 20 + 30 + 40 + 50) / 5, (60 + 70 + 80 + 90 + 100) / 5]
    agg = store.aggregate(stat(BYTES), Window(NOW, NOW + 10, 10, "second"), 10)
    assert agg.total == [5500 / 10]


def test_top_n_plus_other_sum_to_total(store):
    store.ingest(random_nfs_frames(NOW, 120, clients=12), received_at=NOW + 121)
    w = Window(NOW, NOW + 120, 10, "second")
    agg = store.aggregate(stat(by="client"), w, 3)
    assert len(agg.keys) == 3 and agg.elements == 12
    for i in range(w.points):
        parts = sum(v[i] for v in agg.values) + agg.other[i]
        assert parts == pytest.approx(agg.total[i])
    # top keys are the largest over the range, in order
    full = store.aggregate(stat(by="client"), w, 100)
    ranked = sorted(zip(full.key_means, full.keys), key=lambda x: (-x[0], x[1]))
    assert agg.keys == [k for _, k in ranked[:3]]
    assert agg.other_mean == pytest.approx(sum(m for m, _ in ranked[3:]))


def test_filters_equality_and_set(store):
    store.ingest(random_nfs_frames(NOW, 60, clients=4), received_at=NOW + 61)
    w = Window(NOW, NOW + 60, 60, "second")
    by_client = store.aggregate(stat(by="client"), w, 10)
    means = dict(zip(by_client.keys, by_client.key_means))
    one = store.aggregate(stat(client=["10.0.0.1"]), w, 10)
    assert one.total[0] == pytest.approx(means["10.0.0.1"])
    two = store.aggregate(stat(client=["10.0.0.1", "10.0.0.2"]), w, 10)
    assert two.total[0] == pytest.approx(means["10.0.0.1"] + means["10.0.0.2"])


def test_duplicate_sequence_is_acknowledged_not_stored(tmp_path):
    store = DuckDBStore(tmp_path / "d.duckdb")
    fr = nfs_frame(NOW, [("10.0.0.1", "read", "/a", 5, 50, {})], seq=42)
    assert store.ingest([fr], received_at=NOW + 1).accepted == 1
    again = store.ingest([fr, fr], received_at=NOW + 2)
    assert (again.accepted, again.duplicates) == (0, 2)
    older = nfs_frame(NOW + 1, [("10.0.0.1", "read", "/a", 5, 50, {})], seq=41)
    assert store.ingest([older], received_at=NOW + 2).duplicates == 1
    assert store.aggregate(stat(), Window(NOW, NOW + 2, 2, "second"), 1).total == [2.5]
    # the high-water mark survives a restart
    store.close()
    s2 = DuckDBStore(tmp_path / "d.duckdb")
    try:
        assert s2.ingest([fr], received_at=NOW + 3).duplicates == 1
    finally:
        s2.close()


def test_concurrent_ingest_group_commits_without_loss_or_duplicates(store):
    import threading

    def agent(k):
        for f in random_nfs_frames(NOW, 40, seed=k, source=f"a{k}@h"):
            store.ingest([f], received_at=NOW + 41)
            store.ingest([f], received_at=NOW + 41)  # a retry: acknowledged, not stored

    threads = [threading.Thread(target=agent, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expected = sum(f.rows[i].count for k in range(8) for f in random_nfs_frames(NOW, 40, seed=k, source=f"a{k}@h")
                   for i in range(len(f.rows)))
    assert store.aggregate(stat(), Window(NOW, NOW + 40, 40, "second"), 1).total[0] * 40 == pytest.approx(expected)
    store.flush()  # the staged batches, in the hot table exactly once
    got = store._cur.execute("SELECT sum(count) FROM nfs_s_hot").fetchone()[0]
    assert got == expected
    assert store.aggregate(stat(), Window(NOW, NOW + 40, 40, "second"), 1).total[0] * 40 == pytest.approx(expected)
    assert store.high_water() == \
        {f"a{k}@h": NOW + 39 for k in range(8)}


def test_high_water_never_misses_a_mark_a_flush_is_committing(store):
    """A flush takes the pending marks before its transaction commits; high_water() read between
    the two once missed the newest acknowledged seq (the agent's spool test met it in CI)."""
    import threading

    done = threading.Event()

    def flusher():
        while not done.is_set():
            store.flush()

    t = threading.Thread(target=flusher)
    t.start()
    try:
        for f in random_nfs_frames(NOW, 200, seed=7, source="hw@h"):
            assert store.ingest([f], received_at=NOW + 201).stored
            assert store.high_water().get("hw@h") == f.seq
    finally:
        done.set()
        t.join()


def test_rejects_frames_outside_retention_and_future(store):
    old = nfs_frame(NOW - 49 * 3600, [("c", "read", "/a", 1, 1, {})], seq=1)
    fut = nfs_frame(NOW + 3600, [("c", "read", "/a", 1, 1, {})], seq=2)
    out = store.ingest([old, fut], received_at=NOW)
    assert out.accepted == 0 and len(out.rejected) == 2
    assert "older than the seconds retention" in out.rejected[0]["reason"]
    assert "ahead of the server clock" in out.rejected[1]["reason"]


def _group_sums(store, table, dims, lo, hi):
    cols = ", ".join(dims)
    q = f"SELECT {cols}, sum(count), sum(bytes), sum(lat_sum), sum(l12), sum(l20), sum(l22) FROM {table} " \
        f"WHERE ts >= {lo} AND ts < {hi} GROUP BY ALL ORDER BY ALL"
    return store._cur.execute(q).fetchall()


def test_rollups_equal_the_sum_of_their_seconds(store):
    store.ingest(random_nfs_frames(NOW, 3 * 60 + 30), received_at=NOW + 200)
    assert store.rollup(NOW + 200) == 3  # the 4th minute is still open
    dims = ["host", "client", "proto", "op", "share", "file"]
    secs = "(SELECT * FROM nfs_s UNION ALL SELECT * FROM nfs_s_hotv)"
    for m in range(3):
        lo, hi = NOW + 60 * m, NOW + 60 * (m + 1)
        assert _group_sums(store, "nfs_m", dims, lo, hi) == _group_sums(store, secs, dims, lo, hi)
        assert _group_sums(store, "nfs_m", dims, lo, hi)  # not vacuous
    # a late frame re-dirties its minute, and the rollup follows
    late = random_nfs_frames(NOW + 30, 1, seed=99, source="late@h")
    store.ingest(late, received_at=NOW + 300)
    store.rollup(NOW + 3600 + 60)
    for m in range(4):
        lo, hi = NOW + 60 * m, NOW + 60 * (m + 1)
        assert _group_sums(store, "nfs_m", dims, lo, hi) == _group_sums(store, secs, dims, lo, hi)
    # the hour equals its minutes and its seconds
    assert _group_sums(store, "nfs_h", dims, NOW, NOW + 3600) == _group_sums(store, secs, dims, NOW, NOW + 3600)


def test_coarse_tiers_read_unrolled_periods_from_below(store):
    store.ingest(random_nfs_frames(NOW, 240), received_at=NOW + 241)
    w = Window(NOW, NOW + 240, 60, "minute")
    before = store.aggregate(stat(by="client"), w, 10)
    assert sum(before.total) > 0
    store.rollup(NOW + 3600 + 60)
    after = store.aggregate(stat(by="client"), w, 10)
    assert after.total == pytest.approx(before.total)
    assert after.keys == before.keys
    hw = Window(NOW, NOW + 3600, 3600, "hour")
    assert store.aggregate(stat(), hw, 1).total[0] * 3600 == pytest.approx(sum(before.total) * 60)


def test_retention_prunes_and_reports(tmp_path):
    s = DuckDBStore(tmp_path / "r.duckdb", retain={"second": 7200, "minute": 86400, "hour": 365 * 86400})
    try:
        s.ingest(random_nfs_frames(NOW, 120), received_at=NOW + 121)
        s.rollup(NOW + 4000)
        assert s.row_counts()["nfs_m"] > 0
        rep = s.prune(NOW + 3 * 3600)  # seconds gone, minutes kept
        assert rep.rows["nfs_s_hot"] == sum(len(f.rows) for f in random_nfs_frames(NOW, 120))
        assert "nfs_m" not in rep.rows
        counts = s.row_counts()
        assert counts["nfs_s_hot"] == 0 and counts["nfs_m"] > 0 and counts["nfs_h"] > 0
        rep = s.prune(NOW + 2 * 86400)
        assert rep.rows["nfs_m"] > 0 and s.row_counts()["nfs_h"] > 0
    finally:
        s.close()


def test_high_cardinality_files_fold_into_other(tmp_path):
    s = DuckDBStore(tmp_path / "f.duckdb", top_files=3)
    try:
        rows = [(f"10.0.0.{i % 2}", "read", f"/f{i}", 10 + i, 0, {20: 10 + i}) for i in range(10)]
        out = s.ingest([nfs_frame(NOW, rows)], received_at=NOW + 1)
        assert out.folded_rows == 7
        w = Window(NOW, NOW + 1, 1, "second")
        by_file = s.aggregate(stat(by="file"), w, 100)
        assert set(by_file.keys) == {"/f9", "/f8", "/f7", FILE_OTHER}
        assert by_file.approximate
        assert dict(zip(by_file.keys, by_file.key_means))[FILE_OTHER] == sum(10 + i for i in range(7))
        # other dimensions stay exact
        by_client = s.aggregate(stat(by="client"), w, 10)
        assert dict(zip(by_client.keys, by_client.key_means)) == {
            "10.0.0.0": sum(10 + i for i in range(0, 10, 2)), "10.0.0.1": sum(10 + i for i in range(1, 10, 2))}
        assert not by_client.approximate
        lat = s.heatmap(stat(), "latency", w)
        assert lat.buckets == [20] and lat.cells == [(0, 0, float(sum(10 + i for i in range(10))))]
    finally:
        s.close()


def test_heatmap_and_band_membership(store):
    rows = [("10.0.0.1", "read", "/a", 10, 0, {12: 9, 21: 1}), ("10.0.0.2", "read", "/b", 5, 0, {22: 5})]
    store.ingest([nfs_frame(NOW + i, rows) for i in range(4)], received_at=NOW + 5)
    w = Window(NOW, NOW + 4, 1, "second")
    hm = store.heatmap(stat(), "latency", w)
    assert hm.buckets == list(range(12, 23))
    cells = {(t, hm.buckets[b]): v for t, b, v in hm.cells}
    assert cells[(0, 12)] == 9 and cells[(3, 21)] == 1 and cells[(2, 22)] == 5 and len(cells) == 12
    band = Statistic(OPS, "client", (), ("latency", 21, 22))
    agg = store.aggregate(band, Window(NOW, NOW + 4, 4, "second"), 10)
    assert dict(zip(agg.keys, agg.key_means)) == {"10.0.0.2": 5.0, "10.0.0.1": 1.0}
    by_lat = store.aggregate(stat(by="latency"), w, 10)
    assert len(by_lat.keys) == 3 and by_lat.total == [15.0] * 4


def test_compaction_moves_rows_without_changing_answers(tmp_path):
    s = DuckDBStore(tmp_path / "c.duckdb", compact_every=60)
    try:
        s.ingest(random_nfs_frames(NOW, 300), received_at=NOW + 301)
        w = Window(NOW, NOW + 300, 30, "second")
        before = s.aggregate(stat(by="client"), w, 10)
        moved = s.compact(NOW + 400)
        assert moved > 0 and s.row_counts()["nfs_s"] == moved
        after = s.aggregate(stat(by="client"), w, 10)
        assert after.total == before.total and after.values == before.values
        assert s.compact(NOW + 400) == 0  # watermark persisted in memory
    finally:
        s.close()


def _ops_frames(t0, seconds, ops, *, share="/export", source="codes@h"):
    """One row a second per op, cycling through `ops`, on `share`."""
    return [Frame(source=source, seq=t, ts=t, family="nfs", host="nas1", rows=[
        dict(dims=dict(client=f"10.0.0.{i % 3}", op=op, proto="v3", share=share, file=f"/f{i % 5}"),
             count=i + 1, bytes=512 * i, lat_sum=1000 * (i + 1), hist={"latency": {"20": i + 1}})
        for i, op in enumerate(ops)]) for t in range(t0, t0 + seconds)]


def _codes(s, dim="op"):
    """The values of nfs_s's `dim` as its ENUM, or None if it is VARCHAR."""
    (kind,), = s._cur.execute("SELECT data_type FROM information_schema.columns WHERE table_name = 'nfs_s' "
                              "AND column_name = ?", [dim]).fetchall()
    if not kind.startswith("ENUM"):
        return None
    return s._cur.execute(f"SELECT enum_range(first({dim})) FROM (SELECT {dim} FROM nfs_s LIMIT 1)").fetchone()[0]


def test_settled_seconds_keep_few_valued_dimensions_as_codes_widened_as_values_come(tmp_path):
    t0 = NOW - NOW % 3600
    s = DuckDBStore(tmp_path / "c.duckdb", compact_every=60, clock=lambda: NOW)
    ref = DuckDBStore(tmp_path / "ref.duckdb", compact_every=60, clock=lambda: NOW)  # never compacted: strings
    try:
        first = _ops_frames(t0, 60, ["write", "read"])
        later = _ops_frames(t0 + 60, 60, ["read", "commit", "write"], share="/it's")  # sorts between; a quote
        for x in (s, ref):
            x.ingest(first, received_at=t0 + 200)
        assert s.compact(t0 + 180) == 120
        assert _codes(s) == ["read", "write"] and _codes(s, "host") == ["nas1"] and _codes(s, "client") is None
        for x in (s, ref):
            x.ingest(later, received_at=t0 + 200)
        assert s.compact(t0 + 240) == 180
        assert _codes(s) == ["commit", "read", "write"] and _codes(s, "share") == ["/export", "/it's"]
        w = Window(t0, t0 + 120, 10, "second")
        for st in (stat(by="op"), stat(by="share"), stat(by="client", op=["commit"]), stat(BYTES, share=["/it's"])):
            _same(s.aggregate(st, w, 10), ref.aggregate(st, w, 10))
        assert s.aggregate(stat(op=["commit"]), w, 10).total == [0.0] * 6 + [2.0] * 6
        assert s.aggregate(stat(op=["nfs4-nope"]), w, 10).total == [0.0] * 12  # not a code: no rows, no error
        ops = [o for (o,) in s._cur.execute("SELECT op FROM nfs_s ORDER BY op").fetchall()]
        assert ops == sorted(ops) and set(ops) == {"commit", "read", "write"}  # codes sort as the strings
        s.close()
        s = DuckDBStore(tmp_path / "c.duckdb", compact_every=60, clock=lambda: NOW)
        assert s._codes[("nfs", "op")] == {"commit", "read", "write"}  # read back on open
    finally:
        s.close()
        ref.close()


def test_a_failed_compaction_forgets_the_codes_it_added(tmp_path):
    t0 = NOW - NOW % 3600
    s = DuckDBStore(tmp_path / "c.duckdb", compact_every=60, clock=lambda: NOW)
    try:
        s.ingest(_ops_frames(t0, 60, ["read"]) + _ops_frames(t0 + 60, 60, ["read", "remove"], source="b@h"),
                 received_at=t0 + 200)
        s.compact(t0 + 180)
        # Another writer holds a hot row the compaction deletes once it has widened op and moved
        # the rows: DuckDB refuses the second delete, and the compaction rolls back.
        other = s._db.cursor()
        other.begin()
        other.execute(f"DELETE FROM nfs_s_hot WHERE ts = {t0 + 100}")
        with pytest.raises(duckdb.TransactionException, match="[Cc]onflict"):
            s.compact(t0 + 240)
        assert _codes(s) == ["read"] and s._codes[("nfs", "op")] == {"read"}
        other.rollback()
        other.close()
        assert s.compact(t0 + 240) == 120  # widened again, not taken as done
        assert _codes(s) == ["read", "remove"]
    finally:
        s.close()


def test_a_dimension_past_the_code_cap_and_a_store_from_before_codes_keep_every_value(tmp_path, monkeypatch):
    import loupe.store.duckdb_store as ds

    t0 = NOW - NOW % 3600
    path = tmp_path / "c.duckdb"
    s = DuckDBStore(path, compact_every=60, clock=lambda: NOW)
    s.ingest(_ops_frames(t0, 60, ["read", "write"]), received_at=t0 + 300)
    s.compact(t0 + 180)
    s._cur.execute("ALTER TABLE nfs_s ALTER op TYPE VARCHAR")  # as a store written before codes
    s.close()
    monkeypatch.setattr(ds, "CODE_CAP", 3)
    s = DuckDBStore(path, compact_every=60, clock=lambda: NOW)
    try:
        assert s._codes[("nfs", "op")] is None
        s.ingest(_ops_frames(t0 + 60, 60, ["lookup"], source="b@h"), received_at=t0 + 300)
        s.compact(t0 + 240)
        assert _codes(s) == ["lookup", "read", "write"]  # the stored strings coded with the new one
        s.ingest(_ops_frames(t0 + 120, 60, ["access"], source="c@h"), received_at=t0 + 300)
        s.compact(t0 + 300)
        assert _codes(s) is None and s._uncoded == {"nfs.op"}  # four values: strings again, for good
        s.close()
        s = DuckDBStore(path, compact_every=60, clock=lambda: NOW)
        assert s._uncoded == {"nfs.op"} and s._codes[("nfs", "op")] is None
        s.ingest(_ops_frames(t0 + 180, 60, ["commit"], source="d@h"), received_at=t0 + 400)
        s.compact(t0 + 360)
        assert _codes(s) is None
        got = dict(s._cur.execute("SELECT op, sum(count) FROM nfs_s GROUP BY op").fetchall())
        assert got == {"read": 60, "write": 120, "lookup": 60, "access": 60, "commit": 60}
    finally:
        s.close()


CRASH_WRITER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {tests!r})
    from factories import random_nfs_frames
    from loupe.store.duckdb_store import DuckDBStore
    s = DuckDBStore({path!r})
    ack = open({ack!r}, "a", buffering=1)
    start = int(time.time()) - 600
    for i, fr in enumerate(random_nfs_frames(start, 100000, seed=3)):
        out = s.ingest([fr], received_at=time.time())
        ack.write(f"{{fr.seq}} {{out.rows}}\\n")
""")


def test_kill_9_during_ingest_loses_at_most_the_unacknowledged(tmp_path):
    path, ack = tmp_path / "k.duckdb", tmp_path / "ack"
    code = CRASH_WRITER.format(tests=os.path.dirname(__file__), path=str(path), ack=str(ack))
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.time() + 60
        while time.time() < deadline and (not ack.exists() or len(ack.read_text().splitlines()) < 300):
            time.sleep(0.2)
        assert ack.exists(), "writer never acknowledged a frame"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    acked = [tuple(map(int, line.split())) for line in ack.read_text().splitlines() if line.strip()]
    s = DuckDBStore(path)  # opens cleanly after the kill
    try:
        stored_seqs = {ts for (ts,) in s._cur.execute("SELECT DISTINCT ts FROM nfs_s_hot").fetchall()}
        n_rows = s._cur.execute("SELECT count(*) FROM nfs_s_hot").fetchone()[0]
        acked_rows = sum(r for _, r in acked)
        # every acknowledged frame is there; at most the one in flight beyond it
        assert {seq for seq, _ in acked} <= stored_seqs
        assert len(stored_seqs) - len(acked) in (0, 1)
        assert acked_rows <= n_rows <= acked_rows + 12
        # and the store takes the next frame after its high-water mark without duplicating
        last = max(stored_seqs)
        again = random_nfs_frames(last - 5, 6, seed=3)
        assert s.ingest(again, received_at=time.time()).accepted == 0
    finally:
        s.close()


def test_frame_validation_names_the_problem():
    with pytest.raises(ValueError, match="unknown dimension 'colour'"):
        Frame(source="a", seq=1, ts=NOW, family="nfs", host="h", rows=[{"dims": {"colour": "red"}}])
    with pytest.raises(ValueError, match="outside declared bounds 10..35"):
        Frame(source="a", seq=1, ts=NOW, family="nfs", host="h", rows=[{"hist": {"latency": {"99": 1}}}])
    with pytest.raises(ValueError, match="unknown family 'zfs'"):
        Frame(source="a", seq=1, ts=NOW, family="zfs", host="h", rows=[])
    with pytest.raises(ValueError, match="not a histogram of family cpu"):
        Frame(source="a", seq=1, ts=NOW, family="cpu", host="h", rows=[{"hist": {"latency": {"20": 1}}}])


# ---------------------------------------------------------------- totals tables
def _k_sums(store, tier, dim, lo, hi):
    return store._cur.execute(
        f"SELECT host, key, sum(count), sum(bytes), sum(lat_sum) FROM nfs_k_{tier} "
        f"WHERE dim = '{dim}' AND ts >= {lo} AND ts < {hi} GROUP BY ALL ORDER BY ALL").fetchall()


def _tier_sums(store, table, dim, lo, hi):
    return store._cur.execute(
        f"SELECT host, {dim}, sum(count), sum(bytes), sum(lat_sum) FROM {table} "
        f"WHERE ts >= {lo} AND ts < {hi} GROUP BY ALL ORDER BY ALL").fetchall()


def test_totals_equal_their_tiers_including_late_frames(store):
    frames = random_nfs_frames(NOW, 3 * 60 + 30, clients=7) + random_nfs_frames(NOW, 200, seed=5, host="nas2",
                                                                              source="b@h")
    store.ingest(frames, received_at=NOW + 200)
    store.rollup(NOW + 200)
    late = random_nfs_frames(NOW + 30, 2, seed=99, source="late@h")  # lands in a rolled-up minute
    assert store.ingest(late, received_at=NOW + 201).accepted == 2
    store.rollup(NOW + 201)
    store.rollup(NOW + 3 * 3600)  # hours too
    store.compact(NOW + 3 * 3600)
    secs = "(SELECT * FROM nfs_s UNION ALL SELECT * FROM nfs_s_hotv)"
    for dim in ("host", "client", "proto", "op", "share", "file"):
        for m in range(3):
            lo, hi = NOW + 60 * m, NOW + 60 * (m + 1)
            assert _k_sums(store, "m", dim, lo, hi) == _tier_sums(store, "nfs_m", dim, lo, hi) != []
        assert _k_sums(store, "h", dim, NOW, NOW + 3600) == _tier_sums(store, "nfs_h", dim, NOW, NOW + 3600) != []
    assert _k_sums(store, "m", "client", NOW, NOW + 60) == _tier_sums(store, secs, "client", NOW, NOW + 60)
    # per-second totals of the settled seconds, late rows included
    per_sec = "SELECT ts, host, sum(count), sum(bytes), sum(lat_sum) FROM {} GROUP BY ALL ORDER BY ALL"
    assert store._cur.execute(per_sec.format("nfs_k_s")).fetchall() == \
        store._cur.execute(per_sec.format("nfs_s")).fetchall() != []
    # a late frame for an already settled second adds a row; the sums still match
    store.ingest(random_nfs_frames(NOW + 40, 1, seed=7, source="later@h"), received_at=NOW + 3 * 3600)
    store.compact(NOW + 4 * 3600)
    assert store._cur.execute(per_sec.format("nfs_k_s")).fetchall() == \
        store._cur.execute(per_sec.format("nfs_s")).fetchall()


def _zigzag(rows):
    """`rows` (host, element, ts, ...) in the order the store sorts a span it writes: by element,
    each element's seconds ascending and descending in turn (then the rest ascending)."""
    turn = {e: i % 2 for i, e in enumerate(sorted({r[:2] for r in rows}))}
    return sorted(rows, key=lambda r: (r[:2], -r[2] if turn[r[:2]] else r[2], r[3:]))


def _same(a, b):
    assert a.keys == b.keys and a.elements == b.elements and a.approximate == b.approximate
    assert a.total == pytest.approx(b.total) and a.other == pytest.approx(b.other, abs=1e-9)
    for x, y in zip(a.values, b.values):
        assert x == pytest.approx(y)
    assert a.key_means == pytest.approx(b.key_means)


def test_breakdowns_from_totals_equal_the_general_path(tmp_path):
    store = DuckDBStore(tmp_path / "t.duckdb", compact_every=600, clock=lambda: NOW)
    end = NOW + 1500
    frames = random_nfs_frames(NOW, 1500, clients=9) + random_nfs_frames(NOW + 100, 1300, seed=4, host="nas2",
                                                                        source="b@h")
    store.ingest(frames, received_at=end + 1)
    store.rollup(end - 200)  # the last minutes stay dirty: read from the seconds
    store.compact(end - 180)  # the first 20 minutes settled, the rest hot
    store.ingest(random_nfs_frames(NOW + 90, 3, seed=8, source="late@h"), received_at=end + 1)  # re-dirties
    windows = [Window(NOW, end, 30, "second"), Window(NOW + 17, NOW + 1217, 1, "second"),
               Window(NOW, end, 300, "minute"), Window(NOW, NOW + 3600, 3600, "hour"),
               Window(NOW + 300, end - 60, 60, "minute")]
    try:
        for by in ("client", "op", "proto", "share", "host", "file"):
            for st in (stat(by=by), stat(BYTES, by=by), stat(by=by, host=["nas2"])):
                for w in windows:
                    store.use_totals = True
                    fast = store.aggregate(st, w, 3)
                    store.use_totals = False
                    slow = store.aggregate(st, w, 3)
                    _same(fast, slow)
                    for i in range(w.points):  # top-N + other still sum to the total
                        assert sum(v[i] for v in fast.values) + fast.other[i] == pytest.approx(fast.total[i])
    finally:
        store.close()


def test_rankings_from_whole_hours_equal_the_general_path(tmp_path):
    """Ranking over a range reads rolled-up hours from f_k_h; the answers must not change."""
    store = DuckDBStore(tmp_path / "h.duckdb", clock=lambda: NOW)
    frames = [f for k in range(0, 3 * 3600, 7) for f in random_nfs_frames(NOW + k, 1, seed=k, clients=12)]
    store.ingest(frames, received_at=NOW + 3 * 3600)
    store.rollup(NOW + 2 * 3600 + 100)  # hours 0 and 1 rolled up, hour 2 partly in minutes
    store.compact(NOW + 2 * 3600 + 200)  # hours 0 and 1 settled
    windows = [Window(NOW + 13, NOW + 3 * 3600 - 5, 30, "second"), Window(NOW, NOW + 3 * 3600, 300, "minute"),
               Window(NOW, NOW + 3 * 3600, 3600, "hour"), Window(NOW, NOW + 3 * 3600, 3600, "minute"),
               Window(NOW + 1800, NOW + 3 * 3600, 600, "minute")]
    try:
        for by in ("client", "op", "file"):
            for st in (stat(by=by), stat(BYTES, by=by)):
                for w in windows:
                    store.use_totals = True
                    fast = store.aggregate(st, w, 3)
                    store.use_totals = False
                    slow = store.aggregate(st, w, 3)
                    _same(fast, slow)
    finally:
        store.close()


def test_store_without_totals_tables_gets_them_on_open(tmp_path):
    path = tmp_path / "old.duckdb"
    s = DuckDBStore(path, clock=lambda: NOW)
    s.ingest(random_nfs_frames(NOW, 150), received_at=NOW + 200)
    s.rollup(NOW + 200)
    s.compact(NOW + 3 * 3600)
    want = s.aggregate(stat(by="client"), Window(NOW, NOW + 180, 60, "minute"), 2)
    for t in ("k_s", "k_m", "k_h"):  # as written before the totals tables existed
        s._cur.execute(f"DROP TABLE nfs_{t}")
    s.close()
    s = DuckDBStore(path, clock=lambda: NOW)
    try:
        assert s._cur.execute("SELECT count(*) FROM nfs_k_m").fetchone()[0] > 0
        _same(s.aggregate(stat(by="client"), Window(NOW, NOW + 180, 60, "minute"), 2), want)
    finally:
        s.close()


def test_high_water_marks_survive_folding_the_seq_log(tmp_path):
    path = tmp_path / "h.duckdb"
    s = DuckDBStore(path, clock=lambda: NOW)
    for k in range(3):
        s.ingest(random_nfs_frames(NOW, 5, source=f"s{k}@h"), received_at=NOW + 10)
    s.checkpoint()  # folds the log into seqs
    s.ingest(random_nfs_frames(NOW + 5, 2, source="s0@h"), received_at=NOW + 10)
    assert s.high_water() == {"s0@h": NOW + 6, "s1@h": NOW + 4, "s2@h": NOW + 4}
    s.close()
    s = DuckDBStore(path, clock=lambda: NOW)
    try:
        assert s.high_water() == {"s0@h": NOW + 6, "s1@h": NOW + 4, "s2@h": NOW + 4}
        assert s.ingest(random_nfs_frames(NOW + 6, 1, source="s0@h"), received_at=NOW + 10).duplicates == 1
    finally:
        s.close()


def test_a_closed_day_of_minutes_is_sorted_by_element_without_changing_answers(tmp_path):
    day = NOW - NOW % 86400
    s = DuckDBStore(tmp_path / "d.duckdb", retain={"second": 3 * 86400, "minute": 30 * 86400, "hour": 365 * 86400},
                    clock=lambda: NOW)
    frames = [f for k in range(0, 86400 + 3600, 907) for f in random_nfs_frames(day + k, 3, seed=k, clients=7)]
    s.ingest(frames, received_at=day + 86400 + 3600)
    s.rollup(day + 86400 + 3600)
    assert s.sort_minutes(day + 86400 + 3600) == s._cur.execute(
        f"SELECT (SELECT count(*) FROM nfs_m WHERE ts < {day + 86400}) + "
        f"(SELECT count(*) FROM nfs_k_m WHERE ts < {day + 86400})").fetchall()[0][0] > 0
    wins = [Window(day, day + 86400, 300, "minute"), Window(day + 3600, day + 86400 + 3600, 600, "minute")]
    stats = [stat(by="client"), stat(by="file", client=["10.0.0.3"]), stat(BYTES, by="op")]
    s2 = DuckDBStore(tmp_path / "ref.duckdb", clock=lambda: NOW)  # the same data, never re-sorted
    s2.ingest(frames, received_at=day + 86400 + 3600)
    s2.rollup(day + 86400 + 3600)
    try:
        assert s.sort_minutes(day + 86400 + 3600) == 0  # already done above, and the next day is open
        assert s._minutes_sorted == day + 86400
        order = s._cur.execute(f"SELECT host, client, ts, file FROM nfs_m WHERE ts >= {day} AND ts < {day + 86400} "
                               "ORDER BY rowid").fetchall()
        assert order == _zigzag(order) and len(order) > 100
        keys = s._cur.execute(f"SELECT dim, host, key, ts FROM nfs_k_m WHERE ts < {day + 86400} "
                              "ORDER BY rowid").fetchall()
        assert keys == sorted(keys)
        for st in stats:
            for w in wins:
                _same(s.aggregate(st, w, 3), s2.aggregate(st, w, 3))
            assert s.heatmap(st, "latency", wins[0]).cells == s2.heatmap(st, "latency", wins[0]).cells
        late = random_nfs_frames(day + 7, 1, seed=99, clients=7, source="late@h")  # into the sorted day
        for x in (s, s2):
            x.ingest(late, received_at=day + 86400 + 3600)
            x.rollup(day + 86400 + 3700)
        for st in stats:
            _same(s.aggregate(st, wins[0], 3), s2.aggregate(st, wins[0], 3))
    finally:
        s.close()
        s2.close()


def _sorted_seconds_store(path, day):
    """A store with a closed, settled UTC day of seconds (plus an hour of the next), and its frames."""
    s = DuckDBStore(path, retain={"second": 3 * 86400, "minute": 30 * 86400, "hour": 365 * 86400},
                    clock=lambda: NOW)
    frames = [f for k in range(0, 86400 + 3600, 601) for f in random_nfs_frames(day + k, 2, seed=k, clients=7)]
    s.ingest(frames, received_at=day + 86400 + 3600)
    s.compact(day + 86400 + 3600 + 200)  # every hour before day + 86400 + 3600 settles, hour by hour
    return s, frames


def test_a_closed_day_of_seconds_is_sorted_by_element_without_changing_answers(tmp_path):
    day = NOW - NOW % 86400
    now = day + 86400 + 3600 + 200
    s, frames = _sorted_seconds_store(tmp_path / "d.duckdb", day)
    s2 = DuckDBStore(tmp_path / "ref.duckdb", clock=lambda: NOW)  # the same data, never re-sorted
    s2.ingest(frames, received_at=day + 86400 + 3600)
    s2.compact(now)
    span = f"ts >= {day} AND ts < {day + 86400}"
    try:
        q = f"SELECT host, client, ts, file, count, lat_sum, l20 FROM nfs_s WHERE {span} ORDER BY rowid"
        before = s._cur.execute(q).fetchall()
        assert before != _zigzag(before)  # hour by hour: a client's day is 24 runs
        total = s._cur.execute("SELECT count(*), sum(count), sum(bytes) FROM nfs_s").fetchall()
        assert s.sort_seconds(now) == len(before) > 1000
        after = s._cur.execute(q).fetchall()
        assert sorted(after) == sorted(before)  # the same rows, each once,
        assert [r[:4] for r in after] == _zigzag([r[:4] for r in before])  # in the storage order
        assert s._cur.execute("SELECT count(*), sum(count), sum(bytes) FROM nfs_s").fetchall() == total
        assert s.sort_seconds(now) == 0  # the next day is still open
        wins = [Window(day, day + 86400, 300, "second"), Window(day + 3600, day + 86400 + 3600, 120, "second")]
        stats = [stat(by="client"), stat(by="file", client=["10.0.0.3"]), stat(BYTES, by="op")]
        for st in stats:
            for w in wins:
                _same(s.aggregate(st, w, 3), s2.aggregate(st, w, 3))
        assert s.heatmap(stat(), "latency", wins[0]).cells == s2.heatmap(stat(), "latency", wins[0]).cells
        late = random_nfs_frames(day + 7, 1, seed=99, clients=7, source="late@h")  # into the sorted day
        for x in (s, s2):
            x.ingest(late, received_at=now)
            x.compact(now + 3600)
        for st in stats:
            _same(s.aggregate(st, wins[0], 3), s2.aggregate(st, wins[0], 3))
        s.close()
        s = DuckDBStore(tmp_path / "d.duckdb", clock=lambda: NOW)
        assert s._seconds_sorted == day + 86400  # remembered: the day is not rewritten again,
        nxt = day + 86400  # only the next day's first two settled hours are merged into one run
        assert s.sort_seconds(now + 3600) == s._cur.execute(
            f"SELECT count(*) FROM nfs_s WHERE ts >= {nxt} AND ts < {nxt + 2 * 3600}").fetchone()[0] > 0
        assert s._seconds_sorted == day + 86400 and s.sort_seconds(now + 3600) == 0
    finally:
        s.close()
        s2.close()


H = 3600


@pytest.mark.parametrize("settled, done, spans", [
    (0, 0, []),                                      # nothing settled
    (1, 0, []),                                      # one hour: compaction sorted it already
    (2, 0, [(0, 2)]),
    (3, 2, []),                                      # hours 0-2 a run, hour 2 its own
    (4, 2, [(0, 4)]),                                # the carry: 0-2 and 2-3 and 3-4 become one
    (6, 4, [(4, 6)]),
    (7, 6, []),
    (8, 6, [(0, 8)]),
    (12, 0, [(0, 8), (8, 12)]),                      # catching up after a restart: only the runs of 12
    (12, 8, [(8, 12)]),
    (16, 14, [(0, 16)]),
    (23, 22, []),
    (24, 0, [(0, 16), (16, 24)]),                    # the day's end: clipped to the day
    (30, 0, [(0, 16), (16, 24)]),
])
def test_the_open_days_runs_merge_like_a_binary_counter(settled, done, spans):
    from loupe.store.duckdb_store import merge_spans

    day = NOW - NOW % 86400
    got = merge_spans(day, day + done * H, day + settled * H)
    assert [((a - day) // H, (b - day) // H) for a, b in got] == spans


def _runs(s, lo, hi):
    """nfs_s's (host, client, ts, file) of [lo, hi) in storage order, cut where a client comes
    before the one above it: a sorted run starts there."""
    rows = s._cur.execute(f"SELECT host, client, ts, file FROM nfs_s WHERE ts >= {lo} AND ts < {hi} "
                          "ORDER BY rowid").fetchall()
    cuts = [0] + [i for i in range(1, len(rows)) if rows[i][:2] < rows[i - 1][:2]] + [len(rows)]
    return [rows[a:b] for a, b in zip(cuts, cuts[1:])]


def _one_run(s, lo, hi):
    runs = _runs(s, lo, hi)
    return len(runs) == 1 and runs[0] == _zigzag(runs[0])


def test_the_open_days_settled_hours_are_merged_into_runs_without_changing_answers(tmp_path):
    """Seven settled hours of the open day: upkeep leaves hours 0-4 and 4-6 one run each (sorted by
    element across the hours), hour 6 as compaction left it; rows and answers are unchanged, and the
    merge is remembered across a restart."""
    day = NOW - NOW % 86400
    now = day + 7 * H + 200
    frames = [f for k in range(0, 7 * H + 60, 301) for f in random_nfs_frames(day + k, 2, seed=k, clients=7)]
    s = DuckDBStore(tmp_path / "m.duckdb", clock=lambda: NOW)
    s2 = DuckDBStore(tmp_path / "ref.duckdb", clock=lambda: NOW)  # the same data, never merged
    try:
        for x in (s, s2):
            x.ingest(frames, received_at=now)
            for h in range(1, 8):  # hours 0-7 settle as the hourly compaction settles them, each sorted alone
                x.compact(day + h * H + 120)
        q = "SELECT count(*), sum(count), sum(bytes), sum(lat_sum), sum(l20) FROM nfs_s"
        total = s._cur.execute(q).fetchall()
        assert len(_runs(s, day, day + 4 * H)) >= 4  # four hours: four runs
        rewritten = []
        while n := s.sort_seconds(now):
            rewritten.append(n)
        assert rewritten == [s._cur.execute(f"SELECT count(*) FROM nfs_s WHERE ts < {day + 4 * H}").fetchone()[0],
                             s._cur.execute(f"SELECT count(*) FROM nfs_s WHERE ts >= {day + 4 * H} "
                                            f"AND ts < {day + 6 * H}").fetchone()[0]]
        assert _one_run(s, day, day + 4 * H) and _one_run(s, day + 4 * H, day + 6 * H)
        assert len(_runs(s, day, day + 6 * H)) == 2  # two runs, not one
        assert s._cur.execute(q).fetchall() == total
        w = Window(day, day + 7 * H, 120, "second")
        for st in (stat(by="client"), stat(by="file", client=["10.0.0.3"]), stat(BYTES, by="op")):
            _same(s.aggregate(st, w, 3), s2.aggregate(st, w, 3))
        assert s.heatmap(stat(), "latency", w).cells == s2.heatmap(stat(), "latency", w).cells
        s.close()
        s = DuckDBStore(tmp_path / "m.duckdb", clock=lambda: NOW)
        assert s.sort_seconds(now) == 0  # remembered: nothing is rewritten again
        s.ingest([f for k in range(7 * H + 60, 8 * H + 60, 301)
                  for f in random_nfs_frames(day + k, 2, seed=k, clients=7)], received_at=now + H)
        s.compact(now + H)  # hour 7 settles: the carry makes hours 0-8 one run
        eight = s._cur.execute(f"SELECT count(*) FROM nfs_s WHERE ts < {day + 8 * H}").fetchone()[0]
        assert s.sort_seconds(now + H) == eight
        assert _one_run(s, day, day + 8 * H)
    finally:
        s.close()
        s2.close()


def test_a_failed_sort_of_seconds_keeps_the_day_and_ingest_goes_on_beside_it(tmp_path):
    """The re-sort is one transaction, and runs outside the write lock: a flush commits while it
    is open, and a failure part-way leaves every row where it was, to be sorted again later."""
    import threading

    day = NOW - NOW % 86400
    now = day + 86400 + 3600 + 200
    s, _ = _sorted_seconds_store(tmp_path / "d.duckdb", day)
    real = s._resort
    flushed = []

    def ingest_beside(cur, table, order, lo, hi):
        n = real(cur, table, order, lo, hi)
        if table == "nfs_s":  # the day is rewritten, uncommitted: another thread ingests and flushes
            def other():
                s.ingest(random_nfs_frames(now - 100, 3, seed=5, source="beside@h"), received_at=now)
                flushed.append(s.flush())
                flushed.append(s.compact(now, wait=False))  # compaction and prune wait their turn
                flushed.append(s.prune(now, wait=False))
            t = threading.Thread(target=other)
            t.start()
            t.join(timeout=30)
            assert not t.is_alive(), "a flush waited for the re-sort"
            raise RuntimeError("disk full")
        return n

    q = "SELECT count(*), sum(count), sum(bytes), sum(l20) FROM nfs_s"
    total = s._cur.execute(q).fetchall()
    order = s._cur.execute(f"SELECT ts, client FROM nfs_s WHERE ts < {day + 86400} ORDER BY rowid").fetchall()
    s._resort = ingest_beside
    try:
        with pytest.raises(RuntimeError, match="disk full"):
            s.sort_seconds(now)
        assert flushed[0] > 0 and flushed[1] == 0 and flushed[2] is None
        assert s._cur.execute(q).fetchall() == total
        assert s._cur.execute(f"SELECT ts, client FROM nfs_s WHERE ts < {day + 86400} ORDER BY rowid").fetchall() == order
        assert s._seconds_sorted is None
        del s._resort  # the next try succeeds
        assert s.sort_seconds(now) == len(order)
        assert s._cur.execute(q).fetchall() == total
    finally:
        s.close()


def test_close_interrupts_a_sort_of_seconds_and_the_day_is_sorted_after_a_restart(tmp_path):
    import threading

    day = NOW - NOW % 86400
    now = day + 86400 + 3600 + 200
    s, _ = _sorted_seconds_store(tmp_path / "d.duckdb", day)
    q = "SELECT count(*), sum(count), sum(bytes), sum(l20) FROM nfs_s"
    total = s._cur.execute(q).fetchall()
    real = s._resort
    busy = threading.Event()

    def long_resort(cur, table, order, lo, hi):  # a day that takes a while to rewrite
        n = real(cur, table, order, lo, hi)
        busy.set()
        cur.execute("SELECT sum(hash(range)) FROM range(2000000000)").fetchall()  # ~13 s unless interrupted
        return n

    s._resort = long_resort
    errors = []
    t = threading.Thread(target=lambda: errors.append(pytest.raises(Exception, s.sort_seconds, now)))
    t.start()
    assert busy.wait(30)
    s.close()  # returns promptly: the re-sort is interrupted and rolled back
    t.join(timeout=30)
    assert not t.is_alive() and "nterrupt" in str(errors[0].value)
    s = DuckDBStore(tmp_path / "d.duckdb", clock=lambda: NOW)
    try:
        assert s._cur.execute(q).fetchall() == total and s._seconds_sorted is None
        assert s.sort_seconds(now) > 0 and s._cur.execute(q).fetchall() == total
    finally:
        s.close()


def _fast_equals_slow(store, stats, windows, top=3):
    for st in stats:
        for w in windows:
            store.use_totals = True
            fast = store.aggregate(st, w, top)
            store.use_totals = False
            slow = store.aggregate(st, w, top)
            store.use_totals = True
            _same(fast, slow)
            assert sum(fast.total) > 0  # not vacuous


def test_hot_seconds_from_five_second_totals_equal_the_general_path(tmp_path):
    """The hot table's per-element totals per 5 s (f_k_t) answer the newest seconds; late
    frames re-dirty their period, compaction drops the periods it settles; answers never change."""
    store = DuckDBStore(tmp_path / "t.duckdb", compact_every=600, clock=lambda: NOW)
    end = NOW + 900
    frames = random_nfs_frames(NOW, 900, clients=9) + random_nfs_frames(NOW + 50, 800, seed=4, host="nas2",
                                                                       source="b@h")
    store.ingest(frames, received_at=end + 1)
    store.rollup(end - 40)  # the last 40 s of periods stay dirty: read raw
    kt = store._cur.execute("SELECT count(DISTINCT ts), min(ts), max(ts) FROM nfs_k_t").fetchone()
    assert kt[0] == (end - 40 - 5 - 5 - NOW) // 60 + 1 and kt[1] == NOW  # a row per minute with a due period
    params: list = []
    w15 = Window(NOW + 20, end - 5, 15, "second")
    sql = store._totals_sql(stat(by="client"), w15, params, per_key=True, grain=15)
    assert "nfs_k_t" in sql and "nfs_s_hot " in sql  # the totals, and raw seconds for the unrolled edge
    windows = [w15, Window(NOW, end, 5, "second"), Window(NOW + 3, end, 10, "second"),
               Window(NOW, end, 12, "second"), Window(NOW, end, 60, "minute")]
    stats = [stat(by="client"), stat(BYTES, by="op"), stat(by="host"), stat(by="client", host=["nas2"])]
    try:
        _fast_equals_slow(store, stats, windows)
        # a late frame into a rolled-up period: its period is dirty again until the next rollup
        store.ingest(random_nfs_frames(NOW + 101, 1, seed=77, clients=30, source="late@h"), received_at=end + 2)
        assert ("nfs", "t", NOW + 100) in store._dirty
        _fast_equals_slow(store, stats, windows)
        store.rollup(end + 60)
        assert ("nfs", "t", NOW + 100) not in store._dirty
        minute = store._cur.execute(f"SELECT sum(list_sum(count)) FROM nfs_k_t WHERE dim = 'client' "
                                    f"AND ts = {NOW + 60}").fetchone()[0]
        assert minute == store._cur.execute(f"SELECT sum(count) FROM nfs_s_hot WHERE ts >= {NOW + 60} "
                                            f"AND ts < {NOW + 120}").fetchone()[0]  # the late rows included
        _fast_equals_slow(store, stats, windows)
        store.compact(NOW + 720 + 120)  # seconds before NOW + 600 settle; their 5 s totals go
        assert store._cur.execute(f"SELECT count(*) FROM nfs_k_t WHERE ts < {NOW + 600}").fetchone()[0] == 0
        _fast_equals_slow(store, stats, windows)
    finally:
        store.close()


def test_store_without_hot_totals_gets_them_on_open(tmp_path):
    """A store that kept f_k_s for settled seconds only and had f_k_t in its first shape: opening
    it adds the hot seconds to f_k_s and rebuilds f_k_t."""
    path = tmp_path / "old.duckdb"
    s = DuckDBStore(path, clock=lambda: NOW)
    s.ingest(random_nfs_frames(NOW, 300, clients=7), received_at=NOW + 301)
    s.rollup(NOW + 400)
    windows = [Window(NOW, NOW + 300, 15, "second"), Window(NOW, NOW + 300, 60, "minute")]
    want = [s.aggregate(stat(by="client"), w, 3) for w in windows]
    s._cur.execute("DROP TABLE nfs_k_t")  # as the first version of it was shaped: a row per period
    s._cur.execute("CREATE TABLE nfs_k_t (ts BIGINT, dim VARCHAR, host VARCHAR, key VARCHAR, count BIGINT, "
                   "bytes BIGINT, lat_sum BIGINT)")
    s._cur.execute("INSERT INTO nfs_k_t VALUES (0, 'client', 'h', 'x', 1, 1, 1)")
    s._cur.execute("DELETE FROM nfs_k_s")  # nothing settled: all of it hot
    s._cur.execute("DELETE FROM meta WHERE key = 'hot_totals'")
    s.close()
    s = DuckDBStore(path, clock=lambda: NOW)
    try:
        assert s._cur.execute("SELECT count(*) FROM nfs_k_t").fetchone()[0] == 0
        s.rollup(NOW + 400)
        assert s._cur.execute("SELECT count(DISTINCT ts) FROM nfs_k_t").fetchone()[0] == 5  # minutes
        for w, a in zip(windows, want):
            _same(s.aggregate(stat(by="client"), w, 3), a)
    finally:
        s.close()


SECS = "(SELECT * FROM nfs_s UNION ALL SELECT * FROM nfs_s_hotv)"
DIMS = ["host", "client", "proto", "op", "share", "file"]


def _two_hosts(store):
    frames = random_nfs_frames(NOW, 210) + random_nfs_frames(NOW, 210, seed=5, host="nas2", source="b@h")
    assert store.ingest(frames, received_at=NOW + 211).accepted == 420
    store.rollup(NOW + 3600 + 60)  # minutes and the hour rolled up
    return frames


def _host_sums(store, table, host, lo, hi):
    return [r for r in _group_sums(store, table, DIMS, lo, hi) if r[0] == host]


def test_deleting_a_hosts_range_takes_exactly_its_seconds_and_rebuilds_the_edges(store):
    _two_hosts(store)
    keep = {(h, lo, hi): _host_sums(store, SECS, h, lo, hi)
            for h in ("nas1", "nas2") for lo, hi in ((NOW, NOW + 30), (NOW + 90, NOW + 210), (NOW + 30, NOW + 90))}
    nas2_minutes = _host_sums(store, "nfs_m", "nas2", NOW, NOW + 3600)
    in_range = store._cur.execute("SELECT count(*) FROM nfs_s_hot WHERE host = 'nas1' AND ts >= ? AND ts < ?",
                                  [NOW + 30, NOW + 90]).fetchone()[0]
    dry = store.delete_data("nas1", NOW + 30, NOW + 90, dry_run=True, now=NOW + 3700)
    assert _host_sums(store, SECS, "nas1", NOW + 30, NOW + 90) == keep[("nas1", NOW + 30, NOW + 90)] != []
    rep = store.delete_data("nas1", NOW + 30, NOW + 90, now=NOW + 3700)
    assert rep.rows == dry.rows and rep.rows["nfs_s_hot"] == in_range > 0
    assert rep.rows["nfs_m"] > 0 and rep.rows["nfs_h"] > 0 and rep.rows["nfs_k_s"] == 60
    assert rep.recomputed == [("minute", NOW), ("minute", NOW + 60), ("hour", NOW)]
    # the range is gone, the rest of nas1 and all of nas2 are as they were
    assert _host_sums(store, SECS, "nas1", NOW + 30, NOW + 90) == []
    for (h, lo, hi), before in keep.items():
        if (h, lo) != ("nas1", NOW + 30):
            assert _host_sums(store, SECS, h, lo, hi) == before
    # the edge minutes and the hour are rebuilt from what remains: every tier agrees again
    store.rollup(NOW + 3600 + 120)
    for m in range(4):
        lo, hi = NOW + 60 * m, NOW + 60 * (m + 1)
        assert _group_sums(store, "nfs_m", DIMS, lo, hi) == _group_sums(store, SECS, DIMS, lo, hi) != []
    assert _group_sums(store, "nfs_h", DIMS, NOW, NOW + 3600) == _group_sums(store, SECS, DIMS, NOW, NOW + 3600)
    assert _host_sums(store, "nfs_m", "nas2", NOW, NOW + 3600) == nas2_minutes
    for dim in DIMS:
        assert _k_sums(store, "m", dim, NOW, NOW + 240) == _tier_sums(store, "nfs_m", dim, NOW, NOW + 240)
        assert _k_sums(store, "h", dim, NOW, NOW + 3600) == _tier_sums(store, "nfs_h", dim, NOW, NOW + 3600)
    per_sec = "SELECT ts, host, sum(count) FROM {} GROUP BY ALL ORDER BY ALL"
    assert store._cur.execute(per_sec.format("nfs_k_s")).fetchall() == \
        store._cur.execute(per_sec.format("(SELECT * FROM nfs_s_hotv)")).fetchall()
    # the API's answer over the range is nas2's alone, by every path (the 5 s hot totals included)
    assert store.aggregate(stat(by="host"), Window(NOW + 30, NOW + 90, 60, "second"), 10).keys == ["nas2"]
    _fast_equals_slow(store, [stat(by="client"), stat(by="host"), stat(BYTES, by="op")],
                      [Window(NOW, NOW + 210, 5, "second"), Window(NOW + 20, NOW + 200, 15, "second"),
                       Window(NOW, NOW + 240, 60, "minute")])


def test_a_dry_run_deletes_nothing(store):
    _two_hosts(store)
    before = store.row_counts()
    rep = store.delete_data(None, None, NOW + 60, dry_run=True, now=NOW + 3700)
    assert rep.rows["nfs_s_hot"] == sum(n for n, in store._cur.execute(
        "SELECT count(*) FROM nfs_s_hot WHERE ts < ?", [NOW + 60]).fetchall()) > 0
    assert store.row_counts() == before and store.hosts() == ["nas1", "nas2"]


def test_deleting_a_whole_host_forgets_it_and_its_replayed_frames_stay_deleted(store):
    frames = _two_hosts(store)
    rep = store.delete_data("nas2", None, None, now=NOW + 3700)
    assert rep.recomputed == [] and rep.rows["nfs_h"] > 0
    assert store.hosts() == ["nas1"]
    assert store._cur.execute("SELECT count(*) FROM nfs_s_hot WHERE host = 'nas2'").fetchone()[0] == 0
    assert _host_sums(store, "nfs_h", "nas1", NOW, NOW + 3600) != []
    # an agent replaying its spool does not bring the data back: its sequence marks are kept
    again = store.ingest([f for f in frames if f.host == "nas2"][-10:], received_at=NOW + 3700)
    assert (again.accepted, again.duplicates) == (0, 10)
    assert store._cur.execute("SELECT count(*) FROM nfs_s_hot WHERE host = 'nas2'").fetchone()[0] == 0


def test_an_edge_period_whose_finer_tier_is_gone_is_deleted_whole(tmp_path):
    s = DuckDBStore(tmp_path / "e.duckdb", retain={"second": 7200, "minute": 86400, "hour": 365 * 86400})
    try:
        _two_hosts(s)
        s.prune(NOW + 3 * 3600)  # the seconds are gone, minutes and hours kept
        rep = s.delete_data("nas1", NOW + 30, NOW + 90, now=NOW + 3 * 3600)
        assert rep.recomputed == [("hour", NOW)]  # the minutes have no seconds left to be rebuilt from
        assert _host_sums(s, "nfs_m", "nas1", NOW, NOW + 120) == []  # both straddling minutes, whole
        assert _host_sums(s, "nfs_m", "nas1", NOW + 120, NOW + 240) != []
        s.rollup(NOW + 3 * 3600)
        assert _group_sums(s, "nfs_h", DIMS, NOW, NOW + 3600) == _group_sums(s, "nfs_m", DIMS, NOW, NOW + 3600)
    finally:
        s.close()


def test_retention_set_by_an_admin_outlives_a_restart(tmp_path):
    default = {"second": 48 * 3600, "minute": 30 * 86400, "hour": 365 * 86400}
    s = DuckDBStore(tmp_path / "k.duckdb", retain=dict(default))
    assert s.retention_origin() is None
    s.set_retention({"second": 7200, "minute": 86400, "hour": 30 * 86400}, "alice", 1234.5)
    s.close()
    s = DuckDBStore(tmp_path / "k.duckdb", retain=dict(default))
    try:
        assert s.retain == {"second": 7200, "minute": 86400, "hour": 30 * 86400}
        assert s.retention_origin() == ("alice", 1234.5)
        # and it is what ingest and prune follow
        old = nfs_frame(NOW - 3 * 3600, [("c", "read", "/a", 1, 1, {})], seq=1)
        assert "older than the seconds retention" in s.ingest([old], received_at=NOW).rejected[0]["reason"]
    finally:
        s.close()



def test_config_documents_outlive_a_restart_and_stay_apart(tmp_path):
    s = DuckDBStore(tmp_path / "c.duckdb")
    assert s.config_get("tiles") is None
    s.config_put("tiles", {"list": [1, 2]})
    s.config_put("names", {"10.0.0.1": "a"})
    s.config_put("tiles", {"list": [3]})  # replaces, never duplicates
    s.close()
    s = DuckDBStore(tmp_path / "c.duckdb")
    try:
        assert s.config_get("tiles") == {"list": [3]}
        assert s.config_get("names") == {"10.0.0.1": "a"}
        assert s.retention_origin() is None  # a config key is not the retention row
    finally:
        s.close()


def test_extremes_give_each_coarse_points_lowest_and_highest_second(tmp_path):
    s = DuckDBStore(tmp_path / "x.duckdb", clock=lambda: NOW + 180)
    try:
        # minute 0: every second, 1..60 reads; minute 1: 30 reads a second but second 5 silent
        frames = [nfs_frame(NOW + i, [("c1", "read", "/a", i + 1, 0, {}), ("c2", "write", "/b", 7, 0, {})])
                  for i in range(60)]
        frames += [nfs_frame(NOW + 60 + i, [("c1", "read", "/a", 30, 0, {})]) for i in range(60) if i != 5]
        s.ingest(frames, received_at=NOW + 130)
        s.flush()
        s.rollup(NOW + 180)
        w = Window(NOW, NOW + 180, 60, "minute")
        lo, hi = s.extremes(stat(OPS, None, op=("read",)), w)
        assert (lo, hi) == ([1.0, 0.0, 0.0], [60.0, 30.0, 0.0])
        lo, hi = s.extremes(stat(OPS), w)  # both ops: 7 more each second of minute 0
        assert (lo[0], hi[0]) == (8.0, 67.0)
        # the minute tier's mean sits between them
        agg = s.aggregate(stat(OPS, None, op=("read",)), w, 1)
        assert lo[0] < agg.total[0] < hi[0] and agg.total[0] == pytest.approx(30.5)
        # a window older than the seconds retention has none
        old = DuckDBStore(tmp_path / "y.duckdb", clock=lambda: NOW + 49 * 3600)
        try:
            assert old.extremes(stat(OPS), w) is None
        finally:
            old.close()
    finally:
        s.close()


def test_extremes_of_a_point_still_open_bracket_its_mean(tmp_path):
    # 30 seconds of a minute have passed: the point's mean counts the other 30 as zeros, so must its min
    s = DuckDBStore(tmp_path / "o.duckdb", clock=lambda: NOW + 30)
    try:
        s.ingest([nfs_frame(NOW + i, [("c1", "read", "/a", 100, 0, {})]) for i in range(30)], received_at=NOW + 30)
        s.flush()
        w = Window(NOW, NOW + 60, 10, "second")
        lo, hi = s.extremes(stat(OPS), w)
        mean = s.aggregate(stat(OPS), w, 1).total
        assert all(a <= m + 1e-9 <= b + 2e-9 for a, m, b in zip(lo, mean, hi)), (lo, mean, hi)
        assert (lo[:3], hi[:3]) == ([100.0] * 3, [100.0] * 3) and hi[3:] == [0.0] * 3
        w = Window(NOW, NOW + 60, 60, "second")  # one point, half of it to come
        (lo1,), (hi1,) = s.extremes(stat(OPS), w)
        assert (lo1, hi1) == (0.0, 100.0) and lo1 <= s.aggregate(stat(OPS), w, 1).total[0] <= hi1
    finally:
        s.close()


def _hot_rows(ts0: int, seconds: int, per_second: int, seed: int = 0):
    """`seconds` seconds of `per_second` rows each in the hot table's layout, with random (incompressible)
    measures: a table grows on disk by about 30 bytes a row."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    n = seconds * per_second
    clients = np.array([f"10.0.{i // 250}.{i % 250}" for i in range(1000)], dtype=object)
    files = np.array([f"/export/d{i % 37}/f{i}" for i in range(5000)], dtype=object)
    lists = pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32)), pa.array(rng.integers(0, 8, n, np.uint16)))
    return pa.table({
        "ts": np.repeat(np.arange(ts0, ts0 + seconds, dtype=np.int64), per_second), "host": ["nas1"] * n,
        "client": clients[rng.integers(0, 1000, n)], "op": ["read"] * n, "proto": ["v3"] * n, "share": ["/export"] * n,
        "file": files[rng.integers(0, 5000, n)], "count": rng.integers(1, 1 << 20, n),
        "bytes": rng.integers(0, 1 << 40, n), "lat_sum": rng.integers(0, 1 << 40, n),
        "hk": lists, "hv": pa.ListArray.from_arrays(lists.offsets, pa.array(rng.integers(1, 1 << 30, n)))})


def _fill_hot(path, memory_limit):
    """Ten 200,000-row flushes, each checkpointed as the upkeep does; (the engine's peak memory after
    each, its limit, the store's size on disk)."""
    s = DuckDBStore(path, clock=lambda: NOW + 3600, memory_limit=memory_limit)
    try:
        peak = 0
        for k in range(10):
            s.append_arrow("nfs", _hot_rows(NOW + 10 * k, 10, 20_000, seed=k), dirty=False)
            s.flush()
            s.checkpoint()
            peak = max(peak, s.memory()[0])
        assert s.row_counts()["nfs_s_hot"] == 10 * 10 * 20_000
        return peak, s.memory()[1], s.size_bytes()
    finally:
        s.close()


def test_the_engine_keeps_to_its_memory_limit_while_the_hot_table_outgrows_it(tmp_path):
    """Blocks a checkpoint writes stay cached in the engine's buffer pool until its limit, so without
    one the server's memory grows with every second stored (DuckDB's default limit is 80 % of RAM).
    With one, the engine's memory stays under it however large the table on disk grows."""
    unbounded, _, size = _fill_hot(tmp_path / "a.duckdb", None)
    assert unbounded > 0.8 * size  # the peer: all that was written is still held
    peak, limit, size = _fill_hot(tmp_path / "b.duckdb", "20MiB")
    assert limit == 20 * 2**20 and size > 2 * limit  # the table outgrew the limit twice over
    assert 0 < peak <= limit


def test_a_refused_checkpoint_is_counted_and_the_next_one_folds_the_wal(tmp_path):
    """The engine refuses a checkpoint while another holds its lock (as while another write commits):
    checkpoint() says so instead of raising, and the upkeep tries again the next second."""
    import threading

    s = DuckDBStore(tmp_path / "c.duckdb", clock=lambda: NOW + 3600)
    try:
        s.checkpoint()
        s.append_arrow("nfs", _hot_rows(NOW, 2, 1000), dirty=False)
        s.flush()
        assert s.backlog()["wal_bytes"] > 0
        s._db.execute("SET debug_checkpoint_scan_sleep_ms = 200")  # per table: the other holds the lock for seconds
        other = s._db.cursor()
        started = threading.Event()

        def hold():
            started.set()
            other.execute("CHECKPOINT")

        t = threading.Thread(target=hold)
        t.start()
        started.wait()
        time.sleep(0.3)  # the other has begun
        assert s.checkpoint() is False
        assert s.backlog()["checkpoints_refused"] == 1
        t.join()
        s._db.execute("SET debug_checkpoint_scan_sleep_ms = 0")
        s.append_arrow("nfs", _hot_rows(NOW + 2, 2, 1000), dirty=False)
        s.flush()
        assert s.backlog()["wal_bytes"] > 0
        assert s.checkpoint() is True and s.backlog()["wal_bytes"] == 0
        assert s.backlog()["checkpoints_refused"] == 1
    finally:
        s.close()
