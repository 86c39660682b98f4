"""Preemption in the embeddable :class:`fastsched.Scheduler`: the simulator's rule
(:mod:`fastsched.engine.preempt`, its twin ``naive_preempt`` in tests/naive_nodes.py)
over the Scheduler's state.

A pass (:meth:`Scheduler.schedule`) first stops the victims whose GraceTime ended by
``now`` and queues the requeued jobs whose begin time (stop + requeue delay) has
come, as the simulator does before an instant's passes; after the pass, with its
starts counted as running, the first queued job that can start only by preempting
chooses its victims (``Decisions.preempt``, a :class:`Preempted`).
:meth:`Scheduler.apply` stops those whose grace is 0 at once (their nodes are free
for the next pass at the same instant, which the caller runs, as the simulator passes
again) and the others at their grace end; until then such a victim's planned end
(``running_jobs.planned_end``) is its grace end when that is earlier, as Slurm sets
its ``end_time`` (:func:`cut_ends`); with power saving, a victim CONFIGURING whose
nodes are ready before its grace end is not stopped: its end is reset then to its own
(job_mgr.c ``job_config_fini``; :func:`set_ends`). A REQUEUE victim whose job may be requeued
goes back to the queue after the requeue delay (its ``eligible`` time), a CANCEL one
(or one that may not be requeued) ends. :attr:`Scheduler.preempt_time` is the next
time a pass must run for preemption: a grace end, a requeued job's begin, the end
of a candidate's PreemptExemptTime a waiting job looked at, or such a ready time.

With a lifecycle the Scheduler also requeues at node failures
(:mod:`.schedrequeue`): a job's attempts are then numbered across both (one
``restarts`` array), a requeued victim's work left loses what its last checkpoint
kept, and a victim a failure ended is no longer stopped at its grace end; a
``--no-kill`` victim a failure shrank, or a node range started narrow, is stopped whole
on the nodes it holds (ordered among the candidates by that count), its work left losing
the node-seconds of its last checkpoint, and a node range preempts until its MIN nodes
fit (:attr:`SchedulerPreemption.low`). With
``Preemption.backfill`` each pass plans with preemptable capacity
(:meth:`SchedulerPreemption.planning`, :mod:`fastsched.engine.passpreempt`). With
dependencies and limits, :mod:`.schedpreemptrules` says after which pass a job may
preempt, which jobs a limit keeps from preempting and what a requeued victim keeps.
With containers (:mod:`.schedimages`) a victim's nodes keep their images, the
preemptor and a requeued victim pull where a node lacks theirs, and a requeued
victim's checkpoints count from the end of its attempt's pull, as in the simulator.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, replace

import numpy as np

from ..model.errors import InputError, UnsupportedError
from ..model.lifecycle import Lifecycle
from ..engine.passpreempt import PassPreempting
from ..engine.preempt import clear_of_windows, victims_needed, window_keys
from ..model.preemption import OFF, REQUEUE
from .decisions import START
from .preemption import check_preemption, tier_order
from .schedpreemptrules import limit_held, releases, requeued
from .schedrequeue import queue_due

__all__ = ["Preempted", "SchedulerPreemption"]

_MODE_NAMES = {1: "CANCEL", 2: "REQUEUE"}


@dataclass(frozen=True)
class Preempted:
    """What a pass preempted: job ``job_id`` stops ``victims`` (job ids, in submit
    order), each in ``mode[k]`` ("REQUEUE": back to the queue after the requeue delay;
    "CANCEL": it ends PREEMPTED) at ``stop[k]`` (the pass's ``now``, or the end of its
    GraceTime); ``job_id`` -1 and no victims when nothing is preempted."""

    job_id: int
    victims: np.ndarray
    mode: tuple
    stop: np.ndarray
    rows: np.ndarray          # the victims' catalog rows
    row: int = -1             # the preemptor's catalog row

    def __len__(self) -> int:
        return len(self.victims)


_NONE = Preempted(-1, np.zeros(0, dtype=np.int64), (), np.zeros(0, dtype=np.int64),
                  np.zeros(0, dtype=np.int64))


def scheduler_priority(cluster, jobs, preemption, priority):
    """The queue priority a Scheduler with ``preemption`` uses: ``priority``, else the
    partitions' PriorityTier first (as :func:`fastsched.simulate` orders it)."""
    if preemption is None or not preemption.active or priority is not None or jobs is None:
        return priority
    return tier_order(cluster, jobs)


