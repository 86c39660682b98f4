"""Planning with preemptable capacity: the earliest start of a job that may preempt,
with the resources of its preemption candidates free from now.

Slurm's backfill asks cons_tres' will-run test (``_future_run_test`` in
``src/plugins/select/cons_tres/job_test.c``) with the job's preemptee candidates
(``slurm_find_preemptable_jobs``): every candidate whose PreemptMode is not OFF is
removed at once; if the job then fits, its start is now (backfill starts it by
preempting), else the other running jobs are removed in end-time order with the
candidates already gone. The reservation backfill then records (what later jobs must
not delay) is at that time on those nodes.

Here (the node engine's pass, :func:`fastsched.engine.passes._pass`, for a job
planned at any time that does not start now on the free resources): for each of its
partitions, the holds of the candidates on the partition's nodes are given back from
now, the job is planned by scan, and the holds are taken again, so the profile is
left as it was (the run index never reads it in between). The candidates are
:meth:`fastsched.engine.preempt.Preemptor.candidates`'s: running on those nodes, of a
class the job may preempt, mode not OFF, not exempt (run at least PreemptExemptTime:
Slurm's ``slurm_find_preemptable_jobs`` leaves exempt jobs out), not already stopping
(a victim in its GraceTime holds its resources until it stops). Its reservation is
then held on the profile over the candidates' holds, so a node's free capacity may be
negative there: no other job fits on it. A plan at now is a reservation at now: the
preemption after the pass (:mod:`fastsched.engine.preempt`) stops the victims.

A victim in its GraceTime is held until its grace end, not its time limit
(:func:`move_hold_end`): Slurm sets a preempted job's ``end_time`` to the earlier of
the two (``_job_check_grace_internal`` in ``src/interfaces/preempt.c``), and its
backfill plans with ``end_time``, so the preemptor's reservation lies at the grace
end, on the victims' nodes, and no later job may take them if that delays it.
"""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
import numpy as np
from numba import njit

from .earliest import _capable, _plan_job
from .profile import _give_back, _hold, _merge_at, _room, _split
from .running import _insert_running, _take_running
from .state import Ask, Preempting

__all__ = ["no_preempting", "move_hold_end"]


def no_preempting() -> Preempting:
    """The kernels' preemption planning off (``can`` empty)."""
    return Preempting(np.zeros(0, dtype=np.bool_), np.zeros((0, 0), dtype=np.bool_),
                      np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                      np.zeros(0, dtype=np.bool_), np.zeros(0, dtype=np.int64))


@njit(cache=True)
def _is_candidate(v, cls, now, pre, out):
    """Is running job ``v`` a candidate of a preemptor of class ``cls`` at ``now``? Its
    PreemptExemptTime counts from Slurm's start time: a job CONFIGURING (its start, reset
    to when its nodes are ready, after ``now``) has its allocation's (acct_policy.c
    ``acct_policy_get_preemptable_time`` reads ``start_time``, which job_mgr.c
    ``job_config_fini`` resets)."""
    if v < 0 or pre.stopping[v] or out.start[v] < 0:
        return False
    cv = out.part_used[v] if pre.qos.shape[0] == 0 else pre.qos[v]
    start = out.start[v]
    if start > now and pre.conf.shape[0] > 0:
        start -= pre.conf[v]
    return pre.may[cls, cv] and start + pre.exempt[cv] <= now


@njit(cache=True)
def _free_candidates(sign, cls, now, plist, pre, out, p, run):
    """Give back (``sign`` 1) or take again (-1) the candidates' holds on ``plist``
    from ``now``. Returns the profile (a node without room for two more breakpoints
    gets a bigger segment first)."""
    for i in range(plist.shape[0]):
        x = plist[i]
        for k in range(run.rlen[x]):
            if not _is_candidate(run.RJ[x, k], cls, now, pre, out):
                continue
            if p.wlen[x] + 4 > p.wcap[x]:
                p = _room(x, p, 4)
            p.WT[p.wo[x]] = now         # the first segment starts now (all others > now)
            if sign > 0:
                _give_back(x, now, run.RT[x, k], run.RG[x, k], run.RC[x, k], run.RM[x, k], p)
            else:
                _hold(x, now, run.RT[x, k], run.RG[x, k], run.RC[x, k], run.RM[x, k], p)
    return p


@njit(cache=True)
def _any_candidate(cls, now, plist, pre, out, run):
    """Does a candidate of a preemptor of class ``cls`` run on a node of ``plist``?"""
    for i in range(plist.shape[0]):
        x = plist[i]
        for k in range(run.rlen[x]):
            if _is_candidate(run.RJ[x, k], cls, now, pre, out):
                return True
    return False


@njit(cache=True)
def _none_to_preempt(j, now, jobs, nodes, topo, out, pre, run):
    """True when none of job ``j``'s partitions has a candidate on its nodes (without
    topology, whose plans here differ): its plan is then the one without preemption."""
    if topo.levels.shape[0] > 0:
        return False
    for e in range(jobs.pc_off[j], jobs.pc_off[j + 1]):
        part = jobs.pc_part[e]
        cls = part if pre.qos.shape[0] == 0 else pre.qos[j]
        if _any_candidate(cls, now, nodes.pflat[nodes.poff[part]:nodes.poff[part + 1]],
                          pre, out, run):
            return False
    return True


