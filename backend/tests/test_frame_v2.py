"""Version-2 (columnar) frames store exactly what the same rows as version 1 store."""

import numpy as np
import pytest
from factories import NOW, random_nfs_frames
from hypothesis import given
from hypothesis import strategies as st

from loupe.catalog import FAMILIES, FILE_OTHER
from loupe.frame import Frame, rows_to_columns
from loupe.store.duckdb_store import DuckDBStore, _groups, _hist_lists

NFS = FAMILIES["nfs"]


def as_v2(fr: Frame) -> Frame:
    rows = [r.model_dump() for r in fr.rows]
    return Frame(v=2, source=fr.source, seq=fr.seq, ts=fr.ts, family=fr.family, host=fr.host,
                 columns=rows_to_columns(rows))


def canonical(table) -> list[tuple]:
    """Rows of a hot-layout table as comparable tuples, histograms as sorted (ordinal, count) pairs."""
    d = table.to_pylist()
    return sorted((r["ts"], r["host"], r["client"], r["proto"], r["op"], r["share"], r["file"], r["count"],
                   r["bytes"], r["lat_sum"], tuple(sorted(zip(r["hk"], r["hv"])))) for r in d)


@pytest.mark.parametrize("top_files", [500, 3])  # 3: most files fold into FILE_OTHER
def test_columns_convert_to_the_same_rows_as_rows(tmp_path, top_files):
    s = DuckDBStore(tmp_path / "v.duckdb", top_files=top_files)
    folded_total, files = 0, set()
    try:
        for fr in random_nfs_frames(NOW, 40, files=12, clients=4):
            want, folded = s._to_arrow(NFS, [fr])
            got, folded2 = s._frames_to_arrow(NFS, [as_v2(fr)])
            assert canonical(got) == canonical(want)
            assert folded2 == folded
            folded_total += folded
            files |= set(got.column("file").to_pylist())
        assert (folded_total > 0 and FILE_OTHER in files) == (top_files == 3)
    finally:
        s.close()


@pytest.mark.parametrize("seed", range(6))
def test_the_kept_files_among_ties_are_those_the_rows_path_keeps(tmp_path, seed):
    """Many files tie at the cut (counts of 0 weigh 1, like counts of 1): the names decide, by code
    point, the same for columns as for rows; names with non-ASCII characters included."""
    import random

    rnd = random.Random(seed)
    names = [f"/e/{rnd.choice(['a', 'B', 'é', 'ß', '日', 'z'])}{i}" for i in range(60)]
    rows = [{"dims": {"client": f"10.0.0.{rnd.randint(1, 3)}", "op": rnd.choice(["read", "write"]),
                      "file": rnd.choice(names)},
             "count": rnd.choice([0, 1, 1, 2, 5]), "bytes": rnd.randint(0, 9), "lat_sum": rnd.randint(0, 99),
             "hist": {"latency": {str(rnd.randint(10, 35)): 1}, "size": {str(rnd.randint(9, 20)): 2}}}
            for _ in range(150)]
    fr = Frame(source="a", seq=1, ts=NOW, family="nfs", host="h", rows=rows)
    for top in (1, 7, 20, 40):
        s = DuckDBStore(tmp_path / f"t{top}.duckdb", top_files=top)
        try:
            want, folded = s._to_arrow(NFS, [fr])
            got, folded2 = s._frames_to_arrow(NFS, [as_v2(fr)])
            assert canonical(got) == canonical(want) and folded2 == folded > 0
            assert len(set(got.column("file").to_pylist()) - {FILE_OTHER}) == top
        finally:
            s.close()


def test_folding_keeps_elements_apart_whatever_characters_their_labels_hold(tmp_path):
    """Labels come from agents: ("a\\0b", "c") and ("a", "b\\0c") are two clients/ops, folded or not."""
    s = DuckDBStore(tmp_path / "l.duckdb", top_files=1)
    fr = Frame(v=2, source="a", seq=1, ts=NOW, family="nfs", host="h", columns={
        "n": 4, "dims": {"client": ["a\x00b", "a", "a", "x"], "op": ["c", "b\x00c", "b\x00c", "read"],
                         "file": ["/f1", "/f2", "/f3", "/big"]},
        "count": [1, 2, 4, 100],
        "hist": {"latency": {"row": [0, 1, 2], "bucket": [14, 14, 20], "n": [1, 2, 4]}}})
    t, folded = s._frames_to_arrow(NFS, [fr])
    want, folded1 = s._to_arrow(NFS, [Frame(source="a", seq=1, ts=NOW, family="nfs", host="h", rows=[
        {"dims": {"client": c, "op": o, "file": f}, "count": n, "hist": {"latency": h}}
        for c, o, f, n, h in [("a\x00b", "c", "/f1", 1, {"14": 1}), ("a", "b\x00c", "/f2", 2, {"14": 2}),
                              ("a", "b\x00c", "/f3", 4, {"20": 4}), ("x", "read", "/big", 100, {})]])])
    assert canonical(t) == canonical(want) and folded == folded1 == 3
    other = {(r["client"], r["op"]): r["count"] for r in t.to_pylist() if r["file"] == FILE_OTHER}
    assert other == {("a\x00b", "c"): 1, ("a", "b\x00c"): 6}
    s.close()


