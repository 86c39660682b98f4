"""Policy checks in the *nodes* model: plans that pin reservations to concrete nodes.

The model is fastsched's node engine's (docs/gpu-semantics.md, executable in
tests/naive_nodes.py), re-derived here from the schedule alone: this module
imports no scheduling code. At every instant t at which some job started it
rebuilds the engine's pass at t and judges it:

* **The plan at t.** Every job running at t (``start < t < end``) holds its
  (GPUs, CPUs, MB) per node on its recorded nodes over its planned interval
  ``[start, start + limit)``. The queue at t is every judged job (started, not
  before its submit) with ``submit <= t <= start``, in queue order: priority
  (higher first) when the schedule records one per job, then submit time, then
  job id. It is walked in that order, each job adding its hold to the plan:
  - a job that started at t holds its recorded nodes over ``[t, t + limit)``;
  - a job still waiting at t gets, under conservative always and under easy
    while fewer than ``reserve_depth`` jobs got one at t, a reservation at its
    *earliest start* on the nodes the node model chooses (the first N eligible
    nodes free for it over ``[s, s + limit)``, sorted by ``(-run_start, free
    GPUs, free CPUs, free MB at s, node index)``); under easy a waiting job
    past that depth holds nothing; under fcfs the walk stops at the first
    waiting job (the head).
  The walk covers the jobs up to the last one that started at t, and under
  fcfs the head.
* ``reservation_delayed``: a job that started at t whose recorded nodes are not
  free for it over ``[t, t + limit)`` in the plan so far, although they are
  without the reservations: its start overlaps the reservation of an earlier
  job (EASY: one of the first ``reserve_depth`` blocked jobs; conservative:
  any earlier job). The message names the reserved jobs it overlaps.
* ``could_start``: a job waiting at t that fitted at t in the plan so far (N
  eligible nodes free for it over ``[t, t + limit)``): the engine starts every
  job that fits when its turn comes (fcfs: the head; easy: every walked job;
  conservative: every job whose earliest start is t).

Nodes are eligible for a job when they are in its partition and hold its
request; every node counts as available (a schedule does not record DOWN
nodes). What is not judged, as in the counts model: instants where nothing
started; for easy and conservative instants where a zero-length job started
(several passes ran at one timestamp); a start that overcommits together with
the running jobs alone (reported as ``overcommit``). Plans are exact (the
engine's ``resolution = 1``, no ``window``), and the queue order must be fixed
for the run: priorities recomputed over time (``period``) are not modelled;
:func:`fastsched.verify.verify` does not run this check with partition choices
or a topology placement.

Cost: per walked job, a NumPy pass over (nodes holding something) x (hold
boundaries), so O(queue x running) per start instant; :func:`work_estimate`
bounds it before the check runs.
"""
from __future__ import annotations

from bisect import bisect_left, insort

import numpy as np

from .report import Violation

#: reservations named per reservation_delayed violation
_BLOCKERS_SHOWN = 4
#: the fixed cost of one walked job, in cells (measured: about 0.5 ms per walked
#: job on a 100-node cluster, where a cell costs about 8 ns)
QUERY_CELLS = 65_000
#: time limits are capped here (far past any instant, 2^40 s at most)
_FOREVER = 2**62


