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
* Dependency (when the dump has it): :mod:`fastsched.io.sacctdeps` (jobs whose
  dependencies are all on jobs of the dump wait for them in a replay, submitted at
  Submit; the others keep their Eligible time, counted in a warning).
* Reservation (when the dump has it) is the workload's ``reservation`` column: the
  job runs in that advance reservation when replayed, which then needs the
  reservations (``--resv-file``); ``(null)`` and the like are none.
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

import numpy as np

from .textfile import read_decompressed
from ..model.cluster import Cluster
from ..model.errors import InputError
from .bytetable import ByteTable
from .sacctbuild import SacctLog, build_log
from .sacctdeps import parse_recorded_dependency
from .sacctvalues import NO_VALUE, job_ids_from_bytes, parse_limit, parse_times, parse_tres, \
    parse_tres_many, state_word
from .swf import SkippedJob

__all__ = ["SacctLog", "read_sacct", "is_sacct", "REQUIRED_FIELDS"]

REQUIRED_FIELDS = ("JobID", "Submit", "Start", "End", "Timelimit", "NNodes", "NodeList",
                   "State")
_TEXT_FIELDS = ("User", "Account", "Partition", "QOS", "ExitCode", "Reservation",
                "Dependency", "JobIDRaw", "Eligible", "Priority", "AllocTRES", "ReqTRES")
_TIME_FIELDS = ("Submit", "Eligible", "Start", "End")


def is_sacct(path) -> bool:
    """Whether ``path`` starts like a sacct --parsable2 dump (a ``JobID|...`` header)."""
    try:
        with open(path, "rb") as f:
            head = f.read(200)
    except OSError:
        return False
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").upper().startswith(b"JOBID|")


class _Rows:
    """The data rows of a dump as columns of a :class:`ByteTable`, with their file
    lines; bad rows are raised, or dropped and listed when skipping."""

    def __init__(self, path, skip_bad: bool):
        self.fname = str(path)
        self.skip_bad = skip_bad
        self.skipped: list[SkippedJob] = []
        raw = read_decompressed(self.fname)
        if raw.startswith(b"\xef\xbb\xbf"):             # a UTF-8 byte-order mark
            raw = raw[3:]
        header = raw[:raw.find(b"\n")] if b"\n" in raw else raw
        header = header.decode("utf-8", "replace").strip()
        if not header:
            raise InputError("empty file: expected a sacct --parsable2 header line",
                             file=self.fname, line=1)
        self.fields = [f.strip() for f in header.split("|")]
        self.col = {f.lower(): f for f in self.fields}
        self.index = {f.lower(): k for k, f in enumerate(self.fields)}
        missing = [f for f in REQUIRED_FIELDS if f.lower() not in self.col]
        if missing or not ({"alloctres", "reqtres"} & set(self.col)):
            raise InputError(f"the header lacks {', '.join(missing) or 'AllocTRES/ReqTRES'} "
                             f"(sacct --format=...; it has {', '.join(self.fields)})",
                             file=self.fname, line=1, field=(missing or ["AllocTRES"])[0])
        self.table = ByteTable(raw, len(self.fields))
        self._cache: dict = {}
        self._reported: set[int] = set()
        for line, count in self.table.wrong:
            self.bad(line, "JobID", f"{count} fields, the header has {len(self.fields)}")

    @property
    def lines(self) -> np.ndarray:
        return self.table.lines

    def has(self, name: str) -> bool:
        return name.lower() in self.col

    def codes(self, name: str) -> tuple[np.ndarray, list[str]]:
        """(code per row, distinct texts) of a column."""
        key = name.lower()
        if key not in self._cache:
            self._cache[key] = self.table.factorize(self.index[key])
        return self._cache[key]

    def values(self, name: str, rows: np.ndarray) -> np.ndarray:
        """``rows`` of a column as an object array of str (via its distinct texts)."""
        if not self.has(name):
            return np.full(len(rows), "", dtype=object)
        codes, uniques = self.codes(name)
        return np.array(uniques + [""], dtype=object)[codes[rows]]

    def where(self, name: str, test) -> np.ndarray:
        """Per row: ``test(text)`` of its value (computed once per distinct text)."""
        if not self.has(name):
            return np.full(len(self.table), bool(test("")))
        codes, uniques = self.codes(name)
        return np.array([bool(test(u)) for u in uniques] + [False])[codes]

    def value(self, name: str, row: int) -> str:
        return self.table.text(self.index[name.lower()], row) if self.has(name) else ""

    def strings(self, name: str, rows: np.ndarray) -> np.ndarray:
        if not self.has(name):
            return np.full(len(rows), "", dtype=object)
        return self.table.strings(self.index[name.lower()], rows)

    def digits(self, name: str, maxlen: int):
        """(int64 value, ok) of a column of whole numbers."""
        if not self.has(name):
            return np.zeros(len(self.table), np.int64), np.zeros(len(self.table), bool)
        return self.table.digits(self.index[name.lower()], maxlen)

    def bad(self, line: int, name: str, message: str, job: str = "") -> None:
        field_name = self.col.get(name.lower(), name)
        if not self.skip_bad:
            raise InputError(message, file=self.fname, line=int(line), field=field_name)
        if int(line) in self._reported:
            return                                      # one entry per line, its first fault
        self._reported.add(int(line))
        self.skipped.append(SkippedJob(_job_number(job), int(line),
                                       f"malformed: {field_name}: {message}"))

    def drop(self, mask: np.ndarray) -> None:
        """Keep only the rows where ``mask`` is False."""
        self.table.keep(~mask)
        self._cache.clear()
        if hasattr(self, "ids"):
            self.ids = tuple(a[~mask] for a in self.ids)


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
        rows.bad(rows.lines[i], name, message(i), rows.value("JobID", i))
    return bad


