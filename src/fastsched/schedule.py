"""A schedule: when each job ran and on which nodes. What simulators produce and
what :func:`fastsched.verify` checks.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Schedule:
    """Per job (same order as the JobTable it schedules): start, end and nodes.

    Nodes are in CSR form: job ``i`` ran on node indices
    ``alloc_nodes[alloc_offsets[i]:alloc_offsets[i + 1]]``. A job that never
    started has ``start_time == end_time == -1`` and no nodes.
    """

    job_id: np.ndarray         # int64
    start_time: np.ndarray     # int64
    end_time: np.ndarray       # int64
    alloc_offsets: np.ndarray  # int64, len = jobs + 1
    alloc_nodes: np.ndarray    # int64 node indices

    def nodes_of(self, i: int) -> np.ndarray:
        return self.alloc_nodes[self.alloc_offsets[i]:self.alloc_offsets[i + 1]]

    def __len__(self) -> int:
        return len(self.job_id)
