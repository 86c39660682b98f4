"""The ``time_limit`` check of ``--time-min`` runs: every job that started ran with a
limit in ``[time_min, asked]`` when it has a time minimum (``time_min`` > 0), else
with the limit it asked for. That it ended by that limit (``start + min(runtime,
limit)``) is the ``wrong_end`` check, made on the limits the jobs ran with. A run with
node failures is checked attempt by attempt: each attempt is planned anew (its own
limit, maybe cut again), and the shapes of an elastic attempt share its limit."""
from __future__ import annotations

import numpy as np

from .report import Violation


def check_time_limits(job_id, start, ran, time_min, asked, out: list) -> None:
    """Per job: its ``job_id``, ``start``, the limit it ran with (``ran``), its
    ``time_min`` and the limit it ``asked`` for."""
    _in_range(job_id, start, ran, time_min, asked, "", out)


def check_attempt_limits(job_id, start, ran, time_min, asked, head, tail, out: list) -> None:
    """Per record of an attempt (its job's ``job_id``, ``time_min`` and ``asked``
    limit; sorted by job, attempt, start): the limit it ran with (``ran``) lies in
    the range, and the records ``head[i]..tail[i]`` of attempt i have one limit."""
    ran = np.asarray(ran, dtype=np.int64)
    _in_range(job_id, start, ran, time_min, asked, "an attempt of ", out)
    group = np.repeat(np.arange(len(head)), np.asarray(tail) - np.asarray(head) + 1)
    for k in np.flatnonzero(ran != ran[np.asarray(head)][group]):
        out.append(Violation("time_limit", int(job_id[k]), int(start[k]),
                             f"job {job_id[k]}: a shape of an attempt ran with time limit "
                             f"{ran[k]} s, its attempt with {ran[head[group[k]]]} s"))


def _in_range(job_id, start, ran, time_min, asked, what, out):
    ran = np.asarray(ran, dtype=np.int64)
    tmin = np.asarray(time_min, dtype=np.int64)
    asked = np.asarray(asked, dtype=np.int64)
    low = np.where(tmin > 0, np.minimum(tmin, asked), asked)
    for k in np.flatnonzero((np.asarray(start) >= 0) & ((ran < low) | (ran > asked))):
        limits = f"[{low[k]}, {asked[k]}] (time_min {tmin[k]})" if tmin[k] > 0 else \
            f"{asked[k]}, the limit it asked for (no time_min)"
        out.append(Violation("time_limit", int(job_id[k]), int(start[k]),
                             f"{what}job {job_id[k]} ran with time limit {ran[k]} s, not "
                             f"{limits}"))
