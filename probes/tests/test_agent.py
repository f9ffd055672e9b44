"""The agent against a real HTTP server on a loopback port (no mocked HTTP layer)."""

from __future__ import annotations

import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from loupe.arrow_ipc import MEDIA_TYPE as ARROW_MEDIA_TYPE
from loupe.frame import IngestRequest
from loupe.frame_v3 import decode
from loupe_probes import registry
from loupe_probes.agent import Agent, demo_main, main, make_agent, start_in_thread
from loupe_probes.source import Source, status_entry
from loupe_probes.synthetic.nas import SyntheticNAS

TOKEN = "s3cret-token"


class Backend:
    """A tiny ingest endpoint: checks the token, validates with the backend's own readers (JSON, or
    Arrow IPC for version 3), de-duplicates by (source, seq), records."""

    def __init__(self) -> None:
        self.requests: list[dict] = []  # every request as received: headers, size, format and parsed body
        self.frames: list[dict] = []  # frames stored, in arrival order (a version-3 frame's rows as columns)
        self.hwm: dict[str, int] = {}
        self.mode = "ok"  # or "503"
        # Arrow bodies: "read" them, answer "415", or answer as a server from before version 3 ("pre-v3")
        self.arrow = "read"
        self.poison_ts: int | None = None  # a request holding a frame of this second gets 422
        self.lock = threading.Lock()
        self.port = 0
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        backend = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                code, answer = backend.handle(self.path, dict(self.headers), raw)
                out = json.dumps(answer).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def handle(self, path: str, headers: dict, raw: bytes) -> tuple[int, dict]:
        with self.lock:
            arrow = headers.get("Content-Type") == ARROW_MEDIA_TYPE
            self.requests.append({"path": path, "headers": headers, "size": len(raw), "arrow": arrow, "code": 0})
            code, answer = self._answer(path, headers, raw, arrow)
            self.requests[-1]["code"] = code
            return code, answer

    def _answer(self, path: str, headers: dict, raw: bytes, arrow: bool) -> tuple[int, dict]:
        if path != "/api/v1/ingest":
            return 404, {"detail": "no route"}
        if headers.get("Authorization") != f"Bearer {TOKEN}":
            return 401, {"detail": "invalid ingest token"}
        if arrow and self.arrow == "415":
            return 415, {"detail": "unsupported media type"}
        if arrow and self.arrow == "pre-v3":  # what a server from before version 3 answered an Arrow body
            msg = "Input should be a valid dictionary or object to extract fields from"
            return 422, {"detail": msg, "errors": [{"type": "model_attributes_type", "msg": msg, "loc": ["body"]}]}
        if arrow:  # the backend's own contract
            req, read = decode(raw)
            frames = [{"v": 3, "source": f.source, "seq": f.seq, "ts": f.ts, "family": f.family, "host": f.host,
                       "columns": f.columns()} for f in read]
        else:
            req = IngestRequest.model_validate_json(raw)
            frames = [f.model_dump() for f in req.frames]
        self.requests[-1]["body"] = {**req.model_dump(mode="json", exclude={"frames"}), "frames": frames}
        if self.mode == "503":
            return 503, {"detail": "store busy"}
        if self.poison_ts is not None and any(f["ts"] == self.poison_ts for f in frames):
            return 422, {"detail": f"frames: ts {self.poison_ts} is poisoned"}
        accepted = duplicates = rows = 0
        for f in sorted(frames, key=lambda f: (f["source"], f["seq"])):  # as the store takes them
            if f["seq"] <= self.hwm.get(f["source"], -1):
                duplicates += 1
                continue
            self.hwm[f["source"]] = f["seq"]
            self.frames.append(f)
            accepted += 1
            rows += f["columns"]["n"] if f["columns"] else len(f["rows"])
        return 200, {"accepted": accepted, "duplicates": duplicates, "rows": rows, "folded_rows": 0}

    def series(self, source: str, family: str) -> list[int]:
        with self.lock:
            return [f["ts"] for f in self.frames if f["source"] == source and f["family"] == family]

    def wait_for(self, pred, timeout: float = 20.0) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if pred():
                return
            time.sleep(0.05)
        raise AssertionError("condition not reached in time")


