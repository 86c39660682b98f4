"""A sacct dump's ``Dependency`` column -> the workload's dependencies.

The values are read as slurmctld prints a job's dependency list (job_scheduler.c,
``_depend_list2str``, the text of ``squeue --format=%E`` and ``scontrol show job``):
items ``type:job[_task|_*][+minutes](state)`` or ``singleton(state)``, joined by
``,`` (all must hold) or ``?`` (any one suffices). ``job_*`` is every task of array
``job``; a bare array job id is also every task (Slurm's meaning); ``(unfulfilled)``,
``(failed)``, ``(fulfilled)`` give the state when the value was taken and are
ignored. Several ids after one type (``afterok:12:13``, as sbatch takes them) are
accepted too. (Slurm's own sacct has no Dependency field: the column comes from a
dump joined with squeue/scontrol output; empty, ``None`` and ``(null)`` mean none.)

Replayed (module :mod:`fastsched.io.sacct` rules):

* ``after``, ``afterany``, ``afterok``, ``afternotok`` joined by ``,`` on jobs of the
  dump become edges; such a job is submitted at its Submit time (not its Eligible
  time: the wait for its parents is replayed, not copied).
* A job with a dependency the engine cannot express (``?``, ``+minutes``,
  ``singleton``, ``aftercorr``, ``afterburstbuffer``, ``expand``), or on a job not in
  the workload (outside the dump, never ran, left out), or on a job not submitted
  before it, keeps its Eligible time as submit time (its recorded wait for the
  parents); the ``,``-joined edges that do resolve are kept (a ``?`` list gives
  none: no one reference is required). A
  :class:`~fastsched.model.errors.ConfigWarning` counts these jobs and references.
"""
from __future__ import annotations

import re
import warnings

import numpy as np

from ..model.constraints import DEPENDENCY_KINDS, Dependencies, dependencies_from_edges
from ..model.errors import ConfigWarning, InputError
from .sacctvalues import NO_VALUE

__all__ = ["parse_recorded_dependency", "RecordedDependency", "resolve_dependencies",
           "ALL_TASKS"]

#: the task of ``job_*``: every task of the array
ALL_TASKS = -2
_KINDS = ("after", "afterany", "afterok", "afternotok", "aftercorr", "afterburstbuffer",
          "expand", "singleton")
_ONE = re.compile(r"^(after|afterany|afterok|afternotok):(\d{1,10})(?:_(\d{1,7}|\*))?"
                  r"(?:\([a-z]+\))?$", re.I)
_ITEM = re.compile(r"^([a-z]+)(?::([0-9_*+:]+))?(?:\(([a-z]+)\))?$", re.I)
#: task indexes per array job id in a combined (job, task) key (Slurm's MaxArraySize is
#: at most 4,000,001)
_TASKS = 1 << 23
_JOB = re.compile(r"^(\d{1,10})(?:_(\d{1,7}|\*))?(?:\+(\d{1,9}))?$")   # uint32 ids


class RecordedDependency:
    """A parsed value: ``refs`` (kind, job, task: -1 none, :data:`ALL_TASKS`),
    ``exact`` (the engine can replay all of it) and ``any`` (joined by ``?``: one
    suffices, so no single reference is required)."""

    __slots__ = ("refs", "exact", "any")

    def __init__(self, refs: list, exact: bool, any_: bool = False):
        self.refs = refs
        self.exact = exact
        self.any = any_


def parse_recorded_dependency(text: str) -> RecordedDependency | None:
    """A Dependency value (module docs) or None for no value; InputError (without
    location) when malformed."""
    text = text.strip()
    if text in NO_VALUE or text.lower() == "(null)":
        return None
    one = _ONE.match(text)
    if one:                                      # the common case: one plain reference
        task = one.group(3)
        task = -1 if task is None else ALL_TASKS if task == "*" else int(task)
        return RecordedDependency([(one.group(1).lower(), int(one.group(2)), task)], True)
    exact = "?" not in text
    refs = []
    for item in re.split(r"[,?]", text):
        m = _ITEM.match(item.strip())
        if not m or m.group(1).lower() not in _KINDS:
            raise InputError(f"{item[:40]!r} is not a dependency (type:job[_task][(state)])")
        kind, ids = m.group(1).lower(), m.group(2)
        if kind == "singleton":
            if ids:
                raise InputError(f"{item[:40]!r}: singleton takes no job id")
            exact = False
            continue
        if not ids:
            raise InputError(f"{item[:40]!r}: {kind} needs a job id")
        exact &= kind in DEPENDENCY_KINDS
        for one in ids.split(":"):
            j = _JOB.match(one)
            if not j:
                raise InputError(f"{one[:40]!r} in {item[:40]!r} is not a job id "
                                 "(job, job_task, job_*)")
            exact &= j.group(3) is None
            task = -1 if j.group(2) is None else ALL_TASKS if j.group(2) == "*" \
                else int(j.group(2))
            refs.append((kind, int(j.group(1)), task))
    return RecordedDependency(refs, exact, "?" in text)


