"""This machine's CPU, disk and network counters from /proc, no root needed."""

from .collectors import CpuSource, DiskSource, NetSource

__all__ = ["CpuSource", "DiskSource", "NetSource"]
