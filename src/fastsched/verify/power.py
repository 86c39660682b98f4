"""Power saving checks, re-derived from the schedule alone (:mod:`fastsched.model.power`
says the rules; no scheduling code is imported).

A job's allocation is ``start - configure_time``: from then on it holds its nodes, its
start being when they were all ready. Walking each node's jobs by allocation, a node
with no job running at an allocation ``a`` is powered down when it is CLOUD and never
ran a job, or was idle longer than SuspendTime since its last job ended ``e`` (and is not
excluded); it then boots no sooner than ``max(a, e + SuspendTime + SuspendTimeout)``
(``a`` for a fresh CLOUD node) and is ready its boot (``boot``, or its own from
``boots``) seconds later. Checks:

``not_booted``
    a job started before one of its nodes could be ready (powered down at its
    allocation, or still booting for a job allocated before it).
``needless_configure``
    a job waited CONFIGURING (``configure_time > 0``) although no node of it was
    powered down or booting at its allocation.
``resume_rate``
    the power-ups (one per powered-down node at an allocation) cannot have had
    ResumeRate's tokens (one every 60000 / ResumeRate ms, in allocation order; those
    of one instant in the order of their deadlines) and booted by their jobs' starts.
``suspend_rate``
    with SuspendRate (a power-down token every P = 60000 / SuspendRate ms, handed in
    order of eligibility, idle + SuspendTime, then node): a node idle past SuspendTime
    at an allocation whose job did not wait (with a boot > 0: so it was up) had no
    token. The tokens then were handed back to back from its eligibility ``e`` to past
    ``a - 1`` s, at least floor(((a - 1 - e) * 1000 + 1) / P) of them to other nodes
    eligible by ``e`` and still idle after it; fewer such nodes is a violation. Judged
    without node events (there an idle period's start is not known from the records).

With SuspendRate a node idle past SuspendTime may still be up (no token yet): only
CLOUD nodes never used are then known to be powered down, so ``not_booted`` and
``resume_rate`` judge their boots alone, and ``needless_configure`` any job with
such a node.

With node events (the records of each attempt, :func:`fastsched.verify.lifecycle`):
a node is idle from its last job's end but not before its boot is done, and from a
time it came back (``up`` / ``resume``) with no job while not powered down; an attempt
killed while CONFIGURING (``never_ran``) had no start to boot by.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import replace

import numpy as np

from ..model.jobs import JOB_FIELDS, JobTable
from ..model.power import PowerSaving


def check_power(jobs, schedule, configure, power: PowerSaving, cloud, excluded,
                violation, out: list, backs=None, never_ran=None, boots=None) -> None:
    """Append the violations of ``schedule`` (rows in the order of ``jobs``; ``configure``:
    seconds per job) under ``power`` to ``out``; ``cloud`` / ``excluded``: bool per node.
    ``backs``: node -> the times it came back (node events); ``never_ran``: bool per
    row, killed while CONFIGURING; ``boots``: seconds per node (None: ``power.boot``
    for every node)."""
    boots = np.full(len(cloud), power.boot, dtype=np.int64) if boots is None \
        else np.asarray(boots, dtype=np.int64)
    start = np.asarray(schedule.start_time, dtype=np.int64)
    conf = np.asarray(configure, dtype=np.int64)
    alloc = start - conf
    end = np.asarray(schedule.end_time, dtype=np.int64)
    off = np.asarray(schedule.alloc_offsets, dtype=np.int64)
    ran = start >= 0
    job = np.repeat(np.arange(len(start)), np.diff(off))
    node = np.asarray(schedule.alloc_nodes, dtype=np.int64)[:off[-1]][ran[job]]
    job = job[ran[job]]
    order = np.lexsort((job, alloc[job], node))
    st = power.suspend_time
    ready_lb = np.full(len(start), np.iinfo(np.int64).min)     # per job: its nodes' readiness
    booting = np.zeros(len(start), dtype=bool)      # per job: a node of it was not yet up
    ups = []                                                    # (release, deadline, job)
    # per node: jobs end by busy_until; its last boot ended at ready or later, and by
    # booted (the start of the job it booted for: tokens may delay a boot)
    last, busy_until, ready, booted, fresh = -1, 0, 0, 0, True
    events = never_ran is not None
    never_ran = np.zeros(len(start), dtype=bool) if never_ran is None else never_ran
    backs = backs or {}
    period = power.resume_period_ms()
    limited = power.suspend_period_ms() > 0 and st is not None
    spans, ups_kept = [], []       # idle periods (from, to, node); nodes up past SuspendTime
    unsure = np.zeros(len(start), dtype=bool)   # per job: its nodes' state is not known
    for k in order.tolist():
        x, j = int(node[k]), int(job[k])
        a = int(alloc[j])
        if x != last:
            if last >= 0 and not (fresh or excluded[last]):
                spans.append((busy_until, _FOREVER, last))
            last, busy_until, ready, booted, fresh = x, 0, 0, 0, bool(cloud[x])
            returns, lost = sorted(backs.get(x, ())), False
        if busy_until <= a and lost:
            # its last boot was for an attempt killed while CONFIGURING: with tokens its
            # end is not known, nor is whether the node was up at ``a``
            unsure[j], lost = True, False
            ready = max(ready, int(start[j])) if conf[j] > 0 else ready
        elif busy_until <= a:
            idle = busy_until
            # back with no job, not powered down: idle from then (each back seen once:
            # the node is busy until a at least from here on)
            for b in returns[bisect_right(returns, idle):bisect_right(returns, a)]:
                if not (fresh or st is not None and not excluded[x] and b > idle + st):
                    idle = b
            if not (fresh or excluded[x]):
                spans.append((idle, a, x))
            if limited and not fresh and not excluded[x] and a > idle + st:
                # a token or none: up (the job did not wait for a boot) or maybe down
                if conf[j] == 0 and boots[x] > 0:
                    ups_kept.append((idle, a, x, j))
                elif conf[j] > 0:
                    booting[j] = True
                    booted = max(booted, int(start[j]))
            elif fresh or (st is not None and not excluded[x] and a > idle + st):
                boot_at = a if fresh else max(a, idle + st + power.suspend_timeout)
                ready = boot_at + int(boots[x])
                booted = ready if never_ran[j] else int(start[j])
                ups.append((a, np.iinfo(np.int64).max if never_ran[j]
                            else int(start[j]) - int(boots[x]), j))
        # with tokens, the boot an attempt killed CONFIGURING waited for may end later
        # than its lower bound: the node's next state is not known
        lost = lost or bool(never_ran[j]) and period > 0
        fresh = False
        ready_lb[j] = max(ready_lb[j], ready)
        booting[j] |= booted > a
        # a node is idle from its last job's end, not before its boot is done
        busy_until = max(busy_until, int(end[j]), ready)
    if last >= 0 and not (fresh or excluded[last]):
        spans.append((busy_until, _FOREVER, last))
    ran = ran & ~unsure
    for j in np.flatnonzero(ran & (start < ready_lb) & ~never_ran).tolist():
        out.append(violation("not_booted", int(schedule.job_id[j]), int(start[j]),
                             f"job {int(schedule.job_id[j])} started at {int(start[j])}, before "
                             f"its nodes could boot (ready at {int(ready_lb[j])} at the "
                             "earliest)"))
    for j in np.flatnonzero(ran & (conf > 0) & ~booting & ~never_ran).tolist():
        out.append(violation("needless_configure", int(schedule.job_id[j]), int(start[j]),
                             f"job {int(schedule.job_id[j])} was CONFIGURING {int(conf[j])} s "
                             "although its nodes were up"))
    _resume_rate(ups, power.resume_period_ms(), schedule.job_id, violation, out)
    if limited and not events:
        seen = set(node.tolist())
        spans += [(0, _FOREVER, x) for x in np.flatnonzero(~cloud & ~excluded).tolist()
                  if x not in seen]
        _suspend_rate(spans, ups_kept, st, power.suspend_period_ms(), schedule.job_id,
                      violation, out)


#: the end of an idle period no job ends
_FOREVER = np.iinfo(np.int64).max


def _suspend_rate(spans, kept, st: int, period: int, job_id, violation, out) -> None:
    """The first node kept up past SuspendTime (``kept``: (idle, allocation, node, job))
    with fewer other nodes eligible by then and idle after it (``spans``: every idle
    period (from, to, node) of a node that may power down) than the tokens handed out
    meanwhile. Offline: queries by idle time, periods added by their start, counted by
    their end in a Fenwick tree (O((periods + queries) log periods))."""
    if not kept:
        return
    spans.sort()
    ends = sorted({to for _, to, _ in spans})
    tree = [0] * (len(ends) + 1)
    added = 0
    s = 0
    for idle, a, x, j in sorted(kept):
        e = idle + st
        while s < len(spans) and spans[s][0] <= idle:
            i = bisect_right(ends, spans[s][1])     # its end's rank, 1-based
            while i <= len(ends):
                tree[i] += 1
                i += i & -i
            added, s = added + 1, s + 1
        over, i = 0, bisect_right(ends, e)           # added periods ending by e
        while i > 0:
            over += tree[i]
            i -= i & -i
        others = added - over - 1                    # still idle after e, x's own apart
        need = ((a - 1 - e) * 1000 + 1) // period if a - 1 >= e else 0
        if others < need:
            out.append(violation("suspend_rate", int(job_id[j]), a,
                                 f"job {int(job_id[j])}: its node {x} was up at {a}, idle "
                                 f"since {idle}, though SuspendRate ({60000 // period} a "
                                 f"minute) left it a power-down token: {need} tokens "
                                 f"after {e} but {others} other nodes waited for them"))
            return


def _resume_rate(ups, period: int, job_id, violation, out) -> None:
    """The first power-up whose token, handed out in (release, deadline) order one every
    ``period`` ms, comes after its deadline (none when ``period`` is 0)."""
    if not period:
        return
    ups.sort()
    next_ms = None
    for release, deadline, j in ups:
        t = release * 1000 if next_ms is None else max(release * 1000, next_ms)
        next_ms = t + period
        if (t + 999) // 1000 > deadline:
            out.append(violation("resume_rate", int(job_id[j]), release,
                                 f"job {int(job_id[j])}: its nodes' power-ups exceed ResumeRate "
                                 f"({60000 // period} a minute): a token at {(t + 999) // 1000} "
                                 f"s at the earliest, too late to boot by its start"))
            return


def allocation_view(jobs, schedule, configure):
    """(jobs, schedule) seen from each job's allocation: start ``start - configure``,
    runtime and limit lengthened by ``configure`` (what the nodes engine holds: a job
    waiting for boots holds its nodes until its reset start plus its limit)."""
    conf = np.asarray(configure, dtype=np.int64)
    started = np.asarray(schedule.start_time) >= 0
    conf = np.where(started, conf, 0)
    columns = {f: getattr(jobs, f) for f in JOB_FIELDS}
    columns["runtime"] = jobs.runtime + conf
    columns["time_limit"] = jobs.time_limit + conf
    start = np.where(started, schedule.start_time - conf, schedule.start_time)
    return JobTable(**columns), replace(schedule, start_time=start)
