"""The knfsd guest as the NFS server probe's tests will use it: one boot that

- checks the agent can run there (libbpf.so.1 loads, ``loupe_probes.agent`` imports, BTF),
- runs the Loupe agent in the background, pushing to a real backend on the host,
- runs the knfsd + fio scenario (an NFSv3 and an NFSv4.2 client in their own netns),
- records the kernel facts (tracepoint formats, which BPF attach kinds load).

The tests below each check one part of that run.
"""

from __future__ import annotations

import json

import guest
import pytest

pytestmark = pytest.mark.kernel

GUEST_HOST = "knfsd-guest"  # the --host the guest's agent reports as

ENV_CHECKS = """
python3 -c "import ctypes; ctypes.CDLL('libbpf.so.1')" > /job/env-libbpf.log 2>&1; echo $? > /job/env-libbpf.rc
python3 -m loupe_probes.agent --help > /job/env-agent.log 2>&1; echo $? > /job/env-agent.rc
test -r /sys/kernel/btf/vmlinux; echo $? > /job/env-btf.rc
"""


@pytest.fixture(scope="module")
def booted(knfsd_guest, loupe_server, tmp_path_factory):
    job = tmp_path_factory.mktemp("knfsd-main")
    obj = guest.compile_attach_check(job)
    agent = (f"exec python3 -m loupe_probes.agent --server {loupe_server.guest_url} "
             f"--token={loupe_server.token} --sources procfs --host {GUEST_HOST}")
    sc = knfsd_guest(job_dir=job, background=agent, before=ENV_CHECKS,
                     after=guest.kernel_facts_script(obj.name if obj else None))
    # What the backend heard from the guest (the source states may already read "off":
    # the agent stopped when the scenario ended).
    sc.sources = loupe_server.get("/api/v1/sources")
    sc.net_by_interface = loupe_server.get("/api/v1/breakdown", metric="net.bytes", by="interface",
                                           where=f"host={GUEST_HOST}", start="-30m", top=100)
    sc.attach_object = obj
    return sc


def _rc(sc, name):
    text = sc.run.text(name)
    assert text is not None, f"the guest did not write {name}; console tail:\n{sc.run.console[-3000:]}"
    return int(text.strip())


def test_scenario_moves_the_expected_bytes_per_client(booted):
    sc = booted
    sc.run.check()
    for c in sc.clients:
        assert c.name in sc.fio, f"no fio JSON from {c.name}"
        jobs = {j["jobname"]: j for j in sc.fio[c.name]["jobs"]}
        assert set(jobs) == {"write", "read"}
        for name, j in jobs.items():
            assert j["error"] == 0, f"{c.name}: fio job {name} failed: {j['error']}"
        # --direct=1: exactly the file size goes out, then comes back, in bs-sized I/Os.
        assert jobs["write"]["write"]["io_bytes"] == c.size
        assert jobs["read"]["read"]["io_bytes"] == c.size
        assert jobs["write"]["write"]["total_ios"] == c.size // c.bs
        assert jobs["read"]["read"]["total_ios"] == c.size // c.bs
        assert guest.fio_bytes(sc.fio[c.name]) == {"read": c.size, "write": c.size}


