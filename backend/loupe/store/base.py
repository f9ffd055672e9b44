"""The store interface. The API talks only to this; DuckDB is the embedded engine,
and a ClickHouse engine can implement the same methods without touching the API.
"""

from __future__ import annotations

import abc
import time
from dataclasses import dataclass, field

from ..catalog import PREFIX_OP, Metric
from ..frame import Frame, SourceStatus
from ..frame_v3 import ArrowFrame
from ..timerange import Window


class StoreUnavailable(RuntimeError):
    """The store cannot take writes now (its log failed, or it is not keeping up); the message says why.
    Nothing of the refused request was acknowledged, so the agent sends it again later."""


@dataclass(frozen=True)
class Statistic:
    """A metric, filters and an optional breakdown, already checked against the catalog.

    `where` holds equality/set filters on string dimensions; `prefixes` path filters on
    path dimensions (file, share): a value matches a prefix p when it is p or lies under
    p + '/' (p is kept without a trailing slash; '/' matches every path). `band` restricts a
    count metric to events in histogram buckets lo..hi of one histogram dimension.
    """

    metric: Metric
    by: str | None = None
    where: tuple[tuple[str, tuple[str, ...]], ...] = ()
    band: tuple[str, int, int] | None = None
    # Which of the metric's row layers to read (see catalog.Metric.layer): (dim, True)
    # keeps rows where dim is set, (dim, False) rows where it is empty. Not shown to users.
    layer: tuple[str, bool] | None = None
    prefixes: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def where_dict(self) -> dict[str, list[str]]:
        """Filters as the API and worksheets write them: a prefix filter under `dim^`."""
        out = {k: list(v) for k, v in self.where}
        out.update({k + PREFIX_OP: list(v) for k, v in self.prefixes})
        return out


@dataclass
class Aggregate:
    """A time series broken down by one dimension, top elements plus other."""

    window: Window
    total: list[float]
    keys: list[str]
    values: list[list[float]]  # per key, per point
    key_means: list[float]
    key_last: list[float]
    other: list[float]
    other_mean: float
    elements: int
    approximate: bool
    last_index: int  # index of the latest point that has data, -1 if none
    buckets: list[int] | None = None  # for a histogram breakdown: each key's bucket exponent


@dataclass
class PathSum:
    """A path element's (or a cut directory's) sum over a window, as a mean rate over it."""

    path: str
    cut: bool  # deeper paths were summed into it: a directory below the depth asked for
    value: float
    elements: int  # stored elements (files, shares) summed into it


@dataclass
class Heatmap:
    window: Window
    buckets: list[int]  # exponents, contiguous lo..hi of what was seen
    cells: list[tuple[int, int, float]]  # (time index, index into buckets, rate)
    total: list[float]


@dataclass
class IngestOutcome:
    accepted: int = 0
    duplicates: int = 0
    rows: int = 0
    folded_rows: int = 0
    rejected: list[dict] = field(default_factory=list)
    seconds: dict[str, set[int]] = field(default_factory=dict)  # family -> seconds stored
    stored: set[tuple[str, int]] = field(default_factory=set)  # (source, seq) of frames stored
    tables: dict = field(default_factory=dict)  # family -> the Arrow rows stored (hot-table layout)


@dataclass
class PruneReport:
    rows: dict[str, int]  # table -> rows deleted
    bytes_before: int
    bytes_after: int


@dataclass
class DeleteReport:
    rows: dict[str, int]  # table -> rows deleted (or that would be, in a dry run)
    recomputed: list[tuple[str, int]]  # (tier, period start) of coarser periods rebuilt from what remains
    bytes_before: int
    bytes_after: int


