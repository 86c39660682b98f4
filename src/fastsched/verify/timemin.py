"""The ``time_limit`` check of ``--time-min`` runs: every job that started ran with a
limit in ``[time_min, asked]`` when it has a time minimum (``time_min`` > 0), else
with the limit it asked for. That it ended by that limit (``start + min(runtime,
limit)``) is the ``wrong_end`` check, made on the limits the jobs ran with."""
from __future__ import annotations

import numpy as np

from .report import Violation


def check_time_limits(jobs, start, time_min, asked, out: list) -> None:
    """``jobs``: with the limits they ran with; ``time_min`` and ``asked`` per job."""
    ran = np.asarray(jobs.time_limit, dtype=np.int64)
    tmin = np.asarray(time_min, dtype=np.int64)
    asked = np.asarray(asked, dtype=np.int64)
    low = np.where(tmin > 0, np.minimum(tmin, asked), asked)
    for k in np.flatnonzero((start >= 0) & ((ran < low) | (ran > asked))):
        what = f"[{low[k]}, {asked[k]}] (time_min {tmin[k]})" if tmin[k] > 0 else \
            f"{asked[k]}, the limit it asked for (no time_min)"
        out.append(Violation("time_limit", int(jobs.job_id[k]), int(start[k]),
                             f"job {jobs.job_id[k]} ran with time limit {ran[k]} s, not "
                             f"{what}"))
