"""BPF run-time stats as the probes hold them: always, one second in N, or never."""

from __future__ import annotations

import time

import pytest

from loupe_probes.bpf.libbpf import BpfError, BpfObject
from loupe_probes.bpf.probe import StatsHold, stats_mode
from loupe_probes.bpf.testing import REPO, require_bpf, unavailable
from loupe_probes.cpu import CpuProbe

EMPTY = REPO / "build" / "bpf" / "nfswire-hook.bpf.o"  # programs that do nothing


@pytest.mark.parametrize("mode, every, expect", [
    ("", "", ("on", 10)),
    ("on", "", ("on", 10)),
    (" Sampled ", "", ("sampled", 10)),
    ("sampled", "2", ("sampled", 2)),
    ("off", "3600", ("off", 3600)),
    ("always", "", "LOUPE_BPF_STATS='always': one of on, sampled, off"),
    ("sampled", "1", "LOUPE_BPF_STATS_EVERY='1': a whole number of seconds from 2 to 3600"),
    ("sampled", "ten", "LOUPE_BPF_STATS_EVERY='ten'"),
])
def test_the_mode_comes_from_the_environment_and_a_bad_value_names_its_variable(monkeypatch, mode, every, expect):
    monkeypatch.setenv("LOUPE_BPF_STATS", mode)
    monkeypatch.setenv("LOUPE_BPF_STATS_EVERY", every)
    if isinstance(expect, tuple):
        assert stats_mode() == expect
    else:
        with pytest.raises(BpfError, match=expect.replace("(", r"\(")):
            stats_mode()


class Probe:
    """Whether the kernel times BPF runs now: a run of an empty program counted or not
    (kernel.bpf_stats_enabled shows only what was written to it, not the holds)."""

    def __init__(self) -> None:
        self.obj = BpfObject(EMPTY)

    def on(self) -> str:
        before = self.obj.prog_stats()["nfswire_ingress"][0]
        self.obj.test_run("nfswire_ingress", bytes(74))
        return "1" if self.obj.prog_stats()["nfswire_ingress"][0] > before else "0"


@pytest.fixture
def timed():
    """The probe above, once nothing else holds the stats on."""
    require_bpf(EMPTY)
    p = Probe()
    try:
        if p.on() != "0":
            unavailable("BPF run-time stats are held on by another program here: this one's cannot be seen")
        yield p
    finally:
        p.obj.close()


def test_sampled_holds_the_stats_in_every_nth_second_and_counts_the_time_held(timed):
    hold = StatsHold()
    hold.acquire("sampled", 3)
    try:
        assert timed.on() == "0", "sampled: off until a sampled second"
        hold.tick(300.2)
        assert timed.on() == "1"
        time.sleep(0.2)
        hold.tick(300.9)  # the same second: still on
        assert timed.on() == "1"
        hold.tick(301.1)
        assert timed.on() == "0"
        held = hold.held()
        assert 0.2 <= held < 1.0, held
        time.sleep(0.2)
        hold.tick(302.5)
        assert hold.held() == held, "not held: the time stops"
        hold.tick(303.0)
        assert timed.on() == "1"
    finally:
        hold.release()
    assert timed.on() == "0", "released by its last user"


def _run(monkeypatch, timed: Probe, mode: str, seconds: int) -> tuple[list[dict], list[str], str]:
    monkeypatch.setenv("LOUPE_BPF_STATS", mode)
    monkeypatch.setenv("LOUPE_BPF_STATS_EVERY", "2")
    probe = CpuProbe("testhost")
    costs, timed_now = [], []
    try:
        assert probe.start(), probe.reason
        reason = probe.status()[0]["reason"]
        for ts in range(seconds):
            time.sleep(1 - time.time() % 1 + 0.05)  # just past a second's start, as the agent collects
            probe.collect(ts)
            costs.append(probe.status()[0].get("cost", {}))
            timed_now.append(timed.on())
    finally:
        probe.close()
    return costs, timed_now, reason


def test_a_probe_sampled_reports_its_run_rate_from_the_seconds_held(monkeypatch, timed):
    """sched_switch runs all the time: every report after the first second held has a
    rate, from that second, while the kernel timed BPF programs only half the time."""
    costs, sysctl, reason = _run(monkeypatch, timed, "sampled", 6)
    assert "run time sampled 1 s in 2 (LOUPE_BPF_STATS=sampled)" in reason
    assert sysctl.count("1") == 3 and sysctl.count("0") == 3, sysctl
    first = next(i for i, c in enumerate(costs) if "runs_per_s" in c)
    assert first <= 2, costs
    for c in costs[first:]:
        assert c["runs_per_s"] > 0 and c["ns_per_run"] > 0 and c["stats_every_s"] == 2, c
        assert c["stats_age_s"] < 2.5, c
    assert timed.on() == "0"


def test_a_probe_with_stats_off_reports_no_run_time_and_never_turns_them_on(monkeypatch, timed):
    costs, sysctl, reason = _run(monkeypatch, timed, "off", 3)
    assert "run time not measured (LOUPE_BPF_STATS=off)" in reason
    assert set(sysctl) == {"0"}
    for c in costs:
        assert not {"runs_per_s", "ns_per_run", "bpf_cpu_pct"} & set(c), c
        assert "map_fill" in c, "the rest of its cost is still reported"


def test_a_bad_mode_keeps_the_probe_off_with_the_variable_named(monkeypatch):
    require_bpf()
    monkeypatch.setenv("LOUPE_BPF_STATS", "sometimes")
    probe = CpuProbe("testhost")
    try:
        assert not probe.start()
        st = probe.status()[0]
        assert st["state"] == "error" and "LOUPE_BPF_STATS='sometimes'" in st["reason"], st
    finally:
        probe.close()
