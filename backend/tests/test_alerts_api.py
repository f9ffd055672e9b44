"""Alert rules and the event log through the HTTP API, with the server's own evaluation thread and a
real webhook receiver on loopback."""

import json
import time

import pytest
from factories import Receiver, nfs_frame, sign_in, signed_in_app

TOKEN = "alerts-test-token"


@pytest.fixture
def client(tmp_path):
    yield from signed_in_app(tmp_path, TOKEN)


@pytest.fixture
def rx():
    r = Receiver([200])
    yield r
    r.close()


def send(client, start, seconds, ops, client_ip="10.0.0.7"):
    """`ops` a second from `client_ip`, or from each client of a {client: ops} dict."""
    per = ops if isinstance(ops, dict) else {client_ip: ops}
    frames = [nfs_frame(start + i, [(c, "read", "/export/a", n, 0, {}) for c, n in per.items()], source="a@nas1",
                        seq=start + i) for i in range(seconds)]
    r = client.post("/api/v1/ingest", json={"frames": [f.model_dump() for f in frames]},
                    headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200 and r.json()["accepted"] == seconds, r.text


def wait_events(client, kind, n=1, timeout=15.0, **params):
    end = time.time() + timeout
    while time.time() < end:
        evs = [e for e in client.get("/api/v1/events", params={"kind": kind, **params}).json()["events"]]
        if len(evs) >= n:
            return evs
        time.sleep(0.25)
    raise AssertionError(f"no {kind} event within {timeout} s: {client.get('/api/v1/events').json()}")


RULE = {"name": "busy reads", "metric": "nfs.ops", "where": {"op": ["read"]}, "condition": "above",
        "threshold": 50, "hold_s": 3, "clear_s": 2}


@pytest.mark.parametrize(("change", "status", "problem"), [
    ({"metric": "nfs.nope"}, 400, "unknown metric 'nfs.nope'"),
    ({"where": {"colour": ["red"]}}, 400, "unknown dimension 'colour'"),
    ({"condition": "near"}, 422, "condition"),
    ({"threshold": "50"}, 422, "threshold"),
    ({"hold_s": 0}, 422, "hold_s"),
    ({"from_time": "09:00"}, 422, "from_time and to_time go together"),
    ({"from_time": "25:00", "to_time": "26:00"}, 422, "from_time"),
    ({"from_time": "09:00", "to_time": "09:00"}, 422, "window would be empty"),
    ({"days": []}, 422, "days"),
    ({"days": ["mon", "mon"]}, 422, "days lists a day twice"),
    ({"days": ["monday"]}, 422, "days"),
    ({"repost_s": 30}, 422, "repost_s must be 0"),
    ({"timezone": "Mars/Olympus"}, 422, "unknown timezone 'Mars/Olympus'"),
    ({"webhook": "ftp://example.org/x"}, 422, "not an http:// or https:// URL"),
    ({"webhook": "http:///nohost"}, 422, "not an http:// or https:// URL"),
    ({"webhook": "http://169.254.169.254/latest/meta-data"}, 422,
     "webhook: receiver 169.254.169.254 (169.254.169.254) is at no allowed address: unset LOUPE_WEBHOOK_ALLOW"),
    ({"colour": "red"}, 422, "colour"),
    ({"by": "colour"}, 400, "by: unknown dimension 'colour'"),
    ({"by": "latency"}, 400, "by: 'latency' is a histogram"),
    ({"by": 7}, 422, "by"),
])
def test_bad_rules_are_refused_by_name_and_nothing_is_created(client, change, status, problem):
    r = client.post("/api/v1/alerts", json={**RULE, **change})
    assert r.status_code == status and problem in r.text, r.text
    assert client.get("/api/v1/alerts").json()["rules"] == []


def test_an_alert_fires_posts_and_clears_when_its_rule_changes(client, rx):
    now = int(time.time())
    send(client, now - 20, 20, 100)  # the load is on when the rule is made
    r = client.post("/api/v1/alerts", json={**RULE, "webhook": rx.url, "secret": "k"})
    assert r.status_code == 201, r.text
    rule = r.json()
    assert (rule["statistic"], rule["unit"], rule["has_secret"], rule["created_by"]) == \
        ("NFS operations per second of type read", "ops/s", True, "admin")
    assert "secret" not in rule
    fired = wait_events(client, "alert.fired")[0]
    assert (fired["subject"], fired["value"], fired["threshold"], fired["until"]) == (rule["id"], 100, 50, None)
    state = client.get(f"/api/v1/alerts/{rule['id']}").json()["state"]
    assert state["active"] and state["since"] == fired["at"]
    assert client.get("/api/v1/events").json()["active"] == 1
    # the receiver gets it, signed
    end = time.time() + 10
    while not rx.posts and time.time() < end:
        time.sleep(0.1)
    headers, body = rx.posts[0]
    assert json.loads(body)["kind"] == "alert.fired" and headers["X-Loupe-Signature"].startswith("sha256=")
    # changing the rule closes the open alert (and says so to the receiver), keeping the secret
    r = client.put(f"/api/v1/alerts/{rule['id']}", json={**RULE, "threshold": 1000, "webhook": rx.url})
    assert r.status_code == 200 and r.json()["has_secret"] and r.json()["threshold"] == 1000
    cleared = wait_events(client, "alert.cleared")[0]
    assert cleared["opened_by"] == fired["id"] and "the rule was changed" in cleared["message"]
    fired_now = client.get("/api/v1/events", params={"kind": "alert.fired"}).json()["events"][0]
    assert fired_now["until"] == cleared["at"]
    while len(rx.posts) < 2 and time.time() < end:
        time.sleep(0.1)
    assert [json.loads(b)["kind"] for _, b in rx.posts] == ["alert.fired", "alert.cleared"]
    # its delivery log
    d = client.get(f"/api/v1/events/{fired['id']}/deliveries").json()["deliveries"]
    assert [(x["attempt"], x["ok"], x["status"]) for x in d] == [(1, True, 200)]
    audit = [(e["action"], e["target"]) for e in client.get("/api/v1/audit").json()["entries"]]
    assert ("alert.create", "busy reads") in audit and ("alert.update", "busy reads") in audit


def test_test_posts_and_deleting_keeps_the_log(client, rx):
    rule = client.post("/api/v1/alerts", json={**RULE, "webhook": rx.url}).json()
    r = client.post(f"/api/v1/alerts/{rule['id']}/test")
    assert r.status_code == 200 and r.json()["ok"] and r.json()["status"] == 200, r.text
    assert json.loads(rx.posts[0][1])["kind"] == "alert.test"
    test_ev = client.get("/api/v1/events", params={"kind": "alert.test"}).json()["events"][0]
    assert (test_ev["delivery"], test_ev["attempts"]) == ("delivered", 1)
    assert client.delete(f"/api/v1/alerts/{rule['id']}").status_code == 204
    assert client.get(f"/api/v1/alerts/{rule['id']}").status_code == 404
    assert client.get("/api/v1/events", params={"kind": "alert.test"}).json()["events"][0]["id"] == test_ev["id"]
    no_hook = client.post("/api/v1/alerts", json=RULE).json()
    r = client.post(f"/api/v1/alerts/{no_hook['id']}/test")
    assert r.status_code == 400 and "has no webhook" in r.text


def test_a_viewer_sees_rules_without_webhook_secrets_and_cannot_change_them(client):
    client.post("/api/v1/alerts", json={**RULE, "webhook": "https://hooks.example.org:8443/T000/B000/tokensecret"})
    assert client.post("/api/v1/users", json={"name": "vera", "role": "viewer", "password": "vera-password"}
                       ).status_code == 201
    client.post("/api/v1/auth/logout")
    sign_in(client, "vera", "vera-password")
    rules = client.get("/api/v1/alerts").json()["rules"]
    assert rules[0]["webhook"] == "https://hooks.example.org:8443/…"
    r = client.post("/api/v1/alerts", json=RULE)
    assert r.status_code == 403 and "admin" in r.text


def test_events_of_a_range_include_alerts_still_open_at_its_start(client):
    book = client.app.state.loupe.alerts
    now = time.time()
    old = book.add_event(now - 3600, "alert.fired", "r", "old", "m")  # open for an hour
    done = book.add_event(now - 3000, "alert.fired", "r2", "done", "m")
    book.add_event(now - 2000, "alert.cleared", "r2", "done", "m", opened_by=done)
    evs = client.get("/api/v1/events", params={"start": "-10m"}).json()["events"]
    assert evs == []
    evs = client.get("/api/v1/events", params={"start": "-10m", "open_before": "true"}).json()["events"]
    assert [(e["id"], e["until"]) for e in evs] == [(old, None)]
    r = client.get("/api/v1/events", params={"start": "yesterday-ish"})
    assert r.status_code == 400 and "cannot read time" in r.text


def test_a_per_client_rule_fires_for_each_client_over_its_threshold(client, rx):
    now = int(time.time())
    send(client, now - 20, 20, {"10.0.0.7": 100, "10.0.0.8": 80, "10.0.0.9": 5})
    assert client.put("/api/v1/client-names", json={"entries": [{"address": "10.0.0.7", "name": "nfs-a"}]}
                      ).status_code == 200
    r = client.post("/api/v1/alerts", json={**RULE, "name": "busy clients", "by": "client", "webhook": rx.url})
    assert r.status_code == 201, r.text
    rule = r.json()
    assert (rule["by"], rule["statistic"]) == ("client", "NFS operations per second of type read broken down by client")
    fired = wait_events(client, "alert.fired", 2)
    assert sorted((e["dim"], e["element"], e["value"]) for e in fired) == [
        ("client", "10.0.0.7", 100), ("client", "10.0.0.8", 80)]
    assert all(e["subject"] == rule["id"] and e["label"] == "busy clients" for e in fired)
    listed = client.get("/api/v1/alerts").json()
    assert (listed["top_elements"], listed["max_open"]) == (20, 10)
    state = listed["rules"][0]["state"]
    assert state["active"] and state["open_count"] == 2 and state["elements_seen"] >= 2
    assert sorted(o["element"] for o in state["open"]) == ["10.0.0.7", "10.0.0.8"]
    assert listed["names"] == {"10.0.0.7": "nfs-a"}  # the named one of the clients shown
    log = client.get("/api/v1/events").json()
    assert log["active"] == 2 and log["names"] == {"10.0.0.7": "nfs-a"}
    # one event, as a webhook's link opens it: with a worksheet of its client over the alert's time
    one = next(e for e in fired if e["element"] == "10.0.0.7")
    detail = client.get(f"/api/v1/events/{one['id']}").json()
    assert detail["event"] == next(e for e in log["events"] if e["id"] == one["id"])
    assert detail["names"] == {"10.0.0.7": "nfs-a"}
    assert detail["worksheet"] == f"?range=3m&paused=1&at={int(one['at']) + 60}&s=nfs.ops;w:op=read;w:client=10.0.0.7"
    r = client.get("/api/v1/events/999999")
    assert r.status_code == 404 and "no event 999999" in r.text
    for bad in (-(2**120), 2**63):  # outside SQLite's integers: a 422 that names the limit, not a 500
        assert client.get(f"/api/v1/events/{bad}").status_code == 422
        assert client.get(f"/api/v1/events/{bad}/deliveries").status_code == 422
    # an edit closes both, one clear each, and each post names its client
    r = client.put(f"/api/v1/alerts/{rule['id']}", json={**RULE, "name": "busy clients", "by": "client",
                                                         "threshold": 1000, "webhook": rx.url})
    assert r.status_code == 200 and r.json()["state"]["open_count"] == 0
    cleared = wait_events(client, "alert.cleared", 2)
    assert sorted((c["element"], c["opened_by"]) for c in cleared) == sorted((f["element"], f["id"]) for f in fired)
    end = time.time() + 10
    while len(rx.posts) < 4 and time.time() < end:
        time.sleep(0.1)
    posts = [json.loads(b) for _, b in rx.posts]
    assert sorted((p["kind"], p["element"]["key"], p["element"].get("name")) for p in posts) == [
        ("alert.cleared", "10.0.0.7", "nfs-a"), ("alert.cleared", "10.0.0.8", None),
        ("alert.fired", "10.0.0.7", "nfs-a"), ("alert.fired", "10.0.0.8", None)]


def test_receivers_outside_the_admins_list_are_refused_when_a_rule_is_saved(tmp_path, rx):
    gen = signed_in_app(tmp_path, TOKEN, webhook_allow="10.0.0.0/8, hooks.example.org")
    c = next(gen)
    try:
        r = c.post("/api/v1/alerts", json={**RULE, "webhook": rx.url})  # 127.0.0.1: not listed
        assert r.status_code == 422, r.text
        assert r.json()["detail"] == ("webhook: receiver 127.0.0.1 (127.0.0.1) is at no allowed address: "
                                      "LOUPE_WEBHOOK_ALLOW=10.0.0.0/8,hooks.example.org")
        assert c.get("/api/v1/alerts").json()["rules"] == []
        for ok in ("http://10.9.8.7:9000/hook", "https://hooks.example.org/x"):  # listed: saved without a lookup
            assert c.post("/api/v1/alerts", json={**RULE, "webhook": ok}).status_code == 201
    finally:
        gen.close()


def test_the_per_element_bounds_are_the_servers_settings(tmp_path, rx):
    gen = signed_in_app(tmp_path, TOKEN, alert_top_elements=3, alert_max_open=1)
    c = next(gen)
    try:
        now = int(time.time())
        send(c, now - 20, 20, {"10.0.0.7": 100, "10.0.0.8": 90, "10.0.0.9": 80, "10.0.0.10": 70})
        r = c.post("/api/v1/alerts", json={**RULE, "name": "busy clients", "by": "client", "webhook": rx.url})
        assert r.status_code == 201, r.text
        (fired,) = wait_events(c, "alert.fired", 1)
        assert fired["element"] == "10.0.0.7"  # the busiest of the top 3; one open at most
        end = time.time() + 10
        while c.get("/api/v1/alerts").json()["rules"][0]["state"]["withheld"] < 2 and time.time() < end:
            time.sleep(0.25)
        listed = c.get("/api/v1/alerts").json()
        assert (listed["top_elements"], listed["max_open"]) == (3, 1)
        st = listed["rules"][0]["state"]
        assert st["open_count"] == 1 and st["withheld"] == 2  # 10.0.0.8 and .9 held; .10, outside the top 3, unchecked
        assert len(c.get("/api/v1/events", params={"kind": "alert.fired"}).json()["events"]) == 1
    finally:
        gen.close()