class SchedulerPreemption:
    """A Scheduler's preemption state (catalog rows): the rules, the victims in their
    grace time, the requeued jobs waiting for their begin time, and per preemptor the
    victims it still waits for."""

    def __init__(self, cluster, jobs, pre, lifecycle: Lifecycle | None, partitions,
                 requeue=None, placement=None):
        check_preemption(pre, jobs, placement)
        n = len(jobs)
        lc = Lifecycle.of(n) if lifecycle is None else lifecycle
        if len(lc) != n:
            raise InputError(f"lifecycle covers {len(lc)} jobs, the table has {n}",
                             field="lifecycle")
        self.may = np.asarray(pre.may, dtype=bool)
        self.mode = np.asarray(pre.mode, dtype=np.int64)
        self.grace = np.asarray(pre.grace, dtype=np.int64)
        self.exempt = np.asarray(pre.exempt, dtype=np.int64)
        self.level = np.asarray(pre.level, dtype=np.int64)
        self.qos = None if pre.job_class is None else np.asarray(pre.job_class, np.int64)
        self.requeue, self.delay = np.asarray(lc.requeue, dtype=bool), int(lc.delay)
        #: the nodes each job must get to start: a node range's MIN, else all it asks for
        self.low = lc.start_nodes(jobs.num_nodes)
        if partitions is None:
            self.poff = np.arange(n + 1, dtype=np.int64)
            self.parts = np.asarray(jobs.partition, dtype=np.int64)
        else:
            self.poff = np.asarray(partitions.offsets, dtype=np.int64)
            self.parts = np.asarray(partitions.partition, dtype=np.int64)
        self.member = np.zeros((len(cluster.partitions), cluster.num_nodes), dtype=bool)
        for k, p in enumerate(cluster.partitions):
            self.member[k, np.asarray(p.nodes, dtype=np.int64)] = True
        victims = self.may & (self.mode != OFF)[None, :]
        if self.qos is None:
            self.can = np.array([victims[self.parts[self.poff[r]:self.poff[r + 1]]].any()
                                 for r in range(n)], dtype=bool)
        else:
            self.can = victims.any(axis=1)[self.qos]
        order = np.lexsort((jobs.job_id, jobs.submit_time))
        self.index = np.empty(n, dtype=np.int64)      # submit order, as the engine's
        self.index[order] = np.arange(n)
        self.part_used = np.full(n, -1, dtype=np.int64)
        # each running attempt's allocation time: with power saving a job CONFIGURING
        # (its start reset to when its nodes are ready, after now) has that as Slurm's start
        self.alloc = np.full(n, -1, dtype=np.int64)
        # one job's attempts count across preemptions and node failures (requeue: the
        # Scheduler's :class:`.schedrequeue.SchedulerRequeue`, with a lifecycle)
        self.at_failures = requeue
        self.restarts = np.zeros(n, dtype=np.int64) if requeue is None else requeue.restarts
        self.waits: dict[int, set] = {}
        self.last: dict[int, int] = {}
        self.heap: list[tuple[int, int, int]] = []     # (grace end, row, attempt)
        # (ready time, row, attempt, own planned end): a CONFIGURING victim whose grace
        # ends after its nodes are ready (:meth:`apply`)
        self.resets: list[tuple[int, int, int, int]] = []
        self.stopping = np.full(n, -1, dtype=np.int64)  # the attempt in its grace time
        self.requeued: list[tuple[int, int]] = []      # (begin time, row)
        self.wakes: list[int] = []
        self.backfill = bool(pre.backfill)

    @staticmethod
    def check(scheduler, given) -> None:
        """UnsupportedError for what preemption is not modelled with in a Scheduler
        (dependencies, limits and placement are, as :func:`fastsched.simulate` models
        them: :mod:`.schedpreemptrules`)."""
        if scheduler.engine == "slurm":
            raise UnsupportedError("preemption with reservations='slurm' is not modelled")

    def next_time(self) -> int:
        """The next grace end, requeued job's begin, exemption end or ready time of a
        CONFIGURING victim (-1: none)."""
        times = [h[0][0] for h in (self.heap, self.requeued, self.resets) if h] + \
            self.wakes[:1]
        return min(times) if times else -1

    # ------------------------------------------------------------ before a pass
    def due(self, s, now: int) -> None:
        """Stop the victims whose grace ended by ``now`` (those still running the
        attempt that was preempted and not ending by then), hold those CONFIGURING whose
        nodes were ready by ``now`` before their grace end until their own end again,
        and queue the requeued jobs whose begin time has come."""
        while self.wakes and self.wakes[0] <= now:
            heapq.heappop(self.wakes)
        ready = []
        while self.resets and self.resets[0][0] <= now:
            _, r, attempt, end = heapq.heappop(self.resets)
            if self.restarts[r] == attempt and r in s._running_rows:
                ready.append((r, end))
        set_ends(s, [r for r, _ in ready], [e for _, e in ready])
        stop = []
        while self.heap and self.heap[0][0] <= now:
            t, r, attempt = heapq.heappop(self.heap)
            if self.stopping[r] == attempt:
                self.stopping[r] = -1
            if self.restarts[r] == attempt and r in s._running_rows:
                stop.append((t, r))
        for t in sorted({t for t, _ in stop}):
            self.stop(s, np.array(sorted(r for u, r in stop if u == t), dtype=np.int64), t)
        queue_due(s, self.requeued, now)

    def stop(self, s, rows, now: int) -> None:
        """Victims ``rows`` (running) stop at ``now``: requeued by their mode, or ended."""
        if not len(rows):
            return
        back = self.requeued_mode(rows)
        again = rows[back]
        # a victim still CONFIGURING never ran: its attempt starts at its stop
        s._catalog.start[rows] = np.minimum(s._catalog.start[rows], now)
        if self.at_failures is not None:
            pull = None if s._costs is None else s._costs.pulled(rows)
            self.at_failures.preempted(s, rows, back, now, pull)
        pos = np.flatnonzero(np.isin(s._running_rows, rows))
        # a requeued victim stays submitted (limits' max_submit), its dependents wait
        # for its end; a cancelled one ends (PREEMPTED: not ok for its dependents)
        s._end_running(pos, now, False, requeued=np.isin(s._running_rows[pos], again))
        requeued(s, again)
        for r in again.tolist():
            self.restarts[r] += 1
            heapq.heappush(self.requeued, (now + self.delay, r))

    def requeued_mode(self, rows) -> np.ndarray:
        """Whether each victim is requeued: its class's mode REQUEUE and its job's
        requeue allowed (else it is cancelled, as Slurm's SIGKILL fallback)."""
        return (self.mode[self.cls(rows, self.part_used[rows])] == REQUEUE) & self.requeue[rows]

    def cls(self, rows, parts) -> np.ndarray:
        return np.asarray(parts, dtype=np.int64) if self.qos is None else self.qos[rows]

    def slurm_start(self, s, rows, now: int) -> np.ndarray:
        """The start times Slurm reads for the running catalog ``rows`` at ``now``: a job
        CONFIGURING (power saving: its start, reset to when its nodes are ready, is after
        ``now``) has its allocation's until then (job_mgr.c ``job_config_fini``)."""
        start = s._catalog.start[rows]
        return np.where(start > now, self.alloc[rows], start)

    def planning(self, s, rows, now: int) -> PassPreempting | None:
        """With ``backfill``: what a pass at ``now`` over the queued catalog ``rows``
        plans with preemptable capacity from (:mod:`fastsched.engine.passpreempt`), as
        the simulator's passes read the run's :class:`fastsched.engine.preempt.Preemptor`;
        None without."""
        if not self.backfill:
            return None
        run = s._running_rows
        known = run >= 0
        r = np.where(known, run, 0)
        start = np.where(known, self.slurm_start(s, r, now), -1)
        stopping = known & (self.stopping[r] == self.restarts[r])
        qos = self.qos
        return PassPreempting(self.can[rows], None if qos is None else qos[rows], start,
                              np.where(known, self.part_used[r], -1),
                              None if qos is None else qos[r], stopping,
                              self.may & (self.mode != OFF)[None, :], self.exempt)

    # ------------------------------------------------------------- after a pass
    def decide(self, s, now: int, d) -> Preempted:
        """The preemption after pass ``d`` at ``now`` (its starts counted as running)."""
        started = np.flatnonzero(d.outcome == START)
        queue = d.rows[d.outcome != START]
        queue = queue[self.can[queue]]
        if not len(queue) or releases(s, d.rows[started]):
            return _NONE
        queue = queue[~limit_held(s, d.rows[started], queue)]
        view = _View(s, d, started, now, self)
        w = s._windows(now, view.jobs.take(queue))      # (those the pass held)
        self.keys = window_keys(*(np.zeros(0, dtype=np.int64),) * 4) if w is None else \
            window_keys(w[0], w[1], w[2], w[2])
        alive = {(r, a) for r, a in zip(view.rows.tolist(),
                                        self.restarts[view.rows].tolist())}
        for j in list(self.waits):
            self.waits[j] = {w for w in self.waits[j] if w in alive}
            if not self.waits[j]:
                del self.waits[j]
        for j in queue.tolist():
            if j in self.waits or self.last.get(j) == now:
                continue
            victims = self.choose(view, j, now)
            if victims is not None:
                cls = self.cls(victims, self.part_used_of(view, victims))
                back = (self.mode[cls] == REQUEUE) & self.requeue[victims]
                return Preempted(int(s._catalog.job_id(j)), s._catalog.job_id(victims),
                                 tuple(_MODE_NAMES[2 if b else 1] for b in back.tolist()),
                                 now + self.grace[cls], victims, j)
        return _NONE

    def part_used_of(self, view, rows) -> np.ndarray:
        return view.part[[view.pos[r] for r in rows.tolist()]]

    def choose(self, view, j: int, now: int):
        """Job row ``j``'s victims (rows, submit order), or None (the engine's rule)."""
        g, c, m, nn = view.request(j)
        low = int(self.low[j])
        for p in self.parts[self.poff[j]:self.poff[j + 1]].tolist():
            nodes = np.flatnonzero(self.member[p] & view.available)
            nodes = nodes[clear_of_windows(self.keys, nodes, now,
                                           int(view.jobs.time_limit[j]))]
            FG, FC, FM = view.fg[nodes].copy(), view.fc[nodes].copy(), view.fm[nodes].copy()
            fits = (FG >= g) & (FC >= c) & (FM >= m)
            if fits.sum() >= low:
                return None
            cand = self.candidates(view, j, p, now, nodes)

            def holds(v):
                return (view.nodes_of(v),) + tuple(view.request(v)[:3])
            found = victims_needed((FG, FC, FM), fits, (g, c, m, low), nodes, cand, holds)
            if found is not None:
                return self._victims(view, cand[:found[0] + 1], nodes, found[1], nn)
        return None

    def candidates(self, view, j: int, p: int, now: int, nodes) -> np.ndarray:
        """The running rows on ``nodes`` job ``j`` (in partition ``p``) may preempt at
        ``now``, in the victims' order."""
        on = view.on(nodes)
        on = np.array([r for r in on.tolist()
                       if self.stopping[r] != self.restarts[r]], dtype=np.int64)
        if not len(on):
            return on
        mine = p if self.qos is None else self.qos[j]
        theirs = self.cls(on, self.part_used_of(view, on))
        may = self.may[mine, theirs] & (self.mode[theirs] != OFF)
        start = view.start[[view.pos[r] for r in on.tolist()]]
        until = start + self.exempt[theirs]
        for w in np.unique(until[may & (until > now)]).tolist():
            if w not in self.wakes:
                heapq.heappush(self.wakes, w)
        ok = may & (until <= now)
        cand, cls, st = on[ok], theirs[ok], start[ok]
        nn = view.nn[cand]
        prio = (self.level[cls] << 16) + np.minimum(nn, 0xFFFF)
        return cand[np.lexsort((-self.index[cand], -st, prio))]

    def _victims(self, view, cand, nodes, freed_by, nn: int) -> np.ndarray:
        ok = np.flatnonzero(freed_by < len(cand))
        chosen = nodes[ok[np.lexsort((nodes[ok], freed_by[ok]))][:nn]]
        hit = [v for v in cand.tolist() if np.isin(view.nodes_of(v), chosen).any()]
        hit = np.array(hit, dtype=np.int64)
        return hit[np.argsort(self.index[hit])]

    def apply(self, s, d) -> None:
        """Record the partitions ``d``'s starts ran in, then apply its preemption."""
        started = np.flatnonzero(d.outcome == START)
        self.part_used[d.rows[started]] = d.partition[started]
        self.alloc[d.rows[started]] = d.now
        pre = d.preempt
        if pre is None or pre.row < 0:
            return
        self.last[pre.row] = d.now
        self.waits[pre.row] = {(r, int(self.restarts[r])) for r in pre.rows.tolist()}
        run = s._running
        for r, t in zip(pre.rows.tolist(), pre.stop.tolist()):
            if t <= d.now:
                continue
            self.stopping[r] = self.restarts[r]
            ready = int(s._catalog.start[r])
            if d.now < ready < t:       # CONFIGURING: ready before its grace end
                # job_config_fini resets its end time to ready + limit, undoing the
                # grace end: held until its grace end until then, its own end after, and
                # never stopped (engine.preempt.Preemptor.preempt)
                own = int(run.planned_end[np.flatnonzero(s._running_rows == r)[0]])
                heapq.heappush(self.resets, (ready, r, int(self.restarts[r]), own))
            else:
                heapq.heappush(self.heap, (t, r, int(self.restarts[r])))
        later = pre.stop > d.now
        cut_ends(s, pre.rows[later], pre.stop[later])
        self.stop(s, pre.rows[pre.stop == d.now], d.now)