def resolve_dependencies(parsed: list, job_id: np.ndarray, array_job: np.ndarray,
                         array_task: np.ndarray, order_key: np.ndarray, path: str):
    """(Dependencies of the jobs, bool per job: every dependency it has is replayed).

    ``parsed``: per job, its :class:`RecordedDependency` or None; ``order_key``: int64
    per job, smaller = submitted earlier (ties never occur: it includes the job id).
    Vectorised over the references (a Python loop only gathers them).
    """
    n = len(job_id)
    has = np.array([d is not None for d in parsed], bool)
    exact = np.array([d is None or d.exact for d in parsed], bool)
    refs = [(k, DEPENDENCY_KINDS.get(name, -1), job, task) for k, d in enumerate(parsed)
            if d is not None and not d.any for name, job, task in d.refs]
    child, code, job, task = (np.array(c, np.int64) for c in zip(*refs)) if refs else \
        (np.zeros(0, np.int64),) * 4
    ref, parent = _parents(job, task, job_id, array_job, array_task)
    found = np.bincount(ref, minlength=len(child)) > 0
    c, k = child[ref], code[ref]
    early = order_key[parent] < order_key[c]
    bad = np.zeros(n, bool)
    bad[child[~found]] = True
    bad[c[~early]] = True
    replayed = ~has | (exact & ~bad)
    _warn(path, int((~replayed).sum()), int((~exact).sum()), int((~found).sum()),
          int((~early).sum()))
    edge = early & (k >= 0)
    if not edge.any():
        return Dependencies.none(n), replayed
    return dependencies_from_edges(n, c[edge], parent[edge], k[edge]), replayed


def _parents(job, task, job_id, array_job, array_task):
    """(reference index, parent row) pairs: each reference's jobs in the workload (a
    job id; every task of an array for ``job_*`` or a bare array job id; one task)."""
    by_id = np.argsort(job_id, kind="stable")
    tasks = np.flatnonzero(array_job >= 0)
    tasks = tasks[np.lexsort((array_task[tasks], array_job[tasks]))]
    base = array_job[tasks]
    lo, hi = np.searchsorted(base, job, "left"), np.searchsorted(base, job, "right")
    whole = (task == ALL_TASKS) | ((task < 0) & (hi > lo))
    plain = (task < 0) & ~whole
    one = task >= 0
    pairs = []
    pos = np.searchsorted(job_id[by_id], job[plain])
    pos = np.minimum(pos, max(len(by_id) - 1, 0))
    hit = (job_id[by_id[pos]] == job[plain]) if len(by_id) else np.zeros(0, bool)
    pairs.append((np.flatnonzero(plain)[hit], by_id[pos[hit]]))
    count = np.where(whole, hi - lo, 0)
    owner = np.repeat(np.arange(len(job)), count)
    start = np.repeat(lo - np.r_[0, np.cumsum(count)[:-1]], count) if len(job) else owner
    pairs.append((owner, tasks[start + np.arange(len(owner))]))
    key = base * _TASKS + array_task[tasks]
    want = job[one] * _TASKS + task[one]
    at = np.minimum(np.searchsorted(key, want), max(len(key) - 1, 0))
    hit = (key[at] == want) if len(key) else np.zeros(0, bool)
    pairs.append((np.flatnonzero(one)[hit], tasks[at[hit]]))
    return (np.concatenate([p[0] for p in pairs]).astype(np.int64),
            np.concatenate([p[1] for p in pairs]).astype(np.int64))


def _warn(path: str, jobs: int, inexact: int, outside: int, later: int) -> None:
    if not jobs:
        return
    why = [f"{inexact:,} with a dependency the engine cannot express (?, +minutes, "
           "singleton, aftercorr, ...)" if inexact else "",
           f"{outside:,} reference(s) to jobs outside the dump (or left out)" if outside
           else "", f"{later:,} reference(s) to jobs not submitted before them" if later
           else ""]
    warnings.warn(ConfigWarning(
        f"{path}: {jobs:,} job(s) keep their recorded Eligible time instead of replaying "
        f"their dependencies: " + "; ".join(w for w in why if w)), stacklevel=4)
