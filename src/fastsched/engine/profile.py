"""Per-node free-time profiles (:class:`~fastsched.engine.state.Profile`).

Node x's profile is its breakpoints ``T[k]`` with the free (g, c, m)
``G/C/M[k]`` from ``T[k]`` to ``T[k + 1]`` (the last segment runs forever),
stored *ragged*: node x's k-th breakpoint is ``WT[wo[x] + k]`` (``WG/WC/WM``
alike, ``k < wlen[x]``) in its own segment of ``wcap[x]`` entries of flat
arrays. Breakpoint counts are very uneven (ai-1m, 1M reservations: mean 40,
max 462), so a padded nodes x max array was 13x the live data. A node that
outgrows its segment moves to a twice bigger one at the end (:func:`_room`).

The profile is kept between passes and updated in place: built once from the
running jobs, a start holds its resources until its held end (on the absolute
grid of multiples of the resolution, so breakpoints never move), a completion
gives back what the job held from now on and drops breakpoints that no longer
change anything, and a pass's reservations are undone when the pass ends.
Between passes every breakpoint but the first is the held end of a running
job, so a pass only sets a node's first breakpoint to now.
"""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
import numpy as np
from numba import njit

from .leafkernel import leaf_kernel
from .prefetch import prefetch, prefetch1
from .state import Profile


def new_profile(wcap: np.ndarray) -> Profile:
    """Storage of a ragged work profile: node x gets a segment of ``wcap[x]``
    entries, in node order, no holes, and no breakpoints yet (``wlen`` 0; the
    contents are left to the caller)."""
    wcap = np.ascontiguousarray(wcap, dtype=np.int64).copy()
    wo = np.zeros(len(wcap), dtype=np.int64)
    np.cumsum(wcap[:-1], out=wo[1:])
    size = int(wcap.sum())
    W = [np.zeros(max(size, 1), dtype=np.int64) for _ in range(4)]
    return Profile(*W, wo, np.zeros(len(wcap), dtype=np.int64), wcap,
                   np.array([size, 0], dtype=np.int64), np.zeros(len(wcap) + 2, dtype=np.int64))


def block_windows(p: Profile, blocked, capG, capC, capM, now: int = 0) -> Profile:
    """The profile with every node of ``blocked`` (``(start, end, node)`` arrays: advance
    reservations) held whole over its windows from ``now`` on (overlapping windows of a
    node held once). Returns the profile (maybe with bigger arrays)."""
    if blocked is None or not len(blocked[0]):
        return p
    start, end, node = (np.asarray(a, dtype=np.int64) for a in blocked)
    start = np.maximum(start, now)
    keep = end > start
    start, end, node = start[keep], end[keep], node[keep]
    order = np.lexsort((start, node))
    start, end, node = start[order], end[order], node[order]
    # merge each node's overlapping windows: a new group where the node changes or a
    # window opens after every earlier one of its node has closed
    reach = _running_max_by_group(end, node)
    new = np.ones(len(node), dtype=bool)
    new[1:] = (node[1:] != node[:-1]) | (start[1:] > reach[:-1])
    group = np.cumsum(new) - 1
    g_start = start[new]
    g_end = np.zeros(int(group[-1]) + 1 if len(group) else 0, dtype=np.int64)
    np.maximum.at(g_end, group, end)
    return _block(p, g_start, g_end, node[new], capG, capC, capM)


def _running_max_by_group(values, groups):
    """Running maximum of ``values`` (0 <= v < 2**40) restarting where the ascending
    ``groups`` change: one accumulate over (group, value) packed in one integer."""
    shift = np.int64(1) << np.int64(40)
    return np.maximum.accumulate(groups * shift + values) - groups * shift


def profile_of(p: Profile, x: int):
    """Node x's breakpoints and free (g, c, m) from each: four views."""
    o, L = int(p.wo[x]), int(p.wlen[x])
    return tuple(A[o:o + L] for A in (p.WT, p.WG, p.WC, p.WM))


@njit(cache=True)
def _resized(A, size, top):
    B = np.empty(size, dtype=A.dtype)
    B[:top] = A[:top]
    return B


@leaf_kernel
def _copy_segment(p, src, dst, n):
    """Copy n breakpoints from offset src to dst (dst < src or no overlap)."""
    for k in range(n):
        p.WT[dst + k] = p.WT[src + k]
        p.WG[dst + k] = p.WG[src + k]
        p.WC[dst + k] = p.WC[src + k]
        p.WM[dst + k] = p.WM[src + k]


@njit(cache=True)
def _compact(p):
    """Slide every segment down over the holes (in place, in offset order, so a
    move never overwrites a segment not moved yet); returns the new top."""
    top = 0
    for x in np.argsort(p.wo, kind="mergesort"):
        o = p.wo[x]
        if o != top:
            _copy_segment(p, o, top, p.wlen[x])
            p.wo[x] = top
        top += p.wcap[x]
    return top


