"""Why is this client slow: the verdict's rules, table-driven, and the API on a real store."""

import time

import pytest
from factories import ADMIN_PW, sign_in
from fastapi.testclient import TestClient

from loupe.api.main import create_app
from loupe.config import Settings
from loupe.diagnose import NEAR_LINK, DiskFacts, Facts, LinkFacts, OpFacts, fmt_link, verdict
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


@pytest.mark.parametrize("retrans, wire, kind, says", [
    # tail loss probes on a healthy stream: 6.5 a second among ~157k segments a second
    (6.5, 227e6, "healthy", "8 operations in flight"),
    # a lossy link to a slow client: 3 a second among ~140 segments a second
    (3.0, 200e3, "network-bound", "TCP retransmits 3 segments per second to it (2.2 % of them)"),
    (0.5, 200e3, "healthy", "8 operations in flight"),  # under one a second: noise
    (12.0, None, "network-bound", "TCP retransmits 12 segments per second to it:"),  # no bytes to weigh them by
])
def test_retransmits_are_weighed_by_the_segments_sent(retrans, wire, kind, says):
    f = facts(8.0, ops=8000.0, others=0.001, retrans=retrans)
    f.wire_bytes_per_s = wire
    got, reasons = verdict(f)
    assert got == kind and says in reasons[0].text, reasons


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


MBIT = 125_000  # bytes/s


def link(capacity, client, total=None, iface="eth0"):
    return LinkFacts("nas1", iface, capacity, client, total if total is not None else dict(client))


@pytest.mark.parametrize("name, f, lk, kind, says, where", [
    # one op in flight would read client-bound; but it fills the link: the link is why
    ("reads fill the link", facts(1.0, io=1 << 20, ops=11.0), link(100 * MBIT, {"out": 11.9e6, "in": 2e5}),
     "network-bound", "it uses 95 % of eth0's 100 Mbit/s: 11.3 MiB/s from the server to it",
     {"host": ["nas1"], "interface": ["eth0"], "client": ["10.0.0.7"]}),
    ("writes fill the link", facts(4.0, ops=1000.0, others=0.004), link(1000 * MBIT, {"in": 110e6, "out": 3e6}),
     "network-bound", "it uses 88 % of eth0's 1 Gbit/s: 105 MiB/s from it to the server",
     {"host": ["nas1"], "interface": ["eth0"], "client": ["10.0.0.7"]}),
    ("at the threshold", facts(8.0, ops=8000.0, others=0.001), link(1e9, {"out": NEAR_LINK * 1e9}),
     "network-bound", "it uses 80 % of eth0's 8 Gbit/s",
     {"host": ["nas1"], "interface": ["eth0"], "client": ["10.0.0.7"]}),
    # a prompt client with a small share, on a link others fill: the link is full
    ("the link is full", facts(8.0, ops=8000.0, others=0.001),
     link(10_000 * MBIT, {"out": 1.5e8, "in": 1e6}, {"out": 1.15e9, "in": 4e7}, iface="bond0.100"),
     "network-bound", "bond0.100, the link it is reached through, carries 92 % of its 10 Gbit/s out of the server "
     "(1.07 GiB/s), 13 % of that this client's: the link is full", {"host": ["nas1"], "interface": ["bond0.100"]}),
    # below the threshold, the link is not the reason: the verdicts of before
    ("70 % is not near", facts(8.0, ops=8000.0, others=0.001), link(1e9, {"out": 7e8}, {"out": 7.5e8}),
     "healthy", "8 operations in flight", None),
    ("unknown speed: today's reasoning", facts(1.0, io=4096.0, busy=0.5), link(None, {"out": 9e9}),
     "client-bound", "about 1 operations in flight", None),
])
def test_link_verdicts(name, f, lk, kind, says, where):
    f.link = lk
    got, reasons = verdict(f)
    assert got == kind, (name, [r.text for r in reasons])
    assert says in reasons[0].text, reasons[0].text
    if kind == "network-bound":
        assert (reasons[0].metric, reasons[0].by, reasons[0].where) == ("net.bytes", "direction", where)
    else:
        assert "link" not in " ".join(r.text for r in reasons)


def test_retransmits_and_a_full_link_are_both_evidence():
    f = facts(8.0, retrans=12.0)
    f.link = link(100 * MBIT, {"out": 12e6})
    kind, reasons = verdict(f)
    assert kind == "network-bound" and [r.metric for r in reasons] == ["tcp.retransmits", "net.bytes"]
    assert "96 % of eth0's 100 Mbit/s" in reasons[1].text


@pytest.mark.parametrize("capacity, says", [
    (10_000 * MBIT, "; 0.052 % of eth0's 10 Gbit/s from it to the server"),
    (None, "; eth0's speed is unknown (the kernel reports none for it), so its share of the link cannot be said"),
])
def test_a_shaped_client_far_from_the_servers_link_says_its_share(capacity, says):
    """Slow beyond the server (a shaped rate on its side): network-bound by latency, as before,
    with its share of the server's link, or plainly that the speed is unknown."""
    f = facts(4.0, ops=40.0, others=0.0025)
    f.wire_bytes_per_s, f.traffic_share = 655360.0, 0.04
    f.link = link(capacity, {"in": 655360.0})
    kind, reasons = verdict(f)
    assert kind == "network-bound" and reasons[0].metric == "nfs.inflight"
    assert reasons[1].text.endswith(says), reasons[1].text


