"""Frame version 3: an ingest body of Arrow IPC streams, read and validated a column at a time.

The format is described in :mod:`loupe.frame`; agents write it with :mod:`loupe.arrow_ipc`.
:func:`decode` turns a body into the request's own fields (an :class:`IngestRequest` without
frames) and :class:`ArrowFrame` s, applying the rules of versions 1 and 2 to whole columns
with numpy and pyarrow instead of to each value with pydantic.

Two kinds of error: :class:`StreamError` when the body is not whole Arrow IPC streams (cut
short, corrupt, or using what this reader refuses: compressed buffers, delta dictionaries),
answered 400; :class:`FrameError` when the streams are sound but a frame breaks a rule,
answered 422 with the frame (its index in the body, and its seq) and the field.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import ValidationError

from .arrow_ipc import MEASURES, MEDIA_TYPE
from .catalog import FAMILIES
from .frame import MAX_DIM_LEN, MAX_ROWS_PER_FRAME, FrameHeader, IngestRequest
from .frame import MAX_FRAMES_PER_REQUEST as MAX_FRAMES

MAX_VALUE = 2**62  # NonNeg's bound in frame.py
FRAMES_KEY, REQUEST_KEY = b"loupe.frames", b"loupe.request"

_CONTINUATION = 0xFFFFFFFF
_SCHEMA, _DICTIONARY, _RECORD_BATCH = 1, 2, 3  # Message.fbs MessageHeader


class StreamError(ValueError):
    """The body is not whole, readable Arrow IPC streams; the message says where and why."""


class FrameError(ValueError):
    """Frames that break the rules, as pydantic-style errors (``loc`` starts with ``body``)."""

    def __init__(self, errors: list[dict]) -> None:
        super().__init__("; ".join(e["msg"] for e in errors))
        self.errors = errors


class ArrowFrameHeader(FrameHeader):
    """A version-3 frame's header, one per record batch in its stream's ``loupe.frames``."""

    VERSIONS: ClassVar[tuple[int, ...]] = (3,)
    VERSIONS_NOTE: ClassVar[str] = "an Arrow IPC body carries version 3 (versions 1 and 2 are JSON)"


@dataclass(frozen=True)
class ArrowFrame:
    """A validated version-3 frame: its header and its columns, ready for the store."""

    source: str
    seq: int
    ts: int
    family: str
    host: str
    n_rows: int
    # n_rows values each: string arrays, or dictionary<int32, string> (see _dimension)
    dims: dict[str, pa.Array] = field(default_factory=dict)
    measures: dict[str, np.ndarray] = field(default_factory=dict)  # int64; an absent measure is zeros
    hist: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)  # (row, bucket, n)
    v: int = 3

    def columns(self) -> dict:
        """The same rows as version-2 columns (tests, and readers that want lists)."""
        out: dict = {"n": self.n_rows, "dims": {d: a.to_pylist() for d, a in self.dims.items()}}
        out.update({m: a.tolist() for m, a in self.measures.items()})
        if self.hist:
            out["hist"] = {h: {"row": r.tolist(), "bucket": b.tolist(), "n": n.tolist()}
                           for h, (r, b, n) in self.hist.items()}
        return out


# ---------------------------------------------------------------------- the streams' framing
class _Table:
    """Just enough of a flatbuffers reader for a message's header fields; every read is bounds-checked
    (struct.error on a position outside the buffer)."""

    def __init__(self, buf: memoryview, at: int) -> None:
        self.buf, self.at = buf, at
        self.vtable = at - self._read("<i", at)
        self.vtable_len = self._read("<H", self.vtable)

    def _read(self, fmt: str, at: int):
        if at < 0:
            raise struct.error(f"position {at}")
        return struct.unpack_from(fmt, self.buf, at)[0]

    def _field(self, i: int) -> int | None:
        if 4 + 2 * i + 2 > self.vtable_len:
            return None
        off = self._read("<H", self.vtable + 4 + 2 * i)
        return self.at + off if off else None

    def scalar(self, i: int, fmt: str, default):
        at = self._field(i)
        return default if at is None else self._read(fmt, at)

    def table(self, i: int) -> _Table | None:
        at = self._field(i)
        return None if at is None else _Table(self.buf, at + self._read("<I", at))


def split_streams(body: bytes) -> list[tuple[int, int]]:
    """(start, end) of each IPC stream in the body, checked message by message
    before pyarrow reads any: every stream whole and ended by its end-of-stream marker, a Schema
    message first, no compressed buffers (a small body could decompress into gigabytes), no
    delta dictionaries, at most MAX_FRAMES record batches in all."""
    if not body:
        raise StreamError(f"the body is empty: {MEDIA_TYPE} needs at least one IPC stream")
    view, size = memoryview(body), len(body)
    streams: list[tuple[int, int]] = []
    pos = frames = 0
    while pos < size:
        start, k = pos, len(streams)
        while True:
            if size - pos < 8:
                raise StreamError(f"stream {k} is cut short at byte {pos}: no end-of-stream marker")
            cont, meta_len = struct.unpack_from("<Ii", body, pos)
            if cont != _CONTINUATION:
                raise StreamError(f"stream {k}: no IPC message at byte {pos} (a message starts with 0xFFFFFFFF)")
            if meta_len == 0:  # end of stream
                pos += 8
                break
            meta_end = pos + 8 + meta_len
            if meta_len < 0 or meta_end > size:
                raise StreamError(f"stream {k} is cut short: the message at byte {pos} declares {meta_len} "
                                  f"bytes of metadata, {size - pos - 8} remain")
            try:
                kind, body_len = _message_kind(view[pos + 8:meta_end])
            except struct.error:
                raise StreamError(f"stream {k}: unreadable message metadata at byte {pos}") from None
            except StreamError as e:
                raise StreamError(f"stream {k}, the message at byte {pos}: {e}") from None
            if body_len < 0 or meta_end + body_len > size:
                raise StreamError(f"stream {k} is cut short: the message at byte {pos} declares a body of "
                                  f"{body_len} bytes, {size - meta_end} remain")
            if (kind == _SCHEMA) != (pos == start):
                raise StreamError(f"stream {k}: " + ("a stream starts with a Schema message" if pos == start
                                                     else f"a second Schema message at byte {pos}"))
            if kind == _RECORD_BATCH:
                frames += 1
                if frames > MAX_FRAMES:
                    raise FrameError([_error(("frames",), f"more than {MAX_FRAMES} frames in one request")])
            pos = meta_end + body_len
        streams.append((start, pos))
    return streams


def _message_kind(meta: memoryview) -> tuple[int, int]:
    """(header type, body length) of one message's flatbuffer; refuses what split_streams refuses."""
    msg = _Table(meta, struct.unpack_from("<I", meta, 0)[0])
    kind, body_len = msg.scalar(1, "<B", 0), msg.scalar(3, "<q", 0)
    header = msg.table(2)
    if kind not in (_SCHEMA, _DICTIONARY, _RECORD_BATCH) or header is None:
        raise StreamError(f"an IPC message of type {kind} (a frame body holds Schema, DictionaryBatch "
                          "and RecordBatch messages)")
    batch = header.table(1) if kind == _DICTIONARY else header if kind == _RECORD_BATCH else None
    if kind == _DICTIONARY and header.scalar(2, "<?", False):
        raise StreamError("a delta dictionary batch (send each record batch's dictionary whole)")
    if batch is not None and batch.table(3) is not None:
        raise StreamError("compressed record batch buffers (send them uncompressed)")
    return kind, body_len


