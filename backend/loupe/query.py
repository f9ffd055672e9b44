"""From request parameters to checked statistics and windows, and from store results to API models."""

from __future__ import annotations

import time
from dataclasses import replace

from .catalog import (
    FAMILIES, FILE_OTHER, HISTOGRAMS, PATH_DIMS, PREFIX_OP, CatalogError, bucket_label, check_dim, check_hist,
    fmt_amount, metric, statistic_name,
)
from .models import BreakdownResult, BreakdownRow, Bucket, QueryResult, Series, StatisticPublic
from .store.base import Aggregate, Statistic, Store
from .timerange import Window, choose_window, parse_time


class QueryError(ValueError):
    """Bad statistic or range; the API answers 400 with this message."""


def parse_statistic(metric_name: str, by: str | None, where: list[str] | None) -> Statistic:
    try:
        m = metric(metric_name)
        if by:
            check_dim(m, by)
        filters: dict[str, list[str]] = {}
        prefixes: dict[str, list[str]] = {}
        band = None
        for item in where or []:
            dim, sep, value = item.partition("=")
            dim = dim.strip()
            prefix = dim.endswith(PREFIX_OP)
            if prefix:
                dim = dim[: -len(PREFIX_OP)].strip()
            if not sep or not dim:
                raise QueryError(f"cannot read filter {item!r}: write it as dim=value, dim=v1,v2 "
                                 f"or, for a path, dim^=/prefix")
            check_dim(m, dim)
            if prefix:
                prefixes.setdefault(dim, [])
                prefixes[dim] += [p for p in _parse_prefixes(m, dim, value) if p not in prefixes[dim]]
                continue
            if dim in HISTOGRAMS:
                band = _parse_band(m, dim, value)
                continue
            vals = [v for v in value.split(",")] if value else [""]
            filters.setdefault(dim, [])
            filters[dim] += [v for v in vals if v not in filters[dim]]
    except CatalogError as e:
        raise QueryError(str(e)) from None
    if band and by in HISTOGRAMS and by != band[0]:
        raise QueryError(f"a {band[0]} band cannot be combined with a breakdown by {by}")
    return Statistic(m, by or None, tuple((k, tuple(v)) for k, v in sorted(filters.items())), band,
                     layer_of(m, by, filters), tuple((k, tuple(v)) for k, v in sorted(prefixes.items())))


def _parse_prefixes(m, dim: str, value: str) -> list[str]:
    """`dim^=/a,/b/`: path prefixes, each kept without its trailing slash ('/' stays '/')."""
    if dim not in PATH_DIMS:
        valid = ", ".join(d for d in PATH_DIMS if d in m.dims) or "(none)"
        raise QueryError(f"a prefix filter ({dim}{PREFIX_OP}=/path) applies to path dimensions only; "
                         f"{dim!r} is not one (path dimensions of {m.name}: {valid})")
    out = []
    for p in value.split(","):
        if not p.startswith("/"):
            raise QueryError(f"prefix filter {dim}{PREFIX_OP}={p!r} must be a path starting with '/', "
                             f"e.g. {dim}{PREFIX_OP}=/export/home")
        out.append(p.rstrip("/") or "/")
    return out


def root_of(stat: Statistic) -> str:
    """The directory a hierarchy of stat.by starts at: its one prefix filter on that dimension, else '/'."""
    for dim, values in stat.prefixes:
        if dim == stat.by and len(values) == 1:
            return values[0]
    return "/"


def layer_of(m, by: str | None, filters: dict) -> tuple[str, bool] | None:
    """The row layer a statistic reads, for metrics measured at two granularities.

    net.bytes has per-interface rows (procfs) and per-client rows (the socket probe,
    which also carry their route's interface): both cover the same bytes, so a statistic
    must read one layer or count twice. Asking about a detail dimension (client, port)
    selects the detail rows; anything else reads the base rows. A dimension only the base
    rows carry cannot be asked together with a detail one."""
    if m.layer is None:
        return None
    marker, detail, base = m.layer
    used = {by, *filters} - {None}
    if used & set(detail):
        clash = used & set(base)
        if clash:
            raise QueryError(f"{m.name} cannot use {', '.join(sorted(used & set(detail)))} together with "
                             f"{', '.join(sorted(clash))}: per-{marker} rows do not carry {', '.join(sorted(clash))}")
        return marker, True
    return marker, False


def _parse_band(m, dim: str, value: str) -> tuple[str, int, int]:
    h = check_hist(m, dim)
    lo_s, _, hi_s = value.partition(":")
    try:
        lo = int(lo_s)
        hi = int(hi_s) if hi_s else lo
    except ValueError:
        raise QueryError(f"cannot read {dim} band {value!r}: write lo:hi bucket exponents, e.g. {dim}=20:22") from None
    if not (h.lo <= lo <= hi <= h.hi):
        raise QueryError(f"{dim} band {lo}:{hi} outside buckets {h.lo}..{h.hi}")
    if m.value != "count":
        raise QueryError(f"a {dim} band applies to operation counts, not to {m.name}")
    return dim, lo, hi


