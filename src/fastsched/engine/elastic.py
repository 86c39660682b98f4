"""Elastic jobs in the event loop: a ``--no-kill`` job on nodes that go down shrinks
onto the rest while it keeps its minimum nodes (:mod:`fastsched.model.elastic` has the
rules and the work model).

The loop hands every ``down`` event's running jobs to :meth:`Shrinks.shrink` before
killing any: the jobs that may shrink give the failed nodes back (the loop's own
completion releases them, as if a job of those nodes alone ended), keep the others,
and get a new end; the rest are killed as before. Bookkeeping is per shrunk job, in
Python: failures are rare, and each touches only its jobs and nodes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.elastic import finish, saved_work
from .limits import _count_submitted


@dataclass(frozen=True)
class Resizes:
    """The shapes of elastic attempts that a shrink ended (each an ``sacct`` record in
    state RESIZING), in the caller's job order: shape k of job ``job[k]``'s attempt
    ``attempt[k]`` ran ``[start[k], end[k])`` on ``alloc_nodes[alloc_offsets[k]:
    alloc_offsets[k+1]]`` with GPU bits ``alloc_gpu_mask`` there; the attempt's next
    shape starts at ``end[k]`` on a subset of those nodes."""

    job: np.ndarray
    attempt: np.ndarray
    start: np.ndarray
    end: np.ndarray
    alloc_offsets: np.ndarray
    alloc_nodes: np.ndarray
    alloc_gpu_mask: np.ndarray

    def __len__(self) -> int:
        return len(self.job)


class Shrinks:
    """Per job (submit order): whether it may shrink (``no_kill``), its fewest
    nodes (``low``), the nodes it asks for (``full``) and its current attempt's
    runtime on them (``base``: a job of a node range may start on fewer, and the
    kernel then stretches its runtime); per job shrunk in its current attempt, its
    shapes so far and what the attempt had to do; the log of the shapes a shrink
    ended."""

    def __init__(self, no_kill, low, full, runtime):
        self.no_kill = np.asarray(no_kill, dtype=bool)
        self.low = np.asarray(low, dtype=np.int64)
        self.full = np.array(full, dtype=np.int64)
        self.base = np.array(runtime, dtype=np.int64)
        self.shapes: dict[int, tuple] = {}  # job -> (starts, widths, runtime, width, pull)
        self.log: list[tuple] = []          # (job, attempt, start, end, nodes, masks)

    def _shapes(self, loop, j) -> tuple:
        """Job j's shapes so far (its first: its start, on the nodes it started on)."""
        return self.shapes.setdefault(j, ([int(loop.out.start[j])], [int(loop.jobs.nn[j])],
                                          int(self.base[j]), int(self.full[j]),
                                          int(loop.images.pull[j])))

    def shrink(self, loop, t: int, running: np.ndarray, down, complete) -> np.ndarray:
        """The jobs ``running`` on the nodes ``down`` going down at ``t``: those that may
        shrink do (``complete``: the loop's completion kernel releases the nodes they
        lose); returns the others, which the loop kills."""
        kill, moved = [], []
        for j in running.tolist():
            lo, n = int(loop.jobs.offsets[j]), int(loop.jobs.nn[j])
            gone = np.isin(loop.out.alloc_nodes[lo:lo + n], down)
            if self.no_kill[j] and n - int(gone.sum()) >= self.low[j]:
                self._shrink(loop, t, j, gone, complete)
                moved.append(j)
            else:
                kill.append(j)
        if moved:
            self._reschedule(loop, moved)
        killed = np.array(kill, dtype=np.int64)
        for j in kill:
            if j in self.shapes or loop.jobs.nn[j] != self.full[j]:
                self._before_kill(loop, t, j)
        return killed

    def killed(self, loop, killed: np.ndarray) -> None:
        """After the loop killed ``killed``: a requeued attempt asks for its full
        width again, with what is left of its runtime there."""
        for j in killed.tolist():
            self.shapes.pop(j, None)
            if loop.out.start[j] < 0:
                loop.jobs.nn[j] = self.full[j]
                self.base[j] = loop.jobs.runtime[j]

    def _shrink(self, loop, t, j, gone, complete):
        jobs, out = loop.jobs, loop.out
        lo, n = int(jobs.offsets[j]), int(jobs.nn[j])
        nodes = out.alloc_nodes[lo:lo + n].copy()
        masks = out.alloc_mask[lo:lo + n].copy()
        start, pull = int(out.start[j]), int(loop.images.pull[j])
        starts, widths, runtime, width, _ = self._shapes(loop, j)
        keep = n - int(gone.sum())
        if t > starts[-1]:
            self.log.append((j, int(loop.requeues.restarts[j]), starts[-1], t, nodes, masks))
            starts.append(t)
            widths.append(keep)
        else:                       # a second failure at the same instant: that shape never ran
            widths[-1] = keep
        self._release(loop, t, j, nodes, masks, gone, complete)
        end = finish(starts, widths, start + pull, runtime * width)
        out.end[j] = min(end, start + int(jobs.limit[j]))
        jobs.runtime[j] = end - start - pull     # what decides COMPLETED or TIMEOUT

    @staticmethod
    def _release(loop, t, j, nodes, masks, gone, complete):
        """The nodes ``gone`` leave job j: put first in its allocation, they are
        released as the end of a job on them alone (resources, held profile, running
        lists, limit usage); the job's count in its limit groups stays."""
        jobs, out, lim = loop.jobs, loop.out, loop.lim
        lo, d = int(jobs.offsets[j]), int(gone.sum())
        out.alloc_nodes[lo:lo + len(nodes)] = np.concatenate([nodes[gone], nodes[~gone]])
        out.alloc_mask[lo:lo + len(nodes)] = np.concatenate([masks[gone], masks[~gone]])
        jobs.nn[j] = d
        jj, now = np.int64(j), np.int64(t)
        complete(jj, now, loop.rules, jobs, loop.types, loop.nodes, loop.free, loop.p,
                 loop.run_lists, lim, loop.topo, out)
        _count_submitted(jj, np.int64(1), lim)
        np.add.at(lim.gusage[:, 0], lim.jg[lim.jg_off[j]:lim.jg_off[j + 1]], 1)
        out.alloc_nodes[lo:lo + len(nodes) - d] = nodes[~gone]
        out.alloc_mask[lo:lo + len(nodes) - d] = masks[~gone]
        jobs.nn[j] = len(nodes) - d

    @staticmethod
    def _reschedule(loop, moved):
        """The completion heap with the new ends of the jobs ``moved``."""
        ev, out = loop.ev, loop.out
        nev = int(loop.sc[2])
        k, v = ev.evk[:nev].copy(), ev.evj[:nev].copy()
        at = np.isin(v, moved)
        k[at] = out.end[v[at]]
        by = np.lexsort((v, k))
        ev.evk[:nev], ev.evj[:nev] = k[by], v[by]

    def _before_kill(self, loop, t, j):
        """A shrunk attempt is killed: it had its first runtime to do, and keeps the
        work of its last checkpoint (whole seconds at its full width)."""
        starts, widths, runtime, width, pull = self._shapes(loop, j)
        start = int(loop.out.start[j])
        saved = saved_work(starts, widths, start + pull, t,
                           int(loop.requeues.interval[j])) // width
        loop.jobs.runtime[j] = runtime
        loop.requeues.saved[j] = saved

    def records(self, order, inverse) -> Resizes:
        """The log in the caller's job order (as
        :meth:`fastsched.engine.requeue.Requeues.attempts` has its own)."""
        log = sorted(self.log, key=lambda r: (int(order[r[0]]), r[1], r[2]))
        counts = np.array([len(r[4]) for r in log], dtype=np.int64)
        offsets = np.zeros(len(log) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])

        def col(k):
            return np.array([r[k] for r in log], dtype=np.int64)
        return Resizes(job=np.asarray(order)[col(0)], attempt=col(1), start=col(2),
                       end=col(3), alloc_offsets=offsets,
                       alloc_nodes=np.concatenate([r[4] for r in log]).astype(np.int64)
                       if log else np.zeros(0, dtype=np.int64),
                       alloc_gpu_mask=np.concatenate([r[5] for r in log]).astype(np.uint64)
                       if log else np.zeros(0, dtype=np.uint64))

    @staticmethod
    def trimmed(offsets, nn, nodes, masks):
        """The allocation CSR with each job's first ``nn`` entries of its slot (a shrunk
        job holds fewer nodes than it asked for)."""
        offsets = np.asarray(offsets, dtype=np.int64)
        nn = np.asarray(nn, dtype=np.int64)
        if np.array_equal(np.diff(offsets), nn):
            return offsets, nodes, masks
        new = np.zeros(len(nn) + 1, dtype=np.int64)
        np.cumsum(nn, out=new[1:])
        index = np.arange(new[-1], dtype=np.int64) + np.repeat(offsets[:-1] - new[:-1], nn)
        return new, nodes[index], masks[index]
