"""The simulator: replay a workload on a cluster under a policy.

The event loop itself (completions, then arrivals, then one pass, again while
zero-length jobs end at the same instant) runs in compiled code; this module
validates the input once, picks the engine, calls it, and packages the result.

Two engines, one semantics of events and policies:

* ``pool``: a single pool of identical nodes and whole-node jobs (every SWF
  trace). Plans count free nodes, so it reduces exactly to the textbook
  algorithms (Cython, ``kernels/_kernels.pyx``; see docs/semantics.md).
* ``nodes``: anything else (heterogeneous nodes, overlapping partitions,
  1-GPU jobs, unavailable nodes). Plans hold concrete nodes and GPU counts
  (Numba, ``fastsched.engine``; see docs/gpu-semantics.md).
"""
from __future__ import annotations

import time
from functools import partial

import numpy as np

from ..model.cluster import Cluster
from ..model.errors import InputError, UnsupportedError
from ..model.jobs import JobTable
from ..model.policies import (RESERVATION_MODELS, check_reservations, check_reserve_depth,
                              get_policy)
from .results import BSLD_TAU, SimulationResult, summarize
from ..model.constraints import Dependencies, LimitGroups, PartitionChoices, check_covers
from ..model.events import NodeEvents
from ..model.images import Containers
from ..model.lifecycle import Lifecycle
from ..model.reservations import Reservations
from ..model.timemin import check_time_min, with_limits
from ..model.resvjobs import members_of
from .resvlayout import (flex_used, layout_run, mapped_back, ran_in, refuse_with_members,
                         window_horizon as _horizon)
from .images import check_containers, engine_images, images_summary, pull_workload
from .power import check_power, down_cloud, engine_power, power_summary
from .lifecycle import (attempt_table, attempt_timeouts, has_failures, lifecycle_summary,
                        run_events)
from .preemption import check_preemption, check_preemption_run, preemption_summary, tier_order
from ..engine.counts import CountsLoop, run_counts
from ..engine.inputs import check_node_jobs, ever_available
from .progress import run_bar
from ..model.schedule import Schedule
from ..model.validation import check_jobs, counts_model_refuses
from .warmup import warm_up

#: The choices that make simulators' numbers comparable (or not); every result records them.
SEMANTICS = {
    "event_order": "at one timestamp: completions, then arrivals, then one pass "
                   "(repeated while zero-length jobs end at that timestamp)",
    "queue_order": "submit_time asc, job_id asc",
    "planning": "requested time limits only, never actual runtimes",
    "replanning": "the whole queue is re-planned from scratch at every pass",
    "runtime_over_limit": "killed at its limit (state TIMEOUT)",
    "bounded_slowdown_tau": BSLD_TAU,
}

#: what differs between the engines, recorded as summary["semantics"]["allocation"]
ALLOCATION = {
    "pool": "whole nodes of one pool; plans count free nodes (textbook EASY: Lifka's "
            "shadow time and extra nodes); a starting job takes the lowest-numbered free nodes",
    "nodes": "GPUs, CPUs and memory per node; a starting job takes best-fit nodes and their "
             "lowest free GPU indices; reservations hold concrete nodes, preferring nodes "
             "that free up closest before the reserved start",
    "slurm": "Slurm 22.05's backfill cycle at every event: whole nodes reserved for "
             "future jobs, cons_tres's best fit over consecutive nodes; a starting job "
             "takes its nodes' lowest free GPU indices",
}


