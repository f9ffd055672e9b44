"""Users, roles, sessions, tokens, rate limits, audit and security headers, against the real app."""

import sqlite3
import time

import pytest
from factories import ADMIN_PW, nfs_frame, sign_in
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from loupe.api.main import create_app
from loupe.auth import Auth, AuthError, RateLimiter
from loupe.config import Settings

TOKEN = "ingest-test-token"

# Every HTTP route and who may call it. A new route must be added here, or the first test fails.
PUBLIC, INGEST, METRICS = "public", "ingest", "metrics"
ROUTES = {
    ("POST", "/api/v1/auth/login"): PUBLIC,
    ("POST", "/api/v1/auth/link"): PUBLIC,
    ("GET", "/healthz"): PUBLIC,
    ("POST", "/api/v1/ingest"): INGEST,
    ("GET", "/metrics"): METRICS,
    ("GET", "/api/v1/auth/me"): "viewer",
    ("POST", "/api/v1/auth/logout"): "viewer",
    ("POST", "/api/v1/auth/password"): "viewer",
    ("GET", "/api/v1/metrics"): "viewer",
    ("GET", "/api/v1/query"): "viewer",
    ("GET", "/api/v1/breakdown"): "viewer",
    ("GET", "/api/v1/heatmap"): "viewer",
    ("GET", "/api/v1/members"): "viewer",
    ("GET", "/api/v1/hierarchy"): "viewer",
    ("GET", "/api/v1/sources"): "viewer",
    ("GET", "/api/v1/status"): "viewer",
    ("GET", "/api/v1/status/tiles"): "viewer",
    ("GET", "/api/v1/worksheets"): "viewer",
    ("GET", "/api/v1/worksheets/{ws_id}"): "viewer",
    ("GET", "/api/v1/runs"): "viewer",
    ("GET", "/api/v1/runs/{run_id}"): "viewer",
    ("GET", "/api/v1/runs/{run_id}/report"): "viewer",
    ("GET", "/api/v1/clients/{client}/diagnosis"): "viewer",
    ("GET", "/api/v1/retention"): "viewer",
    ("GET", "/api/v1/client-names"): "viewer",
    ("GET", "/api/v1/client-names/policy"): "viewer",
    ("POST", "/api/v1/worksheets"): "operator",
    ("PUT", "/api/v1/worksheets/{ws_id}"): "operator",
    ("DELETE", "/api/v1/worksheets/{ws_id}"): "operator",
    ("POST", "/api/v1/runs"): "operator",
    ("POST", "/api/v1/runs/{run_id}/stop"): "operator",
    ("POST", "/api/v1/runs/{run_id}/results"): "operator",
    ("POST", "/api/v1/runs/{run_id}/results.csv"): "operator",
    ("POST", "/api/v1/sources/suspend"): "operator",
    ("POST", "/api/v1/sources/resume"): "operator",
    ("DELETE", "/api/v1/runs/{run_id}"): "admin",
    ("GET", "/api/v1/users"): "admin",
    ("POST", "/api/v1/users"): "admin",
    ("PATCH", "/api/v1/users/{name}"): "admin",
    ("DELETE", "/api/v1/users/{name}"): "admin",
    ("GET", "/api/v1/tokens"): "admin",
    ("POST", "/api/v1/tokens"): "admin",
    ("POST", "/api/v1/tokens/{token_id}/revoke"): "admin",
    ("GET", "/api/v1/audit"): "admin",
    ("PUT", "/api/v1/retention"): "admin",
    ("PUT", "/api/v1/status/tiles"): "admin",
    ("DELETE", "/api/v1/status/tiles"): "admin",
    ("POST", "/api/v1/data/delete"): "admin",
    ("GET", "/api/v1/alerts"): "viewer",
    ("GET", "/api/v1/alerts/{rule_id}"): "viewer",
    ("POST", "/api/v1/alerts"): "admin",
    ("PUT", "/api/v1/alerts/{rule_id}"): "admin",
    ("DELETE", "/api/v1/alerts/{rule_id}"): "admin",
    ("POST", "/api/v1/alerts/{rule_id}/test"): "admin",
    ("GET", "/api/v1/events"): "viewer",
    ("GET", "/api/v1/events/{event_id}"): "viewer",
    ("GET", "/api/v1/events/{event_id}/deliveries"): "viewer",
    ("PUT", "/api/v1/client-names"): "admin",
}
ROLES = ("viewer", "operator", "admin")
USERS = {"viewer": "vera", "operator": "otto", "admin": "admin"}
PATH_ARGS = {"{ws_id}": "nope", "{run_id}": "nope", "{client}": "10.0.0.1", "{name}": "nobody", "{token_id}": "999999",
             "{rule_id}": "nope", "{event_id}": "999999"}


