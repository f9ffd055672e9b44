"""Random, truncated and hostile ingest bodies: always a 4xx naming the problem or a 200, never
a crash (TestClient re-raises any server exception), and a 200 accounts for every frame."""

import json
import time

import pytest
from factories import ADMIN_PW, nfs_frame
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loupe.api.main import create_app
from loupe.config import Settings

TOKEN = "fuzz-token"
NOW = int(time.time())
VALID = {"frames": [nfs_frame(NOW - 5, [("10.0.0.1", "read", "/export/a", 3, 300, {14: 3})], source="fz@h").model_dump(),
                    {"v": 2, "source": "fz2@h", "seq": 1, "ts": NOW - 4, "family": "disk", "host": "h",
                     "columns": {"n": 1, "dims": {"disk": ["sda"], "op": ["read"]}, "count": [1], "bytes": [4096],
                                 "hist": {"latency": {"row": [0], "bucket": [20], "n": [1]}}}}],
         "agent": "fuzzer", "sent_at": NOW}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    app = create_app(Settings(data_dir=tmp_path_factory.mktemp("fuzz"), local_agent=False, ingest_token=TOKEN,
                              admin_password=ADMIN_PW, max_frame_bytes=1 << 20))
    with TestClient(app) as c:
        yield c


def post(client, content: bytes):
    r = client.post("/api/v1/ingest", content=content,
                    headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    assert r.status_code in (200, 400, 413, 422), (r.status_code, r.text[:500])
    body = r.json()
    if r.status_code == 200:
        frames = json.loads(content)["frames"]
        assert body["accepted"] + body["duplicates"] + len(body["rejected"]) == len(frames), body
    else:
        assert isinstance(body["detail"], str) and body["detail"], body
    return r


hostile_text = st.sampled_from(["", "\x00", "a" * 5000, "../../etc/passwd", "<script>alert(1)</script>", "\ud7ff",
                                "NaN", "-1", "1e309", "🚀", "\u202e", "%s%n", "'; DROP TABLE s; --"])
scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
                    st.floats(allow_nan=False), st.text(max_size=30), hostile_text)
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=5),
                                                            st.dictionaries(st.text(max_size=10), inner, max_size=5)),
                           max_leaves=30)


def paths(doc, prefix=()):
    """Every (path, value) in a JSON document."""
    yield prefix, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from paths(v, prefix + (i,))


ALL_PATHS = [p for p, _ in paths(VALID) if p]


def mutated(path, value):
    doc = json.loads(json.dumps(VALID))
    node = doc
    for k in path[:-1]:
        node = node[k]
    if value == "__delete__":
        node.pop(path[-1]) if isinstance(node, dict) else node.pop(path[-1])
    else:
        node[path[-1]] = value
    return doc


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def test_the_valid_body_is_taken(client):
    r = post(client, json.dumps(VALID).encode())
    assert r.status_code == 200 and r.json()["accepted"] == 2


@SETTINGS
@given(st.sampled_from(ALL_PATHS), st.one_of(json_values, st.just("__delete__")))
def test_one_field_replaced_by_anything(client, path, value):
    post(client, json.dumps(mutated(path, value)).encode())


@SETTINGS
@given(json_values)
def test_any_json_document(client, doc):
    post(client, json.dumps(doc).encode())


@SETTINGS
@given(st.integers(min_value=0, max_value=len(json.dumps(VALID)) - 1))
def test_truncated_bodies(client, cut):
    r = post(client, json.dumps(VALID).encode()[:cut])
    assert r.status_code == 422


@SETTINGS
@given(st.binary(max_size=2000))
def test_random_bytes(client, raw):
    r = client.post("/api/v1/ingest", content=raw,
                    headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    assert r.status_code in (200, 400, 413, 422), (r.status_code, r.text[:300])


def test_hostile_sizes_are_refused_before_parsing(client):
    r = post(client, b'{"frames": [' + b'{"v": 1},' * 200_000 + b'{}]}')
    assert r.status_code == 413 and "exceeds the limit" in r.json()["detail"]
    many = {"frames": [VALID["frames"][0]] * 10_001}
    r = post(client, json.dumps(many).encode())
    assert r.status_code in (413, 422)
    deep = b'{"frames": [], "agent": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    r = post(client, deep)  # nesting deeper than the JSON parser takes
    assert r.status_code == 400 and "parsing the body" in r.json()["detail"]
