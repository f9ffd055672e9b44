"""The BPF agent as a user meets it: `loupe serve` loading real probes into this kernel,
standing procfs down where a probe measures the same, suspend/resume from the API,
its own cost in the API and /metrics, and the reasons it gives when it cannot run."""

import mmap
import os
import shutil
import subprocess
import sys
import time

import httpx
import pytest

from loupe_probes.bpf.testing import REPO, require_bpf

AGENT = f"{os.uname().nodename}"


def _sources(s):
    return {x["name"]: x for x in s.get("/api/v1/sources")["sources"]}


def _direct_reads(mib=8):
    f = REPO / "build" / "disktest" / "agent.bin"
    f.parent.mkdir(parents=True, exist_ok=True)
    with open(f, "wb") as fh:
        fh.write(os.urandom(mib << 20))
        os.fsync(fh.fileno())
    buf = mmap.mmap(-1, 1 << 16)
    fd = os.open(f, os.O_RDONLY | os.O_DIRECT)
    try:
        for off in range(0, mib << 20, 1 << 16):
            os.preadv(fd, [buf], off)
    finally:
        os.close(fd)
        f.unlink()


def test_serve_runs_bpf_disk_and_procfs_stands_by(server_factory):
    require_bpf()
    s = server_factory(env={"LOUPE_LOCAL_SOURCES": "bpf.disk,procfs.disk"})
    src = s.wait_for(lambda: (lambda x: x if x.get("bpf.disk", {}).get("state") == "active" else None)(_sources(s)),
                     what="bpf.disk active")
    agent = src["bpf.disk"]["agent"]
    assert src["bpf.disk"]["suspendable"] is True
    s.wait_for(lambda: _sources(s)["procfs.disk"]["state"] == "standby", what="procfs.disk standby")
    assert "bpf.disk is active" in _sources(s)["procfs.disk"]["reason"]

    _direct_reads()
    hm = s.wait_for(lambda: (lambda h: h if sum(h["total"]) > 0 else None)(
        s.get("/api/v1/heatmap", metric="disk.ops", dim="latency", where="op=read", start="-60s")),
        what="disk read latency heat map")
    assert hm["cells"], hm
    # our 64 KiB reads, once their second is stored (other processes' reads may come first)
    s.wait_for(lambda: any(r["key"].startswith("64") or "64 KiB" in r.get("label", r["key"]) for r in s.get(
        "/api/v1/breakdown", metric="disk.ops", by="size", where="op=read", start="-60s")["rows"]),
        what="64 KiB reads in the size breakdown")

    cost = s.wait_for(lambda: _sources(s)["bpf.disk"]["cost"], what="bpf.disk cost")
    assert {"runs_per_s", "bpf_cpu_pct", "ns_per_run", "map_fill", "dropped_total"} <= set(cost)
    ag = s.get("/api/v1/sources")["agents"]
    assert any(a["agent"] == agent and a["rss_bytes"] > 0 and a["in_process"] for a in ag), ag
    text = s.http.get("/metrics").text
    assert f'loupe_source_runs_per_s{{agent="{agent}",source="bpf.disk"}}' in text

    s.post("/api/v1/sources/suspend", {"agent": agent, "name": "bpf.disk"})
    s.wait_for(lambda: _sources(s)["bpf.disk"]["state"] == "suspended", what="bpf.disk suspended")
    # suspended means detached: procfs takes over again, and the probe has no cost to report
    s.wait_for(lambda: _sources(s)["procfs.disk"]["state"] == "active", what="procfs.disk back")
    assert _sources(s)["bpf.disk"]["cost"] is None
    s.post("/api/v1/sources/resume", {"agent": agent, "name": "bpf.disk"})
    s.wait_for(lambda: _sources(s)["bpf.disk"]["state"] == "active", what="bpf.disk resumed")
    s.wait_for(lambda: _sources(s)["procfs.disk"]["state"] == "standby", what="procfs.disk standby again")


