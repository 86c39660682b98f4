"""Free-now counts per request type (:class:`~fastsched.engine.state.FreeNow`).

A job can only start now if its partition has N nodes whose free-now resources
(running jobs only) cover its request. Those counts are computed per request
*type* (partition, g, c, m), counted once when first asked and kept up to date
through starts and completions; a pass is skipped when no queued job passes,
and its walk stops after the last that does (what follows cannot change the
pass's starts).
"""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
import numpy as np

from .leafkernel import leaf_kernel


@leaf_kernel
def _tcount_update(x, og, oc, om, free, types, nodes):
    """Node x's free-now went from (og, oc, om) to ``fg/fc/fm[x]``: move it to the
    list of its free GPUs and adjust the kept free-now counts of the types already
    counted (``tcount`` >= 0) whose partition holds x. Without ``pbits`` (> 64
    partitions) they are recounted."""
    if free.bval[x] != free.fg[x]:
        _move_to_list(x, free.fg[x], free)
    g, c, m = free.fg[x], free.fc[x], free.fm[x]
    bit = np.uint64(1) << np.uint64(x & 63)
    if g == nodes.capG[x] and c == nodes.capC[x] and m == nodes.capM[x]:
        free.idle[x >> 6] |= bit
    else:
        free.idle[x >> 6] &= ~bit
    tcount = free.tcount
    if nodes.pbits.shape[0] == 0:
        tcount[:] = -1
        return
    bits = nodes.pbits[x]
    for ty in range(tcount.shape[0]):
        if tcount[ty] < 0 or not (bits >> np.uint64(types.p[ty])) & np.uint64(1):
            continue
        was = og >= types.g[ty] and oc >= types.c[ty] and om >= types.m[ty]
        now = g >= types.g[ty] and c >= types.c[ty] and m >= types.m[ty]
        if was and not now:
            tcount[ty] -= 1
        elif now and not was:
            tcount[ty] += 1


@leaf_kernel
def _move_to_list(x, v, free):
    """Node x from its list of nodes by free GPUs (``bval[x]``) to list ``v``."""
    nxt, prv = free.bnext[x], free.bprev[x]
    if prv >= 0:
        free.bnext[prv] = nxt
    else:
        free.bhead[free.bval[x]] = nxt
    if nxt >= 0:
        free.bprev[nxt] = prv
    head = free.bhead[v]
    free.bnext[x] = head
    free.bprev[x] = -1
    if head >= 0:
        free.bprev[head] = x
    free.bhead[v] = x
    free.bval[x] = v


@leaf_kernel
def _type_count(ty, free, types, nodes):
    """Available nodes of the type's partition whose free-now (running jobs only) covers it."""
    if free.tcount[ty] < 0:
        p = types.p[ty]
        g = types.g[ty]
        c = types.c[ty]
        m = types.m[ty]
        cnt = 0
        for i in range(nodes.poff[p], nodes.poff[p + 1]):
            x = nodes.pflat[i]
            if free.fg[x] >= g and free.fc[x] >= c and free.fm[x] >= m:
                cnt += 1
        free.tcount[ty] = cnt
    return free.tcount[ty]


@leaf_kernel
def _fits_now_somewhere(j, jobs, free, types, nodes):
    """Could job ``j`` start now in one of its partitions, counting running jobs only
    (on its fewest nodes, ``low``)?"""
    for e in range(jobs.pc_off[j], jobs.pc_off[j + 1]):
        if _type_count(jobs.pc_type[e], free, types, nodes) >= jobs.low[j]:
            return True
    return False
