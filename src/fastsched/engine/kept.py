"""Engine state kept between single passes (:func:`fastsched.engine.plan.plan_kept`).

A single pass (:func:`fastsched.engine.plan_nodes`) builds its state from the
running jobs and the cluster: the free-now arrays, the per-node running lists
and the work profile, each request type's free-now and capacity counts and its
run index (:mod:`.runindex`), O(nodes) however short the queue. A scheduler
that passes every few seconds over the same running jobs can keep that state
instead: :class:`KeptState` builds it once for a given set of running jobs,
availability and time grid, and each pass runs on it and hands it back as it
found it (the pass undoes its reservations, :func:`.undo.undo_starts` its
starts, and their give-backs bring the run index's entries of the nodes they
touch and the free-now arrays up to date). Request types are counted, and given
a run index slot, once per kept state: a later pass over the same types pays for
its own plans and holds.
A pass at a later ``now`` moves each node's first breakpoint and the run index's
runs that started at the old one (:func:`.undo.move_index`); at an earlier one, or
when such a run would leave a slot, it starts a new run index.

Between passes the running jobs change: :meth:`KeptState.started` and
:meth:`KeptState.ended` bring the state up to date in place (:mod:`.undo`: holds
and give-backs from the kept ``now`` to the jobs' held ends, the run index, the
running lists, free-now and its counts follow), so that a scheduler starting and
ending jobs at every pass keeps paying the queue's work only. The state is rebuilt
when the running jobs are another object than the one it holds or follows, or the
availability or the resolution differ from those it was built for; a failed pass
or update drops it.
"""
from __future__ import annotations

import numpy as np

from ..model.cluster import Cluster
from ..model.validation import _distinct_rows
from .inputs import available_capacity, new_nodes
from .passes import _new_index
from .profile import _build_all, new_profile
from .running import RunningJobs, _running_state, check_planned_ends
from .state import FreeNow, Index, RequestTypes, new_free
from .treap import _INF, MAX_SLOTS, ix_packable
from .undo import give_back_ended, hold_started, move_index, start_at, undo_starts


