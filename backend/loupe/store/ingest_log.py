"""The ingest log: acknowledged batches, on disk before the ack, until the store has them.

An ingest is acknowledged once its rows are in this log and fsync'd; the rows then
wait in memory (the store's stage) and reach the DuckDB tables in one transaction a
second or so later. A DuckDB transaction costs a few milliseconds whatever its size,
so this turns one transaction per request into one per flush, and an ingest costs an
Arrow IPC write and an fsync. After a crash, records above the store's flushed LSN
are replayed.

Segment files ``<dir>/<first lsn>.log`` hold records::

    b"LPL2" | u32 header length | u64 body length | u32 crc32c(header + body) | header | body

CRC-32C is computed by the CPU's instruction (SSE 4.2, ARMv8 CRC) where it has one: 0.07 ms
for a 1.5 MB record here, where zlib's CRC-32 took 1.1 ms, most of a 10,000-row ingest's CPU
before its fsync. Records of the previous format (``LPL1``, zlib's CRC-32), left by an older
server that stopped before flushing them, are still read.

The header is JSON (``lsn``, ``seqs``, ``hosts``, ``seen``, ``parts``: [family, bytes]);
the body is one Arrow IPC stream per part, the store's converted rows. A version-3 request
is logged as it came instead (``keep``: the [source, seq, ts] of the frames it stored, one
part ``v3``: the request's body), so the body's fdatasync runs while the store converts it
(:class:`Syncer`); replay decodes and converts it again. A record cut short or failing its
CRC ends its segment: it was being written when the process died, so it was never acknowledged.

Committed segments are reused, as PostgreSQL recycles WAL segments: the next segment
overwrites one from byte 0. Overwriting blocks a file already has leaves fdatasync no
metadata to journal (on ext4 it halves the sync of a 1.5 MB record, 3.3 to 1.6 ms here).
A reused file keeps its name (the first LSN it was created with), and what follows its
new records is old ones; so within a segment LSNs must run on by one, and the first
record out of sequence ends it. Old records are at or below the store's flushed LSN
anyway, which replay skips.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import json
import logging
import os
import platform
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import crc32c
import pyarrow as pa

log = logging.getLogger("loupe.store")

MAGIC = b"LPL2"
CHECKSUMS = {MAGIC: crc32c.crc32c, b"LPL1": zlib.crc32}  # magic -> checksum(data, running value)
HEAD = struct.Struct("<4sIQI")
SPARES = 2  # committed segments kept for reuse; more are deleted


@dataclass
class Record:
    lsn: int
    seqs: dict[str, int]
    hosts: list[str]
    seen: float
    tables: dict[str, pa.Table]  # empty for a request's body
    body: bytes | None = None  # a version-3 request's body, as it came
    keep: list[list] | None = None  # the body's stored frames: [source, seq, ts]


class Scratch:
    """The memory a log's records are written into, kept from one record to the next. Written
    into a fresh growing buffer, a 10,000-row record faulted its pages in anew each time: its
    encoding took 1.0-1.3 ms at the 99th percentile against 0.4 reused, the median 0.22 either
    way (ad hoc, 300 paced bodies). A record larger than KEEP gets memory of its own."""

    KEEP = 16 << 20

    def __init__(self) -> None:
        self._buf: pa.Buffer | None = None

    def get(self, size: int) -> pa.Buffer:
        if size > self.KEEP:
            return pa.allocate_buffer(size)
        if self._buf is None or self._buf.size < size:
            self._buf = pa.allocate_buffer(min(self.KEEP, max(size, 2 * (self._buf.size if self._buf else 0))))
        return self._buf


def _ipc_size(t: pa.Table) -> int:
    sink = pa.MockOutputStream()
    with pa.ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    return sink.size()


def encode(lsn: int, seqs: dict[str, int], hosts: list[str], seen: float,
           tables: dict[str, pa.Table], scratch: Scratch | None = None) -> list[memoryview]:
    """One record as buffers to write in order (no copy of the Arrow bodies into one bytes). The
    bodies are views of `scratch`'s memory, valid until the next record is encoded into it."""
    sizes = [_ipc_size(t) for t in tables.values()]
    buf = (scratch or Scratch()).get(sum(sizes))
    sink, view = pa.FixedSizeBufferWriter(buf), memoryview(buf)
    parts, bodies, at = [], [], 0
    for (fam, t), size in zip(tables.items(), sizes):
        with pa.ipc.new_stream(sink, t.schema) as w:
            w.write_table(t)
        if sink.tell() != at + size:  # the writer is deterministic: this would be a pyarrow bug
            raise RuntimeError(f"ingest log: {fam}'s IPC stream took {sink.tell() - at} bytes, sized {size}")
        parts.append([fam, size])
        bodies.append(view[at:at + size])
        at += size
    return _framed(lsn, seqs, hosts, seen, parts, bodies)


