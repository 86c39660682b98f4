"""A workload: jobs plus who submitted them (users, accounts, organisations, QOS)
and how they were submitted (names, dependencies, arrays, partition lists).

:class:`Workload` wraps a :class:`~fastsched.model.jobs.JobTable` (whose ``user``
column indexes ``user_names`` and whose ``partition`` column indexes the
cluster's partitions: a job's first choice) with the per-job account and the
account -> organisation map, i.e. the three-level fair-share tree organisation
/ account / user, and the engine constraints of :mod:`fastsched.model.constraints`.

The CSV format (``.csv`` or ``.csv.gz``) has one row per submission, with header::

    job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,cpus_per_node,
    mem_per_node,partition,user,account[,org][,qos][,name][,dependency][,array]
    [,array_job_id,array_task_id[,array_task_throttle]][,gpu_type]

Times are integer seconds, memory is MB per node; ``partition``, ``user``,
``account``, ``org`` and ``qos`` are names. A job whose ``runtime`` exceeds its
``time_limit`` is killed at the limit (state TIMEOUT). Optional columns (in any
order after the required ones; any other extra column is ignored):

* ``org``: the organisation owning each account (default: each account is its own).
* ``qos``: the QOS name (default, and when empty, ``normal``).
* ``name``: the job name (``--job-name``; default empty), used by ``singleton``.
* ``partition`` may be a list, ``"gpu,debug"`` (``--partition``): the job runs in
  whichever lets it start first.  An empty ``partition`` is the cluster's default partition
  (``Default=YES``), an error when it has none (as a job naming no partition is in
  Slurm).
* ``dependency``: Slurm's ``--dependency`` syntax, e.g. ``afterok:12:13,afterany:5``
  or ``singleton``; ids refer to the ``job_id`` column (``J_T`` = task T of array J).
  See :mod:`fastsched.io.submission` for what is supported and why.
* ``array``: Slurm's ``--array`` syntax (``0-15%4``, ``1,3,5``, ``0-31:2``). The row
  expands into one job per task at read time; the task at position ``p`` gets job
  id ``job_id + p`` (Slurm's numbering), ``array_job = job_id``, ``array_task`` =
  its index, and ``%max`` becomes a limit group (reason ``JobArrayTaskLimit``).
* ``array_job_id``, ``array_task_id``, ``array_task_throttle``: an already expanded
  task (what :func:`write_workload` writes; empty = not an array task / no %max).
* ``exclusive``: ``topo`` (``--exclusive=topo``: with a topology, the job's leaf
  groups are its alone while it runs) or empty; anything else is an error.
* ``requeue``, ``checkpoint_interval``, ``checkpoint_cost``, ``no_kill``, ``nodes_min``:
  what a node failure does to the job (:mod:`fastsched.io.lifecycle`).
* ``time_min``: sbatch ``--time-min`` in seconds (empty or 0: none; at most
  ``time_limit``): the job may start with a limit cut down towards it to fit a gap
  (:mod:`fastsched.model.timemin`; nodes model).
* ``container_image``: the job's container image (pyxis ``--container-image``; empty:
  none), pulled on its nodes at its start when a run has a pull model
  (:mod:`fastsched.model.images`).
* ``reservation``: the advance reservation the job runs in (sbatch ``--reservation``;
  empty: none); :meth:`Workload.reservations` binds it to a reservation file's.
* ``gpu_type``: the GPU type of ``--gres=gpu:TYPE:N`` (``a100``; Slurm's TRES spelling
  ``gres/gpu:a100`` and ``gpu:a100`` mean the same); empty: any type. A type no node
  of the cluster has is an error (:mod:`fastsched.io.workloadgpu`); a typed row that
  no node of its partitions with the type can hold is skipped. Simulated on the nodes
  with the type through derived partitions ``P:T``:
  :func:`fastsched.sim.gputypes.typed_workload` (``fastsched simulate`` does it).

A ``.parquet`` (``.pq``) file holds the same columns, typed (:mod:`fastsched.io.parquet`;
needs the extra ``fastsched[parquet]``).
"""
from __future__ import annotations

import gzip
import zlib
from dataclasses import dataclass, field

import numpy as np

from ..model.cluster import Cluster
from ..model.constraints import (DEPENDENCY_KINDS, Dependencies, LimitGroups, PartitionChoices,
                          array_throttle, no_dependencies, no_limits, one_partition_each)
from ..model.errors import InputError
from ..model.jobs import UNLIMITED, JobTable
from ..model.reservations import Reservations
from ..model.resvjobs import JobReservations
from .lifecycle import lifecycle_text, read_lifecycle_columns
from .parquet import is_parquet, read_parquet_frame, write_parquet_frame
from .sbatch import parse_array, parse_dependency
from .submission import build_jobs
from .workloadgpu import GPU_TYPE_COLUMN, read_gpu_types, request_groups
from .workloadcolumns import (check_range, exclusive_column, int_column, name_column,
                              parse_sparse)
from .workloadimage import read_image_column, read_word_column
from ..model.validation import MAX_COUNT, MAX_MEMORY_MB, MAX_SECONDS, request_capacity

