"""Driving a resumable event loop of either reservation model: the queue order
recomputed every period, checkpoints, Ctrl-C; and what a run produces.

An event loop (:class:`fastsched.engine.loop.NodeLoop` for the nodes model,
:class:`fastsched.engine.counts.CountsLoop` for the counts model) runs the
instants up to a time and returns; between two calls its queue order may change
(:meth:`set_rank`) and its state may be saved. Both take the same inputs and
events in the same order, so priorities, dependencies and limits mean the same
under both models.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.constraints import Dependencies
from ..model.errors import InputError
from ..model.jobs import JobTable
from ..model.progress import Progress  # noqa: F401  (the loops' progress, public here)
from ..model.noderuns import ExpandsRuns
from .inputs import _unique_rank
from .interrupt import PAUSE, REQUEST, interrupted
from .state import Deps, as_i64

_INF = np.int64(1) << np.int64(62)


@dataclass(frozen=True)
class EngineRun(ExpandsRuns):
    """What an event loop produced, in the caller's job order.

    Job i ran on ``alloc_nodes[alloc_offsets[i]:alloc_offsets[i+1]]``
    (ascending) with GPU bits ``alloc_gpu_mask`` there (None under the counts
    model: whole nodes), in partition ``partition[i]``. The counts model gives its
    nodes as runs (``node_runs``, :class:`fastsched.model.noderuns.NodeRuns`) and
    ``alloc_nodes`` is expanded from them only when read. A job that never
    started has start -1 and says why in ``reason[i]``: a limit group's cap
    (``group * 5 + cap``, see :mod:`fastsched.model.constraints`; cap 4 =
    rejected at submit), or -1 with ``never[i]`` (a dependency can no longer be
    satisfied) or still waiting for a dependency. ``eligible[i]``: when it
    entered the queue (-1: never). ``attempts``: the attempts node failures
    killed (:class:`fastsched.engine.requeue.Attempts`; the record above is each
    job's last attempt), None from a loop without node failures. ``pull``: the
    image pull each job's last attempt paid (seconds, part of its run), and
    ``images_pulled`` the pulls node by node (None and 0 from a loop without images).
    ``configure``: the seconds each job's start waited for its nodes to boot (its start
    is when they were ready), and ``power`` the nodes' powered and busy seconds and the
    power-ups (:meth:`fastsched.engine.loop._EventLoop._power_result`); None from a
    loop without power saving.
    ``resizes``: the shapes of elastic jobs that shrinks ended
    (:class:`fastsched.engine.elastic.Resizes`; the record above is each job's last
    shape, its start that of the attempt), None from a loop without elastic jobs.
    ``time_limit``: the limit each job ran with (a ``--time-min`` job's may be cut:
    :mod:`fastsched.engine.timemin`), None from a loop without such jobs.
    """

    start: np.ndarray
    end: np.ndarray
    alloc_offsets: np.ndarray
    alloc_nodes: np.ndarray
    alloc_gpu_mask: np.ndarray | None
    partition: np.ndarray
    reason: np.ndarray
    never: np.ndarray
    eligible: np.ndarray
    passes: int
    attempts: object = None
    pull: np.ndarray | None = None
    images_pulled: int = 0
    configure: np.ndarray | None = None
    power: dict | None = None
    resizes: object = None
    node_runs: object = None
    time_limit: np.ndarray | None = None


def submit_order(jobs: JobTable) -> tuple[np.ndarray, np.ndarray]:
    """(order, inverse): the loops index jobs by submit time, then job id."""
    order = np.lexsort((jobs.job_id, jobs.submit_time))
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    return order, inverse


def loop_deps(dependencies: Dependencies, inverse, n: int) -> Deps:
    """Each job's dependents (indices in submit order, ``inverse`` maps there)."""
    child = inverse[np.repeat(np.arange(n), np.diff(dependencies.offsets))]
    parent = inverse[dependencies.parent]
    by_parent = np.argsort(parent, kind="stable")
    ch_off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(parent, minlength=n), out=ch_off[1:])
    return Deps(ch_off, as_i64(child[by_parent]), as_i64(dependencies.kind[by_parent]),
                np.bincount(child, minlength=n).astype(np.int64),
                np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.bool_))


def set_queue_rank(rank_out, queue, qlen: int, rank) -> None:
    """Write a new queue order ``rank`` (submit order) and re-sort ``queue[:qlen]``."""
    rank_out[:] = rank
    _resort(rank_out, queue, qlen)


def set_rows_rank(rank_out, queue, qlen: int, rows, key, base: int) -> None:
    """Rank the jobs ``rows`` (submit order) by ``key`` (lower first; ties by submit
    order) from ``base`` on, above every rank given before, and re-sort
    ``queue[:qlen]``. Every queued job must be among ``rows``: the others keep
    ranks that no longer compare."""
    rank_out[rows[np.lexsort((rows, key))]] = base + np.arange(len(rows))
    if qlen and int(rank_out[queue[:qlen]].min()) < base:
        raise RuntimeError("a queued job was not ranked (not in the recomputed window)")
    _resort(rank_out, queue, qlen)


