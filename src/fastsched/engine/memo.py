"""A pass's blocked head job, planned once while nothing it read changed.

Under EASY the first job that cannot start is planned at every pass: on a
partition of a thousand nodes, a scan of every node's profile
(:func:`fastsched.engine.earliest._earliest_monotone`) and a selection. From one
pass to the next its plan changes only if the free resources of a node of its
partition changed, or the partition's nodes did, or its start is no longer
ahead. The profile stamps each node at every change of its free resources
(``wv``, :func:`fastsched.engine.profile._touch`), so the plan is memoised with
the count of changes at planning time (``Scratch.memo``): when no node of the
partition has a later stamp, the plan is the same start on the same nodes.

Only a plan by :func:`~fastsched.engine.earliest._earliest_monotone` is
memoised: its start and nodes read the profile as a step function (a redundant
breakpoint changes neither), and it is planned first in its pass (no
reservation of the pass before it), so its profile holds the running jobs
only. Its own reservation's hold and undo are not counted as changes
(``wv[X + 1]``): the undo gives back exactly what the hold took, leaving the
same step function; any other change to those nodes in between is counted.
A hit does what the plan does to the profile: capable nodes' first breakpoints
move to now.

``memo`` = [job, partition choice, start, count of changes, g, c, m, need,
partition size, plans answered from the memo so far]; job -1: none.
"""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)

from numba import njit

from .earliest import _capable, _earliest_monotone
from .leafkernel import leaf_kernel

_J, _E, _T, _S, _G, _C, _M, _NEED, _PLEN, _HITS = range(10)


@njit(cache=True)
def memo_plan(j, e, now, ask, plist, nodes, p, scratch, trial):
    """Job ``j``'s later start in partition choice ``e`` (cannot start now, more than
    one node, planned first in its pass) and its nodes in ``trial``: the memoised plan
    when still valid, else :func:`_earliest_monotone`'s, memoised when it has one.
    Returns the start, or -1: no monotone plan (the caller plans it the general way)."""
    t = _memo_hit(j, e, now, ask, plist, nodes, p, scratch, trial)
    if t >= 0:
        return t
    t = _earliest_monotone(now, ask, plist, nodes, p, trial)
    if t > now:
        _memo_store(j, e, t, ask, plist, p, scratch, trial)
    return t


@leaf_kernel
def _memo_hit(j, e, now, ask, plist, nodes, p, scratch, trial):
    """The memoised start (nodes in ``trial``), or -1 when it no longer holds."""
    m = scratch.memo
    n = plist.shape[0]
    if m[_J] != j or m[_E] != e or now >= m[_T] or m[_NEED] != ask.need or m[_PLEN] != n \
            or m[_G] != ask.g or m[_C] != ask.c or m[_M] != ask.m:
        return -1
    stamp = m[_S]
    mp = scratch.memo_plist
    WT, wo, wv = p.WT, p.wo, p.wv
    for i in range(n):
        x = plist[i]
        if mp[i] != x or wv[x] > stamp:
            return -1           # (the plan that follows moves these breakpoints too)
        if _capable(x, ask, nodes):
            WT[wo[x]] = now
    for i in range(ask.need):
        trial[i] = scratch.memo_nodes[i]
    m[_HITS] += 1
    return m[_T]


@leaf_kernel
def _memo_store(j, e, t, ask, plist, p, scratch, trial):
    m = scratch.memo
    n = plist.shape[0]
    if n > scratch.memo_plist.shape[0]:
        m[_J] = -1
        return
    m[_J], m[_E], m[_T], m[_S] = j, e, t, p.wv[p.wv.shape[0] - 2]
    m[_G], m[_C], m[_M], m[_NEED], m[_PLEN] = ask.g, ask.c, ask.m, ask.need, n
    for i in range(n):          # (loops: a slice copy would allocate)
        scratch.memo_plist[i] = plist[i]
    for i in range(ask.need):
        scratch.memo_nodes[i] = trial[i]


@leaf_kernel
def quiet(p, on):
    """Count changes of free resources (``on`` False) or not (True)."""
    p.wv[p.wv.shape[0] - 1] = 1 if on else 0
