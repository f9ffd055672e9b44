"""The agent's own cost under load: CPU and RSS of `loupe agent` with every probe on.

Load, all real, on this machine:
* fio: 4 KiB random O_DIRECT reads of a file on the root disk, capped at --iops
  (default 10,000 I/O per second);
* 1,000 TCP clients: sockets bound to distinct loopback addresses (127.1.x.y, all of
  127/8 is local) each sending a small message to one server socket every second,
  so the per-client network probe keys 1,000 remote addresses.

The agent (`python -m loupe_probes.agent --sources bpf,procfs`) pushes to a real
`loupe serve --no-local-agent` on a free port. Its CPU comes from /proc/<pid>/stat
(utime + stime) over the measured interval, its RSS from /proc/<pid>/status
(VmRSS), sampled each second after a warm-up. Needs root, fio and BPF.

    .venv/bin/python -m bench.agent_cost [--seconds 30] [--clients 1000] [--iops 10000]

Result: bench/results/agent_cost-<UTC timestamp>.json and a summary on stdout.
The issue's target: agent CPU <= 2 % of one core, RSS <= 80 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from .procs import free_port, proc_sample

ROOT = Path(__file__).resolve().parent.parent


def cpu_seconds(pid: int) -> float:
    return proc_sample(pid)[0]


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


class Clients:
    """N client sockets on distinct loopback addresses, one message each per second."""

    def __init__(self, n: int) -> None:
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(2048)
        self.port = self.server.getsockname()[1]
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.server, selectors.EVENT_READ)
        self.stop = threading.Event()
        self.reader = threading.Thread(target=self._serve, daemon=True)
        self.reader.start()
        self.clients = []
        for i in range(n):
            c = socket.socket()
            c.bind((f"127.1.{i // 250}.{i % 250 + 1}", 0))
            c.connect(("127.0.0.1", self.port))
            self.clients.append(c)
        self.sender = threading.Thread(target=self._send, daemon=True)
        self.sender.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            for key, _ in self.sel.select(0.2):
                if key.fileobj is self.server:
                    conn, _ = self.server.accept()
                    conn.setblocking(False)
                    self.sel.register(conn, selectors.EVENT_READ)
                else:
                    try:
                        if not key.fileobj.recv(65536):
                            self.sel.unregister(key.fileobj)
                            key.fileobj.close()
                    except OSError:
                        pass

    def _send(self) -> None:
        msg = b"x" * 512
        while not self.stop.wait(1.0):
            for c in self.clients:
                try:
                    c.send(msg)
                except OSError:
                    pass

    def close(self) -> None:
        self.stop.set()
        for c in self.clients:
            c.close()
        self.server.close()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=int, default=30)
    p.add_argument("--warmup", type=int, default=20, help="seconds before measuring: loading and verifying the probes takes several")
    p.add_argument("--clients", type=int, default=1000)
    p.add_argument("--iops", type=int, default=10_000)
    p.add_argument("--profile", metavar="FILE", help="run the agent under cProfile, stats to FILE (costs CPU itself)")
    a = p.parse_args(argv)
    if os.geteuid() != 0 or not shutil.which("fio"):
        print("agent_cost: needs root and fio", file=sys.stderr)
        return 2

    work = ROOT / "build" / "bench-agent"
    work.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = open(work / "serve.log", "w")
    procs: list[subprocess.Popen] = []
    clients = None
    try:
        serve = subprocess.Popen([sys.executable, "-m", "loupe.cli", "serve", "--no-local-agent", "--port", str(port),
                                  "--data-dir", str(work / "data")], stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        procs.append(serve)
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        token = (work / "data" / "ingest.token").read_text().strip()
        prof = ["-m", "cProfile", "-o", a.profile] if a.profile else []
        agent = subprocess.Popen([sys.executable, *prof, "-m", "loupe_probes.agent", "--server", base, f"--token={token}",
                                  "--sources", "bpf,procfs"], stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        procs.append(agent)
        clients = Clients(a.clients)
        fio = subprocess.Popen(
            ["fio", "--name=agentcost", f"--filename={work / 'fio.bin'}", "--size=256M", "--rw=randread", "--bs=4k",
             "--direct=1", "--ioengine=psync", "--numjobs=2", f"--rate_iops={a.iops // 2}", "--time_based",
             f"--runtime={a.warmup + a.seconds + 5}", "--output-format=json", f"--output={work / 'fio.json'}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        procs.append(fio)
        time.sleep(a.warmup)
        c0, t0 = cpu_seconds(agent.pid), time.monotonic()
        rss, per_s = [], []
        prev_c, prev_t = c0, t0
        for _ in range(a.seconds):
            time.sleep(1)
            c, t = cpu_seconds(agent.pid), time.monotonic()
            per_s.append((c - prev_c) / (t - prev_t) * 100)
            prev_c, prev_t = c, t
            rss.append(rss_bytes(agent.pid))
        cpu_pct = (cpu_seconds(agent.pid) - c0) / (time.monotonic() - t0) * 100
        api = httpx.Client(base_url=base, timeout=30, headers={
            "Authorization": f"Bearer {(work / 'data' / 'cli.token').read_text().strip()}"})  # the server's own CLI token
        src = api.get("/api/v1/sources").raise_for_status().json()
        clients_seen = api.get("/api/v1/breakdown", params={
            "metric": "net.bytes", "by": "client", "where": f"port={clients.port}", "start": "-20s", "top": 1000}
        ).raise_for_status().json()
        disk = api.get("/api/v1/query", params={"metric": "disk.ops", "start": "-20s", "step": 1}
                       ).raise_for_status().json()
    finally:
        if clients:
            clients.close()
        for pr in reversed(procs):
            if pr.poll() is None:
                os.kill(pr.pid, signal.SIGTERM)
                try:
                    pr.wait(15)
                except subprocess.TimeoutExpired:
                    os.kill(pr.pid, signal.SIGKILL)
        log.close()

    iops = [v for v in disk["total"] if v][:-1] or [0]
    result = {
        "bench": "agent_cost", "seconds": a.seconds, "clients": a.clients, "target_iops": a.iops,
        "disk_iops_seen_median": statistics.median(iops),
        "clients_seen": len(clients_seen.get("rows", [])),
        "agent_cpu_pct": cpu_pct, "agent_cpu_pct_per_s_median": statistics.median(per_s),
        "agent_cpu_pct_per_s_p95": sorted(per_s)[int(0.95 * (len(per_s) - 1))],
        "agent_rss_bytes_median": statistics.median(rss), "agent_rss_bytes_max": max(rss),
        "sources": [{k: s.get(k) for k in ("name", "state", "cost")} for s in src["sources"]],
        "target": {"cpu_pct": 2.0, "rss_bytes": 80 << 20},
    }
    out = ROOT / "bench" / "results" / f"agent_cost-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    out.write_text(json.dumps(result, indent=2))
    ok_cpu = cpu_pct <= 2.0
    ok_rss = result["agent_rss_bytes_max"] <= 80 << 20
    print(f"agent at {result['disk_iops_seen_median']:.0f} disk IOPS and {result['clients_seen']} clients: "
          f"CPU {cpu_pct:.2f} % of a core (per-second median {result['agent_cpu_pct_per_s_median']:.2f} %, "
          f"p95 {result['agent_cpu_pct_per_s_p95']:.2f} %; target 2 %: {'met' if ok_cpu else 'NOT met'}), "
          f"RSS median {result['agent_rss_bytes_median'] / 2**20:.1f} MiB, max {result['agent_rss_bytes_max'] / 2**20:.1f} MiB "
          f"(target 80 MiB: {'met' if ok_rss else 'NOT met'}); {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
