"""The slow, obviously-correct twin of the fast engine: THE DEFINITION of the semantics.

A machine of ``P`` interchangeable processors (an SWF machine; in fastsched terms
``Cluster.homogeneous(P)``, a job of p processors takes p single-CPU nodes).

* A job's actual end is ``start + min(runtime, limit)`` (runtime > limit: killed
  at its limit). Planning uses ONLY limits: a running job is expected to hold its
  processors over ``[start, start + limit)``. Intervals are half-open.
* Queue order: ``(submit, job_id)`` ascending (or a rank; with dependencies and
  limit groups as :func:`simulate` says).
* Event loop: at each distinct timestamp t (submits and actual ends, increasing):
  first every job whose actual end == t completes, then every job with
  submit == t joins the queue, then ONE scheduling pass at t. If that pass
  started jobs of actual duration 0, they complete at t and another pass runs
  at t; repeat until a pass starts no zero-length job.
* Passes:
  - ``fcfs``: start jobs in queue order while they fit; stop at the first that
    does not (the head is never skipped).
  - ``easy`` (Lifka), reserve_depth=1: start jobs in order while they fit. For
    the first that does not (the head): shadow = earliest expected end of a
    running job at which the head fits, extra = free at shadow - head.procs.
    Each later job starts now iff procs <= free and (now + limit <= shadow or
    procs <= extra); on start free -= procs, and extra -= procs if it runs past
    the shadow.
  - ``easy`` with reserve_depth=k > 1 (and ``easy-profile``, the same for any k,
    a test-only second formulation): availability profile. Each job in order
    starts if it fits now in the profile (running jobs, reservations and jobs
    started in this pass); otherwise, while fewer than k reservations were made
    in this pass, it is reserved at its earliest feasible start; else skipped.
  - ``conservative`` (Mu'alem & Feitelson, replanned every pass): each job in
    order gets the earliest s >= now at which it fits over [s, s + limit) given
    running jobs and earlier jobs' reservations; it starts iff s == now.
* "Fits at s": at every instant of [s, s + limit), used + procs <= P.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NaiveJob:
    job_id: int
    submit: int
    procs: int     # 1 <= procs <= P
    limit: int     # >= 1, what planning uses
    runtime: int   # >= 0, what really happens (capped at limit)
    gpus: int = 0  # per node: what limit groups count (nodes x per-node amounts)
    cpus: int = 0
    mem: int = 0

    def duration(self) -> int:
        return min(self.runtime, self.limit)


def jobs_from_table(table) -> list[NaiveJob]:
    """NaiveJobs from a :class:`fastsched.model.jobs.JobTable` (procs = num_nodes)."""
    return [NaiveJob(int(table.job_id[i]), int(table.submit_time[i]), int(table.num_nodes[i]),
                     int(table.time_limit[i]), int(table.runtime[i]),
                     int(table.gpus_per_node[i]), int(table.cpus_per_node[i]),
                     int(table.mem_per_node[i]))
            for i in range(len(table))]


# ---- the availability profile: a list of (begin, end, procs) half-open intervals ----

def _used_at(t, intervals):
    return sum(p for (b, e, p) in intervals if b <= t < e)


def _fits(s, job, intervals, total):
    """Does ``job`` fit over [s, s + limit)? Usage only rises where an interval
    begins, so checking s and every interval beginning inside the window is enough."""
    instants = [s] + [b for (b, e, p) in intervals if s < b < s + job.limit]
    return all(_used_at(t, intervals) + job.procs <= total for t in instants)


def _earliest_start(now, job, intervals, total):
    """Earliest s >= now where ``job`` fits. The first feasible instant is now or
    an instant where usage drops, i.e. an interval end."""
    for s in sorted({now} | {e for (b, e, p) in intervals if e > now}):
        if _fits(s, job, intervals, total):
            return s
    raise AssertionError("unreachable: after the last end the machine is empty")


def _running_intervals(running):
    return [(start, start + job.limit, job.procs) for job, start in running]


# ---- limits: a job a limit holds when the pass reaches it is passed over ----

def _not_held(job, started):
    return False


def held_by_limits(groups, caps, running, reasons):
    """``held(job, started)`` for a pass: does starting ``job`` exceed a cap of one of
    its limit groups (in the job's order; caps jobs/GPUs/CPUs/MB), counting the
    ``running`` jobs and those ``started`` earlier in the pass? Records the
    (group, cap), or None, in ``reasons[job_id]``."""
    def demand(j):
        return (1, j.procs * j.gpus, j.procs * j.cpus, j.procs * j.mem)

    def held(job, started):
        charged = [j for j, _ in running] + list(started)
        reasons[job.job_id] = None
        for grp in groups.get(job.job_id, []):
            members = [demand(j) for j in charged if grp in groups.get(j.job_id, [])]
            for cap in range(4):
                used = sum(d[cap] for d in members)
                if caps[grp][cap] >= 0 and used + demand(job)[cap] > caps[grp][cap]:
                    reasons[job.job_id] = (grp, cap)
                    return True
        return False
    return held


# ---- one scheduling pass per policy: returns the jobs to start at ``now`` ----

def _fcfs_pass(now, queue, running, total, held=_not_held):
    free = total - sum(job.procs for job, _ in running)
    started = []
    for job in queue:
        if held(job, started):
            continue
        if job.procs > free:
            break
        started.append(job)
        free -= job.procs
    return started


def _shadow_and_extra(head, expected, total):
    """``expected``: (procs, expected_end) of every running job. Walk expected end
    times in increasing order; the first at which the head fits is the shadow."""
    for t in sorted({end for _, end in expected}):
        free_at_t = total - sum(p for p, end in expected if end > t)
        if free_at_t >= head.procs:
            return t, free_at_t - head.procs
    raise AssertionError("unreachable: the head fits on an empty machine")


def _easy_pass(now, queue, running, total, held=_not_held):
    free = total - sum(job.procs for job, _ in running)
    started = []
    head = None
    for k, job in enumerate(queue):
        if held(job, started):
            continue
        if job.procs > free:
            head = job
            break
        started.append(job)
        free -= job.procs
    if head is None:
        return started
    expected = ([(job.procs, start + job.limit) for job, start in running]
                + [(job.procs, now + job.limit) for job in started])
    shadow, extra = _shadow_and_extra(head, expected, total)
    for job in queue[k + 1:]:
        if held(job, started):
            continue
        if job.procs <= free and (now + job.limit <= shadow or job.procs <= extra):
            started.append(job)
            free -= job.procs
            if now + job.limit > shadow:
                extra -= job.procs
    return started


def _profile_pass(now, queue, running, total, max_reservations, held=_not_held):
    intervals = _running_intervals(running)
    started, reservations = [], 0
    for job in queue:
        if held(job, started):
            continue
        if _fits(now, job, intervals, total):
            started.append(job)
            intervals.append((now, now + job.limit, job.procs))
        elif reservations < max_reservations:
            s = _earliest_start(now, job, intervals, total)
            intervals.append((s, s + job.limit, job.procs))
            reservations += 1
    return started


def _conservative_pass(now, queue, running, total, held=_not_held):
    intervals = _running_intervals(running)
    started = []
    for job in queue:
        if held(job, started):
            continue
        s = _earliest_start(now, job, intervals, total)
        intervals.append((s, s + job.limit, job.procs))
        if s == now:
            started.append(job)
    return started


# ---- the event loop ----

AFTER, AFTERANY, AFTEROK, AFTERNOTOK = 0, 1, 2, 3


def dependencies_satisfied(job_id, deps, started, ended, never) -> bool:
    """Are all of ``job_id``'s ``deps`` (lists of (parent id, kind) by job id)
    satisfied, given the parents ``started`` and ``ended`` (id -> COMPLETED)? after:
    the parent started; afterany: it ended; afterok / afternotok: it ended COMPLETED
    / not, else the job can never run (added to ``never``)."""
    ok = True
    for parent, kind in deps.get(job_id, []):
        if kind == AFTER:
            ok = ok and parent in started
        elif parent not in ended:
            ok = False
        elif (kind == AFTEROK and not ended[parent]) or (kind == AFTERNOTOK and ended[parent]):
            never.add(job_id)
            ok = False
    return ok and job_id not in never


def simulate(jobs: list[NaiveJob], procs: int, policy: str, reserve_depth: int = 1, *,
             deps=None, groups=None, caps=None, rank=None, reorder=None, period=None,
             waiting=None) -> dict[int, tuple[int, int]]:
    """Simulate ``jobs`` on ``procs`` processors; returns job_id -> (start, end).

    ``policy``: ``"fcfs"``, ``"easy"`` (reserve_depth reservations; k=1 is
    Lifka's shadow/extra, k>1 the profile), ``"conservative"``, or the test-only
    ``"easy-profile"`` (the profile formulation for any k, including 1).

    Constraints, as tests/naive_nodes.py takes them (keyed by job id): ``deps``
    (list of (parent id, kind)): a job joins the queue once every dependency is
    satisfied (after: the parent started; afterany: it ended; afterok /
    afternotok: it ended COMPLETED (runtime <= limit) / not, else never);
    ``groups`` (limit groups) with ``caps[group]`` = (max jobs, GPUs, CPUs, MB
    running, max submitted; -1 = none): a job over a running cap when a pass
    reaches it is passed over, over the submit cap at arrival it is rejected;
    ``rank`` (queue key, lower first, ties by submit then id), ``reorder(b,
    start, end, eligible) -> {job id: key}`` at the start b of every ``period``
    window that has an instant. After a pass, another runs at the same instant
    while it started a zero-length job or released a dependent. ``waiting``
    (a dict) receives, for each job that never started, "never", (group, cap)
    or "waiting".
    """
    if procs < 1 or reserve_depth < 1:
        raise ValueError("need procs >= 1 and reserve_depth >= 1")
    if len({job.job_id for job in jobs}) != len(jobs):
        raise ValueError("job ids must be unique")
    for job in jobs:
        if not (1 <= job.procs <= procs and job.limit >= 1 and job.runtime >= 0):
            raise ValueError(f"invalid job {job}")
    if policy == "fcfs":
        run_pass = _fcfs_pass
    elif policy == "easy" and reserve_depth == 1:
        run_pass = _easy_pass
    elif policy in ("easy", "easy-profile"):
        def run_pass(now, queue, running, total, held):
            return _profile_pass(now, queue, running, total, reserve_depth, held)
    elif policy == "conservative":
        run_pass = _conservative_pass
    else:
        raise ValueError(f"unknown policy {policy!r}")
    deps, groups, caps, key = deps or {}, groups or {}, caps or [], dict(rank or {})

    future = sorted(jobs, key=lambda job: (job.submit, job.job_id))  # not yet submitted
    arrived, eligible, never, rejected, reasons = [], {}, set(), {}, {}
    running = []   # (job, start)
    result, ended = {}, {}     # ended: job id -> COMPLETED

    def queue_now(now):
        for job in arrived:
            if job.job_id not in eligible and dependencies_satisfied(job.job_id, deps, result,
                                                                    ended, never):
                eligible[job.job_id] = now
        q = [j for j in arrived if j.job_id in eligible and j.job_id not in result]
        return sorted(q, key=lambda j: (key.get(j.job_id, 0), j.submit, j.job_id))

    def end_at(now, which):
        nonlocal running
        for job, _ in running:
            if which(job):
                ended[job.job_id] = job.runtime <= job.limit
        running = [(job, start) for job, start in running if job.job_id not in ended]

    last_window = None
    while future or running:
        now = min([job.submit for job in future[:1]]
                  + [start + job.duration() for job, start in running])
        if reorder is not None and now // period * period != last_window:
            last_window = now // period * period
            key = reorder(last_window, {j: r[0] for j, r in result.items()},
                          {j: r[1] for j, r in result.items()}, dict(eligible))
        end_at(now, lambda job: result[job.job_id][1] == now)
        while future and future[0].submit == now:
            job = future.pop(0)
            in_system = [j for j in arrived if j.job_id not in ended]
            over = [g for g in groups.get(job.job_id, []) if caps[g][4] >= 0 and
                    sum(g in groups.get(j.job_id, []) for j in in_system) + 1 > caps[g][4]]
            if over:
                rejected[job.job_id] = (over[-1], 4)
            else:
                arrived.append(job)
        while True:
            queue = queue_now(now)
            held = held_by_limits(groups, caps, running, reasons)
            started = run_pass(now, queue, running, procs, held)
            for job in started:
                running.append((job, now))
                result[job.job_id] = (now, now + job.duration())
            zero_ids = {job.job_id for job in started if job.duration() == 0}
            end_at(now, lambda job: job.job_id in zero_ids)
            released = len(queue_now(now)) > len(queue) - len(started)
            if not zero_ids and not released:
                break
    if waiting is not None:
        for job in jobs:
            if job.job_id not in result:
                waiting[job.job_id] = rejected.get(job.job_id) or (
                    "never" if job.job_id in never else reasons.get(job.job_id) or "waiting")
    return result


# ---- the policy checks of fastsched.verify (counts model), restated (twin of its sweep) ----
#
# What fastsched.verify's module docstring promises, written as directly as
# possible: no sweep, no incremental profile; every instant is rebuilt from
# scratch out of the schedule. Only the job counts matter (num_nodes = procs).

POLICY_KINDS = ("fcfs_order", "reservation_delayed", "could_start")


def _window(job):
    """The job as the checks see it when asking "does it fit?": a job needs its
    nodes at the instant it starts, so a window is never shorter than 1."""
    return NaiveJob(job.job_id, job.submit, job.procs, max(job.limit, 1), job.runtime)


def check_policy(jobs: list[NaiveJob], schedule: dict[int, tuple[int, int]], procs: int,
                 policy: str, reserve_depth: int = 1) -> list[tuple[str, int]]:
    """The policy violations fastsched.verify must report for ``schedule``
    (job_id -> (start, end), -1 for a job that never started) on ``procs``
    interchangeable nodes, as sorted (kind, job_id) pairs.

    * Jobs that never started or started before their submit are left out:
      they are neither judged nor ever waiting (they may still be running).
    * ``fcfs``: a judged job j violates ``fcfs_order`` if an earlier-queued,
      judged job started later than j.
    * ``easy`` / ``conservative``: for each judged job j, at t = start(j),
      unless some started job of zero length (end <= start) started at t:
      the plan = every started job with start < t < end, and every started
      job with start == t, earlier in queue order than j and end > start, each
      over [start, start + limit). The first ``reserve_depth`` (easy) / all
      (conservative) earlier-queued judged jobs with submit <= t < start are
      reserved, in queue order, at their earliest fitting s >= t (added to the
      plan over [s, s + limit)); one reserved at t is ``could_start``. Then j
      must fit over [t, t + limit) in the plan, else ``reservation_delayed``.
    """
    if policy not in ("fcfs", "easy", "conservative"):
        raise ValueError(f"unknown policy {policy!r}")
    queue = sorted(jobs, key=lambda job: (job.submit, job.job_id))
    start = {job.job_id: schedule[job.job_id][0] for job in jobs}
    end = {job.job_id: schedule[job.job_id][1] for job in jobs}
    started = [job for job in queue if start[job.job_id] >= 0]
    judged = [job for job in started if start[job.job_id] >= job.submit]
    found = set()

    if policy == "fcfs":
        for k, j in enumerate(judged):
            if any(start[i.job_id] > start[j.job_id] for i in judged[:k]):
                found.add(("fcfs_order", j.job_id))
        return sorted(found)

    depth = len(jobs) if policy == "conservative" else reserve_depth
    zero_instants = {start[job.job_id] for job in started if end[job.job_id] <= start[job.job_id]}
    for j in judged:
        t = start[j.job_id]
        if t in zero_instants:
            continue
        before_j = queue[:queue.index(j)]
        plan = []
        for i in started:
            s, e = start[i.job_id], end[i.job_id]
            running = s < t < e
            placed_before_j = s == t and i in before_j and e > s
            if running or placed_before_j:
                plan.append((s, s + i.limit, i.procs))
        waiting = [w for w in before_j if w in judged and w.submit <= t < start[w.job_id]]
        for w in waiting[:depth]:
            if w.procs > procs:
                continue                     # never fits: no reservation
            s = _earliest_start(t, _window(w), plan, procs)
            if s == t:
                found.add(("could_start", w.job_id))
            plan.append((s, s + w.limit, w.procs))
        if not _fits(t, _window(j), plan, procs):
            found.add(("reservation_delayed", j.job_id))
    return sorted(found)


# ---- per-job records: one hostlist per job, one job at a time ----

def hostlists(names, offsets, nodes) -> list[str]:
    """Each job's nodes as a Slurm hostlist: ``hostlist.compress`` job by job (what
    ``fastsched.io.hostlist.compress_rows`` computes for all jobs at once)."""
    from fastsched.io.hostlist import compress
    return [compress([names[k] for k in nodes[offsets[i]:offsets[i + 1]]])
            for i in range(len(offsets) - 1)]


def gpu_id_lists(names, offsets, nodes, masks) -> list[str]:
    """Each job's GPUs, ``results.format_gpu_ids`` job by job (``gpu_id_rows`` at once)."""
    from fastsched.sim.results import format_gpu_ids
    if masks is None:
        return [""] * (len(offsets) - 1)
    return [format_gpu_ids(names, nodes[offsets[i]:offsets[i + 1]],
                           masks[offsets[i]:offsets[i + 1]]) for i in range(len(offsets) - 1)]


# ---- the completion heap (engine/heap.py): the order its pops give ----

def heap_pops_after_drop(pairs, drop) -> list[tuple[int, int]]:
    """The (key, value) pairs a heap of ``pairs`` pops after the values ``drop`` left
    it: every other pair, by key, ties by value."""
    return sorted((k, v) for k, v in pairs if v not in set(drop))
