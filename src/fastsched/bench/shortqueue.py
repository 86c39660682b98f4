"""B9 ``short-queue``: what a scheduler that embeds fastsched runs every few seconds.

A :class:`fastsched.Scheduler` holds the standard busy state
(:func:`fastsched.bench.state.busy_state`: 85% of the GPUs held by running
ai-mix jobs) with 1,000 pending jobs, and ``schedule(now)`` (a conservative pass)
is timed repeated on that unchanged state. With the engine state kept between
passes (the Scheduler's default) a pass costs the queue's work; the pure pass
(:func:`fastsched.engine.plan_nodes` called afresh, the reference) is timed in the
same process, alternating with it, for the ratio. CPU time (this process, every
thread) beside wall time: the machine is shared.

The *loop* mode (:func:`measure_short_queue_loop`) is the embedding scheduler's
real cycle: each step passes, applies the pass's starts, completes the running jobs
whose planned end has come and a few more (seeded), moves ``now`` on and submits as
many new jobs as started, so the queue stays at ~1,000. Two Schedulers run the same
steps, one keeping its engine state (brought up to date by ``apply`` and
``complete``), one with the pure pass; each step's decisions are compared.
"""
from __future__ import annotations

import statistics
import time

from .machine import machine

#: B9's clusters and queue length
B9_CLUSTERS = ("ai-100k", "ai-1m")
B9_PENDING = 1_000
#: the targets of issue 17 (ms per pass), per cluster
B9_TARGET_MS = {"ai-100k": 2.0, "ai-1m": 5.0}


def short_queue_scheduler(cluster_name: str, pending: int = B9_PENDING, seed: int = 0):
    """(Scheduler, now): the busy state of ``cluster_name`` with ``pending`` queued,
    conservative."""
    from ..sim.scheduler import Scheduler
    from .state import busy_state
    st = busy_state(cluster_name, pending=pending, seed=seed)
    return Scheduler.from_state(st.cluster, st.running, st.pending, "conservative"), st.now


def _timed(fn):
    t, c = time.perf_counter(), time.process_time()
    fn()
    return time.process_time() - c, time.perf_counter() - t


def _summary(prefix: str, cpu: list[float], wall: list[float]) -> dict:
    ms = lambda x: round(1e3 * x, 2)     # noqa: E731
    return {f"{prefix}_cpu_ms": ms(statistics.median(cpu)),
            f"{prefix}_wall_ms": ms(statistics.median(wall)),
            f"{prefix}_wall_spread_ms": f"{ms(min(wall))}-{ms(max(wall))}"}


def measure_short_queue(cluster_name: str, repeat: int, pending: int = B9_PENDING) -> dict:
    """One B9 point: ``schedule(now)`` with the kept state and the pure pass, alternated
    (``repeat`` each, after a warm-up of each); the decisions of both are compared."""
    s, now = short_queue_scheduler(cluster_name, pending)
    modes = ("kept", "pure")

    def run(mode):
        s._keep_state = mode == "kept"
        return s.schedule(now)
    first = {m: run(m) for m in modes}                  # warm-ups (and the decisions)
    same = all(_same(first["kept"], first["pure"], f) for f in DECISION_FIELDS)
    times = {m: ([], []) for m in modes}
    for _ in range(repeat):
        for m in modes:
            cpu, wall = _timed(lambda: run(m))
            times[m][0].append(cpu)
            times[m][1].append(wall)
    s._keep_state = True
    d = first["kept"]
    fig = {"cluster": cluster_name, "mode": "repeat", "nodes": s.cluster.num_nodes,
           "running_jobs": len(s.running_jobs), "pending": pending,
           "starts": int((d.outcome == 0).sum()), "reserved": int((d.outcome == 1).sum()),
           "same_decisions": same, "target_ms": B9_TARGET_MS.get(cluster_name)}
    for m in modes:
        fig.update(_summary(m, *times[m]))
    fig["pure_over_kept_cpu"] = round(fig["pure_cpu_ms"] / max(fig["kept_cpu_ms"], 1e-6), 2)
    return fig


#: the loop mode: seconds between passes, running jobs completed early per step
LOOP_STEP_S = 10
LOOP_EARLY_ENDS = 5