def make_app(tmp_path, **kw):
    s = dict(data_dir=tmp_path, local_agent=False, ingest_token=TOKEN, admin_password=ADMIN_PW) | kw
    return create_app(Settings(**s))


def _with_users(path):
    with TestClient(make_app(path, login_per_user=3, login_per_address=50)) as c:
        sign_in(c)
        for role, name in USERS.items():
            if name != "admin":
                assert c.post("/api/v1/users", json={"name": name, "role": role, "password": f"{name}-password"}
                              ).status_code == 201
        yield c


@pytest.fixture
def client(tmp_path):
    yield from _with_users(tmp_path)


@pytest.fixture(scope="module")
def matrix_client(tmp_path_factory):
    # One app for the whole matrix: every call below brings its own fresh session.
    yield from _with_users(tmp_path_factory.mktemp("matrix"))


def call(client, method, path, *, session=None, csrf=None, bearer=None):
    """One request with exactly the credentials given (no cookie left over from sign_in)."""
    client.cookies.clear()
    headers = {}
    if session:
        client.cookies.set("loupe_session", session)
    if csrf:
        headers["X-CSRF-Token"] = csrf
    if bearer:
        headers["Authorization"] = f"Bearer {bearer}"
    body = {} if method in ("POST", "PUT", "PATCH") else None
    return client.request(method, path, json=body, headers=headers)


def fresh_session(client, role):
    # Straight from the auth store: no argon2 per request, and logout/password calls cannot spoil the next.
    secret, p = client.app.state.loupe.auth.start_session(USERS[role], "testclient")
    return secret, p.csrf


def test_the_route_table_covers_every_route(matrix_client):
    have = {(m.upper(), path) for path, ops in matrix_client.app.openapi()["paths"].items() for m in ops}
    assert have == set(ROUTES), f"routes without a row: {have - set(ROUTES)}; rows without a route: {set(ROUTES) - have}"


@pytest.mark.parametrize(("method", "path"), sorted(ROUTES))
def test_every_role_against_every_route(matrix_client, method, path):
    client = matrix_client
    need = ROUTES[(method, path)]
    url = path
    for k, v in PATH_ARGS.items():
        url = url.replace(k, v)
    anon = call(client, method, url)
    if need == PUBLIC:
        assert anon.status_code not in (401, 403), anon.text
    else:
        assert anon.status_code == 401, f"anonymous {method} {url}: {anon.status_code} {anon.text}"
    for role in ROLES:
        secret, csrf = fresh_session(client, role)
        r = call(client, method, url, session=secret, csrf=csrf)
        allowed = need == PUBLIC or need == METRICS or (need in ROLES and ROLES.index(role) >= ROLES.index(need))
        if allowed:
            assert r.status_code not in (401, 403), f"{role} {method} {url}: {r.status_code} {r.text}"
        else:
            assert r.status_code in (401, 403), f"{role} must not reach {method} {url}: {r.status_code} {r.text}"
            if need in ROLES:  # an explicit deny that names the missing role
                assert r.status_code == 403 and f"needs the {need} role" in r.json()["detail"]
    # An ingest token reaches ingest only (and nothing else).
    r = call(client, method, url, bearer=TOKEN)
    if need in (PUBLIC, INGEST):
        assert r.status_code not in (401, 403), r.text
    else:
        assert r.status_code == 403 and "scoped to ingest" in r.json()["detail"], r.text