__all__ = ["Workload", "write_workload", "read_workload", "requests_to_workload",
           "CSV_COLUMNS", "DEFAULT_QOS"]

#: the columns every workload CSV has, in this order.
CSV_COLUMNS = ["job_id", "submit_time", "time_limit", "runtime", "num_nodes", "gpus_per_node",
               "cpus_per_node", "mem_per_node", "partition", "user", "account"]
#: optional trailing column: the organisation owning each job's account.
ORG_COLUMN = "org"
_INT_COLUMNS = CSV_COLUMNS[:8]
_NAME_COLUMNS = ["partition", "user", "account"]
#: Slurm's default QOS
DEFAULT_QOS = "normal"
_TASK_COLUMNS = ["array_job_id", "array_task_id", "array_task_throttle"]
_TEXT_COLUMNS = _NAME_COLUMNS + [ORG_COLUMN, "qos", "name", "dependency", "array", "exclusive",
                                 "requeue", "checkpoint_interval", "checkpoint_cost",
                                 "no_kill", "nodes_min", "time_min", "container_image",
                                 GPU_TYPE_COLUMN, "reservation"]
#: the optional Workload fields (None = the default)
_OPTIONAL = ("qos", "qos_names", "name", "dependencies", "partitions", "array_job",
             "array_task", "limits", "exclusive_topo", "requeue", "checkpoint_interval",
             "checkpoint_cost", "no_kill", "nodes_min", "time_min", "container_image",
             "gpu_type", "reservation")


