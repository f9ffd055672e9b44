"""`loupe serve` as a user runs it: a real process on a free port, this machine's procfs data,
the demo NAS, and a kill -9 restart. Servers are started and stopped by PID."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest



def _active(s, family):
    return s.get("/api/v1/sources")["families"].get(family)


def test_serve_shows_this_machines_real_cpu_disk_and_network(server_factory):
    s = server_factory()
    s.wait_for(lambda: all(_active(s, f) for f in ("cpu", "net")), what="procfs sources active")
    q = s.wait_for(lambda: (lambda r: r if sum(r["total"]) > 0 else None)(
        s.get("/api/v1/query", metric="cpu.util", by="mode", start="-30s", step=1)), what="cpu data")
    # Real /proc/stat deltas: all modes of all CPUs add up to about 100 % per CPU each second
    ncpu = os.cpu_count()
    full = [t for t in q["total"] if t > 0][:-1] or [t for t in q["total"] if t > 0]
    assert all(abs(t - 100 * ncpu) < 15 * ncpu for t in full), (full, ncpu)
    assert {x["key"] for x in q["series"]} & {"user", "system", "idle"}
    net = s.wait_for(lambda: (lambda r: r if r["series"] else None)(
        s.get("/api/v1/query", metric="net.bytes", by="interface", start="-30s", step=1)), what="net data")
    assert "lo" in {x["key"] for x in net["series"]} or net["elements"] >= 1
    src = s.get("/api/v1/sources")
    nfs = [x for x in src["sources"] if "nfs" in x["families"]]
    assert nfs and all(x["name"].startswith("bpf.nfs") for x in nfs)  # only the real NFS probes, no demo
    # NFS is seen exactly when one of them runs (as root, with BPF); otherwise each says why not
    assert src["families"]["nfs"] == any(x["state"] == "active" for x in nfs)
    if not src["families"]["nfs"]:
        assert all(x["reason"] for x in nfs) and "bpf.nfs" in src["missing"]["nfs"]
    assert all(not x["demo"] for x in src["sources"])
    # the health check of the container and compose file, over plain HTTP here
    port = s.base.rsplit(":", 1)[1]
    h = subprocess.run([sys.executable, "-m", "loupe.cli", "health", "--port", port], capture_output=True, text=True,
                       timeout=30, env={k: v for k, v in os.environ.items() if not k.startswith("LOUPE_")})
    assert h.returncode == 0 and f"http://127.0.0.1:{port}/healthz: ok" in h.stdout, h.stdout + h.stderr


def test_demo_nas_with_history_and_drilldown(server_factory):
    s = server_factory("--demo", "--demo-backfill", "120")
    q = s.wait_for(lambda: (lambda r: r if r["elements"] >= 20 else None)(
        s.get("/api/v1/query", metric="nfs.ops", by="client", start="-2m", top=10)), timeout=60,
        what="20 demo clients")
    assert q["statistic"]["name"] == "NFS operations per second broken down by client"
    # history: the backfilled minute before the server started has data
    assert sum(q["total"][: len(q["total"]) // 2]) > 0
    client = q["series"][0]["key"]
    f = s.get("/api/v1/query", metric="nfs.ops", by="file", where=f"client={client}", start="-2m")
    assert f["series"] and f["statistic"]["name"] == \
        f"NFS operations per second for client {client} broken down by file"
    hm = s.get("/api/v1/heatmap", metric="nfs.ops", dim="latency", where=[f"client={client}",
               f"file={f['series'][0]['key']}"], start="-2m")
    assert hm["cells"] and hm["buckets"]
    src = s.get("/api/v1/sources")
    assert any(x["demo"] and x["host"] == "demo-nas" for x in src["sources"])


def _post(base: str, fmt: str, fr: dict) -> dict:
    """One frame as JSON (version 1), or as Arrow (version 3, logged by the server as its body)."""
    auth = {"Authorization": "Bearer t"}
    if fmt == "json":
        return httpx.post(base + "/api/v1/ingest", json={"frames": [fr]}, headers=auth).json()
    from loupe.arrow_ipc import MEDIA_TYPE, encode_part, request_body
    from loupe.columns import rows_to_columns

    body = request_body([({k: fr[k] for k in ("source", "seq", "ts", "host")},
                          encode_part(fr["family"], rows_to_columns(fr["rows"])))], {})
    return httpx.post(base + "/api/v1/ingest", content=body, headers={**auth, "Content-Type": MEDIA_TYPE}).json()


@pytest.mark.parametrize("fmt", ["json", "arrow"])
def test_kill_9_restart_keeps_acknowledged_data(server_factory, tmp_path, fmt):
    env = {"LOUPE_INGEST_TOKEN": "t"}
    for attempt in range(3):  # until the kill leaves records only in the log (a flush a second may take them all)
        data = tmp_path / f"crash{attempt}"
        s = server_factory("--no-local-agent", data_dir=data, env=env)
        now = int(time.time())
        acked = 0
        for i in range(40):
            fr = {"source": "k@h", "seq": i + 1, "ts": now - 60 + i, "family": "nfs", "host": "h",
                  "rows": [{"dims": {"client": "c1", "op": "read"}, "count": 10}]}
            assert _post(s.base, fmt, fr)["accepted"] == 1
            acked += 1
        s.stop(signal.SIGKILL)
        s2 = server_factory("--no-local-agent", data_dir=data, env=env)
        replayed = "acknowledged ingest records" in Path(s2.log.name).read_text()
        q = s2.get("/api/v1/query", metric="nfs.ops", start=str(now - 120), end=str(now), step=1)
        assert sum(q["total"]) == 10.0 * acked  # every acknowledged frame, once
        # replaying the same frames after the restart stores nothing twice
        fr = {"source": "k@h", "seq": 5, "ts": now - 56, "family": "nfs", "host": "h", "rows": [{"count": 99}]}
        assert _post(s2.base, fmt, fr)["duplicates"] == 1
        s2.stop()
        if replayed:
            break
    assert replayed, "every kill came after a flush: the log's replay was never exercised"


def test_serve_over_tls_with_its_own_agents_and_secure_cookies(server_factory, tmp_path):
    """LOUPE_TLS_CERT/KEY: HTTPS only, Secure cookies and HSTS, and the in-process agents pin the
    server's self-signed certificate (whose name is not 127.0.0.1) to deliver."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=nas.example", "-keyout", str(key), "-out", str(cert)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    s = server_factory("--demo", "--demo-backfill", "0", env={
        "LOUPE_TLS_CERT": str(cert), "LOUPE_TLS_KEY": str(key), "LOUPE_ADMIN_PASSWORD": "tls-admin-password",
        "LOUPE_LOCAL_SOURCES": "procfs"})
    assert s.base.startswith("https://")
    # the demo agent's frames arrive over HTTPS
    s.wait_for(lambda: sum(s.get("/api/v1/query", metric="nfs.ops", start="-30s", step=1)["total"]) > 0,
               timeout=60, what="demo NFS traffic over TLS")
    assert s.wait_for(lambda: _active(s, "cpu"), what="procfs over TLS")
    login = httpx.post(s.base + "/api/v1/auth/login", json={"user": "admin", "password": "tls-admin-password"},
                       verify=s.verify)
    assert login.status_code == 200
    assert "secure" in login.headers["set-cookie"].lower()
    assert login.headers["strict-transport-security"].startswith("max-age=")
    # the health check the container and compose use speaks HTTPS to it, trusting exactly its certificate
    port = s.base.rsplit(":", 1)[1]
    env = {**os.environ, "LOUPE_TLS_CERT": str(cert), "LOUPE_PORT": port}
    h = subprocess.run([sys.executable, "-m", "loupe.cli", "health"], capture_output=True, text=True, env=env, timeout=30)
    assert h.returncode == 0 and f"https://127.0.0.1:{port}/healthz: ok" in h.stdout, h.stdout + h.stderr
    plain = {k: v for k, v in env.items() if k != "LOUPE_TLS_CERT"}
    h = subprocess.run([sys.executable, "-m", "loupe.cli", "health"], capture_output=True, text=True, env=plain, timeout=30)
    assert h.returncode == 1 and f"http://127.0.0.1:{port}/healthz" in h.stderr, h.stdout + h.stderr
    # plain HTTP on the same port gets no answer, and the system CAs do not trust this certificate
    with pytest.raises(httpx.HTTPError):
        httpx.get(s.base.replace("https://", "http://") + "/healthz", timeout=5)
    with pytest.raises(httpx.ConnectError):
        httpx.get(s.base + "/healthz", timeout=5)


