"""The ``Gres=`` value of a slurm.conf NodeName line.

Items are ``name[:type][:flags]:count[(S:sockets)]``, comma-separated (slurm.conf
man page, NodeName ``Gres``). GPUs are modelled: a node keeps its GPUs per type as
``(type, count)`` pairs (``""`` untyped), so a node with ``gpu:a100:4,gpu:1g.10gb:14``
(a MIG layout) has 18 GPUs of two types. Counts take Slurm's K/M/G suffixes; the
``no_consume`` flag is refused for GPUs (GPUs that are never used up cannot be
modelled as GPUs). Other GRES (``nvme``, ``mps``, ``shard``...) are returned for a
warning.
"""
from __future__ import annotations

import re

import numpy as np

from ..model.errors import InputError
from .conflines import ConfLine

__all__ = ["parse_node_gres", "typed_nodes", "MAX_NODE_GPUS"]

#: GPUs per node the cluster model holds (a uint64 bitmask per node)
MAX_NODE_GPUS = 64
_COUNT = re.compile(r"^(\d+)([KMG]?)$", re.I)
_SUFFIX = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def _count(text: str, item: str, conf: ConfLine) -> int:
    m = _COUNT.match(text)
    if not m or len(m.group(1)) > 12:
        raise conf.error(f"bad count {text!r} in Gres item {item!r}", "Gres")
    return int(m.group(1)) * _SUFFIX[m.group(2).upper()]


def parse_node_gres(value: str, conf: ConfLine):
    """(GPUs, ((type, count), ...), other GRES items) of a NodeName ``Gres=`` value."""
    types: dict[str, int] = {}
    others: list[str] = []
    for raw in value.split(","):
        item = re.sub(r"\(.*\)$", "", raw.strip())
        if not item:
            continue
        parts = item.split(":")
        if parts[0].lower() != "gpu":
            others.append(item)
            continue
        if any(p.lower() == "no_consume" for p in parts):
            raise conf.error(f"Gres item {item!r}: no_consume GPUs cannot be modelled",
                             "Gres")
        if len(parts) == 1:
            typ, count = "", 1
        elif len(parts) == 2:
            typ, count = ("", _count(parts[1], item, conf)) if parts[1][:1].isdigit() \
                else (parts[1], 1)
        elif len(parts) == 3:
            typ, count = parts[1], _count(parts[2], item, conf)
        else:
            raise conf.error(f"bad Gres item {item!r}: expected gpu[:type]:count", "Gres")
        types[typ] = types.get(typ, 0) + count
    total = sum(types.values())
    if total > MAX_NODE_GPUS:
        raise conf.error(f"{total} GPUs per node (at most {MAX_NODE_GPUS})", "Gres")
    return total, tuple((t, c) for t, c in types.items() if c), others


def typed_nodes(cluster, cand: np.ndarray, gpu_type: str, notes: list[str]) -> np.ndarray:
    """The nodes of ``cand`` with GPUs of ``gpu_type`` (InputError if none); a note when
    only some have them: the engine places jobs by partition, so a typed job is placed
    on them only through a derived partition (:mod:`fastsched.sim.gputypes`)."""
    has = np.array([any(t == gpu_type for t, _ in cluster.gpu_types[i]) for i in cand],
                   dtype=bool)
    if not has.any():
        kinds = sorted({t or "untyped" for i in cand for t, _ in cluster.gpu_types[i]})
        raise InputError(f"no node has GPU type {gpu_type!r} in the partition(s) (their "
                         f"GPUs: {', '.join(kinds) or 'none'})")
    if not has.all():
        notes.append(f"gpu type {gpu_type!r}: {int(has.sum())} of {len(cand)} nodes have it; "
                     "planned on those (a derived partition; a workload CSV has no GPU "
                     "type, so its jobs may run on any)")
    return cand[has]
