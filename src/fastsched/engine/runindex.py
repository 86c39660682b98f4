"""One index of feasible runs shared by every indexed request type of a pass.

For a request type (partition, g, c, m), a *run* of node x is a maximal stretch
of x's work profile where the free (GPUs, CPUs, MB) cover the request. A job
of that type and duration d can start at time a on x iff a lies in a run that
has at least d left; the engine's earliest start is always a run start
(docs/gpu-semantics.md). Scanning every node's profile for every job costs
O(nodes x breakpoints) per job, which grows with the queue depth; this index
answers the same questions in O(log runs) per run looked at.

A run is identified by (node x, start a, length): its key (a, free GPUs, CPUs,
MB of x at a, x) does not depend on the type, only *which* runs exist does,
and the types of a pass mostly share their runs (a 1-GPU and a 2-GPU type on
an idle stretch; two partitions over the same nodes). So every indexed type
gets a *slot* q (at most :data:`MAX_SLOTS`) and all share one treap with one
entry per distinct run: ``MK`` has bit q when the run is a maximal run of the
slot's type on a node of its partition at least the slot's *threshold* long
(the shortest time limit of the pass's jobs of the type still to come: a
shorter run can never start one of them, :func:`ix_hold`), and ``MX + q``
holds the largest length of the subtree's runs of slot q (-1: none). Entries are ordered by
(a, g, c, m, x, length): for one slot that is exactly the engine's tie-break
order (the length only orders runs of *different* types that start together
on one node), so "the first run of slot q in key order at least d long" *is*
a single-node job's choice, and slot q's runs in key order are the
start-sorted sweep of a multi-node job. Subtrees without a long enough run of
the slot are skipped whole.

A hold on [s, e) of node x changes only x's runs near [s, e], and each
distinct run once however many types share it (:func:`ix_hold`). Each node's
entries are also a list in (start, length) order (links ``PV``/``NX``, the
last entry in ``last[x]``: a node is wholly free after its profile's end, so
its last runs are infinite), walked back from the end to find them.

The index's storage and ordered operations (one table, a treap with its keys and
links) are :mod:`fastsched.engine.treap`; this module keeps each slot's runs up to
date with the profiles.

Reference counts: every kernel here is a
:func:`fastsched.engine.leafkernel.leaf_kernel`, compiled without Numba's reference
counting (that module says why, and why it is safe).
"""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
import numpy as np

from .leafkernel import leaf_kernel
from .treap import (_A, _C, _G, _INF, _LN, _M, _MK, _NH, _NX, _PV, _add, _delete_at,
                    _free_is, _get, _less, _next, _prev, _pull_up, _raise, _set)


@leaf_kernel
def _fits(x, k, g, c, m, WG, WC, WM, wo):
    return WG[wo[x] + k] >= g and WC[wo[x] + k] >= c and WM[wo[x] + k] >= m


@leaf_kernel
def _run_len(x, k, k2, WT, wo, wlen):
    return _INF if k2 == wlen[x] else WT[wo[x] + k2] - WT[wo[x] + k]


@leaf_kernel
def ix_add_slot(TR, fr, meta, root, x, q, g, c, m, th, WT, WG, WC, WM, wo, wlen, last):
    """Make slot q's runs of node x (request (g, c, m)) at least ``th`` long
    runs of the index (:func:`ix_hold`: why shorter ones are left out): an
    entry with the same (start, length) gets bit q, else a new entry is made
    and linked into x's list. Returns the new root; the storage needs room for
    ``wlen[x]`` more entries."""
    xo = wo[x]                 # node x's profile segment
    bit = np.int64(1) << q
    # slot q's runs from the last, merged into x's list from its back (both in
    # (start, length) order)
    t = last[x]
    after = -1                  # the entry after t in x's list
    k = wlen[x] - 1
    while k >= 0:
        if not _fits(x, k, g, c, m, WG, WC, WM, wo):
            k -= 1
            continue
        k1 = k                  # the run: segments k1..k
        while k1 > 0 and _fits(x, k1 - 1, g, c, m, WG, WC, WM, wo):
            k1 -= 1
        a = WT[xo + k1]
        ln = _run_len(x, k1, k + 1, WT, wo, wlen)
        k = k1 - 1
        if ln < th:
            continue
        while t >= 0 and (TR[t, _A] > a or (TR[t, _A] == a and TR[t, _LN] > ln)):
            after = t
            t = _get(TR, t, _PV)
        if t >= 0 and TR[t, _A] == a and TR[t, _LN] == ln:
            _set(TR, t, _MK, _get(TR, t, _MK) | bit)
            _raise(TR, t, bit, ln)
            continue
        root = _add(TR, fr, meta, root, a, WG[xo + k1], WC[xo + k1], WM[xo + k1], x, ln, bit)
        z = meta[3]
        _set(TR, z, _PV, t)
        _set(TR, z, _NX, after)
        if t >= 0:
            _set(TR, t, _NX, z)
        if after >= 0:
            _set(TR, after, _PV, z)
        else:
            last[x] = z
        after = z
    return root


