"""The simulator: replay a workload on a cluster under a policy.

The event loop itself (completions, then arrivals, then one pass, again while
zero-length jobs end at the same instant) runs in the compiled core; this module
validates the input once, calls it, and packages the result.
"""
from __future__ import annotations

import time

import numpy as np

from . import _kernels
from .cluster import Cluster
from .errors import InputError
from .jobs import JobTable
from .policies import check_reserve_depth, get_policy
from .results import BSLD_TAU, SimulationResult, summarize
from .schedule import Schedule
from .validation import check_jobs

#: The choices that make simulators' numbers comparable (or not); every result records them.
SEMANTICS = {
    "event_order": "at one timestamp: completions, then arrivals, then one pass "
                   "(repeated while zero-length jobs end at that timestamp)",
    "queue_order": "submit_time asc, job_id asc",
    "planning": "requested time limits only, never actual runtimes",
    "replanning": "the whole queue is re-planned from scratch at every pass",
    "runtime_over_limit": "killed at its limit (state TIMEOUT)",
    "allocation": "whole nodes; a job takes the lowest-numbered free nodes",
    "bounded_slowdown_tau": BSLD_TAU,
}


def simulate(cluster: Cluster, jobs: JobTable, policy: str = "easy", *,
             reserve_depth: int = 1, progress: bool | None = False,
             skipped: list | None = None) -> SimulationResult:
    """Replay ``jobs`` on ``cluster`` under ``policy`` ("fcfs", "easy", "conservative").

    ``reserve_depth`` is the number of blocked jobs EASY gives reservations to
    (1 = Lifka's EASY). ``progress`` shows a progress bar (None: only on long
    runs at a terminal). ``skipped`` (e.g. from the trace reader) is carried
    into the result and counted in its summary.

    Raises InputError for a job that can never run here (naming the job) and
    UnsupportedError for what this engine cannot schedule yet.
    """
    wall = time.perf_counter()
    spec = get_policy(policy)
    reserve_depth = check_reserve_depth(reserve_depth)
    check_jobs(cluster, jobs)
    order = np.lexsort((jobs.job_id, jobs.submit_time))      # queue order
    as_i64 = lambda a: np.ascontiguousarray(a[order], dtype=np.int64)  # noqa: E731
    offsets = np.zeros(len(jobs) + 1, dtype=np.int64)     # nodes in the caller's job order
    np.cumsum(jobs.num_nodes, out=offsets[1:])
    bar = _progress_bar(len(jobs), progress)
    try:
        start, end, alloc, passes = _kernels.simulate_pool(
            as_i64(jobs.submit_time), as_i64(jobs.num_nodes), as_i64(jobs.time_limit),
            as_i64(jobs.runtime), cluster.num_nodes, spec.kernel_code, reserve_depth,
            offsets[:-1][order],
            None if bar is None else (lambda done: bar.update(done - bar.n)))
    finally:
        if bar is not None:
            bar.close()
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    schedule = Schedule(job_id=jobs.job_id.copy(), start_time=start[inverse],
                        end_time=end[inverse], alloc_offsets=offsets, alloc_nodes=alloc)
    wall = time.perf_counter() - wall
    summary = summarize(cluster, jobs, schedule)
    skipped = list(skipped or [])
    summary.update({
        "policy": spec.name,
        "reserve_depth": reserve_depth if spec.name == "easy" else None,
        "nodes": cluster.num_nodes,
        "skipped": len(skipped),
        "passes": int(passes),
        "sim_seconds": wall,
        "semantics": dict(SEMANTICS),
    })
    return SimulationResult(cluster, jobs, schedule, summary, skipped)


def _progress_bar(total: int, progress: bool | None):
    if progress is False or (progress is None and total < 200_000):
        return None
    from tqdm import tqdm
    return tqdm(total=total, unit="job", desc="simulating", disable=None if progress is None else False,
                leave=False)


def simulate_swf(path, policy: str = "easy", *, procs: int | None = None, strict: bool = False,
                 reserve_depth: int = 1, progress: bool | None = False) -> SimulationResult:
    """Read an SWF trace and replay it on its machine (P single-processor nodes)."""
    from .swf import read_swf
    trace = read_swf(path, procs=procs, strict=strict)
    result = simulate(Cluster.homogeneous(trace.procs), trace.jobs, policy,
                      reserve_depth=reserve_depth, progress=progress, skipped=trace.skipped)
    result.summary["trace"] = str(path)
    return result