@pytest.fixture
def backend():
    b = Backend()
    yield b
    b.stop()


def _run(agent: Agent) -> tuple[threading.Thread, threading.Event]:
    stop = threading.Event()
    t = threading.Thread(target=agent.run, args=(stop,), daemon=True)
    t.start()
    return t, stop


def _halt(t: threading.Thread, stop: threading.Event) -> None:
    stop.set()
    t.join(timeout=15)
    assert not t.is_alive()


def _assert_seq_strictly_increasing(frames: list[dict]) -> None:
    last: dict[str, int] = {}
    for f in frames:
        assert f["seq"] > last.get(f["source"], -1), f
        last[f["source"]] = f["seq"]


def test_live_frames_are_authorised_valid_and_in_sequence(backend: Backend, tmp_path: Path) -> None:
    started_us = time.time_ns() // 1000
    agent = make_agent(backend.url, TOKEN, ["procfs", "synthetic"], demo_clients=4, seed=3, host="nas1",
                       state_dir=tmp_path)
    t, stop = _run(agent)
    backend.wait_for(lambda: len(backend.series("procfs.cpu@nas1", "cpu")) >= 2
                     and len(backend.series("synthetic@demo-nas", "nfs")) >= 3)
    _halt(t, stop)
    assert backend.requests
    reported = {}
    for r in backend.requests:
        assert r["headers"]["Authorization"] == f"Bearer {TOKEN}" and r["path"] == "/api/v1/ingest"
        assert r["arrow"]  # version 3
        req = IngestRequest.model_validate({**r["body"], "frames": []})
        assert req.agent == agent.agent_id and abs(req.sent_at - time.time()) < 30
        # One host per request, with the status of the sources about that host; a status-only
        # request (sent at start, before any source has a frame) carries everyone's.
        hosts = {f["host"] for f in r["body"]["frames"]}
        if hosts:
            assert len(hosts) == 1
            prefix = "synthetic." if hosts == {"demo-nas"} else "procfs."
            assert req.status and all(s.name.startswith(prefix) for s in req.status)
        else:
            assert len(req.status) == 8  # procfs's cpu, disk, net; the demo's five families (net_link too)
        reported.update({s.name: s for s in req.status})
    assert {"procfs.cpu", "procfs.disk", "procfs.net", "synthetic.nfs", "synthetic.net"} <= set(reported)
    assert reported["synthetic.nfs"].demo and not reported["procfs.cpu"].demo
    frames = backend.frames
    _assert_seq_strictly_increasing(frames)
    assert min(f["seq"] for f in frames) >= started_us  # seq starts from the wall clock in microseconds
    # One frame per (source, family, host) per second; ts is the second that just closed.
    for (src, fam) in {(f["source"], f["family"]) for f in frames}:
        ts = backend.series(src, fam)
        assert ts == list(range(ts[0], ts[0] + len(ts))), (src, fam, ts)
    newest = max(f["ts"] for f in frames)
    assert time.time() - 3 < newest + 1 <= time.time()
    assert {f["host"] for f in frames if f["source"].startswith("procfs")} == {"nas1"}
    assert {f["family"] for f in frames if f["source"] == "synthetic@demo-nas"} == set(SyntheticNAS.families)
    assert {f["source"] for f in frames} >= {"procfs.cpu@nas1", "synthetic@demo-nas"}


