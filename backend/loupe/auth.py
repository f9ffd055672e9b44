"""Users, roles, sessions, bearer tokens, login rate limits and the audit log.

Kept in SQLite beside the statistics store (data_dir/auth.sqlite): a few small tables
that must commit one row at a time, which DuckDB's columnar store is not for.

- Passwords: argon2id (argon2-cffi), never stored or logged in clear.
- Sessions and tokens: random secrets handed out once; only their SHA-256 is stored
  (they carry 256 bits, so a slow hash adds nothing), so a copy of the file logs no one in.
- Tokens have a scope: `ingest` (one agent), `metrics` (a Prometheus scraper) or `api`
  (a script acting with the token's role). Every token is checked against an in-memory
  map that revocation updates first, so a revoked token is refused at once.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from .privatedb import open_private

log = logging.getLogger("loupe.auth")

ROLES = ("viewer", "operator", "admin")
RANK = {r: i for i, r in enumerate(ROLES)}
SCOPES = ("ingest", "metrics", "api")
NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._@-")
MIN_PASSWORD = 10
TOKEN_PREFIX = "lp_"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
  name TEXT PRIMARY KEY, role TEXT NOT NULL, pw_hash TEXT NOT NULL,
  created_at REAL NOT NULL, disabled INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS sessions (
  id_hash TEXT PRIMARY KEY, user TEXT NOT NULL REFERENCES users(name) ON DELETE CASCADE,
  csrf TEXT NOT NULL, created_at REAL NOT NULL, last_seen REAL NOT NULL, address TEXT);
CREATE TABLE IF NOT EXISTS tokens (
  id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, scope TEXT NOT NULL, role TEXT,
  hash TEXT NOT NULL UNIQUE, origin TEXT NOT NULL, created_at REAL NOT NULL, created_by TEXT NOT NULL,
  last_used REAL, revoked_at REAL, revoked_by TEXT);
CREATE TABLE IF NOT EXISTS audit (
  id INTEGER PRIMARY KEY AUTOINCREMENT, ts REAL NOT NULL, actor TEXT NOT NULL, action TEXT NOT NULL,
  target TEXT NOT NULL DEFAULT '', detail TEXT NOT NULL DEFAULT '', address TEXT NOT NULL DEFAULT '');
"""


class AuthError(ValueError):
    """Bad input to an auth operation; the message names the problem (shown as a 4xx)."""


class NotFound(AuthError):
    pass


@dataclass(frozen=True)
class Principal:
    """Who is calling: a signed-in user (session) or a bearer token."""

    name: str
    role: str | None          # None for ingest and metrics tokens: they reach no user route
    via: str                  # "session" | "token"
    scope: str = "api"
    csrf: str | None = None   # sessions only: unsafe requests must echo it in X-CSRF-Token
    session: str | None = None

    def allows(self, role: str) -> bool:
        return self.role is not None and RANK[self.role] >= RANK[role]


@dataclass
class TokenRecord:
    id: int
    name: str
    scope: str
    role: str | None
    origin: str
    created_at: float
    created_by: str
    last_used: float | None
    revoked_at: float | None
    revoked_by: str | None


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_secret() -> str:
    # The prefix: a token never starts with "-", so `--token X` always parses; and it is greppable in leaks.
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def check_name(name: str, what: str = "user name") -> str:
    name = (name or "").strip()
    if not 1 <= len(name) <= 64 or not set(name) <= NAME_CHARS:
        raise AuthError(f"{what} must be 1-64 characters of letters, digits and . _ @ -")
    return name


def check_role(role: str) -> str:
    if role not in RANK:
        raise AuthError(f"unknown role {role!r}; roles are {', '.join(ROLES)}")
    return role


def check_password(pw: str) -> str:
    if len(pw or "") < MIN_PASSWORD:
        raise AuthError(f"password must have at least {MIN_PASSWORD} characters")
    if len(pw) > 1024:
        raise AuthError("password longer than 1024 characters")
    return pw


