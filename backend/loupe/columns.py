"""Version-1 rows -> version-2 ``columns`` (see :mod:`loupe.frame`), with the standard library only.

The agent imports this; it runs on NAS heads (and the knfsd test guest) that have
python3 but not the backend's pydantic, numpy or DuckDB.

A source with thousands of rows a second may return its rows already as columns
(a dict with ``n``); the agent sends those as they are.
"""

from __future__ import annotations


def rows_to_columns(rows: list[dict]) -> dict:
    """Version-1 rows (dicts) -> the ``columns`` of a version-2 frame. What an agent sends."""
    n = len(rows)
    names: dict[str, None] = {}
    for r in rows:
        for k in r.get("dims", ()):
            names[k] = None
    dims = {k: [r["dims"].get(k, "") if "dims" in r else "" for r in rows] for k in names}
    out: dict = {"n": n, "dims": dims}
    for m in ("count", "bytes", "lat_sum"):
        vals = [r.get(m, 0) for r in rows]
        if any(vals):
            out[m] = vals
    hist: dict[str, dict[str, list]] = {}
    for i, r in enumerate(rows):
        for h, buckets in (r.get("hist") or {}).items():
            acc = hist.get(h)
            if acc is None:
                acc = hist[h] = {"row": [], "bucket": [], "n": []}
            for b, c in buckets.items():
                if c:
                    acc["row"].append(i)
                    acc["bucket"].append(int(b))
                    acc["n"].append(c)
    if hist:
        out["hist"] = hist
    return out


def is_columns(rows) -> bool:
    """Whether a source returned version-2 columns rather than a list of rows."""
    return isinstance(rows, dict) and "n" in rows


def columns_to_rows(cols: dict) -> list[dict]:
    """The ``columns`` of a version-2 frame -> version-1 rows (for tests and readers of rows)."""
    n = cols["n"]
    rows = [{"dims": {k: v[i] for k, v in cols.get("dims", {}).items()}} for i in range(n)]
    for m in ("count", "bytes", "lat_sum"):
        for r, v in zip(rows, cols.get(m) or [0] * n):
            r[m] = v
    for h, sh in (cols.get("hist") or {}).items():
        for i, b, c in zip(sh["row"], sh["bucket"], sh["n"]):
            rows[i].setdefault("hist", {}).setdefault(h, {})[str(b)] = c
    return rows
