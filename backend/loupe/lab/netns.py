"""Bridge + network namespaces: N client machines on one /24 with this host.

Names carry a per-run suffix (``lab<6 hex>``: bridge ``lab3fa9c1``, namespaces
``lab3fa9c1-c1``, host-side veths ``lab3fa9c1v1``); a state file in
``/run/loupe-lab/`` records the owning PID so that :func:`cleanup_stale` can
remove what a killed run left behind. Needs root and iproute2.

A bridge of veths reports the veths' speed, 10000 Mb/s, which cannot be changed. With
``link_mbps`` the host and the clients sit instead on macvlans (bridge mode) of one tap device
whose speed is set with ethtool (tun accepts any): the host's interface towards the clients then
reports that speed, as a NIC of that speed would. The macvlans switch traffic among themselves and
the tap carries none; its file descriptor is held by this process, so it (and the macvlans on it)
vanish with it, even after ``kill -9``.
"""

from __future__ import annotations

import fcntl
import ipaddress
import os
import secrets
import shutil
import signal
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

STATE_DIR = Path("/run/loupe-lab")
PREFIX = "lab"
TUNSETIFF, IFF_TAP, IFF_NO_PI = 0x400454CA, 0x0002, 0x1000  # include/uapi/linux/if_tun.h


class LabError(RuntimeError):
    """The lab could not be built; the message names the step and the cause."""


def missing_tools(*tools: str) -> list[str]:
    return [t for t in tools if shutil.which(t) is None]


def trap_term() -> dict:
    """SIGTERM (e.g. a test runner's timeout) becomes an exception, so that finally/__exit__
    teardown still runs (Ctrl-C already is one); returns what :func:`restore_signals` undoes."""

    def raise_exit(signum, frame):
        raise SystemExit(f"terminated by signal {signum}")

    try:
        return {signal.SIGTERM: signal.signal(signal.SIGTERM, raise_exit)}
    except ValueError:  # not the main thread
        return {}


def restore_signals(old: dict) -> None:
    for sig, h in old.items():
        signal.signal(sig, h)
    old.clear()