class Store(abc.ABC):
    retain: dict[str, int]  # seconds each tier ('second', 'minute', 'hour') is kept

    @abc.abstractmethod
    def ingest(self, frames: list[Frame | ArrowFrame], *, received_at: float,
               body: bytes | None = None) -> IngestOutcome:
        """Store new frames, acknowledge duplicates; `body`: the version-3 request they were decoded
        from, which an engine may log as it came instead of its own rows."""

    @abc.abstractmethod
    def aggregate(self, stat: Statistic, window: Window, top: int) -> Aggregate: ...

    @abc.abstractmethod
    def heatmap(self, stat: Statistic, dim: str, window: Window) -> Heatmap: ...

    @abc.abstractmethod
    def extremes(self, stat: Statistic, window: Window) -> tuple[list[float], list[float]] | None:
        """Per point of a window coarser than seconds: the lowest and the highest per-second rate of the
        statistic's total inside it, read from the seconds tier (a second without rows counts as 0);
        None when that tier no longer holds the window's start."""

    @abc.abstractmethod
    def path_sums(self, stat: Statistic, window: Window, root: str, depth: int) -> list[PathSum]:
        """Every element of stat.by (a path dimension) summed over the window (one point), each
        path below `root` (a directory, ending in '/') cut to its first `depth` components below
        it; elements not below root (root's own path, names that are not paths such as
        FILE_OTHER) as they are. Elements whose sum is zero are left out."""

    @abc.abstractmethod
    def folded(self, stat: Statistic, window: Window) -> float:
        """The mean rate over the window of the files folded into FILE_OTHER that stat's other
        filters select (its prefix filters set aside: folded files have no path)."""

    @abc.abstractmethod
    def second(self, stat: Statistic, ts: int, keys: list[str]) -> tuple[float, dict[str, float], float]:
        """One second: (total, values of `keys`, other). For live pushes."""

    def backlog(self) -> dict:
        """Acknowledged writes not yet in the tables: {"rows": n, "bytes": their size in memory, "error": why
        the last flush failed, or None}; an engine may add its own (DuckDB: its WAL, refused checkpoints)."""
        return {"rows": 0, "error": None}

    def flush(self) -> int:
        """Move acknowledged writes that wait in memory into the tables; returns rows moved.
        Engines that write through at ingest have nothing to do."""
        return 0

    def request_flush(self) -> None:
        """Wake wait_flush() now."""

    def wait_flush(self, timeout: float) -> None:
        """Block until a flush is due: `timeout` passed, or (engines with a stage) the stage
        filled early. A flush thread calls this, so it never falls behind a burst."""
        time.sleep(timeout)

    @abc.abstractmethod
    def rollup(self, now: int) -> int:
        """Roll closed dirty periods up a tier; returns periods rolled."""

    # wait=False (compact, prune, sort_seconds): return at once, having done nothing (0, or None
    # from prune), when another of the three is rewriting the settled seconds; upkeep tries later.
    @abc.abstractmethod
    def prune(self, now: int, *, wait: bool = True) -> PruneReport | None: ...

    @abc.abstractmethod
    def set_retention(self, retain: dict[str, int], by: str, at: float) -> None:
        """Keep each tier ('second', 'minute', 'hour') this many seconds from now on; persisted,
        so it outlives a restart and wins over the configured default."""

    @abc.abstractmethod
    def config_get(self, key: str) -> dict | None:
        """A configuration document an admin saved under `key` (tiles, alert rules, client names...),
        or None if never saved."""

    @abc.abstractmethod
    def config_put(self, key: str, value: dict) -> None:
        """Save a JSON-serialisable configuration document under `key`; it outlives restarts."""

    @abc.abstractmethod
    def retention_origin(self) -> tuple[str, float] | None:
        """(who, when) set the retention in force, or None while it is the configured default."""

    @abc.abstractmethod
    def extent(self) -> dict[str, tuple[int, int | None, int | None]]:
        """Per tier ('second', 'minute', 'hour'): (rows, oldest period start, newest)."""

    @abc.abstractmethod
    def delete_data(self, host: str | None, start: int | None, end: int | None, *, dry_run: bool = False,
                    now: int) -> DeleteReport:
        """Delete the statistics of `host` (every host: None) in seconds [start, end) (None: unbounded).

        Seconds go exactly. A minute or hour that straddles an edge is rebuilt from what remains
        of the finer tier while that tier still holds it, and deleted whole where it no longer does.
        Sequence marks are kept, so a replayed frame does not bring deleted data back."""

    @abc.abstractmethod
    def compact(self, now: int, *, wait: bool = True) -> int:
        """Re-sort settled seconds for cheap per-element scans; returns rows moved."""

    def sort_minutes(self, now: int) -> int:
        """Lay out closed days of the minute tier for per-element reads; returns rows rewritten.
        Engines whose layout needs no upkeep have nothing to do."""
        return 0

    def sort_seconds(self, now: int, *, wait: bool = True) -> int:
        """Lay out settled seconds for per-element reads and compression, one span a call (a closed
        day, or settled hours of the open day); returns rows rewritten (0: none, though an empty span
        may have been passed over and more may follow on the next call).
        May take minutes: callers run it beside their other upkeep."""
        return 0

    @abc.abstractmethod
    def checkpoint(self) -> None:
        """Make committed data compact on disk (the engine's own durability does not depend on it)."""

    @abc.abstractmethod
    def size_bytes(self) -> int: ...

    @abc.abstractmethod
    def memory(self) -> tuple[int, int]:
        """(bytes the engine holds in memory now, the most it may hold)."""

    def memory_parts(self) -> dict[str, int]:
        """The engine's memory by what holds it (its own names), bytes; empty where it cannot tell."""
        return {}

    @abc.abstractmethod
    def ping(self) -> None:
        """Raise if the engine cannot answer a query."""

    # Sources reported by agents.
    @abc.abstractmethod
    def record_status(self, agent: str, host: str | None, status: list[SourceStatus], seen: float) -> None: ...

    @abc.abstractmethod
    def sources(self) -> list[dict]: ...

    @abc.abstractmethod
    def hosts(self) -> list[str]: ...

    # Worksheets.
    @abc.abstractmethod
    def worksheet_put(self, ws_id: str, name: str, owner: str, spec: str, created: float, updated: float) -> None: ...

    @abc.abstractmethod
    def worksheet_get(self, ws_id: str) -> dict | None: ...

    @abc.abstractmethod
    def worksheet_list(self) -> list[dict]: ...

    @abc.abstractmethod
    def worksheet_delete(self, ws_id: str) -> bool: ...

    # Benchmark runs: `spec` is the run's JSON (results, command, ...); `end` is None while it runs.
    @abc.abstractmethod
    def run_put(self, run_id: str, name: str, start: float, end: float | None, created: float, spec: str) -> None: ...

    @abc.abstractmethod
    def run_get(self, run_id: str) -> dict | None: ...

    @abc.abstractmethod
    def run_list(self) -> list[dict]: ...

    @abc.abstractmethod
    def run_delete(self, run_id: str) -> bool: ...

    def interrupt(self) -> None:
        """Abandon long upkeep work in progress (a re-sort), to be done again later, and wake a
        waiting flush; for shutdown."""

    @abc.abstractmethod
    def close(self) -> None: ...
