"""A one-page HTML report of one or several schedules (e.g. policies side by side).

:func:`report_html` returns one self-contained HTML document: a summary table (a
column per schedule), then the plots of :mod:`fastsched.tools.plots` embedded as
base64 PNG ``data:`` URIs. Nothing is fetched from the network: no scripts, fonts or
style sheets, so the file opens offline and can be mailed or archived as it is.

The numbers come from each schedule's per-job records (``result.jobs`` or a
``simulate --jobs-out`` CSV) with the definitions of a result's summary
(:func:`fastsched.sim.results.summarize`), over the jobs that started: wait = start -
submit, JCT = end - submit, bounded slowdown with tau = 10 s, makespan from the first
submission to the last end. Utilisation needs the machine's size (``capacity``): node
utilisation counts the time each node held at least one job (jobs sharing a node count
it once, from the ``nodes`` hostlists; without them, each job's nodes), CPU and GPU
utilisation the allocated CPU- or GPU-seconds.
"""
from __future__ import annotations

import base64
import html
import io

import numpy as np
import pandas as pd

from ..io.hostlist import expand
from ..model.errors import InputError
from ..model.schedule import Schedule
from ..sim.metrics import busy_node_seconds
from ..sim.results import BSLD_TAU
from . import plots

__all__ = ["report_html", "report_numbers", "REPORT_ROWS"]

#: rows of the summary table: (key, label, format)
REPORT_ROWS = (
    ("jobs", "jobs", "{:,}"),
    ("never_started", "never started", "{:,}"),
    ("avg_wait", "mean wait (s)", "{:,.1f}"),
    ("median_wait", "median wait (s)", "{:,.1f}"),
    ("p95_wait", "95th percentile wait (s)", "{:,.1f}"),
    ("max_wait", "max wait (s)", "{:,}"),
    ("avg_jct", "mean JCT (s)", "{:,.1f}"),
    ("p95_jct", "95th percentile JCT (s)", "{:,.1f}"),
    ("avg_bounded_slowdown", f"mean bounded slowdown (tau = {BSLD_TAU} s)", "{:,.2f}"),
    ("max_bounded_slowdown", "max bounded slowdown", "{:,.2f}"),
    ("makespan", "makespan (s)", "{:,}"),
    ("utilisation", "utilisation", "{:.2%}"),
)

_UNIT_NAMES = {"nodes": "node", "procs": "CPU", "gpus": "GPU"}
_STYLE = """body{font-family:sans-serif;max-width:1040px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:1em 0}th,td{padding:.25em .8em;border-bottom:1px solid #ddd}
td{text-align:right}th{text-align:left}img{max-width:100%;display:block;margin:.5em 0 1.5em}"""


def report_numbers(jobs: pd.DataFrame, *, capacity: int | None = None,
                   unit: str = "nodes") -> dict:
    """The summary table's numbers of one schedule (keys of :data:`REPORT_ROWS`;
    ``utilisation`` None without ``capacity``)."""
    plots._check_columns(jobs, ("submit_time", "start_time", "end_time"), "jobs")
    ran = jobs[jobs["start_time"].notna()]
    out = {"jobs": len(jobs), "never_started": len(jobs) - len(ran)}
    if not len(ran):
        return out
    submit, start, end = (ran[c].to_numpy(dtype=np.float64)
                          for c in ("submit_time", "start_time", "end_time"))
    wait, jct, run = start - submit, end - submit, end - start
    bsld = np.maximum(jct / np.maximum(run, BSLD_TAU), 1.0)
    makespan = int(end.max() - submit.min())
    out.update(avg_wait=float(wait.mean()), median_wait=float(np.median(wait)),
               p95_wait=float(np.percentile(wait, 95)), max_wait=int(wait.max()),
               avg_jct=float(jct.mean()), p95_jct=float(np.percentile(jct, 95)),
               avg_bounded_slowdown=float(bsld.mean()),
               max_bounded_slowdown=float(bsld.max()), makespan=makespan,
               utilisation=None)
    if capacity:
        column = plots._unit_column(unit, jobs)
        if unit == "nodes" and "nodes" in ran.columns and ran["nodes"].notna().all():
            used = float(_busy_node_seconds(ran))
        else:
            used = float(np.dot(ran[column].to_numpy(dtype=np.float64), run))
        out["utilisation"] = used / (capacity * makespan) if makespan > 0 else 0.0
    return out


