"""The NFS wire probe: NFSv3 and NFSv4.x decoded from TCP port 2049 at tc.

Server-agnostic (knfsd, nfs-ganesha, anything speaking ONC RPC over TCP): the
kernel counts per client x proto x op x file handle with latency, size and
offset histograms (``nfswire.bpf.c``); this module turns handles into paths
with the name bindings the kernel hands over, and the rows into ``nfs`` frames.
"""

from __future__ import annotations

import logging
import os

import socket
import struct
from collections.abc import Iterable
from pathlib import Path

from loupe.catalog import FILE_OTHER

from ..bpf.libbpf import BpfError, BpfObject
from ..bpf.probe import BpfProbe, hist_row
from ..source import Collected
from .fhopen import CachedOpener, HandleOpener, why_off
from .names import Resolver
from .rows import FALLBACK_WAIT_S, RowTable
from .wire import (STATS, Bind, Config, DirChunk, DirKey, Key, Row, Val, client_addr, fh_hash, op_name,
                   parse_readdirplus, proto_name)

NFS_PORT = 2049
log = logging.getLogger("loupe.bpf")


def interfaces(sys: str | Path = "/sys") -> list[str]:
    """Every network interface of this namespace: NFS may arrive on any of them.
    Seeing a packet twice (bridge port and bridge) is harmless: a segment is
    decoded only once per flow."""
    try:
        return sorted(p.name for p in (Path(sys) / "class" / "net").iterdir())
    except OSError:
        return []


row = hist_row


def merge(rows: list[dict]) -> list[dict]:
    """One row per dims: two handles may show as the same file (a name seen as a
    derived hash before its real handle)."""
    out: dict[tuple, dict] = {}
    for r in rows:
        k = tuple(sorted(r["dims"].items()))
        m = out.get(k)
        if m is None:
            out[k] = r
            continue
        for f in ("count", "bytes", "lat_sum"):
            m[f] += r[f]
        for h, buckets in r["hist"].items():
            mh = m["hist"].setdefault(h, {})
            for b, c in buckets.items():
                mh[b] = mh.get(b, 0) + c
    return list(out.values())


# The decoder's losses, in its source's cost: records not decoded (a head whose rest was lost or
# came out of order: partial; a mark that made no sense: desync; a stream picked up again at a later
# record after a segment was missed, reordered or retransmitted: resync, whose records between are
# decoded only if the missed segment still comes, counted as refilled), replies whose call was not
# seen (unmatched), calls whose pending slot another took (overwritten) or that waited for a reply
# for longer than a minute (expired).
LOSSES = ("partial", "desync", "resync", "unmatched", "overwritten", "expired")


