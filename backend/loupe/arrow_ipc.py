"""Frame version 3 on the agent's side: version-2 columns -> Arrow IPC, with numpy and no pyarrow.

The agent runs where pyarrow is not installed (a NAS head, the knfsd guest), and
pyarrow would cost it tens of MiB of memory, so this writes the few Arrow types a
frame needs by hand: the IPC encapsulation and the flatbuffers of its Schema and
RecordBatch messages (https://arrow.apache.org/docs/format/Columnar.html). The
backend reads the result with pyarrow (:mod:`loupe.frame_v3`), and the format is
described in :mod:`loupe.frame`.

A frame is encoded once, when it is made, into a *part*: a short JSON header (its
family, row count and column layout) and its messages as they go on the wire: one
DictionaryBatch per dimension, then the RecordBatch. Dimensions go as dictionaries
(each distinct value once, then an int32 code a row): a second's rows repeat their
clients, ops and shares, and the server folds and groups on the codes without hashing
a string. The agent spools parts; :func:`request_body` puts a request's parts into
streams (one per column layout) behind Schema messages that carry the frame
headers, so a send copies bytes and encodes nothing. :func:`part_columns` reads a
part back into version-2 columns, for a server that does not read version 3.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable

import numpy as np

MEDIA_TYPE = "application/vnd.apache.arrow.stream"
EOS = b"\xff\xff\xff\xff\x00\x00\x00\x00"  # end of an IPC stream
MEASURES = ("count", "bytes", "lat_sum")

# Column kinds of a part's layout: a dimension (dictionary<int32, utf8>; "s", plain utf8,
# is what agents wrote before dictionaries and may still sit in a spool), a measure
# (int64), a histogram (map<int16 bucket exponent, int64 events>).
DIM, PLAIN_DIM, MEASURE, HIST = "d", "s", "i", "h"

# Arrow's flatbuffers enums (Schema.fbs, Message.fbs)
_V5 = 4  # MetadataVersion
_SCHEMA, _DICTIONARY, _RECORD_BATCH = 1, 2, 3  # MessageHeader
_INT, _UTF8, _STRUCT, _MAP = 2, 5, 13, 17  # Type


# ---------------------------------------------------------------------- flatbuffers
class _Table:
    """A table to serialise: ``slots[i]`` is field i: None (absent), (struct format, value)
    for a scalar, or a _Table/_Str/_Vec/_Structs for an offset to it."""

    def __init__(self, *slots) -> None:
        self.slots = slots


class _Str:
    def __init__(self, s: str | bytes) -> None:
        self.data = s.encode() if isinstance(s, str) else s


class _Vec:
    """A vector of offsets to tables or strings."""

    def __init__(self, items: Iterable) -> None:
        self.items = list(items)


class _Structs:
    """A vector of structs of two int64s (FieldNode, Buffer)."""

    def __init__(self, pairs: Iterable[tuple[int, int]]) -> None:
        self.pairs = list(pairs)


def _flatbuffer(root: _Table) -> bytes:
    """Serialise front to back: each object is written before what it points to, since a
    flatbuffers offset (unsigned) points forward; a table's vtable sits just before it."""
    buf = bytearray(4)  # the root offset, patched below

    def pad(align: int, extra: int = 0) -> None:
        buf.extend(bytes(-(len(buf) + extra) % align))

    def put(obj) -> int:
        if isinstance(obj, _Str):
            pad(4)
            at = len(buf)
            buf.extend(struct.pack("<I", len(obj.data)) + obj.data + b"\0")
            return at
        if isinstance(obj, _Structs):
            pad(8, 4)  # the elements (int64s) follow the u32 length
            at = len(buf)
            buf.extend(struct.pack("<I", len(obj.pairs)))
            for a, b in obj.pairs:
                buf.extend(struct.pack("<qq", a, b))
            return at
        if isinstance(obj, _Vec):
            pad(4)
            at = len(buf)
            buf.extend(struct.pack("<I", len(obj.items)) + bytes(4 * len(obj.items)))
            for i, item in enumerate(obj.items):
                field = at + 4 + 4 * i
                struct.pack_into("<I", buf, field, put(item) - field)
            return at
        # a table: fields by size, largest first, after the vtable offset
        sizes = [0 if s is None else 4 if not isinstance(s, tuple) else struct.calcsize("<" + s[0])
                 for s in obj.slots]
        offs, end = [0] * len(sizes), 4
        for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
            if sizes[i]:
                end += -end % sizes[i]
                offs[i] = end
                end += sizes[i]
        pad(2)
        vtable = len(buf)
        buf.extend(struct.pack(f"<HH{len(offs)}H", 4 + 2 * len(offs), end, *offs))
        pad(8)
        at = len(buf)
        buf.extend(struct.pack("<i", at - vtable) + bytes(end - 4))
        children = []
        for s, off in zip(obj.slots, offs):
            if isinstance(s, tuple):
                struct.pack_into("<" + s[0], buf, at + off, s[1])
            elif s is not None:
                children.append((at + off, s))
        for field, child in children:
            struct.pack_into("<I", buf, field, put(child) - field)
        return at

    struct.pack_into("<I", buf, 0, put(root))
    return bytes(buf)


