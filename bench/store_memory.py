"""The store's memory under sustained ingest, without HTTP: where a server's RSS goes.

    python -m bench.store_memory [--agents 50] [--rows 1000] [--seconds 1800] [--every 60]

Drives a DuckDBStore on a simulated clock as `loupe serve`'s threads do (each simulated second:
the agents' frames in a few group commits, a flush, the rollups; a checkpoint every 30 s and
compaction every 60 s), as fast as the machine allows. Every --every simulated seconds it
records the process's RSS and what each memory consumer says it holds (DuckDB's memory by tag,
pyarrow's pool, glibc's heap, the largest anonymous mappings, the hot table's rows). Results go
to bench/results/store_memory-<UTC time>.json.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .load import frame
from .procs import ROOT


def rss_bytes() -> dict[str, int]:
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        k, _, v = line.partition(":")
        if k in ("RssAnon", "RssFile"):
            out[k] = int(v.split()[0]) * 1024
    return out


def largest_mappings(n: int = 3) -> list[int]:
    """Resident bytes of the process's largest anonymous mappings (the allocators' arenas)."""
    out, anon = [], False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if "-" in head[0] and len(head) >= 5 and ":" not in head[0]:
            anon = len(head) == 5
        elif head[0] == "Rss:" and anon:
            out.append(int(head[1]) * 1024)
    return sorted(out, reverse=True)[:n]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--agents", type=int, default=50)
    p.add_argument("--rows", type=int, default=1000)
    p.add_argument("--seconds", type=int, default=1800, help="simulated seconds")
    p.add_argument("--every", type=int, default=60, help="simulated seconds between samples")
    p.add_argument("--memory-limit", default="512MB", help="the engine's limit (the server's default: 512MB)")
    p.add_argument("--groups", type=int, default=5, help="group commits per simulated second")
    p.add_argument("--frames", action="store_true",
                   help="convert each frame as ingest does (slower); else ingest the agents' converted rows")
    p.add_argument("--threads", type=int, default=1,
                   help="with --frames: ingest from a pool of this many threads, as the server's request workers do")
    p.add_argument("--allocator-background-threads", choices=("true", "false"), default="false",
                   help="the engine's allocator_background_threads setting (DuckDB's default: false)")
    p.add_argument("--tracemalloc", type=int, default=0,
                   help="trace Python allocations from this simulated second on; print the top growth at the end")
    p.add_argument("--tmp", default=None)
    a = p.parse_args(argv)

    import pyarrow as pa

    from loupe.catalog import FAMILIES
    from loupe.frame import Frame
    from loupe.memory import process_memory, use_returning_arrow_pool
    from loupe.store.duckdb_store import DuckDBStore

    use_returning_arrow_pool()  # as the server does; ARROW_DEFAULT_MEMORY_POOL=mimalloc for pyarrow's default
    tmp = Path(tempfile.mkdtemp(prefix="loupe-storemem-", dir=a.tmp))
    t0 = int(time.time()) // 3600 * 3600 + 600  # compaction (hourly, 120 s late) comes after ~1 h
    clock = [float(t0)]
    store = DuckDBStore(tmp / "loupe.duckdb", memory_limit=a.memory_limit, clock=lambda: clock[0])
    store._db.execute(f"SET allocator_background_threads = {a.allocator_background_threads}")
    rng = random.Random(1)
    base = [Frame.model_validate(frame(i, 1, t0, a.rows, rng)) for i in range(a.agents)]
    tables = [store._frames_to_arrow(FAMILIES["nfs"], [f])[0] for f in base]
    pool = ThreadPoolExecutor(a.threads)
    samples = []
    start = time.time()
    try:
        for k in range(a.seconds):
            ts = t0 + k
            now = ts + 1
            clock[0] = now + 0.5
            per = max(1, a.agents // a.groups)
            if a.frames:
                frs = [f.model_copy(update={"ts": ts, "seq": k + 1}) for f in base]
                list(pool.map(lambda i: store.ingest(frs[i:i + per], received_at=now + 0.5), range(0, len(frs), per)))
            else:
                for i in range(0, len(tables), per):
                    t = pa.concat_tables(tables[i:i + per])
                    store.append_arrow("nfs", t.set_column(0, "ts", pa.array([ts] * t.num_rows, pa.int64())))
            store.flush()
            store.rollup(now)
            if k % 60 == 0:
                store.compact(now)
                store.sort_minutes(now)
            if k % 30 == 29:
                store.checkpoint()
            if a.tracemalloc and k == a.tracemalloc:
                import tracemalloc
                tracemalloc.start(8)
                snap0 = tracemalloc.take_snapshot()
            if k % a.every == a.every - 1:
                s = dict(sim_s=k + 1, wall_s=round(time.time() - start, 1), **rss_bytes(), **process_memory(),
                         **{f"duckdb_{tag}": v for tag, v in store.memory_parts().items()},
                         stage=store.backlog()["bytes"], largest_anon=largest_mappings())
                s["hot_rows"] = store._cur.execute("SELECT count(*) FROM nfs_s_hot").fetchone()[0]
                samples.append(s)
                print(json.dumps(s), flush=True)
        if a.tracemalloc:
            for st in tracemalloc.take_snapshot().compare_to(snap0, "traceback")[:8]:
                print(st)
                for line in st.traceback.format()[-8:]:
                    print("   ", line)
    finally:
        pool.shutdown()
        store.close()
        shutil.rmtree(tmp, ignore_errors=True)
    res = dict(when=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), agents=a.agents, rows=a.rows,
               seconds=a.seconds, memory_limit=a.memory_limit, frames=a.frames, threads=a.threads,
               allocator_background_threads=a.allocator_background_threads,
               arrow_pool=pa.default_memory_pool().backend_name, samples=samples)
    out_dir = ROOT / "bench" / "results"
    path = out_dir / f"store_memory-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    path.write_text(json.dumps(res, indent=2) + "\n")
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
