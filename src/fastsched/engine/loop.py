"""The event loop (:func:`_run`, compiled, resumable) and its Python side
(:class:`_EventLoop`, :func:`run_nodes`): completions, arrivals and passes at
every instant, with dependencies, submit limits, queue reordering, progress,
stop/pause requests and checkpoints."""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
import numpy as np
from numba import njit

from ..model.cluster import Cluster
from ..model.constraints import AFTER, AFTERNOTOK, AFTEROK, Dependencies, LimitGroups, PartitionChoices
from ..model.errors import InputError, UnsupportedError
from ..model.events import NODE_EVENT_KINDS
from ..model.jobs import JobTable
from ..model.policies import get_policy
from ..model.reservations import check_jobs_held_off
from .availability import set_available
from .blocks import _exclusive, _release_blocks
from .heap import _heap_drop, _heap_pop, _heap_push
from .images import new_image_cache, start_pull
from .power import (booting, end_power, extend_holds, killed_start, new_power_state,
                    nodes_back, power_totals, start_power)
from .freenow import _tcount_update
from .driver import (EngineRun, Progress, drive, loop_deps, set_queue_rank, set_rows_rank,
                     submit_order)
from .inputs import (_check_policy, _grid, _permute_csr, _placement, _request_types,
                     check_node_jobs, ever_available, new_nodes, node_availability)
from .interrupt import DONE as _DONE, NOW as _NOW, PAUSE as _PAUSE, REQUEST as _REQUEST
from .interrupt import STOP as _STOP
from .interrupt import call as _call, new_control
from .leafkernel import leaf_kernel
from .limits import NCAPS, _charge, _count_submitted, _submit_held
from .passes import _pass
from .preemptplan import no_preempting
from .profile import (_advance, _advance_nodes, _give_back, _on_grid, block_windows,
                      new_profile, profile_of)
from .elastic import Shrinks, check_regrow
from .entry import Entries
from .requeue import Requeues
from .running import _take_running
from .wholenode import _end_whole, _whole_pass, whole_node_run
from .state import (Deps, Events, Jobs, Limits, Profile, Rules, Running, Topology,
                    as_i64, new_free, new_outputs, new_request_types, new_scratch)

_INF = np.int64(1) << np.int64(62)
#: a request type gets a run index after this many plans in one pass of the
#: event loop (< 0: never); its passes are many and mostly short. Read at each
#: call, so tests can force either path.
_INDEX_AFTER = 16
#: whole-node runs take :func:`fastsched.engine.wholenode._whole_pass` (tests turn it
#: off to compare it with the general pass)
WHOLE_NODE_PASS = True


@leaf_kernel
def _enqueue(j, queue, qlen, rank):
    """Insert job ``j`` into ``queue[:qlen]`` (kept sorted by ``rank``); returns the new length."""
    lo = 0
    hi = qlen
    while lo < hi:
        mid = (lo + hi) // 2
        if rank[queue[mid]] <= rank[j]:
            lo = mid + 1
        else:
            hi = mid
    for q in range(qlen, lo, -1):
        queue[q] = queue[q - 1]
    queue[lo] = j
    return qlen + 1


@leaf_kernel
def _release(j, started, ok, now, deps, ev, eligible, qlen):
    """Job ``j`` started (``started``) or ended (``ok``: COMPLETED): count down its
    dependents' unsatisfied dependencies and queue those now free to run (an edge
    of kind < 0 is spent: an ``after`` edge of a requeued job, satisfied at its
    first start). Returns the new queue length."""
    for e in range(deps.ch_off[j], deps.ch_off[j + 1]):
        c = deps.ch_job[e]
        k = deps.ch_kind[e]
        if k < 0:
            continue
        if started:
            if k != AFTER:
                continue
        elif k == AFTER:
            continue
        elif (k == AFTEROK and not ok) or (k == AFTERNOTOK and ok):
            deps.never[c] = True
            continue
        deps.pend[c] -= 1
        if deps.pend[c] == 0 and deps.arrived[c] and not deps.never[c]:
            eligible[c] = now
            qlen = _enqueue(c, ev.queue, qlen, ev.rank)
    return qlen


@njit(cache=True)
def _complete(j, now, rules, jobs, types, nodes, free, p, run, lim, topo, out):
    """Job ``j`` ends at ``now``: its nodes, GPUs, held profile, running entries,
    leaf groups (--exclusive=topo) and limit usage come back (a whole-node run
    keeps only idle bits: :mod:`fastsched.engine.wholenode`)."""
    _charge(j, -1, jobs, lim)
    _count_submitted(j, -1, lim)
    if rules.whole:
        _end_whole(j, jobs, free, out)
        return
    g, c, m = jobs.rg[j], jobs.rc[j], jobs.rm[j]
    held_end = _on_grid(out.start[j] + jobs.limit[j], rules.res)
    for q in range(jobs.offsets[j], jobs.offsets[j] + jobs.nn[j]):
        x = out.alloc_nodes[q]
        free.fmask[x] |= out.alloc_mask[q]
        free.fg[x] += g
        free.fc[x] += c
        free.fm[x] += m
        _tcount_update(x, free.fg[x] - g, free.fc[x] - c, free.fm[x] - m, free, types, nodes)
        _advance(x, now, p)
        _give_back(x, now, held_end, g, c, m, p)
        _take_running(x, j, run)
    if topo.excl[j]:
        _release_blocks(j, now, out.alloc_nodes[jobs.offsets[j]:jobs.offsets[j] + jobs.nn[j]],
                        topo, free, p, run)
        free.tcount[:] = -1      # recounted when next asked


