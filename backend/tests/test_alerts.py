"""Alert rules: their second-by-second state machine, evaluation over a real store, the event log
and webhook delivery to a real local receiver."""

import json
import time

import pytest
from factories import NOW, Receiver, nfs_frame

from loupe.alerts import (
    AGENT_STALE, SETTLE, AlertBook, AlertEngine, Deliverer, ElementsState, Rule, RuleState, payload, sign, step,
)
from loupe.config import Settings
from loupe.frame import SourceStatus
from loupe.store.duckdb_store import DuckDBStore
from loupe.webhooks import ReceiverPolicy, post


def rule(**kw):
    base = dict(id="r1", name="busy", metric="nfs.ops", where={}, condition="above", threshold=50.0, hold_s=3,
                clear_s=2, repost_s=0, timezone="UTC")
    return Rule(**{**base, **kw})


def run(r, values, start=NOW):
    st = RuleState(checked_upto=start)
    out = []
    for i, v in enumerate(values):
        tr = step(r, st, start + i, v)
        if tr:
            out.append((tr.kind, tr.at - start))
    return out, st


H, L = 100.0, 10.0  # above and below the threshold of 50


@pytest.mark.parametrize(("kw", "values", "want"), [
    # fires at the end of the third second in a row, once
    ({}, [H, H, H, H, H], [("fired", 3)]),
    # a dip restarts the hold
    ({}, [H, H, L, H, H, H], [("fired", 6)]),
    # clears after clear_s seconds without it; a blip back does not clear early
    ({}, [H, H, H, L, H, L, L, H], [("fired", 3), ("cleared", 7)]),
    # equal to the threshold is neither above nor below
    ({}, [50.0] * 6, []),
    ({"condition": "below"}, [H, L, L, L, H, H], [("fired", 4), ("cleared", 6)]),
    # reposts every repost_s while open, counted from the last post
    ({"repost_s": 2}, [H] * 8, [("fired", 3), ("reposted", 5), ("reposted", 7)]),
    # fires again after a clear
    ({"hold_s": 1, "clear_s": 1}, [H, L, H], [("fired", 1), ("cleared", 2), ("fired", 3)]),
])
def test_the_state_machine(kw, values, want):
    assert run(rule(**kw), values)[0] == want


def test_state_survives_a_round_trip_mid_alert():
    r = rule()
    _, st = run(r, [H, H, H, L])
    st2 = RuleState.load(st.dump())
    assert st2 == st and st2.active and st2.clear_start == NOW + 3
    assert step(r, st2, NOW + 4, L).kind == "cleared"


def _at(day: int, hh: int, mm: int = 0) -> int:
    import datetime as dt

    base = dt.datetime(2027, 1, 4, tzinfo=dt.timezone.utc)  # a Monday
    assert base.weekday() == 0
    return int((base + dt.timedelta(days=day, hours=hh, minutes=mm)).timestamp())


@pytest.mark.parametrize(("kw", "ts", "inside"), [
    ({}, _at(6, 12), True),
    ({"days": ["mon", "tue", "wed", "thu", "fri"]}, _at(5, 12), False),  # Saturday
    ({"days": ["mon"]}, _at(0, 23, 59), True),
    ({"from_time": "09:00", "to_time": "17:00"}, _at(1, 8, 59), False),
    ({"from_time": "09:00", "to_time": "17:00"}, _at(1, 9, 0), True),
    ({"from_time": "09:00", "to_time": "17:00"}, _at(1, 17, 0), False),  # the end is exclusive
    # across midnight: the night belongs to the day it starts on
    ({"from_time": "22:00", "to_time": "06:00", "days": ["fri"]}, _at(4, 23), True),
    ({"from_time": "22:00", "to_time": "06:00", "days": ["fri"]}, _at(5, 5, 59), True),  # Saturday morning
    ({"from_time": "22:00", "to_time": "06:00", "days": ["fri"]}, _at(4, 5), False),  # Friday morning is Thursday's
    # in the rule's time zone: 09:30 in Tokyo is 00:30 UTC
    ({"from_time": "09:00", "to_time": "10:00", "timezone": "Asia/Tokyo"}, _at(1, 0, 30), True),
    ({"from_time": "09:00", "to_time": "10:00", "timezone": "Asia/Tokyo"}, _at(1, 9, 30), False),
])
def test_days_and_hours(kw, ts, inside):
    assert rule(**kw).in_window(ts) is inside


