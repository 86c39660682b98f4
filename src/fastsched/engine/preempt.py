"""Preemption in the node engine's event loop: after each pass, the first queued job
that could start now by stopping running jobs it may preempt
(:mod:`fastsched.model.preemption`) chooses its victims and stops them.

The rule (Slurm's ``select_nodes`` with preemptee candidates, as cons_tres'
``_run_now`` tests them): a queued job J that is not held by a limit now (its groups'
usage after the instant's passes, not a pass's reason, which a pass that stops early
leaves unset), does not fit
the free resources of a partition P of its own (else something else holds it), and
whose victims from an earlier preemption are all gone (and that has not preempted
at this instant already: its victims' resources may have gone to a job before it),
takes the running jobs on P's
available nodes it may preempt (not exempt: run at least PreemptExemptTime, mode not
OFF, not already stopping) in the victims' order (Slurm's ``preempt_p_get_prio``: tier
then the nodes each holds now, fewer first, a ``--no-kill`` job a failure shrank by
its remaining nodes, as ``excise_node_from_job`` sets ``node_cnt``; then youngest first
by Slurm's start time: with power saving, a CONFIGURING job's is its allocation's),
adding each one's resources to
the free ones until J's request fits on enough nodes: its count, or for a node range
(``--nodes=MIN-MAX``) MIN, as cons_tres' ``_run_now`` stops removing candidates once
``_job_test`` succeeds with ``min_nodes``. J's nodes are then the fitting
nodes that needed no victim, then those freed by the earliest victims, then the
lowest-numbered, at most its count (MAX); the victims are the candidates taken so far
that ran on those nodes. A victim is stopped whole, on the nodes it holds then (a
shrunk or narrow one keeps the node-seconds of its last checkpoint and is requeued
asking for all its nodes: :mod:`fastsched.engine.elastic`). Each stops ``GraceTime``
seconds later (0: now): REQUEUE ones are requeued
(:mod:`fastsched.engine.requeue`: they resume from their last checkpoint after the
requeue delay), the others end PREEMPTED. Until then a victim is held until its grace
end, not its time limit, as Slurm sets its ``end_time``: the passes plan the
preemptor and everyone else with that (:meth:`Preemptor.cut_hold`). J does not
start here: it starts in a pass once the resources are free (Slurm's preemptor waits
for its victims too), after the passes of the instant its victims stop. One job
preempts per pass; the loop passes again at the instant, so several jobs may preempt
at one instant, in queue order.

Plain Python and NumPy: it runs only when preemption is on, once per pass, over
the queued jobs that may preempt and the jobs running in their partitions.
"""
from __future__ import annotations

import heapq

import numpy as np

from ..model.preemption import OFF, REQUEUE
from .limits import _held
from .preemptplan import move_hold_end, no_preempting
from .state import Preempting

__all__ = ["Preemptor"]

#: a node's span in the window keys (node * _SPAN + time): above every time a run
#: reaches (the engine packs window times below 2**40)
_SPAN = 1 << 41


def window_keys(start, end, start_node, end_node):
    """The windows (openings ``start`` on ``start_node``, closings ``end`` on
    ``end_node``) as the sorted keys :func:`clear_of_windows` searches."""
    return tuple(np.sort(np.asarray(x, dtype=np.int64) * _SPAN + np.asarray(t, dtype=np.int64))
                 for x, t in ((start_node, start), (end_node, end)))


def clear_of_windows(keys, nodes, t: int, limit: int) -> np.ndarray:
    """Per node of ``nodes``, whether no advance reservation window (``keys``:
    :func:`window_keys`) held on it meets [t, t + limit): Slurm's job_test_resv takes
    the nodes of every reservation the job's run would overlap out of its node set
    before select_nodes looks for preemptees, so a preemptor neither preempts for nor
    counts a node it may not use. A window meets the run when it opens before t + limit
    and has not closed by t: per node, (openings before t + limit) - (closings by t)."""
    opens, shuts = keys
    if not len(opens):
        return np.ones(len(nodes), dtype=bool)
    base = np.asarray(nodes, dtype=np.int64) * _SPAN
    opened = np.searchsorted(opens, base + t + limit) - np.searchsorted(opens, base)
    shut = np.searchsorted(shuts, base + t, side="right") - np.searchsorted(shuts, base)
    return opened == shut


