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

from dataclasses import dataclass

import numpy as np

from .engine import _kernels
from .cluster import Cluster, NodeState
from .errors import FastschedError, InputError, UnsupportedError
from .jobs import JOB_FIELDS, JobRequest, JobTable
from .constraints import csr_take
from .engine import RunningJobs, check_node_jobs, node_availability, plan_nodes
from .policies import check_reserve_depth, get_policy
from .validation import check_jobs, reject

START, RESERVED, BLOCKED = 0, 1, 2
OUTCOME_NAMES = ("start", "reserved", "blocked")
#: "auto": the pool engine while every job fits it, else (for good) the node engine
ENGINES = ("auto", "pool", "nodes")


class StaleDecisionsError(FastschedError):
    """Decisions applied to a state that changed since the pass that made them."""


@dataclass(frozen=True)
class Decisions:
    """The outcome of one pass for every pending job, in queue order.

    ``outcome[i]`` is START (start now on ``nodes_of(i)`` with GPUs
    ``gpu_masks_of(i)``), RESERVED (expected to start at ``start_time[i]``; the
    node engine also names the nodes it holds for it) or BLOCKED (not planned
    by this pass). ``reason`` says why a job waits, with squeue's words.
    """

    now: int
    job_id: np.ndarray        # int64, queue order
    outcome: np.ndarray       # int8: START / RESERVED / BLOCKED
    start_time: np.ndarray    # int64, -1 when blocked
    node_offsets: np.ndarray  # int64, CSR over jobs: nodes chosen (START, node-engine RESERVED)
    nodes: np.ndarray         # int64 node indices
    version: int              # state version the pass read
    #: uint64 per entry of ``nodes``: bit k = GPU k taken (0 for reservations)
    gpu_mask: np.ndarray | None = None
    num_nodes: np.ndarray | None = None   # int64, nodes each job asks for
    partition: np.ndarray | None = None   # int64, each job's partition index
    engine: str = "pool"
    cluster: Cluster | None = None        # for node and partition names

    def nodes_of(self, i: int) -> np.ndarray:
        return self.nodes[self.node_offsets[i]:self.node_offsets[i + 1]]

    def gpu_masks_of(self, i: int) -> np.ndarray:
        if self.gpu_mask is None:
            return np.zeros(len(self.nodes_of(i)), dtype=np.uint64)
        return self.gpu_mask[self.node_offsets[i]:self.node_offsets[i + 1]]

    @property
    def starts(self) -> np.ndarray:
        """Job ids to start now."""
        return self.job_id[self.outcome == START]

    @property
    def reason(self) -> list[str]:
        """Slurm's pending reasons: the first waiting job of a partition waits for
        "Resources", every later one for "Priority" (higher-priority jobs exist
        for the partition); "" for jobs that start."""
        return waiting_reasons(self.outcome, self.partition).tolist()

    def to_pandas(self):
        """job_id, outcome, start_time, reason, num_nodes, and the nodes as a hostlist
        and GPU ids like ``node001(IDX:0-3)`` (needs ``cluster``; else node indices)."""
        import pandas as pd
        hosts, gpu_ids = self._names()
        num = np.diff(self.node_offsets) if self.num_nodes is None else self.num_nodes
        return pd.DataFrame({"job_id": self.job_id,
                             "outcome": [OUTCOME_NAMES[o] for o in self.outcome],
                             "start_time": self.start_time, "reason": self.reason,
                             "num_nodes": num, "nodes": hosts, "gpu_ids": gpu_ids})

    def _names(self) -> tuple[list[str], list[str]]:
        from .hostlist import compress
        from .results import format_gpu_ids
        names = (self.cluster.node_names if self.cluster is not None
                 else [str(k) for k in range(int(self.nodes.max(initial=-1)) + 1)])
        hosts = [compress([names[k] for k in self.nodes_of(i)]) for i in range(len(self))]
        gpus = [format_gpu_ids(names, self.nodes_of(i), self.gpu_masks_of(i))
                for i in range(len(self))]
        return hosts, gpus

    def __len__(self) -> int:
        return len(self.job_id)


