"""Test helpers: skip with the reason when this machine cannot run a test, except in CI, which
has root, BPF, Chromium and everything `make deps` installs: there the same reason is a failure."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from . import libbpf

REPO = Path(__file__).resolve().parents[2]
IN_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def unavailable(reason: str) -> None:
    """Skip the calling test for `reason`; in CI, fail it instead: nothing may skip there."""
    if IN_CI:
        pytest.fail(f"{reason} (CI is set: this test must run here)")
    pytest.skip(f"{reason}; run `make deps` as root (or set CI=1 to make this a failure)")


def build_objects() -> str | None:
    """Run `make bpf` once per session; None on success, else why it failed."""
    if not hasattr(build_objects, "result"):
        if shutil.which("clang") is None or shutil.which("bpftool") is None:
            build_objects.result = "clang/bpftool not installed (make deps installs them)"
        else:
            r = subprocess.run(["make", "-s", "bpf"], cwd=REPO, capture_output=True, text=True)
            build_objects.result = None if r.returncode == 0 else f"make bpf failed: {r.stderr[-2000:]}"
    return build_objects.result


def require_bpf(obj: str | Path | None = None) -> None:
    """Skip the calling test unless BPF probes can load here (root, BTF, libbpf, built objects).

    A build failure is an error, not a skip: the objects are part of the product."""
    why = libbpf.why_not_bpf()
    if why:
        unavailable(f"BPF probes cannot run here: {why}")
    err = build_objects()
    if err and "not installed" in err:
        unavailable(err)
    if err:
        pytest.fail(err)
    if obj is not None and not Path(obj).exists():
        pytest.fail(f"{obj} was not built by `make bpf`")
