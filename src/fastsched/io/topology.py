"""Readers of Slurm's topology.conf: the block plugin's (``BlockName=``) and the tree
plugin's (``SwitchName=``). gres.conf is :mod:`fastsched.io.gresconf`. Malformed lines
raise InputError naming the file, line and key."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..model.errors import InputError
from ..model.topology import BlockTopology
from .conflines import conf_lines
from .hostlist import expand, node_indices

__all__ = ["read_block_topology", "read_tree_topology"]

_TRAILING_DIGITS = re.compile(r"^(.*?)(\d*)$")



def read_block_topology(path, node_names) -> BlockTopology:
    """A topology.conf of the block plugin: ``BlockName=b1 Nodes=n[1-32]`` lines and an
    optional ``BlockSizes=32,64``. ``node_names``: the cluster's node names (or a
    Cluster). Malformed lines raise InputError naming the file and line."""
    path = Path(path)
    names = list(getattr(node_names, "node_names", node_names))
    index = {nm: i for i, nm in enumerate(names)}
    fname = str(path)
    ids = np.full(len(names), -1, dtype=np.int32)
    block_names: list[str] = []
    sizes: tuple[int, ...] = ()
    size_line = None
    for conf in conf_lines(path):
        lineno = conf.line
        opts = {k.lower(): (k, v.strip()) for k, v in conf.words}
        head = next(iter(opts))
        if head == "blocksizes":
            if len(opts) != 1:
                raise InputError("BlockSizes takes no other keys on its line", file=fname,
                                 line=lineno, field="BlockSizes")
            try:
                sizes = tuple(int(x) for x in opts[head][1].split(","))
            except ValueError:
                raise InputError(f"BlockSizes={opts[head][1]!r} is not a list of numbers",
                                 file=fname, line=lineno, field="BlockSizes") from None
            size_line = lineno
            continue
        if head != "blockname":
            raise InputError(f"expected BlockName= or BlockSizes=, got {opts[head][0]}=",
                             file=fname, line=lineno, field=opts[head][0])
        bname = opts[head][1]
        if not bname or bname in block_names:
            raise InputError(f"block name {bname!r} empty or defined twice", file=fname,
                             line=lineno, field="BlockName")
        if "nodes" not in opts:
            raise InputError(f"block {bname!r} has no Nodes=", file=fname, line=lineno,
                             field="Nodes")
        for key, (spelled, _) in opts.items():
            if key not in ("blockname", "nodes"):
                raise InputError(f"unknown key {spelled}=", file=fname, line=lineno,
                                 field=spelled)
        try:
            members = expand(opts["nodes"][1])
        except InputError as e:
            raise InputError(e.reason, file=fname, line=lineno, field="Nodes") from None
        for nm in members:
            if nm not in index:
                raise InputError(f"unknown node {nm!r}", file=fname, line=lineno, field="Nodes")
            if ids[index[nm]] >= 0:
                raise InputError(f"node {nm!r} is in two blocks", file=fname, line=lineno,
                                 field="Nodes")
            ids[index[nm]] = len(block_names)
        block_names.append(bname)
    try:
        return BlockTopology(ids, sizes, block_names)
    except InputError as e:
        raise InputError(e.reason, file=fname, line=size_line,
                         field="BlockSizes" if size_line else None) from None


def read_tree_topology(path, index: dict[str, int]) -> dict[str, np.ndarray]:
    """Levels (leaf first: name -> int32 switch id per node, -1 for none) of a
    topology.conf of the tree plugin; ``index``: node name -> node index. Rules in
    :mod:`fastsched.io.slurmconf`."""
    fname = str(path)
    n = len(index)
    switch_line: dict[str, int] = {}
    leaf_nodes: dict[str, np.ndarray] = {}
    children: dict[str, list[str]] = {}
    order: list[str] = []
    for conf in conf_lines(path):
        lineno, tokens = conf.line, conf.words
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
            try:
                leaf_nodes[name] = node_indices(opts["nodes"][1], index)
            except InputError as e:
                raise conf.error(e.reason, opts["nodes"][0]) from None
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
