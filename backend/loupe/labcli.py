"""loupe lab: a real NFS server and K clients on this machine, running the seed's workloads as
marked benchmark runs that Loupe validates against the wire.

    loupe lab --serve --workload stream-write-light --workload random-read

sets up nfs-ganesha on a bridge and --clients network namespaces, starts a Loupe that watches
the bridge (--serve), and for each workload: marks a run, drives every client at once, imports
what each client counted, and prints the validation verdict. Everything it made is removed at the end, on Ctrl-C too. Needs root.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .lab.workload import WORKLOADS
from . import runcli
from .runcli import ApiError, api_call

EXPORT = "/export"


def _size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().rstrip("ib").rstrip("b")
    try:
        return int(float(t[:-1]) * units[t[-1]]) if t and t[-1] in units else int(t)
    except (ValueError, IndexError):
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 64M, 1G, 4096)") from None


def _say(msg: str) -> None:
    print(f"loupe lab: {msg}", file=sys.stderr, flush=True)


def wire_decoder_env(lab, ganesha, export: str = EXPORT) -> dict[str, str]:
    """Settings of a `loupe serve` whose local agent runs only the NFS wire decoder, on the lab's bridge."""
    return {"LOUPE_LOCAL_SOURCES": "bpf.nfswire", "LOUPE_NFSWIRE_IFACES": lab.bridge,
            "LOUPE_NFSWIRE_MOUNT_PORT": str(ganesha.mount_port), "LOUPE_NFSWIRE_EXPORTS": export}


