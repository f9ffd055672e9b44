"""loupe lab: a real NFS server and K clients, running the seed's workloads as marked benchmark
runs that Loupe validates against the wire.

    loupe lab --serve --workload stream-write-light --workload random-read
    loupe lab --nfs-server knfsd --serve --clients 2 --workload stream-write --workload cold-stream-read

With nfs-ganesha (the default) it sets up ganesha on a bridge and --clients network namespaces,
each running Loupe's own NFSv3 client, and a Loupe that watches the bridge (--serve). With knfsd,
the Linux kernel NFS server in a Debian guest under QEMU, kernel NFS clients in network namespaces
there run each workload as an fio job, and the guest's Loupe agent (bpf.nfsd) pushes to the Loupe
started here (--serve). For each workload: marks a run, drives every client at once, imports what
each client counted (fio's JSON, on knfsd), and prints the validation verdict. Everything it made
is removed at the end, on Ctrl-C too. Needs root.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
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


def _versions(text: str) -> list[str]:
    known = ("3", "4", "4.0", "4.1", "4.2")
    got = [v.strip() for v in text.split(",") if v.strip()]
    bad = [v for v in got if v not in known]
    if bad or not got:
        raise argparse.ArgumentTypeError(f"not NFS versions: {text!r} (e.g. 3 or 3,4.2; known: {', '.join(known)})")
    return got


def _say(msg: str) -> None:
    print(f"loupe lab: {msg}", file=sys.stderr, flush=True)


def wire_decoder_env(lab, ganesha, export: str = EXPORT) -> dict[str, str]:
    """Settings of a `loupe serve` whose local agent runs only the NFS wire decoder, on the lab's bridge."""
    return {"LOUPE_LOCAL_SOURCES": "bpf.nfswire", "LOUPE_NFSWIRE_IFACES": lab.bridge,
            "LOUPE_NFSWIRE_MOUNT_PORT": str(ganesha.mount_port), "LOUPE_NFSWIRE_EXPORTS": export}


