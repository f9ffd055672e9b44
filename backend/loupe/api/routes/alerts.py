"""Threshold alert rules. Reading is for viewers; creating, changing and deleting, for admins."""

import secrets
import time
from urllib.parse import urlsplit

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.exceptions import RequestValidationError

from ...alerts import ElementsState, Rule
from ...auth import Principal
from ...catalog import HISTOGRAMS, metric
from ...models import (
    AlertElementPublic, AlertRuleBody, AlertRuleList, AlertRulePublic, AlertStatePublic, DeliveryPublic,
)
from ...query import QueryError, parse_statistic
from ...service import Loupe
from ...webhooks import ReceiverRefused
from ..deps import AdminDep, LoupeDep, ViewerDep, audit

router = APIRouter(tags=["alerts"])
NOT_FOUND = {404: {"description": "No such alert rule"}}


def shown_url(url: str | None, p: Principal) -> str | None:
    """A webhook URL often carries its receiver's secret (a chat hook's token): only admins see it whole."""
    if url is None or p.allows("admin"):
        return url
    u = urlsplit(url)
    return f"{u.scheme}://{u.hostname}{f':{u.port}' if u.port else ''}/…"


def _state(loupe: Loupe, rule: Rule) -> AlertStatePublic:
    st = loupe.alert_engine.rule_state(rule.id)
    if not isinstance(st, ElementsState):
        return AlertStatePublic(active=bool(st and st.active), since=st and st.since, value=st and st.value,
                                checked_upto=st and st.checked_upto, open_count=int(bool(st and st.active)), open=[],
                                value_element=None, elements_seen=None, withheld=0, withheld_total=0)
    opened = sorted(st.open().items(), key=lambda kv: (kv[1].since or 0, kv[0]))
    return AlertStatePublic(
        active=bool(opened), since=opened[0][1].since if opened else None, value=st.value,
        checked_upto=st.checked_upto, open_count=len(opened),
        open=[AlertElementPublic(element=k, since=e.since or 0, value=e.value) for k, e in opened],
        value_element=st.value_element, elements_seen=st.seen,
        withheld=sum(1 for e in st.elements.values() if e.withheld), withheld_total=st.withheld_total)


def _public(loupe: Loupe, rec: dict, p: Principal) -> AlertRulePublic:
    rule = Rule(id=rec["id"], **rec["spec"])
    state = _state(loupe, rule)
    return AlertRulePublic(**{**rule.spec(), "webhook": shown_url(rule.webhook, p)}, id=rule.id,
                           has_secret=bool(rec["secret"]), statistic=rule.label, unit=metric(rule.metric).unit,
                           created=rec["created"], created_by=rec["created_by"], updated=rec["updated"],
                           updated_by=rec["updated_by"], state=state)


def _rule(loupe: Loupe, rule_id: str) -> dict:
    rec = loupe.alerts.rule(rule_id)
    if rec is None:
        raise HTTPException(404, f"no alert rule {rule_id!r}")
    return rec


def _checked(body: AlertRuleBody, rule_id: str, loupe: Loupe) -> Rule:
    if body.webhook:
        try:
            loupe.deliverer.policy.check_url(body.webhook)
        except ReceiverRefused as e:  # a 422 like any invalid field's
            raise RequestValidationError([{"loc": ("body", "webhook"), "msg": str(e), "type": "value_error"}]) from None
    filters = [f"{k}={','.join(v)}" for k, v in body.where.items()]
    parse_statistic(body.metric, None, filters)  # 400 naming the fault
    if body.by is not None:
        try:
            parse_statistic(body.metric, body.by, filters)
        except QueryError as e:
            raise QueryError(f"by: {e}") from None
        if body.by in HISTOGRAMS:
            raise QueryError(f"by: {body.by!r} is a histogram; an alert per element needs a dimension such as "
                             f"{', '.join(d for d in metric(body.metric).dims if d != 'host')} or host")
    return Rule(id=rule_id, **body.model_dump(exclude={"secret"}))


