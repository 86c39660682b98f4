"""Read traces in the Standard Workload Format (SWF) of the Parallel Workloads Archive.

A trace is a text file (optionally gzip/xz/bzip2 compressed). Lines starting
with ``;`` are comments; ``; Key: value`` lines at the top form the header.
Every other non-blank line is one job with 18 numeric fields (``-1`` = missing):

====  =======================  ====  =======================
  1   job number                10   requested memory
  2   submit time               11   status
  3   wait time                 12   user id
  4   run time                  13   group id
  5   allocated processors      14   executable
  6   average CPU time          15   queue
  7   used memory               16   partition
  8   requested processors      17   preceding job
  9   requested time            18   think time
====  =======================  ====  =======================

:func:`read_swf` turns a trace into a :class:`~fastsched.model.jobs.JobTable` of
one-CPU "nodes" (one per processor). The job lines are tokenized and parsed in one
compiled pass (:mod:`fastsched.io.swfparse`); only when that finds a problem is the file
rescanned line by line, to name the exact line and field in the
:class:`~fastsched.model.errors.InputError`.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..model.errors import InputError

from ..model.jobs import JobTable
from ..model.validation import MAX_COUNT, MAX_NODES, MAX_SECONDS
from .swfparse import is_clean, parse_numbers, parse_text
from .textfile import read_decompressed

__all__ = ["SkippedJob", "SWFTrace", "SWFFields", "read_swf", "read_swf_fields",
           "bundled_trace", "SWF_FIELDS"]

#: 1-based field number -> name, as the SWF definition lists them.
SWF_FIELDS: dict[int, str] = {
    1: "job_number", 2: "submit_time", 3: "wait_time", 4: "run_time",
    5: "allocated_processors", 6: "average_cpu_time", 7: "used_memory",
    8: "requested_processors", 9: "requested_time", 10: "requested_memory",
    11: "status", 12: "user_id", 13: "group_id", 14: "executable",
    15: "queue", 16: "partition", 17: "preceding_job", 18: "think_time",
}
_NFIELDS = 18
_TIME_FIELDS = (2, 3, 4, 9)           # floats accepted, rounded to the nearest second
_COUNT_FIELDS = (1, 5, 8, 12)         # must be integral
#: field -> largest magnitude it may have. Job and user numbers are labels (standardised
#: traces hash user ids into 14-digit numbers): any integer float64 holds exactly.
_LIMITS = {1: 2**53, 12: 2**53, 5: MAX_COUNT, 8: MAX_COUNT,
           2: MAX_SECONDS, 4: MAX_SECONDS, 9: MAX_SECONDS}

_BUNDLED = {"KTH-SP2": "KTH-SP2-1996-2.1-cln.swf.gz",
            "lublin_256": "lublin_256.swf.xz", "lublin_256_new2": "lublin_256_new2.swf.xz"}

_HEADER_RE = re.compile(r"^;\s{0,2}([A-Za-z][A-Za-z0-9_]*)\s*:(?:\s+(.*?))?\s*$")


@dataclass
class SkippedJob:
    """A job of the trace that cannot run on the machine, and why."""

    job_id: int
    line: int        #: 1-based line number in the file
    reason: str


@dataclass
class SWFTrace:
    """A parsed SWF trace."""

    path: str
    jobs: JobTable                 #: sorted by (submit_time, job_id)
    procs: int                     #: machine size used (processors)
    header: dict[str, str] = field(default_factory=dict)
    header_lines: list[str] = field(default_factory=list)
    skipped: list[SkippedJob] = field(default_factory=list)
    num_timeouts: int = 0          #: jobs whose runtime exceeds their requested time
    #: each job's SWF user id (int64, -1 = missing). ``jobs.user`` is that id when every id
    #: fits int32, else the ids renumbered 0, 1, ... in increasing order (-1 stays missing).
    user_ids: np.ndarray | None = None

    def __repr__(self) -> str:
        return (f"SWFTrace({self.path!r}, {len(self.jobs)} jobs, procs={self.procs}, "
                f"{len(self.skipped)} skipped, {self.num_timeouts} timeouts)")


def bundled_trace(name: str = "KTH-SP2") -> Path:
    """Path of a trace shipped with fastsched, by name or file name.

    ``"KTH-SP2"``: the cleaned KTH IBM SP2 log; ``"lublin_256"``, ``"lublin_256_new2"``:
    the two Lublin-model traces of RLScheduler (SC'20), its Lublin-1 and Lublin-2.
    """
    fname = _BUNDLED.get(name, name)
    if fname not in _BUNDLED.values():
        raise InputError(f"no bundled trace {name!r}; available: {', '.join(sorted(_BUNDLED))}")
    path = Path(__file__).parents[1] / "data" / fname
    if not path.is_file():
        raise InputError(f"bundled trace {name!r} is missing from the installation", file=str(path))
    return path


# --------------------------------------------------------------------------- reading

def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _load(raw: bytes):
    """(header, header_lines, (n, 18) float array or None if a line is malformed, the
    1-based line of each row)."""
    scanned = parse_text(raw, _NFIELDS)
    if scanned is None:
        header, header_lines, data, lineno = _split(_decode(raw))
        return header, header_lines, _parse_block(data), lineno
    comments, parsed = scanned
    header: dict[str, str] = {}
    header_lines: list[str] = []
    for _, ln in comments:
        header_lines.append(ln)
        _header_entry(header, ln.lstrip())
    if parsed is None:
        return header, header_lines, None, None
    arr, rows = parsed
    return header, header_lines, arr, rows + 1


def _header_entry(header: dict[str, str], s: str) -> None:
    """Record a ``; Key: value`` comment; the first of a key counts."""
    m = _HEADER_RE.match(s)
    if m and m.group(1) not in header:
        header[m.group(1)] = m.group(2) or ""


def _machine_size(procs, header: dict[str, str], path: str) -> int:
    if procs is not None:
        try:
            p = int(procs)
        except (TypeError, ValueError):
            raise InputError(f"procs must be a positive integer, got {procs!r}", file=path) from None
        if p != procs or not 0 < p <= MAX_NODES:
            raise InputError(f"procs must be an integer in 1..{MAX_NODES:,}, got {procs!r}",
                             file=path)
        return p
    for key in ("MaxProcs", "MaxNodes"):
        try:
            v = float(header.get(key, "").split()[0])
        except (ValueError, IndexError):
            continue
        if v > MAX_NODES:
            raise InputError(f"{key} {header[key].strip()[:30]} is out of range (at most "
                             f"{MAX_NODES:,}); give the machine size (--procs)", file=path)
        if v > 0 and v == int(v):
            return int(v)
    raise InputError("no MaxProcs/MaxNodes header; give the machine size (procs=... / --procs)",
                     file=path)


def _fname(k: int) -> str:
    return f"{k} ({SWF_FIELDS[k]})"


def _round_time(a):
    return np.floor(a + 0.5)


def read_swf(path, *, procs: int | None = None, strict: bool = False) -> SWFTrace:
    """Read an SWF trace (plain, ``.gz``, ``.xz`` or ``.bz2``).

    ``procs`` overrides the machine size of the header (``MaxProcs``, else
    ``MaxNodes``). Jobs that cannot run (no or too many processors, unknown or
    negative runtime) are listed in ``skipped``; with ``strict=True`` the first
    one raises :class:`InputError` instead. Malformed lines always raise.
    """
    path = str(path)
    raw = read_decompressed(path)
    header, header_lines, arr, lineno = _load(raw)
    machine = _machine_size(procs, header, path)

    for attempt in range(2):
        ok = arr is not None
        if ok:
            ids, submit, runtime, limit_raw, nproc, user, ok = _derive(arr)
        if ok:
            runnable_p = (nproc > 0) & (nproc <= machine)
            runnable_r = runtime >= 0
            if strict and not (runnable_p.all() and runnable_r.all()):
                ok = False
        if ok:
            break
        if attempt:  # pragma: no cover - the line scan and the fast path disagree
            raise InputError("trace could not be parsed", file=path)
        # Something is wrong: find and report the first bad line exactly. If
        # the line scan finds nothing (a number NumPy's parser rejects but
        # Python's accepts), use its values.
        _, _, data, lineno = _split(_decode(raw))
        arr = _slow_scan(data, lineno, path, machine, strict)

    keep = runnable_p & runnable_r
    skipped: list[SkippedJob] = []
    if not keep.all():
        for r in np.flatnonzero(~keep):
            skipped.append(SkippedJob(int(ids[r]), int(lineno[r]),
                                      _skip_reason(int(nproc[r]), runtime[r], machine)))
        ids, submit, runtime, limit_raw, nproc, user = (
            a[keep] for a in (ids, submit, runtime, limit_raw, nproc, user))
    runtime = _round_time(runtime).astype(np.int64)
    limit_r = _round_time(limit_raw).astype(np.int64)
    limit = np.where(limit_r > 0, limit_r, np.maximum(runtime, 1))
    num_timeouts = int(np.count_nonzero(runtime > limit))

    columns = (ids, submit, limit, runtime, nproc, user)
    if not _in_order(submit, ids):      # (traces are written in submit order)
        order = np.lexsort((ids, submit))
        columns = tuple(a[order] for a in columns)
    ids, submit, limit, runtime, nproc, user = columns
    jobs = JobTable.from_arrays(
        job_id=ids, submit_time=submit, time_limit=limit, runtime=runtime, num_nodes=nproc,
        cpus_per_node=1, gpus_per_node=0, mem_per_node=0, partition=0,
        user=_user_index(user))
    return SWFTrace(path=path, jobs=jobs, procs=machine, header=header,
                    header_lines=header_lines, skipped=skipped, num_timeouts=num_timeouts,
                    user_ids=user)


def _split(text: str):
    """(header, header_lines, data lines, their 1-based line numbers) of an SWF text."""
    header: dict[str, str] = {}
    header_lines: list[str] = []
    data: list[str] = []
    lineno: list[int] = []
    for i, ln in enumerate(text.splitlines(), 1):
        s = ln.lstrip()
        if not s:
            continue
        if s[0] == ";":
            header_lines.append(ln)
            _header_entry(header, s)
            continue
        data.append(ln)
        lineno.append(i)
    return header, header_lines, data, lineno


@dataclass
class SWFFields:
    """An SWF trace as written: its header and the 18 numbers of each job line."""

    path: str
    header: dict[str, str]
    header_lines: list[str]
    fields: np.ndarray             #: float64 (jobs, 18), in file order; -1 = missing
    lines: np.ndarray              #: int64 (jobs,): the 1-based line of each row


def read_swf_fields(path) -> SWFFields:
    """The raw fields of an SWF trace (plain, ``.gz``, ``.xz`` or ``.bz2``), uninterpreted.

    For readers with their own conventions (e.g. :mod:`fastsched.tools.rlscheduler`).
    Only the form is checked: 18 finite numbers per line, else :class:`InputError`
    naming the line and field.
    """
    path = str(path)
    raw = read_decompressed(path)
    header, header_lines, arr, lineno = _load(raw)
    if arr is None:
        _, _, data, lineno = _split(_decode(raw))
        arr = np.array([_numbers(ln, no, path) for ln, no in zip(data, lineno)],
                       dtype=np.float64).reshape(len(data), _NFIELDS)
    return SWFFields(path, header, header_lines, arr, np.asarray(lineno, dtype=np.int64))


def _numbers(ln: str, no: int, path: str) -> list[float]:
    """The 18 numbers of one data line, or InputError naming the line and field."""
    toks = ln.split()
    if len(toks) != _NFIELDS:
        raise InputError(f"expected {_NFIELDS} fields, found {len(toks)}", file=path, line=no)
    vals = []
    for k, t in enumerate(toks, 1):
        try:
            v = float(t)
        except ValueError:
            v = math.nan
        if not math.isfinite(v):
            raise InputError(f"{t!r} is not a number", file=path, line=no, field=_fname(k))
        vals.append(v)
    return vals


def _user_index(user: np.ndarray) -> np.ndarray:
    """int32 user column: the ids themselves when they fit, else renumbered by value."""
    i32 = np.iinfo(np.int32)
    if len(user) == 0 or (user.max() <= i32.max and user.min() >= i32.min):
        return user
    known = user >= 0
    index = np.full(len(user), -1, dtype=np.int64)
    index[known] = np.unique(user[known], return_inverse=True)[1]
    return index


def _parse_block(data: list[str]):
    """All data lines as an (n, 18) float array, or None if any line is malformed (or
    holds other than printable ASCII and tabs: the line scan applies Python's rules)."""
    text = "\n".join(data)
    if not text.isascii():
        return None
    blob = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    if not is_clean(blob):
        return None
    parsed = parse_numbers(blob, _NFIELDS)
    if parsed is None or len(parsed[1]) != len(data):
        return None
    return parsed[0]


def _derive(arr):
    """Vectorised field checks and derived columns; ``ok`` is False on any malformed value."""
    ok = True
    for k in _COUNT_FIELDS:
        col = arr[:, k - 1]
        if not (col == np.floor(col)).all():
            ok = False
    for k, limit in _LIMITS.items():
        if (np.abs(arr[:, k - 1]) > limit).any():
            ok = False
    submit_f = arr[:, 1]
    if (submit_f < 0).any():
        ok = False
    ids = arr[:, 0].astype(np.int64) if ok else None
    if ok and _has_duplicates(ids):
        ok = False
    if not ok:
        return (None,) * 6 + (False,)
    submit = _round_time(submit_f).astype(np.int64)
    runtime = arr[:, 3]
    limit_raw = arr[:, 8]
    req = arr[:, 7].astype(np.int64)
    alloc = arr[:, 4].astype(np.int64)
    nproc = np.where(req > 0, req, alloc)
    user = arr[:, 11].astype(np.int64)
    return ids, submit, runtime, limit_raw, nproc, user, True


def _in_order(submit: np.ndarray, ids: np.ndarray) -> bool:
    """Are the jobs sorted by submit time, then job number (the table's order)?"""
    later = submit[1:] > submit[:-1]
    return bool((later | ((submit[1:] == submit[:-1]) & (ids[1:] > ids[:-1]))).all())


def _has_duplicates(ids: np.ndarray) -> bool:
    if (ids[1:] > ids[:-1]).all():      # the usual order: no sort needed
        return False
    return len(np.unique(ids)) != len(ids)


def _skip_reason(nproc: int, runtime: float, machine: int) -> str | None:
    if nproc <= 0:
        return f"requests {nproc} processors"
    if nproc > machine:
        return f"requests {nproc} processors, machine has {machine}"
    if runtime == -1:
        return "unknown runtime"
    if runtime < 0:
        return f"negative runtime {_fmt(runtime)}"
    return None


def _fmt(v: float) -> str:
    return str(int(v)) if v == int(v) else repr(v)


def _slow_scan(data, lineno, path, machine, strict):
    """Check line by line and raise InputError at the first problem."""
    seen: dict[int, int] = {}
    rows = []
    for ln, no in zip(data, lineno):
        toks = ln.split()
        vals = _numbers(ln, no, path)
        for k, (t, v) in enumerate(zip(toks, vals), 1):
            if k in _COUNT_FIELDS and v != math.floor(v):
                raise InputError(f"{t!r} is not an integer", file=path, line=no, field=_fname(k))
            if abs(v) > _LIMITS.get(k, math.inf):
                raise InputError(f"{t[:30]!r} is out of range (at most {_LIMITS[k]:,} in "
                                 "magnitude)", file=path, line=no, field=_fname(k))
        rows.append(vals)
        if vals[1] < 0:
            what = "missing" if vals[1] == -1 else f"negative ({toks[1]})"
            raise InputError(f"submit time is {what}", file=path, line=no, field=_fname(2))
        jid = int(vals[0])
        if jid in seen:
            raise InputError(f"duplicate job number {jid} (first on line {seen[jid]})",
                             file=path, line=no, field=_fname(1))
        seen[jid] = no
        if strict:
            req, alloc, rt = int(vals[7]), int(vals[4]), vals[3]
            nproc = req if req > 0 else alloc
            reason = _skip_reason(nproc, rt, machine)
            if reason is not None:
                if nproc <= 0 or nproc > machine:
                    fld = _fname(8) if req > 0 else _fname(5)
                else:
                    fld = _fname(4)
                raise InputError(f"job {jid} cannot run: {reason}", file=path, line=no,
                                 field=fld)
    return np.array(rows, dtype=np.float64).reshape(len(rows), _NFIELDS)