def _message(header_type: int, header: _Table, body_length: int) -> bytes:
    """An encapsulated IPC message's prefix and metadata (the body follows)."""
    meta = _flatbuffer(_Table(("h", _V5), ("B", header_type), header, ("q", body_length)))
    meta += bytes(-len(meta) % 8)
    return struct.pack("<Ii", 0xFFFFFFFF, len(meta)) + meta


def _field(name: str, kind: str, dict_id: int = 0) -> _Table:
    def f(n: str, type_id: int, type_: _Table, children=(), nullable: bool = False, dictionary=None) -> _Table:
        return _Table(_Str(n), ("?", nullable), ("B", type_id), type_, dictionary, _Vec(children))

    if kind == DIM:  # DictionaryEncoding: id, indexType Int(32, signed), isOrdered false
        return f(name, _UTF8, _Table(), dictionary=_Table(("q", dict_id), _Table(("i", 32), ("?", True)),
                                                          ("?", False)))
    if kind == PLAIN_DIM:
        return f(name, _UTF8, _Table())
    if kind == MEASURE:
        return f(name, _INT, _Table(("i", 64), ("?", True)))
    entries = f("entries", _STRUCT, _Table(), [f("key", _INT, _Table(("i", 16), ("?", True))),
                                               f("value", _INT, _Table(("i", 64), ("?", True)))])
    return f(name, _MAP, _Table(("?", False)), [entries])


def schema_message(fields: list[tuple[str, str]], metadata: dict[str, str]) -> bytes:
    kv = _Vec(_Table(_Str(k), _Str(v)) for k, v in metadata.items())
    ids = {n: i for i, n in enumerate(n for n, k in fields if k == DIM)}  # a part's dictionaries in this order
    return _message(_SCHEMA, _Table(None, _Vec(_field(n, k, ids.get(n, 0)) for n, k in fields), kv), 0)


def _body(buffers: list[bytes]) -> tuple[list[tuple[int, int]], list[bytes], int]:
    """A message body of these buffers, each padded to 8 bytes: (offset and length of each, chunks, length)."""
    spans, chunks, at = [], [], 0
    for b in buffers:
        spans.append((at, len(b)))
        padded = len(b) + -len(b) % 8
        chunks += [b, bytes(padded - len(b))]
        at += padded
    return spans, chunks, at