def _busy_node_seconds(ran: pd.DataFrame) -> int:
    """Node-seconds with at least one job on the node, from the records' hostlists
    (:func:`fastsched.sim.metrics.busy_node_seconds`, what a result's summary counts)."""
    names = [expand(h) for h in ran["nodes"].astype(str)]
    index: dict[str, int] = {}
    nodes = np.array([index.setdefault(n, len(index)) for row in names for n in row],
                     dtype=np.int64)
    offsets = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum([len(row) for row in names], out=offsets[1:])
    schedule = Schedule(job_id=ran["job_id"].to_numpy(dtype=np.int64) if "job_id" in ran
                        else np.arange(len(ran), dtype=np.int64),
                        start_time=ran["start_time"].to_numpy(dtype=np.int64),
                        end_time=ran["end_time"].to_numpy(dtype=np.int64),
                        alloc_offsets=offsets, alloc_nodes=nodes)
    return busy_node_seconds(schedule)


def report_html(schedules: dict, *, title: str | None = None, capacity: int | None = None,
                unit: str = "nodes", usage: dict | None = None, gantt: bool = True) -> str:
    """The report of ``schedules`` (label -> per-job records, a DataFrame or a
    :class:`~fastsched.SimulationResult`), as one HTML string.

    Sections: the summary table (:func:`report_numbers`); CDFs of wait and bounded
    slowdown (all schedules on one axis); per schedule, ``unit`` in use and the queue
    length over time, and a Gantt chart when ``gantt`` and the records have hostlists;
    ``usage`` (label -> :func:`fastsched.tools.usagehistory.account_usage` frame): the
    fair-share usage per account. ``capacity``: the machine's size in ``unit``
    (utilisation as a share; taken from a result's cluster when not given)."""
    if not schedules:
        raise InputError("no schedules to report", field="schedules")
    frames = {str(k): _records(v) for k, v in schedules.items()}
    if capacity is None:
        capacity = _capacity(schedules, unit)
    parts = [f"<h1>{html.escape(title or _default_title(frames))}</h1>",
             "<h2>Summary</h2>", _summary_table(frames, capacity, unit),
             "<h2>Distributions</h2>",
             _img(plots.cdf(frames, metric="wait"), "CDF of wait times"),
             _img(plots.cdf(frames, metric="bsld"), "CDF of bounded slowdowns")]
    for label, jobs in frames.items():
        parts.append(f"<h2>{html.escape(label)}</h2>")
        parts.append(_img(plots.utilisation(jobs, unit=unit, capacity=capacity,
                                            title=f"{label}: {unit} in use"),
                          f"{label}: {unit} in use over time"))
        parts.append(_img(plots.queue_length(jobs, title=f"{label}: queue length"),
                          f"{label}: queue length over time"))
        if gantt and "nodes" in jobs.columns and jobs["nodes"].notna().any():
            parts.append(_img(plots.gantt(jobs, title=f"{label}: schedule"),
                              f"{label}: Gantt chart"))
        if usage and label in usage:
            parts.append(_img(plots.fairshare(usage[label], title=f"{label}: fair-share "
                                              "usage per account"),
                              f"{label}: fair-share usage per account"))
    head = (f'<meta charset="utf-8"><title>{html.escape(title or "fastsched report")}'
            f"</title><style>{_STYLE}</style>")
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head>{head}</head>\n<body>\n"
            + "\n".join(parts) + "\n</body></html>\n")


def _records(value) -> pd.DataFrame:
    jobs = getattr(value, "jobs", value)
    if not isinstance(jobs, pd.DataFrame):
        raise InputError(f"expected per-job records or a result, got {type(value).__name__}",
                         field="schedules")
    return jobs


def _capacity(schedules: dict, unit: str) -> int | None:
    """The machine's size in ``unit`` from the first result that has a cluster."""
    for value in schedules.values():
        cluster = getattr(value, "cluster", None)
        if cluster is not None:
            return int({"nodes": cluster.num_nodes, "procs": cluster.cpus.sum(),
                        "gpus": cluster.gpus.sum()}[unit]) or None
    return None


def _default_title(frames: dict) -> str:
    return "fastsched report: " + ", ".join(frames)


def _summary_table(frames: dict, capacity, unit: str) -> str:
    numbers = {k: report_numbers(v, capacity=capacity, unit=unit) for k, v in frames.items()}
    head = "".join(f"<th>{html.escape(k)}</th>" for k in numbers)
    rows = [f"<tr><th></th>{head}</tr>"]
    for key, label, fmt in REPORT_ROWS:
        if key == "utilisation":
            label = (f"{_UNIT_NAMES.get(unit, unit)} utilisation"
                     + (f" (of {capacity:,} {unit})" if capacity else ""))
        cells = "".join(f"<td>{fmt.format(n[key]) if n.get(key) is not None else '-'}</td>"
                        for n in numbers.values())
        rows.append(f"<tr><th>{html.escape(label)}</th>{cells}</tr>")
    return '<table class="summary">\n' + "\n".join(rows) + "\n</table>"


def _img(fig, alt: str) -> str:
    """``fig`` as an inline PNG."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'
