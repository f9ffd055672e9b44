"""Benchmark runs: client results in (fio, JSON, CSV), the report against the wire, and the API."""

import json
import shutil
import subprocess
import time

import pytest
from factories import nfs_frame, signed_in_app
from loupe.runs import ClientResult, ResultsError, Wire, build_report, parse_csv, parse_fio, parse_simple
from loupe_probes.bpf.testing import unavailable

TOKEN = "t"


# ------------------------------------------------------------------ parsing
def test_a_real_fio_json_report_is_read_as_the_client_reported_it(tmp_path):
    if not shutil.which("fio"):
        unavailable("fio is not installed (make deps installs it)")
    out = subprocess.run(
        ["fio", "--name=mix", f"--filename={tmp_path / 'f'}", "--size=2M", "--bs=8k", "--rw=randrw",
         "--rwmixread=60", "--ioengine=psync", "--numjobs=2", "--output-format=json"],
        capture_output=True, text=True, check=True).stdout
    doc = json.loads(out[out.index("{"):])
    jobs = doc["jobs"]
    [r] = parse_fio(doc, "10.0.0.7")
    assert r.client == "10.0.0.7" and len(jobs) == 2
    assert r.read_bytes == sum(j["read"]["io_bytes"] for j in jobs) > 0
    assert r.write_bytes == sum(j["write"]["io_bytes"] for j in jobs) > 0
    assert r.read_ops == sum(j["read"]["total_ios"] for j in jobs) == r.read_bytes // 8192
    assert r.bytes == 2 * 2 * 1024 * 1024  # each job covers its 2 MiB file once


def test_fios_filecreate_jobs_count_files_created_not_bytes(tmp_path):
    """fio's filecreate engine reports each created (empty) file as a write of `bs` bytes."""
    if not shutil.which("fio"):
        unavailable("fio is not installed (make deps installs it)")
    job = tmp_path / "job.fio"
    job.write_text(f"[global]\nioengine=filecreate\ndirectory={tmp_path}\nnrfiles=30\nfilesize=4k\nbs=4k\n"
                   "thread=1\nnumjobs=2\nrw=write\n[fc]\n[plain]\nioengine=psync\nnumjobs=1\nnrfiles=1\nfilesize=64k\n"
                   "bs=16k\n")
    out = subprocess.run(["fio", "--output-format=json", str(job)], capture_output=True, text=True, check=True).stdout
    doc = json.loads(out[out.index("{"):])
    made = [f for f in tmp_path.iterdir() if f.name.startswith("fc.")]
    assert len(made) == 60 and all(f.stat().st_size == 0 for f in made)
    assert sum(j["write"]["total_ios"] for j in doc["jobs"] if j["jobname"] == "fc") == 60  # fio counts them as I/O
    [r] = parse_fio(doc, "10.0.0.7")
    assert (r.create_ops, r.write_ops, r.read_bytes) == (60, 4, 0)
    assert r.write_bytes == 64 * 1024  # only the psync job's: its engine is its own, not the global filecreate


