"""`loupe lab --nfs-server knfsd` as a performance engineer runs it: one command boots the knfsd
guest, where an NFSv3 and an NFSv4.2 kernel client (each in its own network namespace) run a
write, a read and a file-create workload as fio jobs, while the guest's Loupe agent (bpf.nfsd)
pushes to a Loupe on this host; each workload is a marked run, each client's fio JSON its result,
and the validation report must agree with fio: bytes, and files created (NFSv3 CREATE, NFSv4
OPEN asking to create). The agent's key table is cut to KEYS a second (LOUPE_NFSD_KEYS), so the
file creates overflow it as a flood of new files overflows the full-size one: each client's
counts must still be exact. A client whose report is forged 30 % high must be the one flagged;
Ctrl-C must leave no QEMU behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import guest
import pytest
from loupe_probes.bpf.testing import build_objects

pytestmark = pytest.mark.kernel

WORKLOADS = {"stream-write-light": "write", "stream-read-light": "read"}  # the direction each moves
CREATES = "filecreate"
KEYS = 32  # bpf.nfsd's (client, proto, op, file) keys a second; 16,384 by default


def lab_argv(data_dir: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "loupe.cli", "lab", "--nfs-server", "knfsd", "--data-dir", str(data_dir), *extra]


@pytest.fixture(scope="module")
def lab(guest_image, tmp_path_factory):
    err = build_objects()
    if err:
        pytest.skip(err) if "not installed" in err else pytest.fail(err)
    data = tmp_path_factory.mktemp("knfsd-lab")
    argv = ["--serve", "--clients", "2", "--seconds", "3", "--file-size", "4M", "--json"]
    for w in (*WORKLOADS, CREATES):
        argv += ["--workload", w]
    r = subprocess.run(lab_argv(data, *argv), capture_output=True, text=True, cwd=guest.REPO, timeout=900,
                       env={**os.environ, "LOUPE_NFSD_KEYS": str(KEYS)})
    assert r.returncode == 0, f"loupe lab exited {r.returncode}:\n{r.stderr[-4000:]}"
    return data, json.loads(r.stdout), r.stderr


def fio_bytes(path: str, direction: str) -> int:
    """What fio itself says it moved, from its own JSON."""
    doc = json.loads(Path(path).read_text())
    return sum(int(j[direction]["io_bytes"]) for j in doc["jobs"])


def test_each_clients_wire_bytes_agree_with_its_fio_json(lab):
    data, out, stderr = lab
    assert [r["workload"] for r in out["runs"]] == [*WORKLOADS, CREATES]
    for run in out["runs"][:len(WORKLOADS)]:
        rep, direction = run["report"], WORKLOADS[run["workload"]]
        assert rep["verdict"] == "pass" and rep["failed"] == [], rep
        wire = {c["client"]: c for c in rep["clients"]}
        assert sorted(wire) == ["10.99.0.11", "10.99.0.12"] and rep["unreported_clients"] == [], rep
        for c in run["clients"]:
            moved = fio_bytes(c["fio_json"], direction)
            other = fio_bytes(c["fio_json"], "read" if direction == "write" else "write")
            assert moved > 0 and other == 0, (run["workload"], c)
            row = wire[c["client"]]
            assert row["reported"]["bytes"] == moved, (row, moved)
            assert abs(row["wire"][f"{direction}_bytes"] / moved - 1) <= 0.02, (run["workload"], row)
            assert abs(row["bytes_agreement_pct"] - 100) <= 2, row
    assert "Stream Write light" in stderr and "Stream Read light" in stderr and ": pass" in stderr


def test_each_clients_creates_agree_with_its_fio_json_over_nfsv3_and_nfsv4(lab, loupe_server_on):
    """fio's filecreate: an NFSv3 client creates with CREATE, an NFSv4.2 one with OPEN asking to
    create (open_create); both are checked against what fio counted."""
    data, out, stderr = lab
    [run] = [r for r in out["runs"] if r["workload"] == CREATES]
    rep = run["report"]
    assert rep["verdict"] == "pass" and rep["failed"] == [], rep
    wire = {c["client"]: c for c in rep["clients"]}
    for c in run["clients"]:
        doc = json.loads(Path(c["fio_json"]).read_text())
        files = sum(int(j[d]["total_ios"]) for j in doc["jobs"] for d in ("read", "write"))
        row = wire[c["client"]]
        assert files > 0 and row["reported"]["create_ops"] == files, (row, files)
        assert abs(row["creates_agreement_pct"] - 100) <= 2, row
    server = loupe_server_on(data / "store")  # which op each client's creates came as
    for c in run["clients"]:
        q = server.get("/api/v1/query", metric="nfs.ops", by="op", where=[f"client={c['client']}", "op=create,open_create"],
                       start=str(int(rep["start"])), end=str(int(rep["end"])), step=1, top=10)
        ops = {x["key"]: round(sum(x["values"])) for x in q["series"]}
        want = "create" if c["nfs_version"] == "3" else "open_create"
        assert set(ops) == {want} and ops[want] == wire[c["client"]]["wire"]["create_ops"], (c, ops)


def test_creates_past_a_full_key_table_keep_their_client(lab, loupe_server_on):
    """The creates overflowed the agent's KEYS-key table: the excess was counted under its client
    and op without its file (the spill map), shown as "(other files)", and nothing went to the
    client-less (other) row."""
    data, out, _ = lab
    [run] = [r for r in out["runs"] if r["workload"] == CREATES]
    rep = run["report"]
    server = loupe_server_on(data / "store")
    span = dict(start=str(int(rep["start"])), end=str(int(rep["end"])), step=1, top=100)
    clients = server.get("/api/v1/query", metric="nfs.ops", by="client", **span)
    assert "(other)" not in {s["key"] for s in clients["series"]}, clients["series"]
    fileless = 0
    for c in run["clients"]:
        q = server.get("/api/v1/query", metric="nfs.ops", by="file",
                       where=[f"client={c['client']}", "op=create,open_create"], **span)
        files = {s["key"]: round(sum(s["values"])) for s in q["series"]}
        fileless += files.get("(other files)", 0)
        # a breakdown holding files the agent did not keep says it is approximate, and only then
        assert q["approximate"] == ("(other files)" in files), (c["client"], files)
    assert fileless > 0, "no create went past the key table: the test did not overflow it"


def test_the_clients_were_kernel_mounts_of_both_versions(lab):
    data, out, _ = lab
    for c, version in (("c1", "3"), ("c2", "4.2")):
        mount = (data / "guest" / f"mount-{c}.txt").read_text()
        assert mount.startswith("10.99.0.1:/srv/lab ") and f"vers={version}," in mount, mount
    assert {(c["name"], c["nfs_version"]) for c in out["runs"][0]["clients"]} == {("c1", "3"), ("c2", "4.2")}


def test_a_client_forged_30_pct_high_is_flagged(lab, loupe_server_on):
    data, out, _ = lab
    run, direction = out["runs"][0], WORKLOADS[out["runs"][0]["workload"]]
    server = loupe_server_on(data / "store")  # the lab's own store: its runs and what the agent sent
    forged = out["runs"][0]["clients"][1]
    doc = json.loads(Path(forged["fio_json"]).read_text())
    for j in doc["jobs"]:
        j[direction]["io_bytes"] = round(j[direction]["io_bytes"] * 1.3)
    server.post(f"/api/v1/runs/{run['run']}/results", {"format": "fio", "report": doc, "client": forged["client"]})
    rep = server.get(f"/api/v1/runs/{run['run']}/report", tolerance=2)
    assert rep["verdict"] == "fail" and rep["failed"] == [forged["client"]], rep
    [bad] = [c for c in rep["clients"] if c["client"] == forged["client"]]
    assert "wire bytes are 76.9 % of reported" in bad["reasons"][0], bad["reasons"]


def test_ctrl_c_while_the_guest_boots_kills_qemu(guest_image, tmp_path):
    p = subprocess.Popen(lab_argv(tmp_path, "--clients", "1", "--seconds", "1", "--workload", "stream-read-light"),
                         stderr=subprocess.PIPE, text=True, cwd=guest.REPO)
    try:
        said = ""
        while "QEMU pid" not in said:
            line = p.stderr.readline()
            assert line, f"loupe lab ended before booting the guest:\n{said}"
            said += line
        qemu = int(said.split("QEMU pid ")[1].split(",")[0])
        assert "loupe-knfsd-guest" in Path(f"/proc/{qemu}/cmdline").read_text()
        time.sleep(2)
        p.send_signal(signal.SIGINT)
        rest = p.communicate(timeout=60)[1]
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130 and "interrupted" in rest, rest
    deadline = time.monotonic() + 10
    while _is_qemu(qemu) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _is_qemu(qemu), f"QEMU {qemu} is still running"


def test_a_guest_that_dies_before_its_job_begins_is_booted_again(guest_image, tmp_path):
    """QEMU ending silently during a TCG boot (once seen in CI) costs one more boot, said on
    stderr with how QEMU ended; a second death is the lab's error, and nothing is left running."""
    p = subprocess.Popen(lab_argv(tmp_path, "--clients", "1", "--seconds", "1", "--workload", "stream-read-light"),
                         stderr=subprocess.PIPE, text=True, cwd=guest.REPO)
    pids, said = [], ""
    try:
        while len(pids) < 2:
            line = p.stderr.readline()
            assert line, f"loupe lab ended before booting the guest twice:\n{said}"
            said += line
            if "QEMU pid " in line:
                pids.append(int(line.split("QEMU pid ")[1].split(",")[0]))
                assert "loupe-knfsd-guest" in Path(f"/proc/{pids[-1]}/cmdline").read_text()
                os.kill(pids[-1], signal.SIGSEGV)  # as a crash of QEMU itself would end it
        rest = p.communicate(timeout=60)[1]
    finally:
        if p.poll() is None:
            p.kill()
    assert "QEMU killed by SIGSEGV; its job never said how it ended) before its job began; booting it again " \
           "(2 of 2)" in said, said
    assert p.returncode != 0 and "the knfsd guest stopped (QEMU killed by SIGSEGV" in rest, rest
    assert "booting it again" not in rest, rest
    assert not any(_is_qemu(pid) for pid in pids)


def _is_qemu(pid: int) -> bool:
    try:
        return "loupe-knfsd-guest" in Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return False