def simulate(cluster: Cluster, jobs: JobTable, policy: str = "easy", *,
             reserve_depth: int = 1, progress: bool | None = False,
             skipped: list | None = None, partitions: PartitionChoices | None = None,
             dependencies: Dependencies | None = None, limits: LimitGroups | None = None,
             priority=None, period: int | None = None, resolution: int = 1,
             window: int | None = None, placement=None, checkpoints=None,
             resume=None, reservations: str | None = None,
             events: NodeEvents | None = None, failures=None,
             lifecycle: Lifecycle | None = None,
             advance_reservations: Reservations | None = None,
             containers: Containers | None = None,
             power=None, preemption=None, time_min=None) -> SimulationResult:
    """Replay ``jobs`` on ``cluster`` under ``policy`` ("fcfs", "easy", "conservative").

    ``reserve_depth`` is the number of blocked jobs EASY gives reservations to
    (1 = Lifka's EASY). ``progress`` shows a progress bar with the jobs
    finished, the simulated time and an ETA (None: only when stderr is a
    terminal and the run lasts over a second). Ctrl-C (or SIGTERM under the
    CLI) stops the run within a fraction of a second and raises
    :class:`fastsched.engine.interrupt.Interrupted` (a KeyboardInterrupt) saying the
    simulated time and jobs finished: no partial result. ``skipped`` (e.g.
    from the trace reader) is carried into the result and counted in its
    summary.

    Constraints (see :mod:`fastsched.model.constraints`): ``partitions`` (a job
    runs in whichever of its partitions lets it start first),
    ``dependencies``, ``limits`` (QOS/association caps, array throttles).
    ``priority``: the queue order, higher first (ties: submit time, then job
    id) — an array per job, or ``priority(now, progress) -> array`` recomputed
    at the start of every ``period`` seconds of simulated time (Slurm's
    PriorityCalcPeriod); each record carries the priority its job started with.
    ``resolution`` / ``window``: plan on a coarser time grid / only so far
    ahead (Slurm's bf_resolution / bf_window; node engine; see
    :func:`fastsched.engine.run_nodes`). ``placement``: topology-aware node
    choice (--switches, --segment) and NVLink/socket GPU groups
    (:class:`fastsched.model.constraints.Placement`); the summary then reports how
    many leaf groups each multi-node job spans.

    ``reservations``: the reservation model. ``"counts"`` plans with counts of free
    nodes, the textbook algorithms (one pool of identical nodes, whole-node jobs:
    every SWF trace; the counted-pool engine, which takes priorities, dependencies
    and limits with the nodes model's rules, but not ``partitions``,
    ``placement``, ``resolution`` or ``window``); ``"nodes"`` holds reservations on
    concrete nodes with GPU counts (any cluster, every option; the node engine;
    docs/gpu-semantics.md). None: ``"counts"`` where it can plan the run, else
    ``"nodes"``; ``"slurm"`` runs one Slurm 22.05 backfill cycle at every event
    (:mod:`fastsched.sim.slurmsim`, docs/slurm-model.md: whole nodes reserved for
    future jobs; policy "conservative"; a priority array at most; ``resolution`` /
    ``window`` default to slurm.conf's bf_resolution / bf_window, else 60 s / 1 day;
    no other option). ``summary["reservations"]`` records the model (and
    ``summary["engine"]`` its engine). Raises InputError naming the first job that
    can never run on this cluster.

    ``events`` (:class:`fastsched.model.events.NodeEvents`, e.g. from
    :func:`fastsched.io.events.read_node_events`): nodes drained (no new job; running
    ones go on), resumed, down (failed: their running jobs are killed) and up during
    the run, each applied before the instant at its time (nodes model).
    ``failures`` (:class:`fastsched.model.failures.FailureModel`): add the down/up
    events of a seeded failure model. ``lifecycle``
    (:class:`fastsched.model.lifecycle.Lifecycle`): what a killed job does (default:
    every job is requeued after Slurm's delay, without checkpoints). A killed job
    that is requeued runs again from its last checkpoint; every attempt is its own
    record (``result.jobs``, column ``attempt``) and ``summary["lifecycle"]`` has
    the lost GPU-hours, checkpoint overhead and goodput.

    ``advance_reservations`` (:class:`fastsched.model.reservations.Reservations`, e.g.
    from :func:`fastsched.io.reservations.read_reservations`): nodes set aside over time
    windows (maintenance); no job runs on them then, and backfill plans no job across
    them (nodes model). Repeating ones (DAILY, WEEKLY) repeat up to the last
    submission plus the longest time limit. A
    :class:`fastsched.model.resvjobs.JobReservations` also says which jobs run in a
    reservation (``--reservation``): those run only on its nodes, inside its windows
    (:mod:`fastsched.sim.resvlayout`); one that no window can take stays pending.
    Member jobs run with ``containers`` (a twin uses its node's image cache), topology
    ``placement`` and ``--no-kill`` jobs that shrink; not with power saving, preemption,
    node ranges or regrowth (UnsupportedError naming it).

    ``containers`` (:class:`fastsched.model.images.Containers`): each job's container
    image (pyxis ``--container-image``) and the pull model (seconds per image, images
    a node caches, least recently used evicted). A job starting on nodes where any
    lacks its image pulls it first: it runs pull + runtime, capped by its limit
    (TIMEOUT past it). Records get column ``pull_time`` and the summary ``images``
    (nodes model; docs/lifecycle.md).

    ``power`` (:class:`fastsched.model.power.PowerSaving`, or its ``--power`` text, e.g.
    ``"boot=5m,cost=3.2,cloud-cost=6"``, over the cluster's slurm.conf keys SuspendTime,
    ResumeRate, ... and State=CLOUD nodes): Slurm's power saving. Idle nodes power down
    after SuspendTime, CLOUD nodes start powered down; a job given powered-down nodes is
    CONFIGURING while they boot, and its start (hence its end) is reset to when they are
    ready. Records get column ``configure_time`` and the summary ``power`` (node-hours
    powered, power-ups, cost vs wait; nodes model; docs/lifecycle.md).
    ``preemption`` (:class:`fastsched.model.preemption.Preemption`, e.g.
    :func:`fastsched.sim.preemption.site_preemption` of a slurm.conf's PreemptType):
    a queued job that can start only by stopping running jobs it may preempt stops
    them (REQUEUE: requeued from their last checkpoint, as after a node failure;
    CANCEL: they end PREEMPTED); records per attempt and ``summary["preemption"]``
    (nodes model; docs/lifecycle.md). A ``--no-kill`` job a failure shrank, or a node
    range started narrow, is preempted whole on the nodes it holds; a node range
    preempts until its MIN nodes fit; ``--regrow`` with preemption is refused.
    ``preempt/none`` changes nothing.
    ``time_min`` (seconds per job, 0: none; sbatch ``--time-min``, at most the job's
    limit): Slurm's backfill rule (:mod:`fastsched.engine.timemin`): a job that cannot
    start now with its limit starts with a shorter one, at least its time minimum,
    when that fits before the next hold on its nodes; past it, TIMEOUT. The result's
    ``workload`` and records hold the limits the jobs ran with, ``asked_limit`` those
    asked for; with node failures an attempt killed is requeued asking for its own
    limit again, and each attempt's record holds the limit it ran with (nodes model;
    with ``preemption`` a cut start on free resources comes before a preemption, which
    is for the job's own limit; not with topology placement or jobs in a FLEX
    reservation; docs/lifecycle.md).

    ``checkpoints`` (:class:`fastsched.sim.checkpoint.Checkpoints`) saves the
    event loop's state now and then; ``resume`` (a state from such a file) goes on
    from it: the result is identical to an uninterrupted run's.
    """
    wall = time.perf_counter()
    time_min = _time_min(time_min, jobs)
    events = run_events(cluster, jobs, events, failures)
    if lifecycle is not None and len(lifecycle) != len(jobs):
        raise InputError(f"lifecycle covers {len(lifecycle)} jobs, the table has {len(jobs)}",
                         field="lifecycle")
    check_containers(containers, jobs)
    power = check_power(power, cluster, events=events, placement=placement,
                        advance_reservations=advance_reservations, lifecycle=lifecycle)
    if preemption is not None and not preemption.active:
        preemption = None               # preempt/none, or nothing may preempt: unchanged
    if preemption is not None:
        check_preemption(preemption, jobs, placement)
        check_preemption_run(lifecycle)
        if priority is None:        # Slurm's queue is PriorityTier-major: a preemptor first
            priority = tier_order(cluster, jobs)
    # with power saving a drain kills the jobs of a booting node
    if lifecycle is None and (has_failures(events) or preemption is not None
                              or power is not None and events is not None):
        lifecycle = Lifecycle.of(len(jobs))
    spec = get_policy(policy)
    reserve_depth = check_reserve_depth(reserve_depth)
    check_covers(len(jobs), partitions=partitions, dependencies=dependencies, limits=limits)
    nodes_only = [name for name, value in (
        ("partitions", partitions), ("window", window), ("placement", placement),
        ("resolution", None if resolution == 1 else resolution), ("events", events),
        ("lifecycle", lifecycle), ("containers", containers), ("power", power),
        ("preemption", preemption), ("time_min", time_min),
        ("advance_reservations", advance_reservations if advance_reservations else None))
        if value is not None]
    if events is not None:
        events.check_modelled()
        if placement is not None and placement.exclusive_topo.any():
            raise UnsupportedError("node events with --exclusive=topo jobs are not modelled "
                                   "yet")
    model, choices = reservation_model(cluster, jobs, reservations, nodes_only, partitions,
                                       events)
    members = members_of(advance_reservations)
    if members is not None:
        members.check_jobs(len(jobs))
        refuse_with_members(power=power, preemption=preemption,
                            node_ranges=lifecycle if lifecycle is not None and lifecycle.ranged
                            else None, regrow=lifecycle if lifecycle is not None and
                            lifecycle.regrow else None)
        if time_min is not None and flex_used(members):
            raise UnsupportedError("time_min with jobs running in a FLEX reservation is not "
                                   "modelled")
    engine = RESERVATION_MODELS[model]
    if model == "slurm":
        _check_slurm_run(spec.name, priority, dependencies, limits, checkpoints, resume)
    if resume is not None and isinstance(resume["loop"], CountsLoop) != (model == "counts"):
        raise InputError(f"the checkpoint was saved by a run of the other reservation model; "
                         f"this run plans with the {model} model", field="resume")
    # compiled (or loaded from the cache) before the progress bar shows, and timed apart
    compile_seconds = warm_up(announce=progress) if engine == "nodes" else 0.0
    bar = run_bar(len(jobs), progress)
    constraints = {"dependencies": dependencies, "limits": limits, "tick": bar,
                   "checkpoints": checkpoints, "resume": resume}
    if engine == "slurm":
        constraints = {"tick": bar, "resolution": None if resolution == 1 else resolution,
                       "window": window}
    if engine == "nodes":
        constraints.update(partitions=choices, resolution=resolution, window=window,
                           placement=placement, events=events, lifecycle=lifecycle,
                           blocked=_blocked(advance_reservations, jobs), checked=True,
                           time_min=time_min)
        layout = None if members is None else layout_run(   # on the twin nodes
            cluster, members, constraints, _horizon(jobs), jobs)
        if preemption is not None:
            from ..engine.preempt import Preemptor
            constraints["preemption"] = partial(Preemptor, preemption)
        if containers is not None:
            constraints["images"] = engine_images(   # a twin shares its node's cache
                containers, None if layout is None else layout.node_of)
        if power is not None:
            constraints["power"] = engine_power(power, cluster)
            up = down_cloud(power, cluster)
            if up is not None:      # CLOUD nodes that never boot: checked without them
                constraints.update(available=up, checked=False, partitions=partitions)
    try:
        run, prio, priority = _run_engine(model, cluster if members is None else
                                          layout.cluster, jobs, spec.name, reserve_depth,
                                          priority, period, **constraints)
        resv_names = None
        if members is not None:
            resv_names = ran_in(run, layout, members)
            run = mapped_back(run, layout)
    finally:
        if bar is not None:
            bar.close()
    schedule = _started_schedule(jobs, run, model)
    asked = None
    if time_min is not None:        # the records hold the limits the jobs ran with
        asked, jobs = jobs.time_limit, with_limits(jobs, run.time_limit)
    attempts = None if lifecycle is None else attempt_table(run)
    pull = None if containers is None else run.pull
    passes = run.passes
    extra = {"partition": run.partition, "reason_code": run.reason, "never": run.never,
             "eligible": run.eligible, "priority": prio, "limits": limits,
             "partitions": partitions, "dependencies": dependencies, "placement": placement,
             "attempts": attempts, "lifecycle": lifecycle, "events": events, "pull": pull,
             "configure": None if power is None else run.configure, "power": power,
             "preemption": preemption, "reservation": resv_names,
             "advance_reservations": advance_reservations or None,
             "time_min": time_min, "asked_limit": asked,
             "priority_at": _PriorityAt(priority, run) if callable(priority) else
             (None if priority is None else _FixedPriority(priority))}
    if model == "counts" and dependencies is None and limits is None and priority is None:
        extra["partition"] = None      # one pool, no reasons: the records need no such columns
    wall = time.perf_counter() - wall - compile_seconds
    summary = summarize(cluster, pull_workload(jobs, pull), schedule,
                        exclusive=engine == "pool" or _whole_node_jobs(cluster, jobs))
    if attempts is not None:
        summary["lifecycle"] = lifecycle_summary(jobs, attempts, lifecycle)
        summary["timeouts"] = attempt_timeouts(jobs, attempts, pull, schedule.start_time >= 0)
    if preemption is not None:
        summary["preemption"] = dict(preemption_summary(jobs, attempts, lifecycle),
                                     type=preemption.kind)
    if containers is not None:
        summary["images"] = images_summary(jobs, run, attempts, containers)
    if power is not None:
        started = schedule.start_time >= 0
        summary["power"] = power_summary(power, cluster, run,
                                         schedule.start_time[started] - jobs.submit_time[started])
    skipped = list(skipped or [])
    summary.update({
        "policy": spec.name,
        "reserve_depth": reserve_depth if spec.name == "easy" else None,
        "nodes": cluster.num_nodes,
        "skipped": len(skipped),
        "reservations": model,
        "engine": engine,
        "node_events": 0 if events is None else len(events),
        "advance_reservations": len(advance_reservations) if advance_reservations else 0,
        "passes": int(passes),
        "sim_seconds": wall,
        "compile_seconds": compile_seconds,
        "semantics": dict(SEMANTICS, allocation=ALLOCATION[engine]),
    })
    if placement is not None and placement.levels.shape[0]:
        from .placement import placement_quality, placement_summary
        spans = placement_quality(cluster, schedule.alloc_offsets, schedule.alloc_nodes,
                                  topology={"leaf": placement.levels[0]})
        summary["placement"] = placement_summary(spans, schedule.alloc_offsets)
    if priority is not None:
        summary["semantics"]["queue_order"] = (
            "priority desc, then submit_time asc, job_id asc" + (
                f"; priorities recomputed every {period} s" if callable(priority) else ""))
    return SimulationResult(cluster, jobs, schedule, summary, skipped, **extra)


