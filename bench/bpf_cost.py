"""BPF cost per disk I/O: Loupe's disk probe against libbpf-tools' biolatency, same load, same run.

Each tool runs alone under the same fio job (4 KiB random O_DIRECT reads of a file
on the root disk, 10 s by default); the kernel's BPF run-time statistics give the
time its programs ran, and /proc/diskstats the I/Os the disk completed meanwhile.
Cost per I/O = BPF run time / completed I/Os (issue and completion programs together).
Loupe keys more (per disk x op, with latency, size and offset histograms, against
biolatency's one latency histogram). Needs root, fio, and biolatency (Debian
package libbpf-tools).

    .venv/bin/python -m bench.bpf_cost [--seconds 10] [--rounds 2]

Result: bench/results/bpf_cost-<UTC timestamp>.json, and a summary on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from loupe_probes.bpf import libbpf
from loupe_probes.disk import DiskProbe
from loupe_probes.disk.probe import skipped

ROOT = Path(__file__).resolve().parent.parent
BIOLATENCY = "/usr/sbin/biolatency"


def disk_of(path: Path) -> str:
    st = os.stat(path)
    real = (Path("/sys/dev/block") / f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}").resolve()
    if (real / "partition").exists():
        real = real.parent
    return real.name


def completed_ios(disk: str) -> int:
    for line in Path("/proc/diskstats").read_text().splitlines():
        f = line.split()
        if f[2] == disk:
            return int(f[3]) + int(f[7])  # reads + writes completed
    raise SystemExit(f"{disk} not in /proc/diskstats")


def fio(path: Path, seconds: int) -> dict:
    r = subprocess.run(["fio", "--name=bpfcost", f"--filename={path}", "--size=256M", "--direct=1",
                        "--rw=randread", "--bs=4k", "--ioengine=psync", "--numjobs=1", "--time_based",
                        f"--runtime={seconds}", "--output-format=json"], capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"fio failed: {r.stderr[-500:]}")
    job = json.loads(r.stdout)["jobs"][0]["read"]
    return {"ios": job["total_ios"], "iops": job["iops"]}


def prog_table() -> dict[int, dict]:
    out = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True, check=True).stdout
    return {p["id"]: p for p in json.loads(out)}


def measure(tool: str, path: Path, disk: str, seconds: int) -> dict:
    """Run fio under one tool; its programs' run time and count, and the disk's I/Os."""
    if tool == "loupe":
        probe = DiskProbe("bench")
        if not probe.start():
            raise SystemExit(f"disk probe did not start: {probe.reason}")
        try:
            s0, io0 = probe.obj.prog_stats(), completed_ios(disk)
            job = fio(path, seconds)
            s1, io1 = probe.obj.prog_stats(), completed_ios(disk)
        finally:
            probe.close()
        runs = sum(s1[p][0] - s0[p][0] for p in s1)
        ns = sum(s1[p][1] - s0[p][1] for p in s1)
    else:
        before = set(prog_table())
        proc = subprocess.Popen([BIOLATENCY, "3600", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            ids: set[int] = set()
            for _ in range(100):  # until its programs are loaded and attached
                time.sleep(0.1)
                ids = {i for i, p in prog_table().items() if i not in before and "block_rq" in p.get("name", "")
                       or i not in before and any(x.get("comm") == "biolatency" for x in p.get("pids", []))}
                if ids or proc.poll() is not None:
                    break
            if not ids:
                raise SystemExit(f"biolatency loaded no programs: {proc.stderr.read().decode()[-500:] if proc.poll() is not None else 'timeout'}")
            t0, io0 = prog_table(), completed_ios(disk)
            job = fio(path, seconds)
            t1, io1 = prog_table(), completed_ios(disk)
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        runs = sum(t1[i].get("run_cnt", 0) - t0[i].get("run_cnt", 0) for i in ids)
        ns = sum(t1[i].get("run_time_ns", 0) - t0[i].get("run_time_ns", 0) for i in ids)
    ios = io1 - io0
    return {"tool": tool, "fio_ios": job["ios"], "iops": round(job["iops"]), "disk_ios": ios, "bpf_runs": runs,
            "bpf_ns": ns, "ns_per_io": ns / ios if ios else None, "ns_per_run": ns / runs if runs else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2, help="alternating runs per tool; the median is reported")
    a = ap.parse_args()
    why = libbpf.why_not_bpf()
    if why:
        raise SystemExit(f"cannot run: {why}")
    for tool in ("fio", "bpftool", BIOLATENCY):
        if shutil.which(tool) is None:
            raise SystemExit(f"cannot run: {tool} not installed (Debian packages fio, bpftool, libbpf-tools)")
    work = ROOT / "build" / "bench"
    work.mkdir(parents=True, exist_ok=True)
    path = work / "bpfcost.fio"
    disk = disk_of(work)
    if skipped(disk):
        raise SystemExit(f"{work} is on {disk}, which the disk probe does not report")
    stats = libbpf.enable_stats()  # run-time stats for every program, ours and biolatency's
    if stats.error:
        raise SystemExit(stats.error)
    runs: list[dict] = []
    try:
        fio(path, 1)  # lay the file out before measuring
        for _ in range(a.rounds):
            for tool in ("loupe", "biolatency"):
                runs.append(measure(tool, path, disk, a.seconds))
                print(f"  {tool:10s} {runs[-1]['iops']:>7} IOPS  {runs[-1]['ns_per_io']:.0f} ns/I/O "
                      f"({runs[-1]['bpf_runs']} runs, {runs[-1]['ns_per_run']:.0f} ns/run)", flush=True)
    finally:
        stats.close()
        path.unlink(missing_ok=True)
    med = {t: statistics.median(r["ns_per_io"] for r in runs if r["tool"] == t) for t in ("loupe", "biolatency")}
    result = {"benchmark": "bpf_cost", "disk": disk, "seconds": a.seconds, "kernel": platform.release(),
              "runs": runs, "median_ns_per_io": med, "target_met": med["loupe"] <= med["biolatency"],
              "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    out = ROOT / "bench" / "results" / f"bpf_cost-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"disk probe cost per I/O: Loupe {med['loupe']:.0f} ns, biolatency {med['biolatency']:.0f} ns "
          f"({'target met' if result['target_met'] else 'target NOT met'}: Loupe <= biolatency); {out}")


if __name__ == "__main__":
    sys.exit(main())
