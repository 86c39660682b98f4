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
_ITEM = re.compile(r"^([a-z]+)(?::([0-9_*+:]+))?(?:\(([a-z]+)\))?$", re.I)
_JOB = re.compile(r"^(\d{1,18})(?:_(\d{1,9}|\*))?(?:\+(\d{1,9}))?$")


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
    """
    n = len(job_id)
    by_id = {int(j): k for k, j in enumerate(job_id.tolist())}
    tasks: dict[int, list[int]] = {}
    by_task: dict[tuple[int, int], int] = {}
    for k in np.flatnonzero(array_job >= 0).tolist():
        tasks.setdefault(int(array_job[k]), []).append(k)
        by_task[(int(array_job[k]), int(array_task[k]))] = k
    child, parent, kind = [], [], []
    replayed = np.ones(n, bool)
    inexact = outside = later = 0
    for k, dep in enumerate(parsed):
        if dep is None:
            continue
        ok = dep.exact
        inexact += not dep.exact
        for name, job, task in ([] if dep.any else dep.refs):
            if task == ALL_TASKS or (task < 0 and job in tasks):
                rows = tasks.get(job, [])
            else:
                row = by_id.get(job) if task < 0 else by_task.get((job, task))
                rows = [] if row is None else [row]
            if not rows:
                outside += 1
                ok = False
            for p in rows:
                if order_key[p] >= order_key[k]:
                    later += 1
                    ok = False
                elif name in DEPENDENCY_KINDS:
                    child.append(k)
                    parent.append(p)
                    kind.append(DEPENDENCY_KINDS[name])
        replayed[k] = ok
    _warn(path, int((~replayed).sum()), inexact, outside, later)
    if not child:
        return Dependencies.none(n), replayed
    return dependencies_from_edges(n, child, parent, kind), replayed


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
