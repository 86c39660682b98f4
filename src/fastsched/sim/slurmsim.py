"""Replay a workload under Slurm's backfill: ``simulate(..., reservations="slurm")``.

At every instant where a job is submitted or ends, one Slurm 22.05 backfill cycle
(:func:`fastsched.engine.slurmplan.plan_cycle`) runs over the running jobs (held until
start + time limit, as Slurm plans them) and the queue in submission order (or by
``priority``), and the jobs it starts run from then until start + runtime (capped at
the limit). Started jobs take each node's lowest free GPUs. Slurm itself runs the main
scheduler at such events and backfill every ``bf_interval``; here backfill runs at every
event, so no job waits for a timer (docs/slurm-model.md).

The cycle is compiled; the loop between cycles is NumPy, costing O(running + queue) per
event, so this model suits workloads of thousands of jobs rather than millions.
"""
from __future__ import annotations

import heapq

import numpy as np

from ..engine.driver import EngineRun
from ..model.errors import InputError
from ..engine.slurmplan import plan_cycle
from ..model.cluster import Cluster
from ..model.jobs import JobTable


def run_slurm_model(cluster: Cluster, jobs: JobTable, policy: str, depth: int, *,
                    rank=None, tick=None, resolution=None, window=None) -> EngineRun:
    """:func:`run_slurm` as :func:`fastsched.simulate`'s engines are called (``rank``:
    lower first, from a priority array); parameters from the cluster's slurm.conf."""
    from .plan import _parameters
    res, win, max_test = _parameters(cluster, resolution, window, None)
    priority = None if rank is None else -np.asarray(rank, dtype=float)
    if priority is not None and len(priority) != len(jobs):
        raise InputError(f"priority covers {len(priority)} jobs, the table has {len(jobs)}",
                         field="priority")
    return run_slurm(cluster, jobs, resolution=res, window=win, max_job_test=max_test,
                     priority=priority, tick=tick)


def run_slurm(cluster: Cluster, jobs: JobTable, *, resolution: int, window: int,
              max_job_test: int, available=None, priority=None, tick=None) -> EngineRun:
    """The replay (see the module); ``priority``: per job, higher first (default: the
    submission order). ``tick(n)`` is told of each job started."""
    n = len(jobs)
    state = _State(cluster, jobs, available)
    arrival = np.lexsort((jobs.job_id, jobs.submit_time))
    rank = np.empty(n, np.int64)
    if priority is None:
        rank[arrival] = np.arange(n)
    else:
        rank[np.lexsort((jobs.job_id, jobs.submit_time, -np.asarray(priority, float)))] = \
            np.arange(n)
    masks = _partition_masks(cluster)
    nxt, passes = 0, 0
    queue = np.zeros(0, np.int64)
    while nxt < n or state.active:
        now = _next_event(jobs, arrival, nxt, state)
        state.complete_until(now)
        first = nxt
        while nxt < n and jobs.submit_time[arrival[nxt]] <= now:
            nxt += 1
        if nxt > first:
            queue = np.concatenate([queue, arrival[first:nxt]])
            queue = queue[np.argsort(rank[queue], kind="stable")]
        if not len(queue):
            continue
        start, started, ptr, nodes = plan_cycle(
            cluster.gpus, np.asarray(cluster.cpus), state.weights, masks,
            state.running_arrays(now), _queue_arrays(jobs, queue, cluster), now,
            resolution=resolution, window=window, max_job_test=max_job_test,
            available=state.up)
        passes += 1
        for q in np.flatnonzero(started):
            state.start(int(queue[q]), now, nodes[ptr[q]:ptr[q + 1]])
        if started.any():
            queue = queue[~started]
            if tick is not None:
                tick(int(started.sum()))
        elif not state.active and nxt == n:
            break                       # nothing runs, nothing comes: the rest never fit
    return state.result(passes)


def _next_event(jobs, arrival, nxt, state) -> int:
    times = []
    if nxt < len(arrival):
        times.append(int(jobs.submit_time[arrival[nxt]]))
    if state.ends:
        times.append(state.ends[0][0])
    return min(times)


