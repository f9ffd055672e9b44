"""Frame version 3 (Arrow IPC bodies): the same rows stored as version 2, the same rules, named errors."""

import base64
import json
import random
import time

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from factories import pyarrow_body, random_nfs_frames, signed_in_app

from loupe.arrow_ipc import MEDIA_TYPE, encode_part, part_columns, request_body
from loupe.catalog import FAMILIES
from loupe.columns import rows_to_columns

TOKEN = "v3-token"
NOW = int(time.time())
JSON = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
ARROW = {"Authorization": f"Bearer {TOKEN}", "Content-Type": MEDIA_TYPE}


def app(tmp_path, name, **settings):
    return signed_in_app(tmp_path / name, TOKEN, **settings)


def random_frames(seed: int, seconds: int = 12) -> list[tuple[dict, dict]]:
    """(header, version-2 columns) of nfs, disk, cpu and net frames: histograms, non-ASCII labels,
    absent measures, many files (for the top-K fold), frames of one source out of seq order."""
    rnd = random.Random(seed)
    out = []
    nfs = random_nfs_frames(NOW - 100, seconds, seed=seed, files=40, source="nfs@nas1")
    for i, fr in enumerate(nfs):
        out.append(({"source": fr.source, "seq": 1000 + i, "ts": fr.ts, "family": "nfs", "host": fr.host},
                    rows_to_columns([r.model_dump() for r in fr.rows])))
    for i in range(seconds):
        ts = NOW - 100 + i
        disk = [{"dims": {"disk": rnd.choice(["sda", "sdb", "nvme0n1"]), "op": rnd.choice(["read", "write"])},
                 "count": rnd.randint(0, 500), "bytes": rnd.randint(0, 1 << 30),
                 "hist": {"latency": {str(rnd.randint(10, 35)): rnd.randint(1, 9)},
                          "offset": {str(rnd.randint(12, 45)): 1}}} for _ in range(rnd.randint(0, 6))]
        cpu = [{"dims": {"cpu": str(c), "mode": m, "application": rnd.choice(["", "nfsd", "ünïcode"])},
                "count": rnd.randint(0, 10**6)} for c in range(2) for m in ("user", "system")]
        net = [{"dims": {"interface": "eth0", "direction": d}, "count": rnd.randint(0, 9), "bytes": rnd.randint(0, 9)}
               for d in ("in", "out")]
        for fam, rows in (("disk", disk), ("cpu", cpu), ("net", net)):
            out.append(({"source": f"{fam}@nas1", "seq": 5000 - i, "ts": ts, "family": fam, "host": "nas1"},
                        rows_to_columns(rows)))
    return out


def v2_body(frames, request=None) -> bytes:
    return json.dumps({"frames": [{"v": 2, **h, "columns": c} for h, c in frames], **(request or {})}).encode()


def v3_body(frames, request=None) -> bytes:
    return request_body([({k: h[k] for k in ("source", "seq", "ts", "host")}, encode_part(h["family"], c))
                         for h, c in frames], request or {})


def arrow_table(family: str, cols: dict) -> pa.Table:
    """The same columns as pyarrow writes them: dimensions dictionary-encoded, measures uint32/int64,
    histograms map<int8, uint16>."""
    n, out = cols["n"], {}
    for d, vals in cols.get("dims", {}).items():
        out[d] = pa.array(vals, pa.string()).dictionary_encode()
    for m, t in (("count", pa.uint32()), ("bytes", pa.int64()), ("lat_sum", pa.uint64())):
        if cols.get(m) is not None:
            out[m] = pa.array(cols[m], t)
    for h, sh in (cols.get("hist") or {}).items():
        per_row = [[] for _ in range(n)]
        for r, b, k in zip(sh["row"], sh["bucket"], sh["n"]):
            per_row[r].append((b, k))
        out[h] = pa.array(per_row, pa.map_(pa.int8(), pa.uint16()))
    return pa.table(out) if out else pa.table({"count": pa.array(np.zeros(n, np.int64))})


