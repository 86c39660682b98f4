"""What happens to a job a node failure kills: requeue and checkpoint resume.

Per job: whether it may be requeued (``sbatch --requeue`` / ``--no-requeue``;
Slurm's default is ``JobRequeue=1`` in slurm.conf: batch jobs may), and its
checkpoints: every ``checkpoint_interval`` seconds of an attempt's run the job
has saved its progress (0: it never checkpoints), and each checkpoint took
``checkpoint_cost`` of those seconds (writing, not computing). The ``runtime``
of a job is its run uninterrupted, checkpoints included.

An attempt killed ``e`` seconds after its start keeps ``e // I * I`` seconds of
progress (the last multiple of the interval ``I``; none without checkpoints);
the rest of ``e`` is lost. The requeued attempt runs what is left, ``runtime -
saved``, and becomes eligible ``delay`` seconds after the kill (Slurm 22.05
``batch_requeue_fini`` sets the begin time to now + the job credential's
lifetime + 1: ``AuthInfo=cred_expire``, 120 s by default in ``slurm_cred.c``;
it also resets the submit and accrue times, so priority age starts again).
A job that may not be requeued ends NODE_FAIL. A ``--no-kill`` job on several nodes
shrinks instead while it keeps ``nodes_min`` of them (:mod:`fastsched.model.elastic`).

GPU-time of a run splits into useful work, checkpoint overhead (``cost`` per
checkpoint an attempt completed) and lost work (what killed attempts ran
after their last checkpoint); goodput = useful / allocated
(:func:`goodput`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InputError

#: Slurm's requeue delay by default: AuthInfo=cred_expire (120 s) + 1
REQUEUE_DELAY = 121


@dataclass(frozen=True)
class Lifecycle:
    """Per job (the workload's order): ``requeue`` (bool), ``checkpoint_interval``
    and ``checkpoint_cost`` (int64 seconds; interval 0 = no checkpoints), and the
    requeue ``delay`` (seconds from the kill to the new attempt's begin time).
    Elastic jobs (:mod:`fastsched.model.elastic`): ``no_kill`` (bool, sbatch
    ``--no-kill``; None: no job) and ``nodes_min`` (int64, the fewest nodes it starts
    on, from ``--nodes=MIN-MAX``, and runs on after a failure; 0 or None: it starts
    on all, and a ``--no-kill`` job runs on down to one); ``regrow``: a running
    ``--no-kill`` job on fewer nodes than it asks for takes nodes that come back (the
    malleable model's other half; off by default, as in Slurm)."""

    requeue: np.ndarray
    checkpoint_interval: np.ndarray
    checkpoint_cost: np.ndarray
    delay: int = REQUEUE_DELAY
    no_kill: np.ndarray | None = None
    nodes_min: np.ndarray | None = None
    regrow: bool = False

    def __post_init__(self):
        n = len(self.requeue)
        for name in ("checkpoint_interval", "checkpoint_cost"):
            a = np.asarray(getattr(self, name))
            if a.shape != (n,):
                raise InputError(f"{name}: {a.shape[0] if a.ndim else 0} entries for {n} "
                                 "jobs", field=name)
        interval = np.asarray(self.checkpoint_interval)
        cost = np.asarray(self.checkpoint_cost)
        bad = (interval < 0) | (cost < 0) | ((interval > 0) & (cost >= interval)) \
            | ((interval == 0) & (cost != 0))
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise InputError(f"job row {k}: checkpoint interval {interval[k]} s and cost "
                             f"{cost[k]} s: the interval must be >= 0 and the cost "
                             "below it (0 without an interval)", field="checkpoint_cost")
        self._check_elastic(n)
        # Slurm's requeue sets the begin time to now + requeue_delay + 1 s (``delay`` is
        # that sum): a requeued job is never eligible in the second it was stopped (a
        # preempted one would otherwise take back its preemptor's resources at once,
        # again and again)
        if isinstance(self.delay, bool) or int(self.delay) != self.delay or self.delay < 1:
            raise InputError(f"requeue delay must be a whole number of seconds >= 1, got "
                             f"{self.delay!r}", field="requeue_delay")

    def _check_elastic(self, n: int) -> None:
        for name in ("no_kill", "nodes_min"):
            a = getattr(self, name)
            if a is not None and np.asarray(a).shape != (n,):
                raise InputError(f"{name}: {np.asarray(a).size} entries for {n} jobs",
                                 field=name)
        if self.nodes_min is not None and (np.asarray(self.nodes_min) < 0).any():
            k = int(np.flatnonzero(np.asarray(self.nodes_min) < 0)[0])
            raise InputError(f"job row {k}: nodes_min {self.nodes_min[k]} must be >= 0",
                             field="nodes_min")

    @property
    def elastic(self) -> bool:
        """Whether any job may shrink after a node failure (``--no-kill``)."""
        return self.no_kill is not None and bool(np.asarray(self.no_kill).any())

    @property
    def ranged(self) -> bool:
        """Whether any job has a node range (``nodes_min`` set: it may start on fewer
        nodes than it asks for, :mod:`fastsched.model.elastic`)."""
        return self.nodes_min is not None and bool((np.asarray(self.nodes_min) > 0).any())

    def start_nodes(self, num_nodes) -> np.ndarray:
        """The fewest nodes each job starts on: ``nodes_min`` where set (> 0; from
        ``--nodes=MIN-MAX``), else all its ``num_nodes``."""
        num_nodes = np.asarray(num_nodes, dtype=np.int64)
        if self.nodes_min is None:
            return num_nodes.copy()
        low = np.asarray(self.nodes_min, dtype=np.int64)
        return np.where(low > 0, np.minimum(low, num_nodes), num_nodes)

    def min_nodes(self, num_nodes) -> np.ndarray:
        """The fewest nodes each job keeps running on: ``nodes_min`` (at least 1) for a
        ``--no-kill`` job, else all its ``num_nodes`` (it never shrinks)."""
        num_nodes = np.asarray(num_nodes, dtype=np.int64)
        if not self.elastic:
            return num_nodes.copy()
        low = np.ones(len(num_nodes), dtype=np.int64) if self.nodes_min is None else \
            np.maximum(np.asarray(self.nodes_min, dtype=np.int64), 1)
        return np.where(np.asarray(self.no_kill, dtype=bool), low, num_nodes)

    @classmethod
    def of(cls, n: int, *, requeue=True, checkpoint_interval=0, checkpoint_cost=0,
           delay: int = REQUEUE_DELAY, no_kill=None, nodes_min=None,
           regrow: bool = False) -> "Lifecycle":
        """Scalars or arrays per job, for ``n`` jobs."""
        def col(v, dtype):
            if v is None:
                return None
            a = np.asarray(v, dtype=dtype)
            return np.full(n, a, dtype=dtype) if a.ndim == 0 else np.ascontiguousarray(a)
        return cls(col(requeue, bool), col(checkpoint_interval, np.int64),
                   col(checkpoint_cost, np.int64), int(delay), col(no_kill, bool),
                   col(nodes_min, np.int64), bool(regrow))

    def __len__(self) -> int:
        return len(self.requeue)


def saved_progress(elapsed, interval):
    """Seconds of progress an attempt that ran ``elapsed`` keeps: the last multiple
    of its checkpoint ``interval`` (0 without checkpoints)."""
    elapsed = np.asarray(elapsed, dtype=np.int64)
    interval = np.asarray(interval, dtype=np.int64)
    return np.where(interval > 0, elapsed // np.maximum(interval, 1) * interval, 0)


def checkpoints_written(elapsed, interval):
    """How many checkpoints an attempt that ran ``elapsed`` completed."""
    elapsed = np.asarray(elapsed, dtype=np.int64)
    interval = np.asarray(interval, dtype=np.int64)
    return np.where(interval > 0, elapsed // np.maximum(interval, 1), 0)


def goodput(elapsed, gpus, interval, cost, killed, pull=None, before=None,
            attempt_run=None) -> dict:
    """GPU-hours of a set of attempts: ``elapsed`` seconds each on ``gpus`` GPUs,
    checkpointing every ``interval`` (cost ``cost`` each), ``killed`` (bool: a
    node failure ended it), the first ``pull`` seconds of each pulling its
    container image (None: none; the checkpoints count from the pull's end).
    Records that are shapes of an elastic attempt (:mod:`fastsched.model.elastic`):
    ``before``, the seconds its attempt ran after the pull before the record began,
    and ``attempt_run``, the attempt's whole run after the pull (its checkpoints
    count over the attempt; ``killed``: the attempt was). None: each record is a
    whole attempt.
    Returns allocated, lost (killed attempts' work after their last checkpoint),
    checkpoint overhead, image pull (``pull_gpu_hours``, only with ``pull``) and
    useful GPU-hours, and goodput = useful / allocated (None: nothing allocated)."""
    elapsed = np.asarray(elapsed, dtype=np.int64)
    g = np.asarray(gpus, dtype=np.float64)
    pulled = np.zeros(len(elapsed), dtype=np.int64) if pull is None else \
        np.minimum(np.asarray(pull, dtype=np.int64), elapsed)
    ran = elapsed - pulled
    if before is None:
        lost = np.where(killed, ran - saved_progress(ran, interval), 0)
        overhead = checkpoints_written(ran, interval) * np.asarray(cost, dtype=np.int64)
    else:
        before = np.asarray(before, dtype=np.int64)
        kept = np.clip(saved_progress(attempt_run, interval) - before, 0, ran)
        lost = np.where(killed, ran - kept, 0)
        overhead = (checkpoints_written(before + ran, interval)
                    - checkpoints_written(before, interval)) * np.asarray(cost, dtype=np.int64)
    hours = 3600.0
    allocated = float(np.dot(g, elapsed)) / hours
    lost_h = float(np.dot(g, lost)) / hours
    over_h = float(np.dot(g, overhead)) / hours
    pull_h = float(np.dot(g, pulled)) / hours
    useful = allocated - lost_h - over_h - pull_h
    out = {"allocated_gpu_hours": allocated, "lost_gpu_hours": lost_h,
           "checkpoint_gpu_hours": over_h, "useful_gpu_hours": useful,
           "goodput": useful / allocated if allocated > 0 else None}
    if pull is not None:
        out["pull_gpu_hours"] = pull_h
    return out
