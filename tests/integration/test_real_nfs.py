"""The headline drill-down on real NFS traffic, through the product as a user runs it:
`loupe serve` (its local agent loading the wire decoder into this kernel) watches a
real nfs-ganesha serving three clients in network namespaces; the API then gives
NFS bytes by client (exactly what the clients moved), that client by file, and that
file's latency heat map."""

import os

EXPORT = "/export"


def _series(s, metric, by, where=(), start="-300s"):
    q = s.get("/api/v1/query", metric=metric, by=by, where=list(where), start=start, step=1, top=50)
    return {x["key"]: sum(x["values"]) for x in q["series"]}


def test_nfs_by_client_then_file_then_latency_on_real_traffic(nfs_lab, tmp_path):
    with nfs_lab.Lab(clients=3) as lab, nfs_lab.Ganesha(lab.server_ip, [EXPORT]) as g:
        s = nfs_lab.serve(lab, g, EXPORT)
        exp = g.export_dir(EXPORT)
        moved = {}
        for i, c in enumerate(lab.clients, 1):
            up, down = 50_000 * i + 17, 30_000 * i + 5
            (tmp_path / f"up{i}").write_bytes(os.urandom(up))
            (exp / f"read{i}.bin").write_bytes(os.urandom(down))
            c.run("nfs-cp", str(tmp_path / f"up{i}"), g.url(f"{EXPORT}/written{i}.bin", 3))
            assert len(c.run("nfs-cat", g.url(f"{EXPORT}/read{i}.bin", 3)).stdout) == down
            moved[c.ip] = up + down

        # 1. NFS bytes by client: each client's bytes, exactly, once its seconds are stored
        by_client = s.wait_for(lambda: (lambda d: d if all(d.get(ip) == n for ip, n in moved.items()) else None)(
            _series(s, "nfs.bytes", "client")), timeout=30, what=f"nfs.bytes by client == {moved}")
        assert set(by_client) == set(moved)

        # 2. one client, by file: its two files under the export, with their sizes
        ip = lab.clients[1].ip
        files = _series(s, "nfs.bytes", "file", [f"client={ip}"])
        assert files == {f"{EXPORT}/written2.bin": 100_017, f"{EXPORT}/read2.bin": 60_005}, files
        ops = _series(s, "nfs.ops", "op", [f"client={ip}", f"file={EXPORT}/read2.bin"])
        assert ops.get("read", 0) >= 1 and ops.get("lookup", 0) >= 1, ops

        # 3. that file's latency heat map: every op of it in some latency bucket
        hm = s.get("/api/v1/heatmap", metric="nfs.ops", dim="latency", start="-300s", step=1,
                   where=[f"client={ip}", f"file={EXPORT}/read2.bin"])
        assert hm["cells"] and round(sum(hm["total"])) == round(sum(ops.values())), (hm["total"], ops)
        # and the band that holds it names this client
        lo = min(hm["buckets"][int(c[1])]["index"] for c in hm["cells"])
        hi = max(hm["buckets"][int(c[1])]["index"] for c in hm["cells"])
        members = s.get("/api/v1/members", metric="nfs.ops", dim="latency", lo=lo, hi=hi, by="client",
                        start="-300s")
        assert ip in {r["key"] for r in members["rows"]}