@dataclass
class Workload:
    """Jobs sorted by submit time, with their users, accounts and organisations.

    ``jobs.user`` indexes ``user_names``; ``account`` (int32, one per job)
    indexes ``account_names``; ``org_of_account`` (int32, one per account)
    indexes ``org_names``; ``qos`` (int32 per job) indexes ``qos_names``;
    ``name`` holds job names (str per job). ``dependencies``, ``partitions``
    and ``limits`` are the engine constraints (by job row; ``partitions``
    starts with ``jobs.partition``); ``array_job`` / ``array_task`` (int64) are
    the array job id and task index of array tasks, -1 otherwise;
    ``exclusive_topo`` (bool per job): ``--exclusive=topo``; ``requeue`` (int8 per
    job: 1 --requeue, 0 --no-requeue, -1 the cluster's default),
    ``checkpoint_interval`` and ``checkpoint_cost`` (seconds; :meth:`lifecycle`);
    ``no_kill`` (bool per job, sbatch --no-kill) and ``nodes_min`` (int64 per job, 0:
    one): elastic jobs (:mod:`fastsched.model.elastic`); ``time_min`` (int64 seconds per
    job, 0: none; sbatch --time-min, :mod:`fastsched.model.timemin`);
    ``container_image`` (str per job, "" = none; :meth:`containers`); ``gpu_type`` (str
    per job, "" untyped): the GPU type asked for; ``reservation`` (str per job, "" =
    none, sbatch ``--reservation``): the advance reservation it runs in
    (:meth:`reservations`). Everything
    after ``org_names`` is optional and defaults to "not used" (``name``,
    ``array_job`` and ``array_task`` then are read-only constant views).
    """

    jobs: JobTable
    account: np.ndarray
    user_names: list[str]
    account_names: list[str]
    org_of_account: np.ndarray
    org_names: list[str]
    qos: np.ndarray | None = None
    qos_names: list[str] | None = None
    name: np.ndarray | None = None
    dependencies: Dependencies | None = None
    partitions: PartitionChoices | None = None
    array_job: np.ndarray | None = None
    array_task: np.ndarray | None = None
    limits: LimitGroups | None = None
    exclusive_topo: np.ndarray | None = None
    requeue: np.ndarray | None = None
    checkpoint_interval: np.ndarray | None = None
    checkpoint_cost: np.ndarray | None = None
    no_kill: np.ndarray | None = None
    nodes_min: np.ndarray | None = None
    time_min: np.ndarray | None = None
    container_image: np.ndarray | None = None
    gpu_type: np.ndarray | None = None
    reservation: np.ndarray | None = None
    #: rows of the file left out because they can never run on the cluster
    #: (:class:`fastsched.io.swf.SkippedJob`, by file line), as SWF traces list theirs
    skipped: list = field(default_factory=list)

    def constraints(self) -> dict:
        """Its dependencies, partition lists and array throttles where it has any, as
        keyword arguments of :func:`fastsched.simulate`."""
        out = {}
        if self.dependencies is not None and len(self.dependencies.parent):
            out["dependencies"] = self.dependencies
        if self.partitions is not None and len(self.partitions.partition) > len(self):
            out["partitions"] = self.partitions
        if self.limits is not None and len(self.limits.caps):
            out["limits"] = self.limits
        if self.time_min is not None and (self.time_min > 0).any():
            out["time_min"] = self.time_min
        return out

    def __post_init__(self):
        self.account = np.ascontiguousarray(self.account, dtype=np.int32)
        self.org_of_account = np.ascontiguousarray(self.org_of_account, dtype=np.int32)
        n = len(self.jobs)
        if len(self.account) != n:
            raise InputError(f"workload: {len(self.account)} accounts for {n} jobs")
        if len(self.org_of_account) != len(self.account_names):
            raise InputError(f"workload: org_of_account has {len(self.org_of_account)} entries "
                             f"for {len(self.account_names)} accounts")
        given = {f for f in _OPTIONAL if getattr(self, f) is not None}
        self._fill_defaults(n)
        for what, idx, names in (("user", self.jobs.user, self.user_names),
                                 ("account", self.account, self.account_names),
                                 ("org", self.org_of_account, self.org_names),
                                 ("qos", self.qos, self.qos_names)):
            if len(idx) and (idx.min() < 0 or idx.max() >= len(names)):
                raise InputError(f"workload: {what} index out of range 0..{len(names) - 1}")
        self._check_given(given, n)

    def _fill_defaults(self, n: int) -> None:
        """Defaults for the optional parts: one QOS ``normal``, no names,
        dependencies, arrays or limits, one partition per job."""
        if self.qos is None:
            self.qos = np.zeros(n, dtype=np.int32)
        self.qos = np.ascontiguousarray(self.qos, dtype=np.int32)
        if self.qos_names is None:
            self.qos_names = [DEFAULT_QOS]
        self.name = _constant("", n, object) if self.name is None else \
            np.asarray(self.name, dtype=object)
        if self.dependencies is None:
            self.dependencies = no_dependencies(n)
        if self.partitions is None:
            self.partitions = one_partition_each(self.jobs.partition)
        for attr in ("array_job", "array_task"):
            value = getattr(self, attr)
            setattr(self, attr, _constant(-1, n, np.int64) if value is None else
                    np.ascontiguousarray(value, dtype=np.int64))
        if self.limits is None:
            self.limits = no_limits(n)
        self.container_image = _constant("", n, object) if self.container_image is None else \
            np.asarray(self.container_image, dtype=object)
        self.exclusive_topo = _constant(False, n, np.bool_) if self.exclusive_topo is None \
            else np.ascontiguousarray(self.exclusive_topo, dtype=np.bool_)
        self.gpu_type = _constant("", n, object) if self.gpu_type is None else \
            np.asarray(self.gpu_type, dtype=object)
        self.reservation = _constant("", n, object) if self.reservation is None else \
            np.asarray(self.reservation, dtype=object)
        for attr, fill, dtype in (("requeue", -1, np.int8), ("checkpoint_interval", 0, np.int64),
                                  ("checkpoint_cost", 0, np.int64), ("no_kill", False, np.bool_),
                                  ("nodes_min", 0, np.int64), ("time_min", 0, np.int64)):
            value = getattr(self, attr)
            setattr(self, attr, _constant(fill, n, dtype) if value is None else
                    np.ascontiguousarray(value, dtype=dtype))

    def _check_given(self, given: set, n: int) -> None:
        """Check the optional parts the caller gave (defaults are right by construction
        and checking them would slow down reading a plain 1M-job workload)."""
        for what in sorted(given - {"qos_names"}):
            if len(getattr(self, what)) != n:
                raise InputError(f"workload: {what} has {len(getattr(self, what))} entries "
                                 f"for {n} jobs")
        if "partitions" in given and n and not np.array_equal(
                self.partitions.partition[self.partitions.offsets[:-1]], self.jobs.partition):
            raise InputError("workload: jobs.partition must be each job's first partition "
                             "choice")
        if given & {"array_job", "array_task"} and \
                ((self.array_job < 0) != (self.array_task < 0)).any():
            raise InputError("workload: array_job and array_task must both be set "
                             "(>= 0) or both -1")

    def __len__(self) -> int:
        return len(self.jobs)

    def lifecycle(self, requeue: bool = True, delay: int | None = None):
        """What a node failure does to each job
        (:class:`fastsched.model.lifecycle.Lifecycle`): ``requeue`` for the jobs whose
        column is empty (the cluster's JobRequeue), the requeue ``delay`` (None: Slurm's)."""
        from ..model.lifecycle import REQUEUE_DELAY, Lifecycle
        elastic = bool(self.no_kill.any())
        ranged = elastic or bool((self.nodes_min > 0).any())
        return Lifecycle(np.where(self.requeue < 0, bool(requeue), self.requeue > 0),
                         self.checkpoint_interval, self.checkpoint_cost,
                         REQUEUE_DELAY if delay is None else delay,
                         self.no_kill if elastic else None,
                         self.nodes_min if ranged else None)

    def containers(self, pull=None):
        """Each job's container image with the pull model ``pull``
        (:class:`fastsched.model.images.ImagePull` or its text; None: the defaults), as
        :func:`fastsched.simulate` takes them (:class:`fastsched.model.images.Containers`)."""
        from ..model.images import Containers
        return Containers.of(np.asarray(self.container_image, dtype=object), pull)

    def reservations(self, reservations: Reservations) -> JobReservations:
        """``reservations`` with the jobs of the ``reservation`` column running in them
        (Slurm's access rule on each job's user and account; an unknown or refused
        name is an InputError naming the job)."""
        users = np.asarray(self.user_names, dtype=object)[self.jobs.user]
        accounts = np.asarray(self.account_names, dtype=object)[self.account]
        return JobReservations.of(reservations, self.reservation, users, accounts,
                                  self.jobs.job_id)

    def __repr__(self) -> str:
        return (f"Workload({len(self)} jobs, {len(self.user_names)} users, "
                f"{len(self.account_names)} accounts, {len(self.org_names)} orgs)")

    @property
    def org(self) -> np.ndarray:
        """Organisation index of each job (int32)."""
        return self.org_of_account[self.account]

    @property
    def gpus(self) -> np.ndarray:
        """GPUs of each job (num_nodes x gpus_per_node), int64."""
        return self.jobs.num_nodes.astype(np.int64) * self.jobs.gpus_per_node

    @property
    def span(self) -> int:
        """Seconds from the first to the last submission."""
        if len(self) == 0:
            return 0
        return int(self.jobs.submit_time.max() - self.jobs.submit_time.min())

    def gpu_seconds(self) -> float:
        """GPU-seconds the jobs really use: sum of gpus x min(runtime, time_limit)."""
        used = np.minimum(self.jobs.runtime, self.jobs.time_limit).astype(np.float64)
        return float(np.dot(self.gpus.astype(np.float64), used))

    def offered_load(self, cluster: Cluster) -> float:
        """GPU-seconds used / (cluster GPUs x submission span); 1.0 = exactly full."""
        total = float(cluster.gpus.sum())
        span = self.span
        if total <= 0 or span <= 0:
            return float("nan")
        return self.gpu_seconds() / (total * span)


