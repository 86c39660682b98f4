"""A simulation's jobs as Batsim writes its ``_jobs.csv`` (the file evalys reads):
one row per job, Batsim's column names, resources = nodes (``allocated_resources``
is the interval set of node indices, ``0-3 5``).

Columns as Batsim's documentation lists them (``docs/output-jobs.rst`` of
oar-team/batsim): ``job_id``, ``workload_name``, ``submission_time``,
``requested_number_of_resources`` (nodes), ``requested_time`` (the time limit; -1:
unlimited), ``success`` (1: completed within its limit), ``final_state``
(``COMPLETED_SUCCESSFULLY``, ``COMPLETED_WALLTIME_REACHED``, or ``REJECTED`` for a
job that never started: Batsim has no "still pending" state), ``starting_time``,
``execution_time``, ``finish_time``, ``waiting_time``, ``turnaround_time``,
``stretch`` (turnaround / execution; ``inf`` for a zero-length run),
``allocated_resources``, ``consumed_energy`` (-1: no energy model), ``metadata``
(the job's partition, when the cluster has several). A job that never started has
-1 for every time and an empty allocation.
"""
from __future__ import annotations

import numpy as np

from ..model.jobs import UNLIMITED
from .hostlist import join_rows

__all__ = ["BATSIM_COLUMNS", "batsim_frame", "write_batsim", "interval_sets"]

BATSIM_COLUMNS = ["job_id", "workload_name", "submission_time",
                  "requested_number_of_resources", "requested_time", "success",
                  "final_state", "starting_time", "execution_time", "finish_time",
                  "waiting_time", "turnaround_time", "stretch", "allocated_resources",
                  "consumed_energy", "metadata"]


def interval_sets(offsets: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """Per row of a CSR list of node indices, its interval set as Batsim writes one:
    maximal runs of consecutive indices, ``a-b`` or ``a``, ascending, separated by
    spaces ("" for an empty row)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    rows = len(offsets) - 1
    if len(nodes) == 0:
        return np.full(rows, "", dtype=object)
    row = np.repeat(np.arange(rows), np.diff(offsets))
    order = np.lexsort((nodes, row))
    row, nodes = row[order], np.asarray(nodes, dtype=np.int64)[order]
    keep = np.ones(len(nodes), bool)
    keep[1:] = (row[1:] != row[:-1]) | (nodes[1:] != nodes[:-1])     # a node once
    row, nodes = row[keep], nodes[keep]
    start = np.ones(len(nodes), bool)
    start[1:] = (row[1:] != row[:-1]) | (nodes[1:] != nodes[:-1] + 1)
    first = np.flatnonzero(start)
    last = np.append(first[1:], len(nodes)) - 1
    return _interval_tokens(nodes[first], nodes[last], row[first], rows)


def schedule_interval_sets(schedule) -> np.ndarray:
    """:func:`interval_sets` of a :class:`~fastsched.model.schedule.Schedule`'s jobs (from
    its node runs when it has them: no node index per allocated node)."""
    if schedule.node_runs is None:
        return interval_sets(schedule.alloc_offsets, schedule.alloc_nodes)
    runs = schedule.node_runs.merged()
    rows = len(runs.offsets) - 1
    row = np.repeat(np.arange(rows), np.diff(runs.offsets))
    first, last = runs.first, runs.first + runs.count - 1
    if not len(first):
        return np.full(rows, "", dtype=object)
    if ((row[1:] == row[:-1]) & (first[1:] <= last[:-1] + 1)).any():
        return interval_sets(runs.node_offsets(), runs.nodes())     # (not ascending)
    return _interval_tokens(first, last, row, rows)


def _interval_tokens(lo, hi, run_row, rows: int) -> np.ndarray:
    """Per row, its runs ``lo``-``hi`` (grouped by ``run_row``, ascending) as text."""
    text = np.where(lo == hi, lo.astype(str), np.char.add(np.char.add(lo.astype(str), "-"),
                                                          hi.astype(str))).astype(object)
    lead = np.ones(len(run_row), bool)
    lead[1:] = run_row[1:] != run_row[:-1]
    tokens = np.where(lead, "", " ").astype(object) + text
    return join_rows(tokens, run_row, rows)


def batsim_frame(result, workload_name: str = "w0"):
    """The jobs of ``result`` as a pandas DataFrame with :data:`BATSIM_COLUMNS`."""
    import pandas as pd
    w, s = result.workload, result.schedule
    started = s.start_time >= 0
    execution = np.where(started, s.end_time - s.start_time, -1)
    turnaround = np.where(started, s.end_time - w.submit_time, -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        stretch = np.where(started, turnaround / execution.astype(np.float64), -1.0)
    killed = w.runtime > w.time_limit
    state = np.where(~started, "REJECTED", np.where(killed, "COMPLETED_WALLTIME_REACHED",
                                                   "COMPLETED_SUCCESSFULLY"))
    part = getattr(result, "partition", None)
    part = w.partition if part is None else part
    names = [p.name for p in result.cluster.partitions]
    if len(names) > 1:
        table = np.array(names + [""], dtype=object)
        metadata = table[np.where((part >= 0) & (part < len(names)), part, len(names))]
    else:
        metadata = np.full(len(w), "", dtype=object)
    return pd.DataFrame({
        "job_id": s.job_id,
        "workload_name": workload_name,
        "submission_time": w.submit_time,
        "requested_number_of_resources": w.num_nodes,
        "requested_time": np.where(w.time_limit >= UNLIMITED, -1, w.time_limit),
        "success": (started & ~killed).astype(np.int8),
        "final_state": state,
        "starting_time": np.where(started, s.start_time, -1),
        "execution_time": execution,
        "finish_time": np.where(started, s.end_time, -1),
        "waiting_time": np.where(started, s.start_time - w.submit_time, -1),
        "turnaround_time": turnaround,
        "stretch": stretch,
        "allocated_resources": schedule_interval_sets(s),
        "consumed_energy": -1,
        "metadata": metadata,
    }, columns=BATSIM_COLUMNS)


def write_batsim(result, path, workload_name: str = "w0") -> None:
    """Write ``result``'s jobs to ``path`` as Batsim's ``_jobs.csv`` (module docs)."""
    batsim_frame(result, workload_name).to_csv(path, index=False)