class RateLimiter:
    """Sliding-window counts per key: at most `limit` events in `window` seconds."""

    def __init__(self, limit: int, window: float, clock=time.monotonic) -> None:
        self.limit, self.window, self.clock = limit, window, clock
        self._events: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def _trim(self, key: str, now: float) -> deque[float]:
        q = self._events.setdefault(key, deque())
        while q and q[0] <= now - self.window:
            q.popleft()
        return q

    def retry_after(self, key: str) -> float:
        """Seconds until `key` may try again; 0 when it may now."""
        with self._lock:
            now = self.clock()
            q = self._trim(key, now)
            return 0.0 if len(q) < self.limit else max(0.0, q[0] + self.window - now)

    def hit(self, key: str) -> None:
        with self._lock:
            now = self.clock()
            self._trim(key, now).append(now)
            if len(self._events) > 100_000:  # bound memory under a spray of addresses
                for k in [k for k, q in self._events.items() if not q or q[-1] <= now - self.window]:
                    del self._events[k]

    def clear(self, key: str) -> None:
        with self._lock:
            self._events.pop(key, None)


class RateLimited(Exception):
    def __init__(self, retry_after: float, what: str) -> None:
        super().__init__(f"too many login attempts {what}; try again in {int(retry_after) + 1} s")
        self.retry_after = retry_after


