"""Cluster-level metrics of a finished schedule that need a sweep over time (the
compiled sweep of GPU use is :mod:`fastsched.sim.gpusweep`, loaded when a cluster has
GPUs)."""
from __future__ import annotations

import numpy as np

from ..model.cluster import Cluster
from ..model.jobs import JobTable
from ..model.schedule import Schedule


def busy_node_seconds(schedule: Schedule, exclusive: bool = False) -> int:
    """Node-seconds during which a node held at least one job.

    Per node, the length of the union of its jobs' [start, end) intervals, so
    jobs sharing a node count it once. ``exclusive``: no two jobs ever share a
    node (whole-node allocation), so the union is the plain sum.
    """
    counts = np.diff(schedule.alloc_offsets)
    run = (schedule.end_time - schedule.start_time).clip(min=0)
    if exclusive:
        return int(np.dot(counts, run))
    job_of = np.repeat(np.arange(len(counts)), counts)
    start, end = schedule.start_time[job_of], schedule.end_time[job_of]
    keep = end > start
    if not keep.any():
        return 0
    start, end = start[keep], end[keep]
    first, span = start.min(), int(end.max() - start.min()) + 1
    # each node gets its own key range, so sorted keys group by node and a
    # running max of ends never carries over from one node to the next
    base = schedule.alloc_nodes[keep].astype(np.int64) * span - first
    order = np.argsort(base + start, kind="stable")
    lo, hi = (base + start)[order], (base + end)[order]
    reach = np.maximum.accumulate(hi)                 # furthest end covered so far
    covered_before = np.concatenate(([lo[0]], reach[:-1]))
    return int(np.maximum(hi - np.maximum(lo, covered_before), 0).sum())


def gpu_fragmentation(cluster: Cluster, jobs: JobTable, schedule: Schedule) -> float | None:
    """Share of free GPU-time stranded on partly used nodes.

    At each instant, a node with some but not all of its GPUs in use strands its
    free GPUs (a job wanting whole nodes cannot use them). Returns
    integral(stranded free GPUs) / integral(free GPUs) over [first submit, last
    end), or None when the cluster has no GPUs or nothing was ever free.
    """
    if cluster.gpus.sum() == 0 or len(jobs) == 0:
        return None
    counts = np.diff(schedule.alloc_offsets)
    job_of = np.repeat(np.arange(len(jobs)), counts)
    start = schedule.start_time[job_of]
    end = schedule.end_time[job_of]
    gpus = jobs.gpus_per_node[job_of].astype(np.int64)
    keep = (end > start) & (gpus > 0)
    node = schedule.alloc_nodes[keep]
    times = np.concatenate([start[keep], end[keep]])
    nodes = np.concatenate([node, node])
    deltas = np.concatenate([gpus[keep], -gpus[keep]])
    order = np.lexsort((deltas, times))         # at one instant, releases before holds
    from .gpusweep import _sweep            # (compiled: Numba only loads for GPU clusters)
    first, last = int(jobs.submit_time.min()), int(schedule.end_time.max())
    stranded, free = _sweep(times[order], nodes[order], deltas[order],
                            cluster.gpus.astype(np.int64), first, last)
    return stranded / free if free > 0 else None
