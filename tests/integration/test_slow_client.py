"""Why is this client slow, on real NFS traffic: clients of one nfs-ganesha in network namespaces,
watched by Loupe's wire decoder, socket probe and link counters, each slow (or not) for a different
reason; each gets the right verdict.

The first scenario is a bridge of veths with one client shaped far below it on its own side, seen
by the wire decoder alone; the second a 100 Mbit/s link (the lab's tap and macvlans, see
loupe.lab.netns) that one client fills, seen also by the socket probe and the link counters."""

import os
import subprocess
import sys
import time

EXPORT = "/export"
LINK_PROBES = ("bpf.net", "procfs.net")  # each client's bytes and interface; the interfaces' speeds
MBIT = 125_000  # bytes/s


def run_workloads(nfs_lab, lab, g, s, jobs: dict, seconds: int = 8) -> dict:
    """Each client's workload at once; the window of whole seconds they all ran, once the server `s`
    has every client's ops in its last seconds (on a loaded host the agent's frames may come later
    than a fixed wait: the diagnosis of a window not yet stored would say "idle")."""
    start = time.time() + 1
    procs = []
    for i, c in enumerate(lab.clients, 1):
        name, extra = jobs[c.ip]
        procs.append(subprocess.Popen(c.cmd(
            sys.executable, "-m", "loupe.lab.workload", "--server", g.bind_ip, "--mount-port", str(g.mount_port),
            "--export", EXPORT, "--workload", name, "--seconds", str(seconds), "--tag", f"c{i}",
            "--start-at", str(start), *extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0 and '"error"' not in out, (out, err)
    end = time.time()
    window = {"start": str(int(start) + 1), "end": str(int(end) - 1)}
    last = {"from": str(int(end) - 3), "to": window["end"]}
    want = {c.ip for c in lab.clients}
    s.wait_for(lambda: want <= {r["key"] for r in s.get("/api/v1/breakdown", metric="nfs.ops", by="client",
                                                       **last)["rows"] if r["value"] > 0},
               30, f"every client's ops of seconds {last['from']}..{last['to']} in the store")
    time.sleep(2)  # the other sources' (socket probe, link counters) frames of those seconds
    return window


def test_three_clients_three_verdicts(nfs_lab):
    with nfs_lab.Lab(clients=3) as lab, nfs_lab.Ganesha(lab.server_ip, [EXPORT]) as g:
        # the wire decoder alone: the socket probe's figures (link, retransmits) are the next test's
        s = nfs_lab.serve(lab, g, EXPORT)
        shaped, syncer, healthy = lab.clients
        # the shaped client's link: 5 Mbit/s out of its namespace
        shaped.run("tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", "5mbit", "burst", "32kbit",
                   "latency", "400ms")
        jobs = {shaped.ip: ("stream-write", ["--depth", "4"]),
                syncer.ip: ("sync-write", ["--depth", "1", "--io", "4096"]),  # one 4 KiB sync write at a time
                healthy.ip: ("stream-write", ["--depth", "8"])}
        window = run_workloads(nfs_lab, lab, g, s, jobs)
        got = {c.ip: s.get(f"/api/v1/clients/{c.ip}/diagnosis", **window) for c in lab.clients}
        verdicts = {ip: d["verdict"] for ip, d in got.items()}
        detail = {ip: (d["verdict"], d["inflight"], [r["text"] for r in d["reasons"]]) for ip, d in got.items()}
        assert verdicts[shaped.ip] == "network-bound", detail
        assert verdicts[syncer.ip] in ("client-bound", "server-latency-bound"), detail
        assert verdicts[healthy.ip] == "healthy", detail
        assert got[syncer.ip]["inflight"] < 1.5 and got[syncer.ip]["mean_io_bytes"] == 4096, detail
        assert got[healthy.ip]["inflight"] > 2, detail
        # no socket probe: no interface for them, so no share of a link (and no claim about one)
        assert all(d["link"] is None and "Gbit/s" not in str(d["reasons"]) for d in got.values()), detail


def test_a_client_that_fills_its_link_is_network_bound(nfs_lab, require_lab):
    """A 100 Mbit/s link, carrying that rate out of the server (tbf on the server's side, which
    every client's replies share): a client streaming reads fills it and is network-bound by its
    share; a client with one 4 KiB write at a time, which would read client-bound, is network-bound
    too, since the link it shares is full."""
    require_lab("nfs-cat", "ethtool", "tc")
    with nfs_lab.Lab(clients=2, link_mbps=100) as lab, nfs_lab.Ganesha(lab.server_ip, [EXPORT]) as g:
        s = nfs_lab.serve(lab, g, EXPORT, also=LINK_PROBES)
        filler, light = lab.clients
        r = subprocess.run(["tc", "qdisc", "add", "dev", lab.bridge, "root", "tbf", "rate", "100mbit", "burst", "64kb",
                            "latency", "200ms"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        size = 64 << 20
        (g.export_dir(EXPORT) / "stream.bin").write_bytes(os.urandom(size))
        window = run_workloads(nfs_lab, lab, g, s, {
            filler.ip: ("stream-read-light", ["--depth", "16", "--file", "stream.bin", "--file-size", str(size)]),
            light.ip: ("sync-write", ["--depth", "1", "--io", "4096"])}, 10)
        got = {c.ip: s.get(f"/api/v1/clients/{c.ip}/diagnosis", **window) for c in lab.clients}
        detail = {ip: (d["verdict"], d["link"], [r["text"] for r in d["reasons"]]) for ip, d in got.items()}
        for c in lab.clients:  # the host's interface towards them, with the tap's speed, full
            link = got[c.ip]["link"]
            assert (link["interface"], link["capacity_bytes_per_s"]) == (lab.bridge, 100 * MBIT), detail
            assert link["utilisation"] >= 0.8 and link["utilisation_direction"] == "out", detail
        f = got[filler.ip]
        assert f["verdict"] == "network-bound", detail
        assert f["link"]["share"] >= 0.8 and f["link"]["share_direction"] == "out", detail
        [reason] = [r for r in f["reasons"] if r["statistic"]["metric"] == "net.bytes"]
        assert reason["text"].startswith("it uses ") and f"% of {lab.bridge}'s 100 Mbit/s: " in reason["text"], detail
        assert "from the server to it" in reason["text"], detail
        assert reason["statistic"] == {"metric": "net.bytes", "by": "direction", "where": {
            "host": [f["link"]["host"]], "interface": [lab.bridge], "client": [filler.ip]}}
        # the chart behind it: the bytes sent to it, second by second, near the link's 12.5 MB/s
        q = s.get("/api/v1/query", metric="net.bytes", by="direction", step=1, **window,
                  where=[f"{k}={v[0]}" for k, v in reason["statistic"]["where"].items()])
        sent = {x["key"]: x["values"] for x in q["series"]}["out"]
        assert 0.8 * 100 * MBIT <= sum(sent) / len(sent) <= 100 * MBIT, sent
        w = got[light.ip]
        # its part of the full direction is small (its own busier direction, its 4 KiB writes in, is far
        # from the link too: about 860 KB/s on a fast host, so no fixed few per cent)
        assert w["verdict"] == "network-bound" and w["link"]["client_out_bytes_per_s"] < 0.05 * 100 * MBIT, detail
        assert w["link"]["share"] < 0.5, detail
        assert any(r["text"].startswith(f"{lab.bridge}, the link it is reached through, carries ")
                   and r["text"].endswith("the link is full") for r in w["reasons"]), detail
