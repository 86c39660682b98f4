"""Preemption with dependencies and limits in the embeddable :class:`fastsched.Scheduler`,
as :func:`fastsched.simulate` applies them (:mod:`fastsched.engine.preempt`,
:mod:`fastsched.engine.loop`), over the Scheduler's bookkeeping
(:class:`.bookkeeping.ConstraintState`):

- a job preempts only after the last pass of an instant: one whose starts queue a
  dependent (an ``after`` dependency satisfied by a start) is followed by another pass,
  as the simulator passes again (:func:`releases`);
- a job a limit holds does not preempt: its groups' usage read after the pass's
  starts (a preemptor counts only once it starts; a victim counts until it stops,
  grace time included); Slurm does not test a job over its QOS or association limits
  for a start at all, so it preempts no one (:func:`limit_held`);
- a requeued victim stays submitted (its groups' max_submit count) and is not ended
  for its dependents; its ``after`` edges, satisfied at its first start, are spent
  (:func:`requeued`), as Slurm keeps a requeued job's dependents' satisfied
  dependencies.
"""
from __future__ import annotations

import numpy as np

from ..model.constraints import AFTER, csr_take
from .bookkeeping import WAITING

__all__ = ["releases", "limit_held", "requeued"]


def releases(s, rows) -> bool:
    """Whether starting catalog ``rows`` queues a dependent of theirs: one submitted and
    waiting whose last unsatisfied dependencies are ``after`` edges from ``rows``."""
    c = s._constraints
    offsets, child, kind = c.children
    if not len(child) or not len(rows):
        return False
    _, idx = csr_take(offsets, np.asarray(rows, dtype=np.int64))
    hit, count = np.unique(child[idx[kind[idx] == AFTER]], return_counts=True)
    free = (c.pending_deps[hit] == count) & ~c.never[hit] & \
        (s._catalog.status[hit] == WAITING)
    return bool(free.any())


def limit_held(s, started, queue) -> np.ndarray:
    """Per queued catalog row of ``queue``: would its start exceed a cap (jobs, GPUs,
    CPUs or memory) of one of its limit groups, with the usage of the running jobs and
    of the pass's ``started`` rows?"""
    c = s._constraints
    held = np.zeros(len(queue), dtype=bool)
    if not len(c.limits.caps) or not len(queue):
        return held
    usage = s._usage[:, :4].copy()
    off, group = c.groups_of(started)
    np.add.at(usage, group, _wants(s, started)[np.repeat(np.arange(len(started)),
                                                         np.diff(off))])
    off, group = c.groups_of(queue)
    member = np.repeat(np.arange(len(queue)), np.diff(off))
    caps = c.limits.caps[group, :4]
    over = (caps >= 0) & (usage[group] + _wants(s, queue)[member] > caps)
    held[member[over.any(axis=1)]] = True
    return held


def _wants(s, rows) -> np.ndarray:
    """What each job of catalog ``rows`` counts in its groups once running: 1 job, its
    GPUs, CPUs and MB over its nodes."""
    j = s._catalog.take(np.asarray(rows, dtype=np.int64))
    nn = j.num_nodes.astype(np.int64)
    return np.stack([np.ones(len(nn), dtype=np.int64), nn * j.gpus_per_node,
                     nn * j.cpus_per_node, nn * j.mem_per_node], axis=1).astype(np.int64)


def requeued(s, rows) -> None:
    """Victims ``rows`` (catalog rows) were requeued: their ``after`` edges are spent
    and their attempt's start forgotten (the simulator's ``start`` -1 until the next)."""
    s._constraints.spend_after(rows)
    s._catalog.start[rows] = -1
