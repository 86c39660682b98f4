"""Running and pending jobs as ``squeue`` lists them: CSV in, planned CSV out.

Running: ``job_id,start,end,nodes,nodelist,tres_per_node`` (epoch seconds; ``end``
= start + time limit, as Slurm plans it). Pending, in queue order:
``job_id,nodes,time_limit,tres_per_node`` with optional ``priority`` and
``partition`` (time limits as Slurm writes them, ``D-HH:MM:SS``). Other columns
are ignored, so ``squeue --start`` dumps (the files of ../shared/slurm-states) read
as they are. ``tres_per_node`` is ``gres:gpu:8``, ``gres/gpu:8``, ``gpu:a100:2`` or
empty (no GPU). Errors name file, line and field.
"""
from __future__ import annotations

import csv
import gzip
from pathlib import Path

import numpy as np

from ..model.cluster import Cluster
from ..model.errors import InputError
from ..model.planstate import PlanState
from .hostlist import compress, expand
from .times import parse_time

RUNNING_COLUMNS = ("job_id", "start", "end", "nodes", "nodelist", "tres_per_node")
PENDING_COLUMNS = ("job_id", "nodes", "time_limit", "tres_per_node")


def _rows(path, required):
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in required if c not in (reader.fieldnames or ())]
            if missing:
                raise InputError(f"missing column(s) {', '.join(missing)}", file=str(path),
                                 line=1, field=missing[0])
            for line, row in enumerate(reader, start=2):
                yield line, row
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", file=str(path)) from None


def _int(row, name, path, line, minimum=0):
    text = (row.get(name) or "").strip()
    try:
        value = int(text)
    except ValueError:
        raise InputError(f"{text!r} is not an integer", file=str(path), line=line,
                         field=name) from None
    if value < minimum:
        raise InputError(f"{value} is below {minimum}", file=str(path), line=line, field=name)
    return value


def gpus_per_node(text: str) -> int:
    """``gres:gpu:8`` / ``gres/gpu:a100:2`` / ``gpu:4`` / ``gres:gpu`` -> GPUs per node."""
    t = text.strip()
    if not t:
        return 0
    total = 0
    for item in t.split(","):
        parts = item.replace("gres/", "gres:").split(":")
        if parts[0] == "gres":
            parts = parts[1:]
        if not parts or parts[0] != "gpu":
            continue
        count = parts[-1] if len(parts) > 1 else "1"
        if not count.isdigit():
            count = "1" if len(parts) == 2 else count
        if not count.isdigit():
            raise InputError(f"{item!r} is not a GPU count like gres:gpu:8")
        total += int(count)
    return total


def _gpus(row, path, line):
    try:
        return gpus_per_node(row.get("tres_per_node") or "")
    except InputError as e:
        raise InputError(e.reason, file=str(path), line=line, field="tres_per_node") from None


