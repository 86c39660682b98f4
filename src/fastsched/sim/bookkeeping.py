"""The Scheduler's per-job bookkeeping: every job it will see (:class:`Catalog`), the
queue order's priorities (:class:`QueuePriority`) and the state of the constraints
(:class:`ConstraintState`: dependencies, limits, partition choices, placement)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engine import Progress, check_node_jobs
from ..engine.inputs import _partition_nodes, _placement, _unique_rank
from ..model.constraints import (AFTER, AFTERNOTOK, AFTEROK, Dependencies, LimitGroups,
                                 PartitionChoices, Placement, check_covers, csr_take)
from ..model.errors import InputError
from ..model.jobs import JOB_FIELDS, JobTable
from ..model.validation import request_capacity

#: a catalog row's status
UNSEEN, WAITING, QUEUED, RUNNING, ENDED, REJECTED = range(6)
#: a dependency edge's kind once spent (an ``after`` edge of a requeued job)
SPENT = -1


class Catalog:
    """Every job the scheduler knows, one row each (rows never move): the request,
    its status and its times (-1: not yet). A scheduler given ``jobs`` knows them
    all from the start; otherwise rows are appended as jobs are submitted, in a
    store that doubles when full (submitting one job at a time stays linear)."""

    _EXTRA = {"status": np.int8, "start": np.int64, "end": np.int64, "eligible": np.int64}

    def __init__(self, jobs: JobTable, *, fixed: bool):
        self.fixed = fixed
        self.n = len(jobs)
        self._cols = {name: np.array(getattr(jobs, name)) for name in JOB_FIELDS}
        self._cols.update({name: np.full(self.n, UNSEEN if name == "status" else -1, dtype)
                           for name, dtype in self._EXTRA.items()})
        if fixed:
            self._by_id = np.argsort(jobs.job_id, kind="stable")
            dup = first_duplicate(jobs.job_id)
            if dup is not None:
                raise InputError(f"job id {dup} appears twice in jobs", field="job_id")

    # per row (views: writes go to the store)
    status = property(lambda self: self._cols["status"][:self.n])
    start = property(lambda self: self._cols["start"][:self.n])
    end = property(lambda self: self._cols["end"][:self.n])
    eligible = property(lambda self: self._cols["eligible"][:self.n])

    def jobs(self) -> JobTable:
        return JobTable(**{name: self._cols[name][:self.n] for name in JOB_FIELDS})

    def take(self, rows) -> JobTable:
        return JobTable(**{name: self._cols[name][rows] for name in JOB_FIELDS})

    def job_id(self, rows) -> np.ndarray:
        return self._cols["job_id"][rows]


    def submit(self, rows) -> np.ndarray:
        return self._cols["submit_time"][rows]

    def rows_for(self, table: JobTable) -> np.ndarray:
        """The rows of ``table``'s jobs: looked up (fixed) or appended. Raises (changing
        nothing) for a job a fixed catalog does not hold or that was already submitted."""
        if not self.fixed:
            return self._append(table)
        ids = self._cols["job_id"][:self.n]
        pos = np.searchsorted(ids[self._by_id], table.job_id)
        pos = np.minimum(pos, max(self.n - 1, 0))
        rows = self._by_id[pos] if self.n else np.zeros(len(table), dtype=np.int64)
        unknown = (ids[rows] != table.job_id) if self.n else np.ones(len(table), dtype=bool)
        if unknown.any():
            raise InputError(f"job id {table.job_id[unknown][0]} is not in the scheduler's "
                             "jobs", field="job_id")
        seen = self.status[rows] != UNSEEN
        if seen.any():
            raise InputError(f"job id {table.job_id[seen][0]} was already submitted",
                             field="job_id")
        return rows

    def _append(self, table: JobTable) -> np.ndarray:
        need = self.n + len(table)
        size = len(self._cols["job_id"])
        if need > size:
            cap = max(need, 2 * size, 16)
            for name, col in self._cols.items():
                grown = np.empty(cap, dtype=col.dtype)
                grown[:self.n] = col[:self.n]
                self._cols[name] = grown
        for name in JOB_FIELDS:
            self._cols[name][self.n:need] = getattr(table, name)
        for name in self._EXTRA:
            self._cols[name][self.n:need] = UNSEEN if name == "status" else -1
        rows = np.arange(self.n, need, dtype=np.int64)
        self.n = need
        return rows


class QueuePriority:
    """The queue order's priorities: none, a fixed array, or ``priority(now,
    progress)`` recomputed at the first pass of every period (the simulator's
    PriorityCalcPeriod), from the progress before that instant's events."""

    def __init__(self, key, fn, period, last=None):
        self.key, self.fn, self.period, self.last = key, fn, period, last

    @classmethod
    def of(cls, priority, period, jobs: JobTable) -> "QueuePriority":
        if priority is None:
            return cls(None, None, None)
        if callable(priority):
            if isinstance(period, bool) or not isinstance(period, (int, np.integer)) \
                    or period < 1:
                raise InputError(f"period must be >= 1 s, got {period!r}", field="period")
            return cls(None, priority, int(period))
        key = np.asarray(priority, dtype=np.float64)
        _unique_rank(-key, jobs)          # the simulator's shape check and error
        return cls(key, None, None)

    def at(self, now: int, catalog: Catalog) -> "QueuePriority":
        """The priorities for a pass at ``now``: these, or new ones when ``now`` is in
        a new period. A running job's end is -1 (not known yet)."""
        if self.fn is None:
            return self
        b = now // self.period * self.period
        if b == self.last:
            return self
        before = catalog.eligible < now       # this instant's arrivals come after
        progress = Progress(catalog.start.copy(), catalog.end.copy(),
                            np.where(before, catalog.eligible, -1))
        return QueuePriority(np.asarray(self.fn(b, progress), dtype=np.float64), self.fn,
                         self.period, b)

    def rank(self, rows):
        return None if self.key is None else -self.key[rows]


