"""NFS wire probe: ONC RPC over TCP decoded at tc, per client x proto x op x file."""

from .probe import NfsWireProbe

__all__ = ["NfsWireProbe"]
