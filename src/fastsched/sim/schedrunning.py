"""Running jobs given to :meth:`fastsched.Scheduler.from_state`: their checks, and
their allocations as each engine holds them (the pool engine: whole nodes; the node
engine: concrete GPU masks, the lowest free GPUs when none are given)."""
from __future__ import annotations

import numpy as np

from ..engine import RunningJobs
from ..model.cluster import Cluster
from ..model.errors import InputError


def whole_node_jobs(cluster: Cluster, r: RunningJobs) -> bool:
    """Whether ``r`` could be a pool-engine state: each node held whole by one job."""
    x = np.asarray(r.nodes, dtype=np.int64)
    if len(x) and ((x < 0).any() or (x >= cluster.num_nodes).any()):
        return True                 # let the checks name the bad index
    whole = ((np.asarray(r.cpus) >= cluster.cpus[x])
             | (np.asarray(r.gpus) >= np.maximum(cluster.gpus[x], 1)))
    return bool(whole.all()) and len(np.unique(x)) == len(x)


def whole_nodes(cluster: Cluster, r: RunningJobs) -> RunningJobs:
    """``r`` holding every CPU, GPU and MB of its nodes (the pool engine's allocation)."""
    full = cluster.new_state().free_gpu_mask
    x = r.nodes
    return RunningJobs(r.job_id, r.planned_end, r.node_offsets, x,
                       cluster.gpus[x].astype(np.int64), cluster.cpus[x].astype(np.int64),
                       cluster.mem_mb[x].astype(np.int64), full[x], r.exclusive_topo)


def checked_running(cluster: Cluster, running: RunningJobs, engine: str) -> RunningJobs:
    """Validate ``running`` (InputError, field "running") and give it concrete GPU masks."""
    r = RunningJobs.from_arrays(job_id=running.job_id, planned_end=running.planned_end,
                                node_offsets=running.node_offsets, nodes=running.nodes,
                                gpus=running.gpus, cpus=running.cpus, mem=running.mem,
                                gpu_mask=running.gpu_mask,
                                exclusive_topo=running.exclusive_topo)
    E, X = len(r.nodes), cluster.num_nodes
    offs = r.node_offsets
    if (len(offs) != len(r.job_id) + 1 or offs[0] != 0 or offs[-1] != E
            or (np.diff(offs) < 1).any() or len(r.planned_end) != len(r.job_id)):
        raise InputError("running: node_offsets must be a CSR (0, ..., len(nodes)) with at "
                         "least one node per job, and one planned_end per job", field="running")
    if not len(r.gpus) == len(r.cpus) == len(r.mem) == E or (
            r.gpu_mask is not None and len(r.gpu_mask) != E):
        raise InputError("running: gpus/cpus/mem/gpu_mask need one entry per (job, node)",
                         field="running")
    if E and ((r.nodes < 0).any() or (r.nodes >= X).any()):
        raise InputError("running: node index out of range", field="running")
    if (r.gpus < 0).any() or (r.cpus < 0).any() or (r.mem < 0).any():
        raise InputError("running: negative request", field="running")
    if len(np.unique(r.job_id)) != len(r.job_id):
        raise InputError("running: a job id appears twice", field="running")
    if engine == "pool":
        if len(np.unique(r.nodes)) != E:
            raise InputError("running: the pool engine gives each node to one job",
                             field="running")
        return whole_nodes(cluster, r)
    over = ((np.bincount(r.nodes, weights=r.gpus, minlength=X) > cluster.gpus)
            | (np.bincount(r.nodes, weights=r.cpus, minlength=X) > cluster.cpus)
            | (np.bincount(r.nodes, weights=r.mem, minlength=X) > cluster.mem_mb))
    if over.any():
        raise InputError(f"running jobs hold more than node {int(np.flatnonzero(over)[0])} has",
                         field="running")
    mask = _lowest_masks(r.nodes, r.gpus) if r.gpu_mask is None else r.gpu_mask
    used = np.zeros(X, dtype=np.uint64)
    np.bitwise_or.at(used, r.nodes, mask)
    full = cluster.new_state().free_gpu_mask
    if (_popcount(mask) != r.gpus).any() or (used & ~full).any() \
            or _popcount(mask).sum() != _popcount(used).sum():
        raise InputError("running: GPU masks must have one bit per GPU held, within the "
                         "node's GPUs, and not overlap", field="running")
    if r.exclusive_topo is not None and len(r.exclusive_topo) != len(r.job_id):
        raise InputError("running: exclusive_topo needs one entry per job", field="running")
    return RunningJobs(r.job_id, r.planned_end, offs, r.nodes, r.gpus, r.cpus, r.mem, mask,
                       r.exclusive_topo)


def _popcount(masks: np.ndarray) -> np.ndarray:
    bits = np.unpackbits(np.ascontiguousarray(masks, dtype=np.uint64).view(np.uint8))
    return bits.reshape(-1, 64).sum(axis=1).astype(np.int64)


def _lowest_masks(nodes: np.ndarray, gpus: np.ndarray) -> np.ndarray:
    """Each entry's GPUs as the node's lowest indices not taken by earlier entries."""
    order = np.argsort(nodes, kind="stable")
    g = gpus[order]
    csum = np.cumsum(g) - g
    first = np.searchsorted(nodes[order], nodes[order], side="left")
    before = np.empty(len(nodes), dtype=np.int64)
    before[order] = csum - csum[first]
    ones = np.where(gpus >= 64, np.uint64(0xFFFFFFFFFFFFFFFF),
                    (np.uint64(1) << np.minimum(gpus, 63).astype(np.uint64)) - np.uint64(1))
    return (ones << before.astype(np.uint64)).astype(np.uint64)