@leaf_kernel
def _arrive(j, now, qlen, ev, deps, jobs, lim, out):
    """Job ``j`` is submitted at ``now``: rejected over a submit cap, else counted
    and queued when its dependencies are satisfied. Returns the queue length."""
    held = _submit_held(j, lim)
    if held >= 0:
        out.reason[j] = held
        return qlen
    _count_submitted(j, 1, lim)
    deps.arrived[j] = True
    if deps.pend[j] == 0 and not deps.never[j]:
        jobs.eligible[j] = now
        qlen = _enqueue(j, ev.queue, qlen, ev.rank)
    return qlen


@leaf_kernel
def _after_pass(now, qlen, nev, ev, deps, jobs, out, im, pw):
    """Move the jobs a pass started from the queue to the completion heap (each
    start's boots then image pull first, in start order:
    :func:`fastsched.engine.power.start_power`, :func:`fastsched.engine.images.start_pull`),
    then release their dependents. Returns (queue length, events, whether any
    dependent was queued)."""
    queue = ev.queue
    w = 0
    k = 0
    for q in range(qlen):
        j = queue[q]
        if out.start[j] < 0:
            queue[w] = j
            w += 1
        else:
            start_power(j, now, jobs, out, pw)
            start_pull(j, jobs, out, im)
            nev = _heap_push(ev.evk, ev.evj, nev, out.end[j], j)
            ev.newly[k] = j
            k += 1
    qlen = w
    released = False
    for i in range(k):
        before = qlen
        qlen = _release(ev.newly[i], True, True, now, deps, ev, jobs.eligible, qlen)
        released = released or qlen > before
    return qlen, nev, released


@njit(cache=True, nogil=True)
def _run(t_stop, sc, rules, ev, deps, jobs, types, nodes, free, p, run, lim, topo, out,
         scratch, ctl, im, pw, pre):
    """The event loop, resumable: runs every instant <= ``t_stop`` and returns.

    Jobs are indexed in submit order. Scalars live in ``sc`` = [next arrival,
    queue length, events, pass id, passes, wake-up time (an instant to visit for
    an external event; _INF: none)]; the profile and running lists, which
    may get bigger arrays, are returned. At an instant: completions (freeing
    resources, limits and dependents), then arrivals (rejected over a
    max_submit cap; queued when their dependencies are satisfied), then a pass,
    repeated while zero-length jobs end at the instant or starts released
    dependents. The work profile and the free-now counts per type are kept
    across instants (see :func:`fastsched.engine.passes._pass`).
    ``ctl`` (:mod:`fastsched.engine.interrupt`): a stop request returns before the
    next instant and cuts a pass short; a pause request returns before the next
    instant once this call has run one (so that pausing always makes progress),
    and the loop can go on from there as if it never stopped. The loop writes
    the time and the jobs finished into it for progress bars. ``im``: the nodes'
    image caches (:mod:`fastsched.engine.images`); a job that pulled ended OK when
    its pull plus runtime fit its limit. ``pw``: power saving
    (:mod:`fastsched.engine.power`; off: its hooks do nothing). ``pre``: planning
    with preemptable capacity (:mod:`fastsched.engine.preemptplan`).
    """
    n = ev.submit.shape[0]
    evk, evj = ev.evk, ev.evj
    a, qlen, nev, pass_id, passes, wake = sc[0], sc[1], sc[2], sc[3], sc[4], sc[5]
    moved = False
    while a < n or nev > 0 or wake < _INF:
        now = wake
        if a < n and ev.submit[a] < now:
            now = ev.submit[a]
        if nev > 0 and evk[0] < now:
            now = evk[0]
        if now > t_stop or ctl[_REQUEST] == _STOP or (moved and ctl[_REQUEST] == _PAUSE):
            break
        moved = True
        ctl[_NOW] = now
        if now == wake:
            wake = _INF
        while True:
            while nev > 0 and evk[0] == now:
                j = evj[0]
                nev = _heap_pop(evk, evj, nev)
                ctl[_DONE] += 1
                _complete(j, now, rules, jobs, types, nodes, free, p, run, lim, topo, out)
                end_power(j, now, jobs, out, pw)
                qlen = _release(j, False, jobs.runtime[j] + im.pull[j] <= jobs.limit[j], now,
                                deps, ev, jobs.eligible, qlen)
            while a < n and ev.submit[a] == now:
                qlen = _arrive(a, now, qlen, ev, deps, jobs, lim, out)
                a += 1
            if qlen == 0:
                break
            pass_id += 1
            if rules.whole:
                nstarted, p, run = _whole_pass(now, ev.queue, qlen, rules, jobs, types, nodes,
                                               free, p, run, lim, topo, out, scratch, ctl, evj,
                                               nev)
            else:
                nstarted, p, run = _pass(now, ev.queue, qlen, rules, jobs, types, nodes, free,
                                         p, run, lim, topo, out, scratch, ctl, pre)
            if nstarted < 0:
                break
            passes += 1
            released = False
            if nstarted > 0:
                qlen, nev, released = _after_pass(now, qlen, nev, ev, deps, jobs, out, im,
                                                  pw)
                if pw.cnt[2] > 0:
                    p, run = extend_holds(now, rules.res, jobs, out, p, run, pw)
            # zero-length jobs end now, or starts released dependents: pass again
            if not released and (nev == 0 or evk[0] != now):
                break
    sc[0], sc[1], sc[2], sc[3], sc[4], sc[5] = a, qlen, nev, pass_id, passes, wake
    return p, run


