"""The ``preemptor`` check of a run with preemption: every PREEMPTED attempt had a job
that may preempt it, waiting for its nodes when it was preempted.

What it GUARANTEES when it passes, for each attempt that ended PREEMPTED (of class c,
the partition it ran in under preempt/partition_prio, its job's QOS under preempt/qos):
c's ``PreemptMode`` is not OFF, and at its preemption instant p (its end less c's
``GraceTime``; p is not before its attempt's start, or its allocation for one stopped
while CONFIGURING, power saving: a ``--no-kill`` attempt a failure
shrank is one preemption over its shapes, the one it ran at p giving its nodes) some
job J was pending: J had been
submitted (or, requeued, its previous attempt had ended plus the requeue delay) by p
and its next attempt started at p or later (or never); J may preempt c (the rules'
``may``: a higher PriorityTier sharing nodes, or c in the ``Preempt`` list of J's QOS);
and one of J's allowed partitions holds at least one node the attempt ran on.

That is all a schedule can show, whatever the scheduler: J need not start on the
victim's nodes (a job queued before it may take them, or other nodes may free first),
nor start at all soon after, and the check does not ask that J could not fit the
free resources at p (a limit, a dependency or a begin time it cannot see may have
held J, which then did not preempt, yet another pending job did). Pending is judged
from the records alone: a dependency or ``--begin`` that kept J ineligible is not
known here, so J counts from its submit time.

Per (J's class, partition) the pending intervals are sorted by their begin, with the
running maximum of their ends: an instant p is covered by one of them when the
maximum end of those beginning by p reaches p (a binary search per attempt and key).
"""
from __future__ import annotations

import numpy as np

from ..model.preemption import OFF
from .report import Violation

__all__ = ["check_preemptors", "first_records"]

_NEVER = np.iinfo(np.int64).max


def check_preemptors(cluster, jobs, a, preemption, choices, delay: int, out) -> None:
    """Append a ``preemptor`` violation for each preempted attempt of ``a`` (a
    :class:`fastsched.verify.lifecycle.Attempts` sorted by job row then attempt, with
    ``partition``) that had no preemptor (see the module); ``choices``: the jobs'
    :class:`fastsched.model.constraints.PartitionChoices` (None: each job's
    ``partition``)."""
    P = len(cluster.partitions)
    member = np.zeros((P, cluster.num_nodes), dtype=bool)
    for k, part in enumerate(cluster.partitions):
        member[k, np.asarray(part.nodes, dtype=np.int64)] = True
    cls_of = _classes(preemption, a)
    victims = np.flatnonzero(a.preempted & (a.start >= 0))
    if not len(victims):
        return
    keys = _pending(jobs, a, preemption, choices, int(delay))
    may = np.asarray(preemption.may, dtype=bool)
    mode = np.asarray(preemption.mode)
    grace = np.asarray(preemption.grace, dtype=np.int64)
    first = first_records(a)
    for k in victims.tolist():
        c = int(cls_of[k])
        at = int(a.end[k]) - int(grace[c])
        k0 = int(first[k])          # (a resized attempt: its shapes k0..k, by start)
        live = k0 + max(int(np.searchsorted(a.start[k0:k + 1], at, side="right")) - 1, 0)
        nodes = a.alloc_nodes[a.alloc_offsets[live]:a.alloc_offsets[live + 1]]
        nodes = nodes[(nodes >= 0) & (nodes < cluster.num_nodes)]
        touched = member[:, nodes].any(axis=1)
        found = mode[c] != OFF and at >= _allocated(a, k0, k) and any(
            may[jc, c] and touched[p] and _covers(begins, ends, at)
            for (jc, p), (begins, ends) in keys.items())
        if not found:
            jid = int(jobs.job_id[a.row[k]])
            out.append(Violation(
                "preemptor", jid, at,
                f"job {jid}: attempt {int(a.attempt[k])} preempted at {at} (it ended at "
                f"{int(a.end[k])}, GraceTime {int(grace[c])} s) when no job that may preempt "
                "it was pending for a partition holding its nodes"
                + (" (its PreemptMode is OFF)" if mode[c] == OFF else "")))


