"""How well jobs were placed: leaf switches (or base blocks) each job spans, summarised."""
from __future__ import annotations

import numpy as np

from ..model.errors import InputError

__all__ = ["placement_quality", "placement_summary"]


def placement_quality(cluster, alloc_offsets, alloc_nodes, *, level: str | int = 0,
                      topology: dict | None = None) -> np.ndarray:
    """Leaf switches (or base blocks) spanned by each job: int64[num_jobs].

    ``alloc_offsets`` (int64[J+1]) and ``alloc_nodes`` are a Schedule-like CSR node
    list; ``level`` names (or numbers) the topology level counted, leaf first.
    ``topology`` overrides ``cluster.topology`` (e.g. ``BlockTopology.topology``).
    A node in no group counts as a group of its own; a job with no nodes spans 0.
    """
    topo = cluster.topology if topology is None else topology
    if not topo:
        raise InputError("placement_quality needs a topology (cluster has none)")
    names = list(topo)
    key = names[level] if isinstance(level, int) else level
    if key not in topo:
        raise InputError(f"unknown topology level {level!r}; levels are {names}")
    ids = np.asarray(topo[key], dtype=np.int64)
    off = np.asarray(alloc_offsets, dtype=np.int64)
    nodes = np.asarray(alloc_nodes, dtype=np.int64)
    if len(off) == 0 or off[0] != 0 or off[-1] != len(nodes) or (np.diff(off) < 0).any():
        raise InputError("alloc_offsets must start at 0, not decrease and end at len(alloc_nodes)")
    njobs = len(off) - 1
    if len(nodes) == 0:
        return np.zeros(njobs, dtype=np.int64)
    if nodes.min() < 0 or nodes.max() >= len(ids):
        raise InputError("alloc_nodes holds a node index outside the cluster")
    group = ids[nodes]
    group = np.where(group >= 0, group, ids.max() + 1 + nodes)    # lone nodes: own group
    job = np.repeat(np.arange(njobs, dtype=np.int64), np.diff(off))
    pairs = np.unique(job * (int(group.max()) + 1) + group)
    return np.bincount(pairs // (int(group.max()) + 1), minlength=njobs).astype(np.int64)


def placement_summary(spans, alloc_offsets) -> dict:
    """Mean and p95 of groups spanned over jobs with nodes, and the share of
    multi-node jobs that sit in a single group."""
    spans = np.asarray(spans, dtype=np.int64)
    sizes = np.diff(np.asarray(alloc_offsets, dtype=np.int64))
    placed = sizes > 0
    multi = sizes > 1
    return {
        "jobs": int(placed.sum()),
        "mean_groups_spanned": float(spans[placed].mean()) if placed.any() else 0.0,
        "p95_groups_spanned": float(np.percentile(spans[placed], 95)) if placed.any() else 0.0,
        "multi_node_jobs": int(multi.sum()),
        "multi_node_single_group_share": (float((spans[multi] == 1).mean())
                                          if multi.any() else 0.0),
    }
