"""File handle -> path, from the name bindings the kernel saw on the wire.

A binding says "handle C is the entry N of directory P" (LOOKUP, CREATE, OPEN,
READDIRPLUS results) or "handle C is the export root N" (MOUNT, PUTROOTFH +
LOOKUP). Paths are rebuilt by walking parents up to the root sentinel. Where the
walk stops at a handle with no binding, the ``opener`` (open_by_handle_at on the
server itself, ``fhopen.py``) may name that handle, and the names below it are
appended. Handles with no known name show as ``fh:<hash>`` (the 64-bit hash of
the handle, in hex, unique per handle, unlike a prefix of the handle, which is
usually the export's).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable

from .wire import FH_NONE, FH_ROOT

MAX_DEPTH = 64


def fh_label(h: int) -> str:
    return f"fh:{h:016x}"


class Resolver:
    """Bounded (LRU) map of handle hash -> (parent hash, name)."""

    def __init__(self, exports: Iterable[str] = (), max_entries: int = 500_000,
                 opener: Callable[[int], str | None] | None = None) -> None:
        self.parents: OrderedDict[int, tuple[int, str]] = OrderedDict()
        self.max_entries = max_entries
        self.exports = sorted({e.rstrip("/") or "/" for e in exports}, key=len, reverse=True)
        self.opener = opener  # handle hash -> path by other means (it caches and bounds its cost)

    def bind(self, child: int, parent: int, name: str) -> None:
        if child in (FH_NONE, FH_ROOT) or child == parent:
            return
        self.parents[child] = (parent, name.strip("/"))
        self.parents.move_to_end(child)
        while len(self.parents) > self.max_entries:
            self.parents.popitem(last=False)

    def _walk(self, h: int) -> tuple[int, list[str]] | None:
        """(the handle where the bindings stop, the names below it, leaf last);
        None for a cycle or a chain deeper than MAX_DEPTH."""
        parts: list[str] = []
        seen = set()
        while h != FH_ROOT:
            if h in seen or len(parts) > MAX_DEPTH:
                return None
            seen.add(h)
            up = self.parents.get(h)
            if up is None:
                break
            h, name = up
            if name:
                parts.append(name)
        parts.reverse()
        return h, parts

    def path(self, h: int) -> str | None:
        """The path of handle ``h`` from bindings alone, or None when its chain does not reach a root."""
        w = self._walk(h)
        return "/" + "/".join(w[1]) if w is not None and w[0] == FH_ROOT else None

    def file(self, h: int) -> str:
        if h == FH_NONE:
            return ""
        w = self._walk(h)
        if w is None:
            return fh_label(h)
        top, parts = w
        if top == FH_ROOT:
            return "/" + "/".join(parts)
        base = self.opener(top) if self.opener is not None else None
        if base is None:
            return fh_label(h)
        return "/".join([base.rstrip("/"), *parts]) if parts else base

    def share(self, path: str) -> str:
        """The export ``path`` falls under: the longest configured export that
        prefixes it, else its first component ("/" prefix)."""
        if not path or path.startswith("fh:"):
            return ""
        for e in self.exports:
            if e == "/" or path == e or path.startswith(e + "/"):
                return e
        first = path.strip("/").split("/", 1)[0]
        return "/" + first
