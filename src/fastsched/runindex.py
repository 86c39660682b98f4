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

A hold on [s, e) of node x only changes x's runs that touch [s, e]: they are
found before the hold (:func:`ix_find`) and brought up to date after it
(:func:`ix_update`: a run whose key survived only gets its new length, the
others are deleted or inserted), so the index is updated incrementally, never
rebuilt within a pass. Finding an entry by key would cost a descent from the
root, cache misses all the way down; instead each type keeps every node's
runs as a list in time order (links ``_PV``/``_NX``) and ``last[x]``, the
entry of x's last run (infinite: a node is wholly free after its profile's
end), and walks back from it: a hold at or after the profile's end touches
that run only.

Storage: one int64 table ``TR[id, field]`` shared by every type's treap, a
free list ``fr`` and ``meta = [used, free count, priority counter, last added
id]``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

_A, _G, _C, _M, _X, _LN, _MX, _LF, _RT, _PR, _UP, _PV, _NX = range(13)
NFIELDS = 13
_INF = np.int64(1) << np.int64(62)


def new_table(cap: int = 1024):
    """Empty storage: (TR, fr, meta)."""
    return (np.empty((cap, NFIELDS), dtype=np.int64), np.empty(cap, dtype=np.int64),
            np.array([0, 0, 0, -1], dtype=np.int64))


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
    """Recompute the max run length from t up; above a subtree whose max did
    not change nothing can change, so stop there."""
    while t >= 0:
        old = TR[t, _MX]
        _pull(TR, t)
        if TR[t, _MX] == old:
            return
        t = TR[t, _UP]


@njit(cache=True)
def _insert(TR, root, z):
    """Insert entry z (fields set, no links); returns the new root."""
    TR[z, _LF] = -1
    TR[z, _RT] = -1
    if root < 0:
        TR[z, _UP] = -1
        return z
    ln = TR[z, _LN]
    t = root
    while True:
        if TR[t, _MX] < ln:         # z joins every subtree on its search path
            TR[t, _MX] = ln
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
    return _rise(TR, z, root)      # each rotation keeps the two subtrees it touches right


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
    return _delete_at(TR, root, t, fr, meta)


@njit(cache=True)
def _delete_at(TR, root, t, fr, meta):
    """Remove entry t; returns the new root."""
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
def _add(TR, fr, meta, root, a, g, c, m, x, ln, after=-1):
    """Insert a run (storage must have room); returns the new root. ``after``:
    an entry that is likely its predecessor in key order (-1: none); when it
    is, the run is attached next to it without a descent from the root."""
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
    meta[3] = z
    if after >= 0 and _attach_after(TR, after, z):
        return _rise(TR, z, root)
    return _insert(TR, root, z)


@njit(cache=True)
def _attach_after(TR, f, z):
    """Attach z as a leaf right after entry f in key order if it belongs there
    (key(f) < key(z) < key(successor of f)); True if done. Every subtree on the
    way up learns z's length."""
    if not _less(TR, f, z):
        return False
    sc = tr_succ(TR, -1, f, -1)
    if sc >= 0 and not _less(TR, z, sc):
        return False
    TR[z, _LF] = -1
    TR[z, _RT] = -1
    if TR[f, _RT] < 0:
        p = f
        TR[f, _RT] = z
    else:                       # the successor is the leftmost of f's right subtree
        p = sc
        TR[sc, _LF] = z
    TR[z, _UP] = p
    ln = TR[z, _LN]
    while p >= 0 and TR[p, _MX] < ln:
        TR[p, _MX] = ln
        p = TR[p, _UP]
    return True


@njit(cache=True)
def _rise(TR, z, root):
    """Rotate a new leaf up to its heap place; returns the new root."""
    while TR[z, _UP] >= 0 and TR[z, _PR] > TR[TR[z, _UP], _PR]:
        root = _rotate_up(TR, z, root)
    return root


@njit(cache=True)
def ix_add_node(TR, fr, meta, root, x, g, c, m, WT, WG, WC, WM, wlen, last):
    """Insert every run of node x for request (g, c, m), linked in time order,
    the last one in ``last[x]``; returns the new root. The storage needs room
    for ``wlen[x]`` more entries."""
    L = wlen[x]
    prev = -1
    k = 0
    while k < L:
        if WG[x, k] < g or WC[x, k] < c or WM[x, k] < m:
            k += 1
            continue
        k2 = k + 1
        while k2 < L and WG[x, k2] >= g and WC[x, k2] >= c and WM[x, k2] >= m:
            k2 += 1
        a = WT[x, k]
        ln = _INF if k2 == L else WT[x, k2] - a
        root = _add(TR, fr, meta, root, a, WG[x, k], WC[x, k], WM[x, k], x, ln)
        z = meta[3]
        TR[z, _PV] = prev
        if prev >= 0:
            TR[prev, _NX] = z
        prev = z
        k = k2 + 1
    if prev >= 0:
        TR[prev, _NX] = -1
    last[x] = prev
    return root


