import shutil
from typing import Annotated

from fastapi import APIRouter, Query

from ...models import StatusResult, StatusTile
from ...query import parse_statistic, window_for
from ...usage import project
from ..deps import LoupeDep, StoreDep

router = APIRouter(tags=["status"])

BUSY = "user,nice,system,irq,softirq,steal"
# id, title, unit, metric, where, by (the statistic the tile opens), scale to the tile's unit
TILES = (
    ("nfs_ops", "NFS operations", "ops/s", "nfs.ops", {}, "client", 1.0),
    ("net_in", "Network in", "MB/s", "net.bytes", {"direction": ["in"]}, "interface", 1e-6),
    ("net_out", "Network out", "MB/s", "net.bytes", {"direction": ["out"]}, "interface", 1e-6),
    ("disk_iops", "Disk IOPS", "ops/s", "disk.ops", {}, "disk", 1.0),
    ("cpu", "CPU busy", "%", "cpu.util", {"mode": BUSY.split(",")}, "mode", 1.0),
)


@router.get("/status", response_model=StatusResult, summary="Headline tiles with sparklines")
def status(
    loupe: LoupeDep, store: StoreDep,
    host: Annotated[str | None, Query(description="Only this host")] = None,
    start: Annotated[str, Query()] = "-10m",
) -> StatusResult:
    window = window_for(start, "now", retain=loupe.retain, points=60)
    recent = window_for("-15s", "now", retain=loupe.retain, step=1)  # the current value: newest full second
    tiles = []
    for tid, title, unit, metric, where, by, scale in TILES:
        where = dict(where, **({"host": [host]} if host else {}))
        stat = parse_statistic(metric, None, [f"{k}={','.join(v)}" for k, v in where.items()])
        agg = store.aggregate(stat, window, 1)
        now = store.aggregate(stat, recent, 1)
        norm = scale
        if tid == "cpu":
            # percent of all CPUs: divide by the CPUs that reported in the range
            per_cpu = store.aggregate(parse_statistic(metric, "cpu", [f"host={host}"] if host else None), recent, 1)
            norm = scale / max(1, per_cpu.elements)
        values = [v * norm for v in agg.total]
        last = now.total[now.last_index] * norm if now.last_index >= 0 else 0.0
        tiles.append(StatusTile(id=tid, title=title, unit=unit, metric=metric, where=where, by=by, value=last,
                                timestamps=list(range(window.start, window.end, window.step)), values=values))
    demo_hosts = sorted({s["host"] for s in store.sources() if s["demo"] and s["host"]})
    t = loupe.telemetry
    free = shutil.disk_usage(loupe.settings.data_dir).free
    growth, days = project(list(loupe.size_history), free)
    return StatusResult(tiles=tiles, store_bytes=store.size_bytes(), hosts=store.hosts(), demo_hosts=demo_hosts,
                        disk_free_bytes=free, store_growth_bytes_per_day=growth, days_until_full=days,
                        ingest_error=t.ingest_error, ingest_error_since=t.ingest_error_since)
