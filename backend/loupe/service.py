"""The running backend: store, live hub, telemetry, background upkeep and the local agent."""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections import deque
from dataclasses import replace
from pathlib import Path

from .alerts import AlertBook, AlertEngine, Deliverer
from .auth import Auth, new_secret
from .config import Settings
from .control import SourceControl
from .frame import IngestRequest
from .frame_v3 import ArrowFrame
from .live import LiveHub
from .memory import use_returning_arrow_pool
from .names import NameResolver
from .store.base import IngestOutcome, PruneReport, StoreUnavailable
from .store.duckdb_store import DuckDBStore
from .telemetry import Telemetry
from .webhooks import ReceiverPolicy

log = logging.getLogger("loupe")


def _local_token(auth: Auth, path: Path, name: str, scope: str, role: str | None = None) -> str:
    """A token kept in a 0600 file in the data dir for programs on this machine (the local agent,
    `loupe run`). Registered on first use; if an admin revoked it, a new one replaces the file."""
    secret = path.read_text().strip() if path.exists() else ""
    rec = auth.known_secret(secret) if secret else None
    if secret and rec is not None and rec.revoked_at is None:
        return secret
    if secret and rec is None:  # a file from before tokens were registered: keep it working
        auth.create_token(name, scope, role=role, by="loupe", origin="local", secret=secret)
        return secret
    secret = new_secret()
    auth.create_token(name, scope, role=role, by="loupe", origin="local", secret=secret)
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(secret + "\n")
    return secret


def _configured_token(auth: Auth, secret: str, name: str, scope: str) -> bool:
    """Register a token given in the environment; False if an admin has revoked it."""
    rec = auth.known_secret(secret)
    if rec is None:
        auth.create_token(name, scope, by="loupe", origin="config", secret=secret)
        return True
    if rec.revoked_at is not None:
        log.warning("the configured %s token (%s) was revoked by %s: requests with it are refused",
                    scope, name, rec.revoked_by)
        return False
    return True


