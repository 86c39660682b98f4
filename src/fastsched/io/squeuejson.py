"""``squeue --json`` as a :class:`PlanState`: what a site can dump of its queue.

Slurm 22.05 (openapi v0.0.38, ``dump_job``) writes ``{"jobs": [...]}`` with
``job_id``, ``job_state`` (``"RUNNING"``), ``nodes`` (a hostlist), ``node_count``,
``partition``, ``priority``, ``start_time``, ``end_time`` (epoch s), ``time_limit``
(minutes; null: none) and ``tres_per_node`` (``gres:gpu:8``). Later versions wrap
numbers as ``{"set": true, "infinite": false, "number": 60}`` and give ``job_state`` as
a list (``["RUNNING"]``); both are read. Running (and completing) jobs hold their
nodes until ``end_time``; pending jobs queue; other states are skipped.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..model.cluster import Cluster
from ..model.errors import InputError
from ..model.planstate import PlanState
from .planstate import gpus_per_node
from .hostlist import expand

_HOLDING = {"RUNNING", "COMPLETING", "SUSPENDED"}


def _number(value, where):
    """A JSON number, or 22.05+'s ``{"set", "infinite", "number"}``; None if unset or
    infinite."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite", False):
            return None
        value = value.get("number")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{value!r} is not a number", **where)
    return int(value)


def _state(value) -> str:
    if isinstance(value, list):
        value = value[0] if value else ""
    return str(value or "").upper()


def read_squeue_json(path, cluster: Cluster) -> PlanState:
    """Read ``squeue --json`` (file) against ``cluster``'s node names."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", file=str(path)) from None
    except json.JSONDecodeError as e:
        raise InputError(f"not JSON: {e.msg}", file=str(path), line=e.lineno) from None
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    if not isinstance(jobs, list):
        raise InputError('no "jobs" list (squeue --json)', file=str(path), field="jobs")
    index = {name: i for i, name in enumerate(cluster.node_names)}
    run, pend = [], []
    for k, job in enumerate(jobs):
        state = _state(job.get("job_state"))
        if state in _HOLDING:
            run.append(_running(job, k, path, index))
        elif state == "PENDING":
            pend.append(_pending(job, k, path))
    return _plan_state(run, pend)


def _where(path, k, field):
    return {"file": str(path), "field": f"jobs[{k}].{field}"}


def _get(job, field, path, k):
    value = _number(job.get(field), _where(path, k, field))
    if value is None:
        raise InputError(f"{field} is missing", **_where(path, k, field))
    return value


def _gpus(job, path, k):
    try:
        return gpus_per_node(str(job.get("tres_per_node") or ""))
    except InputError as e:
        raise InputError(e.reason, **_where(path, k, "tres_per_node")) from None


def _running(job, k, path, index):
    try:
        names = expand(str(job.get("nodes") or ""))
    except InputError as e:
        raise InputError(e.reason, **_where(path, k, "nodes")) from None
    unknown = [n for n in names if n not in index]
    if unknown or not names:
        raise InputError(f"node {unknown[0]!r} is not in the cluster" if unknown else
                         "a running job names no nodes", **_where(path, k, "nodes"))
    return (_get(job, "job_id", path, k), _get(job, "start_time", path, k),
            _get(job, "end_time", path, k), [index[n] for n in names], _gpus(job, path, k))


def _pending(job, k, path):
    limit = _number(job.get("time_limit"), _where(path, k, "time_limit"))
    if limit is None or limit <= 0:
        raise InputError("a pending job needs a finite time limit",
                         **_where(path, k, "time_limit"))
    nodes = _number(job.get("node_count"), _where(path, k, "node_count")) or 1
    priority = _number(job.get("priority"), _where(path, k, "priority")) or 0
    return (_get(job, "job_id", path, k), nodes, _gpus(job, path, k), limit * 60, priority,
            str(job.get("partition") or ""))


def _plan_state(run, pend) -> PlanState:
    i64 = lambda v: np.asarray(v, dtype=np.int64)  # noqa: E731
    offsets = np.cumsum([0] + [len(r[3]) for r in run])
    partitions = [p[5] for p in pend]
    return PlanState(
        run_id=i64([r[0] for r in run]), run_start=i64([r[1] for r in run]),
        run_end=i64([r[2] for r in run]), run_offsets=i64(offsets),
        run_nodes=i64([n for r in run for n in r[3]]), run_gpus=i64([r[4] for r in run]),
        run_cores=np.ones(len(run), np.int64), pend_id=i64([p[0] for p in pend]),
        pend_nodes=i64([p[1] for p in pend]), pend_gpus=i64([p[2] for p in pend]),
        pend_cores=np.ones(len(pend), np.int64), pend_limit=i64([p[3] for p in pend]),
        pend_priority=i64([p[4] for p in pend]),
        pend_partition=partitions if any(partitions) else None)
