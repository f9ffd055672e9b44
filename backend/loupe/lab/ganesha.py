"""nfs-ganesha (VFS FSAL) on a lab address, with its own config, pid file, log
and export directories in a temporary directory; stopped by PID.

NFSv4 needs nothing else. NFSv3 clients find MOUNT through the portmapper, so
with ``v3=True`` an ``rpcbind -f`` is started too, unless one is running already
(rpcbind is a host-wide singleton on port 111); ours is stopped by PID as well.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from .netns import LabError, missing_tools


class GaneshaError(LabError):
    """nfs-ganesha did not start; the message carries its log's tail."""


def free_port(host: str = "0.0.0.0") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _wait_port(host: str, port: int, proc: subprocess.Popen, timeout: float, what: str, log: Path | None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise GaneshaError(f"{what} exited with {proc.returncode} before listening on {host}:{port}"
                               + _tail(log))
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise GaneshaError(f"{what} did not listen on {host}:{port} within {timeout:.0f} s" + _tail(log))


def _tail(log: Path | None, n: int = 15) -> str:
    if log is None or not log.exists():
        return ""
    lines = log.read_text(errors="replace").splitlines()[-n:]
    return "\n--- " + str(log) + " ---\n" + "\n".join(lines)


def _stop(proc: subprocess.Popen | None, timeout: float = 10) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


class Ganesha:
    """One ganesha.nfsd serving ``exports`` (pseudo paths, e.g. "/export") from
    directories under its temporary directory, on ``bind_ip``:``port``."""

    BINARY = "ganesha.nfsd"

    def __init__(self, bind_ip: str, exports: list[str] | tuple[str, ...] = ("/export",), *,
                 port: int = 2049, v3: bool = True, workdir: str | os.PathLike | None = None) -> None:
        if os.geteuid() != 0:
            raise GaneshaError("nfs-ganesha needs root")
        missing = missing_tools(self.BINARY, *(("rpcbind",) if v3 else ()))
        if missing:
            raise GaneshaError(f"not installed: {', '.join(missing)} (Debian packages nfs-ganesha, "
                               "nfs-ganesha-vfs, rpcbind)")
        self.bind_ip, self.port, self.v3 = bind_ip, port, v3
        self.exports = [e if e.startswith("/") else "/" + e for e in exports]
        self._own_dir = workdir is None
        self.dir = Path(workdir or tempfile.mkdtemp(prefix="loupe-ganesha-"))
        self.mount_port = free_port(bind_ip) if v3 else 0
        self.conf = self.dir / "ganesha.conf"
        self.log = self.dir / "ganesha.log"
        self.pidfile = self.dir / "ganesha.pid"
        self.proc: subprocess.Popen | None = None
        self.rpcbind: subprocess.Popen | None = None

    def export_dir(self, pseudo: str) -> Path:
        """The real directory behind export ``pseudo``."""
        return self.dir / "exports" / pseudo.strip("/").replace("/", "_")

    def url(self, path: str, version: int | str = 4) -> str:
        """A libnfs URL for ``path`` (under an export's pseudo path)."""
        v = {3: "3", 4: "4", "3": "3", "4": "4", "4.0": "4", "4.1": "4"}[version]
        extra = f"&mountport={self.mount_port}" if v == "3" and self.mount_port else ""
        return f"nfs://{self.bind_ip}{path}?version={v}&nfsport={self.port}{extra}"

    def config(self) -> str:
        exports = []
        for i, e in enumerate(self.exports, 1):
            exports.append(f"""
EXPORT {{
    Export_Id = {i};
    Path = "{self.export_dir(e)}";
    Pseudo = "{e}";
    Access_Type = RW;
    Squash = No_Root_Squash;
    SecType = sys;
    Protocols = {"3, 4" if self.v3 else "4"};
    Transports = TCP;
    FSAL {{ Name = VFS; }}
}}""")
        return f"""# written by loupe.lab for one run; see {self.dir}
NFS_CORE_PARAM {{
    Bind_addr = {self.bind_ip};
    NFS_Port = {self.port};
    MNT_Port = {self.mount_port or 0};
    Protocols = {"3, 4" if self.v3 else "4"};
    Enable_NLM = false;
    Enable_RQUOTA = false;
    Mount_Path_Pseudo = true;
}}
NFSV4 {{
    Graceless = true;
    RecoveryRoot = "{self.dir / 'recovery'}";
}}
NFS_KRB5 {{ Active_krb5 = false; }}
LOG {{ Default_Log_Level = EVENT; }}
{''.join(exports)}
"""

    def start(self) -> "Ganesha":
        for e in self.exports:
            self.export_dir(e).mkdir(parents=True, exist_ok=True)
        (self.dir / "recovery").mkdir(exist_ok=True)
        self.conf.write_text(self.config())
        if self.v3 and subprocess.run(["pgrep", "-x", "rpcbind"], capture_output=True).returncode != 0:
            # -f: foreground, so it is our child and stops by PID; -w: no warm start files
            self.rpcbind = subprocess.Popen(["rpcbind", "-f", "-w"], stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL)
            _wait_port("127.0.0.1", 111, self.rpcbind, 10, "rpcbind", None)
        self.proc = subprocess.Popen(
            [self.BINARY, "-F", "-f", str(self.conf), "-L", str(self.log), "-p", str(self.pidfile),
             "-N", "NIV_EVENT"],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, cwd=self.dir, start_new_session=True)
        try:
            _wait_port(self.bind_ip, self.port, self.proc, 30, "ganesha.nfsd", self.log)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        _stop(self.proc)
        self.proc = None
        _stop(self.rpcbind)
        self.rpcbind = None

    def close(self) -> None:
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "Ganesha":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