@pytest.mark.parametrize("bytes_per_s, text", [
    (10_000 * MBIT, "10 Gbit/s"), (2_500 * MBIT, "2.5 Gbit/s"), (100 * MBIT, "100 Mbit/s"),
    (25_000 * MBIT, "25 Gbit/s"), (400_000 * MBIT, "400 Gbit/s"), (10 * MBIT, "10 Mbit/s"), (56 * 125, "56 kbit/s"),
])
def test_link_speeds_read_as_vendors_write_them(bytes_per_s, text):
    assert fmt_link(bytes_per_s) == text


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


def test_the_api_gives_a_clients_share_of_its_link(tmp_path):
    """Stored seconds as the agent sends them: socket rows naming each client's interface,
    per-interface totals, and link capacities (eth1 100 Mbit/s, missing every third second;
    eth0 without a speed)."""
    app = create_app(Settings(data_dir=tmp_path, local_agent=False, ingest_token="t", admin_password=ADMIN_PW))
    now = int(time.time())
    t0 = now - 70
    frames = []
    for i in range(60):
        ts = t0 + i
        # A reads 1 MiB at a time, one in flight (client-bound, were it not for its link); B is busy and prompt
        nfs = [dict(dims=dict(client=c, op="read", proto="v3", share="/export", file="/export/f"), count=n,
                    bytes=n * io, lat_sum=round(n * lat * 1e9)) for c, n, io, lat in
               (("10.0.0.1", 11, 1 << 20, 0.09), ("10.0.0.2", 4000, 4096, 0.002))]
        net = [dict(dims=dict(client=c, port="2049", direction=d, interface=i), count=1, bytes=b) for c, i, d, b in
               (("10.0.0.1", "eth1", "out", 11_900_000), ("10.0.0.1", "eth1", "in", 200_000),
                ("10.0.0.2", "eth0", "out", 16_500_000), ("10.0.0.2", "eth0", "in", 400_000))]
        net += [dict(dims=dict(interface=i, direction=d), count=1, bytes=b) for i, d, b in
                (("eth1", "out", 12_000_000), ("eth1", "in", 300_000), ("eth0", "out", 17_000_000),
                 ("eth0", "in", 500_000))]
        frames += [Frame(source="nfs@nas1", seq=i, ts=ts, family="nfs", host="nas1", rows=nfs),
                   Frame(source="net@nas1", seq=i, ts=ts, family="net", host="nas1", rows=net)]
        if i % 3:
            frames.append(Frame(source="link@nas1", seq=i, ts=ts, family="net_link", host="nas1",
                                rows=[dict(dims=dict(interface="eth1"), bytes=100 * MBIT)]))
    window = {"start": str(t0), "end": str(t0 + 60)}
    with TestClient(app) as client:
        sign_in(client)
        r = client.post("/api/v1/ingest", json={"frames": [f.model_dump() for f in frames]},
                        headers={"Authorization": "Bearer t"})
        assert r.status_code == 200, r.text
        a = client.get("/api/v1/clients/10.0.0.1/diagnosis", params=window).json()
        b = client.get("/api/v1/clients/10.0.0.2/diagnosis", params=window).json()
        assert a["verdict"] == "network-bound", a["reasons"]
        assert a["link"] == {
            "host": "nas1", "interface": "eth1", "capacity_bytes_per_s": 100 * MBIT,
            "client_in_bytes_per_s": 200_000, "client_out_bytes_per_s": 11_900_000,
            "link_in_bytes_per_s": 300_000, "link_out_bytes_per_s": 12_000_000,
            "share": pytest.approx(11.9 / 12.5), "share_direction": "out",
            "utilisation": pytest.approx(12 / 12.5), "utilisation_direction": "out"}
        [reason] = a["reasons"]
        assert reason["text"].startswith("it uses 95 % of eth1's 100 Mbit/s: 11.3 MiB/s from the server to it")
        ev = reason["statistic"]
        assert ev == {"metric": "net.bytes", "by": "direction",
                      "where": {"host": ["nas1"], "interface": ["eth1"], "client": ["10.0.0.1"]}}
        # the chart behind it shows the same bytes: the client's socket rows beside the whole link's
        # (the interface's own rows, not those plus the clients'), over the API's window
        def per_direction(where):
            q = client.get("/api/v1/query", params={"metric": ev["metric"], "by": ev["by"], "points": 1, **window,
                                                    "where": [f"{k}={','.join(v)}" for k, v in where.items()]})
            return {s["key"]: s["total"] for s in q.json()["series"]}

        mine, link_total = per_direction(ev["where"]), per_direction({"host": ["nas1"], "interface": ["eth1"]})
        assert mine["out"] / mine["in"] == pytest.approx(11_900_000 / 200_000)
        assert mine["out"] / link_total["out"] == pytest.approx(11.9 / 12)
        q = client.get("/api/v1/query", params={"metric": "net.link", "by": "interface", "points": 1, **window})
        assert {s["key"] for s in q.json()["series"]} == {"eth1"}  # a mean over the window: 2 seconds in 3
        # B: its interface has no speed: no share, and the verdict of before
        assert b["verdict"] == "healthy", b["reasons"]
        assert (b["link"]["interface"], b["link"]["capacity_bytes_per_s"], b["link"]["share"],
                b["link"]["utilisation"]) == ("eth0", None, None, None)
        assert b["link"]["client_out_bytes_per_s"] == 16_500_000 and b["link"]["link_out_bytes_per_s"] == 17_000_000
        assert client.get("/api/v1/clients/10.0.0.9/diagnosis", params=window).json()["link"] is None
