"""The agent's HTTP client: one keep-alive connection from the standard library.

The agent posts one request a second; a general-purpose client (httpx) costs it
about 8 MiB of resident memory and more CPU per request than this needs.
"""

from __future__ import annotations

import http.client
import json
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit


class HTTPError(OSError):
    """The request did not get an answer (connect, send or read failed, or timed out)."""


@dataclass
class Response:
    status_code: int
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    @property
    def is_success(self) -> bool:
        return 200 <= self.status_code < 300

    def json(self):
        return json.loads(self.content)


def tls_context(ca_file: str | None) -> ssl.SSLContext:
    """The system's trust store; or, with `ca_file`, trust exactly that certificate (a server's
    own, maybe self-signed): it is then the pin, and the name in it need not match the URL's
    host (the local agent reaches its server as 127.0.0.1)."""
    if ca_file is None:
        return ssl.create_default_context()
    ctx = ssl.create_default_context(cafile=ca_file)
    ctx.check_hostname = False
    ctx.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN  # a leaf certificate may be the trust anchor
    return ctx


class Client:
    """POSTs to one server over a reused connection; reconnects once when a kept-alive
    connection turns out closed (the server restarted, or dropped it while idle)."""

    def __init__(self, base_url: str, *, headers: dict[str, str], timeout: float, ca_file: str | None = None) -> None:
        u = urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"server URL must be http:// or https://host[:port], not {base_url!r}")
        self._https = u.scheme == "https"
        self._host, self._port = u.hostname, u.port
        self._prefix = u.path.rstrip("/")
        self._headers = dict(headers)
        self._timeout = timeout
        self._conn: http.client.HTTPConnection | None = None
        self._tls = tls_context(ca_file) if self._https else None

    def _connect(self) -> http.client.HTTPConnection:
        if self._tls is not None:
            return http.client.HTTPSConnection(self._host, self._port, timeout=self._timeout, context=self._tls)
        return http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)

    def post(self, path: str, body: bytes, content_type: str = "application/json") -> Response:
        headers = {**self._headers, "Content-Type": content_type}
        for attempt in (0, 1):
            reused = self._conn is not None
            if self._conn is None:
                self._conn = self._connect()
            try:
                self._conn.request("POST", self._prefix + path, body=body, headers=headers)
                r = self._conn.getresponse()
                resp = Response(r.status, r.read())
                if r.will_close:
                    self.close()
                return resp
            except (OSError, http.client.HTTPException) as e:
                self.close()
                # a kept-alive connection the server had closed: one fresh try (ingest is idempotent)
                stale = isinstance(e, (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError))
                if attempt == 0 and reused and stale:
                    continue
                raise HTTPError(f"{type(e).__name__}: {e}") from e
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
