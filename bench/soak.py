"""Soak: `loupe serve --demo` with a large demo NAS for an hour, watched from outside.

    python -m bench.soak [--clients 1000] [--seconds 3600] [--warmup 300]   (or: make soak)

Once a second (at a random point in it), recorded from outside the server as a user would meet it:
- freshness lag: the wall clock minus the end of the newest second of demo-nas's NFS
  operations that the query API returns (what a live chart shows), p50/p99/max;
- arrival lag: /metrics' loupe_ingest_lag_seconds, receive time minus the end of a frame's second;
- the server process's RSS and CPU (from /proc), and from /metrics the store engine's
  buffer pool, its limit, the store's size on disk and its write-ahead log.
Goal (issue 5): RSS flat after warm-up, lag steady. The summary and the series (per 10 s) go
to bench/results/soak-<UTC time>.json, and the plot to docs/soak.svg (--plot to change).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from .procs import ROOT, proc_sample, served
from .svgplot import panels

METRICS_TOKEN = "soak-metrics-token"


def gauge(text: str, name: str) -> float | None:
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def freshness(c: httpx.Client) -> float | None:
    """Seconds from the end of demo-nas's newest queryable second to now (None: nothing yet)."""
    now = time.time()
    q = c.get("/api/v1/query", params={"metric": "nfs.ops", "where": "host=demo-nas", "start": "-60s",
                                       "end": "now", "step": 1}).json()
    seen = [t for t, v in zip(q["timestamps"], q["total"]) if v > 0]
    return now - (max(seen) + 1) if seen else None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", type=int, default=1000, help="clients of the demo NAS")
    p.add_argument("--seconds", type=int, default=3600)
    p.add_argument("--warmup", type=int, default=300, help="seconds left out of the figures")
    p.add_argument("--tmp", default=None, help="scratch directory for the server's data")
    p.add_argument("--plot", default=str(ROOT / "docs" / "soak.svg"), help="SVG written here ('' for none)")
    a = p.parse_args(argv)
    if a.warmup >= a.seconds:
        p.error("--warmup must be shorter than --seconds")

    tmp = Path(tempfile.mkdtemp(prefix="loupe-soak-", dir=a.tmp))
    env = dict(LOUPE_METRICS_TOKEN=METRICS_TOKEN, LOUPE_ADMIN_PASSWORD="soak-admin-password")
    samples = []  # (t, cpu s, rss, lag, arrival lag, engine memory, engine limit, store bytes, wal bytes)
    with served(tmp, ["--demo", "--demo-clients", str(a.clients), "--demo-backfill", "0"], env) as (srv, base):
        api = (tmp / "data" / "cli.token").read_text().strip()
        with httpx.Client(base_url=base, timeout=30, headers={"Authorization": f"Bearer {api}"}) as c, \
                httpx.Client(base_url=base, timeout=30, headers={"Authorization": f"Bearer {METRICS_TOKEN}"}) as m:
            start = time.time()
            nxt = start
            while time.time() < start + a.seconds:
                t = time.time()
                cpu, rss = proc_sample(srv.pid)
                lag = freshness(c)
                text = m.get("/metrics").text
                samples.append((t - start, cpu, rss, lag, gauge(text, "loupe_ingest_lag_seconds"),
                                gauge(text, "loupe_store_memory_bytes"), gauge(text, "loupe_store_memory_limit_bytes"),
                                gauge(text, "loupe_store_bytes"), gauge(text, "loupe_store_wal_bytes")))
                if len(samples) % 300 == 0:
                    print(f"soak: {int(t - start)} s of {a.seconds}: RSS {rss / 2**20:.0f} MiB, lag {lag or 0:.2f} s",
                          flush=True)
                nxt += 1.0  # one sample a second, at a random point in it, as a person glances at a chart
                time.sleep(max(0.0, nxt + random.random() * 0.9 - time.time()))
    s = np.array([[np.nan if v is None else v for v in row] for row in samples], dtype=float)
    warm = s[s[:, 0] >= a.warmup]
    lags = warm[:, 3][~np.isnan(warm[:, 3])]
    cpu_pct = 100 * np.diff(warm[:, 1]) / np.diff(warm[:, 0])
    mib = warm[:, 2] / 2**20
    half = warm[warm[:, 0] >= (a.warmup + a.seconds) / 2]
    slope = lambda rows, col: float(np.polyfit(rows[:, 0], rows[:, col] / 2**20, 1)[0] * 60)  # noqa: E731
    res = dict(
        when=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), clients=a.clients, seconds=a.seconds,
        warmup=a.warmup, cpus=os.cpu_count(), samples=len(samples),
        lag_p50_s=float(np.percentile(lags, 50)), lag_p99_s=float(np.percentile(lags, 99)),
        lag_max_s=float(lags.max()), lag_missing_samples=int(np.isnan(warm[:, 3]).sum()),
        arrival_lag_p99_s=float(np.nanpercentile(warm[:, 4], 99)),
        server_cpu_pct_mean=float(cpu_pct.mean()),
        rss_first_mib=float(mib[0]), rss_last_mib=float(mib[-1]), rss_max_mib=float(mib.max()),
        rss_slope_mib_per_min=slope(warm, 2), rss_slope_second_half_mib_per_min=slope(half, 2),
        engine_memory_max_mib=float(np.nanmax(warm[:, 5]) / 2**20), engine_limit_mib=float(warm[-1, 6] / 2**20),
        store_first_mib=float(warm[0, 7] / 2**20), store_last_mib=float(warm[-1, 7] / 2**20),
        wal_max_mib=float(np.nanmax(warm[:, 8]) / 2**20) if not np.isnan(warm[:, 8]).all() else None,
        checkpoints_refused=gauge(text, "loupe_store_checkpoints_refused_total"),  # retried the next second
    )
    every = s[::10]
    res["series"] = {"t_s": every[:, 0].round(1).tolist(), "rss_mib": (every[:, 2] / 2**20).round(1).tolist(),
                     "lag_s": [None if np.isnan(v) else round(v, 3) for v in every[:, 3]],
                     "engine_mib": (every[:, 5] / 2**20).round(1).tolist(),
                     "store_mib": (every[:, 7] / 2**20).round(1).tolist(),
                     "wal_mib": [None if np.isnan(v) else round(v / 2**20, 1) for v in every[:, 8]]}
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"soak-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    path.write_text(json.dumps(res, indent=1) + "\n")
    if a.plot:
        minutes = [t / 60 for t in res["series"]["t_s"]]
        ser = res["series"]
        Path(a.plot).write_text(panels(
            f"Soak: loupe serve --demo, {a.clients} clients, {a.seconds // 60} min ({path.name})", minutes,
            [{"label": "Memory (MiB)", "ymin": 0, "series": [("server RSS", ser["rss_mib"], "#1f5fa8"),
                                                            ("store buffer pool", ser["engine_mib"], "#d9822b"),
                                                            ("store on disk", ser["store_mib"], "#5a9e3a"),
                                                            ("of which WAL", ser["wal_mib"], "#8a8f98")]},
             {"label": "Freshness lag (s): now minus the newest queryable second", "ymin": 0,
              "series": [("lag", ser["lag_s"], "#b03a48")]}],
            xlabel="minutes since start"))
    print(json.dumps({k: v for k, v in res.items() if k != "series"}, indent=2))
    print(f"written to {path}" + (f" and {a.plot}" if a.plot else ""))
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
