"""The knfsd probe (``bpf.nfsd``) against a real kernel NFS server, end to end.

One boot of the guest (Debian 12, stock 6.1 kernel): Loupe's agent runs there
with ``--sources bpf.nfsd`` and pushes to a real ``loupe serve`` on this host
while an NFSv3 and an NFSv4.2 client (each in its own network namespace) write
then read back a file with fio --direct=1. Then, through the backend's HTTP API,
the numbers must be fio's own (bytes per client, read/write op counts per
client, the file under the export, the share) and knfsd's own (every procedure
and every NFSv4 operation, from /proc/net/rpc/nfsd). After the scenario, in the
same boot, a rename over NFS checks the optional fexit/d_move program.
"""

from __future__ import annotations

import json
import time

import guest
import pytest
from loupe.catalog import SIZE
from loupe_probes.bpf.testing import build_objects

pytestmark = pytest.mark.kernel

GUEST_HOST = "knfsd-guest"
# The agent starts before the scenario and the clients wait until the backend has
# heard that bpf.nfsd is active: loading and verifying the probe takes ~20 s under
# TCG, longer than a fixed warm-up should guess.
START_AGENT = """
modprobe nfsd
python3 -m loupe_probes.agent --server {url} --token={token} --sources bpf.nfsd --host {host} \\
    > /job/agent.log 2>&1 &
echo $! > /tmp/loupe-agent.pid
python3 - {url} {api_token} <<'EOF' > /job/agent-ready.log 2>&1
import json, sys, time, httpx
deadline = time.monotonic() + 180
while time.monotonic() < deadline:
    try:
        up = [s for s in httpx.get(sys.argv[1] + "/api/v1/sources", timeout=5, headers=dict(Authorization="Bearer " + sys.argv[2])).json()["sources"]
              if s["name"] == "bpf.nfsd" and s["state"] == "active"]
        if up:
            print("ready", json.dumps(up[0])); break
    except Exception as e:
        print(e)
    time.sleep(1)
EOF
"""
# Stop the agent once it has delivered three more seconds after the clients
# finished, with nothing queued: a loaded TCG guest may run seconds behind.
STOP_AGENT = """
python3 - {url} {api_token} <<'EOF' > /job/agent-drained.log 2>&1
import sys, time, httpx
def agent():
    a = [a for a in httpx.get(sys.argv[1] + "/api/v1/sources", timeout=5, headers=dict(Authorization="Bearer " + sys.argv[2])).json()["agents"]]
    return a[0] if a else None
first = agent()["last_seen"]
deadline = time.monotonic() + 90
while time.monotonic() < deadline:
    a = agent()
    if a["last_seen"] >= first + 3 and a["queue_frames"] == 0:
        print("drained", a); break
    time.sleep(1)
EOF
pid=$(cat /tmp/loupe-agent.pid)
kill -TERM "$pid"
n=0; while kill -0 "$pid" 2>/dev/null && [ "$n" -lt 20 ]; do sleep 0.5; n=$((n + 1)); done
kill -KILL "$pid" 2>/dev/null
"""
RENAME_CHECK = """
mkdir -p /mnt/loupe-rn
exportfs -o rw,sync,fsid=1,no_root_squash,no_subtree_check,insecure 127.0.0.1:/srv/export
rpc.nfsd 2
if mount -t nfs -o vers=4.2,proto=tcp 127.0.0.1:/srv/export /mnt/loupe-rn; then
    python3 /repo/probes/nfsd/tests/guest_rename_check.py /mnt/loupe-rn /srv/export > /job/rename.json 2> /job/rename.log
    umount /mnt/loupe-rn
else
    echo "mount over loopback failed" > /job/rename.log
fi
rpc.nfsd 0
"""