def test_sessions_need_the_csrf_token_on_writes_and_bearer_tokens_do_not(client):
    secret, csrf = fresh_session(client, "operator")
    body = {"name": "w", "range": {"start": "-1h", "end": "now"}, "statistics": [{"metric": "nfs.ops"}]}
    client.cookies.clear()
    client.cookies.set("loupe_session", secret)
    r = client.post("/api/v1/worksheets", json=body, headers={"X-CSRF-Token": ""})
    assert r.status_code == 403 and "X-CSRF-Token" in r.json()["detail"]
    r = client.post("/api/v1/worksheets", json=body, headers={"X-CSRF-Token": csrf + "x"})
    assert r.status_code == 403
    r = client.post("/api/v1/worksheets", json=body, headers={"X-CSRF-Token": csrf})
    assert r.status_code == 201 and r.json()["owner"] == "otto"
    assert client.get("/api/v1/worksheets", headers={"X-CSRF-Token": ""}).status_code == 200  # reads need none
    # an api token acts with its role, no CSRF (it is not sent by browsers on their own)
    sign_in(client)
    made = client.post("/api/v1/tokens", json={"name": "ci-bot", "scope": "api", "role": "operator"}).json()
    client.cookies.clear()
    r = client.post("/api/v1/worksheets", json=body, headers={"Authorization": f"Bearer {made['secret']}",
                                                               "X-CSRF-Token": ""})
    assert r.status_code == 201 and r.json()["owner"] == "token:ci-bot"


def test_login_logout_and_cookie_flags(tmp_path):
    with TestClient(make_app(tmp_path), base_url="https://testserver") as c:
        r = c.post("/api/v1/auth/login", json={"user": "admin", "password": ADMIN_PW})
        assert r.status_code == 200 and r.json()["role"] == "admin" and r.json()["csrf_token"]
        cookie = r.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "secure" in cookie and "path=/" in cookie
        me = c.get("/api/v1/auth/me").json()
        assert me["user"] == "admin" and me["expires_at"] > time.time()
        c.headers["X-CSRF-Token"] = me["csrf_token"]
        assert c.post("/api/v1/auth/logout").status_code == 204
        assert c.get("/api/v1/auth/me").status_code == 401
    with TestClient(make_app(tmp_path)) as c:  # plain http: no Secure flag, or the browser would drop it
        r = c.post("/api/v1/auth/login", json={"user": "admin", "password": ADMIN_PW})
        assert "secure" not in r.headers["set-cookie"].lower()


def test_failed_logins_are_refused_rate_limited_and_logged(client, caplog):
    client.cookies.clear()
    for _ in range(3):
        r = client.post("/api/v1/auth/login", json={"user": "vera", "password": "wrong-password"})
        assert r.status_code == 401 and r.json()["detail"] == "wrong user name or password"
    r = client.post("/api/v1/auth/login", json={"user": "vera", "password": "vera-password"})
    assert r.status_code == 429 and "for user 'vera'" in r.json()["detail"] and int(r.headers["retry-after"]) >= 1
    # another user from the same address still gets in (the address limit is higher)
    assert client.post("/api/v1/auth/login", json={"user": "otto", "password": "otto-password"}).status_code == 200
    # unknown users fail the same way, and failures are logged with the address
    r = client.post("/api/v1/auth/login", json={"user": "mallory", "password": "x"})
    assert r.status_code == 401 and r.json()["detail"] == "wrong user name or password"
    assert any("failed login for 'mallory' from testclient: no such user" in m for m in caplog.messages)
    sign_in(client)
    log = client.get("/api/v1/audit").json()["entries"]
    failed = [e for e in log if e["action"] == "login.failed"]
    assert [e["target"] for e in failed] == ["mallory", "vera", "vera", "vera"]
    assert all(e["address"] == "testclient" for e in failed)


def test_rate_limit_per_address(tmp_path):
    with TestClient(make_app(tmp_path, login_per_address=4, login_per_user=100)) as c:
        codes = [c.post("/api/v1/auth/login", json={"user": f"u{i}", "password": "x"}).status_code for i in range(6)]
        assert codes == [401] * 4 + [429] * 2
        r = c.post("/api/v1/auth/login", json={"user": "admin", "password": ADMIN_PW})
        assert r.status_code == 429 and "from testclient" in r.json()["detail"]