def test_outside_its_hours_a_rule_waits_then_fires_inside():
    start = _at(1, 8, 59) - 1  # the breach starts at 08:58:59, the window at 09:00
    out, _ = run(rule(hold_s=3, from_time="09:00", to_time="17:00"), [H] * 70, start=start)
    assert out == [("fired", 62)]  # the end of the 09:00:00 second


# ------------------------------------------------------------------ over a real store


def load(store, pattern):
    """pattern: per second from NOW, the ops of that second."""
    frames = [nfs_frame(NOW + i, [("10.0.0.7", "read", "/export/a", int(n), 0, {})], seq=NOW + i)
              for i, n in enumerate(pattern)]
    store.ingest(frames, received_at=NOW + len(pattern))
    store.flush()


@pytest.fixture
def setup(tmp_path):
    store = DuckDBStore(tmp_path / "s.duckdb", clock=lambda: NOW + 100)
    books = []

    def book(name="alerts.sqlite"):
        b = AlertBook(tmp_path / name)
        books.append(b)
        return b

    yield store, book
    for b in books:
        b.close()
    store.close()


def add(book, r, checked_upto=NOW):
    book.put_rule(r, None, "alice", NOW)
    book.set_state(f"rule:{r.id}", (ElementsState if r.by else RuleState)(checked_upto=checked_upto).dump())


def kinds(book):
    return [(e["kind"], int(e["at"]) - NOW, e["value"]) for e in reversed(book.events())]


PATTERN = [100] * 10 + [5] * 10 + [100] * 10


def test_a_rule_fires_and_clears_on_stored_seconds_the_same_however_often_it_runs(setup):
    store, book = setup
    load(store, PATTERN)
    want = [("alert.fired", 3, 100.0), ("alert.cleared", 12, 5.0), ("alert.fired", 23, 100.0)]
    b1 = book()
    add(b1, rule(hold_s=3, clear_s=2))
    AlertEngine(store, b1).tick(NOW + 30 + SETTLE)  # all at once
    assert kinds(b1) == want
    b2 = book("second.sqlite")
    add(b2, rule(hold_s=3, clear_s=2))
    eng = AlertEngine(store, b2)
    for t in range(NOW + SETTLE, NOW + 31 + SETTLE):  # second by second
        eng.tick(t)
    assert kinds(b2) == want
    cleared = [e for e in b2.events() if e["kind"] == "alert.cleared"][0]
    fired_first = [e for e in b2.events() if e["kind"] == "alert.fired"][-1]
    assert cleared["opened_by"] == fired_first["id"]
    assert "above 50 ops/s for 3 s" in fired_first["message"] and "not above 50" in cleared["message"]


def test_a_restart_resumes_without_firing_twice(setup):
    store, book = setup
    load(store, PATTERN)
    b = book()
    add(b, rule(hold_s=3, clear_s=2))
    AlertEngine(store, b).tick(NOW + 8 + SETTLE)
    assert [k for k, _, _ in kinds(b)] == ["alert.fired"]
    b.close()
    b = book()  # the same file, a new process
    eng = AlertEngine(store, b)
    assert eng.rule_state("r1").active
    eng.tick(NOW + 30 + SETTLE)
    assert [k for k, _, _ in kinds(b)] == ["alert.fired", "alert.cleared", "alert.fired"]


