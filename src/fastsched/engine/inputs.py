"""The engine's inputs, checked and laid out for the kernels: node availability,
partitions' node lists, request types, the policy, the time grid, placement,
queue ranks; :func:`check_node_jobs` rejects a job the engine can never run."""
from __future__ import annotations

import numpy as np

from ..model.cluster import Cluster, NodeState
from ..model.constraints import PartitionChoices, csr_take
from ..model.errors import InputError
from ..model.jobs import JobTable
from ..model.policies import check_reserve_depth, get_policy
from ..model.validation import check_basic, reject, request_capacity
from .state import Nodes

_INF = np.int64(1) << np.int64(62)


def new_nodes(cluster: Cluster, avail: np.ndarray) -> Nodes:
    """The cluster as the kernels see it, over the available nodes ``avail``."""
    poff, pflat = _partition_nodes(cluster, avail)
    return Nodes(cluster.gpus.astype(np.int64), cluster.cpus.astype(np.int64),
                 cluster.mem_mb.astype(np.int64), poff, pflat,
                 _partition_bits(poff, pflat, cluster.num_nodes))


def node_availability(cluster: Cluster, available=None) -> np.ndarray:
    """Per-node bool: usable by the scheduler.

    ``available``: None (all nodes), a bool array, or an integer array of
    :class:`NodeState` codes (available iff ``UP``).
    """
    n = cluster.num_nodes
    if available is None:
        return np.ones(n, dtype=np.bool_)
    a = np.asarray(available)
    if a.shape != (n,):
        raise InputError(f"availability has {a.size} entries for {n} nodes")
    if a.dtype == np.bool_:
        return a.copy()
    return a.astype(np.int64) == int(NodeState.UP)


def ever_available(cluster: Cluster, available, events) -> np.ndarray:
    """The nodes available at the start (``available``, see :func:`node_availability`)
    or resumed (or up) by one of ``events``: a partition choice counts if it fits while the
    most nodes are up (the pass skips it while too few of its nodes are available)."""
    ever = node_availability(cluster, available).copy()
    for e in range(0 if events is None else len(events)):
        _, kind, nodes = events.at(e)
        if kind in ("resume", "up"):
            ever[nodes] = True
    return ever


def _request_types(jobs: JobTable, partition=None, rows=None):
    """Distinct (partition, gpus, cpus, mem) requests and each entry's type index.

    Entries are the jobs, or (multi-partition) ``partition[e]`` for job ``rows[e]``."""
    if partition is None:
        partition, rows = jobs.partition, slice(None)
    cols = (np.asarray(partition, dtype=np.int64), jobs.gpus_per_node[rows].astype(np.int64),
            jobs.cpus_per_node[rows].astype(np.int64), jobs.mem_per_node[rows].astype(np.int64))
    n = len(cols[0])
    if n == 0:
        return np.zeros((0, 4), dtype=np.int64), np.zeros(0, dtype=np.int64)
    # rows in lexicographic order (what np.unique(axis=0) gives, much faster)
    order = np.lexsort(cols[::-1])
    new = np.zeros(n, dtype=np.bool_)
    new[0] = True
    for col in cols:
        s = col[order]
        new[1:] |= s[1:] != s[:-1]
    types = np.stack([col[order][new] for col in cols], axis=1)
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    return types, inverse


def _partition_nodes(cluster: Cluster, avail: np.ndarray):
    """CSR of each partition's available nodes, ascending."""
    offsets = np.zeros(len(cluster.partitions) + 1, dtype=np.int64)
    lists = []
    for p, part in enumerate(cluster.partitions):
        nodes = np.asarray(part.nodes, dtype=np.int64)
        if len(nodes) > 1 and not (nodes[1:] > nodes[:-1]).all():     # (mostly sorted)
            nodes = np.unique(nodes)
        nodes = nodes[(nodes >= 0) & (nodes < cluster.num_nodes)]
        nodes = nodes[avail[nodes]]
        lists.append(nodes)
        offsets[p + 1] = offsets[p] + len(nodes)
    flat = np.concatenate(lists) if lists else np.zeros(0, dtype=np.int64)
    return offsets, flat.astype(np.int64)


def _partition_bits(poff, pflat, num_nodes: int) -> np.ndarray:
    """Per node, bit p set when it is an available node of partition p (empty when
    there are more than 64 partitions: the pass then recounts instead)."""
    P = len(poff) - 1
    if P > 64:
        return np.zeros(0, dtype=np.uint64)
    bits = np.zeros(num_nodes, dtype=np.uint64)
    for p in range(P):
        bits[pflat[poff[p]:poff[p + 1]]] |= np.uint64(1) << np.uint64(p)
    return bits


