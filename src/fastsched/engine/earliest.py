"""Matching: a job's earliest start and its nodes, from the work profiles.

By scan (:func:`_plan_job`: every capable node of the partition) or from the
run index (:func:`_plan_indexed`, same answers: :mod:`fastsched.engine.runindex`).
A start now is best fit: the nodes with the least free (g, c, m), then index.
A later start is the smallest t covered by ``need`` feasible start intervals;
its nodes are those whose run starts latest, then best fit at t, then index.
Every node is wholly free after its last breakpoint (its tail), so the start
is at most the need-th smallest tail of an eligible node: the scans stop there.
Without holds on its nodes (EASY's first reservation of a pass) a node's free
resources only grow, and the start is the need-th smallest first fit
(:func:`_earliest_monotone`): no sweep.
"""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
import numpy as np
from numba import njit

from .placement import topo_place
from .blocks import _in_idle_blocks
from .heap import _heap_pop, _heap_push
from .leafkernel import leaf_kernel
from .profile import _segment_at
from .runindex import ix_add_slot
from .treap import _A, _LN, add_slot, tr_node, tr_reserve, tr_succ

_INF = np.int64(1) << np.int64(62)


_PACKED_MAX = np.int64(1) << np.int64(62)


@njit(cache=True)
def _lex_order(k0, k1, k2, k3, count):
    """Order of 0..count-1 by (k0, k1, k2, k3, position). One sort of the keys and the
    position packed into one integer (offsets from their minima) when their spans
    allow it, as they do for free GPUs, CPUs and MB: the packed keys are distinct, so
    an unstable sort (Numba's quicksort, 2-3x its mergesort) gives the same order;
    else stable sorts, least significant first."""
    packed = _packed_keys(k0, k1, k2, k3, count)
    if packed.shape[0] != count:
        return _lex_order_sorts(k0, k1, k2, k3, count)
    packed.sort()
    for i in range(count):
        packed[i] = packed[i] % count
    return packed


@njit(cache=True)
def _lex_first(k0, k1, k2, k3, count, need):
    """The first ``need`` (<= count) of :func:`_lex_order`'s order: for a few among many
    (a small job's best fit among every node free enough) a selection, not a sort."""
    packed = _packed_keys(k0, k1, k2, k3, count)
    if packed.shape[0] != count or 4 * need > count:
        return _lex_order(k0, k1, k2, k3, count)[:need]
    kth = np.partition(packed, need - 1)[need - 1]
    first = np.empty(need, dtype=np.int64)
    m = 0
    for i in range(count):          # the keys are distinct: exactly need are <= kth
        if packed[i] <= kth:
            first[m] = packed[i]
            m += 1
    first.sort()
    for i in range(need):
        first[i] = first[i] % count
    return first


@njit(cache=True)
def _packed_keys(k0, k1, k2, k3, count):
    """(k0, k1, k2, k3, position) of 0..count-1 packed into one distinct integer each,
    ordered as the tuples are; an empty array when their spans do not fit in one."""
    packed = np.zeros(count, dtype=np.int64)
    if count == 0:
        return packed
    room = _PACKED_MAX // count
    for key in (k0[:count], k1[:count], k2[:count], k3[:count]):
        lo = key.min()
        span = key.max() - lo + 1
        if span <= 0 or span > room:        # (<= 0: the span overflowed)
            return np.zeros(0, dtype=np.int64)
        room //= span
        for i in range(count):
            packed[i] = packed[i] * span + (key[i] - lo)
    for i in range(count):
        packed[i] = packed[i] * count + i
    return packed


@njit(cache=True)
def _lex_order_sorts(k0, k1, k2, k3, count):
    order = np.arange(count)
    for key in (k3, k2, k1, k0):
        sub = key[order]
        order = order[np.argsort(sub, kind="mergesort")]
    return order


@leaf_kernel
def _capable(x, ask, nodes):
    return nodes.capG[x] >= ask.g and nodes.capC[x] >= ask.c and nodes.capM[x] >= ask.m


