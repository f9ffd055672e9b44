"""Typed dependencies shared by the routes."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Header, HTTPException, Query, Request

from ..query import parse_statistic, window_for
from ..service import Loupe
from ..store.base import Statistic, Store
from ..timerange import Window


def get_loupe(request: Request) -> Loupe:
    return request.app.state.loupe


LoupeDep = Annotated[Loupe, Depends(get_loupe)]


def get_store(loupe: LoupeDep) -> Store:
    return loupe.store


StoreDep = Annotated[Store, Depends(get_store)]


def require_ingest_token(loupe: LoupeDep, authorization: Annotated[str | None, Header()] = None) -> None:
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise HTTPException(401, "missing bearer token: send 'Authorization: Bearer <ingest token>'",
                            headers={"WWW-Authenticate": "Bearer"})
    if not hmac.compare_digest(token.strip().encode(), loupe.token.encode()):
        raise HTTPException(401, "invalid ingest token", headers={"WWW-Authenticate": "Bearer"})


IngestAuth = Depends(require_ingest_token)


def get_statistic(
    metric: Annotated[str, Query(description="Metric name, e.g. nfs.ops")],
    by: Annotated[str | None, Query(description="Dimension to break down by")] = None,
    where: Annotated[list[str] | None, Query(description="Filter dim=value[,value]; latency=lo:hi for a band")] = None,
) -> Statistic:
    return parse_statistic(metric, by, where)


StatisticDep = Annotated[Statistic, Depends(get_statistic)]


@dataclass
class RangeParams:
    start: str
    end: str
    points: int
    step: int | None


def get_range(
    start: Annotated[str, Query(description="'-10m', '-1h', unix seconds or ISO 8601")] = "-10m",
    end: Annotated[str, Query(description="'now', relative, unix seconds or ISO 8601")] = "now",
    points: Annotated[int, Query(ge=1, le=5000, description="Wanted points; picks tier and step")] = 300,
    step: Annotated[int | None, Query(ge=1, description="Seconds per point; overrides points")] = None,
) -> RangeParams:
    return RangeParams(start, end, points, step)


RangeDep = Annotated[RangeParams, Depends(get_range)]


def get_window(loupe: LoupeDep, r: RangeDep) -> Window:
    return window_for(r.start, r.end, retain=loupe.retain, points=r.points, step=r.step)


WindowDep = Annotated[Window, Depends(get_window)]
TopDep = Annotated[int, Query(ge=1, le=1000, description="Elements returned; the rest sum into other")]