@njit(cache=True)
def _room(x, p, extra=2):
    """Keep room for ``extra`` more breakpoints on node x (two: what a hold or
    a give-back may add; callers test ``wlen[x] + extra > wcap[x]`` first: the
    call and the returned profile cost in hot loops). A node that outgrows its
    segment moves to one twice as big at the top, leaving a hole. When the arrays are
    full, they are compacted if the holes are over half the live segments (a
    node's old segments add up to less than its current one, so holes never
    outweigh the live segments), and doubled if that is not enough. Returns
    the profile (with new arrays when doubled)."""
    wo, wlen, wcap, wst = p.wo, p.wlen, p.wcap, p.wst
    need = wlen[x] + extra
    if need <= wcap[x]:
        return p
    cap = wcap[x]
    while cap < need:
        cap *= 2
    top = wst[0]
    if top + cap > p.WT.shape[0] and 2 * wst[1] > top - wst[1]:
        top = _compact(p)
        wst[1] = 0
    if top + cap > p.WT.shape[0]:
        size = max(p.WT.shape[0], 16)
        while size < top + cap:
            size *= 2
        p = Profile(_resized(p.WT, size, top), _resized(p.WG, size, top),
                    _resized(p.WC, size, top), _resized(p.WM, size, top), wo, wlen, wcap, wst,
                    p.wv)
    _copy_segment(p, wo[x], top, wlen[x])
    wst[1] += wcap[x]
    wo[x] = top
    wcap[x] = cap
    wst[0] = top + cap
    return p


@leaf_kernel
def _build(x, now, p, run, free):
    """Work profile of node x from scratch, from its running jobs (held ends
    ``RT`` all > now, sorted). The engine builds it once and then keeps it."""
    WT, WG, WC, WM = p.WT, p.WG, p.WC, p.WM
    _touch(x, p)
    o = p.wo[x]
    WT[o] = now
    WG[o] = free.fg[x]
    WC[o] = free.fc[x]
    WM[o] = free.fm[x]
    L = 1
    for r in range(run.rlen[x]):
        rt = run.RT[x, r]
        if rt == WT[o + L - 1]:
            WG[o + L - 1] += run.RG[x, r]
            WC[o + L - 1] += run.RC[x, r]
            WM[o + L - 1] += run.RM[x, r]
        else:
            WT[o + L] = rt
            WG[o + L] = WG[o + L - 1] + run.RG[x, r]
            WC[o + L] = WC[o + L - 1] + run.RC[x, r]
            WM[o + L] = WM[o + L - 1] + run.RM[x, r]
            L += 1
    p.wlen[x] = L


@leaf_kernel
def _build_all(now, p, run, free):
    """Every node's work profile from scratch (a single pass's set-up)."""
    for x in range(p.wlen.shape[0]):
        _build(x, now, p, run, free)


@leaf_kernel
def _on_grid(t, res):
    """t rounded up to the absolute time grid of multiples of res (res = 1: t
    itself). Every hold ends on it, so the profile's breakpoints do not move
    with ``now`` and the profile can be kept between passes."""
    if res == 1:
        return t
    return (t + res - 1) // res * res


@leaf_kernel
def _advance(x, now, p):
    """Drop node x's breakpoints at or before ``now``: its first segment starts at now."""
    WT, WG, WC, WM = p.WT, p.WG, p.WC, p.WM
    o = p.wo[x]
    L = p.wlen[x]
    k = 0
    while k + 1 < L and WT[o + k + 1] <= now:
        k += 1
    if k > 0:
        _touch(x, p)
        for r in range(k, L):
            WT[o + r - k] = WT[o + r]
            WG[o + r - k] = WG[o + r]
            WC[o + r - k] = WC[o + r]
            WM[o + r - k] = WM[o + r]
        p.wlen[x] = L - k
    WT[o] = now


@njit(cache=True)
def _advance_nodes(nodes, now, p):
    """:func:`_advance` for each node of ``nodes``."""
    for i in range(nodes.shape[0]):
        _advance(nodes[i], now, p)


@leaf_kernel
def _merge_at(x, k, p):
    """Remove breakpoint k (>= 1) of node x when it no longer changes anything."""
    WT, WG, WC, WM = p.WT, p.WG, p.WC, p.WM
    o = p.wo[x]
    L = p.wlen[x]
    if k < 1 or k >= L or WG[o + k] != WG[o + k - 1] or WC[o + k] != WC[o + k - 1] \
            or WM[o + k] != WM[o + k - 1]:
        return
    for r in range(k + 1, L):
        WT[o + r - 1] = WT[o + r]
        WG[o + r - 1] = WG[o + r]
        WC[o + r - 1] = WC[o + r]
        WM[o + r - 1] = WM[o + r]
    p.wlen[x] = L - 1


