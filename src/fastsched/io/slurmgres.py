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

from .conflines import ConfLine

__all__ = ["parse_node_gres", "MAX_NODE_GPUS"]

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
