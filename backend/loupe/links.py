"""Links back into the UI for webhook posts: the Alerts page at an event, and a worksheet of a
statistic paused over a span of time.

The worksheet's query string is the one the UI writes (frontend/src/state/url.ts,
encodeWorksheet): `?range=<span>&paused=1&at=<end>&s=<metric>;by:<dim>;w:<dim>=<v1>,<v2>`, each
name and value percent-encoded as JavaScript's encodeURIComponent does. The cases of
tests/fixtures/worksheet-links.json are built here and decoded by the UI's own tests, so the two
cannot drift apart unseen.
"""

from __future__ import annotations

import math
from urllib.parse import quote, urlsplit

DEFAULT_RANGE = "10m"  # left out of the link, as the UI does
MIN_SPAN, MAX_SPAN = 60, 366 * 86400  # the spans the UI accepts (state/time.ts)
_UNITS = (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60))


def enc(s: str) -> str:
    """encodeURIComponent: everything but A-Z a-z 0-9 - _ . ! ~ * ' ( ), as UTF-8."""
    return quote(s, safe="-_.!~*'()")


def format_span(seconds: int) -> str:
    """The span's shortest exact name, as the UI writes it: 3600 -> '1h', 5400 -> '90m'."""
    for unit, size in _UNITS:
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def encode_statistic(metric: str, where: dict[str, list[str]], by: str | None = None) -> str:
    parts = [enc(metric)] + ([f"by:{enc(by)}"] if by else [])
    parts += [f"w:{enc(dim)}={','.join(enc(v) for v in values)}" for dim, values in where.items()]
    return ";".join(parts)


def worksheet_query(statistics: list[str], start: float, end: float) -> str:
    """A worksheet of `statistics` (encode_statistic) paused at `end`, reaching back to `start` at
    least: its span in whole minutes, between a minute and the UI's longest."""
    at = math.ceil(end)
    span = min(MAX_SPAN, max(MIN_SPAN, math.ceil((at - start) / 60) * 60))
    rng = format_span(span)
    params = ([f"range={rng}"] if rng != DEFAULT_RANGE else []) + ["paused=1", f"at={at}"]
    return "?" + "&".join(params + [f"s={s}" for s in statistics])


def check_public_url(url: str) -> str:
    """The address users reach Loupe at, without a trailing slash; ValueError naming what is wrong."""
    u = urlsplit(url.strip())
    if u.scheme not in ("http", "https") or not u.hostname:
        raise ValueError(f"{url!r} is not an http:// or https:// URL with a host, e.g. https://nas1.example:8080")
    if u.query or u.fragment:
        raise ValueError(f"{url!r} has a query or fragment; give the address Loupe is reached at, e.g. "
                         "https://nas1.example:8080 or https://gw.example/loupe")
    return url.strip().rstrip("/")
