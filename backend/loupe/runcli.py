"""loupe run --name NAME [--results FILE ...] -- COMMAND...: mark a benchmark run around a command.

The run starts just before the command and stops when it exits (also on Ctrl-C, which the
command gets too). With --results, the clients' own report is imported afterwards and the
validation report's verdict printed; the exit status is the command's, or 3 when the command
succeeded and the report says fail.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from .config import settings_or_exit


class ApiError(RuntimeError):
    pass


TOKEN: str | None = None  # set by main(): an api token with the operator role


def api_token(given: str | None) -> str | None:
    """--token, else LOUPE_API_TOKEN, else the server's own CLI token when this user may read it."""
    if given:
        return given
    if os.environ.get("LOUPE_API_TOKEN"):
        return os.environ["LOUPE_API_TOKEN"]
    try:
        return (settings_or_exit("loupe run").data_dir / "cli.token").read_text().strip() or None
    except OSError:
        return None


def api_call(base: str, method: str, path: str, body=None, *, ctype="application/json", timeout=60.0):
    data = None if body is None else (body.encode() if isinstance(body, str) else json.dumps(body).encode())
    headers = {"Content-Type": ctype} if data is not None else {}
    if TOKEN:
        headers["Authorization"] = f"Bearer {TOKEN}"
    req = urllib.request.Request(base.rstrip("/") + "/api/v1" + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        detail = e.read().decode(errors="replace")
        try:
            detail = json.loads(detail).get("detail", detail)
        except (ValueError, AttributeError):
            pass
        hint = (" (give an api token with the operator role: --token or LOUPE_API_TOKEN; on the server's machine "
                "`loupe run` reads LOUPE_DATA_DIR/cli.token when it may)") if e.code in (401, 403) else ""
        raise ApiError(f"{method} {path}: {e.code} {detail}{hint}") from None
    except (urllib.error.URLError, OSError) as e:
        raise ApiError(f"cannot reach Loupe at {base}: {getattr(e, 'reason', e)}") from None


def _import(base: str, run_id: str, path: Path, fmt: str, client: str | None):
    text = path.read_text()
    if fmt == "csv":
        return api_call(base, "POST", f"/runs/{run_id}/results.csv", text, ctype="text/csv")
    try:
        doc = json.loads(text[text.index("{") if fmt == "fio" and "{" in text else 0:])  # fio may print first
    except ValueError as e:
        raise ApiError(f"{path}: not JSON ({e})") from None
    body = {"format": "fio", "report": doc, "client": client} if fmt == "fio" else {"format": "simple", "clients": doc}
    return api_call(base, "POST", f"/runs/{run_id}/results", body)


def main(argv: list[str]) -> int:
    if "--" in argv:
        i = argv.index("--")
        argv, command = argv[:i], argv[i + 1:]
    else:
        command = []
    p = argparse.ArgumentParser(prog="loupe run", description=__doc__.split("\n\n")[0],
                                usage="loupe run --name NAME [options] -- COMMAND [ARGS...]")
    p.add_argument("--name", required=True, help="the run's name")
    p.add_argument("--server", help="Loupe's URL (default http://127.0.0.1:$LOUPE_PORT)")
    p.add_argument("--host", help="the NFS server's host in Loupe (default: all hosts)")
    p.add_argument("--results", type=Path, action="append", default=[],
                   help="client results to import after the command (repeatable)")
    p.add_argument("--format", choices=("fio", "simple", "csv"), default="fio",
                   help="format of --results: fio JSON, a JSON list of per-client results, or CSV")
    p.add_argument("--client", help="for a one-machine fio report: the client address it belongs to")
    p.add_argument("--tolerance", type=float, default=2.0, help="allowed difference in %% (default 2)")
    p.add_argument("--token", help="an api token with the operator role (default: $LOUPE_API_TOKEN, else "
                                    "the server's DATA_DIR/cli.token when readable)")
    a = p.parse_args(argv)
    if not command:
        p.error("give the benchmark's command after --")
    base = a.server or f"http://127.0.0.1:{settings_or_exit('loupe run').port}"
    global TOKEN
    TOKEN = api_token(a.token)
    if shutil.which(command[0]) is None:  # before the run exists: an operator may mark runs, not delete them
        print(f"loupe run: cannot start {command[0]}: no such command", file=sys.stderr)
        return 127
    try:
        run = api_call(base, "POST", "/runs", {"name": a.name, "host": a.host, "command": command})
    except ApiError as e:
        print(f"loupe run: {e}", file=sys.stderr)
        return 2
    rid = run["id"]
    print(f"loupe run: run {rid} '{a.name}' started", file=sys.stderr, flush=True)
    interrupted = False
    try:
        proc = subprocess.Popen(command)
    except OSError as e:
        print(f"loupe run: cannot start {command[0]}: {e}", file=sys.stderr)
        try:  # no benchmark ran: leave no run behind (deleting needs admin; else at least end it)
            api_call(base, "DELETE", f"/runs/{rid}")
        except ApiError:
            try:
                api_call(base, "POST", f"/runs/{rid}/stop", {"exit_code": 127})
                print(f"loupe run: run {rid} ended with exit code 127", file=sys.stderr)
            except ApiError as err:
                print(f"loupe run: and cannot end run {rid}: {err}", file=sys.stderr)
        return 127
    old = signal.signal(signal.SIGINT, lambda *_: None)  # the command gets Ctrl-C from the terminal itself
    try:
        while True:
            try:
                code = proc.wait()
                break
            except KeyboardInterrupt:
                interrupted = True
    finally:
        signal.signal(signal.SIGINT, old)
    try:
        api_call(base, "POST", f"/runs/{rid}/stop", {"exit_code": code})
        print(f"loupe run: run {rid} stopped; the command exited with {code}", file=sys.stderr)
        for path in a.results:
            _import(base, rid, path, a.format, a.client)
        if a.results:
            rep = api_call(base, "GET", f"/runs/{rid}/report?tolerance={a.tolerance}")
            t = rep["total"]
            pct = t["bytes_agreement_pct"]
            print(f"loupe run: verdict {rep['verdict']}: the wire carried "
                  f"{'n/a' if pct is None else f'{pct:.1f} %'} of the reported bytes "
                  f"({t['wire_bytes']:,} of {t['reported_bytes']:,})", file=sys.stderr)
            for c in rep["clients"]:
                for reason in c["reasons"]:
                    print(f"  {c['client']}: {reason}", file=sys.stderr)
            if code == 0 and rep["verdict"] == "fail":
                return 3
    except (ApiError, OSError) as e:
        print(f"loupe run: {e}", file=sys.stderr)
        return code or 2
    print(f"loupe run: report {base.rstrip('/')}/api/v1/runs/{rid}/report", file=sys.stderr)
    return 130 if interrupted and code else code
