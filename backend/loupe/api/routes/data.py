"""Retention per tier and deleting stored statistics. Reading is for viewers; changing, for admins."""

import time
from datetime import datetime, timezone

from fastapi import APIRouter, Request

from ...models import (DataDelete, DataDeleted, RebuiltPeriod, RetentionPublic, RetentionSet, RetentionUpdate,
                       TierExtent)
from ...service import Loupe
from ..deps import AdminDep, LoupeDep, ViewerDep, audit

router = APIRouter(tags=["data"])


def _retention(loupe: Loupe) -> RetentionPublic:
    store = loupe.store
    origin = store.retention_origin()
    tiers = [TierExtent(tier=t, keep_s=store.retain[t], rows=n, oldest=lo, newest=hi)
             for t, (n, lo, hi) in store.extent().items()]
    return RetentionPublic(**{t: store.retain[t] for t in ("second", "minute", "hour")},
                           set_by=origin[0] if origin else None, set_at=origin[1] if origin else None,
                           tiers=tiers, store_bytes=store.size_bytes())


def _span(start: int | None, end: int | None) -> str:
    when = lambda ts: datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    if start is None and end is None:
        return "all time"
    return f"{'the beginning' if start is None else when(start)} to {'now' if end is None else when(end)}"


@router.get("/retention", response_model=RetentionPublic, summary="How long each tier is kept, and what it holds")
def get_retention(_: ViewerDep, loupe: LoupeDep) -> RetentionPublic:
    return _retention(loupe)


@router.put("/retention", response_model=RetentionSet,
            summary="Keep each tier this long from now on (admin); data beyond it is removed at once")
def set_retention(body: RetentionUpdate, p: AdminDep, loupe: LoupeDep, request: Request) -> RetentionSet:
    before = dict(loupe.store.retain)
    loupe.store.set_retention(body.model_dump(), p.name, time.time())
    rep = loupe.prune(time.time())
    change = ", ".join(f"{t} {before[t]} -> {loupe.store.retain[t]} s" for t in ("second", "minute", "hour"))
    audit(request, "retention.set", "statistics", f"{change}; pruned {sum(rep.rows.values())} rows")
    return RetentionSet(**_retention(loupe).model_dump(), pruned=rep.rows)


@router.post("/data/delete", response_model=DataDeleted,
             summary="Delete a host's or a time range's statistics (admin); dry_run counts them first")
def delete_data(body: DataDelete, p: AdminDep, loupe: LoupeDep, request: Request) -> DataDeleted:
    rep = loupe.store.delete_data(body.host, body.start, body.end, dry_run=body.dry_run, now=int(time.time()))
    total = sum(rep.rows.values())
    if not body.dry_run:
        audit(request, "data.delete", body.host or "all hosts",
              f"{_span(body.start, body.end)}: {total} rows")
    return DataDeleted(host=body.host, start=body.start, end=body.end, dry_run=body.dry_run, rows=rep.rows,
                       total_rows=total, rebuilt=[RebuiltPeriod(tier=t, start=s) for t, s in rep.recomputed],
                       bytes_before=rep.bytes_before, bytes_after=rep.bytes_after)
