"""The ingest log and the stage: acknowledged means on disk, counted once, replayed after a crash."""

import os
import pathlib
import shutil
import subprocess
import threading
import zlib

import pytest
from factories import NOW, random_nfs_frames

from loupe.catalog import FAMILIES, METRICS
from loupe.store.base import Statistic, StoreUnavailable
from loupe.store.duckdb_store import DuckDBStore
from loupe.store import ingest_log
from loupe.store.ingest_log import IngestLog, read_segment
from loupe.timerange import Window

OPS = METRICS["nfs.ops"]
TOTAL = Statistic(OPS)


def count_of(frames) -> int:
    return sum(r.count for f in frames for r in f.rows)


def stored(store, lo=NOW, hi=NOW + 600) -> float:
    """Events stored in [lo, hi), as a query sees them (stage, hot and settled tables together)."""
    return store.aggregate(TOTAL, Window(lo, hi, hi - lo, "second"), 1).total[0] * (hi - lo)


def test_acknowledged_batches_are_in_the_log_until_flushed(tmp_path):
    s = DuckDBStore(tmp_path / "a.duckdb", clock=lambda: NOW)
    frames = random_nfs_frames(NOW, 30)
    s.ingest(frames, received_at=NOW + 31)
    segs = s._log.segments()
    assert len(segs) == 1
    records, _, why = read_segment(segs[0])
    assert why is None and sum(r.tables["nfs"].num_rows for r in records) == sum(len(f.rows) for f in frames)
    assert stored(s) == pytest.approx(count_of(frames))  # queries see the stage
    assert s._cur.execute("SELECT count(*) FROM nfs_s_hot").fetchall() == [(0,)]
    assert s.flush() == sum(len(f.rows) for f in frames)
    assert above(s._log.segments(), s._flushed_lsn) == []  # committed: kept for reuse only
    assert stored(s) == pytest.approx(count_of(frames))  # and counted once
    assert s.flush() == 0
    s.close()


def kill(s) -> None:
    """Stop a store as a kill would: no flush, no checkpoint."""
    s._log.close()
    s._db.close()


def above(segments, lsn) -> list[int]:
    return [r.lsn for seg in segments for r in read_segment(seg)[0] if r.lsn > lsn]


def test_committed_segments_are_overwritten_and_a_crash_replays_only_the_new_records(tmp_path):
    """Each flush's segment is reused by a later one (no new files, no metadata to sync); after a
    kill, what a reused segment still holds of its old records is neither replayed nor counted twice."""
    path = tmp_path / "r.duckdb"
    s = DuckDBStore(path, clock=lambda: NOW)
    frames = random_nfs_frames(NOW, 60, clients=20, files=40)
    inodes = set()
    for i in range(0, 50, 5):  # ten flushes of five frames each; the later ones smaller
        s.ingest(frames[i : i + (5 if i < 25 else 1)], received_at=NOW + 61)
        inodes |= {seg.stat().st_ino for seg in s._log.segments()}
        s.flush()
    assert len(inodes) <= ingest_log.SPARES + 1
    assert len(s._log.segments()) <= ingest_log.SPARES
    kept = [f for i in range(0, 50, 5) for f in frames[i : i + (5 if i < 25 else 1)]]
    unflushed = frames[50:53]
    s.ingest(unflushed, received_at=NOW + 61)
    (seg,) = [x for x in s._log.segments() if above([x], s._flushed_lsn)]
    _, good, _ = read_segment(seg)
    assert seg.stat().st_size > good  # old records follow the new one
    kill(s)  # the last record is only in the log
    s = DuckDBStore(path, clock=lambda: NOW)
    try:
        assert stored(s) == pytest.approx(count_of(kept) + count_of(unflushed))
        assert s.high_water() == {"r@h": unflushed[-1].seq}
    finally:
        s.close()


def test_a_new_store_does_not_replay_the_log_of_a_store_deleted_beside_it(tmp_path):
    """Segments kept for reuse still hold old records: a store file deleted (to start afresh)
    must not come back from the log left beside it."""
    path = tmp_path / "d.duckdb"
    s = DuckDBStore(path, clock=lambda: NOW)
    s.ingest(random_nfs_frames(NOW, 10), received_at=NOW + 11)
    s.flush()
    s.ingest(random_nfs_frames(NOW + 10, 1, source="late@h"), received_at=NOW + 11)
    kill(s)  # with a record unflushed
    assert s._log.segments()
    path.unlink()
    pathlib.Path(str(path) + ".wal").unlink(missing_ok=True)
    s = DuckDBStore(path, clock=lambda: NOW)
    try:
        assert stored(s) == 0 and s.high_water() == {} and s._log.segments() == []
    finally:
        s.close()


