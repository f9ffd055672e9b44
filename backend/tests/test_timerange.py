"""Tier and step choice for a range (table-driven)."""

from __future__ import annotations

import pytest

from loupe.timerange import RangeError, choose_window, parse_time

NOW = 1_800_000_000  # a multiple of 3600
RETAIN = {"second": 48 * 3600, "minute": 30 * 86400, "hour": 365 * 86400}


@pytest.mark.parametrize("span, points, step, want", [
    (60, 300, None, ("second", 1, 60)),            # a minute: every second
    (600, 300, None, ("second", 2, 300)),          # 10 min: 2 s steps (at most the grain: kept)
    (1500, 300, None, ("second", 5, 300)),         # 25 min: 5 s
    (3600, 300, None, ("second", 15, 240)),        # an hour: 12 s would be asked; multiples of 5 s instead
    (3600, 300, 12, ("second", 12, 300)),          # an explicit step is kept
    (7200, 300, None, ("second", 25, 288)),
    (86400, 300, None, ("minute", 300, 288)),      # a day: the minute tier
    (86400, 2880, None, ("second", 30, 2880)),
    (7 * 86400, 300, None, ("minute", 2040, 297)),  # a week: whole minutes per point
    (90 * 86400, 300, None, ("hour", 3600 * 8, 270)),  # beyond the minutes retention: hours
])
def test_window_tier_step_and_points(span, points, step, want):
    w = choose_window(NOW - span, NOW, now=NOW, points=points, step=step, retain=RETAIN)
    assert (w.tier, w.step, w.points) == want
    assert w.start <= NOW - span and w.end >= NOW and w.start % w.step == 0


def test_beyond_seconds_retention_the_minute_tier_answers():
    w = choose_window(NOW - 3 * 86400, NOW - 3 * 86400 + 600, now=NOW, points=300, retain=RETAIN)
    assert w.tier == "minute" and w.step == 60


@pytest.mark.parametrize("start, end, msg", [(NOW, NOW, "empty range"), (NOW, NOW - 5, "empty range")])
def test_bad_ranges_name_the_problem(start, end, msg):
    with pytest.raises(RangeError, match=msg):
        choose_window(start, end, now=NOW, retain=RETAIN)


def test_too_many_points_names_the_limit():
    with pytest.raises(RangeError, match="too many points"):
        choose_window(NOW - 86400, NOW, now=NOW, step=1, retain=RETAIN)


@pytest.mark.parametrize("text, want", [("now", NOW), ("-10m", NOW - 600), ("-1h", NOW - 3600),
                                        ("1700000000", 1700000000), ("2027-01-15T00:00:00Z", 1799971200)])
def test_parse_time(text, want):
    assert parse_time(text, NOW) == want


def test_parse_time_names_the_accepted_forms():
    with pytest.raises(RangeError, match="relative time"):
        parse_time("yesterday", NOW)