class _Plan:
    """Free (GPUs, CPUs, MB) per node over time from ``t`` on, in one pass:
    ``free[:, n, k]`` over ``[B[k], B[k + 1])`` (the last segment never ends);
    ``now``: free at t counting the running and started jobs only."""

    def __init__(self, cap, t, nodes, ends, requests):
        """Running jobs' holds: per entry a node, a planned end (> t), a request."""
        self.t = t
        self.B = np.unique(np.r_[t, ends]).astype(np.int64)
        used = np.zeros((3, cap.shape[1], len(self.B) + 1), np.int64)
        for r in range(3):
            np.add.at(used[r], (nodes, 0), requests[r])
            np.add.at(used[r], (nodes, np.searchsorted(self.B, ends)), -requests[r])
        self.free = cap[:, :, None] - np.cumsum(used[:, :, :-1], axis=2)
        self.now = self.free[:, :, 0].copy()

    def _column(self, x) -> int:
        """The index of breakpoint x (>= t), made if missing."""
        k = int(np.searchsorted(self.B, x))
        if k == len(self.B) or self.B[k] != x:
            self.B = np.insert(self.B, k, x)
            self.free = np.insert(self.free, k, self.free[:, :, k - 1], axis=2)
        return k

    def hold(self, nodes, begin, end, request, reservation=False):
        a, b = self._column(begin), self._column(end)
        self.free[:, nodes, a:b] -= request[:, None, None]
        if not reservation:
            self.now[:, nodes] -= request[:, None]

    def window(self, limit) -> int:
        """Number of segments meeting [t, t + limit)."""
        return int(np.searchsorted(self.B, self.t + limit))


def earliest_start(plan, eligible_nodes, num_nodes, request, limit):
    """(earliest start s >= t, the nodes the node model chooses there, ascending);
    (None, None) for a job with too few eligible nodes (it can never run)."""
    if len(eligible_nodes) < num_nodes:
        return None, None
    B, free = plan.B, plan.free[:, eligible_nodes, :]
    ok = (free >= request[:, None, None]).all(axis=0)
    bad_at = np.where(ok, np.iinfo(np.int64).max, B[None, :])
    next_bad = np.minimum.accumulate(bad_at[:, ::-1], axis=1)[:, ::-1]
    fits = next_bad >= B[None, :] + limit
    i = int(np.argmax(fits.sum(axis=0) >= num_nodes))    # the last segment always fits
    feasible = np.flatnonzero(fits[:, i])
    last_bad = np.maximum.accumulate(np.where(ok, -1, np.arange(len(B))), axis=1)[feasible, i]
    run_start = np.where(last_bad >= 0, B[np.minimum(last_bad + 1, len(B) - 1)], plan.t)
    f = free[:, feasible, i]
    order = np.lexsort((eligible_nodes[feasible], f[2], f[1], f[0], -run_start))
    return int(B[i]), np.sort(eligible_nodes[feasible[order[:num_nodes]]])


def fits_now(plan, eligible_nodes, num_nodes, request, limit) -> bool:
    """Are ``num_nodes`` eligible nodes free for the request over [t, t + limit)?"""
    now_ok = eligible_nodes[(plan.free[:, eligible_nodes, 0] >= request[:, None]).all(axis=0)]
    if len(now_ok) < num_nodes:
        return False
    span = plan.free[:, now_ok, :plan.window(limit)]
    return int((span >= request[:, None, None]).all(axis=(0, 2)).sum()) >= num_nodes


def free_over(plan, nodes, request, limit) -> bool:
    """Are all ``nodes`` free for the request over [t, t + limit)?"""
    return bool((plan.free[:, nodes, :plan.window(limit)] >= request[:, None, None]).all())