# ---------------------------------------------------------------------- frames
def _error(loc: tuple, msg: str) -> dict:
    return {"type": "value_error", "loc": ["body", *loc], "msg": msg}


def _metadata_json(meta: dict, key: bytes, loc: tuple, want: type):
    try:
        value = json.loads(meta[key])
    except (ValueError, UnicodeDecodeError) as e:
        raise FrameError([_error(loc, f"not JSON: {e}")]) from None
    if not isinstance(value, want):
        raise FrameError([_error(loc, f"must be a JSON {'list' if want is list else 'object'}")])
    return value


def decode(body: bytes) -> tuple[IngestRequest, list[ArrowFrame]]:
    """A version-3 body -> the request's fields (frames empty) and its frames, in body order.
    Raises StreamError (400) or FrameError (422)."""
    buf = pa.py_buffer(body)
    request: dict | None = None
    frames: list[ArrowFrame] = []
    for k, (start, end) in enumerate(split_streams(body)):
        try:
            reader = pa.ipc.open_stream(buf.slice(start, end - start))
            meta = reader.schema.metadata or {}
            records = list(reader)
            for batch in records:  # the shape (every column as long as the batch); values per column below
                batch.validate()
            if REQUEST_KEY in meta:
                if k:
                    raise FrameError([_error(("streams", k, "loupe.request"), "only the first stream carries the "
                                                                              "request's fields")])
                request = _metadata_json(meta, REQUEST_KEY, ("request",), dict)
            if FRAMES_KEY not in meta:
                raise FrameError([_error(("streams", k, "loupe.frames"), "missing from the schema's metadata: one "
                                                                         "frame header per record batch")])
            headers = _metadata_json(meta, FRAMES_KEY, ("streams", k, "loupe.frames"), list)
            if len(headers) != len(records):
                raise FrameError([_error(("streams", k, "loupe.frames"), f"{len(headers)} frame headers for "
                                                                         f"{len(records)} record batches")])
            if not records and k:
                raise FrameError([_error(("streams", k), "a stream after the first must hold frames")])
            for header, batch in zip(headers, records):
                frames.append(_frame(len(frames), header, batch))
        except (pa.ArrowException, OSError) as e:  # pyarrow raises a plain OSError for its IOError status
            raise StreamError(f"stream {k} (bytes {start}..{end}) is not valid Arrow IPC: {e}") from None
        except UnicodeDecodeError:  # pyarrow decodes field names (nested ones too) when asked for them
            raise StreamError(f"stream {k} (bytes {start}..{end}): a field name is not UTF-8") from None
    if request and "frames" in request:
        raise FrameError([_error(("request", "frames"), "frames are record batches, not request fields")])
    try:
        req = IngestRequest.model_validate({**(request or {}), "frames": []})
    except ValidationError as e:
        raise FrameError([_error(("request", *x["loc"]), x["msg"]) for x in e.errors()]) from None
    return req, frames


