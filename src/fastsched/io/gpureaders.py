"""Parsers of published GPU-cluster traces into the same per-job columns (a
:class:`TraceColumns`); :mod:`fastsched.io.gputrace` turns those into a workload and a
cluster. Formats, as their publishers document them:

* **Philly** (Microsoft, msr-fiddle/philly-traces ``cluster_job_log``): a JSON list of
  jobs ``{"status", "vc", "jobid", "attempts": [{"start_time", "end_time",
  "detail": [{"ip", "gpus": [...]}]}], "submitted_time", "user"}``. A job runs from
  its first attempt's start; its run time is the sum of its attempts' lengths (the
  time it held GPUs; gaps between attempts are waits); GPUs and nodes are its first
  attempt's. Also the per-job CSV the Pollux simulator ships
  (``timestamp,duration,num_gpus,gpu_time,cluster``: submit, run time, GPUs, VC).
* **Alibaba PAI** v2023 (``openb_pod_list_*.csv``: ``name, cpu_milli, memory_mib,
  num_gpu, gpu_milli, gpu_spec, qos, pod_phase, creation_time, deletion_time,
  scheduled_time``; submit = creation, start = scheduled, end = deletion; a pod with
  ``num_gpu`` 1 and ``gpu_milli`` under 1000 uses a fraction of a GPU) and v2020
  (``pai_task_table``: ``job_name, task_name, inst_num, status, start_time, end_time,
  plan_cpu, plan_mem, plan_gpu, gpu_type``, CPUs and GPUs in percent; one job per
  task, ``inst_num`` instances of ``plan_gpu``/100 GPUs each, fractional when that is
  not whole; submitted at its start, as the task table records no queue time).
* **Helios** (SenseTime, S-Lab-System-Group/HeliosData ``cluster_log.csv``: ``job_id,
  user, vc, gpu_num, cpu_num, node_num, state, submit_time, start_time, end_time,
  duration, queue``).

A malformed value is an InputError naming the file, the line (CSV; the entry for
JSON) and the field.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from .textfile import read_decompressed
from ..model.errors import InputError

__all__ = ["TraceColumns", "GPU_FORMATS", "GPUJOBS_ALIASES", "is_gpujobs_header",
           "sniff_gpu_format", "parse_gpu_trace"]

GPU_FORMATS = ("philly", "pai", "helios", "gpujobs")


@dataclass
class TraceColumns:
    """One entry per job of the file. Times in seconds (-1: not recorded); ``gpus``
    may be fractional; ``cpus`` totals (0: not recorded); ``nodes`` (0: not
    recorded); ``line``: the file line (CSV) or entry number (JSON). ``shared``
    (bool: the job uses part of a GPU) and ``whole_gpus`` (its GPUs when each part
    is planned as a whole GPU) default to what ``gpus`` says. ``limit`` (seconds, -1:
    none) and ``partition`` ("": none) are what a job list gives (None: nothing)."""

    job_text: np.ndarray
    submit: np.ndarray
    start: np.ndarray
    end: np.ndarray
    runtime: np.ndarray
    gpus: np.ndarray
    cpus: np.ndarray
    mem_mb: np.ndarray
    nodes: np.ndarray
    user: np.ndarray
    group: np.ndarray
    state: np.ndarray
    line: np.ndarray
    gpu_spec: np.ndarray | None = None
    notes: list = field(default_factory=list)
    shared: np.ndarray | None = None
    whole_gpus: np.ndarray | None = None
    limit: np.ndarray | None = None
    partition: np.ndarray | None = None

    def __post_init__(self):
        if self.shared is None:
            self.shared = (self.gpus > 0) & (self.gpus != np.floor(self.gpus))
        if self.whole_gpus is None:
            self.whole_gpus = np.ceil(self.gpus).astype(np.int64)


#: a GPU job list's fields (:mod:`fastsched.io.gpujobs`) -> the header names that give
#: it, in order of preference (here, as sniffing needs them)
GPUJOBS_ALIASES = {
    "id": ("job_id", "jobid", "id", "job", "job_name", "name"),
    "submit": ("submit_time", "submit", "submitted", "submission_time"),
    "duration": ("runtime", "duration", "run_time", "elapsed"),
    "gpus": ("num_gpus", "gpus", "gpu_num", "num_gpu", "gpu"),
    "user": ("user", "user_id", "username"),
    "account": ("account", "vc", "group", "project"),
    "limit": ("time_limit", "timelimit", "limit", "walltime"),
    "nodes": ("nodes", "num_nodes", "node_num", "nnodes"),
    "gpus_per_node": ("gpus_per_node", "gpn"),
    "partition": ("partition", "queue"),
}


def _pick(columns, field: str) -> str | None:
    """The header name giving ``field`` (its first alias present), or None."""
    lower = {c.lower(): c for c in columns}
    return next((lower[a] for a in GPUJOBS_ALIASES[field] if a in lower), None)


def is_gpujobs_header(names) -> bool:
    """Whether a header names an id, a submit, a duration and a GPU total column."""
    names = [str(n).strip() for n in names]
    return all(_pick(names, f) is not None for f in ("id", "submit", "duration", "gpus"))


def sniff_gpu_format(path) -> str | None:
    """``philly``, ``pai``, ``helios``, ``gpujobs`` by the file's first bytes, else None."""
    head = _head(str(path)).decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    if head.startswith(("[", "{")):
        return "philly" if "attempts" in head or "submitted_time" in head else None
    header = {h.strip() for h in head.splitlines()[0].split(",")} if head else set()
    if {"timestamp", "duration", "num_gpus"} <= header:
        return "philly"
    if {"gpu_milli", "creation_time"} <= header or {"task_name", "inst_num",
                                                     "plan_gpu"} <= header:
        return "pai"
    if {"job_id", "vc", "gpu_num", "node_num", "submit_time"} <= header:
        return "helios"
    if is_gpujobs_header(header):
        return "gpujobs"
    first = head.split("\n", 1)[0].split(",")
    if len(first) == 10 and first[2].strip().isdigit() and "pai" in str(path).lower():
        return "pai"                       # a headerless pai_task_table
    return None