@leaf_kernel
def _fit_mask(x, k, nslots, sg, sc, sm, WG, WC, WM, wo):
    """The slots whose request segment k of node x covers (bit mask; no branches:
    the outcomes are data dependent)."""
    xo = wo[x]
    g = WG[xo + k]
    c = WC[xo + k]
    m = WM[xo + k]
    f = np.int64(0)
    for q in range(nslots):
        f |= np.int64((g >= sg[q]) & (c >= sc[q]) & (m >= sm[q])) << q
    return f


@leaf_kernel
def ix_touched(x, ka, kb, nslots, sg, sc, sm, elig, WG, WC, WM, wo):
    """Before a hold on segments ka..kb-1 of node x: the slots (bit mask) whose
    runs it can change: x is of the slot's type (bit q of ``elig[x]``) and one
    of the segments fits it."""
    U = np.int64(0)
    if elig[x] == 0:
        return U
    for k in range(ka, kb):
        U |= _fit_mask(x, k, nslots, sg, sc, sm, WG, WC, WM, wo)
    return U & elig[x]


@leaf_kernel
def _window_runs(x, klo, e, U, nslots, sg, sc, sm, sth, WT, WG, WC, WM, wo, wlen, nb):
    """The runs of the slots in U that start in [WT[x, klo], e] (slot q's: at
    least ``sth[q]`` long), distinct by (start, length), in that order: start
    ``nb[0]``, length ``nb[1]``, segment ``nb[2]``, slots ``nb[3]`` (``nb[7]``:
    scratch); returns how many. One
    sweep for all slots: a slot's run starts where its bit turns on and ends
    where it turns off."""
    xo = wo[x]
    L = wlen[x]
    n = 0
    opened = nb[7]              # segment where slot q's run began
    prev = np.int64(0)
    if klo > 0:                 # runs under way before the window are not in it
        prev = _fit_mask(x, klo - 1, nslots, sg, sc, sm, WG, WC, WM, wo) & U
    live = np.int64(0)          # slots with an open run that started in the window
    k = klo
    while k < L:
        f = _fit_mask(x, k, nslots, sg, sc, sm, WG, WC, WM, wo) & U
        ended = prev & ~f & live
        q = 0
        while ended:
            if ended & 1 and WT[xo + k] - WT[xo + opened[q]] >= sth[q]:
                k0 = opened[q]
                n = _put_run(nb, n, WT[xo + k0], WT[xo + k] - WT[xo + k0], k0, np.int64(1) << q)
            ended >>= 1
            q += 1
        live &= f
        if WT[xo + k] <= e:
            st = f & ~prev
            live |= st
            q = 0
            while st:
                if st & 1:
                    opened[q] = k
                st >>= 1
                q += 1
        elif live == 0:
            return n
        prev = f
        k += 1
    q = 0
    while live:                 # runs to the profile's end: infinite
        if live & 1:
            n = _put_run(nb, n, WT[xo + opened[q]], _INF, opened[q], np.int64(1) << q)
        live >>= 1
        q += 1
    return n


@leaf_kernel
def _put_run(nb, n, a, ln, k, bit):
    """Insert (a, ln) into the sorted nb[:, :n], or add bit to its slots; returns n."""
    i = n
    while i > 0 and (nb[0, i - 1] > a or (nb[0, i - 1] == a and nb[1, i - 1] > ln)):
        i -= 1
    if i > 0 and nb[0, i - 1] == a and nb[1, i - 1] == ln:
        nb[3, i - 1] |= bit
        return n
    for j in range(n, i, -1):
        for f in range(4):
            nb[f, j] = nb[f, j - 1]
    nb[0, i] = a
    nb[1, i] = ln
    nb[2, i] = k
    nb[3, i] = bit
    return n + 1


@leaf_kernel
def _window_start(x, ka, U, nslots, sg, sc, sm, WG, WC, WM, wo):
    """The first segment of the window a hold at segment ka can change: the
    earliest start of a run of a slot in U that reaches ka (else ka). The
    segments before ka are as before the hold."""
    k = ka
    alive = U                   # slots whose run still reaches ka going back
    while k > 0:
        alive &= _fit_mask(x, k - 1, nslots, sg, sc, sm, WG, WC, WM, wo)
        if alive == 0:
            break
        k -= 1
    return k




