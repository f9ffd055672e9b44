"""Time ranges and tier choice.

Times are unix seconds. A range is half-open: [start, end).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime, timezone

_REL = re.compile(r"^-(\d+)([smhdw]?)$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}

TIERS = (("second", 1), ("minute", 60), ("hour", 3600))
# Automatic steps on the seconds tier above this are multiples of it: the store keeps
# per-element totals of the newest seconds per this many seconds (f_k_t).
SECOND_STEP_GRAIN = 5


class RangeError(ValueError):
    pass


def parse_time(text: str, now: int) -> int:
    """'now', '-10m', '-3600', unix seconds, or ISO 8601 -> unix second."""
    t = text.strip()
    if t == "now" or t == "":
        return now
    m = _REL.match(t)
    if m:
        return now - int(m.group(1)) * _UNITS[m.group(2)]
    if re.fullmatch(r"\d{9,11}(\.\d+)?", t):
        return int(float(t))
    try:
        dt = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise RangeError(
            f"cannot read time {text!r}: use 'now', a relative time like '-10m' or '-1h', "
            "unix seconds, or ISO 8601"
        ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp())


@dataclass(frozen=True)
class Window:
    start: int  # first point, aligned to step
    end: int  # exclusive
    step: int
    tier: str

    @property
    def points(self) -> int:
        return (self.end - self.start) // self.step

    @property
    def seconds(self) -> int:
        return self.end - self.start


def choose_window(
    start: int,
    end: int,
    *,
    now: int,
    points: int = 300,
    step: int | None = None,
    retain: dict[str, int],
    max_points: int = 5000,
    whole: bool = False,
) -> Window:
    """Pick the finest tier that still holds `start` and whose resolution fits the step.

    With `whole`, the window is one point spanning the range: exact on the seconds tier
    (chosen whenever it still holds `start`), widened to whole minutes or hours beyond it.
    """
    if end <= start:
        raise RangeError(f"empty range: end ({end}) must be after start ({start})")
    if points < 1:
        raise RangeError("points must be at least 1")
    want = step if step else max(1, math.ceil((end - start) / points))
    if want < 1:
        raise RangeError("step must be at least 1 second")
    tier, res = TIERS[-1]
    for name, resolution in TIERS:
        holds = start >= now - retain[name]
        fits = want < resolution * 60 or name == "hour" or whole
        if holds and fits:
            tier, res = name, resolution
            break
    if whole:
        a = start - start % res
        b = end + (-end % res)
        return Window(a, b, b - a, tier)
    s = max(want, res)
    s = math.ceil(s / res) * res
    if tier == "second" and not step and s > SECOND_STEP_GRAIN:
        s = math.ceil(s / SECOND_STEP_GRAIN) * SECOND_STEP_GRAIN
    a = start - start % s
    b = end if (end - a) % s == 0 else end + (s - (end - a) % s)
    if (b - a) // s > max_points:
        raise RangeError(f"too many points ({(b - a) // s}); at most {max_points}: ask for a larger step")
    return Window(a, b, s, tier)
