"""Jobs killed by a node failure, and their requeued attempts, for the event loop.

A ``down`` node event kills every job running on the nodes (those not ending at
that very time). A killed job that may be requeued goes back to the queue as a
new attempt of the same job index: its begin time is ``delay`` seconds later
(Slurm 22.05 ``batch_requeue_fini``: begin_time = now + the credential lifetime
+ 1, ``AuthInfo=cred_expire`` defaulting to 120 s in ``slurm_cred.c``), and its
runtime is what is left after its last checkpoint: an attempt that ran ``e``
seconds of a job checkpointing every ``I`` seconds keeps ``e // I * I`` of
progress (none without checkpoints), ``e`` counted after the attempt's image pull
(:mod:`fastsched.model.images`: the job's work starts once its container is up). Any other killed job ends there, NODE_FAIL.

This module holds the loop's bookkeeping in plain arrays and lists (killed
attempts are few); the loop applies the kills to its compiled state
(:meth:`fastsched.engine.loop._EventLoop.apply_node_event`).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

#: Slurm's requeue delay by default: cred_expire (120 s) + 1
REQUEUE_DELAY = 121


@dataclass(frozen=True)
class Attempts:
    """The attempts a node failure ended, in the caller's job order, plus per job
    how its last attempt relates to them.

    Killed attempt k: job ``job[k]`` (caller's index), attempt number
    ``attempt[k]`` (0 = first), ran ``[start[k], end[k])`` in partition
    ``partition[k]`` on ``alloc_nodes[alloc_offsets[k]:alloc_offsets[k+1]]`` with
    GPU bits ``alloc_gpu_mask`` there, and had checkpointed ``saved[k]`` seconds
    of its runtime then, after an image pull of ``pull[k]`` seconds. Per job: ``restarts`` (its requeues: the last attempt's
    number), ``node_fail`` (its last attempt was killed and not requeued: it
    ended NODE_FAIL), ``runtime`` (what its last attempt had left to run).
    Preemption (:mod:`fastsched.engine.preempt`) stops attempts the same way:
    ``preempted[k]`` marks those (they end PREEMPTED, not NODE_FAIL), and per job
    ``cancelled``: its last attempt was preempted and not requeued (None: a run
    without preemption). ``limit[k]``: the time limit attempt k ran with (a
    ``--time-min`` start may cut it: :mod:`fastsched.engine.timemin`). ``configure[k]``:
    the seconds attempt k was CONFIGURING before ``start[k]``, its nodes booting (power
    saving; killed while CONFIGURING, it starts at its end).
    """

    job: np.ndarray
    attempt: np.ndarray
    start: np.ndarray
    end: np.ndarray
    partition: np.ndarray
    saved: np.ndarray
    alloc_offsets: np.ndarray
    alloc_nodes: np.ndarray
    alloc_gpu_mask: np.ndarray
    restarts: np.ndarray
    node_fail: np.ndarray
    runtime: np.ndarray
    pull: np.ndarray | None = None
    preempted: np.ndarray | None = None
    cancelled: np.ndarray | None = None
    limit: np.ndarray | None = None
    configure: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.job)


class Requeues:
    """Per job (submit order): whether it may be requeued, its checkpoint interval
    (0: none), and the log of its killed attempts; the attempts waiting for their
    begin time, as a heap of (begin, job)."""

    def __init__(self, n: int, requeue=None, interval=None, delay: int = REQUEUE_DELAY):
        self.requeue = np.ones(n, dtype=bool) if requeue is None else np.asarray(requeue,
                                                                                 dtype=bool)
        self.interval = (np.zeros(n, dtype=np.int64) if interval is None
                         else np.asarray(interval, dtype=np.int64))
        self.delay = int(delay)
        self.restarts = np.zeros(n, dtype=np.int64)
        self.node_fail = np.zeros(n, dtype=bool)
        self.cancelled = np.zeros(n, dtype=bool)
        self.waiting: list[tuple[int, int]] = []
        #: job -> the progress its attempt kept, where the job's runtime does not say
        #: (a shrunk elastic job: :mod:`fastsched.engine.elastic`)
        self.saved: dict[int, int] = {}
        self.log: list[tuple] = []      # (job, attempt, start, end, partition, saved, nodes,
        #                                  masks, pull, preempted, limit, configure)

    def kill(self, j: int, t: int, start: int, partition: int, nodes, masks,
             runtime: int, pull: int = 0, preempted: bool = False,
             requeue: bool = True, limit: int = 0, configure: int = 0) -> int:
        """Log job j's attempt killed at t (it pulled its image for ``pull`` seconds
        first, and ran with time limit ``limit``; it was CONFIGURING ``configure`` seconds
        before ``start``); returns the runtime a requeued
        attempt has left, or -1 when the job is not requeued (it ended NODE_FAIL, or
        PREEMPTED when ``preempted``).
        ``requeue``: whether the cause requeues at all (a preemption in mode CANCEL
        does not); the job must allow it too."""
        interval = int(self.interval[j])
        ran = max(t - start - pull, 0)
        saved = ran // interval * interval if interval > 0 else 0
        saved = self.saved.pop(j, saved)
        self.log.append((j, int(self.restarts[j]), start, t, partition, saved,
                         np.array(nodes, dtype=np.int64), np.array(masks, dtype=np.uint64),
                         int(pull), bool(preempted), int(limit), int(configure)))
        if not (requeue and self.requeue[j]):
            (self.cancelled if preempted else self.node_fail)[j] = True
            return -1
        self.restarts[j] += 1
        heapq.heappush(self.waiting, (t + self.delay, j))
        return runtime - saved

    def next_time(self) -> int:
        """When the next requeued attempt becomes eligible (-1: none waits)."""
        return self.waiting[0][0] if self.waiting else -1

    def coming(self, t: int) -> np.ndarray:
        """The jobs :meth:`due` would give at ``t`` (ascending), left waiting."""
        return np.array(sorted(j for b, j in self.waiting if b <= t), dtype=np.int64)

    def due(self, t: int) -> list[int]:
        """The jobs whose requeued attempts become eligible at ``t`` (taken off)."""
        out = []
        while self.waiting and self.waiting[0][0] <= t:
            out.append(heapq.heappop(self.waiting)[1])
        return sorted(out)

    def attempts(self, order: np.ndarray, inverse: np.ndarray, runtime) -> Attempts:
        """The log in the caller's job order (:func:`fastsched.engine.driver.submit_order`'s
        ``order``: caller's index of each submit-order job, ``inverse`` the other way);
        ``runtime``: each job's last attempt's, in submit order."""
        log = sorted(self.log, key=lambda r: (int(order[r[0]]), r[1]))
        counts = np.array([len(r[6]) for r in log], dtype=np.int64)
        offsets = np.zeros(len(log) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])

        def col(k, dtype=np.int64):
            return np.array([r[k] for r in log], dtype=dtype)

        def cat(k, dtype):
            return np.concatenate([r[k] for r in log]).astype(dtype) if log else \
                np.zeros(0, dtype=dtype)
        return Attempts(job=np.asarray(order)[col(0)], attempt=col(1), start=col(2),
                        end=col(3), partition=col(4, np.int32), saved=col(5),
                        alloc_offsets=offsets, alloc_nodes=cat(6, np.int64),
                        alloc_gpu_mask=cat(7, np.uint64), restarts=self.restarts[inverse],
                        node_fail=self.node_fail[inverse],
                        runtime=np.asarray(runtime)[inverse], pull=col(8),
                        preempted=col(9, bool), cancelled=self.cancelled[inverse],
                        limit=col(10), configure=col(11))