def _resort(rank, queue, qlen: int) -> None:
    if qlen:
        q = queue[:qlen]
        q[:] = q[np.argsort(rank[q], kind="stable")]


class QueueWindow:
    """The jobs that may be queued before a time (submit order): every job submitted
    before it that has not started, the queued ones, the requeued attempts waiting,
    and, when ``running`` (a node failure or a preemption may requeue them), the
    running ones. Kept from one recomputation to the next, so each costs the jobs
    pending (running) or submitted since, not every job ever submitted; ``base``:
    the next unused queue rank (the loops start with ranks 0..n-1). Without
    ``running`` the window is the queue's jobs only: on a big cluster the running
    jobs outnumber them a hundredfold, and a job that started never queues again,
    unless requeued: one requeued in the period of the last ranking then joins it
    (:meth:`rank_late`)."""

    def __init__(self, n: int, running: bool = True):
        self.rows = np.zeros(0, dtype=np.int64)
        self.seen = 0
        self.base = n
        self.running = running
        self.ranked = None      # the last ranking: (rows, key, base)

    def advance(self, loop, t_lo: int, t_hi: int) -> np.ndarray:
        """The window from ``t_lo`` (jobs ended by then leave) to ``t_hi``."""
        hi = max(self.seen, int(np.searchsorted(loop.submit, t_hi, side="left")))
        rows = _distinct(np.concatenate([self.rows, np.arange(self.seen, hi, dtype=np.int64),
                                         loop.queued_jobs(), loop.requeue_waiting()]))
        start, end = loop.start_times()[rows], loop.end_times()[rows]
        stays = start < 0
        if self.running:
            stays |= end > t_lo
        self.rows = rows[stays]
        self.seen = hi
        return self.rows

    def rank(self, loop, key) -> None:
        """Give the window's jobs their queue order by ``key`` (one per row)."""
        key = np.asarray(key)
        loop.set_rows_rank(self.rows, key, self.base)
        self.ranked = (self.rows, key, self.base)       # (rows ascending)
        self.base += len(self.rows)

    def unranked(self, rows: np.ndarray) -> np.ndarray:
        """Those of ``rows`` the last ranking left out."""
        ranked = self.ranked[0]
        at = np.minimum(np.searchsorted(ranked, rows), len(ranked) - 1)
        return rows if not len(ranked) else rows[ranked[at] != rows]

    def rank_late(self, loop, rows, key) -> None:
        """Rank jobs ``rows`` among the last ranking's by ``key`` (as of its time): all
        are ranked again from its base, in the order they would have had in it, so
        the queue's order does not change (ranks only compare within a ranking)."""
        ranked, keys, base = self.ranked
        rows = np.concatenate([ranked, rows])
        by_row = np.argsort(rows, kind="stable")
        rows, key = rows[by_row], np.concatenate([keys, np.asarray(key)])[by_row]
        loop.set_rows_rank(rows, key, base)
        self.ranked = (rows, key, base)
        self.base = base + len(rows)


def _distinct(rows: np.ndarray) -> np.ndarray:
    """``np.unique(rows)`` by one sort (np.unique's hashing costs several times more
    on the thousands of rows a window holds)."""
    rows = np.sort(rows)
    keep = np.ones(len(rows), dtype=bool)
    np.not_equal(rows[1:], rows[:-1], out=keep[1:])
    return rows[keep]


