"""make bench, section nfswire: what the NFS wire decoder costs under load.

A real nfs-ganesha serves clients in network namespaces (loupe.lab); each client
is a pipelined NFSv3 load generator (bench/nfsload.py: one TCP connection, many
calls in flight, GETATTR / ACCESS / small READ in turn). Each round runs the
same load with the decoder attached to the lab's bridge (tc ingress + egress)
and without it (the peer), in alternating order; with ``--object`` given more
than once, once with each object too, so that builds are compared under the same
load. Reported per object, medians over the rounds:

* ops/s the server answered (counted by the clients from its replies) and ops the
  decoder counted in the same window: they must agree op for op;
* BPF run time (bpf_stats) per op and per packet, and as % of one core: the
  run time over the load window's wall time;
* ops/s with and without the decoder: its overhead on the server;
* what 100k ops/s would cost at the measured ns per op;
* the same hooks with empty programs (``build/bpf/nfswire-hook.bpf.o``) under the
  same load: what the hook and bpf_stats cost per op with no decoder at all, and
  so the decoder's own share of its figure;
* the floor (``build/bpf/nfswire-floor.bpf.o``, probes/nfswire/floor.bpf.h): the
  same hooks doing only what any decoder there must (headers, a copy of each
  record's head, the call's clock, a pending slot, one row), so what decoding
  RPC and NFS adds above that;
* what bpf_stats itself adds to a program run, and how much of that it reports
  as the program's run time (the empty program test-run with stats off and on).

    python -m bench.nfswire [--seconds 10] [--clients 2] [--depth 64] [--rounds 3]
    python -m bench.nfswire --object old.bpf.o --object probes/nfswire/nfswire.bpf.o
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXPORT = "/export"
TARGET_OPS = 100_000
OBJECT = ROOT / "probes" / "nfswire" / "nfswire.bpf.o"
HOOK = ROOT / "build" / "bpf" / "nfswire-hook.bpf.o"  # its programs empty (make bpf)
FLOOR = ROOT / "build" / "bpf" / "nfswire-floor.bpf.o"  # only what any decoder must do (make bpf)


def _requirements() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces, BPF)"
    from loupe.lab import missing_tools
    from loupe_probes.bpf import libbpf

    missing = missing_tools("ip", "ganesha.nfsd", "rpcbind")
    if missing:
        return f"not installed: {', '.join(missing)} (make deps installs the lab packages)"
    why = libbpf.why_not_bpf()
    if why:
        return why
    if not OBJECT.exists():
        return f"{OBJECT.relative_to(ROOT)} is not built (make bpf)"
    return None


def _load(lab, g, seconds: float, depth: int, read_size: int) -> tuple[list[dict], float, float]:
    """Every client runs the load at once; returns their reports and the window."""
    start = time.time() + 1.5  # python start-up and MOUNT happen before this
    procs = []
    for i, c in enumerate(lab.clients):
        procs.append(subprocess.Popen(c.cmd(sys.executable, "-m", "bench.nfsload", "--server", g.bind_ip,
                                            "--port", str(g.port), "--mount-port", str(g.mount_port),
                                            "--export", EXPORT, "--file", f"f{i}", "--seconds", str(seconds),
                                            "--depth", str(depth), "--read-size", str(read_size),
                                            "--start-at", str(start)),
                                      cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    reports = []
    for p in procs:
        out, err = p.communicate(timeout=seconds + 60)
        line = out.strip().splitlines()[-1] if out.strip() else ""
        rep = json.loads(line) if line.startswith("{") else {"error": err.strip()[-500:] or f"exit {p.returncode}"}
        if "error" in rep:
            raise RuntimeError(f"load client failed: {rep['error']}")
        reports.append(rep)
    end = time.time()
    return reports, start, end


def _round(lab, g, object_dir: Path | None, seconds: float, depth: int, read_size: int) -> dict:
    """One load run, with the decoder in ``object_dir`` attached (None: without)."""
    from loupe_probes.nfswire import NfsWireProbe

    probe = None
    if object_dir is not None:
        probe = NfsWireProbe("bench", ifaces=[lab.bridge], mount_port=g.mount_port, exports=[EXPORT],
                             object_dir=object_dir)
        if not probe.start():
            raise RuntimeError(f"the decoder did not start: {probe.state}: {probe.reason}")
        probe.collect(0)  # start from empty maps
        before = probe.obj.prog_stats()
    try:
        reports, start, end = _load(lab, g, seconds, depth, read_size)
        wall = max(r["wall_s"] for r in reports)
        served = sum(sum(r["ops"].values()) for r in reports)
        out = {"ops": served, "failed": sum(r["failed"] for r in reports), "wall_s": wall,
               "ops_per_s": served / wall, "per_client_ops_per_s": [r["ops_per_s"] for r in reports]}
        if probe is None:
            return out
        after = probe.obj.prog_stats()
        rows = probe.collect(int(time.time()))
        stats = dict(probe.stats)
    finally:
        if probe is not None:
            probe.close()
    decoded: dict[tuple[str, str], int] = {}
    for r in rows[0][2] if rows else []:
        d = r["dims"]
        decoded[(d["client"], d["op"])] = decoded.get((d["client"], d["op"]), 0) + r["count"]
    want: dict[tuple[str, str], int] = {}
    for c, r in zip(lab.clients, reports):
        for op, n in {**r["ops"], **r["setup_ops"]}.items():
            want[(c.ip, op)] = want.get((c.ip, op), 0) + n
    mismatch = {f"{k[0]} {k[1]}": (decoded.get(k, 0), want.get(k, 0)) for k in set(decoded) | set(want)
                if decoded.get(k, 0) != want.get(k, 0)}
    runs = {p: after[p][0] - before.get(p, (0, 0))[0] for p in after}
    ns = {p: after[p][1] - before.get(p, (0, 0))[1] for p in after}
    total_ns, total_runs = sum(ns.values()), sum(runs.values())
    ops_decoded = sum(decoded.values())
    window = end - start  # the stats window: load start to the last client's exit
    out.update({
        "ops_decoded": ops_decoded,
        "decoded_equals_served": not mismatch,
        "mismatch (decoded, served)": mismatch,
        "packets": runs,
        "bpf_ns": ns,
        "bpf_ns_per_op": total_ns / ops_decoded if ops_decoded else None,
        "bpf_ns_per_served_op": total_ns / served if served else None,
        "bpf_ns_per_packet": {p: ns[p] / runs[p] for p in runs if runs[p]},
        "ops_per_packet": ops_decoded / total_runs if total_runs else None,
        "bpf_pct_of_one_core": 100 * total_ns / 1e9 / window,
        "stats": stats,
    })
    return out


def _ns(x: float | None) -> str:
    return "-" if x is None else f"{x:.0f}"  # None: the object decoded no op


def _med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def _summary(on: list[dict], off: list[dict]) -> dict:
    ns_op = _med(r["bpf_ns_per_op"] for r in on)
    summary = {
        "ops_per_s_with_decoder": _med(r["ops_per_s"] for r in on),
        "ops_per_s_without_decoder": _med(r["ops_per_s"] for r in off),
        "bpf_ns_per_op": ns_op,
        "bpf_ns_per_packet": {p: _med(r["bpf_ns_per_packet"].get(p) for r in on)
                              for p in ("nfswire_ingress", "nfswire_egress")},
        "ops_per_packet": _med(r["ops_per_packet"] for r in on),
        "bpf_pct_of_one_core": _med(r["bpf_pct_of_one_core"] for r in on),
        "decoded_equals_served_every_round": all(r["decoded_equals_served"] for r in on),
        "pct_of_one_core_at_100k_ops_per_s": ns_op * TARGET_OPS / 1e7 if ns_op else None,
    }
    summary["server_overhead_pct"] = (100 * (1 - summary["ops_per_s_with_decoder"] / summary["ops_per_s_without_decoder"]))
    return summary


def _above(summary: dict, out: dict) -> dict:
    """The decoder's ns per op less what the empty programs cost (its own share),
    and less the floor's (what decoding adds)."""
    for name, key in (("hook_only", "hook"), ("floor", "floor")):
        base = out.get(name, {}).get("bpf_ns_per_op")
        if base is not None and summary["bpf_ns_per_op"] is not None:
            summary[f"{name}_ns_per_op"] = base
            summary[f"bpf_ns_per_op_above_{key}"] = summary["bpf_ns_per_op"] - base
    return summary


