"""knfsd probe: the kernel NFS server's tracepoints, per client x proto x op x file."""

from .probe import NfsdProbe

__all__ = ["NfsdProbe"]