def waiting_reasons(outcome: np.ndarray, partition: np.ndarray | None) -> np.ndarray:
    """Per job (queue order): "" if it starts, "Resources" for the first waiting job of
    its partition, "Priority" for later ones (as squeue's REASON)."""
    reasons = np.full(len(outcome), "", dtype=object)
    waiting = np.flatnonzero(outcome != START)
    reasons[waiting] = "Priority"
    part = np.zeros(len(outcome), dtype=np.int64) if partition is None else partition
    _, first = np.unique(part[waiting], return_index=True)
    reasons[waiting[first]] = "Resources"
    return reasons


class Scheduler:
    """A queue and a cluster state, scheduled by a named policy.

    ``engine``: "pool" (one pool of identical nodes, whole-node jobs: the
    textbook algorithms), "nodes" (GPU-granular, any cluster) or "auto" (pool
    while every submitted job fits it, then the node engine for good; submit a
    whole workload, or pass "nodes", to match :func:`fastsched.simulate`
    exactly). ``available``: node availability for the node engine (see
    :func:`fastsched.engine.node_availability`).

    >>> s = Scheduler(Cluster.homogeneous(4), "easy")
    >>> s.submit(JobRequest(job_id=1, submit_time=0, time_limit=60, runtime=60, num_nodes=2))
    >>> d = s.schedule(now=0); s.apply(d); list(d.starts)
    [1]
    """

    def __init__(self, cluster: Cluster, policy: str = "easy", *, reserve_depth: int = 1,
                 engine: str = "auto", available=None):
        self.cluster = cluster
        self.policy = get_policy(policy)
        self.reserve_depth = check_reserve_depth(reserve_depth)
        if engine not in ENGINES:
            raise InputError(f"unknown engine {engine!r}; choose one of {list(ENGINES)}",
                             field="engine")
        self.available = node_availability(cluster, available)
        pool_ok = cluster.is_homogeneous() and bool(self.available.all())
        if engine == "pool" and not pool_ok:
            if not self.available.all():
                raise UnsupportedError("the pool engine has no unavailable nodes; use the "
                                       "node engine")
            check_jobs(cluster, JobTable.from_requests([]))   # raises, saying why
        self.engine = "pool" if engine != "nodes" and pool_ok else "nodes"
        self._auto = engine == "auto"
        self.state = cluster.new_state()
        self.state.state[~self.available] = NodeState.DOWN
        self._full_mask = self.state.free_gpu_mask.copy()
        self._pending = JobTable.from_requests([])
        self._running = _no_running()
        self._version = 0

    @classmethod
    def from_state(cls, cluster: Cluster, running: RunningJobs, pending: JobTable,
                   policy: str = "conservative", *, reserve_depth: int = 1,
                   engine: str = "auto", available=None) -> "Scheduler":
        """A scheduler holding ``running`` (e.g. from :meth:`SimulationResult.state_at`)
        with ``pending`` queued. Pool engine: running jobs hold whole nodes."""
        s = cls(cluster, policy, reserve_depth=reserve_depth, engine=engine,
                available=available)
        if s._auto and s.engine == "pool" and not _whole_node_jobs(cluster, running):
            s.engine = "nodes"
        s.engine = s._engine_for(pending)
        s._start_running(_checked_running(cluster, running, s.engine))
        s.submit(pending)
        return s

    # -------------------------------------------------------------- mutations
    def submit(self, jobs: JobRequest | JobTable) -> None:
        """Queue one job or a table of jobs. Rejected whole (state unchanged) if any is bad."""
        table = JobTable.from_requests([jobs]) if isinstance(jobs, JobRequest) else jobs
        engine = self._engine_for(table)
        known = np.concatenate([self._pending.job_id, self._running.job_id])
        clash = np.intersect1d(table.job_id, known)
        if len(clash):
            raise InputError(f"job id {clash[0]} is already queued or running", field="job_id")
        self._pending = _concat(self._pending, table)
        self.engine = engine
        self._version += 1

    def apply(self, decisions: Decisions) -> None:
        """Start the jobs that ``decisions`` says start now (on its nodes and GPUs)."""
        if decisions.version != self._version:
            raise StaleDecisionsError("the queue or the cluster changed since this pass; "
                                      "run schedule() again")
        started = np.flatnonzero(decisions.outcome == START)
        if not len(started):
            return
        rows = self._queue_order()[started]
        counts = np.diff(decisions.node_offsets)[started]
        entries = csr_take(decisions.node_offsets, started)[1]
        nodes = decisions.nodes[entries]
        jobs = self._pending
        new = RunningJobs.from_arrays(
            job_id=jobs.job_id[rows], planned_end=decisions.now + jobs.time_limit[rows],
            node_offsets=_offsets(counts), nodes=nodes,
            gpus=np.repeat(jobs.gpus_per_node[rows], counts),
            cpus=np.repeat(jobs.cpus_per_node[rows], counts),
            mem=np.repeat(jobs.mem_per_node[rows], counts), gpu_mask=decisions.gpu_mask[entries])
        if self.engine == "pool":
            new = _whole_nodes(self.cluster, new)
        self._start_running(new)
        keep = np.ones(len(jobs), dtype=bool)
        keep[rows] = False
        self._pending = jobs.take(keep)

    def complete(self, job_id) -> None:
        """Running job(s) ended (for any reason): free their nodes and GPUs."""
        ids = np.atleast_1d(np.asarray(job_id, dtype=np.int64))
        ended = np.isin(self._running.job_id, ids)
        missing = np.setdiff1d(ids, self._running.job_id)
        if len(missing):
            raise InputError(f"job {missing[0]} is not running", field="job_id")
        gone = _take_running(self._running, np.flatnonzero(ended))
        self._hold(gone, -1)
        self._running = _take_running(self._running, np.flatnonzero(~ended))
        self._version += 1

    # ------------------------------------------------------------ pure passes
    def schedule(self, now: int, *, full: bool = False) -> Decisions:
        """One pass at time ``now``: a decision for every pending job; changes nothing.

        Node engine: like the simulator, the pass stops after the last job that
        could start now (later jobs BLOCKED); ``full=True`` plans the whole
        queue. The pool engine always plans the whole queue.
        """
        return self._pass(_check_now(now), self.policy.name, self.reserve_depth, full,
                          self._version)

    def expected_start_times(self, now: int):
        """Every pending job's expected start under a full conservative plan, like
        ``squeue --start``: a DataFrame in queue order with job_id, partition,
        user, expected_start, num_nodes, schednodes (hostlist, "(null)" when the
        pool engine holds a count rather than nodes) and reason."""
        import pandas as pd
        d = self._pass(_check_now(now), "conservative", 1, True, -1)
        hosts, _ = d._names()
        jobs = self.pending
        names = np.array([p.name for p in self.cluster.partitions], dtype=object)
        reason = waiting_reasons(d.outcome, d.partition)
        reason[d.outcome == START] = "None"
        return pd.DataFrame({"job_id": d.job_id, "partition": names[jobs.partition],
                             "user": jobs.user, "expected_start": d.start_time,
                             "num_nodes": jobs.num_nodes,
                             "schednodes": [h or "(null)" for h in hosts], "reason": reason})

    @property
    def pending(self) -> JobTable:
        """Pending jobs in queue order."""
        return self._pending.take(self._queue_order())

    @property
    def running(self) -> list[int]:
        return sorted(self._running.job_id.tolist())

    @property
    def running_jobs(self) -> RunningJobs:
        """What the running jobs hold, and until when (planned ends)."""
        return self._running

    # -------------------------------------------------------------- internals
    def _engine_for(self, table: JobTable) -> str:
        """Validate ``table`` for the current engine; "nodes" if auto must switch."""
        if self.engine == "nodes":
            check_node_jobs(self.cluster, table, self.available)
            return "nodes"
        try:
            check_jobs(self.cluster, table)
            reject(table, table.partition != 0, "partition",
                   "names partition index {v}, the cluster has 1 partition")
            return "pool"
        except UnsupportedError:
            if not self._auto:
                raise
        check_node_jobs(self.cluster, table, self.available)
        return "nodes"

    def _queue_order(self) -> np.ndarray:
        return np.lexsort((self._pending.job_id, self._pending.submit_time))

    def _start_running(self, new: RunningJobs) -> None:
        self._hold(new, +1)
        self._running = _concat_running(self._running, new)
        self._version += 1

    def _hold(self, r: RunningJobs, sign: int) -> None:
        """Take (sign +1) or give back (-1) what ``r`` holds in ``self.state``."""
        X = self.cluster.num_nodes
        for name, amount in (("free_cpus", r.cpus), ("free_mem_mb", r.mem)):
            arr = getattr(self.state, name)
            arr -= (sign * np.bincount(r.nodes, weights=amount, minlength=X)).astype(arr.dtype)
        used = np.zeros(X, dtype=np.uint64)
        np.bitwise_or.at(used, r.nodes, r.gpu_mask)
        if sign > 0:
            self.state.free_gpu_mask &= ~used
        else:
            self.state.free_gpu_mask |= used

    def _pass(self, now: int, policy: str, depth: int, full: bool, version: int) -> Decisions:
        order = self._queue_order()
        jobs = self._pending
        if self.engine == "pool":
            outcome, planned = self._plan_pool(now, get_policy(policy).kernel_code, depth, order)
            need = np.where(outcome == START, jobs.num_nodes[order], 0).astype(np.int64)
            offsets = _offsets(need)
            idle = np.flatnonzero(np.bincount(self._running.nodes, minlength=self.cluster.num_nodes)
                                  == 0)                  # lowest-numbered idle nodes first
            nodes = idle[:offsets[-1]].astype(np.int64)
            masks = self._full_mask[nodes]
        else:
            d = plan_nodes(self.cluster, self._running, jobs, now, policy, depth,
                           self.available, full=full)
            outcome, planned, offsets = d.outcome, d.planned_start, d.node_offsets
            nodes, masks = d.nodes, d.gpu_mask
        return Decisions(now, jobs.job_id[order], outcome, planned, offsets, nodes, version,
                         gpu_mask=masks, num_nodes=jobs.num_nodes[order].astype(np.int64),
                         partition=jobs.partition[order].astype(np.int64), engine=self.engine,
                         cluster=self.cluster)

    def _plan_pool(self, now: int, policy_code: int, depth: int, order: np.ndarray):
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
                                  self._pending.num_nodes[order].astype(np.int64),
                                  self._pending.time_limit[order].astype(np.int64),
                                  policy_code, depth)


