"""An independent checker of any schedule (ours, another simulator's, a real log).

:func:`verify` imports nothing of fastsched's schedulers or simulator (no Numba), only the
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
    start times are non-decreasing in queue order (``(submit_time, job_id)``;
    nodes model: ``priority`` first when given): no job started while an
    earlier-queued job was still waiting.
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
* counts-model checks count nodes only (a job needs ``num_nodes`` whole
  nodes), so they need ``cluster.is_homogeneous()``; jobs that never started and jobs that
  started before their submit are reported by the basic checks and left out of
  the policy checks (they neither wait in nor are judged by them).
* a job whose start overcommits the machine together with the jobs already
  running is reported as ``overcommit`` only: no plan exists at that instant,
  so neither it nor the waiting jobs are judged there.
* the reservation checks above rebuild plans in the *counts* model (a
  reservation holds a number of interchangeable nodes, as in the textbook
  algorithms: :mod:`.counts_policy`). A schedule planned with concrete-node
  reservations (``schedule.planning == "nodes"``: fastsched's node engine)
  follows other rules (a reservation pins its nodes, so a job may wait where
  the counts model would start it) and is judged by the *nodes* model instead
  (:mod:`.nodes_policy`, which defines its ``reservation_delayed`` and
  ``could_start``; it needs no homogeneous cluster). ``reservations=``
  overrides the model the schedule names; a schedule naming none is judged by
  the counts model.

The package: :mod:`.report` (what is returned), :mod:`.resources` (the checks
every schedule gets), :mod:`.constraints` (dependencies, limits, partitions,
topology), :mod:`.counts_policy` and :mod:`.nodes_policy`, :mod:`.frames`
(schedules given as records).
"""
from __future__ import annotations

import numpy as np

from ..model.cluster import Cluster
from ..model.errors import InputError, UnsupportedError
from ..model.jobs import JobTable
from ..model.policies import get_policy
from ..model.schedule import Schedule
from . import constraints as vc
from . import counts_policy, nodes_policy
from .frames import check_frame, schedule_from_frame
from .power import allocation_view, check_power
from ..io.slurmpower import node_boots, power_nodes
from .report import POLICIES, VIOLATION_KINDS, ScheduleError, VerifyReport, Violation
from .reservations import check_reservations, pending_explained
from .resources import allocation, basic, check_inputs, overcommit

__all__ = ["Violation", "VerifyReport", "ScheduleError", "verify", "schedule_from_frame",
           "check_frame", "VIOLATION_KINDS", "POLICIES", "RESERVATION_MODELS",
           "NODE_CHECK_LIMIT"]

#: the reservation models a policy check can judge by
RESERVATION_MODELS = ("counts", "nodes")
#: the most work (:func:`.nodes_policy.work_estimate`, in plan cells) the
#: nodes-model check takes unasked: a few minutes (KTH-SP2 conservative, 1.1e10:
#: 1.5 minutes); above it the policy is listed as not checked, saying so
NODE_CHECK_LIMIT = 20_000_000_000