def _head(path: str, size: int = 4096) -> bytes:
    """The first ``size`` bytes of a file, decompressed (.gz, .xz, .bz2): a sniff never
    reads a whole trace; b"" when unreadable."""
    import bz2
    import gzip
    import lzma
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
        opener = (gzip.open if magic[:2] == b"\x1f\x8b" else
                  lzma.open if magic == b"\xfd7zXZ\x00" else
                  bz2.open if magic[:3] == b"BZh" else open)
        with opener(path, "rb") as f:
            return f.read(size)
    except (OSError, EOFError, lzma.LZMAError, ValueError):
        return b""


def parse_gpu_trace(path, fmt: str) -> TraceColumns:
    """The columns of a GPU trace in format ``fmt`` (one of :data:`GPU_FORMATS` but
    ``gpujobs``: :func:`fastsched.io.gpujobs.parse_gpujobs`)."""
    path = str(path)
    if fmt == "philly":
        return _philly(path)
    if fmt == "pai":
        return _pai(path)
    if fmt == "helios":
        return _helios(path)
    raise InputError(f"unknown GPU trace format {fmt!r} (one of {', '.join(GPU_FORMATS)})",
                     field="format")


# --------------------------------------------------------------------------- CSV helpers

class _Csv:
    """A CSV file's cells as text, with its header; values parsed per column, a bad
    one reported with its line and column name."""

    def __init__(self, path: str, header: list[str] | None = None):
        import io
        import pandas as pd
        self.path = path
        text = read_decompressed(path).decode("utf-8", "replace").lstrip("\ufeff")
        try:
            self.frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False,
                                     header=None if header else "infer", names=header)
        except (ValueError, pd.errors.ParserError) as e:
            raise InputError(f"not a CSV table: {str(e).splitlines()[0]}", file=path) from None
        self.frame.columns = [str(c).strip() for c in self.frame.columns]
        self.first_line = 1 if header else 2

    def need(self, *names: str) -> None:
        missing = [n for n in names if n not in self.frame.columns]
        if missing:
            raise InputError(f"the header lacks {', '.join(missing)} (it has "
                             f"{', '.join(self.frame.columns)})", file=self.path, line=1,
                             field=missing[0])

    @property
    def lines(self) -> np.ndarray:
        return np.arange(len(self.frame), dtype=np.int64) + self.first_line

    def text(self, name: str) -> np.ndarray:
        if name not in self.frame.columns:
            return np.full(len(self.frame), "", dtype=object)
        return self.frame[name].str.strip().to_numpy(dtype=object)

    def numbers(self, name: str, *, empty=None, minimum: float = 0) -> np.ndarray:
        """float64 values; an empty cell is ``empty`` (None: an error)."""
        import pandas as pd
        raw = self.frame[name].str.strip()
        values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64, copy=True)
        blank = (raw == "").to_numpy()
        if empty is not None:
            values[blank] = empty
        bad = ~np.isfinite(values) | ((values < minimum) & ~(blank & (empty is not None)))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"{raw.iloc[i][:40]!r} is not a number >= {minimum:g}",
                             file=self.path, line=int(self.lines[i]), field=name)
        return values

    def times(self, name: str) -> np.ndarray:
        """``YYYY-MM-DD HH:MM:SS`` (naive: read as UTC) -> epoch seconds; empty, None,
        NaT: -1."""
        import pandas as pd
        raw = self.frame[name].str.strip()
        none = raw.isin(["", "None", "NaT", "nan", "null"]).to_numpy()
        parsed = pd.to_datetime(raw.where(~none, None), format="%Y-%m-%d %H:%M:%S",
                                errors="coerce")
        bad = parsed.isna().to_numpy() & ~none
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"{raw.iloc[i][:40]!r} is not a time (YYYY-MM-DD HH:MM:SS)",
                             file=self.path, line=int(self.lines[i]), field=name)
        out = np.full(len(raw), -1, np.int64)
        ok = ~none
        out[ok] = parsed[ok].to_numpy(dtype="datetime64[s]").astype(np.int64)
        return out


