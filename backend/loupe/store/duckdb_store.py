"""The embedded store, on DuckDB.

Layout, per family ``f`` (nfs, disk, cpu, net):

* ``f_s_hot``  seconds as they arrive, appended one Arrow batch per commit. It is
               narrow: histograms are two lists (bucket ordinals ``hk``, counts
               ``hv``), because DuckDB's cost per insert grows with the number of
               columns, not rows. The view ``f_s_hotv`` widens it to the layout below.
* ``f_s``      settled seconds, moved from hot in chunks of ``compact_every``
               seconds and sorted by the family's key (e.g. host, client, ts, file),
               so one client's day touches a few row groups (zone maps skip the rest).
               Its coded dimensions (host, op, share, ...: ``Family.coded``) are ENUMs,
               widened as values appear (:meth:`DuckDBStore.admit_codes`).
* ``f_m``, ``f_h``  minute and hour rollups: exact sums of the tier below.

Every row holds every dimension of its family, so any breakdown can be asked of
any stored period. Histograms are one BIGINT column per log2 bucket (``l20`` =
latency bucket 2^20 ns); empty buckets are constant zero and compress away.

Ingest writes no DuckDB transaction: an acknowledged batch is in the ingest log
(:mod:`.ingest_log`, fsync'd) and in memory (the *stage*, ``f_stage``, one Arrow table
per commit tagged with its log sequence number). :meth:`flush` moves the stage into
``f_s_hot`` in one transaction, about once a second, and records the flushed LSN in
``ingest_mark`` in that transaction. Queries read the stage through a per-cursor view
that keeps only rows above the LSN their own snapshot of ``ingest_mark`` shows, so a
row is counted exactly once while a flush commits beside them.

Rollups are driven by a ``dirty`` set of periods, written by the flush that stores the
seconds that dirtied them; a late frame simply re-dirties its minute. Until a period
is rolled, queries read it from the tier below (see :meth:`_layers`), so a coarse
chart never has a hole at its right edge.
"""

from __future__ import annotations

import heapq
import json
import logging
import os
import re
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..catalog import FAMILIES, FILE_OTHER, HISTOGRAMS, Family, bucket_label
from ..frame import Frame, SourceStatus
from ..frame_v3 import ArrowFrame, FrameError, StreamError, decode
from ..timerange import SECOND_STEP_GRAIN, Window
from .base import (
    Aggregate, DeleteReport, Heatmap, IngestOutcome, PathSum, PruneReport, Statistic, Store, StoreUnavailable,
)
from .ingest_log import IngestLog

log = logging.getLogger("loupe.store")

PERIOD = {"t": SECOND_STEP_GRAIN, "m": 60, "h": 3600}
HOT_GRAIN = PERIOD["t"]  # f_k_t: per-element totals of the hot seconds per this many seconds
HOT_SLOTS = 60 // HOT_GRAIN  # f_k_t keeps a minute's periods in one row, as lists of this length
MEASURES = ("count", "bytes", "lat_sum")
TIER_TABLE = {"second": "s", "minute": "m", "hour": "h"}
LAYOUT = 1  # bump when table shapes change
ROLLUP_GRACE = 5  # seconds after a period ends before it is rolled up
FUTURE_SLACK = 600  # frames this far ahead of the server clock are refused
# A coded dimension with more values than this goes back to VARCHAR for good (see admit_codes).
CODE_CAP = 1024


@dataclass
class _Job:
    """One request's share of a group commit."""

    seqs: dict[str, int]
    hosts: set[str]
    seen: float
    tables: dict[str, pa.Table] = field(default_factory=dict)
    seconds: dict[str, set[int]] = field(default_factory=dict)
    done: bool = False
    error: BaseException | None = None


def _sort_key(fam: Family) -> list[str]:
    # host, then the dimension users drill into most, then ts: one element's history is contiguous.
    # nfs: file after ts, so ts is monotonic within a client's run and compresses (7 % fewer bytes per
    # row than (client, file, ts) on the benchmark's seed-workload day); a client's files are
    # still within its run.
    return {"nfs": ["host", "client", "ts", "file"], "net": ["host", "client", "ts"], "tcp": ["host", "client", "ts"],
            "disk": ["host", "disk", "ts"], "cpu": ["host", "ts"]}.get(fam.name, ["host", "ts"])


def _sorted(fam: Family, src: str, elements: str | None = None) -> str:
    """A SELECT of every column of `src` (an SQL query of the family's rows) in the family's
    storage order: its sort key, each element's seconds ascending and descending in turn.
    `elements`: a cheaper query with the same elements (hosts, clients) as `src`, if any.

    Bitpacking stores ts as deltas in groups of 2,048 values, and the jump back at each element's
    start (an hour of seconds: 12 bits) widened about half the groups; turning every other
    element's seconds, neighbouring runs meet at the same second (nfs: ts 0.9 B per row -> 0.2).
    The turn comes from a join with the numbered elements: a window over every row
    (dense_rank) made a 29 M-row sort three times slower. The elements are read by a query of
    their own (a scan of two columns): `src` as a materialized CTE read once made a 10.8 M-row
    sort a quarter slower (ad hoc: 13.0-13.5 s, the plain order 10.4-10.7 s, this way 10.7-10.8 s)."""
    key = _sort_key(fam)
    at = key.index("ts")
    if at < 2:
        return f"SELECT * FROM ({src}) ORDER BY {', '.join(key)}"
    lead = ", ".join(key[:at])
    order = ", ".join(key[:at] + ["CASE WHEN _turn = 1 THEN ts ELSE -ts END"] + key[at + 1:])
    return (f"SELECT _src.* FROM ({src}) AS _src JOIN (SELECT {lead}, row_number() OVER (ORDER BY {lead}) % 2 "
            f"AS _turn FROM (SELECT DISTINCT {lead} FROM ({elements or src}))) AS _turns USING ({lead}) "
            f"ORDER BY {order}")


def merge_spans(day: int, done: int, settled: int, unit: int = 3600) -> list[tuple[int, int]]:
    """The spans of the open day to rewrite as one run each, once its seconds before `settled`
    have settled and the runs up to `done` are merged (all three unix seconds, `day` a UTC
    midnight). Runs are aligned binary blocks of `unit` (an hour): with H hours settled, the day
    holds one run per set bit of H, largest first (H = 6: hours 0-4 and 4-6), so merging is a
    binary counter's carry. Spans of one unit are already runs (compaction sorted them) and are
    not listed; the last span's end is where the runs stand once all are done."""
    h = (min(settled, day + 86400) - day) // unit
    out, lo = [], 0
    for bit in reversed(range(h.bit_length())):
        if h >> bit & 1:
            hi = lo + (1 << bit)
            if day + hi * unit > done and bit > 0:
                out.append((day + lo * unit, day + hi * unit))
            lo = hi
    return out


def _hist_cols(fam: Family) -> list[str]:
    return [c for h in fam.hists for c in h.columns]


def _ordinals(fam: Family) -> dict[str, dict[int, int]]:
    """Histogram -> bucket exponent -> position of its column in _hist_cols (the hot table's ``hk``)."""
    out, i = {}, 0
    for h in fam.hists:
        out[h.name] = {}
        for e in h.buckets:
            out[h.name][e] = i
            i += 1
    return out


_ORDINAL_LOOKUP: dict[str, dict[str, tuple[np.ndarray, int]]] = {}


def _ordinal_lookup(fam: Family) -> dict[str, tuple[np.ndarray, int]]:
    """Histogram -> (array of column ordinals by bucket exponent - lo, lo), made once per family."""
    got = _ORDINAL_LOOKUP.get(fam.name)
    if got is None:
        ords = _ordinals(fam)
        got = _ORDINAL_LOOKUP[fam.name] = {
            h.name: (np.array([ords[h.name][e] for e in h.buckets], dtype=np.int64), h.buckets[0])
            for h in fam.hists}
    return got