@njit(cache=True)
def _plan_job(now, ask, only_now, skip_now, part, plist, nodes, p, free, chosen, topo, unit,
              max_leaves, excl):
    """Earliest start of a job (or only "now?" when ``only_now``) on the nodes
    ``plist`` of partition ``part``; fills ``chosen[:need]`` with its nodes,
    ascending. Returns the start, -1 (only_now and it does not fit) or -2 (it fits
    now, but not within its topology constraint: no plan this pass). ``skip_now``:
    the caller knows it cannot fit now. The kept profiles (every breakpoint but the
    first > now) get their first segment moved to now before they are read; a start
    now of a GPU job without topology reads only the nodes with enough free GPUs
    (:func:`_fitting_now_by_gpus`). Topology: :func:`_choose_now`."""
    if skip_now and not only_now and ask.need > 1:
        t = _earliest_monotone(now, ask, plist, nodes, p, chosen)
        if t >= 0:
            return t
    cand = np.empty(plist.shape[0], dtype=np.int64)
    by_gpus = (not skip_now and ask.g > 0 and topo.levels.shape[0] == 0
               and nodes.pbits.shape[0] > 0)
    if by_gpus:
        nc = _fitting_now_by_gpus(now, ask, part, nodes, p, free, cand)
    else:
        nc = _fitting_now(now, ask, skip_now, plist, nodes, p, cand)
    if nc >= ask.need and not skip_now:
        return _choose_now(now, ask, cand[:nc], nodes, p, chosen, topo, unit, max_leaves, excl)
    if only_now:
        return -1
    if by_gpus:         # a later start reads every capable node
        _fitting_now(now, ask, True, plist, nodes, p, cand)
    if ask.need > 1 and not skip_now:
        t = _earliest_monotone(now, ask, plist, nodes, p, chosen)
        if t >= 0:
            return t
    t_up = _tail_bound(ask, plist, nodes, p)
    if ask.need == 1:
        return _earliest_one(ask, plist, nodes, p, t_up, chosen)
    ra, rb, rx, nr = _feasible_runs(ask, plist, nodes, p, t_up)
    t = _first_covered(ra, rb, nr, ask.need)
    _choose_covering(t, ra, rb, rx, nr, p, ask.need, chosen)
    return t


@leaf_kernel
def _fitting_now(now, ask, skip_now, plist, nodes, p, cand):
    """Moves every capable node's first breakpoint to now; unless ``skip_now``,
    puts the nodes where the job fits from now for its duration into ``cand``
    (in ``plist`` order) and returns their count."""
    g, c, m, d = ask.g, ask.c, ask.m, ask.d
    WT, WG, WC, WM = p.WT, p.WG, p.WC, p.WM
    nc = 0
    for i in range(plist.shape[0]):
        x = plist[i]
        if not _capable(x, ask, nodes):
            continue
        o = p.wo[x]
        WT[o] = now
        if not skip_now and _fits_from(o, p.wlen[x], now + d, g, c, m, WT, WG, WC, WM):
            cand[nc] = x
            nc += 1
    return nc


@leaf_kernel
def _fitting_now_by_gpus(now, ask, part, nodes, p, free, cand):
    """:func:`_fitting_now` over the nodes of partition ``part`` with at least
    ``ask.g`` free GPUs now, list by list from the fewest (``free.bhead``), up to
    the list where ``need`` candidates are reached: a start now is best fit, fewest
    free GPUs first, so its nodes are among them. ``cand[:count]`` comes out
    ascending, the order of a scan. Returns the count."""
    g, c, m, d = ask.g, ask.c, ask.m, ask.d
    WT, WG, WC, WM = p.WT, p.WG, p.WC, p.WM
    bit = np.uint64(part)
    nc = 0
    for v in range(g, free.bhead.shape[0]):
        x = free.bhead[v]
        while x >= 0:
            if (nodes.pbits[x] >> bit) & np.uint64(1):
                o = p.wo[x]
                WT[o] = now
                if _fits_from(o, p.wlen[x], now + d, g, c, m, WT, WG, WC, WM):
                    cand[nc] = x
                    nc += 1
            x = free.bnext[x]
        if nc >= ask.need:
            break
    cand[:nc].sort()
    return nc


@leaf_kernel
def _fits_from(o, L, until, g, c, m, WT, WG, WC, WM):
    """Do the segments of a profile at ``o`` (``L`` breakpoints) hold (g, c, m) from
    the first up to ``until``?"""
    if WG[o] < g or WC[o] < c or WM[o] < m:
        return False
    k = 1
    while k < L and WT[o + k] < until:
        if WG[o + k] < g or WC[o + k] < c or WM[o + k] < m:
            return False
        k += 1
    return True


