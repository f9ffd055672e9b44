"""Client names through the HTTP API: the mapping table (checked by row, admin-only writes, audited,
kept across a restart), the policy in force, and the names carried by query results."""

import time

import pytest
from factories import nfs_frame, sign_in, signed_in_app
from ptrserver import PtrServer

TOKEN = "names-test-token"
# client, op, file, ops, bytes, latency histogram
ROWS = [("10.0.0.7", "read", "/export/a", 10, 100, {14: 10}), ("10.0.0.8", "write", "/export/b", 5, 50, {20: 5}),
        ("10.0.0.9", "read", "/export/c", 2, 20, {14: 2})]


def app(tmp_path, **settings):
    if "hosts_file" not in settings:
        settings["hosts_file"] = tmp_path / "hosts"
        if not settings["hosts_file"].exists():
            settings["hosts_file"].write_text("10.0.0.8 nfs-b.hosts\n")
    return signed_in_app(tmp_path, TOKEN, **settings)


@pytest.fixture
def client(tmp_path):
    yield from app(tmp_path)


def send(client, start, seconds):
    frames = [nfs_frame(start + i, ROWS, source="a@nas1", seq=start + i) for i in range(seconds)]
    r = client.post("/api/v1/ingest", json={"frames": [f.model_dump() for f in frames]},
                    headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200 and r.json()["accepted"] == seconds, r.text


def put(client, entries):
    return client.put("/api/v1/client-names", json={"entries": entries})


def test_results_carry_the_names_of_their_client_addresses(client):
    now = int(time.time())
    send(client, now - 20, 10)
    r = put(client, [{"address": "10.0.0.7", "name": "nfs-a"}])
    assert r.status_code == 200, r.text
    span = {"start": now - 30, "end": now}
    both = {"10.0.0.7": "nfs-a", "10.0.0.8": "nfs-b.hosts"}  # the table, then the hosts file; .9 has no name

    q = client.get("/api/v1/query", params={"metric": "nfs.ops", "by": "client", **span}).json()
    assert sorted(s["key"] for s in q["series"]) == ["10.0.0.7", "10.0.0.8", "10.0.0.9"]  # keys stay addresses
    assert q["names"] == both
    b = client.get("/api/v1/breakdown", params={"metric": "nfs.ops", "by": "client", **span}).json()
    assert b["names"] == both
    m = client.get("/api/v1/members", params={"metric": "nfs.ops", "by": "client", "dim": "latency", "lo": 14,
                                              "hi": 14, "start": "-1h", "end": "now"}).json()
    assert m["names"] == {k: v for k, v in both.items() if k in {row["key"] for row in m["rows"]}}
    # a client filter's value is named too, and the filter itself stays the address
    q = client.get("/api/v1/query", params={"metric": "nfs.ops", "by": "op", "where": "client=10.0.0.7", **span}).json()
    assert q["names"] == {"10.0.0.7": "nfs-a"} and q["statistic"]["where"] == {"client": ["10.0.0.7"]}
    assert sum(q["total"]) > 0
    h = client.get("/api/v1/heatmap", params={"metric": "nfs.ops", "where": "client=10.0.0.8", **span}).json()
    assert h["names"] == {"10.0.0.8": "nfs-b.hosts"}
    d = client.get("/api/v1/clients/10.0.0.7/diagnosis", params=span).json()
    assert d["names"] == {"10.0.0.7": "nfs-a"}
    # other dimensions are not client addresses
    assert client.get("/api/v1/query", params={"metric": "nfs.ops", "by": "file", **span}).json()["names"] == {}


def test_a_run_report_names_its_clients(client):
    now = int(time.time())
    send(client, now - 20, 10)
    put(client, [{"address": "10.0.0.9", "name": "bench-9"}])
    run = client.post("/api/v1/runs", json={"name": "r", "start": now - 25}).json()
    client.post(f"/api/v1/runs/{run['id']}/stop", json={"end": now - 5})
    client.post(f"/api/v1/runs/{run['id']}/results",
                json={"format": "simple", "clients": [{"client": "10.0.0.7", "read_bytes": 1000}]})
    rep = client.get(f"/api/v1/runs/{run['id']}/report").json()
    assert rep["names"] == {"10.0.0.8": "nfs-b.hosts", "10.0.0.9": "bench-9"}


def test_the_table_is_replaced_whole_kept_in_canonical_form_and_audited(client):
    r = put(client, [{"address": "10.0.0.7", "name": " nfs-a "}, {"address": "2001:DB8::0001", "name": "six"},
                     {"address": "::ffff:10.0.0.2", "name": "two"}])
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["entries"] == [{"address": "10.0.0.2", "name": "two"}, {"address": "10.0.0.7", "name": "nfs-a"},
                               {"address": "2001:db8::1", "name": "six"}]
    assert body["set_by"] == "admin" and body["set_at"] > 0
    r = put(client, [{"address": "10.0.0.7", "name": "nfs-a2"}, {"address": "10.0.0.3", "name": "three"}])
    assert [e["address"] for e in r.json()["entries"]] == ["10.0.0.3", "10.0.0.7"]
    entries = client.get("/api/v1/audit").json()["entries"]
    assert [(e["action"], e["actor"], e["detail"]) for e in entries[:2]] == [
        ("client_names.set", "admin", "2 entries: 1 added, 2 removed, 1 renamed"),
        ("client_names.set", "admin", "3 entries: 3 added, 0 removed, 0 renamed")]
    assert put(client, []).json()["entries"] == []


GOOD = {"address": "10.0.0.1", "name": "ok"}


@pytest.mark.parametrize(("entries", "problem"), [
    ([GOOD, {"address": "10.0.0.300", "name": "x"}], "entries.1.address: Value error, '10.0.0.300' is not an IPv4 or IPv6"),
    ([{"address": "nfs-a", "name": "x"}], "entries.0.address: Value error, 'nfs-a' is not an IPv4 or IPv6 address"),
    ([{"address": "", "name": "x"}], "entries.0.address: Value error, '' is not an IPv4 or IPv6 address"),
    ([GOOD, GOOD, {"address": "10.0.0.2", "name": ""}], "entries.2.name: Value error, name is empty"),
    ([{"address": "10.0.0.2", "name": "   "}], "entries.0.name: Value error, name is empty"),
    ([{"address": "10.0.0.2", "name": "a\nb"}], "entries.0.name: Value error, name holds the control character U+000A"),
    ([{"address": "10.0.0.2", "name": "abc\u202edef"}], "entries.0.name: Value error, name holds the control character U+202E"),
    ([{"address": "10.0.0.2", "name": "x" * 254}], "entries.0.name: Value error, name is 254 characters long; at most 253"),
    ([{"address": "10.0.0.2", "name": "x" * 301}], "entries.0.name: String should have at most 300 characters"),
    ([{"address": "10.0.0.2"}], "entries.0.name: Field required"),
    ([{"address": "10.0.0.2", "name": 7}], "entries.0.name: Input should be a valid string"),
    ([{"address": 167772162, "name": "x"}], "entries.0.address: Input should be a valid string"),
    ([{"address": "10.0.0.2", "name": "x", "role": "admin"}], "entries.0.role: Extra inputs are not permitted"),
    ([GOOD, {"address": "10.0.0.7", "name": "a"}, {"address": "::ffff:10.0.0.7", "name": "b"}],
     "entries.1 and entries.2 both name 10.0.0.7"),
    ("all", "entries: Input should be a valid list"),
])
def test_a_bad_table_is_refused_by_row_and_changes_nothing(client, entries, problem):
    assert put(client, [{"address": "10.0.0.5", "name": "kept"}]).status_code == 200
    r = put(client, entries)
    assert r.status_code == 422 and problem in r.json()["detail"], r.text
    assert client.get("/api/v1/client-names").json()["entries"] == [{"address": "10.0.0.5", "name": "kept"}]
    assert client.get("/api/v1/audit").json()["entries"][0]["detail"].startswith("1 entries")


def test_a_viewer_reads_the_table_and_the_policy_but_cannot_change_them(client):
    put(client, [{"address": "10.0.0.7", "name": "nfs-a"}])
    assert client.post("/api/v1/users", json={"name": "vera", "role": "viewer", "password": "vera-password"}
                       ).status_code == 201
    client.post("/api/v1/auth/logout")
    sign_in(client, "vera", "vera-password")
    assert client.get("/api/v1/client-names").json()["entries"] == [{"address": "10.0.0.7", "name": "nfs-a"}]
    assert client.get("/api/v1/client-names/policy").status_code == 200
    r = put(client, [{"address": "10.0.0.7", "name": "mine"}])
    assert r.status_code == 403 and "needs the admin role" in r.json()["detail"]
    assert client.get("/api/v1/client-names").json()["entries"] == [{"address": "10.0.0.7", "name": "nfs-a"}]


def test_the_table_outlives_a_restart(tmp_path):
    now = int(time.time())
    for c in app(tmp_path):
        send(c, now - 20, 10)
        assert put(c, [{"address": "10.0.0.9", "name": "nine"}]).status_code == 200
    for c in app(tmp_path):
        t = c.get("/api/v1/client-names").json()
        assert t["entries"] == [{"address": "10.0.0.9", "name": "nine"}] and t["set_by"] == "admin"
        q = c.get("/api/v1/query", params={"metric": "nfs.ops", "by": "client", "start": now - 30, "end": now}).json()
        assert q["names"] == {"10.0.0.9": "nine", "10.0.0.8": "nfs-b.hosts"}


def test_the_policy_in_force(tmp_path):
    for c in app(tmp_path, client_names="hosts,table"):
        put(c, [{"address": "10.0.0.7", "name": "nfs-a"}])
        p = c.get("/api/v1/client-names/policy").json()
        assert p["order"] == ["hosts", "table"] and p["dns_server"] is None and p["dns_cache"] is None
        src = {s["source"]: s for s in p["sources"]}
        assert (src["hosts"]["position"], src["table"]["position"], src["dns"]["position"]) == (1, 2, None)
        assert src["hosts"]["detail"] == f"{tmp_path / 'hosts'}: 1 name" and src["hosts"]["problem"] is None
        assert src["table"]["detail"] == "1 name (Admin → Client names)"
    for c in app(tmp_path / "other", client_names="hosts", hosts_file=tmp_path / "missing"):
        src = {s["source"]: s for s in c.get("/api/v1/client-names/policy").json()["sources"]}
        assert "cannot read" in src["hosts"]["problem"] and "missing" in src["hosts"]["problem"]


def test_reverse_dns_names_arrive_on_a_later_request_and_a_slow_server_delays_nothing(tmp_path):
    now = int(time.time())
    with PtrServer({"10.0.0.8": "b.dns.example", "10.0.0.9": "c.dns.example"}, slow={"10.0.0.9": 3.0}) as srv:
        for c in app(tmp_path, client_names="table,dns", dns_server=srv.address, dns_timeout=0.5):
            send(c, now - 20, 10)
            put(c, [{"address": "10.0.0.7", "name": "nfs-a"}])
            params = {"metric": "nfs.ops", "by": "client", "start": now - 30, "end": now}
            t0 = time.monotonic()
            q = c.get("/api/v1/query", params=params).json()
            assert time.monotonic() - t0 < 0.5  # the lookups run behind it
            assert q["names"] == {"10.0.0.7": "nfs-a"}  # the table answers at once; DNS not yet
            deadline = time.monotonic() + 10
            while (names := c.get("/api/v1/query", params=params).json()["names"]) == {"10.0.0.7": "nfs-a"}:
                assert time.monotonic() < deadline, "no name from DNS"
                time.sleep(0.05)
            assert names == {"10.0.0.7": "nfs-a", "10.0.0.8": "b.dns.example"}
            deadline = time.monotonic() + 5
            while (p := c.get("/api/v1/client-names/policy").json())["dns_cache"]["pending"]:
                assert time.monotonic() < deadline, "the slow lookup did not time out"
                time.sleep(0.05)
            assert p["dns_server"] == srv.address and p["order"] == ["table", "dns"]
            cache = p["dns_cache"]
            assert (cache["found"], cache["timeouts"], cache["names"], cache["unnamed"]) == (1, 1, 1, 1)
            # the slow one timed out: kept unnamed, and the table's address was never looked up
            assert c.get("/api/v1/query", params=params).json()["names"] == names
            assert (srv.asked("10.0.0.7"), srv.asked("10.0.0.8"), srv.asked("10.0.0.9")) == (0, 1, 1)
