"""A cluster's power saving model from its slurm.conf keys (``SuspendTime``,
``SuspendTimeout``, ``ResumeTimeout``, ``ResumeRate``, ``SuspendRate``,
``SuspendExcNodes``, ``SuspendExcParts``, node ``State=CLOUD``) and the ``--power``
text (:class:`fastsched.model.power.PowerSaving`)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..model.cluster import Cluster
from ..model.errors import InputError
from ..model.power import SLURM_KEYS, PowerSaving
from .hostlist import expand


def power_saving(cluster: Cluster, text: str | None = None,
                 base: PowerSaving | None = None) -> PowerSaving:
    """``base`` (default: Slurm's defaults) with the keys ``cluster``'s slurm.conf
    set, then those of the ``--power`` text ``text``."""
    ps = base or PowerSaving()
    given = {k.lower(): (k, v) for k, v in cluster.settings.other.items()}
    slurm = []
    for lower, name in SLURM_KEYS.items():
        if lower in given:
            key, value = given[lower]
            slurm.append(f"{key}={value}")
    if slurm:
        try:
            ps = ps.with_text(",".join(slurm))
        except InputError as e:
            raise InputError(f"slurm.conf: {e.reason}", field=e.field) from None
    extra = {}
    for lower, name in (("suspendexcnodes", "exc_nodes"), ("suspendexcparts", "exc_parts")):
        if lower in given:
            key, value = given[lower]
            try:
                extra[name] = tuple(expand(value.split(":")[0])) if name == "exc_nodes" \
                    else tuple(p.strip() for p in value.split(",") if p.strip())
            except InputError as e:
                raise InputError(f"slurm.conf {key}={value!r}: {e.reason}",
                                 field=key) from None
    cloud = tuple(cluster.settings.cloud_nodes)
    if cloud:
        extra["cloud_nodes"] = cloud
    return replace(ps, **extra).with_text(text)


def power_nodes(cluster: Cluster, ps: PowerSaving) -> tuple[np.ndarray, np.ndarray]:
    """(cloud, excluded): bool per node of ``cluster``: State=CLOUD, and never powered
    down (SuspendExcNodes, or in a SuspendExcParts partition). InputError for a name
    the cluster lacks."""
    index = {n: i for i, n in enumerate(cluster.node_names)}
    cloud = np.zeros(cluster.num_nodes, dtype=np.bool_)
    excluded = np.zeros(cluster.num_nodes, dtype=np.bool_)
    for names, into, what in ((ps.cloud_nodes, cloud, "CLOUD node"),
                              (ps.exc_nodes, excluded, "SuspendExcNodes")):
        for n in names:
            if n not in index:
                raise InputError(f"power: {what} {n!r} is not a node of the cluster",
                                 field="power")
            into[index[n]] = True
    parts = {p.name: p for p in cluster.partitions}
    for name in ps.exc_parts:
        if name not in parts:
            raise InputError(f"power: SuspendExcParts partition {name!r} is not a partition "
                             "of the cluster", field="power")
        excluded[np.asarray(parts[name].nodes, dtype=np.int64)] = True
    return cloud, excluded


def node_boots(cluster: Cluster, ps: PowerSaving) -> np.ndarray:
    """Each node's boot seconds (int64 per node of ``cluster``): ``ps.boot``, or the
    time of the ``ps.boots`` entry naming it (a partition's name, else a hostlist of
    node names). InputError for a name the cluster lacks, or a node two entries give
    different times."""
    out = np.full(cluster.num_nodes, ps.boot, dtype=np.int64)
    if not ps.boots:
        return out
    index = {n: i for i, n in enumerate(cluster.node_names)}
    parts = {p.name: p for p in cluster.partitions}
    given: dict = {}                     # node -> the entry that set it
    for name, seconds in ps.boots:
        field = f"power.boot[{name}]"
        if name in parts:
            nodes = [int(x) for x in np.asarray(parts[name].nodes).tolist()]
        else:
            try:
                names = expand(name)
            except InputError as e:
                raise InputError(f"power: boot[{name}]: {e.reason}", field=field) from None
            missing = [n for n in names if n not in index]
            if missing:
                raise InputError(f"power: boot[{name}]: {missing[0]!r} is neither a partition "
                                 "nor a node of the cluster", field=field)
            nodes = [index[n] for n in names]
        for x in nodes:
            if x in given and out[x] != seconds:
                raise InputError(f"power: node {cluster.node_names[x]!r} is given boot "
                                 f"{int(out[x])} s by boot[{given[x]}] and {seconds} s by "
                                 f"boot[{name}]", field=field)
            given[x] = name
            out[x] = seconds
    return out
