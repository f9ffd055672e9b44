"""The lab on the Linux kernel NFS server: knfsd in the knfsd guest (``loupe.lab.guest``), kernel
NFS clients there, each in its own network namespace, running the seed workloads as fio jobs.

The host writes the plan into the guest's job folder before it boots (one line per client, a
step file and one fio job file per workload and client, the agent's command), then steps the
guest through it (scripts/guest/knfsd-lab.sh): the guest says a workload is ready, the host
marks the run and says go, the guest runs every client's fio at once and says done. fio's JSON
lands in the job folder, read by the host like any client's report.

Workloads as fio jobs: a workload's threads are I/Os in flight (``ioengine=libaio``,
``iodepth``), as the ganesha lab's own client keeps calls in flight; ``direct=1``, so each fio
I/O is one NFS READ or WRITE and fio counts what crossed the wire, not what a client cache
absorbed; Sync write is ``sync=dsync`` (O_DSYNC); Filecreate is fio's ``filecreate`` engine
(``numjobs`` threads creating empty files, up to FILECREATE_PER_SECOND each per second of the
workload): an NFSv3 client creates each file with CREATE, an NFSv4 client with OPEN asking to
create, which bpf.nfsd counts as op ``open_create``; a run's report checks fio's count against both.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from . import guest
from .netns import LabError, restore_signals, trap_term
from .nfs3 import FILE_SYNC
from .workload import Workload

GUEST_HOST = "knfsd-lab"  # the host name the guest's agent reports as
# Files each filecreate thread may create, per second of the workload: fio stats every one before it
# starts (an NFS LOOKUP each), so they are not many more than a thread creates in that time.
FILECREATE_PER_SECOND = 25
BOOT_TIMEOUT = 900  # boot, knfsd, mounts and laying out the files, under TCG on a busy machine


class GuestStopped(LabError):
    """The guest's QEMU ended while the lab still needed it."""

    def __init__(self, reason: str, console: str) -> None:
        super().__init__(f"{reason}; console tail:\n{console[-3000:]}")
        self.reason, self.console = reason, console


@dataclass(frozen=True)
class KClient:
    name: str  # c1, c2, ...: its namespace, mount (/mnt/NAME) and folder on the export
    ip: str
    version: str  # "3", "4.2", ...


def make_clients(n: int, versions: list[str]) -> list[KClient]:
    """Client i gets 10.99.0.(10+i) (scripts/guest/knfsd-lib.sh) and the versions in turn."""
    return [KClient(f"c{i}", f"10.99.0.{10 + i}", versions[(i - 1) % len(versions)]) for i in range(1, n + 1)]


def fio_job(w: Workload, client: str, step: int, *, size: int, seconds: float) -> str:
    """The fio job file client ``client`` runs for workload ``w`` (step ``step`` of the plan)."""
    home = f"/mnt/{client}/{client}"
    if w.kind == "create":
        files = min(2000, max(FILECREATE_PER_SECOND, round(FILECREATE_PER_SECOND * seconds)))
        opts = dict(ioengine="filecreate", directory=f"{home}/{step}", nrfiles=files, filesize="4k",
                    bs="4k", openfiles=1, thread=1, numjobs=w.depth)
    else:
        opts = dict(ioengine="libaio", direct=1, iodepth=w.depth, bs=w.io, size=size,
                    filename=f"{home}/{w.kind}.bin", fallocate="none", time_based=1)
        if w.stable == FILE_SYNC:
            opts["sync"] = "dsync"
    opts["runtime"] = f"{max(1, round(seconds * 1000))}ms"
    rw = "write" if w.kind == "create" else ("rand" if w.pattern == "random" else "") + w.kind
    body = "".join(f"{k}={v}\n" for k, v in opts.items())
    return f"; loupe lab: {w.title} on {client}\n[global]\n{body}\n[{w.name}]\nrw={rw}\n"


@dataclass
class Step:
    n: int
    workload: Workload
    clients: list[KClient]


