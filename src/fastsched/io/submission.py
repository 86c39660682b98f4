"""Submitted rows -> jobs and engine constraints: ``--array``, ``--dependency``, partition lists.

A workload arrives as submitted *rows* (a line of a workload CSV, or one
``sbatch`` request). :func:`build_jobs` expands each array row into its tasks,
sorts the jobs by ``(submit_time, job_id)`` and builds the engine-level
:mod:`~fastsched.model.constraints` structures. The CSV reader and
``requests_to_workload`` both go through it, so both mean the same thing.

Array task job ids follow Slurm's numbering: ``sbatch --array=1-3`` answered
"Submitted batch job 36" runs jobs 36, 37 and 38. The task at position ``p``
(0, 1, ... in increasing task index) of a row with job id ``J`` gets job id
``J + p``, ``array_job = J`` and ``array_task`` = its index; every job id must
still be unique (a clash is an InputError naming the array row).

Dependencies name jobs as Slurm does: ``J`` is job J, or every task of array J
when J is an array job id; ``J_T`` is task T of array J. A job may depend only
on jobs submitted before it (earlier ``(submit_time, job_id)``): in Slurm the
job must exist at submission. This also rules out cycles. Supported types are
``after``, ``afterany``, ``afterok`` and ``afternotok`` joined by ``,`` (all
must hold), and ``singleton``. Rejected with an InputError because the engine
cannot express them exactly: ``?`` (any one suffices), ``after:J+minutes``
(a delay), ``aftercorr`` and ``afterburstbuffer``.

``singleton``: the job waits until every earlier-submitted job with the same
name and user has ended (``afterany``). The edges go to those jobs back to,
and including, the latest earlier singleton job of the group: that one cannot
end before it started, nor start before every job before it ended, so the
smaller edge set means the same and stays linear in the number of jobs.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..model.constraints import (AFTERANY, DEPENDENCY_KINDS, PartitionChoices, array_limit_groups,
                          csr_take, dependencies_from_edges)
from ..model.errors import InputError

__all__ = ["build_jobs", "singleton_edges"]

#: where(row) -> (file, line) of a submitted row, for error messages
Where = Callable[[int], tuple]


def _fail(message: str, where: Where, row: int, field: str) -> InputError:
    file, line = where(int(row))
    return InputError(message, file=file, line=line, field=field)


def _spread(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(owner, position): entry k of a run-length layout belongs to run owner[k] at
    position[k] within it (``np.repeat`` without a Python loop)."""
    counts = np.asarray(counts, dtype=np.int64)
    starts = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    owner = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    return owner, np.arange(len(owner), dtype=np.int64) - starts[owner]


# --------------------------------------------------------------------------- arrays

def _expand(row_job_id, arrays: dict, tasks, where: Where):
    """(src row per job or None for identity, job_id, array_job, array_task, throttle).

    ``arrays``: row -> (task indexes, %max or None) for rows with ``--array``;
    ``tasks``: (array_job, array_task, throttle) per row when rows are already
    single tasks (the form write_workload writes), else None.
    """
    m = len(row_job_id)
    if not arrays and tasks is None:        # no arrays: nothing to allocate
        return None, np.asarray(row_job_id, dtype=np.int64), None, None, None
    if tasks is not None:
        array_job, array_task, throttle = (np.asarray(a, dtype=np.int64) for a in tasks)
        if arrays:
            both = [r for r in arrays if array_job[r] >= 0]
            if both:
                raise _fail("a row cannot have both an array spec and an array_job_id",
                            where, min(both), "array")
    else:
        array_job = np.full(m, -1, dtype=np.int64)
        array_task = np.full(m, -1, dtype=np.int64)
        throttle = np.zeros(m, dtype=np.int64)
    if not arrays:
        return None, np.asarray(row_job_id, dtype=np.int64), array_job, array_task, throttle
    rows = np.array(sorted(arrays), dtype=np.int64)
    rep = np.ones(m, dtype=np.int64)
    rep[rows] = [len(arrays[r][0]) for r in rows.tolist()]
    src, pos = _spread(rep)
    job_id = np.asarray(row_job_id, dtype=np.int64)[src] + pos
    array_job, array_task, throttle = array_job[src], array_task[src], throttle[src]
    is_task = np.isin(src, rows)
    array_job[is_task] = np.asarray(row_job_id, dtype=np.int64)[src[is_task]]
    array_task[is_task] = np.concatenate([np.asarray(arrays[r][0], dtype=np.int64)
                                          for r in rows.tolist()])
    throttle[is_task] = np.repeat([arrays[r][1] or 0 for r in rows.tolist()], rep[rows])
    return src, job_id, array_job, array_task, throttle


