"""Standard benchmark *states* for single scheduling passes (B2, B3, B6 in benchmarks/RESULTS.md).

:func:`busy_state` builds, deterministically from a seed, a standard cluster
whose GPUs are ``busy`` (85%) held by running ``ai-mix`` jobs, plus a queue of
pending ``ai-mix`` jobs. The ``_b2``/``_b3``/``_b6`` functions time one node
engine pass (:func:`fastsched.engine.plan_nodes`) on it; each point runs in
a child process so that a pass that takes too long can be stopped and
reported as not measured, and so that peak RSS is per point.

Choices fixed here:

* ``now`` = 30 days; running jobs are ai-mix jobs (seed ``seed``) taken in
  order and placed best fit (fewest free GPUs, then lowest index; CPUs and
  memory are proportional to GPUs in ai-mix, so GPUs decide) on nodes of their
  partition, skipped when they do not fit, until ``busy`` of all GPUs are held;
  each has been running for ``floor(U(0, 1) x limit)`` s, so its planned end
  (start + limit) is after ``now``. GPU masks: each node's lowest free indices.
* pending jobs are ai-mix jobs (seed ``seed + 1``), ids after the running
  ones, submit times rescaled into [0, now) keeping their order.
* ``reservations`` (issue 18: a pass with 100 active advance reservations):
  reservation k holds a leaf's worth of nodes (32) at node ``k x (nodes //
  count)`` from ``now - 1 h + k x 30 min`` for 4 h, once (no repeat), so the
  first few are open at ``now`` and the rest open over the next days, spread
  over the cluster; no pending job is a member.
"""
from __future__ import annotations

import queue
import resource
import statistics
import time
from dataclasses import dataclass

import numpy as np

from ..model.cluster import Cluster
from ..tools.generate import ai_cluster, ai_mix
from ..model.jobs import JobTable
from .machine import machine
from ..engine import RunningJobs, plan_nodes

__all__ = ["BusyState", "busy_state", "run_pass", "measure_point"]

NOW = 30 * 86_400


@dataclass(frozen=True)
class BusyState:
    cluster: Cluster
    running: RunningJobs
    pending: JobTable
    now: int
    #: advance reservations' node windows the pass holds (``plan_nodes``'s ``blocked``)
    blocked: tuple | None = None

    @property
    def busy_fraction(self) -> float:
        return float(self.running.gpus.sum()) / float(self.cluster.gpus.sum())


def _place(cluster: Cluster, jobs: JobTable, target_gpus: int):
    """Best-fit placement in order until ``target_gpus`` are held: (taken job indices,
    CSR offsets, nodes, per-entry GPU masks)."""
    X = cluster.num_nodes
    free = cluster.gpus.astype(np.int64).copy()
    idx = np.arange(X, dtype=np.int64)
    member = np.zeros((len(cluster.partitions), X), dtype=np.bool_)
    for p, part in enumerate(cluster.partitions):
        member[p, part.nodes] = True
    taken, offsets, nodes, masks = [], [0], [], []
    held = 0
    for i in range(len(jobs)):
        if held >= target_gpus:
            break
        g = int(jobs.gpus_per_node[i])
        n = int(jobs.num_nodes[i])
        ok = member[jobs.partition[i]] & (free >= g)
        cand = idx[ok]
        if len(cand) < n:
            continue
        key = free[cand] * X + cand          # best fit: fewest free GPUs, then lowest index
        if n == 1:
            pick = cand[[int(np.argmin(key))]]
        else:
            pick = np.sort(cand[np.argpartition(key, n - 1)[:n]])
        before = cluster.gpus[pick].astype(np.int64) - free[pick]   # used bits are 0..before-1
        masks.append(((np.uint64(1) << np.uint64(g)) - np.uint64(1)) << before.astype(np.uint64))
        free[pick] -= g
        nodes.append(pick)
        offsets.append(offsets[-1] + n)
        taken.append(i)
        held += g * n
    return (np.array(taken, dtype=np.int64), np.array(offsets, dtype=np.int64),
            np.concatenate(nodes).astype(np.int64), np.concatenate(masks).astype(np.uint64))


