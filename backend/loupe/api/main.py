"""The FastAPI application: one include_router line per resource."""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from prometheus_client import CollectorRegistry
from starlette.types import ASGIApp, Receive, Scope, Send

from .. import __version__
from ..catalog import CatalogError
from ..config import Settings
from ..models import ErrorBody, ValidationErrorBody
from ..query import QueryError
from ..service import Loupe
from ..store.base import StoreUnavailable
from .deps import ViewerAuth
from .routes import (
    alerts, audit, auth, client_names, clients, data, events, ingest, live, metrics, prom, query, runs, sources, status,
    tokens, users, worksheets,
)

log = logging.getLogger("loupe")

# Answers any route may give, documented once: every error body names the problem.
COMMON_ERRORS = {
    400: {"model": ErrorBody, "description": "A parameter is wrong (detail says which and why)"},
    401: {"model": ErrorBody, "description": "No valid session or token"},
    403: {"model": ErrorBody, "description": "The role or token scope does not reach this route, or no CSRF token"},
    413: {"model": ErrorBody, "description": "Request body over the size limit"},
    422: {"model": ValidationErrorBody, "description": "The request does not match the schema"},
    503: {"model": ErrorBody, "description": "The store cannot answer now (Retry-After)"},
}
api = APIRouter(prefix="/api/v1", responses=COMMON_ERRORS)
# Every route is signed-in-only (viewer and up) unless it says otherwise: auth (login is
# open), ingest (agent tokens), live (checks its own handshake); writes add operator or admin.
api.include_router(auth.router)
api.include_router(metrics.router, dependencies=[ViewerAuth])
api.include_router(query.router, dependencies=[ViewerAuth])
api.include_router(ingest.router)
api.include_router(sources.router, dependencies=[ViewerAuth])
api.include_router(status.router, dependencies=[ViewerAuth])
api.include_router(worksheets.router, dependencies=[ViewerAuth])
api.include_router(runs.router, dependencies=[ViewerAuth])
api.include_router(clients.router, dependencies=[ViewerAuth])
api.include_router(live.router)
api.include_router(users.router)
api.include_router(tokens.router)
api.include_router(audit.router)
api.include_router(data.router)
api.include_router(alerts.router)
api.include_router(events.router)
api.include_router(client_names.router)

# The built UI loads only its own files: no inline script, no other origin. Style attributes
# are allowed (style-src-attr), not <style> elements: ECharts' HTML tooltip is markup with
# inline styles, and the chart's hover values would be blocked without them.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; style-src-attr 'unsafe-inline'; img-src 'self' data:; "
       "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
       "frame-ancestors 'none'")


