"""A workload's ``gpu_type`` column (``--gres=gpu:TYPE:N``): its spellings, its check
against the cluster, and where typed rows can run.

A value is a GPU type as slurm.conf's ``Gres=gpu:TYPE:N`` names it (``a100``), or
Slurm's TRES spelling of it (``gres/gpu:a100``, as in sacct's AllocTRES), or
``gpu:a100``; empty is untyped (any GPU, as ``--gres=gpu:N``). A type no node of the
cluster has, and a type on a row asking for no GPUs, are InputErrors naming file,
line and field. Placement (derived partitions ``P:T``) is
:mod:`fastsched.sim.gputypes`; here a typed row counts only its partitions' nodes
with the type when the reader decides whether it can ever run.
"""
from __future__ import annotations

import numpy as np

from ..model.cluster import Cluster
from ..model.constraints import PartitionChoices
from ..model.errors import InputError

__all__ = ["GPU_TYPE_COLUMN", "cluster_gpu_types", "gpu_type_value", "read_gpu_types",
           "request_groups"]

GPU_TYPE_COLUMN = "gpu_type"
_PREFIXES = ("gres/gpu:", "gpu:")


def cluster_gpu_types(cluster: Cluster) -> list[str]:
    """The GPU types the cluster's nodes have, sorted."""
    return sorted({t for kinds in cluster.gpu_types for t, c in kinds if t and c > 0})


def gpu_type_value(text: str) -> str:
    """``a100``, ``gpu:a100`` or ``gres/gpu:a100`` -> ``a100`` (stripped; "" stays "")."""
    t = str(text).strip()
    for prefix in _PREFIXES:
        if t.lower().startswith(prefix):
            return t[len(prefix):].strip()
    return t


def read_gpu_types(series, gpus_per_node: np.ndarray, cluster: Cluster,
                   fname: str) -> np.ndarray:
    """The ``gpu_type`` column as a type per row ("" untyped), checked (module docs)."""
    import pandas as pd
    codes, uniques = pd.factorize(series.fillna("").astype(str), use_na_sentinel=False)
    values = [gpu_type_value(u) for u in uniques]
    known = set(cluster_gpu_types(cluster))
    for k, (raw, t) in enumerate(zip(uniques, values)):
        if t and t not in known:
            i = int(np.flatnonzero(codes == k)[0])
            have = ", ".join(sorted(known)) or "none: its nodes' Gres name no GPU type"
            raise InputError(f"GPU type {raw!r} is not a GPU type of the cluster (it has "
                             f"{have})", file=fname, line=i + 2, field=GPU_TYPE_COLUMN)
    out = np.array(values + [""], dtype=object)[codes]
    asks_none = (out != "") & (gpus_per_node <= 0)
    if asks_none.any():
        i = int(np.flatnonzero(asks_none)[0])
        raise InputError(f"GPU type {out[i]!r} on a row asking for no GPUs (gpus_per_node "
                         f"{int(gpus_per_node[i])})", file=fname, line=i + 2,
                         field=GPU_TYPE_COLUMN)
    return out


def request_groups(cluster: Cluster, partitions: PartitionChoices, gpu_type):
    """(node arrays, group per partition entry): an untyped entry's group is its
    partition's nodes, a typed one's the partition's nodes with the row's type (for
    :func:`fastsched.model.validation.request_capacity`)."""
    groups = [p.nodes for p in cluster.partitions]
    entry = partitions.partition.astype(np.int64)
    if gpu_type is None or not (np.asarray(gpu_type) != "").any():
        return groups, entry
    import pandas as pd
    rows = np.repeat(np.arange(len(partitions)), np.diff(partitions.offsets))
    entry_type = np.asarray(gpu_type, dtype=object)[rows]
    typed = np.flatnonzero(entry_type != "")
    tcode, types = pd.factorize(entry_type[typed])
    pairs, which = np.unique(entry[typed] * len(types) + tcode, return_inverse=True)
    entry = entry.copy()
    entry[typed] = len(groups) + which.ravel()
    for pair in pairs.tolist():                         # one group per (partition, type)
        p, t = divmod(pair, len(types))
        nodes = cluster.partitions[p].nodes
        has = np.array([any(name == types[t] and c > 0 for name, c in cluster.gpu_types[i])
                        for i in nodes.tolist()], bool)
        groups.append(nodes[has] if len(nodes) else nodes)
    return groups, entry
