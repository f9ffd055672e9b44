"""The agent: ticks once a second, stamps frames, and POSTs them to the backend.

``loupe agent`` and ``loupe demo`` run :func:`main` / :func:`demo_main`; ``loupe
serve`` runs the same :class:`Agent` in a thread via :func:`start_in_thread`.

Timing: ticks fall on wall-clock second boundaries and each covers the second that
just closed (``ts``). Every (source, family, host) gives one frame per second, with
source id ``f"{source.name}@{host}"`` and a ``seq`` that only grows per source id:
it starts at max(persisted seq + 1, wall clock in microseconds), the persisted seq
being the higher of the state file's and the spool's, so a restart never goes
backwards, even without ``--state-dir``, and never reuses a spooled frame's seq.

Replayable sources (the synthetic NAS) are produced second by second from a cursor,
oldest first: ``backfill`` starts the cursor in the past, and after a stall the
agent catches up instead of leaving a hole. Live sources (procfs) are read at the
tick only.

Delivery: frames wait in a bounded queue, already serialised, and are sent in
order in batches, one host per request (the backend files a request's source
status under the host of its frames). Frames are version 3 (Arrow IPC, written by
:mod:`loupe.arrow_ipc` when the frame is made: the server validates whole columns);
a server that does not read version 3 (it answers 415, or, before version 3 existed,
422 for the body as a whole) gets version-2 JSON for the next ``json_fallback`` seconds
(10 minutes), queued Arrow frames converted as they go, and the switch is logged once.
Connection errors and 5xx keep them queued and retry with exponential backoff; when
the queue is full (``max_queue_bytes``) the oldest frames are dropped and counted. A
4xx will never succeed: its ``detail`` is logged and those frames are dropped; for
413/422 the batch is halved first so one bad frame costs only itself.

With a state dir the queue is an on-disk spool (:mod:`.spool`, ``<state dir>/spool``):
frames still queued when the process stops, even by ``kill -9``, are sent first
when it starts again, with their own source id and seq, so the backend counts any
it already has as duplicates. Without one, the queue is in memory and such frames
are lost.
"""

from __future__ import annotations

import argparse
import collections
import json
import logging
import math
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from loupe.arrow_ipc import MEDIA_TYPE as ARROW_MEDIA_TYPE
from loupe.arrow_ipc import encode_part, part_columns, part_header, request_body
from loupe.columns import is_columns, rows_to_columns

from . import registry, transport
from .source import Source
from .spool import FrameQueue, MemoryQueue, Queued, Spool

log = logging.getLogger("loupe.agent")

DEFAULT_SERVER = "http://127.0.0.1:8470"
MAX_FRAMES_PER_REQUEST = 10_000  # IngestRequest's limit
HEARTBEAT_SECONDS = 5.0  # post status alone when nothing else went out for this long
MAX_CATCH_UP = 300  # seconds a replayable source may fall behind (beyond its backfill) before skipping
JSON_FALLBACK_SECONDS = 600  # after a server refused version 3, send version-2 JSON for this long