def stored(data_dir) -> dict[str, list[tuple]]:
    """Every family's hot rows from the DuckDB file, as sorted tuples (histograms as sorted pairs)."""
    con = duckdb.connect(str(data_dir / "loupe.duckdb"), read_only=True)
    try:
        out = {}
        for fam in FAMILIES:
            rows = con.execute(f"SELECT * EXCLUDE (hk, hv), list_zip(hk, hv) FROM {fam}_s_hot").fetchall()
            out[fam] = sorted(r[:-1] + (tuple(sorted(map(tuple, r[-1]))),) for r in rows)
        return out
    finally:
        con.close()


@pytest.mark.parametrize("top_files", [500, 3])  # 3: most nfs files fold into (other files)
def test_v3_stores_exactly_the_rows_v2_stores(tmp_path, top_files):
    frames = random_frames(seed=top_files)
    answers = {}
    for name, body, headers in (("v2", v2_body(frames), JSON), ("v3", v3_body(frames), ARROW),
                                ("pyarrow", pyarrow_body([(h | {"v": 3}, arrow_table(h["family"], c))
                                                          for h, c in frames], {}), ARROW)):
        for c in app(tmp_path, name, top_files=top_files):
            r = c.post("/api/v1/ingest", content=body, headers=headers)
            assert r.status_code == 200, r.text
            answers[name] = r.json()
    assert answers["v2"] == answers["v3"] == answers["pyarrow"]
    assert answers["v2"]["accepted"] == len(frames) and (answers["v2"]["folded_rows"] > 0) == (top_files == 3)
    want = stored(tmp_path / "v2")
    assert sum(map(len, want.values())) == answers["v2"]["rows"] > 100
    assert stored(tmp_path / "v3") == want and stored(tmp_path / "pyarrow") == want


def test_duplicates_rejections_and_repeats_answer_as_v2(tmp_path):
    """The seq rule and idempotence: repeated bodies, a seq twice in one body, a seq below the
    source's mark, a second older than retention and one too far ahead, across requests."""
    frames = random_frames(seed=3, seconds=4)
    h, cols = frames[0]
    h = {**h, "source": "new@nas1"}
    extra = [({**h, "seq": 1}, cols), ({**h, "seq": 1}, cols), ({**h, "seq": 2, "ts": NOW - 48 * 3600}, cols),
             ({**h, "seq": 3, "ts": NOW + 3600}, cols), ({**h, "seq": 0}, cols)]
    posts = [frames[:6], frames, frames[3:], extra, frames[:1]]
    answers = {}
    for name, encode, headers in (("v2", v2_body, JSON), ("v3", v3_body, ARROW)):
        for c in app(tmp_path, name):
            answers[name] = [c.post("/api/v1/ingest", content=encode(p), headers=headers).json() for p in posts]
            for a in answers[name]:  # the reasons name the server's clock, which moved between the runs
                a["rejected"] = [{k: v for k, v in r.items() if k != "reason"} for r in a["rejected"]]
    assert answers["v2"] == answers["v3"]
    # disk, cpu and net count their seq down as time goes up: after their first frames, the later
    # seconds are below their source's mark, so duplicates
    assert [(a["accepted"], a["duplicates"]) for a in answers["v3"]] == [(6, 0), (4, 12), (0, 13), (2, 1), (0, 1)]
    assert [r["kind"] for r in answers["v3"][3]["rejected"]] == ["too_old", "future"]
    assert stored(tmp_path / "v2") == stored(tmp_path / "v3")


