"""Vectorised log2 histograms in the catalog's bucket scheme.

The synthetic NAS describes each row's events by a distribution (a lognormal
latency, a uniform offset range) and needs integer bucket counts that add up to
the row's ``count`` exactly, plus a ``lat_sum`` that agrees with the buckets.
Drawing every event would cost ~10^5 samples a second; instead each row's count
is apportioned over the buckets by probability (largest remainder), and the
latency sum uses each bucket's conditional mean, so ``lat_sum / count`` always
lies inside the buckets the heat map shows.
"""

from __future__ import annotations

import math

import numpy as np

from loupe.catalog import LATENCY, OFFSET, SIZE, Histogram

KEYS = {h.name: [str(e) for e in h.buckets] for h in (LATENCY, SIZE, OFFSET)}


def _bounds(h: Histogram) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper value of each bucket as floats (bucket lo starts at 0, hi is open)."""
    lo = np.array([h.bounds(e)[0] for e in h.buckets], dtype=float)
    hi = np.array([h.bounds(e)[1] or math.inf for e in h.buckets], dtype=float)
    return lo, hi


LAT_LO, LAT_HI = _bounds(LATENCY)
OFF_LO, OFF_HI = _bounds(OFFSET)
_LN_EDGES = np.log(LAT_HI[:-1])  # the 25 inner edges 2^11 .. 2^35
_SQRT2 = math.sqrt(2.0)


def bucket_index(values: np.ndarray, h: Histogram) -> np.ndarray:
    """Column of each value in ``h`` (exponent - h.lo), exactly as ``h.bucket_of`` clamps."""
    v = np.asarray(values, dtype=float)
    _, exp = np.frexp(v)  # v = m * 2**exp with 0.5 <= m < 1, so floor(log2 v) = exp - 1, exact
    e = np.where(v >= 1, exp - 1, h.lo)
    return np.clip(e, h.lo, h.hi) - h.lo


def _phi(x: np.ndarray) -> np.ndarray:
    """Standard normal CDF; erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), numpy has none."""
    z = np.abs(x) / _SQRT2
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    erf = 1.0 - poly * np.exp(-z * z)
    return 0.5 * (1.0 + np.sign(x) * erf)


def apportion(n: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Split integer counts ``n[i]`` over columns in proportion to ``p[i]``; rows sum to ``n`` exactly."""
    raw = np.asarray(n, dtype=float)[:, None] * p
    base = np.floor(raw)
    short = (np.asarray(n) - base.sum(axis=1)).astype(np.int64)
    # The `short` columns with the largest remainders get one more.
    order = np.argsort(base - raw, axis=1, kind="stable")
    extra = np.zeros_like(base)
    np.put_along_axis(extra, order, np.arange(p.shape[1])[None, :] < short[:, None], axis=1)
    return (base + extra).astype(np.int64)


def _cdf_steps(z: np.ndarray) -> np.ndarray:
    """Probability of each bucket from the normal CDF at the inner edges (first bucket from -inf, last to +inf)."""
    cdf = np.empty((z.shape[0], z.shape[1] + 2))
    cdf[:, 0], cdf[:, -1] = 0.0, 1.0
    cdf[:, 1:-1] = _phi(z)
    return np.clip(np.diff(cdf, axis=1), 0.0, None)


def lognormal(n: np.ndarray, median_ns, sigma) -> tuple[np.ndarray, np.ndarray]:
    """Latency bucket counts (rows x buckets) and latency sums (ns) for ``n`` lognormal events per row."""
    n = np.asarray(n, dtype=np.int64)
    shape = np.stack([np.broadcast_to(np.asarray(median_ns, dtype=float), n.shape),
                      np.broadcast_to(np.asarray(sigma, dtype=float), n.shape)], axis=1)
    # Rows share a handful of distributions: compute each once.
    uniq, inv = np.unique(shape, axis=0, return_inverse=True)
    mu, s = np.log(uniq[:, :1]), uniq[:, 1:]
    z = (_LN_EDGES[None, :] - mu) / s
    p = _cdf_steps(z)
    # E[X; X in bucket] for a lognormal is exp(mu + s^2/2) * (Phi(z_hi - s) - Phi(z_lo - s)).
    part = np.exp(mu + s * s / 2) * _cdf_steps(z - s)
    mean_in = np.clip(part / np.maximum(p, 1e-300), LAT_LO, np.minimum(LAT_HI, 2 * LAT_LO + 2048))
    inv = inv.reshape(-1)
    counts = apportion(n, (p / p.sum(axis=1, keepdims=True))[inv])
    return counts, (counts * mean_in[inv]).sum(axis=1).round().astype(np.int64)


def uniform_offsets(n: np.ndarray, start, end) -> np.ndarray:
    """Offset bucket counts for ``n`` I/Os spread evenly over byte range [start, end) per row."""
    n = np.asarray(n, dtype=np.int64)
    a = np.broadcast_to(np.asarray(start, dtype=float), n.shape)[:, None]
    b = np.maximum(np.broadcast_to(np.asarray(end, dtype=float), n.shape)[:, None], a + 1)
    overlap = np.clip(np.minimum(b, OFF_HI[None, :]) - np.maximum(a, OFF_LO[None, :]), 0.0, None)
    return apportion(n, overlap / (b - a))


def sparse(mat: np.ndarray, name: str) -> list[dict[str, int]]:
    """Per row, the non-zero buckets as the frame's {"exponent": count} dict."""
    keys = KEYS[name]
    r, c = np.nonzero(mat)  # row-major: each row's buckets are contiguous
    k = [keys[i] for i in c.tolist()]
    v = mat[r, c].tolist()
    bounds = np.searchsorted(r, np.arange(mat.shape[0] + 1)).tolist()
    return [dict(zip(k[a:b], v[a:b])) for a, b in zip(bounds, bounds[1:])]