def test_a_new_rule_looks_back_over_its_hold(setup):
    store, book = setup
    load(store, [100] * 30)
    b = book()
    b.put_rule(rule(hold_s=5), None, "alice", NOW)  # no state: created while the load is on
    AlertEngine(store, b).tick(NOW + 30 + SETTLE)
    assert kinds(b) == [("alert.fired", 30, 100.0)]  # at once, not 5 s later


def test_filters_select_what_the_rule_watches(setup):
    store, book = setup
    load(store, [100] * 10)
    b = book()
    add(b, rule(id="other", where={"client": ["10.0.0.8"]}, hold_s=1))
    add(b, rule(id="mine", where={"client": ["10.0.0.7"], "op": ["read"]}, hold_s=1))
    AlertEngine(store, b).tick(NOW + 10 + SETTLE)
    assert [e["subject"] for e in b.events()] == ["mine"]


def test_closing_a_rule_clears_its_open_alert_once(setup):
    store, book = setup
    load(store, [100] * 10)
    b = book()
    r = rule(hold_s=1, webhook="http://127.0.0.1:9/hook")
    add(b, r)
    eng = AlertEngine(store, b)
    eng.tick(NOW + 10 + SETTLE)
    [eid] = eng.close_rule(r, "the rule was changed", NOW + 20)
    ev = b.event(eid)
    assert (ev["kind"], ev["message"], ev["delivery"]) == ("alert.cleared", "busy: cleared: the rule was changed", "pending")
    assert (ev["dim"], ev["element"]) == (None, None)
    assert eng.close_rule(r, "again", NOW + 21) == []  # nothing open any more


# ------------------------------------------------------------------ per element


def load_clients(store, patterns):
    """patterns: {client: per second from NOW, its ops (None: absent that second)}."""
    seconds = max(len(p) for p in patterns.values())
    frames = []
    for i in range(seconds):
        rows = [(c, "read", "/export/a", int(p[i]), 0, {}) for c, p in sorted(patterns.items())
                if i < len(p) and p[i] is not None]
        frames.append(nfs_frame(NOW + i, rows, seq=NOW + i))
    store.ingest(frames, received_at=NOW + seconds)
    store.flush()


def per_element(book):
    return [(e["kind"], e["element"], int(e["at"]) - NOW) for e in reversed(book.events())]


A, B, C = "10.0.0.1", "10.0.0.2", "10.0.0.3"
CLIENTS = {A: [100] * 30, B: [100] * 10 + [5] * 20, C: [5] * 30}


def test_a_per_element_rule_fires_and_clears_each_element_on_its_own(setup):
    store, book = setup
    load_clients(store, CLIENTS)
    want = [("alert.fired", A, 3), ("alert.fired", B, 3), ("alert.cleared", B, 12)]
    b1 = book()
    add(b1, rule(by="client", hold_s=3, clear_s=2))
    AlertEngine(store, b1).tick(NOW + 30 + SETTLE)  # all at once: ranked 10 s at a time
    assert per_element(b1) == want
    b2 = book("second.sqlite")
    add(b2, rule(by="client", hold_s=3, clear_s=2))
    eng = AlertEngine(store, b2)
    for t in range(NOW + SETTLE, NOW + 31 + SETTLE):  # second by second
        eng.tick(t)
    assert per_element(b2) == want
    fired_b = next(e for e in b2.events() if e["kind"] == "alert.fired" and e["element"] == B)
    cleared_b = next(e for e in b2.events() if e["kind"] == "alert.cleared")
    assert cleared_b["opened_by"] == fired_b["id"] and (fired_b["dim"], fired_b["subject"]) == ("client", "r1")
    assert fired_b["message"] == ("busy: NFS operations per second for client 10.0.0.2 above 50 ops/s for 3 s "
                                  "(now 100)")
    assert cleared_b["message"].startswith("busy: NFS operations per second for client 10.0.0.2: cleared: not above")
    st = eng.rule_state("r1")
    assert isinstance(st, ElementsState) and list(st.open()) == [A]
    assert (st.seen, st.value_element, st.value) == (3, A, 100.0)
    assert set(st.elements) == {A}  # idle elements are not kept
    assert eng.open_alerts("r1").keys() == {A}