def victims_needed(free, fits, ask, nodes, cand, holds):
    """How many of the candidate victims ``cand`` (in the victims' order) must stop for
    a job asking ``ask`` = (GPUs, CPUs, MB per node, nodes) to fit on ``nodes``, where
    ``free`` = (GPUs, CPUs, MB free on each of ``nodes``; added to here) and ``fits``
    (nodes it fits on now). ``holds(v)`` = (node ids, GPUs, CPUs, MB per node) of
    victim ``v``. Returns (k, freed_by): the first k + 1 candidates suffice, and
    ``freed_by`` gives per node the first victim it needs (-1: none, len(cand):
    never); None when all of them do not."""
    FG, FC, FM = free
    g, c, m, nn = ask
    freed_by = np.where(fits, -1, len(cand))
    for k, v in enumerate(cand.tolist()):
        on, vg, vc, vm = holds(v)
        at = np.searchsorted(nodes, np.intersect1d(on, nodes))
        FG[at] += vg
        FC[at] += vc
        FM[at] += vm
        now_fits = (FG[at] >= g) & (FC[at] >= c) & (FM[at] >= m)
        freed_by[at[now_fits & (freed_by[at] > k)]] = k
        if (freed_by <= k).sum() >= nn:
            return k, freed_by
    return None