class _Serve:
    """The lab's own `loupe serve` on 127.0.0.1, with `env` added to its environment (`ready`
    waits until it answers); stopped by PID."""

    def __init__(self, data_dir: Path, port: int, env: dict[str, str], args: tuple[str, ...] = ()) -> None:
        from .lab.ganesha import free_port

        self.port = port or free_port("127.0.0.1")
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = open(data_dir / "serve.log", "w")
        # The lab's own Loupe: its admin password is chosen here so --keep can say it.
        self.password = secrets.token_urlsafe(12)
        self._token_file = data_dir / "store" / "cli.token"
        runcli.TOKEN = None
        self.proc = subprocess.Popen([sys.executable, "-m", "loupe.cli", "serve", "--port", str(self.port),
                                      "--data-dir", str(data_dir / "store"), *args], stdout=self.log,
                                     stderr=subprocess.STDOUT,
                                     env=dict(os.environ, **env, LOUPE_ADMIN_PASSWORD=self.password))

    def ready(self) -> _Serve:
        """Until its API answers."""
        deadline = time.time() + 60
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"loupe serve exited; its log: {self.log.name}")
            try:
                if runcli.TOKEN is None and self._token_file.exists():
                    runcli.TOKEN = self._token_file.read_text().strip() or None  # an operator token: runs, reports
                self.sources()
                return self
            except ApiError:
                if time.time() > deadline:
                    self.stop()
                    raise RuntimeError(f"loupe serve did not answer; its log: {self.log.name}") from None
            time.sleep(0.3)

    def sources(self) -> dict:
        return api_call(self.base, "GET", "/sources", timeout=2)

    def wait_active(self, name: str, *, host: str | None = None, timeout: float = 120, check=lambda: None) -> str:
        """Until an agent (of `host`, if given) reports source `name` active; returns that agent's id.
        `check` raises if what runs the agent stopped."""
        deadline = time.time() + timeout
        why = "no report from the agent yet"
        while time.time() < deadline:
            check()
            try:
                # an agent's status without frames names no host (no NFS traffic yet, say)
                src = [s for s in self.sources()["sources"]
                       if s["name"] == name and (host is None or s["host"] in (None, host))]
            except ApiError:
                src = []
            if up := [s for s in src if s["state"] == "active"]:
                return up[0]["agent"]
            if src:
                why = f"{src[0]['state']}: {src[0]['reason']}"
                if src[0]["state"] == "error":
                    break
            time.sleep(0.5)
        raise RuntimeError(f"{name} did not start ({why}); Loupe's log: {self.log.name}")

    def _agent(self, agent: str) -> dict:
        return next((a for a in self.sources()["agents"] if a["agent"] == agent), {})

    def margin(self, agent: str) -> float:
        """Seconds a run's window reaches past the I/O on either side, so that the agent's seconds
        fall inside it: 1 plus its clock's offset, which the server corrects beyond
        LOUPE_CLOCK_SKEW_LIMIT (2 s by default) to within half a second."""
        return 1.0 + min(abs(self._agent(agent).get("clock_offset_s") or 0.0), 2.0)

    def drained(self, agent: str, until: float, *, timeout: float = 90, check=lambda: None) -> None:
        """Until the agent has delivered its seconds up to `until` (server time): it posted a
        second after then, and each post carries everything it has queued. An agent in a TCG
        guest may post only every few seconds."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            check()
            if self._agent(agent).get("last_seen", 0) >= until + 1:
                return
            time.sleep(0.5)
        raise RuntimeError(f"agent {agent} did not deliver its seconds within {timeout:.0f} s")

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


def _watch(title: str, clients: int, seconds: float, start_at: float, busy) -> None:
    """Until `busy()` is false: a progress line rewritten in place on a terminal, else one line."""
    t0 = time.time()
    tty = sys.stderr.isatty()
    who = f"{clients} client{'s' * (clients != 1)}"
    if not tty:
        _say(f"{title}: {who} for {seconds:g} s")
    while busy():
        if tty:
            left = max(0.0, start_at + seconds - time.time())
            print(f"\rloupe lab: {title}: {who}, {time.time() - t0:4.0f} s, about {left:3.0f} s left ",
                  end="", file=sys.stderr, flush=True)
        time.sleep(0.5)
    if tty:
        print(file=sys.stderr)


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
    _watch(w.title, len(procs), seconds, start_at, lambda: any(p.poll() is None for _, p in procs))
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


def _counts(title: str, r: dict) -> None:
    """What one client counted, for a lab without --serve."""
    errors = f"{r['errors']} errors, " if "errors" in r else ""
    _say(f"{title}: {r['client']}: read {r['read_bytes']:,} B in {r['read_ops']:,} ops, wrote "
         f"{r['write_bytes']:,} B in {r['write_ops']:,} ops, {r['create_ops']:,} creates, "
         f"{errors}{r['runtime'] or 0:.2f} s")


def _verdict(base: str, run_id: str, title: str, tolerance: float) -> dict:
    """The run's validation report, its verdict printed."""
    rep = api_call(base, "GET", f"/runs/{run_id}/report?tolerance={tolerance}")
    t = rep["total"]
    pct = t["bytes_agreement_pct"]
    if t["reported_bytes"] or not any(c["reported"]["create_ops"] for c in rep["clients"]):
        _say(f"{title}: {t['reported_bytes'] / 2**20:,.1f} MiB reported, "
             f"{t['wire_bytes'] / 2**20:,.1f} MiB on the wire "
             f"({'n/a' if pct is None else f'{pct:.2f} %'}): {rep['verdict']}")
    else:  # a create moves no bytes
        made = sum(int(c["reported"]["create_ops"]) for c in rep["clients"])
        seen = sum(int(c["wire"]["create_ops"]) for c in rep["clients"])
        _say(f"{title}: {made:,} creates reported, {seen:,} on the wire "
             f"({100 * seen / made:.2f} %): {rep['verdict']}")
    for c in rep["clients"]:
        for reason in c["reasons"]:
            _say(f"  {c['client']}: {reason}")
    return rep


@dataclass
class _Session:
    serve: _Serve | None = None
    reports: list[dict] = field(default_factory=list)
    failed: bool = False

    @property
    def base(self) -> str | None:
        return self.serve.base if self.serve else None

    def validated(self, run: dict, title: str, tolerance: float, entry: dict) -> None:
        rep = _verdict(self.base, run["id"], title, tolerance)
        self.failed |= rep["verdict"] == "fail"
        self.reports.append(dict(entry, run=run["id"], report=rep))

    def finish(self, a: argparse.Namespace, what: str) -> None:
        """The JSON document (--json); with --keep, Loupe (and `what`) stay until Ctrl-C."""
        if a.json:
            print(json.dumps({"server": self.base, "runs": self.reports}), flush=True)
        if a.keep and self.serve:
            _say(f"Loupe stays at {self.base}/{what} (user admin, password {self.serve.password}); "
                 "Ctrl-C ends it")
            while self.serve.proc.poll() is None:
                time.sleep(1)


def _start_run(s: _Session, a: argparse.Namespace, argv: list[str], w, host: str | None = None) -> dict | None:
    """Mark the workload's run (`host`: the NFS server's host in Loupe, else every host)."""
    if not s.base:
        return None
    return api_call(s.base, "POST", "/runs", {"name": f"{a.name}: {w.title}", "host": host,
                                             "command": ["loupe", "lab", *argv]})


