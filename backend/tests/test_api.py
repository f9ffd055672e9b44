"""Every API route against a real app and a real DuckDB file, error cases included."""

import os
import re
import subprocess
import time

import pytest
from factories import ADMIN_PW, nfs_frame, sign_in
from fastapi.testclient import TestClient

from loupe.api.main import create_app
from loupe.config import Settings

TOKEN = "test-token"


@pytest.fixture
def client(tmp_path):
    app = create_app(Settings(data_dir=tmp_path, local_agent=False, ingest_token=TOKEN, max_frame_bytes=200_000,
                              admin_password=ADMIN_PW))
    with TestClient(app) as c:
        sign_in(c)
        yield c


def post(client, frames, token=TOKEN, **extra):
    body = {"frames": [f.model_dump() for f in frames], **extra}
    return client.post("/api/v1/ingest", json=body, headers={"Authorization": f"Bearer {token}"})


def seed(client, seconds=30):
    now = int(time.time())
    start = now - seconds
    frames = []
    for i in range(seconds):
        rows = [("10.0.0.7", "read", "/export/a/f1", 100, 819200, {14: 90, 21: 10}),
                ("10.0.0.7", "write", "/export/a/f2", 20, 163840, {20: 20}),
                ("10.0.0.9", "read", "/export/a/f1", 5, 40960, {23: 5})]
        frames.append(nfs_frame(start + i, rows, source="demo@nas1", seq=start + i))
    r = post(client, frames, agent="a1",
             status=[{"name": "synthetic.nfs", "families": ["nfs"], "state": "active", "demo": True}])
    assert r.status_code == 200, r.text
    return start, now


def test_metrics_catalog(client):
    r = client.get("/api/v1/metrics")
    assert r.status_code == 200
    ms = {m["name"]: m for m in r.json()["metrics"]}
    assert {"nfs.ops", "nfs.bytes", "disk.ops", "disk.bytes", "cpu.util", "net.bytes"} <= set(ms)
    assert ms["nfs.ops"]["dimensions"] == ["host", "proto", "op", "client", "share", "file", "latency", "size", "offset"]
    assert ms["nfs.ops"]["histograms"][0] == {"name": "latency", "unit": "ns", "lo": 10, "hi": 35}