def test_rate_limiter_window_slides():
    now = [0.0]
    rl = RateLimiter(2, 60.0, clock=lambda: now[0])
    cases = [  # (time, hit?, expected retry_after before the hit)
        (0.0, True, 0.0), (10.0, True, 0.0), (20.0, False, 40.0), (60.5, True, 0.0), (61.0, False, 9.0),
        (70.5, False, 0.0)]
    for t, hit, want in cases:
        now[0] = t
        assert rl.retry_after("k") == pytest.approx(want), t
        if hit:
            rl.hit("k")


def test_ingest_tokens_per_agent_listed_and_revoked_at_once(client):
    made = client.post("/api/v1/tokens", json={"name": "nas2", "scope": "ingest"})
    assert made.status_code == 201
    secret, tid = made.json()["secret"], made.json()["id"]
    assert secret.startswith("lp_") and made.json()["role"] is None
    listed = {t["name"]: t for t in client.get("/api/v1/tokens").json()["tokens"]}
    assert {"nas2", "configured", "local-agent", "local-cli"} <= set(listed)
    assert "secret" not in listed["nas2"] and listed["configured"]["origin"] == "config"
    frame = nfs_frame(int(time.time()) - 3, [("10.0.0.1", "read", "/a", 1, 1, {})], source="nas2@x", seq=1)
    send = lambda: client.post("/api/v1/ingest", json={"frames": [frame.model_dump()]},  # noqa: E731
                               headers={"Authorization": f"Bearer {secret}"})
    assert send().status_code == 200
    r = client.post(f"/api/v1/tokens/{tid}/revoke")
    assert r.status_code == 200 and r.json()["revoked_by"] == "admin"
    r = send()
    assert r.status_code == 401 and "revoked" in r.json()["detail"]
    used = {t["name"]: t for t in client.get("/api/v1/tokens").json()["tokens"]}["nas2"]
    assert used["last_used"] and used["revoked_at"]
    # bad requests name the problem
    r = client.post("/api/v1/tokens", json={"name": "x", "scope": "ingest", "role": "admin"})
    assert r.status_code == 400 and "only api tokens" in r.json()["detail"]
    r = client.post("/api/v1/tokens", json={"name": "bad name!", "scope": "ingest"})
    assert r.status_code == 400 and "token name" in r.json()["detail"]
    assert client.post("/api/v1/tokens/424242/revoke").status_code == 404
    # past SQLite's 64-bit integers: a clear 422 naming the limit, not a 500
    r = client.post(f"/api/v1/tokens/{2**63}/revoke")
    assert r.status_code == 422 and "less than or equal to 9223372036854775807" in r.text, r.text
    actions = [e["action"] for e in client.get("/api/v1/audit").json()["entries"]]
    assert actions[:2] == ["token.revoke", "token.create"]


def test_a_revoked_configured_token_stays_revoked_after_restart(tmp_path):
    with TestClient(make_app(tmp_path)) as c:
        sign_in(c)
        tid = next(t["id"] for t in c.get("/api/v1/tokens").json()["tokens"] if t["name"] == "configured")
        assert c.post(f"/api/v1/tokens/{tid}/revoke").status_code == 200
        local = (tmp_path / "ingest.token").read_text().strip()
        lid = next(t["id"] for t in c.get("/api/v1/tokens").json()["tokens"] if t["name"] == "local-agent")
        assert c.post(f"/api/v1/tokens/{lid}/revoke").status_code == 200
    with TestClient(make_app(tmp_path)) as c:
        r = c.post("/api/v1/ingest", json={"frames": []}, headers={"Authorization": f"Bearer {TOKEN}"})
        assert r.status_code == 401
        # the local agent's file token is replaced by a new one, so the machine keeps reporting
        fresh = (tmp_path / "ingest.token").read_text().strip()
        assert fresh != local and c.app.state.loupe.token == fresh
        r = c.post("/api/v1/ingest", json={"frames": []}, headers={"Authorization": f"Bearer {fresh}"})
        assert r.status_code == 200


