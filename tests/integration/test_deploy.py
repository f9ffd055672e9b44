"""Deployment files: docker-compose.yml, deploy/ (Dockerfile, systemd units,
Prometheus), .ci/run, the Makefile targets and the top of the README.

No Docker engine runs on the project's machines, so the compose file is checked
with `docker-compose config` (it parses, validates and interpolates the file
without an engine) and the Dockerfile structurally. Outside CI, a missing tool
skips its test with the reason; in CI (CI set) it fails, since `make deps`
installs it.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from loupe_probes.bpf.testing import unavailable

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DEPLOY = ROOT / "deploy"

INSTALLED_LOUPE = "/opt/loupe/venv/bin/loupe"  # where scripts/install-systemd.sh puts it


missing_tool = unavailable  # in CI `make deps` installs every tool, so a missing one is a failure


def load_yaml(text: str):
    """PyYAML if this interpreter has it, else Debian's python3-yaml (a dependency of docker-compose)."""
    try:
        import yaml  # type: ignore[import-untyped]

        return yaml.safe_load(text)
    except ImportError:
        pass
    prog = "import json, sys, yaml; json.dump(yaml.safe_load(sys.stdin), sys.stdout)"
    for py in ("/usr/bin/python3", shutil.which("python3")):
        if py and Path(py).exists() and Path(py).resolve() != Path(sys.executable).resolve():
            r = subprocess.run([py, "-c", prog], input=text, capture_output=True, text=True, timeout=60)
            if r.returncode == 0:
                return json.loads(r.stdout)
    missing_tool("no YAML parser: neither PyYAML in this venv nor Debian's python3-yaml")


# ---- docker-compose ----------------------------------------------------------------


def compose_cmd() -> list[str]:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if shutil.which("docker"):
        r = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True, timeout=60)
        if r.returncode == 0:
            return ["docker", "compose"]
    missing_tool("docker-compose is not installed (Debian package docker-compose)")
    raise AssertionError("unreachable")


SECRETS = {"LOUPE_ADMIN_PASSWORD": "admin-pw-0123", "LOUPE_INGEST_TOKEN": "ingest-t0k3n",
           "LOUPE_METRICS_TOKEN": "metrics-t0k3n"}


