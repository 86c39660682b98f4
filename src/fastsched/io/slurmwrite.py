"""Writing a cluster as Slurm configuration: a ``slurm.conf`` subset (nodes and
partitions) and, with a topology, ``topology.conf`` (Slurm's tree plugin format)
next to it. :func:`fastsched.io.slurmconf.read_cluster` reads both back."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..model.cluster import Cluster, NodeState
from ..model.errors import InputError
from .hostlist import compress
from .times import format_time

__all__ = ["write_cluster", "topology_path"]


def topology_path(conf_path) -> Path:
    """The ``topology.conf`` that goes with a ``slurm.conf``: same directory."""
    return Path(conf_path).with_name("topology.conf")


def write_cluster(cluster: Cluster, path, *, name: str | None = None) -> None:
    """Write ``cluster`` as a slurm.conf subset at ``path``, and its topology (if any)
    as ``topology.conf`` in the same directory (overwriting it)."""
    n = cluster.num_nodes
    names = cluster.node_names
    lines = ["# written by fastsched: nodes, partitions and topology only"]
    if name:
        lines.append(f"ClusterName={name}")
    if cluster.gpus.any():
        lines.append("GresTypes=gpu")
    lines.append("TopologyPlugin=" + ("topology/tree" if cluster.topology else "topology/flat"))
    # runs of consecutive identical nodes -> one NodeName line each
    same = ((cluster.cpus[1:] == cluster.cpus[:-1]) & (cluster.gpus[1:] == cluster.gpus[:-1])
            & (cluster.mem_mb[1:] == cluster.mem_mb[:-1])
            & (cluster.weight[1:] == cluster.weight[:-1])
            & (cluster.gpu_types[1:] == cluster.gpu_types[:-1])
            & (cluster.features[1:] == cluster.features[:-1])
            & (cluster.node_state[1:] == cluster.node_state[:-1]))
    starts = np.concatenate(([0], np.flatnonzero(~same) + 1, [n]))
    for a, b in zip(starts[:-1], starts[1:]):
        a, b = int(a), int(b)
        line = (f"NodeName={compress(names[a:b])} CPUs={int(cluster.cpus[a])} "
                f"RealMemory={int(cluster.mem_mb[a])}")
        gres = _gres_text(cluster.gpu_types[a])
        if gres:
            line += f" Gres={gres}"
        if cluster.weight[a] != 1:
            line += f" Weight={int(cluster.weight[a])}"
        if cluster.features[a]:
            line += " Feature=" + ",".join(cluster.features[a])
        if cluster.node_state[a]:
            line += " State=" + NodeState(int(cluster.node_state[a])).name
        lines.append(line)
    default = _default_partition(cluster)
    for i, p in enumerate(cluster.partitions):
        if len(p.nodes) == n:
            nodes = compress(names)
        elif len(p.nodes) == 0:
            nodes = ""
        else:
            nodes = compress([names[j] for j in p.nodes])
        line = f"PartitionName={p.name}"
        if nodes:
            line += f" Nodes={nodes}"
        line += f" PriorityTier={p.priority_tier} MaxTime={format_time(p.max_time)}"
        if i == default:
            line += " Default=YES"
        lines.append(line)
    Path(path).write_text("\n".join(lines) + "\n")
    if cluster.topology:
        topology_path(path).write_text(_topology_text(cluster))


def _gres_text(types) -> str:
    """``gpu:a100:4,gpu:v100:2`` (``gpu:N`` untyped) from a node's (type, count) pairs."""
    return ",".join(f"gpu:{t}:{c}" if t else f"gpu:{c}" for t, c in types)


def _default_partition(cluster: Cluster) -> int:
    """The partition to mark Default=YES: the cluster's default partition; without one
    the lowest tier, then the largest, then the first."""
    if cluster.default_partition is not None:
        return cluster.partition_index(cluster.default_partition)
    keys = [(p.priority_tier, -len(p.nodes), i) for i, p in enumerate(cluster.partitions)]
    return min(keys)[2]


def _topology_text(cluster: Cluster) -> str:
    names = cluster.node_names
    levels = list(cluster.topology.items())
    lines = ["# written by fastsched: Slurm tree topology (leaf switches first)"]
    prev_ids = None          # switch ids of the level below, and their display names
    prev_names: dict[int, str] = {}
    for depth, (level, ids) in enumerate(levels):
        if not re.fullmatch(r"[A-Za-z_][A-Za-z_\-]*", level) or level == "root":
            raise InputError(f"topology level name {level!r} cannot name switches")
        present = ids >= 0
        uniq = np.unique(ids[present])
        width = max(3 if depth else 5, len(str(int(uniq.max()) + 1))) if len(uniq) else 3
        sw_names = {int(s): f"{level}{int(s) + 1:0{width}d}" for s in uniq}
        if depth == 0:
            order = np.argsort(ids, kind="stable")
            sorted_ids = ids[order]
            bounds = np.flatnonzero(np.diff(sorted_ids)) + 1
            for grp in np.split(order, bounds):
                s = int(ids[grp[0]])
                if s < 0:
                    continue
                lines.append(f"SwitchName={sw_names[s]} Nodes={compress([names[j] for j in grp])}")
        else:
            # each switch of the level below must sit under exactly one switch of this level
            parent_of: dict[int, int] = {}
            below = prev_ids
            pairs = np.unique(np.stack([below[present & (below >= 0)],
                                        ids[present & (below >= 0)]]), axis=1)
            for child, parent in pairs.T:
                child, parent = int(child), int(parent)
                if parent_of.setdefault(child, parent) != parent:
                    raise InputError(f"topology level {level!r} does not nest: "
                                     f"switch {prev_names[child]} lies under two "
                                     f"{level} switches")
            children: dict[int, list[str]] = {}
            for child in sorted(parent_of):
                children.setdefault(parent_of[child], []).append(prev_names[child])
            for s in sorted(children):
                lines.append(f"SwitchName={sw_names[s]} Switches={compress(children[s])}")
        prev_ids, prev_names = ids, sw_names
    if prev_names and len(prev_names) > 1:
        lines.append(f"SwitchName=root Switches={compress(list(prev_names.values()))}")
    return "\n".join(lines) + "\n"