class _EventLoop:
    """The compiled event loop's state between calls: lets a caller stop the
    clock (``run(t_stop)``), change the queue order (``set_rank``) and go on.
    Everything is indexed in submit order (``self.order`` maps to the caller's).
    ``node_events=False`` promises that :meth:`apply_node_event` will not be called:
    a whole-node run then keeps idle bits instead of profiles and running lists
    (:mod:`fastsched.engine.wholenode`)."""

    def __init__(self, cluster, jobs, policy, reserve_depth, available, partitions,
                 dependencies, limits, resolution=1, window=None, placement=None,
                 lifecycle=None, blocked=None, images=None, node_events=True, power=None,
                 preemption=None, time_min=None):
        n = len(jobs)
        self.n = n
        res, window = _grid(resolution, window)
        avail = node_availability(cluster, available)
        self.cluster, self.avail = cluster, avail.copy()
        self.nodes = new_nodes(cluster, avail)
        order, inverse = submit_order(jobs)
        self.order, self.inverse = order, inverse
        self.submit = as_i64(np.asarray(jobs.submit_time)[order])
        self.jobs, self.types = _loop_jobs(jobs, partitions, order, self.nodes)
        stop_at_head, depth = get_policy(policy).kernel_rules(reserve_depth)
        self.rules = Rules(stop_at_head, np.int64(depth), False, res, window,
                           np.int64(_INDEX_AFTER), True, False)
        self.deps = loop_deps(dependencies, inverse, n)
        jg_off, jg = _permute_csr(limits.offsets, limits.group, order)
        caps = as_i64(limits.caps).reshape(-1, NCAPS)
        self.lim = Limits(jg_off, as_i64(jg), caps, np.zeros((len(caps), NCAPS), dtype=np.int64))
        pl = _placement(placement, cluster, n)
        self.topo = Topology(pl.levels, pl.unit[order], pl.max_leaves[order],
                             pl.leaf_wait[order], pl.gpu_groups, *_exclusive(pl, avail, order))
        self.member = None          # every partition's nodes: built at the first node event
        self.entries = Entries()    # (the kernels called per event or run: no dispatch)
        self.topo_excl = bool(self.topo.excl.any())     # (asked at every node event)
        lc = lifecycle
        self.requeues = Requeues(n) if lc is None else Requeues(
            n, np.asarray(lc.requeue)[order], np.asarray(lc.checkpoint_interval)[order],
            lc.delay)
        self.elastic = None if lc is None or not (lc.elastic or lc.ranged) else Shrinks(
            np.zeros(n, dtype=bool) if lc.no_kill is None else np.asarray(lc.no_kill)[order],
            lc.min_nodes(jobs.num_nodes)[order], self.jobs.nn, self.jobs.runtime, lc.regrow)
        if lc is not None and lc.ranged:
            self.jobs = self.jobs._replace(low=as_i64(lc.start_nodes(jobs.num_nodes)[order]))
            _check_ranges(self.topo)
        #: the limits jobs asked for (``--time-min`` starts cut ``jobs.limit`` in place)
        self.asked = None
        if time_min is not None and (np.asarray(time_min) > 0).any():
            _check_time_min(self.topo)
            self.asked = self.jobs.limit.copy()
            self.jobs = self.jobs._replace(tmin=as_i64(np.asarray(time_min)[order]))
        check_regrow(lc, limits, images, self.topo, preemption is not None)
        self._allocate(cluster.num_nodes)
        nd = self.nodes
        if blocked is not None and len(blocked[0]):
            check_jobs_held_off(jobs)
        self.p = block_windows(self.p, blocked, nd.capG, nd.capC, nd.capM)
        # (built by the caller's factory: the preemption rules are no kernel source)
        self.preemptor = None if preemption is None else \
            preemption(order, self.jobs.pc_off, self.jobs.pc_part)
        if WHOLE_NODE_PASS and not node_events and power is None and self.preemptor is None \
                and (lc is None or not lc.ranged) and self.asked is None \
                and whole_node_run(
                nd, self.types, self.jobs, self.topo, stop_at_head, depth,
                blocked is not None and len(blocked[0]) > 0):
            self.rules = self.rules._replace(whole=True)
            self.free.tcount[0] = cluster.num_nodes       # every node idle
        self.window_edges = _window_edges(blocked)
        self.next_edge = 0
        self.with_images = images is not None
        self.images = new_image_cache(n, cluster.num_nodes) if images is None else \
            new_image_cache(n, cluster.num_nodes, np.asarray(images[0])[order], images[1],
                            images[2], images[3] if len(images) > 3 else None)
        self.with_power = power is not None
        self.power = new_power_state(n, cluster.num_nodes, power)
        self.planning = no_preempting() if self.preemptor is None else \
            self.preemptor.planning(self.power.configure)

    def _allocate(self, X):
        n = self.n
        self.out = new_outputs(n, int(self.jobs.offsets[-1]))
        nodes = self.nodes
        g = nodes.capG.astype(np.uint64)
        fmask = np.where(g >= 64, np.uint64(0xFFFFFFFFFFFFFFFF),
                         (np.uint64(1) << g) - np.uint64(1)).astype(np.uint64)
        self.free = new_free(nodes.capG.copy(), nodes.capC.copy(), nodes.capM.copy(), fmask,
                             len(self.types.p), int(nodes.capG.max(initial=0)), nodes)
        # the kept work profile: every node wholly free (one segment, from time 0)
        p = new_profile(np.full(X, 8, dtype=np.int64))
        p.WG[p.wo], p.WC[p.wo], p.WM[p.wo] = nodes.capG, nodes.capC, nodes.capM
        p.wlen[:] = 1
        self.p = p
        R = 4
        self.run_lists = Running(*(np.empty((X, R), dtype=np.int64) for _ in range(5)),
                                 np.zeros(X, dtype=np.int64))
        self.ev = Events(self.submit, np.arange(n, dtype=np.int64),
                         *(np.empty(n + 1, dtype=np.int64) for _ in range(4)))
        self.scratch = new_scratch(self.jobs.nn, X)
        self.sc = np.zeros(6, dtype=np.int64)
        self.sc[5] = _INF
        self.control = new_control()

    @property
    def done(self) -> bool:
        return (self.sc[0] >= self.n and self.sc[2] == 0 and self.sc[5] >= _INF
                and self.requeues.next_time() < 0 and self.preempt_time() < 0)

    @property
    def queued(self) -> int:
        return int(self.sc[1])

    def next_time(self) -> int:
        """The next instant the loop will process (-1: none)."""
        a, nev = self.sc[0], self.sc[2]
        t = [int(self.ev.submit[a])] if a < self.n else []
        t += [int(self.ev.evk[0])] if nev > 0 else []
        t += [int(self.sc[5])] if self.sc[5] < _INF else []
        return min(t) if t else -1

    def apply_node_event(self, t: int, kind: str, nodes) -> None:
        """The entry point of external events, applied before the instant ``t`` (which
        the loop then visits, passing if jobs wait): ``drain`` takes ``nodes`` out of
        every partition (no new start or reservation there; running jobs go on),
        ``down`` does too and kills the jobs running there (those not ending at
        ``t``; :mod:`fastsched.engine.requeue`), ``resume`` and ``up`` put them back
        (:mod:`fastsched.model.events`; shrunk jobs may take them: ``regrow``)."""
        if kind not in NODE_EVENT_KINDS:
            raise UnsupportedError(f"node event {kind!r} is not modelled")
        if self.topo_excl:           # leaf groups held whole are released by their node lists
            raise UnsupportedError("node events with --exclusive=topo jobs are not "
                                   "modelled yet")
        if self.rules.whole:
            raise UnsupportedError("this event loop was built without node events")
        nodes = np.asarray(nodes, dtype=np.int64)
        if kind == "down" or kind == "drain" and self.with_power:
            killed = self._jobs_on(int(t), nodes if kind == "down" else
                                   booting(self.power, int(t), nodes))
            if self.elastic is not None:       # --no-kill jobs shrink instead
                killed = self.elastic.shrink(self, int(t), killed, nodes, _complete)
            self._kill(int(t), killed)
        back = nodes[~self.avail[nodes]] if kind in ("resume", "up") else nodes[:0]
        if len(back) > 1:
            back = np.unique(back)
        nodes_back(self.power, int(t), back)
        self._set_available(nodes, kind in ("resume", "up"))
        if len(back) and self.elastic is not None:
            self.elastic.grow(self, int(t), back)
        self.sc[5] = min(int(self.sc[5]), int(t))

    def _set_available(self, nodes, value: bool) -> None:
        """Make ``nodes`` (un)available (:mod:`fastsched.engine.availability`)."""
        changed = nodes[self.avail[nodes] != value]
        if len(changed) > 1:        # (a failure's event is one node: nothing to sort)
            changed = np.unique(changed)
        if not len(changed):
            return
        self.avail[changed] = value
        if self.member is None:
            self.member = _membership(self.cluster)
        poff, pflat = self.entries(set_available, changed, value, *self.member, self.nodes,
                                   self.types, self.free)
        self.nodes = self.nodes._replace(poff=poff, pflat=pflat)

    def _jobs_on(self, t: int, nodes) -> np.ndarray:
        """The jobs running on ``nodes`` that end after ``t`` (submit order, ascending)."""
        run = self.run_lists
        if len(nodes) == 1:         # (a failure's event)
            held = run.RJ[nodes[0], :run.rlen[nodes[0]]]
        else:
            held = run.RJ[nodes][np.arange(run.RJ.shape[1])[None, :] < run.rlen[nodes][:, None]]
        held = np.unique(held[held >= 0])
        return held[self.out.end[held] > t]

    def _kill(self, t: int, killed: np.ndarray, requeue=None) -> None:
        """End the jobs ``killed`` at ``t``: their resources come back now; each is
        requeued (a new attempt waits for its begin time) or ends NODE_FAIL.
        ``requeue`` (bool per job): they were preempted, and whether their mode
        requeues them (else they end PREEMPTED)."""
        if not len(killed):
            return
        preempted = requeue is not None
        if self.preemptor is not None:      # no longer a victim in its grace time
            self.preemptor.release(self, killed)
        requeue = np.ones(len(killed), dtype=bool) if requeue is None else requeue
        if self.elastic is not None:        # a resized attempt keeps node-seconds
            self.elastic.before_kill(self, t, killed)
        ev, out, jobs, deps = self.ev, self.out, self.jobs, self.deps
        gone = np.sort(killed).astype(np.int64)     # their completions leave the heap
        self.sc[2] = _heap_drop(ev.evk, ev.evj, np.int64(self.sc[2]), gone)
        now = np.int64(t)
        for j, rq in zip(killed.tolist(), requeue.tolist()):
            lo, hi = jobs.offsets[j], jobs.offsets[j] + jobs.nn[j]
            start, configure = killed_start(self.power, j, t, int(out.start[j]))
            left = self.requeues.kill(j, t, start, int(out.part_used[j]),
                                      out.alloc_nodes[lo:hi], out.alloc_mask[lo:hi],
                                      int(jobs.runtime[j]), int(self.images.pull[j]),
                                      preempted, rq, int(jobs.limit[j]), configure)
            jj = np.int64(j)
            self.entries(_complete, jj, now, self.rules, jobs, self.types, self.nodes,
                         self.free, self.p, self.run_lists, self.lim, self.topo, out)
            self.entries(end_power, jj, now, jobs, out, self.power)
            if left < 0:        # NODE_FAIL: its dependents see it end, not ok
                out.end[j] = t
                self.sc[1] = self.entries(_release, jj, False, False, now, deps, ev,
                                          jobs.eligible, np.int64(self.sc[1]))
                continue
            _count_submitted(jj, np.int64(1), self.lim)      # still in the system, pending
            jobs.runtime[j] = left
            if self.asked is not None:      # planned again with its own limit (--time-min)
                jobs.limit[j] = self.asked[j]
            for a in (out.start, out.end, out.planned, out.part_used):
                a[j] = -1
            edges = slice(deps.ch_off[j], deps.ch_off[j + 1])
            if edges.stop > edges.start:
                deps.ch_kind[edges] = np.where(deps.ch_kind[edges] == AFTER, -1,
                                               deps.ch_kind[edges])
        if self.elastic is not None:        # a requeued attempt asks for all its nodes
            self.elastic.killed(self, killed)

    def preempt_time(self) -> int:
        """When the next preempted job's grace time ends, or a running job stops being
        exempt for a queued job that could not preempt (-1: none)."""
        return -1 if self.preemptor is None else self.preemptor.next_time()

    def preempt_due(self, t: int) -> None:
        """Stop the preempted jobs whose grace time ends at ``t`` (before the instant
        ``t``, which the loop then visits, as it does a running job's exemption end)."""
        victims = self.preemptor.due(t, self.requeues.restarts)
        self._stop(t, victims[self.out.end[victims] > t])
        self.sc[5] = min(int(self.sc[5]), int(t))

    def preempt_pass(self, t: int) -> bool:
        """After the passes of instant ``t``: the first queued job that can start by
        preempting stops its victims (:mod:`fastsched.engine.preempt`); when some stop
        now the loop will visit ``t`` again. Returns whether a job preempted."""
        if self.preemptor is None or self.queued == 0:
            return False
        chosen = self.preemptor.step(self, t)
        if chosen is None:
            return False
        now = self.preemptor.preempt(self, chosen[0], chosen[1], t)
        if len(now):
            self._stop(t, now)
            self.sc[5] = min(int(self.sc[5]), int(t))
        return True

    def _stop(self, t: int, victims) -> None:
        """Preempted ``victims`` stop at ``t``: requeued or PREEMPTED by their mode."""
        if len(victims):
            self._kill(t, victims, self.preemptor.requeued(victims,
                                                            self.out.part_used[victims]))
            self.preemptor.ended(victims)

    def window_time(self) -> int:
        """When the next advance reservation window opens or closes (-1: none left)."""
        t, _, _ = self.window_edges
        return int(t[self.next_edge]) if self.next_edge < len(t) else -1

    def window_due(self, t: int) -> None:
        """The windows opening or closing at ``t`` (before the instant ``t``): their nodes'
        profiles drop the breakpoints up to ``t`` (the kept profile's rule: only the
        first is at or before now), and a closing one makes the loop visit ``t``."""
        times, nodes, closes = self.window_edges
        k = self.next_edge
        k2 = int(np.searchsorted(times, t, side="right"))
        _advance_nodes(nodes[k:k2], np.int64(t), self.p)
        if closes[k:k2].any():
            self.sc[5] = min(int(self.sc[5]), int(t))
        self.next_edge = k2

    def requeue_time(self) -> int:
        """When the next requeued attempt becomes eligible (-1: none waits)."""
        return self.requeues.next_time()

    def requeue_coming(self, t: int) -> np.ndarray:
        """The requeued attempts :meth:`requeue_due` will queue at ``t`` (ascending)."""
        return self.requeues.coming(t)

    def requeue_due(self, t: int) -> None:
        """Queue the requeued attempts whose begin time is ``t`` (before the instant
        ``t``, which the loop then visits); they became eligible then."""
        q, rank = self.ev.queue, self.ev.rank
        for j in self.requeues.due(t):
            self.jobs.eligible[j] = t
            qlen = int(self.sc[1])
            at = int(np.searchsorted(rank[q[:qlen]], rank[j], side="right"))
            q[at + 1:qlen + 1] = q[at:qlen].copy()
            q[at] = j
            self.sc[1] = qlen + 1
        self.sc[5] = min(int(self.sc[5]), int(t))

    def set_rank(self, rank) -> None:
        """New queue order (``rank`` in the caller's job order, lower first, unique)."""
        set_queue_rank(self.ev.rank, self.ev.queue, self.sc[1], np.asarray(rank)[self.order])

    def set_rows_rank(self, rows, key, base: int) -> None:
        """New queue order of the jobs ``rows`` (submit order; :func:`set_rows_rank`)."""
        set_rows_rank(self.ev.rank, self.ev.queue, int(self.sc[1]), rows, key, base)

    def queued_jobs(self) -> np.ndarray:
        return self.ev.queue[:self.sc[1]]

    def requeue_waiting(self) -> np.ndarray:
        return np.array([j for _, j in self.requeues.waiting], dtype=np.int64)

    def end_times(self) -> np.ndarray:
        return self.out.end

    def start_times(self) -> np.ndarray:
        return self.out.start

    def progress(self) -> Progress:
        return Progress.over(self.out.start, self.out.end, self.jobs.eligible, self.inverse)

    def run(self, t_stop: int = int(_INF), tick=None) -> None:
        """Every instant up to ``t_stop``; ``tick(control)`` now and then while it
        runs (:mod:`fastsched.engine.interrupt`). Raises Interrupted on Ctrl-C: the
        loop is then cut mid-pass and cannot go on."""
        control = self.control
        self.rules = self.rules._replace(index_after=np.int64(_INDEX_AFTER))
        args = (np.int64(t_stop), self.sc, self.rules, self.ev, self.deps, self.jobs,
                self.types, self.nodes, self.free, self.p, self.run_lists, self.lim, self.topo,
                self.out, self.scratch, control, self.images, self.power, self.planning)
        self.p, self.run_lists = _call(
            self.entries.entry(_run, args), *args, control=control,
            tick=None if tick is None else (lambda: tick(control)))

    def profile(self, x: int):
        """Node x's kept work profile: (breakpoints, free GPUs, CPUs, MB) views."""
        if self.rules.whole:
            raise UnsupportedError("a whole-node run keeps no work profiles")
        return profile_of(self.p, x)

    def result(self) -> EngineRun:
        inv = self.inverse
        offsets, alloc, masks = self.jobs.offsets, self.out.alloc_nodes, self.out.alloc_mask
        if self.elastic is not None:        # a shrunk job holds fewer nodes than its slot
            offsets, alloc, masks = Shrinks.trimmed(offsets, self.jobs.nn, alloc, masks)
        # allocations are stored in submit order; the caller's order is a row permutation
        src_off, nodes = _permute_csr(offsets, alloc, inv)
        _, mask = _permute_csr(offsets, masks, inv)
        return EngineRun(start=self.out.start[inv], end=self.out.end[inv], alloc_offsets=src_off,
                       alloc_nodes=nodes, alloc_gpu_mask=mask,
                       partition=self.out.part_used[inv].astype(np.int32),
                       reason=self.out.reason[inv], never=self.deps.never[inv],
                       eligible=self.jobs.eligible[inv], passes=int(self.sc[4]),
                       attempts=self.requeues.attempts(self.order, inv, self.jobs.runtime),
                       pull=self.images.pull[inv] if self.with_images else None,
                       images_pulled=int(self.images.count[1]),
                       configure=self.power.configure[inv] if self.with_power else None,
                       power=self._power_result() if self.with_power else None,
                       resizes=None if self.elastic is None or not self.elastic.no_kill.any()
                       else self.elastic.records(self.order, inv),
                       # (a victim's hold cut to its grace end is not its limit)
                       time_limit=None if self.asked is None else self.jobs.limit[inv]
                       if self.preemptor is None else self.preemptor.ran_limits(
                           self.jobs.limit)[inv])

    def _power_result(self) -> dict:
        """Per node its seconds powered and with a job up to the run's last end, and the
        power-ups (:func:`fastsched.engine.power.power_totals`)."""
        horizon = int(max(self.out.end.max(initial=0), 0))
        on, busy = power_totals(self.power, horizon)
        return {"on_seconds": on, "busy_seconds": busy, "power_ups": int(self.power.cnt[1]),
                "horizon": horizon}