def test_backfill_sends_history_oldest_first_in_batches(backend: Backend) -> None:
    messages: list[str] = []
    t0 = int(time.time())
    agent = make_agent(backend.url, TOKEN, ["synthetic"], demo_clients=3, seed=5, backfill=120,
                       max_request_bytes=256 << 10, progress=messages.append)
    t, stop = _run(agent)
    backend.wait_for(lambda: len(backend.series("synthetic@demo-nas", "nfs")) >= 122)
    _halt(t, stop)
    ts = backend.series("synthetic@demo-nas", "nfs")
    assert ts == list(range(ts[0], ts[0] + len(ts)))  # oldest first, no gap, no repeat
    assert t0 - 121 <= ts[0] <= t0 - 119
    assert len(backend.requests) >= 5  # in batches, not one giant request
    assert all(r["size"] < 300 << 10 for r in backend.requests)
    assert messages[0].startswith("backfill: 120 s") and any("120/120" in m for m in messages)
    _assert_seq_strictly_increasing(backend.frames)


def test_retries_through_503_and_outage_without_loss_or_duplicates(backend: Backend) -> None:
    agent = make_agent(backend.url, TOKEN, ["synthetic"], demo_clients=3, seed=5, min_backoff=0.1, max_backoff=0.4)
    t, stop = _run(agent)
    backend.wait_for(lambda: len(backend.series("synthetic@demo-nas", "nfs")) >= 2)
    backend.mode = "503"
    time.sleep(2.2)
    backend.stop()  # connection refused from here on
    time.sleep(2.2)
    down_until = int(time.time())
    backend.mode = "ok"
    backend.start()
    backend.wait_for(lambda: max(backend.series("synthetic@demo-nas", "nfs")) >= down_until + 1)
    _halt(t, stop)
    assert sum(r["code"] == 503 for r in backend.requests) >= 2  # the 503s were real requests, retried
    for fam in SyntheticNAS.families:
        ts = backend.series("synthetic@demo-nas", fam)
        assert ts == list(range(ts[0], ts[0] + len(ts))), (fam, ts)
    _assert_seq_strictly_increasing(backend.frames)
    assert agent.stats["dropped"] == 0 and agent.stats["duplicates"] == 0 and agent.stats["refused"] == 0


def test_refused_frames_are_logged_and_dropped_alone(backend: Backend, caplog) -> None:
    backend.poison_ts = int(time.time()) - 20
    agent = make_agent(backend.url, TOKEN, ["synthetic"], demo_clients=3, seed=5, backfill=40)
    with caplog.at_level(logging.WARNING, logger="loupe.agent"):
        t, stop = _run(agent)
        backend.wait_for(lambda: len(backend.series("synthetic@demo-nas", "nfs")) >= 40)
        _halt(t, stop)
    ts = backend.series("synthetic@demo-nas", "nfs")
    assert backend.poison_ts not in ts
    assert sorted(set(range(ts[0], ts[-1] + 1)) - set(ts)) == [backend.poison_ts]  # only that second is lost
    assert agent.stats["refused"] == len(SyntheticNAS.families)  # the poisoned second's frame of each family
    assert any(f"ts {backend.poison_ts} is poisoned" in r.message for r in caplog.records)


def test_wrong_token_is_refused_not_retried_forever(backend: Backend, caplog) -> None:
    agent = make_agent(backend.url, "wrong", ["synthetic"], demo_clients=2, seed=1)
    with caplog.at_level(logging.WARNING, logger="loupe.agent"):
        assert agent.run(threading.Event(), once=True)  # nothing left queued
    assert agent.stats["refused"] >= 4 and agent.stats["sent"] == 0 and not backend.frames
    assert any("401" in r.message and "invalid ingest token" in r.message for r in caplog.records)