def _stats_cost(hook: Path, repeat: int = 1_000_000) -> dict:
    """What bpf_stats itself costs a run: the empty ingress program test-run
    ``repeat`` times in a row with run-time stats off, then on (medians of 5 each);
    and the run time bpf_stats reports for it meanwhile, which is the part of its
    two clock reads that falls inside what it times."""
    from loupe_probes.bpf import libbpf

    if Path("/proc/sys/kernel/bpf_stats_enabled").read_text().strip() != "0":
        return {"skipped": "run-time stats are held on by another program: no run without them"}
    frame = bytes(74)
    with libbpf.BpfObject(hook) as obj:
        off = statistics.median(obj.test_run("nfswire_ingress", frame, repeat)[1] for _ in range(5))
        stats = libbpf.enable_stats()
        try:
            before = obj.prog_stats()["nfswire_ingress"]
            on = statistics.median(obj.test_run("nfswire_ingress", frame, repeat)[1] for _ in range(5))
            after = obj.prog_stats()["nfswire_ingress"]
        finally:
            stats.close()
    return {"test_run_ns_per_run_stats_off": off, "test_run_ns_per_run_stats_on": on,
            "added_ns_per_run": on - off,
            "reported_ns_per_run_of_the_empty_program": (after[1] - before[1]) / max(1, after[0] - before[0])}