class Agent:
    """Collects from ``sources`` once a second and delivers frames to ``server``."""

    def __init__(self, sources: Sequence[Source], server: str = DEFAULT_SERVER, token: str | None = None,
                 agent_id: str | None = None, *, state_dir: str | Path | None = None, backfill: int = 0,
                 max_queue_bytes: int = 256 << 20, max_request_bytes: int = 8 << 20, timeout: float = 10.0,
                 min_backoff: float = 0.5, max_backoff: float = 30.0,
                 progress: Callable[[str], None] | None = None, in_process: bool = False,
                 ca_file: str | None = None, frame_version: int = 3,
                 json_fallback: float = JSON_FALLBACK_SECONDS) -> None:
        if not sources:
            raise ValueError("an agent needs at least one source")
        self.sources = list(sources)
        self.server = server.rstrip("/")
        self.agent_id = agent_id or f"{socket.gethostname()}/{'+'.join(s.name for s in self.sources)}"
        self.backfill = max(0, int(backfill))
        self.max_queue_bytes, self.max_request_bytes = max_queue_bytes, max_request_bytes
        self.min_backoff, self.max_backoff = min_backoff, max_backoff
        self.progress = progress or log.info
        if frame_version not in (2, 3):
            raise ValueError(f"frame version {frame_version}: the agent sends 2 (JSON) or 3 (Arrow IPC)")
        self.frame_version, self.json_fallback = frame_version, json_fallback
        self._json_until = 0.0  # until then version-2 JSON, the server having refused version 3
        self._fell_back = False  # the switch to JSON was logged
        self._headers = {}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        else:
            log.warning("no ingest token: the backend will refuse frames (set LOUPE_INGEST_TOKEN or --token)")
        self._timeout = timeout
        self._state_file = Path(state_dir) / "agent-state.json" if state_dir else None
        self._persisted: dict[str, int] = self._load_state()
        self._seq: dict[str, int] = {}
        self._spool_dir = Path(state_dir) / "spool" if state_dir else None
        self._queue = self._open_queue()
        self._retry_at = 0.0
        self._backoff = min_backoff
        self._last_post = 0.0
        self._closed = 0  # the last second that has closed
        self._cursor: dict[int, int] = {}  # replayable source index -> next second to produce
        self._backfill_left = 0
        self._backfill_started = 0.0
        self._produced: set[int] = set()
        self._host_of: dict[int, str] = {}  # source index -> the host its frames are about
        self._broken: dict[int, str] = {}  # sources whose collect raised, with the error
        self._quiet_until: dict[str, float] = {}
        # a bad server URL fails here, naming it, not on the first post
        self._client = transport.Client(self.server, headers=self._headers, timeout=self._timeout, ca_file=ca_file)
        self.stats = collections.Counter()  # sent, dropped, refused, accepted, duplicates, requests
        self.in_process = in_process
        self.suspended: set[str] = set()  # source names an operator suspended (from the backend's answers)
        self._standby: set[str] = set()  # probes detached because another source replaces them
        self._usage = (time.monotonic(), _cpu_seconds())
        self._cpu_pct = 0.0

    # ------------------------------------------------------------------ main loop
    def run(self, stop: threading.Event, *, once: bool = False) -> bool:
        """Tick until ``stop`` is set (or, with ``once``, until every source was sent once).

        Returns True when nothing is left unsent.
        """
        if self._queue.closed:  # run again after a run: the spool was closed
            self._queue = self._open_queue()
        try:
            for src in self.sources:  # BPF probes load (and the kernel verifies them) in parallel, in
                start = getattr(src, "start_in_background", None)  # the background: nothing waits for them
                if start is not None:
                    start()
            now = time.time()
            self._closed = math.floor(now) - 1
            replayable = [i for i, s in enumerate(self.sources) if s.replayable]
            self._cursor = {i: self._closed - self.backfill + 1 for i in replayable}
            if self.backfill:
                if replayable:
                    self._backfill_left = self.backfill * len(replayable)
                    self._backfill_started = now
                    self.progress(f"backfill: {self.backfill} s of history for "
                                  f"{', '.join(self.sources[i].name for i in replayable)}")
                else:
                    log.warning("--backfill applies to replayable (synthetic) sources only; ignored")
            ticks = 0
            next_tick = math.floor(now) + 1
            while True:
                self._work_until(next_tick, stop)
                if stop.is_set() or (once and self._once_done(ticks)):
                    break
                self._tick(math.floor(time.time()) - 1)
                ticks += 1
                next_tick = self._closed + 2
            if self._queue and time.time() >= self._retry_at:
                self._flush_one()  # a last try, e.g. when the backend shuts down after us
            return not self._queue
        finally:
            self._close_queue()
            self._save_state()
            self._client.close()
            for src in self.sources:
                close = getattr(src, "close", None)
                if close is not None:
                    try:
                        close()  # BPF probes detach their programs here
                    except Exception:  # noqa: BLE001 - shutting down; the others must still close
                        log.exception("closing %s", src.name)

    def _once_done(self, ticks: int) -> bool:
        produced_all = len(self._produced | set(self._broken)) == len(self.sources)
        if produced_all and not self._behind() and not self._queue:
            return True
        # Give up rather than hang when the backend keeps failing or a source stays silent;
        # a long backfill that is making progress is neither.
        failing = self._backoff > self.min_backoff
        return ticks >= 3 and (failing or not self._behind())

    def _tick(self, ts: int) -> None:
        self._closed = ts
        for i, src in enumerate(self.sources):
            if src.replayable:
                limit = self.backfill + MAX_CATCH_UP
                if ts - self._cursor[i] + 1 > limit:  # stalled for long: keep the recent past only
                    log.warning("%s fell %d s behind; skipping to the last %d s", src.name,
                                ts - self._cursor[i] + 1, limit)
                    self._cursor[i] = ts - limit + 1
            else:
                self._collect(i, ts)
        self._sync_queue()
        self._save_state()

    def _behind(self) -> bool:
        return any(c <= self._closed for c in self._cursor.values())

    def _work_until(self, deadline: float, stop: threading.Event) -> None:
        """Send and produce replayable seconds until the next tick is due."""
        while not stop.is_set():
            now = time.time()
            if now >= deadline:
                return
            can_send = bool(self._queue) and now >= self._retry_at
            behind = self._behind()
            if can_send and (not behind or self._queue.bytes >= self.max_request_bytes):
                self._flush_one()
            elif behind and self._queue.bytes < 2 * self.max_request_bytes:
                self._produce_one()
            elif can_send:
                self._flush_one()
            elif not self._queue and now - self._last_post >= HEARTBEAT_SECONDS and now >= self._retry_at:
                code, answer = self._post([])  # keep the source list current while nothing else is sent
                if code is not None and code >= 400:
                    self._limited(f"status{code}", f"backend answered {code} to a status update: "
                                                 f"{answer.get('detail', answer)}")
            else:
                wake = min(deadline, self._retry_at) if self._queue else deadline
                stop.wait(max(0.0, wake - now))

    def _produce_one(self) -> None:
        for i, cursor in self._cursor.items():
            if cursor <= self._closed:
                self._collect(i, cursor)
                self._cursor[i] = cursor + 1
                if self._backfill_left:
                    self._backfill_left -= 1
                    self._report_backfill()

    def _report_backfill(self) -> None:
        total = self.backfill * len(self._cursor)
        done = total - self._backfill_left
        if self._backfill_left == 0:
            took = time.time() - self._backfill_started
            self.progress(f"backfill: {done}/{total} s generated in {took:.1f} s; now live")
        elif done % max(1, total // 10) == 0:
            self.progress(f"backfill: {done}/{total} s generated, {self.stats['sent']} frames sent")

    def _replaced_by(self, i: int) -> str | None:
        """The active source that supersedes source ``i`` (e.g. bpf.disk for procfs.disk), if any."""
        name = self.sources[i].name
        for other in self.sources:
            if name in getattr(other, "replaces", ()) and other.name not in self.suspended \
                    and getattr(other, "state", "active") == "active":
                return other.name
        return None

    def _collect(self, i: int, ts: int) -> None:
        src = self.sources[i]
        replaced = self._replaced_by(i)
        self._stand_by(src, bool(replaced))
        if src.name in self.suspended or replaced:
            return
        try:
            out = src.collect(ts)
        except Exception as e:  # a broken probe must not stop the others
            self._broken[i] = f"{type(e).__name__}: {e}"
            self._limited(f"collect:{src.name}", f"source {src.name} failed: {self._broken[i]}", exc=True)
            return
        self._broken.pop(i, None)
        for family, host, rows in out:
            sid = f"{src.name}@{host}"
            self._enqueue(sid, ts, family, host, rows)
            self._produced.add(i)
            self._host_of[i] = host

    # ------------------------------------------------------------------ sequencing and queue
    def _open_queue(self) -> FrameQueue:
        """The spool under the state dir, else (none, or it cannot be used) a queue in memory.

        Every frame goes to the spool when it is made, not only once a send has failed: one
        write() per frame, an fdatasync per second (:meth:`_sync_queue`), and the sends read
        it back from the page cache. That keeps one path for every frame, and a crash loses
        none of them, not even the second it was sending."""
        if self._spool_dir is not None:
            try:
                spool = Spool(self._spool_dir, self.max_queue_bytes)
            except OSError as e:
                log.warning("cannot use the spool %s (%s): frames wait in memory and are lost if the agent stops",
                            self._spool_dir, e)
            else:
                for sid, seq in spool.last_seq.items():  # new frames must come after the spooled ones
                    self._persisted[sid] = max(seq, self._persisted.get(sid, -1))
                return spool
        return MemoryQueue(self.max_queue_bytes)

    def _sync_queue(self) -> None:
        try:
            self._queue.sync()
        except OSError as e:
            self._limited("spool", f"cannot sync {self._queue}: {e}")

    def _close_queue(self) -> None:
        try:
            self._queue.close()
        except OSError as e:
            log.warning("closing %s: %s", self._queue, e)

    def _next_seq(self, sid: str) -> int:
        last = self._seq.get(sid)
        seq = max(self._persisted.get(sid, -1) + 1, time.time_ns() // 1000) if last is None else last + 1
        self._seq[sid] = seq
        return seq

    def _arrow(self) -> bool:
        """Whether to send version 3 now."""
        return self.frame_version == 3 and time.time() >= self._json_until

    def _enqueue(self, sid: str, ts: int, family: str, host: str, rows: list[dict] | dict) -> None:
        seq = self._next_seq(sid)
        # Columns (versions 2 and 3): a fraction of the bytes and of the server's parsing of version 1's rows.
        cols = rows if is_columns(rows) else rows_to_columns(rows)  # type: ignore[arg-type]
        q = Queued(sid, host, seq, ts)
        if self._arrow():
            try:
                q.arrow = encode_part(family, cols)
            except ValueError as e:  # a value Arrow's types cannot hold: as JSON, the server names it
                self._limited("encode", f"{sid} ts {ts} cannot be written as Arrow ({e}); sent as JSON")
        if not q.arrow:
            q.json = _frame_json(sid, seq, ts, family, host, cols)
        try:
            dropped = self._queue.append(q)
        except OSError as e:  # e.g. the disk is full
            self.stats["dropped"] += 1
            self._limited("spool", f"cannot spool {sid} ts {ts} to {self._queue}: {e}; dropped, "
                                   f"{self._queue.dropped} so far")
            return
        if dropped:
            self.stats["dropped"] += dropped
            old = self._queue.last_dropped
            self._limited("dropped", f"{self._queue} full ({self.max_queue_bytes} bytes): dropped oldest frames, "
                                     f"{self._queue.dropped} so far (last {old.source} ts {old.ts})")

    def _flush_one(self) -> None:
        """Send one batch from the head of the queue; back off if the server is unavailable."""
        batch = self._queue.peek(self.max_request_bytes, MAX_FRAMES_PER_REQUEST)
        done = self._deliver(batch)
        self._queue.ack(done)
        if done < len(batch):
            self._retry_at = time.time() + self._backoff
            self._limited("retry", f"backend unavailable; {len(self._queue)} frames queued, "
                                   f"retrying in {self._backoff:.1f} s")
            self._backoff = min(self._backoff * 2, self.max_backoff)
        else:
            if self._backoff > self.min_backoff:
                log.info("backend reachable again; %d frames queued", len(self._queue))
            self._backoff = self.min_backoff

    def _deliver(self, batch: list[Queued]) -> int:
        """How many frames from the start of ``batch`` are finished (stored or finally refused)."""
        code, answer = self._post(batch)
        if code is None or code >= 500 or code == 429:
            return 0
        if code < 300:
            self.stats["sent"] += len(batch)
            for r in answer.get("rejected") or []:
                self.stats["refused"] += 1
                self._limited("rejected", f"backend refused {r.get('source')} seq {r.get('seq')}: {r.get('reason')}")
            return len(batch)
        if code in (413, 422) and len(batch) > 1:  # find the bad frame(s) instead of losing the batch
            half = len(batch) // 2
            first = self._deliver(batch[:half])
            return first if first < half else half + self._deliver(batch[half:])
        self.stats["refused"] += len(batch)
        self._limited(f"http{code}", f"backend answered {code}, dropping {len(batch)} frames "
                                     f"({batch[0].source} ts {batch[0].ts}...): {answer.get('detail', answer)}")
        return len(batch)

    def _post(self, batch: list[Queued]) -> tuple[int | None, dict]:
        request = {"agent": self.agent_id, "status": self.status(batch[0].host if batch else None),
                   "stats": self.own_stats(), "sent_at": round(time.time(), 3)}
        arrow = self._arrow() and all(q.arrow for q in batch)
        if arrow:
            body = request_body([({"source": q.source, "seq": q.seq, "ts": q.ts, "host": q.host}, q.arrow)
                                 for q in batch], request)
        else:  # the frames are JSON already, or Arrow parts converted for a server without version 3
            frames = ",".join(q.json or _frame_json(q.source, q.seq, q.ts, part_header(q.arrow)["family"], q.host,
                                                    part_columns(q.arrow)) for q in batch)
            body = f'{{"frames":[{frames}],{json.dumps(request, separators=(",", ":"))[1:]}'.encode()
        self._last_post = time.time()
        try:
            resp = self._client.post("/api/v1/ingest", body, ARROW_MEDIA_TYPE if arrow else "application/json")
        except transport.HTTPError as e:
            self._limited("connect", f"cannot reach {self.server}: {type(e).__name__}: {e}")
            if not batch:
                self._retry_at = time.time() + self._backoff
            return None, {}
        self.stats["requests"] += 1
        try:
            answer = resp.json()
        except ValueError:
            answer = {"detail": resp.text[:500]}
        if arrow and _refuses_arrow(resp.status_code, answer):
            self._json_until = time.time() + self.json_fallback
            (log.debug if self._fell_back else log.warning)(
                "%s does not read frame version 3 (Arrow IPC; it answered %d): sending version-2 JSON for %.0f s",
                self.server, resp.status_code, self.json_fallback)
            self._fell_back = True
            return self._post(batch)
        if resp.is_success and isinstance(answer, dict):
            self.stats["accepted"] += answer.get("accepted", 0)
            self.stats["duplicates"] += answer.get("duplicates", 0)
            if isinstance(answer.get("suspend"), list):
                self.apply_suspend(set(answer["suspend"]))
        return resp.status_code, answer if isinstance(answer, dict) else {"detail": answer}

    def _stand_by(self, src: Source, replaced: bool) -> None:
        """A replaced probe with a cost of its own (e.g. the wire decoder while the knfsd
        probe runs) is detached, not merely ignored; it resumes if its replacement stops."""
        if not hasattr(src, "suspend") or src.name in self.suspended or replaced == (src.name in self._standby):
            return
        try:
            (src.suspend if replaced else src.resume)()  # type: ignore[attr-defined]
        except Exception as e:  # noqa: BLE001 - a probe failing to detach must not stop the agent
            self._limited(f"standby:{src.name}", f"cannot {'detach' if replaced else 'reattach'} {src.name}: {e}")
            return
        (self._standby.add if replaced else self._standby.discard)(src.name)

    def apply_suspend(self, names: set[str]) -> None:
        """Suspend and resume sources as the backend says operators asked."""
        for src in self.sources:
            want = src.name in names
            if want == (src.name in self.suspended):
                continue
            # a probe standing by (replaced) stays detached whatever operators ask
            hook = None if src.name in self._standby else getattr(src, "suspend" if want else "resume", None)
            try:
                if hook is not None:
                    hook()
            except Exception as e:  # noqa: BLE001 - report it as the source's state, keep the agent going
                self._limited(f"suspend:{src.name}", f"cannot {'suspend' if want else 'resume'} {src.name}: {e}")
                continue
            (self.suspended.add if want else self.suspended.discard)(src.name)
            log.info("%s %s on request", src.name, "suspended" if want else "resumed")

    def status(self, host: str | None = None) -> list[dict]:
        """Every source's status; with ``host``, those whose frames are (or, before any, whose ``host``
        attribute says they will be) about that host."""
        out = []
        for i, src in enumerate(self.sources):
            if host is not None and self._host_of.get(i, getattr(src, "host", host)) != host:
                continue
            replaced = self._replaced_by(i)
            for st in src.status():
                st = {**st, "suspendable": hasattr(src, "suspend")}
                if i in self._broken:
                    st = {**st, "state": "error", "reason": self._broken[i][:500]}
                elif src.name in self.suspended:
                    st = {**st, "state": "suspended", "reason": "suspended by an operator", "cost": None}
                elif replaced:
                    st = {**st, "state": "standby", "cost": None,
                          "reason": f"{replaced} is active and measures the same, in more detail"}
                out.append({k: v for k, v in st.items() if v is not None})
        return out

    def own_stats(self) -> dict:
        """This process's CPU (since the last call, % of one core) and RSS, and the queue's state: with a
        spool, the frames and bytes spooled and the frames it dropped over its life (across restarts)."""
        now, cpu = time.monotonic(), _cpu_seconds()
        t0, c0 = self._usage
        if now - t0 >= 0.5:
            self._cpu_pct = max(0.0, (cpu - c0) / (now - t0) * 100)
            self._usage = (now, cpu)
        # The keys the backend's AgentStats knows: it refuses a request with any other (422).
        return {"cpu_pct": round(self._cpu_pct, 3), "rss_bytes": _rss_bytes(), "queue_frames": self._queue.frames,
                "queue_bytes": self._queue.bytes, "dropped_frames": self._queue.dropped,
                "in_process": self.in_process}

    def _limited(self, key: str, message: str, exc: bool = False) -> None:
        """Log a recurring problem at most every 30 s."""
        now = time.time()
        if now >= self._quiet_until.get(key, 0.0):
            self._quiet_until[key] = now + 30
            log.warning(message, exc_info=exc)

    # ------------------------------------------------------------------ persisted seq
    def _load_state(self) -> dict[str, int]:
        if not self._state_file or not self._state_file.exists():
            return {}
        try:
            return {k: int(v) for k, v in json.loads(self._state_file.read_text())["seq"].items()}
        except (ValueError, KeyError, TypeError, OSError) as e:
            log.warning("ignoring unreadable %s: %s", self._state_file, e)
            return {}

    def _save_state(self) -> None:
        if not self._state_file or not self._seq:
            return
        merged = {**self._persisted, **self._seq}
        if merged == self._persisted:
            return
        try:
            self._state_file.parent.mkdir(parents=True, exist_ok=True)
            tmp = self._state_file.with_suffix(".tmp")
            tmp.write_text(json.dumps({"seq": merged}))
            os.replace(tmp, self._state_file)  # atomic: a crash leaves the old or the new file
            self._persisted = merged
        except OSError as e:
            self._limited("state", f"cannot save {self._state_file}: {e}")


def _frame_json(sid: str, seq: int, ts: int, family: str, host: str, cols: dict) -> str:
    return json.dumps({"v": 2, "source": sid, "seq": seq, "ts": ts, "family": family, "host": host,
                       "columns": cols}, separators=(",", ":"))


def _refuses_arrow(code: int, answer) -> bool:
    """A server that does not read version 3: 415, or one from before it, which took any body for
    JSON and answered 422 for the body as a whole (loc ["body"]), never naming a frame."""
    errors = answer.get("errors") if isinstance(answer, dict) else None
    return code == 415 or (code == 422 and isinstance(errors, list)
                           and any(isinstance(e, dict) and e.get("loc") == ["body"] for e in errors))


def _cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


# ---------------------------------------------------------------------- entry points
DEFAULT_SOURCES = ("bpf", "procfs", "zfs")  # each reports "off" with the reason where it cannot run


def make_agent(server: str = DEFAULT_SERVER, token: str | None = None, sources: Sequence[str] = DEFAULT_SOURCES, *,
               state_dir: str | Path | None = None, demo_clients: int = 20, seed: int = 7, backfill: int = 0,
               host: str | None = None, demo_host: str = "demo-nas", agent_id: str | None = None,
               **agent_options) -> Agent:
    """An Agent for registry source names (``procfs``, ``synthetic``, ``procfs.cpu`` ...)."""
    options = registry.Options(host=host or socket.gethostname(), demo_host=demo_host,
                               demo_clients=demo_clients, seed=seed)
    names = registry.expand(sources)
    agent_id = agent_id or f"{socket.gethostname()}/{'+'.join(dict.fromkeys(n.split('.')[0] for n in names))}"
    return Agent(registry.build(names, options), server, token, agent_id, state_dir=state_dir,
                 backfill=backfill, **agent_options)


def start_in_thread(server: str = DEFAULT_SERVER, token: str | None = None, sources: Sequence[str] = DEFAULT_SOURCES,
                    **kwargs) -> tuple[threading.Thread, threading.Event]:
    """Run an agent in a daemon thread (``loupe serve``); set the event to stop it.

    Takes the arguments of :func:`make_agent`, e.g.
    ``start_in_thread(url, token, ["synthetic"], demo_clients=20, seed=7, backfill=900, state_dir=...)``.
    """
    agent = make_agent(server, token, sources, in_process=True, **kwargs)
    stop = threading.Event()
    thread = threading.Thread(target=agent.run, args=(stop,), name=f"loupe-agent-{agent.agent_id}", daemon=True)
    thread.agent = agent  # type: ignore[attr-defined]  # for tests and telemetry
    thread.start()
    return thread, stop


def _parser(prog: str, sources: str, host_help: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="Collect once a second and push frames to a Loupe backend.")
    p.add_argument("--server", default=DEFAULT_SERVER, help=f"backend URL (default {DEFAULT_SERVER})")
    p.add_argument("--token", default=os.environ.get("LOUPE_INGEST_TOKEN"),
                   help="ingest bearer token (default: $LOUPE_INGEST_TOKEN)")
    p.add_argument("--ca-file", default=os.environ.get("LOUPE_CA_FILE"),
                   help="with an https:// server: trust exactly this PEM certificate (e.g. the server's own, "
                        "self-signed) instead of the system's CAs (default: $LOUPE_CA_FILE)")
    p.add_argument("--sources", default=sources,
                   help=f"comma-separated sources from: {', '.join(sorted(registry._selectable()))} "
                        f"(default {sources})")
    p.add_argument("--demo-clients", type=int, default=20, help="clients of the synthetic NAS (1..10000)")
    p.add_argument("--seed", type=int, default=7, help="seed of the synthetic NAS")
    p.add_argument("--host", default=None, help=host_help)
    p.add_argument("--state-dir", type=Path, default=None,
                   help="directory that keeps the last seq per source and spools frames the backend has not "
                        "taken yet (without it they wait in memory and are lost when the agent stops)")
    p.add_argument("--backfill", type=int, default=0, metavar="SECONDS",
                   help="synthetic only: first send this many seconds of history, oldest first")
    p.add_argument("--frame-version", type=int, choices=(2, 3), default=3,
                   help="3: Arrow IPC (default; a server without it gets 2 for a while, by itself); 2: JSON")
    p.add_argument("--once", action="store_true",
                   help="collect and send once, then exit (status 1 unless the backend took every frame)")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    return p


def _run_cli(a: argparse.Namespace, **host_kw) -> int:
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.DEBUG if a.verbose else logging.INFO,
                            format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if not 1 <= a.demo_clients <= 10_000:
        print("--demo-clients must be between 1 and 10000", file=sys.stderr)
        return 2
    try:
        agent = make_agent(a.server, a.token, a.sources.split(","), state_dir=a.state_dir, ca_file=a.ca_file,
                           demo_clients=a.demo_clients, seed=a.seed, backfill=a.backfill,
                           frame_version=a.frame_version,
                           progress=lambda m: print(m, flush=True), **host_kw)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    stop = threading.Event()
    if threading.current_thread() is threading.main_thread():
        # SIGTERM (systemd, docker stop) ends like Ctrl-C should: a last send, state saved, a summary
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        ok = agent.run(stop, once=a.once)
    except KeyboardInterrupt:
        return 130
    s = agent.stats
    print(f"sent {s['sent']} frames ({s['accepted']} accepted, {s['duplicates']} duplicates), "
          f"refused {s['refused']}, dropped {s['dropped']}", flush=True)
    return 0 if ok and s["sent"] and not s["refused"] else 1


def main(argv: list[str] | None = None) -> int:
    """``loupe agent``: this machine's BPF probes and procfs counters (and optionally the synthetic NAS)."""
    a = _parser("loupe agent", ",".join(DEFAULT_SOURCES), "host name for this machine's data (default: hostname)").parse_args(argv)
    return _run_cli(a, host=a.host)


def demo_main(argv: list[str] | None = None) -> int:
    """``loupe demo``: the agent with only the synthetic NAS."""
    a = _parser("loupe demo", "synthetic", "host name of the synthetic NAS (default demo-nas)").parse_args(argv)
    return _run_cli(a, demo_host=a.host or "demo-nas")


if __name__ == "__main__":
    sys.exit(main())