# ------------------------------------------------------------------ helpers

def _check_now(now) -> int:
    if isinstance(now, bool) or not isinstance(now, (int, np.integer)):
        raise InputError(f"now must be an integer number of seconds, got {now!r}", field="now")
    return int(now)


def _concat(a: JobTable, b: JobTable) -> JobTable:
    return JobTable(**{name: np.concatenate([getattr(a, name), getattr(b, name)])
                       for name in JOB_FIELDS})


def _offsets(counts: np.ndarray) -> np.ndarray:
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def _no_running() -> RunningJobs:
    z = np.zeros(0, dtype=np.int64)
    return RunningJobs(z, z, np.zeros(1, dtype=np.int64), z, z, z, z, np.zeros(0, np.uint64))


_ENTRY_FIELDS = ("nodes", "gpus", "cpus", "mem", "gpu_mask")


def _concat_running(a: RunningJobs, b: RunningJobs) -> RunningJobs:
    cat = {f: np.concatenate([getattr(a, f), getattr(b, f)]) for f in _ENTRY_FIELDS}
    return RunningJobs(np.concatenate([a.job_id, b.job_id]),
                       np.concatenate([a.planned_end, b.planned_end]),
                       np.concatenate([a.node_offsets, b.node_offsets[1:] + a.node_offsets[-1]]),
                       **cat)


