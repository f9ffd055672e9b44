"""Frames waiting for the backend, oldest first: in memory, or spooled on disk.

Both queues are bounded in bytes: past the bound the oldest frames are dropped and
counted. :class:`Spool` keeps them in ``<state dir>/spool/`` so that they outlive the
agent process (a crash, ``kill -9``, a reboot)::

    <n>.seg    segments, numbered in order, of records appended one write() each
    ack.json   {"segment": n, "offset": b, "dropped": d}: every record before byte b of
               segment n is finished (stored, or refused for good); d frames were
               dropped to keep the bound, over the spool's life
    lock       flock'd by the agent that uses the spool

A record is ``magic | u32 payload length | u32 crc32(payload) | payload`` with the
payload ``i64 seq | i64 ts | u16 len(source) | u16 len(host) | source | host | frame``.
The magic says how the frame is kept: ``b"LSP1"``, a version-2 frame as JSON (what
agents spooled before version 3; such spools still replay), ``b"LSP2"``, a version-3
frame's Arrow part (:func:`loupe.arrow_ipc.encode_part`). The frame is spooled with its
source id and seq, so a replay after a restart resends the very same frame and the
backend, which de-duplicates by (source, seq), counts one it already has as a
duplicate. A record cut short or failing its CRC (the process died in its write) ends
its segment: it is cut off with a log line.

A segment is deleted once every record in it is finished. ack.json is rewritten by
:meth:`Spool.sync` and not fsync'd: a stale one only resends frames the backend
already has, as duplicates. Disk use stays under the bound plus one segment.
"""

from __future__ import annotations

import collections
import fcntl
import json
import logging
import os
import struct
import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from loupe.arrow_ipc import part_header

log = logging.getLogger("loupe.agent")

MAGIC = b"LSP1"  # a version-2 frame as JSON
MAGIC_ARROW = b"LSP2"  # a version-3 frame's Arrow part
HEAD = struct.Struct("<4sII")  # magic, payload length, crc32(payload)
META = struct.Struct("<qqHH")  # seq, ts, len(source), len(host)
CHUNK = 256 << 10  # bytes read at a time
MAX_SEGMENT = 16 << 20


@dataclass
class Queued:
    """A frame waiting to be sent: as version-2 JSON (``json``) or as a version-3 Arrow part (``arrow``)."""

    source: str
    host: str
    seq: int
    ts: int
    json: str = ""
    arrow: bytes = b""

    @property
    def size(self) -> int:
        return len(self.arrow) if self.arrow else len(self.json)

    @property
    def family(self) -> str:
        return (part_header(self.arrow) if self.arrow else json.loads(self.json))["family"]


class SpoolInUse(ValueError):
    """Another agent holds the spool (two agents must not share a state dir)."""


