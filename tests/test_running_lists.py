"""plan_nodes' per-node running lists (engine.running._running_lists): each node's
running entries sorted by held end, equal ends in entry order, zeros after.
Twin: a plain sort per node."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fastsched.engine.running import _running_lists


@settings(max_examples=60, deadline=None)
@given(X=st.integers(1, 5),
       entries=st.lists(st.tuples(st.integers(0, 4), st.integers(1, 6), st.integers(0, 3),
                                  st.integers(0, 9), st.integers(0, 9)), max_size=25))
def test_running_lists_sorted_by_end(X, entries):
    """Mutations caught: insertion by descending end; no shift of the others."""
    entries = [e for e in entries if e[0] < X]
    x, pe, g, c, m = (np.array([e[k] for e in entries], dtype=np.int64) for k in range(5))
    R = 4
    while R < max([np.sum(x == y) for y in range(X)] + [0]) + 1:
        R *= 2
    got = [np.zeros((X, R), dtype=np.int64) for _ in range(4)]
    _running_lists(x, pe, g, c, m, *got)
    for y in range(X):
        mine = sorted((e[1], i) for i, e in enumerate(entries) if e[0] == y)
        want = [[entries[i][k] for _, i in mine] + [0] * (R - len(mine)) for k in (1, 2, 3, 4)]
        assert [list(A[y]) for A in got] == want, f"node {y}"