@njit(cache=True)
def _runs_touching(x, s, e, g, c, m, WT, WG, WC, WM, wlen, ra, rk, rl):
    """Node x's runs for (g, c, m) that touch [s, e] (start <= e, end >= s; s a
    breakpoint of x), in time order: start ``ra``, segment ``rk`` and length ``rl``; returns how many."""
    L = wlen[x]
    k = L - 1
    while WT[x, k] > s:
        k -= 1
    while k > 0 and WG[x, k - 1] >= g and WC[x, k - 1] >= c and WM[x, k - 1] >= m:
        k -= 1                      # back to the start of a run that reaches s
    n = 0
    while k < L and WT[x, k] <= e:
        if WG[x, k] < g or WC[x, k] < c or WM[x, k] < m:
            k += 1
            continue
        k2 = k + 1
        while k2 < L and WG[x, k2] >= g and WC[x, k2] >= c and WM[x, k2] >= m:
            k2 += 1
        ra[n] = WT[x, k]
        rk[n] = k
        rl[n] = _INF if k2 == L else WT[x, k2] - WT[x, k]
        n += 1
        k = k2 + 1
    return n


@njit(cache=True)
def ix_find(TR, x, s, e, ids, last):
    """Before a hold on [s, e) of node x: the entries of x's runs that touch
    [s, e] (start <= e, end >= s: the runs :func:`_runs_touching` lists), in
    time order, into ``ids`` (room for ``wlen[x]``); returns how many. Hand
    them to :func:`ix_update` after the hold. Walks back from x's last run."""
    n = 0
    t = last[x]
    while t >= 0 and TR[t, _A] + TR[t, _LN] >= s:
        if TR[t, _A] <= e:
            ids[n] = t
            n += 1
        t = TR[t, _PV]
    for i in range(n // 2):
        ids[i], ids[n - 1 - i] = ids[n - 1 - i], ids[i]
    return n


@njit(cache=True)
def ix_update(TR, fr, meta, root, x, s, e, g, c, m, WT, WG, WC, WM, wlen, ids, nold, buf,
              last, hint, q):
    """After the hold: make the index hold x's runs for (g, c, m) touching [s, e]
    as they are now, given the entries :func:`ix_find` returned before it (at
    least one). A run whose key (start, free at the start) survived only gets
    its new length; the others are deleted or inserted, and the node's list is
    relinked. Returns the new root; the storage needs room for ``wlen[x]`` more
    entries, ``buf[4, :]`` for ``wlen[x]``. ``hint[q]``: the entry added last
    (-1: none), tried first as the new entry's predecessor: the holds of one
    multi-node job add runs with the same start, mostly adjacent in key order."""
    ra = buf[0]
    rk = buf[1]
    rl = buf[2]
    keep = buf[3]               # new run i -> its entry (kept or added)
    n = _runs_touching(x, s, e, g, c, m, WT, WG, WC, WM, wlen, ra, rk, rl)
    keep[:n] = -1
    prev = TR[ids[0], _PV]
    nxt = TR[ids[nold - 1], _NX]
    i = 0
    for o in range(nold):       # both lists are in time order: merge on the start
        t = ids[o]
        while i < n and ra[i] < TR[t, _A]:
            i += 1
        k = rk[i] if i < n else 0
        if i < n and ra[i] == TR[t, _A] and WG[x, k] == TR[t, _G] and \
                WC[x, k] == TR[t, _C] and WM[x, k] == TR[t, _M]:
            keep[i] = t
            i += 1
        else:
            root = _delete_at(TR, root, t, fr, meta)
    for i in range(n):
        t = keep[i]
        if t >= 0:
            if TR[t, _LN] != rl[i]:
                TR[t, _LN] = rl[i]
                _pull_up(TR, t)
        else:
            k = rk[i]
            root = _add(TR, fr, meta, root, ra[i], WG[x, k], WC[x, k], WM[x, k], x, rl[i],
                        hint[q])
            t = meta[3]
            keep[i] = t
            hint[q] = t
        TR[t, _PV] = prev       # relink the node's list through the region
        if prev >= 0:
            TR[prev, _NX] = t
        prev = t
    if prev >= 0:
        TR[prev, _NX] = nxt
    if nxt >= 0:
        TR[nxt, _PV] = prev
    else:
        last[x] = prev
    return root
