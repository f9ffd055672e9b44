"""The knfsd guest: a Debian 12 VM under QEMU, with Debian's stock 6.1 kernel, that runs one
shell script and powers off. The kernel tests (tests/kernel) and ``loupe lab --nfs-server knfsd``
boot it; scripts/guest/build-image.sh builds and caches its image, and every boot uses
``snapshot=on``, so the cached image never changes.

In the guest: the Loupe checkout is at ``/repo`` (read-only 9p), the run's job folder at
``/job`` (read-write 9p: job.sh in, results out), ``python3 -m loupe_probes.agent`` works
(``loupe`` and ``loupe_probes`` resolve to the checkout's backend/loupe and probes/ through
``PYTHONPATH=/opt/loupe-py``), and the host's loopback answers at 10.0.2.2 (QEMU user
networking), so an agent there can push to a Loupe listening on the host's 127.0.0.1. Extra
raw disk images appear as /dev/vdb, /dev/vdc, ... in the order given.

Needs a checkout (scripts/guest, probes/), root, qemu-system-x86_64 and debootstrap.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
GUEST_SCRIPTS = REPO / "scripts" / "guest"
CACHE = Path(os.environ.get("LOUPE_GUEST_CACHE", REPO / ".cache" / "guest"))
HOST_FROM_GUEST = "10.0.2.2"  # QEMU user networking: the host's 127.0.0.1
EXIT_MARK = re.compile(r"^LOUPE-GUEST-EXIT (\d+)\s*$", re.M)

# Put in front of every job script: the environment a job expects.
PRELUDE = f"""\
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export LOUPE_REPO=/repo LOUPE_JOB=/job LOUPE_HOST_ADDR={HOST_FROM_GUEST}
# The repo share is read-only: no __pycache__ there.
export PYTHONDONTWRITEBYTECODE=1
mkdir -p /opt/loupe-py
ln -sfn /repo/backend/loupe /opt/loupe-py/loupe
ln -sfn /repo/probes /opt/loupe-py/loupe_probes
export PYTHONPATH=/opt/loupe-py
"""


class GuestError(RuntimeError):
    """The guest could not be built or booted, or did not finish its job."""


def missing_prerequisites() -> str | None:
    """Why the guest cannot run on this machine, or None when it can."""
    if os.geteuid() != 0:
        return "the knfsd guest needs root (debootstrap, chroot)"
    if not (GUEST_SCRIPTS / "build-image.sh").is_file():
        return f"no {GUEST_SCRIPTS / 'build-image.sh'}: the knfsd guest needs a Loupe checkout"
    for tool, pkg in [("qemu-system-x86_64", "qemu-system-x86"), ("debootstrap", "debootstrap"),
                      ("mkfs.ext4", "e2fsprogs"), ("apt-get", "apt")]:
        if not shutil.which(tool):
            return f"{tool} not found (Debian package {pkg}; `make apt-deps` installs it)"
    return None


def build_image(out: Path = CACHE, timeout: float = 1800) -> Path:
    """Build (or reuse) the guest image; returns its folder (vmlinuz, initrd.img, rootfs.ext4)."""
    proc = subprocess.run(["bash", str(GUEST_SCRIPTS / "build-image.sh"), str(out)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise GuestError(f"scripts/guest/build-image.sh failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    image = Path(proc.stdout.strip().splitlines()[-1])
    for f in ("vmlinuz", "initrd.img", "rootfs.ext4"):
        if not (image / f).is_file():
            raise GuestError(f"build-image.sh printed {image}, which has no {f}")
    return image


def accel_args() -> list[str]:
    """KVM when this CPU offers vmx/svm and /dev/kvm is usable, else multi-threaded TCG.

    (A /dev/kvm without vmx/svm in /proc/cpuinfo, as on paravirtualised hosts,
    cannot boot a stock kernel.)
    """
    try:
        flags = set(re.findall(r"\b(vmx|svm)\b", Path("/proc/cpuinfo").read_text()))
    except OSError:
        flags = set()
    if flags and os.access("/dev/kvm", os.R_OK | os.W_OK):
        return ["-accel", "kvm", "-cpu", "host"]
    return ["-accel", "tcg,thread=multi", "-cpu", "max"]


@dataclass
class GuestRun:
    rc: int | None  # the job's exit status; None if the guest never said (crash, time-out, killed)
    console: str  # everything on the serial console: kernel messages and the job's output
    job: Path  # the job folder, with whatever the job wrote to /job
    seconds: float
    qemu: str = ""  # how QEMU itself ended, e.g. "QEMU exited 0" or "QEMU killed by SIGSEGV"

    def text(self, name: str) -> str | None:
        p = self.job / name
        return p.read_text(errors="replace") if p.is_file() else None

    def check(self) -> GuestRun:
        """Raise GuestError, with the console's tail, unless the job exited 0."""
        if self.rc != 0:
            what = "never finished" if self.rc is None else f"exited {self.rc}"
            raise GuestError(f"guest job {what} after {self.seconds:.0f} s ({self.qemu}); "
                             f"console tail:\n{self.console[-6000:]}")
        return self