def _window_edges(blocked):
    """(time, node, closes) of every opening and closing of the ``blocked`` windows, by
    time: the instants their nodes' kept profiles must be advanced to."""
    if blocked is None or not len(blocked[0]):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=bool)
    start, end, node = (np.asarray(a, dtype=np.int64) for a in blocked)
    times = np.concatenate([start, end])
    nodes = np.concatenate([node, node])
    closes = np.concatenate([np.zeros(len(start), dtype=bool), np.ones(len(end), dtype=bool)])
    order = np.argsort(times, kind="stable")
    return times[order], nodes[order], closes[order]


def _membership(cluster: Cluster):
    """Every partition's nodes, available or not: a node x partition bool matrix, and
    per node its partitions' bits (empty beyond 64 partitions)."""
    every = new_nodes(cluster, np.ones(cluster.num_nodes, dtype=np.bool_))
    part = np.repeat(np.arange(len(every.poff) - 1), np.diff(every.poff))
    member = np.zeros((cluster.num_nodes, len(every.poff) - 1), dtype=np.bool_)
    member[every.pflat, part] = True
    return member, every.pbits


def _check_ranges(topo) -> None:
    """Node ranges start on fewer nodes by best fit alone: refused with topology
    placement (a --segment or --switches shape of MIN..MAX nodes)."""
    if topo.levels.shape[0] > 0 or topo.excl.any():
        raise UnsupportedError("jobs with a node range (nodes_min) and topology placement "
                               "are not modelled yet")


