"""Why is this client slow, on real NFS traffic: three clients of one nfs-ganesha, watched by
Loupe's wire decoder, each slow (or not) for a different reason; each gets the right verdict."""

import subprocess
import sys
import time

EXPORT = "/export"


def test_three_clients_three_verdicts(nfs_lab):
    with nfs_lab.Lab(clients=3) as lab, nfs_lab.Ganesha(lab.server_ip, [EXPORT]) as g:
        s = nfs_lab.serve(lab, g, EXPORT)
        shaped, syncer, healthy = lab.clients
        # the shaped client's link: 5 Mbit/s out of its namespace
        shaped.run("tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", "5mbit", "burst", "32kbit",
                   "latency", "400ms")
        jobs = {shaped.ip: ("stream-write", ["--depth", "4"]),
                syncer.ip: ("sync-write", ["--depth", "1", "--io", "4096"]),  # one 4 KiB sync write at a time
                healthy.ip: ("stream-write", ["--depth", "8"])}
        start = time.time() + 1
        procs = []
        for i, c in enumerate(lab.clients, 1):
            name, extra = jobs[c.ip]
            procs.append(subprocess.Popen(c.cmd(
                sys.executable, "-m", "loupe.lab.workload", "--server", g.bind_ip, "--mount-port", str(g.mount_port),
                "--export", EXPORT, "--workload", name, "--seconds", "8", "--tag", f"c{i}", "--start-at", str(start),
                *extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        for p in procs:
            out, err = p.communicate(timeout=60)
            assert p.returncode == 0 and '"error"' not in out, (out, err)
        end = time.time()
        window = {"start": str(int(start) + 1), "end": str(int(end) - 1)}
        time.sleep(3)  # the last seconds reach the store
        got = {c.ip: s.get(f"/api/v1/clients/{c.ip}/diagnosis", **window) for c in lab.clients}
        verdicts = {ip: d["verdict"] for ip, d in got.items()}
        detail = {ip: (d["verdict"], d["inflight"], [r["text"] for r in d["reasons"]]) for ip, d in got.items()}
        assert verdicts[shaped.ip] == "network-bound", detail
        assert verdicts[syncer.ip] in ("client-bound", "server-latency-bound"), detail
        assert verdicts[healthy.ip] == "healthy", detail
        assert got[syncer.ip]["inflight"] < 1.5 and got[syncer.ip]["mean_io_bytes"] == 4096, detail
        assert got[healthy.ip]["inflight"] > 2, detail