def band_of(stat: Statistic, dim: str, lo: int, hi: int) -> Statistic:
    try:
        check_hist(stat.metric, dim)
    except CatalogError as e:
        raise QueryError(str(e)) from None
    band = _parse_band(stat.metric, dim, f"{lo}:{hi}")
    return replace(stat, band=band)


def window_for(
    start: str, end: str, *, retain: dict[str, int], points: int = 300, step: int | None = None,
    now: int | None = None, max_points: int = 5000, whole: bool = False,
) -> Window:
    now = int(time.time()) if now is None else now
    try:
        a, b = parse_time(start, now), parse_time(end, now)
        return choose_window(a, b, now=now, points=points, step=step, retain=retain, max_points=max_points,
                            whole=whole)
    except ValueError as e:
        raise QueryError(str(e)) from None


def public(stat: Statistic) -> StatisticPublic:
    where = stat.where_dict
    name = statistic_name(stat.metric.name, where, stat.by)
    if stat.band:
        dim, lo, hi = stat.band
        name += f" with {dim} {band_phrase(dim, lo, hi)}"
    return StatisticPublic(metric=stat.metric.name, by=stat.by, where=where, name=name, unit=stat.metric.unit)


def band_phrase(dim: str, lo: int, hi: int) -> str:
    h = HISTOGRAMS[dim]
    a, _ = h.bounds(lo)
    _, b = h.bounds(hi)
    if b is None:
        return f"of at least {fmt_amount(a, h.unit)}"
    if a == 0:
        return f"below {fmt_amount(b, h.unit)}"
    return f"between {fmt_amount(a, h.unit)} and {fmt_amount(b, h.unit)}"


def bucket_model(dim: str, e: int) -> Bucket:
    h = HISTOGRAMS[dim]
    lo, hi = h.bounds(e)
    return Bucket(index=e, lo=lo, hi=hi, label=bucket_label(h, e))


# Why a breakdown by file is approximate: the store keeps the busiest files of each host and
# period, and an NFS probe whose per-second key table filled counts the rest without their file.
FOLD_NOTE = (f"Files beyond the busiest per host and period, or past an NFS probe's per-second key table, "
             f"are folded into '{FILE_OTHER}'.")


def folded_note(stat: Statistic, folded: float) -> str:
    """Why a statistic filtered by a directory may undercount: folded files have no path."""
    return (f"{folded:.3g} {stat.metric.unit} of files folded into '{FILE_OTHER}' (beyond the busiest per "
            f"host and period) have no path: part of it may lie under the directory filtered on.")


def folded_beside(stat: Statistic, window: Window, store: Store) -> float:
    """For a statistic with a prefix filter on the folded dimension (file): the rate of the
    files folded into FILE_OTHER that its other filters select, which no prefix can match."""
    fold_dim = FAMILIES[stat.metric.family].fold_dim
    if not any(d == fold_dim for d, _ in stat.prefixes):
        return 0.0
    return store.folded(stat, window)


def to_query_result(stat: Statistic, agg: Aggregate, folded: float = 0.0) -> QueryResult:
    """`folded`: what files folded into FILE_OTHER add up to beside a prefix filter on files."""
    w = agg.window
    notes = []
    if agg.approximate:
        notes.append(FOLD_NOTE)
    if folded:
        notes.append(folded_note(stat, folded))
    return QueryResult(
        statistic=public(stat),
        tier=w.tier,
        step=w.step,
        start=w.start,
        end=w.end,
        timestamps=list(range(w.start, w.end, w.step)),
        total=agg.total,
        series=[
            Series(key=k, values=v, total=m, last=last)
            for k, v, m, last in zip(agg.keys, agg.values, agg.key_means, agg.key_last)
        ],
        other=agg.other if stat.by and stat.by not in HISTOGRAMS else None,
        elements=agg.elements,
        approximate=agg.approximate or bool(folded),
        notes=notes,
    )


def to_breakdown(stat: Statistic, agg: Aggregate) -> BreakdownResult:
    total = sum(agg.total) / max(1, len(agg.total))
    rows = []
    hist = HISTOGRAMS.get(stat.by or "")
    exps = agg.buckets if hist and agg.buckets else [None] * len(agg.keys)
    for k, mean, last, e in zip(agg.keys, agg.key_means, agg.key_last, exps):
        bucket = bucket_model(hist.name, e) if e is not None else None
        rows.append(BreakdownRow(key=k, value=mean, last=last, share=mean / total if total else 0.0, bucket=bucket))
    w = agg.window
    return BreakdownResult(
        statistic=public(stat), tier=w.tier, start=w.start, end=w.end, total=total, rows=rows,
        other=agg.other_mean, elements=agg.elements, approximate=agg.approximate,
    )