class _Judge:
    """The jobs' requests and the schedule's allocations, and the pass walk."""

    def __init__(self, cluster, jobs, schedule, start, end, policy, depth, report_order, out,
                 plan_limit=None):
        self.cluster, self.jobs, self.start, self.end = cluster, jobs, start, end
        self.policy, self.depth, self.out = policy, depth, out
        self.report_order = report_order
        self.off = np.asarray(schedule.alloc_offsets, np.int64)
        self.nodes = np.asarray(schedule.alloc_nodes, np.int64)
        self.request = np.stack([jobs.gpus_per_node, jobs.cpus_per_node,
                                 jobs.mem_per_node]).astype(np.int64)
        # any limit past 2^62 s is forever; t + limit then stays within int64
        self.run_limit = np.clip(jobs.time_limit.astype(np.int64), 1, _FOREVER)
        self.limit = self.run_limit if plan_limit is None else \
            np.clip(np.asarray(plan_limit, np.int64), 1, _FOREVER)
        member = np.zeros((len(cluster.partitions), cluster.num_nodes), bool)
        for p, part in enumerate(cluster.partitions):
            member[p, np.asarray(part.nodes, np.int64)] = True
        self.member = member
        self.cap = np.stack([cluster.gpus, cluster.cpus, cluster.mem_mb]).astype(np.int64)
        self.reported_could: set[int] = set()

    def nodes_of(self, i):
        """Job i's nodes, without the out-of-range and repeated entries that
        ``bad_allocation`` reports."""
        nodes = self.nodes[self.off[i]:self.off[i + 1]]
        return np.unique(nodes[(nodes >= 0) & (nodes < self.cluster.num_nodes)])

    def eligible_nodes(self, i):
        p = self.jobs.partition[i]
        if not 0 <= p < len(self.member):
            return np.empty(0, np.int64)        # reported as bad_allocation
        fits = (self.cap >= self.request[:, i:i + 1]).all(axis=0)
        return np.flatnonzero(self.member[p] & fits)

    def walk(self, t, running, queue):
        """One pass at ``t``: ``queue`` = judged jobs (indices) in queue order."""
        held = [self.nodes_of(r) for r in running]
        per_job = [len(x) for x in held]
        rep = np.repeat(np.asarray(running, np.int64), per_job)
        plan = _Plan(self.cap, t, np.concatenate(held) if held else np.empty(0, np.int64),
                     self.start[rep] + self.run_limit[rep], self.request[:, rep])
        reserved = []                                    # (job, s, nodes)
        head = None                                      # fcfs: the first waiting job
        for x in queue:
            if head is not None:                         # nothing starts behind it
                if self.start[x] == t and self.report_order:
                    self._out_of_order(x, head, t)
                continue
            if self.start[x] == t:
                self._judge_start(plan, x, t, reserved)
                if self.end[x] > t:
                    plan.hold(self.nodes_of(x), t, t + self.limit[x], self.request[:, x])
                continue
            if len(reserved) >= self.depth:
                if self._fits_now(plan, x):
                    self._could_start(x, t)
                continue
            s, chosen = earliest_start(plan, self.eligible_nodes(x), self.jobs.num_nodes[x],
                                       self.request[:, x], self.limit[x])
            if s is None:
                continue
            if s == t:
                self._could_start(x, t)
            if self.policy.stop_at_head:
                head = x
                continue
            reserved.append((x, s, chosen))
            plan.hold(chosen, s, s + self.limit[x], self.request[:, x], reservation=True)

    def _fits_now(self, plan, x):
        return fits_now(plan, self.eligible_nodes(x), self.jobs.num_nodes[x],
                        self.request[:, x], self.limit[x])

    def _judge_start(self, plan, x, t, reserved):
        if self.policy.stop_at_head:
            return                       # no reservations: overcommit covers its nodes
        nodes, req, lim = self.nodes_of(x), self.request[:, x], self.limit[x]
        if free_over(plan, nodes, req, lim) or not (plan.now[:, nodes] >= req[:, None]).all():
            return                       # fits, or the running jobs alone overcommit
        jid = self.jobs.job_id
        blockers = [int(jid[w]) for w, s, chosen in reserved
                    if s < t + lim and t < s + self.limit[w] and np.isin(chosen, nodes).any()]
        self.out.append(Violation(
            "reservation_delayed", int(jid[x]), int(t),
            f"job {jid[x]} ({len(nodes)} nodes, limit {self.jobs.time_limit[x]}) started at {t} "
            f"under {self.policy.name} (nodes model) on nodes reserved for earlier-queued job(s) "
            f"{blockers[:_BLOCKERS_SHOWN]}"))

    def _out_of_order(self, x, head, t):
        jid = self.jobs.job_id
        self.out.append(Violation(
            "fcfs_order", int(jid[x]), int(t),
            f"job {jid[x]} started at {t} while earlier-queued job {jid[head]} (submitted "
            f"{self.jobs.submit_time[head]}) was waiting until {self.start[head]}"))

    def _could_start(self, x, t):
        if x in self.reported_could:
            return
        self.reported_could.add(x)
        jid = self.jobs.job_id
        self.out.append(Violation(
            "could_start", int(jid[x]), int(t),
            f"job {jid[x]} ({self.jobs.num_nodes[x]} nodes, limit {self.jobs.time_limit[x]}) "
            f"fitted on concrete nodes at {t} under {self.policy} (nodes model) but waited "
            f"until {self.start[x]}"))