@leaf_kernel(inline="always")
def _touch(x, p):
    """Node x's free resources change: its stamp becomes the next count of changes
    (:attr:`fastsched.engine.state.Profile` ``wv``), unless changes are not counted.
    Every change goes through here (a hold, a give-back, a build, dropping past
    breakpoints); moves of a segment and redundant breakpoints change nothing."""
    X = p.wv.shape[0] - 2
    if p.wv[X + 1] == 0:
        p.wv[X] += 1
        p.wv[x] = p.wv[X]


@leaf_kernel
def _give_back(x, s, e, g, c, m, p):
    """Undo a hold of (g, c, m) over [s, e) on node x (s >= its first breakpoint):
    a completion (s = now, after :func:`_advance`) or a reservation at the end of
    its pass. The breakpoints at s and e go when they no longer change anything.
    Needs room for two more breakpoints, like :func:`_hold`."""
    if e <= s:
        return
    a = _split(x, s, p)
    b = _split(x, e, p)
    _add(x, a, b, g, c, m, p)
    _merge_at(x, b, p)
    _merge_at(x, a, p)


@leaf_kernel(inline="always")
def _split(x, t, p):
    """Make t (>= WT[x, 0]) a breakpoint of node x; return its index. Needs room for one more."""
    WT, WG, WC, WM = p.WT, p.WG, p.WC, p.WM
    o = p.wo[x]
    L = p.wlen[x]
    k = L - 1
    while WT[o + k] > t:
        k -= 1
    if WT[o + k] == t:
        return k
    for r in range(L, k + 1, -1):
        WT[o + r] = WT[o + r - 1]
        WG[o + r] = WG[o + r - 1]
        WC[o + r] = WC[o + r - 1]
        WM[o + r] = WM[o + r - 1]
    WT[o + k + 1] = t
    WG[o + k + 1] = WG[o + k]
    WC[o + k + 1] = WC[o + k]
    WM[o + k + 1] = WM[o + k]
    p.wlen[x] = L + 1
    return k + 1


@njit(cache=True)
def _block(p, start, end, node, capG, capC, capM):
    """Hold each node ``node[k]`` whole over [start[k], end[k]) (advance reservations:
    windows of one node disjoint), keeping room for two more breakpoints on each.
    Returns the profile (maybe with bigger arrays)."""
    for k in range(node.shape[0]):
        x = node[k]
        if p.wlen[x] + 4 > p.wcap[x]:
            p = _room(x, p, 4)
        _hold(x, start[k], end[k], capG[x], capC[x], capM[x], p)
    return p


@leaf_kernel
def _hold(x, s, e, g, c, m, p):
    """Take (g, c, m) on node x over [s, e). Needs room for two more breakpoints."""
    _take(x, _split(x, s, p), _split(x, e, p), g, c, m, p)


@leaf_kernel(inline="always")
def _take(x, a, b, g, c, m, p):
    """Take (g, c, m) from node x's segments a to b - 1 (made breakpoints by :func:`_split`)."""
    _touch(x, p)
    o = p.wo[x]
    for k in range(a, b):
        p.WG[o + k] -= g
        p.WC[o + k] -= c
        p.WM[o + k] -= m


@leaf_kernel(inline="always")
def _add(x, a, b, g, c, m, p):
    """Give (g, c, m) back to node x's segments a to b - 1: :func:`_take` undone."""
    _touch(x, p)
    o = p.wo[x]
    for k in range(a, b):
        p.WG[o + k] += g
        p.WC[o + k] += c
        p.WM[o + k] += m


@leaf_kernel
def _prefetch_node(x, p, TR, last):
    """Start loading what a hold on node x reads first: its profile's last two
    lines in each array (_split scans back from the end) and its last run index
    entry (the index update walks back from it). Asked for together, the misses
    overlap instead of coming one after the other; for the next node of a job,
    they also overlap the current node's work."""
    k = p.wo[x] + p.wlen[x] - 1
    for A in (p.WT, p.WG, p.WC, p.WM):
        prefetch1(A, k)
        if k >= p.wo[x] + 8:
            prefetch1(A, k - 8)
    if last.shape[0] > 0 and last[x] >= 0:
        prefetch(TR, last[x], 0)


@leaf_kernel
def _segment_at(x, t, p):
    """Index of node x's segment that holds time t (>= its first breakpoint)."""
    o = p.wo[x]
    k = p.wlen[x] - 1
    while p.WT[o + k] > t:
        k -= 1
    return k
