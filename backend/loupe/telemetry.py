"""Loupe's own health and the low-cardinality headline series, for GET /metrics.

Counters are kept in memory by ingest and exported by a custom collector that
builds fresh metric families on every scrape. Never per-file or per-client labels.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict

import pyarrow as pa
import pyarrow.compute as pc
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from .memory import process_memory

# family -> (labels taken from row dims, counters: name -> (row field, help, scale))
HEADLINES = {
    "nfs": (("proto", "op"), {"nfs_ops": ("count", "NFS operations", 1.0), "nfs_bytes": ("bytes", "NFS payload bytes", 1.0)}),
    "disk": (("disk", "op"), {"disk_ops": ("count", "Disk I/O operations", 1.0), "disk_bytes": ("bytes", "Disk bytes", 1.0)}),
    "cpu": (("mode",), {"cpu_seconds": ("count", "CPU seconds by mode", 1e-6)}),
    "net": (("interface", "direction"), {"net_bytes": ("bytes", "Network bytes", 1.0), "net_packets": ("count", "Network packets", 1.0)}),
    "tcp": ((), {"tcp_retransmits": ("count", "TCP retransmits", 1.0)}),
}
# Rows of a finer layer that the headline would count twice (see catalog.Metric.layer):
# per-client socket rows beside per-interface rows, per-application CPU beside per-mode.
HEADLINE_ROWS = {"net": ("client", False), "cpu": ("application", False)}


class Telemetry(Collector):
    def __init__(self, store_size=lambda: 0, subscribers=lambda: 0, control=None, backlog=dict,
                 memory=lambda: (0, 0), memory_parts=dict, live_pending=lambda: 0) -> None:
        self._lock = threading.Lock()
        self.frames = defaultdict(int)  # result -> n
        self.requests = defaultdict(int)  # body format (json, arrow) -> ingest requests
        self.rows = 0
        self.folded = 0
        self.rejected = defaultdict(int)  # reason kind -> n
        self.lag = 0.0
        self.last_ts = 0
        self.pruned = defaultdict(int)
        self.live_dropped = 0
        self.clock_shifted = 0  # frames placed by server time because their agent's clock was off
        self.ingest_error: str | None = None  # why the last ingest failed, until one succeeds
        self.ingest_error_since: float | None = None
        self.ingest_failures = 0
        self.headline: dict[str, dict[tuple, float]] = defaultdict(lambda: defaultdict(float))
        self.store_size = store_size
        self.backlog = backlog  # Store.backlog: acknowledged rows not yet in the tables, and why
        self.subscribers = subscribers
        self.memory = memory  # Store.memory: (held, limit) bytes
        self.memory_parts = memory_parts  # Store.memory_parts: the engine's memory by what holds it
        self.live_pending = live_pending  # seconds queued for live subscribers, all together
        self.control = control  # SourceControl: agents' and probes' own cost
        self.started = time.time()

    def observe_tables(self, tables: dict[str, pa.Table], received_at: float) -> None:
        """Add one ingest's stored rows to the headline counters, summed by Arrow, not row by row."""
        sums = {}
        for family, table in tables.items():
            if family not in HEADLINES:
                continue
            if family in HEADLINE_ROWS:
                dim, keep_set = HEADLINE_ROWS[family]
                empty = pc.equal(table.column(dim), "")
                table = table.filter(pc.invert(empty) if keep_set else empty)
            labels, counters = HEADLINES[family]
            keys = ["host", *labels]
            fields = sorted({f for f, _, _ in counters.values()})
            grouped = table.group_by(keys).aggregate([(f, "sum") for f in fields]).to_pydict()
            rows = list(zip(*(grouped[k] for k in keys)))
            for name, (f, _, scale) in counters.items():
                sums[name] = [(key, v * scale) for key, v in zip(rows, grouped[f"{f}_sum"])]
        newest = max((pc.max(t.column("ts")).as_py() for t in tables.values() if t.num_rows), default=None)
        with self._lock:
            for name, items in sums.items():
                acc = self.headline[name]
                for key, v in items:
                    acc[key] += v
            if newest is not None:
                self.last_ts = max(self.last_ts, newest)
                self.lag = max(0.0, received_at - (newest + 1))

    def count(self, result: str, n: int = 1) -> None:
        with self._lock:
            self.frames[result] += n

    def count_request(self, fmt: str) -> None:
        with self._lock:
            self.requests[fmt] += 1

    def collect(self):
        with self._lock:
            for name, (labels_src, counters) in ((n, HEADLINES[f]) for f in HEADLINES for n in HEADLINES[f][1]):
                field, help_, _ = counters[name]
                fam = CounterMetricFamily(f"loupe_{name}", help_, labels=["host", *labels_src])
                for key, v in sorted(self.headline[name].items()):
                    fam.add_metric(list(key), v)
                yield fam
            f = CounterMetricFamily("loupe_ingest_frames", "Frames received, by result", labels=["result"])
            for k in ("accepted", "duplicate", "rejected"):
                f.add_metric([k], self.frames[k])
            yield f
            f = CounterMetricFamily("loupe_ingest_requests", "Ingest requests by body format: json (frame versions "
                                    "1 and 2) or arrow (version 3), refused ones included", labels=["format"])
            for k in ("json", "arrow"):
                f.add_metric([k], self.requests[k])
            yield f
            yield CounterMetricFamily("loupe_ingest_rows", "Rows stored", value=self.rows)
            yield CounterMetricFamily("loupe_ingest_folded_rows", "Rows folded into '(other files)'", value=self.folded)
            r = CounterMetricFamily("loupe_rejected_frames", "Frames refused, by reason", labels=["reason"])
            for k, v in sorted(self.rejected.items()):
                r.add_metric([k], v)
            yield r
            yield GaugeMetricFamily("loupe_ingest_lag_seconds", "Receive time minus the end of the frame's second",
                                    value=self.lag)
            yield GaugeMetricFamily("loupe_last_second", "Newest second stored (unix)", value=self.last_ts)
            p = CounterMetricFamily("loupe_pruned_rows", "Rows removed by retention, by table", labels=["table"])
            for k, v in sorted(self.pruned.items()):
                p.add_metric([k], v)
            yield p
            yield CounterMetricFamily("loupe_live_dropped_seconds", "Live pushes skipped for slow subscribers",
                                      value=self.live_dropped)
            yield GaugeMetricFamily("loupe_ingest_failing", "1 while ingest fails (e.g. disk full), else 0",
                                    value=1 if self.ingest_error else 0)
            yield CounterMetricFamily("loupe_ingest_failures", "Ingest requests the store could not take",
                                      value=self.ingest_failures)
            yield CounterMetricFamily("loupe_clock_shifted_frames", "Frames placed by server time because their "
                                      "agent's clock was off by more than the limit", value=self.clock_shifted)
        yield GaugeMetricFamily("loupe_store_bytes", "Size of the store on disk", value=self.store_size())
        held, limit = self.memory()
        yield GaugeMetricFamily("loupe_store_memory_bytes", "Memory the store's engine holds (buffer pool)", value=held)
        yield GaugeMetricFamily("loupe_store_memory_limit_bytes", "The most the store's engine may hold",
                                value=limit)
        g = GaugeMetricFamily("loupe_store_memory_part_bytes", "Memory the store's engine holds, by what holds it "
                              "(DuckDB's duckdb_memory() tags)", labels=["part"])
        for part, v in sorted(self.memory_parts().items()):
            g.add_metric([part], v)
        yield g
        yield from _process_memory()
        b = self.backlog()
        yield GaugeMetricFamily("loupe_store_unflushed_rows", "Acknowledged rows in the ingest log, not yet in the tables",
                                value=b.get("rows", 0))
        yield GaugeMetricFamily("loupe_store_unflushed_bytes", "Memory held by those rows until they are in the tables",
                                value=b.get("bytes", 0))
        yield GaugeMetricFamily("loupe_store_flush_failing", "1 while writing the ingest log's rows to the tables fails",
                                value=1 if b.get("error") else 0)
        yield GaugeMetricFamily("loupe_store_wal_bytes", "The store engine's write-ahead log, not yet checkpointed",
                                value=b.get("wal_bytes", 0))
        yield CounterMetricFamily("loupe_store_checkpoints_refused", "Checkpoints the store engine refused because "
                                  "another write was committing (retried the next second)",
                                  value=b.get("checkpoints_refused", 0))
        yield GaugeMetricFamily("loupe_live_subscribers", "Open live WebSocket connections", value=self.subscribers())
        yield GaugeMetricFamily("loupe_live_pending_seconds", "Seconds waiting to be pushed to live subscribers, "
                                "all together (each keeps at most its newest 30 per family)", value=self.live_pending())
        if self.control is not None:
            yield from self._self_cost()

    def _self_cost(self):
        """Each probe's and agent's own cost, as they last reported it (one series per probe, not per file)."""
        costs = self.control.costs()
        for key, help_ in SOURCE_COST.items():
            g = GaugeMetricFamily(f"loupe_source_{key}", help_, labels=["agent", "source"])
            for (agent, name), c in sorted(costs.items()):
                if key in c:
                    g.add_metric([agent, name], c[key])
            yield g
        agents = self.control.agents()
        for key, help_ in AGENT_STATS.items():
            g = GaugeMetricFamily(f"loupe_agent_{key}", help_, labels=["agent"])
            for agent, v in sorted(agents.items()):
                st = v.get("stats") or {}
                if key in st:
                    g.add_metric([agent], float(st[key]))
            yield g


