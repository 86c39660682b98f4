"""The event loop's pass for whole-node runs: the same decisions as
:func:`fastsched.engine.passes._pass`, at a cost that does not grow with the nodes.

A run is *whole-node* (:func:`whole_node_run`) when every node has the same
capacity, every job asks for all of it on each of its nodes in the one partition
that holds every node, and the policy holds at most one reservation per pass
(fcfs, or easy with depth 1), with no topology, no advance reservation and
no node event: SWF traces replayed in the nodes model. A node then runs one job
at a time, so its work profile is "busy until its job's held end, then free":
idle nodes are interchangeable (best fit ties, so the lowest indices win) and a
blocked job's plan follows from the running jobs' held ends alone. So the loop
keeps, instead of work profiles, running lists and free amounts per node (about
ten cache lines per node at every start and end), the idle nodes as bits
(``FreeNow.idle``, a word per 64 nodes; ``tcount`` their number), and a pass
reads those bits and the running jobs (the loop's completion heap):

* a start now takes the lowest-numbered idle nodes (those a reservation holds
  left out when the job would still run at the reservation's start);
* a blocked job starts at the need-th smallest held end (idle nodes count as
  ending now), and its reservation takes the nodes whose held end is latest,
  then the lowest idle ones: only those idle ones matter to later jobs of the
  pass, so only they are kept (the reservation's other nodes are not written to
  ``alloc_nodes``: the loop reads no reservation's nodes, and has no hold to undo).

``tests/test_wholenode.py`` checks by hypothesis that runs through this pass and
through the general one give identical records.
"""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
import numpy as np
from numba import njit

from .freenow import _type_count
from .interrupt import REQUEST as _REQUEST, STOP as _STOP
from .leafkernel import leaf_kernel
from .limits import _charge
from .passes import _SKIP, _STOP_WALK, _job_mode, _last_to_walk
from .profile import _on_grid


def whole_node_run(nodes, types, jobs, topo, stop_at_head: bool, depth: int,
                   blocked: bool) -> bool:
    """Can the loop's passes run :func:`_whole_pass` (see the module doc)?"""
    X = nodes.capG.shape[0]
    if not (stop_at_head or depth <= 1) or blocked or topo.levels.shape[0] > 0 \
            or topo.excl.any() or len(types.p) != 1 or X == 0:
        return False
    part = int(types.p[0])
    uniform = all((cap == cap[0]).all() for cap in (nodes.capG, nodes.capC, nodes.capM))
    return bool(uniform and nodes.poff[part + 1] - nodes.poff[part] == X
                and (types.g[0], types.c[0], types.m[0])
                == (nodes.capG[0], nodes.capC[0], nodes.capM[0])
                and (np.diff(jobs.pc_off) == 1).all())


@njit(cache=True, nogil=True)
def _whole_pass(now, queue, qlen, rules, jobs, types, nodes, free, p, run, lim, topo, out,
                scratch, ctl, evj, nev):
    """:func:`fastsched.engine.passes._pass` of a whole-node run (same arguments and
    result; ``evj[:nev]``: the jobs running before the pass)."""
    last = _last_to_walk(queue, qlen, rules, jobs, free, types, nodes)
    if last < 0:
        return -1, p, run
    nstarted = 0
    reserved = 0
    t_res = np.int64(-1)              # the reservation's start
    rbits = np.zeros(0, dtype=np.uint64)    # its idle nodes ...
    r_idle = 0                        # ... and how many of them are still idle
    started = np.empty(last + 1, dtype=np.int64)
    chosen = scratch.chosen
    for q in range(last + 1):
        if ctl[_REQUEST] == _STOP:
            break
        j = queue[q]
        mode = _job_mode(j, reserved, rules, jobs, free, types, nodes, lim, out)
        if mode == _STOP_WALK:
            break
        if mode == _SKIP:
            continue
        need = jobs.nn[j]
        ty = jobs.pc_type[jobs.pc_off[j]]
        if types.cap[ty] < need:
            continue
        free_now = _type_count(ty, free, types, nodes)
        if free_now >= need:
            past = reserved > 0 and now + jobs.limit[j] > t_res
            if free_now - (r_idle if past else 0) < need:
                if rules.stop_at_head:
                    break
                continue
            _lowest_idle(free.idle, rbits, past, need, chosen)
            if reserved > 0:
                r_idle -= _count_in(rbits, chosen, need)
            _start_whole(j, now, jobs, free, lim, out, chosen)
            started[nstarted] = j
            nstarted += 1
            continue
        # blocked (only a job planned at any time gets here: it fits nowhere now)
        t, busy_by_t = _earliest(need, free_now, rules.res, jobs, out, evj, nev, started,
                                 nstarted)
        out.part_used[j] = jobs.pc_part[jobs.pc_off[j]]
        if t - now > rules.window:        # beyond the planning window: no reservation
            continue
        out.planned[j] = t
        reserved += 1
        t_res = t
        r_idle = need - busy_by_t if need > busy_by_t else 0
        rbits = np.zeros(free.idle.shape[0], dtype=np.uint64)
        _mark_lowest_idle(free.idle, r_idle, rbits)
    return nstarted, p, run


