from dataclasses import replace
from typing import Annotated

from fastapi import APIRouter, Query

from ...catalog import FILE_OTHER, HISTOGRAMS, PATH_DIMS
from ...hierarchy import build_tree, directory
from ...models import BreakdownResult, HeatmapResult, HierarchyResult, MembersResult, QueryResult
from ...names import client_addresses
from ...query import (
    FOLD_NOTE, QueryError, band_of, band_phrase, bucket_model, folded_beside, folded_note, public, root_of,
    to_breakdown, to_query_result, window_for,
)
from ..deps import LoupeDep, RangeDep, StatisticDep, StoreDep, TopDep, WindowDep

router = APIRouter(tags=["statistics"])
MAX_CELLS = 20_000


@router.get("/query", response_model=QueryResult, summary="Time series of a statistic, top N plus other")
def query(
    stat: StatisticDep, window: WindowDep, store: StoreDep, loupe: LoupeDep, top: TopDep = 10,
    minmax: Annotated[bool, Query(description="On a tier coarser than seconds, also the lowest and highest "
                                  "per-second rate of the total inside each point (read from the seconds tier)")] = False,
) -> QueryResult:
    res = to_query_result(stat, store.aggregate(stat, window, top), folded_beside(stat, window, store))
    res.names = loupe.names.names(client_addresses(stat, (s.key for s in res.series)))
    if minmax and window.step > 1:
        ext = store.extremes(stat, window)
        if ext is None:
            res.notes.append(f"No min/max: the seconds tier, kept {store.retain['second'] // 3600} h, no longer "
                             "holds the start of this range.")
        else:
            res.total_min, res.total_max = ext
    return res


@router.get("/breakdown", response_model=BreakdownResult, summary="Breakdown table over a range")
def breakdown(stat: StatisticDep, window: WindowDep, store: StoreDep, loupe: LoupeDep,
              top: TopDep = 50) -> BreakdownResult:
    if not stat.by:
        raise QueryError("breakdown needs 'by', a dimension to break down by")
    res = to_breakdown(stat, store.aggregate(stat, window, top))
    res.names = loupe.names.names(client_addresses(stat, (r.key for r in res.rows)))
    return res


@router.get("/heatmap", response_model=HeatmapResult, summary="Time x log2 bucket rates of a histogram dimension")
def heatmap(
    stat: StatisticDep, loupe: LoupeDep, r: RangeDep, store: StoreDep,
    dim: Annotated[str, Query(description="Histogram dimension: latency, size or offset")] = "latency",
) -> HeatmapResult:
    if dim not in stat.metric.hists:
        raise QueryError(f"{dim!r} is not a histogram dimension of {stat.metric.name}; "
                         f"valid: {', '.join(stat.metric.hists) or '(none)'}")
    if stat.band and stat.band[0] != dim:
        raise QueryError(f"a {stat.band[0]} band cannot be combined with a {dim} heat map")
    # Keep the cell count under what a browser draws fluidly: grow the step if needed.
    points = min(r.points, MAX_CELLS // len(HISTOGRAMS[dim].buckets))
    window = window_for(r.start, r.end, retain=loupe.retain, points=points, step=r.step)
    hm = store.heatmap(stat, dim, window)
    w = hm.window
    return HeatmapResult(
        statistic=public(replace(stat, by=dim)), dim=dim, tier=w.tier, step=w.step,
        start=w.start, end=w.end, timestamps=list(range(w.start, w.end, w.step)),
        buckets=[bucket_model(dim, e) for e in hm.buckets],
        cells=[[t, b, v] for t, b, v in hm.cells], max=max((v for _, _, v in hm.cells), default=0.0),
        total=hm.total, names=loupe.names.names(client_addresses(stat)),
    )


@router.get("/members", response_model=MembersResult, summary="Who is in a heat-map band")
def members(
    stat: StatisticDep, loupe: LoupeDep, r: RangeDep, store: StoreDep,
    dim: Annotated[str, Query(description="Histogram dimension of the band")],
    lo: Annotated[int, Query(description="Lowest bucket exponent of the band")],
    hi: Annotated[int, Query(description="Highest bucket exponent of the band")],
    top: TopDep = 50,
) -> MembersResult:
    if not stat.by or stat.by in HISTOGRAMS:
        raise QueryError("members needs 'by', a non-histogram dimension such as client, file or op")
    banded = band_of(stat, dim, lo, hi)
    window = window_for(r.start, r.end, retain=loupe.retain, points=1, whole=True)
    bd = to_breakdown(banded, store.aggregate(banded, window, top))
    names = loupe.names.names(client_addresses(banded, (x.key for x in bd.rows)))
    return MembersResult(statistic=bd.statistic, dim=dim, lo=lo, hi=hi, band=band_phrase(dim, lo, hi),
                         start=bd.start, end=bd.end, total=bd.total, rows=bd.rows, other=bd.other,
                         elements=bd.elements, names=names)


@router.get("/hierarchy", response_model=HierarchyResult,
            summary="A path dimension (file, share) over a range, folded into a directory tree")
def hierarchy(
    stat: StatisticDep, loupe: LoupeDep, r: RangeDep, store: StoreDep,
    depth: Annotated[int, Query(ge=1, le=8, description="Levels below the root to read")] = 3,
    top: Annotated[int, Query(ge=1, le=100,
                              description="Children listed per directory; the rest sum into (other)")] = 12,
) -> HierarchyResult:
    if stat.by not in PATH_DIMS:
        raise QueryError(f"hierarchy needs 'by', a path dimension: {' or '.join(PATH_DIMS)}")
    window = window_for(r.start, r.end, retain=loupe.retain, points=1, whole=True)
    root = root_of(stat)
    sums = store.path_sums(stat, window, directory(root), depth)
    tree, nodes = build_tree(sums, root, top=top)
    folded = folded_beside(stat, window, store)
    notes = [folded_note(stat, folded)] if folded else []
    shown = any(s.path == FILE_OTHER for s in sums)
    if shown:
        notes.append(f"{FOLD_NOTE} It is a node of its own: its files have no path.")
    return HierarchyResult(
        statistic=public(stat), dim=stat.by, root=root, tier=window.tier, start=window.start, end=window.end,
        depth=depth, top=top, total=tree.value, nodes=nodes, tree=tree, approximate=bool(folded) or shown,
        notes=notes,
    )