def _codes(col: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """(code of each row, the values): a dictionary array's own (trusted to hold each value once; see
    frame_v3._dimension), a string array's by encoding it."""
    enc = col if pa.types.is_dictionary(col.type) else pc.dictionary_encode(col)
    return enc.indices.to_numpy(zero_copy_only=False), enc.dictionary


def _plain(col: pa.Array) -> pa.Array:
    """A dimension as the strings the hot table holds."""
    return col.dictionary.take(col.indices) if pa.types.is_dictionary(col.type) else col


def _group_ids(n: int, keys: list[tuple[np.ndarray, int]]) -> tuple[np.ndarray, np.ndarray]:
    """n rows grouped by equal values of every key (codes, how many there may be): (group id per
    row, first row of each group), groups numbered in order of their combined codes. Any label may
    hold any character, so labels are never joined with a separator: their codes are the digits
    of one number, renumbered only when the next digit could overflow it; a constant key adds none."""
    gid, size = np.zeros(n, dtype=np.int64), 1
    for code, card in keys:
        if card <= 1:
            continue
        if size * card >= 2**62:
            gid, first = _groups(gid)
            size = len(first)
        gid = gid * card + code
        size *= card
    return _groups(gid)


def _groups(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(group of each element, groups numbered in order of value; smallest index in each group):
    np.unique's inverse and index, without the stable sort np.unique needs for its index: numpy's
    default sort of int64 is several times faster at 10k elements (1.6 against 0.26 ms at 30k)."""
    n = len(a)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.argsort(a)
    s = a[order]
    start = np.empty(n, dtype=bool)
    start[0], start[1:] = True, s[1:] != s[:-1]
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = np.cumsum(start) - 1
    return inverse, np.minimum.reduceat(order, np.flatnonzero(start))


def _blank(n: int) -> pa.Array:
    return pa.repeat(pa.scalar("", pa.string()), n)


def _hist_lists(r: np.ndarray, o: np.ndarray, v: np.ndarray, n: int) -> tuple[pa.Array, pa.Array]:
    """Sparse histogram entries (row, bucket ordinal, events) -> ``hk``/``hv`` lists for rows 0..n-1:
    zeros dropped, each row's buckets in order, the same (row, bucket) twice summed into one."""
    nz = v != 0
    key, v = r[nz] << 16 | o[nz], v[nz]  # ordinals are uint16: (row, ordinal) as one sortable int
    if len(key) > 1:
        order = np.argsort(key)  # equal keys are summed: their order does not matter
        key, v = key[order], v[order]
        first = np.empty(len(key), dtype=bool)
        first[0], first[1:] = True, key[1:] != key[:-1]
        if not first.all():
            at = np.flatnonzero(first)
            key, v = key[at], np.add.reduceat(v, at)
    off = np.zeros(n + 1, dtype=np.int32)
    off[1:] = np.cumsum(np.bincount(key >> 16, minlength=n))
    return (pa.ListArray.from_arrays(pa.array(off), pa.array((key & 0xFFFF).astype(np.uint16))),
            pa.ListArray.from_arrays(pa.array(off), pa.array(v)))


def _per_element_sql(names: list[str], src: str) -> str:
    """(ts, dim, host, key, count, bytes, lat_sum) of `src`: one grouping-sets scan yields the
    per-element sums of every dimension in `names`, plus the per-host sums (dim ``host``)."""
    sets = ", ".join([f"(ts, host, {d})" for d in names] + ["(ts, host)"])
    which = " ".join(f"WHEN grouping({d}) = 0 THEN '{d}'" for d in names)
    key = " ".join(f"WHEN grouping({d}) = 0 THEN {d}" for d in names)
    dim_expr = f"CASE {which} ELSE 'host' END" if names else "'host'"
    key_expr = f"CASE {key} ELSE host END" if names else "host"
    sums = ", ".join(f"sum({m})::BIGINT AS {m}" for m in MEASURES)
    return (f"SELECT ts, {dim_expr} AS dim, host, {key_expr} AS key, {sums} "
            f"FROM {src} GROUP BY GROUPING SETS ({sets})")


_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def _parse_bytes(text: str) -> int:
    """DuckDB's size settings as bytes: '1.0 GiB', '953.6 MiB', '1GB'."""
    m = re.fullmatch(r"\s*([\d.]+)\s*([KMGT]?i?B)\s*", text, re.IGNORECASE)
    if m is None:
        raise ValueError(f"not a size: {text!r}")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


class DuckDBStore(Store):
    def __init__(
        self,
        path: Path | str,
        *,
        retain: dict[str, int] | None = None,
        top_files: int = 500,
        compact_every: int = 3600,
        clock=time.time,
        stage_flush_rows: int = 200_000,
        stage_max_rows: int = 5_000_000,
        memory_limit: str | None = None,
    ) -> None:
        """`stage_flush_rows`: an ingest that leaves more rows waiting wakes the flush thread (see
        wait_flush), or with none writes them itself (bulk loads); `stage_max_rows`: beyond this
        the store is not keeping up, and ingest is refused (503, retried by agents) instead of
        growing memory without bound. `memory_limit`: DuckDB's buffer pool bound (its default is
        80 % of the machine's RAM, which a NAS needs for its own cache)."""
        self.path = str(path)
        self.retain = retain or {"second": 48 * 3600, "minute": 30 * 86400, "hour": 365 * 86400}
        self.top_files = top_files
        self.compact_every = compact_every
        self.stage_flush_rows = stage_flush_rows
        self.inline_flushes = 0  # ingests that flushed the stage themselves (no flush thread waits)
        self.checkpoints_refused = 0  # checkpoints the engine refused (another write was committing)
        self._flush_due = threading.Event()
        self._flush_thread = False  # something calls wait_flush(): it flushes, requests never do
        self.stage_max_rows = stage_max_rows
        self.clock = clock
        self._db = duckdb.connect(self.path)
        # Checkpoints run from the upkeep thread (checkpoint()), not inline in an ingest commit
        # once the WAL passes DuckDB's 16 MB default; the WAL still makes every commit durable.
        # Should those keep failing, DuckDB checkpoints by itself at this size: until then the
        # WAL's data also stays in memory, so the bound is kept well under the memory limit.
        self._db.execute("SET checkpoint_threshold = '256MB'")
        if memory_limit:
            self._db.execute(f"SET memory_limit = '{memory_limit}'")  # validated by Settings
        self._local = threading.local()
        self._columns: dict[str, list[str]] = {}
        self.use_totals = True  # False: every breakdown scans the tiers (tests and the bench compare both)
        self._wlock = threading.RLock()
        self._create()
        self._hwm: dict[str, int] = dict(self._db.execute(
            "SELECT source, max(hwm) FROM (SELECT source, hwm FROM seqs UNION ALL SELECT source, hwm FROM seq_log) "
            "GROUP BY source").fetchall())
        self._hwm_reserved = dict(self._hwm)  # committed plus in-flight; guarded by _plock
        self._plock = threading.Lock()
        self._queue: list[_Job] = []
        self._dirty: set[tuple[str, str, int]] = {
            (f, t, p) for f, t, p in self._db.execute("SELECT DISTINCT family, tier, period FROM dirty").fetchall()
        }
        self._hosts: set[str] = {h for (h,) in self._db.execute("SELECT host FROM hosts").fetchall()}
        self._sources: dict[tuple[str, str], dict] = {}
        for row in self._db.execute(
            "SELECT agent, name, host, families, state, reason, demo, last_seen FROM sources"
        ).fetchall():
            a, n, h, fams, st, rs, demo, seen = row
            self._sources[(a, n)] = dict(agent=a, name=n, host=h, families=fams.split(",") if fams else [],
                                         state=st, reason=rs, demo=bool(demo), last_seen=seen)
        self._check_layout()
        self._load_codes(self._db)
        row = self._db.execute("SELECT value FROM meta WHERE key = 'retain'").fetchone()
        self._retain_origin: tuple[str, float] | None = None
        if row:  # an admin's choice outlives restarts and wins over the configured default
            saved = json.loads(row[0])
            self.retain.update({k: int(saved[k]) for k in ("second", "minute", "hour")})
            self._retain_origin = (saved["by"], float(saved["at"]))
        row = self._db.execute("SELECT value FROM meta WHERE key = 'compacted_upto'").fetchone()
        self._compacted = int(row[0]) if row else 0
        # per family: no settled second at or after this (raised by compaction)
        self._settled_end: dict[str, int] = {
            f: (self._db.execute(f"SELECT max(ts) FROM {f}_s").fetchone()[0] or -1) + 1 for f in FAMILIES}
        row = self._db.execute("SELECT value FROM meta WHERE key = 'minutes_sorted_upto'").fetchone()
        self._minutes_sorted = int(row[0]) if row else None
        row = self._db.execute("SELECT value FROM meta WHERE key = 'seconds_sorted_upto'").fetchone()
        self._seconds_sorted = int(row[0]) if row else None
        row = self._db.execute("SELECT value FROM meta WHERE key = 'seconds_merged_upto'").fetchone()
        self._seconds_merged = int(row[0]) if row else 0
        self._tlock = threading.Lock()  # held by the writers of settled seconds: compact, prune, sort_seconds
        self._resorting: duckdb.DuckDBPyConnection | None = None  # sort_seconds' cursor while it runs
        # The stage: committed (logged) batches not yet in DuckDB. Guarded by _slock.
        self._slock = threading.Lock()
        self._llock = threading.Lock()  # the log writer; held across a group commit
        self._stage: dict[str, list[tuple[int, pa.Table]]] = defaultdict(list)
        self._staged_rows = 0
        self._pending_seqs: dict[str, tuple[int, float]] = {}
        self._pending_hosts: set[tuple[str, float]] = set()
        # source states for the next flush to write (see record_status)
        self._pending_sources: dict[tuple[str, str], dict] = {}
        self._touched: set[tuple[str, str, int]] = set()  # periods dirtied since the last flush snapshot
        self.flush_error: str | None = None
        self._empty_stage = {n: self._stage_schema(f).empty_table() for n, f in FAMILIES.items()}
        self._log = IngestLog(self.path + ".ingest")
        if self._new_store:  # a log beside a new store is an earlier store's: its records are not ours
            self._log.discard()
        self._flushed_lsn = self._db.execute("SELECT lsn FROM ingest_mark").fetchone()[0]
        replayed = self._log.replay(self._flushed_lsn)
        for rec in replayed:
            try:
                tables = rec.tables if rec.body is None else self._body_tables(rec)
            except (StreamError, FrameError, LookupError) as e:  # passed its CRC: only a changed decoder gets here
                log.error("ingest log record %d cannot be read again, its frames are lost: %s", rec.lsn, e)
                continue
            self._stage_record(rec.lsn, rec.seqs, set(rec.hosts), rec.seen, tables,
                               {f: set(pc.unique(t.column("ts")).to_pylist()) for f, t in tables.items()})
            for src, q in rec.seqs.items():
                self._hwm[src] = max(q, self._hwm.get(src, -1))
        self._hwm_reserved = dict(self._hwm)
        if replayed:
            log.info("store: replaying %d acknowledged ingest records (%d rows) from the ingest log",
                     len(replayed), self._staged_rows)
            self.flush()
        else:
            self._log.committed(self._flushed_lsn)

    def _body_tables(self, rec) -> dict[str, pa.Table]:
        """A logged version-3 body's stored frames, converted as when it came (see ingest)."""
        _, frames = decode(rec.body)
        want = {(src, seq): ts for src, seq, ts in rec.keep}
        by_fam: dict[str, list[ArrowFrame]] = defaultdict(list)
        for fr in frames:  # a frame sent twice in one body was stored once, the first
            ts = want.pop((fr.source, fr.seq), None)
            if ts is not None:
                by_fam[fr.family].append(replace(fr, ts=ts))
        if want:
            raise LookupError(f"frames {sorted(want)} are not in its body")
        return {name: self._frames_to_arrow(FAMILIES[name], frs)[0] for name, frs in by_fam.items()}

    # ---------------------------------------------------------------- schema
    def _create(self) -> None:
        db = self._db
        self._migrate_hot()
        self._migrate_dims()
        for fam in FAMILIES.values():
            cols = ["ts BIGINT NOT NULL"] + [f"{d} VARCHAR NOT NULL" for d in fam.dims]
            cols += ["count BIGINT NOT NULL", "bytes BIGINT NOT NULL", "lat_sum BIGINT NOT NULL"]
            cols += [f"{c} BIGINT NOT NULL" for c in _hist_cols(fam)]
            for suffix in ("s", "m", "h"):
                db.execute(f"CREATE TABLE IF NOT EXISTS {fam.name}_{suffix} ({', '.join(cols)})")
            narrow = cols[: 4 + len(fam.dims)] + ["hk USMALLINT[] NOT NULL", "hv BIGINT[] NOT NULL"]
            db.execute(f"CREATE TABLE IF NOT EXISTS {fam.name}_s_hot ({', '.join(narrow)})")
            wide = [f"coalesce(hv[list_position(hk, {i})], 0)::BIGINT AS {c}" for i, c in enumerate(_hist_cols(fam))]
            db.execute(f"CREATE OR REPLACE VIEW {fam.name}_s_hotv AS SELECT ts, {', '.join(fam.dims)}, count, bytes, "
                       f"lat_sum{''.join(', ' + w for w in wide)} FROM {fam.name}_s_hot")
        self._create_totals()
        db.execute("CREATE TABLE IF NOT EXISTS seqs (source VARCHAR PRIMARY KEY, hwm BIGINT, updated DOUBLE)")
        # Each commit appends its high-water marks here (a plain append costs a fraction of an
        # upsert into the keyed ``seqs``); checkpoint() folds the log into ``seqs``.
        db.execute("CREATE TABLE IF NOT EXISTS seq_log (source VARCHAR, hwm BIGINT, updated DOUBLE)")
        db.execute("CREATE TABLE IF NOT EXISTS dirty (family VARCHAR, tier VARCHAR, period BIGINT)")
        db.execute("CREATE TABLE IF NOT EXISTS hosts (host VARCHAR PRIMARY KEY, first_seen DOUBLE)")
        db.execute(
            "CREATE TABLE IF NOT EXISTS sources (agent VARCHAR, name VARCHAR, host VARCHAR, families VARCHAR,"
            " state VARCHAR, reason VARCHAR, demo BOOLEAN, last_seen DOUBLE, PRIMARY KEY (agent, name))"
        )
        db.execute(
            "CREATE TABLE IF NOT EXISTS worksheets (id VARCHAR PRIMARY KEY, name VARCHAR, owner VARCHAR,"
            " created DOUBLE, updated DOUBLE, spec VARCHAR)"
        )
        db.execute("CREATE TABLE IF NOT EXISTS runs (id VARCHAR PRIMARY KEY, name VARCHAR, start DOUBLE, stop DOUBLE,"
                   " created DOUBLE, spec VARCHAR)")
        db.execute("CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
        # The ingest log's records up to this LSN are in the tables (one row; see flush()).
        db.execute("CREATE TABLE IF NOT EXISTS ingest_mark (lsn BIGINT NOT NULL)")
        self._new_store = db.execute("SELECT count(*) FROM ingest_mark").fetchone()[0] == 0
        if self._new_store:
            db.execute("INSERT INTO ingest_mark VALUES (0)")
        # Stores that kept f_k_s for settled seconds only: add the hot seconds' totals once.
        if db.execute("SELECT count(*) FROM meta WHERE key = 'hot_totals'").fetchone()[0] == 0:
            db.begin()
            for fam in FAMILIES.values():
                sums = ", ".join(f"sum({c})::BIGINT" for c in MEASURES)
                db.execute(f"INSERT INTO {fam.name}_k_s SELECT ts, host, {sums} FROM {fam.name}_s_hot "
                           f"GROUP BY ts, host ORDER BY ts, host")
            db.execute("INSERT INTO meta VALUES ('hot_totals', '1')")
            db.commit()
        # f_k_t is derived from the hot table alone: a store without it (or with an earlier
        # shape) gets it empty, and the next rollup computes it for every hot period.
        lists = ", ".join(f"{m} BIGINT[] NOT NULL" for m in MEASURES)
        for fam in FAMILIES.values():
            row = db.execute("SELECT data_type FROM information_schema.columns WHERE table_name = ? "
                             "AND column_name = 'count'", [f"{fam.name}_k_t"]).fetchone()
            if row is not None and row[0].endswith("[]"):
                continue
            db.begin()
            db.execute(f"DROP TABLE IF EXISTS {fam.name}_k_t")
            db.execute(f"CREATE TABLE {fam.name}_k_t (ts BIGINT NOT NULL, dim VARCHAR NOT NULL, "
                       f"host VARCHAR NOT NULL, key VARCHAR NOT NULL, {lists})")
            db.execute(f"INSERT INTO dirty SELECT DISTINCT '{fam.name}', 't', ts - ts % {HOT_GRAIN} "
                       f"FROM {fam.name}_s_hot")
            db.commit()

    def _create_totals(self) -> None:
        """Totals tables, kept in the same transactions as the tiers they summarise.

        * ``f_k_s``: per (second, host) totals of every flushed second, settled or hot (each
          flush adds the rows it brings, so a second may have a row per flush).
        * ``f_k_m``, ``f_k_h``: per (period, dimension, host, element) totals of ``f_m``/``f_h``,
          for every dimension of the family (``host`` included: the per-host totals).
        * ``f_k_t``: the same per 5 s, of the hot table only (the last hour, in arrival order,
          where no sort order narrows a scan), fold dimension left out; one row per minute and
          element holds its twelve 5 s sums as lists, so reading an element's hour is 60 rows.
          Compaction drops them.

        Ranking 1,000 clients over a day then reads 1,440 x 1,000 narrow rows instead of
        every stored second, the per-point total reads one row per host and second, and the
        top elements' series over the last hour read 60 rows each instead of the hot table.
        A store written before these tables existed gets them computed once, on open.
        """
        db = self._db
        meas = "count BIGINT NOT NULL, bytes BIGINT NOT NULL, lat_sum BIGINT NOT NULL"
        for fam in FAMILIES.values():
            have = {t for (t,) in db.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_name IN (?, ?, ?)",
                [f"{fam.name}_k_s", f"{fam.name}_k_m", f"{fam.name}_k_h"]).fetchall()}
            db.execute(f"CREATE TABLE IF NOT EXISTS {fam.name}_k_s (ts BIGINT NOT NULL, host VARCHAR NOT NULL, {meas})")
            for t in ("m", "h"):
                db.execute(f"CREATE TABLE IF NOT EXISTS {fam.name}_k_{t} (ts BIGINT NOT NULL, dim VARCHAR NOT NULL, "
                           f"host VARCHAR NOT NULL, key VARCHAR NOT NULL, {meas})")
            for t in ("s", "m", "h"):
                if f"{fam.name}_k_{t}" not in have:
                    n = db.execute(f"SELECT count(*) FROM {fam.name}_{t}").fetchone()[0]
                    if n:
                        log.info("store: computing %s_k_%s from %d rows of %s_%s", fam.name, t, n, fam.name, t)
                        self._fill_totals(db, fam, t, "true")

    @staticmethod
    def _fill_totals(cur, fam: Family, tier: str, cond: str) -> None:
        """Append the totals of ``f_{tier}`` rows matching `cond` to ``f_k_{tier}``."""
        sums = ", ".join(f"sum({c})::BIGINT" for c in MEASURES)
        src = f"{fam.name}_{tier}"
        if tier == "s":
            cur.execute(f"INSERT INTO {fam.name}_k_s SELECT ts, host, {sums} FROM {src} WHERE {cond} "
                        f"GROUP BY ts, host ORDER BY ts, host")
            return
        names = [d for d in fam.dims if d != "host"]
        cur.execute(f"INSERT INTO {fam.name}_k_{tier} {_per_element_sql(names, f'{src} WHERE {cond}')} ORDER BY ALL")

    @staticmethod
    def _fill_hot_totals(cur, fam: Family, minutes: list[int]) -> None:
        """Append ``f_k_t`` rows for these whole minutes of the hot table: per element (fold
        dimension left out) and minute, the sums of each 5 s period as lists."""
        names = [d for d in fam.dims if d not in ("host", fam.fold_dim)]
        mlist = ", ".join(map(str, minutes))
        per = _per_element_sql(names, f"(SELECT ts - ts % {HOT_GRAIN} AS ts, * EXCLUDE (ts) FROM {fam.name}_s_hot "
                                      f"WHERE ts >= {min(minutes)} AND ts < {max(minutes) + 60} "
                                      f"AND ts - ts % 60 IN ({mlist}))")
        lists = ", ".join(
            "[" + ", ".join(f"coalesce(sum({m}) FILTER (WHERE ts % 60 = {HOT_GRAIN * i}), 0)::BIGINT"
                            for i in range(HOT_SLOTS)) + f"] AS {m}" for m in MEASURES)
        cur.execute(f"INSERT INTO {fam.name}_k_t SELECT ts - ts % 60 AS ts, dim, host, key, {lists} "
                    f"FROM ({per}) GROUP BY ALL ORDER BY ALL")

    def _migrate_hot(self) -> None:
        """Layout 0 kept wide hot tables; an empty one is simply replaced by the narrow form."""
        for fam in FAMILIES:
            cols = {c for (c,) in self._db.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [f"{fam}_s_hot"]).fetchall()}
            if cols and "hk" not in cols:
                n = self._db.execute(f"SELECT count(*) FROM {fam}_s_hot").fetchone()[0]
                if n:
                    raise RuntimeError(f"the store at {self.path} has {n} unsettled rows in an old layout: "
                                       "open it with the Loupe that wrote it, or move the data directory aside")
                self._db.execute(f"DROP VIEW IF EXISTS {fam}_s_hotv")
                self._db.execute(f"DROP TABLE {fam}_s_hot")

    def _migrate_dims(self) -> None:
        """A dimension added to a family later (e.g. net's ``port``) becomes a column of
        empty strings in the tables that predate it: old rows read as "(none)"."""
        for fam in FAMILIES.values():
            for table in (f"{fam.name}_{t}" for t in ("s", "m", "h", "s_hot")):
                cols = {c for (c,) in self._db.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]).fetchall()}
                for d in fam.dims:
                    if cols and d not in cols:
                        log.info("store: adding dimension %s to %s", d, table)
                        self._db.execute(f"ALTER TABLE {table} ADD COLUMN {d} VARCHAR DEFAULT ''")

    def _load_codes(self, cur: duckdb.DuckDBPyConnection) -> None:
        """Per coded dimension: the values of its ENUM in ``f_s``, or None while it is VARCHAR
        (a new store, one written before coding, or one past CODE_CAP: listed in ``uncoded``)."""
        row = cur.execute("SELECT value FROM meta WHERE key = 'uncoded'").fetchone()
        self._uncoded: set[str] = set(json.loads(row[0])) if row else set()
        self._codes: dict[tuple[str, str], frozenset[str] | None] = {}
        for fam in FAMILIES.values():
            for d in fam.coded:
                (kind,), = cur.execute("SELECT data_type FROM information_schema.columns WHERE table_name = ? "
                                       "AND column_name = ?", [f"{fam.name}_s", d]).fetchall()
                if kind.startswith("ENUM"):  # an empty table's first() is a NULL of the ENUM type
                    (vals,), = cur.execute(f"SELECT enum_range(first({d})) FROM "
                                           f"(SELECT {d} FROM {fam.name}_s LIMIT 1)").fetchall()
                    self._codes[(fam.name, d)] = frozenset(vals)
                else:
                    self._codes[(fam.name, d)] = None

    def admit_codes(self, cur: duckdb.DuckDBPyConnection, fam: Family, rows: str) -> None:
        """Widen `fam`'s coded columns of ``f_s`` to every value of `rows` (an SQL query of the
        family's rows), inside the caller's transaction, before those rows go in; on rollback the
        caller calls :meth:`_load_codes`.

        DuckDB stores a string column as dictionary codes bitpacked at a fixed width per row,
        even where a run of rows holds one value (an hour of one host, one share); an ENUM is
        an integer column, stored as runs. On the benchmark's seed-workload hour the four coded
        NFS dimensions took 1.1 B of 14 B per row as strings (docs/PERFORMANCE.md). An ENUM's
        values are kept sorted, so codes compare as the strings do. The first time (a new
        store, or one written before coding) the column's stored strings are coded too. Past
        CODE_CAP values a dimension goes back to VARCHAR for good: rewriting the column each
        time yet another value appears would cost more than its codes save."""
        names = [d for d in fam.coded if f"{fam.name}.{d}" not in self._uncoded]
        if not names:
            return
        got = cur.execute(f"SELECT {', '.join(f'list(DISTINCT {d})' for d in names)} FROM ({rows})").fetchone()
        table = f"{fam.name}_s"
        for d, vals in zip(names, got):
            known, want = self._codes[(fam.name, d)], set(vals or ())
            if not want or (known is not None and want <= known):
                continue
            if known is None:
                want |= {v for (v,) in cur.execute(f"SELECT DISTINCT {d} FROM {table}").fetchall()}
            else:
                want |= known
            if len(want) > CODE_CAP:
                log.warning("store: %s.%s has more than %d values: stored as strings from now on",
                            fam.name, d, CODE_CAP)
                if known is not None:
                    cur.execute(f"ALTER TABLE {table} ALTER {d} TYPE VARCHAR")
                self._uncoded.add(f"{fam.name}.{d}")
                cur.execute("INSERT OR REPLACE INTO meta VALUES ('uncoded', ?)", [json.dumps(sorted(self._uncoded))])
                self._codes[(fam.name, d)] = None
                continue
            enum = ", ".join("'" + v.replace("'", "''") + "'" for v in sorted(want))
            cur.execute(f"ALTER TABLE {table} ALTER {d} TYPE ENUM({enum})")
            self._codes[(fam.name, d)] = frozenset(want)

    def append_settled(self, cur: duckdb.DuckDBPyConnection, fam: Family, rows: str) -> int:
        """Append `rows` (an SQL query of wide rows) to ``f_s`` in storage order, its coded columns
        widened first, inside the caller's transaction; returns the rows appended."""
        self.admit_codes(cur, fam, rows)
        return cur.execute(f"INSERT INTO {fam.name}_s BY NAME {_sorted(fam, rows)}").fetchone()[0]

    def _check_layout(self) -> None:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'layout'").fetchone()
        if row is None:
            self._db.execute("INSERT INTO meta VALUES ('layout', ?)", [str(LAYOUT)])
        elif int(row[0]) != LAYOUT:
            raise RuntimeError(f"the store at {self.path} has layout {row[0]}, this Loupe reads layout {LAYOUT}: "
                               "move the data directory aside to start a new store")

    @property
    def _cur(self) -> duckdb.DuckDBPyConnection:
        cur = getattr(self._local, "cur", None)
        if cur is None:
            cur = self._local.cur = self._db.cursor()
        return cur

    def _qcur(self, family: str) -> duckdb.DuckDBPyConnection:
        """This thread's query cursor, with `family`'s current stage bound to its ``f_stagev`` view.

        Queries have a cursor of their own: binding the stage needs a cursor with no result pending."""
        cur = getattr(self._local, "qcur", None)
        if cur is None:
            cur = self._local.qcur = self._db.cursor()
            for name, fam in FAMILIES.items():
                cur.register(f"{name}_stage", self._empty_stage[name])
                wide = [f"coalesce(hv[list_position(hk, {i})], 0)::BIGINT AS {c}"
                        for i, c in enumerate(_hist_cols(fam))]
                cur.execute(f"CREATE TEMP VIEW {name}_stagev AS SELECT ts, {', '.join(fam.dims)}, count, bytes, "
                            f"lat_sum{''.join(', ' + w for w in wide)} FROM {name}_stage "
                            f"WHERE lsn > (SELECT lsn FROM ingest_mark)")
                cur.execute(f"CREATE TEMP VIEW {name}_stage_raw AS SELECT * FROM {name}_stage "
                            f"WHERE lsn > (SELECT lsn FROM ingest_mark)")
        with self._slock:
            parts = [t for _, t in self._stage.get(family, ())]
        cur.register(f"{family}_stage", pa.concat_tables(parts) if parts else self._empty_stage[family])
        return cur

    @staticmethod
    def _stage_schema(fam: Family) -> pa.Schema:
        fields = [pa.field("ts", pa.int64()), pa.field("host", pa.string())]
        fields += [pa.field(d, pa.string()) for d in fam.dims if d != "host"]
        fields += [pa.field(m, pa.int64()) for m in MEASURES]
        fields += [pa.field("hk", pa.list_(pa.uint16())), pa.field("hv", pa.list_(pa.int64())),
                   pa.field("lsn", pa.int64())]
        return pa.schema(fields)

    # ---------------------------------------------------------------- ingest
    def ingest(self, frames: list[Frame | ArrowFrame], *, received_at: float,
               body: bytes | None = None) -> IngestOutcome:
        """Store new frames; acknowledge duplicates. Returns once the rows are committed.

        Group commit: each request reserves its sequence numbers and queues its
        Arrow batches; whichever request takes the log lock first writes every
        queued batch as one ingest-log record with one fsync, then stages it for
        the next flush. Under load many agents share one fsync; idle, a request
        commits alone with no added wait.

        `body`: the version-3 request `frames` were decoded from. When the log lock is free,
        the body itself is logged and its fsync runs while the frames are converted (about
        0.6 ms of a 10k-row request's 4); when it is taken, the request joins the group commit.
        """
        out = IngestOutcome()
        now = int(received_at)
        oldest = now - self.retain["second"] + 3600  # must still be rollable before it is pruned
        fresh: list[Frame | ArrowFrame] = []
        with self._plock:
            for fr in sorted(frames, key=lambda f: (f.source, f.seq)):
                if fr.seq <= self._hwm_reserved.get(fr.source, -1):
                    out.duplicates += 1
                elif fr.ts < oldest:
                    out.rejected.append(dict(source=fr.source, seq=fr.seq, kind="too_old", reason=(
                        f"ts {fr.ts} is older than the seconds retention allows (oldest accepted {oldest})")))
                elif fr.ts > now + FUTURE_SLACK:
                    out.rejected.append(dict(source=fr.source, seq=fr.seq, kind="future", reason=(
                        f"ts {fr.ts} is {fr.ts - now} s ahead of the server clock (limit {FUTURE_SLACK} s)")))
                else:
                    fresh.append(fr)
                    self._hwm_reserved[fr.source] = fr.seq
        if not fresh:
            return out
        by_fam: dict[str, list[Frame | ArrowFrame]] = defaultdict(list)
        for fr in fresh:
            by_fam[fr.family].append(fr)
        job = _Job(seqs={fr.source: fr.seq for fr in fresh}, hosts={fr.host for fr in fresh}, seen=received_at)

        def convert() -> None:
            for name, frs in by_fam.items():
                table, folded = self._frames_to_arrow(FAMILIES[name], frs)
                job.tables[name] = table
                out.folded_rows += folded
                out.rows += table.num_rows
                out.seconds[name] = job.seconds[name] = {fr.ts for fr in frs}

        if body is not None and all(isinstance(fr, ArrowFrame) for fr in fresh) \
                and self._llock.acquire(blocking=False):
            try:
                self._admit(job)
                self._commit_body(job, [[fr.source, fr.seq, fr.ts] for fr in fresh], body, convert)
            finally:
                self._llock.release()
            self._after_commit()
        else:
            convert()
            self._submit(job)
        out.tables = job.tables
        out.accepted = len(fresh)
        out.stored = {(fr.source, fr.seq) for fr in fresh}
        return out

    def _admit(self, job: _Job) -> None:
        """StoreUnavailable (with the job's reservations undone) when the stage is full."""
        if self._staged_rows > self.stage_max_rows:
            self._unreserve(job.seqs)
            raise StoreUnavailable(f"the store is not keeping up: {self._staged_rows} rows wait to be written"
                                   + (f" ({self.flush_error})" if self.flush_error else ""))

    def _unreserve(self, seqs: dict[str, int]) -> None:
        with self._plock:  # the failed frames may be sent again
            for src in seqs:
                self._hwm_reserved[src] = self._hwm.get(src, -1)

    def _submit(self, job: _Job) -> None:
        self._admit(job)
        with self._plock:
            self._queue.append(job)
        with self._llock:
            if not job.done:
                with self._plock:
                    jobs, self._queue = self._queue, []
                self._commit(jobs)
        if job.error is not None:
            raise job.error
        self._after_commit()

    def _after_commit(self) -> None:
        if self._staged_rows > self.stage_flush_rows:
            if self._flush_thread:
                self.request_flush()  # the flush thread takes it next, off this request's path
            else:
                self.inline_flushes += 1
                self.flush()

    def _commit(self, jobs: list["_Job"]) -> None:
        """One log record (one fsync) for every queued job, then stage it. Holds _llock."""
        tables: dict[str, list[pa.Table]] = defaultdict(list)
        seqs: dict[str, int] = {}
        seconds: dict[str, set[int]] = defaultdict(set)
        hosts: set[str] = set()
        seen = 0.0
        for j in jobs:
            for name, t in j.tables.items():
                tables[name].append(t)
            for name, secs in j.seconds.items():
                seconds[name] |= secs
            for src, q in j.seqs.items():  # jobs may queue out of reservation order: keep the max
                seqs[src] = max(q, seqs.get(src, -1), self._hwm.get(src, -1))
            hosts |= j.hosts
            seen = max(seen, j.seen)
        merged = {name: pa.concat_tables(ts) if len(ts) > 1 else ts[0] for name, ts in tables.items()}
        try:
            lsn = self._log.append(seqs, hosts, seen, merged)
        except BaseException as e:
            self._unreserve(seqs)
            err = StoreUnavailable(f"ingest log write failed: {e}") if isinstance(e, OSError) else e
            for j in jobs:
                j.error, j.done = err, True
            return
        self._stage_record(lsn, seqs, hosts, seen, merged, seconds)
        for j in jobs:
            j.done = True

    def _commit_body(self, job: _Job, keep: list[list], body: bytes, convert: Callable[[], None]) -> None:
        """A version-3 request alone: its body logged, `convert` run while the fsync does, then
        staged. Holds _llock, so the record is the log's last until it is staged (or cut off)."""
        seqs = {src: max(q, self._hwm.get(src, -1)) for src, q in job.seqs.items()}
        try:
            lsn = self._log.append_body(seqs, job.hosts, job.seen, keep, body, convert)
        except BaseException as e:
            self._unreserve(seqs)
            if isinstance(e, OSError):
                raise StoreUnavailable(f"ingest log write failed: {e}") from e
            raise
        self._stage_record(lsn, seqs, job.hosts, job.seen, job.tables, job.seconds)

    def _stage_record(self, lsn: int, seqs: dict[str, int], hosts: set[str], seen: float,
                      tables: dict[str, pa.Table], seconds: dict[str, set[int]]) -> None:
        with self._slock:
            for name, t in tables.items():
                t = t.append_column("lsn", pa.array(np.full(t.num_rows, lsn, dtype=np.int64)))
                self._stage[name].append((lsn, t))
                self._staged_rows += t.num_rows
            for src, q in seqs.items():
                self._pending_seqs[src] = (q, seen)
            self._pending_hosts |= {(h, seen) for h in hosts - self._hosts}
            self._hosts |= hosts
            touched = {(f, tier, t - t % PERIOD[tier]) for f, secs in seconds.items() for t in secs
                       for tier in ("t", "m")}
            self._touched |= touched
            self._dirty |= touched
            self._hwm.update(seqs)

    def append_arrow(self, family: str, table: pa.Table, *, dirty: bool = True) -> None:
        """Append rows already in the hot table's narrow layout (bench and bulk loads), as ingest does."""
        schema = self._stage_schema(FAMILIES[family])
        table = table.select(schema.names[:-1]).cast(pa.schema(list(schema)[:-1]))
        secs = set(pc.unique(table.column("ts")).to_pylist()) if dirty else set()
        job = _Job(seqs={}, hosts=set(pc.unique(table.column("host")).to_pylist()), seen=self.clock(),
                   tables={family: table}, seconds={family: secs})
        self._submit(job)

    def backlog(self) -> dict:
        try:
            wal = os.path.getsize(self.path + ".wal")
        except OSError:
            wal = 0
        with self._slock:
            held = sum(t.nbytes for items in self._stage.values() for _, t in items)
        return {"rows": self._staged_rows, "bytes": held, "error": self.flush_error, "wal_bytes": wal,
                "checkpoints_refused": self.checkpoints_refused}

    def request_flush(self) -> None:
        self._flush_due.set()

    def wait_flush(self, timeout: float) -> None:
        self._flush_thread = True
        self._flush_due.wait(timeout)
        self._flush_due.clear()

    def flush(self) -> int:
        """Move the stage into ``f_s_hot`` in one transaction; returns the rows moved.

        The transaction also stores the sequence marks, dirty periods and hosts the staged
        batches brought, and the LSN up to which the ingest log is now in the tables."""
        with self._wlock:
            with self._llock, self._slock:  # no commit is between its log write and its staging
                snap = {name: list(items) for name, items in self._stage.items() if items}
                seqs, self._pending_seqs = self._pending_seqs, {}
                hosts, self._pending_hosts = self._pending_hosts, set()
                touched, self._touched = self._touched, set()
                sources, self._pending_sources = self._pending_sources, {}
                lsn = self._log.last_lsn
                self._log.rotate()
            if not snap and not seqs and not hosts and not touched and not sources and lsn == self._flushed_lsn:
                return 0
            cur = self._cur
            rows = 0
            try:
                cur.begin()
                for name, items in snap.items():
                    t = pa.concat_tables([x for _, x in items]).drop_columns(["lsn"]).combine_chunks()
                    rows += t.num_rows
                    self._append(cur, f"{name}_s_hot", t)
                    k = t.group_by(["ts", "host"]).aggregate([(c, "sum") for c in MEASURES])
                    cur.from_arrow(k.rename_columns(["ts", "host", *MEASURES]).select(["ts", "host", *MEASURES])
                                   ).insert_into(f"{name}_k_s")
                if seqs:
                    cur.from_arrow(pa.table({"source": list(seqs), "hwm": [q for q, _ in seqs.values()],
                                             "updated": [u for _, u in seqs.values()]})).insert_into("seq_log")
                if touched:
                    fam_, tier_, per_ = zip(*sorted(touched))
                    cur.from_arrow(pa.table({"family": list(fam_), "tier": list(tier_), "period": list(per_)})
                                   ).insert_into("dirty")
                if hosts:
                    cur.executemany("INSERT OR IGNORE INTO hosts VALUES (?, ?)", sorted(hosts))
                if sources:
                    cur.executemany(
                        "INSERT OR REPLACE INTO sources VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        [(r["agent"], r["name"], r["host"], ",".join(r["families"]), r["state"], r["reason"],
                          r["demo"], r["last_seen"]) for _, r in sorted(sources.items())])
                cur.execute("UPDATE ingest_mark SET lsn = ?", [lsn])
                cur.commit()
            except BaseException as e:
                try:
                    cur.rollback()
                except duckdb.Error:
                    pass
                with self._slock:  # keep everything for the next try
                    for src, v in seqs.items():
                        self._pending_seqs.setdefault(src, v)
                    self._pending_hosts |= hosts
                    self._touched |= touched
                    for k, r in sources.items():  # a newer state taken since wins
                        self._pending_sources.setdefault(k, r)
                self.flush_error = f"{type(e).__name__}: {e}"
                raise
            self.flush_error = None
            self._flushed_lsn = lsn
            with self._slock:
                for name, items in snap.items():
                    del self._stage[name][: len(items)]
                self._staged_rows -= rows
            self._log.committed(lsn)
            return rows

    def _append(self, cur, table_name: str, table: pa.Table) -> None:
        # A positional insert of the relation skips registering a view and binding by name;
        # columns are put in the table's order first (a dimension added later sits last).
        order = self._columns.get(table_name)
        if order is None:
            order = self._columns[table_name] = [c for (c,) in cur.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
                [table_name]).fetchall()]
        if table.column_names != order:
            table = table.select(order)
        cur.from_arrow(table).insert_into(table_name)

    def _keep_set(self, fam: Family, fr: Frame) -> set[str] | None:
        """The top K files of this (host, second) by events, or None when all fit."""
        fd = fam.fold_dim
        if not fd or len(fr.rows) <= self.top_files:
            return None
        weight: dict[str, int] = defaultdict(int)
        for r in fr.rows:
            weight[r.dims.get(fd, "")] += r.count or 1
        if len(weight) <= self.top_files:
            return None
        return set(heapq.nsmallest(self.top_files, weight, key=lambda k: (-weight[k], k)))

    def _frames_to_arrow(self, fam: Family, frames: list[Frame | ArrowFrame]) -> tuple[pa.Table, int]:
        """Rows of version-1 frames go through :meth:`_to_arrow`, columns of version-2 and 3 frames
        through :meth:`_columns_to_arrow`; one table for the hot table's layout, and the rows folded."""
        v1 = [f for f in frames if isinstance(f, Frame) and f.columns is None]
        parts = [self._to_arrow(fam, v1)] if v1 else []
        for f in frames:
            if isinstance(f, ArrowFrame):
                parts.append(self._columns_to_arrow(fam, f.ts, f.host, f.n_rows, f.dims, f.measures, f.hist))
            elif f.columns is not None:
                c = f.columns
                parts.append(self._columns_to_arrow(
                    fam, f.ts, f.host, c.n, {d: pa.array(v, pa.string()) for d, v in c.dims.items()},
                    {m: getattr(c, m) for m in MEASURES if getattr(c, m) is not None},
                    {h: (sh.row, sh.bucket, sh.n) for h, sh in c.hist.items()}))
        if len(parts) == 1:
            return parts[0]
        schema = pa.schema(list(self._stage_schema(fam))[:-1])
        return pa.concat_tables([t.cast(schema) for t, _ in parts]), sum(n for _, n in parts)

    def _columns_to_arrow(self, fam: Family, ts: int, host: str, n: int, dims: dict[str, pa.Array],
                          measures: dict, hist: dict) -> tuple[pa.Table, int]:
        """One frame's columns -> the hot table's narrow layout, without a Python loop over rows.
        `measures` and `hist` (name -> (row, bucket, n)) hold lists or numpy arrays; what is absent
        is zeros (a dimension: "").

        Histograms arrive sparse (row, bucket, n) and stay sparse until the table is built once:
        mapped to column ordinals, rows renumbered by the fold, then sorted by row, duplicates
        summed and cut into per-row lists by offsets. Files beyond the top K of the second fold
        into FILE_OTHER exactly as :meth:`_to_arrow` folds them."""
        ordinal = _ordinal_lookup(fam)
        rows, ords, counts = [], [], []
        for h, (row, bucket, events) in hist.items():
            lookup, lo = ordinal[h]
            rows.append(np.asarray(row, dtype=np.int64))
            ords.append(lookup[np.asarray(bucket, dtype=np.int64) - lo])
            counts.append(np.asarray(events, dtype=np.int64))
        r = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        o = np.concatenate(ords) if ords else np.zeros(0, np.int64)
        v = np.concatenate(counts) if counts else np.zeros(0, np.int64)
        meas = {m: np.zeros(n, np.int64) if measures.get(m) is None else np.asarray(measures[m], np.int64)
                for m in MEASURES}
        names = [d for d in fam.dims if d != "host"]
        fd = fam.fold_dim
        files = _codes(dims[fd]) if fd in dims and n > self.top_files else None
        keep = None if files is None else self._kept_rows(*files, meas["count"])
        if keep is None:
            out_n, folded = n, 0
            cols = {d: _plain(dims[d]) if d in dims else _blank(n) for d in names}
        else:
            # Kept rows first, in their order, then one row per group of the folded rows' other
            # dimensions, as their first row shows them; histogram entries follow their row there.
            # Folding and grouping work on dictionary codes: no string is hashed or copied twice.
            kidx, fidx = np.flatnonzero(keep), np.flatnonzero(~keep)
            codes = {d: _codes(dims[d]) for d in names if d != fd and d in dims}
            gid, first = _group_ids(len(fidx), [(c[fidx], len(v)) for c, v in codes.values()])
            g = len(first)
            out_n, folded = len(kidx) + g, len(fidx)
            take = np.concatenate([kidx, fidx[first]])
            cols = {d: codes[d][1].take(codes[d][0][take]) if d in codes else _blank(out_n) for d in names}
            code, values = files
            cols[fd] = pa.concat_arrays([values, pa.array([FILE_OTHER], pa.string())]).take(
                np.concatenate([code[kidx], np.full(g, len(values))]))
            for m, vals in meas.items():
                acc = np.zeros(g, dtype=np.int64)
                np.add.at(acc, gid, vals[fidx])
                meas[m] = np.concatenate([vals[kidx], acc])
            renumber = np.empty(n, dtype=np.int64)
            renumber[kidx] = np.arange(len(kidx))
            renumber[fidx] = len(kidx) + gid
            r = renumber[r]
        out = {"ts": pa.array(np.full(out_n, ts, dtype=np.int64)),
               "host": pa.repeat(pa.scalar(host, pa.string()), out_n)}
        out.update((d, cols[d]) for d in names)
        out.update((m, pa.array(vals)) for m, vals in meas.items())
        out["hk"], out["hv"] = _hist_lists(r, o, v, out_n)
        return pa.table(out), folded

    def _kept_rows(self, code: np.ndarray, files: pa.Array, count: np.ndarray) -> np.ndarray | None:
        """Which rows keep their file (`code` into the distinct `files`): those of the top K files of
        the second by events (a row of count 0 weighs 1), most first, then by name; None when every
        file fits."""
        nd, k = len(files), self.top_files
        if nd <= k:
            return None
        weight = np.zeros(nd, dtype=np.int64)
        np.add.at(weight, code, np.where(count > 0, count, 1))
        if np.count_nonzero(weight) <= k:  # a dictionary may hold files no row has
            return None
        # Everything above the K-th largest weight is kept; names decide only among the files
        # that tie with it, so only those are sorted (strings sort by code point, as in Python).
        cut = np.partition(weight, nd - k)[nd - k]
        kept = weight > cut
        tie = np.flatnonzero(weight == cut)
        by_name = pc.sort_indices(files.take(pa.array(tie))).to_numpy()
        kept[tie[by_name[: k - int(kept.sum())]]] = True
        return kept[code]

    def _to_arrow(self, fam: Family, frames: list[Frame]) -> tuple[pa.Table, int]:
        """Frames -> one narrow Arrow table for ``f_s_hot`` (histograms as ordinal/count lists).

        One pass over the rows into plain lists. Beyond the top K files of a (host, second),
        rows fold into FILE_OTHER: the other dimensions stay exact, so totals by client, op
        or share are unchanged; only the per-file split of the folded part is lost.
        """
        other_dims = [d for d in fam.dims if d != "host"]
        fd = fam.fold_dim
        ordinal = _ordinals(fam)
        ts: list[int] = []
        hosts: list[str] = []
        dims: list[tuple] = []
        cnt: list[int] = []
        byt: list[int] = []
        lat: list[int] = []
        offsets = [0]
        hk: list[int] = []
        hv: list[int] = []
        folded = 0

        def hist_into(acc: dict[int, int], hist) -> None:
            for h, buckets in hist.items():
                base = ordinal[h]
                for e, c in buckets.items():
                    if c:
                        k = base[int(e)]
                        acc[k] = acc.get(k, 0) + c

        for fr in frames:
            keep = self._keep_set(fam, fr)
            merged: dict[tuple, list] = {}
            n0 = len(ts)
            for r in fr.rows:
                rd = r.dims
                if keep is not None and rd.get(fd, "") not in keep:
                    folded += 1
                    key = tuple(FILE_OTHER if d == fd else rd.get(d, "") for d in other_dims)
                    acc = merged.get(key)
                    if acc is None:
                        acc = merged[key] = [0, 0, 0, {}]
                    acc[0] += r.count
                    acc[1] += r.bytes
                    acc[2] += r.lat_sum
                    if r.hist:
                        hist_into(acc[3], r.hist)
                    continue
                dims.append(tuple(rd.get(d, "") for d in other_dims))
                cnt.append(r.count)
                byt.append(r.bytes)
                lat.append(r.lat_sum)
                if r.hist:
                    acc_h: dict[int, int] = {}
                    hist_into(acc_h, r.hist)
                    hk.extend(acc_h)
                    hv.extend(acc_h.values())
                offsets.append(len(hk))
            for key, (c, b, l, hist) in merged.items():
                dims.append(key)
                cnt.append(c)
                byt.append(b)
                lat.append(l)
                hk.extend(hist)
                hv.extend(hist.values())
                offsets.append(len(hk))
            n = len(dims) - n0
            ts.extend([fr.ts] * n)
            hosts.extend([fr.host] * n)
        cols = {"ts": pa.array(ts, pa.int64()), "host": pa.array(hosts, pa.string())}
        by_dim = list(zip(*dims)) if dims else [() for _ in other_dims]
        for d, vals in zip(other_dims, by_dim):
            cols[d] = pa.array(vals, pa.string())
        cols["count"] = pa.array(cnt, pa.int64())
        cols["bytes"] = pa.array(byt, pa.int64())
        cols["lat_sum"] = pa.array(lat, pa.int64())
        off = pa.array(offsets, pa.int32())
        cols["hk"] = pa.ListArray.from_arrays(off, pa.array(hk, pa.uint16()))
        cols["hv"] = pa.ListArray.from_arrays(off, pa.array(hv, pa.int64()))
        return pa.table(cols), folded

    # ---------------------------------------------------------------- queries
    def _watermarks(self, family: str) -> tuple[int, int, int]:
        """(W_h, W_m, W_t): hours before W_h, minutes before W_m and hot 5 s periods before W_t
        have current totals (rolled up)."""
        inf = 2**62
        w = {"t": inf, "m": inf, "h": inf}
        with self._slock:
            for f, t, p in self._dirty:
                if f == family and p < w[t]:
                    w[t] = p
        w_m = w["m"]
        w_h = min(w["h"], w_m - w_m % 3600) if w_m != inf else w["h"]
        return w_h, w_m, w["t"]

    def _layers(self, family: str, tier: str, a: int, b: int) -> list[tuple[str, int, int]]:
        """Tables and [from, to) spans that together cover [a, b) at the given tier.

        ``f_s`` holds no second at or after ``_settled_end`` (compaction moves older seconds
        only): a span beyond it is left out, since its sort order (element, then time) gives
        a time filter alone no row group to skip."""
        end_s = self._settled_end.get(family, 2**62)
        spans: list[tuple[str, int, int]] = []
        if tier != "second":
            w_h, w_m, _ = self._watermarks(family)
            if tier == "hour":
                spans.append((f"{family}_h", a, min(b, w_h)))
                spans.append((f"{family}_m", max(a, w_h), min(b, w_m)))
            else:
                spans.append((f"{family}_m", a, min(b, w_m)))
            a = max(a, w_m)  # the seconds cover what is not rolled up yet
        spans += [(f"{family}_s", a, min(b, end_s)), (f"{family}_s_hotv", a, b), (f"{family}_stagev", a, b)]
        return [s for s in spans if s[1] < s[2]]

    @staticmethod
    def _filters(stat: Statistic, params: list) -> list[tuple[str, str]]:
        """(dim, condition) for each filter of stat; a condition names its column `{c}`."""
        def ph(v: str) -> str:
            params.append(v)
            return f"${len(params)}"

        conds = [(dim, f"{{c}} IN ({', '.join(ph(v) for v in values)})") for dim, values in stat.where]
        for dim, values in stat.prefixes:
            # p itself or below p/; the range (p <= c < p + '0', '0' following '/') lets zone maps skip
            alts = []
            for p in values:
                under = p if p.endswith("/") else p + "/"
                alts.append(f"({{c}} >= {ph(p)} AND {{c}} < {ph(under[:-1] + '0')} "
                            f"AND ({{c}} = {ph(p)} OR starts_with({{c}}, {ph(under)})))")
            conds.append((dim, "(" + " OR ".join(alts) + ")"))
        return conds

    def _source_sql(self, stat: Statistic, window: Window, select: str, params: list) -> str:
        fam = stat.metric.family
        conds = [c.format(c=dim) for dim, c in self._filters(stat, params)]
        if stat.layer is not None:
            conds.append(f"{stat.layer[0]} {'<>' if stat.layer[1] else '='} ''")
        extra = "".join(f" AND {c}" for c in conds)
        parts = [
            f"SELECT {select} FROM {table} WHERE ts >= {lo} AND ts < {hi}{extra}"
            for table, lo, hi in self._layers(fam, window.tier, window.start, window.end)
        ]
        if not parts:  # nothing can match; keep the shape
            parts = [f"SELECT {select} FROM {fam}_s WHERE false"]
        return " UNION ALL ".join(parts)

    def _value_expr(self, stat: Statistic) -> str:
        if stat.band:
            dim, lo, hi = stat.band
            h = HISTOGRAMS[dim]
            return " + ".join(h.column(e) for e in range(lo, hi + 1))
        return stat.metric.value

    def _totals_apply(self, stat: Statistic, window: Window, *, per_key_only: bool = False) -> bool:
        """Whether the totals tables answer this breakdown exactly (else the general path runs).

        They hold count, bytes and lat_sum per element of one dimension, so: a breakdown by
        a plain dimension, filtered by host at most, with no histogram band and no row layer.
        Files fold per second in the seconds tier but per minute in ``f_k_m``, so a file
        breakdown at the seconds tier reads the seconds. A prefix filter on the breakdown's own
        dimension narrows its elements (`per_key_only`: the caller sums per element only), not
        the per-host totals."""
        fam = FAMILIES[stat.metric.family]
        return (self.use_totals and stat.by is not None and stat.by in fam.dims and not stat.band and stat.layer is None
                and stat.metric.value in MEASURES and all(d == "host" for d, _ in stat.where)
                and not (window.tier == "second" and stat.by == fam.fold_dim)
                and (not stat.prefixes or (per_key_only and all(d == stat.by for d, _ in stat.prefixes))))

    def _totals_sql(self, stat: Statistic, window: Window, params: list, *, per_key: bool, grain: int = 60) -> str:
        """Rows (ts, k, v) covering the window: per element of stat.by (per_key) or per host.

        `grain` is the longest period the caller sums together (one point, or 3600 for a sum
        over the whole range): periods of that length or shorter may come from totals tables.
        Per host: rolled-up minutes and hours from ``f_k_m``/``f_k_h``, flushed seconds from
        ``f_k_s``, the stage raw. Per element: whole rolled-up hours (grain 3600) and minutes
        (grain 60) from ``f_k_h``/``f_k_m``; hot seconds in whole rolled-up 5 s periods (grain
        5) from ``f_k_t``; the rest, at the edges, from the seconds themselves.
        """
        fam = stat.metric.family
        v = stat.metric.value
        conds = self._filters(stat, params)  # host, the element list of pass 2, a prefix of stat.by
        k_where = "".join(" AND " + c.format(c="key" if per_key and d == stat.by else d) for d, c in conds
                          if per_key or d == "host")
        raw_where = "".join(" AND " + c.format(c=d) for d, c in conds if per_key or d == "host")
        dim = stat.by if per_key else "host"
        raw_key = stat.by if per_key else "''"
        k = "key" if per_key else "''"
        parts: list[str] = []
        w_h, w_m, w_t = self._watermarks(fam)

        def totals(t: str, lo: int, hi: int) -> str:
            if t == "t":  # a minute's 5 s periods as list entries
                return (f"SELECT * FROM (SELECT ts + {HOT_GRAIN} * unnest(range({HOT_SLOTS})) AS ts, {k} AS k, "
                        f"unnest({v}) AS v FROM {fam}_k_t WHERE dim = '{dim}' AND ts >= {lo - lo % 60} "
                        f"AND ts < {hi}{k_where}) WHERE ts >= {lo} AND ts < {hi}")
            return f"SELECT ts, {k} AS k, {v} AS v FROM {fam}_k_{t} WHERE dim = '{dim}' AND ts >= {lo} AND ts < {hi}{k_where}"

        def whole(lo: int, hi: int, length: int, mark: int) -> tuple[int, int]:
            """The whole periods of `length` inside [lo, hi) that are before `mark`."""
            return -(-lo // length) * length, min(hi - hi % length, mark - mark % length)

        def rolled(lo: int, hi: int) -> list[str]:
            """[lo, hi) holds only rolled-up minutes: whole rolled-up hours from f_k_h where grain allows."""
            spans = [("m", lo, hi)]
            if grain >= 3600:
                a, b = whole(lo, hi, 3600, w_h)
                if a < b:
                    spans = [("h", a, b), ("m", lo, a), ("m", b, hi)]
            return [totals(t, x, y) for t, x, y in spans if x < y]

        # hot and stage: their measures need no widening
        raw = {f"{fam}_s": f"{fam}_s", f"{fam}_s_hotv": f"{fam}_s_hot", f"{fam}_stagev": f"{fam}_stage_raw"}
        hot_totals = per_key and grain >= HOT_GRAIN and stat.by != FAMILIES[fam].fold_dim
        layers = self._layers(fam, window.tier, window.start, window.end)
        # Per element, the seconds' whole rolled-up minutes (settled or hot) come from f_k_m, once;
        # the hot layer's span is the seconds' whole span (f_s's may end early).
        mins = None
        hot_span = next(((lo, hi) for t, lo, hi in layers if t == f"{fam}_s_hotv"), None)
        if per_key and grain >= 60 and hot_span:
            a, b = whole(hot_span[0], hot_span[1], 60, w_m)
            if a < b:
                mins = (a, b)
                parts += rolled(a, b)
        for table, lo, hi in layers:
            if table == f"{fam}_h":
                parts.append(totals("h", lo, hi))
            elif table == f"{fam}_m":
                parts += rolled(lo, hi)
            elif not per_key and table == f"{fam}_s":
                continue  # f_k_s holds every flushed second, settled or hot: read once, with the hot span
            elif not per_key and table == f"{fam}_s_hotv":  # (never cut short by the settled end)
                parts.append(f"SELECT ts, '' AS k, {v} AS v FROM {fam}_k_s WHERE ts >= {lo} AND ts < {hi}{k_where}")
            else:
                spans = [(lo, hi)] if mins is None else [(lo, min(hi, mins[0])), (max(lo, mins[1]), hi)]
                if hot_totals and table == f"{fam}_s_hotv":  # whole rolled-up 5 s periods of the hot table
                    rest = []
                    for x, y in spans:
                        a, b = whole(x, y, HOT_GRAIN, w_t)
                        if a < b:
                            parts.append(totals("t", a, b))
                            rest += [(x, a), (b, y)]
                        else:
                            rest.append((x, y))
                    spans = rest
                parts += [f"SELECT ts, {raw_key} AS k, {v} AS v FROM {raw[table]} "
                          f"WHERE ts >= {x} AND ts < {y}{raw_where}" for x, y in spans if x < y]
        return " UNION ALL ".join(parts) or f"SELECT 0::BIGINT AS ts, '' AS k, 0::BIGINT AS v WHERE false"

    def extremes(self, stat: Statistic, window: Window) -> tuple[list[float], list[float]] | None:
        now = int(self.clock())
        if window.start < now - self.retain["second"]:
            return None
        n, scale = window.points, stat.metric.scale
        params: list = []
        src = self._source_sql(stat, Window(window.start, window.end, 1, "second"),
                               f"ts, {self._value_expr(stat)} AS v", params)
        rows = self._qcur(stat.metric.family).execute(
            f"SELECT (ts - {window.start}) // {window.step} AS i, min(s), max(s), count(*) FROM "
            f"(SELECT ts, sum(v)::DOUBLE AS s FROM ({src}) GROUP BY ts) GROUP BY i", params).fetchall()
        lo, hi = [0.0] * n, [0.0] * n
        for i, mn, mx, seconds in rows:
            if not 0 <= i < n:
                continue
            # a second without rows is a 0, as in the point's mean; so are the seconds of a point
            # still open (its mean counts them as zeros too, so min <= mean <= max holds there as well)
            a = window.start + i * window.step
            whole = min(a + window.step, window.end) - a
            lo[i] = mn * scale if seconds >= whole else min(0.0, mn * scale)
            hi[i] = max(mx * scale, 0.0) if seconds < whole else mx * scale
        return lo, hi

    def aggregate(self, stat: Statistic, window: Window, top: int) -> Aggregate:
        if stat.by in HISTOGRAMS:
            return self._aggregate_hist(stat, window)
        n = window.points
        scale = stat.metric.scale / window.step
        key = stat.by or "''"
        value = self._value_expr(stat)
        bucket = f"(ts - {window.start}) // {window.step}"
        total = np.zeros(n)
        series: dict[str, np.ndarray] = {}
        ranked: list[tuple[str, float]] = []
        fast = self._totals_apply(stat, window)
        # the longest rolled-up period that falls inside one point of the window
        grain = next((g for g in (3600, 60, HOT_GRAIN) if window.step % g == 0 and window.start % g == 0), 1)
        cur = self._qcur(stat.metric.family)  # one stage snapshot for both passes
        if fast:
            # Pass 1 from the totals tables: every element's sum over the range, and the total per point.
            params = []
            src = self._totals_sql(stat, window, params, per_key=True, grain=3600)  # sums over the whole range
            ranked = [(k, v) for k, v in cur.execute(
                f"SELECT k, sum(v)::DOUBLE FROM ({src}) GROUP BY k", params).fetchall() if v]
            params = []
            src = self._totals_sql(stat, window, params, per_key=False, grain=grain)
            for i, v in cur.execute(f"SELECT {bucket} AS i, sum(v)::DOUBLE FROM ({src}) GROUP BY i",
                                          params).fetchall():
                if 0 <= i < n and v:
                    total[i] += v
        else:
            # Pass 1, one scan: the total per point and every element's sum over the range.
            params = []
            src = self._source_sql(stat, window, f"{bucket} AS i, {key} AS k, {value} AS v", params)
            for i, k, v, by_key in cur.execute(
                    f"SELECT i, k, sum(v)::DOUBLE, grouping(i) = 1 FROM ({src}) GROUP BY GROUPING SETS ((i), (k))",
                    params).fetchall():
                if by_key:
                    if v:
                        ranked.append((k, v))
                elif 0 <= i < n and v:
                    total[i] += v
        ranked.sort(key=lambda kv: (-kv[1], kv[0]))
        elements = len(ranked) if stat.by else 0
        folded = stat.by is not None and any(k == FILE_OTHER for k, _ in ranked)
        top_keys = [k for k, _ in ranked[: int(top)]] if stat.by else []
        # Pass 2: the top elements only; filtering on the sort key lets zone maps skip the rest.
        if top_keys:
            only_top = replace(stat, where=stat.where + ((stat.by, tuple(top_keys)),))
            params = []
            if fast and grain > 1:  # points are whole minutes, or whole 5 s periods of the hot table
                top_sql = self._totals_sql(only_top, window, params, per_key=True, grain=grain)
                src = f"SELECT {bucket} AS i, k, v FROM ({top_sql})"
            else:
                src = self._source_sql(only_top, window, f"{bucket} AS i, {key} AS k, {value} AS v", params)
            for i, k, v in cur.execute(f"SELECT i, k, sum(v)::DOUBLE FROM ({src}) GROUP BY ALL",
                                             params).fetchall():
                if 0 <= i < n and v:
                    arr = series.get(k)
                    if arr is None:
                        arr = series[k] = np.zeros(n)
                    arr[i] += v
        other = total - sum(series.values(), np.zeros(n)) if stat.by else np.zeros(n)
        other[np.abs(other) < 1e-9 * np.maximum(total, 1)] = 0.0
        nz = np.nonzero(total)[0]
        last = int(nz[-1]) if len(nz) else -1
        keys = sorted(series, key=lambda k: (-series[k].sum(), k))
        per_point = 1.0 / window.points
        return Aggregate(
            window=window,
            total=(total * scale).tolist(),
            keys=keys,
            values=[(series[k] * scale).tolist() for k in keys],
            key_means=[float(series[k].sum() * scale * per_point) for k in keys],
            key_last=[float(series[k][last] * scale) if last >= 0 else 0.0 for k in keys],
            other=(other * scale).tolist(),
            other_mean=float(other.sum() * scale * per_point),
            elements=int(elements or 0),
            approximate=bool(folded) and stat.by == FAMILIES[stat.metric.family].fold_dim,
            last_index=last,
        )

    def path_sums(self, stat: Statistic, window: Window, root: str, depth: int) -> list[PathSum]:
        params: list = []
        if self._totals_apply(stat, window, per_key_only=True):
            src = self._totals_sql(stat, window, params, per_key=True, grain=3600)
        else:
            src = self._source_sql(stat, window, f"{stat.by} AS k, {self._value_expr(stat)} AS v", params)
        params.append(root)
        r = f"${len(params)}"
        # one row per element first, then each element's path split below root and cut at depth
        sql = f"""
            SELECT CASE WHEN under THEN {r} || array_to_string(parts[1:{int(depth)}], '/') ELSE k END,
                   under AND len(parts) > {int(depth)}, sum(v)::DOUBLE, count(*)
            FROM (SELECT k, v, starts_with(k, {r}) AS under,
                         CASE WHEN starts_with(k, {r}) THEN string_split(substr(k, length({r}) + 1), '/') END AS parts
                  FROM (SELECT k, sum(v) AS v FROM ({src}) GROUP BY k HAVING sum(v) <> 0))
            GROUP BY ALL"""
        scale = stat.metric.scale / window.seconds
        rows = self._qcur(stat.metric.family).execute(sql, params).fetchall()
        return [PathSum(p, bool(cut), v * scale, int(n)) for p, cut, v, n in rows if v]

    def folded(self, stat: Statistic, window: Window) -> float:
        fd = FAMILIES[stat.metric.family].fold_dim
        if fd is None:
            return 0.0
        only = replace(stat, by=None, prefixes=tuple((d, v) for d, v in stat.prefixes if d != fd),
                       where=tuple((d, v) for d, v in stat.where if d != fd) + ((fd, (FILE_OTHER,)),))
        params: list = []
        src = self._source_sql(only, window, f"{self._value_expr(only)} AS v", params)
        v = self._qcur(stat.metric.family).execute(f"SELECT sum(v)::DOUBLE FROM ({src})", params).fetchall()[0][0]
        return float(v or 0.0) * stat.metric.scale / window.seconds

    def _hist_matrix(self, stat: Statistic, dim: str, window: Window) -> tuple[np.ndarray, list[int]]:
        """Per point and bucket: events of histogram `dim` (a band on the same dim narrows the buckets)."""
        h = HISTOGRAMS[dim]
        exps = list(h.buckets)
        if stat.band:
            exps = [e for e in exps if stat.band[1] <= e <= stat.band[2]]
        cols = [h.column(e) for e in exps]
        params: list = []
        src = self._source_sql(replace(stat, by=None, band=None), window, "ts, " + ", ".join(cols), params)
        sums = ", ".join(f"sum({c})::DOUBLE" for c in cols)
        sql = f"SELECT (ts - {window.start}) // {window.step} AS i, {sums} FROM ({src}) GROUP BY i"
        m = np.zeros((window.points, len(exps)))
        for row in self._qcur(stat.metric.family).execute(sql, params).fetchall():
            if 0 <= row[0] < window.points:
                m[row[0]] = [x or 0.0 for x in row[1:]]
        return m, exps

    def _aggregate_hist(self, stat: Statistic, window: Window) -> Aggregate:
        m, exps = self._hist_matrix(stat, stat.by, window)
        scale = stat.metric.scale / window.step
        m = m * scale
        total = m.sum(axis=1)
        nz = np.nonzero(total)[0]
        last = int(nz[-1]) if len(nz) else -1
        used = [j for j in range(len(exps)) if m[:, j].any()]
        h = HISTOGRAMS[stat.by]
        return Aggregate(
            window=window,
            total=total.tolist(),
            keys=[bucket_label(h, exps[j]) for j in used],
            values=[m[:, j].tolist() for j in used],
            key_means=[float(m[:, j].mean()) for j in used],
            key_last=[float(m[last, j]) if last >= 0 else 0.0 for j in used],
            other=[0.0] * window.points,
            other_mean=0.0,
            elements=len(used),
            approximate=False,
            last_index=last,
            buckets=[exps[j] for j in used],
        )

    def heatmap(self, stat: Statistic, dim: str, window: Window) -> Heatmap:
        m, exps = self._hist_matrix(stat, dim, window)
        m = m * (stat.metric.scale / window.step)
        cols = np.nonzero(m.any(axis=0))[0]
        if len(cols) == 0:
            return Heatmap(window, [], [], m.sum(axis=1).tolist())
        lo, hi = int(cols[0]), int(cols[-1])
        sub = m[:, lo : hi + 1]
        ti, bi = np.nonzero(sub)
        cells = [(int(t), int(b), float(sub[t, b])) for t, b in zip(ti, bi)]
        return Heatmap(window, exps[lo : hi + 1], cells, m.sum(axis=1).tolist())

    def second(self, stat: Statistic, ts: int, keys: list[str]) -> tuple[float, dict[str, float], float]:
        window = Window(ts, ts + 1, 1, "second")
        key = stat.by if stat.by and stat.by not in HISTOGRAMS else "''"
        params: list = []
        src = self._source_sql(stat, window, f"{key} AS k, {self._value_expr(stat)} AS v", params)
        rows = self._qcur(stat.metric.family).execute(f"SELECT k, sum(v)::DOUBLE FROM ({src}) GROUP BY k",
                                                      params).fetchall()
        scale = stat.metric.scale
        total = sum(v for _, v in rows) * scale
        wanted = set(keys)
        values = {k: 0.0 for k in keys}
        for k, v in rows:
            if k in wanted:
                values[k] = v * scale
        return total, values, total - sum(values.values())

    # ---------------------------------------------------------------- maintenance
    def _roll_hot_totals(self, now: int) -> int:
        """Compute ``f_k_t`` for every due 5 s period of the hot table, in one transaction."""
        with self._slock:
            due = sorted(p for p in self._dirty if p[1] == "t" and p[2] + HOT_GRAIN + ROLLUP_GRACE <= now)
        if not due:
            return 0
        by_fam: dict[str, set[int]] = defaultdict(set)
        for f, _, p in due:
            by_fam[f].add(p - p % 60)  # a minute's row is recomputed whole
        with self._wlock:
            self.flush()  # the periods' staged seconds go to the hot table first
            cur = self._cur
            cur.begin()
            try:
                for f, minutes in by_fam.items():
                    mlist = ", ".join(map(str, sorted(minutes)))
                    plist = ", ".join(str(p) for g, _, p in due if g == f)
                    cur.execute(f"DELETE FROM {f}_k_t WHERE ts IN ({mlist})")
                    self._fill_hot_totals(cur, FAMILIES[f], sorted(minutes))
                    cur.execute(f"DELETE FROM dirty WHERE family = ? AND tier = 't' AND period IN ({plist})", [f])
                cur.commit()
            except BaseException:
                cur.rollback()
                raise
            with self._slock:
                for key in due:
                    if key not in self._touched:  # else a late frame came meanwhile: roll again
                        self._dirty.discard(key)
        return len(due)

    def rollup(self, now: int) -> int:
        """Roll up every due dirty period; returns the minutes and hours rolled up."""
        self._roll_hot_totals(now)
        done = 0
        flushed = False
        for tier in ("m", "h"):  # minutes first: rolling a minute dirties its hour
            with self._slock:
                due = sorted(p for p in self._dirty if p[1] == tier and p[2] + PERIOD[tier] + ROLLUP_GRACE <= now)
            for key in due:
                with self._wlock:
                    if not flushed:  # the rollup reads the tables: staged seconds go there first
                        self.flush()
                        flushed = True
                    with self._slock:
                        if key not in self._dirty:
                            continue
                    self._roll(FAMILIES[key[0]], key[1], key[2])
                done += 1
        return done

    def rollup_sql(self, fam: Family, src: str, length: int) -> str:
        """SELECT summing the wide rows of `src` (any SQL source with ts) into periods of `length`
        seconds, keeping the top K files per (period, host) by events and folding the rest into
        FILE_OTHER; ordered by the family's sort key. Rollups use it; so does the benchmark's build."""
        measures = ["count", "bytes", "lat_sum"] + _hist_cols(fam)
        sums = ", ".join(f"sum({c})::BIGINT AS {c}" for c in measures)
        dims = list(fam.dims)
        period = f"ts - ts % {length}" if length > 1 else "ts"
        if not fam.fold_dim:
            return _sorted(fam, f"SELECT {period} AS ts, {', '.join(dims)}, {sums} FROM ({src}) GROUP BY ALL", src)
        fd = fam.fold_dim
        others = [d for d in dims if d != fd]
        return _sorted(fam, f"""
            WITH g AS (SELECT {period} AS ts, {', '.join(dims)}, {sums} FROM ({src}) GROUP BY ALL),
            r AS (SELECT ts, host, {fd},
                         row_number() OVER (PARTITION BY ts, host ORDER BY sum(count) DESC, {fd}) AS rn
                  FROM g GROUP BY ts, host, {fd})
            SELECT g.ts, {', '.join('g.' + d for d in others)},
                   CASE WHEN r.rn <= {self.top_files} THEN g.{fd} ELSE '{FILE_OTHER}' END AS {fd},
                   {', '.join(f'sum(g.{c})::BIGINT AS {c}' for c in measures)}
            FROM g JOIN r USING (ts, host, {fd}) GROUP BY ALL""", src)

    def _roll(self, fam: Family, tier: str, period: int) -> None:
        length = PERIOD[tier]
        sources = [f"{fam.name}_s", f"{fam.name}_s_hotv"] if tier == "m" else [f"{fam.name}_m"]
        span = f"ts >= {period} AND ts < {period + length}"
        sel = self.rollup_sql(fam, " UNION ALL ".join(f"SELECT * FROM {t} WHERE {span}" for t in sources), length)
        cur = self._cur
        cur.begin()
        try:
            cur.execute(f"DELETE FROM {fam.name}_{tier} WHERE ts = {period}")
            cur.execute(f"INSERT INTO {fam.name}_{tier} BY NAME {sel}")
            cur.execute(f"DELETE FROM {fam.name}_k_{tier} WHERE ts = {period}")
            self._fill_totals(cur, fam, tier, f"ts = {period}")
            cur.execute("DELETE FROM dirty WHERE family = ? AND tier = ? AND period = ?", [fam.name, tier, period])
            up = None
            if tier == "m":
                up = (fam.name, "h", period - period % 3600)
                if up not in self._dirty:
                    cur.execute("INSERT INTO dirty VALUES (?, ?, ?)", list(up))
            cur.commit()
        except BaseException:
            cur.rollback()
            raise
        with self._slock:
            if (fam.name, tier, period) not in self._touched:  # else a late frame came meanwhile: roll again
                self._dirty.discard((fam.name, tier, period))
            if up:
                self._dirty.add(up)

    @contextmanager
    def _settled_writer(self, wait: bool):
        """Held by each writer of the settled seconds (compact, prune, sort_seconds); yields False,
        holding nothing, when `wait` is off and another one is at work (a day's re-sort: minutes)."""
        if not self._tlock.acquire(blocking=wait):
            yield False
            return
        try:
            yield True
        finally:
            self._tlock.release()

    def prune(self, now: int, *, wait: bool = True) -> PruneReport | None:
        with self._settled_writer(wait) as mine:
            return self._prune(now) if mine else None

    def _prune(self, now: int) -> PruneReport:
        before = self.size_bytes()
        deleted: dict[str, int] = {}
        cut = {"s": now - self.retain["second"], "m": now - self.retain["minute"], "h": now - self.retain["hour"]}
        with self._wlock:
            cur = self._cur
            for fam in FAMILIES:
                for suffix, c in (("s_hot", cut["s"]), ("s", cut["s"]), ("m", cut["m"]), ("h", cut["h"]), ("k_t", cut["s"]),
                                  ("k_s", cut["s"]), ("k_m", cut["m"]), ("k_h", cut["h"])):
                    n = cur.execute(f"DELETE FROM {fam}_{suffix} WHERE ts < {c}").fetchone()[0]
                    if n:
                        deleted[f"{fam}_{suffix}"] = int(n)
            if deleted:
                self._checkpoint()
        after = self.size_bytes()
        if deleted:
            log.info("pruned %s rows (%s); store %d -> %d bytes", sum(deleted.values()), deleted, before, after)
        return PruneReport(deleted, before, after)

    def set_retention(self, retain: dict[str, int], by: str, at: float) -> None:
        value = json.dumps({**{k: int(retain[k]) for k in ("second", "minute", "hour")}, "by": by, "at": at})
        with self._wlock:
            self._cur.execute("INSERT OR REPLACE INTO meta VALUES ('retain', ?)", [value])
            self.retain.update({k: int(retain[k]) for k in ("second", "minute", "hour")})
            self._retain_origin = (by, at)

    def config_get(self, key: str) -> dict | None:
        with self._wlock:
            rows = self._cur.execute("SELECT value FROM meta WHERE key = ?", [f"config:{key}"]).fetchall()
        return json.loads(rows[0][0]) if rows else None

    def config_put(self, key: str, value: dict) -> None:
        text = json.dumps(value)
        with self._wlock:
            self._cur.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [f"config:{key}", text])

    def retention_origin(self) -> tuple[str, float] | None:
        return self._retain_origin

    def extent(self) -> dict[str, tuple[int, int | None, int | None]]:
        out = {}
        with self._wlock:
            self.flush()  # acknowledged rows still in the ingest log count too
        cur = self._cur
        for tier, suffixes in (("second", ("s", "s_hot")), ("minute", ("m",)), ("hour", ("h",))):
            rows, lo, hi = 0, None, None
            for fam in FAMILIES:
                for sfx in suffixes:
                    # fetchall: a result left unread keeps its transaction open, and close() cannot checkpoint
                    (n, a, b), = cur.execute(f"SELECT count(*), min(ts), max(ts) FROM {fam}_{sfx}").fetchall()
                    rows += n
                    lo = a if lo is None or (a is not None and a < lo) else lo
                    hi = b if hi is None or (b is not None and b > hi) else hi
            out[tier] = (rows, lo, hi)
        return out

    # (table suffix, period length): every table holding statistics, by the period its ts starts
    _TABLES = (("s_hot", 1), ("s", 1), ("k_s", 1), ("m", 60), ("k_m", 60), ("k_t", 60), ("h", 3600), ("k_h", 3600))

    def delete_data(self, host: str | None, start: int | None, end: int | None, *, dry_run: bool = False,
                    now: int) -> DeleteReport:
        lo = -(2**62) if start is None else start
        hi = 2**62 if end is None else end

        def edges(length: int) -> list[int]:  # periods that straddle an edge of [lo, hi)
            return sorted({e - e % length for e in (start, end) if e is not None and e % length})

        # An edge period is rebuilt from the finer tier while that still holds all of it.
        rebuild = {"m": [p for p in edges(60) if p >= now - self.retain["second"]],
                   "h": [p for p in edges(3600) if p >= now - self.retain["minute"]]}
        with self._settled_writer(True), self._wlock:
            self.flush()  # staged rows of the range go to the tables first, and go with them
            before = self.size_bytes()
            cur = self._cur
            # a period [ts, ts + length) overlaps [lo, hi); plain bounds on ts, so its zone maps prune
            where = "ts < ? AND ts > ?" + (" AND host = ?" if host is not None else "")
            rows: dict[str, int] = {}
            cur.begin()
            try:
                for fam in FAMILIES:
                    for sfx, length in self._TABLES:
                        params = [hi, lo - length] + ([host] if host is not None else [])
                        verb = "SELECT count(*) FROM" if dry_run else "DELETE FROM"
                        n = int(cur.execute(f"{verb} {fam}_{sfx} WHERE {where}", params).fetchone()[0])
                        if n:
                            rows[f"{fam}_{sfx}"] = n
                dirty = [(f, t, p) for f in FAMILIES for t, ps in
                         (("m", rebuild["m"]), ("t", [p for p in rebuild["m"] if p >= self._compacted]),
                          ("h", rebuild["h"])) for p in ps]
                if dry_run:
                    cur.rollback()
                else:
                    for key in dirty:
                        if key not in self._dirty:
                            cur.execute("INSERT INTO dirty VALUES (?, ?, ?)", list(key))
                    if host is not None and start is None and end is None:
                        cur.execute("DELETE FROM hosts WHERE host = ?", [host])
                    cur.commit()
            except BaseException:
                cur.rollback()
                raise
            if not dry_run:
                with self._slock:
                    self._dirty.update(dirty)
                if host is not None and start is None and end is None:
                    self._hosts.discard(host)
                if rows:
                    self._checkpoint()
        recomputed = [("minute", p) for p in rebuild["m"]] + [("hour", p) for p in rebuild["h"]]
        return DeleteReport(rows, recomputed, before, self.size_bytes())

    def compact(self, now: int, *, wait: bool = True) -> int:
        with self._settled_writer(wait) as mine:
            return self._compact(now) if mine else 0

    def _compact(self, now: int) -> int:
        cutoff = (now - 120) - (now - 120) % self.compact_every
        if cutoff <= self._compacted:
            return 0
        moved = 0
        with self._wlock:
            self.flush()
            cur = self._cur
            cur.begin()
            try:
                for fam in FAMILIES.values():
                    n = self.append_settled(cur, fam, f"SELECT * FROM {fam.name}_s_hotv WHERE ts < {cutoff}")
                    cur.execute(f"DELETE FROM {fam.name}_s_hot WHERE ts < {cutoff}")
                    cur.execute(f"DELETE FROM {fam.name}_k_t WHERE ts < {cutoff}")
                    if n:  # raised before the commit: a query planned meanwhile still reads f_s that far
                        self._settled_end[fam.name] = max(self._settled_end[fam.name], cutoff)
                    moved += int(n)
                cur.execute("INSERT OR REPLACE INTO meta VALUES ('compacted_upto', ?)", [str(cutoff)])
                cur.commit()
            except BaseException:
                cur.rollback()
                self._load_codes(cur)  # a widening rolled back with the rest
                raise
            self._compacted = cutoff
        return moved

    def sort_minutes(self, now: int) -> int:
        """Re-sort one whole day of the minute tier by element; returns the rows rewritten.

        Rollups append each minute as it closes, so a day of ``f_m`` lies in time order and a
        client's day touches every row group. Once every minute of a UTC day is rolled up, the
        day is rewritten sorted by the family's key (one element's day: a row group or two), and
        its ``f_k_m`` totals by (dim, host, key, ts) (the top elements' series: a few row groups).
        A late frame later re-rolls its minute as usual; only that minute is then out of order."""
        with self._wlock:  # rollups rewrite minutes: none runs beside this
            upto = min([now] + [self._watermarks(f)[1] for f in FAMILIES])  # minutes before are rolled
            day = self._next_day(self._minutes_sorted, "m", upto)
            if day is None:
                return 0
            cur = self._cur
            cur.begin()
            try:
                rows = 0
                for fam in FAMILIES.values():
                    rows += self._resort(cur, f"{fam.name}_m", partial(_sorted, fam), day, day + 86400)
                    rows += self._resort(cur, f"{fam.name}_k_m", lambda src: f"{src} ORDER BY dim, host, key, ts",
                                         day, day + 86400)
                cur.execute("INSERT OR REPLACE INTO meta VALUES ('minutes_sorted_upto', ?)", [str(day + 86400)])
                cur.commit()
            except BaseException:
                cur.rollback()
                raise
            self._minutes_sorted = day + 86400
            return rows

    def sort_seconds(self, now: int, *, wait: bool = True) -> int:
        """Re-sort settled seconds by element, one span per call; returns the rows rewritten.

        Compaction sorts each hour as it settles, so a client's day is 24 short runs spread over
        the day, each in row groups shared with many other clients. A closed UTC day is rewritten
        as one run per element: its row groups hold fewer distinct files and longer runs of each
        dimension, and compress to about a quarter fewer bytes per row (docs/PERFORMANCE.md).
        Within the open day, runs are merged as the hours settle, like a binary counter: after
        hour 2 the hours 0-2 are one run, after hour 4 the hours 0-4, after 6 the hours 4-6, and
        so on (:func:`merge_spans`), so the open day is mostly long runs too, at the cost of each
        row being rewritten about log2(hours) times (about 12 s of a core an hour for 1,000
        clients: docs/PERFORMANCE.md).

        Not under the write lock: a day of a busy server's seconds takes minutes to rewrite, and
        flushes, rollups and queries go on beside it (queries see the old layout until the
        commit). Compaction and prune, the other writers of ``f_s``, wait for it (``_tlock``);
        :meth:`close` interrupts it, and an interrupted span is simply done again later."""
        with self._settled_writer(wait) as mine:
            if not mine:
                return 0
            upto = self._compacted - self._compacted % 86400  # days before are wholly settled
            day = self._next_day(self._seconds_sorted, "s", upto)
            if day is not None:
                # A day partly pruned already is gone within a day: not worth rewriting.
                keep = day >= now - self.retain["second"]
                rows = self._resort_seconds(day, day + 86400, "seconds_sorted_upto", keep)
                self._seconds_sorted = day + 86400
                return rows
            spans = merge_spans(upto, max(self._seconds_merged, upto), self._compacted)
            if not spans:
                return 0
            rows = self._resort_seconds(*spans[0], "seconds_merged_upto", True)
            self._seconds_merged = spans[0][1]
            return rows

    def _resort_seconds(self, lo: int, hi: int, mark: str, rewrite: bool) -> int:
        """Rewrite [lo, hi) of every family's seconds in one transaction that also sets the meta
        key `mark` to hi; returns the rows rewritten."""
        cur = self._db.cursor()  # its own: close() interrupts it
        self._resorting = cur
        try:
            rows = 0
            cur.begin()
            if rewrite:
                for fam in FAMILIES.values():
                    rows += self._resort(cur, f"{fam.name}_s", partial(_sorted, fam), lo, hi)
            cur.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [mark, str(hi)])
            cur.commit()
        except BaseException:
            cur.rollback()
            raise
        finally:
            self._resorting = None
            cur.close()
        return rows

    def _next_day(self, done: int | None, tier: str, upto: int) -> int | None:
        """The UTC day to sort next in `tier`, if it closed before `upto`: the day after `done`, or
        on first use the oldest stored one."""
        upto -= upto % 86400
        day = done
        if day is None:
            known = [t for (t,) in self._cur.execute(" UNION ALL ".join(
                f"SELECT min(ts) FROM {f}_{tier}" for f in FAMILIES)).fetchall() if t is not None]
            day = min(known) - min(known) % 86400 if known else upto
        return day if day + 86400 <= upto else None

    @staticmethod
    def _resort(cur, table: str, ordered: Callable[[str], str], lo: int, hi: int) -> int:
        """Rewrite `table`'s rows of seconds [lo, hi) in order (`ordered` turns a query into the
        same rows sorted), inside the caller's transaction.

        The sorted copy is appended first, then the old rows are deleted by row id: rows this
        transaction appended have row ids above every committed one until it commits. One write
        of the span, and the old row groups, wholly deleted, are free for reuse at the checkpoint."""
        span = f"ts >= {lo} AND ts < {hi}"
        last, n = cur.execute(f"SELECT max(rowid), count(*) FILTER (WHERE {span}) FROM {table}").fetchone()
        if not n:
            return 0
        cur.execute(f"INSERT INTO {table} {ordered(f'SELECT * FROM {table} WHERE {span}')}")
        gone = cur.execute(f"DELETE FROM {table} WHERE {span} AND rowid <= {last}").fetchone()[0]
        if gone != n:  # the copy would be lost or doubled: keep the day as it was
            raise RuntimeError(f"re-sorting {table}: deleted {gone} old rows of {n}")
        return int(n)

    def checkpoint(self) -> bool:
        """Fold the seq log and the engine's WAL into the tables; False when the engine refused the
        checkpoint because another write was committing (counted in checkpoints_refused: the upkeep
        tries again the next second instead of letting the WAL and its memory grow till the next)."""
        with self._wlock:
            self._fold_seq_log()
            try:
                self._checkpoint()
            except duckdb.TransactionException as e:
                if "other write transactions" not in str(e):
                    raise
                self.checkpoints_refused += 1
                return False
            return True

    def _checkpoint(self) -> None:
        # On the root connection: a CHECKPOINT on the cursor that just committed a flush is
        # refused ("other write transactions active") by DuckDB 2.0; on the root it is not.
        with self._wlock:
            self._db.execute("CHECKPOINT")

    def _fold_seq_log(self) -> None:
        """Keep one row per source: the log's newest high-water marks replace those in ``seqs``."""
        cur = self._cur
        if cur.execute("SELECT count(*) FROM seq_log").fetchone()[0] == 0:
            return  # no write transaction for nothing
        cur.begin()
        try:
            cur.execute("INSERT OR REPLACE INTO seqs SELECT source, max(hwm), max(updated) FROM seq_log "
                        "GROUP BY source")
            cur.execute("DELETE FROM seq_log")
            cur.commit()
        except BaseException:
            cur.rollback()
            raise

    def high_water(self) -> dict[str, int]:
        """Durable per-source high-water marks: those in the tables, and those of ingest-log records not flushed yet.

        Read under the write lock: a flush takes the pending marks before its transaction commits,
        and a read between the two would miss the marks of the newest flushed records."""
        with self._wlock:
            out = dict(self._cur.execute(
                "SELECT source, max(hwm) FROM (SELECT source, hwm FROM seqs UNION ALL SELECT source, hwm FROM seq_log) "
                "GROUP BY source").fetchall())
            with self._slock:
                for src, (q, _) in self._pending_seqs.items():
                    out[src] = max(q, out.get(src, -1))
        return out

    def size_bytes(self) -> int:
        total = 0
        for p in (self.path, self.path + ".wal"):
            try:
                total += os.path.getsize(p)
            except OSError:
                pass
        return total

    def memory(self) -> tuple[int, int]:
        cur = self._cur
        (used,), = cur.execute("SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory()").fetchall()
        (limit,), = cur.execute("SELECT current_setting('memory_limit')").fetchall()
        return int(used), _parse_bytes(limit)

    def memory_parts(self) -> dict[str, int]:
        """duckdb_memory()'s tags that hold any memory (base_table: table data in the buffer pool;
        in_memory_table: appended rows not checkpointed yet; transaction: undo buffers; ...)."""
        return {tag.lower(): int(used) for tag, used in self._cur.execute(
            "SELECT tag, memory_usage_bytes FROM duckdb_memory() WHERE memory_usage_bytes > 0").fetchall()}

    def ping(self) -> None:
        self._cur.execute("SELECT 1").fetchone()

    def row_counts(self) -> dict[str, int]:
        out = {}
        for fam in FAMILIES:
            for suffix in ("s_hot", "s", "m", "h"):
                out[f"{fam}_{suffix}"] = self._cur.execute(f"SELECT count(*) FROM {fam}_{suffix}").fetchone()[0]
        return out

    # ---------------------------------------------------------------- sources, hosts
    def record_status(self, agent: str, host: str | None, status: list[SourceStatus], seen: float) -> None:
        """Keep an agent's source states; a changed one (or one back after a minute's silence) is
        written by the next flush. Called on the ingest path, so it never waits for the write lock: a
        checkpoint or a re-sort holds it for seconds, and every agent's ack would wait behind it."""
        with self._slock:
            for st in status:
                key = (agent, st.name)
                rec = dict(agent=agent, name=st.name, host=st.host or host, families=list(st.families),
                           state=st.state, reason=st.reason, demo=st.demo, last_seen=seen)
                old = self._sources.get(key)
                self._sources[key] = rec
                if old is None or any(old[k] != rec[k] for k in ("host", "families", "state", "reason", "demo")) \
                        or seen - old["last_seen"] > 60:
                    self._pending_sources[key] = rec

    def sources(self) -> list[dict]:
        with self._slock:
            return [dict(v) for _, v in sorted(self._sources.items())]

    def hosts(self) -> list[str]:
        return sorted(self._hosts)

    # ---------------------------------------------------------------- worksheets
    def worksheet_put(self, ws_id: str, name: str, owner: str, spec: str, created: float, updated: float) -> None:
        with self._wlock:
            self._cur.execute(
                "INSERT OR REPLACE INTO worksheets VALUES (?, ?, ?, ?, ?, ?)", [ws_id, name, owner, created, updated, spec]
            ).fetchall()

    def _ws(self, row) -> dict:
        return dict(zip(("id", "name", "owner", "created", "updated", "spec"), row))

    def worksheet_get(self, ws_id: str) -> dict | None:
        # fetchall: a result left open keeps its transaction, and a CHECKPOINT is refused meanwhile
        rows = self._cur.execute("SELECT * FROM worksheets WHERE id = ?", [ws_id]).fetchall()
        row = rows[0] if rows else None
        return self._ws(row) if row else None

    def worksheet_list(self) -> list[dict]:
        return [self._ws(r) for r in self._cur.execute("SELECT * FROM worksheets ORDER BY updated DESC").fetchall()]

    def worksheet_delete(self, ws_id: str) -> bool:
        with self._wlock:
            n = self._cur.execute("DELETE FROM worksheets WHERE id = ?", [ws_id]).fetchone()[0]
        return bool(n)

    # ---------------------------------------------------------------- runs
    _RUN = ("id", "name", "start", "end", "created", "spec")

    def run_put(self, run_id: str, name: str, start: float, end: float | None, created: float, spec: str) -> None:
        with self._wlock:
            self._cur.execute("INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?, ?)",
                              [run_id, name, start, end, created, spec]).fetchall()

    def run_get(self, run_id: str) -> dict | None:
        rows = self._cur.execute("SELECT * FROM runs WHERE id = ?", [run_id]).fetchall()
        return dict(zip(self._RUN, rows[0])) if rows else None

    def run_list(self) -> list[dict]:
        return [dict(zip(self._RUN, r)) for r in self._cur.execute("SELECT * FROM runs ORDER BY start DESC").fetchall()]

    def run_delete(self, run_id: str) -> bool:
        with self._wlock:
            return self._cur.execute("DELETE FROM runs WHERE id = ?", [run_id]).fetchone()[0] > 0

    def interrupt(self) -> None:
        self.request_flush()  # the flush thread flushes once more now, not in a second
        sorting = self._resorting
        if sorting is not None:  # minutes of work left, perhaps: it rolls back and is redone later
            try:
                sorting.interrupt()
            except duckdb.Error:
                pass

    def close(self) -> None:
        # An interrupt that lands between two statements of a re-sort is lost: repeat it until
        # the re-sort has rolled back and let go.
        while not self._tlock.acquire(timeout=0.05):
            self.interrupt()
        try:
            with self._wlock:
                try:
                    self.flush()
                    self._checkpoint()
                finally:
                    self._log.close()
                    self._db.close()
        finally:
            self._tlock.release()
