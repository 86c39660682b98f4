"""Engine state kept between single passes (:func:`fastsched.engine.plan.plan_kept`).

A single pass (:func:`fastsched.engine.plan_nodes`) builds its state from the
running jobs and the cluster: the free-now arrays, the per-node running lists
and the work profile, O(nodes) however short the queue. A scheduler that
passes every few seconds over the same running jobs can keep that state
instead: :class:`KeptState` builds it once for a given set of running jobs,
availability and time grid, and each pass runs on it and hands it back as it
found it (the pass undoes its reservations, :func:`.undo.undo_starts` its
starts; the free-now arrays, which a start also changes, are copied per pass).
A pass at another ``now`` only moves each node's first breakpoint.

The state is rebuilt when the running jobs (another object), the availability
or the resolution differ from those it was built for; a failed pass drops it.
"""
from __future__ import annotations

import numpy as np

from ..model.cluster import Cluster
from .inputs import new_nodes
from .profile import _build_all, new_profile
from .running import RunningJobs, _running_state, check_planned_ends
from .state import FreeNow, new_free
from .undo import start_at, undo_starts


class KeptState:
    """The engine state of one set of running jobs, kept for the next pass
    (empty until the first)."""

    def __init__(self):
        self._key = None

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
                self.now = now
        return self

    def _build(self, cluster, running, available, res, now) -> None:
        self.nodes = new_nodes(cluster, available)
        free_now, self.run, wcap = _running_state(cluster, running, now, res)
        self._free = new_free(*free_now, 0, int(self.nodes.capG.max(initial=0)), self.nodes)
        self.p = new_profile(wcap)
        _build_all(np.int64(now), self.p, self.run, self._free)
        self.now = now

    def free(self, num_types: int) -> FreeNow:
        """A copy of the free-now state for a pass over ``num_types`` request types."""
        f = self._free
        return FreeNow(*(a.copy() for a in (f.fg, f.fc, f.fm, f.fmask)),
                       np.full(num_types, -1, dtype=np.int64),
                       *(a.copy() for a in (f.bhead, f.bnext, f.bprev, f.bval, f.idle)))

    def restore(self, p, run, jobs, out, n: int, res: int) -> None:
        """After a pass (``keep``: its reservations undone) that left the profile ``p``
        and running lists ``run`` (maybe moved to bigger arrays): undo its starts."""
        undo_starts(np.int64(self.now), np.int64(res), jobs, out, np.int64(n), p, run)
        self.p, self.run = p, run

    def drop(self) -> None:
        """Forget the state (a pass failed half-way): the next pass builds it."""
        self._key = None