def compose_run(env_overrides: dict, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LOUPE_", "PROMETHEUS_", "COMPOSE_"))}
    env.update(env_overrides)
    return subprocess.run([*compose_cmd(), "-f", str(COMPOSE_FILE), "config", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def compose_config(**env_overrides: str) -> dict:
    r = compose_run(SECRETS | env_overrides)
    assert r.returncode == 0, f"docker-compose config failed:\n{r.stderr}"
    return load_yaml(r.stdout)


def ports(svc: dict) -> list[tuple[str, str, str]]:
    """(host_ip, published, target) from either compose v1 strings or v2 dicts."""
    out = []
    for p in svc.get("ports", []):
        if isinstance(p, dict):
            out.append((p.get("host_ip", ""), str(p.get("published", "")), str(p["target"])))
        else:
            parts = str(p).split("/")[0].split(":")
            if len(parts) == 3:
                out.append((parts[0], parts[1], parts[2]))
            elif len(parts) == 2:
                out.append(("", parts[0], parts[1]))
            else:
                out.append(("", "", parts[0]))
    return out


def volumes(svc: dict) -> list[tuple[str, str, bool]]:
    """(source, target, read_only) from either compose v1 strings or v2 dicts."""
    out = []
    for v in svc.get("volumes", []):
        if isinstance(v, dict):
            out.append((str(v.get("source", "")), v["target"], bool(v.get("read_only", False))))
        else:
            parts = str(v).split(":")
            mode = parts[2] if len(parts) > 2 else "rw"
            out.append((parts[0], parts[1], "ro" in mode.split(",")))
    return out


def env_of(svc: dict) -> dict[str, str]:
    e = svc.get("environment", {})
    if isinstance(e, list):
        e = dict(item.split("=", 1) if "=" in item else (item, "") for item in e)
    return {k: ("" if v is None else str(v)) for k, v in e.items()}


def test_compose_file_is_valid():
    r = compose_run(SECRETS, "-q")
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("secret", sorted(SECRETS))
def test_compose_refuses_to_start_without_each_secret(secret):
    """Secrets come from ${VAR:?}: never a default, and the error names the variable."""
    for missing in ({k: v for k, v in SECRETS.items() if k != secret}, SECRETS | {secret: ""}):
        r = compose_run(missing, "-q")
        assert r.returncode != 0 and secret in r.stderr, r.stderr


def test_compose_services_healthcheck_and_dependencies():
    cfg = compose_config()
    services = cfg["services"]
    assert set(services) == {"loupe", "loupe-agent", "prometheus"}

    loupe = services["loupe"]
    assert loupe["build"]["dockerfile"] == "deploy/Dockerfile"
    assert Path(loupe["build"]["context"]).resolve() == ROOT
    cmd = loupe["command"]
    assert cmd[0] == "serve" and "--no-local-agent" in cmd
    assert cmd[cmd.index("--host") + 1] == "0.0.0.0"
    # Published on the host's loopback only (no TLS configured by default).
    assert ports(loupe) == [("127.0.0.1", "8470", "8470")]
    assert ("loupe-data", "/var/lib/loupe", False) in volumes(loupe)
    assert {k: env_of(loupe)[k] for k in SECRETS} == SECRETS

    hc = loupe["healthcheck"]
    test = hc["test"]
    test = test if isinstance(test, list) else ["CMD-SHELL", test]
    # `loupe health` (tested against real servers, HTTP and HTTPS, in test_serve.py) on the served port
    assert test == ["CMD", "loupe", "health", "--port", "8470"]
    assert "--port" in loupe["command"] and loupe["command"][loupe["command"].index("--port") + 1] == "8470"

    agent = services["loupe-agent"]
    assert agent.get("privileged") is True
    assert agent.get("pid") == "host"
    assert agent.get("network_mode") == "host"
    assert agent["depends_on"]["loupe"]["condition"] == "service_healthy"
    assert agent.get("image") == loupe.get("image"), "the agent runs the server's image"
    targets = {t: ro for _, t, ro in volumes(agent)}
    assert targets.get("/sys/kernel/btf") is True
    assert "/sys/kernel/tracing" in targets
    assert agent.get("healthcheck", {}).get("test") in (["NONE"], "NONE") or \
        agent.get("healthcheck", {}).get("disable") is True

    prom = services["prometheus"]
    assert prom["image"].startswith("prom/prometheus")
    prom_vols = {t: (s, ro) for s, t, ro in volumes(prom)}
    src, ro = prom_vols["/etc/prometheus/prometheus.yml"]
    assert ro and Path(src).resolve() == (DEPLOY / "prometheus" / "prometheus.yml").resolve()


@pytest.mark.parametrize("port", [None, "9999"])
def test_compose_agent_reaches_server_through_published_port(port):
    """network_mode: host cannot resolve `loupe`: the agent must use 127.0.0.1 and the published port."""
    cfg = compose_config(**({"LOUPE_PORT": port} if port else {}))
    loupe, agent = cfg["services"]["loupe"], cfg["services"]["loupe-agent"]
    (host_ip, published, target), = ports(loupe)
    assert target == "8470" and published == (port or "8470")
    assert "ports" not in agent, "ports are meaningless with network_mode: host"
    cmd = agent["command"]
    assert cmd[0] == "agent"
    server = urlsplit(cmd[cmd.index("--server") + 1])
    assert server.hostname == host_ip == "127.0.0.1"
    assert str(server.port) == published


def test_compose_agent_sends_the_configured_token_and_spools_to_its_own_volume():
    cfg = compose_config()
    loupe, agent = cfg["services"]["loupe"], cfg["services"]["loupe-agent"]
    assert env_of(agent)["LOUPE_INGEST_TOKEN"] == env_of(loupe)["LOUPE_INGEST_TOKEN"] == SECRETS["LOUPE_INGEST_TOKEN"]
    assert "LOUPE_ADMIN_PASSWORD" not in env_of(agent) and "LOUPE_METRICS_TOKEN" not in env_of(agent)
    mounts = {t: s for s, t, _ in volumes(agent)}
    assert "loupe-data" not in mounts.values(), "the agent needs nothing of the server's data"
    cmd = agent["command"]
    assert mounts[cmd[cmd.index("--state-dir") + 1]] == "agent-spool"


def test_compose_prometheus_gets_only_the_metrics_token():
    prom = compose_config()["services"]["prometheus"]
    assert env_of(prom) == {"LOUPE_METRICS_TOKEN": SECRETS["LOUPE_METRICS_TOKEN"]}
    cfg = load_yaml((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    job = next(j for j in cfg["scrape_configs"] if j["job_name"] == "loupe")
    token_file = job["authorization"]["credentials_file"]
    entry = " ".join(prom["entrypoint"])
    assert f"> {token_file}" in entry and "exec /bin/prometheus" in entry
    assert any(str(t).startswith(str(Path(token_file).parent)) for t in prom.get("tmpfs", []))


def test_prometheus_scrapes_loupe_metrics():
    cfg = load_yaml((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    jobs = {j["job_name"]: j for j in cfg["scrape_configs"]}
    job = jobs["loupe"]
    assert job.get("metrics_path", "/metrics") == "/metrics"
    targets = [t for sc in job["static_configs"] for t in sc["targets"]]
    assert targets == ["loupe:8470"]


# ---- image ---------------------------------------------------------------------------


def test_dockerfile_is_multistage_and_copies_what_exists():
    text = (DEPLOY / "Dockerfile").read_text()
    logical = re.sub(r"\\\n", " ", text)
    lines = [ln.strip() for ln in logical.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    args = dict(re.match(r"ARG (\w+)=(\S+)", ln).groups() for ln in lines if re.match(r"ARG \w+=", ln))
    froms = [ln.split()[1:] for ln in lines if ln.startswith("FROM ")]
    expand = lambda s: re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), s)  # noqa: E731
    assert len(froms) == 3
    assert expand(froms[0][0]).startswith("node:") and froms[0][-1] == "ui"
    assert expand(froms[1][0]).startswith("debian:bookworm") and froms[1][-1] == "bpf"
    assert expand(froms[2][0]) == "python:3.11-slim-bookworm"
    assert any(ln.startswith("COPY --from=ui ") for ln in lines)
    # the BPF objects come from the bpf stage, built by the same make rule as here
    assert any(ln.startswith("COPY --from=bpf /src/probes probes") for ln in lines)
    assert any("make bpf" in ln for ln in lines) and any("libbpf1" in ln for ln in lines)
    assert any(ln.startswith("ENTRYPOINT ") for ln in lines)
    assert any(ln.startswith("HEALTHCHECK ") and ln.endswith('CMD ["loupe", "health"]') for ln in lines)
    assert any(ln.startswith("USER ") for ln in lines)

    have_frontend = (ROOT / "frontend" / "package.json").exists()
    for ln in lines:
        if not ln.startswith("COPY ") or "--from=" in ln:
            continue
        srcs = [w for w in shlex.split(ln)[1:-1] if not w.startswith("--")]
        for src in srcs:
            if src.startswith("frontend/") and not have_frontend:
                continue  # frontend/ is still being created
            assert (ROOT / src).exists(), f"Dockerfile copies {src}, which is not in the repo"


def test_entrypoint_loads_token_file(tmp_path):
    """deploy/docker-entrypoint.sh execs `loupe` with the token from LOUPE_INGEST_TOKEN_FILE."""
    fake = tmp_path / "bin" / "loupe"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\necho "token=${LOUPE_INGEST_TOKEN-<unset>} args=$*"\n')
    fake.chmod(0o755)
    token = tmp_path / "ingest.token"
    token.write_text("s3cret\n")
    script = str(DEPLOY / "docker-entrypoint.sh")
    base = {"PATH": f"{fake.parent}:/usr/bin:/bin"}

    def run(**env: str) -> subprocess.CompletedProcess:
        return subprocess.run(["sh", script, "agent", "--server", "http://127.0.0.1:8470"],
                              env={**base, **env}, capture_output=True, text=True, timeout=30)

    r = run(LOUPE_INGEST_TOKEN_FILE=str(token))
    assert r.returncode == 0 and r.stdout.strip() == "token=s3cret args=agent --server http://127.0.0.1:8470"
    r = run(LOUPE_INGEST_TOKEN="given", LOUPE_INGEST_TOKEN_FILE=str(token))
    assert r.stdout.strip().startswith("token=given ")
    r = run(LOUPE_INGEST_TOKEN="")  # empty means unset: the server generates its own
    assert r.stdout.strip().startswith("token=<unset> ")
    r = run(LOUPE_INGEST_TOKEN_FILE=str(tmp_path / "missing"))
    assert r.returncode != 0 and "not readable" in r.stderr


# ---- systemd -------------------------------------------------------------------------

UNITS = ["loupe.service", "loupe-agent.service"]


@pytest.mark.parametrize("unit", UNITS)
def test_systemd_unit_structure(unit):
    cp = configparser.ConfigParser(strict=False, interpolation=None, delimiters=("=",))
    cp.optionxform = str  # keys are case-sensitive
    cp.read_string((DEPLOY / unit).read_text())
    assert set(cp.sections()) == {"Unit", "Service", "Install"}
    assert cp["Unit"].get("Description")
    argv = shlex.split(cp["Service"]["ExecStart"])
    assert argv[0] == INSTALLED_LOUPE
    assert argv[1] == ("serve" if unit == "loupe.service" else "agent")
    assert cp["Install"]["WantedBy"] == "multi-user.target"
    if unit == "loupe.service":
        assert cp["Service"].get("StateDirectory") == "loupe"
        assert "LOUPE_DATA_DIR=/var/lib/loupe" in cp["Service"].get("Environment", "")


def test_systemd_units_verify(tmp_path):
    """systemd-analyze verify, with ExecStart pointed at this venv's `loupe` (it checks the binary exists)."""
    analyze = shutil.which("systemd-analyze")
    if not analyze:
        missing_tool("systemd-analyze is not installed (Debian package systemd)")
    loupe_bin = Path(sys.executable).parent / "loupe"
    if not loupe_bin.exists():
        pytest.fail(f"{loupe_bin} missing: the package is not installed in this venv (make deps)")
    for unit in UNITS:
        text = (DEPLOY / unit).read_text().replace(INSTALLED_LOUPE, str(loupe_bin))
        (tmp_path / unit).write_text(text)
    r = subprocess.run([analyze, "verify", *[str(tmp_path / u) for u in UNITS]],
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "SYSTEMD_LOG_COLOR": "0"})
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    # verify only warns (exit 0) on unknown keys and bad values: those are failures here.
    ours = [ln for ln in out.splitlines() if any(u in ln for u in UNITS)]
    assert not ours, "\n".join(ours)


# ---- CI and make ---------------------------------------------------------------------


def test_ci_run_calls_make_test():
    ci = ROOT / ".ci" / "run"
    r = subprocess.run(["bash", "-n", str(ci)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    text = ci.read_text()
    code = [ln.split("#", 1)[0].strip() for ln in text.splitlines()]
    assert "set -euo pipefail" in code
    assert any(re.fullmatch(r"make( -\S+)* test", ln) for ln in code), ".ci/run must run `make test`"
    assert any(ln.startswith("cd ") for ln in code)
    assert 'export CI="${CI:-true}"' in code


@pytest.mark.parametrize("target", ["deps", "api-client", "ui", "run", "demo", "test",
                                    "bench", "compose-check", "clean", "distclean", "help"])
def test_make_target_exists(target):
    """`make -n` (dry run: nothing is executed) knows every documented target."""
    if not shutil.which("make"):
        missing_tool("GNU make is not installed")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    r = subprocess.run(["make", "-n", "--no-print-directory", target], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_make_test_runs_every_suite():
    text = (ROOT / "scripts" / "run-suites.sh").read_text()
    assert ".venv/bin/pytest" in text
    assert "for dir in frontend tests/e2e" in text and 'npm --prefix "$dir" test' in text
    # the e2e script names its files (node 20 has no --test globs): none may be left out
    script = json.loads((ROOT / "tests" / "e2e" / "package.json").read_text())["scripts"]["test"].split()
    missing = sorted(p.name for p in (ROOT / "tests" / "e2e").glob("*.test.mjs") if p.name not in script)
    assert not missing, f"tests/e2e/package.json's test script does not run {missing}"


def test_readme_starts_with_the_two_commands():
    text = (ROOT / "README.md").read_text()
    first_block = re.search(r"```\w*\n(.*?)```", text, re.S)
    assert first_block, "README.md has no code block"
    assert text.index("```") < 600, "the commands come first"
    cmds = [ln.strip() for ln in first_block.group(1).splitlines() if ln.strip()]
    assert cmds[:2] == ["make run", "make test"]


def test_kubernetes_daemonset_runs_the_agent_with_what_its_probes_need():
    doc = load_yaml((DEPLOY / "k8s" / "loupe-agent.yaml").read_text())
    assert (doc["apiVersion"], doc["kind"]) == ("apps/v1", "DaemonSet")
    spec = doc["spec"]["template"]["spec"]
    assert doc["spec"]["selector"]["matchLabels"] == doc["spec"]["template"]["metadata"]["labels"]
    assert spec["hostPID"] is True and spec["hostNetwork"] is True
    [c] = spec["containers"]
    assert c["args"][0] == "agent" and c["securityContext"]["privileged"] is True
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    volumes = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"]}
    for path in ("/sys/kernel/btf", "/sys/kernel/tracing"):
        assert volumes[mounts[path]] == path
    assert c["args"][c["args"].index("--state-dir") + 1] in mounts, "the spool must live on the host"
    env = {e["name"]: e for e in c["env"]}
    assert env["LOUPE_INGEST_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "loupe-agent"  # never inline
