"""`loupe lab` as a performance engineer runs it: one command sets up nfs-ganesha and four client
namespaces, starts a Loupe that watches them, runs two of the seed workloads as marked runs,
and prints each run's validation; everything it made is gone afterwards."""

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_loupe_lab_runs_workloads_as_validated_runs_and_cleans_up(tmp_path, require_lab):
    require_lab()
    r = subprocess.run([sys.executable, "-m", "loupe.cli", "lab", "--serve", "--clients", "4", "--seconds", "3",
                        "--file-size", "8M", "--workload", "stream-write-light", "--workload", "random-read",
                        "--workload", "filecreate",
                        "--data-dir", str(tmp_path / "loupe"), "--json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout)
    assert [x["workload"] for x in out["runs"]] == ["stream-write-light", "random-read", "filecreate"]
    for run in out["runs"]:
        rep = run["report"]
        assert rep["verdict"] == "pass" and len(rep["clients"]) == 4, rep
        mine = {c["client"]: c for c in run["clients"]}
        if run["workload"] == "filecreate":  # no bytes: checked by the CREATE calls on the wire
            assert all(c["create_ops"] > 50 and c["write_bytes"] == 0 for c in mine.values()), mine
            assert all(abs(c["creates_agreement_pct"] - 100) <= 2 for c in rep["clients"]), rep["clients"]
            assert "creates reported" in r.stderr
            continue
        for c in rep["clients"]:
            assert abs(c["bytes_agreement_pct"] - 100) <= 2, c
        if run["workload"] == "random-read":
            assert all(c["read_ops"] > 100 and c["read_bytes"] == 8192 * c["read_ops"] for c in mine.values()), mine
        else:
            assert all(c["write_bytes"] > 0 and c["read_ops"] == 0 for c in mine.values()), mine
        assert "Stream Write light" in r.stderr and "Random Read" in r.stderr
    # the lab is gone: its bridge and namespaces, and the Loupe it started
    bridge = re.search(r"on bridge (\S+);", r.stderr).group(1)
    assert subprocess.run(["ip", "link", "show", bridge], capture_output=True).returncode != 0
    assert bridge not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert "(data" in r.stderr and (tmp_path / "loupe" / "store").exists()


def test_loupe_lab_refuses_bad_knobs_with_a_clear_message():
    r = subprocess.run([sys.executable, "-m", "loupe.cli", "lab", "--file-size", "lots"], capture_output=True,
                       text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 2 and "not a size: 'lots'" in r.stderr
    r = subprocess.run([sys.executable, "-m", "loupe.cli", "lab", "--workload", "nope"], capture_output=True,
                       text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 2 and "invalid choice: 'nope'" in r.stderr
    r = subprocess.run([sys.executable, "-m", "loupe.cli", "lab", "--nfs-server", "knfsd", "--file-size", "100K"],
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 2 and "--file-size: on knfsd, at least 1M and a multiple of 64K" in r.stderr
    r = subprocess.run([sys.executable, "-m", "loupe.cli", "lab", "--nfs-server", "knfsd", "--nfs-version", "3,5"],
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 2 and "not NFS versions: '3,5'" in r.stderr