def test_a_record_out_of_lsn_sequence_ends_a_segment(tmp_path):
    log = IngestLog(tmp_path / "seq")
    log.replay(0)
    probe = DuckDBStore(tmp_path / "p.duckdb", clock=lambda: NOW)
    table, _ = probe._to_arrow(FAMILIES["nfs"], random_nfs_frames(NOW, 1))
    probe.close()
    recs = [b"".join(ingest_log.encode(lsn, {"a@h": lsn}, ["nas1"], NOW, {"nfs": table})) for lsn in (7, 8, 3, 9)]
    seg = tmp_path / "seq" / "00000000000000000007.log"
    seg.write_bytes(b"".join(recs))
    records, good, why = read_segment(seg)
    assert [r.lsn for r in records] == [7, 8] and good == len(recs[0]) + len(recs[1]) and why is None


def test_records_written_through_the_reused_memory_read_back_whole(tmp_path):
    """Each record is encoded into memory kept from the last: records that grow past it, shrink
    under it, hold several families, or exceed what is kept, all read back as written."""
    probe = DuckDBStore(tmp_path / "p.duckdb", clock=lambda: NOW)
    nfs = [probe._to_arrow(FAMILIES["nfs"], random_nfs_frames(NOW, k, seed=k))[0] for k in (1, 6, 2, 12)]
    disk = probe._to_arrow(FAMILIES["disk"], [])[0]
    probe.close()
    log = IngestLog(tmp_path / "reuse")
    log.replay(0)
    log._scratch.KEEP = nfs[1].nbytes  # the 12-second record is larger than what is kept
    want = [{"nfs": nfs[0]}, {"nfs": nfs[1], "disk": disk}, {"nfs": nfs[2]}, {"nfs": nfs[3]}, {"nfs": nfs[0]}]
    for i, tables in enumerate(want):
        assert log.append({"a@h": i}, {"nas1"}, NOW, tables) == i + 1
    kept = log._scratch._buf
    assert kept is not None and kept.size <= log._scratch.KEEP
    records, _, why = read_segment(log.segments()[0])
    assert why is None and [r.lsn for r in records] == [1, 2, 3, 4, 5]
    for r, tables in zip(records, want):
        assert r.tables.keys() == tables.keys()
        assert all(r.tables[f].equals(t) for f, t in tables.items())
    assert nfs[3].num_rows > nfs[1].num_rows > nfs[0].num_rows


