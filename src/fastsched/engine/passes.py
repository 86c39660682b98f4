"""One scheduling pass (:func:`_pass`): the one copy of the planning logic, used
by the event loop (:mod:`fastsched.engine.loop`) and the single pass
(:mod:`fastsched.engine.plan`)."""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
import numpy as np
from numba import njit

from .placement import choose_gpus_kernel
from .blocks import _hold_blocks
from .earliest import _choose_now, _fitting_now, _ix_build, _plan_indexed, _plan_job
from .freenow import _fits_now_somewhere, _tcount_update, _type_count
from .interrupt import REQUEST as _REQUEST, STOP as _STOP
from .leafkernel import leaf_kernel
from .limits import _charge, _held, _min_limits
from .memo import memo_plan, quiet
from .profile import _add, _give_back, _merge_at, _on_grid, _prefetch_node, _room, _split, _take
from .running import _insert_running, _running_room
from .runindex import ix_hold, ix_new_job, ix_touched
from .treap import MAX_SLOTS as _MAX_SLOTS, ix_packable, new_meta, tr_empty, tr_reserve
from .state import Ask, Index
from .timemin import _shorten_now
from .preemptplan import _plan_preempting

# what a pass does with a job (_plan_mode)
_ANY_TIME, _ONLY_NOW, _SKIP, _STOP_WALK = 0, 1, 2, 3

# A run index slot costs a walk over the partition's nodes; a "now?" check of a GPU
# job walks only the nodes with enough free GPUs (earliest._fitting_now_by_gpus), so
# such checks count this much less towards a slot: a deep queue of jobs that cannot
# start past a reservation then no longer builds an index in every pass.
_NOW_BY_GPUS_SHARE = 16


@njit(cache=True, nogil=True)
def _pass(now, queue, qlen, rules, jobs, types, nodes, free, p, run, lim, topo, out, scratch,
          ctl, pre):
    """One scheduling pass at ``now`` over ``queue[:qlen]`` (job indices, queue order).

    It starts jobs (``out.start/end/planned``, ``out.alloc_nodes/alloc_mask`` at
    ``jobs.offsets[j]``, ``out.part_used``; the free-now state ``free``, the
    running lists ``run`` and the limit groups' usage follow), and records
    reservations (``planned[j] = t > now`` and their nodes in ``alloc_nodes``;
    no mask). A job a limit holds gets ``reason[j]`` (group * NCAPS + cap) and
    is skipped: no start, no reservation, blocks nobody. Jobs it does not
    reach are left untouched. Topology (``topo``; --switches in force until
    ``eligible + leaf_wait``, wait < 0: forever) shapes starts (see
    :func:`fastsched.engine.earliest._plan_job`); GPUs on a node are taken by
    :func:`fastsched.topology.choose_gpus_kernel` over ``gmasks`` when given.
    ``rules`` (:class:`~fastsched.engine.state.Rules`): ``full`` walks the whole
    queue (no early stop, no skipped pass); a request type's later starts come
    from a run index (:mod:`fastsched.engine.runindex`, same answers) once it
    has been planned more than ``index_after`` times in the pass (a "now?" check
    of a GPU job counts 1/``_NOW_BY_GPUS_SHARE`` of a plan; < 0: never;
    not with topology; the first ``MAX_SLOTS`` such types share one index,
    later ones keep the scan path). --exclusive=topo jobs start only on idle
    leaf groups and hold them whole (:mod:`fastsched.engine.blocks`). ``ctl``:
    the control array of :mod:`fastsched.engine.interrupt`; on a stop request
    the pass ends after the job it is planning. ``pre``: planning with preemptable
    capacity (:mod:`fastsched.engine.preemptplan`; off when ``pre.can`` is empty): a
    job that may preempt, planned at any time and not starting now, is planned with
    its candidates' resources free and reserved there (at now too: the preemption
    after the pass stops its victims). The run index stays on: its runs start where
    the free resources cover a request, so a node such a reservation leaves short
    (free capacity negative) has none there, and the candidates' give-back is undone
    before it reads the profile again.

    The work profile ``p`` is kept between passes: on entry it holds the running
    jobs only (every breakpoint but the first > now; room for two more
    breakpoints on every node: wlen + 2 <= wcap), like ``free.tcount``. Starts
    stay in it; reservations are undone before returning when ``rules.keep``.

    Returns ``(nstarted or -1 when the pass was skipped, p, run)``: the profile
    and running lists may have been given bigger arrays.
    """
    last = _last_to_walk(queue, qlen, rules, jobs, free, types, nodes)
    if last < 0:
        return -1, p, run
    indexed = rules.index_after >= 0 and topo.levels.shape[0] == 0 and \
        ix_packable(nodes.capG, nodes.capC, nodes.capM)
    ix = _new_index(types.p.shape[0], indexed)
    nstarted, p, run, ix = _walk(last, now, queue, rules, jobs, types, nodes, free, p, run, lim,
                                 topo, out, scratch, ctl, pre, ix)
    return nstarted, p, run