def _time_min(time_min, jobs: JobTable):
    """The checked ``time_min`` per job, or None where no job has one."""
    if time_min is None:
        return None
    tmin = check_time_min(time_min, jobs.time_limit)
    return tmin if (tmin > 0).any() else None


def reservation_model(cluster: Cluster, jobs: JobTable, requested: str | None,
                      nodes_only=(), partitions=None, events=None):
    """The reservation model a run plans with ("counts" or "nodes") and the partition
    choices of its jobs, checked for it once, before any compiling (nodes: those that
    can ever fit, :func:`fastsched.engine.inputs.check_node_jobs`, with the nodes
    ``events`` resume). ``requested``: the caller's choice, or None for counts where it
    can plan the run. ``nodes_only``: the names of the options given that only the
    nodes model takes."""
    check_reservations(requested)
    if requested == "slurm":
        other = [name for name in nodes_only if name not in ("resolution", "window")]
        if other:
            raise UnsupportedError(f"reservations='slurm' takes no {', '.join(other)} yet")
        return "slurm", check_node_jobs(cluster, jobs, ever_available(cluster, None, None),
                                        None)
    if requested == "counts" and nodes_only:
        raise UnsupportedError(f"the counts model does not take {', '.join(nodes_only)} "
                               "yet; use reservations='nodes'")
    if requested == "counts" or (requested is None and not nodes_only
                                 and counts_model_refuses(cluster, jobs) is None):
        check_jobs(cluster, jobs)
        return "counts", partitions
    return "nodes", check_node_jobs(cluster, jobs, ever_available(cluster, None, events),
                                    partitions)


