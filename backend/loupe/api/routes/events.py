"""The event log: alerts firing, reposting and clearing, and agents connecting and disconnecting.
Charts draw it as annotations; the alerts page lists it with each webhook post's attempts."""

import time
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query

from ...alerts import worksheet_of
from ...models import DeliveryList, DeliveryPublic, EventDetail, EventKind, EventList, EventPublic
from ...timerange import RangeError, parse_time
from ..deps import LoupeDep, RowId, ViewerDep
from .alerts import shown_url

router = APIRouter(tags=["events"])


NOT_FOUND = {404: {"description": "No such event"}}


def _public(r: dict, until: float | None) -> EventPublic:
    return EventPublic(**{k: r[k] for k in EventPublic.model_fields if k in r}, until=until,
                       next_attempt=r["next_at"] if r["delivery"] == "pending" else None)


def _clients(events: list[EventPublic]) -> list[str]:
    return [e.element for e in events if e.dim == "client" and e.element is not None]


@router.get("/events", response_model=EventList, summary="The event log over a range, newest first")
def list_events(
    _: ViewerDep, loupe: LoupeDep,
    start: Annotated[str, Query(description="'-1h', unix seconds or ISO 8601")] = "-24h",
    end: Annotated[str, Query(description="'now', relative, unix seconds or ISO 8601")] = "now",
    kind: Annotated[list[EventKind] | None, Query(description="Only these kinds")] = None,
    subject: Annotated[str | None, Query(description="Only this alert rule id or agent")] = None,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
    open_before: Annotated[bool, Query(description="Also alerts fired before start and still open at start "
                                       "(for drawing spans over the range)")] = False,
) -> EventList:
    now = int(time.time())
    try:
        a, b = parse_time(start, now), parse_time(end, now)
    except RangeError as e:
        raise HTTPException(400, str(e)) from None
    book = loupe.alerts
    kinds = list(kind) if kind else None
    rows = book.events(a, b + 1 if end == "now" else b, kinds, subject, limit)
    if open_before:
        rows += book.open_before(a, kinds, subject)
    # a fired alert's span ends at its clear, which may lie after the range
    fired = [r["id"] for r in rows if r["kind"] == "alert.fired"]
    until = {c["opened_by"]: c["at"] for c in book.cleared_for(fired)}
    events = [_public(r, until.get(r["id"])) for r in rows]
    active = sum(len(loupe.alert_engine.open_alerts(rec["id"])) for rec in book.rules())
    return EventList(events=events, active=active, names=loupe.names.names(_clients(events)))


@router.get("/events/{event_id}", response_model=EventDetail, responses=NOT_FOUND,
            summary="One event, with a worksheet of an alert's statistic over its time (webhook posts link here)")
def get_event(event_id: RowId, _: ViewerDep, loupe: LoupeDep) -> EventDetail:
    r = loupe.alerts.event(event_id)
    if r is None:
        raise HTTPException(404, f"no event {event_id}")
    until = next((c["at"] for c in loupe.alerts.cleared_for([r["id"]])), None) if r["kind"] == "alert.fired" else None
    ev = _public(r, until)
    return EventDetail(event=ev, worksheet=worksheet_of(r, loupe.alerts), names=loupe.names.names(_clients([ev])))


@router.get("/events/{event_id}/deliveries", response_model=DeliveryList, responses=NOT_FOUND,
            summary="Each attempt to post an event to its webhook")
def deliveries(event_id: RowId, p: ViewerDep, loupe: LoupeDep) -> DeliveryList:
    if loupe.alerts.event(event_id) is None:
        raise HTTPException(404, f"no event {event_id}")
    return DeliveryList(deliveries=[DeliveryPublic(**{**d, "url": shown_url(d["url"], p)})
                                    for d in loupe.alerts.deliveries(event_id)])
