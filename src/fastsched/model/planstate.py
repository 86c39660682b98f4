"""A cluster's moment to plan: its running jobs and its queue (``fastsched plan``).

What ``squeue`` shows of a GPU cluster at one time: each running job's nodes, GPUs
per node and planned end (start + time limit), and the pending jobs in queue order
with their node count, GPUs per node and time limit. The planning models
(:func:`fastsched.plan`) take it with the :class:`~fastsched.model.cluster.Cluster`
its node indices refer to.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InputError


@dataclass
class PlanState:
    """Running jobs (``run_*``, job r on ``run_nodes[run_offsets[r]:run_offsets[r+1]]``)
    and pending jobs (``pend_*``, in queue order). Times in epoch seconds, limits in
    seconds, GPUs and cores per node. ``pend_priority``: Slurm's priority when known
    (higher first), else None: the queue is in job-id order (priority/basic).
    ``pend_partition``: partition name per job, "" for the default one."""

    run_id: np.ndarray
    run_start: np.ndarray
    run_end: np.ndarray
    run_offsets: np.ndarray
    run_nodes: np.ndarray
    run_gpus: np.ndarray
    run_cores: np.ndarray
    pend_id: np.ndarray
    pend_nodes: np.ndarray
    pend_gpus: np.ndarray
    pend_cores: np.ndarray
    pend_limit: np.ndarray
    pend_priority: np.ndarray | None = None
    pend_partition: list[str] | None = None

    def __post_init__(self):
        for name in ("pend_nodes", "pend_limit"):
            col = getattr(self, name)
            if len(col) and col.min() < 1:
                raise InputError(f"every pending job needs {name[5:]} >= 1", field=name)
        if len(self.run_end) and (self.run_end < self.run_start).any():
            raise InputError("a running job ends before it starts", field="end")

    def started_by(self, now: int) -> np.ndarray:
        """Running jobs that started at or after ``now``: started by the cycle at ``now``."""
        return self.run_start >= now