def _run_engine(model, cluster, jobs, policy, depth, priority, period, **constraints):
    """Run the event loop of reservation model ``model``; returns the run, each job's
    priority at its start (or None) and the priority function as the run left it (a
    resumed run's is the checkpoint's)."""
    if model == "counts":
        run_loop = run_counts
    elif model == "slurm":
        from .slurmsim import run_slurm_model as run_loop
    else:       # imported here: a counts-model run loads no Numba
        from ..engine.loop import run_nodes as run_loop
    if priority is None:
        return run_loop(cluster, jobs, policy, depth, **constraints), None, None
    if not callable(priority):
        key = np.asarray(priority, dtype=np.float64)
        run = run_loop(cluster, jobs, policy, depth, rank=-key, **constraints)
        return run, np.where(run.start >= 0, key, np.nan), priority
    resume = constraints.get("resume")
    reorder = _Reorder(priority, len(jobs)) if resume is None else resume["reorder"]
    run = run_loop(cluster, jobs, policy, depth, reorder=reorder, period=period, **constraints)
    reorder.stamp(run.start)
    return run, reorder.at_start, reorder.priority


class _Reorder:
    """The queue order from ``priority(now, progress)``, recomputed each period, and the
    priority each job started with (an object, so that a checkpoint holds its state).

    The event loops ask only for the jobs that may be queued in the period
    (:meth:`ranks`); a priority with a ``keys(now, progress, rows)`` method computes
    only theirs, so a recomputation costs the pending jobs, not the whole run."""

    def __init__(self, priority, n: int):
        self.priority = priority
        self.at_start = np.full(n, np.nan)
        self.rows = np.zeros(0, dtype=np.int64)      # the last recomputation's jobs ...
        self.key = np.zeros(0)                       # ... and their priorities
        self.seen = np.zeros(n, dtype=bool)

    def ranks(self, now, progress, rows):
        self.stamp(progress.start)
        if hasattr(self.priority, "keys"):
            key = self.priority.keys(now, progress, rows)
        else:
            key = np.asarray(self.priority(now, progress))[rows]
        self.rows, self.key = rows, np.asarray(key, dtype=np.float64)
        return -self.key

    @property
    def late(self) -> bool:
        """Whether jobs left out of a recomputation can be ranked in it later
        (:meth:`ranks_late`): the event loops then leave the running jobs out."""
        return hasattr(self.priority, "keys_late")

    def ranks_late(self, progress, rows):
        """What :meth:`ranks` would have given jobs ``rows`` had they been among the last
        call's jobs (they were running then and are requeued; they started before it,
        so the priorities they started with are already kept)."""
        return -np.asarray(self.priority.keys_late(progress, rows), dtype=np.float64)

    def stamp(self, start) -> None:
        """Jobs started since the last recomputation started with its priorities (they
        were among its jobs: it covered every job that could start before the next)."""
        rows = self.rows
        new = (start[rows] >= 0) & ~self.seen[rows]
        self.at_start[rows[new]] = self.key[new]
        self.seen[rows[new]] = True