def _constant(value, n: int, dtype) -> np.ndarray:
    """A read-only length-``n`` view of ``value`` that takes no memory: the defaults
    ``name`` and ``array_job`` / ``array_task`` cost nothing on a plain 1M-job read
    (filling 8 MB arrays took ~10 ms each). Index it (or ``np.array`` it) for a copy."""
    return np.broadcast_to(np.array(value, dtype=dtype), (n,))


# --------------------------------------------------------------------------- CSV

def write_workload(workload: Workload, cluster: Cluster, path) -> None:
    """Write ``workload`` as CSV (gzip-compressed if ``path`` ends in ``.gz``), or as
    Parquet if it ends in ``.parquet`` or ``.pq`` (needs ``fastsched[parquet]``).

    Optional columns are written only when some job uses them; array tasks are
    written one row each (``array_job_id``, ``array_task_id``,
    ``array_task_throttle``), so :func:`read_workload` gives the same workload back.
    """
    import pandas as pd
    jobs = workload.jobs
    part_names = [p.name for p in cluster.partitions]
    choices = workload.partitions
    if len(choices.partition) and (choices.partition.min() < 0
                                   or choices.partition.max() >= len(part_names)):
        raise InputError(f"workload: partition index out of range for cluster partitions "
                         f"{part_names}")
    cat = pd.Categorical.from_codes
    frame = pd.DataFrame({
        "job_id": jobs.job_id, "submit_time": jobs.submit_time, "time_limit": jobs.time_limit,
        "runtime": jobs.runtime, "num_nodes": jobs.num_nodes,
        "gpus_per_node": jobs.gpus_per_node, "cpus_per_node": jobs.cpus_per_node,
        "mem_per_node": jobs.mem_per_node,
        "partition": cat(jobs.partition, categories=_unique_categories(part_names, "partition")),
        "user": cat(jobs.user, categories=_unique_categories(workload.user_names, "user")),
        "account": cat(workload.account,
                       categories=_unique_categories(workload.account_names, "account")),
        ORG_COLUMN: cat(workload.org, categories=_unique_categories(workload.org_names, "org")),
    })
    if len(choices.partition) > len(choices):
        frame["partition"] = _partition_text(choices, part_names)
    for col, values in _optional_columns(workload).items():
        frame[col] = values
    if is_parquet(path):
        write_parquet_frame(frame, path)
        return
    compression = ({"method": "gzip", "compresslevel": 6, "mtime": 0}
                   if str(path).endswith(".gz") else None)
    frame.to_csv(path, index=False, compression=compression, lineterminator="\n")


def _partition_text(choices: PartitionChoices, part_names: list[str]) -> np.ndarray:
    """Each job's partition list as ``"a,b"`` (a Python loop over multi-choice jobs only)."""
    names = np.array(part_names, dtype=object)
    out = names[choices.partition[choices.offsets[:-1]]]
    counts = np.diff(choices.offsets)
    for i in np.flatnonzero(counts > 1).tolist():
        out[i] = ",".join(names[choices.partition[choices.offsets[i]:choices.offsets[i + 1]]])
    return out