class Auth:
    def __init__(self, path: Path, *, session_idle: float = 8 * 3600, session_max: float = 7 * 86400,
                 per_address: tuple[int, float] = (20, 60.0), per_user: tuple[int, float] = (5, 60.0),
                 clock=time.time) -> None:
        self.path = path
        self.session_idle, self.session_max, self.clock = session_idle, session_max, clock
        self.hasher = PasswordHasher()
        # A fixed hash to verify against when the user does not exist: same cost, no user enumeration by timing.
        self._dummy = self.hasher.hash(secrets.token_hex(16))
        self.by_address = RateLimiter(*per_address)
        self.by_user = RateLimiter(*per_user)
        self._lock = threading.RLock()
        self.db = open_private(path, _SCHEMA, "foreign_keys=ON")  # hashes only, but no one else's to read
        self._tokens: dict[str, TokenRecord] = {}
        self._used: dict[int, float] = {}
        self._load_tokens()

    def close(self) -> None:
        with self._lock:
            self.flush_usage()
            self.db.close()

    def _q(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            return self.db.execute(sql, args).fetchall()

    # ---------------------------------------------------------------- users

    def has_users(self) -> bool:
        return bool(self._q("SELECT 1 FROM users LIMIT 1"))

    def users(self) -> list[dict]:
        rows = self._q("SELECT name, role, created_at, disabled FROM users ORDER BY name")
        return [{"name": n, "role": r, "created_at": c, "disabled": bool(d)} for n, r, c, d in rows]

    def user(self, name: str) -> dict:
        rows = self._q("SELECT name, role, created_at, disabled FROM users WHERE name = ?", (name,))
        if not rows:
            raise NotFound(f"no user {name!r}")
        n, r, c, d = rows[0]
        return {"name": n, "role": r, "created_at": c, "disabled": bool(d)}

    def add_user(self, name: str, role: str, password: str) -> dict:
        name, role, password = check_name(name), check_role(role), check_password(password)
        with self._lock:
            if self._q("SELECT 1 FROM users WHERE name = ?", (name,)):
                raise AuthError(f"user {name!r} exists")
            self._q("INSERT INTO users VALUES (?, ?, ?, ?, 0)", (name, role, self.hasher.hash(password), self.clock()))
        return self.user(name)

    def update_user(self, name: str, *, role: str | None = None, password: str | None = None,
                    disabled: bool | None = None) -> dict:
        with self._lock:
            u = self.user(name)
            if role is not None:
                check_role(role)
                if u["role"] == "admin" and role != "admin":
                    self._keep_an_admin(name)
                self._q("UPDATE users SET role = ? WHERE name = ?", (role, name))
            if disabled is not None:
                if disabled and u["role"] == "admin":
                    self._keep_an_admin(name)
                self._q("UPDATE users SET disabled = ? WHERE name = ?", (int(disabled), name))
            if password is not None:
                self._q("UPDATE users SET pw_hash = ? WHERE name = ?", (self.hasher.hash(check_password(password)), name))
            if role is not None or disabled or password is not None:
                # A changed role, a disabled account or a new password ends the user's sessions.
                self._q("DELETE FROM sessions WHERE user = ?", (name,))
            return self.user(name)

    def delete_user(self, name: str) -> None:
        with self._lock:
            u = self.user(name)
            if u["role"] == "admin":
                self._keep_an_admin(name)
            self._q("DELETE FROM users WHERE name = ?", (name,))

    def _keep_an_admin(self, name: str) -> None:
        left = self._q("SELECT count(*) FROM users WHERE role = 'admin' AND disabled = 0 AND name != ?", (name,))
        if not left[0][0]:
            raise AuthError(f"{name!r} is the last admin; make another admin first")

    def bootstrap(self, password: str | None) -> str | None:
        """On first start, create 'admin'. Returns the generated password (to print once), or None."""
        if self.has_users():
            return None
        generated = None if password else secrets.token_urlsafe(15)
        self.add_user("admin", "admin", password or generated)
        self.audit("loupe", "user.create", "admin", "first start: role admin")
        return generated

    # ---------------------------------------------------------------- login and sessions

    def login(self, name: str, password: str, address: str) -> tuple[str, Principal]:
        """Check a password; returns (session secret, principal). Raises AuthError or RateLimited."""
        wait_a = self.by_address.retry_after(address)
        if wait_a:
            raise RateLimited(wait_a, f"from {address}")
        wait_u = self.by_user.retry_after(name)
        if wait_u:
            raise RateLimited(wait_u, f"for user {name!r}")
        self.by_address.hit(address)
        row = self._q("SELECT pw_hash, role, disabled FROM users WHERE name = ?", (name,))
        ok = False
        try:
            ok = self.hasher.verify(row[0][0] if row else self._dummy, password or "") and bool(row) and not row[0][2]
        except (VerificationError, InvalidHashError):
            ok = False
        if not ok:
            self.by_user.hit(name)
            why = "no such user" if not row else "account disabled" if row[0][2] else "wrong password"
            log.warning("failed login for %r from %s: %s", name, address, why)
            self.audit(name if row else "-", "login.failed", name, why, address)
            raise AuthError("wrong user name or password")
        self.by_user.clear(name)
        if self.hasher.check_needs_rehash(row[0][0]):
            self._q("UPDATE users SET pw_hash = ? WHERE name = ?", (self.hasher.hash(password), name))
        self.audit(name, "login", name, "", address)
        return self.start_session(name, address)

    def start_session(self, name: str, address: str) -> tuple[str, Principal]:
        role = self.user(name)["role"]
        secret, csrf, now = secrets.token_urlsafe(32), secrets.token_urlsafe(24), self.clock()
        self._q("INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?)", (digest(secret), name, csrf, now, now, address))
        return secret, Principal(name, role, "session", csrf=csrf, session=digest(secret))

    def change_password(self, name: str, current: str, new: str, keep_session: str | None = None) -> None:
        row = self._q("SELECT pw_hash FROM users WHERE name = ?", (name,))
        try:
            ok = bool(row) and self.hasher.verify(row[0][0], current)
        except (VerificationError, InvalidHashError):
            ok = False
        if not ok:
            raise AuthError("the current password is wrong")
        with self._lock:
            self._q("UPDATE users SET pw_hash = ? WHERE name = ?", (self.hasher.hash(check_password(new)), name))
            self._q("DELETE FROM sessions WHERE user = ? AND id_hash != ?", (name, keep_session or ""))

    def session(self, secret: str) -> Principal | None:
        h = digest(secret)
        rows = self._q("SELECT s.user, u.role, s.csrf, s.created_at, s.last_seen FROM sessions s "
                       "JOIN users u ON u.name = s.user WHERE s.id_hash = ? AND u.disabled = 0", (h,))
        if not rows:
            return None
        user, role, csrf, created, seen = rows[0]
        now = self.clock()
        if now - created > self.session_max or now - seen > self.session_idle:
            self._q("DELETE FROM sessions WHERE id_hash = ?", (h,))
            return None
        if now - seen > min(60.0, self.session_idle / 10):  # sliding idle expiry, at most a write a minute
            self._q("UPDATE sessions SET last_seen = ? WHERE id_hash = ?", (now, h))
        return Principal(user, role, "session", csrf=csrf, session=h)

    def session_expires(self, p: Principal) -> float:
        rows = self._q("SELECT created_at, last_seen FROM sessions WHERE id_hash = ?", (p.session,))
        if not rows:
            return self.clock()
        return min(rows[0][0] + self.session_max, rows[0][1] + self.session_idle)

    def logout(self, p: Principal) -> None:
        if p.session:
            self._q("DELETE FROM sessions WHERE id_hash = ?", (p.session,))

    def prune_sessions(self) -> int:
        now = self.clock()
        with self._lock:
            cur = self.db.execute("DELETE FROM sessions WHERE created_at < ? OR last_seen < ?",
                                  (now - self.session_max, now - self.session_idle))
            return cur.rowcount

    # ---------------------------------------------------------------- tokens

    def _load_tokens(self) -> None:
        rows = self._q("SELECT hash, id, name, scope, role, origin, created_at, created_by, last_used, "
                       "revoked_at, revoked_by FROM tokens WHERE revoked_at IS NULL")
        self._tokens = {r[0]: TokenRecord(*r[1:]) for r in rows}

    def tokens(self) -> list[TokenRecord]:
        self.flush_usage()
        rows = self._q("SELECT id, name, scope, role, origin, created_at, created_by, last_used, revoked_at, "
                       "revoked_by FROM tokens ORDER BY id")
        return [TokenRecord(*r) for r in rows]

    def create_token(self, name: str, scope: str, *, role: str | None = None, by: str,
                     origin: str = "api", secret: str | None = None) -> tuple[str, TokenRecord]:
        name = check_name(name, "token name")
        if scope not in SCOPES:
            raise AuthError(f"unknown scope {scope!r}; scopes are {', '.join(SCOPES)}")
        if scope == "api":
            check_role(role or "")
        elif role is not None:
            raise AuthError(f"a {scope} token has no role; only api tokens act with a role")
        secret = secret or new_secret()
        with self._lock:
            if self._q("SELECT 1 FROM tokens WHERE hash = ?", (digest(secret),)):
                raise AuthError("that token secret is already registered")
            cur = self.db.execute("INSERT INTO tokens (name, scope, role, hash, origin, created_at, created_by) "
                                  "VALUES (?, ?, ?, ?, ?, ?, ?)", (name, scope, role, digest(secret), origin,
                                                                  self.clock(), by))
            tid = cur.lastrowid
            self._load_tokens()
        rec = next(t for t in self._tokens.values() if t.id == tid)
        return secret, rec

    def revoke_token(self, token_id: int, by: str) -> TokenRecord:
        with self._lock:
            rows = self._q("SELECT revoked_at FROM tokens WHERE id = ?", (token_id,))
            if not rows:
                raise NotFound(f"no token {token_id}")
            if rows[0][0] is None:
                self._q("UPDATE tokens SET revoked_at = ?, revoked_by = ? WHERE id = ?", (self.clock(), by, token_id))
                self._load_tokens()
        return next(t for t in self.tokens() if t.id == token_id)

    def token(self, secret: str) -> TokenRecord | None:
        """The live (unrevoked) token with this secret. In memory: ingest calls it per request."""
        rec = self._tokens.get(digest(secret.strip()))
        if rec is not None:
            self._used[rec.id] = self.clock()
        return rec

    def flush_usage(self) -> None:
        used, self._used = self._used, {}
        with self._lock:
            for tid, ts in used.items():
                self.db.execute("UPDATE tokens SET last_used = ? WHERE id = ?", (ts, tid))

    def known_secret(self, secret: str) -> TokenRecord | None:
        """The token with this secret, revoked or not (for configured tokens at start)."""
        rows = self._q("SELECT id, name, scope, role, origin, created_at, created_by, last_used, revoked_at, "
                       "revoked_by FROM tokens WHERE hash = ?", (digest(secret),))
        return TokenRecord(*rows[0]) if rows else None

    def principal_for_token(self, secret: str) -> Principal | None:
        rec = self.token(secret)
        if rec is None:
            return None
        return Principal(f"token:{rec.name}", rec.role if rec.scope == "api" else None, "token", scope=rec.scope)

    # ---------------------------------------------------------------- audit

    def audit(self, actor: str, action: str, target: str = "", detail: str = "", address: str = "") -> None:
        self._q("INSERT INTO audit (ts, actor, action, target, detail, address) VALUES (?, ?, ?, ?, ?, ?)",
                (self.clock(), actor, action, target, detail, address or ""))

    def audit_log(self, limit: int = 200, before: int | None = None) -> list[dict]:
        rows = self._q("SELECT id, ts, actor, action, target, detail, address FROM audit "
                       "WHERE id < ? ORDER BY id DESC LIMIT ?", (before or 1 << 62, limit))
        keys = ("id", "ts", "actor", "action", "target", "detail", "address")
        return [dict(zip(keys, r)) for r in rows]
