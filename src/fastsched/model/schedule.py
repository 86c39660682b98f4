"""A schedule: when each job ran and on which nodes. What simulators produce and
what :func:`fastsched.verify` checks.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .constraints import csr_take
from .noderuns import ExpandsRuns, NodeRuns


@dataclass
class Schedule(ExpandsRuns):
    """Per job (same order as the JobTable it schedules): start, end and nodes.

    Nodes are in CSR form: job ``i`` ran on node indices
    ``alloc_nodes[alloc_offsets[i]:alloc_offsets[i + 1]]``. A job that never
    started has ``start_time == end_time == -1`` and no nodes. ``node_runs``
    (:class:`NodeRuns`, with ``alloc_nodes=None``): the same nodes as runs of
    consecutive indices (the counts model's whole-node allocations);
    ``alloc_nodes`` is then expanded from them only when read.

    ``planning``: the reservation model the scheduler planned with, when known:
    ``"counts"`` (counts of interchangeable nodes: the textbook algorithms,
    fastsched's pool engine) or ``"nodes"`` (concrete nodes and GPU counts:
    fastsched's node engine). :func:`fastsched.verify` judges easy and
    conservative by the counts model only, so it does not judge a ``"nodes"``
    schedule by them. None: unknown (another simulator, a real log).
    """

    job_id: np.ndarray         # int64
    start_time: np.ndarray     # int64
    end_time: np.ndarray       # int64
    alloc_offsets: np.ndarray  # int64, len = jobs + 1
    alloc_nodes: np.ndarray | None    # int64 node indices (None: from node_runs)
    #: uint64 per entry of alloc_nodes: bit k = GPU k of that node (None: no GPUs tracked)
    alloc_gpu_mask: np.ndarray | None = None
    planning: str | None = None
    node_runs: NodeRuns | None = None

    def nodes_of(self, i: int) -> np.ndarray:
        if self.node_runs is not None:
            return self.node_runs.take([i]).nodes()
        return self.alloc_nodes[self.alloc_offsets[i]:self.alloc_offsets[i + 1]]

    def rows(self, keep) -> Schedule:
        """The schedule of the jobs ``keep`` (indices, or a mask), in that order."""
        keep = np.asarray(keep)
        mask = keep.dtype == bool
        keep = np.flatnonzero(keep) if mask else keep.astype(np.int64)
        offsets, index = csr_take(self.alloc_offsets, keep)
        out = dict(job_id=self.job_id[keep], start_time=self.start_time[keep],
                   end_time=self.end_time[keep], alloc_offsets=offsets, planning=self.planning)
        if self.node_runs is not None:
            return Schedule(**out, alloc_nodes=None, node_runs=self.node_runs.take(keep))
        if mask and offsets[-1] == self.alloc_offsets[-1]:
            index = slice(None)         # the jobs left out hold no nodes: no copy
        return Schedule(**out, alloc_nodes=self.alloc_nodes[index],
                        alloc_gpu_mask=None if self.alloc_gpu_mask is None
                        else self.alloc_gpu_mask[index])

    def gpus_of(self, i: int) -> list[list[int]]:
        """GPU indices job ``i`` holds on each of its nodes (empty lists if none)."""
        if self.alloc_gpu_mask is None:
            return [[] for _ in self.nodes_of(i)]
        masks = self.alloc_gpu_mask[self.alloc_offsets[i]:self.alloc_offsets[i + 1]]
        return [[k for k in range(64) if (int(m) >> k) & 1] for m in masks]

    def __len__(self) -> int:
        return len(self.job_id)