class NfsWireProbe(BpfProbe):
    name = "bpf.nfswire"
    families = ("nfs",)
    OBJECT = "nfswire.bpf.o"
    PROGRAMS = ()  # tc programs: attached per interface in prepare()
    DRAIN = ("binds", "dirs", "spill")  # and the counts, in place (drain_more)
    COUNTERS = ("drops", "other", "wire")

    def __init__(self, host: str, *, ifaces: Iterable[str] | None = None, port: int | None = None,
                 mount_port: int | None = None, exports: Iterable[str] | None = None, opener=None, **kw) -> None:
        """Unset arguments come from the agent's environment: LOUPE_NFSWIRE_IFACES and
        LOUPE_NFSWIRE_EXPORTS (comma-separated; an export is the path clients see, or
        ``client=server`` when the directory on this host is elsewhere), LOUPE_NFSWIRE_PORT
        (default 2049) and LOUPE_NFSWIRE_MOUNT_PORT (the MOUNT service's port, whose replies
        name NFSv3 export roots; 0 = not decoded). Files no binding names are opened by
        handle on this host (``fhopen``) unless ``opener`` is False or
        LOUPE_NFSWIRE_OPEN_BY_HANDLE=0; LOUPE_NFSWIRE_OPEN_RATE bounds those opens per
        second (default 200). ``opener`` may also be a callable: handle hash -> path."""
        super().__init__(host, **kw)
        env = os.environ.get
        if ifaces is None and env("LOUPE_NFSWIRE_IFACES"):
            ifaces = [i for i in env("LOUPE_NFSWIRE_IFACES", "").split(",") if i]
        if exports is None:
            exports = [e for e in env("LOUPE_NFSWIRE_EXPORTS", "").split(",") if e]
        exports = list(exports)
        self.ifaces = list(ifaces) if ifaces is not None else None
        self.port = port if port is not None else int(env("LOUPE_NFSWIRE_PORT") or NFS_PORT)
        self.mount_port = mount_port if mount_port is not None else int(env("LOUPE_NFSWIRE_MOUNT_PORT") or 0)
        self.by_handle: HandleOpener | None = None
        if opener is None:
            opener = self._handle_opener(exports, env("LOUPE_NFSWIRE_OPEN_BY_HANDLE", "1"),
                                         env("LOUPE_NFSWIRE_OPEN_RATE") or "200")
        self.resolver = Resolver([e.partition("=")[0] for e in exports], opener=opener or None)
        self.stats = dict.fromkeys(STATS, 0)  # cumulative, from the kernel's `wire` counters
        self.attached: list[str] = []
        self.table: RowTable | None = None

    def _handle_opener(self, exports: list[str], setting: str, rate: str) -> CachedOpener | None:
        try:
            per_second = float(rate)
        except ValueError:
            per_second = 0.0
        if not per_second > 0:
            raise ValueError(f"LOUPE_NFSWIRE_OPEN_RATE must be a number of opens a second above 0, not {rate!r}")
        why = "turned off (LOUPE_NFSWIRE_OPEN_BY_HANDLE=0)" if setting.lower() in ("0", "off", "no", "false") \
            else why_off()
        if why:
            self.notes.append(f"files no binding names show as fh:<hash>: open_by_handle_at {why}")
            return None
        self.by_handle = HandleOpener(exports)
        return CachedOpener(self.handle_bytes, self.by_handle, rate=per_second)

    def prepare(self, obj: BpfObject) -> None:
        if self.table is None and obj.has_map("rows"):  # a build before 2026-11-28 kept `counts`, a hash
            self.table = RowTable(obj)
        cfg, settings = Config(port=self.port, mount_port=self.mount_port), obj.map("settings")
        # an object built before a field was added takes the fields it knows (benchmarks compare builds)
        settings.update((0).to_bytes(4, "little"), bytes(cfg)[:settings.value_size])
        self.attached, missing = [], []
        for name in self.ifaces if self.ifaces is not None else interfaces():
            try:
                idx = _ifindex(name)
            except OSError:
                missing.append(name)
                continue
            obj.attach_tc("nfswire_ingress", idx, ingress=True)
            obj.attach_tc("nfswire_egress", idx, ingress=False)
            self.attached.append(name)
        if not self.attached:
            raise BpfError(f"no network interface to attach to (asked for {', '.join(missing) or 'all'})")
        if missing:
            self.notes.append(f"interfaces not found: {', '.join(missing)}")

    def _close_obj(self) -> None:
        if self.table is not None:
            self.table.close()
            self.table = None
        super()._close_obj()

    def drain_more(self) -> tuple[dict[str, list], float]:
        if self.table is None:  # an older build's hash map (benchmarks compare builds)
            if self.obj is None or not self.obj.has_map("counts"):
                return {}, 0.0
            m = self.obj.map("counts")
            old = [_as_row(kb, vb) for kb, vb in m.drain()]
            return {"counts": old}, len(old) / m.max_entries
        rows = self.table.drain()
        if self.table.why_no_grace and not any(n.startswith("counts read after") for n in self.notes):
            note = (f"counts read after a {FALLBACK_WAIT_S * 1000:.0f} ms wait, not an RCU grace period "
                    f"({self.table.why_no_grace}): an op being counted then could be lost")
            self.notes.append(note)
            self.reason = "; ".join(self.notes)
            log.warning("%s: %s", self.name, note)
        return {"counts": rows}, self.table.fill(len(rows))

    def close(self) -> None:
        super().close()
        if self.by_handle is not None:
            self.by_handle.close()  # its mount fds; reopened if the probe starts again

    def handle_bytes(self, h: int) -> bytes | None:
        """The handle whose hash is ``h``, when the kernel still has it."""
        if self.obj is None:
            return None
        v = self.obj.map("fhs").lookup(h.to_bytes(8, "little"))
        if v is None:
            return None
        return bytes(v[8:8 + v[0]])

    def decode(self, drained: dict[str, list[tuple[bytes, bytes]]], ts: int) -> Collected:
        for kb, vb in drained.get("binds", ()):
            b = Bind.from_buffer_copy(vb)
            name = bytes(b.name[:b.name_len]).decode("utf-8", "surrogateescape")
            self.resolver.bind(int.from_bytes(kb[:8], "little"), b.parent, name)
        for kb, vb in drained.get("dirs", ()):
            k, c = DirKey.from_buffer_copy(kb), DirChunk.from_buffer_copy(vb)
            for name, fh in parse_readdirplus(bytes(c.data[:c.len])):
                if name not in (".", ".."):
                    self.resolver.bind(fh_hash(fh), k.dir, name)
        w = drained.get("wire")
        if w:
            kept = min(len(STATS), len(w[0][1]) // 8)  # an older build keeps fewer counters
            vals = struct.unpack(f"<{kept}Q", w[0][1][:8 * kept])
            for n, v in zip(STATS, vals):
                self.stats[n] += v
        if self.by_handle is not None:
            self.by_handle.fs.sweep()  # mount fds idle too long are closed even when nothing asks
        rows = []
        counted = [(r.key, r) for r in drained.get("counts", ())]
        spilled = [(Key.from_buffer_copy(kb), Val.from_buffer_copy(vb)) for kb, vb in drained.get("spill", ())]
        for table, entries in (("counts", counted), ("spill", spilled)):
            for k, v in entries:
                if not v.count:
                    continue
                path = self.resolver.file(k.fh) if table == "counts" else ""
                rows.append(row({"client": client_addr(k.family, bytes(k.addr)), "proto": proto_name(k.proto),
                                 "op": op_name(k.proto, k.op), "share": self.resolver.share(path),
                                 "file": kept_file(table, path)}, v))
        return finish(rows, drained, self.host)

    def _cost(self, *args) -> dict[str, float]:
        """The BPF cost, and what the decoder lost since it started (LOSSES): a user comparing
        the wire with a benchmark sees whether the decoder missed anything; and the late
        segments it decoded into a resync's gap (refilled), which a resync no longer always loses."""
        cost = super()._cost(*args)
        cost.update({f"{n}_total": float(self.stats[n]) for n in LOSSES + ("refilled",)})
        return cost


def _as_row(kb: bytes, vb: bytes) -> Row:
    v = Val.from_buffer_copy(vb)
    r = Row(key=Key.from_buffer_copy(kb), count=v.count, lat_sum=v.lat_sum, bytes=v.bytes)
    r.lat[:], r.size[:], r.off[:] = v.lat[:], v.size[:], v.off[:]
    return r


def kept_file(table: str, path: str) -> str:
    """The file of an NFS probe's row from `table`. `spill` holds a client's ops past a full
    `counts` (a flood of new files), their file not kept: shown as the store shows the files it
    folds, FILE_OTHER, so a breakdown by file says it is approximate."""
    return path if table == "counts" else FILE_OTHER


def finish(rows: list[dict], drained: dict[str, list[tuple[bytes, bytes]]], host: str) -> Collected:
    """The nfs frame of an NFS probe (wire or knfsd): its rows, plus the `other` row
    when its counts map overflowed, merged and sorted."""
    if "other" in drained:
        o = Val.from_buffer_copy(drained["other"][0][1])
        if o.count:  # the counts map was full: totals kept, detail lost
            rows.append(row({"client": "(other)", "proto": "", "op": "other", "share": "", "file": ""}, o))
    rows = merge(rows)
    rows.sort(key=lambda r: tuple(r["dims"].values()))
    return [("nfs", host, rows)] if rows else []


def _ifindex(name: str) -> int:
    return socket.if_nametoindex(name)


__all__ = ["NfsWireProbe", "interfaces", "NFS_PORT"]
