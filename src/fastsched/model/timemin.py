"""``--time-min``: a job that may start with a time limit cut down to fit a gap,
never below its time minimum (Slurm's backfill; :mod:`fastsched.engine.timemin`
has the rule). Per job: ``time_min`` (int64 seconds, 0: none) beside the time limit
it asks for. A run's records hold the limit each job ran with (sacct's Timelimit)."""
from __future__ import annotations

import numpy as np

from .errors import InputError
from .jobs import JOB_FIELDS, JobTable

def check_time_min(time_min, time_limit) -> np.ndarray:
    """``time_min`` as int64 per job, checked against the limits: whole seconds, 0
    (none) or up to the job's time limit (sbatch refuses ``--time-min`` above
    ``--time``). A bad value is an InputError naming the job row."""
    raw = np.asarray(time_min)
    if raw.shape != np.shape(time_limit):
        raise InputError(f"time_min: {raw.size} entries for {np.size(time_limit)} jobs",
                         field="time_min")
    if raw.size and (raw.dtype.kind not in "iu" and not (
            raw.dtype.kind == "f" and np.isfinite(raw).all() and (raw == np.round(raw)).all())):
        raise InputError("time_min must hold whole seconds", field="time_min")
    tmin = raw.astype(np.int64)
    bad = (tmin < 0) | (tmin > np.asarray(time_limit))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise InputError(f"job row {k}: time_min {tmin[k]} s must be >= 0 and at most its "
                         f"time_limit {int(np.asarray(time_limit)[k])} s", field="time_min")
    return tmin


def with_limits(jobs: JobTable, time_limit) -> JobTable:
    """``jobs`` with the time limits they ran with."""
    columns = {f: getattr(jobs, f) for f in JOB_FIELDS}
    columns["time_limit"] = np.asarray(time_limit, dtype=columns["time_limit"].dtype)
    return JobTable(**columns)