def test_ingest_auth_and_validation(client):
    fr = nfs_frame(int(time.time()) - 5, [("c", "read", "/a", 1, 1, {})])
    assert post(client, [fr], token="wrong").status_code == 401
    r = client.post("/api/v1/ingest", json={"frames": []})
    assert r.status_code == 401 and "bearer" in r.json()["detail"]
    bad = fr.model_dump()
    bad["rows"][0]["dims"]["colour"] = "red"
    r = client.post("/api/v1/ingest", json={"frames": [bad]}, headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 422 and "unknown dimension 'colour'" in r.json()["detail"]
    r = client.post("/api/v1/ingest", content=b"x" * 300_000,
                    headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    assert r.status_code == 413 and "exceeds the limit" in r.json()["detail"]
    first = post(client, [fr]).json()
    assert (first["accepted"], first["duplicates"]) == (1, 0)
    again = post(client, [fr]).json()
    assert (again["accepted"], again["duplicates"]) == (0, 1)
    old = nfs_frame(int(time.time()) - 72 * 3600, [("c", "read", "/a", 1, 1, {})], source="old@h")
    res = post(client, [old]).json()
    assert res["accepted"] == 0 and res["rejected"][0]["kind"] == "too_old"
    assert 'loupe_rejected_frames_total{reason="too_old"} 1.0' in client.get("/metrics").text


def test_query_series_other_and_name(client):
    start, now = seed(client)
    r = client.get("/api/v1/query", params={"metric": "nfs.ops", "by": "client", "start": str(start),
                                            "end": str(start + 30), "step": 1, "top": 1})
    assert r.status_code == 200, r.text
    q = r.json()
    assert q["statistic"]["name"] == "NFS operations per second broken down by client"
    assert q["tier"] == "second" and q["step"] == 1 and len(q["timestamps"]) == 30
    assert [s["key"] for s in q["series"]] == ["10.0.0.7"]
    assert q["series"][0]["values"][0] == 120.0 and q["other"][0] == 5.0 and q["total"][0] == 125.0
    assert q["elements"] == 2


def test_query_filters_name_reads_like_english(client):
    start, _ = seed(client)
    r = client.get("/api/v1/query", params=[("metric", "nfs.ops"), ("by", "file"), ("where", "op=read"),
                                            ("where", "client=10.0.0.7"), ("start", str(start)), ("end", str(start + 30))])
    q = r.json()
    assert q["statistic"]["name"] == \
        "NFS operations per second of type read for client 10.0.0.7 broken down by file"
    assert [s["key"] for s in q["series"]] == ["/export/a/f1"]
    assert q["series"][0]["total"] == pytest.approx(100.0)


@pytest.mark.parametrize("params,needle", [
    ({"metric": "nfs.opz"}, "unknown metric 'nfs.opz'; valid metrics: nfs.ops"),
    ({"metric": "nfs.ops", "by": "colour"}, "unknown dimension 'colour' for nfs.ops; valid dimensions: host"),
    ({"metric": "nfs.ops", "where": "colour=red"}, "unknown dimension 'colour'"),
    ({"metric": "nfs.ops", "where": "client"}, "write it as dim=value"),
    ({"metric": "nfs.ops", "start": "yesterday"}, "cannot read time 'yesterday'"),
    ({"metric": "nfs.ops", "start": "-1m", "end": "-2m"}, "empty range"),
    ({"metric": "nfs.bytes", "where": "latency=20:22"}, "'latency' for nfs.bytes"),
    ({"metric": "nfs.ops", "where": "latency=20:99"}, "outside buckets 10..35"),
])
def test_query_errors_are_400_naming_the_problem(client, params, needle):
    r = client.get("/api/v1/query", params=params)
    assert r.status_code == 400, r.text
    assert needle in r.json()["detail"]


def test_heatmap_breakdown_members(client):
    start, _ = seed(client)
    rng = {"start": str(start), "end": str(start + 30)}
    r = client.get("/api/v1/heatmap", params={"metric": "nfs.ops", "dim": "latency", "where": "client=10.0.0.7", **rng})
    h = r.json()
    assert r.status_code == 200 and [b["index"] for b in h["buckets"]] == list(range(14, 22))
    assert h["buckets"][0]["label"] == "16.4 µs – 32.8 µs"
    assert h["max"] == 90.0 and sum(v for _, _, v in h["cells"]) == pytest.approx(120.0 * 30 / h["step"])
    assert client.get("/api/v1/heatmap", params={"metric": "nfs.bytes", "dim": "latency"}).status_code == 400

    b = client.get("/api/v1/breakdown", params={"metric": "nfs.ops", "by": "op", **rng}).json()
    assert [(r["key"], round(r["value"], 3), round(r["share"], 3)) for r in b["rows"]] == \
        [("read", 105.0, 0.84), ("write", 20.0, 0.16)]
    assert client.get("/api/v1/breakdown", params={"metric": "nfs.ops", **rng}).status_code == 400
    lat = client.get("/api/v1/breakdown", params={"metric": "nfs.ops", "by": "latency", **rng}).json()
    assert [r["bucket"]["index"] for r in lat["rows"]] == [14, 20, 21, 23]
    assert lat["rows"][0]["key"] == lat["rows"][0]["bucket"]["label"] and lat["rows"][0]["value"] == 90.0

    m = client.get("/api/v1/members", params={"metric": "nfs.ops", "dim": "latency", "lo": 21, "hi": 23,
                                              "by": "client", **rng}).json()
    assert m["band"] == "between 2.1 ms and 16.8 ms"
    assert [(r["key"], r["value"]) for r in m["rows"]] == [("10.0.0.7", 10.0), ("10.0.0.9", 5.0)]
    m = client.get("/api/v1/members", params={"metric": "nfs.ops", "dim": "latency", "lo": 20, "hi": 20,
                                              "by": "op", **rng}).json()
    assert [(r["key"], r["value"]) for r in m["rows"]] == [("write", 20.0)]


def test_members_agree_with_a_banded_breakdown_over_a_relative_range(client):
    seed(client)
    band = {"metric": "nfs.ops", "start": "-10m", "end": "now"}
    m = client.get("/api/v1/members", params={**band, "dim": "latency", "lo": 14, "hi": 21, "by": "client"}).json()
    b = client.get("/api/v1/breakdown", params={**band, "by": "client", "where": "latency=14:21"}).json()
    assert m["end"] - m["start"] == 600 and m["rows"]
    assert {r["key"]: round(r["value"], 2) for r in m["rows"]} == \
        {r["key"]: round(r["value"] * (b["end"] - b["start"]) / 600, 2) for r in b["rows"]}


def test_worksheets_crud(client):
    body = {"name": "triage", "range": {"start": "-1h", "end": "now"},
            "statistics": [{"metric": "nfs.ops", "by": "client"},
                           {"metric": "nfs.ops", "by": "latency", "where": {"client": ["10.0.0.7"]}}]}
    r = client.post("/api/v1/worksheets", json=body)
    assert r.status_code == 201, r.text
    ws = r.json()
    assert ws["owner"] == "admin" and ws["statistics"][1]["where"] == {"client": ["10.0.0.7"]}
    assert [w["id"] for w in client.get("/api/v1/worksheets").json()["worksheets"]] == [ws["id"]]
    body["name"] = "triage 2"
    assert client.put(f"/api/v1/worksheets/{ws['id']}", json=body).json()["name"] == "triage 2"
    assert client.get(f"/api/v1/worksheets/{ws['id']}").json()["name"] == "triage 2"
    bad = dict(body, statistics=[{"metric": "nfs.ops", "by": "colour"}])
    r = client.post("/api/v1/worksheets", json=bad)
    assert r.status_code == 400 and "statistics[0]: unknown dimension 'colour'" in r.json()["detail"]
    # how each chart is shown is kept as written; a field the UI would not know is refused by name
    body["statistics"][0]["view"] = "sort:-last;q:10.0.0%3Bx;yz:20:23;mm:1;t:1h@1763797185"
    assert client.put(f"/api/v1/worksheets/{ws['id']}", json=body).status_code == 200
    got = client.get(f"/api/v1/worksheets/{ws['id']}").json()["statistics"]
    assert [s["view"] for s in got] == ["sort:-last;q:10.0.0%3Bx;yz:20:23;mm:1;t:1h@1763797185", ""]
    for view, named in (("colour:red", "'colour:red'"), ("mm", "'mm'"), ("x" * 9000, "at most 8192")):
        r = client.put(f"/api/v1/worksheets/{ws['id']}", json=dict(body, statistics=[{"metric": "nfs.ops", "view": view}]))
        assert r.status_code == 422 and named in r.text, r.text
    assert client.get(f"/api/v1/worksheets/{ws['id']}").json()["statistics"] == got  # nothing half-written
    assert client.delete(f"/api/v1/worksheets/{ws['id']}").status_code == 204
    assert client.get(f"/api/v1/worksheets/{ws['id']}").status_code == 404
    assert client.delete(f"/api/v1/worksheets/{ws['id']}").status_code == 404


def test_sources_status_and_prometheus(client):
    seed(client)
    s = client.get("/api/v1/sources").json()
    assert s["families"]["nfs"] is True and s["families"]["disk"] is False
    assert "nfs" not in s["missing"] and "local agent" in s["missing"]["disk"]
    assert s["sources"][0]["name"] == "synthetic.nfs" and s["sources"][0]["demo"] is True
    st = client.get("/api/v1/status").json()
    tiles = {t["id"]: t for t in st["tiles"]}
    assert tiles["nfs_ops"]["value"] == 125.0 and st["demo_hosts"] == ["nas1"]
    text = client.get("/metrics").text
    assert 'loupe_nfs_ops_total{host="nas1",op="read",proto="v3"} 3150.0' in text
    assert 'loupe_ingest_frames_total{result="accepted"} 30.0' in text
    assert "loupe_store_bytes" in text and "file=" not in text and "client=" not in text
    assert "loupe_store_flush_failing 0.0" in text
    assert re.search(r"^loupe_store_wal_bytes \d", text, re.M)
    held = float(re.search(r"^loupe_store_memory_bytes (\S+)$", text, re.M).group(1))
    limit = float(re.search(r"^loupe_store_memory_limit_bytes (\S+)$", text, re.M).group(1))
    assert 0 < held <= limit and abs(limit - 512 * 10**6) < 0.01 * 10**9  # the default, not DuckDB's 80 % of RAM
    # what the process's memory is made of, each consumer as it reports itself
    resident = float(re.search(r"^loupe_process_resident_bytes (\S+)$", text, re.M).group(1))
    parts = {m[0]: float(m[1]) for m in re.findall(r'^loupe_store_memory_part_bytes\{part="(\w+)"\} (\S+)$', text, re.M)}
    assert parts and all(0 < v <= limit for v in parts.values()), parts
    assert resident > max(parts.values())
    pool, arrow = re.search(r'^loupe_arrow_memory_bytes\{pool="(\w+)"\} (\S+)$', text, re.M).groups()
    assert pool in ("jemalloc", "system") and 0 <= float(arrow) < resident  # not mimalloc: see loupe.memory
    if re.search(r"^loupe_malloc_in_use_bytes", text, re.M):  # glibc only
        in_use = float(re.search(r"^loupe_malloc_in_use_bytes (\S+)$", text, re.M).group(1))
        assert 0 < in_use < resident
    assert re.search(r"^loupe_store_unflushed_bytes \d", text, re.M)
    assert "loupe_live_pending_seconds 0.0" in text and "loupe_store_checkpoints_refused_total 0.0" in text
    unflushed = float(re.search(r"^loupe_store_unflushed_rows (\S+)$", text, re.M).group(1))
    assert 0 <= unflushed <= 30 * 5  # at most what seed() sent, until the flush thread writes it
    assert client.get("/healthz").json() == {"ok": True}


def test_live_websocket_pushes_new_seconds(client):
    start, now = seed(client, 5)
    with client.websocket_connect("/api/v1/live") as ws:
        ws.send_json({"op": "subscribe", "id": "c1", "metric": "nfs.ops", "by": "client", "keys": ["10.0.0.9"]})
        assert ws.receive_json() == {"id": "c1", "subscribed": True}
        ws.send_json({"op": "subscribe", "id": "bad", "metric": "nfs.ops", "by": "colour"})
        assert "unknown dimension" in ws.receive_json()["error"]
        fr = nfs_frame(now, [("10.0.0.7", "read", "/f", 7, 0, {}), ("10.0.0.9", "read", "/f", 3, 0, {})],
                       source="demo@nas1", seq=now + 1)
        assert post(client, [fr]).json()["accepted"] == 1
        msg = ws.receive_json()
        assert msg == {"id": "c1", "ts": now, "total": 10.0, "values": {"10.0.0.9": 3.0}, "other": 7.0}


def test_unknown_api_route_is_json_404(client):
    r = client.get("/api/v1/nope")
    assert r.status_code == 404 and "no API route" in r.json()["detail"]


def test_the_committed_openapi_document_is_the_apps(tmp_path):
    """The TypeScript client is generated from frontend/openapi.json: it must be the app's current document."""
    import json
    from pathlib import Path

    app = create_app(Settings(data_dir=tmp_path), start_agent=False)
    committed = json.loads((Path(__file__).resolve().parents[2] / "frontend" / "openapi.json").read_text())
    assert committed == json.loads(json.dumps(app.openapi())), "run 'make api-client' and commit the result"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a small tmpfs for the ingest log")
def test_ingest_answers_503_naming_the_cause_when_the_log_disk_is_full(tmp_path):
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", str(small)], check=True)
    try:
        data = tmp_path / "data"
        data.mkdir()
        os.symlink(small, data / "loupe.duckdb.ingest")
        app = create_app(Settings(data_dir=data, local_agent=False, ingest_token=TOKEN, admin_password=ADMIN_PW))
        with TestClient(app) as c:
            sign_in(c)
            now = int(time.time())
            codes = []
            for i in range(400):
                rows = [(f"10.0.{i % 200}.{k}", "read", f"/export/a/f{k}", 5, 4096, {14: 5}) for k in range(40)]
                r = post(c, [nfs_frame(now - 500 + i, rows, source="full@nas1", seq=i + 1)])
                codes.append(r.status_code)
                if r.status_code != 200:
                    break
            assert codes[-1] == 503 and set(codes[:-1]) == {200}, codes
            assert "ingest log write failed" in r.json()["detail"] and "No space left" in r.json()["detail"]
            assert r.headers["retry-after"] == "1"
            # queries keep working, and the failure shows on every page (status) and in /metrics
            q = c.get("/api/v1/query", params={"metric": "nfs.ops", "start": str(now - 600), "end": str(now)})
            assert q.status_code == 200 and sum(q.json()["total"]) > 0
            st = c.get("/api/v1/status").json()
            assert "No space left" in st["ingest_error"] and st["ingest_error_since"] <= time.time()
            assert "loupe_ingest_failing 1.0" in c.get("/metrics").text
            # space comes back: ingest resumes by itself, the frame that failed is taken, nothing twice
            subprocess.run(["mount", "-o", "remount,size=8m", str(small)], check=True)
            seq = len(codes)
            rows = [("10.0.0.1", "read", "/export/a/f0", 5, 4096, {14: 5})]
            r = post(c, [nfs_frame(now - 500 + seq - 1, rows, source="full@nas1", seq=seq)])
            assert r.status_code == 200 and (r.json()["accepted"], r.json()["duplicates"]) == (1, 0), r.text
            assert c.get("/api/v1/status").json()["ingest_error"] is None
            assert "loupe_ingest_failing 0.0" in c.get("/metrics").text
    finally:
        subprocess.run(["umount", "-l", str(small)], check=False)


def test_a_generated_ingest_token_is_kept_and_safe_on_a_command_line(tmp_path):
    """A token that began with "-" made `loupe agent --token TOKEN` fail to parse."""
    import re

    from loupe.auth import Auth
    from loupe.service import _local_token

    tokens = set()
    for i in range(50):
        d = tmp_path / str(i)
        d.mkdir()
        auth = Auth(d / "auth.sqlite")
        t = _local_token(auth, d / "ingest.token", "local-agent", "ingest")
        assert re.fullmatch(r"lp_[A-Za-z0-9_-]{43}", t), t
        assert _local_token(auth, d / "ingest.token", "local-agent", "ingest") == t  # kept
        assert oct((d / "ingest.token").stat().st_mode & 0o777) == "0o600"
        assert auth.token(t).scope == "ingest"
        tokens.add(t)
        auth.close()
    assert len(tokens) == 50


@pytest.mark.parametrize("setting, limit", [("512MB", 512 * 10**6), ("2GiB", 2 * 2**30), ("1.5 GB", 1.5 * 10**9)])
def test_store_memory_limit_comes_from_settings(tmp_path, setting, limit):
    app = create_app(Settings(data_dir=tmp_path, local_agent=False, admin_password=ADMIN_PW, db_memory_limit=setting),
                     start_agent=False)
    with TestClient(app) as c:
        sign_in(c)
        text = c.get("/metrics").text
    got = float(re.search(r"^loupe_store_memory_limit_bytes (\S+)$", text, re.M).group(1))
    assert limit - 0.1 * 2**30 <= got <= limit  # DuckDB reports it truncated to 0.1 of its own unit


@pytest.mark.parametrize("setting", ["lots", "1 PB", "-1GB", "GB"])
def test_store_memory_limit_rejects_what_is_not_a_size(setting):
    with pytest.raises(ValueError, match="db_memory_limit"):
        Settings(db_memory_limit=setting)


def test_reading_status_and_metrics_leaves_no_transaction_open(client):
    """Reading status, metrics and retention leaves nothing that stops the upkeep's checkpoint:
    the write-ahead log is folded into the store after each (an unread result once held a
    transaction that made close() fail to checkpoint)."""
    seed(client)
    store = client.app.state.loupe.store
    store.flush()
    wal = store.path + ".wal"
    for path in ("/metrics", "/api/v1/retention", "/api/v1/status", "/healthz"):
        seed(client, 5)
        store.flush()
        assert client.get(path).status_code == 200, path
        store.checkpoint()  # from another thread than the request's, as the upkeep thread does
        assert not os.path.exists(wal) or os.path.getsize(wal) < 64 * 1024, path


def test_query_min_max_inside_coarse_points(client):
    start = int(time.time()) - 100  # well settled: every second of the window is in the past
    # the read ops of 10.0.0.7: 100 a second for 20 s, then 300 for 20 s
    frames = [nfs_frame(start + i, [("10.0.0.7", "read", "/export/a/f1", 100 if i < 20 else 300, 0, {})],
                        source="mm@nas1", seq=start + i) for i in range(40)]
    assert post(client, frames).status_code == 200
    q = {"metric": "nfs.ops", "where": ["client=10.0.0.7", "op=read"], "start": start, "end": start + 40, "step": 10}
    plain = client.get("/api/v1/query", params=q).json()
    assert plain["total_min"] is None and plain["total_max"] is None
    r = client.get("/api/v1/query", params={**q, "minmax": "true"}).json()

    def rate(ts):
        return 0.0 if not start <= ts < start + 40 else 100.0 if ts < start + 20 else 300.0

    seconds = [range(a, a + r["step"]) for a in r["timestamps"]]
    assert r["total_min"] == [min(map(rate, ts)) for ts in seconds]
    assert r["total_max"] == [max(map(rate, ts)) for ts in seconds]
    # each 20-second half holds a whole 10-second point: its lowest second is its rate
    assert {100.0, 300.0} <= set(r["total_min"])
    # per-second points need none
    assert client.get("/api/v1/query", params={**q, "step": 1, "minmax": "true"}).json()["total_max"] is None
    # a range the seconds tier no longer holds says so
    old = client.get("/api/v1/query", params={"metric": "nfs.ops", "start": "-20d", "end": "-19d", "minmax": "true"}).json()
    assert old["total_max"] is None and any("No min/max" in n for n in old["notes"])
