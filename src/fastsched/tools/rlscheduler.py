"""Reproduce RLScheduler (SC'20) Tables V and VI: its heuristics, windows and metrics.

D. Zhang et al., "RLScheduler: an automated HPC batch job scheduler using reinforcement
learning", SC'20; code at github.com/DIR-LAB/deep-batch-scheduler. Its protocol, as
``compare-pick-jobs.py`` / ``compare-make-table.py`` run it (``run_policy``): from
gym's ``seeding.np_random(seed)`` (seed 1), draw 10 window starts with
``randint(1024, jobs - 1024 - 1)``; schedule each window of 1,024 jobs on an empty
cluster under each heuristic (``HPCEnv.schedule_curr_sequence_reset``: sort the queue
by the score, run the first, see :mod:`fastsched.tools.rlsim`); average each window's
metric (``job_score``, ``post_process_score``), then the windows.

Scores (lower first), as ``HPCEnv``'s ``*_score`` methods spell them, with n = procs,
r = requested time, s = submit time:

- FCFS: s; SJF: (r, s) -- fastsched's research orders (:data:`RESEARCH_ORDERS`);
- WFP3: -(w / r)^3 n and UNI: -(w + 1e-15) / (log2(n + 1e-15) r), with RLScheduler's
  wait w = scheduled_time - s, which for a queued job is -1 - s: WFP3 is fastsched's
  formula with that w, UNI is not fastsched's UNICEP (the 1e-15 terms put 1-processor
  jobs last);
- F1: log10(r) n + 870 log10(s), with log10(0.1) for s = 0 (fastsched's F1 takes
  log10(1)).

Since no score depends on the clock, a window's queue order is a stable sort by a
fixed key, as in RLScheduler's list.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..io.swf import bundled_trace, read_swf_fields
from ..model.errors import InputError
from ..policy.priority import RESEARCH_ORDERS
from .rlsim import RLJobs, RLWindow, columns

__all__ = ["POLICIES", "PUBLISHED", "RLTable", "trace_path", "read_rl_trace", "window_starts",
           "policy_keys", "schedule_window", "window_bsld", "window_utilisation",
           "reproduce"]

#: the paper's column order
POLICIES = ("FCFS", "WFP3", "UNI", "SJF", "F1")

#: the published cells: (trace, backfill) -> metric -> policy -> value as printed
#: (Table V: bsld; Table VI: utilisation, as the repository's README gives them)
PUBLISHED = {
    ("lublin_256", False): {
        "bsld": dict(zip(POLICIES, (7273.77, 19753.53, 22274.74, 277.35, 258.37))),
        "utilisation": dict(zip(POLICIES, (0.657, 0.747, 0.691, 0.762, 0.816)))},
    ("lublin_256", True): {
        "bsld": dict(zip(POLICIES, (235.82, 133.87, 307.23, 73.31, 75.07))),
        "utilisation": dict(zip(POLICIES, (0.868, 0.864, 0.883, 0.778, 0.840)))},
    ("lublin_256_new2", False): {
        "bsld": dict(zip(POLICIES, (7842.47, 9523.18, 11265.31, 787.89, 698.34))),
        "utilisation": dict(zip(POLICIES, (0.404, 0.543, 0.510, 0.562, 0.478)))},
    ("lublin_256_new2", True): {
        "bsld": dict(zip(POLICIES, (247.61, 318.35, 379.59, 91.99, 148.25))),
        "utilisation": dict(zip(POLICIES, (0.587, 0.583, 0.587, 0.593, 0.552)))},
}
#: digits after the point each metric is printed with
DIGITS = {"bsld": 2, "utilisation": 3}
_INT_FIELDS = (1, 2, 4, 5, 8, 9)


# --------------------------------------------------------------------------- the trace

def read_rl_trace(path) -> RLJobs:
    """A trace read as RLScheduler reads it (``job.Job``, ``job.Workloads``).

    Machine: ``MaxNodes`` nodes of ``MaxProcs / MaxNodes`` processors (``MaxProcs``
    defaults to ``MaxNodes``). Per job: procs = max(field 5, field 8); requested time =
    field 9, or the runtime where it is -1; a negative runtime counts as 10 s; jobs
    with a zero runtime are left out; jobs in job-number order. Raises
    :class:`InputError` for what RLScheduler cannot run (non-integral fields, no
    positive request, more processors than the machine).
    """
    raw = read_swf_fields(path)
    nodes, procs_total = _machine(raw.header, raw.path)
    f = raw.fields
    for k in _INT_FIELDS:
        bad = np.flatnonzero(f[:, k - 1] != np.floor(f[:, k - 1]))
        if len(bad):
            raise InputError(f"{f[bad[0], k - 1]!r} is not an integer", file=raw.path,
                             line=int(raw.lines[bad[0]]), field=str(k))
    a = f.astype(np.int64)
    run = np.where(a[:, 3] < 0, 10, a[:, 3])
    procs = np.maximum(a[:, 4], a[:, 7])
    request = np.where(a[:, 8] == -1, a[:, 3], a[:, 8])
    keep = run > 0
    _check_jobs(procs, request, keep, procs_total, raw)
    order = np.argsort(a[keep, 0], kind="stable")
    pick = np.flatnonzero(keep)[order]
    return RLJobs(raw.path, a[pick, 0], a[pick, 1], run[pick], request[pick], procs[pick],
                  nodes, procs_total, tuple(raw.header_lines))


def trace_path(text) -> Path:
    """``text`` as a path if the file exists, else the bundled trace of that name."""
    path = Path(str(text))
    if path.exists():
        return path
    try:
        return bundled_trace(str(text))
    except InputError:
        raise InputError("no such trace file, nor a bundled trace of that name",
                         file=str(text)) from None


def _machine(header: dict[str, str], path: str) -> tuple[int, int]:
    def value(key):
        try:
            return int(header.get(key, "").split()[0])
        except (ValueError, IndexError):
            return 0
    nodes, procs = value("MaxNodes"), value("MaxProcs")
    if nodes <= 0:
        raise InputError("RLScheduler's machine needs a positive MaxNodes header", file=path,
                         field="MaxNodes")
    return nodes, procs if procs > 0 else nodes


def _check_jobs(procs, request, keep, machine: int, raw) -> None:
    for what, bad, k in (("processors", (procs <= 0) | (procs > machine), "5"),
                         ("requested time", request <= 0, "9")):
        rows = np.flatnonzero(bad & keep)
        if len(rows):
            r = rows[0]
            value = procs[r] if k == "5" else request[r]
            raise InputError(f"job {int(raw.fields[r, 0])}: {what} {int(value)} cannot run "
                             f"(machine: {machine} processors)", file=raw.path,
                             line=int(raw.lines[r]), field=k)


# --------------------------------------------------------------------------- windows

def window_starts(num_jobs: int, *, seed: int = 1, windows: int = 10,
                  length: int = 1024) -> list[int]:
    """The window starts ``compare-pick-jobs.py`` draws: ``randint(length, num_jobs -
    length - 1)`` from gym's legacy ``seeding.np_random(seed)`` (a RandomState seeded
    with the first 8 bytes of SHA-512 of the seed's decimal digits, as 32-bit words)."""
    if not (isinstance(seed, int) and seed >= 0):
        raise InputError(f"seed must be a non-negative integer, got {seed!r}", field="seed")
    if num_jobs - length - 1 <= length:
        raise InputError(f"a trace of {num_jobs} jobs is too short for windows of {length}",
                         field="length")
    digest = hashlib.sha512(str(seed).encode()).digest()[:8]
    big = int.from_bytes(digest, "little")
    words = []
    while big > 0:
        big, word = divmod(big, 2**32)
        words.append(word)
    rng = np.random.RandomState()
    rng.seed(words or [0])
    return [int(rng.randint(length, num_jobs - length - 1)) for _ in range(windows)]


