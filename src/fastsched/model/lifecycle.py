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
A job that may not be requeued ends NODE_FAIL.

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
    requeue ``delay`` (seconds from the kill to the new attempt's begin time)."""

    requeue: np.ndarray
    checkpoint_interval: np.ndarray
    checkpoint_cost: np.ndarray
    delay: int = REQUEUE_DELAY

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
        if isinstance(self.delay, bool) or int(self.delay) != self.delay or self.delay < 0:
            raise InputError(f"requeue delay must be a whole number of seconds >= 0, got "
                             f"{self.delay!r}", field="requeue_delay")

    @classmethod
    def of(cls, n: int, *, requeue=True, checkpoint_interval=0, checkpoint_cost=0,
           delay: int = REQUEUE_DELAY) -> "Lifecycle":
        """Scalars or arrays per job, for ``n`` jobs."""
        def col(v, dtype):
            a = np.asarray(v, dtype=dtype)
            return np.full(n, a, dtype=dtype) if a.ndim == 0 else np.ascontiguousarray(a)
        return cls(col(requeue, bool), col(checkpoint_interval, np.int64),
                   col(checkpoint_cost, np.int64), int(delay))

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


def goodput(elapsed, gpus, interval, cost, killed, pull=None) -> dict:
    """GPU-hours of a set of attempts: ``elapsed`` seconds each on ``gpus`` GPUs,
    checkpointing every ``interval`` (cost ``cost`` each), ``killed`` (bool: a
    node failure ended it), the first ``pull`` seconds of each pulling its
    container image (None: none; the checkpoints count from the pull's end).
    Returns allocated, lost (killed attempts' work after their last checkpoint),
    checkpoint overhead, image pull (``pull_gpu_hours``, only with ``pull``) and
    useful GPU-hours, and goodput = useful / allocated (None: nothing allocated)."""
    elapsed = np.asarray(elapsed, dtype=np.int64)
    g = np.asarray(gpus, dtype=np.float64)
    pulled = np.zeros(len(elapsed), dtype=np.int64) if pull is None else \
        np.minimum(np.asarray(pull, dtype=np.int64), elapsed)
    ran = elapsed - pulled
    lost = np.where(killed, ran - saved_progress(ran, interval), 0)
    overhead = checkpoints_written(ran, interval) * np.asarray(cost, dtype=np.int64)
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