class FrameQueue(ABC):
    """A FIFO of frames bounded to ``max_bytes``; subclasses keep the frames."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.frames = 0  # pending frames
        self.bytes = 0  # and their bytes
        self.dropped = 0  # frames dropped to keep the bound (or that could not be kept)
        self.last_dropped: Queued | None = None
        self.last_seq: dict[str, int] = {}  # the highest seq held per source (the spool's, after a restart)
        self.closed = False
        self._reloads = 0  # a walk over the frames that ends in a reload must not advance the head

    def __len__(self) -> int:
        return self.frames

    def __iter__(self) -> Iterator[Queued]:
        return (q for _, q in self._entries())

    def append(self, q: Queued) -> int:
        """Queue ``q`` after the others; returns how many of the oldest were dropped to make room."""
        try:
            self._push(q)
        except OSError:
            self.dropped += 1
            self.last_dropped = q
            raise
        over = self.bytes - self.max_bytes
        if over <= 0 or self.frames <= 1:
            return 0
        # the newest frame stays, however large
        n, last = self._forget(lambda k, freed: freed < over and self.frames - k > 1)
        if n:
            self.dropped += n
            self.last_dropped = last
        return n

    def peek(self, max_bytes: int, max_frames: int) -> list[Queued]:
        """Frames from the head, about one host (the backend files a request's status under
        one host) and kept alike (JSON or Arrow: one request's body is one or the other), at most
        ``max_frames`` and ``max_bytes`` unless one frame alone is larger."""
        batch: list[Queued] = []
        size = 0
        for q in self:
            if batch and (size + q.size > max_bytes or len(batch) >= max_frames or q.host != batch[0].host
                          or bool(q.arrow) != bool(batch[0].arrow)):
                break
            batch.append(q)
            size += q.size
        return batch

    def ack(self, n: int) -> None:
        """The first ``n`` frames are finished: forget them."""
        if n <= 0:
            return
        self._forget(lambda k, _: k < n)

    def _forget(self, more: Callable[[int, int], bool]) -> tuple[int, Queued | None]:
        """Forget frames from the head while ``more(frames, bytes)`` of those forgotten so far;
        returns how many, and the last of them."""
        n = freed = 0
        last = None
        reloads = self._reloads
        for size, q in self._entries():
            if not more(n, freed):
                break
            n, freed, last = n + 1, freed + size, q
        if reloads != self._reloads:  # the spool was reopened meanwhile: those frames are sent again
            return 0, None
        self._advance(n, freed)
        return n, last

    def sync(self) -> None:
        """Make what was queued durable (nothing to do in memory)."""

    def close(self) -> None:
        self.closed = True

    @abstractmethod
    def _push(self, q: Queued) -> None:
        """Keep one more frame at the tail."""

    @abstractmethod
    def _entries(self) -> Iterator[tuple[int, Queued]]:
        """(bytes, frame) of every pending frame, oldest first."""

    @abstractmethod
    def _advance(self, n: int, nbytes: int) -> None:
        """Forget the ``n`` oldest frames, ``nbytes`` together."""


class MemoryQueue(FrameQueue):
    """Frames in memory: lost when the process exits (an agent without a state dir)."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(max_bytes)
        self._q: collections.deque[Queued] = collections.deque()

    def __str__(self) -> str:
        return "in-memory queue"

    def _push(self, q: Queued) -> None:
        self._q.append(q)
        self.frames += 1
        self.bytes += q.size

    def _entries(self) -> Iterator[tuple[int, Queued]]:
        return ((q.size, q) for q in self._q)

    def _advance(self, n: int, nbytes: int) -> None:
        for _ in range(n):
            self._q.popleft()
        self.frames -= n
        self.bytes -= nbytes


class _Torn(Exception):
    def __init__(self, offset: int, why: str) -> None:
        super().__init__(why)
        self.offset, self.why = offset, why


def encode(q: Queued) -> bytes:
    src, host, body = q.source.encode(), q.host.encode(), q.arrow or q.json.encode()
    payload = META.pack(q.seq, q.ts, len(src), len(host)) + src + host + body
    return HEAD.pack(MAGIC_ARROW if q.arrow else MAGIC, len(payload), zlib.crc32(payload)) + payload


def _decode(magic: bytes, payload: bytes) -> Queued:
    seq, ts, ls, lh = META.unpack_from(payload)
    a = META.size
    if a + ls + lh > len(payload):
        raise ValueError("string lengths beyond the record")
    q = Queued(payload[a:a + ls].decode(), payload[a + ls:a + ls + lh].decode(), seq, ts)
    if magic == MAGIC_ARROW:
        q.arrow = payload[a + ls + lh:]
    else:
        q.json = payload[a + ls + lh:].decode()
    return q


def _records(fd: int, start: int, end: int) -> Iterator[tuple[int, int, Queued]]:
    """(offset, size, frame) of the records in bytes [start, end) of a segment; raises
    :class:`_Torn` at the first one that is cut short or fails its CRC."""
    buf, base, pos = b"", start, start
    while pos < end:
        if end - pos < HEAD.size:
            raise _Torn(pos, "a record header cut short")
        if pos + HEAD.size > base + len(buf):
            buf, base = os.pread(fd, min(CHUNK, end - pos), pos), pos
        magic, length, crc = HEAD.unpack_from(buf, pos - base)
        if magic not in (MAGIC, MAGIC_ARROW):
            raise _Torn(pos, "no record")
        size = HEAD.size + length
        if pos + size > end:
            raise _Torn(pos, "a record cut short")
        if pos + size > base + len(buf):
            buf, base = os.pread(fd, min(max(CHUNK, size), end - pos), pos), pos
        payload = buf[pos - base + HEAD.size:pos - base + size]
        if zlib.crc32(payload) != crc:
            raise _Torn(pos, "a record failing its checksum")
        try:
            q = _decode(magic, payload)
        except (ValueError, struct.error) as e:  # a good CRC over a bad layout: not written by us
            raise _Torn(pos, f"an unreadable record ({e})") from e
        yield pos, size, q
        pos += size


class Spool(FrameQueue):
    """Frames in segment files under ``directory``, kept across restarts (see the module docstring).

    Opening reads every segment once: it counts the pending frames, finds each source's
    highest seq, and cuts off a torn last record. Raises :class:`SpoolInUse` when another
    process has it open, OSError when the directory cannot be used.
    """

    def __init__(self, directory: str | Path, max_bytes: int, *, segment_bytes: int | None = None) -> None:
        super().__init__(max_bytes)
        self.dir = Path(directory)
        self.segment_bytes = segment_bytes or min(MAX_SEGMENT, max(64 << 10, max_bytes // 16))
        self.dir.mkdir(parents=True, exist_ok=True)
        self._lock = os.open(self.dir / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._lock)
            raise SpoolInUse(f"spool {self.dir} is in use by another agent (give each agent its own --state-dir)") \
                from None
        self._segs: dict[int, int] = {}  # segment number -> bytes of whole records, in order
        self._wfd: int | None = None  # the segment being written, the last of _segs
        self._unsynced = self._new_entry = False
        self._saved: tuple[int, int, int] | None = None  # what ack.json says
        try:
            self._load()
        except BaseException:
            os.close(self._lock)
            raise

    def __str__(self) -> str:
        return f"spool {self.dir}"

    @classmethod
    def pending(cls, directory: str | Path) -> list[Queued]:
        """The frames waiting in the spool at ``directory`` (``<state dir>/spool``), oldest first;
        it is opened, so not while an agent uses it."""
        spool = cls(directory, 1 << 62)
        try:
            return list(spool)
        finally:
            spool.close()

    # ------------------------------------------------------------------ open
    def _path(self, n: int) -> Path:
        return self.dir / f"{n:012d}.seg"

    def _read_ack(self) -> tuple[int, int, int]:
        path = self.dir / "ack.json"
        try:
            a = json.loads(path.read_text())
            return int(a["segment"]), int(a["offset"]), int(a["dropped"])
        except FileNotFoundError:
            return 0, 0, 0
        except (ValueError, KeyError, TypeError, OSError) as e:
            log.warning("spool %s: unreadable ack.json (%s): every spooled frame is sent again", self.dir, e)
            return 0, 0, 0

    def _load(self) -> None:
        head_seg, head_off, self.dropped = self._saved = self._read_ack()
        numbers = sorted(int(p.stem) for p in self.dir.glob("*.seg") if p.stem.isdigit())
        self._next = max([head_seg, *numbers]) + 1  # a new segment must not count as acknowledged
        self.frames = self.bytes = 0
        self.last_seq = {}
        for n in numbers:
            if n < head_seg:  # finished, but deleted only after ack.json was written
                self._path(n).unlink(missing_ok=True)
                continue
            good, pending_at = self._scan(n, head_off if n == head_seg else 0)
            if n == head_seg:
                head_off = pending_at  # on a record's start, whatever ack.json said
            if good:
                self._segs[n] = good
            else:
                self._path(n).unlink(missing_ok=True)
        first = next(iter(self._segs), self._next)
        self._head = (first, head_off if first == head_seg else 0)
        self._release()
        if self.frames:
            log.info("spool %s: %d frames (%d bytes) from an earlier run are sent first", self.dir,
                     self.frames, self.bytes)

    def _scan(self, n: int, pending_from: int) -> tuple[int, int]:
        """Count segment ``n``'s records from byte ``pending_from`` on; returns the bytes of whole
        records (a torn one and whatever follows it are cut off) and where the first counted starts."""
        path = self._path(n)
        fd = os.open(path, os.O_RDONLY)
        good, pending_at = 0, None
        try:
            end = os.fstat(fd).st_size
            try:
                for off, size, q in _records(fd, 0, end):
                    good = off + size
                    self.last_seq[q.source] = max(q.seq, self.last_seq.get(q.source, -1))
                    if off >= pending_from:
                        pending_at = off if pending_at is None else pending_at
                        self.frames += 1
                        self.bytes += size
            except _Torn as t:
                log.warning("spool %s: %s at byte %d of %s; the %d bytes from there are dropped "
                            "(a write cut short when the agent stopped)", self.dir, t.why, t.offset, path.name,
                            end - t.offset)
                os.truncate(path, t.offset)
        finally:
            os.close(fd)
        return good, good if pending_at is None else pending_at

    # ------------------------------------------------------------------ queue
    def _push(self, q: Queued) -> None:
        rec = encode(q)
        if self._wfd is None or self._segs[next(reversed(self._segs))] >= self.segment_bytes:
            self._rotate()
        n = next(reversed(self._segs))
        size = self._segs[n]
        try:
            view = memoryview(rec)
            while view:
                view = view[os.write(self._wfd, view):]
        except OSError:  # e.g. the disk is full: cut off what was written, and report it
            try:
                os.ftruncate(self._wfd, size)
            except OSError:
                self._close_writer()  # the next frame goes to a new segment; a reopen cuts this one
            raise
        self._segs[n] = size + len(rec)
        self._unsynced = True
        self.frames += 1
        self.bytes += len(rec)
        self.last_seq[q.source] = max(q.seq, self.last_seq.get(q.source, -1))

    def _rotate(self) -> None:
        self._close_writer()
        n, self._next = self._next, self._next + 1
        self._wfd = os.open(self._path(n), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._segs[n] = 0
        self._new_entry = True
        self._release()

    def _close_writer(self) -> None:
        if self._wfd is not None:
            if self._unsynced:
                os.fdatasync(self._wfd)
                self._unsynced = False
            os.close(self._wfd)
            self._wfd = None

    def _entries(self) -> Iterator[tuple[int, Queued]]:
        head_seg, head_off = self._head
        for n, end in list(self._segs.items()):
            start = head_off if n == head_seg else 0
            if n < head_seg or start >= end:
                continue
            fd = os.open(self._path(n), os.O_RDONLY)
            try:
                for _, size, q in _records(fd, start, end):
                    yield size, q
            except _Torn as t:  # changed on disk since it was written: start over from what is intact
                log.error("spool %s: %s at byte %d of %s; reopening the spool", self.dir, t.why, t.offset,
                          self._path(n).name)
                self._reload()
                return
            finally:
                os.close(fd)

    def _reload(self) -> None:
        self._reloads += 1
        self.sync()
        self._close_writer()
        self._segs = {}
        self._load()

    def _advance(self, n: int, nbytes: int) -> None:
        self.frames -= n
        self.bytes -= nbytes
        seg, off = self._head
        off += nbytes
        while seg in self._segs and off >= self._segs[seg] and self._segs[seg] > 0:
            off -= self._segs[seg]
            nxt = next((k for k in self._segs if k > seg), None)
            if nxt is None:  # the last segment: everything is finished
                off = self._segs[seg]
                break
            seg = nxt
        self._head = (seg, off)
        self._release()

    def _release(self) -> None:
        """Delete the segments before the head, except the one being written."""
        writing = next(reversed(self._segs)) if self._wfd is not None else None
        for n, end in list(self._segs.items()):
            finished = n < self._head[0] or (n == self._head[0] and self._head[1] >= end)
            if not finished or n == writing:
                break
            del self._segs[n]
            self._path(n).unlink(missing_ok=True)
            if n == self._head[0]:
                self._head = (next(iter(self._segs), self._next), 0)

    # ------------------------------------------------------------------ durability
    def sync(self) -> None:
        """fdatasync what was written since the last call (one a second: the agent's tick),
        and record how far frames are finished."""
        if self.closed:
            return
        if self._unsynced and self._wfd is not None:
            os.fdatasync(self._wfd)
            self._unsynced = False
        if self._new_entry:  # a new segment's name must survive a power cut too
            fd = os.open(self.dir, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            self._new_entry = False
        mark = (*self._head, self.dropped)
        if mark != self._saved:
            tmp = self.dir / "ack.json.tmp"
            tmp.write_text(json.dumps(dict(zip(("segment", "offset", "dropped"), mark))))
            os.replace(tmp, self.dir / "ack.json")
            self._saved = mark

    def close(self) -> None:
        if self.closed:
            return
        try:
            self.sync()
            self._close_writer()
        finally:
            os.close(self._lock)
            self.closed = True
