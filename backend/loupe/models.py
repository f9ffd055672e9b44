"""Public API models (responses and request bodies). The TypeScript client is generated from these."""

from __future__ import annotations

import math
from typing import Annotated, Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .names import MAX_TABLE, canonical, name_problem

# The client addresses of a result that have a name: the UI shows the name, with the address on
# hover, and still filters by the address.
ClientNames = Annotated[dict[str, str], Field(
    default_factory=dict, description="Client address -> its name (LOUPE_CLIENT_NAMES), for the client addresses "
    "in this result that have one; the others are shown as themselves")]


class HistogramPublic(BaseModel):
    name: str
    unit: str
    lo: int = Field(description="Lowest bucket exponent; it also holds everything below 2**lo.")
    hi: int = Field(description="Highest bucket exponent; it also holds everything at or above 2**hi.")


class MetricPublic(BaseModel):
    name: str
    family: str
    unit: str
    noun: str
    description: str
    dimensions: list[str]
    histograms: list[HistogramPublic]


class MetricCatalog(BaseModel):
    metrics: list[MetricPublic]


class Bucket(BaseModel):
    index: int = Field(description="log2 exponent of the bucket")
    lo: int = Field(description="inclusive lower bound, in the histogram's unit")
    hi: int | None = Field(description="exclusive upper bound; null for the open top bucket")
    label: str


class StatisticPublic(BaseModel):
    metric: str
    by: str | None = None
    where: dict[str, list[str]] = Field(default_factory=dict)
    name: str = Field(description="English name, e.g. 'NFS operations per second broken down by client'")
    unit: str


class Series(BaseModel):
    key: str = Field(description="Breakdown element; '' is shown as (none)")
    values: list[float]
    total: float = Field(description="Mean rate over the range")
    last: float = Field(description="Rate in the last step of the range")


class QueryResult(BaseModel):
    statistic: StatisticPublic
    tier: str = Field(description="second, minute or hour")
    step: int = Field(description="seconds per point")
    start: int = Field(description="first point's unix second")
    end: int = Field(description="unix second just after the last point")
    timestamps: list[int]
    total: list[float] = Field(description="Rate of the whole statistic at each point")
    series: list[Series] = Field(description="Top elements of the breakdown, largest first")
    other: list[float] | None = Field(description="Everything outside the top elements; parts sum to total")
    elements: int = Field(description="Distinct breakdown elements in the range")
    approximate: bool = Field(description="True when part of the breakdown is folded into '(other files)'")
    notes: list[str] = Field(default_factory=list)
    total_min: list[float] | None = Field(None, description="With minmax on a tier coarser than seconds: the "
                                          "lowest per-second rate of the total inside each point")
    total_max: list[float] | None = Field(None, description="... and the highest")
    names: ClientNames


class HeatmapResult(BaseModel):
    statistic: StatisticPublic
    dim: str
    tier: str
    step: int
    start: int
    end: int
    timestamps: list[int]
    buckets: list[Bucket]
    cells: list[list[float]] = Field(description="Sparse [time index, bucket index into buckets, rate] triples")
    max: float
    total: list[float] = Field(description="Rate at each point, all buckets")
    names: ClientNames


class BreakdownRow(BaseModel):
    key: str
    value: float = Field(description="Mean rate over the range")
    last: float = Field(description="Rate in the last second (or step) of the range")
    share: float = Field(description="Fraction of the total, 0..1")
    bucket: Bucket | None = None


class BreakdownResult(BaseModel):
    statistic: StatisticPublic
    tier: str
    start: int
    end: int
    total: float
    rows: list[BreakdownRow]
    other: float = Field(description="Mean rate of elements beyond the top rows")
    elements: int
    approximate: bool
    names: ClientNames


class MembersResult(BaseModel):
    statistic: StatisticPublic
    dim: str
    lo: int
    hi: int
    band: str = Field(description="e.g. 'between 1 ms and 4 ms'")
    start: int
    end: int
    total: float = Field(description="Mean rate in the band over the range")
    rows: list[BreakdownRow]
    other: float
    elements: int
    names: ClientNames


class HierarchyNode(BaseModel):
    name: str = Field(description="Last path component, or '(other)', '(other files)', '(this directory)'")
    path: str | None = Field(description="Full path: a directory's is the prefix that filters to it; "
                                         "null for (other) and (other files)")
    kind: Literal["dir", "file", "self", "other", "folded", "element"] = Field(
        description="dir: a directory; file: a path element; self: a directory's own operations; other: the "
                    "siblings beyond the top ones, summed; folded: files the store folded into '(other files)'; "
                    "element: a stored name that is not a path (e.g. an unresolved file handle)")
    value: float = Field(description="Mean rate over the range; a directory's is the sum of what lies under it")
    elements: int = Field(description="Stored elements (files, shares) summed into this node")
    merged: int = Field(0, description="For (other): how many siblings it sums")
    truncated: bool = Field(False, description="A directory whose children are not listed (depth or size bound)")
    children: list[HierarchyNode] = Field(default_factory=list)