def _per_unique(rows: _Rows, name: str, parse):
    """(codes, parsed distinct values) of a column, a bad value reported at its rows."""
    codes, uniques = rows.codes(name)
    out, bad = [], np.zeros(len(codes), bool)
    for k, text in enumerate(uniques):
        try:
            out.append(parse(text))
        except InputError as e:
            out.append(None)
            bad |= _check(rows, codes == k, name, lambda i, r=e.reason: r)
    return codes, out, bad


def read_sacct(path, cluster: Cluster, *, tz: str = "UTC", skip_bad: bool = False
               ) -> SacctLog:
    """Read a ``sacct --parsable2`` dump (plain, .gz, .xz or .bz2) on ``cluster``; the
    rules are in the module docs."""
    _check_zone(tz)
    rows = _Rows(path, skip_bad)
    steps = _drop_steps(rows)
    cols = _columns(rows, cluster, tz)
    ran, skipped = _runs(rows, cols, cluster)
    rows.skipped.extend(skipped)
    log = build_log(rows, cols, ran, cluster)
    log.steps = steps
    log.skipped = sorted(rows.skipped, key=lambda s: s.line)
    return log


def _check_zone(tz: str) -> None:
    import zoneinfo
    try:
        zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise InputError(f"unknown time zone {tz!r} (an IANA name such as Europe/Berlin)",
                         field="tz") from None


def _drop_steps(rows: _Rows) -> int:
    """Parse JobIDs; drop step rows (returning how many) and malformed ones."""
    col = rows.index["jobid"]
    table = rows.table
    width = int(table.lengths(col).max(initial=0)) + 1
    m, length = table.matrix(col, min(width, 64))
    base, task, het, step, pending, ok = job_ids_from_bytes(m, length)
    ok &= length < 64
    for i in np.flatnonzero(~ok).tolist():
        rows.bad(rows.lines[i], "JobID", f"{rows.value('JobID', i)[:40]!r} is not a job id "
                 "(N, N_T, N+K, N.step)", rows.value("JobID", i))
    drop = step | ~ok
    rows.drop(drop)
    rows.ids = tuple(a[~drop] for a in (base, task, het, pending))
    return int((step & ok).sum())


def _iso_columns(rows: _Rows, names) -> dict:
    """(seconds, ok) of the ISO times of each of ``names`` the dump has, adjacent
    columns read together."""
    cols = sorted(rows.index[n.lower()] for n in names if rows.has(n))
    out, run = {}, []
    for c in cols + [None]:
        if run and (c is None or c != run[-1] + 1):
            out.update(rows.table.iso_time_columns(run))
            run = []
        if c is not None:
            run.append(c)
    return out


def _times(rows: _Rows, name: str, tz: str, iso: dict):
    """(int64 epoch seconds, -1 for no value; bool per row: malformed)."""
    n = len(rows.table)
    if not rows.has(name):
        return np.full(n, -1, np.int64), np.zeros(n, bool)
    secs, ok = iso[rows.index[name.lower()]]
    if tz not in ("UTC", "utc", "Z") and ok.any():
        secs[ok] = localize(secs[ok], tz)
    bad = np.zeros(n, bool)
    other = np.flatnonzero(~ok)
    if len(other):                                      # Unknown, None...: no value
        codes, uniques = rows.table.factorize(rows.index[name.lower()], other)
        none = np.array([u in NO_VALUE for u in uniques], bool)[codes]
        secs[other[none]] = -1
        other = other[~none]
    if len(other):                                      # offsets, odd forms, errors
        secs[other], bad[other] = parse_times(rows.strings(name, other), tz)
    return secs, bad