def measure_short_queue_loop(cluster_name: str, repeat: int, pending: int = B9_PENDING,
                             seed: int = 0) -> dict:
    """One B9 loop point: ``repeat`` timed steps (after one warm-up step, which starts
    most of the first queue) of pass, ``apply``, ``complete`` and ``submit``, the kept
    and the pure Scheduler alternated step by step; the decisions of both compared."""
    import numpy as np
    from ..sim.scheduler import Scheduler
    from .state import busy_state
    refill = pending * 4 + 100 * (repeat + 1)   # (the first passes start most of a queue)
    st = busy_state(cluster_name, pending=pending + refill, seed=seed)
    modes = ("kept", "pure")
    sched = {m: Scheduler.from_state(st.cluster, st.running, st.pending, "conservative",
                                     queued=pending) for m in modes}
    sched["pure"]._keep_state = False
    rng = np.random.default_rng(seed + 17)
    now, submitted = st.now, pending
    same, starts, ended = True, [], []
    times = {m: {"pass": ([], []), "update": ([], [])} for m in modes}
    builds = sched["kept"]._kept.builds
    for step in range(repeat + 1):
        d = {}
        for m in (modes if step % 2 else modes[::-1]):
            cpu, wall = _timed(lambda: d.__setitem__(m, sched[m].schedule(now)))
            if step:
                times[m]["pass"][0].append(cpu)
                times[m]["pass"][1].append(wall)
        same = same and all(_same(d["kept"], d["pure"], f) for f in DECISION_FIELDS)
        started = int((d["kept"].outcome == 0).sum())
        now += LOOP_STEP_S
        r = sched["kept"].running_jobs
        done = r.planned_end <= now
        early = rng.choice(np.flatnonzero(~done), size=min(LOOP_EARLY_ENDS, int((~done).sum())),
                           replace=False)
        gone = np.concatenate([r.job_id[done], r.job_id[early]])
        new = st.pending.take(np.arange(submitted, min(submitted + started, len(st.pending))))
        submitted += len(new)

        def update(s, dm):
            s.apply(dm)
            s.complete(gone, now)
            if len(new):
                s.submit(new)
        for m in modes:
            cpu, wall = _timed(lambda: update(sched[m], d[m]))
            if step:
                times[m]["update"][0].append(cpu)
                times[m]["update"][1].append(wall)
        if step:
            starts.append(started)
            ended.append(len(gone))
    fig = {"cluster": cluster_name, "mode": "loop", "nodes": st.cluster.num_nodes,
           "running_jobs": len(sched["kept"].running_jobs), "pending": pending,
           "step_s": LOOP_STEP_S, "starts_per_step": _spread(starts),
           "ends_per_step": _spread(ended), "same_decisions": same,
           "kept_builds": sched["kept"]._kept.builds - builds,
           "target_ms": B9_TARGET_MS.get(cluster_name)}
    for m in modes:
        for part in ("pass", "update"):
            fig.update(_summary(f"{m}_{part}", *times[m][part]))
    fig["pure_over_kept_pass_cpu"] = round(fig["pure_pass_cpu_ms"]
                                           / max(fig["kept_pass_cpu_ms"], 1e-6), 2)
    return fig


def _spread(xs: list) -> str:
    return f"{statistics.median(xs):g} ({min(xs)}-{max(xs)})" if xs else "-"


#: the Decisions fields compared between the kept and the pure pass
DECISION_FIELDS = ("job_id", "outcome", "start_time", "node_offsets", "nodes", "gpu_mask",
                   "partition", "held", "rows")


def _same(a, b, field: str) -> bool:
    import numpy as np
    x, y = getattr(a, field), getattr(b, field)
    return x.shape == y.shape and bool(np.all(x == y))


def b9(repeat: int, clusters=B9_CLUSTERS, pending=(B9_PENDING,)) -> dict:
    """B9 short-queue on each of ``clusters`` with each queue length of ``pending``: the
    repeated pass on an unchanged state, then the loop of passes, starts, ends and
    submits."""
    points = [(c, n) for c in clusters for n in pending]
    return {"scenario": "short-queue (B9)",
            "points": [measure_short_queue(c, repeat, n) for c, n in points]
            + [measure_short_queue_loop(c, repeat, n) for c, n in points],
            "runs": repeat, "machine": machine()}
