"""The agent's HTTP client against real servers on loopback ports."""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from loupe_probes.transport import Client, HTTPError


class Server:
    def __init__(self, *, delay: float = 0.0, close_after: bool = False, drop_silently: bool = False) -> None:
        self.connections: set[tuple] = set()
        self.bodies: list[bytes] = []
        outer = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):  # noqa: N802
                outer.connections.add(self.client_address)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.bodies.append(body)
                time.sleep(delay)
                out = b'{"ok": true, "path": "%s", "auth": "%s"}' % (self.path.encode(),
                                                                   (self.headers.get("Authorization") or "").encode())
                self.send_response(201)
                self.send_header("Content-Length", str(len(out)))
                if close_after:
                    self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(out)
                if drop_silently:  # as a server restart or an idle timeout does: no "Connection: close"
                    self.close_connection = True

            def log_message(self, *a):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_posts_reuse_one_connection_and_send_the_headers():
    srv = Server()
    try:
        c = Client(srv.url + "/", headers={"Authorization": "Bearer t"}, timeout=5)
        answers = [c.post("/api/v1/ingest", b'{"n": %d}' % i) for i in range(5)]
        assert [a.status_code for a in answers] == [201] * 5 and all(a.is_success for a in answers)
        assert answers[0].json() == {"ok": True, "path": "/api/v1/ingest", "auth": "Bearer t"}
        assert srv.bodies == [b'{"n": %d}' % i for i in range(5)]
        assert len(srv.connections) == 1  # keep-alive
        c.close()
    finally:
        srv.stop()


@pytest.mark.parametrize("how", ["close_after", "drop_silently"])
def test_a_connection_the_server_closed_is_replaced_without_losing_or_doubling_a_post(how):
    """Announced ("Connection: close") or silent, as a restart or an idle timeout drops it:
    a silently dropped kept-alive connection is retried once on a new one."""
    srv = Server(**{how: True})
    try:
        c = Client(srv.url, headers={}, timeout=5)
        for i in range(3):
            time.sleep(0.05)  # the server has closed the previous connection by now
            assert c.post("/x", b"%d" % i).status_code == 201
        assert srv.bodies == [b"0", b"1", b"2"] and len(srv.connections) == 3
    finally:
        srv.stop()


def test_refused_and_timed_out_posts_raise_naming_the_cause():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    with pytest.raises(HTTPError, match="ConnectionRefused"):
        Client(f"http://127.0.0.1:{port}", headers={}, timeout=2).post("/x", b"")
    slow = Server(delay=2.0)
    try:
        with pytest.raises(HTTPError, match="timed out|TimeoutError"):
            Client(slow.url, headers={}, timeout=0.3).post("/x", b"")
    finally:
        slow.stop()


@pytest.mark.parametrize("url", ["localhost:8080", "ftp://h/", "http://", ""])
def test_bad_server_urls_are_refused_naming_them(url):
    with pytest.raises(ValueError, match="server URL"):
        Client(url, headers={}, timeout=1)
