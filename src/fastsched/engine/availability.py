"""Node availability through node events: the partitions' lists of available nodes,
the request types' capacities and their free-now counts, updated for the nodes that
change (:meth:`fastsched.engine.loop._EventLoop.apply_node_event`).

A failure model sends thousands of events to a run; rebuilding the lists from the
availability, or recounting a type's free nodes at the next pass, would cost every
node of the cluster per event. Here an event costs its nodes times the request types,
plus one copy of the lists.
"""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
import numpy as np
from numba import njit


@njit(cache=True)
def set_available(changed, value, member, bits_all, nodes, types, free):
    """Make the nodes ``changed`` (ascending; none of them listed if ``value``, all
    listed if not) available (``value``) or not.

    ``member``: node x partition (bool); ``bits_all``: each node's partitions' bits
    (empty beyond 64 partitions). Updates in place the nodes' ``pbits``, the types'
    ``cap`` (nodes that could ever hold one) and ``free.tcount`` (the counts already
    taken: available nodes whose free-now resources hold one); returns the new
    ``(poff, pflat)``: each partition's available nodes, ascending."""
    poff, pflat = nodes.poff, nodes.pflat
    parts = poff.shape[0] - 1
    k = changed.shape[0]
    grown = 0
    for i in range(k):
        for p in range(parts):
            if member[changed[i], p]:
                grown += 1
    out = np.empty(pflat.shape[0] + (grown if value else -grown), dtype=np.int64)
    off = np.zeros(parts + 1, dtype=np.int64)
    at = 0
    for p in range(parts):
        at = _merged(p, pflat[poff[p]:poff[p + 1]], changed, member, value, out, at)
        off[p + 1] = at
    sign = 1 if value else -1
    for i in range(k):
        x = changed[i]
        if bits_all.shape[0] > 0:
            nodes.pbits[x] = bits_all[x] if value else np.uint64(0)
        for ty in range(types.p.shape[0]):
            if not member[x, types.p[ty]]:
                continue
            if nodes.capG[x] >= types.g[ty] and nodes.capC[x] >= types.c[ty] \
                    and nodes.capM[x] >= types.m[ty]:
                types.cap[ty] += sign
            if free.tcount[ty] >= 0 and free.fg[x] >= types.g[ty] \
                    and free.fc[x] >= types.c[ty] and free.fm[x] >= types.m[ty]:
                free.tcount[ty] += sign
    return off, out


@njit(cache=True)
def _merged(p, listed, changed, member, value, out, at):
    """Write partition ``p``'s list ``listed`` into ``out`` from ``at``, with the
    ``changed`` nodes of ``p`` merged in (``value``) or left out; returns the end.
    The runs between them are copied whole."""
    prev = 0
    for i in range(changed.shape[0]):
        x = changed[i]
        if not member[x, p]:
            continue
        pos = np.searchsorted(listed, x)
        out[at:at + pos - prev] = listed[prev:pos]
        at += pos - prev
        if value:
            out[at] = x
            at += 1
            prev = pos
        else:               # listed[pos] == x
            prev = pos + 1
    out[at:at + listed.shape[0] - prev] = listed[prev:]
    return at + listed.shape[0] - prev
