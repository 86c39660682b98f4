"""The sweep over time of GPU holds and releases behind
:func:`fastsched.sim.metrics.gpu_fragmentation`, compiled."""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
import numpy as np
from numba import njit


@njit(cache=True)
def _sweep(times, nodes, deltas, capacity, first, last):
    """Integrals of stranded and of all free GPUs over [first, last).

    times, nodes, deltas : int64[e]  GPU holds (+) and releases (-) per node, sorted by time
    capacity : int64[n]              GPUs per node
    """
    used = np.zeros(len(capacity), dtype=np.int64)
    free = capacity.sum()
    stranded = 0
    total_stranded = 0.0
    total_free = 0.0
    t = first
    for k in range(len(times)):
        if times[k] > t:
            total_stranded += stranded * (times[k] - t)
            total_free += free * (times[k] - t)
            t = times[k]
        n = nodes[k]
        before = capacity[n] - used[n] if used[n] > 0 else 0
        used[n] += deltas[k]
        after = capacity[n] - used[n] if used[n] > 0 else 0
        stranded += after - before
        free -= deltas[k]
    if last > t:
        total_stranded += stranded * (last - t)
        total_free += free * (last - t)
    return total_stranded, total_free
