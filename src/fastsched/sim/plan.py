"""Plan a cluster's moment: every pending job's start and nodes (``fastsched plan``).

Three reservation models (docs/slurm-model.md):

* ``"slurm"``: what Slurm 22.05's backfill plans on this state, job for job
  (:mod:`fastsched.engine.slurmplan`): whole nodes reserved for future jobs, the
  will-run test's end-time groups, ``bf_resolution`` slots, ``bf_window``,
  ``bf_max_job_test``, cons_tres's best-fit node choice. Conservative by nature:
  every job tested gets a reservation.
* ``"nodes"``: fastsched's GPU-granular planning (:func:`fastsched.plan_nodes` with the
  whole queue walked): GPU counts reserved, better packing than Slurm.
* ``"counts"``: the partition's GPUs as one pool (the counts model of SWF traces): a
  job needs nodes x GPUs per node of it; starts only, no node sets.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..engine import slurmplan
from ..engine.inputs import node_availability
from ..engine.plan import plan_nodes
from ..engine.running import RunningJobs
from ..model.cluster import Cluster
from ..model.errors import ConfigWarning, InputError, UnsupportedError
from ..model.jobs import JobTable
from ..model.planstate import PlanState

RESERVATION_MODELS = ("slurm", "nodes", "counts")
PLAN_POLICIES = ("conservative", "easy")
#: Slurm 22.05's defaults (slurm.conf(5), SchedulerParameters)
DEFAULT_RESOLUTION = 60
DEFAULT_WINDOW = 86400
DEFAULT_MAX_JOB_TEST = 500


@dataclass
class Planned:
    """The plan, in queue order: ``start`` (epoch s; -1 where none is planned within
    the window or the queue depth), ``started`` (the job starts now), the nodes of job
    q at ``nodes[node_offsets[q]:node_offsets[q+1]]`` (node indices of the cluster)."""

    job_id: np.ndarray
    start: np.ndarray
    started: np.ndarray
    node_offsets: np.ndarray
    nodes: np.ndarray

    def reasons(self) -> list[str]:
        """squeue's reason: "None" for a start now, "Resources" for the first job that
        waits, "Priority" after it."""
        out, first = [], True
        for s in self.started:
            out.append("None" if s else ("Resources" if first else "Priority"))
            first = first and bool(s)
        return out

    def to_pandas(self, cluster: Cluster | None = None):
        import pandas as pd
        cols = {"job_id": self.job_id, "planned_start": self.start, "started": self.started}
        if cluster is not None:
            from ..io.planstate import nodelists
            cols["nodelist"] = nodelists(cluster, self.node_offsets, self.nodes)
        cols["reason"] = self.reasons()
        return pd.DataFrame(cols)


def plan(cluster: Cluster, state: PlanState, now: int, *, reservations: str = "slurm",
         policy: str = "conservative", resolution: int | None = None,
         window: int | None = None, max_job_test: int | None = None) -> Planned:
    """Plan ``state``'s queue at ``now`` under a reservation model; changes nothing.

    ``policy``: conservative (every job planned) or easy (only the first blocked job
    is; the others get -1 unless they start now); Slurm's backfill is conservative, so
    ``reservations="slurm"`` takes only that (bound its depth with ``max_job_test``).

    ``resolution``/``window``/``max_job_test`` default to the cluster's
    SchedulerParameters (bf_resolution, bf_window, bf_max_job_test), else Slurm's
    defaults (60 s, 1 day, 500). The queue is in Slurm's order (``sort_job_queue2``):
    partition PriorityTier, then priority when ``state`` has priorities (higher
    first), then job id (priority/basic's order: submission). Running jobs that
    started at or after ``now`` were started by this very cycle: they join the queue
    by job id (at its head when it has priorities), so that a snapshot taken just after
    a cycle replays it."""
    if reservations not in RESERVATION_MODELS:
        raise InputError(f"reservations must be one of {', '.join(RESERVATION_MODELS)}",
                         field="reservations")
    if policy not in PLAN_POLICIES:
        raise InputError(f"policy must be one of {', '.join(PLAN_POLICIES)}", field="policy")
    if reservations == "slurm" and policy != "conservative":
        raise UnsupportedError("Slurm's backfill plans every job it tests (conservative); "
                               "bound its depth with max_job_test (bf_max_job_test)")
    now = int(now)
    if reservations == "slurm":
        _check_slurm_settings(cluster, state)
    res, win, depth = _parameters(cluster, resolution, window, max_job_test)
    caps = _caps(cluster, state)
    masks, tiers, job_part, default = _partitions(cluster, state)
    running, queue = _split(state, now, tiers[job_part])
    up = node_availability(cluster, cluster.node_state)
    q_part = np.array([default if is_run else job_part[i] for is_run, i in queue], np.int64)
    if reservations != "slurm":
        plan_other = _plan_nodes if reservations == "nodes" else _plan_counts
        return plan_other(cluster, state, running, queue, now, masks[_one(q_part)] & up,
                          policy, res, win)
    start, started, ptr, nodes = slurmplan.plan_cycle(
        cluster.gpus, np.asarray(cluster.cpus), _weights(cluster), masks,
        _running_arrays(state, running), _queue_arrays(state, queue) + (q_part,), now,
        resolution=res, window=win, max_job_test=depth, available=up,
        users=_users(state, queue), caps=caps)
    return Planned(_ids(state, queue), start, started, ptr, nodes)


def _check_slurm_settings(cluster: Cluster, state: PlanState) -> None:
    """The Slurm model is select/cons_tres (cons_res chooses nodes the same way for
    these jobs) ordered by priority; say so where the cluster's slurm.conf differs."""
    s = cluster.settings
    if s.select_type and s.select_type.lower() not in ("select/cons_tres", "select/cons_res"):
        raise UnsupportedError(f"SelectType={s.select_type}: the slurm planning model is "
                               "select/cons_tres's")
    if "multifactor" in (s.priority_type or "").lower() and state.pend_priority is None:
        warnings.warn(ConfigWarning(f"PriorityType={s.priority_type} but the pending jobs "
                                    "carry no priority column: the queue is planned in "
                                    "job-id order"), stacklevel=3)


def _parameters(cluster, resolution, window, max_job_test):
    s = cluster.settings
    res = resolution or s.bf_resolution() or DEFAULT_RESOLUTION
    win = window or s.bf_window() or DEFAULT_WINDOW
    depth = max_job_test or s.scheduler_parameters.get("bf_max_job_test", DEFAULT_MAX_JOB_TEST)
    for name, v in (("resolution", res), ("window", win), ("max_job_test", depth)):
        if int(v) < 1:
            raise InputError(f"{name} must be >= 1", field=name)
    return int(res), int(win), int(depth)


#: SchedulerParameters capping the jobs a cycle tests per partition, user, user and
#: partition (``_job_exceeds_max_bf_param``)
CAP_PARAMETERS = ("bf_max_job_part", "bf_max_job_user", "bf_max_job_user_part")


def _caps(cluster: Cluster, state: PlanState) -> tuple[int, int, int]:
    params = cluster.settings.scheduler_parameters
    caps = tuple(int(params.get(name, 0) or 0) for name in CAP_PARAMETERS)
    if (caps[1] or caps[2]) and state.pend_user is None:
        warnings.warn(ConfigWarning("bf_max_job_user/bf_max_job_user_part are set but the "
                                    "pending jobs carry no user column: not applied"),
                      stacklevel=3)
    return caps


def _users(state: PlanState, queue) -> np.ndarray:
    """An integer per queued job for its user; jobs of unknown users are their own."""
    names = state.pend_user
    labels = [f"running job {state.run_id[i]}" if is_run else
              (names[i] if names is not None and names[i] else f"job {state.pend_id[i]}")
              for is_run, i in queue]
    return np.unique(np.array(labels, dtype=object), return_inverse=True)[1].ravel() \
        if labels else np.zeros(0, np.int64)


def _partitions(cluster: Cluster, state: PlanState):
    """(bool [P, nodes] per partition, PriorityTier per partition, partition per pending
    job, the default partition); jobs that name none are in the default partition."""
    n = len(cluster.node_names)
    parts = cluster.partitions
    if not parts:
        return (np.ones((1, n), bool), np.zeros(1, np.int64),
                np.zeros(len(state.pend_id), int), 0)
    masks = np.zeros((len(parts), n), bool)
    for i, p in enumerate(parts):
        masks[i, p.nodes] = True
    index = {p.name: i for i, p in enumerate(parts)}
    default = index.get(cluster.default_partition, 0)
    names = state.pend_partition or [""] * len(state.pend_id)
    job_part = np.empty(len(names), int)
    for q, name in enumerate(names):
        if "," in name:
            raise UnsupportedError(f"job {state.pend_id[q]} names several partitions "
                                   f"({name}): the slurm planning model takes one per job")
        if name and name not in index:
            raise InputError(f"job {state.pend_id[q]}: partition {name!r} is not in the "
                             "cluster", field="partition")
        job_part[q] = index[name] if name else default
    tiers = np.array([p.priority_tier for p in parts], np.int64)
    return masks, tiers, job_part, default


def _split(state: PlanState, now: int, pend_tier):
    """Running jobs held at ``now``, and the queue: (is_running_job, index) pairs."""
    late = state.started_by(now)
    running = np.flatnonzero(~late)
    prio = np.zeros(len(state.pend_id), np.int64) if state.pend_priority is None \
        else state.pend_priority
    order = np.lexsort((state.pend_id, -prio, -np.asarray(pend_tier, np.int64)))
    queue = [(False, int(q)) for q in order]
    if late.any():
        ids = [state.pend_id[q] for _, q in queue]
        in_id_order = ids == sorted(ids)
        for r in sorted(np.flatnonzero(late), key=lambda r: state.run_id[r], reverse=True):
            at = int(np.searchsorted(ids, state.run_id[r])) if in_id_order else 0
            queue.insert(at, (True, int(r)))
            ids.insert(at, state.run_id[r])
    return running, queue


def _weights(cluster: Cluster) -> np.ndarray:
    if cluster.weight is None:
        return np.ones(len(cluster.node_names), np.int64)
    return np.asarray(cluster.weight, np.int64)


def _running_arrays(state: PlanState, rows):
    counts = np.diff(state.run_offsets)[rows]
    ptr = np.concatenate(([0], np.cumsum(counts)))
    nodes = np.concatenate([state.run_nodes[state.run_offsets[r]:state.run_offsets[r + 1]]
                            for r in rows]) if len(rows) else np.zeros(0, np.int64)
    per_node = np.diff(ptr)
    return (state.run_end[rows], ptr, nodes, np.repeat(state.run_gpus[rows], per_node),
            np.repeat(state.run_cores[rows], per_node))


def _queue_arrays(state: PlanState, queue):
    def col(run_col, pend_col):
        return np.array([run_col[i] if is_run else pend_col[i] for is_run, i in queue],
                        dtype=np.int64)
    run_nodes = np.diff(state.run_offsets)
    run_limit = state.run_end - state.run_start
    return (col(run_nodes, state.pend_nodes), col(state.run_gpus, state.pend_gpus),
            col(state.run_cores, state.pend_cores), col(run_limit, state.pend_limit))


def _ids(state: PlanState, queue) -> np.ndarray:
    return np.array([state.run_id[i] if is_run else state.pend_id[i] for is_run, i in queue],
                    dtype=np.int64)


def _one(q_part) -> int:
    if len(set(q_part.tolist())) > 1:
        raise UnsupportedError("the nodes and counts models of fastsched plan take one "
                               "partition")
    return int(q_part[0]) if len(q_part) else 0


def _plan_counts(cluster, state, running, queue, now, part, policy, res, win):
    """The partition's GPUs as one pool (``plan_pool``, the counts model's pass)."""
    from ..engine import _kernels
    from ..model.policies import get_policy
    end, ptr, nodes, gpus, _ = _running_arrays(state, running)
    held = np.add.reduceat(gpus, ptr[:-1]) if len(gpus) else np.zeros(len(end), np.int64)
    inside = np.array([part[nodes[ptr[r]:ptr[r + 1]]].any() for r in range(len(end))], bool)
    release_time, inverse = np.unique(np.maximum(end[inside], now + 1), return_inverse=True)
    release = np.bincount(inverse, weights=held[inside], minlength=len(release_time))
    free_now = int(cluster.gpus[part].sum() - held[inside].sum())
    k, g, _, limit = _queue_arrays(state, queue)
    outcome, start = _kernels.plan_pool(now, max(free_now, 0), release_time,
                                        release.astype(np.int64), k * g, limit,
                                        *get_policy(policy).kernel_rules(1))
    start = np.asarray(start, np.int64)
    start[start > now + win] = -1                     # beyond the window, as the others
    return Planned(_ids(state, queue), start, np.asarray(outcome) == 0,
                   np.zeros(len(k) + 1, np.int64), np.zeros(0, np.int64))


def _plan_nodes(cluster, state, running, queue, now, part, policy, res, win):
    end, ptr, nodes, gpus, cores = _running_arrays(state, running)
    run = RunningJobs.from_arrays(
        job_id=state.run_id[running], planned_end=np.maximum(end, now + 1), node_offsets=ptr,
        nodes=nodes, gpus=gpus, cpus=cores, mem=np.zeros(len(nodes), np.int64))
    k, g, c, limit = _queue_arrays(state, queue)
    jobs = JobTable.from_arrays(job_id=_ids(state, queue), submit_time=np.full(len(k), now),
                                time_limit=limit, runtime=limit, num_nodes=k,
                                cpus_per_node=c, gpus_per_node=g)
    d = plan_nodes(cluster, run, jobs, now, policy, available=part, full=True,
                   rank=np.arange(len(k)), resolution=res, window=win)
    starts = np.asarray(d.planned_start, np.int64)
    offsets = np.concatenate(([0], np.cumsum([len(d.nodes_of(i)) for i in range(len(k))])))
    chosen = np.concatenate([d.nodes_of(i) for i in range(len(k))]) if len(k) else \
        np.zeros(0, np.int64)
    starts = np.where(starts >= 0, starts, -1)
    return Planned(jobs.job_id, starts, starts == now, offsets, chosen.astype(np.int64))


def slurm_pass(cluster: Cluster, running: RunningJobs, jobs: JobTable, now: int, available,
               *, resolution: int | None = None, window: int | None = None,
               max_job_test: int | None = None):
    """One Slurm backfill cycle over a :class:`~fastsched.sim.scheduler.Scheduler`'s state:
    ``running`` holds its nodes until ``planned_end``, ``jobs`` queue in this order, in
    partition ``jobs.partition``. Returns :func:`fastsched.engine.slurmplan.plan_cycle`'s
    (start, started, node offsets, nodes)."""
    res, win, depth = _parameters(cluster, resolution, window, max_job_test)
    n = len(cluster.node_names)
    masks = np.ones((1, n), bool)
    if cluster.partitions:
        masks = np.zeros((len(cluster.partitions), n), bool)
        for i, p in enumerate(cluster.partitions):
            masks[i, p.nodes] = True
    end = np.maximum(running.planned_end, now + 1)
    queue = (jobs.num_nodes, jobs.gpus_per_node, jobs.cpus_per_node, jobs.time_limit,
             jobs.partition if cluster.partitions else np.zeros(len(jobs), np.int64))
    return slurmplan.plan_cycle(
        cluster.gpus, np.asarray(cluster.cpus), _weights(cluster), masks,
        (end, running.node_offsets, running.nodes, running.gpus, running.cpus), queue, now,
        resolution=res, window=win, max_job_test=depth, available=available)
