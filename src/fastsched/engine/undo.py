"""Undoing a single pass's starts, so that the engine state it ran on can serve the next
pass (:mod:`fastsched.engine.kept`): the pass itself undoes its reservations
(``Rules.keep``), these kernels its starts and the time its profile starts at."""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
from numba import njit

from .passes import give_back_indexed
from .profile import _on_grid
from .runindex import ix_new_job
from .running import _take_running


@njit(cache=True)
def undo_starts(now, res, jobs, out, n, p, run, ix):
    """Give back what the pass's starts among jobs ``0..n-1`` (queue order: the order
    they started in) hold, latest first, in the profile ``p``, the running lists
    ``run`` and the kept run index ``ix`` (:func:`.passes.give_back_indexed`): each is
    back as it was before the pass (a hold and its give-back in reverse order leave the
    breakpoints as they were; the index holds the runs of the profile). ``jobs``: as the
    pass left them (a ``--nodes=MIN-MAX`` start's node count narrowed). Returns the index."""
    for j in range(n - 1, -1, -1):
        if out.start[j] < 0:
            continue
        end = _on_grid(now + jobs.limit[j], res)
        ix_new_job(ix.meta)
        for o in range(jobs.offsets[j], jobs.offsets[j] + jobs.nn[j]):
            x = out.alloc_nodes[o]
            ix = give_back_indexed(x, now, end, jobs.rg[j], jobs.rc[j], jobs.rm[j], p, ix)
            _take_running(x, j, run)
    return ix


@njit(cache=True)
def start_at(now, p):
    """Every node's profile starts at ``now`` (its other breakpoints, running jobs'
    held ends, are all later)."""
    for x in range(p.wo.shape[0]):
        p.WT[p.wo[x]] = now