def test_duplicate_buckets_sum_and_missing_columns_are_zero(tmp_path):
    s = DuckDBStore(tmp_path / "d.duckdb")
    fr = Frame(v=2, source="a", seq=1, ts=NOW, family="nfs", host="h", columns={
        "n": 2, "dims": {"client": ["c1", "c2"]}, "count": [3, 4],
        "hist": {"latency": {"row": [1, 0, 1, 1], "bucket": [20, 14, 20, 12], "n": [1, 3, 2, 0]}}})
    t, _ = s._frames_to_arrow(NFS, [fr])
    rows = t.to_pylist()
    assert [r["bytes"] for r in rows] == [0, 0] and [r["op"] for r in rows] == ["", ""]
    lat = {e: i for e, i in zip(range(10, 36), range(26))}
    assert list(zip(rows[0]["hk"], rows[0]["hv"])) == [(lat[14], 3)]
    assert list(zip(rows[1]["hk"], rows[1]["hv"])) == [(lat[20], 3)]  # 1 + 2, the zero entry dropped
    s.close()


def test_mixed_versions_in_one_request_are_stored_once_each(tmp_path):
    s = DuckDBStore(tmp_path / "m.duckdb")
    frames = random_nfs_frames(NOW, 20)
    mixed = [as_v2(f) if i % 2 else f for i, f in enumerate(frames)]
    out = s.ingest(mixed, received_at=NOW + 21)
    assert out.accepted == 20 and out.rows == sum(len(f.rows) for f in frames)
    s.flush()
    got = s._cur.execute("SELECT sum(count), sum(bytes) FROM nfs_s_hot").fetchall()[0]
    assert got == (sum(r.count for f in frames for r in f.rows), sum(r.bytes for f in frames for r in f.rows))
    s.close()


@pytest.mark.parametrize("columns, message", [
    ({"n": 2, "dims": {"client": ["a"]}}, "columns.dims.client: 1 values for n = 2 rows"),
    ({"n": 1, "count": [1, 2]}, "columns.count: 2 values for n = 1 rows"),
    ({"n": 1, "dims": {"colour": ["x"]}}, "unknown dimension 'colour'"),
    ({"n": 1, "hist": {"latency": {"row": [0], "bucket": [99], "n": [1]}}}, "bucket 99 outside declared bounds 10..35"),
    ({"n": 1, "hist": {"latency": {"row": [4], "bucket": [20], "n": [1]}}}, "row 4 does not exist"),
    ({"n": 1, "hist": {"latency": {"row": [0], "bucket": [20, 21], "n": [1]}}}, "differ in length"),
    ({"n": 1, "hist": {"colour": {"row": [0], "bucket": [20], "n": [1]}}}, "not a histogram of family nfs"),
    ({"n": 1, "dims": {"client": ["x" * 2000]}}, "value longer than 1024"),
    ({"n": 1, "count": [-1]}, "greater than or equal to 0"),
])
def test_bad_columns_get_an_error_naming_the_field(columns, message):
    with pytest.raises(ValueError, match=message):
        Frame(v=2, source="a", seq=1, ts=NOW, family="nfs", host="h", columns=columns)


def test_versions_and_their_row_fields_must_match():
    with pytest.raises(ValueError, match="carries its rows in 'columns'"):
        Frame(v=2, source="a", seq=1, ts=NOW, family="nfs", host="h", rows=[{"count": 1}])
    with pytest.raises(ValueError, match="'columns' needs frame version 2"):
        Frame(v=1, source="a", seq=1, ts=NOW, family="nfs", host="h", columns={"n": 0})
    with pytest.raises(ValueError, match=r"a JSON body carries versions 1 and 2 \(version 3 is an Arrow IPC body"):
        Frame(v=3, source="a", seq=1, ts=NOW, family="nfs", host="h", rows=[])


@pytest.mark.parametrize("rows", [
    [],
    [{"dims": {"client": "a"}, "count": 1, "bytes": 0, "lat_sum": 0}],
    [{"dims": {"client": "a", "op": "read"}, "count": 2, "bytes": 8192, "lat_sum": 900,
      "hist": {"latency": {"10": 1, "14": 1}, "size": {"13": 2}}},
     {"dims": {"client": "b", "op": "write"}, "count": 0, "bytes": 5, "lat_sum": 0}],
])
def test_rows_and_columns_convert_both_ways(rows):
    from loupe.columns import columns_to_rows, is_columns

    cols = rows_to_columns(rows)
    assert is_columns(cols) and not is_columns(rows)
    back = columns_to_rows(cols)
    assert back == [{**r, "dims": {k: r["dims"].get(k, "") for k in cols["dims"]}} for r in rows]


@given(st.lists(st.integers(-(2**62), 2**62), max_size=300) | st.lists(st.integers(0, 5), max_size=300))
def test_groups_are_numpys_unique_inverse_and_first_index(values):
    a = np.array(values, dtype=np.int64)
    inverse, first = _groups(a)
    _, want_first, want_inverse = np.unique(a, return_index=True, return_inverse=True)
    assert inverse.tolist() == want_inverse.ravel().tolist()
    assert first.tolist() == want_first.tolist()


@given(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 40), st.integers(0, 10**12)), max_size=200))
def test_histogram_lists_hold_each_rows_buckets_in_order_with_repeats_summed(entries):
    r, o, v = (np.array(c, dtype=np.int64).reshape(-1) for c in zip(*entries)) if entries else \
        (np.zeros(0, np.int64),) * 3
    hk, hv = _hist_lists(r, o, v, 8)
    want: dict[int, dict[int, int]] = {}
    for row, ordinal, n in entries:
        want.setdefault(row, {})
        want[row][ordinal] = want[row].get(ordinal, 0) + n
    for row in range(8):
        buckets = {b: n for b, n in sorted(want.get(row, {}).items()) if n}
        assert hk[row].as_py() == list(buckets) and hv[row].as_py() == list(buckets.values())
