"""Load test: many agents on loopback against a real `loupe serve`.

    python -m bench.load [--agents 50] [--rows 1000] [--seconds 600] [--warmup 30] [--format arrow]

Each agent is a process that, once a second, sends the second that just closed as one
`nfs` frame of --rows rows (its own clients and files) and waits for the answer. As `loupe
agent` does, it sends frame version 3 (Arrow IPC) with its sources' status; `--format json`
sends version-2 JSON instead (what an agent falls back to for a server without version 3).
Recorded, after the warm-up:
- ingest lag: from the end of a second to its acknowledgement (what a live chart waits), p50/p99;
- the server process's CPU (% of one core) and RSS, sampled every second from /proc, with the
  RSS slope over the run (flat after warm-up, or growing);
- frames sent, acknowledged, rejected and refused (non-200), and whether the store holds
  exactly the rows acknowledged (nothing lost, nothing twice);
- the server's own memory gauges from /metrics each minute (the store engine by part, pyarrow's
  pool, the C heap, unflushed rows, the engine's write-ahead log): what the RSS is made of.
Goal (issue 5): lag p99 <= 2 s, nothing lost, RSS flat after warm-up. Results go to
bench/results/load-<UTC time>.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import queue
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from loupe.arrow_ipc import MEDIA_TYPE as ARROW, encode_part, request_body

from .procs import ROOT, proc_sample, served

TOKEN = "load-test-token"
METRICS_TOKEN = "load-metrics-token"
# /metrics gauges recorded each minute: what the server's memory is made of
MEMORY_GAUGES = ("loupe_process_resident_bytes", "loupe_store_memory_bytes", "loupe_store_memory_part_bytes",
                 "loupe_arrow_memory_bytes", "loupe_malloc_in_use_bytes", "loupe_malloc_free_bytes",
                 "loupe_store_unflushed_bytes", "loupe_store_wal_bytes", "loupe_store_bytes")
OPS = ("read", "write", "getattr", "lookup")


def frame(agent: int, seq: int, ts: int, rows: int, rng: random.Random) -> dict:
    clients = [f"10.{agent // 250}.{agent % 250}.{1 + i % 50}" for i in range(rows)]
    return {"v": 2, "source": f"load{agent}@nas{agent}", "seq": seq, "ts": ts, "family": "nfs",
            "host": f"nas{agent}",
            "columns": {"n": rows,
                        "dims": {"client": clients, "op": [OPS[i % 4] for i in range(rows)], "proto": ["v3"] * rows,
                                 "share": ["/export"] * rows,
                                 "file": [f"/export/d{i % 37}/f{(i * 7919 + agent) % 5000}" for i in range(rows)]},
                        "count": [rng.randint(1, 100) for _ in range(rows)],
                        "bytes": [rng.randint(0, 1 << 20) for _ in range(rows)],
                        "hist": {"latency": {"row": list(range(rows)), "bucket": [rng.randint(12, 24) for _ in range(rows)],
                                             "n": [1] * rows}}}}


def body(fr: dict, agent: int, fmt: str) -> tuple[bytes, str]:
    """A request as `loupe agent` makes it: the frame and the agent's sources' status."""
    request = {"agent": f"load{agent}", "status": [{"name": "load.nfs", "families": ["nfs"], "state": "active"}],
               "sent_at": time.time()}
    if fmt == "json":
        return json.dumps({"frames": [fr], **request}).encode(), "application/json"
    header = {k: fr[k] for k in ("source", "seq", "ts", "host")}
    return request_body([(header, encode_part(fr["family"], fr["columns"]))], request), ARROW


def agent_main(agent: int, base: str, rows: int, until: float, fmt: str, out: mp.Queue) -> None:
    lags: list = []
    counts = [0, 0, 0, 0, 0]
    error = None
    try:
        _send(agent, base, rows, until, fmt, random.Random(agent), lags, counts)
    except Exception as e:  # reported, not lost: the run's figures then say an agent failed
        error = f"{type(e).__name__}: {e}"
    out.put(dict(agent=agent, lags=lags, **dict(zip(("sent", "acked", "rejected", "refused", "acked_ops"), counts)),
                 error=error))


def _send(agent: int, base: str, rows: int, until: float, fmt: str, rng: random.Random, lags: list,
          counts: list) -> None:
    """Send one frame a second until `until`; counts: sent, acknowledged, rejected, refused, operations acked."""
    seq = 0
    with httpx.Client(base_url=base, timeout=30, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        nxt = int(time.time()) + 1
        while nxt < until:
            time.sleep(max(0.0, nxt - time.time() + rng.uniform(0.0, 0.05)))  # agents are not in lockstep
            ts = nxt - 1
            nxt += 1
            seq += 1
            fr = frame(agent, seq, ts, rows, rng)
            content, media_type = body(fr, agent, fmt)
            counts[0] += 1
            try:
                r = c.post("/api/v1/ingest", content=content, headers={"Content-Type": media_type})
            except httpx.HTTPError:
                counts[3] += 1
                continue
            if r.status_code != 200:
                counts[3] += 1
                continue
            ans = r.json()
            counts[1] += ans["accepted"]
            counts[2] += len(ans["rejected"])
            counts[4] += sum(fr["columns"]["count"]) if ans["accepted"] else 0
            lags.append((ts, time.time() - (ts + 1)))


def memory_gauges(base: str) -> dict[str, float]:
    """The server's memory gauges now, MiB, a labelled one as name{label}."""
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(base + "/metrics", timeout=10, headers={"Authorization": f"Bearer {METRICS_TOKEN}"}).text
    out = {}
    for fam in text_string_to_metric_families(text):
        for smp in fam.samples:
            if smp.name in MEMORY_GAUGES:
                label = ",".join(smp.labels.values())
                out[smp.name.removeprefix("loupe_").removesuffix("_bytes") + (f"{{{label}}}" if label else "")] = \
                    round(smp.value / 2**20, 1)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--agents", type=int, default=50)
    p.add_argument("--rows", type=int, default=1000, help="rows per agent per second")
    p.add_argument("--seconds", type=int, default=600)
    p.add_argument("--warmup", type=int, default=30, help="seconds left out of the figures")
    p.add_argument("--format", choices=("arrow", "json"), default="arrow",
                   help="frame version 3 (Arrow IPC, as `loupe agent` sends) or version-2 JSON")
    p.add_argument("--tmp", default=None, help="scratch directory for the server's data")
    a = p.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="loupe-load-", dir=a.tmp))
    env = dict(LOUPE_INGEST_TOKEN=TOKEN, LOUPE_METRICS_TOKEN=METRICS_TOKEN, LOUPE_ADMIN_PASSWORD="load-admin-password")
    with served(tmp, ["--no-local-agent"], env) as (srv, base):
        start = time.time()
        until = start + a.seconds
        out: mp.Queue = mp.Queue()
        agents = [mp.Process(target=agent_main, args=(i, base, a.rows, until, a.format, out), daemon=True)
                  for i in range(a.agents)]
        for ag in agents:
            ag.start()
        samples = []  # (t, cpu seconds, rss)
        memory = []  # the server's memory gauges, once a minute
        next_gauges = start + 60
        while time.time() < until + 2:
            samples.append((time.time(), *proc_sample(srv.pid)))
            if time.time() >= next_gauges:
                next_gauges += 60
                try:
                    memory.append(dict(minute=round((time.time() - start) / 60), **memory_gauges(base)))
                except httpx.HTTPError as e:
                    memory.append(dict(minute=round((time.time() - start) / 60), error=str(e)))
            time.sleep(1.0)
        results = []
        for _ in agents:  # an agent that never answers is named in the result, not a lost run
            try:
                results.append(out.get(timeout=120))
            except queue.Empty:
                break
        for ag in agents:
            ag.join(timeout=10)
        time.sleep(3)  # the last acknowledged rows reach the tables
        api = (tmp / "data" / "cli.token").read_text().strip()
        q = httpx.get(base + "/api/v1/query", timeout=60, headers={"Authorization": f"Bearer {api}"},
                      params={"metric": "nfs.ops", "start": str(int(start) - 5), "end": str(int(until) + 5),
                              "step": 1}).json()
        stored_ops = sum(q["total"])  # every acknowledged frame's counts, once: nothing lost, nothing twice

    warm = start + a.warmup
    lags = np.array([lag for r in results for ts, lag in r["lags"] if ts >= warm]) if results else np.array([])
    s = np.array([x for x in samples if x[0] >= warm])
    cpu_pct = 100 * np.diff(s[:, 1]) / np.diff(s[:, 0]) if len(s) > 1 else np.array([0.0])
    rss = s[:, 2] if len(s) else np.array([0.0])
    slope = float(np.polyfit(s[:, 0] - s[0, 0], rss, 1)[0]) if len(s) > 2 else 0.0
    half = s[len(s) // 2:]  # the measured window's second half: still growing, or flat by then?
    slope2 = float(np.polyfit(half[:, 0] - half[0, 0], half[:, 2], 1)[0]) if len(half) > 2 else 0.0
    # the whole run's RSS, warm-up included, as the most of each minute (what a plot of it shows)
    every = np.array(samples)
    per_minute = [float(every[(every[:, 0] >= t) & (every[:, 0] < t + 60), 2].max() / 2**20)
                  for t in np.arange(every[0, 0], every[-1, 0], 60)] if len(every) else []
    # each minute's lag p99 and max, warm-up included: where in the run a stall fell
    every_lag = np.array([(ts, lag) for r in results for ts, lag in r["lags"]]) if results else np.empty((0, 2))
    lag_minutes = [every_lag[(every_lag[:, 0] >= t) & (every_lag[:, 0] < t + 60), 1]
                   for t in np.arange(start, every_lag[:, 0].max() + 1, 60)] if len(every_lag) else []
    sent = sum(r["sent"] for r in results)
    acked = sum(r["acked"] for r in results)
    res = dict(
        when=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), agents=a.agents, rows_per_agent=a.rows,
        seconds=a.seconds, warmup=a.warmup, format=a.format, cpus=os.cpu_count(),
        lag_p50_s=float(np.percentile(lags, 50)) if len(lags) else None,
        lag_p99_s=float(np.percentile(lags, 99)) if len(lags) else None,
        lag_max_s=float(lags.max()) if len(lags) else None,
        lag_p99_max_per_minute_s=[(round(float(np.percentile(m, 99)), 2), round(float(m.max()), 2)) if len(m) else None
                                  for m in lag_minutes],
        server_cpu_pct_mean=float(cpu_pct.mean()), server_cpu_pct_p99=float(np.percentile(cpu_pct, 99)),
        rss_first_mib=float(rss[0] / 2**20), rss_last_mib=float(rss[-1] / 2**20), rss_max_mib=float(rss.max() / 2**20),
        rss_slope_mib_per_min=slope * 60 / 2**20,
        rss_slope_second_half_mib_per_min=slope2 * 60 / 2**20,
        rss_max_per_minute_mib=[round(x, 1) for x in per_minute],
        memory_gauges_mib=memory,
        frames_sent=sent, frames_acked=acked, frames_rejected=sum(r["rejected"] for r in results),
        requests_refused=sum(r["refused"] for r in results),
        ops_acked=sum(r["acked_ops"] for r in results), ops_stored=stored_ops,
        nothing_lost=sum(r["acked_ops"] for r in results) == stored_ops if len(results) == a.agents else None,
        agents_missing=sorted(set(range(a.agents)) - {r["agent"] for r in results}),
        agent_errors={r["agent"]: r["error"] for r in results if r["error"]},
    )
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"load-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    path.write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps(res, indent=2))
    print(f"written to {path}")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