def _optional_columns(w: Workload) -> dict:
    """The optional CSV columns this workload needs (none for a plain workload)."""
    import pandas as pd
    out = {}
    used = np.flatnonzero(np.bincount(w.qos, minlength=len(w.qos_names)))
    if any(w.qos_names[q] != DEFAULT_QOS for q in used.tolist()):
        out["qos"] = pd.Categorical.from_codes(w.qos, categories=_unique_categories(
            w.qos_names, "qos"))
    named = w.name != ""
    if named.any():
        for job_name in set(w.name[named].tolist()):
            if not isinstance(job_name, str) or "\n" in job_name or "\r" in job_name:
                raise InputError(f"workload: bad job name {job_name!r}")
        out["name"] = w.name
    if len(w.dependencies.parent):
        out["dependency"] = _dependency_text(w)
    if w.exclusive_topo.any():
        out["exclusive"] = np.where(w.exclusive_topo, "topo", "").astype(object)
    out.update(lifecycle_text(w.requeue, w.checkpoint_interval, w.checkpoint_cost, w.no_kill,
                              w.nodes_min, w.time_min))
    if (w.container_image != "").any():
        out["container_image"] = np.asarray(w.container_image, dtype=object)
    if (w.gpu_type != "").any():
        out[GPU_TYPE_COLUMN] = np.asarray(w.gpu_type, dtype=object)
    if (w.reservation != "").any():
        out["reservation"] = np.asarray(w.reservation, dtype=object)
    throttle = array_throttle(w.limits) if len(w.limits.caps) else np.zeros(len(w), np.int64)
    is_task = w.array_job >= 0
    if (throttle[~is_task] != 0).any():
        raise InputError("workload: an array task limit holds a job that is not an array task")
    if is_task.any():
        na = pd.array([None] * len(w), dtype="Int64")
        for col, values in zip(_TASK_COLUMNS, (w.array_job, w.array_task, throttle)):
            column = na.copy()
            keep = is_task & (values > 0) if col == "array_task_throttle" else is_task
            column[keep] = values[keep]
            out[col] = column
    return out


def _dependency_text(w: Workload) -> np.ndarray:
    """Each job's dependencies in Slurm syntax (array tasks as ``J_T``); a Python
    loop over the dependency edges only."""
    deps, ids = w.dependencies, w.jobs.job_id
    kind_names = {code: kind for kind, code in DEPENDENCY_KINDS.items()}
    out = np.full(len(w), "", dtype=object)
    counts = np.diff(deps.offsets)
    for i in np.flatnonzero(counts).tolist():
        by_kind: dict[int, list[str]] = {}
        for e in range(deps.offsets[i], deps.offsets[i + 1]):
            p = int(deps.parent[e])
            token = f"{w.array_job[p]}_{w.array_task[p]}" if w.array_job[p] >= 0 else str(ids[p])
            by_kind.setdefault(int(deps.kind[e]), []).append(token)
        out[i] = ",".join(kind_names[k] + ":" + ":".join(t) for k, t in sorted(by_kind.items()))
    return out


def _unique_categories(names: list[str], what: str) -> list[str]:
    if len(set(names)) != len(names):
        raise InputError(f"workload: duplicate {what} names")
    for name in names:
        if not name or "," in name or "\n" in name or name != name.strip():
            raise InputError(f"workload: bad {what} name {name!r}")
    return list(names)


def read_workload(path, cluster: Cluster, *, strict: bool = False) -> Workload:
    """Read a workload CSV (or Parquet file) written by :func:`write_workload` (or by hand).

    Rows may come in any order; the result is sorted by (submit_time, job_id),
    array rows expanded into their tasks. User, account, organisation and QOS
    indices follow the sorted order of their names. Raises InputError naming
    file, line and column for a malformed row, a missing column, an unknown
    partition, a bad or unknown dependency, a malformed array or an impossible
    value. A row that can never run on ``cluster`` (more nodes, GPUs, CPUs or
    memory than any of its partitions has) is left out and listed in
    ``skipped``, as :func:`fastsched.read_swf` does; with ``strict=True`` it
    raises InputError instead.
    """
    fname = str(path)
    frame = _read_frame(path, fname)
    cols = {}
    for col in _INT_COLUMNS:
        cols[col] = int_column(frame[col], fname, col)
    names = {}
    for col in _NAME_COLUMNS + ([ORG_COLUMN] if ORG_COLUMN in frame.columns else []):
        names[col] = name_column(frame[col], fname, col, default=cluster.default_partition
                                  if col == "partition" else None)
    _check_values(cols, fname)

    partitions = _partition_choices(*names["partition"], cluster, fname)
    user, user_names = names["user"]
    account, account_names = names["account"]
    org_of_account, org_names = _org_map(account, account_names, names.get(ORG_COLUMN), fname)

    per_row = {"user": user, "account": account}
    qos_names = None
    if "qos" in frame.columns:
        per_row["qos"], qos_names = name_column(frame["qos"], fname, "qos", default=DEFAULT_QOS)
    if "name" in frame.columns:
        per_row["name"] = frame["name"].to_numpy(dtype=object)
    if "exclusive" in frame.columns:
        per_row["exclusive_topo"] = exclusive_column(frame["exclusive"], fname)
    per_row.update(read_lifecycle_columns(frame, fname, cols["num_nodes"], cols["time_limit"]))
    if "container_image" in frame.columns:
        per_row["container_image"] = read_image_column(frame["container_image"], fname)
    if "reservation" in frame.columns:
        per_row["reservation"] = read_word_column(frame["reservation"], fname, "reservation")
    if GPU_TYPE_COLUMN in frame.columns:
        per_row["gpu_type"] = read_gpu_types(frame[GPU_TYPE_COLUMN], cols["gpus_per_node"],
                                             cluster, fname)
    dependency = parse_sparse(frame, "dependency", parse_dependency, fname)
    arrays = parse_sparse(frame, "array", parse_array, fname)
    tasks = _task_columns(frame, fname)
    keep, skipped = _runnable_rows(cluster, cols, partitions, fname, strict,
                                   per_row.get("gpu_type"))
    lines = np.flatnonzero(keep) + 2
    if skipped:
        cols, per_row, tasks, dependency, arrays, partitions = _take_rows(
            keep, cols, per_row, tasks, dependency, arrays, partitions)
    built = build_jobs(cols, partitions, per_row, dependency=dependency, arrays=arrays,
                       tasks=tasks, where=lambda r: (fname, int(lines[r])))
    workload = _assemble(built, user_names, account_names, org_of_account, org_names,
                         qos_names)
    workload.skipped = skipped
    return workload


