"""The ingest log: acknowledged batches, on disk before the ack, until the store has them.

An ingest is acknowledged once its rows are in this log and fsync'd; the rows then
wait in memory (the store's stage) and reach the DuckDB tables in one transaction a
second or so later. A DuckDB transaction costs a few milliseconds whatever its size,
so this turns one transaction per request into one per flush, and an ingest costs an
Arrow IPC write and an fsync. After a crash, records above the store's flushed LSN
are replayed.

Segment files ``<dir>/<first lsn>.log`` hold records::

    b"LPL1" | u32 header length | u64 body length | u32 crc32(header + body) | header | body

The header is JSON (``lsn``, ``seqs``, ``hosts``, ``seen``, ``parts``: [family, bytes]);
the body is one Arrow IPC stream per part. A record cut short or failing its CRC ends
its segment: it was being written when the process died, so it was never acknowledged.
"""

from __future__ import annotations

import json
import logging
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

log = logging.getLogger("loupe.store")

MAGIC = b"LPL1"
HEAD = struct.Struct("<4sIQI")


@dataclass
class Record:
    lsn: int
    seqs: dict[str, int]
    hosts: list[str]
    seen: float
    tables: dict[str, pa.Table]


def encode(lsn: int, seqs: dict[str, int], hosts: list[str], seen: float,
           tables: dict[str, pa.Table]) -> list[memoryview]:
    """One record as buffers to write in order (no copy of the Arrow bodies into one bytes)."""
    parts, bodies = [], []
    for fam, t in tables.items():
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, t.schema) as w:
            w.write_table(t)
        buf = sink.getvalue()
        parts.append([fam, buf.size])
        bodies.append(memoryview(buf))
    header = json.dumps(dict(lsn=lsn, seqs=seqs, hosts=sorted(hosts), seen=seen, parts=parts)).encode()
    crc = zlib.crc32(header)
    for b in bodies:
        crc = zlib.crc32(b, crc)
    return [memoryview(HEAD.pack(MAGIC, len(header), sum(len(b) for b in bodies), crc) + header), *bodies]


def read_segment(path: Path) -> tuple[list[Record], int, str | None]:
    """Records of one segment, the offset after the last good one, and why reading stopped early."""
    data = path.read_bytes()
    out: list[Record] = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < HEAD.size:
            return out, pos, f"a record header cut short at byte {pos}"
        magic, hl, bl, crc = HEAD.unpack_from(data, pos)
        if magic != MAGIC:
            return out, pos, f"no record at byte {pos}"
        start, end = pos + HEAD.size, pos + HEAD.size + hl + bl
        if end > len(data):
            return out, pos, f"a record cut short at byte {pos}"
        header, body = data[start : start + hl], data[start + hl : end]
        if zlib.crc32(body, zlib.crc32(header)) != crc:
            return out, pos, f"a record failing its checksum at byte {pos}"
        h = json.loads(header)
        tables, off = {}, 0
        for fam, n in h["parts"]:
            tables[fam] = pa.ipc.open_stream(pa.py_buffer(body[off : off + n])).read_all()
            off += n
        out.append(Record(h["lsn"], h["seqs"], h["hosts"], h["seen"], tables))
        pos = end
    return out, pos, None


class IngestLog:
    """Append, fsync, rotate at each flush, delete what the store has committed."""

    def __init__(self, directory: Path | str) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = None
        self._path: Path | None = None
        self._size = 0  # bytes of whole records in the open segment
        self.last_lsn = 0
        self._retired: list[tuple[Path, int]] = []  # closed segments and their last lsn

    def segments(self) -> list[Path]:
        return sorted(self.dir.glob("*.log"), key=lambda p: int(p.stem))

    def replay(self, after: int) -> list[Record]:
        """Every intact record with lsn > `after`. A damaged tail is cut off, so appends go after good records."""
        out: list[Record] = []
        for seg in self.segments():
            records, good, why = read_segment(seg)
            if why:
                log.warning("ingest log %s: %s; the rest of the segment (never acknowledged) is dropped", seg, why)
                with open(seg, "r+b") as f:
                    f.truncate(good)
            last = records[-1].lsn if records else int(seg.stem) - 1
            self.last_lsn = max(self.last_lsn, last)
            self._retired.append((seg, last))
            out += [r for r in records if r.lsn > after]
        self.last_lsn = max(self.last_lsn, after)
        return out

    def append(self, seqs: dict[str, int], hosts: set[str], seen: float, tables: dict[str, pa.Table]) -> int:
        """Write one record and fsync it; returns its lsn. Raises OSError (e.g. disk full) with nothing acknowledged."""
        lsn = self.last_lsn + 1
        bufs = encode(lsn, seqs, sorted(hosts), seen, tables)
        size = sum(len(b) for b in bufs)
        if self._fd is None:
            self._path = self.dir / f"{lsn:020d}.log"
            self._fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            self._size = 0
        try:
            while bufs:  # writev may write part of the record: go on from where it stopped
                n = os.writev(self._fd, bufs)
                while bufs and n >= len(bufs[0]):
                    n -= len(bufs[0])
                    bufs.pop(0)
                if bufs and n:
                    bufs[0] = bufs[0][n:]
            os.fdatasync(self._fd)
        except OSError:
            # The record was not acknowledged, and its frames will be sent again: it must not
            # be replayed. Cut it off, then go on in a new segment.
            try:
                os.ftruncate(self._fd, self._size)
            except OSError:
                log.error("ingest log %s: could not cut off a failed write; renaming the segment", self._path)
                os.rename(self._path, self._path.with_suffix(".failed"))
                self._path = self._path.with_suffix(".failed")
            self._close()
            raise
        self._size += size
        self.last_lsn = lsn
        return lsn

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._retired.append((self._path, self.last_lsn))
            self._fd, self._path = None, None

    def rotate(self) -> None:
        """Close the current segment: what the next flush commits can then be deleted whole."""
        self._close()

    def committed(self, lsn: int) -> None:
        """The store has every record up to `lsn`: delete the closed segments that hold nothing newer."""
        keep = []
        for path, last in self._retired:
            if last <= lsn:
                path.unlink(missing_ok=True)
            else:
                keep.append((path, last))
        self._retired = keep

    def close(self) -> None:
        self._close()
