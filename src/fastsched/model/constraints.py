"""What constrains a job beyond its resources: dependencies, limits, partition choices.

These are the engine-level forms (flat NumPy arrays, CSR over jobs by row
index in the :class:`~fastsched.model.jobs.JobTable`), built by higher layers
(``--dependency`` / ``--array`` / ``--partition=a,b`` in a workload, QOS and
association limits from a config) and consumed by the node engine.

* :class:`Dependencies`: job ``i`` may not start before every entry in
  ``parent[offsets[i]:offsets[i+1]]`` is satisfied (``kind``: ``AFTER`` = the
  parent started, ``AFTERANY`` = it ended, ``AFTEROK`` = it ended COMPLETED,
  ``AFTERNOTOK`` = it ended otherwise, e.g. TIMEOUT). A dependency that can no
  longer be satisfied leaves the job pending forever (Slurm's
  ``DependencyNeverSatisfied``); the simulator reports it, never starts it.
* :class:`LimitGroups`: each job counts against the groups
  ``group[offsets[i]:offsets[i+1]]`` (a user's QOS usage, an association and
  its parents, an array's running tasks). A group caps its *running* jobs and
  their GPUs, CPUs and memory (``-1`` = no cap) and the jobs a submitter may
  have in the system (``max_submit``: pending + running; a job over it is
  rejected at submit). A job held by a cap is skipped by the pass (no start,
  no reservation, blocks nobody) with ``reasons[g][cap]`` as its reason.
* :class:`PartitionChoices`: the partitions a job may run in, in the order
  the user gave them; it runs in the one that lets it start first (ties: the
  earlier in the list).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import InputError

__all__ = ["Dependencies", "LimitGroups", "PartitionChoices", "Placement", "merge_limits",
           "held_forever", "AFTER", "AFTERANY", "AFTEROK",
           "AFTERNOTOK", "DEPENDENCY_KINDS", "CAPS", "ARRAY_TASK_LIMIT", "dependencies_from_edges",
           "array_limit_groups", "array_throttle", "check_covers", "csr_take", "no_dependencies",
           "no_limits", "one_partition_each"]

AFTER, AFTERANY, AFTEROK, AFTERNOTOK = 0, 1, 2, 3
DEPENDENCY_KINDS = {"after": AFTER, "afterany": AFTERANY, "afterok": AFTEROK,
                    "afternotok": AFTERNOTOK}
#: the caps of a limit group, in the column order of ``LimitGroups.caps``
CAPS = ("max_jobs", "max_gpus", "max_cpus", "max_mem", "max_submit")
#: squeue's reason for an array task held by the array's ``--array=...%max``
ARRAY_TASK_LIMIT = "JobArrayTaskLimit"


def _csr(offsets, values, n: int, what: str):
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if offsets.shape != (n + 1,) or offsets[0] != 0 or (np.diff(offsets) < 0).any() \
            or offsets[-1] != len(values):
        raise InputError(f"{what}: offsets must be {n + 1} non-decreasing entries from 0 "
                         f"to {len(values)}")
    return offsets


@dataclass
class Dependencies:
    """Per-job dependency lists (CSR by job row)."""

    offsets: np.ndarray   # int64[n + 1]
    parent: np.ndarray    # int64[m], job rows
    kind: np.ndarray      # int8[m], AFTER..AFTERNOTOK

    def __post_init__(self):
        self.parent = np.ascontiguousarray(self.parent, dtype=np.int64)
        self.kind = np.ascontiguousarray(self.kind, dtype=np.int8)
        n = len(self.offsets) - 1
        self.offsets = _csr(self.offsets, self.parent, n, "dependencies")
        if len(self.kind) != len(self.parent):
            raise InputError("dependencies: kind and parent differ in length")
        if len(self.parent) and (self.parent.min() < 0 or self.parent.max() >= n):
            raise InputError("dependencies: parent row out of range")
        if len(self.kind) and (self.kind.min() < AFTER or self.kind.max() > AFTERNOTOK):
            raise InputError("dependencies: unknown kind code")
        own = np.repeat(np.arange(n), np.diff(self.offsets))
        if (own == self.parent).any():
            raise InputError(f"dependencies: job row {int(own[own == self.parent][0])} "
                             "depends on itself")

    @classmethod
    def none(cls, n: int) -> "Dependencies":
        return cls(np.zeros(n + 1, dtype=np.int64), np.zeros(0, np.int64), np.zeros(0, np.int8))

    def __len__(self) -> int:
        return len(self.offsets) - 1


@dataclass
class LimitGroups:
    """Groups of jobs sharing caps on running jobs/TRES and on submitted jobs."""

    offsets: np.ndarray           # int64[n + 1]
    group: np.ndarray             # int64[m], group ids
    caps: np.ndarray              # int64[G, 5] in CAPS order, -1 = no cap
    #: per group, the reason name for each cap (squeue's reason column),
    #: e.g. ("QOSMaxJobsPerUserLimit", "QOSMaxGRESPerUser", ...)
    reasons: list = field(default_factory=list)

    def __post_init__(self):
        self.group = np.ascontiguousarray(self.group, dtype=np.int64)
        self.caps = np.ascontiguousarray(self.caps, dtype=np.int64).reshape(-1, len(CAPS))
        n = len(self.offsets) - 1
        self.offsets = _csr(self.offsets, self.group, n, "limit groups")
        G = len(self.caps)
        if len(self.group) and (self.group.min() < 0 or self.group.max() >= G):
            raise InputError("limit groups: group id out of range")
        if len(self.reasons) != G or any(len(r) != len(CAPS) for r in self.reasons):
            raise InputError(f"limit groups: need {len(CAPS)} reason names for each of {G} groups")

    @classmethod
    def none(cls, n: int) -> "LimitGroups":
        return cls(np.zeros(n + 1, dtype=np.int64), np.zeros(0, np.int64),
                   np.zeros((0, len(CAPS)), np.int64), [])

    def __len__(self) -> int:
        return len(self.offsets) - 1


@dataclass
class PartitionChoices:
    """Per-job partition lists (CSR by job row), in the user's order."""

    offsets: np.ndarray     # int64[n + 1]
    partition: np.ndarray   # int32[m], cluster partition indices

    def __post_init__(self):
        self.partition = np.ascontiguousarray(self.partition, dtype=np.int32)
        n = len(self.offsets) - 1
        self.offsets = _csr(self.offsets, self.partition, n, "partition choices")
        if (np.diff(self.offsets) < 1).any():
            raise InputError("partition choices: every job needs at least one partition")

    @classmethod
    def single(cls, partition) -> "PartitionChoices":
        """One partition per job (the JobTable's ``partition`` column)."""
        p = np.asarray(partition, dtype=np.int32)
        return cls(np.arange(len(p) + 1, dtype=np.int64), p)

    def __len__(self) -> int:
        return len(self.offsets) - 1