def _check_time_min(topo) -> None:
    """``--time-min`` starts cut a job's limit at a pass (:mod:`.timemin`; a killed
    attempt is requeued with its own limit again); refused where its start is shaped
    otherwise: by topology placement. With preemption a pass tries a cut start on the
    free resources before planning over preemptable jobs (:mod:`.timemin`). Boots
    (power saving) and image pulls come after the cut, as in Slurm: the cut limit
    counts from the nodes' ready time (job_mgr.c ``job_config_fini``), a pull runs
    inside the job."""
    if topo.levels.shape[0] > 0 or topo.excl.any():
        raise UnsupportedError("jobs with --time-min (time_min) and topology placement "
                               "are not modelled yet")


def _loop_jobs(jobs: JobTable, partitions: PartitionChoices, order, nodes):
    """The event loop's :class:`Jobs` (in submit ``order``) and request types."""
    def q(a):
        return as_i64(np.asarray(a)[order])
    pc_off, pc_part = _permute_csr(partitions.offsets, partitions.partition, order)
    pc_part = pc_part.astype(np.int64)
    types, pc_type = _request_types(jobs, pc_part, np.repeat(order, np.diff(pc_off)))
    nn = q(jobs.num_nodes)
    offsets = np.zeros(len(nn) + 1, dtype=np.int64)
    np.cumsum(nn, out=offsets[1:])
    out = Jobs(q(jobs.time_limit), q(jobs.runtime), nn, q(jobs.gpus_per_node),
               q(jobs.cpus_per_node), q(jobs.mem_per_node), pc_off, pc_part, pc_type, offsets,
               np.full(len(nn), -1, dtype=np.int64), nn.copy(),
               np.zeros(len(nn), dtype=np.int64))
    return out, new_request_types(types, nodes)


