"""Rows collected column-wise from many generators, with histograms computed once for all.

Per second the synthetic NAS adds a few dozen batches of rows (one per workload and
operation). Building dicts, path strings and histograms per batch would cost more
than the model itself, so batches keep integer columns and scalars, rows without
events are dropped, and only then are strings and histograms made, in one
vectorised pass.
"""

from __future__ import annotations

import numpy as np

from loupe.catalog import SIZE

from . import hist
from .model import OP_NAMES, PROTOS, READ, SHARES, WRITE, Population, leaf_of, paths


class Table:
    """Rows gathered from many generators; their histograms are computed once, for all rows together.

    A row holds up to two kinds of events, e.g. cache hits and misses of the same file:
    ``n`` events with median latency ``lat`` and I/O size ``io``, and ``n2`` with ``lat2``
    and ``io2``. Latencies are lognormal with ``sigma``; I/Os fall evenly in the byte
    range ``off``. ``lat_sum`` (when >= 0) replaces the computed latency sum, for rows
    whose events were simulated one by one. Rows with no events are dropped before
    any string is made.
    """

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self.parts: list[dict] = []

    def add(self, dims: dict[str, np.ndarray | list | int | str], n, lat, io=0, *, n2=0, lat2=1.0, io2=None,
            sigma=0.5, off: tuple = (0, 0), lat_sum=-1) -> None:
        # Scalars stay scalars until the columns are joined: most arguments are per call, not per row.
        values = {"lat": lat, "io": io, "n2": n2, "lat2": lat2, "io2": io if io2 is None else io2,
                  "sigma": sigma, "a": off[0], "z": off[1], "lat_sum": lat_sum,
                  **{"dim." + k: v for k, v in dims.items()}}
        part = {k: np.asarray(v) if isinstance(v, (list, tuple)) else v for k, v in values.items()}
        part["n"] = np.asarray(n, dtype=np.int64)
        self.parts.append(part)

    def column(self, key: str, keep: np.ndarray | None = None) -> np.ndarray:
        values = [p[key] for p in self.parts]
        sizes = [len(p["n"]) for p in self.parts]
        if any(isinstance(v, np.ndarray) for v in values):
            c = np.concatenate([v if isinstance(v, np.ndarray) else np.full(k, v) for v, k in zip(values, sizes)])
        else:
            c = np.repeat(np.array(values), sizes)
        return c if keep is None else c[keep]

    def dims(self, keep: np.ndarray) -> list[dict]:
        cols = [self.column("dim." + name, keep).tolist() for name in self.names]
        return [dict(zip(self.names, vals)) for vals in zip(*cols)]

    def rows(self) -> list[dict]:
        if not self.parts:
            return []
        n, n2 = self.column("n"), self.column("n2")
        keep = np.flatnonzero(n + n2 > 0)
        n, n2 = n[keep], n2[keep]
        count = n + n2
        io, io2, sigma = (self.column(k, keep) for k in ("io", "io2", "sigma"))
        # Latency: both kinds in one vectorised call, then folded back onto their rows.
        two = np.flatnonzero(n2 > 0)
        lat, lat_sum = hist.lognormal(np.concatenate([n, n2[two]]),
                                      np.concatenate([self.column("lat", keep), self.column("lat2", keep)[two]]),
                                      np.concatenate([sigma, sigma[two]]))
        rows_n = len(keep)
        lat[two] += lat[rows_n:]
        lat_sum[two] += lat_sum[rows_n:]
        lat, lat_sum = lat[:rows_n], lat_sum[:rows_n]
        given = self.column("lat_sum", keep)
        lat_sum = np.where(given >= 0, given, lat_sum)
        # Size and offset only for rows that move data (reads and writes).
        size = np.zeros((rows_n, len(SIZE.buckets)), np.int64)
        for k, s in ((n, io), (n2, io2)):
            has = np.flatnonzero((s > 0) & (k > 0))
            np.add.at(size, (has, hist.bucket_index(s[has], SIZE)), k[has])
        moves = np.flatnonzero((io > 0) | (io2 > 0))
        off = hist.uniform_offsets(count[moves], self.column("a", keep)[moves], self.column("z", keep)[moves])
        lat_d, size_d = hist.sparse(lat, "latency"), hist.sparse(size, "size")
        off_d: list[dict] = [{}] * rows_n
        for i, d in zip(moves.tolist(), hist.sparse(off, "offset")):
            off_d[i] = d
        out = []
        for dims, c, b, ls, hl, hs, ho in zip(self.dims(keep), count.tolist(), (n * io + n2 * io2).tolist(),
                                              lat_sum.tolist(), lat_d, size_d, off_d):
            h = {"latency": hl}
            if hs:
                h["size"] = hs
            if ho:
                h["offset"] = ho
            out.append({"dims": dims, "count": c, "bytes": b, "lat_sum": ls, "hist": h})
        return out


_PROTO, _SHARE = np.array(PROTOS, dtype=object), np.array(SHARES, dtype=object)
_OP = np.array([OP_NAMES[False], OP_NAMES[True]], dtype=object)


class NfsTable(Table):
    """NFS rows; dimensions stay integers (client, op, share, file key) until the rows are kept."""

    def __init__(self, pop: Population) -> None:
        super().__init__(("client", "proto", "op", "share", "file"))
        self.pop = pop

    def io(self, client: np.ndarray, op: int, share: int, key: np.ndarray, n, lat, io: int = 0, *,
           leaf: np.ndarray | int | None = None, **kw) -> None:
        """Rows of one op for files ``key`` (leaf from the key unless given; leaf 0 is the directory)."""
        if leaf is None:
            leaf = leaf_of(key)
        self.add(dict(client=client, op=op, share=share, key=key, leaf=leaf), n, lat, io, **kw)

    def dims(self, keep: np.ndarray) -> list[dict]:
        pop = self.pop
        client, share = self.column("dim.client", keep), self.column("dim.share", keep)
        files = paths(share, self.column("dim.key", keep), self.column("dim.leaf", keep))
        return [{"client": c, "proto": p, "op": o, "share": s, "file": f} for c, p, o, s, f in zip(
            pop.ips[client].tolist(), _PROTO[pop.proto[client]].tolist(),
            _OP[pop.v4[client].astype(int), self.column("dim.op", keep)].tolist(), _SHARE[share].tolist(), files)]

    def per_client(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """ops, bytes read, bytes written per client."""
        size = self.pop.n
        if not self.parts:
            return np.zeros(size), np.zeros(size), np.zeros(size)
        client, op = self.column("dim.client"), self.column("dim.op")
        n, n2 = self.column("n"), self.column("n2")
        nbytes = n * self.column("io") + n2 * self.column("io2")
        return (np.bincount(client, n + n2, size), np.bincount(client, nbytes * (op == READ), size),
                np.bincount(client, nbytes * (op == WRITE), size))
