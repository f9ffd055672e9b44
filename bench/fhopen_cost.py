"""What naming a file by open_by_handle_at costs the agent (the wire decoder's opener).

Makes ``--files`` files in a temporary directory under ``--dir`` and their
nfs-ganesha VFS handles, then times, in this process: the opener on each handle
once (decode, find the filesystem, open_by_handle_at, readlink, two stats, map
to the export), a cached answer, and a flood of ``--flood`` unknown handles in
one second through the bounded cache (``--rate`` opens a second), in CPU time.
Writes bench/results/fhopen-<time>.json. Needs CAP_DAC_READ_SEARCH (root).

    python -m bench.fhopen_cost [--files 2000] [--dir /var/tmp] [--rate 200] [--flood 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path

from loupe_probes.nfswire.fhopen import (CachedOpener, Export, HandleOpener, KernelHandle, ganesha_wire,
                                         name_to_handle_at, why_off)

RESULTS = Path(__file__).resolve().parent / "results"


def per_call_us(fn, args) -> list[float]:
    out = []
    for a in args:
        t0 = time.perf_counter_ns()
        fn(a)
        out.append((time.perf_counter_ns() - t0) / 1000)
    return out


def summary(us: list[float]) -> dict:
    us = sorted(us)
    return {"n": len(us), "median_us": round(statistics.median(us), 2), "p95_us": round(us[int(len(us) * 0.95)], 2)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--files", type=int, default=2000)
    p.add_argument("--dir", default="/var/tmp")
    p.add_argument("--rate", type=float, default=200)
    p.add_argument("--flood", type=int, default=20000)
    a = p.parse_args(argv)
    if why := why_off():
        print(f"fhopen_cost: open_by_handle_at {why}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(dir=a.dir, prefix="loupe-fhopen-") as d:
        root = Path(d)
        fsid = struct.pack("<Q", os.statvfs(root).f_fsid)
        wires = []
        for i in range(a.files):
            f = root / f"d{i % 50}" / f"f{i}.bin"
            f.parent.mkdir(exist_ok=True)
            f.touch()
            htype, body = name_to_handle_at(f)
            wires.append(ganesha_wire(KernelHandle("ganesha", 4, fsid, htype, body, 1)))
        opener = HandleOpener(discover=lambda: [Export(str(root), "/export", 1)])
        try:
            first = per_call_us(opener, wires)
            named = sum(opener(w) is not None for w in wires)
            by_hash = dict(enumerate(wires))
            cached = CachedOpener(by_hash.get, opener, rate=1e9)
            for h in by_hash:
                cached(h)
            hits = per_call_us(cached, list(by_hash))
            # a flood: every handle unknown, all in one second, through the real bound
            flood = {i: w for i, w in enumerate(wires * (a.flood // len(wires) + 1))}
            bounded = CachedOpener(flood.get, opener, rate=a.rate)
            c0 = time.process_time()
            for h in range(a.flood):
                bounded(h)
            flood_cpu = time.process_time() - c0
        finally:
            opener.close()
    out = {"bench": "fhopen_cost", "args": vars(a), "named": named, "first_open": summary(first),
           "cached": summary(hits),
           "flood": {"handles": a.flood, "opened": bounded.opened + bounded.failed, "deferred": bounded.deferred,
                     "cpu_ms": round(flood_cpu * 1000, 2)}}
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"fhopen-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out))
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