def _ganesha(a: argparse.Namespace, argv: list[str], data_dir: Path, names: list[str], s: _Session) -> None:
    from .lab import Ganesha, Lab

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
        if a.serve:
            s.serve = _Serve(data_dir, a.port, wire_decoder_env(lab, g)).ready()
            agent_id = s.serve.wait_active("bpf.nfswire")  # the BPF verifier can take a minute on a busy machine
            _say(f"Loupe at {s.base}/ (data {data_dir}); the lab's runs are on its Runs page")
        for name in names:
            w = WORKLOADS[name]
            run = _start_run(s, a, argv, w)
            results = _run_workload(lab, g, name, a.seconds, files)
            if not run:
                for r in results:
                    _counts(w.title, r)
                s.reports.append({"workload": name, "clients": results})
                continue
            done = time.time()
            api_call(s.base, "POST", f"/runs/{run['id']}/stop", {"exit_code": 0})
            # The agent sends each second just after it closes, but on a busy machine later than
            # any fixed wait: a report made before the last second arrived missed its I/O.
            s.serve.drained(agent_id, done + s.serve.margin(agent_id))
            api_call(s.base, "POST", f"/runs/{run['id']}/results", {"format": "simple", "clients": [
                {k: r[k] for k in ("client", "read_bytes", "write_bytes", "read_ops", "write_ops", "create_ops")}
                | {"runtime": round(r["runtime"], 3)} for r in results]})
            s.validated(run, w.title, a.tolerance, {"workload": name, "clients": results})
            for r in results:  # on the wire, not in what the client reported done: a mismatch's cause
                if r.get("errors"):
                    _say(f"  {r['client']}: {r['errors']:,} calls answered with an error (the client "
                         f"reports only those done)")
        s.finish(a, " with the lab")


def _knfsd_steps(clients: list, names: list[str]) -> list:
    """The workloads, each run by every client: an NFSv3 client's fio creates files with CREATE, an
    NFSv4 client's with OPEN asking to create, which bpf.nfsd counts as open_create."""
    from .lab.knfsd import Step

    return [Step(i, WORKLOADS[name], clients) for i, name in enumerate(names, 1)]