def test_an_element_that_leaves_the_data_counts_as_zero(setup):
    store, book = setup
    load_clients(store, {A: [100] * 8, B: [100] * 30})
    b = book()
    add(b, rule(by="client", hold_s=3, clear_s=2))
    add(b, rule(id="quiet", name="quiet", by="client", condition="below", threshold=50, hold_s=4, clear_s=2))
    eng = AlertEngine(store, b)
    for t in range(NOW + SETTLE, NOW + 31 + SETTLE):
        eng.tick(t)
    busy = [x for x, e in zip(per_element(b), reversed(b.events())) if e["subject"] == "r1"]
    assert busy == [("alert.fired", A, 3), ("alert.fired", B, 3), ("alert.cleared", A, 10)]
    # "below": A falls out of the top by vanishing, and is still followed until it fires
    quiet = [x for x, e in zip(per_element(b), reversed(b.events())) if e["subject"] == "quiet"]
    assert quiet == [("alert.fired", A, 12)]


def test_per_element_work_is_bounded_and_what_is_cut_is_counted(setup):
    store, book = setup
    d, e = "10.0.0.4", "10.0.0.5"
    # five clients above 50; only the three busiest are checked, and two may be open at once
    load_clients(store, {A: [400] * 10 + [5] * 20, B: [300] * 30, C: [200] * 30, d: [100] * 30, e: [60] * 30})
    b = book()
    add(b, rule(by="client", hold_s=3, clear_s=2))
    eng = AlertEngine(store, b, top_elements=3, max_open=2)
    for t in range(NOW + SETTLE, NOW + 31 + SETTLE):
        eng.tick(t)
    # A and B open at 3 s; C holds too but is withheld; A falls at 10 s, so d is in the top three and
    # is withheld as well; A clears at 12 s, and C, the busier of the two still holding, opens then
    assert per_element(b) == [("alert.fired", A, 3), ("alert.fired", B, 3), ("alert.cleared", A, 12),
                              ("alert.fired", C, 12)]
    st = eng.rule_state("r1")
    assert sorted(st.open()) == [B, C] and st.withheld_total == 2 and st.elements[d].withheld
    assert e not in st.elements  # never among the three busiest: never checked
    assert st.seen == 5


def test_withheld_elements_are_counted_while_they_wait(setup):
    store, book = setup
    load_clients(store, {A: [400] * 20, B: [300] * 20, C: [200] * 20})
    b = book()
    add(b, rule(by="client", hold_s=3, clear_s=2))
    eng = AlertEngine(store, b, max_open=1)
    eng.tick(NOW + 20 + SETTLE)
    st = eng.rule_state("r1")
    assert list(st.open()) == [A] and st.withheld_total == 2
    assert sorted(k for k, e in st.elements.items() if e.withheld) == [B, C]
    assert per_element(b) == [("alert.fired", A, 3)]


def test_closing_a_per_element_rule_clears_every_open_element_once(setup, receiver):
    store, book = setup
    rx = receiver([200])
    load_clients(store, CLIENTS)
    b = book()
    r = rule(by="client", hold_s=3, clear_s=2, webhook=rx.url)
    add(b, r)
    eng = AlertEngine(store, b)
    eng.tick(NOW + 8 + SETTLE)
    fired = {e["element"]: e["id"] for e in b.events() if e["kind"] == "alert.fired"}
    assert set(fired) == {A, B}
    ids = eng.close_rule(r, "the rule was deleted", NOW + 20)
    clears = [b.event(i) for i in ids]
    assert {(c["element"], c["opened_by"]) for c in clears} == {(A, fired[A]), (B, fired[B])}
    assert all(c["message"].endswith("cleared: the rule was deleted") for c in clears)
    assert eng.close_rule(r, "again", NOW + 21) == [] and eng.rule_state(r.id) is None
    # each post names its element
    Deliverer(b, timeout=2).run_due(float("inf"))
    docs = [json.loads(body) for _, body in rx.posts]
    assert sorted((d["kind"], d["element"]["key"]) for d in docs) == [
        ("alert.cleared", A), ("alert.cleared", B), ("alert.fired", A), ("alert.fired", B)]
    assert {d["element"]["dimension"] for d in docs} == {"client"} and {d["alert"]["by"] for d in docs} == {"client"}


