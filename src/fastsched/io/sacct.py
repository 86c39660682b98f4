"""Slurm accounting dumps: ``sacct --parsable2 --format=...`` -> the workload that ran
and the schedule Slurm recorded, on a cluster read from its slurm.conf.

A dump like::

    sacct -a -D -X --parsable2 -S 2024-03-01 -E 2024-04-01 --format=JobID,JobIDRaw,\\
      User,Account,Partition,QOS,Submit,Eligible,Start,End,Timelimit,ReqTRES,AllocTRES,\\
      NNodes,NodeList,State,ExitCode,Priority,Reservation,Dependency > sacct.txt

(``|``-separated, a header line naming the fields, any order, any case). Needed:
JobID, Submit, Start, End, Timelimit, NNodes, NodeList, State, and AllocTRES or
ReqTRES; the rest is optional (JobIDRaw is needed for array and het-job rows).

Rules:

* Steps (``123.batch``, ``123.extern``, ``123.0``) are not jobs: counted in
  ``steps`` and left out.
* A job ran when it has a Start, an End and a NodeList; jobs that never started
  (PENDING, CANCELLED while pending, ``123_[5-9]`` array ranges) and jobs still
  running (no End) are left out, each listed in ``skipped`` with the reason.
* Requeued jobs (``sacct -D`` lists each run): every run is an *attempt* of the
  same job id (``attempt`` 0, 1, ... by start time). All attempts are in the
  recorded schedule (they held their nodes); the workload has one job per job
  id, submitted at the first attempt's submit time and running as long as the
  last attempt ran.
* Times (``2024-03-01T12:00:00``) are local times of ``tz`` (sacct prints local
  time; see :func:`~fastsched.io.sacctvalues.parse_times`); ``Unknown``,
  ``None``, ``INVALID`` and empty mean no value. Times stay epoch seconds.
* A job's workload submit time is its Eligible time when that is later than
  Submit (``--begin``, holds and dependencies are replayed as recorded), else
  Submit.
* Per-node requests are the job's AllocTRES (ReqTRES for a job without one)
  divided by NNodes, rounded up: Slurm may spread CPUs unevenly (``notes``
  counts such jobs; the check may then see a node fuller than it was).
* Timelimit ``UNLIMITED`` is unlimited; ``Partition_Limit`` is the partition's
  MaxTime; no value is unlimited (counted in ``notes``). A run that lasted
  longer than its limit (OverTimeLimit, KillWait) keeps its recorded limit in the
  workload and is checked with its elapsed time as limit (counted in ``notes``).
* Array tasks ``123_4`` keep ``array_job``/``array_task``; het-job components
  ``123+1`` keep ``het_job`` and run as separate jobs (the engine does not
  start components together).
* An empty Partition is the cluster's default partition; a partition the
  cluster lacks skips the job (listed). NodeList names must be nodes of the
  cluster.

A malformed line (wrong field count, a bad value) is an InputError naming file, line
and field; with ``skip_bad=True`` it is left out and listed in ``skipped`` instead.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

import numpy as np

from ..model.cluster import Cluster
from ..model.errors import InputError
from ..model.jobs import UNLIMITED, JobTable
from ..model.schedule import Schedule
from .hostlist import expand
from .sacctvalues import NO_VALUE, PARTITION_LIMIT, parse_job_ids, parse_limit, parse_times, \
    parse_tres, state_word
from .swf import SkippedJob, _read_text
from .workload import Workload

__all__ = ["SacctLog", "read_sacct", "is_sacct", "REQUIRED_FIELDS"]

REQUIRED_FIELDS = ("JobID", "Submit", "Start", "End", "Timelimit", "NNodes", "NodeList",
                   "State")
_TEXT_FIELDS = ("User", "Account", "Partition", "QOS", "ExitCode", "Reservation",
                "Dependency", "JobIDRaw", "Eligible", "Priority", "AllocTRES", "ReqTRES")


@dataclass
class SacctLog:
    """What a sacct dump says: the workload that ran and the schedule Slurm recorded.

    ``workload``: one job per Slurm job id that ran (its last attempt), sorted by
    submit time, ready for :func:`fastsched.simulate`. ``jobs`` and ``schedule``:
    every attempt that ran, row for row, for :func:`fastsched.verify`; the per-row
    arrays ``job_text`` (JobID as printed), ``attempt``, ``state``,
    ``exit_code``, ``gpu_type`` (of ``gres/gpu:TYPE``), ``priority`` (NaN: none),
    ``reservation``, ``dependency``, ``het_job`` (-1: none) and ``line`` (of the
    dump) describe them. ``skipped``: rows left out, with the reason; ``steps``:
    step rows ignored; ``notes``: counted approximations.
    """

    workload: Workload
    jobs: JobTable
    schedule: Schedule
    job_text: np.ndarray
    attempt: np.ndarray
    state: np.ndarray
    exit_code: np.ndarray
    gpu_type: np.ndarray
    priority: np.ndarray
    reservation: np.ndarray
    dependency: np.ndarray
    het_job: np.ndarray
    line: np.ndarray
    skipped: list = field(default_factory=list)
    steps: int = 0
    notes: list = field(default_factory=list)


def is_sacct(path) -> bool:
    """Whether ``path`` starts like a sacct --parsable2 dump (a ``JobID|...`` header)."""
    try:
        with open(path, "rb") as f:
            head = f.read(200)
    except OSError:
        return False
    return head.lstrip().upper().startswith(b"JOBID|")


class _Rows:
    """The data rows of a dump as text columns, with their file lines; bad rows are
    raised, or dropped and listed when skipping."""

    def __init__(self, path, skip_bad: bool):
        self.fname = str(path)
        self.skip_bad = skip_bad
        self.skipped: list[SkippedJob] = []
        text = _read_text(self.fname)
        lines = text.splitlines()
        if not lines or not lines[0].strip():
            raise InputError("empty file: expected a sacct --parsable2 header line",
                             file=self.fname, line=1)
        self.fields = [f.strip() for f in lines[0].split("|")]
        self.col = {f.lower(): f for f in self.fields}
        missing = [f for f in REQUIRED_FIELDS if f.lower() not in self.col]
        if missing or not ({"alloctres", "reqtres"} & set(self.col)):
            raise InputError(f"the header lacks {', '.join(missing) or 'AllocTRES/ReqTRES'} "
                             f"(sacct --format=...; it has {', '.join(self.fields)})",
                             file=self.fname, line=1, field=(missing or ["AllocTRES"])[0])
        self._frame(lines)

    def _frame(self, lines: list[str]) -> None:
        import pandas as pd
        data = lines[1:]
        want = len(self.fields) - 1
        counts = np.fromiter((ln.count("|") for ln in data), np.int64, count=len(data))
        blank = np.fromiter((not ln.strip() for ln in data), bool, count=len(data))
        wrong = np.flatnonzero((counts != want) & ~blank)
        for i in wrong.tolist():
            self.bad(i + 2, "JobID", f"{counts[i] + 1} fields, the header has {want + 1}",
                     data[i].split("|")[0])
        keep = np.flatnonzero((counts == want) & ~blank)
        self.lines = keep + 2
        body = "\n".join(data[i] for i in keep.tolist())
        if not len(keep):
            self.frame = pd.DataFrame({f: np.zeros(0, object) for f in self.fields})
            return
        self.frame = pd.read_csv(io.StringIO(body), sep="|", header=None, names=self.fields,
                                 dtype=str, keep_default_na=False, quoting=csv.QUOTE_NONE,
                                 engine="c")

    def has(self, name: str) -> bool:
        return name.lower() in self.col

    def values(self, name: str, default: str = "") -> np.ndarray:
        if not self.has(name):
            return np.full(len(self.frame), default, dtype=object)
        return self.frame[self.col[name.lower()]].to_numpy(dtype=object)

    def bad(self, line: int, name: str, message: str, job: str = "") -> None:
        field_name = self.col.get(name.lower(), name)
        if not self.skip_bad:
            raise InputError(message, file=self.fname, line=int(line), field=field_name)
        self.skipped.append(SkippedJob(_job_number(job), int(line),
                                       f"malformed: {field_name}: {message}"))

    def drop(self, mask: np.ndarray) -> None:
        """Keep only the rows where ``mask`` is False."""
        keep = ~mask
        self.frame = self.frame[keep].reset_index(drop=True)
        self.lines = self.lines[keep]


def _job_number(text: str) -> int:
    digits = ""
    for ch in str(text):
        if not ch.isdigit():
            break
        digits += ch
    return int(digits) if digits and len(digits) < 19 else -1


def _check(rows: _Rows, bad: np.ndarray, name: str, message) -> np.ndarray:
    """Report the rows where ``bad`` holds (message(i) names the value)."""
    for i in np.flatnonzero(bad).tolist():
        rows.bad(rows.lines[i], name, message(i), rows.values("JobID")[i])
    return bad


def _per_unique(rows: _Rows, name: str, parse, values=None):
    """(codes, parsed uniques) of a column, a bad value reported at its first row."""
    import pandas as pd
    values = rows.values(name) if values is None else values
    codes, uniques = pd.factorize(values)
    out, bad = [], np.zeros(len(values), bool)
    for k, text in enumerate(uniques):
        try:
            out.append(parse(str(text)))
        except InputError as e:
            out.append(None)
            bad |= _check(rows, codes == k, name, lambda i, r=e.reason: r)
    return codes, out, bad


def read_sacct(path, cluster: Cluster, *, tz: str = "UTC", skip_bad: bool = False
               ) -> SacctLog:
    """Read a ``sacct --parsable2`` dump (plain, .gz, .xz or .bz2) on ``cluster``; the
    rules are in the module docs."""
    rows = _Rows(path, skip_bad)
    steps = _drop_steps(rows)
    cols = _columns(rows, cluster, tz)
    ran, skipped = _runs(rows, cols, cluster)
    rows.skipped.extend(skipped)
    from .sacctbuild import build_log
    log = build_log(rows, cols, ran, cluster)
    log.steps = steps
    log.skipped = sorted(rows.skipped, key=lambda s: s.line)
    return log


def _drop_steps(rows: _Rows) -> int:
    """Parse JobIDs; drop step rows (returning how many) and malformed ones."""
    try:
        base, task, het, step, pending = parse_job_ids(rows.values("JobID"))
    except InputError as e:
        if not rows.skip_bad:
            raise InputError(e.reason, file=rows.fname, line=int(rows.lines[e.line]),
                             field=rows.col["jobid"]) from None
        return _drop_steps_slowly(rows)
    rows.drop(step)
    rows.ids = tuple(a[~step] for a in (base, task, het, pending))
    return int(step.sum())


def _drop_steps_slowly(rows: _Rows) -> int:
    """As :func:`_drop_steps`, row by row, listing malformed JobIDs (skip_bad only)."""
    values = rows.values("JobID")
    bad = np.zeros(len(values), bool)
    for i, text in enumerate(values.tolist()):
        try:
            parse_job_ids(np.array([text], dtype=object))
        except InputError as e:
            rows.bad(rows.lines[i], "JobID", e.reason, text)
            bad[i] = True
    rows.drop(bad)
    return _drop_steps(rows)


def _columns(rows: _Rows, cluster: Cluster, tz: str) -> dict:
    """Every value the log needs, parsed, as arrays over the rows."""
    c = {}
    bad_time = np.zeros(len(rows.frame), bool)
    for name in ("Submit", "Eligible", "Start", "End"):
        values = rows.values(name, "Unknown")
        c[name], bad = parse_times(values, tz)
        bad_time |= _check(rows, bad, name,
                           lambda i, v=values: f"{str(v[i])[:40]!r} is not a time")
    codes, limits, bad_limit = _per_unique(rows, "Timelimit", parse_limit)
    c["limit"] = np.array([-1 if v is None else v for v in limits], np.int64)[codes] \
        if len(codes) else np.zeros(0, np.int64)
    nn = rows.values("NNodes")
    ok = np.array([str(v).isdigit() and 0 < len(str(v)) < 9 for v in nn], bool)
    c["nnodes"] = np.where(ok, np.array([int(v) if o else 0 for v, o in zip(nn, ok)],
                                        np.int64), 0)
    bad_nn = _check(rows, ~ok, "NNodes", lambda i: f"{str(nn[i])[:30]!r} is not a node count")
    tres_name = "AllocTRES" if rows.has("AllocTRES") else "ReqTRES"
    alloc = rows.values(tres_name)
    if rows.has("AllocTRES") and rows.has("ReqTRES"):
        req = rows.values("ReqTRES")
        empty = np.isin(alloc, list(NO_VALUE))
        alloc = np.where(empty, req, alloc)
    codes, tres, bad_tres = _per_unique(rows, tres_name, parse_tres, alloc)
    table = np.array([t if t is not None else (-1, -1, 0, "", -1) for t in tres], dtype=object)
    c["tres"] = (table, codes)
    c["state"] = np.array([state_word(s) for s in rows.values("State")], dtype=object)
    c["bad"] = bad_time | bad_limit | bad_nn | bad_tres
    return c


def _runs(rows: _Rows, cols: dict, cluster: Cluster):
    """(bool per row: it ran, SkippedJob list of the rows that did not, with why)."""
    start, end = cols["Start"], cols["End"]
    nodelist = rows.values("NodeList")
    no_nodes = np.isin(nodelist, list(NO_VALUE))
    never = (start < 0) | no_nodes | rows.ids[3]
    running = ~never & (end < 0)
    backwards = ~never & ~running & (end < start)
    bad = cols["bad"] | _check(rows, backwards, "End",
                               lambda i: f"ends at {end[i]}, before its start {start[i]}")
    skipped = []
    jid = rows.values("JobID")
    for i in np.flatnonzero((never | running) & ~bad).tolist():
        why = ("still running when the dump was taken (no End)" if running[i] else
               f"never started ({cols['state'][i]})")
        skipped.append(SkippedJob(_job_number(jid[i]), int(rows.lines[i]), why))
    return ~never & ~running & ~bad, skipped