def test_request_fields_reach_the_source_list_and_metrics_count_formats(tmp_path):
    frames = random_frames(seed=4, seconds=2)
    request = {"agent": "nas1/agent", "sent_at": time.time(), "stats": {"cpu_pct": 1.5, "rss_bytes": 1 << 20},
               "status": [{"name": "bpf.disk", "families": ["disk"], "state": "active"}]}
    for c in app(tmp_path, "meta"):
        assert c.post("/api/v1/ingest", content=v3_body(frames, request), headers=ARROW).status_code == 200
        src = {s["name"]: s for s in c.get("/api/v1/sources").json()["sources"]}
        assert src["bpf.disk"]["state"] == "active" and src["bpf.disk"]["host"] == "nas1"
        assert c.get("/api/v1/sources").json()["agents"][0]["cpu_pct"] == 1.5
        assert c.post("/api/v1/ingest", content=v3_body([], request), headers=ARROW).json()["accepted"] == 0
        assert c.post("/api/v1/ingest", content=v2_body(frames), headers=JSON).json()["duplicates"] == len(frames)
        metrics = c.get("/metrics").text
        assert 'loupe_ingest_requests_total{format="arrow"} 2.0' in metrics
        assert 'loupe_ingest_requests_total{format="json"} 1.0' in metrics


def test_the_writer_round_trips_through_pyarrow_and_back():
    cols = {"n": 3, "dims": {"client": ["10.0.0.1", "", "ünï"], "op": ["read", "write", "read"]},
            "count": [0, 2**62, 3], "lat_sum": [1, 2, 3],
            "hist": {"latency": {"row": [2, 0, 2], "bucket": [35, 10, 12], "n": [1, 2, 3]}}}
    part = encode_part("nfs", cols)
    t = pa.ipc.open_stream(request_body([({"source": "a", "seq": 1, "ts": 1, "host": "h"}, part)], {})).read_all()
    assert t.column("client").to_pylist() == cols["dims"]["client"] and t.column("count").to_pylist() == cols["count"]
    # dimensions go as dictionaries: each distinct value once, an int32 code a row
    op = t.column("op").chunk(0)
    assert op.type == pa.dictionary(pa.int32(), pa.string()) and op.dictionary.to_pylist() == ["read", "write"]
    assert op.indices.to_pylist() == [0, 1, 0]
    assert t.column("latency").to_pylist() == [[(10, 2)], [], [(35, 1), (12, 3)]]
    back = part_columns(part)
    assert back["hist"]["latency"] == {"row": [0, 2, 2], "bucket": [10, 35, 12], "n": [2, 1, 3]}
    assert {k: back[k] for k in ("n", "dims", "count", "lat_sum")} == {k: cols[k] for k in ("n", "dims", "count",
                                                                                           "lat_sum")}
    with pytest.raises(ValueError, match="does not fit in int64"):
        encode_part("nfs", {"n": 1, "count": [2**64]})
    with pytest.raises(ValueError, match="must be strings"):
        encode_part("nfs", {"n": 2, "dims": {"op": ["read", 7]}})