@njit(cache=True, nogil=True)
def pass_kept(now, queue, qlen, rules, jobs, types, nodes, free, p, run, lim, topo, out, scratch,
              ctl, pre, ix):
    """:func:`_pass` with a run index kept between passes (:mod:`fastsched.engine.kept`;
    ``rules.keep``, no topology, no preemption): its slots serve this pass's request
    types from their first plan, the slots it adds are kept, and the reservations'
    give-backs keep it up to date (the starts': :func:`fastsched.engine.undo.undo_starts`).
    Returns ``(nstarted or -1, p, run, ix)``."""
    last = _last_to_walk(queue, qlen, rules, jobs, free, types, nodes)
    if last < 0:
        return -1, p, run, ix
    return _walk(last, now, queue, rules, jobs, types, nodes, free, p, run, lim, topo, out,
                 scratch, ctl, pre, ix)


@njit(cache=True, nogil=True)
def _walk(last, now, queue, rules, jobs, types, nodes, free, p, run, lim, topo, out, scratch, ctl,
          pre, ix):
    """The pass's walk over ``queue[:last + 1]`` with the run index ``ix``."""
    reserved = 0
    nstarted = 0
    resv = np.empty(last + 1, dtype=np.int64)      # the reserved jobs (undone at the end: keep)
    preempting = pre.can.shape[0] > 0
    chosen = scratch.chosen
    memo_first = False      # resv[0]'s plan is memoised: its hold and undo are not counted
    for q in range(last + 1):
        if ctl[_REQUEST] == _STOP:
            break
        j = queue[q]
        mode = _job_mode(j, reserved, rules, jobs, free, types, nodes, lim, out)
        if mode == _STOP_WALK:
            break
        if mode == _SKIP:
            continue
        # the earliest start over the job's partitions (ties: the first listed); the
        # state is reassigned only when it grows (each reassignment costs a
        # reference count per array)
        only_now = mode == _ONLY_NOW
        now_by_gpus = only_now and jobs.rg[j] > 0 and nodes.pbits.shape[0] > 0
        ml = _switches_in_force(j, now, jobs, topo)
        # planned first in the pass on its one partition, no topology: memoised (memo)
        memoise = mode == _ANY_TIME and reserved == 0 and jobs.nn[j] > 1 and not preempting \
            and topo.levels.shape[0] == 0 and jobs.pc_off[j + 1] - jobs.pc_off[j] == 1
        memoised = False
        t = -1
        for e in range(jobs.pc_off[j], jobs.pc_off[j + 1]):
            ty = jobs.pc_type[e]
            if types.cap[ty] < jobs.nn[j]:      # too few nodes there while some are drained
                continue
            now_here = _type_count(ty, free, types, nodes) >= jobs.nn[j]
            if only_now and not now_here:
                continue
            if _slot_due(ty, 1 if now_by_gpus else _NOW_BY_GPUS_SHARE, rules, ix):
                ix = _add_slot(ty, q, last, now, queue, jobs, types, nodes, p,
                               _nodes_of(jobs.pc_part[e], nodes), ix)
            if ix.slot[ty] >= 0 and jobs.limit[j] >= ix.sth[ix.slot[ty]]:   # (inline: hot)
                te = _plan_indexed(now, jobs.limit[j], jobs.nn[j], only_now, ix.top[0],
                                   ix.slot[ty], ix.TR, p, scratch.trial)
            else:
                te = -1
                if memoise and not now_here:
                    te = memo_plan(j, e, now, Ask(jobs.rg[j], jobs.rc[j], jobs.rm[j],
                                                  jobs.limit[j], jobs.nn[j]),
                                   _nodes_of(jobs.pc_part[e], nodes), nodes, p, scratch,
                                   scratch.trial)
                    memoised = te > now
                if te < 0:
                    te = _plan_scan(e, j, now, only_now, now_here, ml, jobs, nodes, p, free,
                                    topo, scratch.trial)
            if te >= 0 and (t < 0 or te < t):
                t = te
                out.part_used[j] = jobs.pc_part[e]
                chosen[:jobs.nn[j]] = scratch.trial[:jobs.nn[j]]
                if t == now:
                    break
        if t != now and jobs.low[j] < jobs.nn[j] and \
                _narrow_now(j, now, jobs, types, nodes, p, free, topo, scratch.trial, chosen,
                            out) > 0:
            t = now             # a node range: it starts now on fewer nodes
        if t != now and jobs.tmin[j] > 0 and \
                _shorten_now(j, now, jobs, types, nodes, p, free, topo, scratch.trial, chosen,
                             out):
            t = now             # --time-min: it starts now with a shorter limit
        by_preempting = t != now and mode == _ANY_TIME and preempting and pre.can[j]
        if by_preempting:
            t, p = _plan_preempting(j, t, now, jobs, types, nodes, p, free, run, topo, out,
                                    pre, scratch.trial, chosen)
        if t < 0:
            if rules.stop_at_head:
                break
            continue
        if t - now > rules.window:        # beyond the planning window: no reservation
            continue
        held_end = _on_grid(t + jobs.limit[j], rules.res)
        # room for the holds first, so that the loop over the job's nodes assigns no array
        if _room_short(j, jobs, p, ix, chosen):
            p, ix = _make_room(j, jobs, p, ix, chosen)
        ix_new_job(ix.meta)        # insertion hints: this job's own entries only
        unchanged = memoised and t > now and not by_preempting
        if unchanged:   # (its undo gives it back exactly: the memoised plan stays valid)
            quiet(p, True)
        _hold_nodes(Ask(jobs.rg[j], jobs.rc[j], jobs.rm[j], 0, jobs.nn[j]), t, held_end, p, ix,
                    chosen)
        quiet(p, False)
        out.planned[j] = t
        if t > now or by_preempting:
            memo_first = memo_first or (unchanged and reserved == 0)
            resv[reserved] = j
            reserved += 1
            for i in range(jobs.nn[j]):
                out.alloc_nodes[jobs.offsets[j] + i] = chosen[i]
            continue
        run = _start(j, now, held_end, jobs, types, nodes, free, run, lim, topo, out, chosen)
        if topo.excl[j]:     # --exclusive=topo: the rest of its leaf groups is held too
            ask = Ask(jobs.rg[j], jobs.rc[j], jobs.rm[j], jobs.limit[j], jobs.nn[j])
            p, run = _hold_blocks(j, now, held_end, chosen[:jobs.nn[j]], ask, topo, nodes, free,
                                  p, run)
            free.tcount[:] = -1          # recounted when next asked
        nstarted += 1
    if rules.keep:      # the next pass starts from the running jobs
        ix = _undo_reservations(resv[1:], reserved - 1, rules, jobs, out, p, ix)
        if reserved > 0:
            quiet(p, memo_first)
            ix = _undo_reservations(resv, 1, rules, jobs, out, p, ix)
            quiet(p, False)
    return nstarted, p, run, ix