def _framed(lsn: int, seqs: dict[str, int], hosts: list[str], seen: float, parts: list,
            bodies: list, **extra) -> list[memoryview]:
    header = json.dumps(dict(lsn=lsn, seqs=seqs, hosts=sorted(hosts), seen=seen, parts=parts, **extra)).encode()
    crc = crc32c.crc32c(header)
    for b in bodies:
        crc = crc32c.crc32c(b, crc)
    return [memoryview(HEAD.pack(MAGIC, len(header), sum(len(b) for b in bodies), crc) + header), *bodies]


def encode_body(lsn: int, seqs: dict[str, int], hosts: list[str], seen: float, keep: list[list],
                body: bytes) -> list[memoryview]:
    """A version-3 request's record: its body as sent, and which of its frames were stored (with
    the second each was stored at: the server may have shifted a skewed agent's clock)."""
    return _framed(lsn, seqs, hosts, seen, [["v3", len(body)]], [memoryview(body)], keep=keep)


def read_segment(path: Path) -> tuple[list[Record], int, str | None]:
    """Records of one segment, the offset after the last good one, and why reading stopped
    early; a record out of LSN sequence (the old content of a reused segment) ends it quietly."""
    data = path.read_bytes()
    out: list[Record] = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < HEAD.size:
            return out, pos, f"a record header cut short at byte {pos}"
        magic, hl, bl, crc = HEAD.unpack_from(data, pos)
        checksum = CHECKSUMS.get(magic)
        if checksum is None:
            return out, pos, f"no record at byte {pos}"
        start, end = pos + HEAD.size, pos + HEAD.size + hl + bl
        if end > len(data):
            return out, pos, f"a record cut short at byte {pos}"
        header, body = data[start : start + hl], data[start + hl : end]
        if checksum(body, checksum(header)) != crc:
            return out, pos, f"a record failing its checksum at byte {pos}"
        h = json.loads(header)
        if out and h["lsn"] != out[-1].lsn + 1:
            return out, pos, None
        if "keep" in h:
            out.append(Record(h["lsn"], h["seqs"], h["hosts"], h["seen"], {}, body, h["keep"]))
        else:
            tables, off = {}, 0
            for fam, n in h["parts"]:
                tables[fam] = pa.ipc.open_stream(pa.py_buffer(body[off : off + n])).read_all()
                off += n
            out.append(Record(h["lsn"], h["seqs"], h["hosts"], h["seen"], tables))
        pos = end
    return out, pos, None


class _Aiocb(ctypes.Structure):
    """glibc's struct aiocb on LP64 (x86_64, aarch64): 168 bytes."""

    _fields_ = [("fildes", ctypes.c_int), ("lio_opcode", ctypes.c_int), ("reqprio", ctypes.c_int),
                ("buf", ctypes.c_void_p), ("nbytes", ctypes.c_size_t), ("sigevent", ctypes.c_byte * 64),
                ("next_prio", ctypes.c_void_p), ("abs_prio", ctypes.c_int), ("policy", ctypes.c_int),
                ("error_code", ctypes.c_int), ("return_value", ctypes.c_ssize_t), ("offset", ctypes.c_int64),
                ("reserved", ctypes.c_byte * 32)]


