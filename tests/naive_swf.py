"""The SWF reader as it was before the one-pass tokenizer (fastsched.io.swfparse): the
obviously-correct twin of :func:`fastsched.io.swf.read_swf` and ``read_swf_fields``.

Lines are split by Python (``str.splitlines``, ``str.split``), numbers parsed by
``np.loadtxt`` and, when that fails, line by line with Python's ``float``, which also
names the bad line and field. The tests assert the fast reader gives the same tables,
skips and errors; benchmarks/test_bench_readers.py times both in one process.
"""
from __future__ import annotations

import io
import math

import numpy as np

from fastsched.io.swf import (SWF_FIELDS, SkippedJob, SWFFields, SWFTrace, _HEADER_RE,
                              _machine_size, _skip_reason, _user_index)
from fastsched.io.textfile import read_decompressed
from fastsched.model.errors import InputError
from fastsched.model.jobs import JobTable
from fastsched.model.validation import MAX_COUNT, MAX_SECONDS

_NFIELDS = 18
_COUNT_FIELDS = (1, 5, 8, 12)
_LIMITS = {1: 2**53, 12: 2**53, 5: MAX_COUNT, 8: MAX_COUNT,
           2: MAX_SECONDS, 4: MAX_SECONDS, 9: MAX_SECONDS}


def _read_text(path: str) -> str:
    return read_decompressed(path).decode("utf-8", errors="replace")


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
    header, header_lines, data, lineno = _split(_read_text(path))
    machine = _machine_size(procs, header, path)

    arr = _parse_block(data)
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
        arr = _slow_scan(data, lineno, path, machine, strict)

    keep = runnable_p & runnable_r
    skipped: list[SkippedJob] = []
    if not keep.all():
        for r in np.flatnonzero(~keep):
            skipped.append(SkippedJob(int(ids[r]), lineno[r],
                                      _skip_reason(int(nproc[r]), runtime[r], machine)))

    ids, submit, runtime, limit_raw, nproc, user = (
        a[keep] for a in (ids, submit, runtime, limit_raw, nproc, user))
    runtime = _round_time(runtime).astype(np.int64)
    limit_r = _round_time(limit_raw).astype(np.int64)
    limit = np.where(limit_r > 0, limit_r, np.maximum(runtime, 1))
    num_timeouts = int(np.count_nonzero(runtime > limit))

    order = np.lexsort((ids, submit))
    user = user[order]
    jobs = JobTable.from_arrays(
        job_id=ids[order], submit_time=submit[order], time_limit=limit[order],
        runtime=runtime[order], num_nodes=nproc[order], cpus_per_node=1,
        gpus_per_node=0, mem_per_node=0, partition=0, user=_user_index(user))
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
            m = _HEADER_RE.match(s)
            if m and m.group(1) not in header:
                header[m.group(1)] = m.group(2) or ""
            continue
        data.append(ln)
        lineno.append(i)
    return header, header_lines, data, lineno


def read_swf_fields(path) -> SWFFields:
    """The raw fields of an SWF trace (plain, ``.gz``, ``.xz`` or ``.bz2``), uninterpreted.

    For readers with their own conventions (e.g. :mod:`fastsched.tools.rlscheduler`).
    Only the form is checked: 18 finite numbers per line, else :class:`InputError`
    naming the line and field.
    """
    path = str(path)
    header, header_lines, data, lineno = _split(_read_text(path))
    arr = _parse_block(data)
    if arr is None:
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


def _parse_block(data: list[str]):
    """All data lines as an (n, 18) float array, or None if any line is malformed."""
    if not data:
        return np.empty((0, _NFIELDS))
    try:
        arr = np.loadtxt(io.StringIO("\n".join(data)), dtype=np.float64, comments=None,
                         ndmin=2)
    except ValueError:
        return None
    if arr.shape != (len(data), _NFIELDS) or not np.isfinite(arr).all():
        return None
    return arr


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
    if ok and len(np.unique(ids)) != len(ids):
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