def _columns(rows: _Rows, cluster: Cluster, tz: str) -> dict:
    """Every value the log needs, parsed, as arrays over the rows."""
    c = {}
    bad = np.zeros(len(rows.table), bool)
    iso = _iso_columns(rows, _TIME_FIELDS)
    for name in _TIME_FIELDS:
        c[name], wrong = _times(rows, name, tz, iso)
        bad |= _check(rows, wrong, name, lambda i, name=name:
                      f"{rows.value(name, i)[:40]!r} is not a time")
    codes, limits, bad_limit = _per_unique(rows, "Timelimit", parse_limit)
    c["limit"] = np.array([-1 if v is None else v for v in limits] + [-1], np.int64)[codes]
    c["nnodes"], ok = rows.digits("NNodes", 8)
    bad |= bad_limit | _check(rows, ~ok | (c["nnodes"] < 1), "NNodes", lambda i:
                              f"{rows.value('NNodes', i)[:30]!r} is not a node count")
    c["tres"], bad_tres = _tres(rows)
    codes, uniques = rows.codes("State")
    c["state"] = np.array([state_word(u) for u in uniques] + [""], dtype=object)[codes]
    c["deps"], bad_deps = _dependencies(rows)
    c["bad"] = bad | bad_tres | bad_deps
    return c


def _dependencies(rows: _Rows):
    """((code per row, parsed distinct Dependency values), bool per row: malformed)."""
    n = len(rows.table)
    if not rows.has("Dependency"):
        return (np.zeros(n, np.int64), [None]), np.zeros(n, bool)
    codes, parsed, bad = _per_unique(rows, "Dependency", parse_recorded_dependency)
    return (codes, parsed + [None]), bad


def _tres(rows: _Rows):
    """Per row (nodes, CPUs, GPUs, MB) totals and GPU type: AllocTRES, else ReqTRES
    (read only for the rows whose AllocTRES is empty)."""
    n = len(rows.table)
    ints = np.tile(np.array([-1, -1, 0, -1], np.int64), (n, 1))
    types = np.full(n, "", dtype=object)
    bad = np.zeros(n, bool)
    todo = np.arange(n)
    for name in ("AllocTRES", "ReqTRES"):
        if not rows.has(name) or not len(todo):
            continue
        codes, uniques = rows.table.factorize(rows.index[name.lower()], todo)
        table, parsed_types, done = parse_tres_many(uniques)
        for k in np.flatnonzero(~done).tolist():        # rare forms, and errors
            try:
                t = parse_tres(uniques[k])
                table[k], parsed_types[k] = t[:3] + t[4:], t[3]
            except InputError as e:
                table[k], parsed_types[k] = (-1, -1, 0, -1), ""
                where = np.zeros(n, bool)
                where[todo[codes == k]] = True
                bad |= _check(rows, where, name, lambda i, r=e.reason: r)
        empty = np.array([u.strip() in NO_VALUE for u in uniques], bool)[codes]
        got = todo[~empty]
        ints[got] = table[codes[~empty]]
        types[got] = np.array(parsed_types + [""], dtype=object)[codes[~empty]]
        todo = todo[empty]
    return (ints, types), bad


def localize(secs: np.ndarray, tz: str) -> np.ndarray:
    """Naive local seconds in ``tz`` -> epoch seconds (ambiguous: the first; missing:
    shifted forward, as :func:`parse_times` does)."""
    import pandas as pd
    try:
        local = pd.to_datetime(secs, unit="s").tz_localize(
            tz, ambiguous=np.ones(len(secs), bool), nonexistent="shift_forward")
    except Exception as e:             # an unknown zone name
        raise InputError(f"unknown time zone {tz!r} ({e})", field="tz") from None
    return local.tz_convert("UTC").tz_localize(None).to_numpy(dtype="datetime64[s]") \
        .astype(np.int64)


def _runs(rows: _Rows, cols: dict, cluster: Cluster):
    """(bool per row: it ran, SkippedJob list of the rows that did not, with why)."""
    start, end = cols["Start"], cols["End"]
    no_nodes = rows.where("NodeList", lambda t: t.strip() in NO_VALUE)
    never = (start < 0) | no_nodes | rows.ids[3]
    running = ~never & (end < 0)
    backwards = ~never & ~running & (end < start)
    bad = cols["bad"] | _check(rows, backwards, "End",
                               lambda i: f"ends at {end[i]}, before its start {start[i]}")
    skipped = []
    for i in np.flatnonzero((never | running) & ~bad).tolist():
        why = ("still running when the dump was taken (no End)" if running[i] else
               f"never started ({cols['state'][i]})")
        skipped.append(SkippedJob(int(rows.ids[0][i]), int(rows.lines[i]), why))
    return ~never & ~running & ~bad, skipped

