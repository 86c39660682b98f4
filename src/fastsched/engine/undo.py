"""Keeping a single pass's engine state for the next pass (:mod:`fastsched.engine.kept`):
the pass itself undoes its reservations (``Rules.keep``), these kernels its starts and
the time its profile starts at, and bring the state up to date when running jobs
start or end between passes (as a build from the new running jobs would hold them)."""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
import numpy as np
from numba import njit

from .freenow import _tcount_update
from .passes import _index_room, give_back_indexed
from .profile import _on_grid, _room, _split, _take
from .runindex import ix_hold, ix_new_job, ix_touched
from .running import _add_running, _take_running
from .treap import _A, _INF, _LF, _LN, _MK, _get, _next, _pull_up


@njit(cache=True)
def undo_starts(now, res, jobs, out, n, p, run, ix, free, types, nodes):
    """Give back what the pass's starts among jobs ``0..n-1`` (queue order: the order
    they started in) hold, latest first, in the profile ``p``, the running lists
    ``run``, the kept run index ``ix`` (:func:`.passes.give_back_indexed`) and the
    free-now state ``free`` (its ``tcount`` over the pass's ``types`` follows): each is
    back as it was before the pass (a hold and its give-back in reverse order leave the
    breakpoints as they were; the index holds the runs of the profile; free-now gets
    its resources and GPU bits back, each node in the list of its free GPUs again,
    maybe at another place in it: the lists are read as sets, their candidates sorted).
    ``jobs``: as the pass left them (a ``--nodes=MIN-MAX`` start's node count
    narrowed). Returns the index."""
    for j in range(n - 1, -1, -1):
        if out.start[j] < 0:
            continue
        end = _on_grid(now + jobs.limit[j], res)
        ix_new_job(ix.meta)
        for o in range(jobs.offsets[j], jobs.offsets[j] + jobs.nn[j]):
            x = out.alloc_nodes[o]
            ix = give_back_indexed(x, now, end, jobs.rg[j], jobs.rc[j], jobs.rm[j], p, ix)
            _take_running(x, j, run)
            free.fmask[x] |= out.alloc_mask[o]
            _free_by(x, jobs.rg[j], jobs.rc[j], jobs.rm[j], free, types, nodes)
    return ix


@njit(cache=True)
def start_at(now, p):
    """Every node's profile starts at ``now`` (its other breakpoints, running jobs'
    held ends, are all later)."""
    for x in range(p.wo.shape[0]):
        p.WT[p.wo[x]] = now


@njit(cache=True)
def hold_started(now, res, pe, offsets, xs, g, c, m, mask, p, run, ix, free, types, nodes):
    """Running jobs that started (planned ends ``pe``, entries ``offsets`` over per-entry
    nodes ``xs``, ``g``/``c``/``m`` and GPU bits ``mask``) join a kept state at ``now``
    as a build would hold them: over [now, held end) in the profile ``p`` (the run index
    ``ix`` follows, as at a pass's holds), in the running lists (job -1, as built) and
    in the free-now state ``free`` (its ``tcount`` over ``types`` follows). Returns
    ``(p, run, ix)`` (maybe with room made)."""
    nix = ix.top[1]
    for r in range(pe.shape[0]):
        end = _on_grid(pe[r], res)
        ix_new_job(ix.meta)
        for o in range(offsets[r], offsets[r + 1]):
            x = xs[o]
            p, ix = _node_room(x, p, ix)
            ka = _split(x, now, p)
            kb = _split(x, end, p)
            touched = np.int64(0)
            if nix > 0:     # the slots whose runs the hold can change, before it
                touched = ix_touched(x, ka, kb, nix, ix.sg, ix.sc, ix.sm, ix.elig, p.WG,
                                     p.WC, p.WM, p.wo)
            _take(x, ka, kb, g[o], c[o], m[o], p)
            if touched != 0:
                ix.top[0] = ix_hold(ix.TR, ix.fr, ix.meta, ix.top[0], x, ka, kb, touched, nix,
                                    ix.sg, ix.sc, ix.sm, ix.sth, p.WT, p.WG, p.WC, p.WM, p.wo,
                                    p.wlen, ix.last, ix.ids, ix.ibuf)
            run = _add_running(x, end, g[o], c[o], m[o], -1, run)
            free.fmask[x] &= ~mask[o]
            _free_by(x, -g[o], -c[o], -m[o], free, types, nodes)
    return p, run, ix


