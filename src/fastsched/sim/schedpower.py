"""Power saving and cloud bursting in the embeddable :class:`fastsched.Scheduler`: the
nodes' power states, and the boots a start waits for, by the simulator's rule
(:mod:`fastsched.model.power`, :mod:`fastsched.engine.power`).

Per node: ``busy`` (jobs on it), ``idle`` (when its last job ended; ``NEVER``: a CLOUD
node never used) and ``ready`` (when its last boot ends), changed at starts and ends
only, never by a scan of the nodes. At a start a node with no job is powered down when
it is CLOUD and never ran a job, or was idle longer than SuspendTime (strictly, as
Slurm's ``last_busy < now - SuspendTime``) and is not excluded; it takes a resume token
(one every 60000 / ResumeRate ms, first come first served), boots once its power-down
is done, and the job waits for its last node: Slurm's job state CONFIGURING
(``JOB_CONFIGURING``, set with ``JOB_POWER_UP_NODE`` in node_scheduler.c when the
allocation overlaps the powered-down nodes). The job is allocated, not pending: its
state reason is Slurm's "None", and ``job_config_fini`` (job_mgr.c) resets its start to
when its nodes are ready, its time limit counting from then. A pass computes its
starts' boots on a copy of their nodes' state (:meth:`SchedulerPower.boots`, the
what-if); :meth:`fastsched.Scheduler.apply` computes them again and keeps it.
With SuspendRate a node idle past SuspendTime waits for a power-down token, as in the
simulator (:func:`fastsched.engine.power.settle`): ``down`` holds when its power-down
began (or None: not yet), ``waiting`` the nodes still waiting, by (idle, node).
"""
from __future__ import annotations

import copy
import heapq

import numpy as np

from ..engine.power import NEVER
from ..model.cluster import Cluster
from ..io.slurmpower import node_boots
from .power import check_power, down_cloud, engine_power

#: a node's power state, as sinfo's STATE suffixes name them (on: "")
POWER_STATES = ("", "POWERING_UP", "POWERING_DOWN", "POWERED_DOWN")