def _ip(*args: str, ns: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    cmd = ["ip", *(["-n", ns] if ns else []), *args]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode:
        raise LabError(f"`{' '.join(cmd)}` failed: {r.stderr.strip()}")
    return r


def steer_flows(dev: str, sys: str | Path = "/sys") -> bool:
    """Hash each flow arriving on `dev` to one CPU (RPS), as a NIC's receive-side scaling does.
    A veth or macvlan hands a packet to the backlog of the CPU that sent it, so a client whose
    TCP segments leave from two CPUs has them received out of order; a flow's segments come off
    a NIC in order, and the lab's should too. False where the kernel has no RPS."""
    mask = format((1 << (os.cpu_count() or 1)) - 1, "x")
    queues = sorted(Path(sys, "class/net", dev, "queues").glob("rx-*/rps_cpus"))
    try:
        for q in queues:
            q.write_text(mask)
    except OSError:
        return False
    return bool(queues)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove(tag: str) -> None:
    """Delete every namespace and link named after ``tag`` (idempotent)."""
    r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        if name.startswith(tag + "-"):
            _ip("netns", "delete", name, check=False)  # takes its veth ends along
    r = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        parts = line.split(":")
        if len(parts) > 1:
            name = parts[1].strip().split("@")[0]
            if name.startswith(tag):
                _ip("link", "delete", name, check=False)
    (STATE_DIR / tag).unlink(missing_ok=True)


def cleanup_stale() -> list[str]:
    """Remove labs whose owning process is gone; returns their tags."""
    removed = []
    if STATE_DIR.is_dir():
        for f in STATE_DIR.iterdir():
            try:
                pid = int(f.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                pid = 0
            if not pid or not _pid_alive(pid):
                _remove(f.name)
                removed.append(f.name)
    return removed


def _free_subnet() -> ipaddress.IPv4Network:
    """A 10.77.x.0/24 no interface of this host uses (parallel labs get their own)."""
    used = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
    for _ in range(256):
        net = ipaddress.IPv4Network(f"10.77.{secrets.randbelow(250) + 1}.0/24")
        if f" 10.77.{net.network_address.packed[2]}." not in used:
            return net
    raise LabError("no free 10.77.x.0/24 subnet for the lab bridge")


@dataclass
class Client:
    ns: str
    ip: str

    def cmd(self, *argv: str) -> list[str]:
        return ["ip", "netns", "exec", self.ns, *argv]

    def run(self, *argv: str, timeout: float = 120, check: bool = True,
            input: bytes | None = None) -> subprocess.CompletedProcess:
        """Run ``argv`` inside this client's namespace."""
        r = subprocess.run(self.cmd(*argv), capture_output=True, timeout=timeout, input=input)
        if check and r.returncode:
            raise LabError(f"client {self.ip}: `{' '.join(argv)}` exited {r.returncode}: "
                           f"{r.stderr.decode(errors='replace').strip()[-500:]}")
        return r


class Lab:
    """A bridge with the host at .1 and ``clients`` namespaces at .11, .12, ...; with
    ``link_mbps``, a link of that speed instead (see the module's notes)."""

    def __init__(self, clients: int = 3, link_mbps: int | None = None) -> None:
        if os.geteuid() != 0:
            raise LabError("the lab needs root (network namespaces, bridges)")
        if missing_tools("ip"):
            raise LabError("iproute2 (`ip`) is not installed")
        if link_mbps is not None:
            if not 0 < link_mbps <= 400_000 or link_mbps == 65535:
                raise LabError(f"link speed {link_mbps} Mb/s: give 1 to 400000 (65535 reads as unknown)")
            if missing_tools("ethtool"):
                raise LabError("ethtool is not installed (it sets the lab link's speed)")
        self.n = clients
        self.link_mbps = link_mbps
        self.tag = PREFIX + secrets.token_hex(3)
        self.bridge = self.tag  # the host's interface towards the clients: the bridge, or its macvlan
        self._tap: int | None = None
        self.net: ipaddress.IPv4Network | None = None
        self.server_ip = ""
        self.clients: list[Client] = []
        self._old_handlers: dict[int, object] = {}

    # ---------------------------------------------------------------- lifecycle
    def __enter__(self) -> "Lab":
        self.up()
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

    def up(self) -> None:
        cleanup_stale()
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        (STATE_DIR / self.tag).write_text(f"{os.getpid()}\n")
        self._old_handlers = trap_term()  # not the main thread: cleanup_stale() removes what is left
        try:
            self.net = _free_subnet()
            hosts = list(self.net.hosts())
            self.server_ip = str(hosts[0])
            tap = self._link() if self.link_mbps else None
            if tap:
                _ip("link", "add", self.bridge, "link", tap, "type", "macvlan", "mode", "bridge")
            else:
                _ip("link", "add", self.bridge, "type", "bridge")
            _ip("addr", "add", f"{self.server_ip}/24", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
            steer_flows(self.bridge)
            for i in range(1, self.n + 1):
                ns, host_end = f"{self.tag}-c{i}", f"{self.tag}v{i}"
                ip = str(hosts[9 + i])
                _ip("netns", "add", ns)
                if tap:
                    _ip("link", "add", host_end, "link", tap, "type", "macvlan", "mode", "bridge")
                    _ip("link", "set", host_end, "netns", ns)
                    _ip("link", "set", host_end, "name", "eth0", ns=ns)
                else:
                    _ip("link", "add", host_end, "type", "veth", "peer", "name", "eth0", "netns", ns)
                    _ip("link", "set", host_end, "master", self.bridge)
                    _ip("link", "set", host_end, "up")
                    steer_flows(host_end)
                _ip("addr", "add", f"{ip}/24", "dev", "eth0", ns=ns)
                _ip("link", "set", "eth0", "up", ns=ns)
                _ip("link", "set", "lo", "up", ns=ns)
                self.clients.append(Client(ns, ip))
        except BaseException:
            self.down()
            raise

    def _link(self) -> str:
        """The tap under the link's macvlans, held open here (with a carrier, so they pass
        traffic), its speed set; returns its name."""
        tap = f"{self.tag}t"
        try:
            self._tap = os.open("/dev/net/tun", os.O_RDWR | os.O_CLOEXEC)
            fcntl.ioctl(self._tap, TUNSETIFF, struct.pack("16sH", tap.encode(), IFF_TAP | IFF_NO_PI))
        except OSError as e:
            raise LabError(f"cannot create the tap device {tap} for the lab's link: {e}") from None
        r = subprocess.run(["ethtool", "-s", tap, "speed", str(self.link_mbps), "duplex", "full"],
                           capture_output=True, text=True)
        if r.returncode:
            raise LabError(f"`ethtool -s {tap} speed {self.link_mbps}` failed: {r.stderr.strip()}")
        _ip("link", "set", tap, "up")
        return tap

    def down(self) -> None:
        _remove(self.tag)
        if self._tap is not None:
            os.close(self._tap)  # the tap goes, and the macvlans on it
            self._tap = None
        self.clients = []
        restore_signals(self._old_handlers)

    @property
    def ifindex(self) -> int:
        return int(Path(f"/sys/class/net/{self.bridge}/ifindex").read_text())