def bench_nfswire(seconds: float = 10, clients: int = 2, depth: int = 64, rounds: int = 3,
                  read_size: int = 512, objects: list[Path] | None = None,
                  baselines: dict[str, Path] | None = None) -> dict:
    """With one object (default: the built one): "summary", "with_decoder" and
    "without_decoder" as before; with several, those keyed by object too. Each of
    ``baselines`` (default: "hook_only" and "floor", those built) runs beside
    them in every round and is reported per op served under its name."""
    why = _requirements()
    if why:
        return {"skipped": why}
    from loupe.lab import Ganesha, Lab

    os.environ["LOUPE_BPF_STATS"] = "on"  # run time over whole rounds, whatever the shell says

    objects, load_before = objects or [OBJECT], os.getloadavg()
    missing = [str(o) for o in objects if not o.is_file()]
    if missing:
        raise ValueError(f"no such decoder object: {', '.join(missing)}")
    bases = {n: o for n, o in ({"hook_only": HOOK, "floor": FLOOR} if baselines is None else baselines).items()
             if o.is_file()}
    objects = [*objects, *bases.values()]
    with tempfile.TemporaryDirectory() as tmp, Lab(clients=clients) as lab, Ganesha(lab.server_ip, [EXPORT]) as g:
        dirs: list[Path | None] = [None]  # the probe loads <dir>/nfswire.bpf.o
        for i, o in enumerate(objects):
            (Path(tmp) / str(i)).mkdir()
            shutil.copy(o, Path(tmp) / str(i) / OBJECT.name)
            dirs.append(Path(tmp) / str(i))
        exp = g.export_dir(EXPORT)
        for i in range(clients):
            (exp / f"f{i}").write_bytes(os.urandom(64 * 1024))
        _load(lab, g, 2, depth, read_size)  # warm ganesha's caches
        runs: list[list[dict]] = [[] for _ in dirs]  # [0]: without the decoder
        for r in range(rounds):
            for j in (range(len(dirs)) if r % 2 else reversed(range(len(dirs)))):
                res = _round(lab, g, dirs[j], seconds, depth, read_size)
                runs[j].append(res)
                print(f"  round {r + 1} {'decoder off' if j == 0 else objects[j - 1]}: {res['ops_per_s']:,.0f} ops/s"
                      + (f", {_ns(res['bpf_ns_per_op'])} ns/op, {res['bpf_pct_of_one_core']:.2f} % of a core, "
                         f"decoded == served: {res['decoded_equals_served']}" if j else ""), flush=True)
    out = {"config": dict(seconds=seconds, clients=clients, depth=depth, rounds=rounds, read_size=read_size,
                          mix="NFSv3 GETATTR, ACCESS, READ in turn; one TCP connection per client",
                          cpus=os.cpu_count(), kernel=os.uname().release, objects=[str(o) for o in objects],
                          load_average_before=load_before, load_average_after=os.getloadavg()),
           "without_decoder": runs[0]}
    if "hook_only" in bases:
        out["bpf_stats_cost"] = _stats_cost(bases["hook_only"])
    for name in reversed(bases):  # per op served: they decode nothing, or not every op
        base_runs = runs.pop()
        out[name] = {"object": str(objects.pop()), "bpf_ns_per_op": _med(r["bpf_ns_per_served_op"] for r in base_runs),
                     "bpf_ns_per_packet": {p: _med(r["bpf_ns_per_packet"].get(p) for r in base_runs)
                                           for p in ("nfswire_ingress", "nfswire_egress")},
                     "rounds": base_runs}
    if len(objects) == 1:
        return {**out, "summary": _above(_summary(runs[1], runs[0]), out), "with_decoder": runs[1]}
    summary = {str(o): _above(_summary(runs[j + 1], runs[0]), out) for j, o in enumerate(objects)}
    for j, o in enumerate(objects[1:], 2):  # rounds ran side by side: their ratios drift less than the medians
        summary[str(o)]["bpf_ns_per_op_ratio_to_first"] = _med(
            a["bpf_ns_per_op"] / b["bpf_ns_per_op"] for a, b in zip(runs[j], runs[1])
            if a["bpf_ns_per_op"] and b["bpf_ns_per_op"])
    return {**out, "summary": summary, "with_decoder": {str(o): runs[j + 1] for j, o in enumerate(objects)}}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--clients", type=int, default=2)
    p.add_argument("--depth", type=int, default=64)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--read-size", type=int, default=512)
    p.add_argument("--object", type=Path, action="append",
                   help="a decoder object; repeat to compare objects in the same run (default: the built one)")
    p.add_argument("--no-hook", action="store_true",
                   help=f"do not also run the empty programs ({HOOK.relative_to(ROOT)}) beside the decoder")
    p.add_argument("--no-floor", action="store_true",
                   help=f"do not also run the floor ({FLOOR.relative_to(ROOT)}) beside the decoder")
    p.add_argument("--no-save", action="store_true", help="print only; do not write bench/results")
    a = p.parse_args(argv)
    bases = {n: o for n, o, off in (("hook_only", HOOK, a.no_hook), ("floor", FLOOR, a.no_floor)) if not off}
    res = bench_nfswire(a.seconds, a.clients, a.depth, a.rounds, a.read_size, a.object, bases)
    print(json.dumps(res.get("summary", res), indent=1))
    if "bpf_stats_cost" in res:
        print("bpf_stats itself:", json.dumps(res["bpf_stats_cost"]))
    if not a.no_save:
        out = ROOT / "bench" / "results" / ("nfswire-" + time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + ".json")
        out.write_text(json.dumps({"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                   "cpus": os.cpu_count(), "nfswire": res}, indent=1) + "\n")
        print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
