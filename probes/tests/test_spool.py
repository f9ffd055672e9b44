"""The agent's on-disk spool: order, acknowledgement, restarts, torn records, the bound."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from loupe.arrow_ipc import encode_part, part_columns
from loupe_probes.spool import HEAD, MemoryQueue, Queued, Spool, SpoolInUse, encode


def frame(i: int, host: str = "h", source: str = "s@h", size: int = 40) -> Queued:
    body = json.dumps({"source": source, "seq": 1000 + i, "ts": 100 + i, "pad": "x" * size})
    return Queued(source, host, 1000 + i, 100 + i, body)


def seqs(q) -> list[int]:
    return [f.seq for f in q]


def segments(d: Path) -> list[str]:
    return sorted(p.name for p in d.glob("*.seg"))


REC = len(encode(frame(0)))  # every frame(i) with i < 10 has the same size


@pytest.fixture
def spool_dir(tmp_path: Path) -> Path:
    return tmp_path / "spool"


@pytest.mark.parametrize("kind", ["memory", "spool"])
def test_frames_come_back_in_order_and_peek_batches_by_host_and_size(kind: str, spool_dir: Path) -> None:
    q = MemoryQueue(1 << 20) if kind == "memory" else Spool(spool_dir, 1 << 20, segment_bytes=3 * REC)
    hosts = ["a", "a", "a", "b", "b", "a"]
    for i, h in enumerate(hosts):
        assert q.append(frame(i, host=h)) == 0
    assert seqs(q) == [1000 + i for i in range(6)] and len(q) == q.frames == 6
    assert seqs(q.peek(1 << 20, 100)) == [1000, 1001, 1002]  # one host per batch
    assert seqs(q.peek(1 << 20, 2)) == [1000, 1001]  # at most max_frames
    assert seqs(q.peek(1, 100)) == [1000]  # a frame larger than max_bytes still goes, alone
    q.ack(3)
    assert seqs(q.peek(1 << 20, 100)) == [1003, 1004]
    q.ack(2)
    assert seqs(q) == [1005] and q.frames == 1
    q.ack(1)
    assert seqs(q) == [] and q.frames == 0 and q.bytes == 0 and not q
    q.close()


@pytest.mark.parametrize(("appended", "acked", "left"), [
    # segments hold 3 records each; the one being written is kept even when finished
    (9, 0, ["000000000001.seg", "000000000002.seg", "000000000003.seg"]),
    (9, 2, ["000000000001.seg", "000000000002.seg", "000000000003.seg"]),
    (9, 3, ["000000000002.seg", "000000000003.seg"]),
    (9, 7, ["000000000003.seg"]),
    (9, 9, ["000000000003.seg"]),
    (7, 7, ["000000000003.seg"]),
])
def test_a_segment_is_deleted_once_every_frame_in_it_is_acknowledged(
        spool_dir: Path, appended: int, acked: int, left: list[str]) -> None:
    s = Spool(spool_dir, 1 << 20, segment_bytes=3 * REC)
    for i in range(appended):
        s.append(frame(i))
    s.ack(acked)
    assert segments(spool_dir) == left
    assert seqs(s) == [1000 + i for i in range(acked, appended)]
    assert s.frames == appended - acked and s.bytes == (appended - acked) * REC
    s.close()
    reopened = Spool(spool_dir, 1 << 20, segment_bytes=3 * REC)
    assert seqs(reopened) == [1000 + i for i in range(acked, appended)]
    if acked == appended:
        assert segments(spool_dir) == []  # nothing left to send: no file either
    reopened.close()


@pytest.mark.parametrize(("first", "acked", "then"), [(5, 0, 3), (5, 2, 3), (5, 5, 3), (0, 0, 2), (8, 4, 0)])
def test_reopening_continues_where_the_last_run_stopped(spool_dir: Path, first: int, acked: int, then: int) -> None:
    s = Spool(spool_dir, 1 << 20, segment_bytes=3 * REC)
    for i in range(first):
        s.append(frame(i, source="a@h" if i % 2 else "b@h"))
    s.ack(acked)
    s.close()
    s = Spool(spool_dir, 1 << 20, segment_bytes=3 * REC)
    assert seqs(s) == [1000 + i for i in range(acked, first)]
    assert s.frames == first - acked and s.bytes == (first - acked) * REC
    # the highest seq per source, for the agent to go on after it
    assert s.last_seq == {src: max(1000 + i for i in range(first) if (src == "a@h") == bool(i % 2))
                          for src in ({"a@h", "b@h"} if first > 1 else {"b@h"} if first else set())}
    for i in range(first, first + then):
        s.append(frame(i))
    assert seqs(s) == [1000 + i for i in range(acked, first + then)]  # the old ones first
    s.close()
    s = Spool(spool_dir, 1 << 20, segment_bytes=3 * REC)
    assert seqs(s) == [1000 + i for i in range(acked, first + then)]
    s.close()


def _cut(n: int):
    return lambda data: data[:-n]


def _flip(at: int):
    return lambda data: data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]


@pytest.mark.parametrize(("damage", "intact", "why"), [
    (_cut(1), 3, "a record cut short"),  # the last byte of the JSON never made it
    (_cut(REC - 5), 3, "a record header cut short"),  # died inside the header
    (_cut(REC - HEAD.size), 3, "a record cut short"),  # a header and no payload
    (_flip(-3), 3, "failing its checksum"),  # a payload byte not written
    (lambda data: data + b"\0" * 64, 4, "no record"),  # a block of zeros after the last record
    (lambda data: data + HEAD.pack(b"LSP1", 10, 0)[:-2], 4, "a record header cut short"),
])
def test_a_torn_last_record_is_dropped_with_a_log_line(spool_dir: Path, caplog, damage, intact: int,
                                                       why: str) -> None:
    s = Spool(spool_dir, 1 << 20)
    for i in range(4):
        s.append(frame(i))
    s.close()
    seg = spool_dir / segments(spool_dir)[-1]
    seg.write_bytes(damage(seg.read_bytes()))
    with caplog.at_level(logging.WARNING, logger="loupe.agent"):
        s = Spool(spool_dir, 1 << 20)
    assert seg.stat().st_size == intact * REC  # cut off, so the next run reads no garbage
    assert seqs(s) == [1000 + i for i in range(intact)] and s.frames == intact
    assert any(why in r.message and seg.name in r.message for r in caplog.records), caplog.text
    s.append(frame(7))
    s.close()
    s = Spool(spool_dir, 1 << 20)
    assert seqs(s) == [1000 + i for i in range(intact)] + [1007]
    s.close()


@pytest.mark.parametrize(("bound", "appended", "kept"), [
    (10 * REC, 10, 10),  # at the bound: nothing dropped
    (10 * REC, 15, 10),
    (10 * REC - 1, 15, 9),
    (3 * REC, 8, 3),
    (1, 4, 1),  # the newest frame stays, however large
])
@pytest.mark.parametrize("kind", ["memory", "spool"])
def test_the_bound_drops_the_oldest_frames_and_counts_them(
        spool_dir: Path, kind: str, bound: int, appended: int, kept: int) -> None:
    size = REC if kind == "spool" else len(frame(0).json)
    bound = bound * size // REC
    q = MemoryQueue(bound) if kind == "memory" else Spool(spool_dir, bound, segment_bytes=2 * REC)
    dropped = sum(q.append(frame(i)) for i in range(appended))
    assert dropped == q.dropped == appended - kept
    assert seqs(q) == [1000 + i for i in range(appended - kept, appended)]
    assert q.bytes == kept * size <= max(bound, size)
    if appended > kept:
        assert q.last_dropped.seq == 1000 + appended - kept - 1
    q.close()
    if kind == "spool":
        assert sum(p.stat().st_size for p in spool_dir.glob("*.seg")) <= max(bound, size) + 2 * REC
        s = Spool(spool_dir, bound, segment_bytes=2 * REC)
        assert s.dropped == appended - kept and seqs(s) == [1000 + i for i in range(appended - kept, appended)]
        s.close()


@pytest.mark.parametrize(("ack", "replayed"), [
    (None, 6),  # no ack.json (lost, or never written): everything is sent again
    ("not json", 6),
    ({"segment": 1, "offset": 2 * REC, "dropped": 0}, 4),
    ({"segment": 1, "offset": 2 * REC + 3, "dropped": 0}, 3),  # not on a record: from the next one
    ({"segment": 1, "offset": 99 * REC, "dropped": 0}, 3),  # beyond what is there (a power cut)
    ({"segment": 2, "offset": 0, "dropped": 0}, 3),  # segment 1 finished but not deleted yet
    ({"segment": 2, "offset": REC, "dropped": 0}, 2),
    ({"segment": 3, "offset": 0, "dropped": 0}, 0),
])
def test_the_acknowledged_mark_decides_what_is_sent_again(spool_dir: Path, ack, replayed: int) -> None:
    s = Spool(spool_dir, 1 << 20, segment_bytes=3 * REC)
    for i in range(6):
        s.append(frame(i))
    s.close()
    assert segments(spool_dir) == ["000000000001.seg", "000000000002.seg"]
    if ack is None:
        (spool_dir / "ack.json").unlink()
    else:
        (spool_dir / "ack.json").write_text(ack if isinstance(ack, str) else json.dumps(ack))
    s = Spool(spool_dir, 1 << 20, segment_bytes=3 * REC)
    assert seqs(s) == [1000 + i for i in range(6 - replayed, 6)] and s.frames == replayed
    assert len(segments(spool_dir)) == (replayed + 2) // 3  # finished segments are gone
    s.close()


def _crash(s: Spool) -> None:
    """What the kernel does when the process dies: its files are closed (the lock goes with them),
    nothing else is done."""
    for fd in (s._lock, s._wfd):
        if fd is not None:
            os.close(fd)


@pytest.mark.parametrize("before", ["nothing", "everything acknowledged", "some acknowledged", "an idle restart"])
def test_frames_written_before_a_crash_are_there_without_sync_or_close(spool_dir: Path, before: str) -> None:
    s = Spool(spool_dir, 1 << 20, segment_bytes=3 * REC)
    if before != "nothing":
        for i in range(5):
            s.append(frame(i))
        s.ack(4 if before == "some acknowledged" else 5)
        s.close()
        s = Spool(spool_dir, 1 << 20, segment_bytes=3 * REC)
    if before == "an idle restart":  # no segment left at all: new ones must not count as acknowledged
        s.close()
        assert segments(spool_dir) == []
        s = Spool(spool_dir, 1 << 20, segment_bytes=3 * REC)
    pending = ([1004] if before == "some acknowledged" else []) + [1010, 1011, 1012, 1013]
    for i in range(10, 14):
        s.append(frame(i))
    _crash(s)
    s = Spool(spool_dir, 1 << 20, segment_bytes=3 * REC)
    assert seqs(s) == pending
    s.ack(3)  # acknowledged, then killed before the next sync: maybe sent again, never lost
    s.append(frame(20))
    _crash(s)
    s = Spool(spool_dir, 1 << 20, segment_bytes=3 * REC)
    after = seqs(s)
    assert after[-1] == 1020 and after[:-1] == pending[len(pending) - len(after) + 1:]
    assert len(after) - 1 >= len(pending) - 3
    s.close()


def test_one_spool_one_agent(spool_dir: Path) -> None:
    s = Spool(spool_dir, 1 << 20)
    with pytest.raises(SpoolInUse, match="in use by another agent"):
        Spool(spool_dir, 1 << 20)
    s.close()
    Spool(spool_dir, 1 << 20).close()


def arrow_frame(i: int, host: str = "h") -> Queued:
    part = encode_part("disk", {"n": 2, "dims": {"disk": ["sda", f"d{i}"]}, "count": [i, 1],
                                "hist": {"latency": {"row": [1], "bucket": [20], "n": [i]}}})
    return Queued("s@h", host, 1000 + i, 100 + i, arrow=part)


@pytest.mark.parametrize("kind", ["memory", "spool"])
def test_arrow_frames_replay_beside_json_ones_from_an_older_spool(spool_dir: Path, kind: str) -> None:
    """Version-3 frames spool as Arrow parts (LSP2 records) after version-2 JSON ones (LSP1, what
    agents spooled before), come back whole and in order, and a batch holds one kind only."""
    q = MemoryQueue(1 << 20) if kind == "memory" else Spool(spool_dir, 1 << 20, segment_bytes=3 * REC)
    made = [frame(0), frame(1), arrow_frame(2), arrow_frame(3), frame(4), arrow_frame(5)]
    for f in made:
        q.append(f)
    if kind == "spool":
        q.close()
        raw = b"".join((spool_dir / s).read_bytes() for s in segments(spool_dir))
        assert raw.count(b"LSP1") == 3 and raw.count(b"LSP2") == 3
        q = Spool(spool_dir, 1 << 20, segment_bytes=3 * REC)
    assert list(q) == made and q.bytes == (sum(len(encode(f)) for f in made) if kind == "spool"
                                            else sum(f.size for f in made))
    assert [f.family for f in q if f.arrow] == ["disk"] * 3
    assert part_columns(list(q)[3].arrow)["hist"]["latency"] == {"row": [1], "bucket": [20], "n": [3]}
    assert seqs(q.peek(1 << 20, 100)) == [1000, 1001]  # JSON, then Arrow: separate requests
    q.ack(2)
    assert seqs(q.peek(1 << 20, 100)) == [1002, 1003]
    q.ack(2)
    assert seqs(q.peek(1 << 20, 100)) == [1004]
    q.close()
