"""The advance reservation checks: ``reserved_node`` (no job runs on a reserved node
while one of its windows is open, unless it runs in that reservation) and
``outside_reservation`` (a job running in a reservation, ``--reservation``, ran only on
its nodes, from the opening to the closing of one of its windows). Computed from the
reservations and the schedule alone.

A job of a FLEX reservation may run anywhere else too (Slurm's job_test_resv gives it
every node, less those of the other reservations open during its run): it is checked
as any other job against the other reservations only, and never ``outside_reservation``.

A job naming several reservations (``--reservation=a,b``) is checked against the first
of them whose nodes and window hold its run; else against a FLEX one it names, if any
(the first whose nodes it used while a window was open, or the first); else against
the first it names.

A job drawn to a MAGNETIC reservation is checked as one running in it when it ran on
the reservation's nodes while a window was open, else as any other job. A job running
in a reservation (not FLEX) may never start: :func:`pending_explained` accepts that
when every window after its submission is too short for its time limit or had another
of its reservation's jobs running."""
from __future__ import annotations

import numpy as np

from ..model.reservations import Reservations
from ..model.resvjobs import JobReservations
from .report import Violation


def check_reservations(schedule, start, end, reservations, out) -> list[str]:
    """Append the violations of ``schedule`` (``start``/``end`` per job) to ``out``;
    returns the names of the checks made."""
    member = reservations.member if isinstance(reservations, JobReservations) else None
    if member is not None and len(member):
        reservations.check_jobs(len(start))
        member = _ran_in(reservations, start, end, schedule)
    else:
        member = np.full(len(start), -1, dtype=np.int32)
    flex = np.array(["FLEX" in r.flags for r in reservations.items] + [False])
    others = np.where(member >= 0, -1, start)       # the member jobs are checked below
    horizon = int(end.max(initial=0)) + 1
    hits = reservations.overlapping(others, end, schedule.alloc_offsets,
                                    schedule.alloc_nodes, horizon)
    for k in np.unique(member[(member >= 0) & flex[member] & (start >= 0)]).tolist():
        rest = Reservations(reservations.items[:k] + reservations.items[k + 1:],
                            reservations.num_nodes)
        hits += rest.overlapping(np.where(member == k, start, -1), end,
                                 schedule.alloc_offsets, schedule.alloc_nodes, horizon)
    for i, name, node in sorted(hits):
        out.append(Violation("reserved_node", int(schedule.job_id[i]), int(start[i]),
                             f"job {int(schedule.job_id[i])} ran on node {node} during "
                             f"reservation {name!r}"))
    checks = ["reserved_node"]
    if isinstance(reservations, JobReservations) and len(reservations.used):
        checks.append("outside_reservation")
    for k in np.unique(member[(member >= 0) & ~flex[member] & (start >= 0)]).tolist():
        _check_members(reservations.items[k], np.flatnonzero((member == k) & (start >= 0)),
                       schedule, start, end, out)
    return checks


def check_attempt_reservations(schedule, row, reservations, out) -> list[str]:
    """:func:`check_reservations` of a run's attempts (a run with node failures):
    ``schedule`` has one entry per attempt, ``row`` its job's row; each attempt is held
    to the reservation its job runs in (or drawn to), as a job of its own."""
    if isinstance(reservations, JobReservations) and len(reservations.member):
        reservations = reservations.take(row)
    return check_reservations(schedule, np.asarray(schedule.start_time),
                              np.asarray(schedule.end_time), reservations, out)


def _ran_in(reservations, start, end, schedule) -> np.ndarray:
    """Per job, the reservation it ran in (-1: none): the one it names (of a
    ``--reservation`` list, the first whose nodes and window hold its run; none: a FLEX
    one it names (:func:`_ran_flex`), else the first it names, its run then outside
    it), or for a job drawn to MAGNETIC ones, the
    one whose nodes it ran on while a window was open (it must then have run inside it;
    otherwise it ran as any other job)."""
    member = reservations.member.copy()
    several = reservations.listed.sum(axis=1) > 1
    found = np.zeros(len(member), dtype=bool)
    for k in np.flatnonzero(reservations.listed[several].any(axis=0)).tolist():
        jobs = np.flatnonzero(several & reservations.listed[:, k] & (start >= 0) & ~found)
        stray, late = _outside(reservations.items[k], jobs, schedule, start, end)
        inside = jobs[(stray < 0) & ~late]
        member[inside], found[inside] = k, True
    _ran_flex(reservations, several & ~found & (start >= 0), start, end, schedule, member)
    drawn = np.flatnonzero(reservations.attracted.any(axis=1) & (start >= 0))
    if not len(drawn):
        return member
    first = np.asarray(schedule.alloc_nodes)[np.asarray(schedule.alloc_offsets)[drawn]]
    for k in np.flatnonzero(reservations.attracted.any(axis=0)).tolist():
        r = reservations.items[k]
        inside = reservations.attracted[drawn, k] & np.isin(first, r.nodes) & \
            _meets_window(r, start[drawn], end[drawn])
        member[drawn[inside]] = k
    return member