class KeptState:
    """The engine state of one set of running jobs, kept for the next pass
    (empty until the first)."""

    def __init__(self):
        self._key = None
        self._ix = None
        self._cap_key = None
        self.builds = 0         # how many times the state was built (tests: it is kept)

    def ready(self, cluster: Cluster, running: RunningJobs, available: np.ndarray,
              res: int, now: int) -> "KeptState":
        """The state for a pass at ``now`` over ``running`` on the ``available`` nodes
        (built if it is not the one kept); raises as :func:`plan_nodes` does on running
        jobs whose planned end is not after ``now``."""
        key = self._key
        if key is None or key[0] is not cluster or key[1] is not running or key[3] != res \
                or not np.array_equal(key[2], available):
            self._key = None
            self._build(cluster, running, available, res, now)
            self._key = (cluster, running, available.copy(), res)
        else:
            check_planned_ends(running, now)
            if now != self.now:
                start_at(np.int64(now), self.p)
                if self._ix is not None and not move_index(np.int64(self.now), np.int64(now),
                                                           self._ix):
                    self._ix = None
                self.now = now
        return self

    def _build(self, cluster, running, available, res, now) -> None:
        self.nodes = new_nodes(cluster, available)
        free_now, self.run, wcap = _running_state(cluster, running, now, res)
        self._free = new_free(*free_now, 0, int(self.nodes.capG.max(initial=0)), self.nodes)
        self.p = new_profile(wcap)
        _build_all(np.int64(now), self.p, self.run, self._free)
        self.now = now
        self._ix = None
        self._counts = {}           # free-now count per request type (p, g, c, m)
        self.builds += 1
        self._packable = bool(ix_packable(self.nodes.capG, self.nodes.capC, self.nodes.capM))

    def capacity(self, cluster: Cluster, avail: np.ndarray):
        """``capacity`` of :func:`fastsched.engine.inputs.check_node_jobs` over the
        ``avail`` nodes of ``cluster``: each distinct request counted once while they
        stay the same."""
        key = self._cap_key
        if key is None or key[0] is not cluster or not np.array_equal(key[1], avail):
            self._cap_key = (cluster, avail.copy())
            self._caps, self._count = {}, available_capacity(cluster, avail)

        def capacity(part, gpus, cpus, mem):
            cols = [np.asarray(col, dtype=np.int64) for col in (part, gpus, cpus, mem)]
            kind, first = _distinct_rows(cols)
            keys = list(zip(*(col[first].tolist() for col in cols)))
            new = [k for k in keys if k not in self._caps]
            if new:
                self._caps.update(zip(new, self._count(*np.array(new, dtype=np.int64).T)
                                      .tolist()))
            return np.array([self._caps[k] for k in keys], dtype=np.int64)[kind]
        return capacity

    def free(self, types: RequestTypes) -> FreeNow:
        """The kept free-now state for a pass over request ``types`` (the pass's starts
        change it, :meth:`restore` gives it back), each counted (``tcount``: once per
        kept state and type; the pass keeps the counts up to date through its starts,
        as if it had counted them when first asked)."""
        f = self._free
        tcount = np.empty(len(types.p), dtype=np.int64)
        for ty, key in enumerate(_keys(types)):
            if key not in self._counts:
                self._counts[key] = _free_count(self.nodes, f, *key)
            tcount[ty] = self._counts[key]
        return f._replace(tcount=tcount)

    def index(self, types: RequestTypes, limit: np.ndarray, pc_off: np.ndarray,
              pc_type: np.ndarray, may_index: bool) -> Index:
        """The run index for a pass over request ``types`` (its jobs' time ``limit`` and
        partition choices' types, CSR ``pc_off``/``pc_type``): the kept slots serve the
        types they were built for, from the first plan; a new slot keeps the runs at
        least as long as the shortest limit of the type in the whole queue, so that the
        next pass over it can use it from the first job."""
        if self._ix is None or self._ix.top[1] >= MAX_SLOTS:
            self._ix, self._slots = _new_index(0, True), {}
            self._ix.top[3] = 1             # kept: the give-backs keep it up to date
        on = may_index and self._packable
        slot = np.full(len(types.p), -1, dtype=np.int64)
        if on:
            for ty, key in enumerate(_keys(types)):
                slot[ty] = self._slots.get(key, -1)
        tmin = np.full(len(types.p), _INF, dtype=np.int64)
        np.minimum.at(tmin, pc_type, np.repeat(limit, np.diff(pc_off)))
        self._ix.top[2] = 1 if on else 0
        return self._ix._replace(slot=slot, qn=np.zeros(len(types.p), dtype=np.int64), tmin=tmin)

    def restore(self, p, run, free: FreeNow, jobs, out, n: int, res: int, ix: Index,
                types: RequestTypes) -> None:
        """After a pass (``keep``: its reservations undone) that left the profile ``p``,
        running lists ``run`` (maybe moved to bigger arrays), free-now ``free`` (of
        :meth:`free`) and run index ``ix``: undo its starts, and keep the slots it added."""
        self._ix = undo_starts(np.int64(self.now), np.int64(res), jobs, out, np.int64(n), p,
                               run, ix, free, types, self.nodes)
        self.p, self.run = p, run
        keys = _keys(types)
        for ty in np.flatnonzero(ix.slot >= 0).tolist():
            self._slots[keys[ty]] = int(ix.slot[ty])

    def started(self, old: RunningJobs, running: RunningJobs, new: RunningJobs) -> None:
        """Running jobs ``new`` started: ``running`` (``old`` and them) replaces ``old``
        (the state follows if it holds ``old``)."""
        self._follow(hold_started, old, running, new)

    def ended(self, old: RunningJobs, running: RunningJobs, gone: RunningJobs) -> None:
        """Running jobs ``gone`` (of ``old``) ended: ``running`` (the others) replaces
        ``old`` (the state follows if it holds ``old``). Whenever they ended, the
        state gives back what they hold from its ``now`` on: a later pass sees them
        gone."""
        self._follow(give_back_ended, old, running, gone)

    def _follow(self, kernel, old, running, r) -> None:
        key = self._key
        if key is None or key[1] is not old:
            return
        if not len(r):
            self._key = (key[0], running, *key[2:])
            return
        end = -(-np.asarray(r.planned_end, dtype=np.int64) // key[3]) * key[3]
        if r.gpu_mask is None or end.min() <= self.now:
            self.drop()         # (bits unknown; or held ends a build at now would refuse)
            return
        keys = list(self._counts)
        types = RequestTypes(*(np.array([k[i] for k in keys], dtype=np.int64)
                               for i in range(4)), np.zeros(len(keys), dtype=np.int64))
        tcount = np.array([self._counts[k] for k in keys], dtype=np.int64)
        ix = self._ix if self._ix is not None else _new_index(0, True)
        self._key = None        # dropped unless the update completes
        i64 = [np.ascontiguousarray(a, dtype=np.int64)
               for a in (r.node_offsets, r.nodes, r.gpus, r.cpus, r.mem)]
        res = kernel(np.int64(self.now), np.int64(key[3]), end, *i64,
                     np.ascontiguousarray(r.gpu_mask, dtype=np.uint64), self.p, self.run, ix,
                     self._free._replace(tcount=tcount), types, self.nodes)
        if len(res) == 4 and not res[3]:
            self.drop()
            return
        self.p, self.run = res[0], res[1]
        if self._ix is not None:
            self._ix = res[2]
        self._counts = {k: int(n) for k, n in zip(keys, tcount.tolist()) if n >= 0}
        self._key = (key[0], running, *key[2:])

    def drop(self) -> None:
        """Forget the state (a pass failed half-way): the next pass builds it."""
        self._key = None
        self._ix = None


def _keys(types: RequestTypes) -> list:
    """Each request type as a key (partition, g, c, m) that outlives the pass."""
    return list(zip(types.p.tolist(), types.g.tolist(), types.c.tolist(), types.m.tolist()))


def free_counts(types: RequestTypes, nodes, free: FreeNow) -> np.ndarray:
    """Per request type: the nodes of its partition whose free-now (running jobs only)
    covers it (what a pass's ``tcount`` counts when first asked)."""
    return np.array([_free_count(nodes, free, *key) for key in _keys(types)], dtype=np.int64)


def _free_count(nodes, free: FreeNow, p: int, g: int, c: int, m: int) -> int:
    xs = nodes.pflat[nodes.poff[p]:nodes.poff[p + 1]]
    return int(np.count_nonzero((free.fg[xs] >= g) & (free.fc[xs] >= c) & (free.fm[xs] >= m)))