def test_seq_never_goes_backwards_across_restarts(backend: Backend, tmp_path: Path) -> None:
    future = time.time_ns() // 1000 + 10**12  # as if the clock had been far ahead last time
    (tmp_path / "agent-state.json").write_text(json.dumps({"seq": {"synthetic@demo-nas": future}}))
    first = make_agent(backend.url, TOKEN, ["synthetic"], demo_clients=2, state_dir=tmp_path)
    assert first.run(threading.Event(), once=True)
    seqs = [f["seq"] for f in backend.frames]
    assert seqs[0] == future + 1 and seqs == list(range(future + 1, future + 1 + len(seqs)))
    saved = json.loads((tmp_path / "agent-state.json").read_text())["seq"]["synthetic@demo-nas"]
    assert saved == seqs[-1]
    second = make_agent(backend.url, TOKEN, ["synthetic"], demo_clients=2, state_dir=tmp_path)
    assert second.run(threading.Event(), once=True)
    assert [f["seq"] for f in backend.frames][len(seqs)] == saved + 1
    _assert_seq_strictly_increasing(backend.frames)


class _Chatty:
    """A live source emitting one fat row per collect, to fill the queue."""

    name, families, replayable, host = "test.chatty", ("net",), False, "h"

    def __init__(self) -> None:
        self.ts: list[int] = []

    def status(self) -> list[dict]:
        return [status_entry(self.name, self.families)]

    def collect(self, ts: int):
        self.ts.append(ts)
        return [("net", "h", [{"dims": {"interface": "x" * 1000}, "count": 1}])]


class _Broken(_Chatty):
    name = "test.broken"

    def collect(self, ts: int):
        raise RuntimeError("sensor fell off")


@pytest.mark.parametrize("spooled", [False, True])
def test_full_queue_drops_the_oldest_and_counts(tmp_path: Path, caplog, spooled: bool) -> None:
    agent = Agent([_Chatty()], "http://127.0.0.1:9", TOKEN, max_queue_bytes=10_000,
                  state_dir=tmp_path if spooled else None)
    with caplog.at_level(logging.WARNING, logger="loupe.agent"):
        for ts in range(100, 130):
            agent._collect(0, ts)
    kept = [q.ts for q in agent._queue]
    assert kept == list(range(130 - len(kept), 130)) and 5 <= len(kept) <= 9
    assert agent.stats["dropped"] == 30 - len(kept)
    assert agent._queue.bytes <= 10_000 and agent._queue.bytes >= sum(q.size for q in agent._queue)
    assert [r.message for r in caplog.records if "dropped" in r.message] == [  # once, not per frame
        f"{'spool ' + str(tmp_path / 'spool') if spooled else 'in-memory queue'} full (10000 bytes): dropped "
        f"oldest frames, 1 so far (last test.chatty@h ts 100)"]
    stats = agent.own_stats()
    assert (stats["queue_frames"], stats["queue_bytes"], stats["dropped_frames"]) == \
        (len(kept), agent._queue.bytes, 30 - len(kept))
    agent._queue.close()
    if spooled:  # the spool keeps the frames, and the count of those it dropped, for the next run
        again = Agent([_Chatty()], "http://127.0.0.1:9", TOKEN, max_queue_bytes=10_000, state_dir=tmp_path)
        assert [q.ts for q in again._queue] == kept
        assert again.own_stats()["dropped_frames"] == 30 - len(kept) and again.stats["dropped"] == 0
        again._queue.close()


def test_the_spool_is_reported_while_the_backend_refuses_and_sent_in_order_after_a_restart(
        backend: Backend, tmp_path: Path) -> None:
    backend.mode = "503"
    first = make_agent(backend.url, TOKEN, ["synthetic"], demo_clients=2, seed=5, backfill=5, state_dir=tmp_path,
                       min_backoff=0.1, max_backoff=0.2)
    t, stop = _run(first)
    backend.wait_for(lambda: len(backend.requests) >= 3)
    _halt(t, stop)
    assert not backend.frames
    reported = backend.requests[-1]["body"]["stats"]  # what the UI shows as the agent's queue
    assert reported["queue_frames"] >= 20 and reported["queue_bytes"] > 0 and reported["dropped_frames"] == 0
    spooled = [(q.source, q.seq, q.ts) for q in first._queue]
    assert len(spooled) >= reported["queue_frames"]
    backend.mode = "ok"
    second = make_agent(backend.url, TOKEN, ["synthetic"], demo_clients=2, seed=5, state_dir=tmp_path)
    assert second.run(threading.Event(), once=True)
    got = [(f["source"], f["seq"], f["ts"]) for f in backend.frames]
    assert got[:len(spooled)] == spooled and len(got) > len(spooled)  # the old frames first, as they were
    _assert_seq_strictly_increasing(backend.frames)
    assert second.stats["duplicates"] == 0 and not second._queue