@njit(cache=True)
def _choose_now(now, ask, cand, nodes, p, chosen, topo, unit, max_leaves, excl):
    """A start now on ``need`` of the nodes ``cand`` (best fit). With topology
    levels, the nodes :func:`fastsched.topology.topo_place` picks from the
    candidates in best-fit order (``unit``: --segment, ``max_leaves``: --switches
    in force); when it finds none and no constraint is in force, plain best fit.
    ``excl`` (--exclusive=topo): only candidates whose whole leaf group is idle
    over [now, now + d), and no fallback. Returns now, or -2 (no placement)."""
    need = ask.need
    nc = cand.shape[0]
    k0 = np.zeros(nc, dtype=np.int64)
    k1 = np.empty(nc, dtype=np.int64)
    k2 = np.empty(nc, dtype=np.int64)
    k3 = np.empty(nc, dtype=np.int64)
    for i in range(nc):
        o = p.wo[cand[i]]
        k1[i] = p.WG[o]
        k2[i] = p.WC[o]
        k3[i] = p.WM[o]
    if topo.levels.shape[0] > 0:
        pref = cand[_lex_order(k0, k1, k2, k3, nc)]
        if excl:
            pref = _in_idle_blocks(pref, now, now + ask.d, topo, nodes, p)
        got = topo_place(pref, topo.levels, need, unit, max_leaves)
        if got.shape[0] == need:
            chosen[:need] = got
            return now
        if excl or unit > 1 or max_leaves > 0:
            return -2
    if need == 1:
        best = 0
        for i in range(1, nc):
            if (k1[i] < k1[best] or (k1[i] == k1[best] and (k2[i] < k2[best] or (
                    k2[i] == k2[best] and k3[i] < k3[best])))):
                best = i
        chosen[0] = cand[best]
    else:
        first = _lex_first(k0, k1, k2, k3, nc, need)
        for i in range(need):
            chosen[i] = cand[first[i]]
        chosen[:need].sort()
    return now


@njit(cache=True)
def _earliest_monotone(now, ask, plist, nodes, p, chosen):
    """:func:`_plan_job`'s later start of a multi-node job when no capable node has a
    hold: each node's free resources then only grow (running jobs end), so its one
    feasible interval is [a, inf) from the first breakpoint a where the job fits, the
    start is the need-th smallest a, and the nodes are :func:`_choose_covering`'s
    among those intervals: one scan and a selection instead of the general sweep.
    Returns -1 (take the general sweep) as soon as a node's resources fall after
    rising (a hold: an earlier reservation of the pass, a maintenance window, a
    boot). Moves the first breakpoint of the nodes it reads to now, as
    :func:`_fitting_now` does."""
    g, c, m, need = ask.g, ask.c, ask.m, ask.need
    WT, WG, WC, WM = p.WT, p.WG, p.WC, p.WM
    a = np.empty(plist.shape[0], dtype=np.int64)
    ax = np.empty(plist.shape[0], dtype=np.int64)
    na = 0
    for i in range(plist.shape[0]):
        x = plist[i]
        if not _capable(x, ask, nodes):
            continue
        o = p.wo[x]
        WT[o] = now
        L = p.wlen[x]
        k = 0
        while k < L and (WG[o + k] < g or WC[o + k] < c or WM[o + k] < m):
            k += 1
        if k == L:
            return -1
        for k2 in range(k + 1, L):
            if WG[o + k2] < g or WC[o + k2] < c or WM[o + k2] < m:
                return -1
        a[na] = WT[o + k]
        ax[na] = x
        na += 1
    if na < need:
        return -1
    t = np.partition(a[:na], need - 1)[need - 1]
    _choose_covering(t, a, np.full(na, _INF), ax, na, p, need, chosen)
    return t


@njit(cache=True)
def _tail_bound(ask, plist, nodes, p):
    """The need-th smallest tail (last breakpoint) of a capable node: no start is later."""
    tails = np.empty(plist.shape[0], dtype=np.int64)
    nt = 0
    for i in range(plist.shape[0]):
        x = plist[i]
        if _capable(x, ask, nodes):
            tails[nt] = p.WT[p.wo[x] + p.wlen[x] - 1]
            nt += 1
    if ask.need == 1:
        return tails[:nt].min()
    return np.partition(tails[:nt], ask.need - 1)[ask.need - 1]