class Loupe:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.arrow_pool = use_returning_arrow_pool()  # before ingest allocates: see memory.py
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        self.retain = {"second": settings.retain_seconds, "minute": settings.retain_minutes,
                       "hour": settings.retain_hours}
        self.store = DuckDBStore(settings.db_path, retain=self.retain, top_files=settings.top_files,
                                 compact_every=settings.compact_every, memory_limit=settings.db_memory_limit)
        self.auth = Auth(settings.data_dir / "auth.sqlite", session_idle=settings.session_idle_minutes * 60,
                         session_max=settings.session_max_hours * 3600,
                         per_address=(settings.login_per_address, 60.0), per_user=(settings.login_per_user, 60.0))
        # Shown once by `loupe serve` when it made the first admin's password itself.
        self.generated_admin_password = self.auth.bootstrap(settings.admin_password)
        self.token = _local_token(self.auth, settings.data_dir / "ingest.token", "local-agent", "ingest")
        if settings.ingest_token and _configured_token(self.auth, settings.ingest_token, "configured", "ingest"):
            self.token = settings.ingest_token
        if settings.metrics_token:
            _configured_token(self.auth, settings.metrics_token, "configured-metrics", "metrics")
        self.cli_token = _local_token(self.auth, settings.data_dir / "cli.token", "local-cli", "api", "operator")
        # `loupe serve --demo` prints a link that signs in as admin, for the demo only (see /auth/link).
        self.demo_link = secrets.token_urlsafe(24) if settings.demo else None
        self.hub = LiveHub()
        self.alerts = AlertBook(settings.data_dir / "alerts.sqlite")
        self.alert_engine = AlertEngine(self.store, self.alerts, top_elements=settings.alert_top_elements,
                                        max_open=settings.alert_max_open)
        self.names = NameResolver(settings, self.store)
        self.deliverer = Deliverer(self.alerts, attempts=settings.webhook_attempts, timeout=settings.webhook_timeout,
                                   public_url=settings.public_url, policy=ReceiverPolicy.parse(settings.webhook_allow),
                                   namer=self.names.name)
        self.control = SourceControl(settings.data_dir / "sources.json")
        self.telemetry = Telemetry(self.store.size_bytes, lambda: self.hub.subscribers, self.control,
                                   backlog=self.store.backlog, memory=self.store.memory,
                                   memory_parts=self.store.memory_parts, live_pending=self.hub.pending)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.agent_stops: list[threading.Event] = []
        self.last_prune: dict | None = None
        # (time, store bytes) once a minute for a day: the status page's growth and days until full
        self.size_history: deque[tuple[float, int]] = deque(maxlen=1440)

    # Ingest is synchronous: it runs in the API's worker threads. A version-3 request's frames are
    # ArrowFrames (frame_v3), put into its IngestRequest unvalidated: decode() checked them.
    def ingest(self, req: IngestRequest, received_at: float | None = None, body: bytes | None = None) -> IngestOutcome:
        """`body`: the version-3 request req's frames were decoded from (see Store.ingest)."""
        received_at = time.time() if received_at is None else received_at
        frames, offset = req.frames, None
        if req.sent_at is not None:
            # The agent's clock minus ours (plus the transit, well under the limit). Beyond the
            # limit its seconds would land in the wrong place: shift them onto our clock.
            offset = req.sent_at - received_at
            if abs(offset) > self.settings.clock_skew_limit:
                shift = round(offset)
                frames = [replace(fr, ts=fr.ts - shift) if isinstance(fr, ArrowFrame)
                          else fr.model_copy(update={"ts": fr.ts - shift}) for fr in frames]
                self.telemetry.clock_shifted += len(frames)
        t = self.telemetry
        try:
            out = self.store.ingest(frames, received_at=received_at, body=body)
        except StoreUnavailable as e:
            # Shown on every page and in /metrics until an ingest succeeds again (space came back).
            if t.ingest_error is None:
                t.ingest_error_since = received_at
                log.error("ingest failing: %s", e)
            t.ingest_error = str(e)
            t.ingest_failures += 1
            raise
        if t.ingest_error is not None:
            log.info("ingest works again after %.0f s: %s", received_at - (t.ingest_error_since or received_at),
                     t.ingest_error)
            t.ingest_error = t.ingest_error_since = None
        t.count("accepted", out.accepted)
        t.count("duplicate", out.duplicates)
        t.count("rejected", len(out.rejected))
        for r in out.rejected:
            t.rejected[r["kind"]] += 1
        t.rows += out.rows
        t.folded += out.folded_rows
        if out.accepted:
            t.observe_tables(out.tables, received_at)
            self.hub.publish(out.seconds)
        if req.agent:  # cost first: a reader never sees a source without its cost and flags
            self.control.report(req.agent, req.status, req.stats, received_at, clock_offset=offset,
                                skewed=offset is not None and abs(offset) > self.settings.clock_skew_limit)
        if req.agent and req.status is not None:
            host = req.frames[0].host if req.frames else None
            self.store.record_status(req.agent, host, req.status, received_at)
        return out

    def start_background(self) -> None:
        for target, name in ((self._upkeep, "loupe-upkeep"), (self._flusher, "loupe-flush"),
                             (self._resorter, "loupe-resort"), (self._alerting, "loupe-alerts"),
                             (lambda: self.deliverer.serve(self._stop), "loupe-webhooks")):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)

    def _flusher(self) -> None:
        """Acknowledged batches wait in the ingest log and in memory; write them to the tables each second."""
        failing = False
        while not self._stop.is_set():
            self.store.wait_flush(1.0)
            try:
                self.store.flush()
                if failing:
                    log.info("store flush works again")
                failing = False
            except Exception:
                if not failing:  # once per outage, not every second
                    log.exception("store flush failed; acknowledged batches stay in the ingest log and are retried")
                failing = True

    def _upkeep(self) -> None:
        next_prune = next_compact = next_checkpoint = next_size = 0.0
        while not self._stop.wait(1.0):
            now = time.time()
            try:
                self.store.rollup(int(now))
                if now >= next_compact:
                    next_compact = now + 60
                    moved = self.store.compact(int(now), wait=False)
                    if moved:
                        log.info("compacted %d settled seconds rows", moved)
                    resorted = self.store.sort_minutes(int(now))
                    if resorted:
                        log.info("sorted a day of the minute tier by element (%d rows)", resorted)
                if now >= next_size:
                    next_size = now + 60
                    self.size_history.append((now, self.store.size_bytes()))
                if now >= next_checkpoint:
                    # refused (another write was committing): again next second, not in 30
                    next_checkpoint = now + (30 if self.store.checkpoint() else 1)
                    self.auth.flush_usage()
                    self.auth.prune_sessions()
                if now >= next_prune:
                    next_prune = now + 300
                    if self.prune(now, wait=False) is None:  # a day of seconds is being re-sorted
                        next_prune = now + 60
            except Exception:  # keep upkeep alive; the next tick retries
                log.exception("store upkeep failed")

    def prune(self, now: float, *, wait: bool = True) -> PruneReport | None:
        """Apply retention now; None when `wait` is off and another writer of settled seconds is at work."""
        rep = self.store.prune(int(now), wait=wait)
        if rep is not None:
            for k, v in rep.rows.items():
                self.telemetry.pruned[k] += v
            self.last_prune = dict(at=now, rows=rep.rows, bytes_before=rep.bytes_before, bytes_after=rep.bytes_after)
        return rep

    def _alerting(self) -> None:
        """Alert rules over the newly settled seconds, and agents coming and going, each second."""
        failing = False
        while not self._stop.wait(1.0):
            try:
                self.alert_engine.tick(time.time())
                failing = False
            except Exception:
                if not failing:
                    log.exception("alert evaluation failed; it resumes where it stopped")
                failing = True

    def _resorter(self) -> None:
        """Settled seconds are rewritten sorted by element (closed days whole, the open day's hours
        merged into runs), in a thread of their own: a busy server's day takes minutes, and rollups
        must not wait for it."""
        while not self._stop.wait(60.0):
            try:
                while not self._stop.is_set() and (rows := self.store.sort_seconds(int(time.time()), wait=False)):
                    log.info("re-sorted %d rows of the seconds tier by element", rows)
            except Exception:
                if not self._stop.is_set():  # close() interrupts a re-sort on purpose
                    log.exception("re-sorting seconds failed; it is tried again in a minute")

    def start_local_agent(self, url: str, *, demo: bool) -> None:
        """Run this machine's agent (and the demo NAS) in-process, posting over HTTP like any agent."""
        from loupe_probes.agent import start_in_thread

        # Under TLS the server speaks only HTTPS: its own agents pin its certificate.
        ca = str(self.settings.tls_cert) if self.settings.tls_cert else None
        _, stop = start_in_thread(
            server=url, token=self.token, sources=self.settings.local_sources.split(","),
            state_dir=Path(self.settings.data_dir) / "agent", ca_file=ca,
        )
        self.agent_stops.append(stop)
        if demo:
            _, stop = start_in_thread(
                server=url, token=self.token, sources=["synthetic"], state_dir=Path(self.settings.data_dir) / "demo",
                ca_file=ca,
                demo_clients=self.settings.demo_clients, seed=self.settings.demo_seed,
                backfill=self.settings.demo_backfill,
            )
            self.agent_stops.append(stop)

    def close(self) -> None:
        for s in self.agent_stops:
            s.set()
        self._stop.set()
        with self.alerts.changed:
            self.alerts.changed.notify_all()
        self.store.interrupt()
        for t in self._threads:
            t.join(timeout=5)
        self.alerts.close()
        self.names.close()
        self.store.close()
        self.auth.close()