def test_a_broken_source_reports_error_and_the_others_go_on(backend: Backend) -> None:
    agent = Agent([_Broken(), _Chatty()], backend.url, TOKEN)
    agent.run(threading.Event(), once=True)
    assert backend.series("test.chatty@h", "net")
    status = {s["name"]: s for s in backend.requests[-1]["body"]["status"]}
    assert status["test.broken"]["state"] == "error" and "sensor fell off" in status["test.broken"]["reason"]
    assert status["test.chatty"]["state"] == "active"


def test_cli_once_with_procfs_and_synthetic(backend: Backend, tmp_path: Path, capsys) -> None:
    rc = main(["--server", backend.url, "--token", TOKEN, "--sources", "procfs,synthetic", "--demo-clients", "5",
               "--host", "box1", "--state-dir", str(tmp_path), "--once"])
    assert rc == 0
    sources = {f["source"] for f in backend.frames}
    assert {"procfs.cpu@box1", "synthetic@demo-nas"} <= sources
    assert (tmp_path / "agent-state.json").exists()
    assert "sent" in capsys.readouterr().out


def test_demo_cli_runs_only_the_synthetic_nas(backend: Backend, monkeypatch) -> None:
    monkeypatch.setenv("LOUPE_INGEST_TOKEN", TOKEN)  # --token defaults to the environment
    assert demo_main(["--server", backend.url, "--demo-clients", "3", "--host", "lab-nas", "--once"]) == 0
    assert {f["source"] for f in backend.frames} == {"synthetic@lab-nas"}
    assert demo_main(["--server", backend.url, "--sources", "nosuch", "--once"]) == 2
    assert demo_main(["--server", backend.url, "--token", "wrong", "--once"]) == 1  # refused: not a success


def test_unreachable_server_fails_once_mode() -> None:
    agent = make_agent("http://127.0.0.1:9", TOKEN, ["synthetic"], demo_clients=2, min_backoff=0.1)
    assert agent.run(threading.Event(), once=True) is False
    assert agent._queue and agent.stats["sent"] == 0


def test_start_in_thread_with_backfill_and_stop(backend: Backend, tmp_path: Path) -> None:
    thread, stop = start_in_thread(backend.url, TOKEN, ["synthetic"], demo_clients=5, seed=7, backfill=30,
                                   state_dir=tmp_path / "demo")
    backend.wait_for(lambda: len(backend.series("synthetic@demo-nas", "nfs")) >= 31)
    stop.set()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert (tmp_path / "demo" / "agent-state.json").exists()


def test_registry_selects_by_prefix_and_builds_sources() -> None:
    assert registry.expand(["procfs"]) == ["procfs.cpu", "procfs.disk", "procfs.net"]
    assert registry.expand(["synthetic", "procfs.net"]) == ["procfs.net", "synthetic"]
    assert "bpf.disk" in registry.expand(["bpf"])
    with pytest.raises(ValueError, match=r"unknown source ebpf; valid: bpf, (bpf\.\w+, )*procfs, procfs\.cpu"):
        registry.expand(["ebpf"])
    built = registry.build(["procfs", "synthetic"], registry.Options(host="h", demo_clients=2))
    assert [s.name for s in built] == ["procfs.cpu", "procfs.disk", "procfs.net", "synthetic"]
    assert all(isinstance(s, Source) for s in built)
    assert [s.replayable for s in built] == [False, False, False, True]


