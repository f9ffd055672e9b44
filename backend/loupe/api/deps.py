"""Typed dependencies shared by the routes."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Path, Query, Request
from fastapi.security import APIKeyCookie, HTTPAuthorizationCredentials, HTTPBearer

from ..auth import Auth, AuthError, NotFound, Principal
from ..query import parse_statistic, window_for
from ..service import Loupe
from ..store.base import Statistic, Store
from ..timerange import Window


def get_loupe(request: Request) -> Loupe:
    return request.app.state.loupe


LoupeDep = Annotated[Loupe, Depends(get_loupe)]

# A stored row's id in a path: SQLite's integers are 64-bit, and one past them failed there (500)
RowId = Annotated[int, Path(ge=1, le=2**63 - 1, description="the id the list gives")]


def get_store(loupe: LoupeDep) -> Store:
    return loupe.store


StoreDep = Annotated[Store, Depends(get_store)]


SESSION_COOKIE = "loupe_session"
CSRF_HEADER = "X-CSRF-Token"
SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}

bearer_scheme = HTTPBearer(auto_error=False, description="A token: api (scripts), ingest (agents) or metrics")
session_scheme = APIKeyCookie(name=SESSION_COOKIE, auto_error=False, description="Session from POST /auth/login")
BearerDep = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)]
SessionCookieDep = Annotated[str | None, Depends(session_scheme)]


def client_address(request: Request) -> str:
    return request.client.host if request.client else "-"


def authenticate(auth: Auth, bearer: str | None, session: str | None) -> Principal | None:
    """A bearer token wins over a cookie: scripts may hold both."""
    if bearer:
        p = auth.principal_for_token(bearer)
        if p is None:
            raise HTTPException(401, "invalid or revoked token", headers={"WWW-Authenticate": "Bearer"})
        return p
    return auth.session(session) if session else None


def get_principal(request: Request, loupe: LoupeDep, bearer: BearerDep, session: SessionCookieDep) -> Principal | None:
    p = authenticate(loupe.auth, bearer.credentials if bearer else None, session)
    request.state.principal = p
    return p


OptionalPrincipalDep = Annotated[Principal | None, Depends(get_principal)]


def require(role: str):
    """A dependency that lets `role` and the roles above it through, and checks CSRF on sessions."""

    def dependency(request: Request, p: OptionalPrincipalDep) -> Principal:
        if p is None:
            raise HTTPException(401, "sign in first: POST /api/v1/auth/login, or send 'Authorization: Bearer "
                                     "<api token>'", headers={"WWW-Authenticate": "Bearer"})
        if p.role is None:
            raise HTTPException(403, f"this token is scoped to {p.scope} only")
        if not p.allows(role):
            raise HTTPException(403, f"needs the {role} role; {p.name} is {p.role}")
        if p.via == "session" and request.method not in SAFE_METHODS:
            sent = request.headers.get(CSRF_HEADER, "")
            if not (sent and p.csrf and hmac.compare_digest(sent.encode(), p.csrf.encode())):
                raise HTTPException(403, f"missing or wrong {CSRF_HEADER} header (GET /api/v1/auth/me returns it)")
        return p

    dependency.__name__ = f"require_{role}"
    return dependency


require_viewer, require_operator, require_admin = require("viewer"), require("operator"), require("admin")
ViewerDep = Annotated[Principal, Depends(require_viewer)]
OperatorDep = Annotated[Principal, Depends(require_operator)]
AdminDep = Annotated[Principal, Depends(require_admin)]
ViewerAuth, OperatorAuth, AdminAuth = Depends(require_viewer), Depends(require_operator), Depends(require_admin)


def require_scope(scope: str):
    """Bearer tokens of one scope (ingest: agents; metrics: scrapers). Metrics also admits signed-in users."""

    def dependency(request: Request, loupe: LoupeDep, bearer: BearerDep, session: SessionCookieDep) -> Principal:
        if bearer is None and not (scope == "metrics" and session):
            raise HTTPException(401, f"missing bearer token: send 'Authorization: Bearer <{scope} token>'",
                                headers={"WWW-Authenticate": "Bearer"})
        p = authenticate(loupe.auth, bearer.credentials if bearer else None, session)
        if p is None:
            raise HTTPException(401, "session expired: sign in again")
        if p.scope != scope and not (scope == "metrics" and p.role is not None):
            raise HTTPException(403, f"this token is scoped to {p.scope}; {request.url.path} needs a {scope} token")
        request.state.principal = p
        return p

    dependency.__name__ = f"require_{scope}_token"
    return dependency


IngestAuth = Depends(require_scope("ingest"))
MetricsAuth = Depends(require_scope("metrics"))


def get_statistic(
    metric: Annotated[str, Query(description="Metric name, e.g. nfs.ops")],
    by: Annotated[str | None, Query(description="Dimension to break down by")] = None,
    where: Annotated[list[str] | None, Query(description="Filter dim=value[,value]; latency=lo:hi for a band; "
                                                        "file^=/dir (or share^=) for a path and all below it")] = None,
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


def audit(request: Request, action: str, target: str = "", detail: str = "") -> None:
    """Record a state change by whoever this request authenticated as."""
    p = getattr(request.state, "principal", None)
    request.app.state.loupe.auth.audit(p.name if p else "-", action, target, detail, client_address(request))


def auth_call(fn, *args, **kw):
    """Run a user or token operation; its AuthError becomes a 404 (no such one) or 400 naming the problem."""
    try:
        return fn(*args, **kw)
    except NotFound as e:
        raise HTTPException(404, str(e)) from None
    except AuthError as e:
        raise HTTPException(400, str(e)) from None
