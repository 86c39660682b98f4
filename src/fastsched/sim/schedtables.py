"""Row plumbing for the :class:`~fastsched.sim.scheduler.Scheduler`'s tables: joining
and taking rows of running-job tables and CSR lists, splitting limits, and widening a pass
over part of the queue to the whole queue."""
from __future__ import annotations

import numpy as np

from ..engine import NodeDecisions, RunningJobs
from ..model.constraints import LimitGroups, csr_take
from ..model.errors import InputError
from .bookkeeping import csr_offsets
from .decisions import BLOCKED


def widen(d: NodeDecisions, planned: np.ndarray):
    """``d`` (a pass over the jobs ``planned`` marks, a subsequence of the queue) as
    arrays over the whole queue, the others BLOCKED: (outcome, start, node offsets,
    nodes, GPU masks, partition)."""
    n = len(planned)
    outcome = np.full(n, BLOCKED, dtype=np.int8)
    outcome[planned] = d.outcome
    start = np.full(n, -1, dtype=np.int64)
    start[planned] = d.planned_start
    counts = np.zeros(n, dtype=np.int64)
    counts[planned] = np.diff(d.node_offsets)
    partition = np.full(n, -1, dtype=np.int64)
    partition[planned] = d.partition
    return outcome, start, csr_offsets(counts), d.nodes, d.gpu_mask, partition


def split_limits(limits, n_running: int, n_pending: int):
    """``limits`` over running then pending jobs, as (running part, pending part)."""
    if limits is None:
        return None, None
    if len(limits) != n_running + n_pending:
        raise InputError(f"limits cover {len(limits)} jobs; from_state needs one entry per "
                         f"running then pending job ({n_running} + {n_pending})",
                         field="limits")
    parts = []
    for rows in (np.arange(n_running), np.arange(n_running, n_running + n_pending)):
        off, idx = csr_take(limits.offsets, rows)
        parts.append(LimitGroups(off, limits.group[idx], limits.caps, limits.reasons))
    return parts[0], parts[1]


def concat_csr(a, b):
    return (np.concatenate([a[0], b[0][1:] + a[0][-1]]), np.concatenate([a[1], b[1]]))


def take_csr(a, rows):
    off, idx = csr_take(a[0], rows)
    return off, a[1][idx]


def no_running() -> RunningJobs:
    z = np.zeros(0, dtype=np.int64)
    return RunningJobs(z, z, np.zeros(1, dtype=np.int64), z, z, z, z, np.zeros(0, np.uint64),
                       np.zeros(0, dtype=bool))


def exclusive_of(r: RunningJobs) -> np.ndarray:
    return np.zeros(len(r), dtype=bool) if r.exclusive_topo is None else r.exclusive_topo


ENTRY_FIELDS = ("nodes", "gpus", "cpus", "mem", "gpu_mask")


def concat_running(a: RunningJobs, b: RunningJobs) -> RunningJobs:
    cat = {f: np.concatenate([getattr(a, f), getattr(b, f)]) for f in ENTRY_FIELDS}
    return RunningJobs(np.concatenate([a.job_id, b.job_id]),
                       np.concatenate([a.planned_end, b.planned_end]),
                       np.concatenate([a.node_offsets, b.node_offsets[1:] + a.node_offsets[-1]]),
                       **cat, exclusive_topo=np.concatenate([exclusive_of(a), exclusive_of(b)]))


def take_running(r: RunningJobs, rows: np.ndarray) -> RunningJobs:
    entries = csr_take(r.node_offsets, rows)[1]
    return RunningJobs(r.job_id[rows], r.planned_end[rows],
                       csr_offsets(np.diff(r.node_offsets)[rows]),
                       **{f: getattr(r, f)[entries] for f in ENTRY_FIELDS},
                       exclusive_topo=exclusive_of(r)[rows])
