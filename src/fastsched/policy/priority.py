"""Slurm's multifactor job priority, and the queue orders of scheduling research.

:func:`multifactor` computes Slurm's integer job priority (priority/multifactor)
for every pending job in one compiled pass over NumPy arrays::

    priority = w_age * age + w_fs * fairshare + w_js * job_size
             + w_part * partition + w_qos * qos + site - nice
             + sum_t w_tres[t] * alloc[t] / total[t]

clamped to at least 1, truncated to an integer and capped at 2^32 - 1 as
Slurm does. :class:`PriorityWeights` holds the slurm.conf parameters.

:func:`research_order` scores jobs for FCFS, SJF, WFP3, UNICEP and F1-F4; a
lower score goes first. See ``docs/priority.md`` for the formulas and sources.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
import numpy as np
from numba import njit

from ..model.errors import InputError
from ..model.jobs import JobTable

__all__ = ["PriorityWeights", "multifactor", "research_order", "research_queue",
           "RESEARCH_ORDERS", "TRES_NAMES", "MAX_WEIGHT", "MAX_PRIORITY"]

#: PriorityWeight* are uint32 in slurm.conf.
MAX_WEIGHT = 0xFFFFFFFF
#: Slurm's job priority is a uint32 (0 is reserved for held jobs).
MAX_PRIORITY = 0xFFFFFFFF
#: TRES a JobTable row allocates, in the order the kernel sums them.
TRES_NAMES = ("CPU", "Mem", "Node", "GRES/gpu")
_NICE_LIMIT = 2147483645          # |nice| accepted by Slurm (NICE_OFFSET - 3)


def _check_weight(name: str, value) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{name} must be an integer, got {value!r}", field=name)
    v = int(value)
    if not 0 <= v <= MAX_WEIGHT:
        raise InputError(f"{name} must be in 0..{MAX_WEIGHT}, got {v}", field=name)
    return v


@dataclass(frozen=True)
class PriorityWeights:
    """slurm.conf priority parameters (names as in slurm.conf).

    Weights are integers 0..4294967295; ``PriorityWeightTRES`` maps TRES names
    (``CPU``, ``Mem``, ``Node``, ``GRES/gpu``) to finite weights >= 0 (Slurm
    parses them as floating point); ``PriorityMaxAge`` is seconds (> 0,
    Slurm's default 7-0 = 604800); ``PriorityFavorSmall`` a bool.
    """

    PriorityWeightAge: int = 0
    PriorityWeightFairshare: int = 0
    PriorityWeightJobSize: int = 0
    PriorityWeightPartition: int = 0
    PriorityWeightQOS: int = 0
    PriorityWeightTRES: Mapping[str, float] = field(default_factory=dict)
    PriorityMaxAge: int = 7 * 86400
    PriorityFavorSmall: bool = False

    def __post_init__(self):
        for name in ("PriorityWeightAge", "PriorityWeightFairshare", "PriorityWeightJobSize",
                     "PriorityWeightPartition", "PriorityWeightQOS"):
            object.__setattr__(self, name, _check_weight(name, getattr(self, name)))
        tres = {}
        if not isinstance(self.PriorityWeightTRES, Mapping):
            raise InputError("PriorityWeightTRES must be a mapping TRES name -> weight",
                             field="PriorityWeightTRES")
        for k, w in self.PriorityWeightTRES.items():
            if k not in TRES_NAMES:
                raise InputError(f"PriorityWeightTRES: unknown TRES {k!r} "
                                 f"(known: {', '.join(TRES_NAMES)})", field="PriorityWeightTRES")
            try:
                wf = float(w)
            except (TypeError, ValueError):
                raise InputError(f"PriorityWeightTRES: {k}={w!r} is not a number",
                                 field="PriorityWeightTRES") from None
            if not (np.isfinite(wf) and 0 <= wf <= MAX_WEIGHT):
                raise InputError(f"PriorityWeightTRES: {k}={w!r} must be in 0..{MAX_WEIGHT}",
                                 field="PriorityWeightTRES")
            tres[k] = wf
        object.__setattr__(self, "PriorityWeightTRES", tres)
        age = self.PriorityMaxAge
        if isinstance(age, (bool, np.bool_)) or not isinstance(age, (int, np.integer)) \
                or not 0 < int(age) <= MAX_WEIGHT:
            raise InputError(f"PriorityMaxAge must be an integer number of seconds in "
                             f"1..{MAX_WEIGHT}, got {age!r}", field="PriorityMaxAge")
        object.__setattr__(self, "PriorityMaxAge", int(age))
        if not isinstance(self.PriorityFavorSmall, (bool, np.bool_)):
            raise InputError(f"PriorityFavorSmall must be a bool, got "
                             f"{self.PriorityFavorSmall!r}", field="PriorityFavorSmall")

    def tres_vector(self) -> np.ndarray:
        """float64[len(TRES_NAMES)]: TRES weights in kernel order (0 if unset)."""
        return np.array([self.PriorityWeightTRES.get(t, 0.0) for t in TRES_NAMES])


# --------------------------------------------------------------------------- kernel

@njit(cache=True, nogil=True)
def _multifactor_kernel(submit, num_nodes, cpus_per_node, mem_per_node, gpus_per_node,
                        partition, now, max_age, w_age, w_fs, w_js, w_part, w_qos,
                        w_tres, favor_small, total_nodes, total_cpus,
                        fs_values, fs_index, use_fs_index, fs_step,
                        part_factor, qos, qos_step, site, site_step, nice, nice_step,
                        tres_total, out):
    """Slurm multifactor priority of every job.

    submit int64[n] (accrue time); num_nodes, cpus_per_node, gpus_per_node,
    partition int32[n]; mem_per_node int64[n]; now int64; max_age float64;
    w_* float64; w_tres float64[4] (TRES_NAMES order); favor_small bool;
    total_nodes, total_cpus float64; fs_values float64[m]; fs_index int32[n]
    (used iff use_fs_index, else fs_values[i * fs_step]); part_factor
    float64[P]; qos float64[*] (qos[i * qos_step]); site, nice int64[*];
    tres_total float64[4, P]; out int64[n] (written).
    """
    n = submit.shape[0]
    for i in range(n):
        # age: min(now - accrue, max_age) / max_age, 0 before accrue
        age = 0.0
        if now > submit[i]:
            diff = float(now - submit[i])
            age = 1.0 if diff >= max_age else diff / max_age
        if use_fs_index:
            fs = fs_values[fs_index[i]]
        else:
            fs = fs_values[i * fs_step]
        # job size (PriorityFavorSmall, not SMALL_RELATIVE_TO_TIME)
        nodes = float(num_nodes[i])
        cpus = float(num_nodes[i]) * float(cpus_per_node[i])
        if favor_small:
            js = (total_nodes - nodes) / total_nodes
            if cpus > 0:
                js = (js + (total_cpus - cpus) / total_cpus) / 2.0
        else:
            js = nodes / total_nodes
            if cpus > 0:
                js = (js + cpus / total_cpus) / 2.0
        if js < 0.0:
            js = 0.0
        elif js > 1.0:
            js = 1.0
        p = partition[i]
        prio = (age * w_age + fs * w_fs + js * w_js + part_factor[p] * w_part
                + qos[i * qos_step] * w_qos
                + float(site[i * site_step]) - float(nice[i * nice_step]))
        # TRES: allocated / partition total, times weight, in TRES_NAMES order
        alloc0 = cpus
        alloc1 = nodes * float(mem_per_node[i])
        alloc2 = nodes
        alloc3 = nodes * float(gpus_per_node[i])
        if w_tres[0] != 0.0 and alloc0 != 0.0 and tres_total[0, p] > 0.0:
            prio += alloc0 / tres_total[0, p] * w_tres[0]
        if w_tres[1] != 0.0 and alloc1 != 0.0 and tres_total[1, p] > 0.0:
            prio += alloc1 / tres_total[1, p] * w_tres[1]
        if w_tres[2] != 0.0 and alloc2 != 0.0 and tres_total[2, p] > 0.0:
            prio += alloc2 / tres_total[2, p] * w_tres[2]
        if w_tres[3] != 0.0 and alloc3 != 0.0 and tres_total[3, p] > 0.0:
            prio += alloc3 / tres_total[3, p] * w_tres[3]
        # 0 is reserved for held jobs; the priority is a uint32
        if prio < 1.0:
            prio = 1.0
        if prio > 4294967295.0:
            out[i] = 4294967295
        else:
            out[i] = np.int64(prio)        # truncation, as (uint64_t) in C


def _vector(x, n: int, dtype, name: str):
    """(array, step): a per-job array (step 1) or a scalar (length 1, step 0)."""
    a = np.asarray(x, dtype=dtype)
    if a.ndim == 0:
        return a.reshape(1), 0
    if a.shape != (n,):
        raise InputError(f"{name} has shape {a.shape}, expected a scalar or ({n},)", field=name)
    return np.ascontiguousarray(a), 1


def _check_unit(a: np.ndarray, name: str) -> None:
    # min and max carry a NaN through and an infinity lies outside [0, 1]: two
    # reductions check it all (this runs every PriorityCalcPeriod of a replay)
    if a.size and not (a.min() >= 0 and a.max() <= 1):
        bad = int(np.flatnonzero(~((a >= 0) & (a <= 1)))[0])
        raise InputError(f"{name}[{bad}] = {float(a.flat[bad])} is outside [0, 1]", field=name)


def multifactor(jobs: JobTable, now: int, weights: PriorityWeights, *,
                fairshare=0.0, fairshare_index=None, partition_factor=None,
                qos_factor=0.0, site=0, nice=0, cluster=None,
                total_nodes: int | None = None, total_cpus: int | None = None,
                tres_totals: Mapping[str, object] | None = None,
                accrue_time=None) -> np.ndarray:
    """int64[n]: Slurm multifactor priority of each job at time ``now``.

    * ``fairshare``: per-job factors in [0, 1] (or a scalar); with
      ``fairshare_index`` (int array, one per job) it is a per-association
      array (e.g. from :func:`fastsched.policy.fairshare.fair_tree`) gathered per job.
    * ``partition_factor``: per-partition normalised PriorityJobFactor
      (PriorityJobFactor / max over partitions), indexed by ``jobs.partition``;
      default 0.
    * ``qos_factor``: per-job (or scalar) normalised QOS priority in [0, 1].
    * ``site``, ``nice``: per-job (or scalar) integers, |value| <= 2147483645.
    * ``cluster`` (a :class:`~fastsched.Cluster`) or ``total_nodes`` /
      ``total_cpus``: sizes for the job-size factor; ``tres_totals`` maps TRES
      name to a total (scalar, or per-partition array) for the TRES factors,
      default the cluster's totals (CPU, Mem in MB, Node, GRES/gpu).
    * ``accrue_time``: when each job starts accruing age (default submit time).
    """
    if not isinstance(weights, PriorityWeights):
        raise InputError("weights must be a PriorityWeights")
    n = len(jobs)
    now = int(now)
    if cluster is not None:
        total_nodes = cluster.num_nodes if total_nodes is None else total_nodes
        total_cpus = int(cluster.cpus.sum()) if total_cpus is None else total_cpus
    if total_nodes is None or total_cpus is None:
        if weights.PriorityWeightJobSize:
            raise InputError("job-size factor needs cluster= or total_nodes and total_cpus")
        total_nodes = total_nodes or 1
        total_cpus = total_cpus or 1
    if int(total_nodes) < 1 or int(total_cpus) < 1:
        raise InputError(f"cluster totals must be >= 1 (nodes {total_nodes}, cpus {total_cpus})")

    num_parts = int(jobs.partition.max()) + 1 if n else 1
    if n and jobs.partition.min() < 0:
        raise InputError("job partition index must be >= 0", field="partition")
    if partition_factor is None:
        part = np.zeros(num_parts)
    else:
        part = np.ascontiguousarray(partition_factor, dtype=np.float64).reshape(-1)
        if len(part) < num_parts:
            raise InputError(f"partition_factor has {len(part)} entries, jobs use partition "
                             f"index {num_parts - 1}", field="partition_factor")
        _check_unit(part, "partition_factor")
    num_parts = max(num_parts, len(part))

    if fairshare_index is not None:
        fs_values = np.ascontiguousarray(fairshare, dtype=np.float64).reshape(-1)
        fs_index = np.ascontiguousarray(fairshare_index, dtype=np.int32)
        if fs_index.shape != (n,):
            raise InputError(f"fairshare_index has shape {fs_index.shape}, expected ({n},)",
                             field="fairshare_index")
        if n and (fs_index.min() < 0 or fs_index.max() >= len(fs_values)):
            raise InputError(f"fairshare_index out of range 0..{len(fs_values) - 1}",
                             field="fairshare_index")
        use_index, fs_step = True, 0
    else:
        fs_values, fs_step = _vector(fairshare, n, np.float64, "fairshare")
        fs_index = np.zeros(1, dtype=np.int32)
        use_index = False
    _check_unit(fs_values, "fairshare")
    qos, qos_step = _vector(qos_factor, n, np.float64, "qos_factor")
    _check_unit(qos, "qos_factor")
    site_a, site_step = _vector(site, n, np.int64, "site")
    nice_a, nice_step = _vector(nice, n, np.int64, "nice")
    for name, a in (("site", site_a), ("nice", nice_a)):
        if a.size and np.abs(a).max() > _NICE_LIMIT:
            raise InputError(f"{name} must be within +-{_NICE_LIMIT}", field=name)

    tres_total = np.zeros((len(TRES_NAMES), num_parts))
    defaults = {}
    if cluster is not None:
        defaults = {"CPU": float(cluster.cpus.sum()), "Mem": float(cluster.mem_mb.sum()),
                    "Node": float(cluster.num_nodes), "GRES/gpu": float(cluster.gpus.sum())}
    given = dict(tres_totals or {})
    for k in given:
        if k not in TRES_NAMES:
            raise InputError(f"tres_totals: unknown TRES {k!r}", field="tres_totals")
    for t, name in enumerate(TRES_NAMES):
        if weights.PriorityWeightTRES.get(name, 0.0) == 0.0:
            continue
        if name in given:
            v = np.asarray(given[name], dtype=np.float64)
        elif name in defaults:
            v = np.asarray(defaults[name])
        else:
            raise InputError(f"PriorityWeightTRES {name} needs tres_totals[{name!r}] or cluster=",
                             field="tres_totals")
        if np.any(~np.isfinite(v)) or np.any(v < 0):
            raise InputError(f"tres_totals[{name!r}] must be finite and >= 0")
        if v.ndim == 0:
            tres_total[t, :] = v
        elif v.shape == (num_parts,):
            tres_total[t, :] = v
        else:
            raise InputError(f"tres_totals[{name!r}] must be a scalar or one per partition "
                             f"({num_parts})", field="tres_totals")

    accrue = jobs.submit_time if accrue_time is None else \
        np.ascontiguousarray(accrue_time, dtype=np.int64)
    if accrue.shape != (n,):
        raise InputError(f"accrue_time has shape {accrue.shape}, expected ({n},)")

    out = np.empty(n, dtype=np.int64)
    _multifactor_kernel(accrue, jobs.num_nodes, jobs.cpus_per_node, jobs.mem_per_node,
                        jobs.gpus_per_node, jobs.partition, now,
                        float(weights.PriorityMaxAge), float(weights.PriorityWeightAge),
                        float(weights.PriorityWeightFairshare),
                        float(weights.PriorityWeightJobSize),
                        float(weights.PriorityWeightPartition), float(weights.PriorityWeightQOS),
                        weights.tres_vector(), bool(weights.PriorityFavorSmall),
                        float(total_nodes), float(total_cpus),
                        fs_values, fs_index, use_index, fs_step, part, qos, qos_step,
                        site_a, site_step, nice_a, nice_step, tres_total, out)
    return out


# --------------------------------------------------------------------------- research orders

def _job_size(jobs: JobTable, size: str) -> np.ndarray:
    nodes = jobs.num_nodes.astype(np.float64)
    if size == "cpus":
        return nodes * jobs.cpus_per_node
    if size == "gpus":
        return nodes * jobs.gpus_per_node
    if size == "nodes":
        return nodes
    raise InputError(f"size must be 'cpus', 'gpus' or 'nodes', got {size!r}", field="size")


def _fcfs(r, n, s, w):
    return s.astype(np.float64)


def _sjf(r, n, s, w):
    return r


def _wfp3(r, n, s, w):
    return -((w / r) ** 3) * n


def _unicep(r, n, s, w):
    with np.errstate(divide="ignore", invalid="ignore"):
        score = -w / (np.log2(n) * r)
    return np.where(n <= 1, -np.inf, score)   # log2(1) = 0: the formula's limit, first


def _log_submit(s):
    return np.log10(np.maximum(s, 1).astype(np.float64))


def _f1(r, n, s, w):
    return np.log10(r) * n + 870.0 * _log_submit(s)


def _f2(r, n, s, w):
    return np.sqrt(r) * n + 25600.0 * _log_submit(s)


def _f3(r, n, s, w):
    return r * n + 6860000.0 * _log_submit(s)


def _f4(r, n, s, w):
    return r * np.sqrt(n) + 530000.0 * _log_submit(s)


#: name -> score(r, n, s, w) with r = requested time (s), n = job size,
#: s = submit time, w = wait at ``now``; lower score goes first.
RESEARCH_ORDERS = {"FCFS": _fcfs, "SJF": _sjf, "WFP3": _wfp3, "UNICEP": _unicep,
                   "F1": _f1, "F2": _f2, "F3": _f3, "F4": _f4}
#: the research orders whose scores change with time (through the wait w)
WAITING_ORDERS = frozenset({"WFP3", "UNICEP"})


def research_order(name: str, jobs: JobTable, now: int, *, size: str = "cpus") -> np.ndarray:
    """float64[n]: score of each job under a named research policy (lower first).

    r = ``time_limit`` (the user's estimate), n = job size (``size``: CPUs =
    num_nodes x cpus_per_node, GPUs or nodes), s = ``submit_time``, w =
    max(now - s, 0). Policies: FCFS (s), SJF (r), WFP3 (-(w/r)^3 n), UNICEP
    (-w / (log2(n) r), n = 1 first), F1 (log10(r) n + 870 log10(s)), F2
    (sqrt(r) n + 25600 log10(s)), F3 (r n + 6860000 log10(s)), F4
    (r sqrt(n) + 530000 log10(s)), with log10(s) taken of max(s, 1). w is the
    textbook wait, not the RLScheduler code's (docs/priority.md, "Research orders").
    """
    key = str(name).upper()
    if key not in RESEARCH_ORDERS:
        raise InputError(f"unknown research order {name!r}; choose one of "
                         f"{', '.join(RESEARCH_ORDERS)}", field="policy")
    if len(jobs) and jobs.time_limit.min() < 1:
        raise InputError("time_limit must be >= 1 s", field="time_limit")
    r = jobs.time_limit.astype(np.float64)
    n = _job_size(jobs, size)
    s = jobs.submit_time
    w = np.maximum(int(now) - s, 0).astype(np.float64)
    return np.asarray(RESEARCH_ORDERS[key](r, n, s, w), dtype=np.float64)


def research_queue(name: str, jobs: JobTable, now: int, *, size: str = "cpus") -> np.ndarray:
    """int64[n]: job positions in queue order: score, then submit time, then job id."""
    score = research_order(name, jobs, now, size=size)
    return np.lexsort((jobs.job_id, jobs.submit_time, score)).astype(np.int64)