def policy_keys(jobs: RLJobs, policy: str) -> list:
    """Each job's sort key under RLScheduler's heuristic ``policy`` (lower first)."""
    r = jobs.request.astype(np.float64)
    n = jobs.procs.astype(np.float64)
    s = jobs.submit
    w = -1.0 - s                       # scheduled_time - submit of a queued job
    name = policy.upper()
    if name == "FCFS":
        return RESEARCH_ORDERS["FCFS"](r, n, s, w).tolist()
    if name == "SJF":
        return list(zip(RESEARCH_ORDERS["SJF"](r, n, s, w).tolist(), s.tolist()))
    if name == "WFP3":
        return RESEARCH_ORDERS["WFP3"](r, n, s, w).tolist()
    if name == "UNI":
        return (-(w + 1e-15) / (np.log2(n + 1e-15) * r)).tolist()
    if name == "F1":
        return (np.log10(r) * n + 870 * np.log10(np.where(s > 0, s, 0.1))).tolist()
    raise InputError(f"unknown RLScheduler policy {policy!r}; choose one of "
                     f"{', '.join(POLICIES)}", field="policy")


def schedule_window(jobs: RLJobs, start: int, length: int, keys: list, *,
                    backfill: bool, _columns=None) -> RLWindow:
    """A window scheduled to the end by a heuristic: the queue sorted (stably) by
    ``keys`` before each decision, its first job run."""
    win = RLWindow(jobs, start, length, backfill=backfill, _columns=_columns)
    key = keys.__getitem__
    while not win.done:
        win.queue.sort(key=key)
        win.run(win.queue[0])
    return win


