"""An independent checker of any schedule (ours, another simulator's, a real log).

:func:`verify` imports nothing of fastsched's schedulers or simulator, only the
data types, so it can judge them. What each check GUARANTEES when it passes:

``not_started`` / ``early_start`` / ``wrong_end``
    every job has ``start_time >= 0``; ``start_time >= submit_time``;
    ``end_time == start_time + min(runtime, time_limit)`` exactly.
``bad_allocation``
    a started job holds exactly ``num_nodes`` distinct, existing node indices,
    all in its partition; a job that never started holds none.
``overcommit``
    at no instant does any node carry more CPUs, GPUs or memory than it has,
    counting every job on it over its *actual* half-open interval
    ``[start_time, end_time)`` (zero-length jobs occupy nothing). Out-of-range
    node indices are left out (reported as ``bad_allocation``) and a node listed
    twice by one job is counted once.
``fcfs_order`` (``policy="fcfs"``)
    start times are non-decreasing in queue order ``(submit_time, job_id)``:
    no job started while an earlier-queued job was still waiting.
``reservation_delayed`` / ``could_start`` (``policy="easy"``, ``"conservative"``)
    at every instant t at which some job j started, rebuild the plan the
    scheduler had when it placed j: jobs running at t (``start < t < end``) and
    jobs started at t before j in queue order with actual duration > 0, each
    holding ``num_nodes`` over ``[start, start + time_limit)`` (plans use limits,
    never runtimes). Give the first ``reserve_depth`` (easy) or all
    (conservative) earlier-queued jobs still waiting at t a reservation each, in
    queue order, at its earliest fitting start >= t. Then: j fits over
    ``[t, t + time_limit)`` in that plan (else ``reservation_delayed``: j,
    backfilled, would push back a reservation), and no reservation lands at t
    (else ``could_start``: that waiting job fitted now but was left waiting).
    "Fits over [s, e)" means enough free nodes at every instant of
    ``[s, max(e, s + 1))``: a job needs its nodes at the instant it starts.

What the checks do NOT guarantee:

* that the scheduler made the *best* choice, or the same choice as another
  implementation of the policy (ties, pass order, node selection); only that no
  decision broke the policy's rules at the instants jobs started.
* ``could_start`` is only examined at instants where some job started (a job
  that could have run while nothing happened at all is not reported), and under
  easy only for the ``reserve_depth`` reserved jobs, not for every backfill
  candidate.
* the plan reconstruction assumes the jobs started at one instant were placed
  in queue order in one pass. At an instant where a zero-length job started,
  the scheduler may have run several passes (the job ends at once and frees
  its nodes), whose plans cannot be rebuilt from the schedule alone: the
  reservation checks skip such instants (``fcfs_order`` still covers them).
* policy checks count nodes only (a job needs ``num_nodes`` whole nodes), so
  they need ``cluster.is_homogeneous()``; jobs that never started and jobs that
  started before their submit are reported by the basic checks and left out of
  the policy checks (they neither wait in nor are judged by them).
* a job whose start overcommits the machine together with the jobs already
  running is reported as ``overcommit`` only: no plan exists at that instant,
  so neither it nor the waiting jobs are judged there.
* the reservation checks rebuild plans in the *counts* model (a reservation
  holds a number of interchangeable nodes, as in the textbook algorithms). A
  schedule planned with concrete-node reservations (``schedule.planning ==
  "nodes"``: fastsched's node engine) follows other rules: a reservation pins
  its nodes, so a job may wait where the counts model would start it. Such a
  schedule is neither passed nor failed on easy/conservative: the report lists
  the policy under ``not_checked`` (``fcfs_order`` holds in both models and is
  checked).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from . import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
import numpy as np
from numba import njit

from .model.cluster import Cluster
from .model.errors import FastschedError, InputError, UnsupportedError
from .model.jobs import JobTable
from .model.schedule import Schedule

__all__ = ["Violation", "VerifyReport", "ScheduleError", "verify", "schedule_from_frame",
           "VIOLATION_KINDS", "POLICIES"]

VIOLATION_KINDS = ("not_started", "early_start", "wrong_end", "bad_allocation", "overcommit",
                   "fcfs_order", "reservation_delayed", "could_start", "dependency",
                   "limit_exceeded", "exclusive_topo")
POLICIES = ("fcfs", "easy", "conservative")

#: violations whose message lists the co-running jobs (finding them costs a scan)
_DETAILED_OVERCOMMITS = 1000


class ScheduleError(FastschedError):
    """A schedule broke the rules :func:`verify` checks; ``report`` has them all."""

    def __init__(self, message: str, report: "VerifyReport | None" = None):
        super().__init__(message)
        self.report = report


@dataclass(frozen=True)
class Violation:
    kind: str       # one of VIOLATION_KINDS
    job_id: int
    time: int
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


@dataclass
class VerifyReport:
    violations: list[Violation]
    checked_jobs: int
    checks: list[str] = field(default_factory=list)
    #: checks asked for but not made, with why (e.g. a policy the schedule was not planned under)
    not_checked: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    def counts(self) -> dict[str, int]:
        """Number of violations per kind."""
        return dict(Counter(v.kind for v in self.violations))

    def kinds(self) -> set[str]:
        return {v.kind for v in self.violations}

    def raise_if_failed(self) -> None:
        if self.ok:
            return
        lines = [str(self)] + [f"  {v}" for v in self.violations[:10]]
        if len(self.violations) > 10:
            lines.append(f"  ... and {len(self.violations) - 10} more")
        raise ScheduleError("\n".join(lines), self)

    def __str__(self) -> str:
        checks = ", ".join(self.checks)
        skipped = "".join(f"; NOT CHECKED: {s}" for s in self.not_checked)
        if self.ok:
            return f"ok: {self.checked_jobs} jobs, checks: {checks}{skipped}"
        counts = ", ".join(f"{k} {c}" for k, c in sorted(self.counts().items()))
        return (f"{len(self.violations)} violations ({counts}) in {self.checked_jobs} jobs, "
                f"checks: {checks}{skipped}; first: {self.violations[0].message}")


# --------------------------------------------------------------------------- kernels

@njit(cache=True)
def _earliest_fit(T, F, m, q, dur):
    """Earliest breakpoint-aligned s >= T[0] with F >= q over [s, s + dur)."""
    i = 0
    while i < m:
        if F[i] < q:
            i += 1
            continue
        s = T[i]
        k = i
        ok = True
        while k + 1 < m and T[k + 1] < s + dur:
            k += 1
            if F[k] < q:
                ok = False
                break
        if ok:
            return s
        i = k + 1
    return -1


@njit(cache=True)
def _first_short(T, F, m, q, dur):
    """Index of the first segment meeting [T[0], T[0] + dur) with F < q, or -1."""
    end = T[0] + dur
    k = 0
    while k < m and T[k] < end:
        if F[k] < q:
            return k
        k += 1
    return -1


@njit(cache=True)
def _split(T, F, m, x):
    """Ensure a breakpoint at x (>= T[0]); returns (index of x, new m)."""
    k = m - 1
    while T[k] > x:
        k -= 1
    if T[k] == x:
        return k, m
    for r in range(m, k + 1, -1):
        T[r] = T[r - 1]
        F[r] = F[r - 1]
    T[k + 1] = x
    F[k + 1] = F[k]
    return k + 1, m + 1


@njit(cache=True)
def _reserve(T, F, m, s, e, q):
    a, m = _split(T, F, m, s)
    b, m = _split(T, F, m, e)
    for k in range(a, b):
        F[k] -= q
    return m


@njit(cache=True)
def _fcfs_kernel(start, eligible, check, qorder):
    n = len(start)
    blocker = np.full(n, -1, np.int64)
    best_i = -1
    best_t = np.int64(0)
    for r in range(n):
        j = qorder[r]
        if not eligible[j]:
            continue
        if check[j] and best_i >= 0 and start[j] < best_t:
            blocker[j] = best_i
        if best_i < 0 or start[j] > best_t:
            best_t = start[j]
            best_i = j
    return blocker


@njit(cache=True)
def _reservation_kernel(submit, start, end, limit, need, eligible, check, qorder, qpos,
                        porder, P, depth):
    """Sweep started jobs in (start, queue position) order; see the module docstring."""
    n = len(submit)
    NB = 4
    delayed = np.zeros(n, np.bool_)
    blockers = np.full((n, NB), -1, np.int64)
    could_t = np.full(n, -1, np.int64)
    could_j = np.full(n, -1, np.int64)
    pool = np.empty(n, np.int64)
    pl = 0
    dead = 0
    in_pool = np.zeros(n, np.bool_)
    done = np.zeros(n, np.bool_)
    run = np.empty(n, np.int64)
    rl = 0
    wbuf = np.empty(n, np.int64)
    wres = np.empty(n, np.int64)
    pes = np.empty(n, np.int64)
    nds = np.empty(n, np.int64)
    sp = 0
    for idx in range(len(porder)):
        j = porder[idx]
        t = start[j]
        while sp < n and submit[qorder[sp]] <= t:
            w = qorder[sp]
            sp += 1
            if eligible[w] and not done[w]:
                pool[pl] = w
                pl += 1
                in_pool[w] = True
        k = 0
        for r in range(rl):
            if end[run[r]] > t:
                run[k] = run[r]
                k += 1
        rl = k
        if check[j]:
            nw = 0
            for r in range(pl):
                w = pool[r]
                if done[w]:
                    continue
                if qpos[w] >= qpos[j]:
                    break
                wbuf[nw] = w
                nw += 1
                if nw >= depth:
                    break
            if nw > 0:
                c = 0
                busy = 0
                for r in range(rl):
                    i = run[r]
                    pe = start[i] + limit[i]
                    if pe > t:
                        pes[c] = pe
                        nds[c] = need[i]
                        busy += need[i]
                        c += 1
                if P - busy >= need[j]:   # else: running jobs alone overcommit (reported elsewhere)
                    cap = 2 + c + 2 * nw
                    T = np.empty(cap, np.int64)
                    F = np.empty(cap, np.int64)
                    T[0] = t
                    F[0] = P - busy
                    m = 1
                    o = np.argsort(pes[:c])
                    for r in range(c):
                        pe = pes[o[r]]
                        if pe == T[m - 1]:
                            F[m - 1] += nds[o[r]]
                        else:
                            T[m] = pe
                            F[m] = F[m - 1] + nds[o[r]]
                            m += 1
                    for r in range(nw):
                        w = wbuf[r]
                        q = need[w]
                        if q > P:
                            wres[r] = -1
                            continue
                        s = _earliest_fit(T, F, m, q, max(limit[w], 1))
                        wres[r] = s
                        if s == t and could_t[w] < 0:
                            could_t[w] = t
                            could_j[w] = j
                        if s >= 0 and limit[w] > 0 and q > 0:
                            m = _reserve(T, F, m, s, s + limit[w], q)
                    ks = _first_short(T, F, m, need[j], max(limit[j], 1))
                    if ks >= 0:
                        delayed[j] = True
                        tau = T[ks]
                        nb = 0
                        for r in range(nw):
                            s = wres[r]
                            w = wbuf[r]
                            if s >= 0 and s <= tau and tau < s + limit[w] and nb < NB:
                                blockers[j, nb] = w
                                nb += 1
        done[j] = True
        if in_pool[j]:
            dead += 1
        if end[j] > t:
            run[rl] = j
            rl += 1
        if dead > 32 and 2 * dead > pl:
            k = 0
            for r in range(pl):
                if not done[pool[r]]:
                    pool[k] = pool[r]
                    k += 1
            pl = k
            dead = 0
    return delayed, blockers, could_t, could_j


# --------------------------------------------------------------------------- checks

def _check_inputs(cluster: Cluster, jobs: JobTable, schedule: Schedule) -> None:
    n = len(jobs)
    if len(schedule) != n:
        raise InputError(f"schedule has {len(schedule)} rows for {n} jobs")
    for name in ("start_time", "end_time"):
        if len(getattr(schedule, name)) != n:
            raise InputError(f"schedule.{name} has {len(getattr(schedule, name))} entries "
                             f"for {n} jobs")
    jid = np.asarray(schedule.job_id, dtype=np.int64)
    bad = np.flatnonzero(jid != jobs.job_id)
    if len(bad):
        i = int(bad[0])
        raise InputError(f"schedule row {i} is job {int(jid[i])} but jobs row {i} is job "
                         f"{int(jobs.job_id[i])}: rows must be in the same order "
                         f"({len(bad)} rows differ)")
    off = np.asarray(schedule.alloc_offsets, dtype=np.int64)
    if (len(off) != n + 1 or off[0] != 0 or (np.diff(off) < 0).any()
            or off[-1] != len(schedule.alloc_nodes)):
        raise InputError("schedule.alloc_offsets must have jobs + 1 non-decreasing entries "
                         "from 0 to len(alloc_nodes)")


def _constraint_checks(jobs, start, end, dependencies, limits, out, checks):
    """Dependency and limit checks; per job, True when never starting is explained."""
    from . import verify_constraints as vc
    explained = np.zeros(len(jobs), dtype=bool)
    if dependencies is not None:
        explained |= vc.check_dependencies(jobs, start, end, dependencies, Violation, out)
        checks.append("dependencies")
    if limits is not None:
        explained |= vc.check_limits(jobs, start, end, limits, Violation, out)
        checks.append("limits")
    return explained


def _basic(jobs, start, end, out, explained=None):
    jid = jobs.job_id
    unstarted = start < 0 if explained is None else (start < 0) & ~explained
    for i in np.flatnonzero(unstarted):
        out.append(Violation("not_started", int(jid[i]), int(jobs.submit_time[i]),
                             f"job {jid[i]} (submitted {jobs.submit_time[i]}) never started"))
    started = start >= 0
    for i in np.flatnonzero(started & (start < jobs.submit_time)):
        out.append(Violation("early_start", int(jid[i]), int(start[i]),
                             f"job {jid[i]} started at {start[i]} before its submit time "
                             f"{jobs.submit_time[i]}"))
    want = start + np.minimum(jobs.runtime, jobs.time_limit)
    for i in np.flatnonzero(started & (end != want)):
        out.append(Violation("wrong_end", int(jid[i]), int(start[i]),
                             f"job {jid[i]} started at {start[i]} ended at {end[i]}, expected "
                             f"{want[i]} (start + min(runtime {jobs.runtime[i]}, "
                             f"limit {jobs.time_limit[i]}))"))


def _allocation(cluster, jobs, schedule, start, out):
    """Checks allocations; returns (job index, node index) of the entries that occupy."""
    n, N = len(jobs), cluster.num_nodes
    off = np.asarray(schedule.alloc_offsets, dtype=np.int64)
    nodes = np.asarray(schedule.alloc_nodes, dtype=np.int64)
    counts = np.diff(off)
    a_job = np.repeat(np.arange(n, dtype=np.int64), counts)
    started = start >= 0
    valid = (nodes >= 0) & (nodes < N)
    parts = jobs.partition.astype(np.int64)
    nparts = len(cluster.partitions)
    bad_part = (parts < 0) | (parts >= nparts)
    member = np.zeros((nparts, N), dtype=np.bool_)
    for p, part in enumerate(cluster.partitions):
        member[p, np.asarray(part.nodes, dtype=np.int64)] = True
    chk = valid & ~bad_part[a_job]
    outside = np.zeros(len(nodes), dtype=np.bool_)
    outside[chk] = ~member[parts[a_job[chk]], nodes[chk]]
    o = np.lexsort((nodes, a_job))
    sj, sn = a_job[o], nodes[o]
    dup_sorted = np.zeros(len(nodes), dtype=np.bool_)
    if len(nodes) > 1:
        dup_sorted[1:] = (sj[1:] == sj[:-1]) & (sn[1:] == sn[:-1])
    dup = np.zeros(len(nodes), dtype=np.bool_)
    dup[o] = dup_sorted

    wrong_count = np.where(started, counts != jobs.num_nodes, counts != 0)
    bad_entry = ~valid | outside | dup
    bad_job = wrong_count | (started & bad_part)
    bad_job[a_job[bad_entry]] = True

    def name(x):
        return cluster.node_names[x] if 0 <= x < N else f"index {x}"

    for i in np.flatnonzero(bad_job):
        jid = int(jobs.job_id[i])
        lo, hi = off[i], off[i + 1]
        why = []
        if not started[i]:
            why.append(f"never started but holds {counts[i]} node(s)")
        elif counts[i] != jobs.num_nodes[i]:
            why.append(f"holds {counts[i]} node(s), needs {jobs.num_nodes[i]}")
        if started[i] and bad_part[i]:
            why.append(f"unknown partition {parts[i]}")
        inval = nodes[lo:hi][~valid[lo:hi]]
        if len(inval):
            why.append(f"node index(es) {inval[:5].tolist()} out of range 0..{N - 1}")
        dd = nodes[lo:hi][dup[lo:hi]]
        if len(dd):
            why.append("duplicate node(s) " + ", ".join(name(x) for x in dd[:5]))
        ob = nodes[lo:hi][outside[lo:hi]]
        if len(ob):
            pname = cluster.partitions[parts[i]].name
            why.append("node(s) " + ", ".join(name(x) for x in ob[:5])
                       + f" not in partition {pname!r}")
        t = int(start[i]) if started[i] else int(jobs.submit_time[i])
        out.append(Violation("bad_allocation", jid, t, f"job {jid} at {t}: " + "; ".join(why)))

    keep = valid & ~dup
    return a_job[keep], nodes[keep]


def _overcommit(cluster, jobs, start, end, a_job, a_node, out):
    s, e = start[a_job], end[a_job]
    use = (s >= 0) & (e > s)
    a_job, a_node, s, e = a_job[use], a_node[use], s[use], e[use]
    E = len(a_job)
    if E == 0:
        return
    ev_node = np.concatenate([a_node, a_node])
    ev_time = np.concatenate([s, e])
    ev_plus = np.concatenate([np.ones(E, np.int8), np.zeros(E, np.int8)])
    ev_job = np.concatenate([a_job, a_job])
    sign = np.concatenate([np.ones(E, np.int64), -np.ones(E, np.int64)])
    o = np.lexsort((ev_plus, ev_time, ev_node))   # minus before plus: half-open intervals
    ev_node, ev_time, ev_plus, ev_job, sign = (ev_node[o], ev_time[o], ev_plus[o],
                                               ev_job[o], sign[o])
    over = np.zeros(2 * E, dtype=np.bool_)
    for per_job, cap in ((jobs.cpus_per_node, cluster.cpus), (jobs.gpus_per_node, cluster.gpus),
                         (jobs.mem_per_node, cluster.mem_mb)):
        used = np.cumsum(per_job[ev_job].astype(np.int64) * sign)  # nets to 0 per node
        over |= used > cap[ev_node]
    hits = np.flatnonzero(over & (ev_plus == 1))
    if len(hits) == 0:
        return
    seg_start = np.searchsorted(ev_node, ev_node[hits], side="left")
    jid = jobs.job_id
    for h, (p, lo) in enumerate(zip(hits, seg_start)):
        i, node, t = ev_job[p], int(ev_node[p]), int(ev_time[p])
        msg = f"node {cluster.node_names[node]} overcommitted at {t} when job {jid[i]} started"
        if h < _DETAILED_OVERCOMMITS:
            active = []
            for q in range(lo, p + 1):
                if ev_plus[q]:
                    active.append(ev_job[q])
                else:
                    active.remove(ev_job[q])
            c = sum(int(jobs.cpus_per_node[x]) for x in active)
            g = sum(int(jobs.gpus_per_node[x]) for x in active)
            mm = sum(int(jobs.mem_per_node[x]) for x in active)
            msg += (f": jobs {[int(jid[x]) for x in active]} use cpus {c}/{cluster.cpus[node]}, "
                    f"gpus {g}/{cluster.gpus[node]}, mem {mm}/{cluster.mem_mb[node]} MB")
        out.append(Violation("overcommit", int(jid[i]), t, msg))


def _policy(cluster, jobs, start, end, policy, reserve_depth, out):
    if not cluster.is_homogeneous():
        raise UnsupportedError(f"policy check {policy!r} needs a homogeneous cluster "
                               "(identical nodes, one partition)")
    n = len(jobs)
    submit = jobs.submit_time
    qorder = np.lexsort((jobs.job_id, submit)).astype(np.int64)
    qpos = np.empty(n, np.int64)
    qpos[qorder] = np.arange(n, dtype=np.int64)
    eligible = start >= 0
    check = eligible & (start >= submit)
    jid = jobs.job_id
    if policy == "fcfs":
        blocker = _fcfs_kernel(start, eligible, check, qorder)
        for j in np.flatnonzero(blocker >= 0):
            b = blocker[j]
            out.append(Violation(
                "fcfs_order", int(jid[j]), int(start[j]),
                f"job {jid[j]} started at {start[j]} while earlier-queued job {jid[b]} "
                f"(submitted {submit[b]}) was waiting until {start[b]}"))
        return
    # An instant where a zero-length job started may have had several passes
    # (the job ends at once and the scheduler runs again): the plan of each pass
    # cannot be rebuilt from the schedule alone, so the reservation checks skip
    # such instants (fcfs order, above, needs no plan and covers them).
    zero_t = np.unique(start[eligible & (end <= start)])
    check &= ~np.isin(start, zero_t)
    depth = n + 1 if policy == "conservative" else int(reserve_depth)
    if depth < 1:
        return
    idx = np.flatnonzero(eligible)
    porder = idx[np.lexsort((qpos[idx], start[idx]))].astype(np.int64)
    delayed, blockers, could_t, could_j = _reservation_kernel(
        submit, start, end, jobs.time_limit, jobs.num_nodes.astype(np.int64),
        eligible, check, qorder, qpos, porder, np.int64(cluster.num_nodes), np.int64(depth))
    for j in np.flatnonzero(delayed):
        bl = [int(jid[b]) for b in blockers[j] if b >= 0]
        who = (f"delays the reservation of earlier-queued job(s) {bl}" if bl
               else "does not fit in the plan of running jobs and reservations")
        out.append(Violation(
            "reservation_delayed", int(jid[j]), int(start[j]),
            f"job {jid[j]} ({jobs.num_nodes[j]} nodes, limit {jobs.time_limit[j]}) "
            f"started at {start[j]} under {policy}: {who}"))
    for w in np.flatnonzero(could_t >= 0):
        j = could_j[w]
        out.append(Violation(
            "could_start", int(jid[w]), int(could_t[w]),
            f"job {jid[w]} ({jobs.num_nodes[w]} nodes, limit {jobs.time_limit[w]}) fitted at "
            f"{could_t[w]} (when job {jid[j]} started) under {policy} but waited "
            f"until {start[w]}"))


def verify(cluster: Cluster, jobs: JobTable, schedule: Schedule, *, policy: str | None = None,
           reserve_depth: int = 1, dependencies=None, limits=None,
           partitions=None, placement=None) -> VerifyReport:
    """Check ``schedule`` (rows in the order of ``jobs``) on ``cluster``.

    ``policy``: None (resource checks only), ``"fcfs"``, ``"easy"`` (with
    ``reserve_depth`` reservations) or ``"conservative"``. See the module
    docstring for exactly what each check guarantees. Raises InputError for a
    schedule that does not match ``jobs``, UnsupportedError for a policy check
    on a non-homogeneous cluster; rule breaks are returned, not raised (use
    :meth:`VerifyReport.raise_if_failed`).

    ``dependencies`` / ``limits`` / ``partitions`` (see
    :mod:`fastsched.model.constraints`) add the checks of
    :mod:`fastsched.verify_constraints`; policy checks need none of them.
    ``placement`` (:class:`fastsched.model.constraints.Placement`) with
    ``exclusive_topo`` jobs adds the ``exclusive_topo`` check.
    """
    if policy is not None and (limits is not None or dependencies is not None):
        raise UnsupportedError("policy checks assume no limits and no dependencies; "
                               "verify resources and constraints without a policy")
    if policy is not None and policy not in POLICIES:
        raise InputError(f"unknown policy {policy!r}; expected one of {list(POLICIES)}")
    if policy == "easy" and (not isinstance(reserve_depth, (int, np.integer))
                             or reserve_depth < 1):
        raise InputError(f"reserve_depth must be an integer >= 1, got {reserve_depth!r}")
    _check_inputs(cluster, jobs, schedule)
    start = np.ascontiguousarray(schedule.start_time, dtype=np.int64)
    end = np.ascontiguousarray(schedule.end_time, dtype=np.int64)
    out: list[Violation] = []
    checks = ["started", "early_start", "wrong_end", "allocation", "overcommit"]
    explained = _constraint_checks(jobs, start, end, dependencies, limits, out, checks)
    _basic(jobs, start, end, out, explained)
    if partitions is not None:
        from .verify_constraints import ran_partition
        jobs = jobs.take(np.arange(len(jobs)))
        jobs.partition = ran_partition(cluster, jobs, schedule, start, partitions).astype(np.int32)
        checks.append("partition_choices")
    a_job, a_node = _allocation(cluster, jobs, schedule, start, out)
    _overcommit(cluster, jobs, start, end, a_job, a_node, out)
    if placement is not None and placement.levels.shape[0] and placement.exclusive_topo.any():
        from .verify_constraints import check_exclusive_topo
        if placement.levels.shape[1] != cluster.num_nodes:
            raise InputError(f"placement levels cover {placement.levels.shape[1]} nodes, the "
                             f"cluster has {cluster.num_nodes}", field="placement")
        check_exclusive_topo(jobs, start, end, a_job, a_node, placement, Violation, out)
        checks.append("exclusive_topo")
    not_checked = []
    name = f"easy(reserve_depth={reserve_depth})" if policy == "easy" else policy
    if (policy in ("easy", "conservative") and schedule.planning == "nodes"
            and cluster.is_homogeneous()):      # (elsewhere no policy check can run at all)
        not_checked.append(f"{name}: the schedule was planned with concrete-node "
                           "reservations (model 'nodes'); these checks implement the "
                           "counts model")
    elif policy is not None:
        _policy(cluster, jobs, start, end, policy, reserve_depth, out)
        checks.append(name)
    rank = {k: r for r, k in enumerate(VIOLATION_KINDS)}
    out.sort(key=lambda v: (v.time, rank[v.kind], v.job_id))
    return VerifyReport(out, len(jobs), checks, not_checked)


def schedule_from_frame(cluster: Cluster, df) -> Schedule:
    """A :class:`Schedule` from a DataFrame with columns job_id, start_time, end_time
    and nodes (a Slurm hostlist of names in ``cluster.node_names``; "" or missing
    for none). Missing start/end times (NaN, NA or "") become -1. An optional ``planning``
    column (one value: "counts" or "nodes") is :attr:`Schedule.planning`."""
    from .io.hostlist import expand

    for col in ("job_id", "start_time", "end_time", "nodes"):
        if col not in df.columns:
            raise InputError(f"schedule frame needs column {col!r}", field=col)
    index = {nm: k for k, nm in enumerate(cluster.node_names)}

    def times(col):
        v = df[col].to_numpy()
        if v.dtype == object:             # a CSV read as text: "" = never started
            v = np.where(v == "", np.nan, v)
        try:
            f = np.asarray(v, dtype=np.float64)
        except (TypeError, ValueError):
            raise InputError(f"column {col!r} must be numeric", field=col) from None
        f = np.where(np.isnan(f), -1, f)
        if (f != np.round(f)).any():
            row = int(np.flatnonzero(f != np.round(f))[0])
            raise InputError(f"row {row}: {v[row]!r} is not a whole number of seconds", field=col)
        return f.astype(np.int64)

    lists = []
    for row, hl in enumerate(df["nodes"].tolist()):
        if hl is None or (isinstance(hl, float) and np.isnan(hl)) or hl == "":
            lists.append([])
            continue
        try:
            idx = [index[nm] for nm in expand(str(hl))]
        except KeyError as exc:
            raise InputError(f"row {row}: unknown node {exc.args[0]!r} in {hl!r}",
                             field="nodes") from None
        lists.append(idx)
    counts = np.array([len(x) for x in lists], dtype=np.int64)
    offsets = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    flat = np.fromiter((k for x in lists for k in x), dtype=np.int64, count=int(offsets[-1]))
    return Schedule(job_id=df["job_id"].to_numpy().astype(np.int64),
                    start_time=times("start_time"), end_time=times("end_time"),
                    alloc_offsets=offsets, alloc_nodes=flat, planning=_planning(df))


def _planning(df) -> str | None:
    if "planning" not in df.columns or len(df) == 0:
        return None
    values = set(df["planning"].astype(str)) - {"", "nan"}
    if not values:
        return None
    if len(values) != 1 or not values <= {"counts", "nodes"}:
        raise InputError(f"column 'planning' must hold one value, 'counts' or 'nodes'; got "
                         f"{sorted(values)[:3]}", field="planning")
    return values.pop()


def check_frame(cluster: Cluster, jobs: JobTable, df, *, source: str = "schedule",
                policy: str | None = None, reserve_depth: int = 1,
                **constraints) -> VerifyReport:
    """Verify a schedule given as records (e.g. a jobs CSV) against the jobs it schedules.

    ``constraints`` (``dependencies``, ``limits``, ``partitions``) go to :func:`verify`.

    Rows are matched to jobs by ``job_id`` (any order); a job missing from the
    records, or a record of an unknown or repeated job, is an InputError naming
    ``source`` and the CSV line (header = line 1).
    """
    if "job_id" not in df.columns:
        raise InputError("needs a 'job_id' column", file=source, field="job_id")
    try:
        raw = np.asarray(df["job_id"].to_numpy(), dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError("job_id values must be integers", file=source, field="job_id") from None
    if (raw != np.round(raw)).any():
        raise InputError("job_id values must be integers", file=source, field="job_id")
    ids = raw.astype(np.int64)
    position = {int(j): k for k, j in enumerate(jobs.job_id)}
    seen = np.full(len(jobs), -1, dtype=np.int64)
    for row, j in enumerate(ids):
        k = position.get(int(j))
        if k is None:
            raise InputError(f"job {j} is not in the trace", file=source, line=row + 2,
                             field="job_id")
        if seen[k] >= 0:
            raise InputError(f"job {j} appears twice (also line {seen[k] + 2})", file=source,
                             line=row + 2, field="job_id")
        seen[k] = row
    if (seen < 0).any():
        missing = jobs.job_id[seen < 0]
        raise InputError(f"{len(missing)} job(s) of the trace have no record, e.g. job "
                         f"{missing[0]}", file=source, field="job_id")
    ordered = df.iloc[seen].reset_index(drop=True)
    try:
        schedule = schedule_from_frame(cluster, ordered)
    except InputError as e:
        raise InputError(e.reason, file=source, field=e.field) from None
    return verify(cluster, jobs, schedule, policy=policy, reserve_depth=reserve_depth,
                  **constraints)