def _runnable_rows(cluster: Cluster, cols: dict, partitions: PartitionChoices, fname: str,
                   strict: bool, gpu_type=None):
    """(bool per row: can run on ``cluster``, SkippedJob list of the others).

    A row can run when one of its partitions has ``num_nodes`` nodes that each hold
    its per-node request (of them, a typed row counts the nodes with its GPU type).
    One count per distinct (partition, request): a loop over request types, not rows."""
    from .swf import SkippedJob
    rows = np.repeat(np.arange(len(cols["job_id"])), np.diff(partitions.offsets))
    groups, entry_group = request_groups(cluster, partitions, gpu_type)
    entry_capacity = request_capacity(
        groups, entry_group,
        cols["gpus_per_node"][rows], cols["cpus_per_node"][rows], cols["mem_per_node"][rows],
        cluster)
    fits = cols["num_nodes"][rows] <= entry_capacity
    keep = np.bincount(rows[fits], minlength=len(cols["job_id"])) > 0
    skipped = []
    for i in np.flatnonzero(~keep).tolist():
        entries = slice(partitions.offsets[i], partitions.offsets[i + 1])
        names = ",".join(cluster.partitions[p].name for p in partitions.partition[entries])
        typed = f" ({gpu_type[i]})" if gpu_type is not None and gpu_type[i] else ""
        reason = (f"needs {cols['num_nodes'][i]} node(s) with {cols['gpus_per_node'][i]} "
                  f"GPUs{typed}, "
                  f"{cols['cpus_per_node'][i]} CPUs and {cols['mem_per_node'][i]} MB; partition "
                  f"{names!r} has {entry_capacity[entries].max()} such node(s)")
        if strict:
            raise InputError(f"job {cols['job_id'][i]} can never run: {reason}", file=fname,
                             line=i + 2, field="num_nodes")
        skipped.append(SkippedJob(int(cols["job_id"][i]), i + 2, reason))
    return keep, skipped


def _take_rows(keep, cols, per_row, tasks, dependency, arrays, partitions):
    """The parsed rows where ``keep`` holds (sparse row -> value maps renumbered)."""
    from ..model.constraints import csr_take
    kept = np.flatnonzero(keep)
    new_row = np.cumsum(keep) - 1
    offsets, index = csr_take(partitions.offsets, kept)
    return ({c: v[kept] for c, v in cols.items()},
            {c: np.asarray(v)[kept] for c, v in per_row.items()},
            None if tasks is None else tuple(t[kept] for t in tasks),
            {int(new_row[r]): v for r, v in dependency.items() if keep[r]},
            {int(new_row[r]): v for r, v in arrays.items() if keep[r]},
            PartitionChoices(offsets, partitions.partition[index]))


def _read_frame(path, fname: str):
    """The CSV as a DataFrame with the required columns; pandas errors as InputError."""
    if is_parquet(path):
        return _check_columns(read_parquet_frame(path, fname, _TEXT_COLUMNS), fname)
    import pandas as pd
    try:
        frame = pd.read_csv(path, keep_default_na=False, skip_blank_lines=False, engine="c",
                            dtype={c: str for c in _TEXT_COLUMNS})
    except pd.errors.EmptyDataError:
        raise InputError("empty file: expected a header line", file=fname, line=1) from None
    except pd.errors.ParserError as e:
        import re
        m = re.search(r"line (\d+)", str(e))
        raise InputError(f"malformed CSV: {' '.join(str(e).split())}", file=fname,
                         line=int(m.group(1)) if m else None) from None
    except UnicodeDecodeError as e:
        raise InputError(f"not a text file: {e}", file=fname) from None
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise InputError(f"cannot decompress: {e}", file=fname) from None
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", file=fname) from None

    return _check_columns(frame, fname)


def _check_columns(frame, fname: str):
    frame.columns = [str(c).strip() for c in frame.columns]
    for col in CSV_COLUMNS:
        if col not in frame.columns:
            raise InputError(f"missing column {col!r} (header has {list(frame.columns)})",
                             file=fname, line=1, field=col)
    return frame


def _org_map(account, account_names, org, fname: str):
    """(org_of_account, org_names): from the ``org`` column, or each account its own."""
    if org is None:
        return np.arange(len(account_names), dtype=np.int32), list(account_names)
    org, org_names = org
    org_of_account = np.full(len(account_names), -1, dtype=np.int32)
    org_of_account[account] = org
    clash = org_of_account[account] != org
    if clash.any():
        i = int(np.flatnonzero(clash)[0])
        raise InputError(f"account {account_names[account[i]]!r} belongs to two "
                         f"organisations", file=fname, line=i + 2, field=ORG_COLUMN)
    return org_of_account, org_names