def test_without_privileges_the_agent_runs_procfs_only_and_says_why(server_factory, tmp_path):
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv (util-linux) to start the agent without capabilities")
    s = server_factory("--no-local-agent")
    token = (tmp_path / "data" / "ingest.token").read_text().strip()
    # An empty bounding set: the agent runs as uid 0 but holds no capabilities at all.
    r = subprocess.run(
        ["setpriv", "--bounding-set", "-all", "--inh-caps", "-all", "--",
         sys.executable, "-m", "loupe_probes.agent", "--server", s.base, f"--token={token}", "--once",
         "--sources", "bpf.disk,procfs"],
        capture_output=True, text=True, timeout=60,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    src = _sources(s)
    assert src["bpf.disk"]["state"] == "off" and "needs root" in src["bpf.disk"]["reason"], src["bpf.disk"]
    assert src["procfs.disk"]["state"] == "active"  # nothing supersedes it, so it keeps counting
    assert s.get("/api/v1/sources")["families"]["disk"] is True


def _unit_capabilities() -> list[str]:
    """The capabilities deploy/loupe-agent.service gives the agent (bounding set = ambient set)."""
    keys = {}
    for line in (REPO / "deploy" / "loupe-agent.service").read_text().splitlines():
        k, _, v = line.partition("=")
        keys[k.strip()] = v.split()
    assert keys["CapabilityBoundingSet"] == keys["AmbientCapabilities"], keys
    return keys["CapabilityBoundingSet"]


def test_the_systemd_units_capabilities_are_all_the_bpf_probes_need(server_factory, tmp_path):
    """The agent as loupe-agent.service runs it: uid 0 holding exactly the unit's capabilities.
    Every BPF probe this kernel can run loads; with CAP_BPF taken away, they say why."""
    require_bpf()
    if not shutil.which("setpriv"):
        pytest.fail("setpriv (util-linux) is missing")
    caps = _unit_capabilities()
    assert caps == ["CAP_BPF", "CAP_PERFMON", "CAP_NET_ADMIN", "CAP_SYS_RESOURCE", "CAP_DAC_READ_SEARCH"]
    s = server_factory("--no-local-agent")
    token = (tmp_path / "data" / "ingest.token").read_text().strip()

    def agent(held, until):
        """The agent holding only `held`, until the server's view of its BPF sources satisfies `until`."""
        bounding = "-all," + ",".join("+" + c.removeprefix("CAP_").lower() for c in held)
        log = open(tmp_path / f"agent-{len(held)}.log", "w")  # a file, not a pipe nobody drains
        proc = subprocess.Popen(
            ["setpriv", "--bounding-set", bounding, "--inh-caps", "-all", "--",
             sys.executable, "-m", "loupe_probes.agent", "--server", s.base, f"--token={token}",
             "--sources", "bpf.disk,bpf.cpu,bpf.net,bpf.nfswire,procfs.cpu"],  # procfs: a frame to carry the status
            stdout=log, stderr=subprocess.STDOUT)
        try:
            bpf = lambda: {n: x for n, x in _sources(s).items() if n.startswith("bpf.")}  # noqa: E731
            s.wait_for(lambda: until(bpf()), timeout=90, what=f"the BPF sources with {held}")
            return bpf()
        finally:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()

    # the NFS wire decoder's programs take the verifier some seconds: wait for it, not a fixed time
    src = agent(caps, lambda b: len(b) == 4 and all(x["state"] == "active" for x in b.values()))
    assert set(src) == {"bpf.disk", "bpf.cpu", "bpf.net", "bpf.nfswire"}
    assert "open_by_handle_at" not in (src["bpf.nfswire"]["reason"] or "")  # it can name files by handle
    # (the server shows the last agent's status until this one reports: wait for the reason itself)
    src = agent([c for c in caps if c != "CAP_DAC_READ_SEARCH"],
                lambda b: "open_by_handle_at" in (b.get("bpf.nfswire", {}).get("reason") or ""))
    nfswire = src["bpf.nfswire"]
    assert nfswire["state"] == "active" and "open_by_handle_at needs CAP_DAC_READ_SEARCH" in nfswire["reason"]
    src = agent([c for c in caps if c != "CAP_BPF"],
                lambda b: all(x["state"] == "off" and "needs root" in (x["reason"] or "") for x in b.values()))
    assert len(src) == 4