@dataclass
class Placement:
    """Topology-aware placement for the node engine (see docs/topology.md).

    ``levels``: int32[L, nodes], group per node and level, leaf (switch or base
    block) first, -1 = in no group (from
    :func:`fastsched.model.topology.levels_array` of ``Cluster.topology`` for
    topology/tree, or ``BlockTopology.levels``); L = 0 turns topology off.
    Per job: ``unit`` (--segment: nodes that share one leaf; 1 = none),
    ``max_leaves`` (--switches=k; 0 = none), in force until ``leaf_wait``
    seconds after the job became eligible (-1 = forever). ``gpu_groups``:
    uint64 masks of the GPUs that belong together on every node (NVLink /
    socket groups from gres.conf); empty = lowest free indices.
    ``exclusive_topo`` (bool per job, default all False): ``--exclusive=topo``,
    the job's leaf groups (base blocks or leaf switches) are its alone while it
    runs (docs/gpu-semantics.md, Topology); only meaningful with L > 0.
    """

    levels: np.ndarray
    unit: np.ndarray
    max_leaves: np.ndarray
    leaf_wait: np.ndarray
    gpu_groups: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    exclusive_topo: np.ndarray | None = None

    def __post_init__(self):
        self.levels = np.ascontiguousarray(self.levels, dtype=np.int32)
        if self.levels.ndim != 2:
            raise InputError("placement: levels must be a (levels, nodes) array")
        self.unit = np.ascontiguousarray(self.unit, dtype=np.int64)
        self.max_leaves = np.ascontiguousarray(self.max_leaves, dtype=np.int64)
        self.leaf_wait = np.ascontiguousarray(self.leaf_wait, dtype=np.int64)
        self.gpu_groups = np.ascontiguousarray(self.gpu_groups, dtype=np.uint64)
        n = len(self.unit)
        self.exclusive_topo = np.zeros(n, np.bool_) if self.exclusive_topo is None else \
            np.ascontiguousarray(self.exclusive_topo, dtype=np.bool_)
        if len(self.max_leaves) != n or len(self.leaf_wait) != n or len(self.exclusive_topo) != n:
            raise InputError("placement: unit, max_leaves, leaf_wait and exclusive_topo need "
                             "one entry per job")
        if (self.unit < 1).any() or (self.max_leaves < 0).any():
            raise InputError("placement: unit must be >= 1 and max_leaves >= 0")

    @classmethod
    def none(cls, n: int, num_nodes: int = 0) -> "Placement":
        return cls(np.zeros((0, num_nodes), np.int32), np.ones(n, np.int64),
                   np.zeros(n, np.int64), np.full(n, -1, np.int64))

    @classmethod
    def topology(cls, levels, n: int, *, unit=1, max_leaves=0, leaf_wait=-1,
                 gpu_groups=(), exclusive_topo=False) -> "Placement":
        """Topology placement for ``n`` jobs; per-job values may be scalars."""
        def col(v, dtype=np.int64):
            a = np.asarray(v, dtype=dtype)
            return np.full(n, a, dtype=dtype) if a.ndim == 0 else a
        return cls(levels, col(unit), col(max_leaves), col(leaf_wait),
                   np.asarray(gpu_groups, dtype=np.uint64), col(exclusive_topo, np.bool_))

    def take(self, rows) -> "Placement":
        """The placement of jobs ``rows`` (in that order); levels and GPU groups shared."""
        return Placement(self.levels, self.unit[rows], self.max_leaves[rows],
                         self.leaf_wait[rows], self.gpu_groups, self.exclusive_topo[rows])

    def __len__(self) -> int:
        return len(self.unit)


