"""WS /api/v1/live: per-statistic subscriptions pushed as each second lands (protocol in docs/API.md)."""

import asyncio
import logging

from urllib.parse import urlsplit

from fastapi import APIRouter, HTTPException, WebSocket, WebSocketDisconnect
from fastapi.concurrency import run_in_threadpool

from ...catalog import HISTOGRAMS
from ...live import Subscriber
from ...query import QueryError, parse_statistic
from ..deps import SESSION_COOKIE, authenticate

router = APIRouter(tags=["live"])
log = logging.getLogger("loupe.live")
MAX_SUBSCRIPTIONS = 64
MAX_KEYS = 100


def _subscription(msg: dict):
    where = msg.get("where") or {}
    if not isinstance(where, dict):
        raise QueryError("where must be an object of dim -> list of values")
    filters = []
    for k, v in where.items():
        vals = v if isinstance(v, list) else [v]
        filters.append(f"{k}={','.join(str(x) for x in vals)}")
    stat = parse_statistic(str(msg.get("metric", "")), msg.get("by") or None, filters)
    if stat.by in HISTOGRAMS:
        raise QueryError("live pushes break down by a string dimension; use /heatmap for histograms")
    keys = [str(k) for k in (msg.get("keys") or [])][:MAX_KEYS]
    return stat, keys


def _refusal(ws: WebSocket, loupe) -> str | None:
    """Why this handshake may not open (None: it may). Browsers send cookies on cross-site
    WebSocket handshakes regardless of CORS, so a browser's Origin must be this host."""
    origin = ws.headers.get("origin")
    if origin and urlsplit(origin).netloc != ws.headers.get("host", ""):
        return f"origin {origin} is not this server"
    scheme, _, token = ws.headers.get("authorization", "").partition(" ")
    try:
        p = authenticate(loupe.auth, token if scheme.lower() == "bearer" else None, ws.cookies.get(SESSION_COOKIE))
    except HTTPException as e:
        return str(e.detail)
    if p is None:
        return "sign in first"
    return None if p.allows("viewer") else f"this token is scoped to {p.scope} only"


@router.websocket("/live")
async def live(ws: WebSocket) -> None:
    loupe = ws.app.state.loupe
    why = _refusal(ws, loupe)
    if why:
        # Policy violation before accept: the handshake gets HTTP 403.
        log.info("live connection refused: %s", why)
        await ws.close(code=1008, reason=why)
        return
    await ws.accept()
    sub = Subscriber()
    subs: dict[str, tuple] = {}
    loupe.hub.add(sub)

    async def reader() -> None:
        while True:
            msg = await ws.receive_json()
            if not isinstance(msg, dict):
                await ws.send_json({"error": "messages are JSON objects"})
                continue
            sid = str(msg.get("id", ""))
            op = msg.get("op")
            if op == "unsubscribe":
                subs.pop(sid, None)
            elif op == "subscribe":
                if len(subs) >= MAX_SUBSCRIPTIONS and sid not in subs:
                    await ws.send_json({"id": sid, "error": f"at most {MAX_SUBSCRIPTIONS} subscriptions"})
                    continue
                try:
                    subs[sid] = _subscription(msg)
                    await ws.send_json({"id": sid, "subscribed": True})
                except QueryError as e:
                    await ws.send_json({"id": sid, "error": str(e)})
            else:
                await ws.send_json({"id": sid, "error": f"unknown op {op!r}; use subscribe or unsubscribe"})

    async def writer() -> None:
        while True:
            await sub.event.wait()
            pending = sub.take()
            for sid, (stat, keys) in list(subs.items()):
                for ts in pending.get(stat.metric.family, []):
                    total, values, other = await run_in_threadpool(loupe.store.second, stat, ts, keys)
                    await ws.send_json({"id": sid, "ts": ts, "total": total, "values": values,
                                        "other": other if stat.by else None})

    tasks = [asyncio.create_task(reader()), asyncio.create_task(writer())]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for t in done:
            exc = t.exception()
            if exc and not isinstance(exc, WebSocketDisconnect):
                log.warning("live connection ended: %s", exc)
    finally:
        for t in tasks:
            t.cancel()
        loupe.hub.remove(sub)
        loupe.telemetry.live_dropped += sub.dropped
