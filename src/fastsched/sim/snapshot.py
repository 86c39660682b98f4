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
    priorities at ``t``, a job a limit holds gets its reason and START_TIME -1,
    a job still waiting for a dependency gets reason ``Dependency`` (START_TIME
    -1, like squeue's N/A), listed after the planned jobs."""
    import pandas as pd
    running, _ = result.state_at(t)
    t = int(t)
    w, s = result.workload, result.schedule
    waiting = (w.submit_time <= t) & ((s.start_time >= t) | (s.start_time < 0))
    eligible = getattr(result, "eligible", None)
    queued = waiting if eligible is None else waiting & (eligible >= 0) & (eligible <= t)
    rows = np.flatnonzero(queued)
    options = _constraints_at(result, t, rows)
    sched = Scheduler.from_state(result.cluster, running, w.take(rows), "conservative",
                                 reservations=result.summary.get("reservations"), **options)
    est = sched.expected_start_times(t)
    planned = pd.DataFrame({"JOBID": est.job_id, "PARTITION": est.partition,
                            "USER": _users(est.user, user_names), "ST": "PD",
                            "START_TIME": est.expected_start, "NODES": est.num_nodes,
                            "SCHEDNODES": est.schednodes, "REASON": est.reason},
                           columns=SQUEUE_START_COLUMNS)
    dep = np.flatnonzero(waiting & ~queued)
    if not len(dep):
        return planned
    part_names = np.array([p.name for p in result.cluster.partitions], dtype=object)
    held = pd.DataFrame({
        "JOBID": w.job_id[dep], "PARTITION": part_names[w.partition[dep]],
        "USER": _users(w.user[dep], user_names), "ST": "PD", "START_TIME": -1,
        "NODES": w.num_nodes[dep], "SCHEDNODES": "(null)",
        "REASON": np.where(result.never[dep] & (s.start_time[dep] < 0),
                           "DependencyNeverSatisfied", "Dependency")},
        columns=SQUEUE_START_COLUMNS)
    return pd.concat([planned, held], ignore_index=True)


def _constraints_at(result, t: int, rows: np.ndarray) -> dict:
    """The run's constraints for a scheduler holding its state at ``t`` with the
    jobs ``rows`` queued (limits: the running jobs', then the queued jobs')."""
    from ..model.constraints import LimitGroups, PartitionChoices, csr_take
    options = {}
    if result.partitions is not None:
        off, idx = csr_take(result.partitions.offsets, rows)
        options["partitions"] = PartitionChoices(off, result.partitions.partition[idx])
    if result.limits is not None:
        s = result.schedule
        run = np.flatnonzero((s.start_time >= 0) & (s.start_time < t) & (s.end_time > t))
        off, idx = csr_take(result.limits.offsets, np.concatenate([run, rows]))
        options["limits"] = LimitGroups(off, result.limits.group[idx], result.limits.caps,
                                        result.limits.reasons)
    if result.placement is not None:
        options["placement"] = result.placement.take(rows)
        options["eligible"] = result.eligible[rows]
    if result.priority_at is not None:
        options["priority"] = result.priority_at(t)[rows]
    return options


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
