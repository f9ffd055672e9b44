"""CPU by application: on-CPU time per CPU x process name (or name[pid]), from sched_switch."""

from .probe import CpuProbe, application, split_modes

__all__ = ["CpuProbe", "application", "split_modes"]