@leaf_kernel
def _last_to_walk(queue, qlen, rules, jobs, free, types, nodes):
    """The last queue position the pass looks at: the last job that could start
    now somewhere (running jobs only; later ones cannot change this pass's
    starts), or the end of the queue (``stop_at_head``, or ``full``); -1: skip the pass."""
    if rules.stop_at_head or rules.full:
        return qlen - 1
    for q in range(qlen - 1, -1, -1):
        if _fits_now_somewhere(queue[q], jobs, free, types, nodes):
            return q
    return -1


@leaf_kernel
def _job_mode(j, reserved, rules, jobs, free, types, nodes, lim, out):
    """:func:`_plan_mode`, or ``_SKIP`` when a limit holds job ``j``; its ``reason``
    set (the cap that holds it, or -1)."""
    held = _held(j, jobs, lim)
    out.reason[j] = held
    if held >= 0:
        return _SKIP
    return _plan_mode(j, reserved, rules, jobs, free, types, nodes)


@leaf_kernel
def _plan_mode(j, reserved, rules, jobs, free, types, nodes):
    """How the pass plans job ``j``: at any time, only now, not at all (beyond the
    reservation depth and cannot fit now) or not and stop (``stop_at_head`` and
    cannot fit now)."""
    maybe_now = _fits_now_somewhere(j, jobs, free, types, nodes)
    if rules.stop_at_head:
        return _ONLY_NOW if maybe_now else _STOP_WALK
    if reserved >= rules.depth:
        return _ONLY_NOW if maybe_now else _SKIP
    return _ANY_TIME