def test_users_roles_and_the_last_admin(client):
    r = client.post("/api/v1/users", json={"name": "vera", "role": "viewer", "password": "another-password"})
    assert r.status_code == 400 and "exists" in r.json()["detail"]
    r = client.post("/api/v1/users", json={"name": "short", "role": "viewer", "password": "short"})
    assert r.status_code == 400 and "at least 10 characters" in r.json()["detail"]
    r = client.post("/api/v1/users", json={"name": "x", "role": "root", "password": "long-enough-pw"})
    assert r.status_code == 422 and "role" in r.json()["detail"]
    assert client.patch("/api/v1/users/admin", json={"role": "viewer"}).status_code == 400
    assert "last admin" in client.delete("/api/v1/users/admin").json()["detail"]
    # a role change ends that user's sessions
    vera, _ = fresh_session(client, "viewer")
    sign_in(client)
    assert client.patch("/api/v1/users/vera", json={"role": "operator"}).json()["role"] == "operator"
    assert call(client, "GET", "/api/v1/auth/me", session=vera).status_code == 401
    sign_in(client)
    assert client.patch("/api/v1/users/vera", json={"disabled": True}).json()["disabled"] is True
    r = client.post("/api/v1/auth/login", json={"user": "vera", "password": "vera-password"})
    assert r.status_code == 401
    sign_in(client)
    assert client.delete("/api/v1/users/vera").status_code == 204
    assert [u["name"] for u in client.get("/api/v1/users").json()["users"]] == ["admin", "otto"]


def test_change_own_password_keeps_this_session_and_ends_others(client):
    other, _ = fresh_session(client, "admin")
    sign_in(client)
    r = client.post("/api/v1/auth/password", json={"current": "wrong", "new": "a-new-password"})
    assert r.status_code == 400 and "current password is wrong" in r.json()["detail"]
    assert client.post("/api/v1/auth/password", json={"current": ADMIN_PW, "new": "a-new-password"}).status_code == 204
    assert client.get("/api/v1/auth/me").status_code == 200
    saved = dict(client.cookies)
    assert call(client, "GET", "/api/v1/auth/me", session=other).status_code == 401
    client.cookies.update(saved)
    client.cookies.clear()
    assert client.post("/api/v1/auth/login", json={"user": "admin", "password": "a-new-password"}).status_code == 200


def test_sessions_expire_idle_and_absolute(tmp_path):
    now = [1000.0]
    auth = Auth(tmp_path / "a.sqlite", session_idle=100, session_max=1000, clock=lambda: now[0])
    auth.add_user("u", "viewer", "password-123")
    s, _ = auth.login("u", "password-123", "a")
    for t, alive in [(1050, True), (1149, True), (1300, False)]:  # idle 100 s: used at 1149, gone by 1300
        now[0] = t
        assert (auth.session(s) is not None) is alive, t
    s, _ = auth.login("u", "password-123", "a")
    for t in range(1300, 2300, 90):  # kept busy, it still ends 1000 s after sign-in
        now[0] = t
        assert (auth.session(s) is not None) is (t - 1300 <= 1000), t
    with pytest.raises(AuthError, match="wrong user name or password"):
        auth.login("u", "password-124", "a")
    auth.close()


def test_first_start_generates_the_admin_password_once_and_keeps_only_its_hash(tmp_path, capsys):
    with TestClient(make_app(tmp_path, admin_password=None)) as c:
        out = capsys.readouterr().out
        pw = out.split("password  ")[1].split()[0]
        assert len(pw) >= 16
        assert c.post("/api/v1/auth/login", json={"user": "admin", "password": pw}).status_code == 200
    with TestClient(make_app(tmp_path, admin_password=None)):
        assert "password" not in capsys.readouterr().out  # not again
    raw = (tmp_path / "auth.sqlite").read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob("auth.sqlite-*"))
    assert pw.encode() not in raw
    with sqlite3.connect(tmp_path / "auth.sqlite") as db:
        assert db.execute("SELECT pw_hash FROM users").fetchone()[0].startswith("$argon2id$")
    for f in tmp_path.glob("auth.sqlite*"):
        assert oct(f.stat().st_mode & 0o777) == "0o600", f


