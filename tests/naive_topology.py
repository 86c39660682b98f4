"""Slow, obviously-correct twins of fastsched.engine.placement (plain Python lists and sets).

They define the placement rules; the Numba kernels must give identical results.
Also brute-force optima (fewest groups spanned) to check that the greedy rule is
optimal where it claims to be.
"""
from __future__ import annotations

from itertools import combinations


def fill_groups(caps: dict, want: int) -> dict:
    """Slurm's leaf-switch fill: while units remain, if some group holds the rest,
    take the smallest such group (lowest id on ties); otherwise take the largest
    group whole (lowest id on ties). Returns {group: units taken}, or None."""
    remaining = {g for g, c in caps.items() if c > 0}
    taken = {}
    rem = want
    while rem > 0:
        if not remaining:
            return None
        sufficient = [g for g in remaining if caps[g] >= rem]
        if sufficient:
            g = min(sufficient, key=lambda g: (caps[g], g))
            taken[g] = rem
            return taken
        g = min(remaining, key=lambda g: (-caps[g], g))
        taken[g] = caps[g]
        rem -= caps[g]
        remaining.remove(g)
    return taken


def topo_place(cand, levels, need, unit=1, max_leaves=0):
    """Twin of fastsched.engine.placement.topo_place; ``levels`` is a list of per-node id lists."""
    if need <= 0 or unit <= 0 or need % unit:
        return []
    want = need // unit
    valid = [c for c in cand if levels[0][c] >= 0]
    count = {}
    for c in valid:
        count[levels[0][c]] = count.get(levels[0][c], 0) + 1
    cap = {leaf: k // unit for leaf, k in count.items()}
    first_node = {}
    for c in valid:
        first_node.setdefault(levels[0][c], c)

    def group_of(lv, leaf):
        return 0 if lv == len(levels) else levels[lv][first_node[leaf]]

    for lv in range(len(levels) + 1):
        groups = {}
        for leaf in cap:
            groups.setdefault(group_of(lv, leaf), []).append(leaf)
        feasible = []
        for g, leaves in groups.items():
            caps = sorted((cap[leaf] for leaf in leaves), reverse=True)
            held = sum(caps[:max_leaves]) if max_leaves > 0 else sum(caps)
            if held >= want:
                feasible.append((sum(caps), g))
        if not feasible:
            continue
        _, g = min(feasible)
        taken = fill_groups({leaf: cap[leaf] for leaf in groups[g]}, want)
        left = {leaf: u * unit for leaf, u in taken.items()}
        out = []
        for c in valid:
            if left.get(levels[0][c], 0) > 0:
                left[levels[0][c]] -= 1
                out.append(c)
        return sorted(out)
    return []


def min_groups(caps: list[int], want: int):
    """Brute force: fewest groups whose capacities add up to ``want`` (None if none)."""
    for k in range(0, len(caps) + 1):
        if any(sum(s) >= want for s in combinations(caps, k)):
            return k
    return None


def block_levels(block_of_node, block_sizes):
    """Levels of a block topology: base blocks, then base // (size / base size)."""
    base = block_sizes[0]
    return [list(block_of_node)] + [[b // (s // base) if b >= 0 else -1 for b in block_of_node]
                                    for s in block_sizes[1:]]


def place_block(block_of_node, block_sizes, cand, need, segment=0, exclusive_topo=False):
    if exclusive_topo:
        members = {}
        for i, b in enumerate(block_of_node):
            members.setdefault(b, set()).add(i)
        cs = set(cand)
        cand = [c for c in cand if block_of_node[c] >= 0
                and members[block_of_node[c]] <= cs]
    return topo_place(cand, block_levels(block_of_node, block_sizes), need, segment or 1, 0)


def choose_gpus(free_mask: int, g: int, group_masks: list[int]) -> int:
    """Twin of choose_gpus_kernel: groups (a GPU in none is its own group) ranked by
    free GPUs; Slurm-style fill; lowest free GPU indices inside a group."""
    free = {k for k in range(64) if free_mask >> k & 1}
    if g <= 0 or len(free) < g:
        return 0
    groups = [{k for k in range(64) if m >> k & 1} for m in group_masks if m]
    covered = set().union(*groups) if groups else set()
    groups += [{k} for k in sorted(free - covered)]
    key = {min(gr): gr for gr in groups}          # a group is named by its lowest GPU
    caps = {low: len(gr & free) for low, gr in key.items()}
    taken = fill_groups(caps, g)
    out = 0
    for low, n in taken.items():
        for k in sorted(key[low] & free)[:n]:
            out |= 1 << k
    return out


def groups_spanned(mask: int, group_masks: list[int]) -> int:
    spanned = sum(1 for m in group_masks if m & mask)
    covered = 0
    for m in group_masks:
        covered |= m
    return spanned + bin(mask & ~covered).count("1")


def min_gpu_groups(free_mask: int, g: int, group_masks: list[int]) -> int:
    """Brute force: fewest groups spanned by any g free GPUs."""
    free = [k for k in range(64) if free_mask >> k & 1]
    return min(groups_spanned(sum(1 << k for k in combo), group_masks)
               for combo in combinations(free, g))


def placement_quality(leaf_of_node, alloc_offsets, alloc_nodes):
    out = []
    for j in range(len(alloc_offsets) - 1):
        nodes = alloc_nodes[alloc_offsets[j]:alloc_offsets[j + 1]]
        out.append(len({leaf_of_node[v] if leaf_of_node[v] >= 0 else ("node", v)
                        for v in nodes}))
    return out