# --------------------------------------------------------------------------- metrics

def window_bsld(win: RLWindow) -> float:
    """Mean bounded slowdown (tau = 10 s), summed in start order as RLScheduler sums."""
    n = win.stop - win.first
    total = 0
    for j, t in win.started:
        run = win.run_time[j]
        total += max(1.0, float(t - win.submit[j] + run) / max(run, 10)) / n
    return total


def window_utilisation(win: RLWindow, machine_procs: int) -> float:
    """Σ run·procs / ((last start - first submit) · machine procs)."""
    span = (win.now - win.submit[win.first]) * machine_procs
    total = 0
    for j, _ in win.started:
        total += -float(win.run_time[j] * win.procs[j]) / span
    return -total


# --------------------------------------------------------------------------- the tables

@dataclass
class RLTable:
    """Each policy's metrics on one trace, per window and averaged."""

    trace: str
    backfill: bool
    starts: list[int]
    length: int
    seed: int = 1
    per_window: dict[str, dict[str, list[float]]] = field(default_factory=dict)

    def mean(self, metric: str, policy: str) -> float:
        return float(np.mean(self.per_window[metric][policy]))

    @property
    def published(self) -> dict | None:
        """The paper's cells for this trace, if this is the paper's protocol."""
        if (self.seed, len(self.starts), self.length) != (1, 10, 1024):
            return None
        return PUBLISHED.get((_trace_name(self.trace), self.backfill))

    def rows(self) -> list[tuple[str, dict[str, float]]]:
        """(label, policy -> mean) per metric, then the paper's rows when it has them."""
        out = [(m, {p: self.mean(m, p) for p in POLICIES}) for m in DIGITS]
        paper = self.published
        if paper:
            out += [(f"{m} (paper)", paper[m]) for m in DIGITS]
        return out

    def format(self) -> str:
        head = (f"RLScheduler (SC'20) protocol: {Path(self.trace).name}, "
                f"{len(self.starts)} windows of {self.length:,} jobs, backfilling "
                f"{'on' if self.backfill else 'off'}\nwindow starts: "
                + ", ".join(map(str, self.starts)))
        lines = [f"{'':18}" + "".join(f"{p:>10}" for p in POLICIES)]
        for label, values in self.rows():
            d = DIGITS[label.split()[0]]
            lines.append(f"{label:18}" + "".join(f"{values[p]:>10.{d}f}" for p in POLICIES))
        return head + "\n\n" + "\n".join(lines)


def _trace_name(path: str) -> str:
    name = Path(path).name
    for ext in (".xz", ".gz", ".bz2", ".swf"):
        name = name.removesuffix(ext)
    return name


def reproduce(trace, *, backfill: bool, seed: int = 1, windows: int = 10,
              length: int = 1024) -> RLTable:
    """RLScheduler's comparison of its heuristics on a trace (path or :class:`RLJobs`)."""
    jobs = trace if isinstance(trace, RLJobs) else read_rl_trace(trace)
    starts = window_starts(len(jobs), seed=seed, windows=windows, length=length)
    table = RLTable(jobs.path, backfill, starts, length, seed,
                    {m: {p: [] for p in POLICIES} for m in DIGITS})
    cols = columns(jobs)
    for policy in POLICIES:
        keys = policy_keys(jobs, policy)
        for start in starts:
            win = schedule_window(jobs, start, length, keys, backfill=backfill,
                                  _columns=cols)
            table.per_window["bsld"][policy].append(window_bsld(win))
            table.per_window["utilisation"][policy].append(
                window_utilisation(win, jobs.machine_procs))
    return table

