"""Threshold alerts: the rules, their evaluation against the per-second store, the event log
(alerts firing and clearing, agents connecting and disconnecting) and webhook delivery.

A rule is checked second by second over settled seconds (SETTLE behind now), so its verdict does
not depend on how often the engine runs or on a restart: the evaluation resumes where it stopped,
and a rule's state (active, since when) is kept beside the log. Webhook posts wait in the log
as pending until a receiver answers 2xx; they are retried with backoff and survive a restart.

A rule with a breakdown (`by`: client, disk, file...) fires per element: each element has a state
of its own, and its own events. The work is bounded: each second, only the TOP_ELEMENTS busiest
elements of the breakdown (the store's top-N query) and those the rule already follows are
checked, at most MAX_OPEN of a rule's alerts are open at once (the others that held long enough
are withheld and counted), and at most MAX_FOLLOWED elements are followed between seconds.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

from . import __version__
from .catalog import DIM_PHRASE, FILE_OTHER, metric, statistic_name
from .links import encode_statistic, worksheet_query
from .privatedb import open_private
from .query import parse_statistic
from .store.base import Store
from .timerange import Window
from .webhooks import ReceiverPolicy, post

log = logging.getLogger("loupe.alerts")

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
SETTLE = 3  # seconds behind now: agents post each second within about a second, and late ones a bit later
CATCH_UP = 3600  # after a longer outage a rule starts afresh from its hold window
AGENT_STALE = 15.0  # an agent silent this long is disconnected (the sources page marks it stale)
BACKOFF = (2, 5, 15, 60, 300, 900)  # seconds before each retry of a failed webhook post
TOP_ELEMENTS = 20  # per-element rules: the busiest elements checked each second
MAX_OPEN = 10  # per-element rules: alerts open at once; further elements that hold are withheld
MAX_FOLLOWED = 50  # per-element rules: elements whose state is kept between seconds (open ones always), at least
RANK_STEP = 10  # per-element rules catching up (a new rule, a restart): seconds ranked together

_SCHEMA = """
CREATE TABLE IF NOT EXISTS rules (
  id TEXT PRIMARY KEY, spec TEXT NOT NULL, secret TEXT, created REAL NOT NULL, created_by TEXT NOT NULL,
  updated REAL NOT NULL, updated_by TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS state (
  key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
  id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, kind TEXT NOT NULL, subject TEXT NOT NULL,
  label TEXT NOT NULL, message TEXT NOT NULL, value REAL, threshold REAL, opened_by INTEGER,
  webhook TEXT, delivery TEXT NOT NULL DEFAULT 'none', attempts INTEGER NOT NULL DEFAULT 0, next_at REAL,
  dim TEXT, element TEXT, stat TEXT);
CREATE INDEX IF NOT EXISTS events_at ON events (at);
CREATE INDEX IF NOT EXISTS events_pending ON events (delivery, next_at);
CREATE INDEX IF NOT EXISTS events_opened_by ON events (opened_by);
CREATE TABLE IF NOT EXISTS deliveries (
  event_id INTEGER NOT NULL, attempt INTEGER NOT NULL, at REAL NOT NULL, url TEXT NOT NULL, ok INTEGER NOT NULL,
  status INTEGER, error TEXT, ms REAL NOT NULL, PRIMARY KEY (event_id, attempt));
"""

EVENT_COLS = ("id", "at", "kind", "subject", "label", "message", "value", "threshold", "opened_by", "webhook",
              "delivery", "attempts", "next_at", "dim", "element", "stat")


def fmt_value(v: float) -> str:
    """A threshold or a measured value, short and exact enough to compare: 1,250.5, 0.0312, 3.2e+09."""
    if v == 0 or 1e-3 <= abs(v) < 1e9:
        return f"{v:,.6g}" if abs(v) >= 1000 else f"{v:.4g}"
    return f"{v:.3g}"


def fmt_span(seconds: int) -> str:
    for div, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= div and seconds % div == 0:
            return f"{seconds // div} {unit}"
    return f"{seconds} s"


def element_phrase(dim: str, key: str) -> str:
    """An element in a message: "client 10.0.0.7", "disk sda", "type read"; the empty element is "(none)"."""
    return f"{DIM_PHRASE.get(dim, dim)} {key if key != '' else '(none)'}"


# ---------------------------------------------------------------------------- rules


@dataclass
class Rule:
    """A checked rule (see models.AlertRuleBody for what each field means)."""

    id: str
    name: str
    metric: str
    where: dict[str, list[str]]
    condition: str  # above | below
    threshold: float
    hold_s: int = 300
    clear_s: int = 60
    repost_s: int = 0
    days: list[str] = field(default_factory=lambda: list(DAYS))
    from_time: str | None = None  # HH:MM, with to_time: only fires within the day's window
    to_time: str | None = None
    timezone: str | None = None  # IANA name; None: the server's local time
    webhook: str | None = None
    enabled: bool = True
    by: str | None = None  # fire per element of this dimension; None: on the total

    SPEC = ("name", "metric", "where", "by", "condition", "threshold", "hold_s", "clear_s", "repost_s", "days",
            "from_time", "to_time", "timezone", "webhook", "enabled")

    def spec(self) -> dict:
        return {k: getattr(self, k) for k in self.SPEC}

    @property
    def statistic(self):
        """What the rule reads: the total, or the breakdown by `by`."""
        return parse_statistic(self.metric, self.by, [f"{k}={','.join(v)}" for k, v in self.where.items()])

    @property
    def label(self) -> str:
        return statistic_name(self.metric, self.where, self.by)

    def element_label(self, key: str) -> str:
        """The statistic of one element: "NFS operations per second of type read for client 10.0.0.7"."""
        return statistic_name(self.metric, {**self.where, self.by: [key if key != "" else "(none)"]})

    def satisfied(self, value: float) -> bool:
        return value > self.threshold if self.condition == "above" else value < self.threshold

    def in_window(self, ts: int) -> bool:
        """Whether second `ts` falls in the rule's days and time of day (in its time zone)."""
        tz = ZoneInfo(self.timezone) if self.timezone else None
        local = datetime.fromtimestamp(ts, tz) if tz else datetime.fromtimestamp(ts).astimezone()
        day = local.weekday()
        if self.from_time is None or self.to_time is None:
            return DAYS[day] in self.days
        minute = local.hour * 60 + local.minute
        lo, hi = (int(t[:2]) * 60 + int(t[3:]) for t in (self.from_time, self.to_time))
        if lo <= hi:
            return DAYS[day] in self.days and lo <= minute < hi
        # a window across midnight (22:00-06:00) belongs to the day it starts on
        if minute >= lo:
            return DAYS[day] in self.days
        return minute < hi and DAYS[(day - 1) % 7] in self.days


@dataclass
class RuleState:
    checked_upto: int  # seconds before this are evaluated
    active: bool = False
    run_start: int | None = None  # first second of the current run where the condition holds
    clear_start: int | None = None  # while active: first second of the current run where it does not
    fired_event: int | None = None
    last_post: float | None = None  # when the alert was last posted (fired or reposted)
    since: float | None = None  # when it fired
    value: float | None = None  # the newest second's value
    withheld: bool = False  # per element: it held long enough to fire, but the rule had MAX_OPEN open

    def dump(self) -> str:
        return json.dumps(self.__dict__)

    @classmethod
    def load(cls, text: str) -> RuleState:
        return cls(**json.loads(text))


@dataclass
class ElementsState:
    """A per-element rule's state: each followed element's own RuleState, and what was cut."""

    checked_upto: int
    elements: dict[str, RuleState] = field(default_factory=dict)
    seen: int | None = None  # elements of the breakdown in the newest evaluated seconds
    value: float | None = None  # the newest second: the busiest (above) or quietest (below) element checked
    value_element: str | None = None
    withheld_total: int = 0  # elements withheld (MAX_OPEN open), each counted once per run

    def open(self) -> dict[str, RuleState]:
        return {k: e for k, e in self.elements.items() if e.active}

    def dump(self) -> str:
        return json.dumps({**self.__dict__, "elements": {k: e.__dict__ for k, e in self.elements.items()}})

    @classmethod
    def load(cls, text: str) -> ElementsState:
        d = json.loads(text)
        return cls(**{**d, "elements": {k: RuleState(**e) for k, e in d["elements"].items()}})


def load_state(text: str) -> RuleState | ElementsState:
    return ElementsState.load(text) if '"elements"' in text else RuleState.load(text)


@dataclass
class Transition:
    kind: str  # fired | reposted | cleared | withheld (would fire, but may not)
    at: int  # the end of the second that decided it
    value: float


def step(rule: Rule, st: RuleState, ts: int, value: float, may_fire: bool = True) -> Transition | None:
    """Advance a rule's state by one second's value; what it changed, if anything.

    Fires once the condition has held for hold_s seconds in a row (with that last second inside the
    rule's days and hours); clears once it has not held for clear_s seconds in a row; while active,
    reposts every repost_s seconds (0: never). Without `may_fire` a firing is withheld instead
    (said once per run): it fires on the first second it may, if the condition still holds."""
    st.checked_upto, st.value = ts + 1, value
    if rule.satisfied(value):
        st.run_start = ts if st.run_start is None else st.run_start
        st.clear_start = None
    else:
        st.run_start, st.withheld = None, False
        if st.active and st.clear_start is None:
            st.clear_start = ts
    end = ts + 1
    if not st.active:
        if st.run_start is not None and end - st.run_start >= rule.hold_s and rule.in_window(ts):
            if not may_fire:
                first, st.withheld = not st.withheld, True
                return Transition("withheld", end, value) if first else None
            st.active, st.since, st.last_post, st.clear_start, st.withheld = True, float(end), float(end), None, False
            return Transition("fired", end, value)
        return None
    if st.clear_start is not None and end - st.clear_start >= rule.clear_s:
        st.active, st.since, st.clear_start, st.last_post = False, None, None, None
        return Transition("cleared", end, value)
    if st.run_start is not None and rule.repost_s and end - (st.last_post or end) >= rule.repost_s:
        st.last_post = float(end)
        return Transition("reposted", end, value)
    return None


# ---------------------------------------------------------------------------- the book


class AlertBook:
    """Rules, rule state, the event log and webhook delivery attempts, in one SQLite file."""

    def __init__(self, path: Path) -> None:
        self._lock = threading.RLock()
        # webhook URLs often carry their receiver's token, and signing secrets are kept as given
        self.db = open_private(path, _SCHEMA, "synchronous=NORMAL")
        have = {r[1] for r in self.db.execute("PRAGMA table_info(events)")}
        for col in ("dim", "element", "stat"):  # a log from before per-element rules and links
            if col not in have:
                self.db.execute(f"ALTER TABLE events ADD COLUMN {col} TEXT")
        self.changed = threading.Condition()  # notified when a post is pending

    def close(self) -> None:
        with self._lock:
            self.db.close()

    def _q(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            return self.db.execute(sql, args).fetchall()

    # rules
    def rules(self) -> list[dict]:
        rows = self._q("SELECT id, spec, secret, created, created_by, updated, updated_by FROM rules ORDER BY created")
        return [dict(id=i, spec=json.loads(s), secret=sec, created=c, created_by=cb, updated=u, updated_by=ub)
                for i, s, sec, c, cb, u, ub in rows]

    def rule(self, rule_id: str) -> dict | None:
        return next((r for r in self.rules() if r["id"] == rule_id), None)

    def put_rule(self, rule: Rule, secret: str | None, by: str, at: float) -> None:
        with self._lock:
            self.db.execute(
                "INSERT INTO rules VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET spec = excluded.spec, "
                "secret = excluded.secret, updated = excluded.updated, updated_by = excluded.updated_by",
                (rule.id, json.dumps(rule.spec()), secret, at, by, at, by))

    def delete_rule(self, rule_id: str) -> bool:
        with self._lock:
            gone = self.db.execute("DELETE FROM rules WHERE id = ?", (rule_id,)).rowcount > 0
            self.db.execute("DELETE FROM state WHERE key = ?", (f"rule:{rule_id}",))
            return gone

    # state
    def state(self, key: str) -> str | None:
        rows = self._q("SELECT value FROM state WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def set_state(self, key: str, value: str | None) -> None:
        if value is None:
            self._q("DELETE FROM state WHERE key = ?", (key,))
        else:
            self._q("INSERT OR REPLACE INTO state VALUES (?, ?)", (key, value))

    # events
    def add_event(self, at: float, kind: str, subject: str, label: str, message: str, *, value: float | None = None,
                  threshold: float | None = None, opened_by: int | None = None, webhook: str | None = None,
                  dim: str | None = None, element: str | None = None, rule: Rule | None = None) -> int:
        """`rule`: the alert's rule as it is now; the event keeps what it watched (for links to it)."""
        stat = json.dumps({"metric": rule.metric, "where": rule.where, "by": rule.by, "hold_s": rule.hold_s}) \
            if rule else None
        with self._lock:
            cur = self.db.execute(
                "INSERT INTO events (at, kind, subject, label, message, value, threshold, opened_by, webhook, delivery,"
                " next_at, dim, element, stat) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (at, kind, subject, label, message, value, threshold, opened_by, webhook,
                 "pending" if webhook else "none", time.time() if webhook else None, dim, element, stat))
            eid = int(cur.lastrowid)
        if webhook:
            with self.changed:
                self.changed.notify_all()
        return eid

    def events(self, start: float | None = None, end: float | None = None, kinds: list[str] | None = None,
               subject: str | None = None, limit: int = 500) -> list[dict]:
        sql = f"SELECT {', '.join(EVENT_COLS)} FROM events WHERE at >= ? AND at < ?"
        args: list = [start if start is not None else 0.0, end if end is not None else float("inf")]
        if kinds:
            sql += f" AND kind IN ({', '.join('?' * len(kinds))})"
            args += kinds
        if subject:
            sql += " AND subject = ?"
            args.append(subject)
        rows = self._q(sql + " ORDER BY at DESC, id DESC LIMIT ?", (*args, limit))
        return [dict(zip(EVENT_COLS, r)) for r in rows]

    def open_before(self, start: float, kinds: list[str] | None, subject: str | None) -> list[dict]:
        """Alerts fired before `start` and not cleared by then: their spans reach into a range after it."""
        if kinds and "alert.fired" not in kinds:
            return []
        sql = (f"SELECT {', '.join('e.' + c for c in EVENT_COLS)} FROM events e WHERE e.kind = 'alert.fired' "
               "AND e.at < ? AND NOT EXISTS (SELECT 1 FROM events c WHERE c.opened_by = e.id "
               "AND c.kind = 'alert.cleared' AND c.at < ?)")
        args: list = [start, start]
        if subject:
            sql += " AND e.subject = ?"
            args.append(subject)
        return [dict(zip(EVENT_COLS, r)) for r in self._q(sql + " ORDER BY e.at DESC", tuple(args))]

    def cleared_for(self, fired: list[int]) -> list[dict]:
        """The clears of these fired events."""
        if not fired:
            return []
        rows = self._q(f"SELECT {', '.join(EVENT_COLS)} FROM events WHERE kind = 'alert.cleared' AND opened_by IN "
                       f"({', '.join('?' * len(fired))})", tuple(fired))
        return [dict(zip(EVENT_COLS, r)) for r in rows]

    def event(self, event_id: int) -> dict | None:
        rows = self._q(f"SELECT {', '.join(EVENT_COLS)} FROM events WHERE id = ?", (event_id,))
        return dict(zip(EVENT_COLS, rows[0])) if rows else None

    def due(self, now: float) -> list[dict]:
        rows = self._q(f"SELECT {', '.join(EVENT_COLS)} FROM events WHERE delivery = 'pending' AND next_at <= ? "
                       "ORDER BY id", (now,))
        return [dict(zip(EVENT_COLS, r)) for r in rows]

    def next_due(self) -> float | None:
        rows = self._q("SELECT min(next_at) FROM events WHERE delivery = 'pending'")
        return rows[0][0]

    def record_attempt(self, event_id: int, attempt: int, at: float, url: str, ok: bool, status: int | None,
                       error: str | None, ms: float, *, delivery: str, next_at: float | None) -> None:
        with self._lock:
            self.db.execute("INSERT OR REPLACE INTO deliveries VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            (event_id, attempt, at, url, int(ok), status, error, ms))
            self.db.execute("UPDATE events SET attempts = ?, delivery = ?, next_at = ? WHERE id = ?",
                            (attempt, delivery, next_at, event_id))

    def deliveries(self, event_id: int) -> list[dict]:
        rows = self._q("SELECT event_id, attempt, at, url, ok, status, error, ms FROM deliveries WHERE event_id = ? "
                       "ORDER BY attempt", (event_id,))
        keys = ("event_id", "attempt", "at", "url", "ok", "status", "error", "ms")
        return [dict(zip(keys, r), ok=bool(r[4])) for r in rows]


# ---------------------------------------------------------------------------- evaluation


class AlertEngine:
    """Evaluates every enabled rule over the newly settled seconds, and notes agents coming and going."""

    def __init__(self, store: Store, book: AlertBook, *, top_elements: int = TOP_ELEMENTS,
                 max_open: int = MAX_OPEN) -> None:
        self.store, self.book = store, book
        self.top_elements, self.max_open = top_elements, max_open  # per-element rules' bounds
        # elements followed between seconds: the top's runs under way must fit, however large the top
        self.max_followed = max(MAX_FOLLOWED, 5 * top_elements // 2)
        self._lock = threading.RLock()  # one evaluation at a time (the thread, and rule edits)

    def editing(self) -> threading.RLock:
        """Held across a rule's change (close its alerts, then save the new rule), so the evaluation
        thread never evaluates the old rule afresh in between and fires it again."""
        return self._lock

    def rule_state(self, rule_id: str) -> RuleState | ElementsState | None:
        text = self.book.state(f"rule:{rule_id}")
        return load_state(text) if text else None

    def open_alerts(self, rule_id: str) -> dict[str | None, RuleState]:
        """A rule's open alerts: {None: state} for a total, {element: state} per element."""
        st = self.rule_state(rule_id)
        if isinstance(st, ElementsState):
            return st.open()
        return {None: st} if st is not None and st.active else {}

    def tick(self, now: float) -> list[int]:
        """Evaluate up to now - SETTLE; the ids of the events this recorded."""
        with self._lock:
            out = []
            for r in self.book.rules():
                rule = Rule(id=r["id"], **r["spec"])
                if rule.enabled:
                    out += self._evaluate(rule, int(now) - SETTLE)
            out += self._agent_events(now)
            return out

    def _evaluate(self, rule: Rule, upto: int) -> list[int]:
        st = self.rule_state(rule.id)
        if st is not None and (rule.by is not None) != isinstance(st, ElementsState):
            st = None  # a state of the other kind (a rule saved without closing): start afresh
        if st is None or st.checked_upto < upto - CATCH_UP:
            # a new rule (or one long unchecked) looks back over its hold window: one that is
            # already breached when created fires at once rather than hold_s later
            st = self._fresh(rule, st, max(0, upto - rule.hold_s))
        if st.checked_upto >= upto:
            return []
        # never read seconds retention has removed: they would count as zeros
        start = max(st.checked_upto, upto - self.store.retain["second"] + 60)
        try:
            out = self._elements(rule, st, start, upto) if isinstance(st, ElementsState) else \
                self._total(rule, st, start, upto)
        except Exception as e:  # a rule whose statistic no longer reads (catalog change) is logged, not fatal
            log.warning("alert %r cannot be evaluated: %s", rule.name, e)
            return []
        self.book.set_state(f"rule:{rule.id}", st.dump())
        return out

    @staticmethod
    def _fresh(rule: Rule, prior: RuleState | ElementsState | None, checked_upto: int) -> RuleState | ElementsState:
        """A state that starts at checked_upto, carrying the prior state's open alerts: they clear on
        the new seconds."""
        if rule.by is None:
            st = RuleState(checked_upto=checked_upto)
            if isinstance(prior, RuleState) and prior.active:
                st.active, st.since, st.fired_event, st.last_post = True, prior.since, prior.fired_event, prior.last_post
            return st
        st = ElementsState(checked_upto=checked_upto, withheld_total=prior.withheld_total if prior else 0)
        for k, e in (prior.open() if isinstance(prior, ElementsState) else {}).items():
            st.elements[k] = RuleState(checked_upto=checked_upto, active=True, since=e.since,
                                       fired_event=e.fired_event, last_post=e.last_post, value=e.value)
        return st

    def _total(self, rule: Rule, st: RuleState, start: int, upto: int) -> list[int]:
        values = self.store.aggregate(rule.statistic, Window(start, upto, 1, "second"), 1).total
        out = []
        for i, v in enumerate(values):
            tr = step(rule, st, start + i, v)
            if tr is not None:
                out.append(self._record(rule, st, tr))
        return out

    def _elements(self, rule: Rule, st: ElementsState, start: int, upto: int) -> list[int]:
        """Per element: each second, the TOP_ELEMENTS busiest of the breakdown (ranked over RANK_STEP
        seconds at most) and every element followed already; one absent from the data counts as 0."""
        out = []
        above = rule.condition == "above"
        stat = rule.statistic
        for a in range(start, upto, RANK_STEP):
            w = Window(a, min(upto, a + RANK_STEP), 1, "second")
            agg = self.store.aggregate(stat, w, self.top_elements)
            series = {k: v for k, v in zip(agg.keys, agg.values) if k != FILE_OTHER}  # folded files: not an element
            top = set(series)
            rest = [k for k in st.elements if k not in series]
            if rest:  # followed elements outside the top: read them by name (absent ones stay 0)
                only = replace(stat, where=stat.where + ((rule.by, tuple(rest)),))
                extra = self.store.aggregate(only, w, len(rest))
                series.update((k, v) for k, v in zip(extra.keys, extra.values) if k in rest)
            zeros = [0.0] * w.points
            checked = top | set(st.elements)
            for i in range(w.points):
                def val(k: str) -> float:
                    return series.get(k, zeros)[i]  # noqa: B023 (used within this second only)
                # open alerts first (a clear frees a place), then the busiest (or, below, the quietest)
                order = sorted(checked, key=lambda k: (not (k in st.elements and st.elements[k].active),
                                                       -val(k) if above else val(k), k))
                ts, n_open = w.start + i, len(st.open())
                for k in order:
                    es = st.elements.get(k)
                    if es is None:
                        es = st.elements[k] = RuleState(checked_upto=ts)
                    tr = step(rule, es, ts, val(k), may_fire=n_open < self.max_open)
                    if tr is None:
                        continue
                    if tr.kind == "withheld":
                        st.withheld_total += 1
                        log.warning("alert %r: %s held, but %d alerts of the rule are open already; withheld",
                                    rule.name, element_phrase(rule.by, k), self.max_open)
                        continue
                    n_open += {"fired": 1, "cleared": -1}.get(tr.kind, 0)
                    out.append(self._record(rule, es, tr, k))
            # what the rule shows as its value: the newest second's busiest (below: quietest) element
            last = {k: series.get(k, zeros)[-1] for k in checked}
            st.value_element = (max if above else min)(sorted(last), key=last.get) if last else None
            st.value = last[st.value_element] if last else None
            st.checked_upto, st.seen = w.end, agg.elements
            st.elements = self._followed(rule, st, top)
        return out

    def _followed(self, rule: Rule, st: ElementsState, top: set[str]) -> dict[str, RuleState]:
        """The elements worth following to the next second: open alerts, runs under way and (for a
        "below" rule, whose elements fall out of the top by falling) the top ones; at most
        max_followed, open alerts first, then the top, then the longest runs."""
        def keep(k: str, e: RuleState) -> bool:
            return e.active or e.run_start is not None or (rule.condition == "below" and k in top)
        ranked = sorted(((k, e) for k, e in st.elements.items() if keep(k, e)),
                        key=lambda ke: (not ke[1].active, ke[0] not in top, ke[1].run_start or 0, ke[0]))
        return {k: e for i, (k, e) in enumerate(ranked) if e.active or i < self.max_followed}

    def _record(self, rule: Rule, st: RuleState, tr: Transition, element: str | None = None) -> int:
        unit = metric(rule.metric).unit
        where = "above" if rule.condition == "above" else "below"
        what = rule.label if element is None else rule.element_label(element)
        if tr.kind == "fired":
            msg = (f"{rule.name}: {what} {where} {fmt_value(rule.threshold)} {unit} for "
                   f"{fmt_span(rule.hold_s)} (now {fmt_value(tr.value)})")
        elif tr.kind == "reposted":
            msg = (f"{rule.name}: {'' if element is None else what + ' '}still {where} {fmt_value(rule.threshold)} "
                   f"{unit} since {_utc(st.since)} (now {fmt_value(tr.value)})")
        else:
            msg = (f"{rule.name}: {'' if element is None else what + ': '}cleared: not {where} "
                   f"{fmt_value(rule.threshold)} {unit} for {fmt_span(rule.clear_s)} (now {fmt_value(tr.value)})")
        eid = self.book.add_event(tr.at, f"alert.{tr.kind}", rule.id, rule.name, msg, value=tr.value,
                                  threshold=rule.threshold, opened_by=None if tr.kind == "fired" else st.fired_event,
                                  webhook=rule.webhook, dim=None if element is None else rule.by, element=element,
                                  rule=rule)
        if tr.kind == "fired":
            st.fired_event = eid
        elif tr.kind == "cleared":
            st.fired_event = None
        log.info("%s", msg)
        return eid

    def replace_rule(self, old: Rule, new: Rule, secret: str | None, by: str, at: float) -> list[int]:
        """Save `new` in place of `old` (the same id): old's open alerts are cleared first, both under
        the evaluation's lock; the ids of the clears."""
        with self.editing():
            out = self.close_rule(old, "the rule was changed", at)
            self.book.put_rule(new, secret, by, at)
            return out

    def delete_rule(self, old: Rule, at: float) -> list[int]:
        """Delete a rule, its open alerts cleared first (the log keeps its events); the ids of the clears."""
        with self.editing():
            out = self.close_rule(old, "the rule was deleted", at)
            self.book.delete_rule(old.id)
            return out

    def close_rule(self, rule: Rule, reason: str, at: float) -> list[int]:
        """A rule changed, was disabled or deleted while alerts of it were open: clear each (and post
        that), so a receiver never keeps an alert nobody will clear. Evaluation then starts afresh."""
        with self._lock:
            opened = self.open_alerts(rule.id)
            self.book.set_state(f"rule:{rule.id}", None)
            out = []
            for k, st in sorted(opened.items(), key=lambda kv: kv[1].since or 0):
                what = "" if k is None else f"{rule.element_label(k)}: "
                out.append(self.book.add_event(
                    at, "alert.cleared", rule.id, rule.name, f"{rule.name}: {what}cleared: {reason}", value=st.value,
                    threshold=rule.threshold, opened_by=st.fired_event, webhook=rule.webhook,
                    dim=None if k is None else rule.by, element=k, rule=rule))
            return out

    def _agent_events(self, now: float) -> list[int]:
        """An agent is up while one of its sources reported within AGENT_STALE. The store keeps when
        each was last seen, so an agent that never came back after a restart is noted too."""
        seen: dict[str, tuple[float, str | None]] = {}
        for s in self.store.sources():
            if s["last_seen"] is not None and s["last_seen"] > seen.get(s["agent"], (0.0, None))[0]:
                seen[s["agent"]] = (s["last_seen"], s["host"])
        out = []
        for agent, (last, host) in sorted(seen.items()):
            key = f"agent:{agent}"
            known = self.book.state(key)
            up = now - last <= AGENT_STALE
            if known is None and not up:  # gone before alerts were kept: nothing to say
                self.book.set_state(key, "down")
                continue
            if up == (known == "up"):
                continue
            label = f"{agent} ({host})" if host and host != agent else agent
            if up:
                out.append(self.book.add_event(last, "agent.connected", agent, label, f"agent {label} connected"))
            else:
                out.append(self.book.add_event(last + AGENT_STALE, "agent.disconnected", agent, label,
                                               f"agent {label} disconnected: nothing received since {_utc(last)}"))
            self.book.set_state(key, "up" if up else "down")
        return out


def _utc(ts: float | None) -> str:
    return datetime.fromtimestamp(ts or 0, timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


# ---------------------------------------------------------------------------- delivery


def worksheet_of(ev: dict, book: AlertBook) -> str | None:
    """A worksheet's query string for an alert event: its statistic (a per-element event's element
    as a filter) from the start of the alert's run (its hold time before it fired) to the event,
    with a margin either side, so the rise and the event's mark are seen; paused, so the link shows
    that time whenever it is opened (a fresh event's margin after it fills in as time passes).
    None for an event with no statistic (an agent's)."""
    if not ev.get("stat"):
        return None
    st = json.loads(ev["stat"])
    where = dict(st["where"])
    if ev["element"] is not None:
        where[ev["dim"]] = [ev["element"]]
    fired = book.event(ev["opened_by"]) if ev["opened_by"] is not None else None
    if ev["kind"] == "alert.test":
        start = ev["at"] - 600
    else:
        start = (fired["at"] if fired else ev["at"]) - st["hold_s"]
    pad = max(60, (ev["at"] - start) // 4)
    return worksheet_query([encode_statistic(st["metric"], where)], start - pad, ev["at"] + pad)


def payload(ev: dict, rule: dict | None, *, public_url: str | None = None, worksheet: str | None = None,
            name: str | None = None) -> dict:
    """The JSON a webhook receives for an event; with the address users reach Loupe at, links to
    the event on the Alerts page and to its worksheet; `name`: its element's name (a client's)."""
    spec = rule["spec"] if rule else {}
    links = {}
    if public_url:
        links["url"] = f"{public_url}/alerts?event={ev['id']}"
        if worksheet:
            links["worksheet_url"] = f"{public_url}/{worksheet}"
    return {
        "event_id": ev["id"], "kind": ev["kind"], "at": _utc(ev["at"]).replace(" ", "T"), "at_unix": ev["at"],
        "alert": {"id": ev["subject"], "name": ev["label"], "metric": spec.get("metric"), "where": spec.get("where"),
                  "by": spec.get("by"), "condition": spec.get("condition"), "threshold": ev["threshold"],
                  "hold_s": spec.get("hold_s"), "clear_s": spec.get("clear_s")},
        # a per-element rule's event: which element of its breakdown (absent for a total)
        **({"element": {"dimension": ev["dim"], "key": ev["element"], **({"name": name} if name else {})}}
           if ev["element"] is not None else {}),
        "value": ev["value"], "opened_by": ev["opened_by"], "message": ev["message"], "source": "loupe", **links,
    }


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class Deliverer:
    """Posts pending events to their webhooks: each attempt is logged; a failed one is retried after
    BACKOFF[i] seconds, up to `attempts` in all, then the event is marked failed."""

    def __init__(self, book: AlertBook, *, attempts: int = 5, timeout: float = 5.0,
                 public_url: str | None = None, policy: ReceiverPolicy = ReceiverPolicy(),
                 namer: Callable[[str], str | None] | None = None) -> None:
        self.book, self.attempts, self.timeout, self.public_url = book, attempts, timeout, public_url
        self.policy = policy
        self.namer = namer  # a client address -> its name, when one is known (never waits for DNS)

    def attempt(self, ev: dict, url: str, n: int) -> dict:
        rule = self.book.rule(ev["subject"]) if ev["kind"].startswith("alert.") else None
        named = ev["dim"] == "client" and ev["element"] is not None and self.namer is not None
        doc = payload(ev, rule, public_url=self.public_url,
                      worksheet=worksheet_of(ev, self.book) if self.public_url else None,
                      name=self.namer(ev["element"]) if named else None)
        body = json.dumps(doc, separators=(",", ":")).encode()
        headers = {"Content-Type": "application/json", "User-Agent": f"Loupe/{__version__}",
                   "X-Loupe-Event": str(ev["id"]), "X-Loupe-Attempt": str(n),
                   "X-Loupe-Delivery": secrets.token_hex(8)}
        if rule and rule["secret"]:
            headers["X-Loupe-Signature"] = sign(rule["secret"], body)
        t0 = time.monotonic()
        ok, status, error = post(url, body, headers, self.timeout, self.policy)
        return dict(ok=ok, status=status, error=error, ms=(time.monotonic() - t0) * 1000)

    def run_due(self, now: float) -> int:
        """Attempt every post that is due; how many were attempted."""
        due = self.book.due(now)
        for ev in due:
            n = ev["attempts"] + 1
            res = self.attempt(ev, ev["webhook"], n)
            at = time.time()
            if res["ok"]:
                delivery, next_at = "delivered", None
            elif n >= self.attempts:
                delivery, next_at = "failed", None
                log.warning("webhook post of event %d to %s failed %d times; giving up: %s", ev["id"], ev["webhook"],
                            n, res["error"])
            else:
                delivery, next_at = "pending", at + BACKOFF[min(n - 1, len(BACKOFF) - 1)]
            self.book.record_attempt(ev["id"], n, at, ev["webhook"], res["ok"], res["status"], res["error"],
                                     res["ms"], delivery=delivery, next_at=next_at)
        return len(due)

    def serve(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self.run_due(time.time())
            except Exception:
                log.exception("webhook delivery failed; retried in a second")
            nxt = self.book.next_due()
            wait = 1.0 if nxt is None else min(1.0, max(0.05, nxt - time.time()))
            with self.book.changed:
                self.book.changed.wait(wait)
