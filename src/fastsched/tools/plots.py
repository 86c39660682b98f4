"""Plots of schedules and sweeps, as matplotlib Figures (optional extra
``fastsched[plot]``).

Inputs are the tables fastsched writes: a schedule's per-job records
(``simulate --jobs-out``, ``result.jobs``) and a sweep's results table
(:func:`fastsched.tools.sweep.run_sweep`). Every function returns a
:class:`matplotlib.figure.Figure` made without pyplot (no window, no global state):
``fig.savefig("fig.png")`` writes it (PNG, SVG or PDF by the suffix).

* :func:`gantt`: each job a bar per run of consecutive nodes it held, nodes on y;
* :func:`utilisation`: nodes (or CPUs, GPUs) in use over time, of one schedule or
  several side by side;
* :func:`queue_length`: jobs submitted and not yet started over time;
* :func:`cdf`: the distribution of wait, completion time or bounded slowdown, one line
  per schedule (e.g. per policy);
* :func:`sweep_plot`: a metric against a parameter, one line per policy, one panel per
  trace;
* :func:`fairshare`: decayed fair-share usage per account over time (from
  :func:`fastsched.tools.usagehistory.account_usage`).
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..io.hostlist import expand
from ..io.jobsout import read_jobs_table
from ..model.errors import InputError, UnsupportedError
from ..sim.results import BSLD_TAU

__all__ = ["gantt", "utilisation", "queue_length", "cdf", "sweep_plot", "fairshare",
           "read_jobs", "FIGSIZE", "DPI"]

#: every figure's size (inches) and resolution: a PNG is FIGSIZE x DPI pixels
FIGSIZE = (10.0, 5.0)
DPI = 100
_JOB_COLUMNS = ("submit_time", "start_time", "end_time", "num_nodes")
_CDF_METRICS = {"wait": "wait time (s)", "jct": "job completion time (s)",
                "bsld": f"bounded slowdown (tau = {BSLD_TAU} s)"}
#: sweep columns whose values a sweep plot averages over when they are not x or by
_CONFIG_VARIES = ("seed", "policy", "reserve_depth", "order", "reservations", "source",
                  "max_jobs", "load")
_UNITS = {"nodes": "num_nodes", "procs": "procs", "gpus": "gpus"}


def read_jobs(path) -> pd.DataFrame:
    """A schedule's per-job records (``simulate --jobs-out``: CSV, or Parquet / Arrow by
    the name), checked for the columns the plots use."""
    try:
        frame = read_jobs_table(path)
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read job records: {e}", file=str(path)) from None
    _check_columns(frame, _JOB_COLUMNS, str(path))
    return frame


def gantt(jobs: pd.DataFrame, *, color_by: str | None = None, title: str | None = None):
    """Gantt chart of a schedule: time on x, nodes on y (in natural name order), a bar
    for every run of consecutive nodes a job held. Bars are coloured by ``color_by``
    (a column, e.g. ``partition`` or ``user``) or else by job. Needs the ``nodes``
    column (hostlists)."""
    _check_columns(jobs, ("start_time", "end_time", "nodes"), "jobs")
    ran = jobs[jobs["start_time"].notna() & jobs["nodes"].notna()]
    names = [expand(h) for h in ran["nodes"].astype(str)]
    order = sorted({n for row in names for n in row}, key=_natural)
    row_of = {n: i for i, n in enumerate(order)}
    keys = _colour_keys(ran, color_by)
    starts = ran["start_time"].to_numpy(dtype=np.int64)
    ends = ran["end_time"].to_numpy(dtype=np.int64)
    boxes, colours = [], []
    for start, end, row, key in zip(starts, ends, names, keys):
        for lo, hi in _runs(sorted(row_of[n] for n in row)):
            boxes.append([(start, lo), (end, lo), (end, hi + 1), (start, hi + 1)])
            colours.append(key)
    fig, ax = _figure()
    from matplotlib.collections import PolyCollection
    cmap = _cmap()
    ax.add_collection(PolyCollection(boxes, facecolors=[cmap(k % cmap.N) for k in colours],
                                     edgecolors="none"))
    if len(boxes):
        ax.set_xlim(starts.min(), ends.max())
    ax.set_ylim(0, max(len(order), 1))
    single = "procs" in ran and (ran["procs"] == ran["num_nodes"]).all()
    ax.set_ylabel("processors (one per node)" if single else "nodes")
    ax.set_xlabel("time (s)")
    ax.set_title(title or f"schedule of {len(ran):,} jobs on {len(order):,} nodes"
                 + (f", coloured by {color_by}" if color_by else ""))
    return fig


def utilisation(jobs, *, unit: str = "nodes", capacity: int | None = None,
                title: str | None = None):
    """``unit`` (nodes, procs or gpus) in use over time: a step function, as a share of
    ``capacity`` when given. A job holds its resources from start to end. ``jobs``:
    one schedule's per-job records, or several (label -> records: one line each, on one
    axis, e.g. what Slurm did and a replay)."""
    schedules = jobs if isinstance(jobs, dict) else {None: jobs}
    if not schedules:
        raise InputError("no schedules to plot", field="schedules")
    fig, ax = _figure()
    peak = 0.0
    for label, frame in schedules.items():
        column = _unit_column(unit, frame)
        ran = frame[frame["start_time"].notna()]
        size = ran[column].to_numpy(dtype=np.int64)
        t, level = _steps(ran["start_time"].to_numpy(dtype=np.int64), size,
                          ran["end_time"].to_numpy(dtype=np.int64), -size)
        level = level / capacity if capacity else level
        peak = max(peak, float(level.max(initial=0)))
        ax.step(t, level, where="post", lw=0.8, label=label)
    if capacity:
        ax.set_ylabel(f"share of {capacity:,} {unit} in use")
        ax.set_ylim(0, 1.05 * max(peak, 1.0))       # an overcommitted record shows above 1
    else:
        ax.set_ylabel(f"{unit} in use")
    if len(schedules) > 1 or None not in schedules:
        ax.legend(loc="upper right")
    ax.set_xlabel("time (s)")
    ax.set_title(title or f"{unit} in use over time")
    return fig


def queue_length(jobs: pd.DataFrame, *, title: str | None = None):
    """Jobs in the queue (submitted, not started) over time; a job that never started
    stays in it."""
    _check_columns(jobs, ("submit_time", "start_time"), "jobs")
    submit = jobs["submit_time"].to_numpy(dtype=np.int64)
    started = jobs["start_time"].dropna().to_numpy(dtype=np.int64)
    t, level = _steps(submit, np.ones(len(submit), dtype=np.int64),
                      started, -np.ones(len(started), dtype=np.int64))
    fig, ax = _figure()
    ax.step(t, level, where="post", lw=0.8)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("pending jobs")
    ax.set_title(title or "queue length over time")
    return fig


def cdf(schedules: dict, *, metric: str = "wait", title: str | None = None):
    """Empirical CDF of ``metric`` (wait, jct or bsld) of each schedule in
    ``schedules`` (label -> per-job records), side by side on one axis (x on a
    symmetric-log scale, as waits of 0 s are common). Jobs that never started are
    left out."""
    if metric not in _CDF_METRICS:
        raise InputError(f"unknown metric {metric!r} (choose from {', '.join(_CDF_METRICS)})",
                         field="metric")
    if not schedules:
        raise InputError("no schedules to plot", field="schedules")
    fig, ax = _figure()
    for label, jobs in schedules.items():
        values = np.sort(_job_metric(jobs, metric, label))
        share = np.arange(1, len(values) + 1) / max(len(values), 1)
        ax.step(values, share, where="post", label=f"{label} ({len(values):,} jobs)")
    ax.set_xscale("symlog", linthresh=1 if metric == "bsld" else 60)
    ax.set_xlabel(_CDF_METRICS[metric])
    ax.set_ylabel("share of jobs")
    ax.set_ylim(0, 1.02)
    ax.legend(loc="lower right")
    ax.set_title(title or f"{_CDF_METRICS[metric]}: CDF")
    return fig


def sweep_plot(results: pd.DataFrame, *, metric: str = "avg_bounded_slowdown",
               x: str = "reserve_depth", by: str = "policy", title: str | None = None):
    """``metric`` of a sweep's table against the parameter ``x``, a line per value of
    ``by``, a panel per trace; cells that differ in other columns (e.g. seeds) are
    averaged. Rows without ``x`` (e.g. non-EASY policies for ``reserve_depth``) are
    drawn as flat lines over the x range, labelled as such."""
    _check_columns(results, ("trace", metric, x, by), "results")
    ok = results[results[metric].notna()]
    traces = list(dict.fromkeys(ok["trace"]))
    if not traces:
        raise InputError(f"no row of the table has {metric}", field=metric)
    xs = _x_values(ok[x])
    fig, axes = _figure(panels=len(traces))
    for ax, trace in zip(axes, traces):
        rows = ok[ok["trace"] == trace]
        for group in dict.fromkeys(rows[by]):
            mine = rows[rows[by] == group]
            has_x = mine[x].notna()
            if has_x.any():
                means = mine[has_x].groupby(mine[x][has_x].astype(object))[metric].mean()
                pos = [xs.index(v) for v in means.index]
                ax.plot(pos, means.to_numpy(dtype=float), marker="o", label=str(group))
            else:
                ax.axhline(float(mine[metric].mean()), ls="--", lw=1,
                           color=_cmap()(len(ax.lines) % 10), label=f"{group} (no {x})")
        ax.set_xticks(range(len(xs)), [str(v) for v in xs])
        ax.set_xlabel(x)
        ax.set_title(str(trace))
        ax.legend(fontsize="small")
    axes[0].set_ylabel(metric)
    averaged = [c for c in _CONFIG_VARIES if c not in (x, by) and c in ok
                and ok.groupby("trace")[c].nunique().max() > 1]
    fig.suptitle(title or f"{metric} by {x} and {by}"
                 + (f" (mean over {', '.join(averaged)})" if averaged else ""))
    return fig


def fairshare(usage: pd.DataFrame, *, top: int = 10, share: bool = False,
              title: str | None = None):
    """Fair-share usage per account over time: one line per column of ``usage`` (a
    frame of :func:`fastsched.tools.usagehistory.account_usage`: time index, one
    column per account). The ``top`` accounts by peak usage get a line each, the rest
    one summed line; ``share``: each account's part of all accounts' usage at that
    time (sshare's NormUsage when the accounts are the top level)."""
    if usage.shape[1] == 0 or usage.shape[0] == 0:
        raise InputError("no account usage to plot", field="usage")
    if int(top) < 1:
        raise InputError(f"top must be >= 1, got {top!r}", field="top")
    lines = _top_columns(usage, int(top))
    if share:
        total = usage.sum(axis=1).to_numpy()
        lines = lines.div(np.where(total > 0, total, 1.0), axis=0)
    fig, ax = _figure()
    t = usage.index.to_numpy()
    for k, name in enumerate(lines.columns):
        ax.plot(t, lines[name].to_numpy(), lw=1, color=_cmap()(k % 20), label=str(name))
    ax.set_xlabel("time (s)")
    ax.set_ylabel("share of usage" if share else "decayed usage (billed TRES-seconds)")
    ax.legend(fontsize="small", loc="upper left", ncol=2)
    ax.set_title(title or f"fair-share usage of {usage.shape[1]:,} accounts over time")
    return fig


# --------------------------------------------------------------------------- helpers

def _top_columns(usage: pd.DataFrame, top: int) -> pd.DataFrame:
    """The ``top`` columns by peak value (ties: column order), the rest summed into one
    column named for how many they are."""
    if usage.shape[1] <= top:
        return usage
    peak = usage.max(axis=0).to_numpy()
    keep = np.sort(np.argsort(-peak, kind="stable")[:top])
    rest = np.setdiff1d(np.arange(usage.shape[1]), keep)
    out = usage.iloc[:, keep].copy()
    out[f"{len(rest)} other accounts"] = usage.iloc[:, rest].sum(axis=1)
    return out


def _figure(panels: int | None = None):
    """A Figure of the fixed size and its axes: one, or a list of ``panels`` side by
    side."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise UnsupportedError("plots need the optional extra: pip install "
                               "'fastsched[plot]' (matplotlib is not installed)") from None
    fig = Figure(figsize=FIGSIZE, dpi=DPI, layout="constrained")
    axes = fig.subplots(1, panels or 1, squeeze=False)[0]
    return fig, (axes[0] if panels is None else list(axes))


def _cmap():
    from matplotlib import colormaps
    return colormaps["tab20"]


def _check_columns(frame, columns, what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(f"no column {missing[0]!r} (columns: {', '.join(frame.columns)})",
                         file=what, field=missing[0])


def _natural(name: str):
    """Sort key: node002 before node010."""
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", name)]


def _runs(rows: list[int]):
    """(first, last) of each run of consecutive integers in sorted ``rows``."""
    if not rows:
        return
    lo = prev = rows[0]
    for r in rows[1:]:
        if r != prev + 1:
            yield lo, prev
            lo = r
        prev = r
    yield lo, prev


def _colour_keys(jobs, color_by) -> list[int]:
    """A colour index per job: the rank of its ``color_by`` value, else its row."""
    if color_by is None:
        return list(range(len(jobs)))
    _check_columns(jobs, (color_by,), "jobs")
    codes, _ = pd.factorize(jobs[color_by].astype(str), sort=True)
    return codes.tolist()


def _steps(up_t, up, down_t, down):
    """(times, level) of a step function: the sum of the changes at or before each
    time (at one time, the decreases and increases net out)."""
    t = np.concatenate([up_t, down_t])
    delta = np.concatenate([up, down])
    times, inverse = np.unique(t, return_inverse=True)
    level = np.cumsum(np.bincount(inverse, weights=delta, minlength=len(times)))
    return times, level


def _unit_column(unit: str, jobs) -> str:
    if unit not in _UNITS:
        raise InputError(f"unknown unit {unit!r} (choose from {', '.join(_UNITS)})",
                         field="unit")
    _check_columns(jobs, ("start_time", "end_time", _UNITS[unit]), "jobs")
    return _UNITS[unit]


def _job_metric(jobs, metric: str, label) -> np.ndarray:
    _check_columns(jobs, ("submit_time", "start_time", "end_time"), str(label))
    ran = jobs[jobs["start_time"].notna()]
    submit, start, end = (ran[c].to_numpy(dtype=np.float64)
                          for c in ("submit_time", "start_time", "end_time"))
    if metric == "wait":
        return start - submit
    if metric == "jct":
        return end - submit
    return np.maximum((end - submit) / np.maximum(end - start, BSLD_TAU), 1.0)


def _x_values(column) -> list:
    """The sorted distinct values of a parameter column (numbers as numbers)."""
    values = list(dict.fromkeys(v for v in column.dropna().tolist()))
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=str)