SIGEV_NOTIFY, SIGEV_NONE = 12, 1  # sigev_notify's offset in struct sigevent (after sigval, sigev_signo)


@functools.cache
def _glibc_aio() -> ctypes.CDLL | None:
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "aarch64") \
            or ctypes.sizeof(_Aiocb) != 168 or platform.libc_ver()[0] != "glibc":
        return None
    for name in (None, "librt.so.1"):  # the process's own libc; glibc before 2.34 kept aio in librt
        try:
            lib = ctypes.CDLL(name, use_errno=True)
            lib.aio_fsync, lib.aio_error, lib.aio_return, lib.aio_suspend  # noqa: B018
            return lib
        except (OSError, AttributeError, TypeError):
            continue
    return None


class Syncer:
    """fdatasync begun now and waited for later, so a record's sync runs while the store converts
    the request. A Python thread does it badly: it needs the GIL to begin the sync, which the
    converting thread holds (tried: a log thread hid a third of a 10k-row body's log and sync).
    glibc's POSIX AIO does: aio_fsync(O_DSYNC) queues fdatasync to glibc's own thread. Without
    glibc's AIO (another libc, another ABI) the sync runs at once, as before."""

    def __init__(self) -> None:
        self.lib = _glibc_aio()

    @property
    def overlaps(self) -> bool:
        return self.lib is not None

    def start(self, fd: int) -> Callable[[], None]:
        """Begin syncing `fd`'s data; returns the wait, which raises OSError if the sync failed."""
        if self.lib is None:
            os.fdatasync(fd)
            return lambda: None
        cb = _Aiocb(fildes=fd)
        cb.sigevent[SIGEV_NOTIFY] = SIGEV_NONE  # no signal at completion
        if self.lib.aio_fsync(os.O_DSYNC, ctypes.byref(cb)) != 0:
            err = ctypes.get_errno()
            if err in (errno.EAGAIN, errno.ENOSYS):  # no room in glibc's queue: sync here
                os.fdatasync(fd)
                return lambda: None
            raise OSError(err, f"aio_fsync: {os.strerror(err)}")

        def wait() -> None:
            ref, waiting = ctypes.byref(cb), (ctypes.POINTER(_Aiocb) * 1)(ctypes.pointer(cb))
            while (err := self.lib.aio_error(ref)) == errno.EINPROGRESS:
                self.lib.aio_suspend(waiting, 1, None)  # the GIL is released while it waits
            self.lib.aio_return(ref)
            if err:
                raise OSError(err, f"fdatasync: {os.strerror(err)}")

        return wait