def cut_ends(s, rows, stop) -> None:
    """Victims ``rows`` (running) stop at ``stop``: each is held until then when its planned
    end is later (Slurm sets a preempted job's ``end_time`` to the earlier of the two,
    and plans with it); a new running table, so the next pass builds its state anew."""
    if not len(rows):
        return
    r = s._running
    pos = np.flatnonzero(np.isin(s._running_rows, rows))
    at = {int(v): int(t) for v, t in zip(np.asarray(rows).tolist(), np.asarray(stop).tolist())}
    end = r.planned_end.copy()
    end[pos] = np.minimum(end[pos], [at[int(v)] for v in s._running_rows[pos].tolist()])
    if not np.array_equal(end, r.planned_end):
        s._running = replace(r, planned_end=end)


def set_ends(s, rows, ends) -> None:
    """Running ``rows`` are held until ``ends`` again (a CONFIGURING victim whose nodes
    are ready: its own planned end, no longer its grace end)."""
    if not len(rows):
        return
    r = s._running
    end = r.planned_end.copy()
    for row, e in zip(rows, ends):
        end[np.flatnonzero(s._running_rows == row)] = e
    s._running = replace(r, planned_end=end)


class _View:
    """The Scheduler's state after a pass's starts: free resources per node and the
    running jobs (catalog rows) with their nodes, starts and partitions."""

    def __init__(self, s, d, started, now, pp):
        jobs = s._catalog.jobs()
        self.jobs = jobs
        self.available = s.available
        st = s.state
        bits = np.unpackbits(np.ascontiguousarray(st.free_gpu_mask, dtype=np.uint64)
                             .view(np.uint8)).reshape(-1, 64)
        self.fg = bits.sum(axis=1).astype(np.int64)
        self.fc = st.free_cpus.astype(np.int64).copy()
        self.fm = st.free_mem_mb.astype(np.int64).copy()
        r = s._running
        keep = np.flatnonzero(s._running_rows >= 0)
        offs = [r.node_offsets[k] for k in keep]
        lists = [r.nodes[o:r.node_offsets[k + 1]] for o, k in zip(offs, keep)]
        rows = s._running_rows[keep].tolist()
        start = pp.slurm_start(s, s._running_rows[keep], now).tolist()
        part = pp.part_used[s._running_rows[keep]].tolist()
        for i in started.tolist():
            row, nodes = int(d.rows[i]), d.nodes_of(i).astype(np.int64)
            np.subtract.at(self.fg, nodes, int(jobs.gpus_per_node[row]))
            np.subtract.at(self.fc, nodes, int(jobs.cpus_per_node[row]))
            np.subtract.at(self.fm, nodes, int(jobs.mem_per_node[row]))
            rows.append(row)
            lists.append(nodes)
            start.append(now)
            part.append(int(d.partition[i]))
        self.rows = np.array(rows, dtype=np.int64)
        self.lists = lists
        self.start = np.array(start, dtype=np.int64)
        self.part = np.array(part, dtype=np.int64)
        self.pos = {row: k for k, row in enumerate(rows)}
        # the nodes each holds (a --no-kill job a failure shrank: fewer than it asks for),
        # which orders the victims as Slurm's node_cnt does
        self.nn = np.asarray(jobs.num_nodes, dtype=np.int64).copy()
        self.nn[self.rows] = [len(held) for held in lists]

    def request(self, row: int):
        j = self.jobs
        return (int(j.gpus_per_node[row]), int(j.cpus_per_node[row]), int(j.mem_per_node[row]),
                int(j.num_nodes[row]))

    def nodes_of(self, row: int) -> np.ndarray:
        return np.asarray(self.lists[self.pos[row]], dtype=np.int64)

    def on(self, nodes) -> np.ndarray:
        """The running rows holding one of ``nodes``, ascending."""
        hit = [row for row, held in zip(self.rows.tolist(), self.lists)
               if np.isin(held, nodes).any()]
        return np.array(sorted(hit), dtype=np.int64)