def busy_state(cluster_name: str = "ai-100k", busy: float = 0.85, pending: int = 100_000,
               seed: int = 0) -> BusyState:
    """The standard single-pass benchmark state (deterministic for given arguments)."""
    cluster = ai_cluster(cluster_name)
    total = int(cluster.gpus.sum())
    target = int(np.ceil(busy * total))
    # enough candidates: ai-mix averages ~25 GPUs per job
    cand = ai_mix(cluster, max(1000, 4 * target // 20), seed=seed).jobs
    taken, offsets, nodes, masks = _place(cluster, cand, target)
    run = cand.take(taken)
    rng = np.random.default_rng(seed + 1_000_003)
    elapsed = np.floor(rng.random(len(run)) * run.time_limit).astype(np.int64)
    start = NOW - elapsed
    counts = np.diff(offsets)
    running = RunningJobs.from_arrays(
        job_id=run.job_id, planned_end=start + run.time_limit, node_offsets=offsets,
        nodes=nodes, gpus=np.repeat(run.gpus_per_node, counts),
        cpus=np.repeat(run.cpus_per_node, counts), mem=np.repeat(run.mem_per_node, counts),
        gpu_mask=masks)
    pend = ai_mix(cluster, pending, seed=seed + 1).jobs
    sub = pend.submit_time
    span = int(sub.max()) + 1 if len(sub) else 1
    cols = pend.to_dict()
    cols["submit_time"] = sub * (NOW - 1) // span
    cols["job_id"] = pend.job_id + int(cand.job_id.max())
    return BusyState(cluster, running, JobTable(**cols), NOW)


def with_reservations(state: BusyState, count: int) -> BusyState:
    """``state`` with ``count`` advance reservations (see the module docstring)."""
    from ..model.reservations import Reservation, Reservations
    stride, width = state.cluster.num_nodes // max(count, 1), 32
    if count and stride < width:
        raise ValueError(f"{count} reservations of {width} nodes do not fit "
                         f"{state.cluster.num_nodes} nodes")
    items = tuple(Reservation(f"r{k}", state.now - 3600 + 1800 * k,
                              state.now + 3 * 3600 + 1800 * k,
                              tuple(range(k * stride, k * stride + width)))
                  for k in range(count))
    resv = Reservations(items, state.cluster.num_nodes)
    ends = state.running.planned_end
    span = int(state.pending.time_limit.sum()) + max(int(ends.max(initial=state.now))
                                                     - state.now, 0)
    return BusyState(state.cluster, state.running, state.pending, state.now,
                     resv.windows_for_pass(state.now, span))


def run_pass(state: BusyState, policy: str, full: bool, depth: int = 1):
    return plan_nodes(state.cluster, state.running, state.pending, state.now, policy, depth,
                      full=full, blocked=state.blocked)


#: a point whose pass takes longer than this (s) is timed once: the big B6 points
#: (1M pending, 1M GPUs) take minutes each, and one pass is already many decisions
LONG_PASS_S = 20.0


def _timed(state, policy, full):
    t, c = time.perf_counter(), time.process_time()
    d = run_pass(state, policy, full)
    return time.perf_counter() - t, d, time.process_time() - c


def _child(cluster_name, pending, policy, full, repeat, seed, out, warmup, reservations):
    if warmup == "small":               # load the compiled kernels on a small state
        out.put(("warmup", _timed(busy_state("ai-8k", pending=1_000, seed=seed),
                                  policy, full)[0]))
    t = time.perf_counter()
    state = busy_state(cluster_name, pending=pending, seed=seed)
    if reservations:
        state = with_reservations(state, reservations)
    out.put(("state", time.perf_counter() - t, len(state.running), state.busy_fraction,
             int(state.cluster.gpus.sum())))
    if warmup == "same":
        out.put(("warmup", _timed(state, policy, full)[0]))
    for k in range(repeat):
        dt, d, cpu = _timed(state, policy, full)
        out.put(("run", dt, np.bincount(d.outcome, minlength=3).tolist(), d.walked, cpu))
        if dt > LONG_PASS_S:
            break
    out.put(("done", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))


def _receive(q, proc, limit: float | None):
    """The child's next message; None if it died, or sent nothing for ``limit`` s."""
    waited = 0.0
    while limit is None or waited < limit:
        try:
            return q.get(timeout=1.0)
        except queue.Empty:
            if not proc.is_alive() and q.empty():
                return None
            waited += 1.0
    return None


def measure_point(cluster_name: str, pending: int, policy: str, full: bool, repeat: int = 3,
                  seed: int = 0, max_seconds: float | None = 120.0, warmup: str = "same",
                  reservations: int = 0) -> dict:
    """Time one pass (median of ``repeat`` after a warm-up) in a child process; a run
    that takes longer than ``max_seconds`` stops the point (reported not measured;
    ``None``: no limit).
    ``warmup``: "same" (an untimed pass on the state itself) or "small" (an untimed pass
    on ai-8k with 1,000 pending). A pass over :data:`LONG_PASS_S` is timed once.
    ``reservations``: that many advance reservations held (:func:`with_reservations`)."""
    import multiprocessing as mp
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    proc = ctx.Process(target=_child,
                       args=(cluster_name, pending, policy, full, repeat, seed, q, warmup,
                             reservations))
    proc.start()
    fig = {"cluster": cluster_name, "pending": pending, "policy": policy, "full": full,
           "warmup": warmup, **({"reservations": reservations} if reservations else {})}
    times, cpus = [], []
    try:
        while True:
            msg = _receive(q, proc, None if max_seconds is None else max_seconds + 60)
            if msg is None:
                fig["not_measured"] = (f"the child ended, or a pass took more than "
                                       f"{max_seconds:.0f} s ({len(times)} timed run(s) done)")
                if times:
                    fig["first_runs_s"] = [round(x, 3) for x in times]
                break
            if msg[0] in ("warmup", "run") and max_seconds is not None and msg[1] > max_seconds:
                fig["not_measured"] = f"a {msg[0]} pass took {msg[1]:.1f} s > {max_seconds:.0f} s"
                fig["first_runs_s"] = [round(x, 3) for x in times + [msg[1]]]
                break
            if msg[0] == "warmup":
                fig["warmup_ms"] = round(1000 * msg[1], 1)
            elif msg[0] == "state":
                fig.update(state_s=round(msg[1], 2), running_jobs=msg[2],
                           busy=round(msg[3], 4), gpus=msg[4])
            elif msg[0] == "run":
                times.append(msg[1])
                cpus.append(msg[4])
                fig.update(outcomes=dict(zip(("start", "reserved", "blocked"), msg[2])),
                           walked=msg[3])
            else:
                fig["peak_rss_mb"] = round(msg[1], 1)
                break
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
    if "not_measured" not in fig and times:
        med = statistics.median(times)
        fig.update(median_ms=round(1000 * med, 1), min_ms=round(1000 * min(times), 1),
                   cpu_median_ms=round(1000 * statistics.median(cpus), 1),
                   us_per_decision=round(1e6 * med / pending, 3), runs=len(times),
                   decisions_per_s=round(pending / med),
                   walked_per_s=round(fig["walked"] / med))
    return fig


def _b2(repeat: int, reservations: int = 0) -> dict:
    """B2 easy-100k: one EASY pass (depth 1) on ai-100k, 85% busy, 100,000 pending
    (``reservations``: with that many advance reservations held)."""
    fig = measure_point("ai-100k", 100_000, "easy", False, repeat, reservations=reservations)
    return {"scenario": "easy-100k (B2)", **fig, "machine": machine()}


def _b3(repeat: int, reservations: int = 0) -> dict:
    """B3 conservative-100k: one conservative pass, full depth, same state."""
    fig = measure_point("ai-100k", 100_000, "conservative", True, repeat,
                        reservations=reservations)
    return {"scenario": "conservative-100k (B3)", **fig, "machine": machine()}


#: the B6 grid: clusters x queue sizes
B6_CLUSTERS = ("ai-8k", "ai-100k", "ai-1m")
B6_PENDING = (1_000, 10_000, 100_000, 1_000_000)


def _b6(repeat: int, clusters=B6_CLUSTERS, pending=B6_PENDING) -> dict:
    """B6 scaling: B2 (EASY) and B3 (conservative, full depth) passes on every cluster x
    queue size of the grid; warm-ups on a small state, passes over LONG_PASS_S timed once,
    a pass over 600 s not measured."""
    points = []
    for cluster_name in clusters:
        for size in pending:
            for policy, full in (("easy", False), ("conservative", True)):
                points.append(measure_point(cluster_name, size, policy, full, repeat,
                                            max_seconds=600.0, warmup="small"))
    return {"scenario": "scaling (B6, node engine)", "points": points, "machine": machine()}


def _memory_1m(repeat: int) -> dict:
    """memory-1m: peak RSS of building the ai-1m state (1M GPUs, 85% busy) with
    1,000,000 pending jobs and running one EASY pass on it (in a child process)."""
    fig = measure_point("ai-1m", 1_000_000, "easy", False, repeat, max_seconds=600.0)
    return {"scenario": "memory-1m", **fig, "target_peak_rss_mb": 2048, "machine": machine()}