class SecurityHeaders:
    """Set the security headers on every HTTP response (HSTS only under TLS)."""

    def __init__(self, app: ASGIApp, tls: bool) -> None:
        self.app = app
        self.headers = [(b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
                        (b"x-frame-options", b"DENY"), (b"referrer-policy", b"no-referrer"),
                        (b"cross-origin-opener-policy", b"same-origin"),
                        (b"permissions-policy", b"camera=(), microphone=(), geolocation=()")]
        if tls:
            self.headers.append((b"strict-transport-security", b"max-age=31536000"))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def with_headers(msg: dict) -> None:
            if msg["type"] == "http.response.start":
                have = {k.lower() for k, _ in msg.get("headers", [])}
                msg["headers"] = list(msg.get("headers", [])) + [h for h in self.headers if h[0] not in have]
            await send(msg)

        await self.app(scope, receive, with_headers)


class BodyLimit:
    """Refuse request bodies over a size with 413 before reading them into memory."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            resp = JSONResponse({"detail": f"request body of {int(length)} bytes exceeds the limit of {self.limit}"},
                                status_code=413)
            return await resp(scope, receive, send)
        seen = 0

        async def limited() -> dict:
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge()
            return msg

        try:
            await self.app(scope, limited, send)
        except _TooLarge:
            resp = JSONResponse({"detail": f"request body exceeds the limit of {self.limit} bytes"}, status_code=413)
            await resp(scope, receive, send)


class _TooLarge(Exception):
    pass


class ArrivalTime:
    """Stamp when a request arrived (request.state.arrived), before its body is read and parsed:
    an agent's clock offset is measured against it, not against the end of a long parse."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope.setdefault("state", {})["arrived"] = time.time()
        await self.app(scope, receive, send)


def base_url(settings: Settings) -> str:
    shown = "127.0.0.1" if settings.host in ("0.0.0.0", "::") else settings.host
    return f"{'https' if settings.tls_cert else 'http'}://{shown}:{settings.port}"


def _announce(settings: Settings, loupe: Loupe) -> None:
    """Say once what a person needs to sign in: a generated admin password, the demo's link."""
    if loupe.generated_admin_password:
        print(f"\n  First start: created user 'admin' with password  {loupe.generated_admin_password}\n"
              "  It is shown only now and stored hashed. Change it under Admin once signed in, or set\n"
              "  LOUPE_ADMIN_PASSWORD before the first start to choose it.\n", flush=True)
    if loupe.demo_link:
        print(f"  Demo: sign in as admin with one click: {base_url(settings)}/?login={loupe.demo_link}\n", flush=True)


def _static_dir(settings: Settings) -> Path:
    return settings.static_dir or Path(__file__).resolve().parent.parent / "static"


def create_app(settings: Settings | None = None, *, start_agent: bool | None = None) -> FastAPI:
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        loupe = Loupe(settings)
        loupe.registry = CollectorRegistry()
        loupe.registry.register(loupe.telemetry)
        loupe.hub.attach(asyncio.get_running_loop())
        app.state.loupe = loupe
        _announce(settings, loupe)
        loupe.start_background()
        run_agent = settings.local_agent if start_agent is None else start_agent
        if run_agent:
            scheme = "https" if settings.tls_cert else "http"
            loupe.start_local_agent(f"{scheme}://127.0.0.1:{settings.port}", demo=settings.demo)
        try:
            yield
        finally:
            await asyncio.to_thread(loupe.close)

    app = FastAPI(
        title="Loupe", version=__version__, lifespan=lifespan,
        description="Real-time storage analytics for NAS servers. See docs/API.md.",
        openapi_url="/api/openapi.json", docs_url="/api/docs", redoc_url=None,
    )
    app.add_middleware(BodyLimit, limit=settings.max_frame_bytes)
    app.add_middleware(ArrivalTime)
    app.add_middleware(SecurityHeaders, tls=settings.tls_cert is not None)
    if settings.cors_origins:  # closed unless configured: the UI is served from the same origin
        app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins, allow_credentials=True,
                           allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
                           allow_headers=["Authorization", "Content-Type", "X-CSRF-Token"])

    @app.exception_handler(QueryError)
    @app.exception_handler(CatalogError)
    async def bad_query(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=400)

    @app.exception_handler(StoreUnavailable)
    async def unavailable(_: Request, exc: StoreUnavailable) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=503, headers={"Retry-After": "1"})

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        # Name the field and the problem in one readable line, and keep the structured list.
        parts = []
        for e in exc.errors()[:10]:
            loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body")
            parts.append(f"{loc}: {e.get('msg')}" if loc else str(e.get("msg")))
        return JSONResponse({"detail": "; ".join(parts), "errors": jsonable(exc.errors()[:50])}, status_code=422)

    app.include_router(api)
    app.include_router(prom.router, responses=COMMON_ERRORS)

    static = _static_dir(settings)
    index = static / "index.html"
    if (static / "assets").is_dir():
        app.mount("/assets", StaticFiles(directory=static / "assets"), name="assets")

    @app.get("/{path:path}", include_in_schema=False)
    async def spa(path: str):
        if path.startswith("api/"):
            return JSONResponse({"detail": f"no API route /{path}"}, status_code=404)
        f = (static / path).resolve()
        if path and f.is_file() and static.resolve() in f.parents:
            return FileResponse(f)
        if index.is_file():
            return FileResponse(index)
        return JSONResponse({"detail": "the UI is not built: run 'make ui'"}, status_code=404)

    return app


def jsonable(errors: list) -> list:
    # Without 'input': the request is not echoed back (it may be hostile, or not even
    # encodable: a body of `Infinity` is valid to Python's parser and not to JSON).
    out = []
    for e in errors:
        out.append({"type": str(e.get("type", "")), "msg": str(e.get("msg", "")),
                    "loc": [x if isinstance(x, (str, int)) else str(x) for x in e.get("loc", ())]})
    return out