def _check_unique(job_id, src, arrays, where: Where) -> np.ndarray:
    """Stable argsort of job ids; InputError at the second row holding an id."""
    by_id = np.argsort(job_id, kind="stable")
    dup = np.flatnonzero(job_id[by_id][1:] == job_id[by_id][:-1])
    if len(dup):
        rows = [int(by_id[k]) if src is None else int(src[by_id[k]]) for k in (dup[0], dup[0] + 1)]
        i = int(by_id[dup[0] + 1])
        if any(r in arrays for r in rows):
            raise _fail(f"job id {job_id[i]} appears more than once (array task ids are the "
                        "array row's job_id + task position)", where, rows[1], "job_id")
        raise _fail(f"job id {job_id[i]} appears more than once", where, rows[1], "job_id")
    return by_id


def _check_array_ids(job_id, array_job, array_task, throttle, src, where: Where) -> None:
    """Each (array job id, task index) once, one %max per array, and no job outside
    array J has job id J (``J`` in a dependency means the whole array)."""
    tasks = np.flatnonzero(array_job >= 0)
    if not len(tasks):
        return
    row = (lambda i: int(i)) if src is None else (lambda i: int(src[i]))
    tasks = tasks[np.lexsort((array_task[tasks], array_job[tasks]))]
    same_array = array_job[tasks][1:] == array_job[tasks][:-1]
    for bad, what, field in (
            (same_array & (array_task[tasks][1:] == array_task[tasks][:-1]),
             "task {t} of array {a} appears more than once", "array_task_id"),
            (same_array & (throttle[tasks][1:] != throttle[tasks][:-1]),
             "tasks of array {a} have different array_task_throttle", "array_task_throttle")):
        if bad.any():
            i = tasks[np.flatnonzero(bad)[0] + 1]
            raise _fail(what.format(t=array_task[i], a=array_job[i]), where, row(i), field)
    clash = np.flatnonzero((array_job < 0) & np.isin(job_id, array_job[tasks]))
    if len(clash):
        raise _fail(f"job id {job_id[clash[0]]} is also an array job id", where,
                    row(clash[0]), "job_id")


# --------------------------------------------------------------------------- dependencies

def _parse_refs(dependency: dict, where: Where):
    """Flatten row -> (items, mode) into reference arrays and the singleton rows."""
    ref_row, ref_kind, ref_job, ref_task, ref_text, singles = [], [], [], [], [], []
    for row in sorted(dependency):
        items, mode = dependency[row]
        if mode != "all":
            raise _fail("'?' (any one dependency suffices) is not supported: the engine "
                        "needs every dependency to hold; use ','", where, row, "dependency")
        for kind, ids in items:
            if kind == "singleton":
                singles.append(row)
                continue
            if kind not in DEPENDENCY_KINDS:
                raise _fail(f"dependency type {kind!r} is not modelled; supported: "
                            + ", ".join(DEPENDENCY_KINDS) + ", singleton",
                            where, row, "dependency")
            for tok in ids:
                if "+" in tok:
                    raise _fail(f"{kind}:{tok}: a '+minutes' delay is not supported",
                                where, row, "dependency")
                job, _, task = tok.partition("_")
                ref_row.append(row)
                ref_kind.append(DEPENDENCY_KINDS[kind])
                ref_job.append(int(job))
                ref_task.append(int(task) if task else -1)
                ref_text.append(tok)
    return (np.array(ref_row, dtype=np.int64), np.array(ref_kind, dtype=np.int8),
            np.array(ref_job, dtype=np.int64), np.array(ref_task, dtype=np.int64), ref_text,
            np.array(sorted(set(singles)), dtype=np.int64))