def test_a_replaced_probe_is_detached_while_its_replacement_runs() -> None:
    from loupe_probes.agent import Agent
    from loupe_probes.source import status_entry

    class Probe:
        replayable = False
        host = "h"

        def __init__(self, name, replaces=()):
            self.name, self.replaces, self.families = name, replaces, ("nfs",)
            self.state, self.calls = "active", []

        def status(self):
            return [status_entry(self.name, self.families, self.state)]

        def collect(self, ts):
            self.calls.append(("collect", ts))
            return []

        def suspend(self):
            self.calls.append("suspend")

        def resume(self):
            self.calls.append("resume")

    nfsd, wire = Probe("bpf.nfsd", replaces=("bpf.nfswire",)), Probe("bpf.nfswire")
    a = Agent([nfsd, wire], "http://127.0.0.1:1", "t")
    a._tick(100)
    assert wire.calls == ["suspend"] and nfsd.calls == [("collect", 100)]
    assert {s["name"]: s["state"] for s in a.status()} == {"bpf.nfsd": "active", "bpf.nfswire": "standby"}
    a._tick(101)
    assert wire.calls == ["suspend"]  # detached once, not on every tick
    nfsd.state = "off"  # e.g. nfsd stopped: the wire decoder takes over again
    a._tick(102)
    assert wire.calls == ["suspend", "resume", ("collect", 102)]


def test_sigterm_ends_the_agent_cleanly(backend: Backend, tmp_path: Path) -> None:
    """`docker stop` and systemd send SIGTERM: the agent sends what it has, saves its
    sequence numbers and exits 0, instead of dying mid-second."""
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "loupe_probes.agent", "--server", backend.url, "--token", TOKEN,
                             "--sources", "synthetic", "--demo-clients", "2", "--state-dir", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + 30
        while not backend.frames and time.time() < deadline:
            time.sleep(0.1)
        assert backend.frames, "the agent sent nothing"
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert "sent " in out and "frames" in out
    saved = json.loads((tmp_path / "agent-state.json").read_text())["seq"]["synthetic@demo-nas"]
    assert saved == max(f["seq"] for f in backend.frames if f["source"] == "synthetic@demo-nas")


class _Columnar(_Chatty):
    """A source that returns its rows as columns, as bpf.net does."""

    name = "test.columnar"
    COLS = {"n": 2, "dims": {"client": ["10.0.0.1", "10.0.0.2"], "port": ["2049", "2049"],
                             "direction": ["in", "out"]}, "count": [3, 4], "bytes": [300, 4000]}

    def collect(self, ts: int):
        self.ts.append(ts)
        return [("net", "h", self.COLS)]


@pytest.mark.parametrize("version", [3, 2])
def test_columns_from_a_source_are_sent_as_they_are(backend: Backend, version: int) -> None:
    agent = Agent([_Columnar()], backend.url, TOKEN, frame_version=version)
    assert agent.run(threading.Event(), once=True)
    sent = [r for r in backend.requests if r["body"].get("frames")]
    assert all(r["arrow"] == (version == 3) for r in backend.requests)
    frame = sent[0]["body"]["frames"][0]
    assert frame["v"] == version and not frame.get("rows")
    assert {k: v for k, v in frame["columns"].items() if v or k not in ("lat_sum", "hist")} == _Columnar.COLS
    assert backend.frames and backend.frames[0]["source"] == "test.columnar@h"


class _Numpy(_Chatty):
    """Columns as numpy arrays, non-ASCII labels, a histogram whose rows come out of order."""

    name = "test.numpy"
    families = ("disk",)

    def collect(self, ts: int):
        import numpy as np

        return [("disk", "h", {"n": 3, "dims": {"disk": np.array(["sda", "nvme0n1", "dïsk"], dtype=object)},
                               "count": np.array([5, 0, 2**40], dtype=np.uint64), "bytes": [1, 2, 3],
                               "hist": {"latency": {"row": np.array([2, 0, 2]), "bucket": [20, 10, 35],
                                                    "n": np.array([1, 5, 1])}}})]


