"""A research queue order (SJF, F1-F4, WFP3, UNICEP...) as ``simulate``'s ``priority``.

:func:`fastsched.policy.priority.research_order` scores jobs (lower first); a simulation
takes a priority (higher first), as an array when the order does not change with time
(computed once), else as ``priority(now, progress)`` recomputed every period. The
callable is an object, not a closure, so results and checkpoints that hold it pickle.
"""
from __future__ import annotations

from .priority import WAITING_ORDERS, research_order


def research_priority(name: str, jobs, cluster):
    """The priority of research order ``name`` for ``jobs`` on ``cluster``; sizes in
    GPUs on GPU clusters, else CPUs."""
    size = "gpus" if cluster.gpus.any() else "cpus"
    if name.upper() in WAITING_ORDERS:
        return WaitingOrder(name, jobs, size)
    return -research_order(name, jobs, 0, size=size)


class WaitingOrder:
    """``priority(now, progress)`` of a research order whose scores grow with the wait."""

    def __init__(self, name: str, jobs, size: str):
        self.name, self.jobs, self.size = name, jobs, size

    def __call__(self, now, progress):
        return -research_order(self.name, self.jobs, now, size=self.size)
