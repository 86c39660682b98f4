"""Topology data: a cluster's switch levels, Slurm's topology/block, GPU groups in a node.

Plain data with its own consistency checks; the placement kernels that use it are in
:mod:`fastsched.engine.placement`, the readers of topology.conf and gres.conf in
:mod:`fastsched.io.topology` and :mod:`fastsched.io.gresconf`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import InputError

__all__ = ["levels_array", "BlockTopology", "GpuGroups"]


def levels_array(topology) -> np.ndarray:
    """``Cluster.topology`` (level name -> int32 ids, leaf first) as the int32 (L, n)
    array the kernels take, checked: a node in a leaf group has a group at every
    level, a node in none has -1 everywhere, and each group lies in one group of the
    level above. Convert once and reuse it: the kernels trust it."""
    if isinstance(topology, np.ndarray):
        arr = np.ascontiguousarray(topology, dtype=np.int32)
        arr = arr.reshape(1, -1) if arr.ndim == 1 else arr
    elif not topology:
        raise InputError("topology placement needs a topology (cluster has none)")
    else:
        arr = np.ascontiguousarray(np.stack([np.asarray(v, dtype=np.int32)
                                             for v in topology.values()]))
    inleaf = arr[0] >= 0
    if ((arr[:, inleaf] < 0).any() or (arr[:, ~inleaf] >= 0).any()):
        raise InputError("topology: a node in a leaf group needs a group at every level, "
                         "and a node in none must have -1 at every level")
    for lv in range(1, arr.shape[0]):
        below = arr[lv - 1, inleaf].astype(np.int64)
        pairs = np.unique(below * (int(arr[lv].max()) + 1) + arr[lv, inleaf])
        if len(pairs) != len(np.unique(below)):
            raise InputError(f"topology: level {lv} does not nest: a group of level "
                             f"{lv - 1} lies in two groups of level {lv}")
    return arr


@dataclass
class BlockTopology:
    """Slurm's topology/block: base blocks of nodes and the enforced block sizes.

    ``block_of_node``: int32 base block per node (-1 = in no block), blocks numbered
    in definition order. ``block_sizes``: ``BlockSizes`` in nodes, the first being the
    planning base block size; level i aggregates ``block_sizes[i] // block_sizes[0]``
    consecutive base blocks (a power of two). Default: the smallest block's node count,
    doubled while the aggregate has at most as many base blocks as are defined.
    """

    block_of_node: np.ndarray
    block_sizes: tuple[int, ...] = ()
    names: list[str] = field(default_factory=list)

    def __post_init__(self):
        ids = np.ascontiguousarray(self.block_of_node, dtype=np.int32)
        self.block_of_node = ids
        nblocks = int(ids.max()) + 1 if len(ids) else 0
        if nblocks <= 0:
            raise InputError("block topology: no node is in a block")
        self.nodes_per_block = np.bincount(ids[ids >= 0], minlength=nblocks)
        if (self.nodes_per_block == 0).any():
            raise InputError(f"block topology: block {int(np.argmin(self.nodes_per_block))} "
                             "has no nodes")
        if not self.names:
            self.names = [f"block{i + 1}" for i in range(nblocks)]
        if not self.block_sizes:
            base, sizes = int(self.nodes_per_block.min()), []
            f = 1
            while f <= nblocks:
                sizes.append(base * f)
                f *= 2
            self.block_sizes = tuple(sizes)
        sizes = [int(s) for s in self.block_sizes]
        base = sizes[0]
        if base <= 0:
            raise InputError(f"BlockSizes: sizes must be > 0, got {sizes}")
        for a, b in zip(sizes, sizes[1:]):
            f = b // base
            if b <= a or b % base or f & (f - 1):
                raise InputError(f"BlockSizes={','.join(map(str, sizes))}: each size must be "
                                 f"a power of two times the base size {base} and larger "
                                 "than the one before")
        small = np.flatnonzero(self.nodes_per_block < base)
        if len(small):
            raise InputError(f"block {self.names[small[0]]!r} has "
                             f"{int(self.nodes_per_block[small[0]])} nodes, fewer than the "
                             f"planning base block size {base}")
        self.block_sizes = tuple(sizes)
        lv = [ids]
        for s in sizes[1:]:
            f = s // base
            lv.append(np.where(ids >= 0, ids // f, -1).astype(np.int32))
        self.levels = np.ascontiguousarray(np.stack(lv))

    @property
    def topology(self) -> dict[str, np.ndarray]:
        """As a ``Cluster.topology`` dict (base level first), e.g. for placement_quality."""
        return {("block" if i == 0 else f"block{s}"): self.levels[i]
                for i, s in enumerate(self.block_sizes)}


@dataclass(frozen=True)
class GpuGroups:
    """GPU groups of a node: disjoint bitmasks (bit k = GPU k), ordered by lowest GPU."""

    masks: np.ndarray       # uint64[m]
    num_gpus: int
    source: str = ""        # "Links", "Cores" or "" (one group per GPU)

    def __len__(self) -> int:
        return len(self.masks)
