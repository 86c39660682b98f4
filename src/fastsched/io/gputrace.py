"""GPU-cluster traces (Philly, Alibaba PAI, Helios, GPU job lists; parsed by
:mod:`fastsched.io.gpureaders`) as a workload on a cluster.

Rules, for what these traces leave out:

* **Cluster.** ``cluster`` when given (jobs that cannot run on it are skipped,
  listed). Else a PAI trace uses its node list when one is next to it
  (``openb_node_list_all_node.csv``, else ``openb_node_list_gpu_node.csv``: every
  node with its CPUs, memory, GPUs and GPU model). Else the cluster is *derived*,
  with a :class:`~fastsched.model.errors.ConfigWarning` saying so: identical nodes of
  ``gpus_per_node`` GPUs (default 8), as many CPUs as the largest per-node request
  (at least one per GPU), as much memory as the largest per-node request, and as many nodes as the trace's peak needs: the most GPUs (and
  CPUs) its jobs held at once (from the recorded starts, or from the submit times
  when a trace records none), or the GPUs Helios' ``cluster_gpu_number.csv`` next to
  the log declares (its largest daily ``total``), and at least the largest job.
* **Job shape.** G GPUs on nodes of g GPUs: the recorded node count when it divides
  G into at most g per node, else ceil(G / g) nodes of ceil(G / nodes) GPUs. CPUs and
  memory per node: the job's totals divided by its nodes, rounded up (at least 1
  CPU).
* **Fractional GPUs** (PAI's GPU-sharing pods): ``fractional="round-up"`` (default)
  plans each as one whole GPU; ``fractional`` counts them (every entry of the trace,
  run or not, as published shares count them); ``"drop"`` leaves them
  out (listed in ``skipped``); ``"error"`` makes the first an InputError.
* **Time limits.** The traces record none, so a job's limit is derived from its run
  time (a ConfigWarning says so): ``limits="round"`` (default) takes the first of 1,
  2, 4, 8, 12 h, 1, 2, 3, 7, 14, 30 days that is at least the run time (as users
  pick round limits; beyond 30 days, whole days); ``"exact"``: the run time itself
  (perfect estimates).
* A GPU job list (:mod:`fastsched.io.gpujobs`) keeps the time limits and partitions
  it gives (a partition ``cluster`` lacks skips the job, listed; on a derived cluster
  partitions are ignored, said in ``notes``); the rules above fill in the rest.
* Jobs that never ran or were still running (no start or end) are skipped, listed
  with the reason; recorded waits stay in ``recorded_start``.
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..model.cluster import Cluster
from ..model.errors import ConfigWarning, InputError
from ..model.validation import request_capacity
from .gpujobs import parse_gpujobs
from .gpureaders import GPU_FORMATS, TraceColumns, parse_gpu_trace, sniff_gpu_format
from .swf import SkippedJob
from .workload import Workload

__all__ = ["GpuTrace", "read_gpu_trace", "read_pai_nodes", "derive_limits", "FRACTIONAL",
           "LIMIT_STEPS"]

FRACTIONAL = ("round-up", "drop", "error")
LIMIT_RULES = ("round", "exact")
#: the limits ``limits="round"`` chooses from (seconds)
LIMIT_STEPS = np.array([1, 2, 4, 8, 12, 24, 48, 72, 168, 336, 720], np.int64) * 3600
_PAI_NODE_FILES = ("openb_node_list_all_node.csv", "openb_node_list_gpu_node.csv")


@dataclass
class GpuTrace:
    """A GPU trace read as a workload: ``workload`` (jobs sorted by submit time;
    accounts are the trace's VCs or QOS classes, names its job ids), the ``cluster``
    it runs on (``derived``: made up by the rules above), per job its
    ``recorded_start`` (-1: none) and recorded ``state``, the ``skipped`` entries
    and ``notes`` (derivations, counts)."""

    path: str
    format: str
    workload: Workload
    cluster: Cluster
    derived: bool
    recorded_start: np.ndarray
    state: np.ndarray
    skipped: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    fractional: int = 0

    @property
    def jobs(self):
        return self.workload.jobs


def derive_limits(runtime: np.ndarray, rule: str = "round") -> np.ndarray:
    """Time limits from run times (module docs): ``round`` or ``exact``."""
    runtime = np.maximum(np.asarray(runtime, dtype=np.int64), 1)
    if rule == "exact":
        return runtime
    if rule != "round":
        raise InputError(f"limits must be one of {', '.join(LIMIT_RULES)}, got {rule!r}",
                         field="limits")
    k = np.searchsorted(LIMIT_STEPS, runtime)
    days = -(-runtime // 86_400) * 86_400
    return np.where(k < len(LIMIT_STEPS), LIMIT_STEPS[np.minimum(k, len(LIMIT_STEPS) - 1)],
                    days)


def read_pai_nodes(path) -> Cluster:
    """A PAI node list (``sn, cpu_milli, memory_mib, gpu, model``) as a cluster: one
    partition ``all``, each node's GPUs typed by its model."""
    from .gpureaders import _Csv
    csv = _Csv(str(path))
    csv.need("sn", "cpu_milli", "gpu")
    gpus = csv.numbers("gpu").astype(np.int64)
    model = np.where(gpus > 0, csv.text("model"), "")
    model = np.where(np.isin(model, ["nan", "NaN"]), "", model)
    types = np.empty(len(gpus), dtype=object)
    for i, (m, g) in enumerate(zip(model.tolist(), gpus.tolist())):
        types[i] = ((str(m), int(g)),) if g else ()
    kinds = {t for t in model.tolist() if t}
    return Cluster(csv.text("sn").astype(str).tolist(),
                   np.floor(csv.numbers("cpu_milli") / 1000).astype(np.int64), gpus,
                   csv.numbers("memory_mib", empty=0).astype(np.int64)
                   if "memory_mib" in csv.frame.columns else np.zeros(len(gpus), np.int64),
                   gpu_type=next(iter(kinds)) if len(kinds) == 1 else "", gpu_types=types)


def read_gpu_trace(path, fmt: str = "auto", cluster: Cluster | None = None, *,
                   gpus_per_node: int = 8, fractional: str = "round-up",
                   limits: str = "round") -> GpuTrace:
    """Read a Philly, PAI or Helios trace or a GPU job list (``fmt``: one of
    :data:`~fastsched.io.gpureaders.GPU_FORMATS`, or ``auto``: by content) as a workload
    on ``cluster`` (None: the rules in the module docs)."""
    path = str(path)
    if fractional not in FRACTIONAL:
        raise InputError(f"fractional must be one of {', '.join(FRACTIONAL)}, got "
                         f"{fractional!r}", field="fractional")
    if fmt == "auto":
        fmt = sniff_gpu_format(path)
        if fmt is None:
            raise InputError("not a Philly, PAI, Helios trace or GPU job list (give the "
                             "format)", file=path)
    if fmt not in GPU_FORMATS:
        raise InputError(f"unknown GPU trace format {fmt!r}", field="format")
    cols = parse_gpujobs(path) if fmt == "gpujobs" else parse_gpu_trace(path, fmt)
    notes = list(cols.notes)
    keep, skipped, count = _usable(cols, path, fractional)
    gpus = cols.whole_gpus
    derived = False
    if cluster is None and fmt == "pai":
        cluster = _pai_node_list(path, notes)
    if cluster is None:
        declared = _helios_gpus(path, notes) if fmt == "helios" else 0
        cluster = _derived_cluster(cols, gpus, keep, gpus_per_node, path, declared)
        derived = True
        if cols.partition is not None and (cols.partition != "").any():
            notes.append("partitions ignored: the derived cluster has one (give --cluster)")
            cols.partition = None
    workload, start, state, more = _workload(cols, gpus, keep, cluster, limits, path)
    skipped.extend(more)
    if count:
        notes.append(f"{count:,} job(s) of the trace use a fraction of a GPU: " + (
            "each planned as one whole GPU" if fractional == "round-up" else "left out"))
    return GpuTrace(path, fmt, workload, cluster, derived, start, state,
                    sorted(skipped, key=lambda s: s.line), notes, count)


def _usable(cols: TraceColumns, path: str, fractional: str):
    """(bool per entry: it can be replayed, SkippedJob list, fractional count)."""
    frac = cols.shared
    if frac.any() and fractional == "error":
        i = int(np.flatnonzero(frac)[0])
        raise InputError(f"job {cols.job_text[i]} uses part of a GPU ({cols.gpus[i]:g} GPUs "
                         "in all; --fractional round-up or drop)", file=path,
                         line=int(cols.line[i]), field="gpus")
    why = np.full(len(cols.gpus), "", dtype=object)
    why[cols.runtime < 0] = "never ran or was still running (no start or end)"
    why[cols.submit < 0] = "no submit time"
    if fractional == "drop":
        why[frac & (why == "")] = f"uses a fraction of a GPU (fractional={fractional})"
    keep = why == ""
    skipped = [SkippedJob(_number(cols.job_text[i]), int(cols.line[i]),
                          _named(cols.job_text[i], why[i]))
               for i in np.flatnonzero(~keep).tolist()]
    return keep, skipped, int(frac.sum())


def _named(text, reason: str) -> str:
    """``reason``, after the job's name when that is not its number."""
    return reason if _number(text) >= 0 else f"{text}: {reason}"


def _number(text) -> int:
    text = str(text)
    return int(text) if text.isdigit() and len(text) < 19 else -1


def _pai_node_list(path: str, notes: list) -> Cluster | None:
    folder = os.path.dirname(os.path.abspath(path))
    for name in _PAI_NODE_FILES:
        nodes = os.path.join(folder, name)
        if os.path.isfile(nodes):
            cluster = read_pai_nodes(nodes)
            notes.append(f"cluster: {cluster.num_nodes:,} nodes, {int(cluster.gpus.sum()):,} "
                         f"GPUs from {name}")
            return cluster
    return None


def _shape(cols: TraceColumns, gpus: np.ndarray, per_node_gpus: int):
    """(nodes, GPUs per node, CPUs per node, MB per node) per entry (module docs)."""
    g = max(int(per_node_gpus), 1)
    rec = cols.nodes
    even = (rec > 0) & (gpus % np.maximum(rec, 1) == 0) & (gpus // np.maximum(rec, 1) <= g)
    nodes = np.where(gpus > 0, np.maximum(-(-gpus // g), 1), np.maximum(rec, 1))
    nodes = np.where(even, rec, nodes)
    per = -(-gpus // nodes)
    cpus = np.maximum(-(-cols.cpus // nodes), 1)
    mem = -(-cols.mem_mb // nodes)
    return nodes, per, cpus, mem


def _peak(begin: np.ndarray, end: np.ndarray, amount: np.ndarray) -> int:
    """The most of ``amount`` held at once by intervals [begin, end)."""
    if not len(begin):
        return 0
    times = np.concatenate([begin, end])
    delta = np.concatenate([amount, -amount])
    order = np.lexsort((delta, times))          # at one instant, releases first
    return int(np.cumsum(delta[order]).max(initial=0))


def _helios_gpus(path: str, notes: list) -> int:
    """The most GPUs Helios' ``cluster_gpu_number.csv`` next to the log declares (its
    daily ``total``), else 0."""
    from .gpureaders import _Csv
    table = os.path.join(os.path.dirname(os.path.abspath(path)), "cluster_gpu_number.csv")
    if not os.path.isfile(table):
        return 0
    csv = _Csv(table)
    csv.need("total")
    total = int(csv.numbers("total").max(initial=0))
    notes.append(f"cluster size: {total:,} GPUs, the most cluster_gpu_number.csv declares")
    return total


def _derived_cluster(cols: TraceColumns, gpus: np.ndarray, keep: np.ndarray,
                     gpus_per_node: int, path: str, declared: int = 0) -> Cluster:
    nodes, per, cpus, mem = (a[keep] for a in _shape(cols, gpus, gpus_per_node))
    begin = np.where(cols.start >= 0, cols.start, cols.submit)[keep]
    end = begin + cols.runtime[keep]
    peak_gpus = _peak(begin, end, nodes * per)
    g = max(int(gpus_per_node), 1)
    cpn = max(int(cpus.max(initial=1)), g)        # a CPU per GPU at least: 8 1-GPU jobs fit
    peak_cpus = _peak(begin, end, nodes * np.where(cols.cpus[keep] > 0, cpus, 0))
    need = declared or peak_gpus
    n = max(-(-need // g), -(-peak_cpus // cpn), int(nodes.max(initial=1)), 1)
    mem_mb = int(mem.max(initial=0))
    warnings.warn(ConfigWarning(
        f"{path}: the trace gives no cluster: derived {n:,} nodes x {g} GPUs, {cpn} CPUs"
        + (f", {mem_mb:,} MB" if mem_mb else "") + f" (peak {peak_gpus:,} GPUs"
        + (f", {peak_cpus:,} CPUs" if peak_cpus else "") + " held at once"
        + (f"; {declared:,} GPUs declared" if declared else "") + "; give --cluster to "
        "choose)"), stacklevel=3)
    return Cluster.homogeneous(n, cpus=cpn, gpus=g, mem_mb=mem_mb, prefix="gpu")


def _workload(cols: TraceColumns, gpus: np.ndarray, keep: np.ndarray, cluster: Cluster,
              limits: str, path: str):
    """(Workload, recorded start, state, SkippedJob list of jobs the cluster cannot
    run) of the kept entries, sorted by submit time."""
    from ..model.jobs import JobTable
    part, more = _partitions(cols, keep, cluster, path)
    keep = keep & (part >= 0)
    part_nodes = [p.nodes for p in cluster.partitions]
    per_node = int(cluster.gpus[part_nodes[cluster.default_partition_index()]].max(initial=0))
    nodes, per, cpus, mem = _shape(cols, gpus, per_node)
    fits = request_capacity(part_nodes, np.maximum(part, 0), per, cpus, mem, cluster) >= nodes
    more += [SkippedJob(_number(cols.job_text[i]), int(cols.line[i]), _named(
        cols.job_text[i], f"cannot run on this cluster ({nodes[i]} node(s) x {per[i]} GPUs, "
                          f"{cpus[i]} CPUs)")) for i in np.flatnonzero(keep & ~fits).tolist()]
    rows = np.flatnonzero(keep & fits)
    rows = rows[np.argsort(cols.submit[rows], kind="stable")]
    texts = cols.job_text[rows]
    import pandas as pd
    as_text = pd.Series(texts, dtype=object).astype(str)
    numeric = bool(as_text.str.fullmatch(r"[0-9]{1,17}").all())
    ids = texts.astype(np.int64) if numeric and as_text.is_unique else cols.line[rows]
    runtime = cols.runtime[rows]
    given = cols.limit[rows] if cols.limit is not None else np.full(len(rows), -1, np.int64)
    missing = int((given < 0).sum())
    if missing:
        warnings.warn(ConfigWarning(
            f"{path}: " + ("the trace gives no time limits: each is" if missing == len(rows)
                           else f"{missing:,} job(s) without a time limit: theirs")
            + f" derived from the job's run time (limits={limits}: "
            + ("the next of 1, 2, 4, 8, 12 h, 1, 2, 3, 7, 14, 30 days)" if limits == "round"
               else "the run time itself)")), stacklevel=3)
    users, user_idx = _factor(cols.user[rows], "unknown")
    groups, group_idx = _factor(cols.group[rows], "default")
    jobs = JobTable.from_arrays(
        job_id=ids, submit_time=cols.submit[rows],
        time_limit=np.where(given > 0, given, derive_limits(runtime, limits)),
        runtime=runtime, num_nodes=nodes[rows], cpus_per_node=cpus[rows],
        gpus_per_node=per[rows], mem_per_node=mem[rows], partition=part[rows], user=user_idx)
    workload = Workload(jobs=jobs, account=group_idx, user_names=users, account_names=groups,
                        org_of_account=np.zeros(len(groups), np.int32), org_names=["trace"],
                        name=texts.astype(object))
    return workload, cols.start[rows], cols.state[rows], more


def _partitions(cols: TraceColumns, keep: np.ndarray, cluster: Cluster, path: str):
    """(partition index per entry, -1: skipped; SkippedJob list): the entry's partition
    when it names one the cluster has, else the default partition."""
    default = cluster.default_partition_index()
    part = np.full(len(keep), default, np.int32)
    if cols.partition is None or not (cols.partition != "").any():
        return part, []
    names, codes = np.unique(cols.partition.astype(str), return_inverse=True)
    have = {p.name: k for k, p in enumerate(cluster.partitions)}
    index = np.array([default if n == "" else have.get(n, -1) for n in names.tolist()],
                     np.int32)
    part = index[codes.ravel()]
    skipped = [SkippedJob(_number(cols.job_text[i]), int(cols.line[i]), _named(
        cols.job_text[i], f"partition {cols.partition[i]!r} is not in the cluster (it has "
                          f"{', '.join(have)})")) for i in np.flatnonzero(keep & (part < 0))]
    return part, skipped


def _factor(values: np.ndarray, empty: str):
    import pandas as pd
    values = np.where(values == "", empty, values).astype(object)
    codes, uniques = pd.factorize(values)
    return [str(u) for u in uniques] or [empty], codes.astype(np.int32)