def requests_to_workload(items, cluster: Cluster, *, first_job_id: int = 1,
                         user: str = "user", account: str = "root") -> Workload:
    """A workload from ``sbatch`` requests: ``items`` is a sequence of
    ``(NormalisedRequest, submit_time, runtime)``, in submission order.

    Job ids are given as Slurm gives them: ``first_job_id`` upwards, an array
    taking one id per task. ``--dependency`` ids refer to those ids.
    ``--partition`` lists, ``--qos`` (default ``normal``), ``--account``
    (default ``account``), ``--job-name`` and ``--array`` map exactly as in a
    workload CSV (:mod:`fastsched.io.submission`); pyxis ``--container-image`` is
    the job's ``container_image``. All requests are ``user``'s.
    Errors name the request as ``request <index>``.
    """
    items = list(items)
    part_names = [p.name for p in cluster.partitions]
    rows = {c: np.zeros(len(items), dtype=np.int64) for c in _INT_COLUMNS}
    dependency, arrays, choices = {}, {}, []
    next_id = int(first_job_id)
    for i, (norm, submit_time, runtime) in enumerate(items):
        def fail(message, field, i=i):
            return InputError(message, file=f"request {i}", field=field)
        if int(submit_time) < 0 or int(runtime) < 0:
            raise fail("submit time and runtime must be >= 0", "begin")
        unknown = [p for p in norm.partitions if p not in part_names]
        if not norm.partitions or unknown:
            raise fail(f"unknown partition {unknown[0] if unknown else ''!r}; cluster has "
                       f"{part_names}", "partition")
        choices.append([part_names.index(p) for p in norm.partitions])
        for col, value in (("job_id", next_id), ("submit_time", submit_time),
                           ("time_limit", UNLIMITED if norm.time_limit is None
                            else norm.time_limit), ("runtime", runtime),
                           ("num_nodes", norm.max_nodes if norm.no_kill else norm.num_nodes),
                           ("gpus_per_node", norm.gpus_per_node),
                           ("cpus_per_node", norm.cpus_per_node),
                           ("mem_per_node", norm.mem_per_node)):
            rows[col][i] = int(value)
        if norm.dependencies:
            dependency[i] = (list(norm.dependencies), norm.dependency_mode)
        if norm.array:
            arrays[i] = (list(norm.array), norm.array_max_running)
        next_id += len(norm.array) if norm.array else 1
    lens = np.array([len(c) for c in choices], dtype=np.int64)
    partitions = PartitionChoices(np.concatenate(([0], np.cumsum(lens))),
                                  np.array([p for c in choices for p in c], dtype=np.int32))
    accounts = [norm.account or account for norm, _, _ in items]
    account_names = sorted(set(accounts))
    qos = [norm.qos or DEFAULT_QOS for norm, _, _ in items]
    qos_names = sorted(set(qos)) or [DEFAULT_QOS]
    per_row = {"user": np.zeros(len(items), dtype=np.int32),
               "account": np.array([account_names.index(a) for a in accounts], dtype=np.int32),
               "qos": np.array([qos_names.index(q) for q in qos], dtype=np.int32),
               "name": np.array([norm.job_name or "" for norm, _, _ in items] + [None],
                                dtype=object)[:-1]}
    topo = np.array([norm.exclusive == "topo" for norm, _, _ in items], dtype=np.bool_)
    if topo.any():
        per_row["exclusive_topo"] = topo
    images = [norm.container.get("container-image") or "" for norm, _, _ in items]
    if any(images):
        per_row["container_image"] = np.array(images + [None], dtype=object)[:-1]
    if any(norm.reservation for norm, _, _ in items):
        per_row["reservation"] = np.array([norm.reservation or "" for norm, _, _ in items]
                                          + [None], dtype=object)[:-1]
    if any(norm.requeue is not None for norm, _, _ in items):
        per_row["requeue"] = np.array([-1 if norm.requeue is None else int(norm.requeue)
                                       for norm, _, _ in items], dtype=np.int8)
    # elastic: from MAX down to MIN nodes (a single count: down to one, as Slurm does)
    if any(norm.no_kill for norm, _, _ in items):
        per_row["no_kill"] = np.array([norm.no_kill for norm, _, _ in items], dtype=np.bool_)
        per_row["nodes_min"] = np.array([norm.num_nodes if norm.no_kill and
                                         norm.max_nodes > norm.num_nodes else 0
                                         for norm, _, _ in items], dtype=np.int64)
    if any(norm.time_min for norm, _, _ in items):
        per_row["time_min"] = np.array([norm.time_min or 0 for norm, _, _ in items],
                                       dtype=np.int64)
    built = build_jobs(rows, partitions, per_row, dependency=dependency, arrays=arrays,
                       tasks=None, where=lambda r: (f"request {r}", None))
    return _assemble(built, [user], account_names, np.arange(len(account_names)),
                     list(account_names), qos_names)