def _allocated(a, k0: int, k: int) -> int:
    """When attempt ``k`` (its first record ``k0``) got its nodes: its start, or for one
    stopped CONFIGURING (power saving: it never ran, start = end, configure > 0; its
    GraceTime may have begun while its nodes booted) its allocation, start - configure."""
    booting = a.configure is not None and a.start[k] == a.end[k] and a.configure[k] > 0
    return int(a.start[k0]) - (int(a.configure[k]) if booting else 0)


def first_records(a) -> np.ndarray:
    """Per record of ``a`` (sorted by job row, attempt, start), the index of its
    attempt's first record: an elastic attempt's shapes (RESIZING records) share one
    preemption, judged from the attempt's start and the shape it ran at the time."""
    n = len(a.row)
    if not n:
        return np.zeros(0, dtype=np.int64)
    first = np.ones(n, dtype=bool)
    first[1:] = (a.row[1:] != a.row[:-1]) | (a.attempt[1:] != a.attempt[:-1])
    return np.flatnonzero(first)[np.cumsum(first) - 1]


def _classes(preemption, a) -> np.ndarray:
    """Each attempt's class: the partition it ran in, or its job's QOS."""
    if preemption.job_class is None:
        return np.asarray(a.partition, dtype=np.int64)
    return np.asarray(preemption.job_class, dtype=np.int64)[a.row]


def _pending(jobs, a, preemption, choices, delay: int) -> dict:
    """(class, partition) -> (begins sorted, running maximum of ends): each job's
    pending intervals, [begin, next start], under every partition it may run in. A
    job's last attempt, when killed, may be followed by one never started: pending from
    its end plus the delay on (more pending time than there was only weakens the
    check, never fails a correct schedule); a job with no attempt is pending from its
    submit time on."""
    n = len(a.row)
    first = np.ones(n, dtype=bool)
    first[1:] = a.row[1:] != a.row[:-1]
    last = np.ones(n, dtype=bool)
    last[:-1] = a.row[1:] != a.row[:-1]
    begin = np.where(first, jobs.submit_time[a.row], np.roll(a.end, 1) + delay)
    end = np.where(a.start >= 0, a.start, _NEVER)
    tail = np.flatnonzero(last & a.killed)
    absent = np.setdiff1d(np.arange(len(jobs)), a.row)
    row = np.concatenate([a.row, a.row[tail], absent]).astype(np.int64)
    begin = np.concatenate([begin, a.end[tail] + delay, jobs.submit_time[absent]])
    end = np.concatenate([end, np.full(len(tail) + len(absent), _NEVER)])
    if choices is None:
        off = np.arange(len(jobs) + 1, dtype=np.int64)
        part = np.asarray(jobs.partition, dtype=np.int64)
    else:
        off = np.asarray(choices.offsets, dtype=np.int64)
        part = np.asarray(choices.partition, dtype=np.int64)
    counts = np.diff(off)[row]
    at = np.repeat(off[row] - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts) + \
        np.arange(int(counts.sum()))
    p = part[at]
    row, begin, end = np.repeat(row, counts), np.repeat(begin, counts), np.repeat(end, counts)
    cls = p if preemption.job_class is None else \
        np.asarray(preemption.job_class, dtype=np.int64)[row]
    keys = {}
    for c, q in set(zip(cls.tolist(), p.tolist())):
        m = (cls == c) & (p == q)
        order = np.argsort(begin[m], kind="stable")
        keys[(c, q)] = (begin[m][order], np.maximum.accumulate(end[m][order]))
    return keys


def _covers(begins, ends, t: int) -> bool:
    """Whether an interval [begins[i], ends[i]] holds ``t`` (``ends``: running maxima)."""
    i = int(np.searchsorted(begins, t, side="right")) - 1
    return i >= 0 and ends[i] >= t
