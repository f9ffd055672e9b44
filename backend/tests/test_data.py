"""Retention and deleting statistics through the HTTP API, as an admin does it."""

import time

import pytest
from factories import nfs_frame, sign_in, signed_in_app

TOKEN = "data-test-token"
ROWS = [("10.0.0.7", "read", "/export/a", 10, 100, {14: 10})]


@pytest.fixture
def client(tmp_path):
    yield from signed_in_app(tmp_path, TOKEN)


def send(client, host, start, seconds):
    frames = [nfs_frame(start + i, ROWS, source=f"a@{host}", host=host, seq=start + i) for i in range(seconds)]
    body = {"frames": [f.model_dump() for f in frames]}
    r = client.post("/api/v1/ingest", json=body, headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200 and r.json()["accepted"] == seconds, r.text


def ops(client, host, start, end):
    q = client.get("/api/v1/query", params={"metric": "nfs.ops", "where": f"host={host}", "start": start,
                                            "end": end, "step": 1 if end - start < 5000 else 60}).json()
    return round(sum(q["total"]) * q["step"], 6)  # rates back to operations (the tier may be coarser)


def test_retention_reads_changes_and_prunes_at_once(client):
    r = client.get("/api/v1/retention").json()
    assert (r["second"], r["minute"], r["hour"], r["set_by"]) == (48 * 3600, 30 * 86400, 365 * 86400, None)
    now = int(time.time())
    send(client, "nas1", now - 3 * 3600, 5)  # 3 h old: inside the default 48 h of seconds
    send(client, "nas1", now - 20, 5)
    assert ops(client, "nas1", now - 3 * 3600 - 5, now) == 100
    second = {t["tier"]: t for t in client.get("/api/v1/retention").json()["tiers"]}["second"]
    assert second["rows"] == 10 and second["oldest"] == now - 3 * 3600
    r = client.put("/api/v1/retention", json={"second": 7200, "minute": 86400, "hour": 30 * 86400})
    assert r.status_code == 200, r.text
    body = r.json()
    # the 3-hour-old seconds are in the hot table, or in the settled one if upkeep compacted them first
    pruned = body["pruned"]
    assert (body["second"], body["set_by"]) == (7200, "admin") and \
        pruned.get("nfs_s_hot", 0) + pruned.get("nfs_s", 0) == 5, pruned
    assert {t["tier"]: t for t in body["tiers"]}["second"]["rows"] == 5
    assert ops(client, "nas1", now - 3 * 3600 - 5, now) == 50  # the old seconds went at once
    # ingest follows the new retention: a frame older than it is refused by name
    old = nfs_frame(now - 3 * 3600, ROWS, source="b@nas1", host="nas1", seq=1)
    r = client.post("/api/v1/ingest", json={"frames": [old.model_dump()]}, headers={"Authorization": f"Bearer {TOKEN}"})
    assert "older than the seconds retention" in r.json()["rejected"][0]["reason"]
    entry = client.get("/api/v1/audit").json()["entries"][0]
    assert (entry["action"], entry["actor"]) == ("retention.set", "admin") and "second 172800 -> 7200 s" in entry["detail"]


@pytest.mark.parametrize(("body", "problem"), [
    ({"second": 3600, "minute": 86400, "hour": 86400}, "second"),
    ({"second": 86400, "minute": 7200, "hour": 86400}, "minute retention must be at least the second"),
    ({"second": 7200, "minute": 86400, "hour": 7200}, "hour retention must be at least the minute"),
    ({"second": "7200", "minute": 86400, "hour": 86400}, "second"),
    ({"second": 7200, "minute": 86400}, "hour"),
])
def test_bad_retention_is_refused_by_name_and_changes_nothing(client, body, problem):
    r = client.put("/api/v1/retention", json=body)
    assert r.status_code == 422 and problem in r.text, r.text
    assert client.get("/api/v1/retention").json()["second"] == 48 * 3600


def test_deleting_a_hosts_range_with_a_dry_run_first(client):
    now = int(time.time())
    send(client, "nas1", now - 60, 40)
    send(client, "nas2", now - 60, 40)
    lo, hi = now - 50, now - 30
    dry = client.post("/api/v1/data/delete", json={"host": "nas1", "start": lo, "end": hi, "dry_run": True})
    assert dry.status_code == 200, dry.text
    assert dry.json()["rows"]["nfs_s_hot"] == 20 and dry.json()["total_rows"] >= 20
    assert ops(client, "nas1", now - 60, now) == 400  # nothing gone yet
    done = client.post("/api/v1/data/delete", json={"host": "nas1", "start": lo, "end": hi}).json()
    # the seconds are what the dry run said; a coarser tier may have been rolled up in between (the
    # upkeep loop runs on its own clock), and then those rows go too
    seconds = {t: n for t, n in dry.json()["rows"].items() if t.endswith(("_s", "_s_hot"))}
    assert {t: done["rows"].get(t) for t in seconds} == seconds and done["dry_run"] is False
    assert all(done["rows"][t] >= n for t, n in dry.json()["rows"].items()), (done, dry.json())
    assert ops(client, "nas1", lo, hi) == 0 and ops(client, "nas1", now - 60, now) == 200
    assert ops(client, "nas2", now - 60, now) == 400
    entry = client.get("/api/v1/audit").json()["entries"][0]
    assert (entry["action"], entry["target"]) == ("data.delete", "nas1")
    assert entry["detail"] == f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(lo))} to " \
                              f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(hi))}: {done['total_rows']} rows"
    # a whole host: it leaves the host list
    client.post("/api/v1/data/delete", json={"host": "nas2"})
    assert client.get("/api/v1/audit").json()["entries"][0]["detail"].startswith("all time: ")
    assert client.get("/api/v1/status").json()["hosts"] == ["nas1"]