def _knfsd(a: argparse.Namespace, argv: list[str], data_dir: Path, names: list[str], s: _Session) -> None:
    from .lab.guest import HOST_FROM_GUEST
    from .lab.knfsd import GUEST_HOST, KnfsdLab, make_clients
    from .runs import parse_fio

    clients = make_clients(a.clients, a.nfs_version)
    steps = _knfsd_steps(clients, names)
    agent = None
    if a.serve:
        token = secrets.token_hex(16)
        s.serve = _Serve(data_dir, a.port, {"LOUPE_INGEST_TOKEN": token}, ("--no-local-agent",))
        # bpf.nfsd's map sizes (LOUPE_NFSD_KEYS) set here apply to the guest's agent
        from loupe_probes.nfsd.probe import NfsdProbe

        env = " ".join(f"{v}={shlex.quote(os.environ[v])}" for v in NfsdProbe.SIZES.values() if os.environ.get(v))
        agent = (f"exec env {env} python3 -m loupe_probes.agent --server http://{HOST_FROM_GUEST}:{s.serve.port} "
                 f"--token={token} --sources bpf.nfsd --host {GUEST_HOST}")
    with KnfsdLab(clients, steps, size=a.file_size, seconds=a.seconds, workdir=data_dir, agent=agent, say=_say) as kl:
        kl.prepare()  # while Loupe starts
        if s.serve:
            s.serve.ready()
            _say(f"Loupe at {s.base}/ (data {data_dir}); the lab's runs are on its Runs page")
        _say(f"{a.clients} kernel NFS clients " + ", ".join(f"{c.name} {c.ip} (NFSv{c.version})" for c in clients)
             + " of knfsd in the guest")
        kl.boot()
        margin = 0.0
        if s.serve:
            # loading and verifying the probe takes ~20 s under TCG
            try:
                agent_id = s.serve.wait_active("bpf.nfsd", host=GUEST_HOST, timeout=300, check=kl.check)
            except RuntimeError as e:
                raise RuntimeError(f"{e}; the guest's agent log: {kl.job / 'agent.log'}") from None
            margin = s.serve.margin(agent_id)
            _say(f"the guest's agent reports bpf.nfsd active; each run's window reaches {margin:.1f} s past its I/O")
        for st in steps:
            w = st.workload
            kl.ready(st)
            run = _start_run(s, a, argv, w, GUEST_HOST)
            time.sleep(margin)
            kl.go(st)
            _watch(w.title, len(st.clients), a.seconds, time.time(), lambda: not kl.finished(st))
            done = time.time()
            docs = kl.results(st)
            results = [dict(asdict(parse_fio(docs[c.name], c.ip)[0]), name=c.name, nfs_version=c.version,
                            fio_json=str(kl.fio_json(st, c))) for c in st.clients]
            if not run:
                for r in results:
                    _counts(w.title, r)
                s.reports.append({"workload": w.name, "clients": results})
                continue
            s.serve.drained(agent_id, done + margin, check=kl.check)
            api_call(s.base, "POST", f"/runs/{run['id']}/stop", {"exit_code": 0})
            for c in st.clients:  # each client's fio report, as fio wrote it
                api_call(s.base, "POST", f"/runs/{run['id']}/results",
                         {"format": "fio", "report": docs[c.name], "client": c.ip})
            s.validated(run, w.title, a.tolerance, {"workload": w.name, "clients": results})
        end = kl.end()
        if end.rc != 0:
            _say(f"the guest did not tear down cleanly (exit {end.rc}); its files: {kl.job}")
    s.finish(a, "")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="loupe lab", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="workloads:\n" + "\n".join(
                                    f"  {w.name:20} {w.title}: {w.depth} in flight per client, "
                                    + (f"{w.io // 1024} KiB {w.pattern} {w.kind}s" if w.io else "file creates")
                                    for w in WORKLOADS.values())
                                + "\n\non knfsd each is an fio job per client: libaio with that many I/Os in flight, "
                                  "direct=1;\nSync write with sync=dsync, Filecreate with fio's filecreate engine")
    p.add_argument("--nfs-server", choices=("ganesha", "knfsd"), default="ganesha",
                   help="nfs-ganesha on this host (default), or knfsd in a QEMU guest with kernel clients running fio")
    p.add_argument("--clients", type=int, default=4, help="client namespaces (default 4)")
    p.add_argument("--workload", action="append", choices=sorted(WORKLOADS), help="repeatable; default: all")
    p.add_argument("--seconds", type=float, default=10, help="length of each workload (default 10)")
    p.add_argument("--file-size", type=_size,
                   help="each client's file to read (default 64M; on knfsd 16M, also the file each client writes "
                        "over and over: a multiple of 64K)")
    p.add_argument("--nfs-version", type=_versions, default=["3", "4.2"],
                   help="knfsd: NFS versions of the clients, given in turn (default 3,4.2)")
    p.add_argument("--serve", action="store_true",
                   help="start a Loupe that watches the lab and validates each workload as a run "
                        "(without it, the workloads run and the clients' own counts are printed)")
    p.add_argument("--port", type=int, default=0, help="with --serve: its port (default: a free one)")
    p.add_argument("--data-dir", type=Path, help="with --serve: its data directory (default: a temporary one); "
                                                 "on knfsd also the guest's files: fio's job files and JSON")
    p.add_argument("--keep", action="store_true",
                   help="with --serve: keep Loupe (and the ganesha lab) up until Ctrl-C")
    p.add_argument("--name", default="lab", help="prefix of the runs' names")
    p.add_argument("--tolerance", type=float, default=2.0, help="allowed difference in %% (default 2)")
    p.add_argument("--json", action="store_true", help="print every run's report as one JSON document on stdout")
    a = p.parse_args(argv)
    if not 1 <= a.clients <= 64:
        p.error("--clients: 1 to 64")
    if a.seconds <= 0 or a.seconds > 3600:
        p.error("--seconds: more than 0, at most 3600")
    knfsd = a.nfs_server == "knfsd"
    if a.file_size is None:
        a.file_size = _size("16M" if knfsd else "64M")
    if knfsd and (a.file_size % (64 << 10) or a.file_size < (1 << 20)):
        p.error("--file-size: on knfsd, at least 1M and a multiple of 64K (every workload's I/O size divides it)")
    if os.geteuid() != 0:
        _say("needs root (network namespaces, a bridge, nfs-ganesha and BPF)" if not knfsd else
             "needs root (QEMU, the guest's image and disk)")
        return 2
    from .lab import LabError

    names = a.workload or list(WORKLOADS)
    data_dir = a.data_dir or Path(tempfile.mkdtemp(prefix="loupe-lab-"))
    data_dir.mkdir(parents=True, exist_ok=True)
    s = _Session()
    try:
        (_knfsd if knfsd else _ganesha)(a, argv, data_dir, names, s)
    except KeyboardInterrupt:
        _say("interrupted: removing the lab")
        return 130
    except (LabError, ApiError, RuntimeError, OSError) as e:
        _say(str(e))
        return 2
    finally:
        if s.serve:
            s.serve.stop()
    return 3 if s.failed else 0
