"""The knfsd test guest: the kernel tests' side of ``loupe.lab.guest`` (booting the Debian 12
VM under QEMU, building its image), plus the knfsd + fio scenario and the kernel facts.

The host kernel has no NFS server, so tests of the kernel NFS server (knfsd) probe
run in a guest with Debian's stock 6.1 kernel (scripts/guest/build-image.sh builds
and caches it); what the guest offers a job is described in ``loupe.lab.guest``.

Also a command line (as root)::

    python3 tests/kernel/guest.py build             # build or reuse the cached image
    python3 tests/kernel/guest.py run 'uname -a'    # boot, run a shell command, print its output
    python3 tests/kernel/guest.py scenario          # the knfsd + fio scenario, fio's totals per client
    python3 tests/kernel/guest.py record            # refresh tests/kernel/testdata from the guest
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

try:
    from loupe.lab.guest import (CACHE, GUEST_SCRIPTS, HOST_FROM_GUEST, REPO, GuestError, GuestRun,  # noqa: F401
                                 build_image, missing_prerequisites, run)
except ImportError:  # run as a script by a python3 without Loupe installed: the checkout's own
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "backend"))
    from loupe.lab.guest import (CACHE, GUEST_SCRIPTS, HOST_FROM_GUEST, REPO, GuestError, GuestRun,  # noqa: F401
                                 build_image, missing_prerequisites, run)

TESTDATA = Path(__file__).resolve().parent / "testdata"
ATTACH_CHECK_SRC = Path(__file__).resolve().parent / "bpf" / "attach_check.bpf.c"


# ---------------------------------------------------------------------------- the knfsd scenario

@dataclass(frozen=True)
class Client:
    """One NFS client of the scenario: its own network namespace, mount and fio run."""

    name: str
    version: str  # "3", "4.0", "4.1", "4.2"
    size: int  # bytes fio writes, then reads back
    bs: int  # bytes per I/O (one NFS READ/WRITE each: below rsize/wsize)

    def spec(self) -> str:
        return f"{self.name}:{self.version}:{self.size}:{self.bs}"


DEFAULT_CLIENTS = (Client("c1", "3", 8 << 20, 16 << 10), Client("c2", "4.2", 16 << 20, 64 << 10))
SERVER_ADDR = "10.99.0.1"


def client_addr(clients: tuple[Client, ...] | list[Client], name: str) -> str:
    """The address the scenario gives client ``name`` (as knfsd sees it)."""
    return f"10.99.0.{11 + [c.name for c in clients].index(name)}"


@dataclass
class Scenario:
    run: GuestRun
    clients: tuple[Client, ...]
    fio: dict[str, dict] = field(default_factory=dict)  # client name -> fio's JSON (jobs "write", "read")
    mounts: dict[str, str] = field(default_factory=dict)  # client name -> its /proc/mounts line
    nfsd_before: str = ""  # /proc/net/rpc/nfsd before and after the clients ran
    nfsd_after: str = ""
    background_log: str | None = None
    background_rc: int | None = None

    @property
    def ok(self) -> bool:
        return self.run.rc == 0


def knfsd_scenario(*, clients: tuple[Client, ...] = DEFAULT_CLIENTS, background: str | None = None,
                   warmup: float = 3, ready: str | None = None, settle: float = 3, before: str = "",
                   after: str = "", job_dir: Path | None = None, image: Path | None = None,
                   timeout: float = 600) -> Scenario:
    """Boot the guest and run scripts/guest/knfsd-scenario.sh in it.

    ``background``: a shell command (e.g. the Loupe agent pointed at
    ``http://10.0.2.2:PORT``) started before the clients, given ``warmup`` seconds
    (or, with ``ready``, a path in the guest, until it creates that file, within
    ``warmup``), and stopped with SIGTERM ``settle`` seconds after the last client
    finished.
    ``before``/``after``: shell run before/after the scenario (their failures are
    the caller's to check, through files they write to /job). Does not raise when
    the scenario fails: look at ``.ok`` and ``.run.console``.
    """
    env = ""
    if background:
        env = (f"export LOUPE_BACKGROUND={shlex.quote(background)} LOUPE_BACKGROUND_WARMUP={warmup} "
               f"LOUPE_BACKGROUND_SETTLE={settle}\n")
        if ready:
            env += f"export LOUPE_BACKGROUND_READY={shlex.quote(ready)}\n"
    specs = " ".join(shlex.quote(c.spec()) for c in clients)
    script = (f"{before}\n{env}sh /repo/scripts/guest/knfsd-scenario.sh /job {specs}\nrc=$?\n"
              f"{after}\nexit $rc\n")
    result = run(script, job_dir=job_dir, image=image, timeout=timeout)
    sc = Scenario(run=result, clients=tuple(clients))
    for c in clients:
        # One fio run per direction; their jobs ("write", then "read") go into one document.
        runs = [result.text(f"fio-{c.name}-{rw}.json") for rw in ("write", "read")]
        if all(runs):
            docs = [json.loads(raw[raw.index("{"):]) for raw in runs]  # fio may print notes first
            sc.fio[c.name] = {**docs[0], "jobs": [j for d in docs for j in d["jobs"]]}
        sc.mounts[c.name] = (result.text(f"mount-{c.name}.txt") or "").strip()
    sc.nfsd_before = result.text("nfsd-before.txt") or ""
    sc.nfsd_after = result.text("nfsd-after.txt") or ""
    sc.background_log = result.text("background.log")
    brc = result.text("background.rc")
    sc.background_rc = int(brc) if brc and brc.strip().lstrip("-").isdigit() else None
    return sc


def fio_bytes(fio: dict) -> dict[str, int]:
    """Bytes fio moved per direction, over all its jobs: {'read': n, 'write': n}."""
    return {d: sum(int(j[d]["io_bytes"]) for j in fio["jobs"]) for d in ("read", "write")}


def fio_ios(fio: dict) -> dict[str, int]:
    """I/Os fio did per direction (each one NFS READ or WRITE), over all its jobs."""
    return {d: sum(int(j[d]["total_ios"]) for j in fio["jobs"]) for d in ("read", "write")}


def nfsd_ops(text: str) -> dict[str, dict[str, int]]:
    """Every procedure (proc3) and NFSv4 operation (proc4ops) knfsd counted, by
    name, from /proc/net/rpc/nfsd: {'v3': {...}, 'v4': {...}}."""
    from loupe_probes.nfswire.wire import V3_PROCS, V4_OPS

    out: dict[str, dict[str, int]] = {"v3": {}, "v4": {}}
    for f in map(str.split, text.splitlines()):
        if f and f[0] == "proc3":
            out["v3"] = {V3_PROCS[i]: int(n) for i, n in enumerate(f[2:]) if i < len(V3_PROCS)}
        elif f and f[0] == "proc4ops":
            out["v4"] = {V4_OPS.get(i, f"op{i}"): int(n) for i, n in enumerate(f[2:])}
    return out


NFS3_PROCS = {"read": 6, "write": 7}  # RFC 1813 procedure numbers
NFS4_OPS = {"read": 25, "write": 38}  # RFC 7530/8881 operation numbers


def nfsd_counts(text: str) -> dict[str, dict[str, int]]:
    """READ/WRITE counts per protocol, and bytes, from /proc/net/rpc/nfsd:
    {'v3': {'read': ops, 'write': ops}, 'v4': {...}, 'bytes': {'read': n, 'write': n}}."""
    rows = {f[0]: [int(x) for x in f[1:]] for f in map(str.split, text.splitlines())
            if f and f[0] in ("io", "proc3", "proc4ops")}
    out = {}
    if "io" in rows:  # "io <bytes read> <bytes written>"
        out["bytes"] = {"read": rows["io"][0], "write": rows["io"][1]}
    if "proc3" in rows:  # "proc3 <n> <count of proc 0> <count of proc 1> ..."
        out["v3"] = {k: rows["proc3"][1 + p] for k, p in NFS3_PROCS.items()}
    if "proc4ops" in rows:  # "proc4ops <n> <count of op 0> <count of op 1> ..."
        out["v4"] = {k: rows["proc4ops"][1 + op] for k, op in NFS4_OPS.items()}
    return out


# ---------------------------------------------------------------------------- kernel facts

def compile_attach_check(out: Path) -> Path | None:
    """Build the attach-check BPF object with the host's clang; None when there is no clang."""
    if not shutil.which("clang"):
        return None
    obj = out / "attach_check.bpf.o"
    subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-c", str(ATTACH_CHECK_SRC), "-o", str(obj)],
                   check=True, capture_output=True)
    return obj


FACT_FILES = ("kernel-release.txt", "events-nfsd.txt", "events-sunrpc.txt", "btf.txt", "tracing.txt",
              "bpftool-feature.txt", "bpf-attach.json")
CONFIG_KEYS = re.compile(r"^(# )?CONFIG_(BPF\w*|DEBUG_INFO_BTF\w*|KPROBE\w*|FTRACE\w*|FUNCTION_TRACER|"
                         r"DYNAMIC_FTRACE\w*|FPROBE|UPROBE\w*|NFSD\w*|SUNRPC\w*|HAVE_DYNAMIC_FTRACE\w*)[ =]")


def kernel_facts_script(obj_name: str | None) -> str:
    arg = f" /job/{obj_name}" if obj_name else ""
    return f"sh /repo/scripts/guest/kernel-facts.sh /job/facts{arg} > /job/facts.log 2>&1; echo $? > /job/facts.rc"


def record_testdata(dest: Path = TESTDATA) -> Path:
    """Boot the guest, record its kernel facts and copy them to ``dest`` (tests/kernel/testdata)."""
    image = build_image()
    job = Path(tempfile.mkdtemp(prefix="loupe-guest-record-"))
    obj = compile_attach_check(job)
    res = run(kernel_facts_script(obj.name if obj else None) + "\nexit $(cat /job/facts.rc)",
              job_dir=job, image=image).check()
    dest.mkdir(parents=True, exist_ok=True)
    for name in FACT_FILES:
        src = res.job / "facts" / name
        if src.is_file():
            shutil.copyfile(src, dest / name)
    config = (image / "config").read_text().splitlines()
    (dest / "kernel-config.txt").write_text("\n".join(line for line in config if CONFIG_KEYS.match(line)) + "\n")
    manifest = (image / "manifest.txt").read_text()
    (dest / "image-manifest.txt").write_text(
        "".join(line + "\n" for line in manifest.splitlines() if line.startswith(("kernel", "package", "suite"))))
    shutil.rmtree(job, ignore_errors=True)
    return dest


# ---------------------------------------------------------------------------- command line

def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("build", "run", "scenario", "record"):
        print(__doc__)
        return 2
    if why := missing_prerequisites():
        print(f"guest: {why}", file=sys.stderr)
        return 1
    if argv[0] == "build":
        print(build_image())
    elif argv[0] == "run":
        res = run(" ".join(argv[1:]))
        print(res.console)
        print(f"guest: exit {res.rc} after {res.seconds:.0f} s (job folder {res.job})")
        return 0 if res.rc == 0 else 1
    elif argv[0] == "scenario":
        sc = knfsd_scenario()
        for c in sc.clients:
            got = fio_bytes(sc.fio[c.name]) if c.name in sc.fio else None
            print(f"{c.name} NFSv{c.version} {client_addr(sc.clients, c.name)}: fio {got}; mount: {sc.mounts[c.name]}")
        print(f"nfsd before {nfsd_counts(sc.nfsd_before)} after {nfsd_counts(sc.nfsd_after)}")
        print(f"guest: exit {sc.run.rc} after {sc.run.seconds:.0f} s (job folder {sc.run.job})")
        if not sc.ok:
            print(sc.run.console[-4000:])
        return 0 if sc.ok else 1
    elif argv[0] == "record":
        print(f"recorded into {record_testdata()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