def _lookup(ref_job, ref_task, ref_row, ref_text, job_id, by_id, array_job, array_task,
            where: Where):
    """(reference index, parent job) pairs: a job id, every task of an array, or one task."""
    tasks = np.flatnonzero(array_job >= 0)
    tasks = tasks[np.lexsort((array_task[tasks], array_job[tasks]))]
    arrays, a_start, a_count = np.unique(array_job[tasks], return_index=True,
                                         return_counts=True)
    k = np.minimum(np.searchsorted(arrays, ref_job), max(len(arrays) - 1, 0))
    in_array = (k < len(arrays)) & (arrays[k] == ref_job) if len(arrays) else \
        np.zeros(len(ref_job), dtype=bool)
    ids_sorted = job_id[by_id]
    p = np.minimum(np.searchsorted(ids_sorted, ref_job), len(ids_sorted) - 1)
    is_job = ids_sorted[p] == ref_job
    plain = ref_task < 0
    unknown = (plain & ~in_array & ~is_job) | (~plain & ~in_array)
    out_ref, out_parent = [], []
    # a plain id that is a job (and not an array job id): that job
    single = np.flatnonzero(plain & ~in_array & is_job)
    out_ref.append(single)
    out_parent.append(by_id[p[single]])
    # a plain array job id: every task of the array
    whole = np.flatnonzero(plain & in_array)
    owner, pos = _spread(a_count[k[whole]])
    out_ref.append(whole[owner])
    out_parent.append(tasks[a_start[k[whole]][owner] + pos])
    # J_T: one task, searched within array J's tasks (sorted by task index)
    for r in np.flatnonzero(~plain & in_array).tolist():
        lo = a_start[k[r]]
        hi = lo + a_count[k[r]]
        t = lo + int(np.searchsorted(array_task[tasks[lo:hi]], ref_task[r]))
        if t < hi and array_task[tasks[t]] == ref_task[r]:
            out_ref.append(np.array([r]))
            out_parent.append(tasks[t:t + 1])
        else:
            unknown[r] = True
    if unknown.any():
        r = int(np.flatnonzero(unknown)[0])
        raise _fail(f"unknown job id {ref_text[r]!r} in dependency (no such job or array "
                    "task in this workload)", where, ref_row[r], "dependency")
    return np.concatenate(out_ref).astype(np.int64), np.concatenate(out_parent).astype(np.int64)