class HierarchyResult(BaseModel):
    statistic: StatisticPublic
    dim: str = Field(description="The path dimension folded into the tree: file or share")
    root: str = Field(description="The directory the tree starts at: the statistic's prefix filter on dim, or '/'")
    tier: str
    start: int
    end: int
    depth: int = Field(description="Levels below the root that were read")
    top: int = Field(description="Children listed per directory; the rest sum into (other)")
    total: float = Field(description="Mean rate of the whole statistic over the range (the tree's value)")
    nodes: int = Field(description="Nodes in the tree")
    tree: HierarchyNode
    approximate: bool = Field(description="True when files folded into '(other files)' are in the range")
    notes: list[str] = Field(default_factory=list)


# How a chart shows its statistic (frontend/src/state/url.ts viewFields): hierarchy, legend order,
# search and highlight, crop, min/max, an unsynced chart's own time, bucket zoom.
CHART_VIEW_FIELDS = ("h", "sort", "q", "hl", "crop", "yz", "mm", "t")


class WorksheetStatistic(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # JSON as typed: no false for 0, no "1" for 1

    metric: str
    by: str | None = None
    where: dict[str, list[str]] = Field(default_factory=dict)
    top: int = Field(10, ge=1, le=100)
    display: str = Field("area", pattern=r"^(area|line|heatmap)$")
    view: str = Field("", max_length=8192, description=(
        "How the chart shows the statistic, in the worksheet link's syntax: `;`-separated fields "
        f"named {', '.join(CHART_VIEW_FIELDS)}, e.g. 'sort:-last;crop:1;t:1h@1763797185'. "
        "The UI reads the values and reports what it cannot use; empty: as by default"))

    @field_validator("view")
    @classmethod
    def _known_view_fields(cls, v: str) -> str:
        for part in filter(None, v.split(";")):
            name = part.split(":", 1)[0]
            if ":" not in part or name not in CHART_VIEW_FIELDS:
                raise ValueError(f"view field {part[:40]!r} is not one of {', '.join(CHART_VIEW_FIELDS)} "
                                 "written as name:value")
        return v


class WorksheetRange(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # JSON as typed: no false for 0, no "1" for 1

    start: str = Field("-10m", description="Relative ('-10m', '-1h') or absolute (unix seconds, ISO 8601)")
    end: str = Field("now")


class WorksheetBase(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # JSON as typed: no false for 0, no "1" for 1

    name: str = Field(min_length=1, max_length=200)
    range: WorksheetRange = Field(default_factory=WorksheetRange)
    statistics: list[WorksheetStatistic] = Field(default_factory=list, max_length=50)


class WorksheetCreate(WorksheetBase):
    pass


class WorksheetUpdate(WorksheetBase):
    pass


class WorksheetPublic(WorksheetBase):
    id: str
    owner: str
    created: float
    updated: float


class WorksheetList(BaseModel):
    worksheets: list[WorksheetPublic]


class SourcePublic(BaseModel):
    agent: str
    name: str
    host: str | None = None
    families: list[str]
    state: str = Field(description="active, off, error, suspended or standby, as the agent last reported it")
    reason: str
    demo: bool
    last_seen: float
    suspendable: bool = False
    suspend_requested: bool = Field(False, description="An operator asked for it to be suspended; the agent "
                                                       "applies this within a second or two")
    cost: dict[str, float] | None = Field(None, description="The source's own cost over its last second")


class AgentPublic(BaseModel):
    agent: str
    last_seen: float
    cpu_pct: float | None = Field(None, description="Agent process CPU, % of one core")
    rss_bytes: int | None = None
    queue_frames: int | None = None
    queue_bytes: int | None = None
    dropped_frames: int | None = None
    in_process: bool = Field(False, description="Runs inside the server (its CPU and RSS are the server's)")
    clock_offset_s: float | None = Field(None, description="The agent's clock minus the server's at its last "
                                                           "request (transit included), seconds")
    clock_skewed: bool = Field(False, description="The offset is beyond LOUPE_CLOCK_SKEW_LIMIT: its frames are "
                                                  "placed by the server's clock, shifted by the offset")


class SourceControlRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # JSON as typed: no false for 0, no "1" for 1

    agent: str = Field(min_length=1, max_length=200)
    name: str = Field(min_length=1, max_length=100)


class SourceList(BaseModel):
    agents: list[AgentPublic] = Field(default_factory=list)
    sources: list[SourcePublic]
    families: dict[str, bool] = Field(description="Family -> whether any active source feeds it")
    missing: dict[str, str] = Field(default_factory=dict,
                                    description="Family with no active source -> why, for empty states")


# Fishworks' weather, calmest first: a tile's value below its first threshold is the first level.
WEATHER_LEVELS = ("sunny", "partly cloudy", "cloudy", "stormy", "hurricane")
Threshold = Annotated[float, Field(allow_inf_nan=False)]


class TileSpec(BaseModel):
    """One Activity tile of the Status page: a statistic, how to show it, and its weather thresholds."""

    model_config = ConfigDict(extra="forbid", strict=True)  # JSON as typed: no "1" for 1

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,39}$",
                    description="The tile's name: lower-case letters, digits, _ and -, unique among the tiles")
    title: str = Field(min_length=1, max_length=60)
    metric: str = Field(description="A metric of GET /api/v1/metrics")
    by: str | None = Field(None, description="The breakdown the tile opens in the worksheet; the tile shows the total")
    where: dict[str, list[str]] = Field(default_factory=dict, description="Filters: dimension -> values")
    unit: str = Field(min_length=1, max_length=20, description="The unit the tile shows, e.g. MB/s")
    scale: float = Field(1.0, gt=0, allow_inf_nan=False,
                         description="Multiplies the metric's unit into the tile's: 1e-6 turns bytes/s into MB/s")
    divide_by_cpus: bool = Field(False, description="Metrics with a cpu dimension: percent of all the CPUs "
                                                    "that report, rather than of one")
    thresholds: list[Threshold] = Field(
        min_length=4, max_length=4,
        description="Four ascending values in the tile's unit: at or above the first the weather is partly cloudy, "
                    "then cloudy, stormy and hurricane; below the first it is sunny")


class TilesUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    tiles: list[TileSpec] = Field(min_length=1, max_length=8)


class TilesConfig(TilesUpdate):
    default: bool = Field(description="True while these are the built-in tiles (never changed, or reset)")
    set_by: str | None = Field(description="Who last saved or reset the tiles; None if nobody has")
    set_at: float | None
    levels: list[str] = Field(default=list(WEATHER_LEVELS), description="The weather levels, calmest first")


class StatusTile(TileSpec):
    value: float = Field(description="The newest full second, in the tile's unit")
    level: float = Field(description="What the weather is judged on: the mean of the last level_seconds settled "
                         "seconds (a few behind now), in the tile's unit")
    level_seconds: int = Field(description="Seconds averaged into level")
    timestamps: list[int] = Field(description="The sparkline: the start of each step, over at most 7 days "
                                              "(less while the store holds less)")
    values: list[float]
    span_start: int = Field(description="Where the sparkline starts (unix seconds)")
    step: int = Field(description="Seconds per sparkline point")
    error: str | None = Field(None, description="Why the tile cannot be shown (e.g. a metric no longer known)")


class StatusResult(BaseModel):
    tiles: list[StatusTile]
    store_bytes: int
    disk_free_bytes: int = Field(description="Free space on the data directory's file system")
    store_growth_bytes_per_day: float | None = Field(
        description="The store's growth over the last day's samples (once a minute); None for its first 10 minutes")
    days_until_full: float | None = Field(description="Days until the disk is full at that growth; None while it "
                                                      "does not grow")
    hosts: list[str]
    demo_hosts: list[str]
    ingest_error: str | None = Field(None, description="Why ingest is failing now (e.g. the disk is full); "
                                                       "queries still work, and ingest resumes by itself")
    ingest_error_since: float | None = Field(None, description="Unix time of the first failure in this spell")


# ------------------------------------------------------------------ benchmark runs
class RunCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # JSON as typed: no false for 0, no "1" for 1

    name: str = Field(min_length=1, max_length=200)
    host: str | None = Field(None, max_length=255, description="The NFS server's host in Loupe; all hosts if unset")
    start: float | None = Field(None, description="Unix time the run began; now if unset")
    command: list[str] | None = Field(None, max_length=200, description="The benchmark's command line, if known")


class RunStop(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # JSON as typed: no false for 0, no "1" for 1

    end: float | None = Field(None, description="Unix time the run ended; now if unset")
    exit_code: int | None = None


class ClientResultModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # JSON as typed: no false for 0, no "1" for 1

    client: str = Field(min_length=1, max_length=255, description="The client's address, as the server sees it")
    read_bytes: int = Field(0, ge=0)
    write_bytes: int = Field(0, ge=0)
    read_ops: int = Field(0, ge=0)
    write_ops: int = Field(0, ge=0)
    create_ops: int = Field(0, ge=0, description="Files created (checked against the wire's CREATE calls)")
    runtime: float | None = Field(None, ge=0, description="Seconds the client measured, if it said")


class RunResultsImport(BaseModel):
    """The clients' own results: fio's JSON report, or per-client numbers."""

    model_config = ConfigDict(extra="forbid", strict=True)  # JSON as typed: no false for 0, no "1" for 1

    format: str = Field(pattern=r"^(fio|simple)$")
    client: str | None = Field(None, max_length=255,
                               description="fio: the client address a one-machine fio report belongs to")
    report: dict | None = Field(None, description="fio: the output of fio --output-format=json")
    clients: list[dict] | None = Field(None, max_length=10000, description="simple: per-client results")


class RunPublic(BaseModel):
    id: str
    name: str
    host: str | None
    start: float
    end: float | None = Field(description="null while the run is in progress")
    running: bool
    created: float
    command: list[str] | None = None
    exit_code: int | None = None
    results: list[ClientResultModel] = Field(description="Imported client results, one per client")


class RunList(BaseModel):
    runs: list[RunPublic]


class RunReportClient(BaseModel):
    client: str
    reported: dict[str, float | None]
    wire: dict[str, float | None]
    bytes_agreement_pct: float | None = Field(description="wire bytes as % of reported bytes")
    ops_agreement_pct: float | None
    creates_agreement_pct: float | None = Field(description="wire CREATE calls as % of the files it reported creating")
    reported_bytes_per_s: float
    wire_bytes_per_s: float
    reported_ops_per_s: float
    wire_ops_per_s: float
    cache_read_bytes: int = Field(description="reported read bytes that never crossed the wire")
    start_offset_s: int | None = Field(description="seconds from the run's start to the client's first I/O")
    end_offset_s: int | None = Field(description="seconds from the client's last I/O to the run's end")
    straggler: bool
    passed: bool
    reasons: list[str]


class RunReportTotal(BaseModel):
    reported_bytes: int
    wire_bytes: int
    reported_ops: int
    wire_ops: int
    bytes_agreement_pct: float | None
    ops_agreement_pct: float | None
    reported_creates: int
    wire_creates: int
    creates_agreement_pct: float | None
    reported_bytes_per_s: float
    wire_bytes_per_s: float


class RunReportSkew(BaseModel):
    start_spread_s: int | None
    end_spread_s: int | None
    ramp_up_s: int | None = Field(description="from the run's start until the last client began I/O")
    tail_s: int | None = Field(description="from the first client's last I/O to the run's end")
    stragglers: list[str]


class RunObserved(BaseModel):
    client: str
    read_bytes: int
    write_bytes: int
    read_ops: int
    write_ops: int
    bytes_per_s: float = Field(description="reads and writes, over the run's window")
    ops_per_s: float


class RunReport(BaseModel):
    run: RunPublic
    start: int
    end: int
    seconds: int
    tolerance_pct: float
    check_ops: bool
    verdict: str = Field(description="pass, fail, or 'no results' before any client results are imported")
    failed: list[str]
    clients: list[RunReportClient]
    total: RunReportTotal
    skew: RunReportSkew
    unreported_clients: list[str] = Field(description="clients seen on the wire with no imported result")
    observed: list[RunObserved] = Field(description="every client's reads and writes on the wire in the window")
    notes: list[str] = Field(default_factory=list)
    names: ClientNames


# ------------------------------------------------------------------ why is this client slow
class EvidenceStatistic(BaseModel):
    metric: str
    by: str | None = None
    where: dict[str, list[str]] = Field(default_factory=dict)


class DiagnosisReason(BaseModel):
    text: str
    statistic: EvidenceStatistic = Field(description="the statistic that shows it, to open in a worksheet")


class DiagnosisOp(BaseModel):
    op: str
    ops_per_s: float
    bytes_per_s: float
    inflight: float = Field(description="mean operations in flight (Little's law)")
    mean_latency_s: float | None
    others_latency_s: float | None = Field(description="the same op of the other clients, for comparison")


class DiagnosisDisk(BaseModel):
    disk: str
    ops_per_s: float
    inflight: float = Field(description="mean I/Os in flight (Little's law; iostat's aqu-sz)")
    mean_latency_s: float | None


class DiagnosisLink(BaseModel):
    host: str = Field(description="the server whose interface this is")
    interface: str = Field(description="the interface the server reaches the client through (its route's)")
    capacity_bytes_per_s: float | None = Field(
        description="the kernel's link speed, as bytes/s each way; null when it reports none (virtual links, "
                    "a link that is down)")
    client_in_bytes_per_s: float = Field(description="the client's socket bytes into the server through it")
    client_out_bytes_per_s: float = Field(description="the server's socket bytes to the client through it")
    link_in_bytes_per_s: float | None = Field(description="everything the interface received; null: not measured")
    link_out_bytes_per_s: float | None = Field(description="everything the interface sent; null: not measured")
    share: float | None = Field(description="the client's busier direction, as a share of the capacity; null: "
                                            "speed unknown")
    share_direction: Literal["in", "out"] = Field(description="which direction `share` is of (in: into the server)")
    utilisation: float | None = Field(description="the interface's busier direction, as a share of the capacity")
    utilisation_direction: Literal["in", "out"]


class ClientDiagnosis(BaseModel):
    client: str
    host: str | None
    start: int
    end: int
    tier: str
    verdict: str = Field(description="idle, network-bound, client-bound, server-latency-bound or healthy")
    reasons: list[DiagnosisReason]
    ops_per_s: float
    bytes_per_s: float
    inflight: float
    busy_fraction: float = Field(description="share of the points with an operation, from its first to its last")
    mean_io_bytes: float | None
    retransmits_per_s: float | None = Field(description="null when no TCP probe reported in the window")
    by_op: list[DiagnosisOp]
    size_mix: list[list[float]] = Field(description="[log2 size bucket, share of reads and writes]")
    traffic_share: float | None = Field(description="its NFS bytes, as a share of every client's on the server")
    wire_bytes_per_s: float | None = Field(description="its bytes on the wire, both ways; null with no socket probe")
    disks: list[DiagnosisDisk] = Field(description="the server's disks over the window, most I/Os in flight first")
    link: DiagnosisLink | None = Field(description="its share of the server's link; null when no socket rows name "
                                                   "the interface it is reached through")
    names: ClientNames


# ---- users, sessions, tokens, audit ------------------------------------------------

Role = Literal["viewer", "operator", "admin"]


class LoginRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # JSON as typed: no false for 0, no "1" for 1
    user: str = Field(min_length=1, max_length=64)
    password: str = Field(min_length=1, max_length=1024)


class LinkLoginRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # JSON as typed: no false for 0, no "1" for 1
    token: str = Field(min_length=1, max_length=256, description="The demo's one-click sign-in token")


class Me(BaseModel):
    user: str
    role: Role
    via: Literal["session", "token"]
    csrf_token: str | None = Field(None, description="Send it as X-CSRF-Token on POST/PUT/PATCH/DELETE (sessions)")
    expires_at: float | None = Field(None, description="Unix time the session ends unless used sooner (idle)")


class PasswordChange(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # JSON as typed: no false for 0, no "1" for 1
    current: str = Field(min_length=1, max_length=1024)
    new: str = Field(min_length=1, max_length=1024)


class UserPublic(BaseModel):
    name: str
    role: Role
    created_at: float
    disabled: bool


class UserList(BaseModel):
    users: list[UserPublic]


class UserCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # JSON as typed: no false for 0, no "1" for 1
    name: str = Field(min_length=1, max_length=64)
    role: Role
    password: str = Field(min_length=1, max_length=1024)


class UserUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # JSON as typed: no false for 0, no "1" for 1
    role: Role | None = None
    password: str | None = Field(None, min_length=1, max_length=1024)
    disabled: bool | None = None


class TokenPublic(BaseModel):
    id: int
    name: str
    scope: Literal["ingest", "metrics", "api"]
    role: Role | None = Field(None, description="api tokens act with this role")
    origin: Literal["api", "config", "local"] = Field(
        description="api: made by an admin; config: from the environment; local: a file in the data dir")
    created_at: float
    created_by: str
    last_used: float | None
    revoked_at: float | None
    revoked_by: str | None


class TokenList(BaseModel):
    tokens: list[TokenPublic]


class TokenCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # JSON as typed: no false for 0, no "1" for 1
    name: str = Field(min_length=1, max_length=64, description="Usually the agent's host name")
    scope: Literal["ingest", "metrics", "api"] = "ingest"
    role: Role | None = Field(None, description="Only for api tokens")


class TokenCreated(TokenPublic):
    secret: str = Field(description="Shown once; only its hash is kept")


class AuditEntry(BaseModel):
    id: int
    ts: float
    actor: str
    action: str
    target: str
    detail: str
    address: str


class AuditLog(BaseModel):
    entries: list[AuditEntry]


# ---- retention and deletion -----------------------------------------------------------
YEAR = 365 * 86400


class TierExtent(BaseModel):
    tier: Literal["second", "minute", "hour"]
    keep_s: int = Field(description="Seconds this tier is kept")
    rows: int
    oldest: int | None = Field(description="Oldest period stored (unix), None when empty")
    newest: int | None


class RetentionPublic(BaseModel):
    second: int = Field(description="Seconds the per-second tier is kept")
    minute: int = Field(description="Seconds the per-minute tier is kept")
    hour: int = Field(description="Seconds the per-hour tier is kept")
    set_by: str | None = Field(description="Who set it; None while it is the configured default (LOUPE_RETAIN_*)")
    set_at: float | None
    tiers: list[TierExtent]
    store_bytes: int


class RetentionUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # JSON as typed: no false for 0, no "1" for 1
    second: int = Field(ge=7200, le=10 * YEAR, description="At least 2 h: an hour of seconds must be rollable")
    minute: int = Field(ge=7200, le=10 * YEAR)
    hour: int = Field(ge=7200, le=10 * YEAR)

    @model_validator(mode="after")
    def coarser_kept_longer(self):
        if self.minute < self.second:
            raise ValueError("minute retention must be at least the second retention: minutes are made from seconds")
        if self.hour < self.minute:
            raise ValueError("hour retention must be at least the minute retention: hours are made from minutes")
        return self


class RetentionSet(RetentionPublic):
    pruned: dict[str, int] = Field(description="Rows the new retention removed at once, by table")


class DataDelete(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # JSON as typed: no false for 0, no "1" for 1
    host: str | None = Field(None, min_length=1, max_length=255, description="Only this host's data; all hosts if absent")
    start: int | None = Field(None, ge=0, description="First second deleted (unix); unbounded if absent")
    end: int | None = Field(None, ge=0, description="Second just after the range (unix); unbounded if absent")
    dry_run: bool = Field(False, description="Count what would go, delete nothing")

    @model_validator(mode="after")
    def something_named(self):
        if self.host is None and self.start is None and self.end is None:
            raise ValueError("name a host or a time range (start, end) to delete; to delete everything, "
                             "stop Loupe and remove its data directory")
        if self.start is not None and self.end is not None and self.start >= self.end:
            raise ValueError("start must be before end")
        return self


class RebuiltPeriod(BaseModel):
    tier: Literal["minute", "hour"]
    start: int


class DataDeleted(BaseModel):
    host: str | None
    start: int | None
    end: int | None
    dry_run: bool
    rows: dict[str, int] = Field(description="Rows deleted (or that would be), by table")
    total_rows: int
    rebuilt: list[RebuiltPeriod] = Field(description="Minutes and hours straddling an edge, rebuilt from the finer "
                                         "tier so their data outside the range stays; a straddling period whose "
                                         "finer tier is already pruned is deleted whole")
    bytes_before: int
    bytes_after: int


# ---- alerts and the event log ------------------------------------------------------------

DayName = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
HHMM = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"


class AlertRuleBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # JSON as typed: no false for 0, no "1" for 1
    name: str = Field(min_length=1, max_length=120)
    metric: str = Field(description="The statistic's metric, e.g. nfs.ops")
    where: dict[str, list[str]] = Field(default_factory=dict, description="Filters, as in a worksheet statistic")
    by: str | None = Field(None, max_length=64, description="Fire per element of this dimension (e.g. client: "
                           "\"any client above\"), each with its own state and events; absent: on the total. Each "
                           "second the busiest elements are checked (top_elements of the rule list), and at most "
                           "max_open of a rule's alerts are open at once")
    condition: Literal["above", "below"] = Field(description="Fire when the value exceeds or falls below threshold")
    threshold: float = Field(description="In the metric's unit (per second for rates)")
    hold_s: int = Field(300, ge=1, le=21600, description="The condition must hold this many seconds in a row")
    clear_s: int = Field(60, ge=1, le=21600, description="An open alert clears after this many seconds without it")
    repost_s: int = Field(0, ge=0, le=7 * 86400, description="While open, post again this often; 0: once")
    days: list[DayName] = Field(default_factory=lambda: ["mon", "tue", "wed", "thu", "fri", "sat", "sun"],
                                min_length=1, description="Fires only on these days")
    from_time: str | None = Field(None, pattern=HHMM, description="With to_time: fires only between them (HH:MM); "
                                  "a window past midnight (22:00-06:00) belongs to the day it starts")
    to_time: str | None = Field(None, pattern=HHMM)
    timezone: str | None = Field(None, max_length=64, description="IANA name for days and times; the server's "
                                 "local time if absent")
    webhook: str | None = Field(None, max_length=2000, description="http(s) URL that receives a JSON POST per event")
    secret: str | None = Field(None, max_length=200, description="Signs each post: X-Loupe-Signature: sha256=<HMAC "
                               "of the body>. On an update, absent keeps the one set and \"\" removes it")
    enabled: bool = True

    @model_validator(mode="after")
    def consistent(self):
        if not math.isfinite(self.threshold):
            raise ValueError("threshold must be a finite number")
        if (self.from_time is None) != (self.to_time is None):
            raise ValueError("from_time and to_time go together: give both or neither")
        if self.from_time is not None and self.from_time == self.to_time:
            raise ValueError("from_time and to_time are equal: the window would be empty (leave both out for all day)")
        if len(set(self.days)) != len(self.days):
            raise ValueError("days lists a day twice")
        if self.repost_s and self.repost_s < 60:
            raise ValueError("repost_s must be 0 (post once) or at least 60 seconds")
        if self.timezone is not None:
            try:
                ZoneInfo(self.timezone)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"unknown timezone {self.timezone!r}: use an IANA name like Europe/Berlin or UTC")
        if self.webhook is not None:
            u = urlsplit(self.webhook)
            if u.scheme not in ("http", "https") or not u.hostname:
                raise ValueError(f"webhook {self.webhook!r} is not an http:// or https:// URL with a host")
        return self


class AlertElementPublic(BaseModel):
    element: str = Field(description="The element of the rule's breakdown, e.g. a client address")
    since: float = Field(description="When its alert fired (unix seconds)")
    value: float | None = Field(description="Its newest evaluated second's value")


class AlertStatePublic(BaseModel):
    active: bool = Field(description="An alert of the rule is open: it fired and has not cleared")
    since: float | None = Field(description="When it fired (unix seconds); per element, the first still open")
    value: float | None = Field(description="The newest evaluated second's value; per element, that of the "
                                "busiest element checked (for a 'below' rule, the quietest)")
    checked_upto: int | None = Field(description="Seconds before this are evaluated (unix)")
    open_count: int = Field(description="Alerts of the rule open now (0 or 1 for a total)")
    open: list[AlertElementPublic] = Field(description="Per element: the open alerts, "
                                           "oldest first")
    value_element: str | None = Field(description="Per element: whose value `value` is")
    elements_seen: int | None = Field(description="Per element: elements of the breakdown in the newest "
                                      "evaluated seconds")
    withheld: int = Field(description="Per element: elements holding the condition long enough now but not "
                          "opened, since max_open alerts of the rule are open")
    withheld_total: int = Field(description="Per element: elements withheld so, each counted once per run, "
                                "since the rule was last saved")


class AlertRulePublic(BaseModel):
    id: str
    name: str
    metric: str
    where: dict[str, list[str]]
    by: str | None
    condition: Literal["above", "below"]
    threshold: float
    hold_s: int
    clear_s: int
    repost_s: int
    days: list[DayName]
    from_time: str | None
    to_time: str | None
    timezone: str | None
    webhook: str | None = Field(description="Shown in full to admins; others see only its scheme and host")
    has_secret: bool
    enabled: bool
    statistic: str = Field(description="The statistic in words")
    unit: str
    created: float
    created_by: str
    updated: float
    updated_by: str
    state: AlertStatePublic


class AlertRuleList(BaseModel):
    rules: list[AlertRulePublic]
    top_elements: int = Field(description="Per-element rules: the busiest elements checked each second")
    max_open: int = Field(description="Per-element rules: alerts of one rule open at once, at most")
    names: ClientNames


EventKind = Literal["alert.fired", "alert.reposted", "alert.cleared", "alert.test", "agent.connected",
                    "agent.disconnected"]


class EventPublic(BaseModel):
    id: int
    at: float = Field(description="When (unix seconds): for an alert, the end of the second that decided it")
    kind: EventKind
    subject: str = Field(description="The alert rule's id, or the agent's name")
    label: str = Field(description="The alert's or the agent's name")
    message: str
    value: float | None
    threshold: float | None
    opened_by: int | None = Field(description="For a repost or a clear: the event that fired the alert")
    dim: str | None = Field(None, description="A per-element rule's event: the dimension of its breakdown")
    element: str | None = Field(None, description="A per-element rule's event: which element (e.g. a client "
                                "address); null for a rule on the total")
    until: float | None = Field(None, description="For a fired alert: when it cleared; null while open")
    delivery: Literal["none", "pending", "delivered", "failed"] = Field(description="The webhook post's state")
    attempts: int
    next_attempt: float | None = Field(description="When a pending post is tried again")


class EventList(BaseModel):
    events: list[EventPublic] = Field(description="Newest first")
    active: int = Field(description="Alerts open now (each element of a per-element rule counts)")
    names: ClientNames


class EventDetail(BaseModel):
    event: EventPublic
    worksheet: str | None = Field(description="For an alert: the query string of a worksheet of its statistic "
                                  "(its element, per element) over the alert's time, e.g. "
                                  "'?range=17m&paused=1&at=1800000000&s=nfs.ops;w:op=read'; null for an agent's")
    names: ClientNames


class DeliveryPublic(BaseModel):
    event_id: int
    attempt: int
    at: float
    url: str = Field(description="Shown in full to admins; others see only its scheme and host")
    ok: bool
    status: int | None = Field(description="The receiver's HTTP status; null if none came")
    error: str | None
    ms: float


class DeliveryList(BaseModel):
    deliveries: list[DeliveryPublic]
# ---- client names ---------------------------------------------------------------------


class ClientNameEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # JSON as typed: no false for 0, no "1" for 1
    address: str = Field(max_length=100, description="The client's IPv4 or IPv6 address (kept in its canonical form)")
    name: str = Field(max_length=300, description="What to show for it (surrounding spaces are dropped)")

    @field_validator("address")
    @classmethod
    def _address(cls, v: str) -> str:
        a = canonical(v)
        if a is None:
            raise ValueError(f"{v!r} is not an IPv4 or IPv6 address")
        return a

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        v = v.strip()
        if problem := name_problem(v):
            raise ValueError(f"name {problem}")
        return v


class ClientNamesUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # JSON as typed: no false for 0, no "1" for 1
    entries: list[ClientNameEntry] = Field(max_length=MAX_TABLE, description="The whole table: it replaces the "
                                           "one in force")

    @model_validator(mode="after")
    def one_name_each(self):
        seen: dict[str, int] = {}
        for i, e in enumerate(self.entries):
            if e.address in seen:
                raise ValueError(f"entries.{seen[e.address]} and entries.{i} both name {e.address}: "
                                 "give each address one name")
            seen[e.address] = i
        return self


class ClientNamesTable(BaseModel):
    entries: list[ClientNameEntry] = Field(description="By address, IPv4 first")
    set_by: str | None = Field(description="Who saved it last; null while never saved")
    set_at: float | None


class NameSourcePublic(BaseModel):
    source: Literal["table", "hosts", "dns"]
    position: int | None = Field(description="1 for the source asked first; null when it is off")
    detail: str = Field(description="What it holds or asks, e.g. '/etc/hosts: 12 names'")
    problem: str | None = Field(None, description="Why it gives no names now, if it cannot")


class DnsCachePublic(BaseModel):
    names: int = Field(description="Addresses cached with a name")
    unnamed: int = Field(description="Addresses cached without one (not found, failed or timed out)")
    pending: int = Field(description="Lookups waiting or running")
    lookups: int
    found: int
    not_found: int
    timeouts: int
    failures: int
    dropped: int = Field(description="Lookups not queued because the queue was full (asked again later)")


class ClientNamesPolicy(BaseModel):
    order: list[Literal["table", "hosts", "dns"]] = Field(description="Sources asked in this order; the first name "
                                                          "wins (LOUPE_CLIENT_NAMES)")
    sources: list[NameSourcePublic]
    hosts_file: str
    dns_server: str | None = Field(description="The server reverse lookups ask, or system (the name servers of "
                                   "/etc/resolv.conf); null when dns is off")
    dns_timeout_s: float
    dns_ttl_s: int
    dns_negative_ttl_s: int
    dns_workers: int
    dns_cache: DnsCachePublic | None = Field(description="null when dns is off")


# ---- errors ---------------------------------------------------------------------------


class ErrorBody(BaseModel):
    detail: str = Field(description="What was wrong, in words")


class ValidationErrorItem(BaseModel):
    type: str
    loc: list[str | int] = Field(description="Where: body, query or path, then the field")
    msg: str


class ValidationErrorBody(BaseModel):
    detail: str = Field(description="The problems in one line, each naming its field")
    errors: list[ValidationErrorItem] = Field(description="The same, one per problem (at most 50)")