@leaf_kernel
def ix_new_job(meta):
    """Forget the insertion hints: an entry added for an earlier job may be gone."""
    for h in range(_NH):
        meta[6 + 2 * h] = -1


@leaf_kernel
def _hint(meta, a):
    """The entry this job added last with start a (-1: none). The holds of one
    multi-node job add runs with the same starts (its start, its end) on
    node after node: mostly neighbours in key order."""
    for h in range(_NH):
        if meta[6 + 2 * h] >= 0 and meta[5 + 2 * h] == a:
            return meta[6 + 2 * h]
    return -1


@leaf_kernel
def _set_hint(meta, a, z):
    for h in range(_NH):
        if meta[5 + 2 * h] == a:
            meta[6 + 2 * h] = z
            return
    h = meta[4]
    meta[5 + 2 * h] = a
    meta[6 + 2 * h] = z
    meta[4] = (h + 1) % _NH


@leaf_kernel
def ix_hold(TR, fr, meta, root, x, ka, kb, U, nslots, sg, sc, sm, sth, WT, WG, WC, WM, wo,
            wlen, last, ids, nb):
    """After a hold on segments ka..kb-1 of node x (ix_touched gave U before
    it): bring x's entries up to date. Only runs that start in the window [lo, e]
    can change (lo: :func:`_window_start`, e = WT[x, kb]: a run that starts
    later sees only unchanged segments; new runs lie inside old ones of the
    same type, so they start at or after lo). So x's entries starting in the
    window are matched by (start, length) with the slot-U runs there now: the
    slots outside U keep their bits, the ones in U get them from the match; an
    entry left with none is deleted, an unmatched run inserted
    (:func:`_apply`). An entry whose free at its start changed lies in [s, e),
    where every slot of it is in U.

    Slot q keeps only runs at least ``sth[q]`` long, here and in
    :func:`ix_add_slot`: the caller's promise that no job of the slot asks for
    less in this pass. A pass only takes capacity away, so a shorter run only
    ever splits into shorter ones: none can be an answer, and leaving them out
    keeps the treap small and saves their upkeep (B3: a quarter of the rows,
    15% fewer inserts). The answers for lengths >= ``sth[q]`` are unchanged.

    Returns the new root; needs room for ``nslots * (wlen[x] + 2)`` entries,
    in ``ids`` and in each row of ``nb[8, :]``, twice that."""
    klo = _window_start(x, ka, U, nslots, sg, sc, sm, WG, WC, WM, wo)
    lo = WT[wo[x] + klo]
    e = WT[wo[x] + kb]
    n = _window_runs(x, klo, e, U, nslots, sg, sc, sm, sth, WT, WG, WC, WM, wo, wlen, nb)
    # x's entries in the window, in order, and their neighbours in x's list
    nxt = -1
    t = last[x]
    while t >= 0 and TR[t, _A] > e:
        nxt = t
        t = _get(TR, t, _PV)
    ne = 0
    while t >= 0 and TR[t, _A] >= lo:
        ids[ne] = t
        ne += 1
        t = _get(TR, t, _PV)
    prev = t
    nop = _match(TR, x, ids, ne, nb, n, U, WG, WC, WM, wo)
    root, no = _apply(TR, fr, meta, root, x, nb, n, nop, WG, WC, WM, wo)
    _relink(TR, x, prev, nb[4], no, nxt, last)
    return root


@leaf_kernel
def _match(TR, x, ids, ne, nb, n, U, WG, WC, WM, wo):
    """Merge x's window entries (``ids[ne-1]`` .. ``ids[0]``: (start, length)
    order) with the window runs into actions in that order: ``nb[5]`` = 0
    keep entry ``nb[6]`` (its slots updated here), 1 delete it, 2 add run
    ``nb[6]``; returns how many."""
    xo = wo[x]                  # node x's segment: its breakpoint k is at xo + k
    op = nb[5]
    ov = nb[6]
    nop = 0
    i = 0
    for o in range(ne - 1, -1, -1):
        t = ids[o]
        a = TR[t, _A]
        ln = TR[t, _LN]
        while i < n and (nb[0, i] < a or (nb[0, i] == a and nb[1, i] < ln)):
            op[nop] = 2
            ov[nop] = i
            nop += 1
            i += 1
        mk = _get(TR, t, _MK) & ~U
        if i < n and nb[0, i] == a and nb[1, i] == ln:
            k = nb[2, i]
            if _free_is(TR, t, WG[xo + k], WC[xo + k], WM[xo + k]):
                mk |= nb[3, i]
                i += 1
        op[nop] = 0 if mk else 1
        ov[nop] = t
        nop += 1
        if mk and mk != _get(TR, t, _MK):
            _set(TR, t, _MK, mk)
            _pull_up(TR, t)
    while i < n:
        op[nop] = 2
        ov[nop] = i
        nop += 1
        i += 1
    return nop