def singleton_edges(key: np.ndarray, singleton: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(child, parent) afterany edges for ``--dependency=singleton``, jobs in submit order.

    ``key`` (int64 per job) is equal for jobs with the same user and name;
    ``singleton`` (bool per job) marks the singleton jobs. Each singleton job
    gets an edge to every earlier job of its group back to, and including, the
    group's previous singleton job (see the module docstring for why that is
    enough). Linear: each job is a parent of at most two singleton jobs.
    """
    n = len(key)
    idx = np.lexsort((np.arange(n), key))
    k, s = key[idx], np.asarray(singleton, dtype=bool)[idx]
    pos = np.arange(n, dtype=np.int64)
    new_group = np.ones(n, dtype=bool)
    new_group[1:] = k[1:] != k[:-1]
    group_start = np.maximum.accumulate(np.where(new_group, pos, 0))
    last = np.maximum.accumulate(np.where(s, pos, -1))
    prev_single = np.concatenate(([-1], last[:-1]))
    first = np.maximum(prev_single, group_start)
    q = np.flatnonzero(s)
    owner, off = _spread(q - first[q])
    return idx[q[owner]], idx[first[q][owner] + off]


def _dependencies(dependency, src, rep_start, rep, order, rank, job_id, by_id, array_job,
                  array_task, user, name, where: Where):
    n = len(job_id)
    ref_row, ref_kind, ref_job, ref_task, ref_text, singles = _parse_refs(dependency, where)
    ref, parent = _lookup(ref_job, ref_task, ref_row, ref_text, job_id, by_id, array_job,
                          array_task, where)
    # every job (array task) of the referring row gets the row's edges
    row = ref_row[ref]
    owner, pos = _spread(rep[row])
    child = rank[rep_start[row][owner] + pos]
    parent = rank[parent[owner]]
    kind = ref_kind[ref][owner]
    bad = parent >= child
    if bad.any():
        e = int(np.flatnonzero(bad)[np.argmin(row[owner][bad])])
        c, p = int(order[child[e]]), int(order[parent[e]])
        msg = (f"job {job_id[c]} depends on itself" if c == p else
               f"job {job_id[c]} depends on job {job_id[p]}, which is submitted after it; "
               "Slurm accepts dependencies only on jobs that already exist")
        raise _fail(msg, where, row[owner][e], "dependency")
    if len(singles):
        is_single = np.zeros(len(rep), dtype=bool)
        is_single[singles] = True
        flag = is_single[order if src is None else src[order]]
        names = np.asarray(name, dtype=object)[order]
        _, codes = np.unique(names.astype(str), return_inverse=True)
        key = user[order].astype(np.int64) * (int(codes.max()) + 1 if n else 1) + codes
        sc, sp = singleton_edges(key, flag)
        child = np.concatenate([child, sc])
        parent = np.concatenate([parent, sp])
        kind = np.concatenate([kind, np.full(len(sc), AFTERANY, dtype=np.int8)])
    return dependencies_from_edges(n, child, parent, kind)


# --------------------------------------------------------------------------- build

def build_jobs(cols: dict, partitions: PartitionChoices, per_row: dict, *,
               dependency: dict, arrays: dict, tasks, where: Where) -> dict:
    """Expand, check and sort submitted rows into jobs.

    ``cols``: int64 arrays per row (``job_id``, ``submit_time`` and the other
    JobTable resource columns); ``partitions``: each row's partition list;
    ``per_row``: other per-row arrays (``user``, ``account``, ``qos``, ``name``)
    copied to every task; ``dependency``: row -> (parsed items, mode) from
    :func:`fastsched.io.sbatch.parse_dependency`; ``arrays``: row -> (task indexes,
    %max or None) from :func:`fastsched.io.sbatch.parse_array`; ``tasks``:
    (array_job, array_task, throttle) per row, or None. Returns job-level
    arrays in submit order plus ``partitions``, ``dependencies``, ``limits``,
    ``array_job`` and ``array_task`` (None where the Workload default applies).
    """
    src, job_id, array_job, array_task, throttle = _expand(cols["job_id"], arrays, tasks,
                                                           where)
    by_id = _check_unique(job_id, src, arrays, where)
    if array_job is not None:
        _check_array_ids(job_id, array_job, array_task, throttle, src, where)
    take = (lambda a: a) if src is None else (lambda a: a[src])
    submit = take(cols["submit_time"])
    order = np.lexsort((job_id, submit))
    out = {c: take(v)[order] for c, v in cols.items() if c != "job_id"}
    out["job_id"] = job_id[order]
    for c, v in per_row.items():
        out[c] = take(v)[order]
    rows = order if src is None else src[order]
    if len(partitions.partition) == len(partitions):   # one partition per row: no CSR work
        out["partition"] = partitions.partition[rows]
        out["partitions"] = None                        # the Workload default
    else:
        offsets, index = csr_take(partitions.offsets, rows)
        out["partitions"] = PartitionChoices(offsets, partitions.partition[index])
        out["partition"] = out["partitions"].partition[offsets[:-1]]
    n = len(job_id)
    if dependency:
        m = len(cols["job_id"])
        rep = np.ones(m, dtype=np.int64) if src is None else np.bincount(src, minlength=m)
        rep_start = np.zeros(m, dtype=np.int64)
        np.cumsum(rep[:-1], out=rep_start[1:])
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n)
        name = per_row.get("name")
        name = np.full(m, "", dtype=object) if name is None else name
        if array_job is None:
            array_job = array_task = np.full(n, -1, dtype=np.int64)
        out["dependencies"] = _dependencies(dependency, src, rep_start, rep, order, rank,
                                            job_id, by_id, array_job, array_task,
                                            take(per_row["user"]), take(name), where)
    else:
        out["dependencies"] = None
    out["array_job"] = out["array_task"] = out["limits"] = None   # the defaults: no arrays
    if arrays or tasks is not None:
        out["array_job"] = array_job[order]
        out["array_task"] = array_task[order]
        if (throttle > 0).any():
            out["limits"] = array_limit_groups(out["array_job"], throttle[order])
    return out