@pytest.fixture(scope="module")
def run(knfsd_guest, loupe_server, tmp_path_factory):
    err = build_objects()
    if err:
        pytest.skip(err) if "not installed" in err else pytest.fail(err)
    start = START_AGENT.format(url=loupe_server.guest_url, token=loupe_server.token, host=GUEST_HOST,
                              api_token=loupe_server.api_token)
    stop = STOP_AGENT.format(url=loupe_server.guest_url, api_token=loupe_server.api_token)
    sc = knfsd_guest(job_dir=tmp_path_factory.mktemp("nfsd-probe"), before=start, after=stop + RENAME_CHECK)
    sc.run.check()
    sc.server = loupe_server
    sc.agent_log = sc.run.text("agent.log")
    ready = [line for line in (sc.run.text("agent-ready.log") or "").splitlines() if line.startswith("ready ")]
    assert ready, (f"the backend never heard bpf.nfsd active:\n{sc.run.text('agent-ready.log')}\n"
                   f"agent log:\n{sc.agent_log}")
    sc.active_status = json.loads(ready[0].removeprefix("ready "))
    return sc


def series(server, metric: str, by: str, *where: str) -> dict[str, float]:
    """Per-element totals over the run: per-second values (step=1) summed."""
    now = int(time.time())
    q = server.get("/api/v1/query", metric=metric, by=by, where=[f"host={GUEST_HOST}", *where],
                   start=str(now - 1800), end=str(now + 300), step=1, top=100)
    assert not q.get("approximate"), q
    return {s["key"]: round(sum(s["values"])) for s in q["series"]}


def settled(server, expect_bytes: dict[str, int], timeout: float = 30) -> dict[str, float]:
    """nfs.bytes by client once every second the agent sent is stored."""
    deadline = time.monotonic() + timeout
    while True:
        got = series(server, "nfs.bytes", "client")
        if got == expect_bytes or time.monotonic() > deadline:
            return got
        time.sleep(1)


def server_path(sc, client) -> str:
    """Where fio's file is on the server: the export the client mounted + fio's
    directory below the mount point + fio's file name (from fio's own report)."""
    export, mountpoint = sc.mounts[client.name].split()[:2]
    opts = sc.fio[client.name]["global options"]
    rel = opts["directory"].removeprefix(mountpoint).strip("/")
    return "/".join(p for p in (export.split(":", 1)[1].rstrip("/"), rel, opts["filename"]) if p)


def test_probe_active_in_the_guest_with_its_optional_program(run):
    """Active while the clients ran, with every optional program (fexit/d_move)
    attached: the stock kernel has BPF trampolines; no update refused for a full map."""
    st = run.active_status
    assert (st["name"], st["state"], st["families"]) == ("bpf.nfsd", "active", ["nfs"]), st
    assert "optional" not in st["reason"], st
    assert st["cost"]["dropped_total"] == 0, st


def test_bytes_and_ops_per_client_match_fio(run):
    sc = run
    expect = {guest.client_addr(sc.clients, c.name): sum(guest.fio_bytes(sc.fio[c.name]).values())
              for c in sc.clients}
    got = settled(sc.server, expect)
    assert got == expect, f"nfs.bytes by client {got}, fio moved {expect}; agent log:\n{sc.agent_log}"
    for c in sc.clients:
        ip = guest.client_addr(sc.clients, c.name)
        ios, moved = guest.fio_ios(sc.fio[c.name]), guest.fio_bytes(sc.fio[c.name])
        ops = series(sc.server, "nfs.ops", "op", f"client={ip}")
        assert {op: ops.get(op, 0) for op in ("read", "write")} == ios, (c, ops)
        by_op = series(sc.server, "nfs.bytes", "op", f"client={ip}")
        assert by_op == moved, (c, by_op)
        # the protocol each mounted with: every READ/WRITE under it
        protos = series(sc.server, "nfs.ops", "proto", f"client={ip}", "op=read,write")
        assert protos == {f"v{c.version}": sum(ios.values())}, (c, protos)