class SchedulerPower:
    """The power state of a Scheduler's nodes."""

    def __init__(self, power, cluster: Cluster):
        self.model = check_power(power, cluster)
        st, self.suspend_timeout, _, self.period, cloud, self.excluded, \
            self.suspend_period = engine_power(self.model, cluster)
        self.boot = node_boots(cluster, self.model)     # seconds per node
        self.suspend_time = None if st < 0 else st
        X = cluster.num_nodes
        self.busy = np.zeros(X, dtype=np.int64)
        self.idle = np.where(cloud, NEVER, 0).astype(np.int64)
        self.ready = np.zeros(X, dtype=np.int64)
        self.token_ms = 0            # the next power-up's earliest time (ms)
        self.power_ups = 0
        self.up = down_cloud(self.model, cluster)   # None: every node may come up
        self.down: dict = {}         # node -> when its power-down began (SuspendRate)
        self.suspend_ms = 0          # the next power-down's earliest time (ms)
        self.waiting: list = []      # heap of (idle, node): stale once ``idle`` moved on
        if self.limited():
            self.waiting = [(0, x) for x in np.flatnonzero(~cloud & ~self.excluded).tolist()]

    def limited(self) -> bool:
        """Whether SuspendRate limits the power-downs (and idle nodes may power down)."""
        return self.suspend_period > 0 and self.suspend_time is not None

    def settle(self, now: int) -> None:
        """Hand out the power-down tokens of the times before ``now``: in (idle, node)
        order each node still idle takes the next (one every ``suspend_period`` ms) and
        is powered down from that token's second, if that is before ``now``."""
        while self.waiting:
            idle, x = self.waiting[0]
            if self.busy[x] or self.idle[x] != idle or x in self.down:
                heapq.heappop(self.waiting)        # given a job, or idle again since
                continue
            t_ms = max((idle + self.suspend_time) * 1000, self.suspend_ms)
            s = -(-t_ms // 1000)
            if s >= now:
                return
            heapq.heappop(self.waiting)
            self.suspend_ms = t_ms + self.suspend_period
            self.down[x] = s

    def _settled(self, now: int) -> "SchedulerPower":
        """A copy with the tokens before ``now`` handed out (a what-if or a query at
        ``now`` changes nothing)."""
        view = copy.copy(self)
        view.waiting, view.down = list(self.waiting), dict(self.down)
        view.settle(now)
        return view

    def _idle_from(self, xs: np.ndarray, ts) -> None:
        """Nodes ``xs`` (no job on them) are idle from ``ts``; with SuspendRate each
        waits for a power-down token anew (without, ``down`` stays empty)."""
        self.idle[xs] = ts
        if self.limited():
            for x, t in zip(xs.tolist(), np.broadcast_to(ts, xs.shape).tolist()):
                self.down.pop(x, None)
                if not self.excluded[x]:
                    heapq.heappush(self.waiting, (t, x))

    def _down_at(self, x: int):
        """When node ``x`` (no job on it) began powering down in its current idle period
        (None: it does not, or not yet)."""
        if self.suspend_time is None or self.excluded[x]:
            return None
        if not self.limited():
            return int(self.idle[x]) + self.suspend_time
        return self.down.get(x)

    def available(self, available: np.ndarray) -> np.ndarray:
        """``available`` without the CLOUD nodes that never come up (a boot over
        ResumeTimeout: DOWN for good, as the simulator has them)."""
        return available if self.up is None else available & self.up

    def boots(self, now: int, node_lists: list, *, commit: bool) -> np.ndarray:
        """The seconds each job started at ``now`` on its nodes (``node_lists``, in start
        order) waits for their boots (0: none). ``commit``: keep the power-ups and the
        nodes' jobs."""
        if commit:
            self.settle(now)
        pw = self._settled(now) if self.limited() and not commit else self
        busy, ready = {}, {}
        token_ms, power_ups = self.token_ms, self.power_ups
        out = np.zeros(len(node_lists), dtype=np.int64)
        for k, nodes in enumerate(node_lists):
            last = now
            for x in nodes:
                if busy.setdefault(x, int(self.busy[x])) == 0:
                    if pw._powered_down(x, now):
                        r_ms = max(now * 1000, token_ms)
                        token_ms = r_ms + self.period
                        power_ups += 1
                        r = (r_ms + 999) // 1000
                        if self.idle[x] != NEVER:
                            r = max(r, pw._down_at(x) + self.suspend_timeout)
                        ready[x] = r + int(self.boot[x])
                busy[x] += 1
                last = max(last, ready.get(x, int(self.ready[x])))
            out[k] = last - now
        if commit:
            for x, b in busy.items():
                self.busy[x] = b
                self.down.pop(x, None)
            for x, r in ready.items():
                self.ready[x] = r
            self.token_ms, self.power_ups = token_ms, power_ups
        return out

    def _powered_down(self, x: int, now: int) -> bool:
        if self.idle[x] == NEVER:
            return True
        down = self._down_at(x)
        return down is not None and now > down

    def ended(self, nodes: np.ndarray, now: int) -> None:
        """Jobs on ``nodes`` (one entry per job and node) ended (or were killed) at
        ``now``: a node left without a job is idle from now, or from the end of its boot
        if it is still booting (Slurm sets a resumed node's ``last_busy`` when it
        registers; the boot goes on)."""
        np.subtract.at(self.busy, nodes, 1)
        free = np.unique(nodes[self.busy[nodes] == 0])
        self._idle_from(free, np.maximum(now, self.ready[free]))

    def running(self, nodes: np.ndarray) -> None:
        """Jobs given from outside run on ``nodes`` (one entry per job and node): those
        nodes are on (:meth:`fastsched.Scheduler.from_state`)."""
        np.add.at(self.busy, nodes, 1)

    def booting(self, nodes: np.ndarray, now: int) -> np.ndarray:
        """The nodes of ``nodes`` booting at ``now`` for the jobs allocated them: a drain
        of one kills those jobs (node_mgr.c ``update_node``: a DRAIN request for a node
        "allocated and being powered up" requeues its jobs)."""
        return nodes[(self.busy[nodes] > 0) & (self.ready[nodes] > now)]

    def back(self, nodes: np.ndarray, now: int) -> None:
        """``nodes`` come back at ``now`` (resumed after a drain or a failure): one with
        no job that is not powered down (nor powering down) is idle from ``now``
        (node_mgr.c sets ``last_busy = now`` at a resume unless the node is
        POWERED_DOWN); a powered-down one stays so."""
        self.settle(now)
        back = [x for x in nodes[self.busy[nodes] == 0].tolist()
                if self.idle[x] != NEVER and not self._powered_down(x, now)
                and self.idle[x] < now]
        self._idle_from(np.array(back, dtype=np.int64), now)

    def states(self, now: int) -> np.ndarray:
        """Each node's power state at ``now`` (:data:`POWER_STATES`)."""
        if self.limited():
            self = self._settled(now)
        out = np.zeros(len(self.busy), dtype=np.int64)
        out[self.ready > now] = 1
        st = self.suspend_time
        if st is not None:
            at = self.idle + st
            if self.limited():
                at = np.full(len(at), np.iinfo(np.int64).max // 2)
                at[list(self.down)] = list(self.down.values())
            down = (self.busy == 0) & ~self.excluded & (now > at)
            out[down] = np.where(now >= at[down] + self.suspend_timeout, 3, 2)
        out[(self.busy == 0) & (self.idle == NEVER)] = 3
        return np.array(POWER_STATES, dtype=object)[out]
