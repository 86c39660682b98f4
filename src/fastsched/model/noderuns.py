"""Whole-node allocations as runs of consecutive node indices (:class:`NodeRuns`), and
the lazy expansion of such runs to one node index per allocated node
(:class:`ExpandsRuns`), for the schedules and engine runs that keep them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .constraints import csr_take

#: entries expanded per step when runs become node indices (bounds the temporaries)
_CHUNK = 1 << 20


@dataclass(frozen=True)
class NodeRuns:
    """Jobs' nodes as runs of consecutive node indices: job ``i`` holds nodes
    ``first[k]`` to ``first[k] + count[k] - 1`` for ``k`` in
    ``offsets[i]:offsets[i + 1]`` (runs in increasing node order; a job that
    never started has none). Whole-node allocations in O(runs), not one entry
    per node: what the counts model's engine keeps."""
    offsets: np.ndarray   # int64[jobs + 1]
    first: np.ndarray     # int64[runs]
    count: np.ndarray     # int64[runs]

    def node_offsets(self) -> np.ndarray:
        """CSR offsets of the jobs' nodes one entry per node (what :meth:`nodes` fills)."""
        ends = np.zeros(len(self.count) + 1, dtype=np.int64)
        np.cumsum(self.count, out=ends[1:])
        return ends[self.offsets]

    def nodes(self) -> np.ndarray:
        """Every job's node indices, one entry per node, in :meth:`node_offsets`' CSR."""
        count = np.asarray(self.count, dtype=np.int64)
        before = np.cumsum(count) - count             # entries before each run
        out = np.repeat(np.asarray(self.first, dtype=np.int64) - before, count)
        for a in range(0, len(out), _CHUNK):          # + the entry's position
            b = min(a + _CHUNK, len(out))
            out[a:b] += np.arange(a, b, dtype=np.int64)
        return out

    def merged(self) -> NodeRuns:
        """The same nodes without empty runs, each run joined with the next of its job
        when they touch (as the counts model keeps them, but from any runs)."""
        first = np.asarray(self.first, dtype=np.int64)
        count = np.asarray(self.count, dtype=np.int64)
        row = np.repeat(np.arange(len(self.offsets) - 1), np.diff(self.offsets))
        row, first, count = row[count > 0], first[count > 0], count[count > 0]
        lead = np.ones(len(first), dtype=bool)
        lead[1:] = (row[1:] != row[:-1]) | (first[1:] != first[:-1] + count[:-1])
        lead = np.flatnonzero(lead)
        ends = np.append(lead[1:], len(first)) - 1
        return NodeRuns(offsets=np.searchsorted(row[lead], np.arange(len(self.offsets))),
                        first=first[lead], count=first[ends] + count[ends] - first[lead])

    def take(self, rows) -> NodeRuns:
        """The runs of jobs ``rows`` (in that order)."""
        offsets, index = csr_take(self.offsets, rows)
        return NodeRuns(offsets=offsets, first=self.first[index], count=self.count[index])


class ExpandsRuns:
    """For a dataclass with fields ``alloc_nodes`` and ``node_runs``: given
    ``alloc_nodes=None`` and node runs, ``alloc_nodes`` is expanded from the runs when
    first read (and kept), so that a caller who never asks for node indices never
    holds one per allocated node."""

    def __post_init__(self):
        if self.alloc_nodes is None:
            if self.node_runs is None:
                raise ValueError("alloc_nodes None needs node_runs")
            object.__delattr__(self, "alloc_nodes")

    def __getattr__(self, name):
        # reached only for an attribute not set: alloc_nodes not expanded yet
        runs = self.__dict__.get("node_runs")
        if name != "alloc_nodes" or runs is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        nodes = runs.nodes()
        object.__setattr__(self, "alloc_nodes", nodes)
        return nodes
