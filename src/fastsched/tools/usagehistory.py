"""Fair-share usage per account over a finished simulation, for plots and reports.

:func:`account_usage` samples, at evenly spaced (or given) times, the decayed billed
usage of each account exactly as a site simulation's priority model sees it: the
simulator's own :class:`~fastsched.policy.usage.UsageTracker` (TRESBillingWeights x
allocated TRES x the QOS's UsageFactor, decayed by PriorityDecayHalfLife, zeroed at
each PriorityUsageResetPeriod) charged with the schedule's start and end times, and
summed up the association tree (:meth:`~fastsched.policy.fairshare.AssociationTree.node_usage`,
Slurm's RawUsage of an account, what ``sshare`` prints). At a sample time ``t`` a job
counts for what it ran before ``t``; a job that starts later is not known yet.

:func:`schedule_times` lines a jobs table (``simulate --jobs-out``) up with its
workload, so the usage of a schedule written to disk can be computed again.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..model.errors import InputError
from ..policy.usage import UsageTracker

__all__ = ["account_usage", "schedule_times", "DEFAULT_SAMPLES"]

#: sample times when none are given: evenly spaced from first submit to last end
DEFAULT_SAMPLES = 200


def account_usage(config, workload, start_time, end_time, *, times=None,
                  samples: int = DEFAULT_SAMPLES, depth: int = 1,
                  tree=None) -> pd.DataFrame:
    """Decayed usage (billed TRES-seconds) of every account ``depth`` levels below the
    root (1: the top-level accounts) at each sample time.

    ``start_time`` / ``end_time``: per job of ``workload`` (workload order; -1 = never
    started), e.g. ``result.schedule.start_time``. ``times``: strictly increasing sample times
    (default: ``samples`` evenly spaced from the first submission to the last end).
    ``tree``: ``config.build_tree(workload)`` (built when not given).

    Returns a DataFrame indexed by ``time``, one float column per account in tree
    order; an account's usage is the sum of its user associations' (users placed
    directly at a shallower level are not in any column).
    """
    start = np.asarray(start_time, dtype=np.int64)
    end = np.asarray(end_time, dtype=np.int64)
    n = len(workload)
    if start.shape != (n,) or end.shape != (n,):
        raise InputError(f"start_time / end_time must have {n} entries (got {start.shape}, "
                         f"{end.shape})", field="start_time")
    if int(depth) < 1:
        raise InputError(f"depth must be >= 1, got {depth!r}", field="depth")
    tree = config.build_tree(workload) if tree is None else tree
    times = _sample_times(workload, start, end, times, samples)
    accounts = _accounts_at(tree, int(depth))
    tracker = UsageTracker(config, tree, workload)
    out = np.zeros((len(times), len(accounts)), dtype=np.float64)
    before = None
    for k, t in enumerate(times.tolist()):
        known = (start >= 0) & (start <= t)          # what a run at t has seen start
        started = None if before is None else np.flatnonzero(known & ~before)
        usage = tracker.at(t, np.where(known, start, -1), np.where(known, end, -1), started)
        out[k] = tree.node_usage(usage.raw)[accounts]
        before = known
    names = getattr(tree, "assoc_account", tree.names)
    return pd.DataFrame(out, index=pd.Index(times, name="time"),
                        columns=[names[v] for v in accounts.tolist()])


def schedule_times(jobs: pd.DataFrame, workload, *, source: str = "jobs"):
    """(start_time, end_time) int64 arrays in ``workload`` order from a jobs table
    (columns job_id, start_time, end_time; empty = never started). With one record
    per attempt, the last one of each job counts. Raises :class:`InputError` for a
    workload job the table does not have."""
    for column in ("job_id", "start_time", "end_time"):
        if column not in jobs.columns:
            raise InputError(f"no column {column!r}", file=source, field=column)
    last = jobs.drop_duplicates("job_id", keep="last").set_index("job_id")
    ids = pd.Index(np.asarray(workload.jobs.job_id))
    pos = last.index.get_indexer(ids)
    if (pos < 0).any():
        missing = int(ids[np.flatnonzero(pos < 0)[0]])
        raise InputError(f"job {missing} of the workload has no record", file=source,
                         field="job_id")

    def column(name):
        values = pd.to_numeric(last[name], errors="coerce").to_numpy(dtype=np.float64)[pos]
        return np.where(np.isnan(values), -1, values).astype(np.int64)

    return column("start_time"), column("end_time")


def _sample_times(workload, start, end, times, samples) -> np.ndarray:
    if times is not None:
        t = np.asarray(times, dtype=np.int64).ravel()
        if len(t) == 0 or (np.diff(t) <= 0).any():
            raise InputError("times must be a non-empty, strictly increasing sequence",
                             field="times")
        return t
    if int(samples) < 2:
        raise InputError(f"samples must be >= 2, got {samples!r}", field="samples")
    submit = np.asarray(workload.jobs.submit_time, dtype=np.int64)
    lo = int(submit.min()) if len(submit) else 0
    ended = end[start >= 0]
    hi = max(int(ended.max()) if len(ended) else lo, lo + 1)
    return np.unique(np.linspace(lo, hi, int(samples)).round().astype(np.int64))


def _accounts_at(tree, depth: int) -> np.ndarray:
    """Non-user nodes ``depth`` levels below the root, in breadth-first (tree) order."""
    level = np.zeros(tree.num_nodes, dtype=np.int64)
    for v in tree.order[1:].tolist():
        level[v] = level[tree.parent[v]] + 1
    order = tree.order
    picked = order[(level[order] == depth) & ~tree.is_user[order]]
    if not len(picked):
        raise InputError(f"the association tree has no account at depth {depth} "
                         f"(deepest: {int(level[~tree.is_user].max())})", field="depth")
    return picked.astype(np.int64)
