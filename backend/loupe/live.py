"""Live fan-out: ingest (a worker thread) tells the event loop which seconds landed;
each WebSocket subscriber computes its statistic for those seconds and pushes them.

Memory stays bounded: a slow subscriber keeps only the newest MAX_PENDING seconds
per family and counts the ones it skipped.
"""

from __future__ import annotations

import asyncio
import threading

MAX_PENDING = 30


class Subscriber:
    def __init__(self) -> None:
        self.pending: dict[str, set[int]] = {}
        self.event = asyncio.Event()
        self.dropped = 0

    def notify(self, seconds: dict[str, set[int]]) -> None:
        for fam, tss in seconds.items():
            cur = self.pending.setdefault(fam, set())
            cur |= tss
            if len(cur) > MAX_PENDING:
                keep = sorted(cur)[-MAX_PENDING:]
                self.dropped += len(cur) - len(keep)
                self.pending[fam] = set(keep)
        self.event.set()

    def take(self) -> dict[str, list[int]]:
        out = {f: sorted(t) for f, t in self.pending.items() if t}
        self.pending = {}
        self.event.clear()
        return out


class LiveHub:
    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self._subs: set[Subscriber] = set()
        self._lock = threading.Lock()

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    def add(self, sub: Subscriber) -> None:
        with self._lock:
            self._subs.add(sub)

    def remove(self, sub: Subscriber) -> None:
        with self._lock:
            self._subs.discard(sub)

    @property
    def subscribers(self) -> int:
        return len(self._subs)

    def pending(self) -> int:
        """Seconds queued for all subscribers together (bounded: MAX_PENDING per subscriber and family)."""
        with self._lock:
            subs = list(self._subs)
        return sum(len(t) for s in subs for t in list(s.pending.values()))

    def publish(self, seconds: dict[str, set[int]]) -> None:
        """Thread-safe: called by ingest after its commit."""
        if not seconds or self.loop is None or self.loop.is_closed():
            return
        snapshot = {f: set(t) for f, t in seconds.items()}
        try:
            self.loop.call_soon_threadsafe(self._fanout, snapshot)
        except RuntimeError:  # loop closed during shutdown
            pass

    def _fanout(self, seconds: dict[str, set[int]]) -> None:
        with self._lock:
            subs = list(self._subs)
        for s in subs:
            s.notify(seconds)