def _frame(i: int, header, batch: pa.RecordBatch) -> ArrowFrame:
    if not isinstance(header, dict):
        raise FrameError([_error(("frames", i), "a frame header must be a JSON object")])
    try:
        h = ArrowFrameHeader.model_validate(header)
    except ValidationError as e:
        seq = f" (seq {header['seq']})" if isinstance(header.get("seq"), int) else ""
        raise FrameError([_error(("frames", i, *x["loc"]), f"frame {i}{seq}: {x['msg']}") for x in e.errors()]) \
            from None
    fam = FAMILIES[h.family]
    dims = [d for d in fam.dims if d != "host"]
    hists = {x.name: x for x in fam.hists}
    n = batch.num_rows

    def bad(name: str | None, msg: str):
        return FrameError([_error(("frames", i) + ((name,) if name else ()), f"frame {i} (seq {h.seq}): {msg}")])

    if n > MAX_ROWS_PER_FRAME:
        raise bad(None, f"{n} rows; at most {MAX_ROWS_PER_FRAME} per frame")
    out = ArrowFrame(h.source, h.seq, h.ts, h.family, h.host, n)
    for name, col in zip(batch.schema.names, batch.columns):
        if name in out.dims or name in out.measures or name in out.hist:
            raise bad(name, "a column appears twice")
        try:
            col.validate(full=True)
        except (pa.ArrowException, OSError) as e:
            raise bad(name, f"invalid column data: {e}") from None
        if name in dims:
            out.dims[name] = _dimension(col, bad, name)
        elif name in MEASURES:
            out.measures[name] = _counts(col, bad, name, "a measure")
        elif name in hists:
            out.hist[name] = _histogram(col, hists[name], bad, name)
        else:
            valid = dims + list(MEASURES) + list(hists)
            raise bad(name, f"unknown column for family {h.family}; valid: {', '.join(valid)}")
    return out


