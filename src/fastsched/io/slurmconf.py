"""Clusters from Slurm configuration: ``slurm.conf`` (with its Includes) and the
``topology.conf`` next to it, read as Slurm reads them.

Lines, comments, continuations, ``Include`` and ``Key=Value`` words follow Slurm's
parser (:mod:`fastsched.io.conflines`); keys are case-insensitive. Understood:

``NodeName=`` hostlist (``DEFAULT`` lines set defaults for the lines after them,
    merged as Slurm merges them; ``ALL`` is reserved): ``CPUs`` (or ``Procs``);
    without it CPUs are derived as ``_parse_nodename`` in Slurm's
    ``src/common/read_config.c`` derives them: Sockets = ``Boards`` x
    ``SocketsPerBoard`` if given, else ``Sockets``, else CPUs / (cores x threads)
    when CPUs divide evenly, else ``Boards``; CPUs = Sockets x ``CoresPerSocket``
    x ``ThreadsPerCore`` (each default 1). A CPUs value that is none of Sockets,
    Sockets x Cores and Sockets x Cores x Threads is reset to the last, as Slurm
    does (with a warning). ``RealMemory`` (MB, default 1), ``Gres``
    (``gpu[:type]:N`` items; several types or MIG profiles on a node kept per
    node; other GRES warned about), ``Feature``/``Features``, ``Weight``
    (default 1, kept on ``Cluster.weight``), ``State`` (DOWN, DRAIN, FAIL,
    FAILING, FUTURE: the node belongs to no partition; CLOUD and UNKNOWN: up;
    CLOUD nodes are listed on ``settings.cloud_nodes``: powered down under ``--power``).
``DownNodes=`` hostlist ``State=`` (default DOWN): as a node State.
``NodeSet=`` name ``Nodes=`` hostlist or ``Feature=`` f: a name partitions may use
    in ``Nodes=``.
``PartitionName=`` (``DEFAULT`` lines too): ``Nodes`` (hostlists, NodeSets,
    ``ALL``), ``Default=YES`` (the last one wins, as in Slurm; ``Cluster.default_partition``),
    ``PriorityTier`` (``Priority`` sets it too), ``MaxTime``, ``DefaultTime``,
    ``MaxNodes``, ``OverSubscribe`` (or ``Shared``), ``QOS``, ``AllowAccounts``,
    ``AllowQos``, ``State``, ``PreemptMode``, ``GraceTime``: kept on :class:`~fastsched.model.cluster.Partition`.
Global keys: ``ClusterName``, ``SchedulerType``, ``SchedulerParameters`` (a dict),
    ``SelectType[Parameters]``, ``PriorityType``, ``PriorityWeight*``,
    ``PriorityDecayHalfLife``, ``TopologyPlugin``; ``PreemptType``, ``PreemptMode``
    and ``PreemptExemptTime`` are kept on ``Cluster.settings.other`` and applied by
    :func:`fastsched.sim.preemption.site_preemption`; every other global key is kept
    as written on ``Cluster.settings.other``.

A key that changes what Slurm schedules but that fastsched does not model (or keeps
without enforcing: partition QOS, AllowAccounts, MaxNodes, OverSubscribe, node
Weight, SchedulerParameters other than bf_resolution/bf_window, priority weights
without ``--config``...) gives a :class:`~fastsched.model.errors.ConfigWarning` naming
the file and line, also collected on ``Cluster.warnings``. Keys that change nothing
for scheduling (addresses, ports, daemons, logging) are ignored. A malformed line
raises :class:`InputError` naming the file, the line and the key.

Without any PartitionName line Slurm runs no job; fastsched then makes one partition
``all`` of every up node, as default, and warns. ``topology.conf`` is read when it
exists and ``TopologyPlugin`` is absent or ``topology/tree`` (levels named as
:func:`fastsched.io.topology.read_tree_topology` names them).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..model.cluster import Cluster, NodeState, Partition
from ..model.errors import InputError
from ..model.settings import SlurmSettings
from ..model.validation import MAX_COUNT, MAX_MEMORY_MB, MAX_NODES
from .conflines import ConfLine, Warnings, conf_lines
from .hostlist import expand, node_indices
from .slurmgres import parse_node_gres
from .slurmkeys import GLOBAL_NOT_MODELLED, NODE_NOT_MODELLED, global_setting, \
    partition_warnings
from .slurmwrite import topology_path, write_cluster
from .times import format_time, parse_time
from .topology import read_tree_topology

__all__ = ["write_cluster", "read_cluster", "parse_time", "format_time", "topology_path"]

#: node State= values (before any ``+flag``) -> the state the node has
_NODE_STATES = {"DOWN": NodeState.DOWN, "FAIL": NodeState.DOWN, "FUTURE": NodeState.DOWN,
                "DRAIN": NodeState.DRAIN, "FAILING": NodeState.DRAIN,
                "UNKNOWN": NodeState.UP, "CLOUD": NodeState.UP, "IDLE": NodeState.UP}


class _Reader:
    """Accumulates what the lines of one slurm.conf say."""

    def __init__(self):
        self.names: list[str] = []
        self.columns = {k: [] for k in ("cpus", "mem", "gpus", "types", "features", "weight",
                                        "state")}
        self.node_defaults: dict[str, tuple[str, str]] = {}
        self.part_defaults: dict[str, tuple[str, str]] = {}
        self.parts: list[tuple[ConfLine, str, dict]] = []
        self.nodesets: list[tuple[ConfLine, str, dict]] = []
        self.down: list[tuple[ConfLine, str, str]] = []
        self.settings = SlurmSettings()
        self.warnings = Warnings()
        self.topology_plugin: str | None = None
        self.weight_where = ""                 # the first line giving a node Weight

    # ------------------------------------------------------------------ lines
    def line(self, conf: ConfLine) -> None:
        head, value = conf.words[0]
        kind = head.lower()
        opts = {k.lower(): (k, v) for k, v in conf.words[1:]}
        if kind == "nodename":
            self.node(conf, value, opts)
        elif kind == "partitionname":
            self.partition(conf, value, opts)
        elif kind == "nodeset":
            self.nodesets.append((conf, value, opts))
        elif kind == "downnodes":
            state = opts.get("state", ("State", "DOWN"))[1]
            self.down.append((conf, value, state))
        else:
            for key, val in conf.words:
                self.global_key(conf, key, val)

    def global_key(self, conf: ConfLine, key: str, value: str) -> None:
        lower = key.lower()
        if lower == "topologyplugin":
            self.topology_plugin = value.strip().lower()
        if not global_setting(self.settings, key, value, conf):
            self.settings.other[key] = value
        note = GLOBAL_NOT_MODELLED.get(lower)
        if note is not None:
            text = note(value) if callable(note) else note
            if text:
                self.warnings.add(conf.where, f"{key}={value}: {text}")

    def node(self, conf: ConfLine, value: str, opts: dict) -> None:
        if value.upper() == "DEFAULT":
            self.node_defaults = {**self.node_defaults, **opts}
            return
        if value.upper() == "ALL":
            raise conf.error("'ALL' is a reserved word, not a node name", "NodeName")
        spec = {**self.node_defaults, **opts}
        try:
            hosts = expand(value)
        except InputError as e:
            raise conf.error(e.reason, "NodeName") from None
        if not hosts:
            raise conf.error("no node names", "NodeName")
        if len(self.names) + len(hosts) > MAX_NODES:
            raise conf.error(f"more than {MAX_NODES:,} nodes", "NodeName")
        cpus = _derive_cpus(spec, conf, self.warnings)
        mem = _int(spec, "realmemory", conf, 1, maximum=MAX_MEMORY_MB)
        gpus, types, others = parse_node_gres(spec.get("gres", ("Gres", ""))[1], conf)
        if others:
            self.warnings.add(conf.where, f"Gres {','.join(others)}: only GPUs are modelled; "
                              "requests for these are ignored")
        feats = spec.get("features", spec.get("feature", ("Feature", "")))[1]
        features = tuple(f for f in feats.split(",") if f)
        weight = _int(spec, "weight", conf, 1, maximum=2**32 - 1)
        if "weight" in spec and not self.weight_where:
            self.weight_where = conf.where
        state = self.node_state(spec, conf)
        if spec.get("state", ("", ""))[1].strip().upper().split("+")[0] == "CLOUD":
            self.settings.cloud_nodes += tuple(hosts)
        for key in opts:
            if key in NODE_NOT_MODELLED:
                self.warnings.add(conf.where, f"{opts[key][0]}={opts[key][1]}: "
                                  f"{NODE_NOT_MODELLED[key]}")
        self.names.extend(hosts)
        for col, v in zip(("cpus", "mem", "gpus", "types", "features", "weight", "state"),
                          (cpus, mem, gpus, types, features, weight, state)):
            self.columns[col].extend([v] * len(hosts))

    def node_state(self, spec: dict, conf: ConfLine) -> int:
        if "state" not in spec:
            return NodeState.UP
        key, value = spec["state"]
        word = value.strip().upper().split("+")[0]
        if word not in _NODE_STATES:
            raise conf.error(f"unknown node state {value!r}", key)
        state = _NODE_STATES[word]
        if state != NodeState.UP:
            self.warnings.add(conf.where, f"{key}={value}: these nodes are left out of every "
                              "partition for the whole run (no node state changes are "
                              "modelled)")
        elif word == "CLOUD":
            self.warnings.add(conf.where, f"{key}={value}: powered down until first used "
                              "only under simulate --power and sbatch --test-only --power; "
                              "else scheduled as if always up")
        return state

    def partition(self, conf: ConfLine, value: str, opts: dict) -> None:
        if value.upper() == "DEFAULT":
            self.part_defaults = {**self.part_defaults, **opts}
            return
        if not value:
            raise conf.error("empty partition name", "PartitionName")
        self.parts.append((conf, value, {**self.part_defaults, **opts}))

    # ------------------------------------------------------------------ result
    def cluster(self, fname: str, path: Path) -> Cluster:
        if not self.names:
            raise InputError("no NodeName lines: the cluster has no nodes", file=fname)
        index = {name: i for i, name in enumerate(self.names)}
        if len(index) != len(self.names):
            seen: set[str] = set()
            dup = next(nm for nm in self.names if nm in seen or seen.add(nm))
            raise InputError(f"node {dup!r} defined twice", file=fname, field="NodeName")
        state = np.array(self.columns["state"], dtype=np.uint8)
        for conf, hosts, word in self.down:
            state[self._indices(conf, hosts, index, {}, "DownNodes")] = \
                self.node_state({"state": ("State", word)}, conf)
        sets = self._nodesets(index)
        partitions, default = self._partitions(index, sets, state == NodeState.UP, fname)
        topology = {}
        topo_file = topology_path(path)
        if self.topology_plugin in (None, "topology/tree") and topo_file.exists():
            topology = read_tree_topology(topo_file, index)
        return self._build(partitions, default, state, topology)

    def _build(self, partitions, default, state, topology) -> Cluster:
        c = self.columns
        types = np.empty(len(self.names), dtype=object)
        types[:] = c["types"]
        features = np.empty(len(self.names), dtype=object)
        features[:] = c["features"]
        kinds = {t for node in set(c["types"]) for t, _ in node}
        weight = np.array(c["weight"], dtype=np.int64)
        if len(np.unique(weight)) > 1:
            self.warnings.add(self.weight_where, "node Weight differs between nodes: kept on "
                              "Cluster.weight, but the engine picks nodes by best fit, not "
                              "lowest weight first")
        return Cluster(list(self.names), np.array(c["cpus"]), np.array(c["gpus"]),
                       np.array(c["mem"], dtype=np.int64), partitions=partitions,
                       gpu_type=kinds.pop() if len(kinds) == 1 else "", topology=topology,
                       default_partition=default, weight=weight, features=features,
                       gpu_types=types, node_state=state, settings=self.settings,
                       warnings=list(self.warnings))

    def _indices(self, conf, text, index, sets, field):
        try:
            return node_indices(text, index, sets)
        except InputError as e:
            raise conf.error(e.reason, field) from None

    def _nodesets(self, index) -> dict[str, np.ndarray]:
        sets: dict[str, np.ndarray] = {}
        features = self.columns["features"]
        for conf, name, opts in self.nodesets:
            if not name or name in index:
                raise conf.error(f"NodeSet {name!r} is empty or is a node name", "NodeSet")
            if "nodes" in opts:
                sets[name] = self._indices(conf, opts["nodes"][1], index, sets, "Nodes")
            elif "feature" in opts:
                want = opts["feature"][1]
                sets[name] = np.array([i for i, f in enumerate(features) if want in f],
                                      dtype=np.int64)
            else:
                raise conf.error("NodeSet needs Nodes= or Feature=", "NodeSet")
        return sets

    def _partitions(self, index, sets, up, fname):
        partitions, default, seen = [], None, set()
        for conf, name, opts in self.parts:
            if name in seen:
                raise conf.error(f"partition {name!r} defined twice", "PartitionName")
            seen.add(name)
            nodes = self._indices(conf, opts.get("nodes", ("Nodes", ""))[1], index, sets,
                                  "Nodes")
            part = _partition(name, nodes[up[nodes]], opts, conf)
            partitions.append(part)
            for text in partition_warnings(part, opts):
                self.warnings.add(conf.where, text)
            if _yes(opts, "default", conf):
                default = name
        if not partitions:
            self.warnings.add(fname, "no PartitionName lines: Slurm would run no job; using "
                              "one partition 'all' of every up node, as default")
            partitions = [Partition("all", np.flatnonzero(up).astype(np.int64))]
            default = "all"
        return partitions, default


def read_cluster(path) -> Cluster:
    """Read a slurm.conf (and the topology.conf next to it) as Slurm does; see the
    module docs for what is modelled. Warnings (:class:`ConfigWarning`) name the file
    and line of every key that changes scheduling but is not modelled; they are
    also on ``cluster.warnings``."""
    path = Path(path)
    reader = _Reader()
    for conf in conf_lines(path):
        reader.line(conf)
    return reader.cluster(str(path), path)


# --------------------------------------------------------------------------- values

def _int(spec: dict, key: str, conf: ConfLine, default: int, *, minimum: int = 0,
         maximum: int = MAX_COUNT) -> int:
    if key not in spec:
        return default
    spelled, value = spec[key]
    v = value.strip()
    if v.upper() in ("INFINITE", "UNLIMITED") and key in ("weight", "maxnodes"):
        return maximum
    if not (v.isascii() and v.isdigit()) or int(v) < minimum:
        raise conf.error(f"{v[:30]!r} is not an integer >= {minimum}", spelled)
    if len(v) > 20 or int(v) > maximum:
        raise conf.error(f"{v[:30]!r} is out of range (at most {maximum:,})", spelled)
    return int(v)


def _yes(opts: dict, key: str, conf: ConfLine) -> bool:
    if key not in opts:
        return False
    spelled, value = opts[key]
    word = value.strip().upper()
    if word not in ("YES", "NO"):
        raise conf.error(f"{value!r}: expected YES or NO", spelled)
    return word == "YES"


def _derive_cpus(spec: dict, conf: ConfLine, warnings: Warnings) -> int:
    """CPUs of a node line as ``_parse_nodename`` (Slurm's read_config.c) sets them."""
    cpus = spec.get("cpus", spec.get("procs"))
    count = {k: _int(spec, k, conf, 1, minimum=1, maximum=4096)
             for k in ("boards", "corespersocket", "threadspercore")}
    cores, threads = count["corespersocket"], count["threadspercore"]
    given = None if cpus is None else _int({"cpus": cpus}, "cpus", conf, 1, minimum=1)
    if "socketsperboard" in spec:
        if "sockets" in spec:
            warnings.add(conf.where, "Sockets and SocketsPerBoard both given: Slurm uses "
                         "SocketsPerBoard")
        sockets = count["boards"] * _int(spec, "socketsperboard", conf, 1, minimum=1,
                                         maximum=4096)
    elif "sockets" in spec:
        sockets = _int(spec, "sockets", conf, 1, minimum=1, maximum=4096)
    elif given is not None and given % (cores * threads) == 0 and given >= cores * threads:
        sockets = given // (cores * threads)
    else:
        sockets = count["boards"]
    full = sockets * cores * threads
    if given is None:
        return full
    if given not in (sockets, sockets * cores, full):
        warnings.add(conf.where, f"CPUs={given} is none of Sockets, Sockets*CoresPerSocket, "
                     f"Sockets*CoresPerSocket*ThreadsPerCore: Slurm resets it to {full}")
        return full
    return given


def _partition(name: str, nodes: np.ndarray, opts: dict, conf: ConfLine) -> Partition:
    def time(key):
        if key not in opts:
            return None
        try:
            return parse_time(opts[key][1])
        except InputError as e:
            raise conf.error(e.reason, opts[key][0]) from None

    def names(key):
        if key not in opts or opts[key][1].strip().upper() == "ALL":
            return None
        return tuple(x for x in opts[key][1].split(",") if x)
    tier_key = "prioritytier" if "prioritytier" in opts else "priority"
    max_nodes = _int(opts, "maxnodes", conf, MAX_NODES, maximum=MAX_NODES)
    over = opts.get("oversubscribe", opts.get("shared", ("OverSubscribe", "NO")))[1]
    state = opts.get("state", ("State", "UP"))
    if state[1].upper() not in ("UP", "DOWN", "DRAIN", "INACTIVE"):
        raise conf.error(f"unknown partition state {state[1]!r}", state[0])
    return Partition(name, nodes, priority_tier=_int(opts, tier_key, conf, 1, maximum=65533),
                     max_time=time("maxtime"), default_time=time("defaulttime"),
                     max_nodes=None if max_nodes >= MAX_NODES else max_nodes,
                     oversubscribe=over.upper(), qos=opts.get("qos", ("QOS", ""))[1],
                     allow_accounts=names("allowaccounts"), allow_qos=names("allowqos"),
                     state=state[1].upper(),
                     preempt_mode=opts.get("preemptmode", ("PreemptMode", ""))[1].strip(),
                     grace_time=_int(opts, "gracetime", conf, 0))
