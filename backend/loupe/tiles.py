"""The Status page's Activity tiles: the built-in eight, checking an admin's tiles against the
catalog, keeping them (the store's configuration document 'status_tiles'), and the window of
their sparklines."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Any

from .alerts import SETTLE
from .catalog import CatalogError, check_dim, metric
from .models import TileSpec, TilesConfig
from .query import QueryError, parse_statistic
from .store.base import Statistic, Store
from .timerange import Window, choose_window

CONFIG_KEY = "status_tiles"
MAX_TILES = 8
# The weather is judged on the mean of this many settled seconds, not on the newest second: one
# second of a steady NFS load swings by a tenth or more (bursts, the agent's one-second cut), enough
# to flip a level back and forth at each refresh. Ten samples cut that noise about threefold (the
# square root of ten), the page refreshes every 2 s so each refresh replaces a fifth of them and the
# level moves gradually, and a real change of load still shows within about 5 s (half the window).
LEVEL_SECONDS = 10

BUSY = ["user", "nice", "system", "irq", "softirq", "steal"]
MB = 1e-6


def _tile(tid: str, title: str, metric_name: str, unit: str, thresholds: list[float], *, where=None, by=None,
          scale: float = 1.0, divide_by_cpus: bool = False) -> TileSpec:
    return TileSpec(id=tid, title=title, metric=metric_name, by=by, where=where or {}, unit=unit, scale=scale,
                    divide_by_cpus=divide_by_cpus, thresholds=thresholds)


# What a busy NAS on 10 GbE does; an admin tunes them to what is normal for theirs.
DEFAULT_TILES = (
    _tile("nfs_ops", "NFS operations", "nfs.ops", "ops/s", [1000, 5000, 20000, 50000], by="client"),
    _tile("nfs_read", "NFS read", "nfs.bytes", "MB/s", [50, 200, 500, 1000], where={"op": ["read"]}, by="client",
          scale=MB),
    _tile("nfs_write", "NFS write", "nfs.bytes", "MB/s", [50, 200, 500, 1000], where={"op": ["write"]},
          by="client", scale=MB),
    _tile("net_in", "Network in", "net.bytes", "MB/s", [100, 400, 800, 1100], where={"direction": ["in"]},
          by="interface", scale=MB),
    _tile("net_out", "Network out", "net.bytes", "MB/s", [100, 400, 800, 1100], where={"direction": ["out"]},
          by="interface", scale=MB),
    _tile("disk_iops", "Disk IOPS", "disk.ops", "ops/s", [500, 2000, 5000, 10000], by="disk"),
    _tile("disk_bytes", "Disk throughput", "disk.bytes", "MB/s", [100, 400, 800, 1500], by="disk", scale=MB),
    _tile("cpu", "CPU busy", "cpu.util", "%", [30, 50, 70, 90], where={"mode": BUSY}, by="mode",
          divide_by_cpus=True),
)


def statistic(t: TileSpec, host: str | None = None, by: str | None = None) -> Statistic:
    """The total the tile shows (or its breakdown `by`), on one host or all."""
    where = dict(t.where, **({"host": [host]} if host else {}))
    return parse_statistic(t.metric, by, [f"{k}={','.join(v)}" for k, v in where.items()])


def level_of(total: list[float], start: int, now: int, seconds: int = LEVEL_SECONDS) -> float:
    """The value a tile's weather is judged on: the mean of the `seconds` settled seconds before
    now - SETTLE (those the agents have all reported), from a per-second `total` whose first
    second is `start`; a second it lacks counts as 0, as a second without rows does in totals."""
    end = now - SETTLE
    return sum(total[ts - start] if 0 <= ts - start < len(total) else 0.0 for ts in range(end - seconds, end)) / seconds


def _name(i: int, t: TileSpec) -> str:
    return f"tiles[{i}] ({t.id})"


def check(tiles: list[TileSpec]) -> None:
    """Raise QueryError naming the first bad tile and field."""
    if not 1 <= len(tiles) <= MAX_TILES:
        raise QueryError(f"tiles: between 1 and {MAX_TILES} tiles, not {len(tiles)}")
    seen: dict[str, int] = {}
    for i, t in enumerate(tiles):
        where = _name(i, t)
        if t.id in seen:
            raise QueryError(f"{where}.id: tiles[{seen[t.id]}] has this id already; each tile needs its own")
        seen[t.id] = i
        try:
            m = metric(t.metric)
        except CatalogError as e:
            raise QueryError(f"{where}.metric: {e}") from None
        for field, dims in (("by", [t.by] if t.by else []), ("where", list(t.where))):
            for d in dims:
                try:
                    check_dim(m, d)
                except CatalogError as e:
                    raise QueryError(f"{where}.{field}: {e}") from None
        for d, values in t.where.items():
            if not values:
                raise QueryError(f"{where}.where: no values for {d!r}; give one or more, or leave {d!r} out")
        try:
            statistic(t, by=t.by)
        except QueryError as e:
            raise QueryError(f"{where}: {e}") from None
        if t.divide_by_cpus and "cpu" not in m.dims:
            raise QueryError(f"{where}.divide_by_cpus: {t.metric} has no cpu dimension to count CPUs by")
        th = t.thresholds
        for k in range(1, len(th)):
            if not th[k] > th[k - 1]:
                raise QueryError(f"{where}.thresholds: each must be above the one before (ascending), but "
                                 f"{th[k]:g} follows {th[k - 1]:g}")


def load(store: Store) -> TilesConfig:
    doc = store.config_get(CONFIG_KEY) or {}
    saved = doc.get("tiles")
    # A saved tile is shown as saved even if the catalog has since changed: the status says what is wrong.
    tiles = [TileSpec.model_validate(t) for t in saved] if saved else list(DEFAULT_TILES)
    return TilesConfig(tiles=tiles, default=not saved, set_by=doc.get("by"), set_at=doc.get("at"))


def save(store: Store, tiles: list[TileSpec] | None, by: str, at: float) -> TilesConfig:
    """Keep `tiles` (None: back to the built-in ones), and who did it."""
    if tiles is not None:
        check(tiles)
    store.config_put(CONFIG_KEY, {"tiles": [t.model_dump() for t in tiles] if tiles else None, "by": by, "at": at})
    return load(store)


def describe_change(before: list[TileSpec], after: list[TileSpec]) -> str:
    """For the audit log: which tiles came, went or changed, and which of their fields."""
    old = {t.id: t.model_dump() for t in before}
    new = {t.id: t.model_dump() for t in after}
    parts = [f"added {', '.join(i for i in new if i not in old)}" if set(new) - set(old) else "",
             f"removed {', '.join(i for i in old if i not in new)}" if set(old) - set(new) else ""]
    changed = [f"{i} ({', '.join(k for k in new[i] if new[i][k] != old[i][k])})"
               for i in new if i in old and new[i] != old[i]]
    parts.append(f"changed {'; '.join(changed)}" if changed else "")
    if [t.id for t in before if t.id in new] != [t.id for t in after if t.id in old]:
        parts.append("reordered")
    return f"{len(after)} tiles: " + ("; ".join(p for p in parts if p) or "no change")


# ------------------------------------------------------------------ sparklines
SPARK_SPAN = 7 * 86400
SPARK_POINTS = 168  # a week of hours
MIN_SPAN = 60
NICE_STEPS = (1, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400)


def oldest_second(extent: dict[str, tuple[int, int | None, int | None]]) -> int | None:
    """The store's oldest second from its tiers' extents (Store.extent). A minute or an hour row's
    ts is its period's start, up to an hour before the first second it holds: a store started at
    11:58:30 has an hour row at 11:00 once that hour is rolled up. So a coarser tier counts only
    where it reaches a whole period before the finer tiers' oldest second (what they have pruned)."""
    oldest = extent.get("second", (0, None, None))[1]
    for tier, period in (("minute", 60), ("hour", 3600)):
        lo = extent.get(tier, (0, None, None))[1]
        if lo is not None and (oldest is None or lo + period <= oldest):
            oldest = lo
    return oldest


