"""Checks of elastic jobs' records: the shapes of an attempt that shrank after node
failures (``sacct`` lists each as a record, RESIZING but the last), independently of
the simulator (:mod:`fastsched.model.elastic` states the rules).

What ``bad_resize`` GUARANTEES when it passes: every attempt started on between its
job's ``nodes_min`` (where set; else all) and ``num_nodes`` nodes; the shapes of an
attempt follow one another without gap or overlap (each starts when the previous one ended, so no
second of the job is counted twice), every shape but the last ended RESIZING and the
last did not, each holds a strict subset of the previous one's nodes (a job only
shrinks), every node it lost went down at that instant, the job is ``--no-kill`` and
kept at least its minimum nodes. With regrowth (``Lifecycle.regrow``) a shape may also
gain nodes, each back (``up`` or ``resume``) at that instant, up to the job's
``num_nodes`` (the same nodes again only when one of them went down and came back at
that instant); without it, a shape that gains one is a violation. (That a regrown shape
overcommits no node is the resource check of every record; that no second is counted
twice is the shapes following one another.) ``resumed_work`` of a shrunk attempt or one started on
fewer nodes than its job asks for: it ended when its node-seconds (its runtime x
``num_nodes``) were done at the widths it had (or at its time limit), or earlier
only when killed.
"""
from __future__ import annotations

import numpy as np

from ..model.elastic import finish, saved_work
from .report import Violation


def collapse(a):
    """Group the records of ``a`` (sorted by job, attempt, start) into attempts: per
    attempt, the index of its first and last record."""
    n = len(a.row)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    first = np.ones(n, dtype=bool)
    first[1:] = (a.row[1:] != a.row[:-1]) | (a.attempt[1:] != a.attempt[:-1])
    head = np.flatnonzero(first)
    tail = np.append(head[1:], n) - 1
    return head, tail


def shapes_of(a, head, tail, num_nodes) -> dict:
    """Attempt index -> (shape starts, widths) of the attempts with several records or
    started on other than their job's ``num_nodes`` (a node range)."""
    out = {}
    counts = np.diff(a.alloc_offsets)
    narrow = counts[head] != np.asarray(num_nodes)[a.row[head]]
    for i in np.flatnonzero((tail > head) | narrow).tolist():
        ks = range(int(head[i]), int(tail[i]) + 1)
        out[i] = ([int(a.start[k]) for k in ks],
                  [int(a.alloc_offsets[k + 1] - a.alloc_offsets[k]) for k in ks])
    return out


def check_shapes(jobs, a, head, tail, lifecycle, failures, out, backs=None) -> None:
    """The ``bad_resize`` rules over every attempt (``failures``: node -> the times it
    went down; ``backs``: node -> the times it came back)."""
    regrow = bool(getattr(lifecycle, "regrow", False))
    backs = {} if backs is None else backs
    # instants a node came back and went down again: a job may take it and lose it then,
    # so its shape splits there with the same nodes on both sides
    bounces = {t for x, ts in backs.items() for t in ts if t in failures.get(x, ())}
    resized = a.resized
    low = lifecycle.min_nodes(jobs.num_nodes)
    first = lifecycle.start_nodes(jobs.num_nodes)
    counts = np.diff(a.alloc_offsets)
    no_kill = np.zeros(len(jobs), dtype=bool) if lifecycle.no_kill is None else \
        np.asarray(lifecycle.no_kill, dtype=bool)
    for h, t in zip(head.tolist(), tail.tolist()):
        j = int(a.row[h])
        jid = int(jobs.job_id[j])
        width = int(counts[h])
        if a.start[h] >= 0 and not first[j] <= width <= jobs.num_nodes[j]:
            out.append(Violation("bad_resize", jid, int(a.start[h]),
                                 f"job {jid}: attempt {a.attempt[h]} started on {width} "
                                 f"node(s), outside its range {first[j]}-"
                                 f"{jobs.num_nodes[j]}"))
        if resized[t]:
            out.append(Violation("bad_resize", jid, int(a.end[t]),
                                 f"job {jid}: attempt {a.attempt[t]} ends RESIZING with no "
                                 "later shape"))
        for k in range(h, t):
            _step(jid, j, a, k, no_kill, low, failures, out, regrow, backs, bounces,
                  int(jobs.num_nodes[j]))


def _step(jid, j, a, k, no_kill, low, failures, out, regrow, backs, bounces, most):
    """Shape k of an attempt is followed by shape k + 1."""
    def bad(why):
        out.append(Violation("bad_resize", jid, int(a.end[k]),
                             f"job {jid}: attempt {a.attempt[k]}: {why}"))
    if not a.resized[k]:
        bad(f"the record ending {a.end[k]} is followed by another of the same attempt, "
            "yet did not end RESIZING")
    if a.start[k + 1] != a.end[k]:
        bad(f"a shape ends {a.end[k]} and the next starts {a.start[k + 1]}")
    now = set(a.alloc_nodes[a.alloc_offsets[k]:a.alloc_offsets[k + 1]].tolist())
    then = set(a.alloc_nodes[a.alloc_offsets[k + 1]:a.alloc_offsets[k + 2]].tolist())
    t = int(a.end[k])
    if (then == now and not (regrow and t in bounces)) or (not regrow and not then < now):
        bad(f"at {t} its nodes {sorted(then)} are not fewer of {sorted(now)}"
            + ("" if regrow else " (no regrowth)"))
    if not no_kill[j]:
        bad(f"resized at {t} without --no-kill")
    if len(then) < low[j] and then < now:
        bad(f"shrank at {t} to {len(then)} node(s), below its minimum {low[j]}")
    if len(then) > most:
        bad(f"grew at {t} to {len(then)} node(s), above the {most} it asks for")
    for x in sorted(now - then):
        if t not in failures.get(x, ()):
            bad(f"left node {x} at {t}, when it did not go down")
    for x in sorted(then - now) if regrow else ():
        if t not in backs.get(x, ()):
            bad(f"took node {x} at {t}, when it did not come back")


def elastic_saved(shapes, start, pull, end, interval, width) -> int:
    """Seconds at full ``width`` a shrunk attempt killed at ``end`` kept."""
    starts, widths = shapes
    return saved_work(starts, widths, start + pull, end, interval) // width


def check_work(jid, attempt, shapes, start, end, pull, left, limit, width, killed, out):
    """A shrunk attempt ran its ``left`` seconds at full width, as node-seconds over its
    shapes (capped at its limit), or less if killed."""
    starts, widths = shapes
    need = min(finish(starts, widths, start + pull, left * width), start + limit)
    if killed and end >= need:
        out.append(Violation("killed_without_failure", jid, end,
                             f"job {jid}: attempt {attempt} killed at {end}, when its "
                             f"shapes would have ended at {need}"))
    elif not killed and end != need:
        out.append(Violation("resumed_work", jid, start,
                             f"job {jid}: attempt {attempt} ended {end}, but its {left} s at "
                             f"{width} nodes over its shapes {list(zip(starts, widths))} end "
                             f"at {need}"))