def run_nodes(cluster: Cluster, jobs: JobTable, policy: str, reserve_depth: int = 1,
              available=None, *, partitions: PartitionChoices | None = None,
              dependencies: Dependencies | None = None, limits: LimitGroups | None = None,
              rank=None, reorder=None, period: int | None = None, resolution: int = 1,
              window: int | None = None, placement=None, tick=None, checkpoints=None,
              resume=None, events=None, lifecycle=None, blocked=None, images=None,
              power=None, checked: bool = False, preemption=None,
              time_min=None) -> EngineRun:
    """Simulate ``jobs`` on ``cluster`` node by node (GPU-granular), with constraints.

    ``partitions``/``dependencies``/``limits``: see :mod:`fastsched.constraints`
    (default: the ``partition`` column, none, none). Queue order: ``rank``
    (per job, lower first; ties by submit time, then job id; default submit
    time then job id). ``reorder(b, progress) -> rank`` recomputes it at the
    start ``b`` of every ``period``-second window of simulated time that has an
    event, for the events in that window (priorities recomputed every
    PriorityCalcPeriod); ``progress`` is a :class:`Progress` (start, end and
    eligible times so far, in the caller's order, -1 where not yet).

    ``resolution`` (s, Slurm's bf_resolution): every hold ends at its end
    rounded up to a multiple of ``resolution`` (an absolute grid: fewer
    distinct times, coarser plans; 1 = exact). ``window`` (s, bf_window): a job whose
    earliest start is more than ``window`` after now gets no reservation
    (and uses none of EASY's); None = no limit. ``placement``: topology-aware
    node choice and GPU groups (:class:`fastsched.constraints.Placement`).
    ``tick(control)``: called now and then while the compiled loop runs (progress
    bars: :mod:`fastsched.engine.interrupt`). Ctrl-C raises
    :class:`fastsched.engine.interrupt.Interrupted`. ``checkpoints``
    (:class:`fastsched.checkpoint.Checkpoints`): the loop pauses at an instant
    boundary whenever one is due and saves ``{"loop", "reorder", "last"}``;
    ``resume`` (such a state) goes on from it instead of from the start, with
    the state's ``reorder`` (the inputs must be those of the saved run).
    ``events`` (:class:`fastsched.model.events.NodeEvents`): nodes drained,
    resumed, failed (their jobs killed) and back up during the run, applied before
    the instant at their time (:meth:`_EventLoop.apply_node_event`).
    ``lifecycle``: what a killed job does (``requeue``, ``checkpoint_interval`` per
    job in the caller's order and the requeue ``delay``, as
    :class:`fastsched.model.lifecycle.Lifecycle` has them; None: every job is
    requeued after Slurm's delay, without checkpoints); the run's ``attempts``
    (:class:`fastsched.engine.requeue.Attempts`) log the killed attempts. ``blocked``:
    ``(start, end, node)`` arrays of windows over which a node is held whole (advance
    reservations: :meth:`fastsched.model.reservations.Reservations.windows`); no job
    starts there if it would still run when one opens, and none is planned across one.
    ``images``: ``(image id per job in the caller's order (-1: none), pull seconds per
    image id, images a node caches[, per node the node whose cache it shares])``: a
    start on nodes lacking its image runs the pull first
    (:mod:`fastsched.engine.images`); the run's ``pull`` has each job's
    last attempt's pull, ``images_pulled`` the pulls node by node. ``power``: power
    saving, ``(SuspendTime or -1, SuspendTimeout, boot seconds (one, or one per node),
    ms between power-ups, cloud bool per node, excluded bool per node[, ms between
    power-downs])``
    (:mod:`fastsched.engine.power`): a start on powered-down nodes waits for their
    boots, its start reset to when they are ready; the run's ``configure`` has each
    job's wait and ``power`` the nodes' powered and busy seconds and the power-ups (not
    with --exclusive=topo). With ``blocked`` a start is held off a window over
    [now, now + limit) as any other (Slurm's job_test_resv counts no boot), so a job
    waiting for boots may run into one. ``checked``: ``partitions`` is what
    :func:`fastsched.engine.inputs.check_node_jobs` returned for these inputs (the
    caller checked them, e.g. before compiling), so it is not run again.
    ``preemption``: ``make(order, pc_off, pc_part)`` building the loop's preemptor
    (``functools.partial(fastsched.engine.preempt.Preemptor, rules)`` for a
    :class:`fastsched.model.preemption.Preemption`): after each pass a queued job may
    stop running jobs it may preempt (:mod:`fastsched.engine.preempt`); their attempts
    are logged as node failures' are, marked ``preempted``. ``time_min``: each job's
    ``--time-min`` in seconds (0: none; :mod:`fastsched.engine.timemin`): a job that
    cannot start now with its limit may start with a shorter one, at least that; the
    run's ``time_limit`` has the limit each job's last attempt ran with (a killed
    attempt's is in ``attempts.limit``; a requeued one is planned with its own limit
    again; with ``images`` and ``power`` the pull and the boots come after the cut;
    with ``preemption`` a cut start on free resources comes before a preemption; not
    with topology placement).
    """
    _check_policy(policy, reserve_depth)
    n = len(jobs)
    partitions = PartitionChoices.single(jobs.partition) if partitions is None else partitions
    dependencies = Dependencies.none(n) if dependencies is None else dependencies
    limits = LimitGroups.none(n) if limits is None else limits
    for what, c in (("partitions", partitions), ("dependencies", dependencies),
                    ("limits", limits)):
        if len(c) != n:
            raise InputError(f"{what} cover {len(c)} jobs, the table has {n}", field=what)
    if not checked:
        partitions = check_node_jobs(cluster, jobs, ever_available(cluster, available, events),
                                     partitions)
    loop = None
    if resume is None:
        loop = _EventLoop(cluster, jobs, policy, reserve_depth, available, partitions,
                          dependencies, limits, resolution, window, placement, lifecycle,
                          blocked, images, node_events=events is not None, power=power,
                          preemption=preemption, time_min=time_min)
    return drive(loop, jobs, rank=rank, reorder=reorder, period=period, tick=tick,
                 checkpoints=checkpoints, resume=resume, events=events)


def simulate_nodes(cluster: Cluster, jobs: JobTable, policy: str, reserve_depth: int = 1,
                   available=None, *, return_passes: bool = False):
    """Simulate ``jobs`` on ``cluster`` node by node (GPU-granular), no constraints.

    Returns, in the caller's job order, ``(start int64[n], end int64[n],
    alloc_offsets int64[n+1], alloc_nodes int64[sum N], alloc_gpu_mask
    uint64[sum N])``; with ``return_passes`` a sixth item, the number of
    passes. See :func:`run_nodes` for everything else.
    """
    run = run_nodes(cluster, jobs, policy, reserve_depth, available)
    out = (run.start, run.end, run.alloc_offsets, run.alloc_nodes, run.alloc_gpu_mask)
    return out + (run.passes,) if return_passes else out