def spark_window(now: int, oldest: int | None, retain: dict[str, int], span: int = SPARK_SPAN) -> Window:
    """The last `span` seconds, or since the oldest stored second when the store is younger (so a
    new install draws its minutes across the whole sparkline, not as a sliver at the right end),
    in at most SPARK_POINTS round steps: the coarser tiers serve the longer spans."""
    start = now - span
    if oldest is not None:
        start = min(max(start, oldest), now - MIN_SPAN)
    want = (now - start) / SPARK_POINTS
    step = next((s for s in NICE_STEPS if s >= want), NICE_STEPS[-1])
    return choose_window(start, now, now=now, step=step, retain=retain)


class TTLCache:
    """Values kept for `ttl` seconds. A sparkline's window only moves a step at a time, and its
    closed steps barely change: recomputing a week of eight statistics on every poll is waste.
    None is not kept (an empty store's oldest second is None only until its first frame)."""

    def __init__(self, ttl: float = 60.0, size: int = 256, clock: Callable[[], float] = time.monotonic):
        self.ttl, self.size, self.clock = ttl, size, clock
        self._items: dict[Hashable, tuple[float, Any]] = {}

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        now = self.clock()
        hit = self._items.get(key)
        if hit and hit[0] > now:
            return hit[1]
        value = compute()
        if value is None:
            return None
        if len(self._items) >= self.size:
            self._items = {k: v for k, v in self._items.items() if v[0] > now}
            if len(self._items) >= self.size:
                self._items.clear()
        self._items[key] = (now + self.ttl, value)
        return value