class _PriorityAt:
    """``t -> priorities`` the run would have computed at ``t`` (for what-ifs at t).
    An object holding only the run's start, end and eligible times (not the whole run),
    so that a result pickles small."""

    def __init__(self, priority, run):
        self.priority = priority
        self.start, self.end, self.eligible = run.start, run.end, run.eligible

    def __call__(self, t):
        from ..engine.driver import Progress
        before = self.start < t
        return np.asarray(self.priority(t, Progress(
            np.where(before, self.start, -1), np.where(before, self.end, -1),
            np.where(self.eligible <= t, self.eligible, -1))), dtype=np.float64)


class _FixedPriority:
    """``t -> priorities`` of a priority array: the same at every time."""

    def __init__(self, key):
        self.key = np.asarray(key)

    def __call__(self, t):
        return self.key


def _blocked(reservations: Reservations | None, jobs: JobTable):
    """The node windows the engine holds for ``reservations`` (None: none)."""
    if not reservations:
        return None
    return reservations.windows(_horizon(jobs))


def _check_slurm_run(policy, priority, dependencies, limits, checkpoints, resume) -> None:
    """What a replay under Slurm's backfill takes (:mod:`fastsched.sim.slurmsim`)."""
    if policy != "conservative":
        raise UnsupportedError("reservations='slurm' is Slurm's backfill, which plans every "
                               "job it tests: use policy 'conservative'")
    given = [name for name, value in (("dependencies", dependencies), ("limits", limits),
                                      ("checkpoints", checkpoints), ("resume", resume))
             if value is not None]
    if callable(priority):
        given.append("a priority function (give an array)")
    if given:
        raise UnsupportedError(f"reservations='slurm' takes no {', '.join(given)} yet")


