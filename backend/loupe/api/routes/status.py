"""The Status page: Activity tiles (an admin chooses them), the store's usage and the hosts."""

import shutil
import time
from typing import Annotated

from fastapi import APIRouter, Query, Request

from ... import tiles as tiles_mod
from ...models import StatusResult, StatusTile, TileSpec, TilesConfig, TilesUpdate
from ...query import QueryError, window_for
from ...service import Loupe
from ...timerange import RangeError, Window, parse_time
from ...usage import project
from ..deps import AdminDep, LoupeDep, StoreDep, audit

router = APIRouter(tags=["status"])


def _cache(request: Request) -> tiles_mod.TTLCache:
    app = request.app.state
    if not hasattr(app, "status_cache"):
        app.status_cache = tiles_mod.TTLCache()
    return app.status_cache


def _tile(t: TileSpec, loupe: Loupe, host: str | None, spark: Window, recent: Window, now_s: int,
          cache: tiles_mod.TTLCache) -> StatusTile:
    store = loupe.store
    empty = dict(value=0.0, level=0.0, level_seconds=tiles_mod.LEVEL_SECONDS, timestamps=[], values=[],
                 span_start=spark.start, step=spark.step)
    try:
        stat = tiles_mod.statistic(t, host)
        norm = t.scale
        if t.divide_by_cpus:
            per_cpu = store.aggregate(tiles_mod.statistic(t, host, by="cpu"), recent, 1)
            norm /= max(1, per_cpu.elements)
        total = cache.get((stat, spark), lambda: store.aggregate(stat, spark, 1).total)
        now = store.aggregate(stat, recent, 1)
    except QueryError as e:
        return StatusTile(**t.model_dump(), **empty, error=str(e))
    last = now.total[now.last_index] * norm if now.last_index >= 0 else 0.0
    level = tiles_mod.level_of(now.total, recent.start, now_s) * norm
    where = dict(t.where, **({"host": [host]} if host else {}))
    return StatusTile(**(t.model_dump() | {"where": where}), value=last, level=level,
                      level_seconds=tiles_mod.LEVEL_SECONDS, values=[v * norm for v in total],
                      timestamps=list(range(spark.start, spark.end, spark.step)), span_start=spark.start,
                      step=spark.step)


@router.get("/status", response_model=StatusResult, summary="Activity tiles with 7-day sparklines, and usage")
def status(
    loupe: LoupeDep, store: StoreDep, request: Request,
    host: Annotated[str | None, Query(description="Only this host")] = None,
    start: Annotated[str, Query(description="How far back the sparklines reach, at most: they start at the "
                                            "oldest stored second when the store is younger")] = "-7d",
) -> StatusResult:
    now = int(time.time())
    try:
        span = now - parse_time(start, now)
    except RangeError as e:
        raise QueryError(f"start: {e}") from None
    if span <= 0:
        raise QueryError(f"start: {start!r} is not in the past")
    cache = _cache(request)
    oldest = cache.get("oldest", lambda: tiles_mod.oldest_second(store.extent()))
    spark = tiles_mod.spark_window(now, oldest, loupe.retain, span)
    # the current value (the newest second with data) and the weather's trailing mean
    recent = window_for("-15s", "now", retain=loupe.retain, step=1, now=now)
    tiles = [_tile(t, loupe, host, spark, recent, now, cache) for t in tiles_mod.load(store).tiles]
    demo_hosts = sorted({s["host"] for s in store.sources() if s["demo"] and s["host"]})
    t = loupe.telemetry
    free = shutil.disk_usage(loupe.settings.data_dir).free
    growth, days = project(list(loupe.size_history), free)
    return StatusResult(tiles=tiles, store_bytes=store.size_bytes(), hosts=store.hosts(), demo_hosts=demo_hosts,
                        disk_free_bytes=free, store_growth_bytes_per_day=growth, days_until_full=days,
                        ingest_error=t.ingest_error, ingest_error_since=t.ingest_error_since)


@router.get("/status/tiles", response_model=TilesConfig, summary="The Activity tiles the Status page shows")
def get_tiles(store: StoreDep) -> TilesConfig:
    return tiles_mod.load(store)


@router.put("/status/tiles", response_model=TilesConfig,
            summary="Set the Activity tiles (admin): 1 to 8 statistics of the catalog, with their weather thresholds")
def put_tiles(body: TilesUpdate, p: AdminDep, store: StoreDep, request: Request) -> TilesConfig:
    before = tiles_mod.load(store).tiles
    saved = tiles_mod.save(store, body.tiles, p.name, time.time())
    audit(request, "status.tiles.set", "status tiles", tiles_mod.describe_change(before, saved.tiles))
    return saved


@router.delete("/status/tiles", response_model=TilesConfig, summary="Put back the built-in Activity tiles (admin)")
def reset_tiles(p: AdminDep, store: StoreDep, request: Request) -> TilesConfig:
    saved = tiles_mod.save(store, None, p.name, time.time())
    audit(request, "status.tiles.reset", "status tiles", f"back to the {len(saved.tiles)} built-in tiles")
    return saved