def test_backup_and_restore_of_the_data_directory(server_factory, tmp_path):
    """docs/DEPLOY.md's procedure: stop the server, archive its data directory, restore it on
    another path (or machine), start: statistics, users, tokens and runs are all back."""
    data, env = tmp_path / "live", {"LOUPE_INGEST_TOKEN": "t", "LOUPE_ADMIN_PASSWORD": "restore-admin-pw"}
    s = server_factory("--no-local-agent", data_dir=data, env=env)
    now = int(time.time())
    frames = [{"source": "b@h", "seq": i + 1, "ts": now - 60 + i, "family": "nfs", "host": "h",
               "rows": [{"dims": {"client": "c1", "op": "read"}, "count": 7}]} for i in range(30)]
    assert httpx.post(s.base + "/api/v1/ingest", json={"frames": frames},
                      headers={"Authorization": "Bearer t"}).json()["accepted"] == 30
    run = s.post("/api/v1/runs", {"name": "before the backup"}, expect=201)
    with httpx.Client(base_url=s.base) as c:  # a user and an agent token made through the API
        csrf = c.post("/api/v1/auth/login", json={"user": "admin", "password": "restore-admin-pw"}).json()["csrf_token"]
        h = {"X-CSRF-Token": csrf}
        assert c.post("/api/v1/users", json={"name": "vera", "role": "viewer", "password": "vera-password"},
                      headers=h).status_code == 201
        agent_token = c.post("/api/v1/tokens", json={"name": "nas2", "scope": "ingest"}, headers=h).json()["secret"]
    s.stop()  # SIGTERM: the store checkpoints and closes
    archive = tmp_path / "loupe-backup.tar.gz"
    subprocess.run(["tar", "-C", str(data), "-czf", str(archive), "."], check=True, timeout=120)
    restored = tmp_path / "restored"
    restored.mkdir()
    subprocess.run(["tar", "-C", str(restored), "-xzf", str(archive)], check=True, timeout=120)

    s2 = server_factory("--no-local-agent", data_dir=restored, env={"LOUPE_INGEST_TOKEN": "t"})
    q = s2.get("/api/v1/query", metric="nfs.ops", start=str(now - 120), end=str(now), step=1)
    assert sum(q["total"]) == 7.0 * 30
    assert [r["name"] for r in s2.get("/api/v1/runs")["runs"]] == [run["name"]]
    vera = httpx.post(s2.base + "/api/v1/auth/login", json={"user": "vera", "password": "vera-password"})
    assert vera.status_code == 200 and vera.json()["role"] == "viewer"
    fr = dict(frames[0], source="nas2@h", seq=1)
    r = httpx.post(s2.base + "/api/v1/ingest", json={"frames": [fr]}, headers={"Authorization": f"Bearer {agent_token}"})
    assert r.status_code == 200 and r.json()["accepted"] == 1


@pytest.mark.parametrize(("env", "args", "said"), [
    ({"LOUPE_PORT": "abc"}, [], "loupe serve: LOUPE_PORT: Input should be a valid integer"),
    ({}, ["--port", "99999"], "loupe serve: --port: Input should be less than or equal to 65535 (got 99999)"),
    ({"LOUPE_ADMIN_PASSWORD": "short"}, [], "loupe serve: LOUPE_ADMIN_PASSWORD: password must have at least 10"),
    ({"LOUPE_DB_MEMORY_LIMIT": "lots"}, [], "loupe serve: LOUPE_DB_MEMORY_LIMIT: String should match pattern"),
])
def test_a_bad_setting_stops_serve_with_one_line_naming_it(tmp_path, env, args, said):
    r = subprocess.run([sys.executable, "-m", "loupe.cli", "serve", "--data-dir", str(tmp_path / "d"), *args],
                       env={**os.environ, **env}, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and said in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert "short" not in r.stderr  # a password is never echoed
    assert not (tmp_path / "d").exists()  # nothing created
