"""The contract between a probe and the agent.

A source measures one or more families (see ``loupe.catalog.FAMILIES``) and, when
the agent asks for second ``ts``, returns rows already aggregated by every
dimension of the family, as ``loupe.frame.Row`` dicts without ``host``::

    [("disk", "nas1", [{"dims": {"disk": "sda", "op": "read"}, "count": 12, ...}])]

A source with thousands of rows a second may return them as version-2 columns
instead (``{"n": ..., "dims": {...}, "count": [...], ...}``, see ``loupe.frame``),
which the agent sends without a Python object per row.

The agent turns each (family, host, rows) into one frame whose source id is
``f"{source.name}@{host}"``. A source never talks to the network and never
sleeps; the agent owns timing, sequencing and delivery.
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

State = Literal["active", "off", "error", "suspended"]
Collected = list[tuple[str, str, list[dict] | dict]]  # rows, or columns


@runtime_checkable
class Source(Protocol):
    name: str  # "procfs.cpu", "synthetic", later "bpf.nfsd"
    families: tuple[str, ...]
    host: str  # the host its frames are about (the agent files status under it)
    # True when collect(ts) is a pure function of ts: the agent may then ask for
    # past seconds (backfill, or catching up after a stall) and in any order.
    replayable: bool

    def status(self) -> list[dict]:
        """SourceStatus-shaped dicts: name, families, state, reason, demo."""
        ...

    def collect(self, ts: int) -> Collected:
        """Rows for the second ``ts`` (the one that just closed)."""
        ...


def status_entry(name: str, families: tuple[str, ...] | list[str], state: State = "active",
                 reason: str = "", demo: bool = False) -> dict:
    return {"name": name, "families": list(families), "state": state, "reason": reason, "demo": demo}