@pytest.mark.parametrize(("body", "problem"), [
    ({}, "name a host or a time range"),
    ({"dry_run": True}, "name a host or a time range"),
    ({"start": 200, "end": 100}, "start must be before end"),
    ({"host": ""}, "host"),
    ({"host": "nas1", "start": "yesterday"}, "start"),
    ({"host": "nas1", "everything": True}, "everything"),
])
def test_bad_deletes_are_refused_by_name_and_delete_nothing(client, body, problem):
    now = int(time.time())
    send(client, "nas1", now - 20, 10)
    r = client.post("/api/v1/data/delete", json=body)
    assert r.status_code == 422 and problem in r.text, r.text
    assert ops(client, "nas1", now - 30, now) == 100


def test_a_viewer_reads_retention_but_cannot_change_or_delete(client):
    assert client.post("/api/v1/users", json={"name": "vera", "role": "viewer", "password": "vera-password"}
                       ).status_code == 201
    client.post("/api/v1/auth/logout")
    sign_in(client, "vera", "vera-password")
    assert client.get("/api/v1/retention").status_code == 200
    r = client.put("/api/v1/retention", json={"second": 7200, "minute": 86400, "hour": 86400})
    assert r.status_code == 403 and "admin" in r.text
    assert client.post("/api/v1/data/delete", json={"host": "nas1"}).status_code == 403


def test_status_projects_when_the_disk_fills(client):
    st = client.get("/api/v1/status").json()
    assert st["disk_free_bytes"] > 0
    assert (st["store_growth_bytes_per_day"], st["days_until_full"]) == (None, None)  # not ten minutes of samples yet
    # a day's worth of once-a-minute samples growing 2 GB a day
    loupe = client.app.state.loupe
    deadline = time.time() + 10
    while not loupe.size_history and time.time() < deadline:  # the upkeep's first sample; the next is a minute off
        time.sleep(0.1)
    assert loupe.size_history, "the upkeep thread took no sample of the store's size"
    now = time.time()
    loupe.size_history.clear()
    loupe.size_history.extend((now - 3600 + 60 * i, 10**9 + int(2 * 10**9 * 60 * i / 86400)) for i in range(60))
    st = client.get("/api/v1/status").json()
    assert st["store_growth_bytes_per_day"] == pytest.approx(2e9, rel=0.01)
    assert st["days_until_full"] == pytest.approx(st["disk_free_bytes"] / 2e9, rel=0.01)
