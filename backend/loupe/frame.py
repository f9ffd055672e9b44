"""The frame: the versioned contract between a source (agent) and the backend.

One frame covers one second of one metric family from one source::

    {"v": 1, "source": "procfs@nas1", "seq": 1763797185000001, "ts": 1763797185,
     "family": "nfs", "host": "nas1",
     "rows": [{"dims": {"client": "10.0.0.7", "proto": "v3", "op": "read",
                        "share": "/export/a", "file": "/export/a/00/1f/3/12"},
               "count": 120, "bytes": 983040, "lat_sum": 1234567,
               "hist": {"latency": {"14": 100, "21": 20}, "size": {"13": 120}}}]}

* ``seq`` is strictly increasing per ``source``. A frame whose seq is not above the
  highest stored for its source is a duplicate: acknowledged, not stored again.
  Agents start their seq from the wall clock in microseconds, so a restart that
  lost its state never goes backwards.
* ``ts`` is the unix second the frame covers; values are totals over that second.
* ``family`` names the stream (see :mod:`loupe.catalog`); a metric is a family
  plus a value column, so one ``nfs`` frame feeds both ``nfs.ops`` and ``nfs.bytes``.
* ``dims`` may leave out dimensions; they are stored as ``""`` and shown as "(none)".
  ``host`` comes from the frame, never from a row.
* ``count``: events (for ``cpu``: CPU microseconds). ``bytes``: payload bytes.
  ``lat_sum``: sum of latencies in ns. ``hist``: per histogram dimension, log2
  bucket exponent -> events, within the declared bounds at ``GET /api/v1/metrics``.

Version 2 carries the same rows as columns, which costs a fraction to encode,
parse and validate (what ``loupe agent`` sends)::

    {"v": 2, "source": ..., "seq": ..., "ts": ..., "family": "nfs", "host": "nas1",
     "columns": {"n": 2,
                 "dims": {"client": ["10.0.0.7", "10.0.0.8"], "op": ["read", "read"]},
                 "count": [120, 4], "bytes": [983040, 32768], "lat_sum": [1234567, 9000],
                 "hist": {"latency": {"row": [0, 0, 1], "bucket": [14, 21, 14], "n": [100, 20, 4]}}}}

Every list in ``dims`` and ``count``/``bytes``/``lat_sum`` (each optional: zeros) has
``n`` entries; a histogram is sparse, one entry per non-empty (row, bucket).

Version 3 carries the columns as Arrow IPC, in a body of its own media type,
``Content-Type: application/vnd.apache.arrow.stream`` (what ``loupe agent`` sends;
:mod:`loupe.arrow_ipc` writes it without pyarrow, :mod:`loupe.frame_v3` reads it and
checks whole columns at once). The body is one or more IPC streams back to back, each
ended by its end-of-stream marker; a stream holds the frames of one column layout, one
record batch per frame::

    stream 0   schema    client: dictionary<int32, utf8>, op: dictionary<int32, utf8>, count: int64,
                         latency: map<int16, int64>
               metadata  loupe.frames  = [{"v": 3, "source": "bpf.nfswire@nas1", "seq": ..., "ts": ...,
                                           "family": "nfs", "host": "nas1"}, ...]
                         loupe.request = {"agent": ..., "status": [...], "stats": {...}, "sent_at": ...}
               dictionary batches + record batch: frame 0's rows; the same for frame 1; ...;
               end of stream
    stream 1   (another layout, e.g. the disk frames) ...

* ``loupe.frames`` (JSON): one header per record batch, in order, with the fields of
  versions 1 and 2 and ``v`` 3. ``loupe.request`` (JSON, first stream only): the
  request's other fields (``IngestRequest`` but ``frames``). A request without frames
  is one stream without columns or batches.
* Columns, each optional, with no nulls: a dimension of the family as a string, large
  string or dictionary-of-string column (absent: ""). ``loupe agent`` writes dictionaries,
  each frame's own (a dictionary batch replaces the last frame's whole), each value once:
  the server folds files and groups rows on the codes, and trusts them; a dictionary that
  repeats a value is stored with the same totals, the file fold may treat the copies as
  two files; ``count``/``bytes``/``lat_sum``
  as any integer type, 0..2**62 (absent: zeros); a histogram as
  ``map<integer bucket exponent, integer events>``, a row's map its non-empty buckets.
* Refused: compressed buffers, delta dictionaries (a batch may replace its
  dictionaries whole), other message types, more than 10,000 frames. A body that is
  not whole streams gets 400 saying where; a frame that breaks the rules of versions 1
  and 2 gets 422 naming the frame (its index in the body and its seq) and the column.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .arrow_ipc import MEDIA_TYPE as ARROW_MEDIA_TYPE
from .catalog import FAMILIES, HISTOGRAMS
from .columns import rows_to_columns  # noqa: F401  (re-exported: the v2 encoder)

FRAME_VERSION = 1  # versions read: 1 (rows) and 2 (columns) as JSON, 3 as Arrow IPC (frame_v3)
MAX_ROWS_PER_FRAME = 200_000
MAX_DIM_LEN = 1024
MAX_FRAMES_PER_REQUEST = 10_000

NonNeg = Annotated[int, Field(ge=0, le=2**62)]


class Row(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dims: dict[str, str] = Field(default_factory=dict)
    count: NonNeg = 0
    bytes: NonNeg = 0
    lat_sum: NonNeg = 0
    hist: dict[str, dict[str, NonNeg]] = Field(default_factory=dict)


class SparseHist(BaseModel):
    """One histogram of a columnar frame: entry i adds n[i] events to bucket[i] of row row[i]."""

    model_config = ConfigDict(extra="forbid")

    row: list[Annotated[int, Field(ge=0)]]
    bucket: list[int]
    n: list[NonNeg]


class Columns(BaseModel):
    """The rows of a version-2 frame, one list per field (see the module docs)."""

    model_config = ConfigDict(extra="forbid")

    n: int = Field(ge=0, le=MAX_ROWS_PER_FRAME, description="Number of rows")
    dims: dict[str, list[str]] = Field(default_factory=dict)
    count: list[NonNeg] | None = None
    bytes: list[NonNeg] | None = None
    lat_sum: list[NonNeg] | None = None
    hist: dict[str, SparseHist] = Field(default_factory=dict)


class FrameHeader(BaseModel):
    """What every frame says about itself, whatever carries its rows."""

    model_config = ConfigDict(extra="forbid")
    VERSIONS: ClassVar[tuple[int, ...]] = (1, 2)
    VERSIONS_NOTE: ClassVar[str] = (f"a JSON body carries versions 1 and 2 (version 3 is an Arrow IPC body, "
                                    f"Content-Type: {ARROW_MEDIA_TYPE})")

    v: int = Field(FRAME_VERSION, description="Frame format version: 1 (rows) or 2 (columns).")
    source: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.:@/-]+$")
    seq: int = Field(ge=0, le=2**63 - 1)
    ts: int = Field(ge=0, le=2**40, description="Unix second covered by this frame.")
    family: str
    host: str = Field(min_length=1, max_length=255)

    @field_validator("v")
    @classmethod
    def _version(cls, v: int) -> int:
        if v not in cls.VERSIONS:
            raise ValueError(f"unsupported frame version {v}; {cls.VERSIONS_NOTE}")
        return v

    @field_validator("family")
    @classmethod
    def _family(cls, f: str) -> str:
        if f not in FAMILIES:
            raise ValueError(f"unknown family {f!r}; valid families: {', '.join(FAMILIES)}")
        return f


class Frame(FrameHeader):
    rows: list[Row] = Field(default_factory=list, max_length=MAX_ROWS_PER_FRAME)
    columns: Columns | None = Field(None, description="Version 2: the rows as columns (then `rows` is empty).")

    @property
    def n_rows(self) -> int:
        return self.columns.n if self.columns is not None else len(self.rows)

    @model_validator(mode="after")
    def _rows(self) -> "Frame":
        fam = FAMILIES[self.family]
        dims = set(fam.dims) - {"host"}
        hists = {h.name for h in fam.hists}
        if self.v == 2:
            if self.columns is None or self.rows:
                raise ValueError("a version 2 frame carries its rows in 'columns' (and no 'rows')")
            _check_columns(self.columns, self.family, dims, hists)
            return self
        if self.columns is not None:
            raise ValueError("'columns' needs frame version 2 (v: 2)")
        for i, row in enumerate(self.rows):
            for k, val in row.dims.items():
                if k not in dims:
                    raise ValueError(
                        f"rows[{i}].dims: unknown dimension {k!r} for family {self.family}; "
                        f"valid: {', '.join(sorted(dims))}"
                    )
                if len(val) > MAX_DIM_LEN:
                    raise ValueError(f"rows[{i}].dims.{k}: value longer than {MAX_DIM_LEN} characters")
            for h, buckets in row.hist.items():
                if h not in hists:
                    raise ValueError(
                        f"rows[{i}].hist: {h!r} is not a histogram of family {self.family}; "
                        f"valid: {', '.join(sorted(hists)) or '(none)'}"
                    )
                spec = HISTOGRAMS[h]
                for b in buckets:
                    try:
                        e = int(b)
                    except ValueError:
                        raise ValueError(f"rows[{i}].hist.{h}: bucket {b!r} is not an integer exponent") from None
                    if not spec.lo <= e <= spec.hi:
                        raise ValueError(
                            f"rows[{i}].hist.{h}: bucket {e} outside declared bounds {spec.lo}..{spec.hi}"
                        )
        return self


def _check_columns(c: Columns, family: str, dims: set[str], hists: set[str]) -> None:
    """Lengths, names and bounds of a columnar frame; each message names the field."""
    import numpy as np

    for k, vals in c.dims.items():
        if k not in dims:
            raise ValueError(f"columns.dims: unknown dimension {k!r} for family {family}; valid: {', '.join(sorted(dims))}")
        if len(vals) != c.n:
            raise ValueError(f"columns.dims.{k}: {len(vals)} values for n = {c.n} rows")
        if vals and max(map(len, vals)) > MAX_DIM_LEN:
            i = next(i for i, v in enumerate(vals) if len(v) > MAX_DIM_LEN)
            raise ValueError(f"columns.dims.{k}[{i}]: value longer than {MAX_DIM_LEN} characters")
    for m in ("count", "bytes", "lat_sum"):
        vals = getattr(c, m)
        if vals is not None and len(vals) != c.n:
            raise ValueError(f"columns.{m}: {len(vals)} values for n = {c.n} rows")
    for h, sh in c.hist.items():
        if h not in hists:
            raise ValueError(f"columns.hist: {h!r} is not a histogram of family {family}; "
                             f"valid: {', '.join(sorted(hists)) or '(none)'}")
        if not len(sh.row) == len(sh.bucket) == len(sh.n):
            raise ValueError(f"columns.hist.{h}: row, bucket and n differ in length "
                             f"({len(sh.row)}, {len(sh.bucket)}, {len(sh.n)})")
        if sh.row and max(sh.row) >= c.n:
            raise ValueError(f"columns.hist.{h}.row: row {max(sh.row)} does not exist (n = {c.n})")
        if sh.bucket:
            spec = HISTOGRAMS[h]
            b = np.asarray(sh.bucket)
            bad = (b < spec.lo) | (b > spec.hi)
            if bad.any():
                raise ValueError(f"columns.hist.{h}.bucket: bucket {int(b[bad][0])} outside declared bounds "
                                 f"{spec.lo}..{spec.hi}")


class SourceStatus(BaseModel):
    """What an agent says about one of its sources, for the UI's source list."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(max_length=100, description="e.g. 'procfs.cpu', 'synthetic.nfs', 'bpf.disk'")
    host: str | None = Field(None, max_length=255, description="Host the source measures; default: the frames' host")
    families: list[str] = Field(default_factory=list, max_length=10)
    state: str = Field(pattern=r"^(active|off|error|suspended|standby)$",
                       description="standby: another source measures the same and is active (reason names it)")
    reason: str = Field("", max_length=500)
    demo: bool = Field(False, description="True when the source produces synthetic demo data.")
    suspendable: bool = Field(False, description="Can be suspended and resumed from the API.")
    cost: dict[str, float] | None = Field(
        None, max_length=32,
        description="The source's own cost over the last second: for BPF probes runs_per_s, bpf_cpu_pct, "
                    "ns_per_run (from bpf_stats; with LOUPE_BPF_STATS=sampled those of the last second it was "
                    "held, stats_age_s ago, one in every stats_every_s; absent with it off), map_fill (0..1), "
                    "dropped, dropped_total, drain_ms; the NFS "
                    "wire decoder also its losses since it started (partial_total, desync_total, "
                    "resync_total, unmatched_total, overwritten_total, expired_total) and the late segments it "
                    "decoded into a resync's gap (refilled_total).")