def test_numpy_columns_and_unordered_histograms_arrive_as_the_same_rows(backend: Backend) -> None:
    from loupe.columns import columns_to_rows

    agent = Agent([_Numpy()], backend.url, TOKEN)
    assert agent.run(threading.Event(), once=True)
    got = backend.frames[0]["columns"]
    rows = sorted(columns_to_rows(got), key=lambda r: r["dims"]["disk"])
    assert rows == [{"dims": {"disk": "dïsk"}, "count": 2**40, "bytes": 3, "lat_sum": 0,
                     "hist": {"latency": {"20": 1, "35": 1}}},
                    {"dims": {"disk": "nvme0n1"}, "count": 0, "bytes": 2, "lat_sum": 0},
                    {"dims": {"disk": "sda"}, "count": 5, "bytes": 1, "lat_sum": 0, "hist": {"latency": {"10": 5}}}]


@pytest.mark.parametrize("refusal", ["415", "pre-v3"])
def test_a_server_without_version_3_gets_json_for_a_while_logged_once(backend: Backend, caplog, refusal: str) -> None:
    backend.arrow = refusal
    agent = make_agent(backend.url, TOKEN, ["synthetic"], demo_clients=2, seed=5, backfill=4, json_fallback=1.5)
    with caplog.at_level(logging.DEBUG, logger="loupe.agent"):
        t, stop = _run(agent)
        # falls back, then tries version 3 again after json_fallback seconds, and falls back again
        backend.wait_for(lambda: sum(r["arrow"] for r in backend.requests) >= 2
                         and len(backend.series("synthetic@demo-nas", "nfs")) >= 8)
        _halt(t, stop)
    refused = [r for r in backend.requests if r["arrow"]]
    assert all(r["code"] == (415 if refusal == "415" else 422) for r in refused)
    assert not any(r["code"] == 200 and r["arrow"] for r in backend.requests)
    # every frame arrived once, as version 2 JSON, Arrow-encoded ones converted on the way
    assert {f["v"] for f in backend.frames} == {2}
    for fam in SyntheticNAS.families:
        ts = backend.series("synthetic@demo-nas", fam)
        assert ts == list(range(ts[0], ts[0] + len(ts))), (fam, ts)
    assert agent.stats["refused"] == agent.stats["dropped"] == 0
    said = [r for r in caplog.records if "does not read frame version 3" in r.getMessage()]
    assert len(said) == len(refused) >= 2 and [r.levelno for r in said].count(logging.WARNING) == 1


def test_a_spool_of_version_2_frames_replays_then_new_frames_go_as_version_3(backend: Backend, tmp_path: Path) -> None:
    backend.mode = "503"  # a spool left by an agent of before version 3: JSON records
    old = make_agent(backend.url, TOKEN, ["synthetic"], demo_clients=2, seed=5, backfill=3, state_dir=tmp_path,
                     min_backoff=0.1, max_backoff=0.2, frame_version=2)
    t, stop = _run(old)
    backend.wait_for(lambda: len(backend.requests) >= 2)
    _halt(t, stop)
    spooled = [(q.source, q.seq, q.ts) for q in old._queue]
    assert spooled and not any(q.arrow for q in old._queue)
    backend.mode = "ok"
    new = make_agent(backend.url, TOKEN, ["synthetic"], demo_clients=2, seed=5, state_dir=tmp_path)
    assert new.run(threading.Event(), once=True)
    got = [(f["source"], f["seq"], f["ts"]) for f in backend.frames]
    assert got[:len(spooled)] == spooled and len(got) > len(spooled)
    assert {f["v"] for f in backend.frames[:len(spooled)]} == {2} and {f["v"] for f in backend.frames[len(spooled):]} \
        == {3}
    _assert_seq_strictly_increasing(backend.frames)
