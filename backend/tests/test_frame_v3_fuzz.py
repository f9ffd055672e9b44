"""Random, truncated, corrupted and hostile Arrow IPC ingest bodies (frame version 3): always a 4xx
naming the problem or a 200 that accounts for every frame, never a crash (TestClient re-raises any
server exception, and a pyarrow abort would end the run)."""

import json
import time

import pyarrow as pa
from factories import pyarrow_body
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from test_frame_fuzz import TOKEN, client, hostile_text, json_values  # noqa: F401  (client: its fixture)

from loupe.arrow_ipc import MEDIA_TYPE, encode_part, request_body
from loupe.catalog import FAMILIES

NOW = int(time.time())
HEADER = {"v": 3, "source": "fz3@h", "seq": 1, "ts": NOW - 5, "family": "nfs", "host": "h"}
VALID = request_body([
    ({"source": "fz3@h", "seq": 1, "ts": NOW - 5, "host": "h"},
     encode_part("nfs", {"n": 2, "dims": {"client": ["10.0.0.1", "10.0.0.2"], "op": ["read", "write"]},
                         "count": [3, 4], "bytes": [300, 400],
                         "hist": {"latency": {"row": [0, 1], "bucket": [14, 20], "n": [3, 4]}}})),
    ({"source": "fz3d@h", "seq": 1, "ts": NOW - 4, "host": "h"},
     encode_part("disk", {"n": 1, "dims": {"disk": ["sda"]}, "count": [1]})),
], {"agent": "fuzzer", "sent_at": NOW})


def record_batches(body: bytes) -> int | None:
    """Record batches in the body's streams as pyarrow reads them, or None if it cannot."""
    reader, n = pa.BufferReader(body), 0
    try:
        while reader.tell() < len(body):
            n += sum(1 for _ in pa.ipc.open_stream(reader))
    except (pa.ArrowException, OSError):
        return None
    return n