def _take_running(r: RunningJobs, rows: np.ndarray) -> RunningJobs:
    entries = csr_take(r.node_offsets, rows)[1]
    return RunningJobs(r.job_id[rows], r.planned_end[rows],
                       _offsets(np.diff(r.node_offsets)[rows]),
                       **{f: getattr(r, f)[entries] for f in _ENTRY_FIELDS})


def _whole_node_jobs(cluster: Cluster, r: RunningJobs) -> bool:
    """Whether ``r`` could be a pool-engine state: each node held whole by one job."""
    x = np.asarray(r.nodes, dtype=np.int64)
    if len(x) and ((x < 0).any() or (x >= cluster.num_nodes).any()):
        return True                 # let the checks name the bad index
    whole = ((np.asarray(r.cpus) >= cluster.cpus[x])
             | (np.asarray(r.gpus) >= np.maximum(cluster.gpus[x], 1)))
    return bool(whole.all()) and len(np.unique(x)) == len(x)


def _whole_nodes(cluster: Cluster, r: RunningJobs) -> RunningJobs:
    """``r`` holding every CPU, GPU and MB of its nodes (the pool engine's allocation)."""
    full = cluster.new_state().free_gpu_mask
    x = r.nodes
    return RunningJobs(r.job_id, r.planned_end, r.node_offsets, x,
                       cluster.gpus[x].astype(np.int64), cluster.cpus[x].astype(np.int64),
                       cluster.mem_mb[x].astype(np.int64), full[x])