def check_node_jobs(cluster: Cluster, jobs: JobTable, available=None,
                    partitions: PartitionChoices | None = None,
                    capacity=None) -> PartitionChoices:
    """Raise InputError (naming the first bad job) for a job the node engine can never run.

    Beyond the basic checks (unique ids, limit >= 1, runtime >= 0, submit >= 0,
    num_nodes >= 1, requests >= 0, valid partition indices), a job needs
    ``num_nodes`` available nodes whose capacity covers its per-node request in
    its partition, or in at least one of its ``partitions``. Returns the
    choices without the partitions where the job can never run. ``capacity(part,
    gpus, cpus, mem)``: those counts per entry (default: counted over the available
    nodes; a caller that checks the same cluster again may keep them).
    """
    if partitions is None:
        partitions = PartitionChoices.single(jobs.partition)
    if len(jobs) == 0:
        return partitions
    check_basic(jobs)
    P = len(cluster.partitions)
    reject(jobs, (jobs.partition < 0) | (jobs.partition >= P), "partition",
            f"names partition index {{v}}, the cluster has {P} partition(s)")
    part = partitions.partition
    if len(part) and (part.min() < 0 or part.max() >= P):
        raise InputError(f"partition choices name an index outside 0..{P - 1}", field="partition")
    if capacity is None:
        capacity = available_capacity(cluster, node_availability(cluster, available))
    rows = np.repeat(np.arange(len(jobs)), np.diff(partitions.offsets))
    capacity = capacity(part, jobs.gpus_per_node[rows], jobs.cpus_per_node[rows],
                        jobs.mem_per_node[rows])
    fits = jobs.num_nodes[rows] <= capacity
    ok_jobs = np.bincount(rows[fits], minlength=len(jobs)) > 0
    if not ok_jobs.all():
        i = int(np.flatnonzero(~ok_jobs)[0])
        e = int(partitions.offsets[i])
        names = ",".join(cluster.partitions[int(p)].name
                         for p in part[partitions.offsets[i]:partitions.offsets[i + 1]])
        raise InputError(
            f"job {jobs.job_id[i]} needs {jobs.num_nodes[i]} nodes with {jobs.gpus_per_node[i]} "
            f"GPUs, {jobs.cpus_per_node[i]} CPUs and {jobs.mem_per_node[i]} MB in partition "
            f"{names!r}, which has {capacity[e]} such available node(s)",
            field="num_nodes")
    if fits.all():
        return partitions
    offs = np.zeros(len(jobs) + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows[fits], minlength=len(jobs)), out=offs[1:])
    return PartitionChoices(offs, part[fits])


def available_capacity(cluster: Cluster, avail: np.ndarray):
    """``capacity`` of :func:`check_node_jobs`: per entry, the available nodes (``avail``)
    of its partition that hold its request."""
    offsets, flat = _partition_nodes(cluster, avail)
    part_nodes = [flat[offsets[p]:offsets[p + 1]] for p in range(len(cluster.partitions))]
    return lambda part, gpus, cpus, mem: request_capacity(part_nodes, part, gpus, cpus, mem,
                                                          cluster)


def _permute_csr(offsets, values, order):
    """CSR rows reordered: new row k is old row ``order[k]``; (offsets, values). The
    identity order (jobs given in submit order) returns the arrays as they are: no
    gather of every allocated node."""
    order = np.asarray(order)
    if len(order) == len(offsets) - 1 and (order == np.arange(len(order))).all():
        return np.asarray(offsets, dtype=np.int64), np.asarray(values)
    new_off, index = csr_take(offsets, order)
    return new_off, np.asarray(values)[index]


def _placement(placement, cluster: Cluster, n: int):
    """The checked placement spec (none: topology off, lowest free GPU indices)."""
    from ..model.constraints import Placement
    if placement is None:
        return Placement.none(n, cluster.num_nodes)
    if len(placement) != n:
        raise InputError(f"placement covers {len(placement)} jobs, the table has {n}",
                         field="placement")
    if placement.levels.shape[0] and placement.levels.shape[1] != cluster.num_nodes:
        raise InputError(f"placement levels cover {placement.levels.shape[1]} nodes, the "
                         f"cluster has {cluster.num_nodes}", field="placement")
    return placement


def _grid(resolution, window) -> tuple[np.int64, np.int64]:
    """Checked (resolution, window) as the kernels take them (no window: "forever")."""
    if isinstance(resolution, bool) or not isinstance(resolution, (int, np.integer)) \
            or resolution < 1:
        raise InputError(f"resolution must be an integer >= 1 s, got {resolution!r}",
                         field="resolution")
    if window is None:
        return np.int64(resolution), _INF
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 0:
        raise InputError(f"window must be an integer >= 0 s, got {window!r}", field="window")
    return np.int64(resolution), np.int64(window)


def _unique_rank(rank, jobs: JobTable) -> np.ndarray:
    """Queue positions from a sort key (lower first; ties by submit time, then job id)."""
    rank = np.asarray(rank)
    n = len(jobs)
    if rank.shape != (n,):
        raise InputError(f"rank needs one entry per job ({n}), got shape {rank.shape}",
                         field="rank")
    out = np.empty(n, dtype=np.int64)
    out[np.lexsort((jobs.job_id, jobs.submit_time, rank))] = np.arange(n)
    return out


def _check_policy(policy, reserve_depth) -> None:
    get_policy(policy)
    check_reserve_depth(reserve_depth)
