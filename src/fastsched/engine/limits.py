"""Limit groups in the kernels (:class:`~fastsched.engine.state.Limits`): caps on
running jobs and TRES (checked before a job is planned, charged at its start,
given back at its end) and on submitted jobs (checked at arrival)."""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
import numpy as np
from numba import njit

from .leafkernel import leaf_kernel

_INF = np.int64(1) << np.int64(62)
NCAPS = 5         # columns of LimitGroups.caps (constraints.CAPS)
SUBMIT_CAP = 4    # the cap on submitted jobs


@leaf_kernel
def _held(j, jobs, lim):
    """The first cap of a limit group that starting job ``j`` would exceed, as
    ``group * NCAPS + cap``, or -1 when no limit holds it."""
    caps, gusage = lim.caps, lim.gusage
    nn = jobs.nn[j]
    for e in range(lim.jg_off[j], lim.jg_off[j + 1]):
        grp = lim.jg[e]
        want0 = 1
        want1 = nn * jobs.rg[j]
        want2 = nn * jobs.rc[j]
        want3 = nn * jobs.rm[j]
        if caps[grp, 0] >= 0 and gusage[grp, 0] + want0 > caps[grp, 0]:
            return grp * NCAPS + 0
        if caps[grp, 1] >= 0 and gusage[grp, 1] + want1 > caps[grp, 1]:
            return grp * NCAPS + 1
        if caps[grp, 2] >= 0 and gusage[grp, 2] + want2 > caps[grp, 2]:
            return grp * NCAPS + 2
        if caps[grp, 3] >= 0 and gusage[grp, 3] + want3 > caps[grp, 3]:
            return grp * NCAPS + 3
    return -1


@leaf_kernel
def _charge(j, sign, jobs, lim):
    """Add (sign=1) or remove (sign=-1) running job ``j`` from its groups' usage."""
    nn = jobs.nn[j]
    for e in range(lim.jg_off[j], lim.jg_off[j + 1]):
        grp = lim.jg[e]
        lim.gusage[grp, 0] += sign
        lim.gusage[grp, 1] += sign * nn * jobs.rg[j]
        lim.gusage[grp, 2] += sign * nn * jobs.rc[j]
        lim.gusage[grp, 3] += sign * nn * jobs.rm[j]


@leaf_kernel
def _submit_held(j, lim):
    """The submit cap job ``j``'s arrival would exceed (group * NCAPS + cap; the
    last such group), or -1."""
    held = -1
    for e in range(lim.jg_off[j], lim.jg_off[j + 1]):
        grp = lim.jg[e]
        if lim.caps[grp, SUBMIT_CAP] >= 0 and \
                lim.gusage[grp, SUBMIT_CAP] + 1 > lim.caps[grp, SUBMIT_CAP]:
            held = grp * NCAPS + SUBMIT_CAP
    return held


@leaf_kernel
def _count_submitted(j, sign, lim):
    """Job ``j`` arrived (sign=1) or ended (sign=-1): its groups' submitted count."""
    for e in range(lim.jg_off[j], lim.jg_off[j + 1]):
        lim.gusage[lim.jg[e], SUBMIT_CAP] += sign


@njit(cache=True)
def _min_limits(queue, q0, q1, limit, pc_off, pc_type, T):
    """Per request type: the shortest time limit of the jobs of ``queue[q0:q1]``
    that may ask for it (``_INF``: none). A pass only takes capacity away, so a
    run shorter than this, or a piece of it later, can never start one of them:
    the run index leaves such runs out (:func:`fastsched.engine.runindex.ix_hold`)."""
    tmin = np.full(T, _INF, dtype=np.int64)
    for r in range(q0, q1):
        j = queue[r]
        for e in range(pc_off[j], pc_off[j + 1]):
            if limit[j] < tmin[pc_type[e]]:
                tmin[pc_type[e]] = limit[j]
    return tmin