# A part as agents wrote it before dimensions went as dictionaries (plain utf8 columns); one may wait
# in an agent's spool across an upgrade. 3 nfs rows: clients 10.0.0.1, .2, .1; ops read, write, read.
OLD_PART = base64.b64decode(
    "ZwAAAHsiZmFtaWx5IjoibmZzIiwibiI6MywiZmllbGRzIjpbWyJjbGllbnQiLCJzIl0sWyJvcCIsInMiXSxbImNvdW50IiwiaSJdLFsiYnl0ZXMi"
    "LCJpIl0sWyJsYXRlbmN5IiwiaCJdXX3/////8AEAABAAAAAMABcAFAAWABAACAAMAAAAAAAAAKAAAAAAAAAAGAAAAAQAAwAKABgACAAQABQAAAAA"
    "AAAAEAAAAAAAAAADAAAAAAAAAAwAAACQAAAAAAAAAAgAAAADAAAAAAAAAAAAAAAAAAAAAwAAAAAAAAAAAAAAAAAAAAMAAAAAAAAAAAAAAAAAAAAD"
    "AAAAAAAAAAAAAAAAAAAAAwAAAAAAAAAAAAAAAAAAAAIAAAAAAAAAAAAAAAAAAAACAAAAAAAAAAAAAAAAAAAAAgAAAAAAAAAAAAAAAAAAAAAAAAAR"
    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAEAAAAAAAAAAQAAAAAAAAABgAAAAAAAAAKAAAAAAAAAAAAAAAAAAAACgAAAAAAAAAEAAAAAAAAAA4"
    "AAAAAAAAAA0AAAAAAAAASAAAAAAAAAAAAAAAAAAAAEgAAAAAAAAAGAAAAAAAAABgAAAAAAAAAAAAAAAAAAAAYAAAAAAAAAAYAAAAAAAAAHgAAAAA"
    "AAAAAAAAAAAAAAB4AAAAAAAAABAAAAAAAAAAiAAAAAAAAAAAAAAAAAAAAIgAAAAAAAAAAAAAAAAAAACIAAAAAAAAAAQAAAAAAAAAkAAAAAAAAAAA"
    "AAAAAAAAAJAAAAAAAAAAEAAAAAAAAAAAAAAACAAAABAAAAAYAAAAMTAuMC4wLjExMC4wLjAuMjEwLjAuMC4xAAAAAAQAAAAJAAAADQAAAHJlYWR3"
    "cml0ZXJlYWQAAAABAAAAAAAAAAIAAAAAAAAAAwAAAAAAAAAAEAAAAAAAAAAAAAAAAAAAACAAAAAAAAAAAAAAAQAAAAEAAAACAAAADgAUAAAAAAAB"
    "AAAAAAAAAAMAAAAAAAAA")


def test_a_part_spooled_before_dictionaries_still_sends_beside_new_ones(tmp_path):
    """An upgraded agent sends what its spool holds: the old part reads back, goes in its own stream
    beside a part of the same columns written now, and both are stored alike."""
    old = part_columns(OLD_PART)
    assert old["dims"] == {"client": ["10.0.0.1", "10.0.0.2", "10.0.0.1"], "op": ["read", "write", "read"]}
    assert old["count"] == [1, 2, 3] and old["hist"]["latency"] == {"row": [0, 2], "bucket": [14, 20], "n": [1, 3]}
    new = encode_part("nfs", {**old, "dims": {"client": ["10.0.0.3"] * 3, "op": old["dims"]["op"]}})
    body = request_body([({"source": "s@h", "seq": 1, "ts": NOW - 9, "host": "h"}, OLD_PART),
                         ({"source": "s@h", "seq": 2, "ts": NOW - 8, "host": "h"}, new)], {})
    for c in app(tmp_path, "old"):
        r = c.post("/api/v1/ingest", content=body, headers=ARROW)
        assert r.status_code == 200 and r.json()["accepted"] == 2, r.text
    rows = stored(tmp_path / "old")["nfs"]
    assert sorted((r[1], r[2], r[4], r[7]) for r in rows) == [  # host, client, op, count
        ("h", "10.0.0.1", "read", 1), ("h", "10.0.0.1", "read", 3), ("h", "10.0.0.2", "write", 2),
        ("h", "10.0.0.3", "read", 1), ("h", "10.0.0.3", "read", 3), ("h", "10.0.0.3", "write", 2)]


def _coded(values: list[str], extra: list[str]) -> pa.DictionaryArray:
    """`values` as a dictionary whose values repeat (each twice, rows using both copies) and hold
    `extra` values no row uses."""
    distinct = list(dict.fromkeys(values))
    pos = {v: i for i, v in enumerate(distinct)}
    codes = [pos[v] + (len(distinct) if i % 2 else 0) for i, v in enumerate(values)]
    return pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), pa.array(distinct * 2 + extra))