@leaf_kernel
def _earliest_one(ask, plist, nodes, p, t_up, chosen):
    """A single-node job's earliest start, at most ``t_up``; its node in ``chosen[0]``.

    t = the earliest run start over all nodes; every candidate's run starts
    at t, so the choice is by (free at t, index): no sort needed. The
    sentinel (t_up, +inf...) loses to any run starting at or before t_up."""
    g, c, m, d = ask.g, ask.c, ask.m, ask.d
    WT, WG, WC, WM = p.WT, p.WG, p.WC, p.WM
    bt = t_up
    bx = -1
    bg = bc = bm = _INF
    for i in range(plist.shape[0]):
        x = plist[i]
        if not _capable(x, ask, nodes):
            continue
        o = p.wo[x]
        L = p.wlen[x]
        k = 0
        while k < L and WT[o + k] <= bt:
            if WG[o + k] >= g and WC[o + k] >= c and WM[o + k] >= m:
                k2 = k + 1
                while k2 < L and WG[o + k2] >= g and WC[o + k2] >= c and WM[o + k2] >= m:
                    k2 += 1
                if k2 == L or WT[o + k2] - WT[o + k] >= d:
                    a = WT[o + k]
                    if (a < bt or (a == bt and (WG[o + k] < bg or (WG[o + k] == bg and (
                            WC[o + k] < bc or (WC[o + k] == bc and WM[o + k] < bm)))))):
                        bt = a
                        bx = x
                        bg = WG[o + k]
                        bc = WC[o + k]
                        bm = WM[o + k]
                    break
                k = k2 + 1
            else:
                k += 1
    chosen[0] = bx
    return bt


@njit(cache=True)
def _feasible_runs(ask, plist, nodes, p, t_up):
    """The feasible start intervals [ra, rb] of every capable node (node ``rx``)
    that start at most ``t_up``, in node order, each node's in time order."""
    g, c, m, d = ask.g, ask.c, ask.m, ask.d
    WT, WG, WC, WM = p.WT, p.WG, p.WC, p.WM
    total = 0
    for i in range(plist.shape[0]):
        x = plist[i]
        if _capable(x, ask, nodes):
            total += (p.wlen[x] + 1) // 2 + 1
    ra = np.empty(total, dtype=np.int64)
    rb = np.empty(total, dtype=np.int64)
    rx = np.empty(total, dtype=np.int64)
    nr = 0
    for i in range(plist.shape[0]):
        x = plist[i]
        if not _capable(x, ask, nodes):
            continue
        o = p.wo[x]
        L = p.wlen[x]
        k = 0
        while k < L and WT[o + k] <= t_up:
            if WG[o + k] >= g and WC[o + k] >= c and WM[o + k] >= m:
                k2 = k + 1
                while k2 < L and WG[o + k2] >= g and WC[o + k2] >= c and WM[o + k2] >= m:
                    k2 += 1
                a = WT[o + k]
                if k2 == L:
                    ra[nr] = a
                    rb[nr] = _INF
                    rx[nr] = x
                    nr += 1
                elif WT[o + k2] - a >= d:
                    ra[nr] = a
                    rb[nr] = WT[o + k2] - d
                    rx[nr] = x
                    nr += 1
                k = k2 + 1
            else:
                k += 1
    return ra, rb, rx, nr


@njit(cache=True)
def _first_covered(ra, rb, nr, need):
    """The smallest t covered by ``need`` of the intervals: a sweep over their
    starts with a min-heap of their ends (-1: none). The intervals starting at one t
    all enter the heap before it is read, so their order among themselves does not
    matter: an unstable sort."""
    order = np.argsort(ra[:nr])
    hk = np.empty(nr, dtype=np.int64)
    hv = np.empty(nr, dtype=np.int64)
    hs = 0
    t = -1
    i = 0
    while i < nr:
        t = ra[order[i]]
        while i < nr and ra[order[i]] == t:
            hs = _heap_push(hk, hv, hs, rb[order[i]], 0)
            i += 1
        while hs > 0 and hk[0] < t:
            hs = _heap_pop(hk, hv, hs)
        if hs >= need:
            break
        t = -1
    return t


@njit(cache=True)
def _choose_covering(t, ra, rb, rx, nr, p, need, chosen):
    """``chosen[:need]`` (ascending) among the nodes whose interval covers t, by
    (-run start, free at t, index)."""
    k0 = np.empty(nr, dtype=np.int64)
    k1 = np.empty(nr, dtype=np.int64)
    k2 = np.empty(nr, dtype=np.int64)
    k3 = np.empty(nr, dtype=np.int64)
    cx = np.empty(nr, dtype=np.int64)
    nc = 0
    for r in range(nr):
        if ra[r] <= t and t <= rb[r]:
            x = rx[r]
            s = p.wo[x] + _segment_at(x, t, p)
            k0[nc] = -ra[r]
            k1[nc] = p.WG[s]
            k2[nc] = p.WC[s]
            k3[nc] = p.WM[s]
            cx[nc] = x
            nc += 1
    first = _lex_first(k0, k1, k2, k3, nc, need)
    for i in range(need):
        chosen[i] = cx[first[i]]
    chosen[:need].sort()