def test_posts_link_to_the_event_and_a_worksheet_of_its_element_when_the_public_url_is_set(setup, receiver):
    store, book = setup
    rx = receiver([200])
    load_clients(store, CLIENTS)
    b = book()
    add(b, rule(by="client", where={"op": ["read"]}, hold_s=3, clear_s=2, webhook=rx.url))
    AlertEngine(store, b).tick(NOW + 30 + SETTLE)
    Deliverer(b, timeout=2, public_url="https://nas1.example:8080").run_due(float("inf"))
    docs = {(d["kind"], d["element"]["key"]): d for d in (json.loads(body) for _, body in rx.posts)}
    fired, cleared = docs[("alert.fired", B)], docs[("alert.cleared", B)]
    assert fired["url"] == f"https://nas1.example:8080/alerts?event={fired['event_id']}"
    # B's run began at 0 s, fired at 3 s and cleared at 12 s: the link shows B from a minute before
    # its run to a minute after its clear
    assert cleared["worksheet_url"] == ("https://nas1.example:8080/?range=3m&paused=1&at="
                                        f"{NOW + 72}&s=nfs.ops;w:op=read;w:client=10.0.0.2")
    assert fired["worksheet_url"].startswith(f"https://nas1.example:8080/?range=3m&paused=1&at={NOW + 63}&s=")
    # without the public address, no links
    rx.posts.clear()
    eid = b.events()[0]["id"]
    b.record_attempt(eid, 1, NOW, rx.url, False, 500, "HTTP 500", 1.0, delivery="pending", next_at=NOW)
    Deliverer(b, timeout=2).run_due(float("inf"))
    doc = json.loads(rx.posts[0][1])
    assert doc["event_id"] == eid and "url" not in doc and "worksheet_url" not in doc


def test_an_agent_event_links_to_the_alerts_page_only():
    ev = dict(id=9, kind="agent.connected", at=NOW, subject="a", label="a", threshold=None, value=None,
              opened_by=None, message="m", dim=None, element=None, stat=None)
    doc = payload(ev, None, public_url="https://nas1.example", worksheet=None)
    assert doc["url"] == "https://nas1.example/alerts?event=9" and "worksheet_url" not in doc


def test_a_restart_resumes_per_element_state(setup):
    store, book = setup
    load_clients(store, CLIENTS)
    b = book()
    add(b, rule(by="client", hold_s=3, clear_s=2))
    AlertEngine(store, b).tick(NOW + 8 + SETTLE)
    b.close()
    b = book()
    eng = AlertEngine(store, b)
    st = eng.rule_state("r1")
    assert ElementsState.load(st.dump()) == st and sorted(st.open()) == [A, B]
    eng.tick(NOW + 30 + SETTLE)
    assert per_element(b) == [("alert.fired", A, 3), ("alert.fired", B, 3), ("alert.cleared", B, 12)]


def test_a_total_rule_has_no_element_in_its_payload():
    ev = dict(id=1, kind="alert.fired", at=NOW, subject="r", label="busy", threshold=1.0, value=2.0, opened_by=None,
              message="m", dim=None, element=None)
    assert "element" not in payload(ev, None)


# ------------------------------------------------------------------ edits racing the evaluation


