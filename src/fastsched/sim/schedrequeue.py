"""Requeue and checkpoint resume at node failures in the embeddable
:class:`fastsched.Scheduler`: the simulator's rule (:mod:`fastsched.engine.requeue`,
its twin in tests/naive_nodes.py) over the Scheduler's state.

:meth:`Scheduler.fail_nodes` ends every attempt running on the failed nodes
(NODE_FAIL, as ``sacct --duplicates`` shows each attempt). A job that may be
requeued (``Lifecycle.requeue``: ``--requeue`` / ``--no-requeue``, slurm.conf's
JobRequeue) is a new attempt of the same job: it leaves the running jobs, its
dependents are not released (its ``after`` dependents were, at its first start), it
still counts as submitted in its limit groups, and it comes back to the queue at its
begin time, the failure plus the requeue delay (Slurm's ``batch_requeue_fini``), with
that time as its eligible time (priority age starts again; its queue order, by
priority then submit time then job id, is the simulator's). Its work left is its
runtime less the progress its last checkpoint kept (``e // I * I`` of the ``e``
seconds the attempt ran after its container image's pull, checkpointing every ``I``:
killed during its pull, it keeps nothing). Any other job ends for good.
A pass (:meth:`Scheduler.schedule`) first queues the requeued jobs whose begin time
has come, as the simulator does before an instant's passes;
:attr:`Scheduler.requeue_time` says when the next one does.

A ``--no-kill`` job (``Lifecycle.no_kill``; :mod:`fastsched.engine.elastic` in the
simulator) that keeps at least one node shrinks instead: it gives the failed nodes
back and runs on with the others, its work (runtime x nodes asked for) done by the
nodes it has, each shape a RESIZING record; killed later, it keeps the node-seconds
of its last checkpoint, in whole seconds at its full width. Its work too starts after
its pull. The failed nodes keep their images (:mod:`.schedimages`), as in the
simulator.
"""
from __future__ import annotations

import heapq

import numpy as np

from ..engine import RunningJobs
from ..model.constraints import csr_take
from ..model.elastic import REGROW_PREEMPT, finish, saved_work
from ..model.errors import InputError, UnsupportedError
from ..model.lifecycle import Lifecycle, saved_progress
from .bookkeeping import csr_offsets

__all__ = ["SchedulerRequeue", "ATTEMPT_COLUMNS"]

#: the columns of :attr:`fastsched.Scheduler.attempts`
ATTEMPT_COLUMNS = ("job_id", "attempt", "start_time", "end_time", "state", "requeued",
                   "begin_time", "saved", "remaining", "nodes")


