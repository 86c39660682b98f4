"""The cluster: a fixed spec (what nodes exist) and a mutable state (what is free).

Everything per node is a NumPy array indexed by node number, so a cluster of
125,000 nodes is a handful of arrays, not 125,000 objects.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from .errors import InputError
from .settings import SlurmSettings


class NodeState(IntEnum):
    """Node states set by events (IDLE/MIXED/ALLOCATED follow from usage)."""

    UP = 0
    DOWN = 1
    DRAIN = 2


@dataclass(frozen=True)
class Partition:
    """A named set of nodes; partitions may overlap.

    Beyond nodes, tier and MaxTime, the fields keep what slurm.conf's
    PartitionName line says (``fastsched.io.slurmconf`` warns about the ones the
    engine does not enforce): ``default_time`` (DefaultTime, seconds; None:
    MaxTime), ``max_nodes`` (MaxNodes; None: unlimited), ``oversubscribe``
    (OverSubscribe: ``NO``, ``YES[:n]``, ``FORCE[:n]``, ``EXCLUSIVE``), ``qos``
    (the partition QOS, "" for none), ``allow_accounts`` / ``allow_qos`` (None:
    ALL), ``state`` (``UP``, ``DOWN``, ``DRAIN``, ``INACTIVE``), and for preemption
    (:mod:`fastsched.model.preemption`) ``preempt_mode`` (PreemptMode as written, ""
    = the global one) and ``grace_time`` (GraceTime, seconds).
    """

    name: str
    nodes: np.ndarray            # int64 node indices, sorted
    priority_tier: int = 1
    max_time: int | None = None  # seconds; None = unlimited
    default_time: int | None = None
    max_nodes: int | None = None
    oversubscribe: str = "NO"
    qos: str = ""
    allow_accounts: tuple[str, ...] | None = None
    allow_qos: tuple[str, ...] | None = None
    state: str = "UP"
    preempt_mode: str = ""
    grace_time: int = 0


@dataclass
class Cluster:
    """What the cluster has: one entry per node, plus partitions.

    ``gpus`` is the number of GPUs per node (at most 64, kept as a bitmask in
    :class:`ClusterState`); ``cpus`` and ``mem_mb`` are totals per node.

    What a slurm.conf adds (all optional): ``default_partition`` (the name of
    the ``Default=YES`` partition, where a job naming none goes; None: no
    default, so such a job is an error, as in Slurm); ``weight`` (int64 per
    node, Slurm's node Weight, default 1); ``features`` (a tuple of feature
    names per node, an object array); ``gpu_types`` (per node, a tuple of
    ``(type, count)`` pairs summing to ``gpus``, "" for untyped; ``gpu_type``
    is the one type when every GPU has it, else ""); ``node_state`` (uint8
    :class:`NodeState` per node: nodes not UP belong to no partition);
    ``settings`` (the scheduler's global keys, a
    :class:`fastsched.model.settings.SlurmSettings`) and ``warnings`` (what the
    reader could not model, one ``file:line: ...`` string each).
    """

    node_names: list[str]
    cpus: np.ndarray
    gpus: np.ndarray
    mem_mb: np.ndarray
    partitions: list[Partition] = field(default_factory=list)
    gpu_type: str = ""
    #: topology levels, leaf first: level name -> int32 block/switch id per node
    #: (e.g. {"leaf": ..., "spine": ...}); empty = flat
    topology: dict[str, np.ndarray] = field(default_factory=dict)
    default_partition: str | None = None
    weight: np.ndarray | None = None
    features: np.ndarray | None = None
    gpu_types: np.ndarray | None = None
    node_state: np.ndarray | None = None
    settings: SlurmSettings = field(default_factory=SlurmSettings)
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self):
        n = len(self.node_names)
        self.cpus = np.ascontiguousarray(self.cpus, dtype=np.int32)
        self.gpus = np.ascontiguousarray(self.gpus, dtype=np.int32)
        self.mem_mb = np.ascontiguousarray(self.mem_mb, dtype=np.int64)
        for name in ("cpus", "gpus", "mem_mb"):
            if len(getattr(self, name)) != n:
                raise InputError(f"cluster: {name} has {len(getattr(self, name))} entries "
                                 f"for {n} nodes")
        if n == 0:
            raise InputError("cluster: needs at least one node")
        if (self.cpus < 0).any() or (self.mem_mb < 0).any():
            raise InputError("cluster: CPUs and memory must be >= 0")
        if ((self.gpus < 0) | (self.gpus > 64)).any():
            raise InputError("cluster: GPUs per node must be in 0..64")
        for level, ids in list(self.topology.items()):
            ids = np.ascontiguousarray(ids, dtype=np.int32)
            if len(ids) != n:
                raise InputError(f"cluster: topology level {level!r} has {len(ids)} entries "
                                 f"for {n} nodes")
            self.topology[level] = ids
        if not self.partitions:
            self.partitions = [Partition("all", np.arange(n, dtype=np.int64))]
            self.default_partition = "all"
        if self.default_partition is not None:
            self.partition_index(self.default_partition)
        self._node_columns(n)

    def _node_columns(self, n: int) -> None:
        """Defaults and checks of the per-node slurm.conf columns."""
        self.weight = np.ones(n, np.int64) if self.weight is None else \
            np.ascontiguousarray(self.weight, dtype=np.int64)
        self.node_state = np.zeros(n, np.uint8) if self.node_state is None else \
            np.ascontiguousarray(self.node_state, dtype=np.uint8)
        if self.features is None:
            self.features = _per_node([()], np.zeros(n, np.int64))
        if self.gpu_types is None:
            counts, which = np.unique(self.gpus, return_inverse=True)
            self.gpu_types = _per_node([((self.gpu_type, int(g)),) if g else ()
                                        for g in counts.tolist()], which.ravel())
        for name in ("weight", "node_state", "features", "gpu_types"):
            if len(getattr(self, name)) != n:
                raise InputError(f"cluster: {name} has {len(getattr(self, name))} entries "
                                 f"for {n} nodes")

    @classmethod
    def homogeneous(cls, num_nodes: int, *, cpus: int = 1, gpus: int = 0, mem_mb: int = 0,
                    prefix: str = "node", gpu_type: str = "") -> "Cluster":
        """``num_nodes`` identical nodes named ``prefix001``... in one partition ``all``.

        An SWF machine of P processors is ``Cluster.homogeneous(P)``: P
        single-CPU nodes, so a job of p processors asks for p nodes.
        """
        if num_nodes <= 0:
            raise InputError(f"cluster: number of nodes must be > 0, got {num_nodes}")
        width = max(3, len(str(num_nodes)))
        names = [f"{prefix}{i:0{width}d}" for i in range(1, num_nodes + 1)]
        return cls(names, np.full(num_nodes, cpus), np.full(num_nodes, gpus),
                   np.full(num_nodes, mem_mb), gpu_type=gpu_type)

    @property
    def num_nodes(self) -> int:
        return len(self.node_names)

    def default_partition_index(self) -> int:
        """Index of :attr:`default_partition`; InputError when the cluster has none
        (Slurm refuses a job that names no partition then)."""
        if self.default_partition is None:
            raise InputError("the cluster has no default partition (no Default=YES in "
                             "slurm.conf): name a partition")
        return self.partition_index(self.default_partition)

    def partition_index(self, name: str) -> int:
        for i, p in enumerate(self.partitions):
            if p.name == name:
                return i
        raise InputError(f"unknown partition {name!r}; cluster has "
                         f"{[p.name for p in self.partitions]}")

    def is_homogeneous(self) -> bool:
        """All nodes alike and one partition holding them all (the counted fast path)."""
        return (len(self.partitions) == 1
                and len(self.partitions[0].nodes) == self.num_nodes
                and (self.cpus == self.cpus[0]).all()
                and (self.gpus == self.gpus[0]).all()
                and (self.mem_mb == self.mem_mb[0]).all())

    def new_state(self) -> "ClusterState":
        """All nodes up and fully free."""
        full = np.where(self.gpus >= 64, np.uint64(0xFFFFFFFFFFFFFFFF),
                        (np.uint64(1) << self.gpus.astype(np.uint64)) - np.uint64(1))
        return ClusterState(free_gpu_mask=full.astype(np.uint64), free_cpus=self.cpus.copy(),
                            free_mem_mb=self.mem_mb.copy(),
                            state=np.zeros(self.num_nodes, dtype=np.uint8))


def _per_node(values: list, which: np.ndarray) -> np.ndarray:
    """An object array holding ``values[which[i]]`` at node i (shared objects, built
    without a Python loop over nodes)."""
    table = np.empty(len(values), dtype=object)
    for k, value in enumerate(values):          # one by one: tuples stay whole
        table[k] = value
    return table[which]


@dataclass
class ClusterState:
    """What is free now, per node: a GPU bitmask, CPUs, memory, and the node state."""

    free_gpu_mask: np.ndarray   # uint64, bit i set = GPU i free
    free_cpus: np.ndarray       # int32
    free_mem_mb: np.ndarray     # int64
    state: np.ndarray           # uint8, NodeState

    def copy(self) -> "ClusterState":
        return ClusterState(self.free_gpu_mask.copy(), self.free_cpus.copy(),
                            self.free_mem_mb.copy(), self.state.copy())