def _checked_running(cluster: Cluster, running: RunningJobs, engine: str) -> RunningJobs:
    """Validate ``running`` (InputError, field "running") and give it concrete GPU masks."""
    r = RunningJobs.from_arrays(job_id=running.job_id, planned_end=running.planned_end,
                                node_offsets=running.node_offsets, nodes=running.nodes,
                                gpus=running.gpus, cpus=running.cpus, mem=running.mem,
                                gpu_mask=running.gpu_mask)
    E, X = len(r.nodes), cluster.num_nodes
    offs = r.node_offsets
    if (len(offs) != len(r.job_id) + 1 or offs[0] != 0 or offs[-1] != E
            or (np.diff(offs) < 1).any() or len(r.planned_end) != len(r.job_id)):
        raise InputError("running: node_offsets must be a CSR (0, ..., len(nodes)) with at "
                         "least one node per job, and one planned_end per job", field="running")
    if not len(r.gpus) == len(r.cpus) == len(r.mem) == E or (
            r.gpu_mask is not None and len(r.gpu_mask) != E):
        raise InputError("running: gpus/cpus/mem/gpu_mask need one entry per (job, node)",
                         field="running")
    if E and ((r.nodes < 0).any() or (r.nodes >= X).any()):
        raise InputError("running: node index out of range", field="running")
    if (r.gpus < 0).any() or (r.cpus < 0).any() or (r.mem < 0).any():
        raise InputError("running: negative request", field="running")
    if len(np.unique(r.job_id)) != len(r.job_id):
        raise InputError("running: a job id appears twice", field="running")
    if engine == "pool":
        if len(np.unique(r.nodes)) != E:
            raise InputError("running: the pool engine gives each node to one job",
                             field="running")
        return _whole_nodes(cluster, r)
    over = ((np.bincount(r.nodes, weights=r.gpus, minlength=X) > cluster.gpus)
            | (np.bincount(r.nodes, weights=r.cpus, minlength=X) > cluster.cpus)
            | (np.bincount(r.nodes, weights=r.mem, minlength=X) > cluster.mem_mb))
    if over.any():
        raise InputError(f"running jobs hold more than node {int(np.flatnonzero(over)[0])} has",
                         field="running")
    mask = _lowest_masks(r.nodes, r.gpus) if r.gpu_mask is None else r.gpu_mask
    used = np.zeros(X, dtype=np.uint64)
    np.bitwise_or.at(used, r.nodes, mask)
    full = cluster.new_state().free_gpu_mask
    if (_popcount(mask) != r.gpus).any() or (used & ~full).any() \
            or _popcount(mask).sum() != _popcount(used).sum():
        raise InputError("running: GPU masks must have one bit per GPU held, within the "
                         "node's GPUs, and not overlap", field="running")
    return RunningJobs(r.job_id, r.planned_end, offs, r.nodes, r.gpus, r.cpus, r.mem, mask)


def _popcount(masks: np.ndarray) -> np.ndarray:
    bits = np.unpackbits(np.ascontiguousarray(masks, dtype=np.uint64).view(np.uint8))
    return bits.reshape(-1, 64).sum(axis=1).astype(np.int64)


def _lowest_masks(nodes: np.ndarray, gpus: np.ndarray) -> np.ndarray:
    """Each entry's GPUs as the node's lowest indices not taken by earlier entries."""
    order = np.argsort(nodes, kind="stable")
    g = gpus[order]
    csum = np.cumsum(g) - g
    first = np.searchsorted(nodes[order], nodes[order], side="left")
    before = np.empty(len(nodes), dtype=np.int64)
    before[order] = csum - csum[first]
    ones = np.where(gpus >= 64, np.uint64(0xFFFFFFFFFFFFFFFF),
                    (np.uint64(1) << np.minimum(gpus, 63).astype(np.uint64)) - np.uint64(1))
    return (ones << before.astype(np.uint64)).astype(np.uint64)
