"""What a start costs in the embeddable :class:`fastsched.Scheduler`: the boots of its
powered-down nodes (:mod:`.schedpower`) and its container image's pull
(:mod:`.schedimages`), as :func:`fastsched.simulate` counts them.

A pass's decisions say, per job started, how long it is CONFIGURING
(``configure_time``: its nodes boot first), its pull (``pull_time``: inside the job,
after the boots) and when it ends (``end_time``: start + configure + min(pull +
runtime, limit)); :meth:`fastsched.Scheduler.apply` keeps the caches and power states
and holds the job's nodes until its real start plus its limit (the boots counted from
the next pass on, as the simulator counts them).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..model.errors import InputError, UnsupportedError
from .decisions import START, Decisions
from .schedimages import SchedulerImages
from .schedpower import SchedulerPower


class StartCosts:
    """A Scheduler's image caches (``images``) and node power states (``power``), either
    None when not modelled."""

    def __init__(self, images: SchedulerImages | None, power: SchedulerPower | None):
        self.images, self.power = images, power

    @classmethod
    def of(cls, cluster, jobs, containers, power, engine: str,
           **refused) -> "StartCosts | None":
        """The costs of ``containers`` and ``power`` (None when neither is given) for the
        jobs of ``jobs``; ``refused``: the Scheduler's options not modelled with them
        (UnsupportedError naming the first given). Preemption is modelled with both as
        :func:`fastsched.simulate` models it: with power saving a victim CONFIGURING has
        Slurm's start time (its allocation's) and end time (its grace end, reset to its
        ready time plus its limit when its nodes are ready:
        :mod:`fastsched.sim.schedpreempt`); a victim's nodes keep their images, and a
        requeued victim's checkpoints count from the end of its pull (:meth:`pulled`)."""
        given = [name for name, value in (("containers", containers),
                                          ("power saving", power)) if value is not None]
        if not given:
            return None
        if engine in ("pool", "slurm"):
            model = "counts" if engine == "pool" else engine
            raise UnsupportedError(f"{given[0]} with reservations={model!r}: modelled on "
                                   "the node engine only (reservations=\"nodes\"), as in "
                                   "simulate")
        if containers is not None and jobs is None:
            raise InputError("containers describe the jobs of a table: pass it as jobs=",
                             field="containers")
        other = [name for name, value in refused.items() if value is not None]
        if other:
            raise UnsupportedError(f"{' and '.join(given)} with {other[0].replace('_', ' ')} "
                                   "in the embeddable Scheduler is not modelled yet")
        return cls(None if containers is None else
                   SchedulerImages(containers, jobs, cluster.num_nodes),
                   None if power is None else SchedulerPower(power, cluster))

    def available(self, available: np.ndarray) -> np.ndarray:
        """Node availability ``available`` with what power saving keeps DOWN."""
        return available if self.power is None else self.power.available(available)

    def decide(self, d: Decisions, jobs, requeue=None) -> Decisions:
        """``d`` with each job's configure, pull and end times (``jobs``: the queued
        jobs, in ``d``'s order; ``requeue``: the Scheduler's
        :class:`.schedrequeue.SchedulerRequeue`, whose requeued jobs run their work left)."""
        configure, pull = self._costs(d, commit=False)
        started = d.outcome == START
        work = jobs.runtime if requeue is None else requeue.left[d.rows]
        limit = jobs.time_limit if d.time_limit is None else d.time_limit
        run = np.minimum(pull + work, limit)
        end = np.where(started, d.now + configure + run, -1).astype(np.int64)
        return replace(d, configure_time=configure, pull_time=pull, end_time=end)

    def pulled(self, rows) -> np.ndarray:
        """The pull (seconds) of the attempt each of catalog ``rows`` runs now, or ran
        last (0 without containers): its work starts after it."""
        rows = np.asarray(rows, dtype=np.int64)
        return np.zeros(len(rows), dtype=np.int64) if self.images is None else \
            self.images.pull[rows]

    def commit(self, d: Decisions) -> np.ndarray:
        """Keep what ``d``'s starts change; returns each job's configure seconds."""
        return self._costs(d, commit=True)[0]

    def _costs(self, d: Decisions, *, commit: bool):
        """(configure seconds, pull seconds) per job of ``d`` (0 unless it starts)."""
        started = np.flatnonzero(d.outcome == START)
        nodes = d.nodes if d.layout_nodes is None else d.layout_nodes
        lists = [nodes[d.node_offsets[i]:d.node_offsets[i + 1]].tolist()
                 for i in started.tolist()]
        configure = np.zeros(len(d), dtype=np.int64)
        pull = np.zeros(len(d), dtype=np.int64)
        if self.power is not None:
            configure[started] = self.power.boots(d.now, lists, commit=commit)
        if self.images is not None:
            pull[started] = self.images.pulls(d.rows[started], lists, commit=commit)
        return configure, pull

    def ended(self, nodes: np.ndarray, now: int) -> None:
        """Jobs on ``nodes`` ended (or were killed) at ``now``."""
        if self.power is not None:
            self.power.ended(nodes, now)

    def running(self, nodes: np.ndarray) -> None:
        """Jobs given from outside run on ``nodes``: those are powered up."""
        if self.power is not None:
            self.power.running(nodes)

    def back(self, nodes: np.ndarray, now: int) -> None:
        """``nodes`` come back at ``now`` (:meth:`SchedulerPower.back`)."""
        if self.power is not None:
            self.power.back(nodes, now)


def check_node_event(costs: StartCosts | None, requeue, what: str, now) -> None:
    """Raise (before anything changes) for a node event (``what``: fail_nodes,
    drain_nodes, resume_nodes at ``now``) that power saving does not model with it: no
    ``now`` (a drain kills the jobs of the nodes booting then, a resume restarts a
    node's idle clock then), a boot over ResumeTimeout (CLOUD nodes that never come
    up) and elastic (``--no-kill``) jobs, as :func:`fastsched.simulate` refuses them."""
    if costs is None or costs.power is None:
        return
    if now is None:
        raise InputError(f"{what} with power saving needs now= (a drain kills the jobs "
                         "of the nodes booting then; a resume restarts an idle node's "
                         "SuspendTime clock then)", field="now")
    model = costs.power.model
    other = []
    if costs.power.up is not None:
        other.append(f"a boot ({int(costs.power.boot.max())} s) over ResumeTimeout "
                     f"({model.resume_timeout} s)")
    if requeue is not None and requeue.no_kill.any():
        other.append("elastic (--no-kill) jobs")
    if other:
        raise UnsupportedError(f"{what} with power saving and {' and '.join(other)} is not "
                               "modelled (simulate refuses node events with them too)")


def booting_jobs(costs: StartCosts | None, running, nodes: np.ndarray,
                 now: int | None) -> np.ndarray:
    """Positions in ``running`` (:class:`fastsched.engine.RunningJobs`) of the jobs a
    drain of ``nodes`` at ``now`` kills: those allocated a node still booting for them
    (none without power saving)."""
    if costs is None or costs.power is None:
        return np.zeros(0, dtype=np.int64)
    booting = costs.power.booting(nodes, now)
    entry_job = np.repeat(np.arange(len(running)), np.diff(running.node_offsets))
    return np.unique(entry_job[np.isin(running.nodes, booting)])
