"""Loupe: real-time storage analytics for NAS servers."""

__version__ = "0.1.0"