def _whole_node_jobs(cluster: Cluster, jobs: JobTable) -> bool:
    """Does every job take all of each of its nodes, on nodes all alike (so no two
    jobs ever share a node)?"""
    caps = (cluster.gpus, cluster.cpus, cluster.mem_mb)
    asks = (jobs.gpus_per_node, jobs.cpus_per_node, jobs.mem_per_node)
    return bool(cluster.num_nodes and all((c == c[0]).all() and (a == c[0]).all()
                                          for c, a in zip(caps, asks)))


def _started_schedule(jobs: JobTable, run, model: str) -> Schedule:
    """A Schedule from an event loop's run: jobs that never started hold no nodes.
    The counts model's nodes stay runs (its runs hold no entry for such jobs)."""
    started = run.start >= 0
    if run.node_runs is not None:
        return Schedule(job_id=jobs.job_id.copy(), start_time=run.start, end_time=run.end,
                        alloc_offsets=run.alloc_offsets, alloc_nodes=None,
                        node_runs=run.node_runs, planning=model)
    if started.all():           # the run's allocations as they are (no copy of them)
        return Schedule(job_id=jobs.job_id.copy(), start_time=run.start, end_time=run.end,
                        alloc_offsets=run.alloc_offsets, alloc_nodes=run.alloc_nodes,
                        alloc_gpu_mask=run.alloc_gpu_mask, planning=model)
    counts = np.diff(run.alloc_offsets)
    offsets = np.zeros(len(jobs) + 1, dtype=np.int64)
    np.cumsum(np.where(started, counts, 0), out=offsets[1:])
    keep = np.repeat(started, counts)
    masks = None if run.alloc_gpu_mask is None else run.alloc_gpu_mask[keep]
    return Schedule(job_id=jobs.job_id.copy(), start_time=run.start, end_time=run.end,
                    alloc_offsets=offsets, alloc_nodes=run.alloc_nodes[keep],
                    alloc_gpu_mask=masks, planning=model)


def simulate_swf(path, policy: str = "easy", *, procs: int | None = None, strict: bool = False,
                 reserve_depth: int = 1, progress: bool | None = False) -> SimulationResult:
    """Read an SWF trace and replay it on its machine (P single-processor nodes)."""
    from ..io.swf import read_swf
    trace = read_swf(path, procs=procs, strict=strict)
    result = simulate(Cluster.homogeneous(trace.procs), trace.jobs, policy,
                      reserve_depth=reserve_depth, progress=progress, skipped=trace.skipped)
    result.summary["trace"] = str(path)
    return result