#: column -> largest value a row may give (larger ones cannot be stored or would overflow
#: the engine's time arithmetic; see fastsched.model.validation). Time limits and runtimes have
#: none: a limit beyond jobs.UNLIMITED (2**63 - 1, say) is unlimited, and a job runs
#: at most its limit.
_MAXIMA = {"submit_time": MAX_SECONDS,
           "num_nodes": MAX_COUNT, "gpus_per_node": MAX_COUNT, "cpus_per_node": MAX_COUNT,
           "mem_per_node": MAX_MEMORY_MB}


def _check_values(cols: dict, fname: str) -> None:
    check_range(cols["job_id"], cols["job_id"] < 0, fname, "job_id", "must be >= 0")
    check_range(cols["submit_time"], cols["submit_time"] < 0, fname, "submit_time",
                 "must be >= 0")
    check_range(cols["time_limit"], cols["time_limit"] < 1, fname, "time_limit", "must be >= 1")
    check_range(cols["runtime"], cols["runtime"] < 0, fname, "runtime", "must be >= 0")
    check_range(cols["num_nodes"], cols["num_nodes"] < 1, fname, "num_nodes", "must be >= 1")
    for col in ("gpus_per_node", "cpus_per_node", "mem_per_node"):
        check_range(cols[col], cols[col] < 0, fname, col, "must be >= 0")
    for col, most in _MAXIMA.items():
        check_range(cols[col], cols[col] > most, fname, col,
                     f"is out of range (at most {most:,})")


def _assemble(built: dict, user_names, account_names, org_of_account, org_names,
              qos_names) -> Workload:
    jobs = JobTable.from_arrays(**{c: built[c] for c in (
        "job_id", "submit_time", "time_limit", "runtime", "num_nodes", "cpus_per_node",
        "gpus_per_node", "mem_per_node", "partition", "user")})
    return Workload(jobs, built["account"], user_names, account_names, org_of_account,
                    org_names, qos=built.get("qos"), qos_names=qos_names,
                    name=built.get("name"), dependencies=built["dependencies"],
                    partitions=built["partitions"], array_job=built["array_job"],
                    array_task=built["array_task"], limits=built["limits"],
                    exclusive_topo=built.get("exclusive_topo"), requeue=built.get("requeue"),
                    checkpoint_interval=built.get("checkpoint_interval"),
                    checkpoint_cost=built.get("checkpoint_cost"),
                    no_kill=built.get("no_kill"), nodes_min=built.get("nodes_min"),
                    time_min=built.get("time_min"), container_image=built.get("container_image"),
                    gpu_type=built.get("gpu_type"), reservation=built.get("reservation"))


def _partition_choices(codes, uniques: list[str], cluster: Cluster,
                       fname: str) -> PartitionChoices:
    """Per-row partition lists from the distinct ``partition`` values (``"a,b"`` = a list)."""
    part_names = [p.name for p in cluster.partitions]
    lists = []
    for k, text in enumerate(uniques):
        items = [x.strip() for x in text.split(",")]
        unknown = [name for name in items if name not in part_names]
        if unknown or len(set(items)) != len(items):
            what = (f"partition listed twice in {text!r}" if not unknown else
                    f"{'empty partition name' if not unknown[0] else repr(unknown[0])} in "
                    f"{text!r} is not a partition of the cluster {part_names}")
            raise InputError(what, file=fname, line=int(np.flatnonzero(codes == k)[0]) + 2,
                             field="partition")
        lists.append([part_names.index(x) for x in items])
    if all(len(x) == 1 for x in lists):
        return one_partition_each(np.array([x[0] for x in lists], dtype=np.int32)[codes])
    from ..model.constraints import csr_take
    lens = np.array([len(x) for x in lists], dtype=np.int64)
    u_offsets = np.concatenate(([0], np.cumsum(lens)))
    u_values = np.array([p for x in lists for p in x], dtype=np.int32)
    offsets, index = csr_take(u_offsets, codes)
    return PartitionChoices(offsets, u_values[index])


def _task_columns(frame, fname: str):
    """(array_job, array_task, throttle) per row from the expanded-task columns, or None."""
    present = [c for c in _TASK_COLUMNS if c in frame.columns]
    if not present:
        return None
    for col in _TASK_COLUMNS[:2]:
        if col not in frame.columns:
            raise InputError(f"column {present[0]!r} needs column {col!r}", file=fname, line=1,
                             field=col)
    out = []
    for col, empty in zip(_TASK_COLUMNS, (-1, -1, 0)):
        if col not in frame.columns:
            out.append(np.zeros(len(frame), dtype=np.int64))
            continue
        series = frame[col]
        if series.dtype != np.int64:
            series = series.where(series.astype(str).str.strip() != "", str(empty))
        values = int_column(series, fname, col)
        check_range(values, values < empty, fname, col, f"must be >= {empty} (or empty)")
        out.append(values)
    array_job, array_task, throttle = out
    bad = ((array_job < 0) != (array_task < 0)) | ((array_job < 0) & (throttle > 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError("array_job_id, array_task_id (and array_task_throttle) must be "
                         "given together", file=fname, line=i + 2, field="array_task_id")
    return array_job, array_task, throttle
