"""A workload's lifecycle columns: ``requeue`` (``1``/``yes``/``true``: sbatch
--requeue; ``0``/``no``/``false``: --no-requeue; empty: the cluster's
``JobRequeue``), ``checkpoint_interval`` and ``checkpoint_cost`` (seconds; empty or
0: no checkpoints), and for elastic jobs ``no_kill`` (``1``/``yes``/``true``: sbatch
--no-kill; empty or ``0``: not) and ``nodes_min`` (the fewest nodes it runs on after
a node failure, at most ``num_nodes``; empty or 0: one; it also starts on as few).
A ``time_min`` column (sbatch ``--time-min``, seconds; empty or 0: none) is read here
too, at most the row's ``time_limit``. See :mod:`fastsched.model.lifecycle`,
:mod:`fastsched.model.elastic` and :mod:`fastsched.model.timemin` for what they mean."""
from __future__ import annotations

import numpy as np

from ..model.errors import InputError

#: the optional lifecycle columns of a workload CSV
LIFECYCLE_COLUMNS = ("requeue", "checkpoint_interval", "checkpoint_cost")
#: the optional elastic job columns
ELASTIC_COLUMNS = ("no_kill", "nodes_min")
_YES = {"1", "yes", "true", "requeue"}
_NO = {"0", "no", "false", "no-requeue"}


def read_lifecycle_columns(frame, fname: str, num_nodes=None, time_limit=None) -> dict:
    """The lifecycle columns the CSV ``frame`` has, as per-row arrays (``requeue``:
    int8, -1 = the cluster's default); a bad value is an InputError naming the line.
    ``num_nodes``: each row's, which ``nodes_min`` may not exceed; ``time_limit``: each
    row's, which ``time_min`` may not exceed."""
    out = _read_elastic(frame, fname, num_nodes)
    if "time_min" in frame.columns:
        tmin = _seconds_column(frame["time_min"], fname, "time_min")
        if time_limit is not None and (tmin > np.asarray(time_limit)).any():
            i = int(np.flatnonzero(tmin > np.asarray(time_limit))[0])
            raise InputError(f"time_min {tmin[i]} s is above the job's time_limit "
                             f"{time_limit[i]} s", file=fname, line=i + 2, field="time_min")
        out["time_min"] = tmin
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


def _read_elastic(frame, fname: str, num_nodes) -> dict:
    """The ``no_kill`` (bool) and ``nodes_min`` (int64) columns the frame has."""
    out = {}
    if "no_kill" in frame.columns:
        text = frame["no_kill"].astype(str).str.strip().str.lower().to_numpy(dtype=object)
        yes = np.isin(text, ["1", "yes", "true", "no-kill"])
        bad = ~yes & ~np.isin(text, ["", "0", "no", "false"])
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"{frame['no_kill'].iloc[i]!r}: no_kill must be 1/yes/true, "
                             "0/no/false or empty", file=fname, line=i + 2, field="no_kill")
        out["no_kill"] = yes
    if "nodes_min" in frame.columns:
        low = _seconds_column(frame["nodes_min"], fname, "nodes_min", "a whole number >= 0")
        if num_nodes is not None and (low > np.asarray(num_nodes)).any():
            i = int(np.flatnonzero(low > np.asarray(num_nodes))[0])
            raise InputError(f"nodes_min {low[i]} is above the job's num_nodes "
                             f"{num_nodes[i]}", file=fname, line=i + 2, field="nodes_min")
        out["nodes_min"] = low
    return out


def _seconds_column(series, fname: str, col: str,
                    what: str = "a whole number of seconds >= 0") -> np.ndarray:
    """Whole seconds (or counts) >= 0 per row (empty: 0)."""
    import pandas as pd
    text = series.astype(str).str.strip()
    num = pd.to_numeric(text.replace("", "0"), errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(num) | (num != np.floor(num)) | (num < 0) | (num > 2.0 ** 40)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{series.iloc[i]!r} is not {what}",
                         file=fname, line=i + 2, field=col)
    return num.astype(np.int64)


def lifecycle_text(requeue, interval, cost, no_kill=None, nodes_min=None,
                   time_min=None) -> dict:
    """The lifecycle columns a workload needs written (none when all are defaults)."""
    out = {}
    if time_min is not None and time_min.any():
        out["time_min"] = np.where(time_min > 0, time_min.astype(str), "").astype(object)
    if no_kill is not None and no_kill.any():
        out["no_kill"] = np.where(no_kill, "1", "").astype(object)
    if nodes_min is not None and nodes_min.any():
        out["nodes_min"] = np.where(nodes_min > 0, nodes_min.astype(str), "").astype(object)
    if (requeue >= 0).any():
        out["requeue"] = np.array(["", "0", "1"], dtype=object)[requeue.astype(np.int64) + 1]
    if interval.any():
        out["checkpoint_interval"] = interval
        out["checkpoint_cost"] = cost
    return out