def read_plan_state(running, pending, cluster: Cluster) -> PlanState:
    """Read a running-jobs CSV and a pending-jobs CSV against ``cluster``'s nodes."""
    index = {name: i for i, name in enumerate(cluster.node_names)}
    run = {k: [] for k in ("id", "start", "end", "gpus")}
    offsets, nodes = [0], []
    for line, row in _rows(running, RUNNING_COLUMNS):
        ids = _node_ids(row.get("nodelist") or "", index, running, line)
        if len(ids) != _int(row, "nodes", running, line, 1):
            raise InputError(f"nodelist names {len(ids)} nodes, nodes says {row['nodes']}",
                             file=str(running), line=line, field="nodelist")
        nodes += ids
        offsets.append(len(nodes))
        run["id"].append(_int(row, "job_id", running, line))
        run["start"].append(_int(row, "start", running, line))
        run["end"].append(_int(row, "end", running, line))
        run["gpus"].append(_gpus(row, running, line))
    pend = {k: [] for k in ("id", "nodes", "gpus", "limit", "priority", "partition")}
    for line, row in _rows(pending, PENDING_COLUMNS):
        pend["id"].append(_int(row, "job_id", pending, line))
        pend["nodes"].append(_int(row, "nodes", pending, line, 1))
        pend["gpus"].append(_gpus(row, pending, line))
        pend["limit"].append(_limit(row, pending, line))
        pend["priority"].append((row.get("priority") or "").strip())
        pend["partition"].append((row.get("partition") or "").strip())
    i64 = lambda v: np.asarray(v, dtype=np.int64)  # noqa: E731
    return PlanState(
        run_id=i64(run["id"]), run_start=i64(run["start"]), run_end=i64(run["end"]),
        run_offsets=i64(offsets), run_nodes=i64(nodes), run_gpus=i64(run["gpus"]),
        run_cores=np.ones(len(run["id"]), np.int64), pend_id=i64(pend["id"]),
        pend_nodes=i64(pend["nodes"]), pend_gpus=i64(pend["gpus"]),
        pend_cores=np.ones(len(pend["id"]), np.int64), pend_limit=i64(pend["limit"]),
        pend_priority=_priorities(pend["priority"], pending),
        pend_partition=pend["partition"] if any(pend["partition"]) else None)


def _limit(row, path, line):
    text = (row.get("time_limit") or "").strip()
    try:
        seconds = parse_time(text)
    except InputError as e:
        raise InputError(e.reason, file=str(path), line=line, field="time_limit") from None
    if seconds is None or seconds <= 0:
        raise InputError(f"{text!r}: a pending job needs a finite time limit",
                         file=str(path), line=line, field="time_limit")
    return seconds


def _priorities(values, path):
    if not any(values):
        return None
    out = []
    for line, v in enumerate(values, start=2):
        if not v.isdigit():
            raise InputError(f"{v!r} is not a priority (an integer)", file=str(path),
                             line=line, field="priority")
        out.append(int(v))
    return np.asarray(out, dtype=np.int64)


def _node_ids(text, index, path, line):
    try:
        names = expand(text)
    except InputError as e:
        raise InputError(e.reason, file=str(path), line=line, field="nodelist") from None
    unknown = [n for n in names if n not in index]
    if unknown:
        raise InputError(f"node {unknown[0]!r} is not in the cluster", file=str(path),
                         line=line, field="nodelist")
    return [index[n] for n in names]


def read_planned(path) -> dict[int, tuple[int | None, str]]:
    """A planned-starts CSV (``fastsched plan -o`` or ``squeue --start``'s
    ``planned_start``/``sched_nodes``): job id -> (start or None, nodelist)."""
    out = {}
    for line, row in _rows(path, ("job_id", "planned_start")):
        text = (row.get("planned_start") or "").strip()
        start = None if text in ("", "N/A") else _int(row, "planned_start", path, line)
        nodes = row.get("nodelist", row.get("sched_nodes")) or ""
        out[_int(row, "job_id", path, line)] = (start, nodes.strip())
    return out


def write_planned(out, job_id, start, nodelists, reasons) -> None:
    """``job_id,planned_start,nodelist,reason`` (empty start: none within the window)
    to a path or an open text file."""
    if not hasattr(out, "write"):
        with open(out, "w", newline="") as f:
            write_planned(f, job_id, start, nodelists, reasons)
        return
    w = csv.writer(out, lineterminator="\n")
    w.writerow(("job_id", "planned_start", "nodelist", "reason"))
    for row in zip(job_id, start, nodelists, reasons):
        w.writerow((int(row[0]), "" if row[1] < 0 else int(row[1]), row[2], row[3]))


def nodelists(cluster: Cluster, offsets, nodes) -> list[str]:
    """Each job's node indices as a Slurm hostlist (``n[0001-0004]``)."""
    names = cluster.node_names
    return [compress([names[i] for i in nodes[offsets[q]:offsets[q + 1]]])
            for q in range(len(offsets) - 1)]


__all__ = ["read_plan_state", "read_planned", "write_planned", "nodelists", "gpus_per_node"]
