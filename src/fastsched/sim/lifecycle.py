"""Node failures in a simulation: the events of a failure model joined with an
event file, each attempt of a requeued job as its own record (``sacct
--duplicates``), and what failures cost (lost GPU-hours, checkpoint overhead,
goodput; :mod:`fastsched.model.lifecycle`)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..model.cluster import Cluster
from ..model.constraints import csr_take
from ..model.errors import InputError
from ..model.events import NODE_EVENT_KINDS, NodeEvents
from ..model.jobs import JobTable
from ..model.lifecycle import REQUEUE_DELAY, Lifecycle, goodput
from .elastic import add_resizes, shape_goodput_args, shrink_summary


def failure_horizon(cluster: Cluster, jobs: JobTable) -> int:
    """How far a failure model draws events by default: the last submit plus twice
    (the node-seconds of work over the cluster's nodes, plus the longest job), a
    bound on the makespan of a run that failures slow down a little."""
    if len(jobs) == 0:
        return 0
    run = np.minimum(jobs.runtime, jobs.time_limit).astype(np.float64)
    work = float(np.dot(run, jobs.num_nodes)) / max(cluster.num_nodes, 1)
    return int(jobs.submit_time.max()) + 2 * int(work + run.max()) + 1


def run_events(cluster: Cluster, jobs: JobTable, events: NodeEvents | None,
               failures) -> NodeEvents | None:
    """``events`` with those of the failure model ``failures`` (None: none) added."""
    if failures is None:
        return events
    leaf = cluster.topology.get("leaf") if cluster.topology else None
    if leaf is None and cluster.topology:
        leaf = next(iter(cluster.topology.values()))
    drawn = failures.events(cluster.num_nodes, failure_horizon(cluster, jobs), leaf)
    return drawn if events is None else NodeEvents.merged(events, drawn)


def has_failures(events: NodeEvents | None) -> bool:
    """Whether ``events`` take a node down (a run that may kill jobs)."""
    return events is not None and bool((events.kind == NODE_EVENT_KINDS.index("down")).any())


def attempt_table(run) -> dict:
    """Every attempt of every started job of an engine ``run``, as arrays in (job,
    attempt) order: the killed ones of ``run.attempts`` and each job's last one.
    Keys: row (the job's index), attempt, start, end, elapsed, killed, node_fail (a
    killed attempt not requeued), preempted (stopped by preemption: PREEMPTED, not
    NODE_FAIL), partition, alloc_offsets / alloc_nodes /
    alloc_gpu_mask, pull (its image pull, seconds; None from a run without images),
    configure (seconds CONFIGURING before its start; None from a run without power);
    with elastic jobs (``run.resizes``) also a record per shape of a shrunk attempt,
    rows in (job, attempt, start) order and key ``resized`` (:func:`add_resizes`); and
    ``limit``: the time limit each ran with (None from a run without ``--time-min``);
    per job:
    last_runtime (what its last attempt had left to
    run), node_fail_job (its last attempt ended NODE_FAIL), preempted_job (its last
    attempt was preempted and not requeued: PREEMPTED)."""
    a = run.attempts
    last = np.flatnonzero(run.start >= 0)
    k = len(a.job)
    row = np.concatenate([a.job, last])
    attempt = np.concatenate([a.attempt, a.restarts[last]])
    start = np.concatenate([a.start, run.start[last]])
    end = np.concatenate([a.end, run.end[last]])
    cancelled = np.zeros(len(a.node_fail), dtype=bool) if a.cancelled is None else a.cancelled
    last_killed = a.node_fail[last] | cancelled[last]
    killed = np.concatenate([np.ones(k, dtype=bool), last_killed])
    # a job not requeued was logged once (killed) and is also its own last record:
    # keep the logged one, with its saved progress
    keep = np.concatenate([np.ones(k, dtype=bool), ~last_killed])
    partition = np.concatenate([a.partition, run.partition[last]])
    pull = np.concatenate([np.zeros(k, dtype=np.int64) if a.pull is None else a.pull,
                           np.zeros(len(last), dtype=np.int64) if run.pull is None
                           else run.pull[last]])
    counts = np.concatenate([np.diff(a.alloc_offsets), np.diff(run.alloc_offsets)[last]])
    last_entries = csr_take(run.alloc_offsets, last)[1]
    nodes = np.concatenate([a.alloc_nodes, run.alloc_nodes[last_entries]])
    masks = np.concatenate([a.alloc_gpu_mask, run.alloc_gpu_mask[last_entries]
                            if run.alloc_gpu_mask is not None else
                            np.zeros(len(last_entries), dtype=np.uint64)])
    node_fail = np.concatenate([a.node_fail[a.job] & (a.attempt == a.restarts[a.job]),
                                np.zeros(len(last), dtype=bool)])
    preempted = np.concatenate([np.zeros(k, dtype=bool) if a.preempted is None
                                else a.preempted, np.zeros(len(last), dtype=bool)])
    configure = None if run.configure is None else \
        np.concatenate([a.configure, run.configure[last]])
    limit = None if run.time_limit is None else \
        np.concatenate([a.limit, np.asarray(run.time_limit)[last]])
    offsets = np.zeros(len(row) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    rows = np.flatnonzero(keep)
    rows = rows[np.lexsort((attempt[rows], row[rows]))]
    off, entries = csr_take(offsets, rows)
    table = {"row": row[rows], "attempt": attempt[rows], "start": start[rows],
            "end": end[rows], "elapsed": end[rows] - start[rows], "killed": killed[rows],
            "node_fail": node_fail[rows], "partition": partition[rows],
            "preempted": preempted[rows], "preempted_job": cancelled,
            "pull": None if run.pull is None else pull[rows],
            "limit": None if limit is None else limit[rows],
            "configure": None if configure is None else configure[rows],
            "alloc_offsets": off, "alloc_nodes": nodes[entries], "alloc_gpu_mask": masks[entries],
            "last_runtime": a.runtime, "node_fail_job": a.node_fail}
    return table if run.resizes is None else add_resizes(table, run.resizes)


def lifecycle_summary(jobs: JobTable, table: dict, lifecycle: Lifecycle) -> dict:
    """The summary's ``lifecycle`` part: attempts, requeues, NODE_FAIL ends and
    the GPU-hours split (:func:`fastsched.model.lifecycle.goodput`)."""
    row = table["row"]
    # each attempt at the nodes it ran on (a job of a node range may start on fewer)
    width = np.where(table["start"] >= 0, np.diff(table["alloc_offsets"]), jobs.num_nodes[row])
    gpus = width.astype(np.int64) * jobs.gpus_per_node[row]
    out = {"attempts": int(len(row)), "killed_attempts": int(table["killed"].sum()),
           "requeues": int((table["attempt"] > 0).sum()),
           "node_fail_jobs": int(table["node_fail"].sum()),
           "requeue_delay": int(lifecycle.delay)}
    interval, cost = lifecycle.checkpoint_interval[row], lifecycle.checkpoint_cost[row]
    if "resized" not in table:
        out.update(goodput(table["elapsed"], gpus, interval, cost, table["killed"],
                           table["pull"]))
        return out
    gpus = np.diff(table["alloc_offsets"]) * jobs.gpus_per_node[row]      # per shape
    shapes = shape_goodput_args(table)
    out["attempts"] = int(len(row) - table["resized"].sum())
    out.update(goodput(table["elapsed"], gpus, interval, cost, shapes["killed"],
                       shapes["pull"] if table["pull"] is not None else None,
                       shapes["before"], shapes["attempt_run"]))
    out.update(shrink_summary(table, jobs, interval))
    return out


def attempt_timeouts(jobs: JobTable, table: dict, pull, started) -> int:
    """The jobs whose last attempt ended TIMEOUT: what it had left (plus its image
    ``pull``) over the limit it ran with (``jobs.time_limit``), neither killed nor
    preempted; a job's first runtime says nothing once an attempt saved progress."""
    left = table["last_runtime"] + (0 if pull is None else pull)
    ended = ~table["node_fail_job"]
    if table.get("preempted_job") is not None:
        ended &= ~table["preempted_job"]
    return int((started & ended & (left > jobs.time_limit)).sum())


def site_requeue(cluster: Cluster) -> tuple[bool, int]:
    """(JobRequeue, requeue delay) of the cluster's slurm.conf: ``JobRequeue=0`` makes
    batch jobs not requeueable by default (Slurm's default is 1). The delay is N + 1
    for ``SchedulerParameters=requeue_delay=N``, else for ``AuthInfo=...cred_expire=N``
    (121 s by default), as Slurm's ``_requeue_delay`` (job_mgr.c) takes them."""
    settings = cluster.settings
    other = {str(k).lower(): str(v) for k, v in settings.other.items()} \
        if settings is not None else {}
    requeue = other.get("jobrequeue", "1").strip() != "0"
    delay = REQUEUE_DELAY
    for item in other.get("authinfo", "").split(","):
        key, _, value = item.strip().partition("=")
        if key.strip().lower() == "cred_expire" and value.strip().isdigit():
            delay = int(value) + 1
    given = settings.scheduler_parameters.get("requeue_delay") if settings is not None \
        else None
    if given is not None:
        if isinstance(given, bool) or not isinstance(given, int):
            raise InputError(f"requeue_delay must be a whole number of seconds, got "
                             f"{given!r}", field="SchedulerParameters")
        delay = given + 1
    return requeue, delay


def run_lifecycle(cluster: Cluster, jobs: JobTable, workload=None,
                  requeue: bool | None = None, regrow: bool = False) -> Lifecycle:
    """What a node failure does to each job of a run: the workload's columns where
    it has them (a job's own --requeue/--no-requeue), else ``requeue`` (None: the
    cluster's JobRequeue), after the cluster's requeue delay; ``regrow``: shrunk
    ``--no-kill`` jobs take nodes that come back."""
    site, delay = site_requeue(cluster)
    default = site if requeue is None else requeue
    if workload is not None and hasattr(workload, "lifecycle"):
        return replace(workload.lifecycle(default, delay), regrow=bool(regrow))
    return Lifecycle.of(len(jobs), requeue=default, delay=delay, regrow=regrow)


def lifecycle_line(summary: dict) -> str:
    """One line on what node failures cost a run (its summary's ``lifecycle``)."""
    lc = summary["lifecycle"]
    good = "n/a" if lc["goodput"] is None else f"{lc['goodput']:.1%}"
    shrinks = "" if "shrinks" not in lc else (
        f"; {lc['shrinks']:,} time(s) a --no-kill job shrank ({lc['shrunk_jobs']:,} job(s)), "
        f"keeping {lc['shrink_kept_gpu_hours']:,.1f} GPU-h a kill would have lost"
        + (f", {lc['regrows']:,} regrowth(s)" if lc.get("regrows") else ""))
    return (f"node failures: {lc['killed_attempts']:,} attempt(s) killed, {lc['requeues']:,} "
            f"requeued, {lc['node_fail_jobs']:,} job(s) ended NODE_FAIL; "
            f"{lc['lost_gpu_hours']:,.1f} GPU-h lost, {lc['checkpoint_gpu_hours']:,.1f} GPU-h "
            f"checkpointing of {lc['allocated_gpu_hours']:,.1f} allocated: goodput {good}"
            + shrinks)
