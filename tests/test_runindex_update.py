"""The run index's incremental maintenance (fastsched.runindex): inserts next
to a hinted predecessor, and the per-node run lists that holds update.

Twin: a plain sorted list of keys (the treap must walk the same way) and, for
the node lists, the runs recomputed from the profile after every hold.
"""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fastsched.runindex import (_A, _INF, _LN, _NX, _PV, _add, _delete, ix_add_node, ix_find,
                                ix_update, new_table, tr_reserve, tr_succ)


def walk(TR, root, d):
    out, z = [], tr_succ(TR, root, -1, d)
    while z >= 0:
        out.append(tuple(int(v) for v in TR[z, :5]))
        z = tr_succ(TR, root, z, d)
    return out


@settings(max_examples=80, deadline=None)
@given(ops=st.lists(st.tuples(st.booleans(), st.integers(0, 6), st.integers(0, 2),
                              st.integers(0, 3), st.sampled_from([1, 3, 5, int(_INF)]),
                              st.integers(-1, 40)), max_size=60),
       ds=st.lists(st.integers(0, 6), min_size=1, max_size=3))
def test_hinted_inserts_match_a_sorted_list(ops, ds):
    """Inserts with any hint (-1, a live entry right before the key or anywhere
    else) keep key order and subtree max lengths right."""
    TR, fr, meta = new_table(4)
    root = -1
    model = {}
    ids = {}
    for add, a, g, x, ln, h in ops:
        key = (a, g, 0, 0, x)
        if add and key not in model:
            TR, fr = tr_reserve(TR, fr, meta, 1)
            live = sorted(ids)
            hint = -1 if h < 0 or not live else ids[live[h % len(live)]]
            if h % 3 == 0 and live:         # often the true predecessor, when there is one
                before = [k for k in live if k < key]
                hint = ids[before[-1]] if before else hint
            root = _add(TR, fr, meta, root, a, g, 0, 0, x, ln, hint)
            model[key] = ln
            ids[key] = int(meta[3])
        elif not add and key in model:
            root = _delete(TR, root, a, g, 0, 0, x, fr, meta)
            del model[key]
            del ids[key]
    for d in ds:
        assert walk(TR, root, d) == [k for k in sorted(model) if model[k] >= d]


def profile_runs(WT, WG, L, g):
    """(start, length) of every run of free >= g of a one-node profile."""
    runs, k = [], 0
    while k < L:
        if WG[0, k] < g:
            k += 1
            continue
        k2 = k + 1
        while k2 < L and WG[0, k2] >= g:
            k2 += 1
        runs.append((int(WT[0, k]), int(_INF) if k2 == L else int(WT[0, k2] - WT[0, k])))
        k = k2
    return runs


def hold(WT, WG, wlen, s, e, g):
    """Twin of the engine's hold (split at s and e, subtract g on [s, e))."""
    for t in (s, e):
        L = wlen[0]
        k = L - 1
        while WT[0, k] > t:
            k -= 1
        if WT[0, k] != t:
            WT[0, k + 2:L + 1] = WT[0, k + 1:L].copy()
            WG[0, k + 2:L + 1] = WG[0, k + 1:L].copy()
            WT[0, k + 1] = t
            WG[0, k + 1] = WG[0, k]
            wlen[0] = L + 1
    inside = (WT[0, :wlen[0]] >= s) & (WT[0, :wlen[0]] < e)
    WG[0, :wlen[0]][inside] -= g


@settings(max_examples=80, deadline=None)
@given(holds=st.lists(st.tuples(st.integers(0, 30), st.integers(1, 12), st.integers(1, 4)),
                      max_size=12),
       g=st.integers(1, 4))
def test_holds_keep_node_lists_and_index_right(holds, g):
    """Random holds on one node (capacity 4, request g): after each,
    ix_find + ix_update leave the node's list (time order, links, last) and
    the treap equal to the runs recomputed from the profile."""
    K = 4 + 2 * len(holds) + 4
    WT = np.zeros((1, K), dtype=np.int64)
    WG = np.zeros((1, K), dtype=np.int64)
    WC = np.zeros((1, K), dtype=np.int64)
    WM = np.zeros((1, K), dtype=np.int64)
    WG[0, 0] = 4
    wlen = np.array([1], dtype=np.int64)
    TR, fr, meta = new_table(4)
    last = np.full(1, -1, dtype=np.int64)
    TR, fr = tr_reserve(TR, fr, meta, K)
    root = ix_add_node(TR, fr, meta, -1, 0, g, 0, 0, WT, WG, WC, WM, wlen, last)
    ids = np.empty(K, dtype=np.int64)
    buf = np.empty((4, K), dtype=np.int64)
    hint = np.full(1, -1, dtype=np.int64)
    for s, dur, hg in holds:
        e = s + dur
        free = WG[0, :wlen[0]]
        seg = [k for k in range(wlen[0]) if WT[0, k] < e and (k + 1 == wlen[0] or WT[0, k + 1] > s)]
        if min(free[k] for k in seg) < hg:
            continue                        # does not fit: the engine never holds it
        before = profile_runs(WT, WG, wlen[0], g)
        hold(WT, WG, wlen, s, s, 0)         # s a breakpoint, as the engine splits first
        hold(WT, WG, wlen, e, e, 0)
        L = wlen[0]
        if not ((WT[0, :L] >= s) & (WT[0, :L] < e) & (WG[0, :L] >= g)).any():
            hold(WT, WG, wlen, s, e, hg)    # meets none of the runs: the engine skips it
            assert profile_runs(WT, WG, wlen[0], g) == before
            continue
        n = ix_find(TR, 0, s, e, ids, last)
        assert n >= 1
        hint[0] = -1        # as the engine per job: a hint must still be in the index
        hold(WT, WG, wlen, s, e, hg)
        TR, fr = tr_reserve(TR, fr, meta, wlen[0] + 2)
        root = ix_update(TR, fr, meta, root, 0, s, e, g, 0, 0, WT, WG, WC, WM, wlen, ids, n,
                         buf, last, hint, 0)
        want = profile_runs(WT, WG, wlen[0], g)
        # the list, walked back from last
        got, t = [], int(last[0])
        while t >= 0:
            got.append((int(TR[t, _A]), int(TR[t, _LN])))
            nxt = t
            t = int(TR[t, _PV])
            if t >= 0:
                assert TR[t, _NX] == nxt
        assert got[::-1] == want
        assert TR[last[0], _NX] == -1
        # the treap, for a few lengths
        for d in (0, 1, 5):
            assert [(k[0], ) for k in walk(TR, root, d)] == [(a,) for a, ln in want if ln >= d]
