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


def start_times_at(result: SimulationResult, t: int):
    """The pending jobs at ``t`` of ``result`` and their expected starts: a DataFrame
    with :data:`SQUEUE_START_COLUMNS`, in queue order (ST is always PD)."""
    import pandas as pd
    running, pending = result.state_at(t)
    sched = Scheduler.from_state(result.cluster, running, pending, "conservative",
                                 engine=result.summary.get("engine", "auto"))
    est = sched.expected_start_times(int(t))
    return pd.DataFrame({"JOBID": est.job_id, "PARTITION": est.partition, "USER": _users(est.user),
                         "ST": np.full(len(est), "PD"), "START_TIME": est.expected_start,
                         "NODES": est.num_nodes, "SCHEDNODES": est.schednodes,
                         "REASON": est.reason}, columns=SQUEUE_START_COLUMNS)


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


def _users(user: np.ndarray) -> np.ndarray:
    """User ids as text; squeue's "(null)" for an unknown user (-1)."""
    return np.where(user >= 0, np.asarray(user).astype(str), "(null)")
