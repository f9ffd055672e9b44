"""Frame builders, a signed-in app and a webhook receiver, shared by the backend tests."""

import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from loupe.frame import Frame

NOW = 1_800_000_000 - 1_800_000_000 % 3600  # an hour boundary, so rollup periods are easy to reason about


def nfs_frame(ts, rows, *, source="t@h", seq=None, host="nas1", proto="v3"):
    """rows: list of (client, op, file, count, bytes, {latency exp: n})"""
    return Frame(
        source=source, seq=ts if seq is None else seq, ts=ts, family="nfs", host=host,
        rows=[
            dict(dims=dict(client=c, op=op, proto=proto, share="/export", file=f), count=n, bytes=b,
                 lat_sum=n * 1000, hist={"latency": {str(e): k for e, k in lat.items()}} if lat else {})
            for c, op, f, n, b, lat in rows
        ],
    )


def random_nfs_frames(start, seconds, *, seed=1, clients=5, files=8, source="r@h", host="nas1"):
    rnd = random.Random(seed)
    out = []
    for ts in range(start, start + seconds):
        rows = []
        for _ in range(rnd.randint(1, 12)):
            n = rnd.randint(1, 50)
            lat = {}
            for _ in range(n):
                e = rnd.choice([12, 13, 20, 21, 22])
                lat[e] = lat.get(e, 0) + 1
            rows.append((f"10.0.0.{rnd.randint(1, clients)}", rnd.choice(["read", "write", "getattr"]),
                         f"/export/f{rnd.randint(1, files)}", n, n * 8192, lat))
        out.append(nfs_frame(ts, rows, source=source, host=host))
    return out


ADMIN_PW = "admin-password-for-tests"


def sign_in(client, user: str = "admin", password: str = ADMIN_PW) -> dict:
    """Sign a TestClient in (the session cookie sticks to it) and send the CSRF token on writes."""
    r = client.post("/api/v1/auth/login", json={"user": user, "password": password})
    assert r.status_code == 200, r.text
    client.headers["X-CSRF-Token"] = r.json()["csrf_token"]
    return r.json()


def signed_in_app(data_dir, token: str, **settings):
    """A real app on `data_dir` (no local agent), accepting ingest `token`, as a TestClient signed in as admin."""
    from fastapi.testclient import TestClient

    from loupe.api.main import create_app
    from loupe.config import Settings

    app = create_app(Settings(data_dir=data_dir, local_agent=False, ingest_token=token, admin_password=ADMIN_PW,
                              **settings))
    with TestClient(app) as c:
        sign_in(c)
        yield c


class Receiver:
    """A real HTTP server on loopback answering each POST with the next status of `statuses`."""

    def __init__(self, statuses, location: str | None = None):
        self.statuses, self.posts = list(statuses), []
        outer = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.posts.append((dict(self.headers), body))
                code = outer.statuses.pop(0) if len(outer.statuses) > 1 else outer.statuses[0]
                self.send_response(code)
                if location:  # a redirect's target
                    self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def pyarrow_body(frames, request=None, *, options=None) -> bytes:
    """A version-3 body written by pyarrow (not by loupe.arrow_ipc): ``frames`` as (header, pa.Table),
    one stream per schema in order of first appearance; ``options``: pa.ipc.IpcWriteOptions."""
    import json

    import pyarrow as pa

    streams: dict = {}
    for header, table in frames:
        streams.setdefault(table.schema, []).append((header, table))
    out = []
    for i, (schema, members) in enumerate(streams.items() or [(pa.schema([]), [])]):
        meta = {"loupe.frames": json.dumps([h for h, _ in members])}
        if i == 0 and request is not None:
            meta["loupe.request"] = json.dumps(request)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, schema.with_metadata(meta), options=options) as w:
            for _, t in members:
                w.write_batch(pa.record_batch([c.combine_chunks() for c in t.columns], schema=t.schema))
        out.append(sink.getvalue().to_pybytes())
    return b"".join(out)