def client_keys(rules: list[AlertRulePublic]) -> list[str]:
    """The client addresses the rules show: client filters, and the elements of per-client rules."""
    out = []
    for r in rules:
        out += r.where.get("client", [])
        if r.by == "client":
            out += [o.element for o in r.state.open] + ([r.state.value_element] if r.state.value_element else [])
    return out


@router.get("/alerts", response_model=AlertRuleList, summary="Alert rules, each with its state")
def list_rules(p: ViewerDep, loupe: LoupeDep) -> AlertRuleList:
    rules = [_public(loupe, r, p) for r in loupe.alerts.rules()]
    engine = loupe.alert_engine
    return AlertRuleList(rules=rules, top_elements=engine.top_elements, max_open=engine.max_open,
                         names=loupe.names.names(client_keys(rules)))


@router.get("/alerts/{rule_id}", response_model=AlertRulePublic, responses=NOT_FOUND, summary="One alert rule and its state")
def get_rule(rule_id: str, p: ViewerDep, loupe: LoupeDep) -> AlertRulePublic:
    return _public(loupe, _rule(loupe, rule_id), p)


@router.post("/alerts", response_model=AlertRulePublic, status_code=201, summary="Create an alert rule (admin)")
def create_rule(body: AlertRuleBody, p: AdminDep, loupe: LoupeDep, request: Request) -> AlertRulePublic:
    rule = _checked(body, secrets.token_hex(6), loupe)
    loupe.alerts.put_rule(rule, body.secret or None, p.name, time.time())
    audit(request, "alert.create", rule.name, f"{rule.label} {rule.condition} {rule.threshold:g}")
    return _public(loupe, _rule(loupe, rule.id), p)


@router.put("/alerts/{rule_id}", response_model=AlertRulePublic, responses=NOT_FOUND,
            summary="Replace an alert rule (admin); its open alerts are cleared and evaluation starts afresh")
def update_rule(rule_id: str, body: AlertRuleBody, p: AdminDep, loupe: LoupeDep, request: Request) -> AlertRulePublic:
    old = _rule(loupe, rule_id)
    rule = _checked(body, rule_id, loupe)
    secret = old["secret"] if body.secret is None else (body.secret or None)
    loupe.alert_engine.replace_rule(Rule(id=rule_id, **old["spec"]), rule, secret, p.name, time.time())
    audit(request, "alert.update", rule.name, f"{rule.label} {rule.condition} {rule.threshold:g}")
    return _public(loupe, _rule(loupe, rule_id), p)


@router.delete("/alerts/{rule_id}", status_code=204, responses=NOT_FOUND,
               summary="Delete an alert rule (admin); its open alerts are cleared, the log keeps its events")
def delete_rule(rule_id: str, _: AdminDep, loupe: LoupeDep, request: Request) -> Response:
    old = _rule(loupe, rule_id)
    loupe.alert_engine.delete_rule(Rule(id=rule_id, **old["spec"]), time.time())
    audit(request, "alert.delete", old["spec"]["name"])
    return Response(status_code=204)


@router.post("/alerts/{rule_id}/test", response_model=DeliveryPublic, responses=NOT_FOUND,
             summary="Post a test event to the rule's webhook now (admin); logged like any other")
def test_rule(rule_id: str, p: AdminDep, loupe: LoupeDep) -> DeliveryPublic:
    rec = _rule(loupe, rule_id)
    rule = Rule(id=rule_id, **rec["spec"])
    if not rule.webhook:
        raise HTTPException(400, f"alert rule {rule.name!r} has no webhook to test")
    eid = loupe.alerts.add_event(time.time(), "alert.test", rule.id, rule.name,
                                 f"{rule.name}: test post requested by {p.name}", threshold=rule.threshold, rule=rule)
    ev = loupe.alerts.event(eid)
    res = loupe.deliverer.attempt(ev, rule.webhook, 1)
    at = time.time()
    loupe.alerts.record_attempt(eid, 1, at, rule.webhook, res["ok"], res["status"], res["error"], res["ms"],
                                delivery="delivered" if res["ok"] else "failed", next_at=None)
    return DeliveryPublic(event_id=eid, attempt=1, at=at, url=rule.webhook, **res)