def test_rule_edits_racing_the_evaluation_never_leave_a_stale_event_or_an_alert_closed_twice(setup):
    """A thread edits two rules (a total and a per-element one) over and over, each edit a new
    version named in its events, while ticks evaluate second after second of a load that makes them
    fire and clear all the time. No event may be recorded under a version after it was replaced, and
    every alert fired must be cleared exactly once, under its own version (the last by the deletion)."""
    import random
    import threading

    store, book = setup
    seconds = 200
    # every client flips above and below the threshold every couple of seconds, out of step
    load_clients(store, {f"10.0.0.{c}": [100 if (i // (2 + c % 3)) % 2 else 5 for i in range(seconds)]
                         for c in range(1, 6)})
    b = book()
    rules = [rule(id="tot", name="tot v0", hold_s=1, clear_s=1, threshold=250),
             rule(id="per", name="per v0", by="client", hold_s=1, clear_s=1)]
    for r in rules:
        add(b, r)
    eng = AlertEngine(store, b)
    stop, edits, errors = threading.Event(), [], []
    rnd = random.Random(7)

    def editor():
        try:
            k = 0
            while not stop.is_set():
                k += 1
                old = rules[k % 2]
                new = Rule(**{**old.__dict__, "name": f"{old.id} v{k}"})
                eng.replace_rule(old, new, None, "alice", NOW)
                # the newest event once the edit is done: none of old's may come after it
                edits.append((old.name, b._q("SELECT coalesce(max(id), 0) FROM events")[0][0]))
                rules[k % 2] = new
                time.sleep(rnd.random() * 0.004)
        except Exception as e:  # pragma: no cover (reported below)
            errors.append(e)

    t = threading.Thread(target=editor)
    t.start()
    try:
        for ts in range(NOW + SETTLE, NOW + seconds + SETTLE):
            eng.tick(ts)
            time.sleep(0.001)  # the evaluation thread rests between ticks too: an edit gets its turn
    finally:
        stop.set()
        t.join()
    assert not errors
    for r in rules:
        eng.delete_rule(r, NOW + seconds)
    events = sorted(b.events(limit=100_000), key=lambda e: e["id"])
    assert len(edits) >= 50 and sum(e["kind"] == "alert.fired" for e in events) >= 50  # it did race
    replaced = dict(edits)
    for e in events:
        if e["label"] in replaced:
            assert e["id"] <= replaced[e["label"]], f"{e} recorded after {e['label']} was replaced"
    fired = {e["id"]: e for e in events if e["kind"] == "alert.fired"}
    clears: dict[int, list[dict]] = {i: [] for i in fired}
    for e in events:
        if e["kind"] == "alert.cleared":
            clears[e["opened_by"]].append(e)
    for i, f in fired.items():
        assert [(c["label"], c["element"]) for c in clears[i]] == [(f["label"], f["element"])], \
            f"fired {f} cleared {len(clears[i])} times: {clears[i]}"


def test_agents_connect_and_disconnect(setup):
    store, book = setup
    b = book()
    eng = AlertEngine(store, b)
    status = [SourceStatus(name="procfs.cpu", families=["cpu"], state="active")]
    store.record_status("agent-1", "nas1", status, NOW)
    eng.tick(NOW + 1)
    eng.tick(NOW + 2)  # still up: nothing new
    eng.tick(NOW + AGENT_STALE + 5)
    got = [(e["kind"], e["label"], e["at"] - NOW) for e in reversed(b.events())]
    assert got == [("agent.connected", "agent-1 (nas1)", 0), ("agent.disconnected", "agent-1 (nas1)", AGENT_STALE)]
    b.close()
    b = book()
    AlertEngine(store, b).tick(NOW + 100)  # a restart does not say it again
    assert len(b.events()) == 2


# ------------------------------------------------------------------ webhooks


@pytest.fixture
def receiver():
    made = []

    def make(statuses, location=None):
        made.append(Receiver(statuses, location))
        return made[-1]

    yield make
    for r in made:
        r.close()


def test_a_post_is_retried_until_the_receiver_takes_it(setup, receiver):
    _, book = setup
    rx = receiver([500, 503, 200])
    b = book()
    r = rule(webhook=rx.url)
    b.put_rule(r, "s3cret", "alice", NOW)
    eid = b.add_event(NOW, "alert.fired", r.id, r.name, "busy: above", value=100.0, threshold=50.0, webhook=rx.url)
    d = Deliverer(b, attempts=5, timeout=2)
    for i in range(3):
        assert d.run_due(float("inf")) == 1
    assert d.run_due(float("inf")) == 0  # delivered: nothing more to do
    assert len(rx.posts) == 3
    bodies = {body for _, body in rx.posts}
    assert len(bodies) == 1  # every attempt posts the same event
    headers, body = rx.posts[-1]
    assert headers["X-Loupe-Event"] == str(eid) and [h["X-Loupe-Attempt"] for h, _ in rx.posts] == ["1", "2", "3"]
    assert headers["X-Loupe-Signature"] == sign("s3cret", body)
    doc = json.loads(body)
    assert (doc["kind"], doc["alert"]["name"], doc["alert"]["metric"], doc["value"], doc["alert"]["threshold"]) == \
        ("alert.fired", "busy", "nfs.ops", 100.0, 50.0)
    log = b.deliveries(eid)
    assert [(x["attempt"], x["ok"], x["status"]) for x in log] == [(1, False, 500), (2, False, 503), (3, True, 200)]
    assert "HTTP 500" in log[0]["error"]
    ev = b.event(eid)
    assert (ev["delivery"], ev["attempts"], ev["next_at"]) == ("delivered", 3, None)


@pytest.mark.parametrize(("allow", "address", "allowed"), [
    ("", "192.0.2.7", True),
    ("", "127.0.0.1", True),
    ("", "169.254.169.254", False),                  # a cloud metadata service
    ("", "fe80::1", False),
    ("", "fd00:ec2::254", False),                    # the same service over IPv6 (AWS)
    ("", "fd00:ec2::255", True),
    ("", "0.0.0.0", False),
    ("", "224.0.0.1", False),
    ("", "::ffff:169.254.169.254", False),           # the same, IPv4-mapped
    ("10.0.0.0/8, 2001:db8::/32", "10.1.2.3", True),
    ("10.0.0.0/8, 2001:db8::/32", "2001:db8::7", True),
    ("10.0.0.0/8, 2001:db8::/32", "127.0.0.1", False),
    ("192.0.2.7", "192.0.2.7", True),
    ("192.0.2.7", "192.0.2.8", False),
    ("169.254.0.0/16", "169.254.169.254", True),     # listed on purpose
    ("hooks.example.org", "10.1.2.3", False),        # a list of names only: addresses are not listed
])
def test_where_webhook_receivers_may_be(allow, address, allowed):
    import ipaddress

    assert ReceiverPolicy.parse(allow).allows(ipaddress.ip_address(address)) is allowed


@pytest.mark.parametrize(("text", "problem"), [
    ("10.0.0.0/33", "'10.0.0.0/33' is neither a network"),
    ("hooks example", "'hooks example' is neither a network"),
    ("10.0.0.0/8, under_score.example", "'under_score.example'"),
])
def test_a_bad_receiver_list_is_refused_by_entry(text, problem):
    with pytest.raises(ValueError, match=problem):
        ReceiverPolicy.parse(text)
    with pytest.raises(ValueError, match=problem):
        Settings(webhook_allow=text)


def test_a_receiver_outside_the_list_gets_nothing_and_the_attempt_says_why(setup, receiver):
    _, book = setup
    rx = receiver([200])
    b = book()
    eid = b.add_event(NOW, "agent.connected", "a", "a", "m", webhook=rx.url)
    d = Deliverer(b, attempts=1, timeout=2, policy=ReceiverPolicy.parse("10.0.0.0/8"))
    assert d.run_due(float("inf")) == 1
    (att,) = b.deliveries(eid)
    assert not att["ok"] and att["status"] is None
    assert "receiver 127.0.0.1 (127.0.0.1) is at no allowed address: LOUPE_WEBHOOK_ALLOW=10.0.0.0/8" in att["error"]
    assert rx.posts == [] and b.event(eid)["delivery"] == "failed"
    # a metadata address is refused without any list, and nothing is sent anywhere
    ok, status, error = post("http://169.254.169.254/latest/meta-data", b"{}", {}, 1)
    assert (ok, status) == (False, None) and "refuses link-local, metadata" in error


def test_a_listed_host_name_is_trusted_with_what_it_resolves_to(setup, receiver):
    _, book = setup
    rx = receiver([200])
    b = book()
    url = rx.url.replace("127.0.0.1", "localhost")
    eid = b.add_event(NOW, "agent.connected", "a", "a", "m", webhook=url)
    assert Deliverer(b, policy=ReceiverPolicy.parse("10.0.0.0/8, localhost")).run_due(float("inf")) == 1
    assert b.event(eid)["delivery"] == "delivered" and len(rx.posts) == 1
    assert rx.posts[0][0]["Host"] == f"localhost:{rx.server.server_port}"  # the URL's host, sent as is


def test_a_redirect_is_not_followed(setup, receiver):
    _, book = setup
    elsewhere = receiver([200])
    rx = receiver([302], location=elsewhere.url)
    b = book()
    eid = b.add_event(NOW, "agent.connected", "a", "a", "m", webhook=rx.url)
    Deliverer(b, attempts=1).run_due(float("inf"))
    (att,) = b.deliveries(eid)
    assert (att["ok"], att["status"]) == (False, 302)
    assert f"redirects are not followed (to {elsewhere.url})" in att["error"]
    assert len(rx.posts) == 1 and elsewhere.posts == []


def test_a_post_names_its_client_when_a_name_is_known(setup, receiver):
    _, book = setup
    rx = receiver([200])
    b = book()
    r = rule(webhook=rx.url, by="client")
    b.put_rule(r, None, "alice", NOW)
    for ip in ("10.0.0.7", "10.0.0.8"):
        b.add_event(NOW, "alert.fired", r.id, r.name, "busy", value=100.0, threshold=50.0, webhook=rx.url,
                    dim="client", element=ip, rule=r)
    Deliverer(b, namer={"10.0.0.7": "db1.example"}.get).run_due(float("inf"))
    got = sorted((d["element"]["key"], d["element"].get("name")) for d in (json.loads(p) for _, p in rx.posts))
    assert got == [("10.0.0.7", "db1.example"), ("10.0.0.8", None)]


def test_a_post_gives_up_after_its_attempts_and_says_why(setup):
    _, book = setup
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    b = book()
    eid = b.add_event(NOW, "agent.connected", "a", "a", "m", webhook=f"http://127.0.0.1:{port}/x")
    d = Deliverer(b, attempts=2, timeout=1)
    d.run_due(float("inf"))
    ev = b.event(eid)
    assert ev["delivery"] == "pending" and ev["next_at"] is not None
    assert d.run_due(ev["next_at"] - 0.5) == 0  # not before its backoff
    d.run_due(float("inf"))
    ev = b.event(eid)
    assert (ev["delivery"], ev["attempts"]) == ("failed", 2)
    assert all("refused" in x["error"].lower() for x in b.deliveries(eid))


def test_pending_posts_outlive_a_restart(setup, receiver):
    _, book = setup
    rx = receiver([200])
    b = book()
    eid = b.add_event(NOW, "alert.fired", "gone", "gone", "m", webhook=rx.url)
    b.close()
    b = book()
    assert Deliverer(b).run_due(float("inf")) == 1
    assert b.event(eid)["delivery"] == "delivered" and len(rx.posts) == 1


def test_the_alert_book_is_readable_by_its_owner_only(tmp_path):
    b = AlertBook(tmp_path / "a.sqlite")
    try:
        b.put_rule(rule(webhook="https://hooks.example.org/T0/SECRET"), "s3cret", "alice", NOW)
        for f in tmp_path.glob("a.sqlite*"):
            assert f.stat().st_mode & 0o777 == 0o600, f
    finally:
        b.close()
