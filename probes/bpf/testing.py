"""Test helpers for BPF probes: skip with the reason when this machine cannot run them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from . import libbpf

REPO = Path(__file__).resolve().parents[2]


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
        pytest.skip(f"BPF probes cannot run here: {why}")
    err = build_objects()
    if err and "not installed" in err:
        pytest.skip(err)
    if err:
        pytest.fail(err)
    if obj is not None and not Path(obj).exists():
        pytest.fail(f"{obj} was not built by `make bpf`")