def _process_memory():
    m = process_memory()
    yield GaugeMetricFamily("loupe_process_resident_bytes", "The server process's resident memory (RSS)",
                            value=m["resident"])
    g = GaugeMetricFamily("loupe_arrow_memory_bytes", "Memory pyarrow's pool has handed out (ingest batches, "
                          "the stage, query results), by the pool's allocator", labels=["pool"])
    g.add_metric([m["arrow_pool"]], m["arrow"])
    yield g
    if "malloc_in_use" in m:  # glibc only
        yield GaugeMetricFamily("loupe_malloc_in_use_bytes", "The C heap's blocks in use (Python objects, "
                                "libraries)", value=m["malloc_in_use"])
        yield GaugeMetricFamily("loupe_malloc_free_bytes", "Free memory the C heap keeps instead of returning it",
                                value=m["malloc_free"])


SOURCE_COST = {
    "runs_per_s": "BPF program runs in the probe's last second (bpf_stats; sampled: its last second held)",
    "bpf_cpu_pct": "BPF program run time in the last second, % of one CPU (bpf_stats; sampled: its last second held)",
    "ns_per_run": "Mean BPF run time per event, ns",
    "stats_age_s": "LOUPE_BPF_STATS=sampled: seconds since the second the run figures are from",
    "map_fill": "Fill of the probe's aggregation map at drain, 0..1",
    "dropped_total": "Events counted into the overflow row because a map was full, since the probe started",
    # the NFS wire decoder's losses since it started (probes/nfswire/probe.py LOSSES)
    "partial_total": "NFS wire decoder: RPC records not decoded, cut by a lost or reordered segment",
    "desync_total": "NFS wire decoder: record marks that made no sense (the stream was picked up again later)",
    "resync_total": "NFS wire decoder: streams picked up again at a later record after a segment was missed, "
                    "reordered or retransmitted (the records between are decoded only if that segment still "
                    "comes: refilled_total)",
    "refilled_total": "NFS wire decoder: segments that came after a later one (reordered, or retransmitted "
                      "after a loss) and were decoded into the gap their stream's resync left",
    "unmatched_total": "NFS wire decoder: replies whose call it had not seen",
    "overwritten_total": "NFS wire decoder: calls whose pending slot a newer call took before the reply",
    "expired_total": "NFS wire decoder: calls unanswered for a minute, their slot taken",
}
AGENT_STATS = {
    "cpu_pct": "Agent process CPU over its last second, % of one core",
    "rss_bytes": "Agent process resident memory",
    "queue_frames": "Frames waiting to be delivered",
    "dropped_frames": "Frames dropped because the agent's queue was full, since start",
}
