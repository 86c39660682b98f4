"""The completion heap's removal of killed jobs (engine/heap.py ``_heap_drop``)
against its twin: the pairs left pop in (key, value) order, whatever the heap's
layout was before."""
import numpy as np
from hypothesis import given, settings, strategies as st

from fastsched.engine.heap import _heap_drop, _heap_pop, _heap_push
from naive import heap_pops_after_drop


def _pops(key, val, size):
    out = []
    while size > 0:
        out.append((int(key[0]), int(val[0])))
        size = _heap_pop(key, val, size)
    return out


@st.composite
def _heaps(draw):
    values = draw(st.lists(st.integers(0, 300), unique=True, max_size=120))
    keys = draw(st.lists(st.integers(0, 40), min_size=len(values), max_size=len(values)))
    pops = draw(st.integers(0, len(values) // 4))   # a heap mid-run: some popped already
    drop = draw(st.lists(st.sampled_from(values or [0]), unique=True,
                         max_size=30) | st.lists(st.integers(0, 300), unique=True, max_size=8))
    return list(zip(keys, values)), pops, sorted(drop)


def _is_heap(key, val, size):
    return all((key[(i - 1) // 2], val[(i - 1) // 2]) <= (key[i], val[i])
               for i in range(1, size))


@settings(max_examples=300, deadline=None)
@given(_heaps())
def test_drop_leaves_the_rest_in_pop_order(case):
    pairs, pops, drop = case
    key = np.zeros(len(pairs) + 1, dtype=np.int64)
    val = np.zeros(len(pairs) + 1, dtype=np.int64)
    size = np.int64(0)
    for k, v in pairs:
        size = _heap_push(key, val, size, k, v)
    popped = []
    for _ in range(pops):
        popped.append((int(key[0]), int(val[0])))
        size = _heap_pop(key, val, size)
    left = [p for p in pairs if p not in popped]
    size = _heap_drop(key, val, size, np.array(drop, dtype=np.int64))
    assert size == len(heap_pops_after_drop(left, drop))
    assert _is_heap(key, val, size)
    assert _pops(key, val, size) == heap_pops_after_drop(left, drop)
