"""Why is this client slow: the verdict's rules, table-driven, and the API on a real store."""

import time

import pytest
from factories import ADMIN_PW, sign_in
from fastapi.testclient import TestClient

from loupe.api.main import create_app
from loupe.config import Settings
from loupe.diagnose import DiskFacts, Facts, OpFacts, verdict
from loupe.frame import Frame


def facts(inflight, ops=100.0, lat=None, others=None, io=65536.0, busy=1.0, retrans=None, op="write"):
    lat = inflight / ops if lat is None else lat
    return Facts(client="10.0.0.7", seconds=60, ops_per_s=ops, bytes_per_s=ops * io, inflight=inflight,
                 busy_fraction=busy, mean_io_bytes=io, retransmits_per_s=retrans,
                 by_op=[OpFacts(op, ops, ops * io, inflight, lat, others)])


@pytest.mark.parametrize("name, f, kind, says", [
    ("idle", facts(0.0, ops=0.1), "idle", "0.1 NFS operations per second"),
    ("retransmitting", facts(8.0, retrans=12.0), "network-bound", "TCP retransmits 12 segments per second"),
    ("one in flight, small sync writes", facts(1.0, io=4096.0, busy=0.5), "client-bound", "about 1 operations in flight"),
    ("shaped link: 40x slower than the others' writes", facts(4.0, ops=40.0, others=0.0025), "network-bound",
     "40× what the other clients' writes take"),
    ("shaped link seen from the server: one call at a time, each as slow as its transfer",
     facts(0.95, ops=9.5, others=0.0007), "network-bound", "143× what the other clients' writes take"),
    ("one in flight at the others' speed", facts(0.9, ops=900.0, others=0.0012), "client-bound", "about 0.9 operations"),
    ("slow like everyone", facts(8.0, ops=160.0, others=0.045), "server-latency-bound", "the server takes 50 ms per write"),
    ("busy and prompt", facts(8.0, ops=8000.0, others=0.001), "healthy", "8 operations in flight at 1 ms per write"),
    ("slow but no one else to compare", facts(4.0, ops=40.0, others=None), "server-latency-bound", "100 ms per write"),
])
def test_verdicts(name, f, kind, says):
    got, reasons = verdict(f)
    assert got == kind, (name, reasons)
    assert says in reasons[0].text, reasons[0].text
    assert all(r.metric and r.where is not None for r in reasons)


def test_server_latency_bound_names_the_busiest_disk():
    f = facts(8.0, ops=160.0, others=0.045)
    f.disks = [DiskFacts("sdb", 300.0, 9.0, 0.03), DiskFacts("sda", 20.0, 0.1, 0.005)]
    kind, reasons = verdict(f)
    assert kind == "server-latency-bound"
    assert "busiest disk, sdb, has 9 I/Os in flight at 30 ms each (300 I/Os per second)" in reasons[1].text
    assert (reasons[1].metric, reasons[1].by, reasons[1].where) == ("disk.ops", "latency", {"disk": ["sdb"]})


def test_network_bound_gives_the_clients_traffic_on_the_wire():
    f = facts(4.0, ops=40.0, others=0.0025)
    f.wire_bytes_per_s, f.traffic_share = 655360.0, 0.04
    kind, reasons = verdict(f)
    assert kind == "network-bound" and "its link carries 640 KiB/s" in reasons[1].text
    assert "4 % of the server's NFS bytes" in reasons[1].text and reasons[1].metric == "net.bytes"


def test_client_bound_names_small_ios_and_idle_time():
    kind, reasons = verdict(facts(1.0, io=4096.0, busy=0.5))
    texts = " | ".join(r.text for r in reasons)
    assert kind == "client-bound" and "small I/Os: 4 KiB" in texts and "idle in 50 % of the seconds" in texts
    assert reasons[1].by == "size" and reasons[1].where == {"client": ["10.0.0.7"]}


