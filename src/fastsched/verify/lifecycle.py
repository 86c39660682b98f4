"""Checks of a schedule with node failures: every attempt of every job (the
records of a run with ``down`` events, one per attempt like ``sacct
--duplicates``) against the node events and each job's checkpoints.

What each check GUARANTEES when it passes:

``on_down_node``
    no attempt runs on a node over an instant the node is down (from a ``down``
    event to the next ``up`` or ``resume`` of it; an attempt killed by the failure
    ends at its time), and none starts on a node that is drained or down (with power
    saving: none is allocated one; it holds its nodes from its allocation,
    ``start - configure_time``, while they boot).
``attempt_overlap``
    a job's attempts are numbered 0, 1, ... in time order, every attempt but the
    last was killed (NODE_FAIL), and each starts no earlier than ``delay``
    seconds after the previous one ended (Slurm's requeue begin time): no two
    attempts of a job overlap.
``killed_without_failure``
    a killed attempt ends at the time a node it ran on went down, before it would
    have ended by itself; or, with power saving, at a drain of a node of it while it was
    CONFIGURING (Slurm requeues the jobs of a node drained while powering up: such an
    attempt never ran, its start is its end).
``resumed_work``
    each attempt runs what is left of the job: attempt 0 its runtime, attempt
    a + 1 what attempt a had left minus the progress it had saved (its run rounded
    down to a multiple of the checkpoint interval; nothing without checkpoints):
    the last attempt ends at start + min(that, time limit). An attempt that ran
    less resumed from beyond its last checkpoint. With container images, an
    attempt's image pull (its ``pull_time``) comes first: it runs pull + what it had
    left (capped at its limit), and saves progress only of its run after the pull.

``preempt_exempt`` and ``preemptor`` (given the run's preemption rules): no attempt
was preempted before its PreemptExemptTime, and each preempted one had a job that may
preempt it pending for its nodes (:mod:`fastsched.verify.preemption`).

``time_limit`` (given the jobs' ``time_min``, sbatch ``--time-min``): each attempt
ran with a limit in ``[time_min, asked]`` (without a time minimum: the asked one), the
shapes of an attempt all with its limit, and ``resumed_work`` and the resource checks
hold each attempt to its own limit (a cut one; the next attempt may have another)
(:mod:`fastsched.verify.timemin`).

``bad_resize`` and the work of a shrunk attempt (the shapes of an elastic job):
:mod:`fastsched.verify.elastic`.

``reserved_node`` and ``outside_reservation`` (given the run's advance reservations):
each attempt checked as a job of its own, in its job's reservation
(:mod:`fastsched.verify.reservations`).

Resources (``overcommit``, ``bad_allocation``, ``early_start``) are checked by
:func:`fastsched.verify.verify` over all attempts together, each as a job whose
submit time is its begin time. Policy checks are not made: the plans of a
run with failing nodes cannot be rebuilt from its records without the events.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..model.cluster import Cluster
from ..model.events import NodeEvents
from ..model.jobs import JobTable
from ..model.lifecycle import Lifecycle, saved_progress
from ..model.schedule import Schedule
from .elastic import check_shapes, check_work, collapse, elastic_saved, shapes_of
from .preemption import check_preemptors, first_records
from .timemin import check_attempt_limits
from .report import VerifyReport, Violation

__all__ = ["Attempts", "verify_attempts"]


@dataclass(frozen=True)
class Attempts:
    """Every attempt of a schedule: attempt k of job row ``row[k]`` (in the jobs'
    order), number ``attempt[k]``, ran ``[start[k], end[k])`` (-1: never started) on
    ``alloc_nodes[alloc_offsets[k]:alloc_offsets[k+1]]``; ``killed[k]``: it ended
    NODE_FAIL (or PREEMPTED, then ``preempted[k]``); ``pull[k]``: the seconds it
    pulled its container image first (None: no pulls); ``resized[k]``: it is a shape of
    an elastic attempt that ended RESIZING, the attempt going on in the next record
    (None: none did); ``exempt[k]``: the PreemptExemptTime it had (None: not checked, or
    from the preemption :func:`verify_attempts` is given); ``partition[k]``: the
    partition it ran in (None: unknown; the ``preemptor`` check needs it); ``limit[k]``:
    the time limit it ran with (None: its job's ``time_limit``); ``configure[k]``: the
    seconds it was CONFIGURING before ``start[k]``, its nodes booting (power saving; None:
    none), its allocation being ``start[k] - configure[k]``."""

    row: np.ndarray
    attempt: np.ndarray
    start: np.ndarray
    end: np.ndarray
    killed: np.ndarray
    alloc_offsets: np.ndarray
    alloc_nodes: np.ndarray
    pull: np.ndarray | None = None
    resized: np.ndarray | None = None
    preempted: np.ndarray | None = None
    exempt: np.ndarray | None = None
    partition: np.ndarray | None = None
    limit: np.ndarray | None = None
    configure: np.ndarray | None = None


def verify_attempts(cluster: Cluster, jobs: JobTable, attempts: Attempts,
                    events: NodeEvents | None, lifecycle: Lifecycle, *, preemption=None,
                    partitions=None, time_min=None, asked_limit=None,
                    power=None, advance_reservations=None) -> VerifyReport:
    """Check ``attempts`` of ``jobs`` on ``cluster`` under ``events`` and ``lifecycle``
    (checkpoint intervals, requeue delay); see the module for what each check
    guarantees. ``preemption`` (:class:`fastsched.model.preemption.Preemption`, the
    run's rules; needs ``attempts.partition``) adds ``preempt_exempt`` and the
    ``preemptor`` check (:mod:`fastsched.verify.preemption`), with the jobs' partition
    choices ``partitions`` (None: each job's ``partition``). ``time_min`` (seconds per
    job, 0: none) adds the ``time_limit`` check of each attempt's ``limit`` against it
    and ``asked_limit`` (the limits the jobs asked for; None: ``jobs.time_limit``).
    ``power`` (:class:`fastsched.model.power.PowerSaving`, with ``attempts.configure``)
    adds the power checks of :mod:`fastsched.verify.power` over the attempts, under the
    node events. ``advance_reservations`` adds the reservation checks of
    :mod:`fastsched.verify.reservations` over the attempts, each held to its job's
    reservation."""
    from . import verify
    order = np.lexsort((attempts.start, attempts.attempt, attempts.row))
    n = len(order)
    a = Attempts(*(np.asarray(x)[order] for x in (attempts.row, attempts.attempt,
                                                   attempts.start, attempts.end,
                                                   attempts.killed)),
                 *take_rows(attempts.alloc_offsets, attempts.alloc_nodes, order),
                 pull=np.zeros(n, dtype=np.int64) if attempts.pull is None
                 else np.asarray(attempts.pull, dtype=np.int64)[order],
                 resized=np.zeros(n, dtype=bool) if attempts.resized is None
                 else np.asarray(attempts.resized, dtype=bool)[order],
                 preempted=np.zeros(n, dtype=bool) if attempts.preempted is None
                 else np.asarray(attempts.preempted, dtype=bool)[order],
                 exempt=None if attempts.exempt is None
                 else np.asarray(attempts.exempt, dtype=np.int64)[order],
                 partition=None if attempts.partition is None
                 else np.asarray(attempts.partition, dtype=np.int64)[order],
                 limit=np.asarray(jobs.time_limit, dtype=np.int64)[np.asarray(attempts.row)][order]
                 if attempts.limit is None
                 else np.asarray(attempts.limit, dtype=np.int64)[order],
                 configure=np.zeros(n, dtype=np.int64) if attempts.configure is None
                 else np.asarray(attempts.configure, dtype=np.int64)[order])
    rules = preemption is not None and len(preemption.mode) > 0 and a.partition is not None
    if rules and a.exempt is None:
        a = replace(a, exempt=np.asarray(preemption.exempt, dtype=np.int64)[
            a.partition if preemption.job_class is None else preemption.job_class[a.row]])
    out: list[Violation] = []
    head, tail = collapse(a)
    shapes = shapes_of(a, head, tail, jobs.num_nodes)
    whole = Attempts(a.row[head], a.attempt[head], a.start[head], a.end[tail], a.killed[tail],
                     a.alloc_offsets, a.alloc_nodes, a.pull[head], limit=a.limit[head],
                     configure=a.configure[head], preempted=a.preempted[tail])
    submit, runtime = _sequences(jobs, whole, lifecycle, out, shapes)
    later = np.ones(n, dtype=bool)
    later[head] = False
    failures, backs = _node_states(cluster, jobs, a, events, out, later)
    check_shapes(jobs, a, head, tail, lifecycle, failures, out, backs)
    expanded = jobs.take(a.row)
    group = np.repeat(np.arange(len(head)), tail - head + 1)
    shrunk = np.isin(group, list(shapes))
    expanded.submit_time = np.where(np.arange(n) == head[group], submit[group], a.start)
    expanded.runtime = np.where(shrunk, a.end - a.start, runtime[group])
    expanded.num_nodes = np.where(shrunk, np.diff(a.alloc_offsets),
                                  expanded.num_nodes).astype(expanded.num_nodes.dtype)
    expanded.time_limit = a.limit.astype(expanded.time_limit.dtype)
    # seen from its allocation: it held its nodes while CONFIGURING (verify's power view)
    conf = np.where(a.start >= 0, a.configure, 0)
    expanded.runtime = expanded.runtime + conf
    expanded.time_limit = expanded.time_limit + conf
    schedule = Schedule(job_id=expanded.job_id, start_time=a.start - conf, end_time=a.end,
                        alloc_offsets=a.alloc_offsets, alloc_nodes=a.alloc_nodes)
    base = verify(cluster, expanded, schedule)
    out += base.violations
    if power is not None:
        from ..io.slurmpower import node_boots, power_nodes
        from .power import check_power
        cloud, excluded = power_nodes(cluster, power)
        ran = replace(schedule, start_time=a.start)
        found: list[Violation] = []
        # killed CONFIGURING: never ran (preempted at its allocation: 0 s CONFIGURING)
        check_power(expanded, ran, conf, power, cloud, excluded, Violation, found, backs,
                    a.killed & (a.start == a.end) & ((conf > 0) | a.preempted),
                    boots=node_boots(cluster, power))
        # needless_configure is not judged under events: a boot an attempt killed
        # CONFIGURING waited for may outlast what the records show
        out += [v for v in found if v.kind != "needless_configure"]
        base.checks.extend(["not_booted", "resume_rate"])
    checks = base.checks + ["on_down_node", "attempt_overlap", "killed_without_failure",
                            "resumed_work"] + (["bad_resize"] if lifecycle.elastic or lifecycle.ranged or shapes
                                               or a.resized.any() else [])
    if advance_reservations:
        from .reservations import check_attempt_reservations
        # each run shifted back by its wait for boots (see verify's reserved_node)
        checks += check_attempt_reservations(replace(schedule, end_time=a.end - conf), a.row,
                                             advance_reservations, out)
    if time_min is not None:
        asked = np.asarray(jobs.time_limit if asked_limit is None else asked_limit,
                           dtype=np.int64)
        check_attempt_limits(jobs.job_id[a.row], a.start, a.limit, np.asarray(
            time_min, dtype=np.int64)[a.row], asked[a.row], head, tail, out)
        checks.append("time_limit")
    if a.preempted.any() or a.exempt is not None:
        _preempted(jobs, a, out)
        checks.append("preempt_exempt")
    if rules:
        check_preemptors(cluster, jobs, a, preemption, partitions, lifecycle.delay, out)
        checks.append("preemptor")
    from .report import VIOLATION_KINDS
    rank = {k: r for r, k in enumerate(VIOLATION_KINDS)}
    out.sort(key=lambda v: (v.time, rank[v.kind], v.job_id))
    return VerifyReport(out, len(jobs), checks, [])


def take_rows(offsets, nodes, order):
    """CSR rows ``order`` of (``offsets``, ``nodes``): (new offsets, their nodes)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    counts = np.diff(offsets)[order]
    new = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(counts, out=new[1:])
    index = np.arange(new[-1], dtype=np.int64) + np.repeat(offsets[order] - new[:-1], counts)
    return new, np.asarray(nodes, dtype=np.int64)[index]


def _sequences(jobs, a, lifecycle, out, shapes):
    """Attempt numbering, overlap and resumed work; returns each attempt's begin time
    and its runtime as the resource checks see it (a killed attempt: what it ran;
    else what it had left). ``shapes``: attempt -> (starts, widths) of the shrunk ones."""
    n = len(a.row)
    submit = np.empty(n, dtype=np.int64)
    left = np.empty(n, dtype=np.int64)
    delay = int(lifecycle.delay)
    for k in range(n):
        j = int(a.row[k])
        jid = int(jobs.job_id[j])
        first = k == 0 or a.row[k - 1] != j
        last = k == n - 1 or a.row[k + 1] != j
        if first:
            submit[k], left[k] = jobs.submit_time[j], jobs.runtime[j]
        else:
            submit[k] = a.end[k - 1] + delay
            ran = max(int(a.end[k - 1] - a.start[k - 1] - a.pull[k - 1]), 0)
            interval = int(lifecycle.checkpoint_interval[j])
            left[k] = left[k - 1] - (int(saved_progress(ran, interval)) if k - 1 not in shapes
                                     else elastic_saved(shapes[k - 1], int(a.start[k - 1]),
                                                        int(a.pull[k - 1]), int(a.end[k - 1]),
                                                        interval, int(jobs.num_nodes[j])))
        _order(jid, a, k, first, last, submit, delay, out)
        if k in shapes:
            check_work(jid, int(a.attempt[k]), shapes[k], int(a.start[k]), int(a.end[k]),
                       int(a.pull[k]), int(left[k]), int(a.limit[k]),
                       int(jobs.num_nodes[j]), bool(a.killed[k]), out)
        elif a.start[k] >= 0:
            _work(jid, a, k, int(left[k] + a.pull[k]), int(a.limit[k]),
                  int(jobs.runtime[j]), out)
    ran = np.where(a.start >= 0, a.end - a.start, 0)
    return submit, np.where(a.killed, ran, left + a.pull)


def _order(jid, a, k, first, last, submit, delay, out):
    """Attempt k of job ``jid`` follows the previous one, after the requeue delay."""
    expected = 0 if first else a.attempt[k - 1] + 1
    if a.attempt[k] != expected:
        out.append(Violation("attempt_overlap", jid, int(max(a.start[k], 0)),
                             f"job {jid}: attempt {a.attempt[k]} where attempt {expected} "
                             "was due"))
    if not last and not a.killed[k]:
        out.append(Violation("attempt_overlap", jid, int(a.end[k]),
                             f"job {jid}: attempt {a.attempt[k]} ended {a.end[k]} without a "
                             "node failure, yet the job ran again"))
    if not first and 0 <= a.start[k] < submit[k]:
        out.append(Violation("attempt_overlap", jid, int(a.start[k]),
                             f"job {jid}: attempt {a.attempt[k]} started {a.start[k]}, before "
                             f"{submit[k]} (the previous attempt ended {a.end[k - 1]}, plus "
                             f"the requeue delay {delay} s)"))


def _work(jid, a, k, left, limit, runtime, out):
    """Attempt k ran what it had ``left`` (capped at ``limit``), or less if killed."""
    ran, need = int(a.end[k] - a.start[k]), min(left, limit)
    if a.killed[k]:
        # killed CONFIGURING (preempted at its allocation, its boot not yet begun: 0 s)
        if ran >= need and not (ran == 0 and (a.configure[k] > 0 or a.preempted[k])):
            out.append(Violation("killed_without_failure", jid, int(a.end[k]),
                                 f"job {jid}: attempt {a.attempt[k]} killed after {ran} s, "
                                 f"when it would have ended after {need} s"))
    elif ran != need:
        out.append(Violation("resumed_work", jid, int(a.start[k]),
                             f"job {jid}: attempt {a.attempt[k]} ran {ran} s, but had {need} "
                             f"s left (runtime {runtime} s less the progress its earlier "
                             "attempts checkpointed, plus its image pull" + (", capped at its limit)"
                                                        if need == limit else ")")))


def _preempted(jobs, a, out):
    """A preempted attempt ran at least its PreemptExemptTime (where known), counted
    from Slurm's start time: one stopped CONFIGURING (power saving: it never ran, start
    = end, configure > 0) from its allocation (acct_policy.c
    ``acct_policy_get_preemptable_time`` reads ``start_time``, which job_mgr.c
    ``job_config_fini`` resets only when its nodes are ready)."""
    if a.exempt is None:
        return
    first = first_records(a)        # (a resized attempt: from its first shape's start)
    for k in np.flatnonzero(a.preempted & (a.start >= 0)).tolist():
        booting = a.end[k] == a.start[k] and a.configure[k] > 0
        ran = int(a.end[k] - a.start[first[k]] + (a.configure[k] if booting else 0))
        if ran < a.exempt[k]:
            jid = int(jobs.job_id[a.row[k]])
            out.append(Violation("preempt_exempt", jid, int(a.end[k]),
                                 f"job {jid}: attempt {a.attempt[k]} preempted after {ran} s, "
                                 f"before its PreemptExemptTime of {a.exempt[k]} s"))


def _node_states(cluster, jobs, a, events, out, later):
    """No attempt runs on a down node or is allocated a drained one (its allocation:
    start - configure); a killed attempt ends when one of its nodes goes down, or, killed
    while CONFIGURING (it never ran: start = end, configure > 0), is drained (power
    saving: a drain requeues the jobs of a node powering up). ``later``: a record that
    goes on with its attempt after a resize, not a start. Returns node -> the times it
    went down, and node -> the times it came back (``up`` or ``resume`` while down or
    drained)."""
    X = cluster.num_nodes
    down_at = [[] for _ in range(X)]            # per node: (from, to, kind) intervals
    opened, backs, drains = {}, {}, {}
    for e in range(0 if events is None else len(events)):
        t, kind, nodes = events.at(e)
        for x in nodes.tolist():
            if kind == "drain":
                drains.setdefault(x, set()).add(t)
            if kind in ("down", "drain"):
                if (x, kind) not in opened:
                    opened[(x, kind)] = t
            else:                                # up / resume clear both
                for state in ("down", "drain"):
                    if (x, state) in opened:
                        down_at[x].append((opened.pop((x, state)), t, state))
                        backs.setdefault(x, set()).add(t)
    for (x, state), t in opened.items():
        down_at[x].append((t, np.iinfo(np.int64).max, state))
    failures = {}
    for x in range(X):
        for t0, _, state in down_at[x]:
            if state == "down":
                failures.setdefault(x, set()).add(t0)
    for k in np.flatnonzero(a.start >= 0).tolist():
        jid = int(jobs.job_id[a.row[k]])
        s, e = int(a.start[k] - a.configure[k]), int(a.end[k])
        nodes = a.alloc_nodes[a.alloc_offsets[k]:a.alloc_offsets[k + 1]].tolist()
        for x in nodes:
            if not 0 <= x < X:
                continue
            for t0, t1, state in down_at[x]:
                if (state == "down" and s < t1 and e > t0) or (t0 <= s < t1 and not later[k]):
                    out.append(Violation("on_down_node", jid, max(s, t0),
                                         f"job {jid}: attempt {a.attempt[k]} on "
                                         f"{cluster.node_names[x]} over [{s}, {e}), which was "
                                         f"{state} over [{t0}, {t1})"))
        configuring = a.configure[k] > 0 and a.start[k] == e
        if a.killed[k] and not a.preempted[k] and not any(
                e in failures.get(x, ()) or configuring and e in drains.get(x, ())
                for x in nodes):
            out.append(Violation("killed_without_failure", jid, e,
                                 f"job {jid}: attempt {a.attempt[k]} ended NODE_FAIL at {e}, "
                                 "when none of its nodes went down"))
    return failures, backs

