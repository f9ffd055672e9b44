"""Disk I/O probe: block_rq_issue/complete, per disk x op, with latency/size/offset histograms."""

from .probe import DiskProbe, dev_name, DiskNames

__all__ = ["DiskProbe", "dev_name", "DiskNames"]
