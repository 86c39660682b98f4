"""Undoing a single pass's starts, so that the engine state it ran on can serve the next
pass (:mod:`fastsched.engine.kept`): the pass itself undoes its reservations
(``Rules.keep``), these kernels its starts and the time its profile starts at."""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
from numba import njit

from .profile import _give_back, _on_grid
from .running import _take_running


@njit(cache=True)
def undo_starts(now, res, jobs, out, n, p, run):
    """Give back what the pass's starts among jobs ``0..n-1`` (queue order: the order
    they started in) hold, latest first, in the profile ``p`` and the running lists
    ``run``: each is back as it was before the pass (a hold and its give-back in
    reverse order leave the breakpoints as they were). ``jobs``: as the pass left
    them (a ``--nodes=MIN-MAX`` start's node count narrowed)."""
    for j in range(n - 1, -1, -1):
        if out.start[j] < 0:
            continue
        end = _on_grid(now + jobs.limit[j], res)
        for o in range(jobs.offsets[j], jobs.offsets[j] + jobs.nn[j]):
            x = out.alloc_nodes[o]
            _give_back(x, now, end, jobs.rg[j], jobs.rc[j], jobs.rm[j], p)
            _take_running(x, j, run)


@njit(cache=True)
def start_at(now, p):
    """Every node's profile starts at ``now`` (its other breakpoints, running jobs'
    held ends, are all later)."""
    for x in range(p.wo.shape[0]):
        p.WT[p.wo[x]] = now