def test_fio_client_server_reports_give_one_result_per_host():
    job = lambda host, rb, wb: {"jobname": "j", "hostname": host, "read": {"io_bytes": rb, "total_ios": rb // 4096, "runtime": 5000},  # noqa: E731
                                "write": {"io_bytes": wb, "total_ios": wb // 4096, "runtime": 4000}}
    doc = {"client_stats": [job("10.0.0.1", 8192, 0), job("10.0.0.1", 4096, 4096), job("10.0.0.2", 0, 40960),
                            dict(job("All clients", 1, 1), jobname="All clients")]}
    got = {r.client: r for r in parse_fio(doc)}
    assert set(got) == {"10.0.0.1", "10.0.0.2"}
    assert (got["10.0.0.1"].read_bytes, got["10.0.0.1"].write_ops, got["10.0.0.1"].runtime) == (12288, 1, 5.0)
    assert got["10.0.0.2"].write_bytes == 40960


@pytest.mark.parametrize("doc, client, message", [
    ({"jobs": []}, "c", "no jobs"),
    ({"jobs": [{"read": {"io_bytes": 1, "total_ios": 1}}]}, None, "say which client"),
    ({"jobs": [{"read": {"io_kbytes": 1}}]}, "c", "no io_bytes"),
    ({"jobs": [{"read": {"io_bytes": -5}}]}, "c", "jobs[0].read.io_bytes: expected a count >= 0"),
    ({"client_stats": [{"jobname": "j"}]}, None, "client_stats[0] has no hostname"),
    ([1, 2], "c", "expected a JSON object"),
])
def test_bad_fio_reports_name_the_problem(doc, client, message):
    with pytest.raises(ResultsError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_fio(doc, client)


@pytest.mark.parametrize("rows, message", [
    ([], "non-empty list"),
    ([{"read_bytes": 1}], r"clients\[0\].client"),
    ([{"client": "a", "read_bytes": "lots"}], r"clients\[0\].read_bytes: expected a count"),
    ([{"client": "a", "colour": 1}], "unknown field"),
    ([{"client": "a"}, {"client": "a"}], "appears twice"),
])
def test_bad_simple_results_name_the_problem(rows, message):
    with pytest.raises(ResultsError, match=message):
        parse_simple(rows)


def test_csv_results_and_their_errors():
    rows = parse_csv("client,read_bytes,write_bytes,read_ops,write_ops,runtime\n10.0.0.1,100,200,1,2,9.5\n"
                     "10.0.0.2,0,4096,0,1,\n")
    assert [(r.client, r.bytes, r.ops, r.runtime) for r in rows] == [("10.0.0.1", 300, 3, 9.5),
                                                                   ("10.0.0.2", 4096, 1, None)]
    rows = parse_csv("client,read_bytes,write_bytes,read_ops,write_ops,create_ops\n10.0.0.3,0,0,0,0,812\n")
    assert [(r.client, r.bytes, r.ops, r.create_ops) for r in rows] == [("10.0.0.3", 0, 0, 812)]
    with pytest.raises(ResultsError, match="CSV line 2: create_ops is not a number: 'many'"):
        parse_csv("client,read_bytes,write_bytes,read_ops,write_ops,create_ops\na,0,0,0,0,many\n")
    with pytest.raises(ResultsError, match="header lacks write_ops"):
        parse_csv("client,read_bytes,write_bytes,read_ops\n1,1,1,1\n")
    with pytest.raises(ResultsError, match="CSV line 3: read_ops is not a number: 'x'"):
        parse_csv("client,read_bytes,write_bytes,read_ops,write_ops\na,1,1,1,1\nb,1,1,x,1\n")
    with pytest.raises(ResultsError, match="no rows"):
        parse_csv("")


# ------------------------------------------------------------------ the report
S, E = 1000, 1060


@pytest.mark.parametrize("name, reported, wire, verdict, failed, reason", [
    ("agree", [ClientResult("a", 1000, 1000, 10, 10)], {"a": Wire(990, 1005, 10, 10, S, E - 1)}, "pass", [], None),
    ("forged 30 % high", [ClientResult("a", 0, 1000, 0, 10), ClientResult("b", 0, 1300, 0, 13)],
     {"a": Wire(0, 1000, 0, 10, S, E - 1), "b": Wire(0, 1000, 0, 10, S, E - 1)}, "fail", ["b"],
     "wire bytes are 76.9 % of reported"),
    ("reads served from the client's cache", [ClientResult("a", 5000, 0, 50, 0)], {"a": Wire(1000, 0, 10, 0, S, S + 5)},
     "fail", ["a"], "4,000 reported read bytes never reached the server"),
    ("silent client", [ClientResult("a", 100, 0, 1, 0)], {}, "fail", ["a"], "no NFS reads or writes"),
    ("ops split by rsize: bytes agree, ops not checked", [ClientResult("a", 4096, 0, 1, 0)],
     {"a": Wire(4096, 0, 4, 0, S, S)}, "pass", [], None),
    ("no results yet", [], {"a": Wire(1, 0, 1, 0, S, S)}, "no results", [], None),
    ("creates agree", [ClientResult("a", create_ops=1000)], {"a": Wire(first=S, last=S + 9, create_ops=1000)},
     "pass", [], None),
    ("creates forged 30 % high", [ClientResult("a", create_ops=1300)], {"a": Wire(first=S, last=S, create_ops=1000)},
     "fail", ["a"], "wire creates are 76.9 % of reported (1,000 of 1,300)"),
    ("creates that never reached the server", [ClientResult("a", create_ops=50)], {}, "fail", ["a"],
     "no NFS reads, writes or creates"),
    ("creates not reported are not checked", [ClientResult("a", 4096, 0, 1, 0)],
     {"a": Wire(4096, 0, 1, 0, S, S, create_ops=7)}, "pass", [], None),
])
def test_report_verdicts(name, reported, wire, verdict, failed, reason):
    rep = build_report(S, E, reported, wire, tolerance_pct=2)
    assert (rep["verdict"], rep["failed"]) == (verdict, failed), name
    if reason:
        assert any(reason in r for c in rep["clients"] for r in c["reasons"]), rep["clients"]


def test_report_totals_rates_and_skew():
    reported = [ClientResult("a", 0, 6000, 0, 6), ClientResult("b", 0, 6000, 0, 6), ClientResult("c", 0, 6000, 0, 6)]
    wire = {"a": Wire(0, 6000, 0, 6, S, S + 30), "b": Wire(0, 6000, 0, 6, S + 4, S + 31),
            "c": Wire(0, 6000, 0, 6, S + 1, S + 50), "d": Wire(0, 100, 0, 1, S, S)}
    rep = build_report(S, E, reported, wire, tolerance_pct=2)
    assert rep["verdict"] == "pass" and rep["failed"] == []  # a straggler is flagged, not failed
    t = rep["total"]
    assert (t["reported_bytes"], t["wire_bytes"], t["wire_bytes_per_s"]) == (18000, 18000, 300.0)
    sk = rep["skew"]
    assert (sk["start_spread_s"], sk["end_spread_s"], sk["ramp_up_s"], sk["tail_s"]) == (4, 50, 4, 59)
    assert sk["stragglers"] == ["c"] and rep["unreported_clients"] == ["d"]
    assert [(o["client"], o["bytes_per_s"], o["write_ops"]) for o in rep["observed"]] == [
        ("a", 100.0, 6), ("b", 100.0, 6), ("c", 100.0, 6), ("d", 100 / 60, 1)]
    c = {x["client"]: x for x in rep["clients"]}
    assert (c["b"]["start_offset_s"], c["b"]["end_offset_s"]) == (4, 28)


def test_ops_are_checked_on_request():
    rep = build_report(S, E, [ClientResult("a", 4096, 0, 1, 0)], {"a": Wire(4096, 0, 4, 0, S, S)}, tolerance_pct=2,
                       check_ops=True)
    assert rep["verdict"] == "fail" and "wire ops are 400.0 % of reported" in rep["clients"][0]["reasons"][0]


# ------------------------------------------------------------------ the API, on a real store
@pytest.fixture
def client(tmp_path):
    yield from signed_in_app(tmp_path, TOKEN)


def test_mark_a_run_import_results_and_get_the_report(client):
    now = int(time.time())
    start = now - 40
    r = client.post("/api/v1/runs", json={"name": "stream write", "start": start, "host": "nas1",
                                           "command": ["fio", "job.fio"]})
    assert r.status_code == 201, r.text
    run = r.json()
    assert run["running"] and run["end"] is None and run["command"] == ["fio", "job.fio"]
    assert client.get(f"/api/v1/runs/{run['id']}/report").status_code == 409  # still running
    frames = []  # 30 s of two clients writing 1 MB/s each; one also reads 8 KiB ops
    for i in range(30):
        frames.append(nfs_frame(start + 5 + i, [("10.0.0.1", "write", "/export/f1", 8, 1_000_000, {20: 8}),
                                                ("10.0.0.2", "write", "/export/f2", 8, 1_000_000, {20: 8}),
                                                ("10.0.0.2", "read", "/export/f2", 2, 16384, {18: 2})],
                                  source="nfs@nas1", seq=i))
    frames.append(nfs_frame(start - 5, [("10.0.0.1", "write", "/export/f1", 8, 9_000_000, {})], source="nfs@nas1",
                            seq=100))  # before the run: not counted
    r = client.post("/api/v1/ingest", json={"frames": [f.model_dump() for f in frames]},
                    headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200, r.text
    stopped = client.post(f"/api/v1/runs/{run['id']}/stop", json={"end": start + 40, "exit_code": 0}).json()
    assert not stopped["running"] and stopped["end"] == start + 40 and stopped["exit_code"] == 0
    assert client.post(f"/api/v1/runs/{run['id']}/stop", json={}).status_code == 409

    r = client.post(f"/api/v1/runs/{run['id']}/results", json={"format": "simple", "clients": [
        {"client": "10.0.0.1", "write_bytes": 30_000_000, "write_ops": 240},
        {"client": "10.0.0.2", "write_bytes": 39_000_000, "write_ops": 240, "read_bytes": 491520, "read_ops": 60}]})
    assert r.status_code == 200, r.text and len(r.json()["results"]) == 2
    rep = client.get(f"/api/v1/runs/{run['id']}/report", params={"tolerance": 2}).json()
    assert rep["verdict"] == "fail" and rep["failed"] == ["10.0.0.2"]  # its writes were forged 30 % high
    c = {x["client"]: x for x in rep["clients"]}
    assert c["10.0.0.1"]["wire"]["write_bytes"] == 30_000_000 and c["10.0.0.1"]["passed"]
    assert c["10.0.0.1"]["start_offset_s"] == 5 and c["10.0.0.1"]["end_offset_s"] == 5
    assert c["10.0.0.2"]["wire"]["read_ops"] == 60 and c["10.0.0.2"]["cache_read_bytes"] == 0

    # a corrected CSV replaces 10.0.0.2's numbers: now the run passes
    r = client.post(f"/api/v1/runs/{run['id']}/results.csv", headers={"Content-Type": "text/csv"},
                    content="client,read_bytes,write_bytes,read_ops,write_ops\n10.0.0.2,491520,30000000,60,240\n")
    assert r.status_code == 200, r.text
    rep = client.get(f"/api/v1/runs/{run['id']}/report").json()
    assert rep["verdict"] == "pass" and rep["total"]["bytes_agreement_pct"] == pytest.approx(100.0)
    csv_text = client.get(f"/api/v1/runs/{run['id']}/report", params={"format": "csv"}).text
    lines = csv_text.strip().splitlines()
    assert lines[0].startswith("client,reported_bytes,wire_bytes") and len(lines) == 4
    assert lines[-1].startswith("(total),60491520,60491520,100.000")

    assert [x["id"] for x in client.get("/api/v1/runs").json()["runs"]] == [run["id"]]
    assert client.delete(f"/api/v1/runs/{run['id']}").status_code == 204
    assert client.get(f"/api/v1/runs/{run['id']}").status_code == 404


def _creates_run(client, rows, reported, proto="v3"):
    """A run from 30 s ago to 5 s ago whose seconds 2..21 each carry the nfs rows `rows(i)`, the
    clients' `reported` results, and its report at 2 %: (run, report)."""
    start = int(time.time()) - 30
    run = client.post("/api/v1/runs", json={"name": "filecreate", "start": start}).json()
    frames = [nfs_frame(start + 2 + i, rows(i), source="nfs@nas1", seq=i, proto=proto) for i in range(20)]
    r = client.post("/api/v1/ingest", json={"frames": [f.model_dump() for f in frames]},
                    headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200, r.text
    client.post(f"/api/v1/runs/{run['id']}/stop", json={"end": start + 25})
    r = client.post(f"/api/v1/runs/{run['id']}/results", json={"format": "simple", "clients": reported})
    assert r.status_code == 200, r.text
    return run, client.get(f"/api/v1/runs/{run['id']}/report", params={"tolerance": 2}).json()


def test_a_file_create_run_is_checked_by_its_creates(client):
    """Filecreate moves no bytes: the clients' creates are checked against the CREATE calls seen."""
    run, rep = _creates_run(client, lambda i: [("10.0.0.5", "create", f"/export/d/f{i}", 40, 0, {17: 40}),
                                               ("10.0.0.5", "lookup", "/export/d", 40, 0, {}),
                                               ("10.0.0.6", "create", f"/export/e/f{i}", 40, 0, {17: 40})],
                            [{"client": "10.0.0.5", "create_ops": 800}, {"client": "10.0.0.6", "create_ops": 1040}])
    assert rep["verdict"] == "fail" and rep["failed"] == ["10.0.0.6"]  # 30 % more creates than the wire saw
    c = {x["client"]: x for x in rep["clients"]}
    assert c["10.0.0.5"]["wire"]["create_ops"] == 800 and c["10.0.0.5"]["creates_agreement_pct"] == pytest.approx(100)
    assert c["10.0.0.5"]["start_offset_s"] == 2 and c["10.0.0.5"]["end_offset_s"] == 3  # creates are I/O too
    assert any("wire creates are 76.9 % of reported" in x for x in c["10.0.0.6"]["reasons"])
    t = rep["total"]
    assert (t["reported_creates"], t["wire_creates"]) == (1840, 1600)
    assert t["creates_agreement_pct"] == pytest.approx(100 * 1600 / 1840)
    lines = client.get(f"/api/v1/runs/{run['id']}/report", params={"format": "csv"}).text.strip().splitlines()
    head = lines[0].split(",")
    rows = {r.split(",")[0]: dict(zip(head, r.split(","))) for r in lines[1:]}
    assert (rows["10.0.0.6"]["reported_creates"], rows["10.0.0.6"]["wire_creates"]) == ("1040", "800")
    assert rows["10.0.0.6"]["creates_agreement_pct"] == "76.923"
    assert (rows["(total)"]["reported_creates"], rows["(total)"]["wire_creates"]) == ("1840", "1600")


def test_nfsv4_creates_are_checked_by_the_opens_that_create(client):
    """An NFSv4 client creates a regular file with OPEN4_CREATE (op open_create): those count as
    creates, with CREATE (a directory, a symlink), and plain opens of existing files do not."""
    _, rep = _creates_run(client, lambda i: [("10.0.0.7", "open_create", f"/export/d/f{i}", 30, 0, {17: 30}),
                                             ("10.0.0.7", "open", f"/export/d/old{i}", 50, 0, {16: 50}),
                                             ("10.0.0.7", "create", f"/export/d/dir{i}", 2, 0, {17: 2}),
                                             ("10.0.0.8", "open_create", f"/export/e/f{i}", 40, 0, {17: 40})],
                          [{"client": "10.0.0.7", "create_ops": 640}, {"client": "10.0.0.8", "create_ops": 1040}],
                          proto="v4.2")
    assert rep["verdict"] == "fail" and rep["failed"] == ["10.0.0.8"], rep  # 30 % more creates than the wire saw
    c = {x["client"]: x for x in rep["clients"]}
    assert c["10.0.0.7"]["wire"]["create_ops"] == 640 and c["10.0.0.7"]["creates_agreement_pct"] == pytest.approx(100)
    assert c["10.0.0.7"]["start_offset_s"] == 2 and c["10.0.0.7"]["end_offset_s"] == 3
    assert c["10.0.0.8"]["wire"]["create_ops"] == 800
    assert any("wire creates are 76.9 % of reported" in x for x in c["10.0.0.8"]["reasons"])
    assert (rep["total"]["reported_creates"], rep["total"]["wire_creates"]) == (1680, 1440)


def test_run_api_errors_name_the_problem(client):
    rid = client.post("/api/v1/runs", json={"name": "x"}).json()["id"]
    cases = [
        (client.post("/api/v1/runs", json={"name": ""}), 422, "name"),
        (client.post("/api/v1/runs", json={"name": "x", "start": time.time() + 3600}), 400, "in the future"),
        (client.post("/api/v1/runs/nope/stop", json={}), 404, "no run 'nope'"),
        (client.post(f"/api/v1/runs/{rid}/stop", json={"end": 1}), 400, "is not after the run's start"),
        (client.post(f"/api/v1/runs/{rid}/results", json={"format": "fio"}), 400, "needs 'report'"),
        (client.post(f"/api/v1/runs/{rid}/results", json={"format": "fio", "report": {"jobs": [{}]}}), 400,
         "say which client"),
        (client.post(f"/api/v1/runs/{rid}/results", json={"format": "xml"}), 422, "format"),
        (client.post(f"/api/v1/runs/{rid}/results.csv", content="a,b\n1,2\n"), 400, "header lacks client"),
        (client.get(f"/api/v1/runs/{rid}/report", params={"tolerance": 0}), 422, "tolerance"),
    ]
    for r, code, text in cases:
        assert r.status_code == code and text in r.text, (code, r.status_code, r.text)