def merge_limits(*parts: LimitGroups) -> LimitGroups:
    """One LimitGroups holding every group of ``parts`` (all over the same jobs)."""
    parts = [p for p in parts if p is not None]
    n = len(parts[0])
    if any(len(p) != n for p in parts):
        raise InputError("merge_limits: the limit groups cover different jobs")
    rows, groups, caps, reasons, base = [], [], [], [], 0
    for p in parts:
        rows.append(np.repeat(np.arange(n), np.diff(p.offsets)))
        groups.append(p.group + base)
        caps.append(p.caps)
        reasons += list(p.reasons)
        base += len(p.caps)
    row = np.concatenate(rows)
    order = np.argsort(row, kind="stable")
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=n), out=offsets[1:])
    return LimitGroups(offsets, np.concatenate(groups)[order],
                       np.concatenate(caps).reshape(-1, len(CAPS)), reasons)


def held_forever(rows, reasons, n: int) -> LimitGroups:
    """Groups that never let jobs ``rows`` start (a cap of 0 running jobs), one per
    distinct reason, so they stay pending with that reason (e.g. a job over its
    QOS's MaxWallDurationPerJob)."""
    rows = np.asarray(rows, dtype=np.int64)
    names, gid = np.unique(np.asarray(reasons, dtype=object).astype(str), return_inverse=True)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=offsets[1:])
    order = np.argsort(rows, kind="stable")
    caps = np.full((len(names), len(CAPS)), -1, dtype=np.int64)
    caps[:, 0] = 0
    return LimitGroups(offsets, gid[order].astype(np.int64), caps,
                       [(str(r),) * len(CAPS) for r in names])


# --------------------------------------------------------------------------- builders

def _trusted(cls, **fields):
    """A ``cls`` holding ``fields`` as given, without ``__post_init__``'s O(n) checks.

    Only for the defaults below, which are valid by construction: a workload
    without dependencies, limits or partition lists is read as fast as before.
    """
    obj = object.__new__(cls)
    for name, value in fields.items():
        setattr(obj, name, value)
    return obj


def no_dependencies(n: int) -> Dependencies:
    """Same as ``Dependencies.none(n)``, without the checks (see :func:`_trusted`)."""
    return _trusted(Dependencies, offsets=np.zeros(n + 1, dtype=np.int64),
                    parent=np.zeros(0, np.int64), kind=np.zeros(0, np.int8))


def no_limits(n: int) -> LimitGroups:
    """Same as ``LimitGroups.none(n)``, without the checks (see :func:`_trusted`)."""
    return _trusted(LimitGroups, offsets=np.zeros(n + 1, dtype=np.int64),
                    group=np.zeros(0, np.int64), caps=np.zeros((0, len(CAPS)), np.int64),
                    reasons=[])