def _columns(csv: _Csv, **kw) -> TraceColumns:
    n = len(csv.frame)
    base = dict(job_text=np.arange(1, n + 1).astype(str).astype(object),
                submit=np.full(n, -1, np.int64), start=np.full(n, -1, np.int64),
                end=np.full(n, -1, np.int64), runtime=np.full(n, -1, np.int64),
                gpus=np.zeros(n), cpus=np.zeros(n, np.int64), mem_mb=np.zeros(n, np.int64),
                nodes=np.zeros(n, np.int64), user=np.full(n, "", dtype=object),
                group=np.full(n, "", dtype=object), state=np.full(n, "", dtype=object),
                line=csv.lines)
    base.update(kw)
    return TraceColumns(**base)


# --------------------------------------------------------------------------- Philly

_PHILLY_STATE = {"Pass": "COMPLETED", "Killed": "CANCELLED", "Failed": "FAILED"}


def _philly(path: str) -> TraceColumns:
    raw = read_decompressed(path).decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    if not raw.startswith(("[", "{")):
        return _philly_csv(path)
    try:
        jobs = json.loads(raw)
    except json.JSONDecodeError as e:
        raise InputError(f"not JSON: {e.msg}", file=path, line=e.lineno) from None
    if isinstance(jobs, dict):
        jobs = [jobs]
    rows = [_philly_job(job, k, path) for k, job in enumerate(jobs, 1)]
    n = len(rows)
    cols = list(zip(*rows)) if rows else [()] * 10
    ints = lambda k: np.array(cols[k], dtype=np.int64)
    return TraceColumns(
        job_text=np.array(cols[0], dtype=object), submit=ints(1), start=ints(2), end=ints(3),
        runtime=ints(4), gpus=np.array(cols[5], dtype=np.float64), cpus=np.zeros(n, np.int64),
        mem_mb=np.zeros(n, np.int64), nodes=ints(6), user=np.array(cols[7], dtype=object),
        group=np.array(cols[8], dtype=object), state=np.array(cols[9], dtype=object),
        line=np.arange(1, n + 1, dtype=np.int64))


