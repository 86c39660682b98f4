"""What one scheduling pass decided for every pending job: :class:`Decisions`, and
squeue's pending reasons."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..model.cluster import Cluster
from ..model.errors import FastschedError

START, RESERVED, BLOCKED = 0, 1, 2
OUTCOME_NAMES = ("start", "reserved", "blocked")


class StaleDecisionsError(FastschedError):
    """Decisions applied to a state that changed since the pass that made them."""


@dataclass(frozen=True)
class Decisions:
    """The outcome of one pass for every pending job, in queue order.

    ``outcome[i]`` is START (start now on ``nodes_of(i)`` with GPUs
    ``gpu_masks_of(i)``), RESERVED (expected to start at ``start_time[i]``; the
    node engine also names the nodes it holds for it) or BLOCKED (not planned
    by this pass). ``reason`` says why a job waits, with squeue's words.
    """

    now: int
    job_id: np.ndarray        # int64, queue order
    outcome: np.ndarray       # int8: START / RESERVED / BLOCKED
    start_time: np.ndarray    # int64, -1 when blocked
    node_offsets: np.ndarray  # int64, CSR over jobs: nodes chosen (START, node-engine RESERVED)
    nodes: np.ndarray         # int64 node indices
    version: int              # state version the pass read
    #: uint64 per entry of ``nodes``: bit k = GPU k taken (0 for reservations)
    gpu_mask: np.ndarray | None = None
    num_nodes: np.ndarray | None = None   # int64, nodes each job asks for
    partition: np.ndarray | None = None   # int64, each job's partition index
    engine: str = "pool"
    cluster: Cluster | None = None        # for node and partition names
    #: per job, the name of the limit that holds it (or ReqNodeNotAvail), "" for none
    held: np.ndarray | None = None
    rows: np.ndarray | None = field(default=None, repr=False)   # the scheduler's job rows
    #: with preemption (:class:`fastsched.sim.schedpreempt.Preempted`): the job that
    #: preempts after this pass, its victims, their modes and stop times; else None
    preempt: object = None
    #: with jobs running in advance reservations: the scheduler's own node per entry of
    #: ``nodes`` (a reservation's twin node, :mod:`fastsched.sim.schedresv`); else None
    layout_nodes: np.ndarray | None = field(default=None, repr=False)
    #: with container images or power saving (:mod:`fastsched.sim.schedstarts`), per
    #: job (0 / -1 unless it starts): seconds CONFIGURING (its powered-down nodes boot
    #: first), its image pull, and when it ends (now + configure + min(pull + runtime,
    #: limit)); else None
    configure_time: np.ndarray | None = None
    pull_time: np.ndarray | None = None
    end_time: np.ndarray | None = None
    #: with ``time_min`` (:mod:`fastsched.sim.schedtimemin`): per job, the time limit it
    #: starts with (cut to fit, at least its time minimum; else its own); else None
    time_limit: np.ndarray | None = None

    def nodes_of(self, i: int) -> np.ndarray:
        return self.nodes[self.node_offsets[i]:self.node_offsets[i + 1]]

    def gpu_masks_of(self, i: int) -> np.ndarray:
        if self.gpu_mask is None:
            return np.zeros(len(self.nodes_of(i)), dtype=np.uint64)
        return self.gpu_mask[self.node_offsets[i]:self.node_offsets[i + 1]]

    @property
    def starts(self) -> np.ndarray:
        """Job ids to start now."""
        return self.job_id[self.outcome == START]

    @property
    def job_state(self) -> list[str]:
        """Slurm's job state after the pass: PENDING, RUNNING, or CONFIGURING for a start
        that waits for its nodes' boots (squeue's CF; its reason is then "None")."""
        state = np.where(self.outcome == START, "RUNNING", "PENDING").astype(object)
        if self.configure_time is not None:
            state[(self.outcome == START) & (self.configure_time > 0)] = "CONFIGURING"
        return state.tolist()

    @property
    def reason(self) -> list[str]:
        """Slurm's pending reasons: the first waiting job of a partition waits for
        "Resources", every later one for "Priority" (higher-priority jobs exist
        for the partition), a held job for its limit; "" for jobs that start."""
        return waiting_reasons(self.outcome, self.partition, self.held).tolist()

    def to_pandas(self):
        """job_id, outcome, start_time, reason, num_nodes, and the nodes as a hostlist
        and GPU ids like ``node001(IDX:0-3)`` (needs ``cluster``; else node indices);
        configure_time, pull_time and end_time when the pass has them."""
        import pandas as pd
        hosts, gpu_ids = self._names()
        num = np.diff(self.node_offsets) if self.num_nodes is None else self.num_nodes
        costs = {name: getattr(self, name) for name in ("configure_time", "pull_time",
                                                        "end_time")
                 if getattr(self, name) is not None}
        return pd.DataFrame({"job_id": self.job_id,
                             "outcome": [OUTCOME_NAMES[o] for o in self.outcome],
                             "start_time": self.start_time, "reason": self.reason,
                             "num_nodes": num, "nodes": hosts, "gpu_ids": gpu_ids, **costs})

    def _names(self) -> tuple[list[str], list[str]]:
        from ..io.hostlist import compress
        from .results import format_gpu_ids
        names = (self.cluster.node_names if self.cluster is not None
                 else [str(k) for k in range(int(self.nodes.max(initial=-1)) + 1)])
        hosts = [compress([names[k] for k in self.nodes_of(i)]) for i in range(len(self))]
        gpus = [format_gpu_ids(names, self.nodes_of(i), self.gpu_masks_of(i))
                for i in range(len(self))]
        return hosts, gpus

    def __len__(self) -> int:
        return len(self.job_id)


def waiting_reasons(outcome: np.ndarray, partition: np.ndarray | None,
                    held: np.ndarray | None = None) -> np.ndarray:
    """Per job (queue order): "" if it starts, ``held`` where that names why it is
    held, else "Resources" for the first waiting job of its partition, "Priority" for
    later ones (as squeue's REASON)."""
    reasons = np.full(len(outcome), "", dtype=object)
    is_held = np.zeros(len(outcome), dtype=bool) if held is None else held != ""
    reasons[is_held] = held[is_held] if held is not None else ""
    waiting = np.flatnonzero((outcome != START) & ~is_held)
    reasons[waiting] = "Priority"
    part = np.zeros(len(outcome), dtype=np.int64) if partition is None else partition
    _, first = np.unique(part[waiting], return_index=True)
    reasons[waiting[first]] = "Resources"
    return reasons