class Preemptor:
    """A run's preemption state (jobs in submit order): the rules, the victims in
    their grace time (a heap of (stop time, job, attempt)) and, per preemptor, the
    victims it still waits for."""

    def __init__(self, pre, order, pc_off, pc_part):
        self.may = np.asarray(pre.may, dtype=bool)
        self.mode = np.asarray(pre.mode, dtype=np.int64)
        self.grace = np.asarray(pre.grace, dtype=np.int64)
        self.exempt = np.asarray(pre.exempt, dtype=np.int64)
        self.level = np.asarray(pre.level, dtype=np.int64)
        n = len(order)
        self.qos = None if pre.job_class is None else \
            np.asarray(pre.job_class, dtype=np.int64)[order]
        victims = self.may & (self.mode != OFF)[None, :]
        if self.qos is None:            # by partition: any of the job's partitions
            part_can = victims.any(axis=1)
            per = part_can[pc_part] if len(pc_part) else np.zeros(0, dtype=bool)
            self.can = np.logical_or.reduceat(per, pc_off[:-1]) if len(per) else \
                np.zeros(n, dtype=bool)
            self.can &= np.diff(pc_off) > 0
        else:
            self.can = victims.any(axis=1)[self.qos]
        self.stopping = np.zeros(n, dtype=bool)
        self.heap: list[tuple[int, int, int]] = []
        self.waits: dict[int, set] = {}
        self.last = np.full(n, -1, dtype=np.int64)     # when each job last preempted
        self.wakes: list[int] = []      # a heap of exemption ends to look again at
        self.backfill = bool(pre.backfill)
        self.cut: dict[int, int] = {}   # a victim whose hold its grace end cuts: its limit
        self._limits = None             # the loop's limits, which a cut changes
        self._windows = None            # (openings, closings) keyed by node: see choose
        self._loop = None               # the loop whose holds a cut moved
        # (ready time, job, attempt): a CONFIGURING victim whose grace end comes after its
        # nodes are ready, when job_config_fini resets its end time (see :meth:`preempt`)
        self.resets: list[tuple[int, int, int]] = []

    def planning(self, configure) -> Preempting:
        """What the passes read to plan with preemptable capacity (``backfill``; off:
        ``can`` empty); ``stopping`` is this Preemptor's own array and ``configure`` the
        loop's (per job the seconds its start waited for boots: Slurm's start time of a
        CONFIGURING job is its allocation's), so the kernels see their updates."""
        if not self.backfill:
            return no_preempting()
        may = self.may & (self.mode != OFF)[None, :]
        qos = np.zeros(0, dtype=np.int64) if self.qos is None else self.qos
        return Preempting(self.can.copy(), may, self.exempt, qos, self.stopping, configure)

    def next_time(self) -> int:
        """When the next victim's grace time ends, the next exemption end a queued job
        waits for, or the next ready time of a victim CONFIGURING in its grace time
        (-1: none)."""
        times = [h[0][0] for h in (self.heap, self.resets) if h] + self.wakes[:1]
        return min(times) if times else -1

    def due(self, t: int, restarts) -> np.ndarray:
        """The victims whose grace ends at ``t`` and that still run the attempt that was
        preempted (taken off); the exemption ends up to ``t`` are taken off too, and the
        victims whose nodes are ready by ``t`` before their grace end are held until
        their own end again (:meth:`_uncut`)."""
        while self.wakes and self.wakes[0] <= t:
            heapq.heappop(self.wakes)
        while self.resets and self.resets[0][0] <= t:
            _, v, attempt = heapq.heappop(self.resets)
            if restarts[v] == attempt:
                self._uncut(v)
        out = []
        while self.heap and self.heap[0][0] <= t:
            _, v, attempt = heapq.heappop(self.heap)
            if restarts[v] == attempt:
                out.append(v)
        return np.array(sorted(out), dtype=np.int64)

    def ended(self, victims) -> None:
        """``victims`` stopped (or ended by themselves, or a node failure ended them):
        they no longer hold a preemptor."""
        gone = set(np.asarray(victims, dtype=np.int64).tolist())
        for v in gone:
            self.stopping[v] = False
        self.uncut_limits(gone)
        for j in self.waits:
            self.waits[j] = {(v, a) for v, a in self.waits[j] if v not in gone}
        done = [j for j, vs in self.waits.items() if not vs]
        for j in done:
            del self.waits[j]

    def step(self, loop, t: int):
        """The first queued job that preempts at ``t`` and its victims (submit order,
        ascending), or None. The times at which a running job stops being exempt for a
        job looked at join ``wakes``: the loop looks again then, though nothing else
        happens."""
        q = loop.queued_jobs()
        q = q[self.can[q]]
        if not len(q):
            return None
        out, restarts = loop.out, loop.requeues.restarts
        self.ended([v for vs in self.waits.values() for v, a in vs
                    if out.end[v] <= t or out.start[v] < 0 or restarts[v] != a])
        for j in q.tolist():
            if j in self.waits or self.last[j] == t or _held(j, loop.jobs, loop.lim) >= 0:
                continue
            victims = self.choose(loop, j, t)
            if victims is not None:
                self.last[j] = t
                return j, victims
        return None

    def choose(self, loop, j: int, t: int):
        """Job ``j``'s victims at ``t`` (see the module), or None."""
        jobs, out, free, nd = loop.jobs, loop.out, loop.free, loop.nodes
        g, c, m, nn = jobs.rg[j], jobs.rc[j], jobs.rm[j], int(jobs.nn[j])
        low = int(jobs.low[j])          # a node range: MIN of its MIN..MAX (else nn)
        for p in jobs.pc_part[jobs.pc_off[j]:jobs.pc_off[j + 1]].tolist():
            nodes = nd.pflat[nd.poff[p]:nd.poff[p + 1]]
            nodes = nodes[self._clear_of_windows(loop, nodes, t, int(jobs.limit[j]))]
            FG, FC, FM = free.fg[nodes].copy(), free.fc[nodes].copy(), free.fm[nodes].copy()
            fits = (FG >= g) & (FC >= c) & (FM >= m)
            if fits.sum() >= low:
                return None           # it fits without preempting: something else holds it
            cand = self.candidates(loop, j, p, t, nodes)

            def holds(v):
                lo, hi = jobs.offsets[v], jobs.offsets[v] + jobs.nn[v]
                return out.alloc_nodes[lo:hi], jobs.rg[v], jobs.rc[v], jobs.rm[v]
            found = victims_needed((FG, FC, FM), fits, (g, c, m, low), nodes, cand, holds)
            if found is not None:
                return self._victims(loop, cand[:found[0] + 1], nodes, found[1], nn)
        return None

    def _clear_of_windows(self, loop, nodes, t: int, limit: int) -> np.ndarray:
        """:func:`clear_of_windows` of the loop's ``blocked`` windows."""
        if self._windows is None:
            times, on, closes = loop.window_edges
            self._windows = window_keys(times[~closes], times[closes], on[~closes],
                                        on[closes])
        return clear_of_windows(self._windows, nodes, t, limit)

    def candidates(self, loop, j: int, p: int, t: int, nodes) -> np.ndarray:
        """The running jobs on ``nodes`` job ``j`` (in partition ``p``) may preempt at
        ``t``, in the victims' order."""
        out, jobs = loop.out, loop.jobs
        running = loop._jobs_on(t, nodes)
        running = running[(out.start[running] >= 0) & ~self.stopping[running]]
        mine = p if self.qos is None else self.qos[j]
        theirs = out.part_used[running] if self.qos is None else self.qos[running]
        may = self.may[mine, theirs] & (self.mode[theirs] != OFF)
        until = _slurm_start(loop, running, t) + self.exempt[theirs]
        ok = may & (until <= t)
        for w in np.unique(until[may & (until > t)]).tolist():
            if w not in self.wakes:
                heapq.heappush(self.wakes, w)
        cand, cls = running[ok], theirs[ok]
        prio = (self.level[cls] << 16) + np.minimum(jobs.nn[cand], 0xFFFF)
        return cand[np.lexsort((-cand, -_slurm_start(loop, cand, t), prio))]

    def _victims(self, loop, cand, nodes, freed_by, nn: int) -> np.ndarray:
        """The candidates that ran on the ``nn`` nodes chosen for the preemptor."""
        key = np.where(freed_by < 0, -1, freed_by)
        ok = np.flatnonzero(freed_by < len(cand))
        chosen = nodes[ok[np.lexsort((nodes[ok], key[ok]))][:nn]]
        jobs, out = loop.jobs, loop.out
        hit = [v for v in cand.tolist() if np.isin(
            out.alloc_nodes[jobs.offsets[v]:jobs.offsets[v] + jobs.nn[v]], chosen).any()]
        return np.array(sorted(hit), dtype=np.int64)

    def preempt(self, loop, j: int, victims, t: int):
        """Job ``j`` preempts ``victims`` at ``t``: returns (those stopping now, whether
        each is requeued); the others stop at the end of their grace time. A victim
        CONFIGURING (power saving: its start, reset to when its nodes are ready, is
        after ``t``) whose grace ends after that ready time is not stopped: job_mgr.c
        ``job_config_fini`` then resets its end time to its ready time plus its limit,
        undoing the grace end preempt.c ``_job_check_grace_internal`` set, and
        ``slurm_job_preempt`` stops it only once that end time has passed. It is held
        until its grace end until then (:meth:`cut_hold`), then until its own end
        (:meth:`due`), which ends it; its preemptor waits for it."""
        cls = loop.out.part_used[victims] if self.qos is None else self.qos[victims]
        grace = self.grace[cls]
        restarts = loop.requeues.restarts
        self.stopping[victims] = True
        self.waits[j] = {(v, int(restarts[v])) for v in victims.tolist()}
        for v, gt in zip(victims.tolist(), grace.tolist()):
            if gt <= 0:
                continue
            ready = int(loop.out.start[v])
            late = ready > t and t + gt > ready
            heapq.heappush(self.resets if late else self.heap,
                           (ready if late else t + gt, v, int(restarts[v])))
            self.cut_hold(loop, v, t + gt)
        return victims[grace == 0]

    def cut_hold(self, loop, v: int, end: int) -> None:
        """Victim ``v`` (running) stops at ``end``: it is held until then, not until its
        time limit (Slurm's ``end_time = MIN(end_time, preempt_time + grace)``). Its
        limit becomes ``end`` - start, so whatever ends it (its own end, or a kill once
        :meth:`release` undid this) gives back what it holds."""
        jobs, out, res = loop.jobs, loop.out, int(loop.rules.res)
        start, limit = int(out.start[v]), int(jobs.limit[v])
        old, new = _on_grid(start + limit, res), _on_grid(end, res)
        if new >= old:
            return
        self._move(loop, v, old, new)
        self.cut[v] = limit
        self._limits, self._loop = jobs.limit, loop
        # (negative for a CONFIGURING victim stopped before its nodes are ready: its start
        # is then the ready time; a stop or :meth:`_uncut` restores it first)
        jobs.limit[v] = end - start

    def release(self, loop, killed) -> None:
        """Jobs ``killed`` are killed now (stopped, or a node failure): no longer victims
        in their grace time; a cut hold is restored first, so that the kill gives back
        the whole hold and the attempt keeps its own limit."""
        self.stopping[killed] = False
        out, res = loop.out, int(loop.rules.res)
        for v in np.asarray(killed, dtype=np.int64).tolist():
            limit = self.cut.pop(v, None)
            if limit is not None:
                start = int(out.start[v])
                self._move(loop, v, _on_grid(start + int(loop.jobs.limit[v]), res),
                           _on_grid(start + limit, res))
                loop.jobs.limit[v] = limit

    def _uncut(self, v: int) -> None:
        """Victim ``v``'s nodes are ready (job_config_fini): it is held until its own
        end again (its start plus its limit), no longer its grace end."""
        limit = self.cut.pop(v, None)
        if limit is None:
            return
        loop, res = self._loop, int(self._loop.rules.res)
        start = int(loop.out.start[v])
        self._move(loop, v, _on_grid(start + int(loop.jobs.limit[v]), res),
                   _on_grid(start + limit, res))
        loop.jobs.limit[v] = limit

    def uncut_limits(self, gone) -> None:
        """Victims ``gone`` ended on their own with a cut hold: their own limit again
        (their end gave back the cut hold)."""
        for v in gone:
            limit = self.cut.pop(v, None)
            if limit is not None:
                self._limits[v] = limit

    def ran_limits(self, limit) -> np.ndarray:
        """``limit`` (the loop's per job) with each victim whose hold a GraceTime cut
        given its own limit back: the limit its attempt ran with (a victim that ended
        on its own within its grace keeps the cut one in ``limit``)."""
        if not self.cut:
            return limit
        out = limit.copy()
        for v, own in self.cut.items():
            out[v] = own
        return out

    def _move(self, loop, v: int, old: int, new: int) -> None:
        """Job ``v``'s hold ends at ``new`` instead of ``old`` (see :meth:`cut_hold`)."""
        jobs, out = loop.jobs, loop.out
        lo = jobs.offsets[v]
        on = np.ascontiguousarray(out.alloc_nodes[lo:lo + jobs.nn[v]], dtype=np.int64)
        loop.p = move_hold_end(np.int64(v), np.int64(old), np.int64(new), on, jobs.rg[v],
                               jobs.rc[v], jobs.rm[v], loop.p, loop.run_lists)

    def requeued(self, victims, part_used) -> np.ndarray:
        """Whether each victim's mode requeues it (its job must allow requeues too)."""
        cls = part_used if self.qos is None else self.qos[victims]
        return self.mode[cls] == REQUEUE


def _slurm_start(loop, jobs, t: int) -> np.ndarray:
    """The start times Slurm orders the running ``jobs`` by at ``t``: a job CONFIGURING
    (its nodes booting: its start, reset to when they are ready, is after ``t``) has its
    allocation's until then (job_mgr.c ``job_config_fini`` resets it)."""
    start = loop.out.start[jobs]
    if not loop.with_power:
        return start
    return np.where(start > t, start - loop.power.configure[jobs], start)


def _on_grid(t: int, res: int) -> int:
    """``t`` rounded up to the grid of multiples of ``res`` (as every hold ends)."""
    return -(-int(t) // res) * res
