"""The server process's memory as its consumers see it, for /metrics: the resident set, pyarrow's
pool, glibc's heap. The store engine reports its own (Store.memory_parts)."""

from __future__ import annotations

import ctypes
import ctypes.util
import os

import pyarrow as pa


class _MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def _glibc():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallinfo2.restype = _MallInfo2  # glibc 2.33 and later
        return libc
    except (OSError, AttributeError):  # not glibc (musl, macOS), or an older one
        return None


_libc = _glibc()


def resident_bytes() -> int:
    """This process's resident set (VmRSS), 0 where /proc has none."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def malloc_stats() -> dict[str, int]:
    """glibc's heap: bytes in blocks handed out (``in_use``, mmapped ones included) and free bytes
    it keeps in its arenas (``free``); empty where the C library is not glibc."""
    if _libc is None:
        return {}
    m = _libc.mallinfo2()
    return {"in_use": m.uordblks + m.hblkhd, "free": m.fordblks}


def use_returning_arrow_pool() -> str:
    """Make pyarrow allocate from jemalloc (or the C library's malloc where pyarrow has no jemalloc),
    unless ARROW_DEFAULT_MEMORY_POOL chose a pool; returns the pool's name.

    Under ingest spread over the server's request threads, pyarrow's default, mimalloc, held 150 to
    250 MiB resident while its pool had a few MiB in use; jemalloc, at the same speed, about 100 MiB
    less (docs/PERFORMANCE.md, "Memory under load")."""
    if not os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        try:
            pa.set_memory_pool(pa.jemalloc_memory_pool())
        except NotImplementedError:  # a pyarrow built without jemalloc
            pa.set_memory_pool(pa.system_memory_pool())
    return pa.default_memory_pool().backend_name


def process_memory() -> dict:
    """Resident set, pyarrow's pool (and its allocator's name) and glibc's heap, in bytes."""
    pool = pa.default_memory_pool()
    out = {"resident": resident_bytes(), "arrow": pool.bytes_allocated(), "arrow_pool": pool.backend_name}
    out.update({f"malloc_{k}": v for k, v in malloc_stats().items()})
    return out
