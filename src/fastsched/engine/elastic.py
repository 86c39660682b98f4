"""Elastic jobs in the event loop: a ``--no-kill`` job on nodes that go down shrinks
onto the rest while it keeps its minimum nodes, and with ``regrow`` takes nodes that
come back (:mod:`fastsched.model.elastic` has the rules and the work model).

The loop hands every ``down`` event's running jobs to :meth:`Shrinks.shrink` before
killing any: the jobs that may shrink give the failed nodes back (the loop's own
completion releases them, as if a job of those nodes alone ended), keep the others,
and get a new end; the rest are killed as before. An ``up`` or ``resume`` event's
nodes that were out go to :meth:`Shrinks.grow` (with ``regrow``), before the instant's
pass: each is held for its new job from now to the job's hold end, as a start there
would. Bookkeeping is per resized job, in Python: failures are rare, and each touches
only its jobs and nodes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.elastic import REGROW_PREEMPT, finish, saved_work
from ..model.errors import UnsupportedError
from .earliest import _fitting_now
from .freenow import _tcount_update
from .limits import _count_submitted
from .passes import _lowest_gpus
from .profile import _advance_nodes, _hold, _on_grid, _room
from .running import _insert_running, _running_room
from .state import Ask


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

    def __init__(self, no_kill, low, full, runtime, regrow=False):
        self.no_kill = np.asarray(no_kill, dtype=bool)
        self.regrow = bool(regrow)
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
        return np.array(kill, dtype=np.int64)

    def before_kill(self, loop, t: int, killed: np.ndarray) -> None:
        """The jobs ``killed`` (a node failure, or a preemption: the whole job, on the
        nodes it holds now) are about to be killed at ``t``: a shrunk or narrow attempt
        keeps the node-seconds of its last checkpoint."""
        for j in killed.tolist():
            if j in self.shapes or loop.jobs.nn[j] != self.full[j]:
                self._before_kill(loop, t, j)

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
        self._reshape(loop, t, j, nodes, masks, n - int(gone.sum()))
        self._release(loop, t, j, nodes, masks, gone, complete)
        self._new_end(loop, j)

    def _reshape(self, loop, t, j, nodes, masks, width):
        """Job j's shape on ``nodes`` (GPU bits ``masks``) ends at ``t``, the next one
        has ``width`` nodes."""
        starts, widths = self._shapes(loop, j)[:2]
        if t > starts[-1]:
            self.log.append((j, int(loop.requeues.restarts[j]), starts[-1], t, nodes, masks))
            starts.append(t)
            widths.append(width)
        else:                       # a second resize at the same instant: that shape never ran
            widths[-1] = width

    def _new_end(self, loop, j):
        """Job j ends when its work is done at the widths of its shapes (at its limit
        at the latest)."""
        jobs, out = loop.jobs, loop.out
        start, pull = int(out.start[j]), int(loop.images.pull[j])
        starts, widths, runtime, width, _ = self._shapes(loop, j)
        end = finish(starts, widths, start + pull, runtime * width)
        out.end[j] = min(end, start + _own_limit(loop, j))
        jobs.runtime[j] = end - start - pull     # what decides COMPLETED or TIMEOUT

    def grow(self, loop, t: int, back) -> None:
        """The nodes ``back`` (ascending) came back at ``t`` (up or resumed, before the
        instant's pass): each running ``--no-kill`` job on fewer nodes than it asks for,
        in submit order, takes those of them in its partition where its request is free
        from ``t`` to its hold's end (start + time limit), lowest first, up to its
        count (:mod:`fastsched.model.elastic`)."""
        if not self.regrow:
            return
        jobs, out = loop.jobs, loop.out
        moved = []
        for j in np.flatnonzero(self.no_kill & (jobs.nn < self.full) & (out.start >= 0)
                                & (out.end > t)).tolist():
            lo, n = int(jobs.offsets[j]), int(jobs.nn[j])
            pool = back[loop.member[0][back, int(out.part_used[j])]]
            pool = pool[~np.isin(pool, out.alloc_nodes[lo:lo + n])]
            if not len(pool):
                continue
            held_end = int(_on_grid(np.int64(out.start[j] + jobs.limit[j]), loop.rules.res))
            want = int(self.full[j]) - n
            ask = Ask(np.int64(jobs.rg[j]), np.int64(jobs.rc[j]), np.int64(jobs.rm[j]),
                      np.int64(held_end - t), np.int64(want))
            _advance_nodes(pool, np.int64(t), loop.p)
            cand = np.empty(len(pool), dtype=np.int64)
            nc = int(_fitting_now(np.int64(t), ask, False, pool, loop.nodes, loop.p, cand))
            if nc:
                self._grow(loop, t, j, cand[:min(nc, want)], held_end)
                moved.append(j)
        if moved:
            self._reschedule(loop, moved)

    def _grow(self, loop, t, j, take, held_end):
        """Job j takes the nodes ``take`` from ``t`` to ``held_end``: held in the kept
        profile, its GPUs (the lowest free), free-now state, running lists and limit
        usage, as a start there would; its allocation stays ascending."""
        jobs, out, free = loop.jobs, loop.out, loop.free
        lo, n, d = int(jobs.offsets[j]), int(jobs.nn[j]), len(take)
        nodes = out.alloc_nodes[lo:lo + n].copy()
        masks = out.alloc_mask[lo:lo + n].copy()
        self._reshape(loop, t, j, nodes, masks, n + d)
        g, c, m = jobs.rg[j], jobs.rc[j], jobs.rm[j]
        loop.run_lists = _running_room(loop.run_lists, take, np.int64(d))
        taken = np.empty(d, dtype=np.uint64)
        for i, x in enumerate(take.tolist()):
            loop.p = _room(np.int64(x), loop.p)
            _hold(np.int64(x), np.int64(t), np.int64(held_end), g, c, m, loop.p)
            taken[i] = _lowest_gpus(free.fmask[x], g)
            free.fmask[x] &= ~taken[i]
            free.fg[x] -= g
            free.fc[x] -= c
            free.fm[x] -= m
            _tcount_update(np.int64(x), free.fg[x] + g, free.fc[x] + c, free.fm[x] + m, free,
                           loop.types, loop.nodes)
            _insert_running(np.int64(x), np.int64(held_end), g, c, m, np.int64(j),
                            loop.run_lists)
        both = np.concatenate([nodes, take])
        by = np.argsort(both, kind="stable")
        out.alloc_nodes[lo:lo + n + d] = both[by]
        out.alloc_mask[lo:lo + n + d] = np.concatenate([masks, taken])[by]
        jobs.nn[j] = n + d
        lim = loop.lim
        groups = lim.jg[lim.jg_off[j]:lim.jg_off[j + 1]]
        for k, per_node in ((1, g), (2, c), (3, m)):
            np.add.at(lim.gusage[:, k], groups, d * per_node)
        self._new_end(loop, j)

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


def _own_limit(loop, j: int) -> int:
    """Job j's time limit: its own, also for a preempted job in its GraceTime, whose
    hold the loop cuts to its grace end (:meth:`fastsched.engine.preempt.Preemptor.
    cut_hold`); the preemption stops it there, its end stays where its work ends."""
    cut = None if loop.preemptor is None else loop.preemptor.cut.get(j)
    return int(loop.jobs.limit[j]) if cut is None else int(cut)


def check_regrow(lifecycle, limits, images, topo, preempting: bool = False) -> None:
    """Regrowth takes nodes outside a pass: refused where a start there would be checked
    or shaped otherwise (limit caps, container pulls, GPU groups and topology), and with
    preemption (:data:`REGROW_PREEMPT`)."""
    if lifecycle is None or not getattr(lifecycle, "regrow", False):
        return
    if preempting:
        raise UnsupportedError(REGROW_PREEMPT)
    given = [name for name, on in (
        ("limits (QOS/association caps)", np.asarray(limits.caps).size > 0),
        ("container images", images is not None),
        ("topology placement or GPU groups", topo.levels.shape[0] > 0 or topo.excl.any()
         or topo.gmasks.shape[0] > 0)) if on]
    if given:
        raise UnsupportedError(f"regrowing --no-kill jobs (regrow) with {', '.join(given)} "
                               "is not modelled yet")
