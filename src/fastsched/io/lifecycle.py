"""A workload's lifecycle columns: ``requeue`` (``1``/``yes``/``true``: sbatch
--requeue; ``0``/``no``/``false``: --no-requeue; empty: the cluster's
``JobRequeue``), ``checkpoint_interval`` and ``checkpoint_cost`` (seconds; empty or
0: no checkpoints). See :mod:`fastsched.model.lifecycle` for what they mean."""
from __future__ import annotations

import numpy as np

from ..model.errors import InputError

#: the optional lifecycle columns of a workload CSV
LIFECYCLE_COLUMNS = ("requeue", "checkpoint_interval", "checkpoint_cost")
_YES = {"1", "yes", "true", "requeue"}
_NO = {"0", "no", "false", "no-requeue"}


def read_lifecycle_columns(frame, fname: str) -> dict:
    """The lifecycle columns the CSV ``frame`` has, as per-row arrays (``requeue``:
    int8, -1 = the cluster's default); a bad value is an InputError naming the line."""
    out = {}
    if "requeue" in frame.columns:
        text = frame["requeue"].astype(str).str.strip().str.lower().to_numpy(dtype=object)
        value = np.full(len(text), -1, dtype=np.int8)
        value[np.isin(text, list(_YES))] = 1
        value[np.isin(text, list(_NO))] = 0
        bad = (value < 0) & (text != "")
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"{frame['requeue'].iloc[i]!r}: requeue must be 1/yes/true, "
                             "0/no/false or empty (the cluster's JobRequeue)", file=fname,
                             line=i + 2, field="requeue")
        out["requeue"] = value
    for col in LIFECYCLE_COLUMNS[1:]:
        if col in frame.columns:
            out[col] = _seconds_column(frame[col], fname, col)
    if "checkpoint_cost" in out or "checkpoint_interval" in out:
        interval = out.get("checkpoint_interval", np.zeros(len(frame), dtype=np.int64))
        cost = out.get("checkpoint_cost", np.zeros(len(frame), dtype=np.int64))
        bad = ((interval > 0) & (cost >= interval)) | ((interval == 0) & (cost > 0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"checkpoint_cost {cost[i]} s needs a checkpoint_interval above "
                             f"it (got {interval[i]} s)", file=fname, line=i + 2,
                             field="checkpoint_cost")
    return out


def _seconds_column(series, fname: str, col: str) -> np.ndarray:
    """Whole seconds >= 0 per row (empty: 0)."""
    import pandas as pd
    text = series.astype(str).str.strip()
    num = pd.to_numeric(text.replace("", "0"), errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(num) | (num != np.floor(num)) | (num < 0) | (num > 2.0 ** 40)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{series.iloc[i]!r} is not a whole number of seconds >= 0",
                         file=fname, line=i + 2, field=col)
    return num.astype(np.int64)


def lifecycle_text(requeue, interval, cost) -> dict:
    """The lifecycle columns a workload needs written (none when all are defaults)."""
    out = {}
    if (requeue >= 0).any():
        out["requeue"] = np.array(["", "0", "1"], dtype=object)[requeue.astype(np.int64) + 1]
    if interval.any():
        out["checkpoint_interval"] = interval
        out["checkpoint_cost"] = cost
    return out
