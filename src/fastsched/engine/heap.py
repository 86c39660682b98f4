"""A binary min-heap over two parallel int64 arrays (key, value), ties by value:
the earliest-start sweeps and the event loop's completions."""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
from .leafkernel import leaf_kernel


@leaf_kernel
def _heap_push(key, val, size, k, v):
    i = size
    while i > 0:
        parent = (i - 1) // 2
        if key[parent] < k or (key[parent] == k and val[parent] <= v):
            break
        key[i] = key[parent]
        val[i] = val[parent]
        i = parent
    key[i] = k
    val[i] = v
    return size + 1


@leaf_kernel
def _heap_pop(key, val, size):
    """Drop the smallest entry; returns the new size."""
    size -= 1
    if size > 0:
        key[0] = key[size]
        val[0] = val[size]
        _sift_down(key, val, size, 0)
    return size


@leaf_kernel
def _heap_drop(key, val, size, drop):
    """Remove the entries whose value is in ``drop`` (sorted ascending) and restore
    the heap in place, O(size log len(drop)); returns the new size. A failure ends a
    few of thousands of running jobs: a sort of the survivors would cost
    O(size log size) per failure."""
    kept = 0
    for i in range(size):
        v = val[i]
        lo, hi = 0, len(drop)
        while lo < hi:
            mid = (lo + hi) // 2
            if drop[mid] < v:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(drop) and drop[lo] == v:
            continue
        key[kept] = key[i]
        val[kept] = val[i]
        kept += 1
    for i in range(kept // 2 - 1, -1, -1):      # Floyd's heap construction
        _sift_down(key, val, kept, i)
    return kept


@leaf_kernel
def _sift_down(key, val, size, i):
    """Move entry ``i`` down to its place (below it the heap holds)."""
    k = key[i]
    v = val[i]
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and (key[child + 1] < key[child] or
                                 (key[child + 1] == key[child] and val[child + 1] < val[child])):
            child += 1
        if k < key[child] or (k == key[child] and v <= val[child]):
            break
        key[i] = key[child]
        val[i] = val[child]
        i = child
    key[i] = k
    val[i] = v