# ---------------------------------------------------------------------- a frame's part
def _utf8(values) -> tuple[np.ndarray, bytes]:
    """Offsets and bytes of a string column; ASCII (the usual case) without a loop in Python."""
    values = values.tolist() if isinstance(values, np.ndarray) else values
    try:
        joined = "".join(values)
    except TypeError:
        raise ValueError("a dimension's values must be strings") from None
    data = joined.encode("utf-8", "replace")
    if len(data) == len(joined):  # every character one byte: lengths are the str lengths
        lengths = np.fromiter(map(len, values), np.int64, len(values))
    else:
        encoded = [v.encode("utf-8", "replace") for v in values]
        data, lengths = b"".join(encoded), np.fromiter(map(len, encoded), np.int64, len(encoded))
    offsets = np.zeros(len(values) + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return offsets, data


def _dictionary(values) -> tuple[np.ndarray, list]:
    """(int32 code of each value, the distinct values in order of first appearance)."""
    values = values.tolist() if isinstance(values, np.ndarray) else values
    try:
        index = dict.fromkeys(values)
    except TypeError:
        raise ValueError("a dimension's values must be strings") from None
    for i, v in enumerate(index):
        index[v] = i
    return np.fromiter(map(index.__getitem__, values), np.int32, len(values)), list(index)


def encode_part(family: str, cols: dict) -> bytes:
    """Version-2 columns (lists or numpy arrays, see :mod:`loupe.frame`) -> a frame's part:
    ``u32 header length | header JSON | a DictionaryBatch message per dimension | RecordBatch
    message``; the header's ``dicts`` gives each DictionaryBatch's bytes and values, for
    :func:`part_columns`. Raises ValueError for what
    these Arrow types cannot hold (a dimension value not a string, a measure beyond int64,
    a bucket beyond int16): such a frame goes as JSON, for the server to name the problem."""
    n = int(cols["n"])
    fields: list[tuple[str, str]] = []
    nodes: list[tuple[int, int]] = []
    buffers: list[bytes] = []  # one per Arrow buffer, in order; b"" for an absent validity bitmap
    dicts: list[bytes] = []  # a DictionaryBatch message per dimension, ids in the layout's order
    distincts: list[int] = []

    for d, vals in (cols.get("dims") or {}).items():
        codes, distinct = _dictionary(vals)
        offsets, data = _utf8(distinct)
        spans, chunks, length = _body([b"", offsets.tobytes(), data])
        values = _Table(("q", len(distinct)), _Structs([(len(distinct), 0)]), _Structs(spans))
        dicts.append(_message(_DICTIONARY, _Table(("q", len(dicts)), values, ("?", False)), length)
                     + b"".join(chunks))
        distincts.append(len(distinct))
        fields.append((d, DIM))
        nodes.append((n, 0))
        buffers += [b"", codes.tobytes()]
    for m in MEASURES:
        vals = cols.get(m)
        if vals is None:
            continue
        fields.append((m, MEASURE))
        nodes.append((n, 0))
        try:
            buffers += [b"", np.asarray(vals, dtype=np.int64).tobytes()]
        except OverflowError as e:
            raise ValueError(f"{m}: a value does not fit in int64") from e
    for h, sh in (cols.get("hist") or {}).items():
        rows = np.asarray(sh["row"], dtype=np.int64)
        try:
            keys = np.asarray(sh["bucket"], dtype=np.int16)
        except OverflowError as e:
            raise ValueError(f"hist.{h}: a bucket does not fit in int16") from e
        counts = np.asarray(sh["n"], dtype=np.int64)
        if not len(rows) == len(keys) == len(counts):
            raise ValueError(f"hist.{h}: row, bucket and n differ in length")
        if len(rows) and (rows.min() < 0 or rows.max() >= n):
            raise ValueError(f"hist.{h}: a row outside 0..{n - 1}")
        if len(rows) > 1 and (np.diff(rows) < 0).any():  # a row's entries must be contiguous
            order = np.argsort(rows, kind="stable")
            rows, keys, counts = rows[order], keys[order], counts[order]
        offsets = np.searchsorted(rows, np.arange(n + 1)).astype(np.int32)
        fields.append((h, HIST))
        nodes += [(n, 0), (len(rows), 0), (len(rows), 0), (len(rows), 0)]
        buffers += [b"", offsets.tobytes(), b"", b"", keys.tobytes(), b"", counts.tobytes()]

    spans, body, at = _body(buffers)
    batch = _Table(("q", n), _Structs(nodes), _Structs(spans))
    header = json.dumps({"family": family, "n": n, "fields": fields,
                         "dicts": [[len(m), k] for m, k in zip(dicts, distincts)]}, separators=(",", ":")).encode()
    return (struct.pack("<I", len(header)) + header + b"".join(dicts) + _message(_RECORD_BATCH, batch, at)
            + b"".join(body))


def part_header(part: bytes) -> dict:
    (length,) = struct.unpack_from("<I", part)
    return json.loads(part[4:4 + length])


def part_columns(part: bytes) -> dict:
    """A part back into version-2 columns (what :func:`encode_part` was given, as lists)."""
    head = part_header(part)
    n = head["n"]
    pos = 4 + struct.unpack_from("<I", part)[0]

    def enter(message_at: int) -> None:  # to a message's body, after its metadata
        nonlocal pos
        pos = message_at + 8 + struct.unpack_from("<i", part, message_at + 4)[0]

    def take(nbytes: int) -> bytes:
        nonlocal pos
        out = part[pos:pos + nbytes]
        pos += nbytes + -nbytes % 8
        return out

    def ints(count: int, dtype) -> np.ndarray:
        return np.frombuffer(take(count * np.dtype(dtype).itemsize), dtype)

    def strings(count: int) -> list[str]:
        offsets = ints(count + 1, np.int32)
        data = take(int(offsets[-1]))
        return [data[a:b].decode() for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]

    distinct, at = [], pos
    for length, count in head.get("dicts", []):
        enter(at)
        distinct.append(strings(count))
        at += length
    enter(at)
    out: dict = {"n": n, "dims": {}}
    for name, kind in head["fields"]:
        if kind == DIM:
            values = distinct.pop(0)
            out["dims"][name] = [values[c] for c in ints(n, np.int32).tolist()]
        elif kind == PLAIN_DIM:
            out["dims"][name] = strings(n)
        elif kind == MEASURE:
            out[name] = ints(n, np.int64).tolist()
        else:
            offsets = ints(n + 1, np.int32)
            e = int(offsets[-1])
            rows = np.repeat(np.arange(n), np.diff(offsets))
            out.setdefault("hist", {})[name] = {"row": rows.tolist(), "bucket": ints(e, np.int16).tolist(),
                                                "n": ints(e, np.int64).tolist()}
    return out


# ---------------------------------------------------------------------- a request
def request_body(frames: list[tuple[dict, bytes]], request: dict) -> bytes:
    """One request's body: ``frames`` as (header: source, seq, ts, host; part) in streams, one per
    column layout, each frame a record batch of its stream; ``request`` (agent, status, stats,
    sent_at) in the first stream's metadata. No frames: one stream without columns or batches."""
    streams: dict[str, list[tuple[dict, bytes]]] = {}
    for header, part in frames:
        (length,) = struct.unpack_from("<I", part)
        head = json.loads(part[4:4 + length])
        key = json.dumps(head["fields"])
        streams.setdefault(key, []).append(({"v": 3, **header, "family": head["family"]},
                                            memoryview(part)[4 + length:]))
    out: list[bytes | memoryview] = []
    for i, (key, members) in enumerate(streams.items() or [("[]", [])]):
        meta = {"loupe.frames": json.dumps([h for h, _ in members], separators=(",", ":"))}
        if i == 0:
            meta["loupe.request"] = json.dumps(request, separators=(",", ":"))
        out.append(schema_message([tuple(f) for f in json.loads(key)], meta))
        out += [m for _, m in members]
        out.append(EOS)
    return b"".join(out)
