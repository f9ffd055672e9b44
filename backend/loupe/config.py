"""One Settings object, driven by LOUPE_* environment variables; CLI flags override it."""

from __future__ import annotations

import sys
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from .links import check_public_url
from .names import parse_policy, parse_server
from .webhooks import ReceiverPolicy


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LOUPE_", extra="ignore")

    data_dir: Path = Field(Path("/var/lib/loupe"), description="Where the store and tokens live")
    host: str = Field("127.0.0.1", description="Address to bind")
    port: int = Field(8470, ge=0, le=65535)
    demo: bool = Field(False, description="Also run the synthetic NAS 'demo-nas'")
    demo_clients: int = Field(20, ge=1, le=10_000)
    demo_seed: int = 7
    demo_backfill: int = Field(300, ge=0, description="Seconds of demo history generated before live (about 17 s)")
    local_agent: bool = Field(True, description="serve also runs an agent for this machine (BPF probes and procfs)")
    local_sources: str = Field("bpf,procfs,zfs", description="Sources of the local agent, comma-separated registry "
                                                         "names or prefixes (see `loupe agent --help`)")
    ingest_token: str | None = Field(None, description="An ingest token to accept (listed as 'configured'); "
                                                       "the local agent's own is generated into the data dir")
    metrics_token: str | None = Field(None, description="A metrics-scoped token for Prometheus to send to /metrics")
    admin_password: str | None = Field(None, description="Password of 'admin' created on first start; "
                                                         "generated and printed once if unset")
    session_idle_minutes: int = Field(8 * 60, ge=1, description="A session ends after this long unused")
    session_max_hours: int = Field(7 * 24, ge=1, description="A session ends this long after sign-in")
    login_per_address: int = Field(20, ge=1, description="Login attempts per address per minute")
    login_per_user: int = Field(5, ge=1, description="Failed logins per user name per minute")
    tls_cert: Path | None = Field(None, description="PEM certificate: serve HTTPS (with tls_key)")
    tls_key: Path | None = Field(None, description="PEM private key for tls_cert")
    cors_origins: list[str] = Field([], description="Origins allowed cross-site (JSON list); none by default")

    # Retention per tier, in seconds.
    retain_seconds: int = 48 * 3600
    retain_minutes: int = 30 * 86400
    retain_hours: int = 365 * 86400
    # Files beyond the top K per (host, second) fold into '(other files)'.
    top_files: int = Field(500, ge=1)
    # Seconds tier rows are re-sorted by (host, client, ts) in chunks of this many seconds.
    compact_every: int = Field(3600, ge=60)
    clock_skew_limit: float = Field(2.0, gt=0, description="Seconds an agent's clock may differ from the "
                                    "server's; beyond it the agent is flagged and its frames placed by server time")
    db_memory_limit: str = Field("512MB", pattern=r"^\d+(\.\d+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)$",
                                 description="Memory the store's engine may cache and compute in (DuckDB's "
                                 "memory_limit, e.g. 512MB, 4GB); beyond it it evicts and spills to disk. It "
                                 "keeps every block it writes cached until this limit, so under steady ingest "
                                 "it fills up to it; the server process adds about 400-600 MiB of its own")
    webhook_timeout: float = Field(5.0, gt=0, le=60, description="Seconds an alert's webhook receiver has to answer")
    webhook_attempts: int = Field(5, ge=1, le=20, description="Posts of one alert event before it is marked "
                                  "failed (retried after 2 s, 5 s, 15 s, 1 min, 5 min, then every 15 min)")
    alert_top_elements: int = Field(20, ge=1, le=500, description="Per-element alert rules: the busiest "
                                    "elements of the breakdown checked each second")
    alert_max_open: int = Field(10, ge=1, le=500, description="Per-element alert rules: alerts of one rule open at "
                                "once; further elements that hold are withheld and counted")
    webhook_allow: str = Field("", description="Where alert webhook receivers may be, comma-separated: networks "
                               "(10.0.0.0/8, 192.0.2.7, 2001:db8::/32) and host names (trusted with what they resolve "
                               "to). Unset: anywhere but link-local and fd00:ec2::254 (cloud metadata), "
                               "unspecified and multicast addresses")
    public_url: str | None = Field(None, description="The address users reach Loupe at, e.g. "
                                   "https://nas1.example:8080: webhook posts then link to their event on the Alerts "
                                   "page and to a worksheet of its statistic; unset, they carry no links")
    max_frame_bytes: int = Field(32 * 1024 * 1024, description="Largest ingest request body")
    static_dir: Path | None = Field(None, description="Built UI; defaults to the packaged one")

    # Client names (names.py). Reverse DNS is off unless listed: lookups leave the machine.
    client_names: str = Field("table,hosts", description="Where client names come from, in order (first wins): "
                              "table (Admin -> Client names), hosts (hosts_file), dns (reverse DNS); none: addresses")
    hosts_file: Path = Field(Path("/etc/hosts"), description="An /etc/hosts-format file of client names")
    dns_server: str | None = Field(None, description="DNS server for reverse lookups, address[:port]; "
                                   "unset: the name servers of /etc/resolv.conf")
    dns_timeout: float = Field(1.0, gt=0, le=30, description="Seconds one reverse lookup may take")
    dns_ttl: int = Field(3600, ge=1, description="Seconds a name from DNS is kept before it is looked up again")
    dns_negative_ttl: int = Field(300, ge=1, description="Seconds an address without a name (or whose lookup "
                                  "timed out) is left alone before it is asked again")
    dns_workers: int = Field(2, ge=1, le=32, description="Reverse lookups running at once")

    @field_validator("admin_password")
    @classmethod
    def _admin_password(cls, v: str | None) -> str | None:
        from .auth import AuthError, check_password

        if v is None:
            return None
        try:
            return check_password(v)
        except AuthError as e:  # refused at start, named, instead of failing the first start's bootstrap
            raise ValueError(str(e)) from None

    @field_validator("client_names")
    @classmethod
    def _policy(cls, v: str) -> str:
        return ",".join(parse_policy(v)) or "none"

    @field_validator("webhook_allow")
    @classmethod
    def _webhook_allow(cls, v: str) -> str:
        ReceiverPolicy.parse(v)  # a bad entry stops the server at start, named
        return v.strip()

    @field_validator("public_url")
    @classmethod
    def _public_url(cls, v: str | None) -> str | None:
        return check_public_url(v) if v is not None and v.strip() else None

    @field_validator("dns_server")
    @classmethod
    def _server(cls, v: str | None) -> str | None:
        if v is not None and v.strip():
            parse_server(v)
            return v.strip()
        return None

    @property
    def db_path(self) -> Path:
        return self.data_dir / "loupe.duckdb"


def get_settings() -> Settings:
    return Settings()


def settings_or_exit(prog: str, **overrides) -> Settings:
    """Settings for a command: a bad value ends it with one line per problem, naming the
    environment variable (or the flag that set it), instead of a traceback."""
    from pydantic import ValidationError

    try:
        return Settings(**overrides)
    except ValidationError as e:
        for err in e.errors():
            name = str(err["loc"][0]) if err["loc"] else "?"
            where = f"--{name.replace('_', '-')}" if name in overrides else f"LOUPE_{name.upper()}"
            msg = err["msg"].removeprefix("Value error, ")
            got = f" (got {err['input']!r})" if name != "admin_password" and not isinstance(err["input"], dict) else ""
            print(f"{prog}: {where}: {msg}{got}", file=sys.stderr)
        raise SystemExit(2) from None
