"""A what-if at one instant of a simulation: every pending job's expected start,
like ``squeue --start``.

The state at ``t`` is the simulator's just before its pass there
(:meth:`SimulationResult.state_at`: running = started before ``t`` and not
ended by ``t``; pending = submitted by ``t`` and not started before ``t``). A
:class:`Scheduler` holding it runs a full conservative plan (the
``expected_start_times`` what-if), whatever policy the simulation used: the
estimate assumes every job runs to its time limit and no new job arrives, the
same assumptions as Slurm's own estimate.
"""
from __future__ import annotations

import numpy as np

from .results import SimulationResult
from .scheduler import Scheduler

__all__ = ["SQUEUE_START_COLUMNS", "start_times_at", "format_start_times"]

#: squeue --start's default columns (START_TIME in seconds of simulated time)
SQUEUE_START_COLUMNS = ["JOBID", "PARTITION", "USER", "ST", "START_TIME", "NODES",
                        "SCHEDNODES", "REASON"]


def start_times_at(result: SimulationResult, t: int, user_names=None):
    """The pending jobs at ``t`` of ``result`` and their expected starts: a DataFrame
    with :data:`SQUEUE_START_COLUMNS`, in queue order (ST is always PD). USER is
    the name from ``user_names`` (a workload's, indexed by user id), else the id.

    A run with constraints (priorities, limits, dependencies, partition
    choices, placement) is planned under them too: queue order by the
    priorities at ``t``, a job a limit holds gets its reason and no start, a
    job still waiting for a dependency gets reason ``Dependency`` (START_TIME
    -1, like squeue's N/A)."""
    if _constrained(result):
        return _constrained_start_times(result, int(t), user_names)
    import pandas as pd
    running, pending = result.state_at(t)
    sched = Scheduler.from_state(result.cluster, running, pending, "conservative",
                                 engine=result.summary.get("engine", "auto"))
    est = sched.expected_start_times(int(t))
    return pd.DataFrame({"JOBID": est.job_id, "PARTITION": est.partition, "USER": _users(est.user, user_names),
                         "ST": np.full(len(est), "PD"), "START_TIME": est.expected_start,
                         "NODES": est.num_nodes, "SCHEDNODES": est.schednodes,
                         "REASON": est.reason}, columns=SQUEUE_START_COLUMNS)


def _constrained(result) -> bool:
    return any(getattr(result, k, None) is not None for k in
               ("limits", "dependencies", "partitions", "placement", "priority_at"))


def _constrained_start_times(result, t: int, user_names):
    """start_times_at under the run's constraints (see there), via one full
    conservative node-engine pass."""
    import pandas as pd
    from .constraints import LimitGroups, PartitionChoices, csr_take
    from .hostlist import compress
    from .engine import plan_nodes
    running, _ = result.state_at(t)
    w, s = result.workload, result.schedule
    waiting = (w.submit_time <= t) & ((s.start_time >= t) | (s.start_time < 0))
    queued = waiting & (result.eligible >= 0) & (result.eligible <= t)
    rows = np.flatnonzero(queued)
    kw = {}
    if result.partitions is not None:
        off, idx = csr_take(result.partitions.offsets, rows)
        kw["partitions"] = PartitionChoices(off, result.partitions.partition[idx])
    if result.limits is not None:
        lim = result.limits
        off, idx = csr_take(lim.offsets, rows)
        kw["limits"] = LimitGroups(off, lim.group[idx], lim.caps, lim.reasons)
        kw["limit_usage"] = _group_usage(lim, w, (s.start_time >= 0) & (s.start_time < t)
                                         & (s.end_time > t))
    if result.placement is not None:
        p = result.placement
        kw["placement"] = p.take(rows)
        kw["eligible"] = result.eligible[rows]
    if result.priority_at is not None:
        kw["rank"] = -result.priority_at(t)[rows]
    d = plan_nodes(result.cluster, running, w.take(rows), t, "conservative", full=True, **kw)
    names = result.cluster.node_names
    part_names = np.array([p.name for p in result.cluster.partitions] + [""], dtype=object)
    reason = np.where(d.reason == "", "None", d.reason).astype(object)
    sched = [compress([names[x] for x in d.nodes_of(i)]) or "(null)" for i in range(len(d))]
    row_of = dict(zip(w.job_id[rows].tolist(), rows.tolist()))
    r = np.array([row_of[j] for j in d.job_id.tolist()], dtype=np.int64)
    planned = pd.DataFrame({
        "JOBID": d.job_id, "PARTITION": part_names[np.where(d.partition >= 0, d.partition,
                                                            w.partition[r])],
        "USER": _users(w.user[r], user_names), "ST": "PD", "START_TIME": d.planned_start,
        "NODES": w.num_nodes[r], "SCHEDNODES": sched, "REASON": reason},
        columns=SQUEUE_START_COLUMNS)
    dep = np.flatnonzero(waiting & ~queued)
    held = pd.DataFrame({
        "JOBID": w.job_id[dep], "PARTITION": part_names[w.partition[dep]],
        "USER": _users(w.user[dep], user_names), "ST": "PD", "START_TIME": -1, "NODES": w.num_nodes[dep],
        "SCHEDNODES": "(null)", "REASON": np.where(result.never[dep] & (s.start_time[dep] < 0),
                                                  "DependencyNeverSatisfied", "Dependency")},
        columns=SQUEUE_START_COLUMNS)
    return pd.concat([planned, held], ignore_index=True)


def _group_usage(limits, jobs, running) -> np.ndarray:
    """What the ``running`` jobs count against each limit group (LimitGroups.caps columns)."""
    from .constraints import CAPS
    row = np.repeat(np.arange(len(jobs)), np.diff(limits.offsets))
    keep = running[row]
    row, grp = row[keep], limits.group[keep]
    n = jobs.num_nodes.astype(np.int64)[row]
    usage = np.zeros((len(limits.caps), len(CAPS)), dtype=np.int64)
    for cap, amount in enumerate((np.ones(len(row), np.int64), n * jobs.gpus_per_node[row],
                                  n * jobs.cpus_per_node[row], n * jobs.mem_per_node[row])):
        np.add.at(usage[:, cap], grp, amount)
    return usage


def format_start_times(frame) -> str:
    """``frame`` as squeue prints it: a header, numbers right-aligned, text left-aligned."""
    cols = list(frame.columns)
    cells = [[str(v) for v in frame[c].tolist()] for c in cols]
    widths = [max([len(c)] + [len(v) for v in col]) for c, col in zip(cols, cells)]
    numeric = [frame[c].dtype.kind in "iuf" for c in cols]

    def line(values):
        return "  ".join(v.rjust(w) if num else v.ljust(w)
                         for v, w, num in zip(values, widths, numeric)).rstrip()
    return "\n".join([line(cols)] + [line([col[i] for col in cells]) for i in range(len(frame))])


def _users(user: np.ndarray, names=None) -> np.ndarray:
    """User names (ids as text without ``names``); squeue's "(null)" for an unknown
    user (-1)."""
    user = np.asarray(user)
    known = user >= 0
    text = np.full(len(user), "(null)", dtype=object)
    text[known] = (np.asarray(names, dtype=object)[user[known]] if names is not None
                   else user[known].astype(str))
    return text