def _die_with_parent() -> None:
    """In QEMU's child before exec: SIGKILL it when its parent dies, however that dies."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Guest:
    """One boot of the guest running ``script``. QEMU runs in its own session (Ctrl-C on a
    terminal is the caller's to handle) and is killed by PID: by ``kill``, by ``wait`` past its
    time-out, on leaving a ``with`` block, and by the kernel when the caller dies."""

    def __init__(self, script: str, *, job_dir: Path | None = None, image: Path | None = None,
                 memory_mb: int = 2048, cpus: int = 2, repo: Path = REPO, disks: tuple[Path, ...] = ()) -> None:
        image = image or build_image()
        self.job = Path(job_dir) if job_dir else Path(tempfile.mkdtemp(prefix="loupe-guest-"))
        self.job.mkdir(parents=True, exist_ok=True)
        for stale in ("exit-code", "console.log"):
            (self.job / stale).unlink(missing_ok=True)
        (self.job / "job.sh").write_text(PRELUDE + "\n" + script + "\n")
        self.console = self.job / "console.log"
        cmd = [
            "qemu-system-x86_64", "-name", "loupe-knfsd-guest", *accel_args(),
            "-smp", str(cpus), "-m", str(memory_mb),
            "-kernel", str(image / "vmlinuz"), "-initrd", str(image / "initrd.img"),
            "-append", "console=ttyS0,115200 root=/dev/vda rw rootwait init=/usr/local/sbin/loupe-guest-init "
                       "panic=-1 net.ifnames=0 quiet loglevel=4",
            "-drive", f"file={image / 'rootfs.ext4'},format=raw,if=virtio,snapshot=on",
            # throw-away disks: the host's page cache may keep what the guest wrote
            *(a for d in disks for a in ("-drive", f"file={d},format=raw,if=virtio,cache=unsafe")),
            "-netdev", "user,id=n0", "-device", "virtio-net-pci,netdev=n0",
            "-fsdev", f"local,id=repo,path={repo},security_model=none,readonly=on",
            "-device", "virtio-9p-pci,fsdev=repo,mount_tag=repo",
            "-fsdev", f"local,id=job,path={self.job},security_model=none",
            "-device", "virtio-9p-pci,fsdev=job,mount_tag=job",
            "-display", "none", "-monitor", "none", "-serial", f"file:{self.console}", "-no-reboot",
        ]
        self.start = time.monotonic()
        self._killed = False
        with open(self.job / "qemu.log", "w") as qlog:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=qlog, stderr=subprocess.STDOUT,
                                         start_new_session=True, preexec_fn=_die_with_parent)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def ended(self) -> str:
        """How QEMU ended, in words. With -no-reboot a guest that resets (a triple fault, a panic
        before the console is up) makes QEMU exit 0 without a word; a crash of QEMU is a signal."""
        rc = self.proc.poll()
        if rc is None:
            return "QEMU still running"
        if self._killed:
            return "QEMU killed by Loupe"
        if rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"signal {-rc}"
            return f"QEMU killed by {name}"
        return f"QEMU exited {rc}"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self._killed = True
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def console_text(self) -> str:
        return self.console.read_text(errors="replace") if self.console.exists() else ""

    def wait(self, timeout: float) -> GuestRun:
        """Until the guest powers off (killed after ``timeout``, which only guards against a hung
        guest); its result's ``rc`` comes from /job/exit-code, else from the console."""
        try:
            self.proc.wait(timeout=max(0.0, timeout))
        except subprocess.TimeoutExpired:
            pass
        finally:
            self.kill()
        seconds = time.monotonic() - self.start
        ended = self.ended()
        text = self.console_text()
        rc: int | None = None
        code = self.job / "exit-code"
        if code.is_file() and code.read_text().strip().isdigit():
            rc = int(code.read_text().strip())
        elif m := EXIT_MARK.search(text):
            rc = int(m.group(1))
        if rc is None and not text:
            said = (self.job / "qemu.log").read_text(errors="replace").strip()
            text = f"(no console output; QEMU said: {said or 'nothing'})"
        return GuestRun(rc=rc, console=text, job=self.job, seconds=seconds, qemu=ended)

    def __enter__(self) -> Guest:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


def run(script: str, *, timeout: float = 600, **boot) -> GuestRun:
    """Boot the guest, run ``script`` (sh) in it as root, power off; QEMU is killed by PID at the end.

    ``boot``: the keywords of :class:`Guest` (``job_dir``, a temporary folder when None, whose
    files are visible to the script; ``image``, ``memory_mb``, ``cpus``, ``repo``, ``disks``).
    ``timeout`` only guards against a hung guest.
    """
    with Guest(script, **boot) as g:
        return g.wait(timeout)