def _ran_flex(reservations, rows, start, end, schedule, member) -> None:
    """Set ``member`` for the jobs ``rows`` (bool per job: a list's, held by none of its
    reservations as a plain member) that name a FLEX one: the first of those whose nodes
    the run used while a window was open (a FLEX member reaches them only then), else
    the first; checked then, as any FLEX member, against the other reservations."""
    flex = [k for k, r in enumerate(reservations.items) if "FLEX" in r.flags]
    if not flex:
        return
    rows = rows & reservations.listed[:, flex].any(axis=1)
    if not rows.any():
        return
    horizon = int(end.max(initial=0)) + 1
    chosen = np.full(len(member), -1, dtype=np.int64)
    for k in flex:
        mine = np.where(rows & reservations.listed[:, k], start, -1)
        used = [i for i, _, _ in Reservations((reservations.items[k],),
                                              reservations.num_nodes).overlapping(
            mine, end, schedule.alloc_offsets, schedule.alloc_nodes, horizon)]
        first = np.zeros(len(member), dtype=bool)
        first[used] = True
        chosen[first & (chosen < 0)] = k
    fallback = np.argmax(reservations.listed[:, flex], axis=1)
    member[rows] = np.where(chosen >= 0, chosen, np.asarray(flex)[fallback])[rows]


def _meets_window(r, start, end) -> np.ndarray:
    """Per run [start, end), does it overlap a window of ``r``? (The first window that
    closes after ``start`` is the only one that can open first.)"""
    length, step = int(r.end) - int(r.start), r.period
    if not step:
        return (int(r.start) < end) & (start < int(r.end))
    k = np.maximum(-((int(r.start) + length - start - 1) // step), 0)   # closes after start
    return int(r.start) + k * step < end


def _check_members(r, jobs, schedule, start, end, out) -> None:
    """An ``outside_reservation`` violation for each of ``jobs`` (rows running in
    reservation ``r``) that ran on a node not in it, or not from the opening to the
    closing of one of its windows (its last opening at or before the start)."""
    first_stray, late = _outside(r, jobs, schedule, start, end)
    s, e = start[jobs], end[jobs]
    for q in np.flatnonzero((first_stray >= 0) | late).tolist():
        where = f"on node {int(first_stray[q])}, not in it" if first_stray[q] >= 0 else \
            f"over [{int(s[q])}, {int(e[q])}), outside its windows"
        i = int(jobs[q])
        out.append(Violation("outside_reservation", int(schedule.job_id[i]), int(start[i]),
                             f"job {int(schedule.job_id[i])} of reservation {r.name!r} "
                             f"ran {where}"))


def _outside(r, jobs, schedule, start, end):
    """Per row of ``jobs`` (started), the first node of its run not in reservation
    ``r`` (-1: none) and whether its run is not within one of r's windows."""
    offsets = np.asarray(schedule.alloc_offsets)
    width = offsets[jobs + 1] - offsets[jobs]
    entry = np.repeat(offsets[jobs] - np.cumsum(width) + width, width) + np.arange(width.sum())
    node = np.asarray(schedule.alloc_nodes)[entry]
    stray = ~np.isin(node, np.asarray(r.nodes, dtype=np.int64))
    first_stray = np.full(len(jobs), -1, dtype=np.int64)
    owner = np.repeat(np.arange(len(jobs)), width)
    first_stray[owner[stray][::-1]] = node[stray][::-1]     # (the first one wins)
    s, e = start[jobs], end[jobs]
    length, step = int(r.end) - int(r.start), max(r.period, 1)
    opened = np.where(s < r.start, r.start, r.start + (s - r.start) // step * step) \
        if r.period else np.full(len(jobs), int(r.start))
    return first_stray, (s < opened) | (e > opened + length)


def pending_explained(jobs, start, end, reservations) -> np.ndarray:
    """Per job, True when it runs in a reservation (not FLEX: its jobs may run outside
    it), never started, and each window of it closing after the job's submission is
    shorter (from then) than its time limit or had another job of the reservation
    running in it: too busy to tell."""
    out = np.zeros(len(start), dtype=bool)
    if not isinstance(reservations, JobReservations) or not len(reservations.member):
        return out
    member, listed = reservations.member, reservations.listed
    horizon = int(max(end.max(initial=0), jobs.submit_time.max(initial=0))) + 1
    for i in np.flatnonzero((member >= 0) & (start < 0)).tolist():
        out[i] = all(_too_busy(reservations.items[k], i, jobs, start, end,
                               listed[:, k] & (start >= 0), horizon)
                     for k in np.flatnonzero(listed[i]).tolist())
    return out


def _too_busy(r, i, jobs, start, end, others, horizon) -> bool:
    """Whether job row ``i`` (not started) could not run in reservation ``r`` (not
    FLEX): each window closing after its submission too short for its limit or with one
    of ``others`` (bool per job: the jobs that ran there) running in it."""
    if "FLEX" in r.flags:
        return False
    others = np.flatnonzero(others)
    submit, limit = int(jobs.submit_time[i]), int(jobs.time_limit[i])
    opens = [int(r.start)] if not r.period else range(int(r.start), horizon, r.period)
    return all(w + r.end - r.start - max(w, submit) < limit
               or ((start[others] < w + r.end - r.start) & (end[others] > w)).any()
               for w in opens if w + r.end - r.start > submit)