class AgentStats(BaseModel):
    """The agent process's own cost and delivery state."""

    model_config = ConfigDict(extra="forbid")

    cpu_pct: float = Field(ge=0, description="CPU of the agent process over its last second, % of one core")
    rss_bytes: int = Field(ge=0)
    queue_frames: int = Field(0, ge=0)
    queue_bytes: int = Field(0, ge=0)
    dropped_frames: int = Field(0, ge=0, description="Frames dropped because the queue was full: since start, "
                                "or with a spool (--state-dir) since the spool was created")
    in_process: bool = Field(False, description="Runs inside the server process (cpu and rss are the server's)")


class IngestRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    frames: list[Frame] = Field(max_length=MAX_FRAMES_PER_REQUEST)
    agent: str | None = Field(None, max_length=200, description="Agent id, for the source list.")
    status: list[SourceStatus] | None = Field(None, max_length=200)
    sent_at: float | None = Field(None, description="Agent wall clock at send, unix seconds.")
    stats: AgentStats | None = None


class IngestResult(BaseModel):
    accepted: int = Field(description="Frames stored by this request.")
    duplicates: int = Field(description="Frames already stored earlier (by source and seq), acknowledged.")
    rows: int = Field(description="Rows stored (after folding high-cardinality files).")
    folded_rows: int = Field(0, description="Rows folded into the '(other files)' element.")
    suspend: list[str] | None = Field(
        None, description="Sources of this agent that an operator suspended: the agent detaches them until "
                          "they leave this list. Absent when the request named no agent.")