def post(client, content: bytes):
    r = client.post("/api/v1/ingest", content=content,
                    headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": MEDIA_TYPE})
    assert r.status_code in (200, 400, 413, 422), (r.status_code, r.text[:500])
    body = r.json()
    if r.status_code == 200:
        assert body["accepted"] + body["duplicates"] + len(body["rejected"]) == record_batches(content), body
    else:
        assert isinstance(body["detail"], str) and body["detail"], body
    return r


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
STREAM_ENDS = {i + 8 for i in range(len(VALID)) if VALID[i:i + 8] == b"\xff\xff\xff\xff\x00\x00\x00\x00"}


def test_the_valid_body_is_taken(client):
    assert post(client, VALID).json()["accepted"] == 2


@SETTINGS
@given(st.integers(min_value=0, max_value=len(VALID) - 1))
def test_truncated_bodies(client, cut):
    r = post(client, VALID[:cut])
    assert r.status_code == (200 if cut in STREAM_ENDS else 400), r.text  # whole streams are a body


@SETTINGS
@given(st.lists(st.tuples(st.integers(min_value=0, max_value=len(VALID) - 1), st.integers(0, 255)),
                min_size=1, max_size=4))
def test_corrupted_bytes(client, changes):
    body = bytearray(VALID)
    for at, value in changes:
        body[at] = value
    post(client, bytes(body))


@SETTINGS
@given(st.binary(max_size=2000))
def test_random_bytes(client, raw):
    post(client, raw)


@SETTINGS
@given(st.binary(max_size=300), st.sampled_from([0, 8, 100, len(VALID) // 2]))
def test_random_bytes_inside_a_valid_body(client, raw, at):
    post(client, VALID[:at] + raw + VALID[at:])


# ---------------------------------------------------------------------- hostile streams, well formed
NAMES = sorted({d for f in FAMILIES.values() for d in f.all_dims} | {"count", "bytes", "lat_sum", "x", "", "ts"})
INTS = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]


@st.composite
def columns(draw, n: int):
    """A column of n values of any of the types a frame holds, and some it must refuse; sometimes with nulls."""
    kind = draw(st.sampled_from(["string", "large_string", "dictionary", "int", "float", "bool", "null", "map",
                                 "list", "struct", "view", "run_end", "union", "binary", "decimal", "timestamp",
                                 "fixed_list", "dictionary_of_ints"]))
    nullable = draw(st.booleans())

    def values(strategy):
        vals = draw(st.lists(strategy, min_size=n, max_size=n))
        return [None if nullable and draw(st.booleans()) else v for v in vals]

    text = st.one_of(st.text(max_size=20), hostile_text, st.just("x" * 1100))
    if kind in ("string", "large_string"):
        return pa.array(values(text), pa.string() if kind == "string" else pa.large_string())
    if kind == "dictionary":
        return pa.array(values(text), pa.string()).dictionary_encode()
    if kind == "int":
        t = draw(st.sampled_from(INTS))
        lo, hi = (-(2 ** (t.bit_width - 1)), 2 ** (t.bit_width - 1) - 1) if pa.types.is_signed_integer(t) \
            else (0, 2 ** t.bit_width - 1)
        return pa.array(values(st.integers(lo, hi)), t)
    if kind == "float":
        return pa.array(values(st.floats(allow_nan=True)), pa.float64())
    if kind == "bool":
        return pa.array(values(st.booleans()), pa.bool_())
    if kind == "null":
        return pa.nulls(n)
    if kind == "map":
        key = draw(st.sampled_from([pa.int8(), pa.int16(), pa.uint64(), pa.string()]))
        keys = st.text(max_size=3) if key == pa.string() else st.integers(0, 60)
        entries = st.lists(st.tuples(keys, st.one_of(st.integers(-5, 2**63 - 1), st.none())), max_size=4)
        return pa.array(values(entries), pa.map_(key, pa.int64()))
    if kind == "list":
        return pa.array(values(st.lists(st.integers(-2, 60), max_size=4)), pa.list_(pa.int64()))
    if kind == "fixed_list":
        return pa.array(values(st.lists(st.integers(-2, 60), min_size=2, max_size=2)), pa.list_(pa.int64(), 2))
    if kind == "view":
        return pa.array(values(text), pa.string_view())
    if kind == "run_end":
        return pa.RunEndEncodedArray.from_arrays(pa.array([n] if n else [], pa.int32()),
                                                 pa.array(["x"] if n else [], pa.string()))
    if kind == "union":
        return pa.UnionArray.from_sparse(pa.array([0] * n, pa.int8()), [pa.array(values(st.integers(0, 9)), pa.int64())])
    if kind == "binary":
        return pa.array(values(st.binary(max_size=8)), pa.binary())
    if kind == "decimal":
        return pa.array(values(st.decimals(-999, 999, places=2)), pa.decimal128(5, 2))
    if kind == "timestamp":
        return pa.array(values(st.integers(0, 2**40)), pa.timestamp("s"))
    if kind == "dictionary_of_ints":
        return pa.array(values(st.integers(0, 9)), pa.int64()).dictionary_encode()
    return pa.array(values(st.fixed_dictionaries({"a": st.integers(-1, 9)})), pa.struct([("a", pa.int64())]))


@st.composite
def frames(draw):
    n = draw(st.integers(0, 6))
    names = draw(st.lists(st.sampled_from(NAMES), max_size=5))
    table = pa.Table.from_arrays([draw(columns(n)) for _ in names], names=names) if names \
        else pa.table({"count": pa.array([0] * n, pa.int64())})
    header = {**HEADER, "family": draw(st.sampled_from([*FAMILIES, "nope"])), "seq": draw(st.integers(0, 10**6))}
    if draw(st.booleans()):
        header[draw(st.sampled_from([*HEADER, "extra"]))] = draw(json_values)
    return header, table


@SETTINGS
@given(st.lists(frames(), max_size=4), st.one_of(st.none(), st.fixed_dictionaries({"agent": st.text(max_size=5)}),
                                                 json_values))
def test_hostile_but_well_formed_streams(client, made, request):
    try:
        body = pyarrow_body(made, request)
    except (TypeError, ValueError):  # what JSON cannot hold (e.g. a lone surrogate): not a body at all
        reject()
    post(client, body)


@SETTINGS
@given(json_values, json_values)
def test_any_metadata(client, frames_meta, request_meta):
    schema = pa.schema([("count", pa.int64())]).with_metadata(
        {"loupe.frames": json.dumps(frames_meta), "loupe.request": json.dumps(request_meta)})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as w:
        w.write_batch(pa.record_batch([pa.array([1])], schema=schema))
    post(client, sink.getvalue().to_pybytes())