def _philly_time(value, k: int, what: str, path: str) -> int:
    import datetime as dt
    if value in (None, "", "None"):
        return -1
    try:
        t = dt.datetime.strptime(str(value).strip()[:19], "%Y-%m-%d %H:%M:%S")
    except ValueError:
        raise InputError(f"{str(value)[:40]!r} is not a time (YYYY-MM-DD HH:MM:SS)",
                         file=path, field=f"entry {k}: {what}") from None
    return int(t.replace(tzinfo=dt.timezone.utc).timestamp())


def _philly_job(job, k: int, path: str):
    """(jobid, submit, start, end, run time, GPUs, nodes, user, vc, state) of an entry;
    start/end/run time -1 when it never ran or is still running."""
    if not isinstance(job, dict):
        raise InputError("a job is not an object", file=path, field=f"entry {k}")
    submit = _philly_time(job.get("submitted_time"), k, "submitted_time", path)
    if submit < 0:
        raise InputError("no submitted_time", file=path, field=f"entry {k}: submitted_time")
    attempts = job.get("attempts") or []
    if not isinstance(attempts, list):
        raise InputError("attempts is not a list", file=path, field=f"entry {k}: attempts")
    spans, gpus, nodes = [], 0, 0
    for a, attempt in enumerate(attempts):
        where = f"attempts[{a}]"
        s = _philly_time(attempt.get("start_time"), k, f"{where}.start_time", path)
        e = _philly_time(attempt.get("end_time"), k, f"{where}.end_time", path)
        spans.append((s, e))
        if a == 0:
            detail = attempt.get("detail") or []
            nodes = len(detail)
            gpus = sum(len(d.get("gpus") or []) for d in detail)
    start, end, run = -1, -1, -1
    if spans and spans[0][0] >= 0 and spans[-1][1] >= 0:
        start, end = spans[0][0], spans[-1][1]
        run = sum(max(0, e - s) for s, e in spans if s >= 0 and e >= 0)
    state = _PHILLY_STATE.get(str(job.get("status", "")), str(job.get("status", "")).upper())
    return (str(job.get("jobid", k)), submit, start, end, run, float(gpus), nodes,
            str(job.get("user", "")), str(job.get("vc", "")), state)


def _philly_csv(path: str) -> TraceColumns:
    csv = _Csv(path)
    csv.need("timestamp", "duration", "num_gpus")
    return _columns(csv, submit=csv.times("timestamp"),
                    runtime=np.round(csv.numbers("duration")).astype(np.int64),
                    gpus=csv.numbers("num_gpus"), group=csv.text("cluster"),
                    state=np.full(len(csv.frame), "COMPLETED", dtype=object))


# --------------------------------------------------------------------------- PAI

_PAI_2020 = ["job_name", "task_name", "inst_num", "status", "start_time", "end_time",
             "plan_cpu", "plan_mem", "plan_gpu", "gpu_type"]


def _pai(path: str) -> TraceColumns:
    head = _head(path, 2048).decode("utf-8", "replace").lstrip("\ufeff")
    first = head.split("\n", 1)[0]
    if "gpu_milli" in first:
        return _pai_2023(_Csv(path))
    return _pai_2020(_Csv(path, None if "task_name" in first else _PAI_2020))


