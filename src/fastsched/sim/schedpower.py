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
"""
from __future__ import annotations

import numpy as np

from ..engine.power import NEVER
from ..model.cluster import Cluster
from .power import check_power, down_cloud, engine_power

#: a node's power state, as sinfo's STATE suffixes name them (on: "")
POWER_STATES = ("", "POWERING_UP", "POWERING_DOWN", "POWERED_DOWN")


class SchedulerPower:
    """The power state of a Scheduler's nodes."""

    def __init__(self, power, cluster: Cluster):
        self.model = check_power(power, cluster)
        st, self.suspend_timeout, self.boot, self.period, cloud, self.excluded = \
            engine_power(self.model, cluster)
        self.suspend_time = None if st < 0 else st
        X = cluster.num_nodes
        self.busy = np.zeros(X, dtype=np.int64)
        self.idle = np.where(cloud, NEVER, 0).astype(np.int64)
        self.ready = np.zeros(X, dtype=np.int64)
        self.token_ms = 0            # the next power-up's earliest time (ms)
        self.power_ups = 0
        self.up = down_cloud(self.model, cluster)   # None: every node may come up

    def available(self, available: np.ndarray) -> np.ndarray:
        """``available`` without the CLOUD nodes that never come up (a boot over
        ResumeTimeout: DOWN for good, as the simulator has them)."""
        return available if self.up is None else available & self.up

    def boots(self, now: int, node_lists: list, *, commit: bool) -> np.ndarray:
        """The seconds each job started at ``now`` on its nodes (``node_lists``, in start
        order) waits for their boots (0: none). ``commit``: keep the power-ups and the
        nodes' jobs."""
        busy, ready = {}, {}
        token_ms, power_ups = self.token_ms, self.power_ups
        out = np.zeros(len(node_lists), dtype=np.int64)
        for k, nodes in enumerate(node_lists):
            last = now
            for x in nodes:
                if busy.setdefault(x, int(self.busy[x])) == 0:
                    if self._powered_down(x, now):
                        r_ms = max(now * 1000, token_ms)
                        token_ms = r_ms + self.period
                        power_ups += 1
                        r = (r_ms + 999) // 1000
                        if self.idle[x] != NEVER:
                            r = max(r, int(self.idle[x]) + self.suspend_time
                                    + self.suspend_timeout)
                        ready[x] = r + self.boot
                busy[x] += 1
                last = max(last, ready.get(x, int(self.ready[x])))
            out[k] = last - now
        if commit:
            for x, b in busy.items():
                self.busy[x] = b
            for x, r in ready.items():
                self.ready[x] = r
            self.token_ms, self.power_ups = token_ms, power_ups
        return out

    def _powered_down(self, x: int, now: int) -> bool:
        if self.idle[x] == NEVER:
            return True
        return (self.suspend_time is not None and not self.excluded[x]
                and now > self.idle[x] + self.suspend_time)

    def ended(self, nodes: np.ndarray, now: int) -> None:
        """Jobs on ``nodes`` (one entry per job and node) ended (or were killed) at
        ``now``: a node left without a job is idle from now, or from the end of its boot
        if it is still booting (Slurm sets a resumed node's ``last_busy`` when it
        registers; the boot goes on)."""
        np.subtract.at(self.busy, nodes, 1)
        free = np.unique(nodes[self.busy[nodes] == 0])
        self.idle[free] = np.maximum(now, self.ready[free])

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
        x = nodes[self.busy[nodes] == 0]
        x = x[self.idle[x] != NEVER]
        if self.suspend_time is not None:
            x = x[self.excluded[x] | (now <= self.idle[x] + self.suspend_time)]
        self.idle[x] = np.maximum(self.idle[x], now)

    def states(self, now: int) -> np.ndarray:
        """Each node's power state at ``now`` (:data:`POWER_STATES`)."""
        out = np.zeros(len(self.busy), dtype=np.int64)
        out[self.ready > now] = 1
        st = self.suspend_time
        if st is not None:
            down = (self.busy == 0) & ~self.excluded & (now > self.idle + st)
            out[down] = np.where(now >= self.idle[down] + st + self.suspend_timeout, 3, 2)
        out[(self.busy == 0) & (self.idle == NEVER)] = 3
        return np.array(POWER_STATES, dtype=object)[out]