def test_a_torn_record_at_the_tail_is_dropped_and_the_rest_replayed(tmp_path):
    path = tmp_path / "t.duckdb"
    s = DuckDBStore(path, clock=lambda: NOW)
    first = random_nfs_frames(NOW, 20, source="a@h")
    s.ingest(first, received_at=NOW + 21)
    seg = s._log.segments()[0]
    kill(s)  # nothing flushed
    whole = seg.read_bytes()
    # a second record cut off mid-write (never acknowledged), after the good one
    log = IngestLog(tmp_path / "scratch")
    log.replay(0)
    extra = random_nfs_frames(NOW + 20, 5, source="b@h")
    probe = DuckDBStore(tmp_path / "p.duckdb", clock=lambda: NOW)
    table, _ = probe._to_arrow(FAMILIES["nfs"], extra)
    probe.close()
    log.append({"b@h": extra[-1].seq}, {"nas1"}, NOW, {"nfs": table})
    log.close()
    torn = next((tmp_path / "scratch").glob("*.log")).read_bytes()
    seg.write_bytes(whole + torn[: len(torn) // 2])

    s = DuckDBStore(path, clock=lambda: NOW)
    try:
        assert stored(s) == pytest.approx(count_of(first))
        assert s.high_water() == {"a@h": first[-1].seq}  # the torn record's source is unknown
        out = s.ingest(extra, received_at=NOW + 30)  # sent again by its agent: stored now, once
        assert out.accepted == len(extra)
        s.flush()
        assert stored(s) == pytest.approx(count_of(first) + count_of(extra))
    finally:
        s.close()


def test_a_query_bound_before_a_flush_commits_counts_each_row_once(tmp_path):
    s = DuckDBStore(tmp_path / "o.duckdb", clock=lambda: NOW)
    frames = random_nfs_frames(NOW, 50, seed=4)
    s.ingest(frames, received_at=NOW + 51)
    cur = s._qcur("nfs")  # what a query holds: the stage as it was before the flush
    s.flush()  # the same rows are now in the hot table
    both = "SELECT sum(count) FROM (SELECT count FROM nfs_s_hotv UNION ALL SELECT count FROM nfs_stagev)"
    assert cur.execute(both).fetchall() == [(count_of(frames),)]
    s.close()


def test_queries_see_a_consistent_total_while_seconds_arrive_and_flush(tmp_path):
    s = DuckDBStore(tmp_path / "c.duckdb", clock=lambda: NOW)
    frames = random_nfs_frames(NOW, 150, seed=7)
    prefix = {0}
    for i in range(len(frames)):
        prefix.add(count_of(frames[: i + 1]))
    stop = threading.Event()
    seen: list[float] = []

    def query():
        while not stop.is_set():
            seen.append(stored(s, NOW, NOW + 150))

    q = threading.Thread(target=query)
    q.start()
    for f in frames:
        s.ingest([f], received_at=NOW + 151)
        s.flush()
    stop.set()
    q.join()
    assert len(seen) > 5
    assert all(round(v) in prefix for v in seen), [v for v in seen if round(v) not in prefix][:5]
    assert stored(s, NOW, NOW + 150) == pytest.approx(count_of(frames))
    s.close()


def test_a_full_stage_wakes_the_flush_thread_instead_of_flushing_in_the_request(tmp_path):
    frames = random_nfs_frames(NOW, 10)
    s = DuckDBStore(tmp_path / "w.duckdb", clock=lambda: NOW, stage_flush_rows=len(frames[0].rows))
    flushed = threading.Event()

    def flush_thread():
        s.wait_flush(120)  # only a wake-up ends this wait within the test's time
        s.flush()
        flushed.set()

    t = threading.Thread(target=flush_thread)
    t.start()
    try:
        while not s._flush_thread:
            t.join(0.01)
        s.ingest(frames, received_at=NOW + 11)
        assert s.inline_flushes == 0
        assert flushed.wait(60)
        assert s._cur.execute("SELECT count(*) FROM nfs_s_hot").fetchone()[0] == sum(len(f.rows) for f in frames)
    finally:
        s.request_flush()
        t.join()
        s.close()


def test_a_store_that_cannot_flush_refuses_instead_of_growing(tmp_path):
    frames = random_nfs_frames(NOW, 40)
    s = DuckDBStore(tmp_path / "b.duckdb", clock=lambda: NOW, stage_flush_rows=10**9,
                    stage_max_rows=sum(len(f.rows) for f in frames[:20]) - 1)
    s.ingest(frames[:20], received_at=NOW + 41)
    with pytest.raises(StoreUnavailable, match="not keeping up"):
        s.ingest(frames[20:], received_at=NOW + 41)
    s.flush()  # the store catches up: the refused frames are taken when sent again
    assert s.ingest(frames[20:], received_at=NOW + 42).accepted == 20
    assert stored(s) == pytest.approx(count_of(frames))
    s.close()


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("mount"), reason="needs root to mount a small tmpfs")
def test_a_full_log_disk_refuses_ingest_and_loses_nothing_acknowledged(tmp_path):
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(small)], check=True)
    try:
        path = tmp_path / "f.duckdb"
        os.symlink(small, str(path) + ".ingest")  # the log on the small disk, the tables elsewhere
        s = DuckDBStore(path, clock=lambda: NOW)
        frames = random_nfs_frames(NOW, 2000, seed=5)
        acked, refused_at = [], None
        for i, f in enumerate(frames):
            try:
                s.ingest([f], received_at=NOW + 2001)
                acked.append(f)
            except StoreUnavailable as e:
                assert "ingest log write failed" in str(e) and "No space left" in str(e)
                refused_at = i
                break
        assert refused_at is not None, "256 KiB of log never filled"
        assert stored(s, NOW, NOW + 2000) == pytest.approx(count_of(acked))
        s.flush()  # into the tables: the log's segments are deleted and space returns
        rest = frames[refused_at:refused_at + 50]
        assert s.ingest(rest, received_at=NOW + 2001).accepted == len(rest)
        s.close()
        s = DuckDBStore(path, clock=lambda: NOW)
        try:
            assert stored(s, NOW, NOW + 2000) == pytest.approx(count_of(acked) + count_of(rest))
        finally:
            s.close()
    finally:
        subprocess.run(["umount", "-l", str(small)], check=False)


def _as_previous_format(record: bytes) -> bytes:
    """A record as a server before CRC-32C wrote it: magic LPL1, zlib's CRC-32."""
    _, hl, bl, _ = ingest_log.HEAD.unpack_from(record)
    rest = record[ingest_log.HEAD.size:]
    return ingest_log.HEAD.pack(b"LPL1", hl, bl, zlib.crc32(rest)) + rest


