"""From the parsed rows of a sacct dump to a :class:`~fastsched.io.sacct.SacctLog`:
node lists, job ids and attempts, partitions, per-node requests, the recorded
schedule and the workload (rules in :mod:`fastsched.io.sacct`)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..model.cluster import Cluster
from ..model.constraints import Dependencies, csr_take, dependencies_from_edges
from ..model.jobs import UNLIMITED, JobTable
from ..model.schedule import Schedule
from ..model.errors import InputError
from ..model.validation import request_capacity
from .hostindex import index_lists
from .hostlist import expand
from .sacctdeps import resolve_dependencies
from .sacctvalues import NO_VALUE, PARTITION_LIMIT
from .swf import SkippedJob
from .workload import DEFAULT_QOS, Workload

__all__ = ["SacctLog", "build_log"]


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


def _node_lists(rows, ran: np.ndarray, cluster: Cluster):
    """Per distinct NodeList: (code per row, bad, node count, CSR offsets and node
    indices); ran rows with an unknown node are reported and cleared from ``ran``.
    The simple shapes are resolved together (:mod:`fastsched.io.hostindex`), the
    rest one by one with :func:`~fastsched.io.hostlist.expand`."""
    codes, uniques = rows.codes("NodeList")
    used = np.zeros(len(uniques) + 1, bool)
    used[codes[ran]] = True
    wanted = [k for k in np.flatnonzero(used[:-1]).tolist()
              if uniques[k].strip() not in NO_VALUE]
    fast_off, fast_val, slow = index_lists(uniques, np.array(wanted, np.int64),
                                           cluster.node_names)
    index = {nm: k for k, nm in enumerate(cluster.node_names)} if len(slow) else {}
    bad_code = np.zeros(len(uniques), bool)
    lens = np.diff(fast_off)
    arrays = {}
    for k in slow.tolist():
        text = uniques[k]
        try:
            arrays[k] = np.array(sorted({index[h] for h in expand(text)}), np.int64)
            lens[k] = len(arrays[k])
            continue
        except KeyError as e:
            message = f"node {e.args[0]!r} is not a node of the cluster"
        except InputError as e:
            message = e.reason
        bad_code[k] = True
        for i in np.flatnonzero(ran & (codes == k)).tolist():
            rows.bad(rows.lines[i], "NodeList", message, rows.value("JobID", i))
    if not arrays:
        return codes, bad_code, lens, fast_off, fast_val
    u_off = np.concatenate(([0], np.cumsum(lens)))
    pieces = [arrays.get(k, fast_val[fast_off[k]:fast_off[k + 1]]) for k in range(len(lens))]
    return codes, bad_code, lens, u_off, np.concatenate(pieces + [np.zeros(0, np.int64)])


def _raw_ids(rows, ran: np.ndarray) -> np.ndarray:
    """The job id of each row: JobIDRaw, or the JobID's number where that is the id."""
    base, task, het, _ = rows.ids
    if not rows.has("JobIDRaw"):
        needs = ran & ((task >= 0) | (het > 0))
        for i in np.flatnonzero(needs).tolist():
            rows.bad(rows.lines[i], "JobIDRaw", "array tasks and het-job components need "
                     "the JobIDRaw field", rows.value("JobID", i))
        ran &= ~needs
        return base.copy()
    raw, ok = rows.digits("JobIDRaw", 18)
    for i in np.flatnonzero(ran & ~ok).tolist():
        rows.bad(rows.lines[i], "JobIDRaw", f"{rows.value('JobIDRaw', i)[:30]!r} is not a "
                 "job id", rows.value("JobID", i))
    ran &= ok
    return np.where(ok, raw, -1)


