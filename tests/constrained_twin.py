"""One constrained case (tests/test_constraints.py ``constrained_cases``) run by the node
engine and by its twin (tests/naive_nodes.py) with the same options, records compared:
the common part of the lifecycle, preemption, power and container twin tests."""
import numpy as np
from hypothesis import event, reject

import naive_nodes
from fastsched import NodeEvents
from fastsched.engine import run_nodes
from fastsched.engine.interrupt import NOW, Interrupted
from test_constraints import engine_inputs

#: a run still going at this many times its jobs' submits plus limits never ends
ENDLESS = 50


def _bounded(jobs):
    """A ``tick`` that stops an engine run past :data:`ENDLESS` times the time its jobs
    would take one after another: preemption can go on for ever where requeued victims
    queued before their preemptor take back, at each one's begin time, what it preempted
    them for (Slurm's rules allow it too; docs/lifecycle.md)."""
    bound = ENDLESS * (int(jobs.submit_time.max(initial=0)) + int(jobs.time_limit.sum()) + 100)

    def tick(control):
        if control[NOW] > bound:
            raise KeyboardInterrupt
    return tick


def run_both(case, policy, depth, *, rows=None, lifecycle=None, engine=None, twin=None):
    """The engine's run of ``case`` after asserting the twin's records equal it, the job
    ids, and the twin's killed attempts. ``rows``: node event rows (both sides);
    ``lifecycle``: a :class:`fastsched.model.lifecycle.Lifecycle` (the twin gets its
    requeue flags, checkpoint intervals and delay); ``engine`` / ``twin``: more keyword
    arguments for one side only. A case whose engine run never ends is discarded (the
    twin's would not end either)."""
    cluster, available, jobs, parts, deps, groups, caps, rank = case
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    ids = [int(j) for j in jobs.job_id]
    key = None if rank is None else np.array([rank[j] for j in ids])
    engine_kw, twin_kw, killed = dict(engine or {}), dict(twin or {}), []
    if rows is not None:
        engine_kw["events"] = NodeEvents.from_rows(rows, cluster.num_nodes)
        twin_kw["events"] = rows
    if lifecycle is not None:
        engine_kw["lifecycle"] = lifecycle
        twin_kw.update(requeue={j: bool(lifecycle.requeue[i]) for i, j in enumerate(ids)},
                       checkpoint={j: int(lifecycle.checkpoint_interval[i])
                                   for i, j in enumerate(ids)},
                       delay=lifecycle.delay, attempts=killed)
    try:
        run = run_nodes(cluster, jobs, policy, depth, available, partitions=pc,
                        dependencies=dp, limits=lg, rank=key, tick=_bounded(jobs), **engine_kw)
    except Interrupted:
        event("discarded: a run that never ends")
        reject()
    out, _ = naive_nodes.simulate(
        cluster, naive_nodes.jobs_from_table(jobs), policy, depth, available, partitions=parts,
        deps=deps, groups=groups, caps=caps, rank=rank, **twin_kw)
    naive_nodes.assert_same_records(run, ids, out)
    return run, ids, killed


def attempt_rows(run, ids, *fields):
    """The engine's attempts as the twin lists its killed ones: job id, attempt, start,
    end, nodes, then each named attempt field."""
    a = run.attempts
    return sorted((ids[a.job[k]], int(a.attempt[k]), int(a.start[k]), int(a.end[k]),
                   a.alloc_nodes[a.alloc_offsets[k]:a.alloc_offsets[k + 1]].tolist(),
                   *(getattr(a, f)[k].item() for f in fields)) for k in range(len(a)))


def assert_same_runs(a, b) -> None:
    """Two engine runs made the same decisions, byte for byte: starts, ends, partitions,
    reasons and the allocations of the jobs that started (a job that never started has
    no allocation: its slot is scratch)."""
    held = np.repeat(a.start >= 0, np.diff(a.alloc_offsets))
    for name in ("start", "end", "partition", "alloc_offsets", "alloc_nodes",
                 "alloc_gpu_mask", "reason"):
        x, y = getattr(a, name), getattr(b, name)
        if name.startswith("alloc_") and name != "alloc_offsets":
            x, y = x[held], y[held]
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), name