@njit(cache=True)
def _new_index(T, indexed):
    """An empty run index for a pass over T request types (no slot yet)."""
    return Index(tr_empty(1024), np.empty(1024, dtype=np.int64), new_meta(),
                 np.array([-1, 0, 1 if indexed else 0, 0], dtype=np.int64),
                 np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                 np.empty(0, dtype=np.int64), np.empty((8, 0), dtype=np.int64),
                 np.full(T, -1, dtype=np.int64), np.zeros(T, dtype=np.int64),
                 np.empty(_MAX_SLOTS, dtype=np.int64), np.empty(_MAX_SLOTS, dtype=np.int64),
                 np.empty(_MAX_SLOTS, dtype=np.int64), np.empty(_MAX_SLOTS, dtype=np.int64),
                 np.empty(0, dtype=np.int64))


@leaf_kernel
def _switches_in_force(j, now, jobs, topo):
    """Job ``j``'s --switches limit now: 0 once it waited ``leaf_wait`` (k@wait)."""
    ml = topo.max_leaves[j]
    if ml > 0 and topo.leaf_wait[j] >= 0 and now - jobs.eligible[j] >= topo.leaf_wait[j]:
        return 0
    return ml


@leaf_kernel
def _slot_due(ty, weight, rules, ix):
    """Count a plan of request type ``ty`` as ``weight`` (of ``_NOW_BY_GPUS_SHARE``
    for a full plan); True when it is due a run index slot (planned more than
    ``index_after`` times in the pass, slots left)."""
    if not ix.top[2] or ix.slot[ty] >= 0 or ix.top[1] >= _MAX_SLOTS:
        return False
    ix.qn[ty] += weight
    return ix.qn[ty] > rules.index_after * _NOW_BY_GPUS_SHARE


@njit(cache=True)
def _nodes_of(part, nodes):
    return nodes.pflat[nodes.poff[part]:nodes.poff[part + 1]]


@njit(cache=True)
def _plan_scan(e, j, now, only_now, now_here, ml, jobs, nodes, p, free, topo, trial):
    """Job ``j``'s earliest start in its partition choice ``e`` by scan, its nodes
    in ``trial`` (:func:`fastsched.engine.earliest._plan_job`)."""
    ask = Ask(jobs.rg[j], jobs.rc[j], jobs.rm[j], jobs.limit[j], jobs.nn[j])
    part = jobs.pc_part[e]
    return _plan_job(now, ask, only_now, not now_here, part, _nodes_of(part, nodes), nodes, p,
                     free, trial, topo, topo.unit[j], ml, topo.excl[j])


