"""OpenZFS's kstats under /proc/spl/kstat/zfs, turned into per-second rows (no root, no BPF).

* ``arcstats``: cumulative ARC counters. Rows of family ``zfs_arc`` per cache
  (``arc``, ``l2arc``) and result (``hit``, ``miss``, and ``iohit`` from OpenZFS
  2.2: a read that found its block already being read from disk), ``count`` =
  accesses in the second.
* ``<pool>/txgs``: the last ``zfs_txg_history`` transaction groups (default 100)
  with their times in ns. Each txg committed (state ``C``) since the last reading
  is one sync: rows of family ``zfs_txg`` per pool, ``count`` = syncs,
  ``lat_sum`` = their sync times (``stime``), ``hist.latency`` = their log2
  buckets, ``bytes`` = bytes they wrote (``nwritten``).

The families are a proposal the catalog does not have yet (see the report / the
README of this folder): ``zfs_arc`` (host, cache, result) and ``zfs_txg`` (host,
pool; latency histogram).

Like procfs, the first reading only primes, and a late reading (``n`` seconds
since the last) divides the ARC deltas by ``n``. Txg syncs are events, not rates:
each is reported once, in the second it was first seen.
"""

from __future__ import annotations

from pathlib import Path

from loupe.catalog import LATENCY

from ..source import Collected, status_entry

ARC_COUNTERS = {  # arcstats name -> (cache, result)
    "hits": ("arc", "hit"),
    "iohits": ("arc", "iohit"),
    "misses": ("arc", "miss"),
    "l2_hits": ("l2arc", "hit"),
    "l2_misses": ("l2arc", "miss"),
}


def parse_arcstats(text: str) -> dict[str, int]:
    """Named kstat (``name type data`` after the kstat header line) -> {name: value}."""
    out: dict[str, int] = {}
    lines = text.splitlines()
    try:
        start = next(i for i, ln in enumerate(lines) if ln.split()[:3] == ["name", "type", "data"]) + 1
    except StopIteration:
        raise ValueError("no 'name type data' header: not a named kstat") from None
    for ln in lines[start:]:
        f = ln.split()
        if len(f) == 3:
            try:
                out[f[0]] = int(f[2])
            except ValueError:
                continue  # a string kstat (type 7): not a counter
    return out


def parse_txgs(text: str) -> list[dict[str, int | str]]:
    """The txgs history table -> one dict per txg, keyed by the header's column names."""
    header: list[str] | None = None
    rows: list[dict[str, int | str]] = []
    for ln in text.splitlines():
        f = ln.split()
        if not f:
            continue
        if header is None:
            if f[0] == "txg":
                header = f
            continue
        if len(f) != len(header) or not f[0].isdigit():
            continue
        rows.append({k: (v if k == "state" else int(v)) for k, v in zip(header, f)})
    if header is None:
        raise ValueError("no 'txg ...' header line: not a txgs history")
    return rows


class ZfsSource:
    name = "zfs"
    families = ("zfs_arc", "zfs_txg")
    replayable = False

    def __init__(self, host: str, proc: str | Path = "/proc") -> None:
        self.host = host
        self.root = Path(proc) / "spl" / "kstat" / "zfs"
        self._arc: tuple[int, dict[str, int]] | None = None
        self._last_txg: dict[str, int] = {}  # pool -> highest committed txg already reported
        self._state, self._reason = "off", ""

    def status(self) -> list[dict]:
        if self._state == "off" and not self._reason and self._check():
            self._state = "active"  # present; the first collect says if it is readable
        return [status_entry(self.name, self.families, self._state, self._reason)]  # type: ignore[arg-type]

    def _check(self) -> bool:
        if not self.root.is_dir():
            self._state, self._reason = "off", f"no ZFS ({self.root} missing)"
            return False
        return True

    def pools(self) -> list[str]:
        return sorted(d.name for d in self.root.iterdir() if (d / "txgs").is_file())

    def collect(self, ts: int) -> Collected:
        if not self._check():
            self._arc, self._last_txg = None, {}
            return []
        notes: list[str] = []
        try:
            out: Collected = []
            arc = self._arc_rows(ts)
            if arc:
                out.append(("zfs_arc", self.host, arc))
            txg = self._txg_rows(notes)
            if txg:
                out.append(("zfs_txg", self.host, txg))
        except (OSError, ValueError) as e:
            self._state, self._reason, self._arc = "error", f"cannot read ZFS kstats: {e}", None
            return []
        self._state, self._reason = "active", "; ".join(notes)
        return out

    def _arc_rows(self, ts: int) -> list[dict]:
        cur = parse_arcstats((self.root / "arcstats").read_text())
        prev, self._arc = self._arc, (ts, cur)
        if prev is None:
            return []
        n = max(1, ts - prev[0])
        rows = []
        for name, (cache, result) in ARC_COUNTERS.items():
            if name not in cur or name not in prev[1]:
                continue  # iohits: OpenZFS 2.2+
            d = cur[name] - prev[1][name]
            if d > 0:  # < 0: the module was reloaded; this interval is unknowable
                rows.append({"dims": {"cache": cache, "result": result}, "count": round(d / n)})
        return [r for r in rows if r["count"]]

    def _txg_rows(self, notes: list[str]) -> list[dict]:
        rows = []
        pools = self.pools()
        empty = []
        for pool in pools:
            try:
                txgs = parse_txgs((self.root / pool / "txgs").read_text())
            except FileNotFoundError:
                continue  # exported meanwhile
            if not txgs:
                empty.append(pool)
            done = sorted((t for t in txgs if t.get("state") == "C"), key=lambda t: t["txg"])
            top = done[-1]["txg"] if done else None
            last = self._last_txg.get(pool)
            if top is not None:
                self._last_txg[pool] = max(top, last or 0)
            if last is None:
                continue  # first sight of this pool: prime
            new = [t for t in done if t["txg"] > last]
            if not new:
                continue
            hist: dict[str, int] = {}
            for t in new:
                b = str(LATENCY.bucket_of(int(t["stime"])))
                hist[b] = hist.get(b, 0) + 1
            rows.append({"dims": {"pool": pool}, "count": len(new), "lat_sum": sum(int(t["stime"]) for t in new),
                         "bytes": sum(int(t["nwritten"]) for t in new), "hist": {"latency": hist}})
        for gone in set(self._last_txg) - set(pools):
            del self._last_txg[gone]
        if empty and len(empty) == len(pools):
            notes.append("no txg history (zfs_txg_history=0?): txg sync times need "
                         "`echo 100 > /sys/module/zfs/parameters/zfs_txg_history`")
        return rows
