"""Per-request-type index of feasible runs, for the node engine's deep passes.

For a request type (partition, g, c, m), a *run* of node x is a maximal stretch
of x's work profile where the free (GPUs, CPUs, MB) cover the request. A job
of that type and duration d can start at time a on x iff a lies in a run that
has at least d left; the engine's earliest start is always a run start
(docs/gpu-semantics.md). Scanning every node's profile for every job costs
O(nodes x breakpoints) per job, which grows with the queue depth; this index
answers the same questions in O(log runs) per run looked at.

Runs of a type live in one treap ordered by the key (start a, free GPUs, CPUs,
MB at a, node): exactly the engine's tie-break order, so "the first run in
key order that is at least d long" *is* a single-node job's choice, and the
runs in key order are the start-sorted sweep of a multi-node job. Each treap
node keeps the largest run length of its subtree, so runs shorter than d are
skipped a subtree at a time.

A hold on [s, e) of node x only changes x's runs that touch [s, e]
(:func:`ix_region` deletes them before the hold and inserts the new ones
after): the index is updated incrementally, never rebuilt within a pass.

Storage: one int64 table ``TR[id, field]`` shared by every type's treap, a
free list ``fr`` and ``meta = [used, free count, priority counter]``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

_A, _G, _C, _M, _X, _LN, _MX, _LF, _RT, _PR, _UP = range(11)
NFIELDS = 11
_INF = np.int64(1) << np.int64(62)


def new_table(cap: int = 1024):
    """Empty storage: (TR, fr, meta)."""
    return (np.empty((cap, NFIELDS), dtype=np.int64), np.empty(cap, dtype=np.int64),
            np.array([0, 0, 0], dtype=np.int64))


@njit(cache=True)
def tr_reserve(TR, fr, meta, extra):
    """Room for ``extra`` more entries (doubling): returns (TR, fr)."""
    if meta[0] + extra <= TR.shape[0]:
        return TR, fr
    cap = TR.shape[0]
    while cap < meta[0] + extra:
        cap *= 2
    T2 = np.empty((cap, NFIELDS), dtype=np.int64)
    T2[:meta[0]] = TR[:meta[0]]
    f2 = np.empty(cap, dtype=np.int64)
    f2[:meta[1]] = fr[:meta[1]]
    return T2, f2


@njit(cache=True)
def _less(TR, i, j):
    """key(i) < key(j)."""
    for f in range(5):
        if TR[i, f] != TR[j, f]:
            return TR[i, f] < TR[j, f]
    return False


@njit(cache=True)
def _cmp_key(TR, i, a, g, c, m, x):
    """Sign of key(i) - (a, g, c, m, x)."""
    if TR[i, _A] != a:
        return -1 if TR[i, _A] < a else 1
    if TR[i, _G] != g:
        return -1 if TR[i, _G] < g else 1
    if TR[i, _C] != c:
        return -1 if TR[i, _C] < c else 1
    if TR[i, _M] != m:
        return -1 if TR[i, _M] < m else 1
    if TR[i, _X] != x:
        return -1 if TR[i, _X] < x else 1
    return 0


@njit(cache=True)
def _pull(TR, t):
    v = TR[t, _LN]
    lf = TR[t, _LF]
    rt = TR[t, _RT]
    if lf >= 0 and TR[lf, _MX] > v:
        v = TR[lf, _MX]
    if rt >= 0 and TR[rt, _MX] > v:
        v = TR[rt, _MX]
    TR[t, _MX] = v


@njit(cache=True)
def _rotate_up(TR, z, root):
    """Rotate z above its parent; returns the new root. (Iterative code
    throughout: Numba's cache does not keep recursive functions safely.)"""
    p = TR[z, _UP]
    gp = TR[p, _UP]
    if TR[p, _LF] == z:
        b = TR[z, _RT]
        TR[p, _LF] = b
        TR[z, _RT] = p
    else:
        b = TR[z, _LF]
        TR[p, _RT] = b
        TR[z, _LF] = p
    if b >= 0:
        TR[b, _UP] = p
    TR[p, _UP] = z
    TR[z, _UP] = gp
    if gp < 0:
        root = z
    elif TR[gp, _LF] == p:
        TR[gp, _LF] = z
    else:
        TR[gp, _RT] = z
    _pull(TR, p)
    _pull(TR, z)
    return root


@njit(cache=True)
def _pull_up(TR, t):
    while t >= 0:
        _pull(TR, t)
        t = TR[t, _UP]


@njit(cache=True)
def _insert(TR, root, z):
    """Insert entry z (fields set, no links); returns the new root."""
    TR[z, _LF] = -1
    TR[z, _RT] = -1
    if root < 0:
        TR[z, _UP] = -1
        return z
    t = root
    while True:
        if _less(TR, z, t):
            if TR[t, _LF] < 0:
                TR[t, _LF] = z
                break
            t = TR[t, _LF]
        else:
            if TR[t, _RT] < 0:
                TR[t, _RT] = z
                break
            t = TR[t, _RT]
    TR[z, _UP] = t
    while TR[z, _UP] >= 0 and TR[z, _PR] > TR[TR[z, _UP], _PR]:
        root = _rotate_up(TR, z, root)
    _pull_up(TR, z)
    return root


@njit(cache=True)
def _delete(TR, root, a, g, c, m, x, fr, meta):
    """Remove the entry with key (a, g, c, m, x) (it must be there); returns the new root."""
    t = root
    while True:
        if t < 0:                   # not there: a caller bug; leave the index as is
            return root
        s = _cmp_key(TR, t, a, g, c, m, x)
        if s == 0:
            break
        t = TR[t, _RT] if s < 0 else TR[t, _LF]
    # rotate t down to a leaf, then cut it off
    while TR[t, _LF] >= 0 or TR[t, _RT] >= 0:
        lf = TR[t, _LF]
        rt = TR[t, _RT]
        if rt < 0 or (lf >= 0 and TR[lf, _PR] > TR[rt, _PR]):
            root = _rotate_up(TR, lf, root)
        else:
            root = _rotate_up(TR, rt, root)
    p = TR[t, _UP]
    if p < 0:
        root = -1
    else:
        if TR[p, _LF] == t:
            TR[p, _LF] = -1
        else:
            TR[p, _RT] = -1
        _pull_up(TR, p)
    fr[meta[1]] = t
    meta[1] += 1
    return root


@njit(cache=True)
def _first(TR, t, d):
    """The first entry of subtree t (whose max length is >= d) at least d long."""
    while True:
        lf = TR[t, _LF]
        if lf >= 0 and TR[lf, _MX] >= d:
            t = lf
        elif TR[t, _LN] >= d:
            return t
        else:
            t = TR[t, _RT]


@njit(cache=True)
def tr_succ(TR, root, lo, d):
    """The first entry in key order after entry ``lo`` (-1: from the start) whose
    run is at least ``d`` long; -1 if none."""
    if lo < 0:
        if root < 0 or TR[root, _MX] < d:
            return -1
        return _first(TR, root, d)
    rt = TR[lo, _RT]
    if rt >= 0 and TR[rt, _MX] >= d:
        return _first(TR, rt, d)
    t = lo
    p = TR[t, _UP]
    while p >= 0:
        if TR[p, _LF] == t:
            if TR[p, _LN] >= d:
                return p
            rt = TR[p, _RT]
            if rt >= 0 and TR[rt, _MX] >= d:
                return _first(TR, rt, d)
        t = p
        p = TR[t, _UP]
    return -1


@njit(cache=True)
def _add(TR, fr, meta, root, a, g, c, m, x, ln):
    """Insert a run (storage must have room); returns the new root."""
    if meta[1] > 0:
        meta[1] -= 1
        z = fr[meta[1]]
    else:
        z = meta[0]
        meta[0] += 1
    meta[2] += 1                     # treap priority: splitmix64 of a counter
    h = np.uint64(meta[2]) * np.uint64(0x9E3779B97F4A7C15)
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    h = h ^ (h >> np.uint64(31))
    s = np.int64(h >> np.uint64(1))
    TR[z, _A] = a
    TR[z, _G] = g
    TR[z, _C] = c
    TR[z, _M] = m
    TR[z, _X] = x
    TR[z, _LN] = ln
    TR[z, _MX] = ln
    TR[z, _PR] = s
    return _insert(TR, root, z)


@njit(cache=True)
def ix_region(TR, fr, meta, root, x, s, e, g, c, m, WT, WG, WC, WM, wlen, insert):
    """Insert (or delete) every run of node x for request (g, c, m) that touches
    [s, e] (s a breakpoint of x); returns the new root. The storage needs room
    for ``wlen[x]`` more entries when inserting."""
    L = wlen[x]
    k = L - 1
    while WT[x, k] > s:
        k -= 1
    # back to the start of a run that reaches s
    while k > 0 and WG[x, k - 1] >= g and WC[x, k - 1] >= c and WM[x, k - 1] >= m:
        k -= 1
    while k < L and WT[x, k] <= e:
        if WG[x, k] < g or WC[x, k] < c or WM[x, k] < m:
            k += 1
            continue
        k2 = k + 1
        while k2 < L and WG[x, k2] >= g and WC[x, k2] >= c and WM[x, k2] >= m:
            k2 += 1
        a = WT[x, k]
        ln = _INF if k2 == L else WT[x, k2] - a
        if insert:
            root = _add(TR, fr, meta, root, a, WG[x, k], WC[x, k], WM[x, k], x, ln)
        else:
            root = _delete(TR, root, a, WG[x, k], WC[x, k], WM[x, k], x, fr, meta)
        k = k2 + 1
    return root