def test_records_of_the_previous_format_are_replayed_and_checked(tmp_path):
    probe = DuckDBStore(tmp_path / "p.duckdb", clock=lambda: NOW)
    frames = random_nfs_frames(NOW, 3)
    tables = [probe._to_arrow(FAMILIES["nfs"], [f])[0] for f in frames]
    probe.close()
    recs = [b"".join(ingest_log.encode(lsn, {"a@h": frames[lsn - 1].seq}, ["nas1"], NOW, {"nfs": t}))
            for lsn, t in zip((1, 2, 3), tables)]
    old = [_as_previous_format(r) for r in recs]
    seg = tmp_path / "old.log"
    seg.write_bytes(old[0] + recs[1] + old[2])  # a store upgraded between two flushes: both formats
    records, good, why = read_segment(seg)
    assert [r.lsn for r in records] == [1, 2, 3] and why is None and good == seg.stat().st_size
    assert [r.tables["nfs"].equals(t) for r, t in zip(records, tables)] == [True] * 3
    # a flipped bit in either format fails its own checksum
    for bad in (old[0], recs[0]):
        flipped = bytearray(bad)
        flipped[-5] ^= 1
        seg.write_bytes(bytes(flipped))
        records, good, why = read_segment(seg)
        assert records == [] and good == 0 and "failing its checksum" in why


def test_ingest_and_an_agents_status_do_not_wait_for_the_write_lock(tmp_path):
    """A checkpoint or a re-sort holds the write lock for seconds: an agent's request (its frames
    and its sources' states) is acknowledged meanwhile, and the next flush stores the states."""
    from loupe.frame import SourceStatus

    path = tmp_path / "s.duckdb"
    s = DuckDBStore(path, clock=lambda: NOW)
    frames = random_nfs_frames(NOW, 3)
    status = [SourceStatus(name="nfs-wire", families=["nfs"], state="active")]
    held, release = threading.Event(), threading.Event()

    def writer():  # stands in for a long checkpoint
        with s._wlock:
            held.set()
            release.wait(60)

    w = threading.Thread(target=writer)
    w.start()
    assert held.wait(10)
    try:
        req = threading.Thread(target=lambda: (s.ingest(frames, received_at=NOW + 4),
                                               s.record_status("agent-1", "nas1", status, NOW + 4)))
        req.start()
        req.join(10)
        assert not req.is_alive(), "the request waited for the write lock"
        assert [x["state"] for x in s.sources()] == ["active"]
    finally:
        release.set()
        w.join()
    s.flush()
    s.record_status("agent-1", "nas1", [status[0].model_copy(update={"state": "suspended"})], NOW + 5)
    s.record_status("agent-1", "nas1", [status[0].model_copy(update={"state": "suspended"})], NOW + 6)
    s.close()  # flushes the changed state
    s = DuckDBStore(path, clock=lambda: NOW)
    try:
        assert [(x["agent"], x["name"], x["host"], x["state"], x["last_seen"]) for x in s.sources()] == \
            [("agent-1", "nfs-wire", "nas1", "suspended", NOW + 5)]
        assert stored(s) == pytest.approx(count_of(frames))
    finally:
        s.close()


def v3(frames) -> tuple[list, bytes]:
    """A version-3 body of `frames` as the agent sends it, and the frames decoded from it."""
    from loupe.arrow_ipc import encode_part, request_body
    from loupe.columns import rows_to_columns
    from loupe.frame_v3 import decode

    body = request_body([({"source": f.source, "seq": f.seq, "ts": f.ts, "host": f.host},
                          encode_part("nfs", rows_to_columns([r.model_dump() for r in f.rows]))) for f in frames], {})
    return decode(body)[1], body


def test_a_body_whose_conversion_fails_is_cut_off_and_can_be_sent_again(tmp_path):
    """The body is on disk before its frames are converted: if the conversion fails, the record is
    cut off (its fsync waited for first), the frames are not acknowledged, and sent again they are
    stored once, after a kill too."""
    path = tmp_path / "c.duckdb"
    s = DuckDBStore(path, clock=lambda: NOW)
    first, second = random_nfs_frames(NOW, 5, source="a@h"), random_nfs_frames(NOW + 5, 5, source="b@h")
    s.ingest(*v3(first)[:1], received_at=NOW + 20, body=v3(first)[1])
    (seg,) = s._log.segments()
    size = seg.stat().st_size
    convert = s._frames_to_arrow

    def failing(*a):
        raise MemoryError("conversion failed")

    s._frames_to_arrow = failing
    frames, body = v3(second)
    with pytest.raises(MemoryError):
        s.ingest(frames, received_at=NOW + 20, body=body)
    s._frames_to_arrow = convert
    assert [r.lsn for seg in s._log.segments() for r in read_segment(seg)[0]] == [1]  # cut off
    assert seg.stat().st_size == size and stored(s) == pytest.approx(count_of(first))
    assert s.ingest(frames, received_at=NOW + 21, body=body).accepted == 5  # not taken for duplicates
    kill(s)
    s = DuckDBStore(path, clock=lambda: NOW)
    try:
        assert stored(s) == pytest.approx(count_of(first) + count_of(second))
        assert s.high_water() == {"a@h": first[-1].seq, "b@h": second[-1].seq}
    finally:
        s.close()