def _pai_2023(csv: _Csv) -> TraceColumns:
    csv.need("name", "cpu_milli", "num_gpu", "gpu_milli", "creation_time")
    num = csv.numbers("num_gpu")
    milli = csv.numbers("gpu_milli", empty=0)
    gpus = np.where((num == 1) & (milli > 0) & (milli < 1000), milli / 1000, num)
    scheduled = csv.numbers("scheduled_time", empty=-1, minimum=-1).astype(np.int64) \
        if "scheduled_time" in csv.frame.columns else np.full(len(num), -1, np.int64)
    deleted = csv.numbers("deletion_time", empty=-1, minimum=-1).astype(np.int64)
    ran = (scheduled >= 0) & (deleted >= scheduled)
    return _columns(
        csv, job_text=csv.text("name"), submit=csv.numbers("creation_time").astype(np.int64),
        start=scheduled, end=deleted, runtime=np.where(ran, deleted - scheduled, -1),
        gpus=gpus, cpus=np.ceil(csv.numbers("cpu_milli") / 1000).astype(np.int64),
        mem_mb=csv.numbers("memory_mib", empty=0).astype(np.int64)
        if "memory_mib" in csv.frame.columns else np.zeros(len(num), np.int64),
        group=csv.text("qos"), state=np.char.upper(csv.text("pod_phase").astype(str))
        .astype(object), gpu_spec=csv.text("gpu_spec"))


def _pai_2020(csv: _Csv) -> TraceColumns:
    csv.need("job_name", "task_name", "inst_num", "start_time", "end_time", "plan_gpu")
    inst = np.maximum(csv.numbers("inst_num", empty=1), 1)
    start = csv.numbers("start_time", empty=-1, minimum=-1).astype(np.int64)
    end = csv.numbers("end_time", empty=-1, minimum=-1).astype(np.int64)
    ran = (start >= 0) & (end >= start)
    per = csv.numbers("plan_gpu", empty=0) / 100          # GPUs of one instance
    cpus = np.ceil(inst * csv.numbers("plan_cpu", empty=0) / 100).astype(np.int64)
    names = csv.text("job_name").astype(str).astype(object) + "/" + csv.text("task_name")
    return _columns(
        csv, job_text=names, submit=np.where(start >= 0, start, 0), start=start, end=end,
        runtime=np.where(ran, end - start, -1), gpus=inst * per, cpus=cpus,
        mem_mb=np.ceil(inst * csv.numbers("plan_mem", empty=0) * 1024).astype(np.int64),
        nodes=np.where(per > 0, inst, 0).astype(np.int64),
        state=np.char.upper(csv.text("status").astype(str)).astype(object),
        gpu_spec=csv.text("gpu_type"), shared=(per > 0) & (per != np.floor(per)),
        whole_gpus=(inst * np.ceil(per)).astype(np.int64),
        notes=["pai_task_table has no submit times: each task is submitted at its start"])


# --------------------------------------------------------------------------- Helios

def _helios(path: str) -> TraceColumns:
    csv = _Csv(path)
    csv.need("job_id", "gpu_num", "submit_time", "start_time", "end_time")
    start, end = csv.times("start_time"), csv.times("end_time")
    if "duration" in csv.frame.columns:
        runtime = np.round(csv.numbers("duration", empty=-1, minimum=-1)).astype(np.int64)
    else:
        runtime = np.where((start >= 0) & (end >= start), end - start, -1)
    runtime = np.where((start < 0) | (end < 0), -1, runtime)
    return _columns(
        csv, job_text=csv.text("job_id"), submit=csv.times("submit_time"), start=start,
        end=end, runtime=runtime, gpus=csv.numbers("gpu_num"),
        cpus=csv.numbers("cpu_num", empty=0).astype(np.int64)
        if "cpu_num" in csv.frame.columns else np.zeros(len(start), np.int64),
        nodes=csv.numbers("node_num", empty=0).astype(np.int64)
        if "node_num" in csv.frame.columns else np.zeros(len(start), np.int64),
        user=csv.text("user"), group=csv.text("vc"), state=csv.text("state"))
