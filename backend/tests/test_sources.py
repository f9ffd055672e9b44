"""Sources as operators see them: two-granularity metrics, suspend/resume, self-cost."""

import time

import pytest
from factories import ADMIN_PW, sign_in
from fastapi.testclient import TestClient

from loupe.api.main import create_app
from loupe.config import Settings
from loupe.frame import Frame

TOKEN = "test-token"


def make_client(tmp_path):
    return TestClient(create_app(Settings(data_dir=tmp_path, local_agent=False, ingest_token=TOKEN,
                                          admin_password=ADMIN_PW)))


@pytest.fixture
def client(tmp_path):
    with make_client(tmp_path) as c:
        sign_in(c)
        yield c


def post(client, frames=(), agent="nas1/bpf+procfs", status=None, stats=None):
    body = {"frames": [f.model_dump() for f in frames], "agent": agent}
    if status is not None:
        body["status"] = status
    if stats is not None:
        body["stats"] = stats
    r = client.post("/api/v1/ingest", json=body, headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200, r.text
    return r.json()


def net_frames(ts):
    # procfs: per interface; the socket probe: per client and local port, with the interface of
    # the client's route. Same bytes, two layers.
    procfs = Frame(source="procfs.net@nas1", seq=ts, ts=ts, family="net", host="nas1", rows=[
        {"dims": {"interface": "eth0", "direction": "in"}, "count": 100, "bytes": 1000},
        {"dims": {"interface": "eth0", "direction": "out"}, "count": 50, "bytes": 500}])
    sock = Frame(source="bpf.net@nas1", seq=ts, ts=ts, family="net", host="nas1", rows=[
        {"dims": {"client": "10.0.0.7", "port": "2049", "direction": "in", "interface": "eth0"}, "count": 9,
         "bytes": 700},
        {"dims": {"client": "10.0.0.9", "port": "2049", "direction": "in", "interface": "eth0"}, "count": 3,
         "bytes": 290},
        {"dims": {"client": "10.0.0.9", "port": "22", "direction": "out", "interface": "eth1"}, "count": 5,
         "bytes": 480}])
    return [procfs, sock]


def test_per_client_rows_never_double_the_interface_totals(client):
    now = int(time.time())
    for ts in range(now - 10, now - 5):
        post(client, net_frames(ts))
    q = lambda **p: client.get("/api/v1/query", params={"metric": "net.bytes", "start": str(now - 10),  # noqa: E731
                                                          "end": str(now - 5), "step": 1, **p})
    total = q().json()
    assert total["total"] == [1500.0] * 5  # the interface layer only
    by_dir = {s["key"]: s["values"] for s in q(by="direction").json()["series"]}
    assert by_dir["in"] == [1000.0] * 5 and by_dir["out"] == [500.0] * 5
    by_client = q(by="client").json()
    assert {s["key"]: s["values"][0] for s in by_client["series"]} == {"10.0.0.7": 700.0, "10.0.0.9": 770.0}
    assert by_client["total"] == [1470.0] * 5  # the socket layer's own total
    nfs_in = q(by="client", where=["port=2049", "direction=in"]).json()
    assert nfs_in["total"] == [990.0] * 5
    # the clients reached through eth0; eth0 itself (the interface layer, whatever clients say)
    on_eth0 = q(by="client", where="interface=eth0").json()
    assert {s["key"]: s["values"][0] for s in on_eth0["series"]} == {"10.0.0.7": 700.0, "10.0.0.9": 290.0}
    by_if = q(by="interface").json()
    assert {s["key"]: s["values"] for s in by_if["series"]} == {"eth0": [1500.0] * 5}
    # headline counters for /metrics count the interface layer only
    text = client.get("/metrics").text
    assert 'loupe_net_bytes_total{direction="in",host="nas1",interface="eth0"} 5000.0' in text
    assert 'interface=""' not in text and 'interface="eth1"' not in text


def bpf_status(state="active", cost=None):
    st = [{"name": "bpf.disk", "families": ["disk"], "state": state, "reason": "", "suspendable": True},
          {"name": "procfs.disk", "families": ["disk"], "state": "standby",
           "reason": "bpf.disk is active and measures the same, in more detail", "suspendable": False}]
    if cost:
        st[0]["cost"] = cost
    return st


def test_suspend_and_resume_travel_in_ingest_answers_and_survive_restart(tmp_path):
    with make_client(tmp_path) as client:
        sign_in(client)
        ans = post(client, status=bpf_status())
        assert ans["suspend"] == []
        r = client.post("/api/v1/sources/suspend", json={"agent": "nas1/bpf+procfs", "name": "bpf.disk"})
        assert r.status_code == 200 and r.json()["suspend_requested"] is True
        assert post(client, status=bpf_status())["suspend"] == ["bpf.disk"]
        # the agent applies it and says so
        post(client, status=bpf_status("suspended"))
        src = {s["name"]: s for s in client.get("/api/v1/sources").json()["sources"]}
        assert src["bpf.disk"]["state"] == "suspended" and src["bpf.disk"]["suspend_requested"]
        assert src["procfs.disk"]["state"] == "standby"
        # errors name the problem
        r = client.post("/api/v1/sources/suspend", json={"agent": "nas1/bpf+procfs", "name": "procfs.disk"})
        assert r.status_code == 409 and "cannot be suspended" in r.json()["detail"]
        r = client.post("/api/v1/sources/suspend", json={"agent": "nope", "name": "bpf.disk"})
        assert r.status_code == 404 and "known: nas1/bpf+procfs:bpf.disk" in r.json()["detail"]
        r = client.post("/api/v1/sources/suspend", json={"agent": "x"})
        assert r.status_code == 422
    with make_client(tmp_path) as client:  # a restarted server keeps the request
        sign_in(client)
        assert post(client, status=bpf_status("suspended"))["suspend"] == ["bpf.disk"]
        r = client.post("/api/v1/sources/resume", json={"agent": "nas1/bpf+procfs", "name": "bpf.disk"})
        assert r.status_code == 200 and r.json()["suspend_requested"] is False
        assert post(client, status=bpf_status())["suspend"] == []


def test_probe_and_agent_cost_reach_the_api_and_metrics(client):
    cost = {"runs_per_s": 2000.0, "bpf_cpu_pct": 0.12, "ns_per_run": 600.0, "map_fill": 0.01,
            "dropped": 0.0, "dropped_total": 3.0, "drain_ms": 0.4}
    post(client, status=bpf_status(cost=cost),
         stats={"cpu_pct": 1.5, "rss_bytes": 52_000_000, "queue_frames": 2, "queue_bytes": 900, "dropped_frames": 0})
    s = client.get("/api/v1/sources").json()
    src = {x["name"]: x for x in s["sources"]}
    assert src["bpf.disk"]["cost"] == cost and src["bpf.disk"]["suspendable"] is True
    assert src["procfs.disk"]["cost"] is None
    assert s["agents"] == [{"agent": "nas1/bpf+procfs", "last_seen": pytest.approx(time.time(), abs=5),
                            "cpu_pct": 1.5, "rss_bytes": 52_000_000, "queue_frames": 2, "queue_bytes": 900,
                            "dropped_frames": 0, "in_process": False,
                            "clock_offset_s": None, "clock_skewed": False}]
    text = client.get("/metrics").text
    assert 'loupe_source_bpf_cpu_pct{agent="nas1/bpf+procfs",source="bpf.disk"} 0.12' in text
    assert 'loupe_source_dropped_total{agent="nas1/bpf+procfs",source="bpf.disk"} 3.0' in text
    assert 'loupe_agent_rss_bytes{agent="nas1/bpf+procfs"} 5.2e+07' in text
    r = client.post("/api/v1/ingest", json={"frames": [], "agent": "a", "stats": {"cpu_pct": -1, "rss_bytes": 1}},
                    headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 422 and "cpu_pct" in r.json()["detail"]


def test_a_store_from_before_a_dimension_existed_gains_it(tmp_path):
    import duckdb

    from loupe.store.duckdb_store import DuckDBStore
    from loupe.catalog import METRICS
    from loupe.query import parse_statistic, window_for

    path = tmp_path / "old.duckdb"
    s = DuckDBStore(path, retain={"second": 86400, "minute": 86400, "hour": 86400})
    s.close()
    db = duckdb.connect(str(path))  # as a store written before net had a port
    for t in ("net_s", "net_m", "net_h", "net_s_hot"):
        if t == "net_s_hot":
            db.execute("DROP VIEW net_s_hotv")
        db.execute(f"ALTER TABLE {t} DROP COLUMN port")
    now = int(time.time()) - 5
    db.execute("INSERT INTO net_s_hot (ts, host, interface, direction, client, count, bytes, lat_sum, hk, hv) "
               "VALUES (?, 'nas1', 'eth0', 'in', '', 1, 4096, 0, [], [])", [now])
    db.close()
    s = DuckDBStore(path, retain={"second": 86400, "minute": 86400, "hour": 86400})
    try:
        assert METRICS["net.bytes"].dims[-1] == "port"
        agg = s.aggregate(parse_statistic("net.bytes", "direction", None),
                          window_for(str(now), str(now + 1), retain=s.retain, step=1), 10)
        assert agg.total == [4096.0] and agg.keys == ["in"]
        s.ingest(net_frames(now + 1), received_at=time.time())  # new rows carry a port
        agg = s.aggregate(parse_statistic("net.bytes", "port", None),
                          window_for(str(now + 1), str(now + 2), retain=s.retain, step=1), 10)
        assert dict(zip(agg.keys, (v[0] for v in agg.values))) == {"2049": 990.0, "22": 480.0}
    finally:
        s.close()


def test_zfs_families_take_the_zfs_source_rows(client):
    now = int(time.time()) - 3
    post(client, [Frame(source="zfs@nas1", seq=now, ts=now, family="zfs_txg", host="nas1", rows=[
        {"dims": {"pool": "tank"}, "count": 2, "bytes": 3 << 20, "lat_sum": 90_000_000,
         "hist": {"latency": {"25": 1, "26": 1}}}])])
    q = client.get("/api/v1/query", params={"metric": "zfs.txg_bytes", "by": "pool", "start": str(now),
                                            "end": str(now + 1), "step": 1}).json()
    assert q["series"][0]["key"] == "tank" and q["total"] == [3 << 20]
    hm = client.get("/api/v1/heatmap", params={"metric": "zfs.txg", "start": str(now), "end": str(now + 1),
                                               "step": 1}).json()
    assert sum(hm["total"]) == 2


# Not too near the 2 s limit: the transit to the server adds to a negative offset.
@pytest.mark.parametrize(("offset", "skewed"), [(0.4, False), (-1.5, False), (37.2, True), (-900.0, True)])
def test_an_agent_with_a_wrong_clock_is_flagged_and_its_seconds_placed_by_server_time(client, offset, skewed):
    from factories import nfs_frame

    now = time.time()
    agent_now = int(now + offset)
    frames = [nfs_frame(agent_now - 5 + i, [("10.0.0.1", "read", "/export/f", 10, 100, {})], source="skew@h")
              for i in range(3)]
    r = client.post("/api/v1/ingest", headers={"Authorization": f"Bearer {TOKEN}"},
                    json={"frames": [f.model_dump() for f in frames], "agent": "skewy", "sent_at": now + offset})
    assert r.status_code == 200 and r.json()["accepted"] == 3, r.text
    [ag] = [a for a in client.get("/api/v1/sources").json()["agents"] if a["agent"] == "skewy"]
    assert ag["clock_skewed"] is skewed and abs(ag["clock_offset_s"] - offset) < 1.0
    q = client.get("/api/v1/query", params={"metric": "nfs.ops", "start": str(int(now) - 1000),
                                            "end": str(int(now) + 1000), "step": 1}).json()
    stored = [q["start"] + i * q["step"] for i, v in enumerate(q["total"]) if v]
    want = [t - round(offset) if skewed else t for t in (f.ts for f in frames)]
    assert stored == want, (stored, want)
    shifted = 'loupe_clock_shifted_frames_total 3.0' in client.get("/metrics").text
    assert shifted is skewed


def test_a_layer_refuses_its_base_only_dimensions_beside_detail_ones():
    """No catalog metric has base-only dimensions now (the socket rows carry the interface), but
    the rule stays: a detail dimension and one the detail rows lack cannot be asked together."""
    from dataclasses import replace

    from loupe.catalog import METRICS
    from loupe.query import QueryError, layer_of

    m = replace(METRICS["net.bytes"], layer=("client", ("client", "port"), ("interface",)))
    assert layer_of(m, "client", {}) == ("client", True)
    assert layer_of(m, "interface", {"direction": ["in"]}) == ("client", False)
    with pytest.raises(QueryError, match="net.bytes cannot use client together with interface"):
        layer_of(m, "client", {"interface": ["eth0"]})
    assert layer_of(METRICS["net.bytes"], "client", {"interface": ["eth0"]}) == ("client", True)