def drive(loop, jobs: JobTable, *, rank=None, reorder=None, period: int | None = None,
          tick=None, checkpoints=None, resume=None, events=None):
    """Run ``loop`` to the end; returns its result.

    Queue order: ``rank`` (per job, lower first; ties by submit time, then job
    id), or ``reorder(b, progress) -> rank`` at the start ``b`` of every
    ``period``-second window of simulated time that has an instant. A ``reorder``
    with a ``ranks(b, progress, rows) -> rank of rows`` method is asked only for
    the jobs that may be queued before ``b + period`` (:class:`QueueWindow`), so
    a recomputation costs the pending jobs, not every job of the run.
    ``events`` (:class:`fastsched.model.events.NodeEvents`): each is given to
    the loop's one entry point (``apply_node_event``) before the instant at its
    time, which the loop then visits; events after the last job has started or
    with nothing queued still apply while jobs wait. Requeued attempts (a loop
    with ``requeue_time``) enter the queue the same way at their begin time, after
    the node events of that time; so do the openings and closings of advance
    reservation windows (a loop with ``window_time``), and the ends of preempted
    jobs' grace times (``preempt_time``). A loop with a ``preemptor`` runs one instant
    at a time and calls ``preempt_pass`` after each.
    ``tick(control)`` now and then; ``checkpoints`` pauses the loop at an
    instant boundary whenever one is due and saves ``{"loop", "reorder",
    "last", "event", "window"}``; ``resume`` (such a state) goes on from it, ``loop`` unused.
    """
    last, e = None, 0
    if resume is not None:
        loop, reorder, last = resume["loop"], resume["reorder"], resume["last"]
        e = resume.get("event", 0)
    requeues = events is not None or getattr(loop, "preemptor", None) is not None
    # requeued jobs ranked when they come back: the window leaves the running jobs out
    late = requeues and getattr(reorder, "late", False)
    window = (resume or {}).get("window") or QueueWindow(loop.n, running=requeues and not late)
    late = late and not window.running
    if reorder is not None and (period is None or period < 1):
        raise InputError(f"period must be >= 1 s, got {period!r}", field="period")
    if resume is None and rank is not None:
        loop.set_rank(_unique_rank(rank, jobs))
    n_events = 0 if events is None else len(events)

    def watch(control):
        if tick is not None:
            tick(control)
        if checkpoints is not None and checkpoints.due():
            control[REQUEST] = PAUSE
    # the loop's clocks, looked up once: the loop below turns once per node event
    next_time = loop.next_time
    requeue_time, window_time, preempt_time = (
        _external_clock(loop, name) for name in ("requeue_time", "window_time", "preempt_time"))
    event_time = [] if events is None else events.time.tolist()
    try:
        while True:
            t_next = next_time()
            t_event = event_time[e] if e < n_events else int(_INF)
            t_requeue = requeue_time()
            t_window = window_time()
            t_preempt = preempt_time()
            t_ext = min(t_event, t_requeue, t_window, t_preempt)
            if t_ext < _INF and (t_next < 0 or t_ext <= t_next):
                if t_next < 0 and loop.queued == 0 and t_requeue >= _INF \
                        and t_preempt >= _INF:
                    break                   # nothing left that an event could change
                while e < n_events and event_time[e] == t_ext:
                    loop.apply_node_event(*events.at(e))
                    e += 1
                if t_requeue == t_ext:
                    if late and last is not None and t_ext // period * period == last:
                        _rank_late(loop, reorder, window, t_ext)    # (no new ranking first)
                    loop.requeue_due(t_ext)
                if t_window == t_ext:
                    loop.window_due(t_ext)
                if t_preempt == t_ext:
                    loop.preempt_due(t_ext)
                continue
            if t_next < 0:
                break
            t_stop = min(int(_INF), t_ext - 1)
            preempting = getattr(loop, "preemptor", None) is not None
            if preempting:          # one instant at a time: preemption follows its passes
                t_stop = min(t_stop, t_next)
            if reorder is not None:
                b = t_next // period * period     # the period the next instant is in
                if b != last:
                    _reorder(loop, jobs, reorder, window, b, b + period)
                    last = b
                t_stop = min(t_stop, b + period - 1)
            loop.run(t_stop, watch)
            if preempting:          # (a pause comes only after the instant t_next ran)
                loop.preempt_pass(t_next)
            if loop.control[REQUEST] == PAUSE:
                loop.control[REQUEST] = 0
                checkpoints.save({"loop": loop, "reorder": reorder, "last": last, "event": e,
                                  "window": window})
    except KeyboardInterrupt as exc:       # Ctrl-C between two calls: say where the run was
        raise interrupted(loop.control, exc) from None
    return loop.result()


def _reorder(loop, jobs, reorder, window, b: int, t_hi: int) -> None:
    """The queue order for the period from ``b`` to ``t_hi``."""
    if not hasattr(reorder, "ranks"):
        loop.set_rank(_unique_rank(reorder(b, loop.progress()), jobs))
        return
    rows = window.advance(loop, b, t_hi)
    window.rank(loop, reorder.ranks(b, loop.progress(), loop.order[rows]))


def _rank_late(loop, reorder, window, t: int) -> None:
    """The attempts requeued at ``t`` that the period's ranking left out (running
    then) ranked in it, before they are queued (their eligible time is still the
    ranking's)."""
    rows = window.unranked(loop.requeue_coming(t))
    if len(rows):
        window.rank_late(loop, rows, reorder.ranks_late(loop.progress(), loop.order[rows]))


def _external_clock(loop, name: str):
    """``() -> int``: the loop's ``name()`` time (requeues, reservation windows,
    preemption), _INF for none (-1) or a loop without that method (bound once)."""
    clock = getattr(loop, name, None)
    if clock is None:
        return lambda: int(_INF)

    def at():
        t = clock()
        return int(_INF) if t < 0 else int(t)
    return at
