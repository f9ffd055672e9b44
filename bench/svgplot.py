"""Line charts as a standalone SVG, for docs/PERFORMANCE.md (no plotting library on the bench box)."""

from __future__ import annotations

import math
from html import escape


def _ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    """Round values (1, 2, 2.5 or 5 times a power of ten) about n apart, between lo and hi."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step) + 1)]


def panels(title: str, xs: list[float], rows: list[dict], *, xlabel: str, width: int = 760,
           height: int = 180) -> str:
    """One SVG with a panel per row: {"label": str, "series": [(name, ys, colour)], "ymin": 0}."""
    left, right, top, gap = 64, 16, 46, 34
    total_h = top + len(rows) * (height + gap) + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total_h}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{total_h}" fill="white"/>',
           f'<text x="{left}" y="16" font-size="13" font-weight="bold">{escape(title)}</text>']
    x0, x1 = min(xs), max(xs)
    w = width - left - right
    for i, row in enumerate(rows):
        y_top = top + i * (height + gap)
        ys_all = [v for _, ys, _ in row["series"] for v in ys if v is not None]
        lo = row.get("ymin", min(ys_all, default=0.0))
        hi = max(ys_all, default=1.0) * 1.05 or 1.0
        px = lambda x: left + (x - x0) / ((x1 - x0) or 1) * w  # noqa: E731
        py = lambda y: y_top + height - (y - lo) / ((hi - lo) or 1) * height  # noqa: E731
        out.append(f'<rect x="{left}" y="{y_top}" width="{w}" height="{height}" fill="none" stroke="#bbb"/>')
        for t in _ticks(lo, hi):
            out.append(f'<line x1="{left}" x2="{left + w}" y1="{py(t):.1f}" y2="{py(t):.1f}" stroke="#eee"/>')
            out.append(f'<text x="{left - 4}" y="{py(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
        for t in _ticks(x0, x1, 6):
            out.append(f'<text x="{px(t):.1f}" y="{y_top + height + 13}" text-anchor="middle">{t:g}</text>')
        out.append(f'<text x="{left}" y="{y_top - 5}" font-weight="bold">{escape(row["label"])}</text>')
        lx = left + w
        for name, ys, colour in reversed(row["series"]):
            pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, ys) if y is not None)
            out.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="1.2"/>')
            out.append(f'<text x="{lx}" y="{y_top - 5}" text-anchor="end" fill="{colour}">{escape(name)}</text>')
            lx -= 8 + 6.5 * len(name)
    out.append(f'<text x="{left + w / 2}" y="{total_h - 2}" text-anchor="middle">{escape(xlabel)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