def _partition_masks(cluster: Cluster) -> np.ndarray:
    n = len(cluster.node_names)
    if not cluster.partitions:
        return np.ones((1, n), bool)
    masks = np.zeros((len(cluster.partitions), n), bool)
    for i, p in enumerate(cluster.partitions):
        masks[i, p.nodes] = True
    return masks


def _queue_arrays(jobs: JobTable, queue: np.ndarray, cluster: Cluster):
    part = jobs.partition[queue] if cluster.partitions else np.zeros(len(queue), np.int64)
    return (jobs.num_nodes[queue], jobs.gpus_per_node[queue], jobs.cpus_per_node[queue],
            jobs.time_limit[queue], part)


class _State:
    """Running jobs (in start order, and a heap by end), each node's free GPU bits, and
    the records."""

    def __init__(self, cluster: Cluster, jobs: JobTable, available):
        from ..engine.inputs import node_availability
        self.jobs = jobs
        self.up = node_availability(cluster, available)
        self.weights = np.ones(len(cluster.node_names), np.int64) if cluster.weight is None \
            else np.asarray(cluster.weight, np.int64)
        self.free_bits = np.array([(1 << int(g)) - 1 for g in cluster.gpus], dtype=np.uint64)
        self.active = []                    # running jobs, in start order
        self.ends = []                      # heap of (end, job)
        n = len(jobs)
        self.start_time = np.full(n, -1, np.int64)
        self.end_time = np.full(n, -1, np.int64)
        self.nodes = [np.zeros(0, np.int64)] * n
        self.masks = [np.zeros(0, np.uint64)] * n

    def start(self, j: int, now: int, nodes: np.ndarray) -> None:
        g = int(self.jobs.gpus_per_node[j])
        masks = np.array([lowest_bits(int(self.free_bits[i]), g) for i in nodes],
                         dtype=np.uint64)
        self.free_bits[nodes] &= ~masks
        run = min(int(self.jobs.runtime[j]), int(self.jobs.time_limit[j]))
        end = now + max(run, 0)
        self.start_time[j], self.end_time[j] = now, end
        self.nodes[j], self.masks[j] = nodes.copy(), masks
        heapq.heappush(self.ends, (end, j))
        self.active.append(j)

    def complete_until(self, now: int) -> None:
        done = set()
        while self.ends and self.ends[0][0] <= now:
            _, j = heapq.heappop(self.ends)
            self.free_bits[self.nodes[j]] |= self.masks[j]
            done.add(j)
        if done:
            self.active = [j for j in self.active if j not in done]

    def running_arrays(self, now: int):
        """Running jobs as the cycle takes them: held until start + limit (at least
        ``now + 1``: a job never ends in Slurm's plan before the cycle)."""
        js = np.array(self.active, np.int64)
        counts = np.array([len(self.nodes[j]) for j in js], np.int64)
        ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        nodes = np.concatenate([self.nodes[j] for j in js]) if len(js) else \
            np.zeros(0, np.int64)
        end = np.maximum(self.start_time[js] + self.jobs.time_limit[js], now + 1) \
            if len(js) else np.zeros(0, np.int64)
        return (end, ptr, nodes, np.repeat(self.jobs.gpus_per_node[js], counts),
                np.repeat(self.jobs.cpus_per_node[js], counts))

    def result(self, passes: int) -> EngineRun:
        n = len(self.jobs)
        counts = np.array([len(a) for a in self.nodes], np.int64)
        offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        return EngineRun(start=self.start_time, end=self.end_time, alloc_offsets=offsets,
                         alloc_nodes=_concat(self.nodes, np.int64),
                         alloc_gpu_mask=_concat(self.masks, np.uint64),
                         partition=self.jobs.partition.astype(np.int64),
                         reason=np.full(n, -1, np.int64), never=np.zeros(n, bool),
                         eligible=self.jobs.submit_time.astype(np.int64), passes=passes)


def _concat(parts, dtype) -> np.ndarray:
    return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)


def lowest_bits(mask: int, count: int) -> int:
    """The ``count`` lowest set bits of ``mask``."""
    out = 0
    for _ in range(count):
        low = mask & -mask
        out |= low
        mask ^= low
    return out