def test_both_nfs_versions_mounted_and_served_by_knfsd(booted):
    sc = booted
    sc.run.check()
    assert {"3", "4.2"} <= {c.version for c in sc.clients}
    for c in sc.clients:
        line = sc.mounts[c.name]
        assert f"vers={c.version}," in line, f"{c.name} asked for NFSv{c.version}: {line!r}"
        assert line.startswith(f"{guest.SERVER_ADDR}:/srv/export "), line
        if c.version.startswith("4"):  # v4 mounts name the client's own address
            assert f"clientaddr={guest.client_addr(sc.clients, c.name)}," in line, line
    # knfsd's own counters: each fio I/O was exactly one READ/WRITE of its client's version.
    before, after = guest.nfsd_counts(sc.nfsd_before), guest.nfsd_counts(sc.nfsd_after)
    for key in ("v3", "v4"):
        mine = [c for c in sc.clients if c.version.startswith(key[1])]
        for op in ("read", "write"):
            delta = after[key][op] - before[key][op]
            assert delta == sum(c.size // c.bs for c in mine), f"knfsd counted {delta} NFS{key} {op.upper()}s"
    for op in ("read", "write"):
        delta = after["bytes"][op] - before["bytes"][op]
        assert delta == sum(c.size for c in sc.clients), f"knfsd {op} {delta} bytes"


def test_the_agent_runs_in_the_guest_and_reaches_the_host(booted):
    sc = booted
    assert _rc(sc, "env-libbpf.rc") == 0, sc.run.text("env-libbpf.log")
    assert _rc(sc, "env-agent.rc") == 0, sc.run.text("env-agent.log")
    assert "--server" in sc.run.text("env-agent.log")
    assert _rc(sc, "env-btf.rc") == 0, "no /sys/kernel/btf/vmlinux in the guest"
    assert sc.background_log is not None and sc.background_rc is not None, "the agent was not started"
    mine = [s for s in sc.sources["sources"] if s["host"] == GUEST_HOST]
    assert mine, (f"the backend heard nothing from the guest's agent; sources: {sc.sources}\n"
                  f"agent log:\n{sc.background_log}")
    assert {s["name"] for s in mine} >= {"procfs.cpu", "procfs.net"}
    # Not just status: the guest's per-second network rows are stored, the scenario's
    # bridge (lnfs0) and client veths (lnfs-<name>) among them.
    net = sc.net_by_interface
    busy = {r["key"] for r in net["rows"] if r["value"] > 0}
    assert "lnfs0" in busy and {f"lnfs-{c.name}" for c in sc.clients} <= busy, (
        f"network rows from the guest: {net['rows']}\nagent log:\n{sc.background_log}")


def test_kernel_facts_match_the_recorded_testdata(booted):
    """tests/kernel/testdata is what the probe was written against; re-record with
    `python3 tests/kernel/guest.py record` when the guest's kernel changes."""
    sc = booted
    assert _rc(sc, "facts.rc") == 0, sc.run.text("facts.log")
    facts = sc.run.job / "facts"
    recorded = guest.TESTDATA
    for system, events in (("sunrpc", ["svc_stats_latency"]),
                           ("nfsd", ["nfsd_compound", "nfsd_compound_status", "nfsd_read_start",
                                     "nfsd_read_done", "nfsd_write_start", "nfsd_write_done"])):
        live = _formats((facts / f"events-{system}.txt").read_text())
        kept = _formats((recorded / f"events-{system}.txt").read_text())
        for ev in events:
            assert ev in live, f"the guest kernel has no {system}:{ev} tracepoint"
            assert live[ev] == kept.get(ev), (f"{system}:{ev} differs from tests/kernel/testdata; "
                                              "re-record with: python3 tests/kernel/guest.py record")
    if sc.attach_object is None:
        pytest.skip("no clang on the host: BPF attach kinds not checked")
    attach = json.loads((facts / "bpf-attach.json").read_text())
    # The probe's baseline: a plain tracepoint and a raw tracepoint on the sunrpc module attach.
    assert attach["tp_svc_stats_latency"]["attached"], attach["tp_svc_stats_latency"]
    assert attach["raw_tp_svc_stats_latency"]["attached"], attach["raw_tp_svc_stats_latency"]
    assert attach == json.loads((recorded / "bpf-attach.json").read_text()), (
        "the attach kinds this kernel takes changed; re-record with: python3 tests/kernel/guest.py record")


def _formats(text: str) -> dict[str, str]:
    """Tracepoint name -> its format text, from a concatenation of format files."""
    out = {}
    for block in text.split("\nname: "):
        block = block.removeprefix("name: ").strip()
        if block:
            name, _, rest = block.partition("\n")
            out[name.strip()] = rest
    return out