class _Serve:
    """A `loupe serve` whose local agent runs only the NFS wire decoder on the lab's bridge."""

    def __init__(self, lab, ganesha, port: int, data_dir: Path) -> None:
        from .lab.ganesha import free_port

        self.port = port or free_port("127.0.0.1")
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = open(data_dir / "serve.log", "w")
        # The lab's own Loupe: its admin password is chosen here so --keep can say it.
        self.password = secrets.token_urlsafe(12)
        env = dict(os.environ, **wire_decoder_env(lab, ganesha), LOUPE_ADMIN_PASSWORD=self.password)
        token_file = data_dir / "store" / "cli.token"
        runcli.TOKEN = None
        self.proc = subprocess.Popen([sys.executable, "-m", "loupe.cli", "serve", "--port", str(self.port),
                                      "--data-dir", str(data_dir / "store")], stdout=self.log,
                                     stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 120  # the BPF verifier can take a minute on a busy machine
        why = "no report from the local agent yet"
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"loupe serve exited; its log: {self.log.name}")
            try:
                if runcli.TOKEN is None and token_file.exists():
                    runcli.TOKEN = token_file.read_text().strip() or None  # an operator token: runs and reports
                src = [s for s in api_call(self.base, "GET", "/sources", timeout=2)["sources"] if s["name"] == "bpf.nfswire"]
            except ApiError:
                src = []
            if any(s["state"] == "active" for s in src):
                return
            if src:
                why = f"{src[0]['state']}: {src[0]['reason']}"
                if src[0]["state"] == "error":
                    break
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the NFS wire decoder did not start ({why}); log: {self.log.name}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def _drop_caches() -> None:
    """A cold run reads from disk: the server's page cache is emptied first."""
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def _run_workload(lab, g, name: str, seconds: float, files: dict[str, tuple[str, int]]) -> list[dict]:
    w = WORKLOADS[name]
    if w.cold:
        _drop_caches()
    start_at = time.time() + 0.5
    procs = []
    for i, c in enumerate(lab.clients, 1):
        f, size = files[c.ip]
        argv = [sys.executable, "-m", "loupe.lab.workload", "--server", g.bind_ip, "--mount-port",
                str(g.mount_port), "--export", EXPORT, "--workload", name, "--seconds", str(seconds),
                "--tag", f"c{i}", "--seed", str(i), "--start-at", str(start_at)]
        if w.kind == "read":
            argv += ["--file", f, "--file-size", str(size)]
        procs.append((c, subprocess.Popen(c.cmd(*argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    t0 = time.time()
    tty = sys.stderr.isatty()
    if not tty:
        _say(f"{w.title}: {len(procs)} clients for {seconds:g} s")
    while any(p.poll() is None for _, p in procs):
        if tty:  # a progress line, rewritten in place
            left = max(0.0, start_at + seconds - time.time())
            print(f"\rloupe lab: {w.title}: {len(procs)} clients, {time.time() - t0:4.0f} s, about {left:3.0f} s left ",
                  end="", file=sys.stderr, flush=True)
        time.sleep(0.5)
    if tty:
        print(file=sys.stderr)
    results = []
    for c, p in procs:
        out, err = p.communicate()
        line = (out.strip().splitlines() or ["{}"])[-1]
        try:
            r = json.loads(line)
        except ValueError:
            r = {"error": f"no result: {err.strip()[-300:]}"}
        if p.returncode or "error" in r:
            raise RuntimeError(f"client {c.ip} failed in {name}: {r.get('error') or err.strip()[-300:]}")
        results.append(dict(r, client=c.ip))
    return results


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="loupe lab", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="workloads:\n" + "\n".join(
                                    f"  {w.name:20} {w.title}: {w.depth} in flight per client, "
                                    + (f"{w.io // 1024} KiB {w.pattern} {w.kind}s" if w.io else "file creates")
                                    for w in WORKLOADS.values()))
    p.add_argument("--clients", type=int, default=4, help="client namespaces (default 4)")
    p.add_argument("--workload", action="append", choices=sorted(WORKLOADS), help="repeatable; default: all")
    p.add_argument("--seconds", type=float, default=10, help="length of each workload (default 10)")
    p.add_argument("--file-size", type=_size, default=_size("64M"), help="each client's file to read (default 64M)")
    p.add_argument("--serve", action="store_true",
                   help="start a Loupe that watches the lab and validates each workload as a run "
                        "(without it, the workloads run and the clients' own counts are printed)")
    p.add_argument("--port", type=int, default=0, help="with --serve: its port (default: a free one)")
    p.add_argument("--data-dir", type=Path, help="with --serve: its data directory (default: a temporary one)")
    p.add_argument("--keep", action="store_true", help="with --serve: keep Loupe and the lab up until Ctrl-C")
    p.add_argument("--name", default="lab", help="prefix of the runs' names")
    p.add_argument("--tolerance", type=float, default=2.0, help="allowed difference in %% (default 2)")
    p.add_argument("--json", action="store_true", help="print every run's report as one JSON document on stdout")
    a = p.parse_args(argv)
    if not 1 <= a.clients <= 64:
        p.error("--clients: 1 to 64")
    if a.seconds <= 0 or a.seconds > 3600:
        p.error("--seconds: more than 0, at most 3600")
    if os.geteuid() != 0:
        _say("needs root (network namespaces, a bridge, nfs-ganesha and BPF)")
        return 2
    from .lab import Ganesha, Lab, LabError

    names = a.workload or list(WORKLOADS)
    data_dir = a.data_dir or Path(tempfile.mkdtemp(prefix="loupe-lab-"))
    data_dir.mkdir(parents=True, exist_ok=True)
    serve = None
    reports = []
    failed = False
    try:
        with Lab(a.clients) as lab, Ganesha(lab.server_ip, [EXPORT]) as g:
            _say(f"{a.clients} clients {', '.join(c.ip for c in lab.clients)} on bridge {lab.bridge}; "
                 f"nfs-ganesha at {g.bind_ip}")
            files = {}
            for i, c in enumerate(lab.clients, 1):
                f = g.export_dir(EXPORT) / f"data-c{i}.bin"
                with open(f, "wb") as out:
                    for left in range(a.file_size, 0, -(1 << 20)):
                        out.write(os.urandom(min(left, 1 << 20)))
                files[c.ip] = (f.name, a.file_size)
            base = None
            if a.serve:
                serve = _Serve(lab, g, a.port, data_dir)
                base = serve.base
                _say(f"Loupe at {base}/ (data {data_dir}); the lab's runs are on its Runs page")
            for name in names:
                w = WORKLOADS[name]
                run = api_call(base, "POST", "/runs", {"name": f"{a.name}: {w.title}",
                                                    "command": ["loupe", "lab", *argv]}) if base else None
                results = _run_workload(lab, g, name, a.seconds, files)
                if not base:
                    for r in results:
                        _say(f"{w.title}: {r['client']}: read {r['read_bytes']:,} B in {r['read_ops']:,} ops, wrote "
                             f"{r['write_bytes']:,} B in {r['write_ops']:,} ops, {r['create_ops']:,} creates, "
                             f"{r['errors']} errors, {r['runtime']:.2f} s")
                    reports.append({"workload": name, "clients": results})
                    continue
                api_call(base, "POST", f"/runs/{run['id']}/stop", {"exit_code": 0})
                time.sleep(2.5)  # the agent sends each second just after it closes
                api_call(base, "POST", f"/runs/{run['id']}/results", {"format": "simple", "clients": [
                    {k: r[k] for k in ("client", "read_bytes", "write_bytes", "read_ops", "write_ops", "create_ops")}
                    | {"runtime": round(r["runtime"], 3)} for r in results]})
                rep = api_call(base, "GET", f"/runs/{run['id']}/report?tolerance={a.tolerance}")
                t = rep["total"]
                pct = t["bytes_agreement_pct"]
                if t["reported_bytes"] or not any(c["reported"]["create_ops"] for c in rep["clients"]):
                    _say(f"{w.title}: {t['reported_bytes'] / 2**20:,.1f} MiB reported, "
                         f"{t['wire_bytes'] / 2**20:,.1f} MiB on the wire "
                         f"({'n/a' if pct is None else f'{pct:.2f} %'}): {rep['verdict']}")
                else:  # a create moves no bytes
                    made = sum(int(c["reported"]["create_ops"]) for c in rep["clients"])
                    seen = sum(int(c["wire"]["create_ops"]) for c in rep["clients"])
                    _say(f"{w.title}: {made:,} creates reported, {seen:,} on the wire "
                         f"({100 * seen / made:.2f} %): {rep['verdict']}")
                for c in rep["clients"]:
                    for reason in c["reasons"]:
                        _say(f"  {c['client']}: {reason}")
                failed |= rep["verdict"] == "fail"
                reports.append({"workload": name, "run": run["id"], "clients": results, "report": rep})
            if a.json:
                print(json.dumps({"server": base, "runs": reports}), flush=True)
            if a.keep and serve:
                _say(f"Loupe stays at {base}/ with the lab (user admin, password {serve.password}); "
                     "Ctrl-C ends both")
                while serve.proc.poll() is None:
                    time.sleep(1)
    except KeyboardInterrupt:
        _say("interrupted: removing the lab")
        return 130
    except (LabError, ApiError, RuntimeError, OSError) as e:
        _say(str(e))
        return 2
    finally:
        if serve:
            serve.stop()
    return 3 if failed else 0