@njit(cache=True)
def _narrow_now(j, now, jobs, types, nodes, p, free, topo, trial, chosen, out):
    """A ``--nodes=MIN-MAX`` job (``low`` < ``nn``) that cannot start now on its MAX
    nodes starts now on as many as fit (at least MIN), in the first of its partitions
    where MIN do: slurmctld asks for MAX (``req_nodes``) and takes MIN or more
    (``eval_nodes``). Its nodes go to ``chosen``; it becomes a job of that many nodes
    whose runtime does the same node-seconds (rounded up; the malleable model of
    :mod:`fastsched.model.elastic`). Returns its nodes, or 0 (no start)."""
    low, nn = jobs.low[j], jobs.nn[j]
    for e in range(jobs.pc_off[j], jobs.pc_off[j + 1]):
        if _type_count(jobs.pc_type[e], free, types, nodes) < low:
            continue
        plist = _nodes_of(jobs.pc_part[e], nodes)
        cand = np.empty(plist.shape[0], dtype=np.int64)
        ask = Ask(jobs.rg[j], jobs.rc[j], jobs.rm[j], jobs.limit[j], low)
        nc = _fitting_now(now, ask, False, plist, nodes, p, cand)
        if nc < low:
            continue
        w = min(nc, nn)
        _choose_now(now, Ask(ask.g, ask.c, ask.m, ask.d, w), cand[:nc], nodes, p, trial, topo,
                    1, 0, False)
        chosen[:w] = trial[:w]
        out.part_used[j] = jobs.pc_part[e]
        jobs.runtime[j] = -(-jobs.runtime[j] * nn // w)
        jobs.nn[j] = w
        return w
    return 0


@njit(cache=True)
def _add_slot(ty, q, last, now, queue, jobs, types, nodes, p, plist, ix):
    """Request type ``ty`` gets the next slot of the pass's run index (the first
    slot also sets up the per-node tables and each type's shortest limit among
    ``queue[q:last + 1]``). Returns the index."""
    nix = ix.top[1]
    if ix.elig.shape[0] == 0 or ix.tmin.shape[0] == 0:   # (a kept index comes with both)
        ix = Index(ix.TR, ix.fr, ix.meta, ix.top, np.zeros(nodes.capG.shape[0], dtype=np.int64),
                   np.full(nodes.capG.shape[0], -1, dtype=np.int64), ix.ids, ix.ibuf, ix.slot,
                   ix.qn, ix.sg, ix.sc, ix.sm, ix.sth,
                   _min_limits(queue, q, last + 1, jobs.limit, jobs.pc_off, jobs.pc_type,
                               types.p.shape[0]) if ix.tmin.shape[0] == 0 else ix.tmin)
    ix.sg[nix] = types.g[ty]
    ix.sc[nix] = types.c[ty]
    ix.sm[nix] = types.m[ty]
    ix.sth[nix] = ix.tmin[ty]
    root, TR, fr = _ix_build(now, Ask(types.g[ty], types.c[ty], types.m[ty], 0, 0), ix.sth[nix],
                             plist, nodes, ix.TR, ix.fr, ix.meta, p, ix.last, ix.elig, ix.top[0])
    ix.top[0] = root
    ix.slot[ty] = nix
    ix.top[1] = nix + 1
    return Index(TR, fr, ix.meta, ix.top, ix.elig, ix.last, ix.ids, ix.ibuf, ix.slot, ix.qn,
                 ix.sg, ix.sc, ix.sm, ix.sth, ix.tmin)


@leaf_kernel
def _room_short(j, jobs, p, ix, chosen):
    """Do the holds of job ``j`` on ``chosen`` need more room than the profile or
    the run index has (a hold adds two breakpoints; two more are kept free)?"""
    nix = ix.top[1]
    room = 0                # run-index entries the holds may add, in all
    for i in range(jobs.nn[j]):
        x = chosen[i]
        if p.wlen[x] + 4 > p.wcap[x] or ix.ids.shape[0] < 2 * nix * (p.wlen[x] + 4):
            return True
        room += nix * (p.wlen[x] + 4)
    return nix > 0 and ix.meta[0] + room > ix.TR.shape[0]


@njit(cache=True)
def _make_room(j, jobs, p, ix, chosen):
    """The profile and run index with room for job ``j``'s holds on ``chosen``."""
    nix = ix.top[1]
    room = 0
    room1 = 0               # ... at one node
    for i in range(jobs.nn[j]):
        x = chosen[i]
        if p.wlen[x] + 4 > p.wcap[x]:
            p = _room(x, p, 4)
        room += nix * (p.wlen[x] + 4)
        room1 = max(room1, nix * (p.wlen[x] + 4))
    if nix > 0:
        ix = _index_room(ix, room, room1)
    return p, ix


@njit(cache=True)
def _index_room(ix, room, room1):
    """The index with room for ``room`` more entries, ``room1`` at one node."""
    ids, ibuf, TR, fr = ix.ids, ix.ibuf, ix.TR, ix.fr
    if ids.shape[0] < 2 * room1:
        ids = np.empty(4 * room1, dtype=np.int64)
        ibuf = np.empty((8, 4 * room1), dtype=np.int64)
    if ix.meta[0] + room > TR.shape[0]:
        TR, fr = tr_reserve(TR, fr, ix.meta, room)
    return Index(TR, fr, ix.meta, ix.top, ix.elig, ix.last, ids, ibuf, ix.slot, ix.qn, ix.sg,
                 ix.sc, ix.sm, ix.sth, ix.tmin)


@leaf_kernel
def _hold_nodes(ask, t, held_end, p, ix, chosen):
    """A job's holds of ``ask`` on ``chosen`` over [t, held_end), node by node (room
    made: :func:`_make_room`), and the run index's entries follow."""
    nn = ask.need
    nix = ix.top[1]
    _prefetch_node(chosen[0], p, ix.TR, ix.last)
    for i in range(nn):
        x = chosen[i]
        if i + 1 < nn:       # overlap the next node's first misses with this one
            _prefetch_node(chosen[i + 1], p, ix.TR, ix.last)
        # the hold (:func:`fastsched.engine.profile._hold`) split in two: the index reads
        # the segments it covers between the splits and the take
        ka = _split(x, t, p)
        kb = _split(x, held_end, p)
        touched = np.int64(0)
        if nix > 0:         # the slots whose runs this hold can change: before it...
            touched = ix_touched(x, ka, kb, nix, ix.sg, ix.sc, ix.sm, ix.elig, p.WG, p.WC,
                                 p.WM, p.wo)
        _take(x, ka, kb, ask.g, ask.c, ask.m, p)
        if touched != 0:    # ... and their entries updated after it
            ix.top[0] = ix_hold(ix.TR, ix.fr, ix.meta, ix.top[0], x, ka, kb, touched, nix, ix.sg,
                                ix.sc, ix.sm, ix.sth, p.WT, p.WG, p.WC, p.WM, p.wo, p.wlen,
                                ix.last, ix.ids, ix.ibuf)


@leaf_kernel
def _lowest_gpus(free_bits, want):
    """The ``want`` lowest free GPU bits of ``free_bits``."""
    taken = np.uint64(0)
    left = want
    b = 0
    while left > 0:
        bit = np.uint64(1) << np.uint64(b)
        if free_bits & bit:
            taken |= bit
            left -= 1
        b += 1
    return taken


@njit(cache=True)
def _start(j, now, held_end, jobs, types, nodes, free, run, lim, topo, out, chosen):
    """Start job ``j`` now on ``chosen`` (its plan already held in the profile):
    its outputs, GPUs, free-now state, limit usage and running lists. Returns the
    running lists (maybe widened)."""
    out.start[j] = now
    out.end[j] = now + min(jobs.runtime[j], jobs.limit[j])
    _charge(j, 1, jobs, lim)
    grouped = topo.gmasks.shape[0] > 0 and jobs.rg[j] > 0
    if grouped:         # GPUs by groups (that choice allocates: not in the leaf loop)
        for i in range(jobs.nn[j]):
            out.alloc_mask[jobs.offsets[j] + i] = choose_gpus_kernel(
                free.fmask[chosen[i]], jobs.rg[j], topo.gmasks)
    run = _running_room(run, chosen, jobs.nn[j])
    _take_nodes(j, held_end, grouped, jobs, types, nodes, free, run, out, chosen)
    return run


@leaf_kernel
def _take_nodes(j, held_end, grouped, jobs, types, nodes, free, run, out, chosen):
    """The per-node part of :func:`_start` (GPU bits: the lowest free, or
    ``alloc_mask`` as chosen by groups when ``grouped``; running lists with room)."""
    g, c, m = jobs.rg[j], jobs.rc[j], jobs.rm[j]
    for i in range(jobs.nn[j]):
        x = chosen[i]
        o = jobs.offsets[j] + i
        out.alloc_nodes[o] = x
        taken = out.alloc_mask[o] if grouped else _lowest_gpus(free.fmask[x], g)
        out.alloc_mask[o] = taken
        free.fmask[x] &= ~taken
        free.fg[x] -= g
        free.fc[x] -= c
        free.fm[x] -= m
        _tcount_update(x, free.fg[x] + g, free.fc[x] + c, free.fm[x] + m, free, types, nodes)
        _insert_running(x, held_end, g, c, m, j, run)


@njit(cache=True)
def _undo_reservations(resv, reserved, rules, jobs, out, p, ix):
    """Give back the holds of the pass's reservations ``resv[:reserved]`` (latest first);
    a kept index (``ix.top[3]``) follows. Returns the index."""
    kept_ix = ix.top[3] != 0
    for i in range(reserved - 1, -1, -1):
        j = resv[i]
        e = _on_grid(out.planned[j] + jobs.limit[j], rules.res)
        if kept_ix:
            ix_new_job(ix.meta)
        for o in range(jobs.offsets[j], jobs.offsets[j] + jobs.nn[j]):
            if kept_ix:
                ix = give_back_indexed(out.alloc_nodes[o], out.planned[j], e, jobs.rg[j],
                                       jobs.rc[j], jobs.rm[j], p, ix)
            else:
                _give_back(out.alloc_nodes[o], out.planned[j], e, jobs.rg[j], jobs.rc[j],
                           jobs.rm[j], p)
    return ix


@njit(cache=True)
def give_back_indexed(x, s, e, g, c, m, p, ix):
    """:func:`fastsched.engine.profile._give_back` with the run index's entries of node x
    brought up to date: the slots that fit a segment given back, once it is (a slot
    that fits none did not before either: its runs are as they were), are recomputed
    over the stretch (a give-back may join runs, which a hold never does; the window
    of :func:`ix_hold` holds every run that changes either way). Returns the index
    (maybe with room made)."""
    if e <= s:
        return ix
    nix = ix.top[1]
    if nix > 0 and ix.elig[x] != 0:
        need = nix * (p.wlen[x] + 4)
        if ix.ids.shape[0] < 2 * need or ix.meta[0] + need > ix.TR.shape[0]:
            ix = _index_room(ix, need, need)
    a = _split(x, s, p)
    b = _split(x, e, p)
    _add(x, a, b, g, c, m, p)
    U = np.int64(0)         # the slots fitting a segment given back (none before: none now)
    if nix > 0:
        U = ix_touched(x, a, b, nix, ix.sg, ix.sc, ix.sm, ix.elig, p.WG, p.WC, p.WM, p.wo)
    if U != 0:
        ix.top[0] = ix_hold(ix.TR, ix.fr, ix.meta, ix.top[0], x, a, b, U, nix, ix.sg, ix.sc,
                            ix.sm, ix.sth, p.WT, p.WG, p.WC, p.WM, p.wo, p.wlen, ix.last, ix.ids,
                            ix.ibuf)
    _merge_at(x, b, p)
    _merge_at(x, a, p)
    return ix