def test_the_demo_link_signs_in_on_the_demo_only(tmp_path, capsys):
    with TestClient(make_app(tmp_path / "demo", demo=True), ) as c:
        link = capsys.readouterr().out.split("?login=")[1].split()[0]
        assert c.post("/api/v1/auth/link", json={"token": "wrong"}).status_code == 401
        r = c.post("/api/v1/auth/link", json={"token": link})
        assert r.status_code == 200 and r.json()["role"] == "admin"
        assert c.get("/api/v1/status").status_code == 200
        # with 'admin' gone (another admin deleted it) the link says so instead of failing
        c.headers["X-CSRF-Token"] = r.json()["csrf_token"]
        assert c.post("/api/v1/users", json={"name": "root2", "role": "admin", "password": "root2-password"}
                      ).status_code == 201
        c.app.state.loupe.auth.delete_user("admin")
        r = c.post("/api/v1/auth/link", json={"token": link})
        assert r.status_code == 401 and "no such user" in r.json()["detail"]
    with TestClient(make_app(tmp_path / "real")) as c:
        assert "?login=" not in capsys.readouterr().out
        assert c.post("/api/v1/auth/link", json={"token": link}).status_code == 401


def test_security_headers_and_closed_cors(client):
    for path in ("/", "/api/v1/status", "/api/v1/nope"):
        r = client.get(path, headers={"Origin": "https://evil.example"})
        h = r.headers
        assert "script-src 'self'" in h["content-security-policy"] and "unsafe-inline" not in h["content-security-policy"].split("script-src")[1].split(";")[0]
        assert "frame-ancestors 'none'" in h["content-security-policy"]
        # stylesheets only from the UI itself; inline style attributes (ECharts' tooltips) only
        assert "style-src 'self';" in h["content-security-policy"]
        assert "style-src-attr 'unsafe-inline'" in h["content-security-policy"]
        assert h["x-content-type-options"] == "nosniff" and h["x-frame-options"] == "DENY"
        assert "access-control-allow-origin" not in h
    r = client.options("/api/v1/status", headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"})
    assert "access-control-allow-origin" not in r.headers


def test_cors_opens_only_to_configured_origins(tmp_path):
    with TestClient(make_app(tmp_path, cors_origins=["https://ops.example"])) as c:
        ok = c.options("/api/v1/status", headers={"Origin": "https://ops.example", "Access-Control-Request-Method": "GET"})
        assert ok.headers["access-control-allow-origin"] == "https://ops.example"
        bad = c.options("/api/v1/status", headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"})
        assert "access-control-allow-origin" not in bad.headers


def test_metrics_accepts_a_metrics_token_or_a_user(tmp_path):
    with TestClient(make_app(tmp_path, metrics_token="prom-secret")) as c:
        assert c.get("/metrics").status_code == 401
        assert c.get("/metrics", headers={"Authorization": "Bearer prom-secret"}).status_code == 200
        r = c.get("/api/v1/status", headers={"Authorization": "Bearer prom-secret"})
        assert r.status_code == 403 and "scoped to metrics" in r.json()["detail"]
        sign_in(c)
        assert "loupe_" in c.get("/metrics").text


def test_live_websocket_needs_a_session_and_this_origin(client):
    client.cookies.clear()
    with pytest.raises(WebSocketDisconnect) as e:
        with client.websocket_connect("/api/v1/live"):
            pass
    assert e.value.code == 1008
    secret, _ = fresh_session(client, "viewer")
    client.cookies.set("loupe_session", secret)
    with pytest.raises(WebSocketDisconnect):
        with client.websocket_connect("/api/v1/live", headers={"Origin": "https://evil.example"}):
            pass
    with client.websocket_connect("/api/v1/live", headers={"Origin": "http://testserver"}) as ws:
        ws.send_json({"op": "subscribe", "id": "a", "metric": "nfs.ops"})
        assert ws.receive_json() == {"id": "a", "subscribed": True}
    with pytest.raises(WebSocketDisconnect):
        with client.websocket_connect("/api/v1/live", headers={"Authorization": f"Bearer {TOKEN}"}):
            pass
