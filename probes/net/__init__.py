"""Per-client network probe: bytes and socket calls per remote address x local port x
direction, and TCP retransmits per remote address x local port."""

from .probe import NetProbe, addr_str

__all__ = ["NetProbe", "addr_str"]