class IngestLog:
    """Append, fsync, rotate at each flush, reuse (or delete) what the store has committed."""

    def __init__(self, directory: Path | str) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = None
        self._path: Path | None = None
        self._size = 0  # bytes of whole records in the open segment
        self.last_lsn = 0
        self._retired: list[tuple[Path, int]] = []  # closed segments and their last lsn
        self._spares: list[Path] = []  # committed segments, to be overwritten next
        self._scratch = Scratch()
        self._syncer = Syncer()

    def segments(self) -> list[Path]:
        return sorted(self.dir.glob("*.log"), key=lambda p: int(p.stem))

    def discard(self) -> None:
        """Delete every segment (the store they belonged to is gone)."""
        segs = self.segments()
        if segs:
            log.warning("ingest log %s: %d segments of an earlier store deleted", self.dir, len(segs))
        for seg in segs:
            seg.unlink()

    def replay(self, after: int) -> list[Record]:
        """Every intact record with lsn > `after`, in lsn order."""
        out: list[Record] = []
        for seg in self.segments():
            records, good, why = read_segment(seg)
            if why and any(r.lsn > after for r in records):
                log.info("ingest log %s ends at byte %d: %s (never acknowledged)", seg, good, why)
            if not records:  # nothing in it: its name may be the next segment's
                seg.unlink()
                continue
            self.last_lsn = max(self.last_lsn, records[-1].lsn)
            self._retired.append((seg, records[-1].lsn))
            out += [r for r in records if r.lsn > after]
        self.last_lsn = max(self.last_lsn, after)
        return sorted(out, key=lambda r: r.lsn)

    def append(self, seqs: dict[str, int], hosts: set[str], seen: float, tables: dict[str, pa.Table]) -> int:
        """Write one record and fsync it; returns its lsn. Raises OSError (e.g. disk full) with nothing acknowledged."""
        lsn = self.last_lsn + 1
        self._write(lsn, encode(lsn, seqs, sorted(hosts), seen, tables, self._scratch), None)  # under the store's log lock
        return lsn

    def append_body(self, seqs: dict[str, int], hosts: set[str], seen: float, keep: list[list], body: bytes,
                    during: Callable[[], Any]) -> int:
        """Write a version-3 request's record and fsync it, calling `during` (the store's conversion)
        while the sync runs; returns its lsn. If `during` raises, or the write or sync fails, the
        record is cut off (never acknowledged: its frames will be sent again) and the error raised."""
        lsn = self.last_lsn + 1
        self._write(lsn, encode_body(lsn, seqs, sorted(hosts), seen, keep, body), during)
        return lsn

    def _write(self, lsn: int, bufs: list[memoryview], during: Callable[[], Any] | None) -> None:
        size = sum(len(b) for b in bufs)
        if self._fd is None:
            self._path = self._spares.pop(0) if self._spares else self.dir / f"{lsn:020d}.log"
            self._fd = os.open(self._path, os.O_WRONLY | os.O_CREAT, 0o600)  # written from byte 0
            self._size = 0
        try:
            while bufs:  # writev may write part of the record: go on from where it stopped
                n = os.writev(self._fd, bufs)
                while bufs and n >= len(bufs[0]):
                    n -= len(bufs[0])
                    bufs.pop(0)
                if bufs and n:
                    bufs[0] = bufs[0][n:]
            if during is None:
                os.fdatasync(self._fd)
            else:
                wait = self._syncer.start(self._fd)
                try:
                    during()
                finally:
                    wait()  # the sync must end before the record is cut off or the segment closed
        except BaseException:
            # The record was not acknowledged, and its frames will be sent again: it must not
            # be replayed. Cut it off, then go on in a new segment.
            try:
                os.ftruncate(self._fd, self._size)
                os.fdatasync(self._fd)  # a record whose sync succeeded must not come back after a power loss
            except OSError:
                log.error("ingest log %s: could not cut off a failed write; renaming the segment", self._path)
                os.rename(self._path, self._path.with_suffix(".failed"))
                self._path = self._path.with_suffix(".failed")
            if self._size:
                self._close()
            else:  # holds nothing: the retry may create a segment of the same name
                os.close(self._fd)
                self._path.unlink(missing_ok=True)
                self._fd, self._path = None, None
            raise
        self._size += size
        self.last_lsn = lsn

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._retired.append((self._path, self.last_lsn))
            self._fd, self._path = None, None

    def rotate(self) -> None:
        """Close the current segment: what the next flush commits can then be reused whole."""
        self._close()

    def committed(self, lsn: int) -> None:
        """The store has every record up to `lsn`: the closed segments that hold nothing newer
        are kept for reuse, up to SPARES of them, or deleted."""
        keep = []
        for path, last in self._retired:
            if last > lsn:
                keep.append((path, last))
            elif len(self._spares) < SPARES and path.suffix == ".log":
                self._spares.append(path)
            else:
                path.unlink(missing_ok=True)
        self._retired = keep

    def close(self) -> None:
        self._close()