def test_a_body_waiting_for_the_log_lock_joins_the_group_commit(tmp_path):
    """While another commit holds the log lock a request does not wait to log its body: it converts
    and queues its rows, which the next commit writes (a record of rows, not of a body)."""
    s = DuckDBStore(tmp_path / "g.duckdb", clock=lambda: NOW)
    frames, body = v3(random_nfs_frames(NOW, 4))
    s._llock.acquire()
    t = threading.Thread(target=lambda: s.ingest(frames, received_at=NOW + 5, body=body))
    t.start()
    t.join(0.5)
    assert t.is_alive() and len(s._queue) == 1  # converted and queued behind the lock
    s._llock.release()
    t.join(10)
    (rec,) = read_segment(s._log.segments()[0])[0]
    assert rec.body is None and rec.tables["nfs"].num_rows == sum(len(f.rows) for f in random_nfs_frames(NOW, 4))
    assert stored(s) == pytest.approx(count_of(random_nfs_frames(NOW, 4)))
    s.close()


@pytest.mark.skipif(ingest_log._glibc_aio() is None, reason="needs glibc's POSIX AIO on x86_64 or aarch64 Linux")
def test_the_sync_runs_in_glibcs_aio_and_its_failures_are_raised(tmp_path):
    syncer = ingest_log.Syncer()
    assert syncer.overlaps
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT)
    try:
        os.write(fd, b"x" * 100_000)
        wait = syncer.start(fd)
        wait()  # synced
    finally:
        os.close(fd)
    r, w = os.pipe()  # fdatasync on a pipe fails (EINVAL) in glibc's thread: the wait raises it
    try:
        wait = syncer.start(w)
        with pytest.raises(OSError, match="fdatasync"):
            wait()
    finally:
        os.close(r)
        os.close(w)
    with pytest.raises(OSError):  # a closed descriptor: refused at once or when waited for
        syncer.start(w)()


def test_without_aio_the_sync_runs_at_once(tmp_path):
    syncer = ingest_log.Syncer()
    syncer.lib = None  # a libc without POSIX AIO
    assert not syncer.overlaps
    r, w = os.pipe()
    try:
        with pytest.raises(OSError):
            syncer.start(w)  # synced (and failed) at once
    finally:
        os.close(r)
        os.close(w)
    s = DuckDBStore(tmp_path / "n.duckdb", clock=lambda: NOW)
    s._log._syncer = syncer
    frames, body = v3(random_nfs_frames(NOW, 3))
    assert s.ingest(frames, received_at=NOW + 5, body=body).accepted == 3
    assert read_segment(s._log.segments()[0])[0][0].body == body
    assert stored(s) == pytest.approx(count_of(random_nfs_frames(NOW, 3)))
    s.close()


def test_a_logged_body_that_cannot_be_read_again_is_reported_and_the_rest_replayed(tmp_path, caplog):
    path = tmp_path / "b.duckdb"
    s = DuckDBStore(path, clock=lambda: NOW)
    good = random_nfs_frames(NOW, 3, source="a@h")
    frames, body = v3(good)
    s.ingest(frames, received_at=NOW + 5, body=body)
    seg = s._log.segments()[0]
    kill(s)
    # a record whose keep list names a frame its body lacks (as a changed decoder would see it)
    _, other = v3(random_nfs_frames(NOW + 3, 1, source="b@h"))
    bad = b"".join(ingest_log.encode_body(2, {"c@h": 9}, ["nas1"], NOW, [["c@h", 9, NOW]], other))
    seg.write_bytes(seg.read_bytes() + bad)
    with caplog.at_level("ERROR", logger="loupe.store"):
        s = DuckDBStore(path, clock=lambda: NOW)
    try:
        assert "ingest log record 2 cannot be read again" in caplog.text and "('c@h', 9)" in caplog.text
        assert stored(s) == pytest.approx(count_of(good))
    finally:
        s.close()