@njit(cache=True)
def _plan_one_on_candidates(j, t_free, now, jobs, nodes, p, free, run, topo, out, pre, trial,
                           chosen):
    """A single-node job in one partition, planned at ``t_free`` > now on the free
    resources: its start with its candidates given back, read on their nodes only. Its
    start is the least (start, free at start, node order) over the nodes, and only the
    candidates' nodes change: one of them starting before ``t_free`` wins; none
    starting by then leaves the plan at ``t_free`` (its node has no candidate). -1 on
    a tie at ``t_free`` (the free resources at that start decide: plan by scan).
    Returns (start, profile)."""
    part = jobs.pc_part[jobs.pc_off[j]]
    plist = nodes.pflat[nodes.poff[part]:nodes.poff[part + 1]]
    cls = part if pre.qos.shape[0] == 0 else pre.qos[j]
    ask = Ask(jobs.rg[j], jobs.rc[j], jobs.rm[j], jobs.limit[j], 1)
    sub = np.empty(plist.shape[0], dtype=np.int64)
    ns = 0
    for i in range(plist.shape[0]):
        x = plist[i]
        if not _capable(x, ask, nodes):
            continue
        for k in range(run.rlen[x]):
            if _is_candidate(run.RJ[x, k], cls, now, pre, out):
                sub[ns] = x
                ns += 1
                break
    if ns == 0:
        return t_free, p
    sub = sub[:ns]
    p = _free_candidates(1, cls, now, sub, pre, out, p, run)
    te = _plan_job(now, ask, False, True, part, sub, nodes, p, free, trial, topo, 1, 0, False)
    p = _free_candidates(-1, cls, now, sub, pre, out, p, run)
    if te >= 0 and te < t_free:
        chosen[0] = trial[0]
        out.part_used[j] = part
        return te, p
    if te > t_free:
        return t_free, p
    return -1, p


@njit(cache=True)
def _plan_preempting(j, t_free, now, jobs, types, nodes, p, free, run, topo, out, pre, trial,
                     chosen):
    """Job ``j``'s earliest start over its partitions (ties: the first listed) with its
    candidates' resources free from now, its nodes in ``chosen`` and its partition in
    ``out.part_used``; -1: none. ``t_free``: its plan on the free resources (the pass's,
    in ``chosen`` and ``out.part_used``), kept when it has nothing to preempt (the scan
    would find the same). Returns (start, profile)."""
    if _none_to_preempt(j, now, jobs, nodes, topo, out, pre, run):
        return t_free, p
    if jobs.nn[j] == 1 and jobs.pc_off[j + 1] - jobs.pc_off[j] == 1 and t_free > now:
        t, p = _plan_one_on_candidates(j, t_free, now, jobs, nodes, p, free, run, topo, out,
                                       pre, trial, chosen)
        if t >= 0:
            return t, p
    t = -1
    for e in range(jobs.pc_off[j], jobs.pc_off[j + 1]):
        part = jobs.pc_part[e]
        if types.cap[jobs.pc_type[e]] < jobs.nn[j]:    # too few nodes there
            continue
        plist = nodes.pflat[nodes.poff[part]:nodes.poff[part + 1]]
        cls = part if pre.qos.shape[0] == 0 else pre.qos[j]
        p = _free_candidates(1, cls, now, plist, pre, out, p, run)
        ask = Ask(jobs.rg[j], jobs.rc[j], jobs.rm[j], jobs.limit[j], jobs.nn[j])
        te = _plan_job(now, ask, False, True, part, plist, nodes, p, free, trial, topo,
                       1, 0, False)
        p = _free_candidates(-1, cls, now, plist, pre, out, p, run)
        if te >= 0 and (t < 0 or te < t):
            t = te
            out.part_used[j] = part
            chosen[:jobs.nn[j]] = trial[:jobs.nn[j]]
            if t == now:
                break
    return t, p


@njit(cache=True)
def move_hold_end(v, old, new, on, g, c, m, p, run):
    """Running job ``v``'s hold of (``g``, ``c``, ``m``) on each node of ``on`` ends at
    ``new`` instead of ``old`` (both on the grid, after the profile's first breakpoint):
    the profile gives back [new, old) (earlier: a victim's GraceTime cuts its hold) or
    holds [old, new) (later: the cut undone, ``old``'s breakpoint dropped when nothing
    else ends there), and its running entries say ``new``.
    Returns the profile (a node without room for two more breakpoints gets a bigger
    segment first)."""
    for i in range(on.shape[0]):
        x = on[i]
        if p.wlen[x] + 4 > p.wcap[x]:
            p = _room(x, p, 4)
        if new < old:
            _give_back(x, new, old, g, c, m, p)
        else:
            _hold(x, old, new, g, c, m, p)
            # the hold runs on through ``old`` again: no breakpoint may stay there, for
            # no held end marks it and a pass reads a node's first segment as now's
            _merge_at(x, _split(x, old, p), p)
        _take_running(x, v, run)
        _insert_running(x, new, g, c, m, v, run)
    return p