@dataclass
class ConstraintState:
    """The per-job constraints over catalog rows, and what they say as the state
    changes: the partition choices, limit groups (caps and reasons), placement,
    and dependencies (each parent's dependents, each job's unsatisfied count)."""

    partitions: PartitionChoices | None
    limits: LimitGroups
    placement: Placement | None
    children: tuple            # (offsets per parent row, child rows, kinds)
    pending_deps: np.ndarray   # int64 per row: dependencies not yet satisfied
    never: np.ndarray          # bool per row: a dependency can no longer be satisfied

    @classmethod
    def of(cls, cluster, jobs: JobTable, available, partitions, dependencies, limits,
           placement) -> "ConstraintState":
        n = len(jobs)
        check_covers(n, partitions=partitions, dependencies=dependencies, limits=limits)
        if partitions is not None:
            partitions = check_node_jobs(cluster, jobs, available, partitions)
        if placement is not None:
            placement = _placement(placement, cluster, n)
        deps = Dependencies.none(n) if dependencies is None else dependencies
        parent = deps.parent
        child = np.repeat(np.arange(n), np.diff(deps.offsets))
        by_parent = np.argsort(parent, kind="stable")
        offsets = csr_offsets(np.bincount(parent, minlength=n))
        return cls(partitions, LimitGroups.none(n) if limits is None else limits, placement,
                   (offsets, child[by_parent], deps.kind[by_parent].astype(np.int64)),
                   np.bincount(child, minlength=n).astype(np.int64), np.zeros(n, dtype=bool))

    def of_rows(self, rows: np.ndarray, catalog: Catalog) -> dict:
        """plan_nodes' per-job arguments for catalog ``rows`` (in that order)."""
        kw = {"eligible": catalog.eligible[rows]}
        if self.partitions is not None:
            off, idx = csr_take(self.partitions.offsets, rows)
            kw["partitions"] = PartitionChoices(off, self.partitions.partition[idx])
        if len(self.limits.caps):
            off, idx = csr_take(self.limits.offsets, rows)
            kw["limits"] = LimitGroups(off, self.limits.group[idx], self.limits.caps,
                                       self.limits.reasons)
        if self.placement is not None:
            kw["placement"] = self.placement.take(rows)
        return kw

    def runnable(self, cluster, rows, jobs: JobTable, available) -> np.ndarray:
        """Per row: can the job run at all on the ``available`` nodes (some of its
        partitions holds enough nodes that fit its request)?"""
        if available.all() or not len(rows):
            return np.ones(len(rows), dtype=bool)
        if self.partitions is None:
            off, part = np.arange(len(rows) + 1, dtype=np.int64), jobs.partition
        else:
            off, idx = csr_take(self.partitions.offsets, rows)
            part = self.partitions.partition[idx]
        poff, pflat = _partition_nodes(cluster, available)
        entry = np.repeat(np.arange(len(rows)), np.diff(off))
        capacity = request_capacity([pflat[poff[p]:poff[p + 1]] for p in range(len(poff) - 1)],
                                    part, jobs.gpus_per_node[entry], jobs.cpus_per_node[entry],
                                    jobs.mem_per_node[entry], cluster)
        fits = jobs.num_nodes[entry] <= capacity
        return np.bincount(entry[fits], minlength=len(rows)) > 0

    def groups_of(self, rows):
        if not len(self.limits.caps):        # (also: rows appended after the constraints)
            return np.zeros(len(rows) + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)
        off, idx = csr_take(self.limits.offsets, rows)
        return off, self.limits.group[idx]

    def exclusive_topo(self, rows):
        if self.placement is None:
            return np.zeros(len(rows), dtype=bool)
        return self.placement.exclusive_topo[rows] & (self.placement.levels.shape[0] > 0)

    def arrive(self, rows, usage) -> np.ndarray:
        """Count arriving ``rows`` (in arrival order) in their groups' submitted jobs
        (``usage``'s max_submit column); returns which are turned away (over a
        max_submit cap). Only jobs in a group with such a cap are looked at one by
        one (each arrival changes the count)."""
        if not len(self.limits.caps):
            return np.zeros(len(rows), dtype=bool)
        off, idx = csr_take(self.limits.offsets, rows)
        group = self.limits.group[idx]
        member = np.repeat(np.arange(len(rows)), np.diff(off))
        capped = np.unique(member[self.limits.caps[group, 4] >= 0])
        turned = np.zeros(len(rows), dtype=bool)
        for i in capped:                              # arrival order
            g = group[off[i]:off[i + 1]]
            cap = self.limits.caps[g, 4]
            turned[i] = bool(((cap >= 0) & (usage[g, 4] + 1 > cap)).any())
            if not turned[i]:
                np.add.at(usage[:, 4], g, 1)
        np.add.at(usage[:, 4], group[~np.isin(member, capped)], 1)
        return turned

    def free(self, rows) -> np.ndarray:
        """Per row: all its dependencies satisfied and none broken."""
        if not len(self.children[1]):
            return np.ones(len(rows), dtype=bool)
        return (self.pending_deps[rows] == 0) & ~self.never[rows]

    def release(self, rows, ok, started: bool) -> np.ndarray:
        """Jobs ``rows`` started or ended (``ok`` per row: COMPLETED): their dependents'
        counts go down (or the dependency breaks); returns those dependents."""
        offsets, child, kind = self.children
        if not len(child):
            return np.zeros(0, dtype=np.int64)
        _, idx = csr_take(offsets, rows)
        parent_ok = np.repeat(np.asarray(ok, dtype=bool), offsets[rows + 1] - offsets[rows])
        c, k = child[idx], kind[idx]
        if started:
            sel = k == AFTER
            np.subtract.at(self.pending_deps, c[sel], 1)
            return np.unique(c[sel])
        sel = (k != AFTER) & (k != SPENT)
        broken = sel & (((k == AFTEROK) & ~parent_ok) | ((k == AFTERNOTOK) & parent_ok))
        self.never[c[broken]] = True
        np.subtract.at(self.pending_deps, c[sel & ~broken], 1)
        return np.unique(c[sel])

    def spend_after(self, rows) -> None:
        """Jobs ``rows`` were requeued: their ``after`` edges, satisfied at their first
        start, are spent (a later start satisfies nothing again)."""
        offsets, _, kind = self.children
        if not len(kind) or not len(rows):
            return
        _, idx = csr_take(offsets, rows)
        kind[idx[kind[idx] == AFTER]] = SPENT


def first_duplicate(ids):
    s = np.sort(np.asarray(ids))
    same = np.flatnonzero(s[1:] == s[:-1])
    return s[same[0]] if len(same) else None


def csr_offsets(counts: np.ndarray) -> np.ndarray:
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out
