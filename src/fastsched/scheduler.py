"""The scheduler as a library: submit jobs, run a pass, apply its decisions.

A pass (:meth:`Scheduler.schedule`) reads the state and returns
:class:`Decisions` for every pending job without changing anything; only
:meth:`Scheduler.apply` (and :meth:`Scheduler.complete`) mutate. So a pass can
also be a pure "what if", and :meth:`Scheduler.expected_start_times` gives every
pending job's expected start, like ``squeue --start``.

The same compiled planner as the simulator decides (see docs/semantics.md);
tests check that driving this API through a trace gives the simulator's
schedule.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _kernels
from .cluster import Cluster
from .errors import FastschedError, InputError
from .jobs import JOB_FIELDS, JobRequest, JobTable
from .policies import check_reserve_depth, get_policy
from .validation import check_jobs

START, RESERVED, BLOCKED = 0, 1, 2
OUTCOME_NAMES = ("start", "reserved", "blocked")
#: squeue-style reason per outcome: a reserved job waits for resources, a
#: blocked one behind higher-priority jobs (it fits nowhere without delaying them)
REASONS = ("", "Resources", "Priority")


class StaleDecisionsError(FastschedError):
    """Decisions applied to a state that changed since the pass that made them."""


@dataclass(frozen=True)
class Decisions:
    """The outcome of one pass for every pending job, in queue order.

    ``outcome[i]`` is START (start now on ``nodes_of(i)``), RESERVED (expected
    to start at ``start_time[i]``) or BLOCKED (``reason[i]`` says why).
    """

    now: int
    job_id: np.ndarray        # int64, queue order
    outcome: np.ndarray       # int8: START / RESERVED / BLOCKED
    start_time: np.ndarray    # int64, -1 when blocked
    node_offsets: np.ndarray  # int64, CSR over jobs: nodes chosen for START jobs
    nodes: np.ndarray         # int64 node indices
    version: int              # state version the pass read

    def nodes_of(self, i: int) -> np.ndarray:
        return self.nodes[self.node_offsets[i]:self.node_offsets[i + 1]]

    @property
    def starts(self) -> np.ndarray:
        """Job ids to start now."""
        return self.job_id[self.outcome == START]

    @property
    def reason(self) -> list[str]:
        return [REASONS[o] for o in self.outcome]

    def to_pandas(self):
        import pandas as pd
        return pd.DataFrame({"job_id": self.job_id,
                             "outcome": [OUTCOME_NAMES[o] for o in self.outcome],
                             "start_time": self.start_time, "reason": self.reason,
                             "num_nodes": np.diff(self.node_offsets)})

    def __len__(self) -> int:
        return len(self.job_id)


class Scheduler:
    """A queue and a cluster state, scheduled by a named policy.

    >>> s = Scheduler(Cluster.homogeneous(4), "easy")
    >>> s.submit(JobRequest(job_id=1, submit_time=0, time_limit=60, runtime=60, num_nodes=2))
    >>> d = s.schedule(now=0); s.apply(d); list(d.starts)
    [1]
    """

    def __init__(self, cluster: Cluster, policy: str = "easy", *, reserve_depth: int = 1):
        self.cluster = cluster
        self.policy = get_policy(policy)
        self.reserve_depth = check_reserve_depth(reserve_depth)
        check_jobs(cluster, JobTable.from_requests([]))     # the cluster itself is supported
        self.state = cluster.new_state()
        self._pending = JobTable.from_requests([])
        self._running: dict[int, tuple[int, int, np.ndarray]] = {}  # id -> start, limit, nodes
        self._version = 0

    # -------------------------------------------------------------- mutations
    def submit(self, jobs: JobRequest | JobTable) -> None:
        """Queue one job or a table of jobs. Rejected whole (state unchanged) if any is bad."""
        table = JobTable.from_requests([jobs]) if isinstance(jobs, JobRequest) else jobs
        check_jobs(self.cluster, table)
        known = np.concatenate([self._pending.job_id,
                                np.fromiter(self._running, dtype=np.int64, count=len(self._running))])
        clash = np.intersect1d(table.job_id, known)
        if len(clash):
            raise InputError(f"job id {clash[0]} is already queued or running", field="job_id")
        self._pending = _concat(self._pending, table)
        self._version += 1

    def apply(self, decisions: Decisions) -> None:
        """Start the jobs that ``decisions`` says start now."""
        if decisions.version != self._version:
            raise StaleDecisionsError("the queue or the cluster changed since this pass; "
                                      "run schedule() again")
        started = decisions.outcome == START
        if not started.any():
            return
        order = self._queue_order()
        limits = self._pending.time_limit[order]
        for i in np.flatnonzero(started):
            nodes = decisions.nodes_of(i)
            self._running[int(decisions.job_id[i])] = (decisions.now, int(limits[i]), nodes)
            self.state.free_cpus[nodes] = 0
            self.state.free_gpu_mask[nodes] = 0
            self.state.free_mem_mb[nodes] = 0
        keep = np.ones(len(self._pending), dtype=bool)
        keep[order[started]] = False
        self._pending = self._pending.take(keep)
        self._version += 1

    def complete(self, job_id: int) -> None:
        """A running job ended (for any reason): free its nodes."""
        try:
            _, _, nodes = self._running.pop(int(job_id))
        except KeyError:
            raise InputError(f"job {job_id} is not running", field="job_id") from None
        full = self.cluster.new_state()
        self.state.free_cpus[nodes] = full.free_cpus[nodes]
        self.state.free_gpu_mask[nodes] = full.free_gpu_mask[nodes]
        self.state.free_mem_mb[nodes] = full.free_mem_mb[nodes]
        self._version += 1

    # ------------------------------------------------------------ pure passes
    def schedule(self, now: int) -> Decisions:
        """One pass at time ``now``: a decision for every pending job; changes nothing."""
        outcome, planned = self._plan(now, self.policy.kernel_code, self.reserve_depth)
        order = self._queue_order()
        need = np.where(outcome == START, self._pending.num_nodes[order], 0).astype(np.int64)
        offsets = np.zeros(len(order) + 1, dtype=np.int64)
        np.cumsum(need, out=offsets[1:])
        free = np.flatnonzero(self._idle_nodes())   # lowest-numbered free nodes first
        return Decisions(int(now), self._pending.job_id[order], outcome, planned, offsets,
                         free[:offsets[-1]].astype(np.int64), self._version)

    def expected_start_times(self, now: int):
        """Every pending job's expected start under a full (conservative) plan, like
        ``squeue --start``: a DataFrame of job_id, expected_start (queue order)."""
        import pandas as pd
        _, planned = self._plan(now, get_policy("conservative").kernel_code, 1)
        return pd.DataFrame({"job_id": self._pending.job_id[self._queue_order()],
                             "expected_start": planned})

    @property
    def pending(self) -> JobTable:
        return self._pending.take(self._queue_order())

    @property
    def running(self) -> list[int]:
        return sorted(self._running)

    # -------------------------------------------------------------- internals
    def _queue_order(self) -> np.ndarray:
        return np.lexsort((self._pending.job_id, self._pending.submit_time))

    def _idle_nodes(self) -> np.ndarray:
        return self.state.free_cpus == self.cluster.cpus

    def _plan(self, now: int, policy_code: int, depth: int):
        ends = np.array([s + lim for s, lim, _ in self._running.values()], dtype=np.int64)
        sizes = np.array([len(n) for _, _, n in self._running.values()], dtype=np.int64)
        if len(ends) and ends.min() <= now:
            late = [j for j, (s, lim, _) in self._running.items() if s + lim <= now]
            raise InputError(f"job {late[0]} is still running at {now}, past its time limit; "
                             "complete() it first", field="now")
        release_time, inverse = np.unique(ends, return_inverse=True)
        release_nodes = np.bincount(inverse, weights=sizes,
                                    minlength=len(release_time)).astype(np.int64)
        order = self._queue_order()
        return _kernels.plan_pool(int(now), int(self._idle_nodes().sum()), release_time,
                                  release_nodes, self._pending.num_nodes[order].astype(np.int64),
                                  self._pending.time_limit[order].astype(np.int64),
                                  policy_code, depth)


def _concat(a: JobTable, b: JobTable) -> JobTable:
    return JobTable(**{name: np.concatenate([getattr(a, name), getattr(b, name)])
                       for name in JOB_FIELDS})
