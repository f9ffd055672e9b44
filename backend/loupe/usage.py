"""The store's growth and when its disk fills, from sizes sampled over time (the status page)."""

from __future__ import annotations

DAY = 86400.0


def project(history: list[tuple[float, int]], free: int, *, min_span: float = 600.0) -> tuple[float | None, float | None]:
    """(growth in bytes per day, days until `free` bytes are used) from (time, store bytes) samples.

    The growth is the least-squares slope over the samples: the write-ahead log makes the size
    a sawtooth, which first and last alone would misread. None until the samples span
    `min_span` seconds; no day count while the store does not grow (retention keeps it level).
    """
    if len(history) < 3 or history[-1][0] - history[0][0] < min_span:
        return None, None
    n = len(history)
    mt = sum(t for t, _ in history) / n
    mb = sum(b for _, b in history) / n
    var = sum((t - mt) ** 2 for t, _ in history)
    slope = sum((t - mt) * (b - mb) for t, b in history) / var  # bytes per second
    per_day = slope * DAY
    return per_day, (free / per_day if per_day > 0 else None)
