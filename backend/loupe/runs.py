"""Benchmark runs: a named window of time, the clients' own results, and a report that checks
those results against what Loupe saw cross the wire in the same window.

Client results come as fio's JSON (``--output-format=json``; one client's, or ``fio --client``'s
``client_stats`` with a host name per client), as a simple JSON list, or as CSV with the header
``client,read_bytes,write_bytes,read_ops,write_ops[,create_ops,runtime]``. Bytes are payload bytes
(what NFS READ and WRITE carry); ops are reads and writes; creates are files created, checked
against the creates on the wire: NFSv3 CREATE, NFSv4 CREATE, and NFSv4 OPEN asking to create
(op ``open_create``, how an NFSv4 client creates a regular file; it counts whether or not the file
existed, as a create the client asked for).
"""

from __future__ import annotations

import csv
import io
import statistics
import time
from dataclasses import asdict, dataclass, field

from .catalog import METRICS
from .store.base import Statistic
from .timerange import choose_window

# The ops that create a file, each one create: NFSv3/NFSv4 CREATE, NFSv4 OPEN with OPEN4_CREATE.
CREATE_OPS = ("create", "open_create")

CSV_FIELDS = ("client", "read_bytes", "write_bytes", "read_ops", "write_ops", "create_ops", "runtime")
COUNTS = CSV_FIELDS[1:6]


class ResultsError(ValueError):
    """Client results that cannot be read; the message names the problem."""


class _Both:
    """Reads plus writes."""

    read_bytes: int
    write_bytes: int
    read_ops: int
    write_ops: int
    create_ops: int

    @property
    def bytes(self) -> int:
        return self.read_bytes + self.write_bytes

    @property
    def ops(self) -> int:
        return self.read_ops + self.write_ops


@dataclass
class ClientResult(_Both):
    client: str
    read_bytes: int = 0
    write_bytes: int = 0
    read_ops: int = 0
    write_ops: int = 0
    create_ops: int = 0
    runtime: float | None = None  # seconds the client itself measured, if it said