def test_the_api_gives_each_client_its_verdict_from_stored_seconds(tmp_path):
    app = create_app(Settings(data_dir=tmp_path, local_agent=False, ingest_token="t", admin_password=ADMIN_PW))
    now = int(time.time())
    # per second: (ops, mean latency): A one in flight, B ten in flight at 100 ms, C two in flight at 2 ms
    clients = {"10.0.0.1": (100, 0.010), "10.0.0.2": (100, 0.100), "10.0.0.3": (1000, 0.002)}
    frames = []
    for i in range(60):
        rows = [dict(dims=dict(client=c, op="write", proto="v3", share="/export", file="/export/f"), count=n,
                     bytes=n * 65536, lat_sum=round(n * lat * 1e9), hist={"size": {"16": n}})
                for c, (n, lat) in clients.items()]
        frames.append(Frame(source="nfs@nas1", seq=i, ts=now - 70 + i, family="nfs", host="nas1", rows=rows))
        # sdb: 200 I/Os a second at 25 ms (5 in flight); sda: 50 at 2 ms
        frames.append(Frame(source="disk@nas1", seq=i, ts=now - 70 + i, family="disk", host="nas1", rows=[
            dict(dims=dict(disk=d, op="write"), count=n, bytes=n * 4096, lat_sum=round(n * lat * 1e9))
            for d, n, lat in (("sda", 50, 0.002), ("sdb", 200, 0.025))]))
        frames.append(Frame(source="net@nas1", seq=i, ts=now - 70 + i, family="net", host="nas1", rows=[
            dict(dims=dict(client="10.0.0.2", port="2049", direction=d), count=1, bytes=b)
            for d, b in (("in", 6_000_000), ("out", 600_000))]))
    with TestClient(app) as client:
        sign_in(client)
        r = client.post("/api/v1/ingest", json={"frames": [f.model_dump() for f in frames]},
                        headers={"Authorization": "Bearer t"})
        assert r.status_code == 200, r.text
        got = {}
        for c in clients:
            r = client.get(f"/api/v1/clients/{c}/diagnosis", params={"start": str(now - 70), "end": str(now - 10)})
            assert r.status_code == 200, r.text
            got[c] = r.json()
        assert {c: d["verdict"] for c, d in got.items()} == {
            "10.0.0.1": "client-bound", "10.0.0.2": "network-bound", "10.0.0.3": "healthy"}
        b = got["10.0.0.2"]
        assert b["inflight"] == pytest.approx(10.0) and b["ops_per_s"] == pytest.approx(100.0)
        [w] = b["by_op"]
        assert w["mean_latency_s"] == pytest.approx(0.1)
        assert w["others_latency_s"] == pytest.approx((1.0 + 2.0) / 1100)  # A's and C's writes together
        assert b["size_mix"] == [[16, 1.0]] and b["busy_fraction"] == 1.0 and b["retransmits_per_s"] is None
        assert b["reasons"][0]["statistic"] == {"metric": "nfs.inflight", "by": "client", "where": {"op": ["write"]}}
        assert b["traffic_share"] == pytest.approx(100 / 1200) and b["wire_bytes_per_s"] == pytest.approx(6_600_000)
        assert got["10.0.0.1"]["wire_bytes_per_s"] is None  # no socket rows for it
        assert [(d["disk"], round(d["inflight"], 6), round(d["mean_latency_s"], 6)) for d in b["disks"]] == [
            ("sdb", 5.0, 0.025), ("sda", 0.1, 0.002)]
        r = client.get("/api/v1/clients/10.0.0.9/diagnosis", params={"start": str(now - 70), "end": str(now - 10)})
        assert r.json()["verdict"] == "idle"
        q = client.get("/api/v1/query", params={"metric": "nfs.inflight", "by": "client", "start": str(now - 70),
                                                "end": str(now - 10), "points": 1}).json()
        assert q["statistic"]["name"] == "NFS operations in flight broken down by client"
        t = {s["key"]: s["total"] for s in q["series"]}  # over the API's window: the ratios of in-flight
        assert [k for k in t] == ["10.0.0.2", "10.0.0.3", "10.0.0.1"]
        assert t["10.0.0.2"] / t["10.0.0.1"] == pytest.approx(10.0) and t["10.0.0.3"] / t["10.0.0.1"] == pytest.approx(2.0)
