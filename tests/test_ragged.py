"""The ragged work profile's storage (fastsched.engine.profile: new_profile, _room,
_compact): node x's breakpoints live in ``W?[wo[x]:wo[x] + wlen[x]]``, in a
segment of ``wcap[x]`` entries; a node that outgrows it moves to a bigger one
at the top, the arrays are compacted or doubled when full.

Twin: a plain list of rows per node. After every step, each node's stored
rows are exactly the twin's, segments are disjoint and inside the arrays, the
top and the holes are what the segments say, and every node has room for two
more breakpoints.
"""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fastsched.engine.profile import _compact, _room, new_profile, profile_of
from fastsched.engine.state import Profile


def _segments(wcap):
    """A fresh profile's storage as (W, wo, wcap, wst)."""
    p = new_profile(wcap)
    return list(p[:4]), p.wo, p.wcap, p.wst


def _profile_of(W, wo, wlen, x):
    return profile_of(Profile(*W, wo, wlen, wlen, wo, wo), x)


def check(W, wo, wlen, wcap, wst, twin):
    for x, rows in enumerate(twin):
        got = list(zip(*(A.tolist() for A in _profile_of(W, wo, wlen, x))))
        assert got == rows, x
        assert wlen[x] + 2 <= wcap[x]
    spans = sorted((int(wo[x]), int(wo[x] + wcap[x])) for x in range(len(twin)))
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), "segments overlap"
    top, holes = int(wst[0]), int(wst[1])
    assert spans[-1][1] <= top <= len(W[0])
    assert holes == top - int(wcap.sum()) >= 0      # everything below top not live is a hole


def grow(x, W, wo, wlen, wcap, wst, twin, row):
    """Append ``row`` to node x's profile as a hold would (in its room), then keep room."""
    o, L = wo[x], wlen[x]
    for A, v in zip(W, row):
        A[o + L] = v
    wlen[x] = L + 1
    twin[x].append(row)
    wv = np.zeros(len(wo) + 2, dtype=np.int64)
    return list(_room(x, Profile(*W, wo, wlen, wcap, wst, wv))[:4])


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 6), cap=st.integers(3, 5),
       steps=st.lists(st.tuples(st.integers(0, 5), st.booleans()), max_size=80))
def test_moves_and_compaction_keep_every_profile(n, cap, steps):
    """Random appends and removals (the shape of holds and give-backs) on a few
    nodes with small segments: moves, doublings and compactions all happen, and
    the stored profiles stay the twin's. (Mutation caught: holes not counted.)"""
    W, wo, wcap, wst = _segments(np.full(n, cap, dtype=np.int64))
    wlen = np.ones(n, dtype=np.int64)
    twin = [[(0, x, 2 * x, 3 * x)] for x in range(n)]
    for x in range(n):
        for A, v in zip(W, twin[x][0]):
            A[wo[x]] = v
    check(W, wo, wlen, wcap, wst, twin)
    for i, (x, add) in enumerate(steps):
        x %= n
        if add or wlen[x] == 1:
            W = grow(x, W, wo, wlen, wcap, wst, twin, (i + 1, i, -i, 7 * i))
        else:                       # drop the last breakpoint (a merge)
            wlen[x] -= 1
            twin[x].pop()
        check(W, wo, wlen, wcap, wst, twin)


def test_compaction_reclaims_the_holes_before_doubling():
    """Two nodes taking turns to outgrow their segments: the abandoned segments
    are reused (compaction) instead of the arrays doubling for ever."""
    n = 2
    W, wo, wcap, wst = _segments(np.full(n, 3, dtype=np.int64))
    wlen = np.ones(n, dtype=np.int64)
    twin = [[(0, 0, 0, 0)], [(0, 1, 1, 1)]]
    for x in range(n):
        for A, v in zip(W, twin[x][0]):
            A[wo[x]] = v
    compacted = False
    for i in range(200):
        x = i % 2
        before = int(wst[1])
        W = grow(x, W, wo, wlen, wcap, wst, twin, (i + 1, i, i, i))
        compacted |= int(wst[1]) < before
        if wlen[x] > 20:            # shrink back: its big segment is kept, others move
            wlen[x] = 1
            twin[x] = twin[x][:1]
        check(W, wo, wlen, wcap, wst, twin)
    assert compacted
    assert len(W[0]) <= 4 * int(wcap.sum())


def test_compact_slides_segments_in_offset_order():
    """Segments out of node order slide down in offset order (mutation caught:
    sliding them in node order overwrites a segment not moved yet)."""
    W = [np.full(10, -1, dtype=np.int64) for _ in range(4)]
    wo = np.array([8, 2, 5], dtype=np.int64)        # out of node order; holes 0-1, 4, 7
    wcap = np.array([2, 2, 2], dtype=np.int64)
    wlen = np.array([1, 2, 1], dtype=np.int64)
    for A in W:
        A[8], A[2], A[3], A[5] = 10, 20, 21, 30
    top = _compact(Profile(*W, wo, wlen, wcap, np.zeros(2, dtype=np.int64), wo))
    assert top == 6
    assert wo.tolist() == [4, 0, 2]
    assert W[0][[0, 1, 2, 4]].tolist() == [20, 21, 30, 10]