def test_a_dictionary_with_repeated_and_unused_values_keeps_every_total(tmp_path):
    """A writer may repeat a dictionary value or leave values unused (Loupe's and pyarrow's never
    do): the server trusts the codes rather than hash every file name, so the file fold may treat the
    copies as two files, but every total by every dimension is the one plain strings give, and an
    unused value breaks no rule (not even the length limit)."""
    frames = [f for f in random_frames(seed=7, seconds=6) if f[0]["family"] == "nfs"]
    bodies = {"plain": [], "coded": []}
    for h, c in frames:
        plain = arrow_table("nfs", c)
        coded = plain.set_column(plain.schema.get_field_index("file"), "file",
                                 _coded(c["dims"]["file"], ["/never", "x" * 2000]))
        coded = coded.set_column(coded.schema.get_field_index("client"), "client",
                                 _coded(c["dims"]["client"], []))
        bodies["plain"].append((h | {"v": 3}, plain))
        bodies["coded"].append((h | {"v": 3}, coded))
    totals = {}
    for name, fr in bodies.items():
        for c in app(tmp_path, name, top_files=3):
            r = c.post("/api/v1/ingest", content=pyarrow_body(fr), headers=ARROW)
            assert r.status_code == 200 and r.json()["accepted"] == len(frames), r.text
        con = duckdb.connect(str(tmp_path / name / "loupe.duckdb"), read_only=True)
        totals[name] = {d: con.execute(f"SELECT {d}, sum(count), sum(bytes), sum(lat_sum), count(DISTINCT ts) "
                                       f"FROM nfs_s_hot GROUP BY ALL ORDER BY ALL").fetchall()
                        for d in ("client", "proto", "op", "share")}
        totals[name]["hist"] = con.execute("SELECT k, sum(v) FROM (SELECT unnest(hk) k, unnest(hv) v FROM "
                                           "nfs_s_hot) GROUP BY k ORDER BY k").fetchall()
        totals[name]["files"] = con.execute("SELECT sum(count) FROM nfs_s_hot WHERE file <> '(other files)'"
                                            ).fetchone()[0] > 0
        con.close()
    assert totals["coded"] == totals["plain"] and len(totals["plain"]["client"]) > 3
    body = one(pa.table({"file": pa.DictionaryArray.from_arrays(pa.array([1, 0], pa.int8()),
                                                                 pa.array(["/a", "é" * 1025]))}))
    for c in app(tmp_path, "long"):
        r = c.post("/api/v1/ingest", content=body, headers=ARROW)
        assert r.status_code == 422 and "frames.0.file: frame 0 (seq 1): value 0 is longer than 1024" in r.text


# ---------------------------------------------------------------------- bad bodies
H = {"v": 3, "source": "bad@h", "seq": 1, "ts": NOW - 5, "family": "nfs", "host": "h"}


def one(table, header=None, request=None, **kw) -> bytes:
    return pyarrow_body([({**H, **(header or {})}, table)], request, **kw)


