"""The histogram arithmetic the synthetic NAS relies on."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from loupe.catalog import LATENCY, OFFSET, SIZE
from loupe_probes.synthetic import hist


@given(st.lists(st.integers(0, 2**50), min_size=1, max_size=50))
def test_bucket_index_is_the_catalogs_bucket_of(values: list[int]) -> None:
    for h in (LATENCY, SIZE, OFFSET):
        got = hist.bucket_index(np.array(values), h) + h.lo
        assert got.tolist() == [h.bucket_of(v) for v in values]


@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=20), st.integers(0, 2**32))
def test_apportion_keeps_every_count(ns: list[int], seed: int) -> None:
    p = np.random.default_rng(seed).dirichlet(np.ones(7), len(ns))
    out = hist.apportion(np.array(ns), p)
    assert out.sum(axis=1).tolist() == ns
    assert (np.abs(out - np.array(ns)[:, None] * p) < 1 + 1e-9).all()  # never more than one off


def test_lognormal_buckets_and_mean() -> None:
    n = np.array([100_000, 7, 0])
    median, sigma = 6.5e6, 0.5
    counts, sums = hist.lognormal(n, median, sigma)
    assert counts.sum(axis=1).tolist() == n.tolist()
    assert sums[2] == 0
    # The mean of a lognormal is median * exp(sigma^2 / 2).
    assert math.isclose(sums[0] / n[0], median * math.exp(sigma**2 / 2), rel_tol=0.01)
    # Most events sit in the median's bucket and its neighbours: 2^22 <= 6.5 ms < 2^23.
    peak = int(np.argmax(counts[0])) + LATENCY.lo
    assert peak in (22, 23)


def test_lognormal_mean_stays_inside_its_buckets() -> None:
    counts, sums = hist.lognormal(np.array([1, 3, 50]), np.array([900.0, 2e10, 40e3]), 0.4)
    for row, total in zip(counts, sums):
        used = [e for e, c in zip(LATENCY.buckets, row) if c]
        lo = LATENCY.bounds(min(used))[0]
        hi = LATENCY.bounds(max(used))[1] or math.inf
        assert lo * row.sum() <= total <= hi * row.sum()


def test_uniform_offsets() -> None:
    # 8 I/Os over [0, 64 KiB): half below 32 KiB; the first bucket holds everything under 8 KiB.
    out = hist.uniform_offsets(np.array([8]), 0, 64 * 1024)[0]
    assert {OFFSET.lo + i: int(c) for i, c in enumerate(out) if c} == {12: 1, 13: 1, 14: 2, 15: 4}
    # A range inside one bucket puts everything there; an empty range is a point.
    out = hist.uniform_offsets(np.array([5, 3]), [2**30, 2**20], [2**30 + 2**20, 2**20])
    assert out[:, 30 - OFFSET.lo].tolist() == [5, 0] and out[1, 20 - OFFSET.lo] == 3


def test_sparse_lists_only_non_zero_buckets() -> None:
    mat = np.zeros((3, len(LATENCY.buckets)), np.int64)
    np.add.at(mat[0], hist.bucket_index(np.array([0, 2047, 2048, 2**40]), LATENCY), 1)
    mat[2, -1] = 7
    assert hist.sparse(mat, "latency") == [{"10": 2, "11": 1, "35": 1}, {}, {"35": 7}]
