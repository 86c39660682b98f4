"""Topology-aware placement: Slurm's topology/tree and topology/block, GPU groups in a node.

Three placements, each a Numba kernel (callable from other ``@njit`` code, e.g. the
node engine) behind a thin Python wrapper that validates its input:

* **tree** (``--switches=k``): :func:`place_tree` / kernel :func:`topo_place`.
* **block** (``BlockName=``, ``BlockSizes=``, ``--segment=N``, ``--exclusive=topo``):
  :class:`BlockTopology`, :func:`place_block` / the same kernel :func:`topo_place`.
* **GPUs in a node** (gres.conf ``Links=`` / ``Cores=``): :func:`read_gres_conf`,
  :func:`choose_gpus` / kernel :func:`choose_gpus_kernel`.

and :func:`placement_quality` (leaf switches or base blocks spanned per job) with
:func:`placement_summary`. The exact rules, and where they differ from Slurm, are in
``docs/topology.md``; ``tests/naive_topology.py`` is the slow twin that defines them.

The one rule behind all three: a level of groups (leaf switches, base blocks, NVLink
islands) and a count of free units in each; take the smallest enclosing group that
holds the request (best fit: fewest free, ties lowest id), and inside it fill from
the largest groups first until the remainder fits in one group, which is then the
smallest group that holds it (ties lowest id). Largest-first is what makes the number
of groups spanned minimal; best fit for the last one keeps big groups whole.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numba import njit

from .errors import InputError
from .hostlist import expand
from .textfile import read_text

__all__ = ["topo_place", "choose_gpus_kernel", "levels_array", "place_tree", "place_block",
           "BlockTopology", "read_block_topology", "GpuGroups", "parse_gres_conf",
           "read_gres_conf", "choose_gpus", "placement_quality", "placement_summary"]

# --------------------------------------------------------------------------- kernels

@njit(cache=True)
def _greedy_groups(order, cap, rem, take):
    """Fill ``rem`` units from groups listed in ``order`` (capacity descending, id
    ascending): largest first until one group holds the remainder, then the smallest
    group that does (lowest id among equals). Adds units taken to ``take``; returns
    the number of groups used, or -1 when the groups cannot hold ``rem``."""
    used = 0
    i = 0
    k = len(order)
    while rem > 0:
        if i >= k or cap[order[i]] <= 0:
            return -1
        if cap[order[i]] >= rem:
            # the sufficient groups are order[i:j]; the smallest capacity among them is
            # cap[order[j-1]], and the first index with that capacity has the lowest id
            j = i
            while j < k and cap[order[j]] >= rem:
                j += 1
            smallest = cap[order[j - 1]]
            f = i
            while cap[order[f]] != smallest:
                f += 1
            take[order[f]] += rem
            return used + 1
        take[order[i]] += cap[order[i]]
        rem -= cap[order[i]]
        used += 1
        i += 1
    return used


@njit(cache=True)
def topo_place(cand, levels, need, unit, max_leaves):
    """Nodes for a job on a tree of groups, or an empty array when it cannot be placed.

    cand:       int64[k]    candidate node indices (free enough for the job now), in
                            the caller's preference order (used inside a leaf group)
    levels:     int32[L, n] group id per node and level, leaf (base block) level first;
                            -1 = in no group (never chosen). Above level L-1 sits an
                            implicit root over every node with a leaf group.
    need:       int64       nodes wanted (a multiple of ``unit``)
    unit:       int64       nodes that must share one leaf group (1, or --segment=N)
    max_leaves: int64       most leaf groups the job may span (--switches=k); 0 = any
    returns     int64[need] chosen node indices, ascending (int64[0] if impossible)
    """
    nlev = levels.shape[0]
    if need <= 0 or unit <= 0 or need % unit != 0:
        return np.empty(0, dtype=np.int64)
    nleaf = 0
    for c in cand:
        leaf = levels[0, c]
        if leaf + 1 > nleaf:
            nleaf = leaf + 1
    if nleaf == 0:
        return np.empty(0, dtype=np.int64)
    cnt = np.zeros(nleaf, dtype=np.int64)
    # parent[l, leaf]: group of ``leaf`` at level l (level nlev = implicit root, id 0)
    parent = np.zeros((nlev + 1, nleaf), dtype=np.int64)
    nsw = np.ones(nlev + 1, dtype=np.int64)
    for c in cand:
        leaf = levels[0, c]
        if leaf < 0:
            continue
        cnt[leaf] += 1
        for lv in range(1, nlev):
            s = levels[lv, c]
            parent[lv, leaf] = s
            if s + 1 > nsw[lv]:
                nsw[lv] = s + 1
    for leaf in range(nleaf):
        parent[0, leaf] = leaf
    nsw[0] = nleaf
    cap = cnt // unit
    want = need // unit
    order = np.argsort(-cap, kind="mergesort")    # capacity desc, id asc
    for lv in range(nlev + 1):
        ns = nsw[lv]
        full = np.zeros(ns, dtype=np.int64)      # capacity of each group
        held = np.zeros(ns, dtype=np.int64)      # capacity within max_leaves leaves
        nused = np.zeros(ns, dtype=np.int64)
        for o in order:
            if cap[o] <= 0:
                break
            s = parent[lv, o]
            full[s] += cap[o]
            if max_leaves <= 0 or nused[s] < max_leaves:
                held[s] += cap[o]
                nused[s] += 1
        best = -1
        for s in range(ns):
            if held[s] >= want and (best < 0 or full[s] < full[best]):
                best = s
        if best < 0:
            continue
        inside = np.empty(len(order), dtype=np.int64)
        m = 0
        for o in order:
            if cap[o] > 0 and parent[lv, o] == best:
                inside[m] = o
                m += 1
        take = np.zeros(nleaf, dtype=np.int64)
        if _greedy_groups(inside[:m], cap, want, take) < 0:
            return np.empty(0, dtype=np.int64)
        out = np.empty(need, dtype=np.int64)
        q = 0
        for leaf in range(nleaf):
            take[leaf] *= unit
        for c in cand:
            leaf = levels[0, c]
            if leaf >= 0 and take[leaf] > 0:
                take[leaf] -= 1
                out[q] = c
                q += 1
        out.sort()
        return out
    return np.empty(0, dtype=np.int64)


@njit(cache=True)
def _popcount(x):
    c = 0
    while x:
        x &= x - np.uint64(1)
        c += 1
    return c


@njit(cache=True)
def _lowest_bit(x):
    k = 0
    while not (x >> np.uint64(k)) & np.uint64(1):
        k += 1
    return k


@njit(cache=True)
def choose_gpus_kernel(free_mask, g, group_masks):
    """GPUs for ``g`` wanted on one node, spanning as few GPU groups as possible.

    free_mask:   uint64      bit k set = GPU k free
    g:           int64       GPUs wanted
    group_masks: uint64[m]   disjoint GPU groups (NVLink islands / sockets); a GPU in
                             none of them is a group of its own
    returns      uint64      mask of the chosen GPUs (0 if fewer than g are free)

    Groups are ranked by free GPUs (descending), ties by their lowest GPU index;
    the smallest group that holds the remainder is used last; inside a group the
    lowest-indexed free GPUs are taken.
    """
    free_mask = np.uint64(free_mask)
    if g <= 0 or _popcount(free_mask) < g:
        return np.uint64(0)
    union = np.uint64(0)
    for gm in group_masks:
        union |= np.uint64(gm)
    rest = free_mask & ~union
    ngroups = len(group_masks) + _popcount(rest)
    masks = np.empty(ngroups, dtype=np.uint64)   # free GPUs of each group
    low = np.empty(ngroups, dtype=np.int64)      # lowest GPU index of each group
    cap = np.empty(ngroups, dtype=np.int64)
    m = 0
    for gm in group_masks:
        gm = np.uint64(gm)
        if gm == 0:
            continue
        masks[m] = gm & free_mask
        low[m] = _lowest_bit(gm)
        m += 1
    while rest:
        b = _lowest_bit(rest)
        masks[m] = np.uint64(1) << np.uint64(b)
        low[m] = b
        rest &= ~masks[m]
        m += 1
    for i in range(m):
        cap[i] = _popcount(masks[i])
    # capacity desc, then lowest GPU index asc
    order = np.argsort(low[:m], kind="mergesort")
    order = order[np.argsort(-cap[order], kind="mergesort")]
    take = np.zeros(m, dtype=np.int64)
    if _greedy_groups(order, cap, g, take) < 0:
        return np.uint64(0)
    out = np.uint64(0)
    for i in range(m):
        left = take[i]
        mk = masks[i]
        while left > 0:
            b = mk & (~mk + np.uint64(1))     # lowest set bit
            out |= b
            mk &= ~b
            left -= 1
    return out


# --------------------------------------------------------------------------- tree

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


def _candidates(candidates, n: int) -> np.ndarray:
    cand = np.ascontiguousarray(candidates, dtype=np.int64).ravel()
    if len(cand) and (cand.min() < 0 or cand.max() >= n):
        raise InputError(f"candidate node index out of range 0..{n - 1}")
    seen = np.zeros(n, dtype=bool)
    seen[cand] = True
    if int(np.count_nonzero(seen)) != len(cand):
        raise InputError("candidate nodes must be distinct")
    return cand


def _count(value, name: str, minimum: int) -> int:
    if int(value) != value or value < minimum:
        raise InputError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return int(value)


def place_tree(cluster_or_topology, candidates, num_nodes: int, *,
               max_switches: int = 0) -> np.ndarray:
    """Nodes for a ``num_nodes`` job under topology/tree, ascending, or an empty array.

    ``cluster_or_topology``: a :class:`~fastsched.Cluster` (its ``topology``), a
    topology dict, or the int32 (L, n) array of :func:`levels_array` (trusted as is:
    convert once to place many jobs). ``candidates``: nodes that can host the
    job now, in preference order. ``max_switches`` (``--switches=k``): the job may
    span at most k leaf switches; 0 = no limit.
    """
    topo = getattr(cluster_or_topology, "topology", cluster_or_topology)
    levels = topo if isinstance(topo, np.ndarray) else levels_array(topo)
    cand = _candidates(candidates, levels.shape[1])
    need = _count(num_nodes, "num_nodes", 1)
    k = _count(max_switches, "max_switches", 0)
    return topo_place(cand, levels, need, 1, k)


# --------------------------------------------------------------------------- block

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


def place_block(blocks: BlockTopology, candidates, num_nodes: int, *, segment: int = 0,
                exclusive_topo: bool = False) -> np.ndarray:
    """Nodes for a ``num_nodes`` job under topology/block, ascending, or an empty array.

    ``segment`` (``--segment=N``): the job is ``num_nodes / N`` segments of N nodes,
    each inside one base block (N must divide ``num_nodes`` and be at most the base
    block size). ``exclusive_topo`` (``--exclusive=topo``): only base blocks whose
    every node is a candidate are used (pass idle nodes as candidates).
    """
    need = _count(num_nodes, "num_nodes", 1)
    seg = _count(segment, "segment", 0) or 1
    if need % seg:
        raise InputError(f"--segment={seg}: the node count {need} must be a multiple of it",
                         field="segment")
    if seg > blocks.block_sizes[0]:
        raise InputError(f"--segment={seg} exceeds the planning base block size "
                         f"{blocks.block_sizes[0]}", field="segment")
    cand = _candidates(candidates, len(blocks.block_of_node))
    if exclusive_topo:
        b = blocks.block_of_node[cand]
        inb = b >= 0
        whole = np.bincount(b[inb], minlength=len(blocks.nodes_per_block)) == blocks.nodes_per_block
        cand = cand[inb][whole[b[inb]]]
    return topo_place(cand, blocks.levels, need, seg, 0)


# --------------------------------------------------------------------------- GPUs

@dataclass(frozen=True)
class GpuGroups:
    """GPU groups of a node: disjoint bitmasks (bit k = GPU k), ordered by lowest GPU."""

    masks: np.ndarray       # uint64[m]
    num_gpus: int
    source: str = ""        # "Links", "Cores" or "" (one group per GPU)

    def __len__(self) -> int:
        return len(self.masks)


_FILE_RE = re.compile(r"^(.*?)(\d+)$")
_GRES_KEYS = {"nodename", "name", "type", "file", "cores", "links", "count", "flags",
              "autodetect", "multiplefiles"}


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


def choose_gpus(free_mask: int, count: int, groups: GpuGroups | np.ndarray | None = None) -> int:
    """Mask of ``count`` free GPUs spanning the fewest groups (0 if not enough free)."""
    count = _count(count, "count", 0)
    if not 0 <= int(free_mask) < 1 << 64:
        raise InputError(f"free GPU mask {free_mask!r} is not a 64-bit mask")
    masks = groups.masks if isinstance(groups, GpuGroups) else groups
    masks = np.zeros(0, np.uint64) if masks is None else np.asarray(masks, dtype=np.uint64)
    acc = 0
    for m in masks.tolist():
        if acc & m:
            raise InputError("GPU groups overlap")
        acc |= m
    return int(choose_gpus_kernel(np.uint64(free_mask), np.int64(count), masks))


# --------------------------------------------------------------------------- quality

def placement_quality(cluster, alloc_offsets, alloc_nodes, *, level: str | int = 0,
                      topology: dict | None = None) -> np.ndarray:
    """Leaf switches (or base blocks) spanned by each job: int64[num_jobs].

    ``alloc_offsets`` (int64[J+1]) and ``alloc_nodes`` are a Schedule-like CSR node
    list; ``level`` names (or numbers) the topology level counted, leaf first.
    ``topology`` overrides ``cluster.topology`` (e.g. ``BlockTopology.topology``).
    A node in no group counts as a group of its own; a job with no nodes spans 0.
    """
    topo = cluster.topology if topology is None else topology
    if not topo:
        raise InputError("placement_quality needs a topology (cluster has none)")
    names = list(topo)
    key = names[level] if isinstance(level, int) else level
    if key not in topo:
        raise InputError(f"unknown topology level {level!r}; levels are {names}")
    ids = np.asarray(topo[key], dtype=np.int64)
    off = np.asarray(alloc_offsets, dtype=np.int64)
    nodes = np.asarray(alloc_nodes, dtype=np.int64)
    if len(off) == 0 or off[0] != 0 or off[-1] != len(nodes) or (np.diff(off) < 0).any():
        raise InputError("alloc_offsets must start at 0, not decrease and end at len(alloc_nodes)")
    njobs = len(off) - 1
    if len(nodes) == 0:
        return np.zeros(njobs, dtype=np.int64)
    if nodes.min() < 0 or nodes.max() >= len(ids):
        raise InputError("alloc_nodes holds a node index outside the cluster")
    group = ids[nodes]
    group = np.where(group >= 0, group, ids.max() + 1 + nodes)    # lone nodes: own group
    job = np.repeat(np.arange(njobs, dtype=np.int64), np.diff(off))
    pairs = np.unique(job * (int(group.max()) + 1) + group)
    return np.bincount(pairs // (int(group.max()) + 1), minlength=njobs).astype(np.int64)


def placement_summary(spans, alloc_offsets) -> dict:
    """Mean and p95 of groups spanned over jobs with nodes, and the share of
    multi-node jobs that sit in a single group."""
    spans = np.asarray(spans, dtype=np.int64)
    sizes = np.diff(np.asarray(alloc_offsets, dtype=np.int64))
    placed = sizes > 0
    multi = sizes > 1
    return {
        "jobs": int(placed.sum()),
        "mean_groups_spanned": float(spans[placed].mean()) if placed.any() else 0.0,
        "p95_groups_spanned": float(np.percentile(spans[placed], 95)) if placed.any() else 0.0,
        "multi_node_jobs": int(multi.sum()),
        "multi_node_single_group_share": (float((spans[multi] == 1).mean())
                                          if multi.any() else 0.0),
    }
