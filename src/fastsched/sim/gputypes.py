"""Typed GPU requests (``--gres=gpu:a100:2``, sacct's ``gres/gpu:a100``) placed only on
nodes with GPUs of that type, without a type in the engine: each partition a typed
job may use becomes a *derived partition* of the nodes of that partition that have
the type.

Slurm places ``gpu:TYPE:N`` only on nodes whose Gres holds that type (``gres.conf``
Type=, slurm.conf NodeName ``Gres=gpu:TYPE:N``); an untyped ``gpu:N`` takes GPUs of
any type. The engine knows partitions and GPU counts, not types, so where workloads
meet the cluster (a sacct replay, ``simulate`` of a sacct dump, ``sbatch
--test-only``):

* for every (partition P, type T) that typed jobs ask for, when only some of P's
  nodes have T, the cluster gets one more partition ``P:T`` (P's settings, the nodes
  of P with T); when all have T, P itself serves; when none has T, that choice is
  dropped;
* a typed job's partition choices are mapped to those partitions (in its order); a
  job left with none cannot run on this cluster (``skipped``; an InputError for
  :func:`typed_workload`);
* untyped jobs keep their partitions.

What is not modelled (``notes`` says when it matters): on a node with several GPU
types (a MIG layout, ``gpu:a100:4,gpu:1g.10gb:14``), the engine counts all the node's
GPUs for a typed job, so two ``a100:4`` jobs may share a node with 4 a100s; a typed job
asking for more GPUs per node than a node has of its type may be placed there.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from ..model.cluster import Cluster
from ..model.constraints import PartitionChoices, one_partition_each
from ..model.errors import InputError

__all__ = ["TypedPlacement", "place_gpu_types", "typed_workload"]


@dataclass
class TypedPlacement:
    """``cluster`` (the given one, plus the derived partitions, appended: the given
    indices stay), per job its ``partition`` (first choice) and ``choices``, the
    ``skipped`` jobs (bool per job: no partition of theirs has the type), the
    ``derived`` partition names and ``notes``."""

    cluster: Cluster
    partition: np.ndarray
    choices: PartitionChoices
    skipped: np.ndarray
    derived: list = field(default_factory=list)
    notes: list = field(default_factory=list)


def _nodes_with(cluster: Cluster, gpu_type: str) -> np.ndarray:
    """bool per node: it has GPUs of ``gpu_type``."""
    return np.array([any(t == gpu_type and c > 0 for t, c in kinds)
                     for kinds in cluster.gpu_types], dtype=bool)


def place_gpu_types(cluster: Cluster, gpu_type, choices: PartitionChoices) -> TypedPlacement:
    """Typed requests (``gpu_type``: str per job, "" untyped) on ``cluster`` with the
    jobs' partition ``choices`` (module docs)."""
    gpu_type = np.asarray(gpu_type, dtype=object)
    n = len(gpu_type)
    typed = np.flatnonzero(gpu_type != "")
    parts = list(cluster.partitions)
    index: dict[tuple[int, str], int] = {}          # (partition, type) -> partition, -1
    has: dict[str, np.ndarray] = {}
    offsets, values = choices.offsets, choices.partition
    new_lists: dict[int, list[int]] = {}
    for k in typed.tolist():
        t = str(gpu_type[k])
        if t not in has:
            has[t] = _nodes_with(cluster, t)
        mapped = []
        for p in values[offsets[k]:offsets[k + 1]].tolist():
            if (p, t) not in index:
                index[(p, t)] = _derive(parts, p, t, has[t])
            if index[(p, t)] >= 0:
                mapped.append(index[(p, t)])
        new_lists[k] = list(dict.fromkeys(mapped))
    derived = [q.name for q in parts[len(cluster.partitions):]]
    out = dataclasses.replace(cluster, partitions=parts) if derived else cluster
    lists = [new_lists.get(k) or values[offsets[k]:offsets[k + 1]].tolist() for k in range(n)]
    skipped = np.zeros(n, bool)
    skipped[[k for k, v in new_lists.items() if not v]] = True
    lens = np.array([len(v) for v in lists], np.int64)
    flat = np.array([p for v in lists for p in v], np.int32)
    placed = PartitionChoices(np.r_[0, np.cumsum(lens)].astype(np.int64), flat)
    first = flat[placed.offsets[:-1]] if n else np.zeros(0, np.int32)
    used = sorted({p for v in new_lists.values() for p in v})
    typed_nodes = np.unique(np.concatenate([parts[p].nodes for p in used])) if used \
        else np.zeros(0, np.int64)
    return TypedPlacement(out, first, placed, skipped, derived,
                          _notes(cluster, gpu_type, typed, skipped, derived, typed_nodes))


def _derive(parts: list, p: int, gpu_type: str, has: np.ndarray) -> int:
    """The partition for typed jobs of ``gpu_type`` in partition ``p``: ``p`` itself, a
    new derived one appended to ``parts``, or -1 (no node of ``p`` has the type)."""
    base = parts[p]
    nodes = base.nodes[has[base.nodes]]
    if len(nodes) == len(base.nodes):
        return p
    if not len(nodes):
        return -1
    parts.append(dataclasses.replace(base, name=f"{base.name}:{gpu_type}", nodes=nodes))
    return len(parts) - 1


def _notes(cluster: Cluster, gpu_type, typed, skipped, derived, typed_nodes) -> list[str]:
    notes = []
    if derived:
        notes.append(f"{len(typed):,} job(s) ask for a GPU type: placed on the nodes with "
                     f"it through derived partition(s) {', '.join(derived)}")
    if skipped.any():
        kinds = sorted({str(gpu_type[k]) for k in np.flatnonzero(skipped).tolist()})
        notes.append(f"{int(skipped.sum()):,} job(s) ask for a GPU type no node of their "
                     f"partition(s) has ({', '.join(kinds)})")
    mixed = sum(1 for i in typed_nodes.tolist() if len(cluster.gpu_types[i]) > 1)
    if mixed:
        notes.append(f"{mixed:,} node(s) typed jobs may use hold several GPU types: the "
                     "engine counts all their GPUs for a typed job (types are placed by "
                     "node, not counted)")
    return notes


def typed_workload(cluster: Cluster, workload, gpu_type=None):
    """(cluster, workload, TypedPlacement): ``workload`` with its typed jobs' partitions
    mapped (:func:`place_gpu_types`); the same objects when no job is typed.
    ``gpu_type`` (str per job): by default the workload's own ``gpu_type`` (a workload
    CSV's column, a sacct dump's AllocTRES). A job whose type no node of its
    partitions has is an InputError (nothing changes)."""
    gpu_type = np.asarray(workload.gpu_type if gpu_type is None else gpu_type, dtype=object)
    choices = workload.partitions if workload.partitions is not None else \
        one_partition_each(workload.jobs.partition)
    placed = place_gpu_types(cluster, gpu_type, choices)
    if not (gpu_type != "").any():
        return cluster, workload, placed
    if placed.skipped.any():
        k = int(np.flatnonzero(placed.skipped)[0])
        raise InputError(f"job {int(workload.jobs.job_id[k])} asks for GPU type "
                         f"{gpu_type[k]!r}: no node of its partition(s) has it",
                         field="gpu type")
    from ..model.jobs import JobTable
    jobs = JobTable.from_arrays(**{**workload.jobs.to_dict(), "partition": placed.partition})
    return placed.cluster, dataclasses.replace(workload, jobs=jobs,
                                               partitions=placed.choices), placed
