"""Every probe the agent can run: one line each, name -> factory.

A new probe is one folder under probes/ plus one line here (as in ebpf_exporter,
where a probe is a program and a config, and nothing else changes). Selecting a
prefix selects its family of probes: ``procfs`` runs every ``procfs.*`` line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .source import Source


@dataclass(frozen=True)
class Options:
    host: str  # this machine, for probes that measure it
    demo_host: str = "demo-nas"
    demo_clients: int = 20
    seed: int = 7
    proc: str = "/proc"
    sys: str = "/sys"


def _procfs(kind: str) -> Callable[[Options], Source]:
    def make(o: Options) -> Source:
        from . import procfs

        return getattr(procfs, kind)(o.host, o.proc, o.sys)

    return make


def _synthetic(o: Options) -> Source:
    from .synthetic import SyntheticNAS  # numpy: only imported when asked for

    return SyntheticNAS(clients=o.demo_clients, seed=o.seed, host=o.demo_host)


def _zfs(o: Options) -> Source:
    from .zfs import ZfsSource

    return ZfsSource(o.host, o.proc)


def _bpf(module: str, cls: str) -> Callable[[Options], Source]:
    def make(o: Options) -> Source:
        import importlib

        return getattr(importlib.import_module(f"{__package__}.{module}"), cls)(o.host)

    return make


PROBES: dict[str, Callable[[Options], Source]] = {
    "procfs.cpu": _procfs("CpuSource"),
    "procfs.disk": _procfs("DiskSource"),
    "procfs.net": _procfs("NetSource"),
    "synthetic": _synthetic,
    "bpf.disk": _bpf("disk", "DiskProbe"),
    "bpf.nfswire": _bpf("nfswire", "NfsWireProbe"),
    "bpf.net": _bpf("net", "NetProbe"),
    "bpf.cpu": _bpf("cpu", "CpuProbe"),
    "bpf.nfsd": _bpf("nfsd", "NfsdProbe"),
    "zfs": _zfs,
}


def expand(names: Iterable[str]) -> list[str]:
    """Registry names for the names asked for, in registry order, each once."""
    wanted = [n.strip() for n in names if n.strip()]
    unknown = [n for n in wanted if not any(p == n or p.startswith(n + ".") for p in PROBES)]
    if unknown:
        raise ValueError(f"unknown source {', '.join(unknown)}; valid: {', '.join(sorted(_selectable()))}")
    return [p for p in PROBES if any(p == n or p.startswith(n + ".") for n in wanted)]


def build(names: Iterable[str], options: Options) -> list[Source]:
    return [PROBES[n](options) for n in expand(names)]


def _selectable() -> set[str]:
    return set(PROBES) | {p.split(".")[0] for p in PROBES}
