"""Readers of Slurm's topology files: topology.conf of the block plugin and gres.conf
(GPU groups from ``Links=`` / ``Cores=``). Malformed lines raise InputError naming the
file, line and key."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np

from ..model.errors import InputError
from ..model.topology import BlockTopology, GpuGroups
from .conflines import conf_lines
from .hostlist import expand, node_indices
from .textfile import read_text

__all__ = ["read_block_topology", "read_tree_topology", "parse_gres_conf", "read_gres_conf"]

_TRAILING_DIGITS = re.compile(r"^(.*?)(\d*)$")

_FILE_RE = re.compile(r"^(.*?)(\d+)$")
_GRES_KEYS = {"nodename", "name", "type", "file", "cores", "links", "count", "flags",
              "autodetect", "multiplefiles"}


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
    for lineno, raw in enumerate(read_text(path).splitlines(), 1):
        opts = _key_values(raw, fname, lineno)
        if not opts:
            continue
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


def _key_values(raw: str, fname: str, lineno: int) -> dict[str, tuple[str, str]]:
    """``Key=value`` words of a Slurm config line: lower key -> (spelling, value)."""
    try:
        words = shlex.split(raw, comments=True)
    except ValueError as e:
        raise InputError(f"cannot split line: {e}", file=fname, line=lineno) from None
    out: dict[str, tuple[str, str]] = {}
    for w in words:
        key, sep, value = w.partition("=")
        if not sep or not key:
            raise InputError(f"expected Key=value, got {w!r}", file=fname, line=lineno,
                             field=w)
        out[key.lower()] = (key, value.strip())
    return out


def _cpu_set(text: str, fname: str, lineno: int) -> frozenset[int]:
    cpus: set[int] = set()
    for part in text.split(","):
        lo, sep, hi = part.strip().partition("-")
        if not (lo.isdigit() and (not sep or hi.isdigit())) or (sep and int(hi) < int(lo)):
            raise InputError(f"bad CPU range {part!r} in Cores={text!r}", file=fname,
                             line=lineno, field="Cores")
        cpus.update(range(int(lo), int(hi if sep else lo) + 1))
    return frozenset(cpus)


def parse_gres_conf(text: str, *, file: str = "gres.conf", node: str | None = None) -> GpuGroups:
    """GPU groups of one node from gres.conf text (a subset of Slurm's gres.conf).

    Understood: ``[NodeName=hostlist] Name=gpu [Type=t] File=/dev/nvidia[0-3]
    [Cores=0-31] [Links=-1,2,0,0]`` lines; GPU k is the device whose file name ends
    in k. ``Links=`` (one device per line: link counts to every GPU, -1 for itself)
    gives NVLink islands: GPUs joined by links > 0. Without ``Links=``, GPUs with
    the same ``Cores=`` set form a group (socket affinity). Lines with a NodeName
    apply only to those nodes (``node`` selects; when ``node`` is None, lines with a
    NodeName are used only if no line lacks one). Other ``Name=`` lines, and
    ``AutoDetect=`` lines, are skipped. A malformed line raises InputError naming
    the file and line.
    """
    entries = []   # (gpu index, cores or None, links or None, lineno)
    plain, named = [], []
    for lineno, raw in enumerate(text.splitlines(), 1):
        opts = _key_values(raw, file, lineno)
        if not opts or ("autodetect" in opts and "name" not in opts):
            continue
        if "name" not in opts:
            raise InputError("gres.conf line without Name=", file=file, line=lineno,
                             field=next(iter(opts.values()))[0])
        if opts["name"][1].lower() != "gpu":
            continue
        for key, (spelled, _) in opts.items():
            if key not in _GRES_KEYS:
                raise InputError(f"unknown key {spelled}=", file=file, line=lineno,
                                 field=spelled)
        (named if "nodename" in opts else plain).append((lineno, opts))
    use = plain
    if node is not None:
        for lineno, opts in named:
            try:
                hosts = expand(opts["nodename"][1])
            except InputError as e:
                raise InputError(e.reason, file=file, line=lineno, field="NodeName") from None
            if node in hosts:
                use = use + [(lineno, opts)]
    elif not plain:
        use = named
    use.sort()
    for lineno, opts in use:
        if "file" not in opts:
            raise InputError("Name=gpu line without File=", file=file, line=lineno,
                             field="File")
        try:
            files = expand(opts["file"][1])
        except InputError as e:
            raise InputError(e.reason, file=file, line=lineno, field="File") from None
        cores = _cpu_set(opts["cores"][1], file, lineno) if "cores" in opts else None
        links = None
        if "links" in opts:
            if len(files) != 1:
                raise InputError("Links= needs one device per line", file=file, line=lineno,
                                 field="Links")
            try:
                links = [int(x) for x in opts["links"][1].split(",")]
            except ValueError:
                raise InputError(f"Links={opts['links'][1]!r} is not a list of numbers",
                                 file=file, line=lineno, field="Links") from None
        for f in files:
            m = _FILE_RE.match(f)
            if not m or int(m.group(2)) >= 64:
                raise InputError(f"device file {f!r} does not end in a GPU number 0..63",
                                 file=file, line=lineno, field="File")
            entries.append((int(m.group(2)), cores, links, lineno))
    return _groups_from_entries(entries, file)


def _groups_from_entries(entries, file: str) -> GpuGroups:
    gpus = [e[0] for e in entries]
    dup = {k for k in gpus if gpus.count(k) > 1}
    if dup:
        k = min(dup)
        line = [e[3] for e in entries if e[0] == k][1]
        raise InputError(f"GPU {k} defined twice", file=file, line=line, field="File")
    num = max(gpus) + 1 if gpus else 0
    with_links = [e for e in entries if e[2] is not None]
    groups: list[int] = []
    if with_links:
        if len(with_links) != len(entries):
            line = next(e[3] for e in entries if e[2] is None)
            raise InputError("Links= given for some GPUs but not this one", file=file,
                             line=line, field="Links")
        parent = {k: k for k in gpus}

        def find(k):
            while parent[k] != k:
                parent[k] = parent[parent[k]]
                k = parent[k]
            return k
        for k, _, links, line in entries:
            if len(links) != num:
                raise InputError(f"Links= has {len(links)} entries for {num} GPUs",
                                 file=file, line=line, field="Links")
            if links[k] != -1:
                raise InputError(f"Links= entry {k} (the GPU itself) must be -1", file=file,
                                 line=line, field="Links")
            for j, v in enumerate(links):
                if j != k and v > 0 and j in parent:
                    parent[find(j)] = find(k)
        comp: dict[int, int] = {}
        for k in gpus:
            comp[find(k)] = comp.get(find(k), 0) | (1 << k)
        groups = list(comp.values())
        source = "Links"
    elif any(e[1] is not None for e in entries):
        by_cores: dict = {}
        for k, cores, _, _ in entries:
            key = cores if cores is not None else ("gpu", k)
            by_cores[key] = by_cores.get(key, 0) | (1 << k)
        groups = list(by_cores.values())
        source = "Cores"
    else:
        groups = [1 << k for k in gpus]
        source = ""
    groups.sort(key=lambda m: (m & -m))
    return GpuGroups(np.array(groups, dtype=np.uint64), num, source)


def read_gres_conf(path, node: str | None = None) -> GpuGroups:
    """:func:`parse_gres_conf` of the file at ``path``."""
    return parse_gres_conf(read_text(path), file=str(path), node=node)


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