def _dimension(col: pa.Array, bad, name: str) -> pa.Array:
    """A dimension column -> a string array, or a dictionary array of int32 codes into strings, which
    the store folds and groups on. Writers put each value in a dictionary once (pyarrow's and
    loupe.arrow_ipc do); one that repeats a value is not re-checked, which would hash every file
    name of every frame: its rows are stored with the same totals, and only which files the fold
    keeps by name may differ."""
    t = col.type
    coded = pa.types.is_dictionary(t)
    values = col.dictionary if coded else col
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        raise bad(name, f"a dimension is a string column (or a dictionary of strings), not {t}")
    if col.null_count or (coded and values.null_count):
        raise bad(name, "a dimension holds no nulls (an absent value is \"\")")
    if values.type != pa.string():
        values = values.cast(pa.string())
    # bytes >= characters, and the offsets say how many bytes each value has
    if len(values) and np.diff(np.frombuffer(values.buffers()[1], np.int32, len(values) + 1,
                                             values.offset * 4)).max() > MAX_DIM_LEN:
        long = pc.greater(pc.utf8_length(values), MAX_DIM_LEN)
        if coded:  # by row: a long value no row uses is harmless
            long = long.take(col.indices)
        if pc.any(long).as_py():
            raise bad(name, f"value {pc.index(long, True).as_py()} is longer than {MAX_DIM_LEN} characters")
    if not coded:
        return values
    codes = col.indices if col.indices.type == pa.int32() else col.indices.cast(pa.int32())
    return pa.DictionaryArray.from_arrays(codes, values)


def _counts(col: pa.Array, bad, name: str, what: str, unit: str = "row") -> np.ndarray:
    """An integer column of values in 0..MAX_VALUE, as int64; an error names the ``unit`` (row or entry)."""
    if not pa.types.is_integer(col.type):
        raise bad(name, f"{what} is an integer column, not {col.type}")
    if col.null_count:
        raise bad(name, f"{what} holds no nulls")
    raw = col.to_numpy(zero_copy_only=False)
    if raw.dtype == np.uint64 and (raw > np.uint64(MAX_VALUE)).any():
        at = int(np.flatnonzero(raw > np.uint64(MAX_VALUE))[0])
        raise bad(name, f"value {int(raw[at])} at {unit} {at} is above 2**62")
    vals = raw.astype(np.int64, copy=False)
    for wrong, why in ((vals < 0, "below 0"), (vals > MAX_VALUE, "above 2**62")):
        if wrong.any():
            at = int(np.flatnonzero(wrong)[0])
            raise bad(name, f"value {int(vals[at])} at {unit} {at} is {why}")
    return vals


def _histogram(col: pa.Array, spec, bad, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A map<integer bucket exponent, integer events> column -> sparse (row, bucket, n)."""
    t = col.type
    if not (pa.types.is_map(t) and pa.types.is_integer(t.key_type) and pa.types.is_integer(t.item_type)):
        raise bad(name, f"a histogram is a map<integer bucket exponent, integer events> column, not {t}")
    if col.null_count:
        raise bad(name, "a histogram holds no nulls (an empty map is no events)")
    if not len(col):  # its offsets buffer may be empty: nothing to read
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    # Arrays read from IPC start at offset 0, and full validation checked the offsets; pyarrow's
    # list kernels are not used on maps (some abort the process on a map argument).
    offsets = col.offsets.to_numpy()
    lo, hi = int(offsets[0]), int(offsets[-1])
    items = col.items.slice(lo, hi - lo)
    if items.null_count:
        raise bad(name, "a histogram's event counts hold no nulls")
    buckets = col.keys.slice(lo, hi - lo).to_numpy(zero_copy_only=False).astype(np.int64)
    counts = _counts(items, bad, name, "a histogram's event count", "entry")
    wrong = (buckets < spec.lo) | (buckets > spec.hi)
    if wrong.any():
        raise bad(name, f"bucket {int(buckets[wrong][0])} outside declared bounds {spec.lo}..{spec.hi}")
    rows = np.repeat(np.arange(len(offsets) - 1, dtype=np.int64), np.diff(offsets))
    return rows, buckets, counts