@leaf_kernel
def _plan_indexed(now, d, need, only_now, root, q, TR, p, chosen):
    """:func:`_plan_job` (no topology) over the run index, slot ``q`` (the job's
    type): the same start and nodes. The slot's runs in key order (start, free
    g/c/m at the start, node) are the best-fit order of a start now and the
    start-sorted sweep of a later one."""
    z = tr_succ(TR, root, -1, d, q)
    if z < 0 or (only_now and TR[z, _A] != now):
        return -1
    if need == 1:
        chosen[0] = tr_node(TR, z)
        return TR[z, _A]
    return _plan_multi(z, now, d, need, only_now, root, q, TR, p, chosen)


@njit(cache=True, _nrt=True)
def _plan_multi(z, now, d, need, only_now, root, q, TR, p, chosen):
    """:func:`_plan_indexed` for a multi-node job, from its first run ``z``: the
    smallest t covered by ``need`` feasible intervals [a, a + len - d]."""
    cap = 4 * need + 16
    hk = np.empty(cap, dtype=np.int64)
    hv = np.empty(cap, dtype=np.int64)
    hs = 0
    t = -1
    while z >= 0:
        t = TR[z, _A]
        if only_now and t != now:
            return -1
        at_t = 0
        while z >= 0 and TR[z, _A] == t:
            chosen[at_t] = tr_node(TR, z)
            at_t += 1
            if at_t == need:
                # need runs start at t: t is the start, and they are the choice (the
                # runs that start at t come first, in key order: free at t, node)
                chosen[:need].sort()
                return t
            if hs == cap:
                cap *= 2
                hk2 = np.empty(cap, dtype=np.int64)
                hv2 = np.empty(cap, dtype=np.int64)
                hk2[:hs] = hk[:hs]
                hv2[:hs] = hv[:hs]
                hk = hk2
                hv = hv2
            b = _INF if TR[z, _LN] >= _INF else t + TR[z, _LN] - d
            hs = _heap_push(hk, hv, hs, b, z)
            z = tr_succ(TR, root, z, d, q)
        while hs > 0 and hk[0] < t:
            hs = _heap_pop(hk, hv, hs)
        if hs >= need:
            break
        t = -1
    if t < 0:
        return -1
    _choose_indexed(t, hv[:hs], TR, p, need, chosen)
    return t


@njit(cache=True, _nrt=True)
def _choose_indexed(t, runs, TR, p, need, chosen):
    """``chosen[:need]`` (ascending) among the index entries ``runs`` covering t,
    by (-run start, free at t, node)."""
    hs = runs.shape[0]
    cx = np.empty(hs, dtype=np.int64)
    ca = np.empty(hs, dtype=np.int64)
    for i in range(hs):
        cx[i] = tr_node(TR, runs[i])
        ca[i] = TR[runs[i], _A]
    by_node = np.argsort(cx)
    k0 = np.empty(hs, dtype=np.int64)
    k1 = np.empty(hs, dtype=np.int64)
    k2 = np.empty(hs, dtype=np.int64)
    k3 = np.empty(hs, dtype=np.int64)
    for i in range(hs):
        x = cx[by_node[i]]
        sg = p.wo[x] + _segment_at(x, t, p)
        k0[i] = -ca[by_node[i]]
        k1[i] = p.WG[sg]
        k2[i] = p.WC[sg]
        k3[i] = p.WM[sg]
    order = _lex_order(k0, k1, k2, k3, hs)
    for i in range(need):
        chosen[i] = cx[by_node[order[i]]]
    chosen[:need].sort()


@njit(cache=True)
def _ix_build(now, ask, th, plist, nodes, TR, fr, meta, p, last, elig, root):
    """A new slot for a type (request ``ask``) in the shared run index: every
    capable node of its partition (first segments moved to now first) gets its
    runs at least ``th`` long, and the slot's bit in ``elig[x]`` (holds on x can
    change its runs). Returns (root, TR, fr)."""
    TR = add_slot(TR, meta)
    q = meta[2] - 1
    for i in range(plist.shape[0]):
        x = plist[i]
        if not _capable(x, ask, nodes):
            continue
        elig[x] |= np.int64(1) << q
        p.WT[p.wo[x]] = now
        if meta[0] + p.wlen[x] + 2 > TR.shape[0]:
            TR, fr = tr_reserve(TR, fr, meta, p.wlen[x] + 2)
        root = ix_add_slot(TR, fr, meta, root, x, q, ask.g, ask.c, ask.m, th, p.WT, p.WG, p.WC,
                           p.WM, p.wo, p.wlen, last)
    return root, TR, fr