def test_file_and_share_are_fios_file_under_the_export(run):
    sc = run
    settled(sc.server, {guest.client_addr(sc.clients, c.name): sum(guest.fio_bytes(sc.fio[c.name]).values())
                        for c in sc.clients})
    for c in sc.clients:
        ip = guest.client_addr(sc.clients, c.name)
        path = server_path(sc, c)
        export = sc.mounts[c.name].split()[0].split(":", 1)[1]
        files = series(sc.server, "nfs.bytes", "file", f"client={ip}")
        assert files == {path: sum(guest.fio_bytes(sc.fio[c.name]).values())}, (c, files)
        ops = series(sc.server, "nfs.ops", "op", f"client={ip}", f"file={path}")
        assert {op: ops.get(op, 0) for op in ("read", "write")} == guest.fio_ios(sc.fio[c.name]), (c, ops)
        shares = series(sc.server, "nfs.bytes", "share", f"client={ip}")
        assert shares == {export: sum(guest.fio_bytes(sc.fio[c.name]).values())}, (c, shares)


def test_every_procedure_and_v4_operation_matches_knfsd(run):
    """Each NFSv3 procedure and each op inside NFSv4 COMPOUNDs under its own name,
    as many as knfsd's own counters say (only c1 speaks v3, only c2 v4). knfsd counts
    every OPEN as one; the probe names those asking to create `open_create`, and
    fio creating its file is at least one."""
    sc = run
    settled(sc.server, {guest.client_addr(sc.clients, c.name): sum(guest.fio_bytes(sc.fio[c.name]).values())
                        for c in sc.clients})
    before, after = guest.nfsd_ops(sc.nfsd_before), guest.nfsd_ops(sc.nfsd_after)
    for c in sc.clients:
        ip = guest.client_addr(sc.clients, c.name)
        key = "v3" if c.version == "3" else "v4"
        want = {op: n - before[key].get(op, 0) for op, n in after[key].items() if n - before[key].get(op, 0)}
        got = series(sc.server, "nfs.ops", "op", f"client={ip}", f"proto=v{c.version}")
        if key == "v4":
            want.pop("null", None)  # NULL is not a COMPOUND op; knfsd counts it under proc4
            assert want.get("sequence", 0) >= sum(guest.fio_ios(sc.fio[c.name]).values())
            assert got.get("open_create", 0) >= 1, f"{c.name}: fio created its file, yet no open_create: {got}"
            got["open"] = got.get("open", 0) + got.pop("open_create")
        else:
            assert "open_create" not in got, got
        assert got == want, f"{c.name}: probe {got}\nknfsd {want}"


def test_latency_and_size_histograms(run):
    sc = run
    settled(sc.server, {guest.client_addr(sc.clients, c.name): sum(guest.fio_bytes(sc.fio[c.name]).values())
                        for c in sc.clients})
    now = int(time.time())
    for c in sc.clients:
        ip = guest.client_addr(sc.clients, c.name)
        where = [f"host={GUEST_HOST}", f"client={ip}", "op=write"]
        ios = guest.fio_ios(sc.fio[c.name])["write"]
        for dim in ("latency", "size", "offset"):
            hm = sc.server.get("/api/v1/heatmap", metric="nfs.ops", dim=dim, where=where, step=1,
                               start=str(now - 1800), end=str(now + 300))
            per_bucket: dict[int, float] = {}
            for _t, b, rate in hm["cells"]:
                idx = hm["buckets"][int(b)]["index"]
                per_bucket[idx] = per_bucket.get(idx, 0) + rate
            assert round(sum(per_bucket.values())) == ios, (c, dim, per_bucket)
            if dim == "size":  # every WRITE is one fio block
                assert {k: round(v) for k, v in per_bucket.items()} == {SIZE.bucket_of(c.bs): ios}, (c, per_bucket)


def test_rename_over_nfs_renames_the_file(run):
    raw = run.run.text("rename.json")
    assert raw, f"the rename check wrote nothing: {run.run.text('rename.log')}"
    r = json.loads(raw)
    assert r["started"] and r["notes"] == [], r
    assert r["first"] == {f"{r['export']}/rn/before.bin": 4096}, r
    assert r["second"] == {f"{r['export']}/rn/after.bin": 8192}, r
    assert r["stats"]["renamed"] >= 1, r