def _count(v, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or v != v:
        raise ResultsError(f"{what}: expected a count >= 0, got {v!r}")
    return int(v)


def _seconds(v, what: str) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < float("inf"):
        raise ResultsError(f"{what}: expected seconds >= 0, got {v!r}")
    return float(v) or None


def _fio_dir(job: dict, d: str, where: str) -> tuple[int, int, float]:
    x = job.get(d) or {}
    if not isinstance(x, dict):
        raise ResultsError(f"{where}.{d}: expected an object")
    if "io_bytes" not in x and x:
        raise ResultsError(f"{where}.{d}: no io_bytes (fio 3.x JSON output is needed)")
    return (_count(x.get("io_bytes", 0), f"{where}.{d}.io_bytes"),
            _count(x.get("total_ios", 0), f"{where}.{d}.total_ios"),
            _count(x.get("runtime", 0), f"{where}.{d}.runtime") / 1000.0)


def _fio_sum(jobs: list, client: str, where: str, engine: str | None = None) -> ClientResult:
    """`jobs` summed; `engine`: the report's global ioengine, unless a job names its own."""
    r = ClientResult(client)
    runtime = 0.0
    for i, job in enumerate(jobs):
        if not isinstance(job, dict):
            raise ResultsError(f"{where}[{i}]: expected an object")
        rb, ro, rt = _fio_dir(job, "read", f"{where}[{i}]")
        wb, wo, wt = _fio_dir(job, "write", f"{where}[{i}]")
        opts = job.get("job options")
        here = (opts.get("ioengine") if isinstance(opts, dict) else None) or engine
        if here == "filecreate":  # each I/O is one file created; its "bytes" are never written
            r.create_ops += ro + wo
        else:
            r.read_bytes += rb
            r.read_ops += ro
            r.write_bytes += wb
            r.write_ops += wo
        runtime = max(runtime, rt, wt)
    r.runtime = runtime or None
    return r


def parse_fio(doc: dict, client: str | None = None) -> list[ClientResult]:
    """fio --output-format=json. ``client_stats`` (fio --client) gives one result per host name
    (its "All clients" summary is skipped); otherwise ``jobs`` are summed as `client`'s. A job of
    fio's filecreate engine counts its I/Os as files created, and no bytes."""
    if not isinstance(doc, dict):
        raise ResultsError("fio report: expected a JSON object")
    glob = doc.get("global options")
    engine = glob.get("ioengine") if isinstance(glob, dict) else None
    stats = doc.get("client_stats")
    if stats:
        if not isinstance(stats, list):
            raise ResultsError("fio report: client_stats is not a list")
        by_host: dict[str, list] = {}
        for i, s in enumerate(stats):
            if not isinstance(s, dict) or not isinstance(s.get("hostname"), str):
                raise ResultsError(f"fio report: client_stats[{i}] has no hostname")
            if s.get("jobname") == "All clients":
                continue
            by_host.setdefault(s["hostname"], []).append(s)
        return [_fio_sum(js, host, f"client_stats({host})", engine) for host, js in by_host.items()]
    jobs = doc.get("jobs")
    if not isinstance(jobs, list) or not jobs:
        raise ResultsError("fio report: no jobs (run fio with --output-format=json)")
    if not client:
        raise ResultsError("fio report of one machine: say which client address it is (client=...)")
    return [_fio_sum(jobs, client, "jobs", engine)]


def parse_simple(rows) -> list[ClientResult]:
    """[{"client": "10.0.0.7", "read_bytes": ..., "write_bytes": ..., "read_ops": ..., "write_ops": ...,
    "create_ops": ...?, "runtime": seconds?}, ...]"""
    if not isinstance(rows, list) or not rows:
        raise ResultsError("clients: expected a non-empty list of per-client results")
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ResultsError(f"clients[{i}]: expected an object")
        unknown = set(row) - set(CSV_FIELDS)
        if unknown:
            raise ResultsError(f"clients[{i}]: unknown field(s) {', '.join(sorted(unknown))}; "
                               f"known: {', '.join(CSV_FIELDS)}")
        c = row.get("client")
        if not isinstance(c, str) or not c.strip():
            raise ResultsError(f"clients[{i}].client: expected the client's address")
        rt = row.get("runtime")
        out.append(ClientResult(
            c.strip(), *(_count(row.get(k, 0), f"clients[{i}].{k}") for k in COUNTS),
            runtime=None if rt in (None, "") else _seconds(rt, f"clients[{i}].runtime")))
    return _unique(out)


def parse_csv(text: str) -> list[ClientResult]:
    rows = list(csv.DictReader(io.StringIO(text)))
    if not rows:
        raise ResultsError(f"CSV: no rows; the header is {','.join(CSV_FIELDS)}")
    missing = [f for f in CSV_FIELDS[:5] if f not in rows[0]]
    if missing:
        raise ResultsError(f"CSV: header lacks {', '.join(missing)}; expected {','.join(CSV_FIELDS)}")
    parsed = []
    for n, r in enumerate(rows, start=2):
        row = {"client": r["client"]}
        for k in CSV_FIELDS[1:]:
            v = (r.get(k) or "").strip()
            if v == "" and k in ("runtime", "create_ops"):
                continue
            try:
                row[k] = float(v) if k == "runtime" else int(v or 0)
            except ValueError:
                raise ResultsError(f"CSV line {n}: {k} is not a number: {v!r}") from None
        parsed.append(row)
    return parse_simple(parsed)


def _unique(results: list[ClientResult]) -> list[ClientResult]:
    seen = set()
    for r in results:
        if r.client in seen:
            raise ResultsError(f"client {r.client} appears twice")
        seen.add(r.client)
    return results


# ------------------------------------------------------------------ the report
@dataclass
class Wire(_Both):
    """What the server saw of one client in the run's window."""

    read_bytes: int = 0
    write_bytes: int = 0
    read_ops: int = 0
    write_ops: int = 0
    first: int | None = None  # first and last second with a read, write or create, unix seconds
    last: int | None = None
    create_ops: int = 0


@dataclass
class ClientRow:
    client: str
    reported: dict
    wire: dict
    bytes_agreement_pct: float | None
    ops_agreement_pct: float | None
    creates_agreement_pct: float | None
    reported_bytes_per_s: float
    wire_bytes_per_s: float
    reported_ops_per_s: float
    wire_ops_per_s: float
    cache_read_bytes: int  # reads the client reported beyond what crossed the wire
    start_offset_s: int | None
    end_offset_s: int | None
    straggler: bool
    passed: bool
    reasons: list[str] = field(default_factory=list)


def _pct(wire: int, reported: int) -> float | None:
    return None if reported == 0 else 100.0 * wire / reported


def build_report(start: int, end: int, results: list[ClientResult], wire: dict[str, Wire], *,
                 tolerance_pct: float, check_ops: bool = False) -> dict:
    """Client-reported vs wire-observed, per client and in total, for the window [start, end).

    A client passes when its wire bytes are within `tolerance_pct` of what it reported (and its
    ops too, with `check_ops`: NFS splits an I/O larger than rsize/wsize into several ops), and
    its creates, when it reported any (a create is one call whatever the client)."""
    secs = max(1, end - start)
    tol = tolerance_pct / 100.0
    lasts = [w.last for w in wire.values() if w.last is not None]
    median_last = statistics.median(lasts) if lasts else None
    late = max(2, secs // 20)  # a straggler ends this long after the median client
    rows = []
    for r in sorted(results, key=lambda x: x.client):
        w = wire.get(r.client, Wire())
        reasons = []
        bp, op, cp = _pct(w.bytes, r.bytes), _pct(w.ops, r.ops), _pct(w.create_ops, r.create_ops)
        ok = True
        for name, p, wv, rv, on in (("bytes", bp, w.bytes, r.bytes, True), ("ops", op, w.ops, r.ops, check_ops),
                                    ("creates", cp, w.create_ops, r.create_ops, r.create_ops > 0)):
            if not on:
                continue
            if p is None:
                if wv:
                    ok = False
                    reasons.append(f"reported no {name}, the wire carried {wv:,}")
            elif abs(p / 100.0 - 1) > tol:
                ok = False
                reasons.append(f"wire {name} are {p:.1f} % of reported ({wv:,} of {rv:,}), "
                               f"outside ±{tolerance_pct:g} %")
        if w.bytes == 0 and w.ops == 0 and w.create_ops == 0 and (r.bytes or r.create_ops):
            reasons.append("no NFS reads, writes or creates from this address in the window" if r.create_ops
                           else "no NFS reads or writes from this address in the window")
        cache = max(0, r.read_bytes - w.read_bytes)
        if cache and r.read_bytes and cache / r.read_bytes > tol:
            reasons.append(f"{cache:,} reported read bytes never reached the server "
                           "(client cache hits, or an overstated report)")
        strag = w.last is not None and median_last is not None and w.last - median_last > late
        if strag:
            reasons.append(f"straggler: its last I/O was {w.last - median_last:.0f} s after the median client's")
        rows.append(ClientRow(
            client=r.client, reported=dict({k: v for k, v in asdict(r).items() if k != "client"}, bytes=r.bytes,
                                           ops=r.ops),
            wire=dict(asdict(w), bytes=w.bytes, ops=w.ops), bytes_agreement_pct=bp, ops_agreement_pct=op,
            creates_agreement_pct=cp, reported_bytes_per_s=r.bytes / secs, wire_bytes_per_s=w.bytes / secs,
            reported_ops_per_s=r.ops / secs, wire_ops_per_s=w.ops / secs, cache_read_bytes=cache,
            start_offset_s=None if w.first is None else w.first - start,
            end_offset_s=None if w.last is None else end - 1 - w.last,
            straggler=strag, passed=ok, reasons=reasons))
    rep_b = sum(r.bytes for r in results)
    rep_o = sum(r.ops for r in results)
    wire_b = sum(wire.get(r.client, Wire()).bytes for r in results)
    wire_o = sum(wire.get(r.client, Wire()).ops for r in results)
    rep_c = sum(r.create_ops for r in results)
    wire_c = sum(wire.get(r.client, Wire()).create_ops for r in results)
    firsts = [w.first for w in wire.values() if w.first is not None]
    unreported = sorted(c for c, w in wire.items() if c not in {r.client for r in results} and w.bytes)
    if not results:
        verdict = "no results"
    else:
        verdict = "pass" if all(x.passed for x in rows) else "fail"
    return dict(
        start=start, end=end, seconds=secs, tolerance_pct=tolerance_pct, check_ops=check_ops, verdict=verdict,
        failed=[x.client for x in rows if not x.passed],
        clients=[asdict(x) for x in rows],
        total=dict(reported_bytes=rep_b, wire_bytes=wire_b, reported_ops=rep_o, wire_ops=wire_o,
                   bytes_agreement_pct=_pct(wire_b, rep_b), ops_agreement_pct=_pct(wire_o, rep_o),
                   reported_creates=rep_c, wire_creates=wire_c, creates_agreement_pct=_pct(wire_c, rep_c),
                   reported_bytes_per_s=rep_b / secs, wire_bytes_per_s=wire_b / secs),
        skew=dict(
            start_spread_s=max(firsts) - min(firsts) if firsts else None,
            end_spread_s=max(lasts) - min(lasts) if lasts else None,
            # from the run's start until every client is busy, and from the first to finish to the last
            ramp_up_s=max(firsts) - start if firsts else None,
            tail_s=end - 1 - min(lasts) if lasts else None,
            stragglers=[x.client for x in rows if x.straggler]),
        unreported_clients=unreported,
        # every client seen on the wire in the window, reported or not (what two runs are compared by)
        observed=[dict(client=c, read_bytes=w.read_bytes, write_bytes=w.write_bytes, read_ops=w.read_ops,
                       write_ops=w.write_ops, bytes_per_s=w.bytes / secs, ops_per_s=w.ops / secs)
                  for c, w in sorted(wire.items()) if w.bytes or w.ops],
    )


REPORT_CSV_FIELDS = ("client", "reported_bytes", "wire_bytes", "bytes_agreement_pct", "reported_ops", "wire_ops",
                     "ops_agreement_pct", "reported_creates", "wire_creates", "creates_agreement_pct",
                     "reported_bytes_per_s", "wire_bytes_per_s", "cache_read_bytes",
                     "start_offset_s", "end_offset_s", "straggler", "passed", "reasons")


def report_csv(rep: dict) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(REPORT_CSV_FIELDS)
    for c in rep["clients"]:
        w.writerow([c["client"], c["reported"]["bytes"], c["wire"]["bytes"], _fmt(c["bytes_agreement_pct"]),
                    c["reported"]["ops"], c["wire"]["ops"], _fmt(c["ops_agreement_pct"]),
                    c["reported"]["create_ops"], c["wire"]["create_ops"], _fmt(c["creates_agreement_pct"]),
                    _fmt(c["reported_bytes_per_s"]), _fmt(c["wire_bytes_per_s"]), c["cache_read_bytes"],
                    c["start_offset_s"], c["end_offset_s"], c["straggler"], c["passed"], "; ".join(c["reasons"])])
    t = rep["total"]
    w.writerow(["(total)", t["reported_bytes"], t["wire_bytes"], _fmt(t["bytes_agreement_pct"]), t["reported_ops"],
                t["wire_ops"], _fmt(t["ops_agreement_pct"]), t["reported_creates"], t["wire_creates"],
                _fmt(t["creates_agreement_pct"]), _fmt(t["reported_bytes_per_s"]),
                _fmt(t["wire_bytes_per_s"]), "", "", "", "", rep["verdict"] == "pass", ""])
    return buf.getvalue()


def _fmt(v: float | None) -> str:
    return "" if v is None else f"{v:.3f}"


def observe(store, start: int, end: int, *, retain: dict[str, int], host: str | None = None,
            now: int | None = None) -> tuple[dict[str, Wire], list[str]]:
    """Each client's NFS reads and writes in [start, end), from the store; and notes on how exact
    that is (a window beyond the seconds tier is widened to whole minutes or hours)."""
    now = int(time.time()) if now is None else now
    base = (("host", (host,)),) if host else ()
    whole = choose_window(start, end, now=now, retain=retain, whole=True)
    notes = []
    if (whole.start, whole.end) != (start, end):
        notes.append(f"the run is older than the seconds tier: counted over {whole.tier}s "
                     f"[{whole.start}, {whole.end}), wider than the run")
    wire: dict[str, Wire] = {}
    rw = (("read", ("read",)), ("write", ("write",)))
    for metric, attr, groups in (("nfs.bytes", "bytes", rw), ("nfs.ops", "ops", (*rw, ("create", CREATE_OPS)))):
        for name, ops in groups:
            st = Statistic(METRICS[metric], "client", tuple(sorted(base + (("op", ops),))))
            agg = store.aggregate(st, whole, 100000)
            for key, mean in zip(agg.keys, agg.key_means):
                setattr(wire.setdefault(key, Wire()), f"{name}_{attr}", round(mean * whole.seconds))
    # first and last second with I/O (reads, writes, creates), per client (per step when the run is long)
    step = max(1, -(-(end - start) // 3600))
    series = choose_window(start, end, now=now, retain=retain, step=step)
    st = Statistic(METRICS["nfs.ops"], "client", tuple(sorted(base + (("op", ("read", "write", *CREATE_OPS)),))))
    agg = store.aggregate(st, series, 100000)
    for key, vals in zip(agg.keys, agg.values):
        busy = [i for i, v in enumerate(vals) if v > 0]
        if busy:
            w = wire.setdefault(key, Wire())
            w.first, w.last = series.start + busy[0] * series.step, series.start + busy[-1] * series.step
    return wire, notes
