"""Clusters as Slurm configuration: a ``slurm.conf`` subset plus ``topology.conf``.

Written and read::

    NodeName=gpu[00001-12500] CPUs=112 RealMemory=2000000 Gres=gpu:h100:8
    PartitionName=batch Nodes=gpu[00001-12500] PriorityTier=1 MaxTime=14-00:00:00 Default=YES

and, in ``topology.conf`` next to it (Slurm's tree plugin format)::

    SwitchName=leaf00001 Nodes=gpu[00001-00032]
    SwitchName=spine001 Switches=leaf[00001-00016]
    SwitchName=root Switches=spine[001-025]

Reading understands ``NodeName`` (``CPUs``, ``RealMemory``, ``Gres=gpu[:type]:N``;
``NodeName=DEFAULT`` sets defaults for later lines), ``PartitionName`` (``Nodes``
as a hostlist or ``ALL``, ``PriorityTier``, ``MaxTime`` as ``MM``, ``MM:SS``,
``HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS``, ``UNLIMITED``/``INFINITE``;
``PartitionName=DEFAULT`` too) and ``TopologyPlugin``. Keys are case-insensitive;
other keys and lines are ignored, except ``DownNodes`` lines and ``State=DOWN`` (or
DRAIN, FAIL, FUTURE) on ``NodeName`` lines: the cluster model has no node states, so
those are errors rather than nodes silently scheduled as up. A malformed line raises
:class:`InputError` naming the file, the line and the field.

Topology levels are numbered from the leaves up and named after their switches'
common name prefix (``leaf``, ``spine``; ``level<d>`` when the names differ). A
top level made of one switch over every node says nothing and is dropped (the
writer adds such a ``root`` so that real Slurm sees one connected tree). Nodes
in no leaf switch get id -1 at every level. ``topology.conf`` is read when it
exists and ``TopologyPlugin`` is absent or ``topology/tree``.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np

from ..model.cluster import Cluster, Partition
from ..model.errors import InputError, UnsupportedError
from .hostlist import compress, expand
from .textfile import read_text
from ..model.validation import MAX_COUNT, MAX_MEMORY_MB, MAX_NODES, MAX_SECONDS

__all__ = ["write_cluster", "read_cluster", "parse_time", "format_time", "topology_path"]

_TRAILING_DIGITS = re.compile(r"^(.*?)(\d*)$")


# --------------------------------------------------------------------------- times

def format_time(seconds: int | None) -> str:
    """Seconds as Slurm writes a time limit: ``D-HH:MM:SS``, ``HH:MM:SS`` or ``UNLIMITED``."""
    if seconds is None:
        return "UNLIMITED"
    seconds = int(seconds)
    if seconds < 0:
        raise InputError(f"negative time {seconds}")
    d, rest = divmod(seconds, 86_400)
    h, rest = divmod(rest, 3_600)
    m, s = divmod(rest, 60)
    return f"{d}-{h:02d}:{m:02d}:{s:02d}" if d else f"{h:02d}:{m:02d}:{s:02d}"


def parse_time(text: str) -> int | None:
    """A Slurm time string as seconds (None for UNLIMITED/INFINITE).

    Accepts ``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS``.
    Raises InputError (without location; callers add it).
    """
    t = text.strip()
    if t.upper() in ("UNLIMITED", "INFINITE", "-1"):
        return None
    days = 0
    if "-" in t:
        d, _, t = t.partition("-")
        if not (d.isascii() and d.isdigit()):
            raise InputError(f"bad time {text!r}")
        days = int(d)
        parts = t.split(":")
        if not 1 <= len(parts) <= 3:
            raise InputError(f"bad time {text!r}")
        parts = parts + ["0"] * (3 - len(parts))          # D-HH, D-HH:MM, D-HH:MM:SS
    else:
        parts = t.split(":")
        if len(parts) == 1:
            parts = ["0", parts[0], "0"]                    # MM
        elif len(parts) == 2:
            parts = ["0", parts[0], parts[1]]               # MM:SS
        elif len(parts) != 3:
            raise InputError(f"bad time {text!r}")
    if not all(p.isascii() and p.isdigit() for p in parts):
        raise InputError(f"bad time {text!r}")
    h, m, s = (int(p) for p in parts)
    seconds = ((days * 24 + h) * 60 + m) * 60 + s
    if seconds > MAX_SECONDS:
        raise InputError(f"time {_short(text)} is out of range (at most {MAX_SECONDS:,} s)")
    return seconds


def _short(text: str) -> str:
    """``text`` quoted, cut to a readable length."""
    return repr(text) if len(text) <= 30 else repr(text[:12] + "..." + text[-6:])


# --------------------------------------------------------------------------- writing

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
            & (cluster.mem_mb[1:] == cluster.mem_mb[:-1]))
    starts = np.concatenate(([0], np.flatnonzero(~same) + 1, [n]))
    for a, b in zip(starts[:-1], starts[1:]):
        a, b = int(a), int(b)
        line = (f"NodeName={compress(names[a:b])} CPUs={int(cluster.cpus[a])} "
                f"RealMemory={int(cluster.mem_mb[a])}")
        g = int(cluster.gpus[a])
        if g:
            line += f" Gres=gpu:{cluster.gpu_type}:{g}" if cluster.gpu_type else f" Gres=gpu:{g}"
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


def _default_partition(cluster: Cluster) -> int:
    """The partition marked Default=YES: the lowest tier, then the largest, then first."""
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


# --------------------------------------------------------------------------- reading

def _tokens(raw: str, fname: str, lineno: int) -> list[tuple[str, str]]:
    try:
        words = shlex.split(raw, comments=True)
    except ValueError as e:
        raise InputError(f"cannot split line: {e}", file=fname, line=lineno) from None
    out = []
    for w in words:
        key, sep, value = w.partition("=")
        if not sep or not key:
            raise InputError(f"expected Key=Value, got {w!r}", file=fname, line=lineno,
                             field=key or w)
        out.append((key, value))
    return out


def _lines(path: Path):
    """(line number, logical line) pairs; a trailing backslash continues a line."""
    text = read_text(path)
    pending, start = "", 0
    for lineno, raw in enumerate(text.splitlines(), 1):
        if not pending:
            start = lineno
        if raw.endswith("\\"):
            pending += raw[:-1] + " "
            continue
        yield start, pending + raw
        pending = ""
    if pending:
        yield start, pending


def _int_value(value: str, fname: str, lineno: int, key: str, minimum: int = 0,
               maximum: int = MAX_COUNT) -> int:
    v = value.strip()
    if not (v.isascii() and v.isdigit()) or int(v) < minimum:
        raise InputError(f"{v[:30]!r} is not an integer >= {minimum}", file=fname, line=lineno,
                         field=key)
    if len(v) > 20 or int(v) > maximum:
        raise InputError(f"{v[:30]!r} is out of range (at most {maximum:,})", file=fname,
                         line=lineno, field=key)
    return int(v)


#: NodeName State= values that make a node unusable, which the cluster model cannot express
_UNUSABLE_STATES = ("DOWN", "DRAIN", "FAIL", "FAILING", "FUTURE")


def _check_node_state(option: tuple[str, str], fname: str, lineno: int) -> None:
    key, value = option
    if value.strip().upper().split("+")[0] in _UNUSABLE_STATES:
        raise InputError(f"State={value} is not supported: the cluster model has no node "
                         "states, so these nodes would be scheduled as if up; remove them "
                         "from the partitions instead", file=fname, line=lineno, field=key)


def _parse_gres(value: str, fname: str, lineno: int) -> tuple[int, str]:
    """GPUs and GPU type from a Gres value such as ``gpu:h100:8,nvme:1`` or ``gpu:8(S:0-1)``."""
    total, gtype = 0, ""
    for item in value.split(","):
        item = re.sub(r"\(.*\)$", "", item.strip())
        if not item:
            continue
        parts = item.split(":")
        if parts[0].lower() != "gpu":
            continue                           # other generic resources are ignored
        count, typ = 1, ""
        if len(parts) == 2:
            if parts[1].isascii() and parts[1].isdigit():
                count = int(parts[1])
            else:
                typ = parts[1]
        elif len(parts) == 3:
            typ = parts[1]
            if not (parts[2].isascii() and parts[2].isdigit()):
                raise InputError(f"bad GPU count in {item!r}", file=fname, line=lineno,
                                 field="Gres")
            count = int(parts[2])
        elif len(parts) > 3:
            raise InputError(f"bad Gres {item!r}: expected gpu[:type]:count", file=fname,
                             line=lineno, field="Gres")
        if typ and gtype and typ != gtype:
            raise UnsupportedError(f"{fname}:{lineno}: nodes with several GPU types")
        gtype = typ or gtype
        total += count
    return total, gtype


def read_cluster(path) -> Cluster:
    """Read the slurm.conf subset written by :func:`write_cluster` (see module docs)."""
    path = Path(path)
    fname = str(path)
    node_names: list[str] = []
    cpus: list[int] = []
    gpus: list[int] = []
    mem: list[int] = []
    gpu_types: set[str] = set()
    node_defaults = {"cpus": 1, "mem": 1, "gpus": 0, "gtype": ""}
    part_defaults = {"tier": 1, "max_time": None, "nodes": None}
    raw_parts: list[tuple[str, str | None, int, int | None, int]] = []
    topology_plugin = None

    for lineno, line in _lines(path):
        tokens = _tokens(line, fname, lineno)
        if not tokens:
            continue
        head, value = tokens[0]
        kind = head.lower()
        opts = {k.lower(): (k, v) for k, v in tokens[1:]}
        if kind == "nodename":
            spec = dict(node_defaults)
            if "cpus" in opts:
                spec["cpus"] = _int_value(opts["cpus"][1], fname, lineno, opts["cpus"][0])
            elif "procs" in opts:
                spec["cpus"] = _int_value(opts["procs"][1], fname, lineno, opts["procs"][0])
            if "realmemory" in opts:
                spec["mem"] = _int_value(opts["realmemory"][1], fname, lineno,
                                         opts["realmemory"][0], maximum=MAX_MEMORY_MB)
            if "state" in opts:
                _check_node_state(opts["state"], fname, lineno)
            if "gres" in opts:
                spec["gpus"], spec["gtype"] = _parse_gres(opts["gres"][1], fname, lineno)
            if spec["gpus"] > 64:
                raise InputError(f"{spec['gpus']} GPUs per node (at most 64)", file=fname,
                                 line=lineno, field=opts["gres"][0])
            if value.upper() == "DEFAULT":
                node_defaults = spec
                continue
            try:
                hosts = expand(value)
            except InputError as e:
                raise InputError(e.reason, file=fname, line=lineno, field=head) from None
            if not hosts:
                raise InputError("no node names", file=fname, line=lineno, field=head)
            node_names.extend(hosts)
            if len(node_names) > MAX_NODES:
                raise InputError(f"more than {MAX_NODES:,} nodes", file=fname, line=lineno,
                                 field=head)
            cpus.extend([spec["cpus"]] * len(hosts))
            mem.extend([spec["mem"]] * len(hosts))
            gpus.extend([spec["gpus"]] * len(hosts))
            if spec["gpus"] and spec["gtype"]:
                gpu_types.add(spec["gtype"])
        elif kind == "downnodes":
            raise InputError("DownNodes is not supported: the cluster model has no node "
                             "states, so these nodes would be scheduled as if up; remove them "
                             "from the partitions instead", file=fname, line=lineno, field=head)
        elif kind == "partitionname":
            tier = part_defaults["tier"]
            if "prioritytier" in opts:
                tier = _int_value(opts["prioritytier"][1], fname, lineno,
                                  opts["prioritytier"][0])
            max_time = part_defaults["max_time"]
            if "maxtime" in opts:
                try:
                    max_time = parse_time(opts["maxtime"][1])
                except InputError as e:
                    raise InputError(e.reason, file=fname, line=lineno,
                                     field=opts["maxtime"][0]) from None
            nodes = opts["nodes"][1] if "nodes" in opts else part_defaults["nodes"]
            if value.upper() == "DEFAULT":
                part_defaults = {"tier": tier, "max_time": max_time, "nodes": nodes}
                continue
            if not value:
                raise InputError("empty partition name", file=fname, line=lineno, field=head)
            raw_parts.append((value, nodes, tier, max_time, lineno))
        elif kind == "topologyplugin":
            topology_plugin = value.strip().lower()

    if not node_names:
        raise InputError("no NodeName lines: the cluster has no nodes", file=fname)
    index = {name: i for i, name in enumerate(node_names)}
    if len(index) != len(node_names):
        seen: set[str] = set()
        dup = next(nm for nm in node_names if nm in seen or seen.add(nm))
        raise InputError(f"node {dup!r} defined twice", file=fname, field="NodeName")
    if len(gpu_types) > 1:
        raise UnsupportedError(f"{fname}: nodes with several GPU types {sorted(gpu_types)}")

    partitions = []
    seen_parts: set[str] = set()
    for pname, nodes, tier, max_time, lineno in raw_parts:
        if pname in seen_parts:
            raise InputError(f"partition {pname!r} defined twice", file=fname, line=lineno,
                             field="PartitionName")
        seen_parts.add(pname)
        idx = _node_indices(nodes, index, fname, lineno, "Nodes")
        partitions.append(Partition(pname, idx, priority_tier=tier, max_time=max_time))

    topology = {}
    topo_file = topology_path(path)
    if topology_plugin in (None, "topology/tree") and topo_file.exists():
        topology = _read_topology(topo_file, index)

    return Cluster(node_names, np.array(cpus), np.array(gpus), np.array(mem, dtype=np.int64),
                   partitions=partitions, gpu_type=next(iter(gpu_types), ""), topology=topology)


def _node_indices(nodes: str | None, index: dict[str, int], fname: str, lineno: int,
                  field: str) -> np.ndarray:
    if nodes is None or not nodes.strip():
        return np.zeros(0, dtype=np.int64)
    if nodes.strip().upper() == "ALL":
        return np.arange(len(index), dtype=np.int64)
    try:
        hosts = expand(nodes)
    except InputError as e:
        raise InputError(e.reason, file=fname, line=lineno, field=field) from None
    try:
        idx = np.fromiter((index[h] for h in hosts), dtype=np.int64, count=len(hosts))
    except KeyError as e:
        raise InputError(f"unknown node {e.args[0]!r} (no NodeName line defines it)",
                         file=fname, line=lineno, field=field) from None
    return np.unique(idx)


def _read_topology(path: Path, index: dict[str, int]) -> dict[str, np.ndarray]:
    fname = str(path)
    n = len(index)
    switch_line: dict[str, int] = {}
    leaf_nodes: dict[str, np.ndarray] = {}
    children: dict[str, list[str]] = {}
    order: list[str] = []
    for lineno, line in _lines(path):
        tokens = _tokens(line, fname, lineno)
        if not tokens:
            continue
        head, name = tokens[0]
        if head.lower() != "switchname":
            continue
        if not name:
            raise InputError("empty switch name", file=fname, line=lineno, field=head)
        if name in switch_line:
            raise InputError(f"switch {name!r} defined twice", file=fname, line=lineno,
                             field=head)
        switch_line[name] = lineno
        order.append(name)
        opts = {k.lower(): (k, v) for k, v in tokens[1:]}
        if "nodes" in opts:
            leaf_nodes[name] = _node_indices(opts["nodes"][1], index, fname, lineno,
                                             opts["nodes"][0])
        if "switches" in opts:
            try:
                children[name] = expand(opts["switches"][1])
            except InputError as e:
                raise InputError(e.reason, file=fname, line=lineno,
                                 field=opts["switches"][0]) from None
    if not order:
        return {}

    parent: dict[str, str] = {}
    for sw, kids in children.items():
        for kid in kids:
            if kid not in switch_line:
                raise InputError(f"unknown switch {kid!r}", file=fname, line=switch_line[sw],
                                 field="Switches")
            if parent.setdefault(kid, sw) != sw:
                raise InputError(f"switch {kid!r} has two parents", file=fname,
                                 line=switch_line[sw], field="Switches")
    # depth of each switch from the leaves; chains of ancestors per leaf switch
    leaves = [sw for sw in order if sw in leaf_nodes]
    chains = {}
    for leaf in leaves:
        chain, sw = [leaf], leaf
        while sw in parent:
            sw = parent[sw]
            if sw in chain:
                raise InputError(f"switch {sw!r} is its own ancestor", file=fname,
                                 line=switch_line[sw], field="Switches")
            chain.append(sw)
        chains[leaf] = chain
    depth = max((len(c) for c in chains.values()), default=0)
    if depth == 0:
        return {}
    node_leaf = np.full(n, -1, dtype=np.int64)
    for k, leaf in enumerate(leaves):
        idx = leaf_nodes[leaf]
        clash = idx[node_leaf[idx] >= 0]
        if len(clash):
            raise InputError(f"node {list(index)[int(clash[0])]!r} is in two leaf switches",
                             file=fname, line=switch_line[leaf], field="Nodes")
        node_leaf[idx] = k

    levels: dict[str, np.ndarray] = {}
    for d in range(depth):
        # switch at depth d above each leaf (the top of a short chain stands in)
        level_switch = [chains[leaf][min(d, len(chains[leaf]) - 1)] for leaf in leaves]
        ids_by_name: dict[str, int] = {}
        for sw in level_switch:
            ids_by_name.setdefault(sw, len(ids_by_name))
        per_leaf = np.array([ids_by_name[sw] for sw in level_switch] + [-1], dtype=np.int32)
        ids = per_leaf[node_leaf]           # node_leaf == -1 picks the trailing -1
        prefixes = {_TRAILING_DIGITS.match(sw).group(1) for sw in ids_by_name}
        level = prefixes.pop() if len(prefixes) == 1 else f"level{d}"
        if not level or level in levels:
            level = f"level{d}"
        if d == depth - 1 and d > 0 and len(ids_by_name) == 1 and (ids >= 0).all():
            break                          # one switch over everything: no information
        levels[level] = ids
    return levels