@njit(cache=True)
def give_back_ended(now, res, pe, offsets, xs, g, c, m, mask, p, run, ix, free, types, nodes):
    """Running jobs that ended (as :func:`hold_started` takes them) leave a kept state
    at ``now``: what they hold from ``now`` to their held ends is given back
    (:func:`.passes.give_back_indexed`), their running-list entries go, free-now
    gets their resources and GPU bits back. Returns ``(p, run, ix, ok)``; not ``ok``:
    an entry was not in the running lists (the state is then to be dropped)."""
    for r in range(pe.shape[0]):
        end = _on_grid(pe[r], res)
        ix_new_job(ix.meta)
        for o in range(offsets[r], offsets[r + 1]):
            x = xs[o]
            p, ix = _node_room(x, p, ix)
            ix = give_back_indexed(x, now, end, g[o], c[o], m[o], p, ix)
            if not _drop_running(x, end, g[o], c[o], m[o], run):
                return p, run, ix, False
            free.fmask[x] |= mask[o]
            _free_by(x, g[o], c[o], m[o], free, types, nodes)
    return p, run, ix, True


@njit(cache=True)
def _node_room(x, p, ix):
    """Room on node x for a hold or give-back, two breakpoints kept free after it (as
    :func:`.passes._make_room` makes it for a job's holds)."""
    if p.wlen[x] + 4 > p.wcap[x]:
        p = _room(x, p, 4)
    nix = ix.top[1]
    if nix > 0:
        need = nix * (p.wlen[x] + 4)
        if ix.ids.shape[0] < 2 * need or ix.meta[0] + need > ix.TR.shape[0]:
            ix = _index_room(ix, need, need)
    return p, ix


@njit(cache=True)
def _free_by(x, g, c, m, free, types, nodes):
    """Node x's free-now changes by (g, c, m): lists, idle bits and counts follow."""
    free.fg[x] += g
    free.fc[x] += c
    free.fm[x] += m
    _tcount_update(x, free.fg[x] - g, free.fc[x] - c, free.fm[x] - m, free, types, nodes)


@njit(cache=True)
def _drop_running(x, end, g, c, m, run):
    """Remove one entry (held end ``end``, g, c, m, job -1) of node x's running list,
    order kept (equal entries are alike: which one goes does not matter). False: none."""
    RT, RG, RC, RM, RJ, rlen = run
    for r in range(rlen[x]):
        if RT[x, r] == end and RG[x, r] == g and RC[x, r] == c and RM[x, r] == m \
                and RJ[x, r] == -1:
            for k in range(r + 1, rlen[x]):
                RT[x, k - 1] = RT[x, k]
                RG[x, k - 1] = RG[x, k]
                RC[x, k - 1] = RC[x, k]
                RM[x, k - 1] = RM[x, k]
                RJ[x, k - 1] = RJ[x, k]
            rlen[x] -= 1
            return True
    return False


@njit(cache=True)
def move_index(old, now, ix):
    """The kept run index ``ix`` follows its profiles' first breakpoints from ``old``
    to a later ``now`` (:func:`start_at`; every other breakpoint, a running job's held
    end, is after ``now``): the runs that started at ``old`` start at ``now``, ``now -
    old`` shorter (infinite ones stay so). They are the first entries in key order and
    stay the first, in the same order (their keys change alike), so only their keys and
    the subtree maxima above them change. False (nothing changed; the index is to be
    dropped): ``now`` is earlier, or one of them would be shorter than the threshold of
    a slot it serves (it would leave that slot)."""
    TR = ix.TR
    t = ix.top[0]
    if now < old or t < 0 or ix.top[1] == 0:
        return now >= old
    while _get(TR, t, _LF) >= 0:
        t = _get(TR, t, _LF)
    first = t
    delta = now - old
    while t >= 0 and TR[t, _A] == old:
        ln = TR[t, _LN]
        mk = _get(TR, t, _MK)
        if ln != _INF:
            for q in range(ix.top[1]):
                if (mk >> q) & 1 and ln - delta < ix.sth[q]:
                    return False
        t = _next(TR, t)
    t = first
    while t >= 0 and TR[t, _A] == old:
        TR[t, _A] = now
        if TR[t, _LN] != _INF:
            TR[t, _LN] -= delta
        _pull_up(TR, t)
        t = _next(TR, t)
    ix_new_job(ix.meta)         # the insertion hints name starts
    return True
