"""Loupe probes: sources of frames (procfs, the synthetic demo NAS) and the agent that ships them."""