def raw(table: pa.Table, metadata: dict) -> bytes:
    """One stream of one record batch with exactly this schema metadata."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema.with_metadata(metadata)) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


GOOD = one(pa.table({"client": ["a", "b"], "count": pa.array([1, 2], pa.int64())}))
COUNT = pa.table({"count": [1]})
STRINGS = pa.Array.from_buffers(pa.string(), 1, [None, pa.py_buffer(np.array([0, 2], np.int32)),
                                                 pa.py_buffer(b"\xff\xfe")])


def _delta_dictionaries() -> bytes:
    schema = pa.schema([("client", pa.dictionary(pa.int32(), pa.string()))]).with_metadata(
        {"loupe.frames": json.dumps([H, {**H, "seq": 2}])})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema, options=pa.ipc.IpcWriteOptions(emit_dictionary_deltas=True)) as w:
        d = pa.array(["a", "b", "c"])
        w.write_batch(pa.record_batch([pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), d[:2])], schema))
        w.write_batch(pa.record_batch([pa.DictionaryArray.from_arrays(pa.array([2], pa.int32()), d)], schema))
    return sink.getvalue().to_pybytes()


BAD = [
    # (what, body, status, words in the detail)
    ("empty body", b"", 400, "the body is empty"),
    ("not IPC at all", b'{"frames": []}', 400, "no IPC message at byte 0"),
    ("cut in the last message", GOOD[:-20], 400, "cut short"),
    ("no end-of-stream marker", GOOD[:-8], 400, "stream 0 is cut short at byte"),
    ("bytes after the last stream", GOOD + b"\x00" * 9, 400, "stream 1: no IPC message at byte"),
    ("compressed buffers", one(pa.table({"count": list(range(100))}),
                               options=pa.ipc.IpcWriteOptions(compression="zstd")), 400, "compressed"),
    ("delta dictionaries", _delta_dictionaries(), 400, "delta dictionary"),
    ("a record batch first", GOOD[GOOD.index(b"\xff\xff\xff\xff", 8):], 400, "starts with a Schema message"),
    ("no frame headers", raw(COUNT, {"loupe.request": "{}"}), 422, "streams.0.loupe.frames: missing"),
    ("frame headers not JSON", raw(COUNT, {"loupe.frames": "[{"}), 422, "streams.0.loupe.frames: not JSON"),
    ("frame headers not a list", raw(COUNT, {"loupe.frames": "{}"}), 422, "streams.0.loupe.frames: must be a JSON "
                                                                         "list"),
    ("fewer headers than batches", raw(COUNT, {"loupe.frames": "[]"}), 422,
     "streams.0.loupe.frames: 0 frame headers for 1 record batches"),
    ("a header not an object", raw(COUNT, {"loupe.frames": "[1]"}), 422, "frames.0: a frame header must be a JSON "
                                                                        "object"),
    ("request fields not an object", raw(COUNT, {"loupe.frames": json.dumps([H]), "loupe.request": "[]"}), 422,
     "request: must be a JSON object"),
    ("a header with version 2", one(pa.table({"count": [1]}), {"v": 2}), 422,
     "frames.0.v: frame 0 (seq 1): Value error, unsupported frame version 2; an Arrow IPC body carries version 3"),
    ("an unknown family", one(pa.table({"count": [1]}), {"family": "nfs4"}), 422, "frames.0.family"),
    ("a source with a space", one(pa.table({"count": [1]}), {"source": "a b"}), 422, "frames.0.source"),
    ("an unknown column", one(pa.table({"colour": ["red"]})), 422,
     "frames.0.colour: frame 0 (seq 1): unknown column for family nfs"),
    ("a dimension of integers", one(pa.table({"client": [1]})), 422, "frames.0.client: frame 0 (seq 1): a dimension "
                                                                   "is a string column"),
    ("a null dimension", one(pa.table({"client": pa.array(["a", None])})), 422, "frames.0.client: frame 0 (seq 1): "
                                                                                "a dimension holds no nulls"),
    ("a null behind a dictionary", one(pa.table({"op": pa.DictionaryArray.from_arrays(
        pa.array([0, 1]), pa.array(["read", None]))})), 422, "frames.0.op: frame 0 (seq 1): a dimension holds no"),
    ("a label too long", one(pa.table({"file": ["/a", "é" * 1025]})), 422,
     "frames.0.file: frame 0 (seq 1): value 1 is longer than 1024 characters"),
    ("invalid UTF-8", one(pa.table({"client": STRINGS})), 422, "frames.0.client: frame 0 (seq 1): invalid column data"),
    ("a negative count", one(pa.table({"count": [3, -1]})), 422,
     "frames.0.count: frame 0 (seq 1): value -1 at row 1 is below 0"),
    ("a count beyond 2**62", one(pa.table({"bytes": pa.array([2**63], pa.uint64())})), 422,
     "frames.0.bytes: frame 0 (seq 1): value 9223372036854775808 at row 0 is above 2**62"),
    ("a count in floating point", one(pa.table({"lat_sum": [1.5]})), 422, "frames.0.lat_sum: frame 0 (seq 1): a "
                                                                          "measure is an integer column"),
    ("a null count", one(pa.table({"count": pa.array([1, None], pa.int64())})), 422, "a measure holds no nulls"),
    ("a bucket out of bounds", one(pa.table({"latency": pa.array([[(99, 1)]], pa.map_(pa.int8(), pa.int64()))})),
     422, "frames.0.latency: frame 0 (seq 1): bucket 99 outside declared bounds 10..35"),
    ("negative events", one(pa.table({"size": pa.array([[(12, -4)]], pa.map_(pa.int8(), pa.int64()))})), 422,
     "frames.0.size: frame 0 (seq 1): value -4 at entry 0 is below 0"),
    ("a histogram as a list", one(pa.table({"latency": [[14, 20]]})), 422, "a histogram is a map<integer bucket "
                                                                          "exponent, integer events> column"),
    ("a null histogram row", one(pa.table({"latency": pa.array([None], pa.map_(pa.int8(), pa.int64()))})), 422,
     "a histogram holds no nulls"),
    ("a histogram of another family", one(pa.table({"latency": pa.array([[(14, 1)]], pa.map_(pa.int8(), pa.int64()))}),
                                          {"family": "cpu"}), 422, "frames.0.latency: frame 0 (seq 1): unknown column "
                                                                   "for family cpu"),
    ("a column twice", one(pa.Table.from_arrays([pa.array(["a"]), pa.array(["b"])], names=["op", "op"])), 422,
     "frames.0.op: frame 0 (seq 1): a column appears twice"),
    ("too many rows", one(pa.table({"count": pa.array(np.zeros(200_001, np.int8))})), 422,
     "frames.0: frame 0 (seq 1): 200001 rows; at most 200000 per frame"),
    ("the second frame bad", pyarrow_body([(H, COUNT), ({**H, "seq": 9}, pa.table({"count": [-1]}))]), 422,
     "frames.1.count: frame 1 (seq 9): value -1"),
    ("a request field wrong", one(pa.table({"count": [1]}), request={"stats": {"cpu_pct": -1, "rss_bytes": 0}}), 422,
     "request.stats.cpu_pct"),
    ("frames among the request's fields", one(pa.table({"count": [1]}), request={"frames": []}), 422,
     "request.frames: frames are record batches"),
    ("request fields in a later stream", one(pa.table({"count": [1]})) + one(pa.table({"op": ["x"]}), request={}),
     422, "streams.1.loupe.request: only the first stream"),
    ("a later stream without frames", GOOD + pyarrow_body([]), 422, "streams.1: a stream after the first must hold"),
    ("more than 10,000 frames", pyarrow_body([({**H, "seq": i}, pa.table({"count": pa.array([], pa.int64())}))
                                              for i in range(10_001)]), 422, "frames: more than 10000 frames"),
]


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    yield from signed_in_app(tmp_path_factory.mktemp("bad"), TOKEN, max_frame_bytes=4 << 20)


@pytest.mark.parametrize("what, body, status, words", BAD, ids=[b[0] for b in BAD])
def test_a_bad_body_gets_a_4xx_naming_the_problem(client, what, body, status, words):
    r = client.post("/api/v1/ingest", content=body, headers=ARROW)
    assert r.status_code == status, r.text
    detail = r.json()["detail"]
    assert words in detail, detail
    if status == 422:
        assert all(e["loc"][0] == "body" for e in r.json()["errors"])


def test_limits_count_characters_as_versions_1_and_2_do(client):
    r = client.post("/api/v1/ingest", content=one(pa.table({"file": ["é" * 1024]}), {"seq": 77}), headers=ARROW)
    assert r.status_code == 200 and r.json()["accepted"] == 1, r.text


def test_media_types_and_the_size_limit(client):
    r = client.post("/api/v1/ingest", content=GOOD, headers={**ARROW, "Content-Type": "text/plain"})
    assert r.status_code == 415 and MEDIA_TYPE in r.json()["detail"] and "application/json" in r.json()["detail"]
    r = client.post("/api/v1/ingest", content=GOOD, headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 415 and "unsupported media type (none)" in r.json()["detail"]
    r = client.post("/api/v1/ingest", content=GOOD, headers={**ARROW, "Content-Type": f"{MEDIA_TYPE}; x=1"})
    assert r.status_code == 200, r.text
    big = one(pa.table({"file": ["x" * 1000] * 5000}))
    r = client.post("/api/v1/ingest", content=big, headers=ARROW)
    assert r.status_code == 413 and "exceeds the limit" in r.json()["detail"]
    r = client.post("/api/v1/ingest", content=GOOD, headers={**ARROW, "Authorization": "Bearer wrong"})
    assert r.status_code == 401


@pytest.mark.parametrize("top_files", [500, 3])
def test_a_logged_body_replays_after_a_kill_as_the_rows_v2_stores(tmp_path, top_files):
    """A version-3 body is logged as it came and converted while its fsync runs; killed before any
    flush, the store converts it again from the log: the rows v2 stores, duplicates, rejections and a
    shifted clock included, each once."""
    from dataclasses import replace

    from loupe.frame import IngestRequest
    from loupe.frame_v3 import decode
    from loupe.store.duckdb_store import DuckDBStore
    from loupe.store.ingest_log import read_segment

    frames = random_frames(seed=top_files)
    h, cols = frames[0]
    h = {**h, "source": "new@nas1"}
    extra = [({**h, "seq": 1}, cols), ({**h, "seq": 1}, cols), ({**h, "seq": 2, "ts": NOW - 48 * 3600}, cols),
             ({**h, "seq": 3, "ts": NOW + 3600}, cols), ({**h, "seq": 4}, cols)]
    posts = [(frames[:6], 0), (frames, -7), (frames[3:], 0), (extra, 0)]  # (frames, clock shift)
    answers = {}
    for name in ("v2", "v3"):
        (tmp_path / name).mkdir()
        s = DuckDBStore(tmp_path / name / "loupe.duckdb", top_files=top_files)
        answers[name] = []
        for post, shift in posts:
            if name == "v2":
                got = [f.model_copy(update={"ts": f.ts + shift}) for f in
                       IngestRequest.model_validate_json(v2_body(post)).frames]
                out = s.ingest(got, received_at=time.time())
            else:
                body = v3_body(post)
                got = [replace(f, ts=f.ts + shift) for f in decode(body)[1]]
                out = s.ingest(got, received_at=time.time(), body=body)
                if out.accepted:  # else nothing is logged
                    (rec,) = [r for seg in s._log.segments() for r in read_segment(seg)[0]
                              if r.lsn == s._log.last_lsn]
                    assert rec.body == body and rec.tables == {}  # logged as sent, not converted
            answers[name].append((out.accepted, out.duplicates, [r["kind"] for r in out.rejected], out.rows))
        if name == "v2":
            s.close()
        else:  # killed: nothing flushed, the log holds every body
            assert s._cur.execute("SELECT count(*) FROM nfs_s_hot").fetchall() == [(0,)]
            s._log.close()
            s._db.close()
            s = DuckDBStore(tmp_path / name / "loupe.duckdb", top_files=top_files)
            s.close()
    assert answers["v2"] == answers["v3"]
    assert [a[:3] for a in answers["v3"]] == [(6, 0, []), (len(frames) - 6, 6, []), (0, len(frames) - 3, []),
                                             (2, 1, ["too_old", "future"])]
    want = stored(tmp_path / "v2")
    assert sum(map(len, want.values())) > 100 and stored(tmp_path / "v3") == want


def test_an_arrow_request_is_logged_as_its_body(tmp_path):
    from loupe.store.ingest_log import read_segment

    body = v3_body(random_frames(seed=6, seconds=2))
    for c in app(tmp_path, "route"):
        assert c.post("/api/v1/ingest", content=body, headers=ARROW).json()["accepted"] == 8
        log = c.app.state.loupe.store._log
        records = [r for seg in log.segments() for r in read_segment(seg)[0]]
        assert records[-1].body == body and len(records[-1].keep) == 8
