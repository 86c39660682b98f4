"""The scheduler as a library: submit jobs, run a pass, apply its decisions.

A pass (:meth:`Scheduler.schedule`) reads the state and returns
:class:`Decisions` for every pending job without changing anything; only
:meth:`Scheduler.apply` (and :meth:`Scheduler.complete`) mutate. So a pass can
also be a pure "what if", and :meth:`Scheduler.expected_start_times` gives every
pending job's expected start, like ``squeue --start``.

The same compiled planners as the simulator decide (see docs/semantics.md and
docs/gpu-semantics.md), with the same engine rule: the counted-pool engine for
one pool of identical nodes and whole-node jobs, the node engine
(:func:`fastsched.engine.plan_nodes`) for anything else. Tests check that
driving this API through a workload gives the simulator's schedule.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..engine import _kernels
from ..engine import RunningJobs, check_node_jobs, node_availability
from ..engine.kept import KeptState
from ..engine.plan import asking_nodes, plan_kept
from ..engine.inputs import _grid
from ..model.cluster import Cluster, NodeState
from ..model.constraints import (CAPS, Dependencies, LimitGroups, PartitionChoices, Placement,
                                 csr_take)
from ..model.errors import InputError, UnsupportedError
from ..model.jobs import JobRequest, JobTable
from ..model.policies import (RESERVATION_MODELS, check_reservations, check_reserve_depth,
                              get_policy)
from ..model.reservations import Reservations, check_jobs_held_off
from ..model.validation import check_jobs, reject
from .bookkeeping import (ENDED, QUEUED, REJECTED, RUNNING, WAITING, Catalog, ConstraintState,
                          QueuePriority, csr_offsets, first_duplicate)
from .decisions import BLOCKED, RESERVED, START, Decisions, StaleDecisionsError
from .schedelastic import check_elastic, regrow
from .schedmemo import PassMemo
from .schedpreempt import SchedulerPreemption, scheduler_priority
from .schedrequeue import SchedulerRequeue
from .schedtimemin import pass_limits, scheduler_time_min
from .resvlayout import layout_placement
from .schedresv import SchedulerMembers, occupied_reservations
from .schedrunning import checked_running, whole_node_jobs, whole_nodes
from .schedstarts import StartCosts, booting_jobs, check_node_event
from .schedtables import (concat_csr, concat_running, no_running, split_limits,
                          take_csr, take_running, widen)



#: how a job ended (complete(state=...)); only COMPLETED satisfies afterok
END_STATES = ("COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL")
#: why a pending job cannot run while nodes are down (squeue's reason)
NODES_DOWN_REASON = "ReqNodeNotAvail"


class Scheduler:
    """A queue and a cluster state, scheduled by a named policy.

    ``reservations``: the reservation model, as :func:`fastsched.simulate`'s:
    "counts" (one pool of identical nodes, whole-node jobs: the textbook
    algorithms, the pool engine), "nodes" (GPU-granular, any cluster, the node
    engine), "slurm" (Slurm 22.05's backfill cycle, docs/slurm-model.md: policy
    "conservative", a queue order from ``priority`` at most; ``resolution`` /
    ``window`` default to the cluster's bf_resolution / bf_window, else Slurm's 60 s /
    1 day; started jobs take each node's lowest free GPUs) or None (counts while every
    submitted job fits it and nothing below but a priority asks for more, then nodes
    for good; :attr:`engine` says which runs; unlike :func:`fastsched.simulate`,
    dependencies and limits start it on nodes: its counts pass applies no limits).
    ``available``: node availability (see
    :func:`fastsched.engine.node_availability`); :meth:`fail_nodes`,
    :meth:`drain_nodes` and :meth:`resume_nodes` change it later. ``advance_reservations``
    (:class:`fastsched.model.reservations.Reservations`): nodes held over time windows,
    as :func:`fastsched.simulate` holds them (node engine); each pass holds the windows
    its plans can reach (``Reservations.windows_for_pass``); with
    :class:`fastsched.model.resvjobs.JobReservations` over ``jobs``, its member jobs
    (``--reservation``, MAGNETIC) run inside their reservations as :func:`fastsched.simulate`
    runs them (:mod:`.schedresv`: :attr:`cluster` and :attr:`state` then hold the
    reservations' twin nodes, the decisions the cluster's own nodes). ``preemption``
    (:class:`fastsched.model.preemption.Preemption`, with ``jobs``) and ``lifecycle``
    (the jobs' requeue flags and the requeue delay): preemption as
    :func:`fastsched.simulate` applies it (node engine; :mod:`.schedpreempt`): each
    pass's ``Decisions.preempt`` names the victims, :meth:`apply` stops them,
    :attr:`preempt_time` says when to pass again for it. With or without preemption,
    ``lifecycle`` says what :meth:`fail_nodes` does to the jobs it ends: those that may
    be requeued come back to the queue as the simulator requeues them
    (:mod:`.schedrequeue`; :attr:`attempts`, :attr:`requeue_time`); its ``nodes_min``
    (``--nodes=MIN-MAX``) starts a job narrow, on as many nodes as fit, at least MIN
    (:mod:`.schedelastic`; ``Decisions.nodes_of``). ``containers``
    (:class:`fastsched.Containers`, with ``jobs``) and ``power`` (a
    :class:`fastsched.PowerSaving` or its text): each start's image pull and its
    powered-down nodes' boots as :func:`fastsched.simulate` counts them (node engine;
    :mod:`.schedstarts`): decisions carry ``configure_time``, ``pull_time``, ``end_time``
    and ``job_state`` (CONFIGURING while the boots last). ``time_min`` (seconds per row
    of ``jobs``, sbatch ``--time-min``): a START may carry a shorter limit
    (``Decisions.time_limit``, :mod:`.schedtimemin`), as :func:`fastsched.simulate`'s.

    Everything :func:`fastsched.simulate` takes is taken here with the same
    meaning, checks and errors: ``partitions``, ``dependencies``, ``limits``,
    ``placement`` (:mod:`fastsched.model.constraints`) and ``priority`` (an array, or
    ``priority(now, progress)`` recomputed at the first pass of every
    ``period`` seconds) describe the jobs of ``jobs``, a table of every job
    that will be submitted (row for row, as simulate's ``jobs``);
    ``resolution`` / ``window`` plan on a coarser grid / only so far ahead.
    :meth:`for_site` takes a site configuration instead. Without ``jobs``, any
    job may be submitted and none of the per-job options apply.

    >>> s = Scheduler(Cluster.homogeneous(4), "easy")
    >>> s.submit(JobRequest(job_id=1, submit_time=0, time_limit=60, runtime=60, num_nodes=2))
    >>> d = s.schedule(now=0); s.apply(d); list(d.starts)
    [1]
    """

    def __init__(self, cluster: Cluster, policy: str = "easy", *, jobs: JobTable | None = None,
                 reserve_depth: int = 1, reservations: str | None = None, available=None,
                 partitions: PartitionChoices | None = None,
                 dependencies: Dependencies | None = None, limits: LimitGroups | None = None,
                 priority=None, period: int | None = None, resolution: int = 1,
                 window: int | None = None, placement: Placement | None = None,
                 advance_reservations: Reservations | None = None, preemption=None,
                 lifecycle=None, containers=None, power=None, time_min=None):
        self.policy = get_policy(policy)
        self.reserve_depth = check_reserve_depth(reserve_depth)
        # no model named: the pool engine while every job fits it, else (for good) nodes
        engine = RESERVATION_MODELS.get(check_reservations(reservations), "auto")
        self._reservations = _checked_reservations(advance_reservations, cluster, engine)
        # member jobs: scheduled on the reservations' twin nodes, shown on the cluster's
        self._members = SchedulerMembers.of(
            cluster, jobs, self._reservations, partitions, containers=containers,
            preemption=preemption if preemption is not None and preemption.active else None)
        if self._members is not None:
            cluster, partitions = self._members.layout.cluster, self._members.layout.partitions
            available = self._members.available(available)
            placement = layout_placement(placement, self._members.layout)
        self.cluster = cluster
        self.available = node_availability(cluster, available)
        self._configured = self.available.copy()     # what submitted jobs are checked against
        self.resolution, self.window = resolution, window
        _grid(resolution, window)
        if preemption is not None and not preemption.active:
            preemption = None           # preempt/none, or nothing may preempt: unchanged
        self._costs = StartCosts.of(
            cluster, jobs, containers, power, engine,
            advance_reservations=self._reservations if containers is not None else None,
            jobs_in_reservations=None if self._members is None else True)
        if self._costs is not None:     # CLOUD nodes that never boot are DOWN for good
            self.available = self._costs.available(self.available)
            self._configured = self.available.copy()
        if preemption is not None and jobs is None:
            raise InputError("preemption describes the jobs of a table: pass it as jobs=",
                             field="preemption")
        priority = scheduler_priority(cluster, jobs, preemption, priority)
        per_job = {"partitions": partitions, "dependencies": dependencies, "limits": limits,
                   "priority": priority, "placement": placement}
        given = [name for name, value in per_job.items() if value is not None]
        if engine == "slurm":
            _check_slurm_options(self.policy.name, given)
        if given and jobs is None:
            raise InputError(f"{given[0]} describes the jobs of a table: pass it as jobs=",
                             field=given[0])
        # the counts model takes a queue order, not node-level options nor (in a single
        # pass) limits and dependencies
        self.engine = self._first_engine(engine, constrained=bool(set(given) - {"priority"})
                                         or resolution != 1 or window is not None
                                         or self._reservations is not None)
        self._auto = engine == "auto"
        self._catalog = Catalog(JobTable.from_requests([]) if jobs is None else jobs,
                                 fixed=jobs is not None)
        self._constraints = ConstraintState.of(cluster, self._catalog.jobs(), self.available,
                                            partitions, dependencies, limits, placement)
        self._priority = QueuePriority.of(priority, period, self._catalog.jobs())
        self._requeue = SchedulerRequeue.of(jobs, lifecycle, preemption)
        if jobs is not None and partitions is None:   # (with partitions: checked above)
            self.engine = self._engine_for(jobs)
        self.state = cluster.new_state()
        self.state.state[~self.available] = NodeState.DOWN
        self._full_mask = self.state.free_gpu_mask.copy()
        self._queued = np.zeros(0, dtype=np.int64)        # catalog rows
        self._running = no_running()
        self._running_rows = np.zeros(0, dtype=np.int64)  # catalog row per running job (-1: none)
        self._running_groups = (np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64))
        self._usage = np.zeros((len(self._constraints.limits.caps), len(CAPS)), dtype=np.int64)
        self._clock = 0                                   # the latest time given
        self._version = 0
        # node engine: the engine state kept between passes (False: each pass builds it,
        # the pure pass, as the benchmark's reference)
        self._keep_state = True
        self._kept = KeptState()
        self._memo = PassMemo()     # the last pass's decisions, while nothing changed
        self._preempt = None
        if preemption is not None:                        # the node engine preempts
            SchedulerPreemption.check(self, given)
            if self.engine != "nodes":
                check_node_jobs(cluster, jobs, self._configured)
            self.engine, self._auto = "nodes", False
            self._preempt = SchedulerPreemption(cluster, jobs, preemption, lifecycle,
                                                partitions, self._requeue, placement)
        self._time_min = scheduler_time_min(
            jobs, time_min, placement=placement,
            reservations=self._reservations,
            **{"reservations='slurm'": True if engine == "slurm" else None})
        check_elastic(lifecycle, placement, limits, self._reservations,
                      containers=containers, power=power,
                      **{"reservations='slurm'": True if engine == "slurm" else None,
                         "advance reservations with member jobs": self._members})
        if self._costs is not None or self._time_min is not None or \
                (lifecycle is not None and lifecycle.ranged):   # the node engine's
            if self.engine != "nodes" and jobs is not None:
                check_node_jobs(cluster, jobs, self._configured)
            self.engine, self._auto = "nodes", False

    @classmethod
    def for_site(cls, cluster: Cluster, workload, config, policy: str = "easy",
                 **options) -> "Scheduler":
        """A scheduler of ``workload``'s jobs under a site configuration, as
        :func:`fastsched.simulate_site` runs them: the config's partition tiers,
        multifactor priorities every PriorityCalcPeriod and limits, and the
        workload's dependencies and partition lists. ``options``: reserve_depth,
        resolution, window, placement, available, reservations."""
        from .site import priority_function, site_limits
        cluster = config.apply_partitions(cluster)
        tree = config.build_tree(workload)
        return cls(cluster, policy, jobs=workload.jobs,
                   limits=site_limits(config, workload, cluster, tree),
                   dependencies=getattr(workload, "dependencies", None),
                   partitions=getattr(workload, "partitions", None),
                   priority=priority_function(config, workload, cluster, tree),
                   period=int(config.calc_period), **options)

    @classmethod
    def from_state(cls, cluster: Cluster, running: RunningJobs, pending: JobTable,
                   policy: str = "conservative", *, limits: LimitGroups | None = None,
                   eligible=None, queued: int | None = None, **options) -> "Scheduler":
        """A scheduler holding ``running`` (e.g. from :meth:`SimulationResult.state_at`)
        with ``pending`` queued. ``options`` as the constructor's, describing
        ``pending``; ``limits`` covers the running jobs, then the pending ones (so
        that the running jobs count against their groups); ``eligible`` (per
        pending job, default its submit time): when it entered the queue; ``queued``:
        only the first ``queued`` pending jobs are submitted now (the others may be
        later, with :meth:`submit`). Pool engine: running jobs hold whole nodes. With
        ``advance_reservations``, a running job whose planned end falls inside a window
        of a reservation on its nodes runs in it (on the twins, :mod:`.schedresv`)."""
        if queued is not None and not 0 <= queued <= len(pending):
            raise InputError(f"queued must be in 0..{len(pending)}, got {queued}",
                             field="queued")
        run_limits, limits = split_limits(limits, len(running), len(pending))
        inside, options["advance_reservations"] = occupied_reservations(
            cluster, running, options.get("advance_reservations"), len(pending))
        s = cls(cluster, policy, jobs=pending, limits=limits, **options)
        if s._auto and s.engine == "pool" and not whole_node_jobs(cluster, running):
            s.engine = "nodes"
        r = checked_running(cluster, running, s.engine)
        if s._members is not None:             # (those running in a window: on the twins)
            r = s._members.running_on_layout(r, inside)
        if s._costs is not None:                        # running jobs' nodes are on
            s._costs.running(r.nodes)
        groups = (run_limits.offsets, run_limits.group) if run_limits is not None else \
            (np.zeros(len(r) + 1, dtype=np.int64), np.zeros(0, dtype=np.int64))
        s._start_running(r, np.full(len(r), -1, dtype=np.int64), groups)
        s.submit(pending if queued is None else pending.take(np.arange(queued)))
        if eligible is not None:
            s._catalog.eligible[:len(pending)] = np.asarray(eligible, dtype=np.int64)
        return s

    # -------------------------------------------------------------- mutations
    def submit(self, jobs: JobRequest | JobTable) -> None:
        """Queue one job or a table of jobs (with ``jobs`` given to the constructor:
        jobs of that table, whose rows are used). Rejected whole (state unchanged) if
        any is bad. A job a limit group's max_submit turns away never queues, as in
        the simulator (see :attr:`rejected`); one waiting for a dependency queues
        when it is satisfied."""
        table = JobTable.from_requests([jobs]) if isinstance(jobs, JobRequest) else jobs
        engine = self.engine if self._catalog.fixed else self._engine_for(table)
        if self._reservations is not None:
            check_jobs_held_off(table)
        active = np.concatenate([self._catalog.job_id(self._queued), self._running.job_id])
        clash = np.unique(active[np.isin(active, table.job_id)])   # (O(active), no sort)
        if len(clash) or len(np.unique(table.job_id)) != len(table):
            bad = clash[0] if len(clash) else first_duplicate(table.job_id)
            raise InputError(f"job id {bad} is already queued or running", field="job_id")
        rows = self._catalog.rows_for(table)          # raises before anything changes
        self.engine = engine
        rows = rows[np.lexsort((self._catalog.job_id(rows), self._catalog.submit(rows)))]
        turned = self._constraints.arrive(rows, self._usage)
        self._catalog.status[rows[turned]] = REJECTED
        arrived = rows[~turned]
        self._catalog.status[arrived] = WAITING
        self._queue_free(arrived, self._catalog.submit(arrived))
        self._version += 1

    def apply(self, decisions: Decisions) -> None:
        """Start the jobs that ``decisions`` says start now (on its nodes and GPUs)."""
        if decisions.version != self._version:
            raise StaleDecisionsError("the queue or the cluster changed since this pass; "
                                      "run schedule() again")
        started = np.flatnonzero(decisions.outcome == START)
        if len(started):
            self._start(decisions, started)
        if self._preempt is not None:
            self._preempt.apply(self, decisions)

    def _start(self, decisions: Decisions, started: np.ndarray) -> None:
        rows = decisions.rows[started]
        counts = np.diff(decisions.node_offsets)[started]
        entries = csr_take(decisions.node_offsets, started)[1]
        nodes = (decisions.nodes if decisions.layout_nodes is None
                 else decisions.layout_nodes)[entries]
        jobs = self._catalog.take(rows)
        begin = decisions.now + (0 if self._costs is None else
                                 self._costs.commit(decisions)[started])   # after boots
        limit = jobs.time_limit if decisions.time_limit is None else \
            decisions.time_limit[started]
        new = RunningJobs.from_arrays(
            job_id=jobs.job_id, planned_end=begin + limit,
            node_offsets=csr_offsets(counts), nodes=nodes,
            gpus=np.repeat(jobs.gpus_per_node, counts),
            cpus=np.repeat(jobs.cpus_per_node, counts),
            mem=np.repeat(jobs.mem_per_node, counts), gpu_mask=decisions.gpu_mask[entries],
            exclusive_topo=self._constraints.exclusive_topo(rows))
        if self.engine == "pool":
            new = whole_nodes(self.cluster, new)
        self._start_running(new, rows, self._constraints.groups_of(rows))
        self._queued = self._queued[~np.isin(self._queued, rows)]
        self._catalog.status[rows] = RUNNING
        self._catalog.start[rows] = begin
        if self._requeue is not None:
            self._requeue.started(rows, counts, begin, decisions.partition[started])
        self._release(rows, np.ones(len(rows), dtype=bool), decisions.now, started=True)

    def complete(self, job_id, now: int | None = None, *, state: str = "COMPLETED") -> None:
        """Running job(s) ended at ``now`` (default: the last time the scheduler was
        given) in ``state`` (one of :data:`END_STATES`; dependencies ``afterok`` need
        COMPLETED): free their nodes, GPUs and limits, release their dependents."""
        ids = np.atleast_1d(np.asarray(job_id, dtype=np.int64))
        now = self._clock if now is None else _check_now(now)
        if state not in END_STATES:
            raise InputError(f"unknown end state {state!r}; choose one of {list(END_STATES)}",
                             field="state")
        hit = np.flatnonzero(np.isin(self._running.job_id, ids))
        missing = np.setdiff1d(ids, self._running.job_id[hit])
        if len(missing):
            raise InputError(f"job {missing[0]} is not running", field="job_id")
        self._end_running(hit, now, state == "COMPLETED")
        self._clock = max(self._clock, now)

    def fail_nodes(self, nodes, now: int) -> np.ndarray:
        """Nodes ``nodes`` (indices) went down at ``now``: planning no longer uses them,
        and the running jobs on them end (NODE_FAIL; complete() those ending at ``now``
        first, as the simulator ends them). Returns the ids of the jobs there. With a
        ``lifecycle``, those that may be requeued come back to the queue after the
        requeue delay (:attr:`attempts`, :attr:`requeue_time`), and ``--no-kill`` jobs
        left with a node run on, shrunk (RESIZING in :attr:`attempts`). Pending jobs that
        cannot run without these nodes wait (reason ReqNodeNotAvail). With power saving,
        a job killed while CONFIGURING never ran: its start is ``now``."""
        down = self._node_indices(nodes)
        now = _check_now(now)
        check_node_event(self._costs, self._requeue, "fail_nodes", now)
        if self.engine == "pool" and not self._auto:
            raise UnsupportedError("the pool engine has no unavailable nodes; use the "
                                   "node engine")
        entry_job = np.repeat(np.arange(len(self._running)), np.diff(self._running.node_offsets))
        hit = np.unique(entry_job[np.isin(self._running.nodes, down)])
        ended = self._running.job_id[hit]
        self.engine = "nodes"
        self._kill(hit, down, now)
        self._clock = max(self._clock, now)
        self.available[down] = False
        self.state.state[down] = NodeState.DOWN
        return ended

    def _kill(self, hit: np.ndarray, nodes: np.ndarray, now: int) -> None:
        """End the running jobs at positions ``hit`` at ``now`` (NODE_FAIL, or requeued
        by the ``lifecycle``), for their ``nodes`` are lost: one still CONFIGURING
        never ran, its start is the kill."""
        rows = self._running_rows[hit]
        rows = rows[rows >= 0]
        self._catalog.start[rows] = np.minimum(self._catalog.start[rows], now)
        if self._requeue is None:
            self._end_running(hit, now, False)
        else:
            self._requeue.fail(self, hit, nodes, now)

    def drain_nodes(self, nodes, now: int | None = None) -> np.ndarray:
        """Nodes ``nodes`` (indices) are drained at ``now`` (``scontrol update
        State=DRAIN``): no job starts or is planned on them, the jobs running there go
        on. Pending jobs that cannot run without them wait (reason ReqNodeNotAvail);
        :meth:`resume_nodes` undoes it. With power saving (``now`` then needed) the jobs
        of a drained node still booting for them are killed, as :meth:`fail_nodes`
        kills (Slurm requeues them). Returns the ids of the jobs killed."""
        drained = self._node_indices(nodes)
        now = None if now is None else _check_now(now)
        check_node_event(self._costs, self._requeue, "drain_nodes", now)
        hit = booting_jobs(self._costs, self._running, drained, now)
        if self.engine == "pool" and not self._auto:
            raise UnsupportedError("the pool engine has no unavailable nodes; use the "
                                   "node engine")
        ended = self._running.job_id[hit]
        self.engine = "nodes"
        if len(hit):
            self._kill(hit, drained, now)
        if now is not None:
            self._clock = max(self._clock, now)
        self.available[drained] = False
        self.state.state[drained] = np.where(self.state.state[drained] == NodeState.DOWN,
                                             NodeState.DOWN, NodeState.DRAIN)
        self._version += 1
        return ended

    def resume_nodes(self, nodes, now: int | None = None) -> None:
        """Nodes ``nodes`` (indices) are back at ``now``, up or no longer drained:
        planning uses them again. With power saving (``now`` then needed) a node back
        with no job, not powered down, is idle from ``now``. With
        ``Lifecycle(regrow=True)``, running ``--no-kill`` jobs on fewer nodes than they ask
        for take those that were out at ``now`` (default: the latest time given) as the
        simulator's regrowth does (RESIZING in :attr:`attempts`)."""
        up = self._node_indices(nodes)
        given = None if now is None else _check_now(now)
        check_node_event(self._costs, self._requeue, "resume_nodes", given)
        now = self._clock if given is None else given
        if self._costs is not None:
            self._costs.back(up[~self.available[up]], now)
        back = up[~self.available[up] & self._configured[up]]
        self.available[up] = self._configured[up]
        self.state.state[up] = np.where(self._configured[up], NodeState.UP, NodeState.DOWN)
        self._version += 1
        if len(back) and self._requeue is not None and self._requeue.regrow:
            regrow(self, self._requeue, back, now)
            self._clock = max(self._clock, now)

    # ------------------------------------------------------------ pure passes
    def schedule(self, now: int, *, full: bool = False) -> Decisions:
        """One pass at time ``now``: a decision for every pending job; changes nothing
        (but the priorities, recomputed when ``now`` enters a new period).

        Node engine: like the simulator, the pass stops after the last job that
        could start now (later jobs BLOCKED); ``full=True`` plans the whole
        queue. The pool engine always plans the whole queue. The node engine keeps its
        state (free-now arrays, running lists, work profile, run index) between passes,
        brought up to date by apply and complete, built again after node changes; the
        decisions are those of :func:`fastsched.engine.plan_nodes` afresh. Asked again
        at the same ``now`` and ``full`` with nothing changed since (no mutation, same
        options), it returns the same :class:`Decisions` object without planning
        (:mod:`.schedmemo`; not with preemption).
        """
        now = _check_now(now)
        if self._requeue is not None:
            self._requeue.due(self, now)
        if self._preempt is None:
            d = self._memo.get(self, now, full) if self._keep_state else None
            if d is None:
                d = self._shown(self._pass(now, self.policy.name, self.reserve_depth, full,
                                           self._version))
                if self._keep_state:
                    self._memo.put(self, now, full, d)
            return d if self._costs is None else \
                self._costs.decide(d, self._catalog.take(d.rows), self._requeue)
        self._preempt.due(self, now)
        d = self._pass(now, self.policy.name, self.reserve_depth, full, self._version)
        d = replace(d, preempt=self._preempt.decide(self, now, d))
        return d if self._costs is None else \
            self._costs.decide(d, self._catalog.take(d.rows), self._requeue)

    @property
    def preempt_time(self) -> int:
        """With preemption: the next time a pass must run for it (a victim's grace end, a
        requeued job's begin, the end of a running job's PreemptExemptTime a waiting job
        looked at, the ready time of a victim CONFIGURING in its GraceTime); -1: none
        (:mod:`fastsched.sim.schedpreempt`)."""
        return -1 if self._preempt is None else self._preempt.next_time()

    @property
    def requeue_time(self) -> int:
        """With a ``lifecycle``: the next begin time of a job a node failure requeued,
        when a pass must run to queue it again; -1: none waits."""
        return -1 if self._requeue is None else self._requeue.next_time()

    @property
    def attempts(self):
        """With a ``lifecycle``: the attempts :meth:`fail_nodes` ended, a DataFrame
        (:data:`fastsched.sim.schedrequeue.ATTEMPT_COLUMNS`: each NODE_FAIL, requeued
        or not, its begin time, the progress kept and the work left; or RESIZING, a
        ``--no-kill`` job's shape a failure ended); else None."""
        return None if self._requeue is None else self._requeue.attempts(self.cluster)

    def expected_start_times(self, now: int):
        """Every pending job's expected start under a full conservative plan, like
        ``squeue --start``: a DataFrame in queue order with job_id, partition,
        user, expected_start (-1: a limit holds it), num_nodes, schednodes
        (hostlist, "(null)" when the pool engine holds a count rather than
        nodes) and reason."""
        import pandas as pd
        d = self._shown(self._pass(_check_now(now), "conservative", 1, True, -1))
        hosts, _ = d._names()
        jobs = self._catalog.take(d.rows)
        names = np.array([p.name for p in self.cluster.partitions], dtype=object)
        reason = np.array(d.reason, dtype=object)
        reason[d.outcome == START] = "None"
        return pd.DataFrame({"job_id": d.job_id, "partition": names[d.partition],
                             "user": jobs.user, "expected_start": d.start_time,
                             "num_nodes": jobs.num_nodes,
                             "schednodes": [h or "(null)" for h in hosts], "reason": reason})

    @property
    def start_costs(self) -> StartCosts | None:
        """With ``containers`` or ``power``: the nodes' image caches (``.images``, e.g.
        ``.images.cached(node)``) and power states (``.power``, e.g. ``.power.states(now)``,
        sinfo's POWERED_DOWN / POWERING_UP ...); else None (:mod:`.schedstarts`)."""
        return self._costs

    @property
    def pending(self) -> JobTable:
        """Queued jobs (submitted, dependencies satisfied, not started) in queue order."""
        return self._catalog.take(self._queue_order())

    @property
    def rejected(self) -> list[int]:
        """Ids of the jobs a limit group's max_submit turned away at submit."""
        return sorted(self._catalog.job_id(np.flatnonzero(self._catalog.status == REJECTED))
                      .tolist())

    @property
    def running(self) -> list[int]:
        return sorted(self._running.job_id.tolist())

    @property
    def running_jobs(self) -> RunningJobs:
        """What the running jobs hold, and until when (planned ends)."""
        return self._running

    # -------------------------------------------------------------- internals
    def _first_engine(self, engine: str, *, constrained: bool) -> str:
        """The engine to start with: the pool when asked for or (auto) when the cluster
        and options allow it (as simulate picks it), else the node engine."""
        if engine == "slurm":
            return engine
        pool_ok = self.cluster.is_homogeneous() and bool(self.available.all()) \
            and not constrained
        if engine == "pool" and not pool_ok:
            if constrained:
                raise UnsupportedError("partitions, dependencies, limits, placement, "
                                       "resolution and window need the node engine")
            if not self.available.all():
                raise UnsupportedError("the pool engine has no unavailable nodes; use the "
                                       "node engine")
            check_jobs(self.cluster, JobTable.from_requests([]))   # raises, saying why
        return "pool" if engine != "nodes" and pool_ok else "nodes"

    def _engine_for(self, table: JobTable) -> str:
        """Validate ``table`` for the current engine; "nodes" if auto must switch."""
        if self.engine in ("nodes", "slurm"):
            check_node_jobs(self.cluster, table, self._configured)
            return self.engine
        try:
            check_jobs(self.cluster, table)
            reject(table, table.partition != 0, "partition",
                   "names partition index {v}, the cluster has 1 partition")
            return "pool"
        except UnsupportedError:
            if not self._auto:
                raise
        check_node_jobs(self.cluster, table, self._configured)
        return "nodes"

    def _node_indices(self, nodes) -> np.ndarray:
        """The node indices ``nodes`` of the cluster, checked; with member jobs, each
        node's twins too (what happens to a node happens to its twins)."""
        n = (self.cluster if self._members is None else self._members.cluster).num_nodes
        x = np.atleast_1d(np.asarray(nodes))
        if x.dtype.kind not in "iu" or (len(x) and (x.min() < 0 or x.max() >= n)):
            raise InputError(f"nodes must be node indices in 0..{n - 1}, got {nodes!r}",
                             field="nodes")
        x = np.unique(x.astype(np.int64))
        return x if self._members is None else self._members.node_indices(x)

    def _queue_order(self, priority: "QueuePriority | None" = None) -> np.ndarray:
        """The queued catalog rows in queue order: priority (higher first, when given),
        then submit time, then job id."""
        key = (self._priority if priority is None else priority).key
        rows = self._queued
        keys = [self._catalog.job_id(rows), self._catalog.submit(rows)]
        if key is not None:
            keys.append(-key[rows])
        return rows[np.lexsort(keys)]

    def _queue_free(self, rows: np.ndarray, when: np.ndarray) -> None:
        """Queue the waiting ``rows`` whose dependencies are all satisfied, eligible
        from ``when``."""
        free = self._constraints.free(rows)
        self._catalog.status[rows[free]] = QUEUED
        self._catalog.eligible[rows[free]] = when[free]
        self._queued = np.concatenate([self._queued, rows[free]])

    def _release(self, rows, ok, now: int, *, started: bool) -> None:
        """Jobs ``rows`` started (``started``) or ended (``ok``: COMPLETED): count
        down their dependents' dependencies and queue those now free."""
        children = self._constraints.release(rows, ok, started)
        arrived = children[self._catalog.status[children] == WAITING]
        self._queue_free(arrived, np.full(len(arrived), now, dtype=np.int64))

    def _start_running(self, new: RunningJobs, rows: np.ndarray, groups) -> None:
        self._hold(new, +1)
        self._charge(new, groups, +1)
        old, self._running = self._running, concat_running(self._running, new)
        self._kept.started(old, self._running, new)
        self._running_rows = np.concatenate([self._running_rows, rows])
        self._running_groups = concat_csr(self._running_groups, groups)
        self._version += 1

    def _end_running(self, ended: np.ndarray, now: int, ok: bool, requeued=None) -> None:
        """Running jobs at positions ``ended`` end at ``now`` (``ok``: COMPLETED); those
        ``requeued`` marks leave the running jobs only (still submitted, waiting)."""
        keep = np.ones(len(self._running), dtype=bool)
        keep[ended] = False
        keep = np.flatnonzero(keep)
        gone = take_running(self._running, ended)
        groups = take_csr(self._running_groups, ended)
        rows = self._running_rows[ended]
        if self._costs is not None:
            self._costs.ended(gone.nodes, now)
        self._hold(gone, -1)
        self._charge(gone, groups, -1)
        back = np.zeros(len(rows), dtype=bool) if requeued is None else requeued
        submitted = groups[1][np.repeat(~back, np.diff(groups[0]))]
        self._usage[:, 4] -= np.bincount(submitted, minlength=len(self._usage))
        old, self._running = self._running, take_running(self._running, keep)
        self._kept.ended(old, self._running, gone)
        self._running_rows = self._running_rows[keep]
        self._running_groups = take_csr(self._running_groups, keep)
        self._catalog.status[rows[back]] = WAITING
        rows = rows[(rows >= 0) & ~back]
        self._catalog.status[rows] = ENDED
        self._catalog.end[rows] = now
        self._release(rows, np.full(len(rows), ok), now, started=False)
        self._version += 1

    def _charge(self, r: RunningJobs, groups, sign: int) -> None:
        """Count (sign +1) or uncount (-1) running jobs ``r`` against their limit groups."""
        offsets, group = groups
        if not len(group):
            return
        entry_job = np.repeat(np.arange(len(r)), np.diff(r.node_offsets))
        per_job = np.stack([np.ones(len(r), dtype=np.int64)] +
                           [np.bincount(entry_job, weights=a, minlength=len(r)).astype(np.int64)
                            for a in (r.gpus, r.cpus, r.mem)], axis=1)
        member = np.repeat(np.arange(len(r)), np.diff(offsets))
        np.add.at(self._usage[:, :4], group, sign * per_job[member])

    def _hold(self, r: RunningJobs, sign: int) -> None:
        """Take (sign +1) or give back (-1) what ``r`` holds in ``self.state``."""
        for name, amount in (("free_cpus", r.cpus), ("free_mem_mb", r.mem)):
            arr = getattr(self.state, name)     # (per entry: O(entries), not O(nodes))
            np.subtract.at(arr, r.nodes, (sign * np.asarray(amount)).astype(arr.dtype))
        mask = self.state.free_gpu_mask
        if sign > 0:
            np.bitwise_and.at(mask, r.nodes, ~np.asarray(r.gpu_mask, dtype=mask.dtype))
        else:
            np.bitwise_or.at(mask, r.nodes, np.asarray(r.gpu_mask, dtype=mask.dtype))

    def _pass(self, now: int, policy: str, depth: int, full: bool, version: int) -> Decisions:
        """The what-if: one pass over the current state, changing nothing; every
        planning path (schedule, expected_start_times, ``simulate --start-times``,
        ``sbatch --test-only``) comes here. Priorities are recomputed when ``now``
        enters a new period, and kept only when the pass succeeds."""
        priority = self._priority.at(now, self._catalog)
        rows = self._queue_order(priority)
        jobs = self._catalog.take(rows)
        held = np.full(len(rows), "", dtype=object)
        limits = None
        if self.engine == "pool":
            outcome, planned = self._plan_pool(now, get_policy(policy), depth, jobs)
            need = np.where(outcome == START, jobs.num_nodes, 0).astype(np.int64)
            offsets = csr_offsets(need)
            idle = np.flatnonzero(np.bincount(self._running.nodes, minlength=self.cluster.num_nodes)
                                  == 0)                  # lowest-numbered idle nodes first
            nodes = idle[:offsets[-1]].astype(np.int64)
            masks = self._full_mask[nodes]
            partition = jobs.partition.astype(np.int64)
        elif self.engine == "slurm":
            outcome, planned, offsets, nodes, masks = self._plan_slurm(now, jobs)
            partition = jobs.partition.astype(np.int64)
        else:
            low = None if self._requeue is None else self._requeue.start_low
            runnable = self._constraints.runnable(
                self.cluster, rows, jobs if low is None else asking_nodes(jobs, low[rows]),
                self.available)
            d = plan_kept(self._kept if self._keep_state else None, self.cluster,
                          self._running, jobs.take(runnable), now, policy, depth,
                          self.available, full=full, resolution=self.resolution,
                          window=self.window, limit_usage=self._usage,
                          rank=priority.rank(rows[runnable]), blocked=self._windows(now, jobs),
                          time_min=None if self._time_min is None else
                          self._time_min[rows[runnable]],
                          preempting=None if self._preempt is None else
                          self._preempt.planning(self, rows[runnable], now),
                          nodes_min=None if low is None else low[rows[runnable]],
                          **self._constraints.of_rows(rows[runnable], self._catalog))
            outcome, planned, offsets, nodes, masks, part = widen(d, runnable)
            limits = pass_limits(d, runnable, jobs.time_limit)
            held[runnable] = np.where((d.outcome == BLOCKED) & (d.reason != "Priority"),
                                      d.reason, "")
            held[~runnable] = NODES_DOWN_REASON
            partition = np.where(part >= 0, part, jobs.partition).astype(np.int64)
        self._priority = priority
        self._clock = max(self._clock, now)
        return Decisions(now, jobs.job_id, outcome, planned, offsets, nodes, version,
                         gpu_mask=masks, num_nodes=jobs.num_nodes.astype(np.int64),
                         partition=partition, engine=self.engine, cluster=self.cluster,
                         held=held, rows=rows, time_limit=limits)

    def _shown(self, d: Decisions) -> Decisions:
        """``d`` as the caller sees it: with member jobs, on the cluster's own nodes."""
        return d if self._members is None else self._members.shown(d)

    def _windows(self, now: int, jobs: JobTable):
        """The advance reservations' windows a pass at ``now`` over the queued ``jobs``
        holds (None: none): every plan of the pass would end, without them, by the
        running jobs' last planned end plus the queued jobs' time limits one after
        another (:meth:`fastsched.model.reservations.Reservations.windows_for_pass`)."""
        if self._reservations is None:
            return None
        if self._members is not None:          # the simulator's windows and twin holds
            return self._members.windows(now)
        ends = self._running.planned_end
        span = int(jobs.time_limit.sum()) + max(int(ends.max(initial=now)) - now, 0)
        return self._reservations.windows_for_pass(now, span)

    def _plan_slurm(self, now: int, jobs: JobTable):
        """Slurm's backfill cycle (:func:`fastsched.sim.plan.slurm_pass`): its starts take
        each node's lowest free GPUs, in queue order."""
        from .plan import slurm_pass
        from .slurmsim import lowest_bits
        start, started, offsets, nodes = slurm_pass(
            self.cluster, self._running, jobs, now, self.available,
            resolution=None if self.resolution == 1 else self.resolution, window=self.window)
        outcome = np.where(started, START, np.where(start >= 0, RESERVED, BLOCKED))
        masks = np.zeros(len(nodes), dtype=np.uint64)
        free = self.state.free_gpu_mask.copy()
        for q in np.flatnonzero(started):
            for e in range(offsets[q], offsets[q + 1]):
                masks[e] = lowest_bits(int(free[nodes[e]]), int(jobs.gpus_per_node[q]))
                free[nodes[e]] &= ~masks[e]
        return outcome.astype(np.int8), start, offsets, nodes, masks

    def _plan_pool(self, now: int, policy, depth: int, jobs: JobTable):
        r = self._running
        if len(r) and r.planned_end.min() <= now:
            late = r.job_id[np.argmin(r.planned_end)]
            raise InputError(f"job {late} is still running at {now}, past its time limit; "
                             "complete() it first", field="now")
        release_time, inverse = np.unique(r.planned_end, return_inverse=True)
        release_nodes = np.bincount(inverse, weights=np.diff(r.node_offsets),
                                    minlength=len(release_time)).astype(np.int64)
        idle = self.cluster.num_nodes - len(np.unique(r.nodes))
        return _kernels.plan_pool(int(now), int(idle), release_time, release_nodes,
                                  jobs.num_nodes.astype(np.int64),
                                  jobs.time_limit.astype(np.int64),
                                  *policy.kernel_rules(depth))


def _checked_reservations(reservations: Reservations | None, cluster: Cluster,
                          engine: str) -> Reservations | None:
    """``reservations`` when there are any (None else), checked against the cluster and
    the engine asked for (only the node engine holds them)."""
    if not reservations:
        return None
    if reservations.num_nodes != cluster.num_nodes:
        raise InputError(f"advance reservations are for {reservations.num_nodes} nodes, the "
                         f"cluster has {cluster.num_nodes}", field="advance_reservations")
    if engine in ("pool", "slurm"):
        raise UnsupportedError("advance reservations need the node engine "
                               "(reservations=\"nodes\")")
    return reservations


# ------------------------------------------------------------------ helpers

def _check_slurm_options(policy: str, given) -> None:
    """The Slurm model is Slurm's backfill: conservative, one partition per job, queue
    order from ``priority`` at most."""
    if policy != "conservative":
        raise UnsupportedError("reservations='slurm' is Slurm's backfill, which plans every "
                               "job it tests: use policy='conservative'")
    others = [name for name in given if name != "priority"]
    if others:
        raise UnsupportedError(f"reservations='slurm' takes no {', '.join(others)} yet")


def _check_now(now) -> int:
    if isinstance(now, bool) or not isinstance(now, (int, np.integer)):
        raise InputError(f"now must be an integer number of seconds, got {now!r}", field="now")
    return int(now)