def verify(cluster: Cluster, jobs: JobTable, schedule: Schedule, *, policy: str | None = None,
           reserve_depth: int = 1, dependencies=None, limits=None, partitions=None,
           placement=None, reservations: str | None = None, priority=None,
           node_check_limit: int | None = NODE_CHECK_LIMIT,
           advance_reservations=None, power=None, configure=None, time_min=None,
           asked_limit=None) -> VerifyReport:
    """Check ``schedule`` (rows in the order of ``jobs``) on ``cluster``.

    ``policy``: None (resource checks only), ``"fcfs"``, ``"easy"`` (with
    ``reserve_depth`` reservations) or ``"conservative"``. See the module
    docstring for exactly what each check guarantees. Raises InputError for a
    schedule that does not match ``jobs``, UnsupportedError for a counts-model
    policy check on a non-homogeneous cluster; rule breaks are returned, not
    raised (use :meth:`VerifyReport.raise_if_failed`).

    ``reservations``: the model easy/conservative are judged by, ``"counts"``
    or ``"nodes"`` (None: ``schedule.planning``, else counts). ``priority``
    (per job, higher first; NaN: none) is the queue order of the nodes model;
    ``node_check_limit`` caps its work (None: no cap).

    ``dependencies`` / ``limits`` / ``partitions`` (see
    :mod:`fastsched.model.constraints`) add the checks of :mod:`.constraints`;
    policy checks need none of them. ``placement``
    (:class:`fastsched.model.constraints.Placement`) with ``exclusive_topo`` jobs
    adds the ``exclusive_topo`` check. ``advance_reservations``
    (:class:`fastsched.model.reservations.Reservations`) adds ``reserved_node``: no job
    runs on a reserved node while one of its windows is open (the policy checks do not
    model reservations, so they are then skipped; with ``power``, a job's run shifted back
    by its wait for boots: a start is held off the windows from its allocation); a
    :class:`fastsched.model.resvjobs.JobReservations` with member jobs adds
    ``outside_reservation`` (each ran only on its reservation's nodes, inside one of its
    windows) and lets them run on its nodes.

    ``power`` (:class:`fastsched.model.power.PowerSaving`) with ``configure`` (seconds
    per job it waited CONFIGURING for boots: records' ``configure_time``): every other
    check sees each job from its allocation (start - configure, holding its nodes
    configure seconds longer once running: a pass plans a job with its limit, and its
    wait for boots is known after the pass that started it), and :mod:`.power` adds
    ``not_booted``, ``needless_configure`` and ``resume_rate``.

    ``time_min`` (seconds per job, 0: none; sbatch ``--time-min``) with ``asked_limit``
    (the limits the jobs asked for; ``jobs`` has those they ran with, the records'
    ``time_limit``) adds ``time_limit`` (:mod:`.timemin`): each started job ran with a
    limit in [time_min, asked] (without a time_min: the asked one). The policy checks do
    not model a cut limit, so they are then skipped.
    """
    model = _check_arguments(schedule, policy, reserve_depth, dependencies, limits,
                             reservations)
    check_inputs(cluster, jobs, schedule)
    booted = plan_limit = None
    if power is not None:       # every check below sees each job from its allocation
        booted, plan_limit = schedule, jobs.time_limit
        jobs, schedule = allocation_view(jobs, schedule, _configure(configure, len(jobs)))
    start = np.ascontiguousarray(schedule.start_time, dtype=np.int64)
    end = np.ascontiguousarray(schedule.end_time, dtype=np.int64)
    out: list[Violation] = []
    checks = ["started", "early_start", "wrong_end", "allocation", "overcommit"]
    explained = _constraint_checks(jobs, start, end, dependencies, limits, out, checks)
    if advance_reservations:
        explained |= pending_explained(jobs, start, end, advance_reservations)
    basic(jobs, start, end, out, explained)
    if partitions is not None:
        jobs = jobs.take(np.arange(len(jobs)))
        jobs.partition = vc.ran_partition(cluster, jobs, schedule, start,
                                          partitions).astype(np.int32)
        checks.append("partition_choices")
    a_job, a_node = allocation(cluster, jobs, schedule, start, out)
    if power is not None:
        cloud, excluded = power_nodes(cluster, power)
        check_power(jobs, booted, configure, power, cloud, excluded, Violation, out,
                    boots=node_boots(cluster, power))
        checks += ["not_booted", "needless_configure", "resume_rate", "suspend_rate"]
    overcommit(cluster, jobs, start, end, a_job, a_node, out)
    if placement is not None and placement.levels.shape[0] and placement.exclusive_topo.any():
        if placement.levels.shape[1] != cluster.num_nodes:
            raise InputError(f"placement levels cover {placement.levels.shape[1]} nodes, the "
                             f"cluster has {cluster.num_nodes}", field="placement")
        vc.check_exclusive_topo(jobs, start, end, a_job, a_node, placement, Violation, out)
        checks.append("exclusive_topo")
    if advance_reservations:
        # a start is tested against the windows from its allocation (Slurm's
        # job_test_resv counts no boot): its run, shifted back by its wait for boots
        held = end if power is None else np.where(start >= 0, end - (booted.start_time
                                                                     - start), end)
        checks += check_reservations(schedule, start, held, advance_reservations, out)
    if time_min is not None:
        from .timemin import check_time_limits
        # the limits the jobs ran with, not the allocation view's (lengthened by boots)
        ran = jobs.time_limit if plan_limit is None else plan_limit
        check_time_limits(jobs.job_id, start, ran, time_min,
                          ran if asked_limit is None else asked_limit, out)
        checks.append("time_limit")
    not_checked = []
    if policy is not None and time_min is not None:
        not_checked.append(f"{policy}: --time-min limits are not modelled by the policy "
                           "checks")
        policy = None
    if policy is not None and advance_reservations:
        not_checked.append(f"{policy}: advance reservations are not modelled by the policy "
                           "checks")
        policy = None
    if policy is not None:
        name = f"easy(reserve_depth={reserve_depth})" if policy == "easy" else policy
        name += f" ({model} model)"
        topology = placement is not None and placement.levels.shape[0] > 0
        if model == "nodes" and (partitions is not None or topology):
            # a job planned in several partitions, or placed by topology rules,
            # may wait or be reserved where this plan would start it
            skipped = ": partition choices and topology placement are not modelled"
        else:
            skipped = _policy(cluster, jobs, schedule, start, end, policy, reserve_depth,
                              model, priority, node_check_limit, out, plan_limit)
        (not_checked if skipped else checks).append(name + skipped)
    rank = {k: r for r, k in enumerate(VIOLATION_KINDS)}
    out.sort(key=lambda v: (v.time, rank[v.kind], v.job_id))
    return VerifyReport(out, len(jobs), checks, not_checked)


