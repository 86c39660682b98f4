"""Policy checks in the *counts* model: the textbook algorithms' plans.

A plan counts free nodes over time; any feasible count plan has a node
assignment when the nodes are interchangeable (``cluster.is_homogeneous()``).
What the checks guarantee is in :mod:`fastsched.verify`'s docstring
(``fcfs_order``, ``reservation_delayed``, ``could_start``); ``tests/naive.py``
(``check_policy``) restates them as directly as possible.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right, insort

import numpy as np

from ..model.errors import UnsupportedError
from .report import Violation

#: reservations named per reservation_delayed violation
_BLOCKERS_SHOWN = 4


def queue_order(jobs, priority=None) -> np.ndarray:
    """Job indices in queue order: priority (higher first) when given, then
    submit time, then job id."""
    keys = (jobs.job_id, jobs.submit_time)
    if priority is not None:
        keys += (-np.asarray(priority, dtype=np.float64),)
    return np.lexsort(keys).astype(np.int64)


def fcfs_blockers(start, eligible, check, qorder) -> np.ndarray:
    """Per job, an earlier-queued eligible job that started later (-1: none):
    the first job holding the running maximum of start times in queue order."""
    blocker = np.full(len(start), -1, np.int64)
    order = qorder[eligible[qorder]]
    if len(order) < 2:
        return blocker
    s = start[order]
    best = np.maximum.accumulate(s)
    first = np.maximum.accumulate(np.where(np.r_[True, s[1:] > best[:-1]],
                                           np.arange(len(s)), 0))
    late = np.r_[False, s[1:] < best[:-1]] & check[order]
    blocker[order[late]] = order[first[np.flatnonzero(late) - 1]]
    return blocker


def waiting_blockers(start, submit, eligible, check, qorder) -> np.ndarray:
    """Per job j, an earlier-queued eligible job b still waiting when j started
    (``submit[b] <= start[j] < start[b]``; -1: none), for any queue order. With
    priorities a job queued ahead may be submitted after j started: it never
    waited for j. One pass in queue order over a Fenwick tree of the latest start
    among the jobs seen so far, indexed by submit time: O(n log n)."""
    blocker = np.full(len(start), -1, np.int64)
    order = qorder[eligible[qorder]]
    times = np.unique(submit[order])
    size = len(times)
    best = [-1] * (size + 1)            # latest start (and its job) per Fenwick node
    who = [-1] * (size + 1)
    for j in order.tolist():
        s = int(start[j])
        if check[j]:
            i, top, b = int(np.searchsorted(times, s, side="right")), -1, -1
            while i > 0:                 # the jobs seen submitted by s
                if best[i] > top:
                    top, b = best[i], who[i]
                i -= i & -i
            if top > s:
                blocker[j] = b
        i = int(np.searchsorted(times, submit[j])) + 1
        while i <= size:
            if s > best[i]:
                best[i], who[i] = s, j
            i += i & -i
    return blocker


def check_fcfs(jobs, start, eligible, check, qorder, out, priority=False) -> None:
    """``fcfs_order`` violations; ``priority``: the queue order is not submit order."""
    blocker = waiting_blockers(start, jobs.submit_time, eligible, check, qorder) \
        if priority else fcfs_blockers(start, eligible, check, qorder)
    jid, submit = jobs.job_id, jobs.submit_time
    for j in np.flatnonzero(blocker >= 0):
        b = blocker[j]
        out.append(Violation(
            "fcfs_order", int(jid[j]), int(start[j]),
            f"job {jid[j]} started at {start[j]} while earlier-queued job {jid[b]} "
            f"(submitted {submit[b]}) was waiting until {start[b]}"))


class _Profile:
    """Free nodes over time from ``T[0]`` on: ``F[k]`` free over [T[k], T[k + 1])."""

    def __init__(self, t, free_now, releases):
        self.T, self.F = [t], [free_now]
        for end, nodes in sorted(releases):
            if end == self.T[-1]:
                self.F[-1] += nodes
            else:
                self.T.append(end)
                self.F.append(self.F[-1] + nodes)

    def earliest_fit(self, need, dur) -> int:
        """Earliest breakpoint s with at least ``need`` free over [s, s + dur)."""
        T, F, m = self.T, self.F, len(self.T)
        i = 0
        while i < m:
            if F[i] < need:
                i += 1
                continue
            k = i
            while k + 1 < m and T[k + 1] < T[i] + dur and F[k + 1] >= need:
                k += 1
            if k + 1 == m or T[k + 1] >= T[i] + dur:
                return T[i]
            i = k + 1
        raise AssertionError("unreachable: the last segment frees every node")

    def first_short(self, need, dur) -> int:
        """Index of the first segment meeting [T[0], T[0] + dur) with fewer than
        ``need`` free, or -1."""
        T, F = self.T, self.F
        for k in range(len(T)):
            if T[k] >= T[0] + dur:
                break
            if F[k] < need:
                return k
        return -1

    def _split(self, x) -> int:
        k = bisect_right(self.T, x) - 1
        if self.T[k] != x:
            k += 1
            self.T.insert(k, x)
            self.F.insert(k, self.F[k - 1])
        return k

    def reserve(self, s, e, nodes) -> None:
        a, b = self._split(s), self._split(e)
        for k in range(a, b):
            self.F[k] -= nodes


def check_reservations(cluster, jobs, start, end, policy, reserve_depth, eligible, check,
                       qorder, out) -> None:
    """``reservation_delayed`` / ``could_start``: the sweep the module docstring of
    :mod:`fastsched.verify` describes, instant by instant in start order."""
    if not cluster.is_homogeneous():
        raise UnsupportedError(f"policy check {policy.name!r} needs a homogeneous cluster "
                               "(identical nodes, one partition)")
    n, P = len(jobs), cluster.num_nodes
    _, depth = policy.kernel_rules(int(reserve_depth))
    submit, limit = jobs.submit_time, jobs.time_limit
    need = jobs.num_nodes.astype(np.int64)
    qpos = np.empty(n, np.int64)
    qpos[qorder] = np.arange(n, dtype=np.int64)
    # An instant where a zero-length job started may have had several passes
    # (the job ends at once and the scheduler runs again): the plan of each pass
    # cannot be rebuilt from the schedule alone, so these checks skip it.
    zero_t = set(np.unique(start[eligible & (end <= start)]).tolist())
    idx = np.flatnonzero(eligible)
    porder = idx[np.lexsort((qpos[idx], start[idx]))]
    arrivals = qorder[np.argsort(submit[qorder], kind="stable")]
    waiting: list[int] = []            # queue positions of judged jobs submitted, not started
    running: list[int] = []
    could: dict[int, tuple[int, int]] = {}
    a = 0
    for j in porder.tolist():
        t = int(start[j])
        while a < n and submit[arrivals[a]] <= t:
            w = int(arrivals[a])
            a += 1
            if check[w] and start[w] > t:
                insort(waiting, int(qpos[w]))
        running = [r for r in running if end[r] > t]
        if check[j] and t not in zero_t:
            ahead = [int(qorder[p]) for p in waiting[:min(depth, bisect_left(waiting, qpos[j]))]]
            if ahead:
                _judge(j, t, ahead, running, start, limit, need, P, policy, jobs, could, out)
        if check[j]:
            k = bisect_left(waiting, qpos[j])
            if k < len(waiting) and waiting[k] == qpos[j]:
                del waiting[k]
        if end[j] > t:
            running.append(j)
    jid = jobs.job_id
    for w, (t, j) in sorted(could.items()):
        out.append(Violation(
            "could_start", int(jid[w]), t,
            f"job {jid[w]} ({need[w]} nodes, limit {limit[w]}) fitted at {t} (when job "
            f"{jid[j]} started) under {policy.name} but waited until {start[w]}"))


def _judge(j, t, ahead, running, start, limit, need, P, policy, jobs, could, out):
    """Rebuild the plan at ``j``'s start and judge ``j`` and the jobs ``ahead``."""
    releases = [(int(start[i] + limit[i]), int(need[i])) for i in running
                if start[i] + limit[i] > t]
    busy = sum(nodes for _, nodes in releases)
    if P - busy < need[j]:
        return                    # the running jobs alone overcommit: reported as such
    plan = _Profile(t, P - busy, releases)
    reserved = []
    for w in ahead:
        if need[w] > P:
            continue
        s = plan.earliest_fit(need[w], max(int(limit[w]), 1))
        reserved.append((w, s))
        if s == t and w not in could:
            could[w] = (t, j)
        if limit[w] > 0 and need[w] > 0:
            plan.reserve(s, s + int(limit[w]), int(need[w]))
    k = plan.first_short(need[j], max(int(limit[j]), 1))
    if k < 0:
        return
    tau = plan.T[k]
    jid = jobs.job_id
    blockers = [int(jid[w]) for w, s in reserved if s <= tau < s + limit[w]][:_BLOCKERS_SHOWN]
    who = (f"delays the reservation of earlier-queued job(s) {blockers}" if blockers
           else "does not fit in the plan of running jobs and reservations")
    out.append(Violation(
        "reservation_delayed", int(jid[j]), t,
        f"job {jid[j]} ({need[j]} nodes, limit {limit[j]}) started at {t} under {policy.name}: "
        f"{who}"))