def instants(jobs, start, end, stop_at_head, eligible, check, qorder):
    """Yield (t, running jobs at t, queue of judged jobs to walk at t), in time order."""
    n = len(jobs)
    qpos = np.empty(n, np.int64)
    qpos[qorder] = np.arange(n, dtype=np.int64)
    zero_t = set(np.unique(start[eligible & (end <= start)]).tolist())
    idx = np.flatnonzero(eligible)
    porder = idx[np.lexsort((qpos[idx], start[idx]))]
    arrivals = qorder[np.argsort(jobs.submit_time[qorder], kind="stable")]
    bounds = np.flatnonzero(np.r_[True, np.diff(start[porder]) != 0, True])
    waiting: list[int] = []             # queue positions of judged jobs submitted, not started
    running: list[int] = []
    a = 0
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        at_t = porder[lo:hi]
        t = int(start[at_t[0]])
        while a < n and jobs.submit_time[arrivals[a]] <= t:
            w = int(arrivals[a])
            a += 1
            if check[w] and start[w] > t:
                insort(waiting, int(qpos[w]))
        running = [r for r in running if end[r] > t]
        judged = at_t[check[at_t]]
        for j in judged:                          # they start now: no longer waiting
            k = bisect_left(waiting, qpos[j])
            if k < len(waiting) and waiting[k] == qpos[j]:
                del waiting[k]
        if len(judged) and (stop_at_head or t not in zero_t):
            cut = bisect_left(waiting, qpos[judged[-1]])
            if stop_at_head:
                cut = max(cut, 1)                 # the head, wherever it is
            walked = np.sort(np.r_[qpos[judged], np.asarray(waiting[:cut], np.int64)])
            yield t, list(running), qorder[walked]
        running += [int(j) for j in at_t if end[j] > t]


def work_estimate(cluster, jobs, start, end, policy, eligible, check, qorder) -> int:
    """The check's work in (node, breakpoint) cells, an upper bound: per walked job
    a fixed cost (:data:`QUERY_CELLS`) plus nodes x breakpoints (every running or
    walked job's hold adds at most two)."""
    total = 0
    for _, running, walked in instants(jobs, start, end, policy.stop_at_head, eligible, check,
                                       qorder):
        breakpoints = 2 * (len(running) + len(walked)) + 1
        total += len(walked) * (QUERY_CELLS + cluster.num_nodes * breakpoints)
    return total


def check(cluster, jobs, schedule, start, end, policy, reserve_depth, eligible, check_mask,
          qorder, out, *, report_order=False, plan_limit=None) -> None:
    """The nodes-model checks; ``report_order``: also ``fcfs_order`` (for a queue
    order other than submit order, where start times need not follow it).
    ``plan_limit``: per job the limit a pass plans it with, starting or reserved, when
    it differs from the ``time_limit`` it holds once running (a run with power
    saving: a job that waited for boots holds its nodes its wait longer, known only
    after the pass that started it)."""
    _, depth = policy.kernel_rules(int(reserve_depth))
    judge = _Judge(cluster, jobs, schedule, start, end, policy, depth, report_order, out,
                   plan_limit)
    for t, running, walked in instants(jobs, start, end, policy.stop_at_head, eligible,
                                       check_mask, qorder):
        judge.walk(t, running, walked)
