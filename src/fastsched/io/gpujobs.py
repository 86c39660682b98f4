"""A generic "GPU job list": a CSV with one job per line, as sites and papers publish
GPU cluster traces without a fixed layout (Microsoft ITP-like lists, exports of a
scheduler's database).

Columns, by header name (case-insensitive; the first alias present wins):

============== ============================================== =========================
field          header aliases                                 value
============== ============================================== =========================
id             job_id, jobid, id, job, job_name, name         any text (needed)
submit         submit_time, submit, submitted, submission_time seconds, or an ISO date
                                                              (needed)
duration       runtime, duration, run_time, elapsed            seconds (needed)
GPUs           num_gpus, gpus, gpu_num, num_gpu, gpu           total GPUs (needed; may be
                                                              fractional: a share of a GPU)
user           user, user_id, username                        text
account        account, vc, group, project                    text
time limit     time_limit, timelimit, limit, walltime          seconds, or Slurm's
                                                              ``[D-]HH:MM:SS``
nodes          nodes, num_nodes, node_num, nnodes              count
GPUs per node  gpus_per_node, gpn                              count (with ``nodes`` and no
                                                              GPU total: nodes x this)
partition      partition, queue                               a partition of --cluster
============== ============================================== =========================

A job list is recognised by its header: an id, a submit, a duration and a GPU column
(a workload CSV has ``gpus_per_node`` and no GPU total, so it is not one).

Timestamps: a column whose first value is a number is seconds (any origin); else
every value is an ISO 8601 date (``2024-03-01T12:00:00``, ``2024-03-01 12:00:00``,
with or without an offset; without one, UTC). Empty cells of optional columns mean
"not given": a job without a time limit gets one derived from its run time by the
rule of the other GPU traces (:func:`fastsched.io.gputrace.derive_limits`), a job
without a partition goes to the cluster's default. The recorded start is unknown
(the list has none), so the derived cluster is sized from the submit times.

A malformed value is an InputError naming file, line and column.
"""
from __future__ import annotations

import numpy as np

from ..model.errors import InputError
from .gpureaders import GPUJOBS_ALIASES, TraceColumns, _Csv, _columns, _pick, \
    is_gpujobs_header
from .times import parse_time

__all__ = ["GPUJOBS_ALIASES", "is_gpujobs_header", "parse_gpujobs"]

_NONE = ("", "none", "nan", "null", "unknown", "n/a")
_UNLIMITED = ("UNLIMITED", "INFINITE")


def parse_gpujobs(path) -> TraceColumns:
    """The columns of a GPU job list (module docs); ``limit`` -1 and ``partition`` ""
    where the list gives none."""
    path = str(path)
    csv = _Csv(path)
    col = {f: _pick(csv.frame.columns, f) for f in GPUJOBS_ALIASES}
    missing = [f for f in ("id", "submit", "duration", "gpus") if col[f] is None]
    if missing:
        f = missing[0]
        raise InputError(f"no {f} column (one of {', '.join(GPUJOBS_ALIASES[f])}; the header "
                         f"has {', '.join(csv.frame.columns)})", file=path, line=1, field=f)
    n = len(csv.frame)
    gpus = csv.numbers(col["gpus"], empty=-1, minimum=-1)
    nodes = _count(csv, col["nodes"], n)
    per = _count(csv, col["gpus_per_node"], n)
    gpus = np.where((gpus < 0) & (nodes > 0) & (per >= 0), nodes * per, gpus)
    if (gpus < 0).any():
        i = int(np.flatnonzero(gpus < 0)[0])
        raise InputError("no GPU count (give it, or nodes and gpus_per_node)", file=path,
                         line=int(csv.lines[i]), field=col["gpus"])
    limit = _limits(csv, col["limit"], n)
    runtime = np.round(csv.numbers(col["duration"])).astype(np.int64)
    return _columns(
        csv, job_text=csv.text(col["id"]), submit=_times(csv, col["submit"]),
        runtime=runtime, gpus=gpus, nodes=nodes,
        user=csv.text(col["user"]) if col["user"] else np.full(n, "", dtype=object),
        group=csv.text(col["account"]) if col["account"] else np.full(n, "", dtype=object),
        state=np.full(n, "COMPLETED", dtype=object), limit=limit,
        partition=csv.text(col["partition"]) if col["partition"]
        else np.full(n, "", dtype=object))


def _count(csv: _Csv, name: str | None, n: int) -> np.ndarray:
    """Whole numbers of an optional column (0 where empty or absent)."""
    if name is None:
        return np.zeros(n, np.int64)
    values = csv.numbers(name, empty=0)
    _whole(csv, name, values)
    return values.astype(np.int64)


def _whole(csv: _Csv, name: str, values: np.ndarray) -> None:
    bad = values != np.floor(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{values[i]:g} is not a whole number", file=csv.path,
                         line=int(csv.lines[i]), field=name)


def _times(csv: _Csv, name: str) -> np.ndarray:
    """Seconds, when the first value is a number; else ISO dates as epoch seconds."""
    import pandas as pd
    raw = csv.frame[name].str.strip()
    seconds = not len(raw) or np.isfinite(pd.to_numeric(raw.iloc[:1], errors="coerce")
                                           .to_numpy(np.float64)[0])
    if seconds:
        numbers = pd.to_numeric(raw, errors="coerce").to_numpy(np.float64)
        bad = ~np.isfinite(numbers)
    else:
        parsed = pd.to_datetime(raw, format="ISO8601", utc=True, errors="coerce")
        bad = parsed.isna().to_numpy()
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{raw.iloc[i][:40]!r} is not a time (" + (
            "seconds, as the first line gives" if seconds else "an ISO date such as "
            "2024-03-01T12:00:00, as the first line gives") + ")", file=csv.path,
            line=int(csv.lines[i]), field=name)
    if seconds:
        return np.round(numbers).astype(np.int64)
    return parsed.dt.tz_localize(None).to_numpy(dtype="datetime64[s]").astype(np.int64)


def _limits(csv: _Csv, name: str | None, n: int) -> np.ndarray:
    """Seconds per job (-1: none given): a number of seconds, or ``[D-]HH:MM:SS``."""
    import pandas as pd
    out = np.full(n, -1, np.int64)
    if name is None:
        return out
    raw = csv.text(name)
    numbers = pd.to_numeric(pd.Series(raw), errors="coerce").to_numpy(np.float64)
    given = ~np.isin(np.char.lower(raw.astype(str)), _NONE)
    plain = given & np.isfinite(numbers) & (numbers > 0)
    out[plain] = np.maximum(np.round(numbers[plain]), 1).astype(np.int64)
    for i in np.flatnonzero(given & ~plain).tolist():
        out[i] = _limit(str(raw[i]), csv, i, name)
    return out


def _limit(text: str, csv: _Csv, i: int, name: str) -> int:
    """A ``[D-]HH:MM:SS`` limit (UNLIMITED, INFINITE: -1, so derived)."""
    try:
        if ":" not in text and "-" not in text[1:] and text.upper() not in _UNLIMITED:
            raise InputError(text)
        seconds = parse_time(text)
    except InputError:
        raise InputError(f"{text[:40]!r} is not a time limit (seconds > 0, or "
                         "[D-]HH:MM:SS)", file=csv.path, line=int(csv.lines[i]),
                         field=name) from None
    return -1 if seconds is None else max(int(seconds), 1)
