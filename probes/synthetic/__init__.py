"""The synthetic NAS "demo-nas": deterministic NFS, disk, CPU and network data for demos and load tests."""

from .nas import SyntheticNAS

__all__ = ["SyntheticNAS"]
