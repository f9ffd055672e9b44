"""The decoder's counts, kept in place (``nfswire.bpf.h``: ``rows``, two generations).

Each second the programs are switched to the other generation, and once no
program still adds to the one they left (an RCU grace period: they run inside
read-side sections), its claimed rows are read and zeroed through a shared
mapping: no syscall per row, and no add lost to a row deleted under a program
that was still adding to it (which a hash map's lookup-and-delete allows). The
pages read count in the agent's RSS as they are touched (the busiest second's
rows, at most the table's 12 MiB); the grace period is waited for, not spun
(16 ms a drain on the benchmark VM, idle).
"""

from __future__ import annotations

import ctypes
import struct
import time

from ..bpf.libbpf import BpfObject, grace_period
from .wire import Row

ROW = ctypes.sizeof(Row)
USED = 64  # nfsw_rowctl.used: a cache line after gen
_ZERO = bytes(ROW)
# grace_period()'s fallback: programs run for microseconds (bounded loops, no
# sleeping), so a program that read the old generation has long returned
FALLBACK_WAIT_S = 0.01


class RowTable:
    def __init__(self, obj: BpfObject) -> None:
        m = obj.map("rows")
        self.n = m.max_entries // 2  # rows per generation
        self.rows, self.used, self.ctl = m.mmap(), obj.map("row_used").mmap(), obj.map("row_ctl").mmap()
        self.why_no_grace: str | None = None  # set when the kernel would not wait for the programs

    @property
    def gen(self) -> int:
        return struct.unpack_from("<I", self.ctl, 0)[0] & 1

    def claimed(self, gen: int) -> int:
        return min(struct.unpack_from("<I", self.ctl, USED + 4 * gen)[0], self.n)

    def read(self, gen: int, *, zero: bool = False) -> list[Row]:
        """The rows generation ``gen`` holds, in the order claimed; zeroed after with ``zero``."""
        n = self.claimed(gen)
        out = []
        for i in struct.unpack_from(f"<{n}Q", self.used, 8 * gen * self.n):
            off = i * ROW
            out.append(Row.from_buffer_copy(self.rows, off))
            if zero:
                self.rows[off:off + ROW] = _ZERO
        if zero:
            struct.pack_into("<I", self.ctl, USED + 4 * gen, 0)
        return out

    def drain(self) -> list[Row]:
        """The last second's rows: the programs move on to the other generation,
        and this one is read and zeroed once none of them adds to it any more."""
        old = self.gen
        struct.pack_into("<I", self.ctl, 0, old ^ 1)
        why = grace_period()
        if why is not None:
            self.why_no_grace = why
            time.sleep(FALLBACK_WAIT_S)
        return self.read(old, zero=True)

    def fill(self, rows: int) -> float:
        return rows / self.n

    def close(self) -> None:
        for m in (self.rows, self.used, self.ctl):
            m.close()