def _partitions(rows, ran: np.ndarray, cluster: Cluster):
    """Partition index per row (-1: left out, listed as skipped)."""
    names = [p.name for p in cluster.partitions]
    codes, uniques = rows.codes("Partition") if rows.has("Partition") else \
        (np.zeros(len(ran), np.int64), [""])
    lookup = np.full(len(uniques) + 1, -1, np.int64)
    for k, text in enumerate(uniques):
        name = text.split(",")[0].strip()
        if name in NO_VALUE:
            name = cluster.default_partition or ""
        lookup[k] = names.index(name) if name in names else -1
    part = lookup[codes]
    skipped = []
    for i in np.flatnonzero(ran & (part < 0)).tolist():
        text = rows.value("Partition", i) or "(none, and no default partition)"
        skipped.append(SkippedJob(int(rows.ids[0][i]), int(rows.lines[i]),
                                  f"partition {text!r} is not a partition of the cluster"))
    return part, skipped


def _per_node(total: np.ndarray, nodes: np.ndarray, empty: int) -> np.ndarray:
    n = np.maximum(nodes, 1)
    return np.where(total < 0, empty, -(-np.maximum(total, 0) // n))


def build_log(rows, cols: dict, ran: np.ndarray, cluster: Cluster):
    """The SacctLog of the rows (``ran``: rows that ran, before node and partition
    checks)."""
    ran = ran.copy()
    raw = _raw_ids(rows, ran)
    part, part_skipped = _partitions(rows, ran, cluster)
    rows.skipped.extend(part_skipped)
    ran &= part >= 0
    codes, bad_code, lens, u_off, u_val = _node_lists(rows, ran, cluster)
    r = np.flatnonzero(ran)
    codes = codes[r]
    nnodes = cols["nnodes"][r]
    count_ok = ~bad_code[codes] & (lens[codes] == nnodes) if len(r) else np.zeros(0, bool)
    for j in np.flatnonzero(~bad_code[codes] & ~count_ok).tolist() if len(r) else []:
        rows.bad(rows.lines[r[j]], "NNodes", f"NNodes is {nnodes[j]} but NodeList names "
                 f"{lens[codes[j]]} nodes", rows.value("JobID", int(r[j])))
    keep = count_ok
    r, codes = r[keep], codes[keep]
    offsets, idx = csr_take(u_off, codes)
    notes: list[str] = []
    req = _requests(cols, r, notes)
    limit = _limits(cols["limit"][r], part[r], cluster, notes)
    start, end = cols["Start"][r], cols["End"][r]
    elapsed = end - start
    over = elapsed > limit
    if over.any():
        notes.append(f"{int(over.sum()):,} run(s) lasted longer than their time limit "
                     "(OverTimeLimit/KillWait): checked with their elapsed time as limit")
    submit = np.where(cols["Submit"][r] >= 0, cols["Submit"][r], start)
    users, user_names = _names(rows, "User", r, "unknown")
    check_jobs = JobTable.from_arrays(
        job_id=raw[r], submit_time=submit, time_limit=np.maximum(limit, np.maximum(elapsed, 1)),
        runtime=elapsed, num_nodes=cols["nnodes"][r], cpus_per_node=req["cpus"],
        gpus_per_node=req["gpus"], mem_per_node=req["mem"], partition=part[r], user=users)
    schedule = Schedule(job_id=raw[r].copy(), start_time=start.copy(), end_time=end.copy(),
                        alloc_offsets=offsets, alloc_nodes=u_val[idx])
    attempt = _attempts(raw[r], start)
    base, task, het, _ = rows.ids
    if (het[r] >= 0).any():
        notes.append(f"{int((het[r] >= 0).sum()):,} het-job component(s) run as separate "
                     "jobs (components are not started together)")
    log = SacctLog(
        workload=None, jobs=check_jobs, schedule=schedule,
        job_text=rows.strings("JobID", r), attempt=attempt,
        state=cols["state"][r], exit_code=rows.values("ExitCode", r),
        gpu_type=req["type"], priority=_priority(rows)[r],
        reservation=rows.values("Reservation", r), dependency=rows.values("Dependency", r),
        het_job=np.where(het[r] >= 0, base[r], -1), line=rows.lines[r].copy(), notes=notes)
    log.workload = _workload(rows, cols, r, raw, part, limit, elapsed, attempt, req, cluster,
                             (user_names, users))
    return log


def _requests(cols: dict, r: np.ndarray, notes: list[str]) -> dict:
    ints, types = cols["tres"]
    nodes = cols["nnodes"][r]
    cpus, gpus, mem = ints[r, 1], ints[r, 2], ints[r, 3]
    uneven = (cpus > 0) & (cpus % np.maximum(nodes, 1) != 0)
    if uneven.any():
        notes.append(f"{int(uneven.sum()):,} multi-node job(s) hold CPUs unevenly across "
                     "their nodes: per-node CPUs rounded up")
    return {"cpus": _per_node(cpus, nodes, 1), "gpus": _per_node(gpus, nodes, 0),
            "mem": _per_node(mem, nodes, 0), "type": types[r]}


def _limits(limit: np.ndarray, part: np.ndarray, cluster: Cluster, notes) -> np.ndarray:
    """Seconds per row: Partition_Limit -> the partition's MaxTime; none -> unlimited."""
    out = limit.copy()
    maxima = np.array([UNLIMITED if p.max_time is None else p.max_time
                       for p in cluster.partitions], np.int64)
    by_part = limit == PARTITION_LIMIT
    out[by_part] = maxima[part[by_part]]
    if (limit == -1).any():
        notes.append(f"{int((limit == -1).sum()):,} job(s) without a Timelimit: unlimited")
    out[limit == -1] = UNLIMITED
    return out


def _attempts(raw: np.ndarray, start: np.ndarray) -> np.ndarray:
    """0, 1, ... per job id in start order (requeued runs of one job)."""
    order = np.lexsort((start, raw))
    sorted_raw = raw[order]
    first = np.r_[True, sorted_raw[1:] != sorted_raw[:-1]] if len(raw) else np.zeros(0, bool)
    group_start = np.maximum.accumulate(np.where(first, np.arange(len(raw)), 0))
    attempt = np.empty(len(raw), np.int32)
    attempt[order] = np.arange(len(raw)) - group_start
    return attempt


def _names(rows, name: str, r: np.ndarray, empty: str):
    """(int32 codes, sorted names) of ``rows`` of a column, empty values named ``empty``
    (every distinct text of the column is named, used by these rows or not)."""
    if not rows.has(name):
        return np.zeros(len(r), np.int32), [empty]
    codes, uniques = rows.codes(name)
    texts = [empty if u.strip() in NO_VALUE else u.strip() for u in uniques]
    names = sorted(set(texts))
    rank = {t: k for k, t in enumerate(names)}
    position = np.array([rank[t] for t in texts] + [0], np.int32)
    return position[codes[r]], names


def _priority(rows) -> np.ndarray:
    """Priority per row as float64, NaN where the dump has none."""
    value, ok = rows.digits("Priority", 15)
    return np.where(ok, value.astype(np.float64), np.nan)


def _workload(rows, cols, r, raw, part, limit, elapsed, attempt, req, cluster, users):
    """One job per job id (its last attempt), submitted when its first became eligible."""
    ids = raw[r]
    order = np.lexsort((attempt, ids))
    last = order[np.r_[ids[order][1:] != ids[order][:-1], True]] if len(ids) else order
    first = order[np.r_[True, ids[order][1:] != ids[order][:-1]]] if len(ids) else order
    submit = np.where(cols["Submit"][r] >= 0, cols["Submit"][r], cols["Start"][r])
    eligible = cols["Eligible"][r]
    when = np.maximum(submit[first], eligible[first])
    jobs = JobTable.from_arrays(
        job_id=ids[last], submit_time=when, time_limit=limit[last], runtime=elapsed[last],
        num_nodes=cols["nnodes"][r][last], cpus_per_node=req["cpus"][last],
        gpus_per_node=req["gpus"][last], mem_per_node=req["mem"][last],
        partition=part[r][last], user=users[1][last])
    fits = _fits(jobs, cluster)
    for j in np.flatnonzero(~fits).tolist():
        rows.skipped.append(SkippedJob(int(jobs.job_id[j]), int(rows.lines[r[last[j]]]),
                                       "cannot run on this cluster as configured (no "
                                       "partition nodes hold its per-node request)"))
    rows_kept = last[fits]
    jobs = jobs.take(np.flatnonzero(fits))
    base, task, _, _ = rows.ids
    is_task = task[r][rows_kept] >= 0
    array_job = np.where(is_task, base[r][rows_kept], -1)
    array_task = np.where(is_task, task[r][rows_kept], -1)
    deps, jobs = _replayed_dependencies(rows, cols, r, rows_kept, submit[first[fits]], jobs,
                                        array_job, array_task)
    sort = np.lexsort((jobs.job_id, jobs.submit_time))
    jobs, rows_kept = jobs.take(sort), rows_kept[sort]
    account, account_names = _names(rows, "Account", r[rows_kept], "unknown")
    qos, qos_names = _names(rows, "QOS", r[rows_kept], DEFAULT_QOS)
    return Workload(jobs, account, users[0], account_names,
                    np.arange(len(account_names), dtype=np.int32), list(account_names),
                    qos=qos, qos_names=qos_names, array_job=array_job[sort],
                    array_task=array_task[sort], dependencies=_permuted(deps, sort),
                    gpu_type=req["type"][rows_kept],
                    reservation=_reservations(rows, r[rows_kept]))


def _reservations(rows, r: np.ndarray) -> np.ndarray:
    """The Reservation of rows ``r`` ("": none, as sacct's ``(null)`` and the like),
    each distinct text cleaned once."""
    if not rows.has("Reservation"):
        return np.full(len(r), "", dtype=object)
    codes, uniques = rows.codes("Reservation")
    texts = ["" if u.strip() in NO_VALUE else u.strip() for u in uniques]
    return np.array(texts + [""], dtype=object)[codes[r]]


def _replayed_dependencies(rows, cols, r, kept, submit, jobs, array_job, array_task):
    """(Dependencies of ``jobs``, ``jobs`` with the submit time of each job whose
    dependencies are all replayed set back to its Submit; rules in io.sacctdeps)."""
    codes, parsed = cols["deps"]
    if all(d is None for d in parsed):
        return Dependencies.none(len(jobs)), jobs
    per_job = [parsed[c] for c in codes[r[kept]].tolist()]
    if not any(d is not None for d in per_job):
        return Dependencies.none(len(jobs)), jobs
    key = np.empty(len(jobs), np.int64)
    key[np.lexsort((jobs.job_id, submit))] = np.arange(len(jobs))
    deps, replayed = resolve_dependencies(per_job, jobs.job_id, array_job, array_task, key,
                                          rows.fname)
    has = np.array([d is not None for d in per_job], bool)
    when = np.where(has & replayed, submit, jobs.submit_time)
    return deps, JobTable.from_arrays(**{**jobs.to_dict(), "submit_time": when})


def _permuted(deps: Dependencies, order: np.ndarray) -> Dependencies:
    """``deps`` of the jobs taken in ``order`` (new row k = old row order[k])."""
    if not len(deps.parent):
        return deps
    new = np.empty(len(order), np.int64)
    new[order] = np.arange(len(order))
    child = np.repeat(np.arange(len(order)), np.diff(deps.offsets))
    return dependencies_from_edges(len(order), new[child], new[deps.parent], deps.kind)


def _fits(jobs: JobTable, cluster: Cluster) -> np.ndarray:
    cap = request_capacity([p.nodes for p in cluster.partitions], jobs.partition,
                           jobs.gpus_per_node, jobs.cpus_per_node, jobs.mem_per_node, cluster)
    return jobs.num_nodes <= cap