@leaf_kernel
def _start_whole(j, now, jobs, free, lim, out, chosen):
    """Start job ``j`` now on ``chosen``: its outputs (every GPU of its nodes), limit
    usage, idle bits and free-now count."""
    need = jobs.nn[j]
    out.start[j] = now
    out.end[j] = now + min(jobs.runtime[j], jobs.limit[j])
    out.planned[j] = now
    out.part_used[j] = jobs.pc_part[jobs.pc_off[j]]
    _charge(j, 1, jobs, lim)
    gpus = jobs.rg[j] > 0       # (else the masks stay zero: their pages untouched)
    for i in range(need):
        x = chosen[i]
        out.alloc_nodes[jobs.offsets[j] + i] = x
        if gpus:
            out.alloc_mask[jobs.offsets[j] + i] = free.fmask[x]
        free.idle[x >> 6] &= ~(np.uint64(1) << np.uint64(x & 63))
    free.tcount[jobs.pc_type[jobs.pc_off[j]]] -= need


@leaf_kernel
def _end_whole(j, jobs, free, out):
    """Job ``j`` ends: its nodes are idle again."""
    for o in range(jobs.offsets[j], jobs.offsets[j] + jobs.nn[j]):
        x = out.alloc_nodes[o]
        free.idle[x >> 6] |= np.uint64(1) << np.uint64(x & 63)
    free.tcount[jobs.pc_type[jobs.pc_off[j]]] += jobs.nn[j]


@njit(cache=True)
def _earliest(need, free_now, res, jobs, out, evj, nev, started, nstarted):
    """A blocked job's start: the need-th smallest held end of a node (idle nodes:
    now), and how many busy nodes have a held end at most that start."""
    m = nev + nstarted
    ends = np.empty(m, dtype=np.int64)
    size = np.empty(m, dtype=np.int64)
    for k in range(m):
        r = evj[k] if k < nev else started[k - nev]
        ends[k] = _on_grid(out.start[r] + jobs.limit[r], res)
        size[k] = jobs.nn[r]
    order = np.argsort(ends, kind="mergesort")
    have = free_now
    t = np.int64(-1)
    busy = 0
    for i in range(m):
        k = order[i]
        if t >= 0 and ends[k] > t:
            break
        have += size[k]
        busy += size[k]
        if have >= need and t < 0:
            t = ends[k]
    return t, busy


@leaf_kernel
def _lowest_idle(idle, rbits, skip_reserved, need, chosen):
    """``chosen[:need]``: the lowest-numbered idle nodes (not in ``rbits`` when
    ``skip_reserved``), ascending; the caller checked there are enough."""
    got = 0
    for w in range(idle.shape[0]):
        bits = idle[w] & ~rbits[w] if skip_reserved else idle[w]
        b = 0
        while bits != 0 and got < need:
            if bits & np.uint64(1):
                chosen[got] = w * 64 + b
                got += 1
            bits >>= np.uint64(1)
            b += 1
        if got == need:
            return


@leaf_kernel
def _mark_lowest_idle(idle, k, rbits):
    """Set in ``rbits`` the ``k`` lowest-numbered idle nodes."""
    left = k
    for w in range(idle.shape[0]):
        if left == 0:
            return
        bits = idle[w]
        while bits != 0 and left > 0:
            low = bits & (~bits + np.uint64(1))
            rbits[w] |= low
            left -= 1
            bits ^= low


@leaf_kernel
def _count_in(rbits, chosen, need):
    """How many of ``chosen[:need]`` are set in ``rbits``."""
    k = 0
    for i in range(need):
        x = chosen[i]
        if (rbits[x >> 6] >> np.uint64(x & 63)) & np.uint64(1):
            k += 1
    return k
