"""Topology-aware placement: Slurm's topology/tree and topology/block, GPUs in a node.

Three placements, each a Numba kernel (callable from other ``@njit`` code, e.g. the
node engine) behind a thin Python wrapper that validates its input:

* **tree** (``--switches=k``): :func:`place_tree` / kernel :func:`topo_place`.
* **block** (``BlockName=``, ``BlockSizes=``, ``--segment=N``, ``--exclusive=topo``):
  :class:`BlockTopology`, :func:`place_block` / the same kernel :func:`topo_place`.
* **GPUs in a node** (gres.conf ``Links=`` / ``Cores=``, read by
  :func:`fastsched.io.topology.read_gres_conf`): :func:`choose_gpus` / kernel
  :func:`choose_gpus_kernel`.

The exact rules, and where they differ from Slurm, are in
``docs/topology.md``; ``tests/naive_topology.py`` is the slow twin that defines them.

The one rule behind all three: a level of groups (leaf switches, base blocks, NVLink
islands) and a count of free units in each; take the smallest enclosing group that
holds the request (best fit: fewest free, ties lowest id), and inside it fill from
the largest groups first until the remainder fits in one group, which is then the
smallest group that holds it (ties lowest id). Largest-first is what makes the number
of groups spanned minimal; best fit for the last one keeps big groups whole.
"""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
import numpy as np
from numba import njit

from ..model.errors import InputError
from ..model.topology import BlockTopology, GpuGroups, levels_array

__all__ = ["topo_place", "choose_gpus_kernel", "place_tree", "place_block", "choose_gpus"]

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
