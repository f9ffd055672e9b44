"""ZFS: ARC and L2ARC hits and misses, and txg sync times per pool, from OpenZFS kstats."""

from .source import ZfsSource, parse_arcstats, parse_txgs

__all__ = ["ZfsSource", "parse_arcstats", "parse_txgs"]
