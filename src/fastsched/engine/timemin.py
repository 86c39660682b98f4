"""``--time-min`` in a pass: a job that cannot start now with its time limit starts
now with a shorter one, at least its time minimum, when that fits.

Slurm's backfill (plugins/sched/backfill/backfill.c) plans a job that has a
``time_min`` below its limit with ``time_min`` (``_set_backfill_timelimits``); when
that start is now it sets the limit back to the job's own and cuts it at the first
later reservation on the job's nodes (``_reset_job_time_limit``: the whole minutes
from now to that reservation's begin, never below ``time_min``). Here, per job in
queue order, after its plan with its own limit (and a node range's narrower start)
found no start now:

1. in the first of its partitions where at least ``nn`` nodes can run it and hold
   its request from now for ``time_min`` seconds, it takes ``nn`` of those nodes by
   best fit (as any start now);
2. its limit becomes ``min(limit, max(time_min, 60 * ((c - now) // 60)))``, ``c``
   the first instant before ``now + limit`` at which one of its nodes lacks its
   request (a later job's reservation, an advance reservation's window; none: its
   own limit);
3. it starts now with that limit (``jobs.limit[j]`` is overwritten: the hold, the end
   ``now + min(runtime, limit)`` and the release read it).

With preemption this comes before any plan over preemptable jobs (the pass's
``_plan_preempting``), as Slurm's backfill tries the free nodes first (cons_tres
``_will_run_test`` before ``_future_run_test`` removes the preemptee candidates): a job
that can start now with a cut limit on free resources does so and preempts nothing; a
preemptable job's end never cuts a limit (its resources are not free now, and backfill's
``_bf_reserve_running`` reserves nothing for it). A job that cannot is planned over
preemptable capacity with its own limit, and the preemption after the pass frees
resources for its request (slurmctld's ``select_nodes``: ``time_min`` plays no part);
it then starts in a later pass like any job, cut at a later reservation there if its
limit crosses one (backfill's ``_reset_job_time_limit`` after ``_start_job``).

The event loop keeps the limits jobs asked for (``_EventLoop.asked``).
"""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
import numpy as np
from numba import njit

from .earliest import _choose_now, _fitting_now
from .freenow import _type_count
from .leafkernel import leaf_kernel
from .state import Ask

#: Slurm keeps time limits in whole minutes: a cut limit is a multiple of this
MINUTE = 60


@njit(cache=True)
def _shorten_now(j, now, jobs, types, nodes, p, free, topo, trial, chosen, out):
    """Job ``j`` (``tmin`` > 0, below its limit) starts now with a limit cut down to
    fit (see the module), its nodes in ``chosen``, its partition in ``out``.
    Returns whether it does."""
    nn, tmin, limit = jobs.nn[j], jobs.tmin[j], jobs.limit[j]
    if tmin <= 0 or tmin >= limit:
        return False
    for e in range(jobs.pc_off[j], jobs.pc_off[j + 1]):
        ty = jobs.pc_type[e]
        if types.cap[ty] < nn or _type_count(ty, free, types, nodes) < nn:
            continue
        part = jobs.pc_part[e]
        plist = nodes.pflat[nodes.poff[part]:nodes.poff[part + 1]]
        cand = np.empty(plist.shape[0], dtype=np.int64)
        ask = Ask(jobs.rg[j], jobs.rc[j], jobs.rm[j], tmin, nn)
        nc = _fitting_now(now, ask, False, plist, nodes, p, cand)
        if nc < nn:
            continue
        _choose_now(now, ask, cand[:nc], nodes, p, trial, topo, 1, 0, False)
        chosen[:nn] = trial[:nn]
        out.part_used[j] = part
        jobs.limit[j] = _longest_limit(now, ask, limit, chosen, p)
        return True
    return False


@leaf_kernel
def _longest_limit(now, ask, limit, chosen, p):
    """The limit a start now on ``chosen[:ask.need]`` gets: ``limit`` unless one of the
    nodes lacks the request before ``now + limit``, else the whole minutes up to the
    first such instant, at least ``ask.d`` (the time minimum, which fits)."""
    first = now + limit
    WT, WG, WC, WM = p.WT, p.WG, p.WC, p.WM
    for i in range(ask.need):
        x = chosen[i]
        o = p.wo[x]
        for k in range(1, p.wlen[x]):
            t = WT[o + k]
            if t >= first:
                break
            if WG[o + k] < ask.g or WC[o + k] < ask.c or WM[o + k] < ask.m:
                first = t
                break
    if first >= now + limit:
        return limit
    return min(limit, max(ask.d, (first - now) // MINUTE * MINUTE))

