import pytest

from loupe.usage import DAY, project


@pytest.mark.parametrize(("history", "free", "growth", "days"), [
    # 1 GB a day, 10 GB free: ten days
    ([(t, 10**9 * t / DAY) for t in range(0, 3600, 60)], 10 * 10**9, 1e9, 10.0),
    # a sawtooth (the write-ahead log filling and checkpointed) around the same growth
    ([(t, 10**9 * t / DAY + (5 * 10**6 if (t // 60) % 2 else 0)) for t in range(0, 7200, 60)], 10 * 10**9, 1e9, 10.0),
    # level (retention prunes as much as comes in): no day count
    ([(t, 5 * 10**9) for t in range(0, 3600, 60)], 10**9, 0.0, None),
    # shrinking
    ([(t, 5 * 10**9 - 1000 * t) for t in range(0, 3600, 60)], 10**9, -1000 * DAY, None),
])
def test_growth_and_days_until_full(history, free, growth, days):
    g, d = project(history, free)
    assert g == pytest.approx(growth, rel=0.02, abs=1.0)
    assert d == (None if days is None else pytest.approx(days, rel=0.02))


@pytest.mark.parametrize("history", [[], [(0, 1), (60, 2)], [(0, 1), (60, 2), (599, 3)]])
def test_not_known_until_ten_minutes_of_samples(history):
    assert project(history, 10**9) == (None, None)
