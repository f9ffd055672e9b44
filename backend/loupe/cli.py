"""loupe serve | agent | demo | run | lab"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from .config import Settings


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
    settings = Settings(**overrides)
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


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    cmds = {"serve": _serve}
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in ("serve", "agent", "demo", "run", "lab"):
        print("usage: loupe {serve,agent,demo,run,lab} [options]\n\n"
              "  serve   run the backend and UI (with this machine's procfs agent)\n"
              "  agent   collect on this machine and push frames to a backend\n"
              "  demo    push the synthetic NAS 'demo-nas' to a backend\n"
              "  run     mark a benchmark run around a command: loupe run --name NAME -- COMMAND\n"
              "  lab     an NFS server and clients on this machine, running the seed workloads (root)", file=sys.stderr)
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