def one_partition_each(partition) -> PartitionChoices:
    """Same as ``PartitionChoices.single(partition)``, without the checks."""
    return _trusted(PartitionChoices, offsets=np.arange(len(partition) + 1, dtype=np.int64),
                    partition=np.ascontiguousarray(partition, dtype=np.int32))


def check_covers(n: int, **constraints) -> None:
    """InputError unless every given constraint (``partitions=``, ``dependencies=``,
    ``limits=``; None: not given) covers ``n`` jobs."""
    for what, c in constraints.items():
        if c is not None and len(c) != n:
            raise InputError(f"{what} cover {len(c)} jobs, the table has {n}", field=what)


def csr_take(offsets: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gather CSR rows: (new offsets, index into the old values) for ``rows`` in order.

    ``values[index]`` are the entries of ``rows[0]``, then ``rows[1]``, ... so
    any CSR (parents, partitions, groups) can be reordered or repeated without
    a per-row loop.
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    rows = np.asarray(rows, dtype=np.int64)
    counts = offsets[rows + 1] - offsets[rows]
    new = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(counts, out=new[1:])
    index = np.arange(new[-1], dtype=np.int64) + np.repeat(offsets[rows] - new[:-1], counts)
    return new, index


def dependencies_from_edges(n: int, child, parent, kind) -> Dependencies:
    """:class:`Dependencies` of ``n`` jobs from edge lists (child row, parent row, kind).

    Edges are sorted by (child, parent, kind) and exact duplicates dropped, so
    the same edge set always gives the same arrays.
    """
    child = np.asarray(child, dtype=np.int64)
    parent = np.asarray(parent, dtype=np.int64)
    kind = np.asarray(kind, dtype=np.int8)
    if len(child) and (child.min() < 0 or child.max() >= n):
        raise InputError("dependencies: child row out of range")
    order = np.lexsort((kind, parent, child))
    child, parent, kind = child[order], parent[order], kind[order]
    if len(child) > 1:
        keep = np.ones(len(child), dtype=bool)
        keep[1:] = (child[1:] != child[:-1]) | (parent[1:] != parent[:-1]) | (kind[1:] != kind[:-1])
        child, parent, kind = child[keep], parent[keep], kind[keep]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(child, minlength=n), out=offsets[1:])
    return Dependencies(offsets, parent, kind)


def array_limit_groups(array_job, throttle) -> LimitGroups:
    """One limit group per job array with a ``%max``: its running tasks <= max.

    ``array_job`` (int64 per job, -1 = not an array task) and ``throttle``
    (per job, the array's ``%max``; <= 0 = none) must agree within an array.
    Groups are numbered in increasing array job id; the other caps are -1.
    """
    array_job = np.asarray(array_job, dtype=np.int64)
    throttle = np.asarray(throttle, dtype=np.int64)
    n = len(array_job)
    held = (array_job >= 0) & (throttle > 0)
    arrays, group = np.unique(array_job[held], return_inverse=True)
    caps = np.full((len(arrays), len(CAPS)), -1, dtype=np.int64)
    caps[group, 0] = throttle[held]
    if len(arrays) and (caps[group, 0] != throttle[held]).any():
        raise InputError("array task limits: tasks of one array have different %max")
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(held, out=offsets[1:])
    return LimitGroups(offsets, group.astype(np.int64), caps,
                       [(ARRAY_TASK_LIMIT,) * len(CAPS)] * len(arrays))


def array_throttle(limits: LimitGroups) -> np.ndarray:
    """Per job, the ``%max`` of its array's limit group (0 = none): the inverse of
    :func:`array_limit_groups`. Raises InputError for a group that is not an array
    task limit (QOS and association limits come from the config, not a workload).
    """
    n = len(limits)
    counts = np.diff(limits.offsets)
    if (counts > 1).any():
        raise InputError("limit groups: a job is in more than one group; only one "
                         "array task limit per job can be stored")
    bad = [g for g, r in enumerate(limits.reasons)
           if r[0] != ARRAY_TASK_LIMIT or (limits.caps[g, 1:] != -1).any()]
    if bad:
        raise InputError(f"limit group {bad[0]} is not an array task limit "
                         f"({ARRAY_TASK_LIMIT} with only max_jobs)")
    out = np.zeros(n, dtype=np.int64)
    out[counts == 1] = limits.caps[limits.group, 0]
    return out
