"""loupe serve | agent | demo | run | lab | health"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from .config import settings_or_exit


def _serve(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="loupe serve", description="Run the Loupe backend and UI.")
    p.add_argument("--data-dir", type=Path, help="store directory (LOUPE_DATA_DIR)")
    p.add_argument("--host", help="address to bind (LOUPE_HOST, default 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (LOUPE_PORT, default 8470)")
    p.add_argument("--demo", action="store_true", default=None, help="also run the synthetic NAS 'demo-nas'")
    p.add_argument("--demo-clients", type=int, help="clients of the demo NAS (20..10000)")
    p.add_argument("--demo-backfill", type=int, help="seconds of demo history to generate at start")
    p.add_argument("--no-local-agent", dest="local_agent", action="store_false", default=None,
                   help="do not collect this machine's data in-process")
    a = p.parse_args(argv)
    overrides = {k: v for k, v in vars(a).items() if v is not None}
    settings = settings_or_exit("loupe serve", **overrides)
    import uvicorn

    from .api.main import base_url, create_app

    if (settings.tls_cert is None) != (settings.tls_key is None):
        p.error("TLS needs both LOUPE_TLS_CERT and LOUPE_TLS_KEY")
    for f in (settings.tls_cert, settings.tls_key):
        if f is not None and not f.is_file():
            p.error(f"TLS file {f} does not exist")
    app = create_app(settings)
    print(f"Loupe {'(with demo-nas) ' if settings.demo else ''}on {base_url(settings)}/  "
          f"data: {settings.data_dir}", flush=True)
    tls = dict(ssl_certfile=str(settings.tls_cert), ssl_keyfile=str(settings.tls_key)) if settings.tls_cert else {}
    uvicorn.run(app, host=settings.host, port=settings.port, log_level="warning", ws_max_size=1 << 20, **tls)
    return 0


def _health(argv: list[str]) -> int:
    """Exit 0 when this machine's server answers /healthz, over HTTPS with its own certificate when
    LOUPE_TLS_CERT is set: the container and service health check, whatever the configuration."""
    import ssl
    import urllib.request

    p = argparse.ArgumentParser(prog="loupe health", description=_health.__doc__.split(":")[0] + ".")
    p.add_argument("--port", type=int, help="port (LOUPE_PORT, default 8470)")
    p.add_argument("--timeout", type=float, default=4.0)
    a = p.parse_args(argv)
    settings = settings_or_exit("loupe health", **({"port": a.port} if a.port else {}))
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "", "127.0.0.1") else settings.host
    host = "[::1]" if host == "::" else (f"[{host}]" if ":" in host else host)
    ctx = None
    if settings.tls_cert:  # our own certificate, pinned: its name need not be the loopback address
        ctx = ssl.create_default_context(cafile=str(settings.tls_cert))
        ctx.check_hostname = False
    url = f"{'https' if ctx else 'http'}://{host}:{settings.port}/healthz"
    try:
        with urllib.request.urlopen(url, timeout=a.timeout, context=ctx) as r:
            ok = r.status == 200
    except (OSError, ssl.SSLError) as e:
        print(f"loupe health: {url}: {getattr(e, 'reason', e)}", file=sys.stderr)
        return 1
    print(f"loupe health: {url}: {'ok' if ok else 'not ok'}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    cmds = {"serve": _serve, "health": _health}
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in ("serve", "agent", "demo", "run", "lab", "health"):
        print("usage: loupe {serve,agent,demo,run,lab,health} [options]\n\n"
              "  serve   run the backend and UI (with this machine's procfs agent)\n"
              "  agent   collect on this machine and push frames to a backend\n"
              "  demo    push the synthetic NAS 'demo-nas' to a backend\n"
              "  run     mark a benchmark run around a command: loupe run --name NAME -- COMMAND\n"
              "  lab     an NFS server and clients on this machine, running the seed workloads (root)\n"
              "  health  exit 0 when this machine's server answers (the container health check)", file=sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "agent":
        from loupe_probes.agent import main as agent_main

        return agent_main(rest) or 0
    if cmd == "lab":
        from .labcli import main as lab_main

        return lab_main(rest)
    if cmd == "run":
        from .runcli import main as run_main

        return run_main(rest)
    if cmd == "demo":
        from loupe_probes.agent import demo_main

        return demo_main(rest) or 0
    return cmds[cmd](rest)


if __name__ == "__main__":
    sys.exit(main())
