"""The wire decoder (``bpf.nfswire``) against the Linux kernel NFS server, in the
guest (Debian 12, stock 6.1 kernel): the verifier of an older kernel than the
host's must accept it, and on every interface at once (bridge and bridge ports
see each segment) it must count what knfsd served, while an NFSv3 and an
NFSv4.2 client write then read back a file with fio --direct=1: bytes and
READ/WRITE ops per client are fio's; every NFSv3 procedure is knfsd's own count
(/proc/net/rpc/nfsd), and no NFSv4 operation knfsd counted is missing; no reply
went unmatched and no pending call was lost
(``probes/nfswire/tests/guest_nfswire.py`` runs the decoder in the guest).
"""

from __future__ import annotations

import json
from collections import Counter

import guest
import pytest
from loupe_probes.bpf.testing import build_objects

pytestmark = pytest.mark.kernel

# exec: the scenario's SIGTERM must reach the decoder, not a shell around it
DECODER = "exec python3 /repo/probes/nfswire/tests/guest_nfswire.py /job/nfswire.json /job/nfswire.ready"
_boot: dict = {}  # one boot per session, even when the first test's setup fails


@pytest.fixture(scope="module")
def run(knfsd_guest, tmp_path_factory):
    err = build_objects()
    if err:
        pytest.skip(err) if "not installed" in err else pytest.fail(err)
    if "sc" not in _boot:
        # loading means verifying under TCG: minutes on a busy host, so wait for it to say so
        _boot["sc"] = knfsd_guest(job_dir=tmp_path_factory.mktemp("nfswire-guest"), background=DECODER,
                                  warmup=900, ready="/job/nfswire.ready", settle=3, timeout=1800)
    sc = _boot["sc"]
    raw = sc.run.text("nfswire.json")
    assert raw, f"the decoder wrote nothing:\n{sc.background_log}\nconsole tail:\n{sc.run.console[-4000:]}"
    sc.result = json.loads(raw)
    assert "error" not in sc.result, sc.result["error"]
    sc.run.check()
    return sc


def per_client(sc, what: str) -> Counter:
    """(client, proto, op) -> ops ("count") or bytes, over the run."""
    out: Counter = Counter()
    for r in sc.result["rows"]:
        d = r["dims"]
        out[(d["client"], d["proto"], d["op"])] += r[what]
    return out


def test_the_decoder_loads_on_the_guest_kernel_and_attaches_everywhere(run):
    res = run.result
    assert {"lnfs0", *(f"lnfs-{c.name}" for c in run.clients)} <= set(res["attached"]), res["attached"]
    print(f"bpf.nfswire loaded (verified) in {res['load_seconds']:.1f} s in the guest")


def test_bytes_and_read_write_ops_per_client_match_fio(run):
    ops, moved = per_client(run, "count"), per_client(run, "bytes")
    for c in run.clients:
        ip, proto = guest.client_addr(run.clients, c.name), f"v{c.version}"
        fio = guest.fio_bytes(run.fio[c.name])
        assert sum(n for (cl, _p, _op), n in moved.items() if cl == ip) == sum(fio.values()), (c, moved)
        assert {rw: moved[(ip, proto, rw)] for rw in ("read", "write")} == fio, (c, moved)
        assert {rw: ops[(ip, proto, rw)] for rw in ("read", "write")} == guest.fio_ios(run.fio[c.name]), (c, ops)


def test_every_nfsv3_procedure_is_knfsds_count_and_no_v4_op_is_missing(run):
    before, after = guest.nfsd_ops(run.nfsd_before), guest.nfsd_ops(run.nfsd_after)
    ops = per_client(run, "count")
    for c in run.clients:
        ip, proto = guest.client_addr(run.clients, c.name), f"v{c.version}"
        key = "v3" if c.version == "3" else "v4"
        want = {op: n - before[key].get(op, 0) for op, n in after[key].items() if n - before[key].get(op, 0)}
        got = {op: n for (cl, p, op), n in ops.items() if cl == ip and p == proto}
        if key == "v3":
            assert got == want, f"{c.name}: decoder {got}\nknfsd {want}"
            continue
        want.pop("null", None)  # NULL is not a COMPOUND op; knfsd counts it under proc4
        # knfsd counts every OPEN as one; the decoder those asking to create (fio creating its file) apart
        assert got.get("open_create", 0) >= 1, f"{c.name}: fio created its file, yet no open_create: {got}"
        got["open"] = got.get("open", 0) + got.pop("open_create")
        # knfsd stops counting a COMPOUND's ops at the first that fails; the decoder counts them all
        assert {op: got.get(op, 0) for op in ("sequence", "read", "write")} == \
            {op: want.get(op, 0) for op in ("sequence", "read", "write")}, f"{c.name}: decoder {got}\nknfsd {want}"
        assert not {op for op, n in want.items() if got.get(op, 0) < n}, f"{c.name}: decoder {got}\nknfsd {want}"


def test_no_reply_unmatched_and_no_call_lost(run):
    s, drops = run.result["stats"], run.result["drops"]
    assert s["calls"] > 0 and s["replies"] == s["calls"], s
    lost = {k: s[k] for k in ("unmatched", "overwritten", "expired", "partial", "desync", "resync")}
    assert lost == dict.fromkeys(lost, 0) and drops == 0, (s, drops)