class KnfsdLab:
    """The guest running one lab: ``prepare``, then ``boot`` waits until it is up; then, per step,
    ``ready``, ``go``, ``finished``/``results``; ``end`` lets it tear down. Leaving the ``with``
    block kills QEMU by PID whatever happened (SIGTERM raises, so that it does)."""

    def __init__(self, clients: list[KClient], steps: list[Step], *, size: int, seconds: float, workdir: Path,
                 agent: str | None = None, say=print) -> None:
        if why := guest.missing_prerequisites():
            raise LabError(why)
        obj = guest.REPO / "probes" / "nfsd" / "nfsd.bpf.o"
        if agent and not obj.is_file():
            raise LabError(f"{obj} is missing: build the BPF probes first (make bpf)")
        self.clients, self.steps, self.agent, self.say = clients, steps, agent, say
        self.job = workdir / "guest"
        self.disk = workdir / "export.img"
        self.size, self.seconds = size, seconds
        self.image: Path | None = None
        self.vm: guest.Guest | None = None
        self._said = 0
        self._signals: dict = {}

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> KnfsdLab:
        self._signals = trap_term()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.vm:
            self.vm.kill()
        self.disk.unlink(missing_ok=True)
        restore_signals(self._signals)

    def _write_plan(self) -> None:
        if self.job.exists():
            shutil.rmtree(self.job)
        self.job.mkdir(parents=True)
        (self.job / "clients").write_text("".join(f"{c.name} {c.version}\n" for c in self.clients))
        laid_out = {"create"}  # a client's read.bin and write.bin serve every workload of their kind
        for s in self.steps:
            w = s.workload
            (self.job / f"{s.n}.step").write_text(
                f"workload={w.name} cold={int(w.cold)} prep={int(w.kind not in laid_out)} "
                f"clients={shlex.quote(' '.join(c.name for c in s.clients))}\n")
            laid_out.add(w.kind)
            for c in s.clients:
                (self.job / f"{s.n}-{c.name}.fio").write_text(fio_job(w, c.name, s.n, size=self.size,
                                                                      seconds=self.seconds))
        if self.agent:
            (self.job / "agent.sh").write_text(self.agent + "\n")

    def _make_disk(self) -> None:
        """A sparse ext4 image for the export: every client's two files, with room to spare."""
        size_mb = (len(self.clients) * 2 * self.size * 5 // 4 >> 20) + 256
        self.disk.unlink(missing_ok=True)
        with open(self.disk, "wb") as f:
            f.truncate(size_mb << 20)
        # Inode tables and journal written now: the guest's lazy init would write them during the runs.
        r = subprocess.run(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", str(self.disk)],
                           capture_output=True, text=True)
        if r.returncode:
            raise LabError(f"mkfs.ext4 of the lab's disk failed: {r.stderr.strip()}")

    def prepare(self) -> None:
        """The image (built on first use, cached), the plan and the disk."""
        self.image = guest.build_image()
        self._lay_out()

    def _lay_out(self) -> None:
        """A fresh job folder (the plan) and export disk, for a boot."""
        self._write_plan()
        self._make_disk()

    def boot(self, memory_mb: int = 2048, cpus: int = 2, attempts: int = 2) -> None:
        """Boot the prepared guest; back once knfsd, the clients and their files are up.

        A guest that stops before its job has said anything never ran a step, so it is booted
        again (up to ``attempts`` boots in all): under TCG a boot has once ended that way, QEMU
        gone and the console empty, in a run that passed before and after."""
        accel = "KVM" if "kvm" in guest.accel_args() else "TCG, no KVM here: slow"
        for attempt in range(1, attempts + 1):
            self.vm = guest.Guest("sh /repo/scripts/guest/knfsd-lab.sh /job", job_dir=self.job,
                                  image=self.image, memory_mb=memory_mb, cpus=cpus, disks=(self.disk,))
            self.say(f"booting the knfsd guest (QEMU pid {self.vm.pid}, {accel}); its files: {self.job}")
            try:
                self.wait("up", BOOT_TIMEOUT, "the guest to set up knfsd and its clients")
                return
            except GuestStopped as e:
                if attempt == attempts or (self.job / "progress").exists():
                    raise
                self.say(f"{e.reason} before its job began; booting it again ({attempt + 1} of {attempts}); "
                         f"its console's tail:\n{e.console[-1500:]}")
                self._lay_out()

    # ------------------------------------------------------------------ stepping
    def _relay(self) -> None:
        """The guest's new progress lines."""
        p = self.job / "progress"
        if p.exists():
            lines = p.read_text(errors="replace").splitlines()
            for line in lines[self._said:]:
                self.say(f"guest: {line}")
            self._said = len(lines)

    def check(self) -> None:
        """Relay the guest's new progress lines; raise if it stopped."""
        self._relay()
        if self.vm and not self.vm.alive():
            run = self.vm.wait(0)
            job = "its job never said how it ended" if run.rc is None else f"its job exited {run.rc}"
            raise GuestStopped(f"the knfsd guest stopped ({run.qemu}; {job})", run.console)

    def wait(self, name: str, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not (self.job / name).exists():
            self.check()
            if time.monotonic() > deadline:
                raise LabError(f"timed out after {timeout:.0f} s waiting for {what}; the guest's files: {self.job}")
            time.sleep(0.2)
        self.check()

    def ready(self, step: Step) -> None:
        self.wait(f"{step.n}.ready", 300, f"{step.workload.title} to be ready")

    def go(self, step: Step) -> None:
        (self.job / f"{step.n}.go").touch()

    def finished(self, step: Step) -> bool:
        self.check()
        return (self.job / f"{step.n}.done").exists()

    def fio_json(self, step: Step, c: KClient) -> Path:
        return self.job / f"{step.n}-{c.name}.json"

    def results(self, step: Step) -> dict[str, dict]:
        """Each client's fio JSON; raises, with fio's own words, when one failed."""
        rcs = dict(line.split() for line in (self.job / f"{step.n}.done").read_text().splitlines() if line.strip())
        out = {}
        for c in step.clients:
            raw = self.fio_json(step, c)
            text = raw.read_text(errors="replace") if raw.exists() else ""
            if rcs.get(c.name) != "0" or "{" not in text:
                log = (self.job / f"{step.n}-{c.name}.log")
                said = (log.read_text(errors="replace") if log.exists() else "").strip()[-500:]
                raise LabError(f"client {c.name} ({c.ip}): fio exited {rcs.get(c.name)} in "
                               f"{step.workload.title}: {said or text[-500:]}")
            out[c.name] = json.loads(text[text.index("{"):])  # fio may print notes first
        return out

    def end(self, timeout: float = 120) -> guest.GuestRun:
        """Let the guest stop its agent and knfsd and power off; QEMU is killed after ``timeout``."""
        (self.job / "end").touch()
        run = self.vm.wait(timeout)
        self._relay()
        return run