@leaf_kernel
def _apply(TR, fr, meta, root, x, nb, n, nop, WG, WC, WM, wo):
    """Carry out :func:`_match`'s actions; x's window entries, in order, into
    ``nb[4]``. Returns (root, how many). Within a stretch of deletes and adds
    of one start and the same free at it, an entry to delete takes an added
    run's length and slots in place (pairs in order: the stretch lies between
    two kept entries or other keys, so key order holds), saving a delete and
    an insert; the rest is deleted first, then inserted."""
    xo = wo[x]
    op = nb[5]
    ov = nb[6]
    out = nb[4]
    no = 0
    p = 0
    while p < nop:
        if op[p] == 0:
            out[no] = ov[p]
            no += 1
            p += 1
            continue
        a = _op_start(TR, nb, op[p], ov[p])
        p2 = p
        nd = 0
        na = 0
        while p2 < nop and op[p2] != 0 and _op_start(TR, nb, op[p2], ov[p2]) == a:
            if op[p2] == 1:
                nd += 1
            else:
                na += 1
            p2 += 1
        pairs = 0
        if nd > 0 and na > 0:
            d0 = _nth(op, p, p2, 1, 0)
            k = nb[2, ov[_nth(op, p, p2, 2, 0)]]
            t = ov[d0]
            if _free_is(TR, t, WG[xo + k], WC[xo + k], WM[xo + k]):
                pairs = min(nd, na)
            elif nd == 1 and na == 1 and _rekey(TR, t, WG[xo + k], WC[xo + k], WM[xo + k]):
                pairs = 1
        for r in range(pairs, nd):
            root = _delete_at(TR, root, ov[_nth(op, p, p2, 1, r)], fr, meta)
        for r in range(pairs):
            t = ov[_nth(op, p, p2, 1, r)]
            i = ov[_nth(op, p, p2, 2, r)]
            TR[t, _LN] = nb[1, i]
            _set(TR, t, _MK, nb[3, i])
            _pull_up(TR, t)
            out[no] = t
            no += 1
        for r in range(pairs, na):
            i = ov[_nth(op, p, p2, 2, r)]
            k = nb[2, i]
            root = _add(TR, fr, meta, root, a, WG[xo + k], WC[xo + k], WM[xo + k], x, nb[1, i],
                        nb[3, i], _hint(meta, a))
            _set_hint(meta, a, meta[3])
            out[no] = meta[3]
            no += 1
        p = p2
    return root, no


@leaf_kernel
def _rekey(TR, t, g, c, m):
    """Give entry t the free (g, c, m) at its start in place if it keeps its
    place in key order (between its neighbours); True if done."""
    pv = _prev(TR, t)
    nx = _next(TR, t)
    og = _get(TR, t, _G)
    oc = _get(TR, t, _C)
    om = _get(TR, t, _M)
    _set(TR, t, _G, g)
    _set(TR, t, _C, c)
    _set(TR, t, _M, m)
    if (pv < 0 or _less(TR, pv, t)) and (nx < 0 or _less(TR, t, nx)):
        return True
    _set(TR, t, _G, og)
    _set(TR, t, _C, oc)
    _set(TR, t, _M, om)
    return False


@leaf_kernel
def _op_start(TR, nb, kind, v):
    return TR[v, _A] if kind == 1 else nb[0, v]


@leaf_kernel
def _nth(op, p, p2, kind, r):
    """The position of the r-th action of this kind in op[p:p2]."""
    for j in range(p, p2):
        if op[j] == kind:
            if r == 0:
                return j
            r -= 1
    return -1


@leaf_kernel
def _relink(TR, x, prev, out, no, nxt, last):
    """x's list: prev, out[:no], nxt (-1: none)."""
    for i in range(no):
        t = out[i]
        _set(TR, t, _PV, prev)
        if prev >= 0:
            _set(TR, prev, _NX, t)
        prev = t
    if prev >= 0:
        _set(TR, prev, _NX, nxt)
    if nxt >= 0:
        _set(TR, nxt, _PV, prev)
    else:
        last[x] = prev
