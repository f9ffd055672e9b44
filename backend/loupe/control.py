"""What operators asked of agents' sources (suspend/resume), and what agents report of their cost.

Agents are never called: each ingest answer carries the agent's list of suspended
sources and the agent applies it within its next second (a suspended BPF probe
detaches its programs, so it costs nothing). The list is kept in the data
directory, so a suspended probe stays suspended across restarts of either side.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path

from .frame import AgentStats, SourceStatus

log = logging.getLogger("loupe.control")


class SourceControl:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._suspended: dict[str, set[str]] = {}
        self._agents: dict[str, dict] = {}  # agent -> {"stats": AgentStats dict, "seen": t}
        self._costs: dict[tuple[str, str], dict[str, float]] = {}
        self._suspendable: dict[tuple[str, str], bool] = {}
        try:
            raw = json.loads(path.read_text())
            self._suspended = {a: set(v) for a, v in raw.get("suspended", {}).items()}
        except FileNotFoundError:
            pass
        except (OSError, ValueError, AttributeError) as e:
            log.warning("ignoring unreadable %s: %s", path, e)

    # ------------------------------------------------------------------ requests
    def suspended(self, agent: str) -> list[str]:
        with self._lock:
            return sorted(self._suspended.get(agent, ()))

    def requested(self, agent: str, name: str) -> bool:
        with self._lock:
            return name in self._suspended.get(agent, ())

    def set(self, agent: str, name: str, suspend: bool) -> None:
        with self._lock:
            names = self._suspended.setdefault(agent, set())
            if suspend:
                names.add(name)
            else:
                names.discard(name)
            if not names:
                del self._suspended[agent]
            self._save()

    def _save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"suspended": {a: sorted(v) for a, v in self._suspended.items()}}))
        os.replace(tmp, self.path)

    # ------------------------------------------------------------------ reports
    def report(self, agent: str, status: list[SourceStatus] | None, stats: AgentStats | None, seen: float, *,
               clock_offset: float | None = None, skewed: bool = False) -> None:
        with self._lock:
            if stats is not None or agent not in self._agents:
                self._agents[agent] = {"stats": stats.model_dump() if stats else None, "seen": seen}
            else:
                self._agents[agent]["seen"] = seen
            if clock_offset is not None:
                self._agents[agent]["clock"] = {"clock_offset_s": round(clock_offset, 3), "clock_skewed": skewed}
            for st in status or ():
                self._suspendable[(agent, st.name)] = st.suspendable
                if st.cost is not None:
                    self._costs[(agent, st.name)] = dict(st.cost)
                else:
                    self._costs.pop((agent, st.name), None)

    def cost(self, agent: str, name: str) -> dict[str, float] | None:
        with self._lock:
            return self._costs.get((agent, name))

    def suspendable(self, agent: str, name: str) -> bool:
        with self._lock:
            return self._suspendable.get((agent, name), False)

    def agents(self) -> dict[str, dict]:
        with self._lock:
            return {a: dict(v) for a, v in self._agents.items()}

    def costs(self) -> dict[tuple[str, str], dict[str, float]]:
        with self._lock:
            return dict(self._costs)