def _configure(configure, n: int) -> np.ndarray:
    if configure is None or len(configure) != n:
        raise InputError("power checks need configure_time per job (the records' "
                         "configure_time column)", field="configure_time")
    return np.asarray(configure, dtype=np.int64)


def _check_arguments(schedule, policy, reserve_depth, dependencies, limits, reservations):
    """Refuses a bad argument; returns the reservation model of the policy check."""
    if policy is not None and (limits is not None or dependencies is not None):
        raise UnsupportedError("policy checks assume no limits and no dependencies; "
                               "verify resources and constraints without a policy")
    if policy is not None and policy not in POLICIES:
        raise InputError(f"unknown policy {policy!r}; expected one of {list(POLICIES)}")
    if policy == "easy" and (not isinstance(reserve_depth, (int, np.integer))
                             or reserve_depth < 1):
        raise InputError(f"reserve_depth must be an integer >= 1, got {reserve_depth!r}")
    if reservations is not None and reservations not in RESERVATION_MODELS:
        raise InputError(f"unknown reservation model {reservations!r}; expected one of "
                         f"{list(RESERVATION_MODELS)}", field="reservations")
    model = reservations or schedule.planning or "counts"
    if policy is not None and model == "slurm":
        raise UnsupportedError("no policy check for Slurm's backfill (reservations='slurm'): "
                               "verify resources with policy=None, or compare plans with "
                               "fastsched compare-plan")
    return model


def _constraint_checks(jobs, start, end, dependencies, limits, out, checks):
    """Dependency and limit checks; per job, True when never starting is explained."""
    explained = np.zeros(len(jobs), dtype=bool)
    if dependencies is not None:
        explained |= vc.check_dependencies(jobs, start, end, dependencies, Violation, out)
        checks.append("dependencies")
    if limits is not None:
        explained |= vc.check_limits(jobs, start, end, limits, Violation, out)
        checks.append("limits")
    return explained


def _policy(cluster, jobs, schedule, start, end, policy, reserve_depth, model, priority,
            node_check_limit, out, plan_limit=None) -> str:
    """Runs the policy check in ``model``; returns "" or why it was not run."""
    eligible = start >= 0
    check = eligible & (start >= jobs.submit_time)
    if priority is not None and np.isnan(np.asarray(priority, np.float64)).all():
        priority = None
    qorder = counts_policy.queue_order(jobs, priority)
    policy = get_policy(policy)          # the numbers it is defined by, not its name
    if policy.stop_at_head and (priority is None or model == "counts"):
        counts_policy.check_fcfs(jobs, start, eligible, check, qorder, out,
                                 priority=priority is not None)
        if model == "counts":
            return ""
    elif model == "counts":
        counts_policy.check_reservations(cluster, jobs, start, end, policy, reserve_depth,
                                         eligible, check, qorder, out)
        return ""
    if node_check_limit is not None:
        work = nodes_policy.work_estimate(cluster, jobs, start, end, policy, eligible, check,
                                          qorder)
        if work > node_check_limit:
            return (f": the nodes-model check would compute about {work:.2g} cells, over "
                    f"the limit {node_check_limit:.2g} (node_check_limit=None, or check "
                    f"--node-check-limit 0, lifts it)")
    nodes_policy.check(cluster, jobs, schedule, start, end, policy, reserve_depth, eligible,
                       check, qorder, out, report_order=priority is not None,
                       plan_limit=plan_limit)
    return ""
