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