class SchedulerRequeue:
    """A Scheduler's requeue state (catalog rows): per job whether it may be requeued,
    its checkpoint interval, its restarts and the work its next attempt has left; the
    requeued jobs waiting for their begin time; the log of the attempts failures
    ended."""

    def __init__(self, jobs, lc: Lifecycle):
        n = len(jobs)
        if len(lc) != n:
            raise InputError(f"lifecycle covers {len(lc)} jobs, the table has {n}",
                             field="lifecycle")
        self.requeue = np.asarray(lc.requeue, dtype=bool)
        self.no_kill = np.zeros(n, dtype=bool) if lc.no_kill is None else \
            np.asarray(lc.no_kill, dtype=bool)
        self.low = lc.min_nodes(jobs.num_nodes)
        #: per job the fewest nodes it starts on (:mod:`.schedelastic`); None: no range
        self.start_low = lc.start_nodes(jobs.num_nodes) if lc.ranged else None
        self.regrow = bool(lc.regrow)
        self.part = np.asarray(jobs.partition, dtype=np.int64).copy()   # where each runs
        self.width = np.asarray(jobs.num_nodes, dtype=np.int64)
        self.shapes: dict[int, tuple] = {}            # row -> (shape starts, widths)
        self.interval = np.asarray(lc.checkpoint_interval, dtype=np.int64)
        self.delay = int(lc.delay)
        self.left = np.asarray(jobs.runtime, dtype=np.int64).copy()
        self.restarts = np.zeros(n, dtype=np.int64)
        self.waiting: list[tuple[int, int]] = []      # (begin time, row)
        self.log: list[tuple] = []

    @classmethod
    def of(cls, jobs, lifecycle: Lifecycle | None, preemption) -> "SchedulerRequeue | None":
        """The state for a Scheduler's ``lifecycle`` (None: failures end their jobs for
        good, the caller resubmits). With ``preemption`` too, one job's attempts are
        counted across failures and preemptions (:mod:`.schedpreempt` shares
        ``restarts`` and takes a preempted attempt's checkpointed work off ``left``);
        regrowth is refused with it, as :func:`fastsched.simulate` refuses it
        (:data:`fastsched.model.elastic.REGROW_PREEMPT`)."""
        if lifecycle is None:
            return None
        if jobs is None:
            raise InputError("lifecycle describes the jobs of a table: pass it as jobs=",
                             field="lifecycle")
        if preemption is not None and lifecycle.regrow:
            raise UnsupportedError(REGROW_PREEMPT)
        return cls(jobs, lifecycle)

    def preempted(self, s, rows: np.ndarray, back: np.ndarray, now: int,
                  pull=None) -> None:
        """Running ``rows`` were preempted at ``now``, those ``back`` marks requeued: their
        next attempt has their work less what their last checkpoint kept, checkpoints
        counted from the end of the attempt's image ``pull`` (seconds per row, None: no
        pulls; stopped during its pull, it keeps nothing), or for a shrunk or narrow one
        the node-seconds done by then, at its full width, as a kill at a failure keeps
        them; it asks for all its nodes again."""
        pull = np.zeros(len(rows), dtype=np.int64) if pull is None else pull
        for row, again, p in zip(np.asarray(rows).tolist(), np.asarray(back).tolist(),
                                 np.asarray(pull).tolist()):
            start = int(s._catalog.start[row])
            shapes = self.shapes.pop(row, None)
            if not again:
                continue
            if shapes is None:
                saved = int(saved_progress(max(now - start - p, 0), self.interval[row]))
            else:
                saved = saved_work(*shapes, start + p, now, int(self.interval[row])) \
                    // int(self.width[row])
            self.left[row] -= saved

    def started(self, rows: np.ndarray, counts: np.ndarray, begin, partition) -> None:
        """Catalog ``rows`` started at ``begin`` on ``counts`` nodes in ``partition``: one
        of a node range started on fewer than it asks for has that first shape (its work,
        runtime x the nodes asked for, done at its width; a kill keeps node-seconds)."""
        self.part[rows] = partition
        begin = np.broadcast_to(np.asarray(begin, dtype=np.int64), rows.shape)
        for k in np.flatnonzero(counts < self.width[rows]).tolist():
            self.shapes[int(rows[k])] = ([int(begin[k])], [int(counts[k])])

    def next_time(self) -> int:
        """The next requeued job's begin time (-1: none waits)."""
        return self.waiting[0][0] if self.waiting else -1

    def fail(self, s, hit: np.ndarray, down: np.ndarray, now: int) -> None:
        """The running jobs at positions ``hit`` lose the nodes ``down`` at ``now``:
        those ``--no-kill`` jobs that keep their fewest nodes shrink, the others end."""
        r = s._running
        rows = s._running_rows[hit]
        lost = np.isin(r.nodes, down)
        kept = np.add.reduceat((~lost).astype(np.int64), r.node_offsets[:-1])[hit] \
            if len(r.nodes) else np.zeros(0, dtype=np.int64)
        may = np.zeros(len(hit), dtype=bool)
        may[rows >= 0] = self.no_kill[rows[rows >= 0]] & (kept[rows >= 0]
                                                          >= self.low[rows[rows >= 0]])
        if may.any():
            self.shrink(s, hit[may], lost, now)
        self.kill(s, hit[~may], now)

    def shrink(self, s, hit: np.ndarray, lost: np.ndarray, now: int) -> None:
        """The jobs at positions ``hit`` give back their entries ``lost`` marks and run
        on (:mod:`fastsched.model.elastic`: a RESIZING record per shape, a new end when
        their work is done on fewer nodes; their end for planning, start + limit, is
        Slurm's, unchanged); they still count as running jobs in their limit groups."""
        r = s._running
        job_of = np.repeat(np.arange(len(r)), np.diff(r.node_offsets))
        drop = lost & np.isin(job_of, hit)
        gone = RunningJobs(r.job_id[hit], r.planned_end[hit],
                           csr_offsets(np.bincount(job_of[drop], minlength=len(r))[hit]),
                           r.nodes[drop], r.gpus[drop], r.cpus[drop], r.mem[drop],
                           r.gpu_mask[drop], None)
        off, idx = csr_take(s._running_groups[0], hit)
        groups = (off, s._running_groups[1][idx])
        s._hold(gone, -1)
        s._charge(gone, groups, -1)
        np.add.at(s._usage[:, 0], groups[1], 1)          # (still a running job)
        keep = ~drop
        s._running = RunningJobs(r.job_id, r.planned_end,
                                 csr_offsets(np.bincount(job_of[keep], minlength=len(r))),
                                 r.nodes[keep], r.gpus[keep], r.cpus[keep], r.mem[keep],
                                 r.gpu_mask[keep], r.exclusive_topo)
        s._version += 1
        for j in hit.tolist():
            row = int(s._running_rows[j])
            start = int(s._catalog.start[row])
            pull = int(s._costs.pulled([row])[0]) if s._costs is not None else 0
            starts, widths = self.shapes.setdefault(row, ([start], [int(self.width[row])]))
            width = int((~drop[r.node_offsets[j]:r.node_offsets[j + 1]]).sum())
            starts.append(now)
            widths.append(width)
            end = finish(starts, widths, start + pull,
                         int(self.left[row]) * int(self.width[row]))
            self.log.append((int(r.job_id[j]), int(self.restarts[row]), starts[-2], now,
                             "RESIZING", False, -1, 0, end - now,
                             r.nodes[r.node_offsets[j]:r.node_offsets[j + 1]].copy()))
            if starts[-2] == now:    # a second failure at the instant: that shape never ran
                del starts[-2], widths[-2]

    def kill(self, s, hit: np.ndarray, now: int) -> None:
        """End the running jobs at positions ``hit`` at ``now``: each requeued or ended
        (NODE_FAIL); every attempt logged."""
        rows = s._running_rows[hit]
        known = rows >= 0                       # (from_state's running jobs have no row)
        back = np.zeros(len(hit), dtype=bool)
        back[known] = self.requeue[rows[known]]
        r = s._running
        pulls = np.zeros(len(rows), dtype=np.int64) if s._costs is None else \
            s._costs.pulled(np.where(known, rows, 0))
        for k, j in enumerate(hit.tolist()):
            if not known[k]:
                continue
            row, pull = int(rows[k]), int(pulls[k])
            start = int(s._catalog.start[row])
            shapes = self.shapes.pop(row, None)
            if shapes is None:       # its work (and checkpoints) after its image pull
                saved = int(saved_progress(max(now - start - pull, 0), self.interval[row]))
            else:                    # node-seconds at the checkpoint, at its full width
                saved = saved_work(*shapes, start + pull, now, int(self.interval[row])) \
                    // int(self.width[row])
                start = shapes[0][-1]
            begin = now + self.delay if back[k] else -1
            left = int(self.left[row]) - saved
            self.log.append((int(r.job_id[j]), int(self.restarts[row]), start, now,
                             "NODE_FAIL", bool(back[k]), begin, saved, left,
                             r.nodes[r.node_offsets[j]:r.node_offsets[j + 1]].copy()))
            if back[k]:
                self.left[row] = left
                self.restarts[row] += 1
                heapq.heappush(self.waiting, (begin, row))
        s._end_running(hit, now, False, requeued=back)
        again = rows[back]
        s._constraints.spend_after(again)
        s._catalog.start[again] = -1

    def due(self, s, now: int) -> None:
        """Queue the requeued jobs whose begin time has come, eligible from it."""
        queue_due(s, self.waiting, now)

    def attempts(self, cluster):
        """The attempts failures ended, in the order they ended (:data:`ATTEMPT_COLUMNS`):
        NODE_FAIL, ``requeued`` with its ``begin_time`` (else -1), the progress its last
        checkpoint ``saved`` and the work the next attempt has left (``remaining``); or
        RESIZING, a shape of a ``--no-kill`` job a failure ended (``remaining``: the
        seconds its next shape runs until its work is done, its time limit aside; a
        shape that never ran, a second failure at its start, has start = end); and
        its nodes (a hostlist)."""
        import pandas as pd
        from ..io.hostlist import compress
        cols = list(zip(*self.log)) if self.log else [()] * 10
        names = np.asarray(cluster.node_names, dtype=object)
        return pd.DataFrame({
            "job_id": np.array(cols[0], dtype=np.int64),
            "attempt": np.array(cols[1], dtype=np.int64),
            "start_time": np.array(cols[2], dtype=np.int64),
            "end_time": np.array(cols[3], dtype=np.int64),
            "state": np.array(cols[4], dtype=object),
            "requeued": np.array(cols[5], dtype=bool),
            "begin_time": np.array(cols[6], dtype=np.int64),
            "saved": np.array(cols[7], dtype=np.int64),
            "remaining": np.array(cols[8], dtype=np.int64),
            "nodes": [compress(names[x].tolist()) for x in cols[9]]},
            columns=list(ATTEMPT_COLUMNS))


def queue_due(s, waiting: list, now: int) -> None:
    """Queue in Scheduler ``s`` the requeued jobs of the heap ``waiting`` ((begin time,
    catalog row) pairs) whose begin time has come by ``now``, eligible from it."""
    rows, begins = [], []
    while waiting and waiting[0][0] <= now:
        b, r = heapq.heappop(waiting)
        rows.append(r)
        begins.append(b)
    if rows:
        s._queue_free(np.array(rows, dtype=np.int64), np.array(begins, dtype=np.int64))
        s._version += 1
