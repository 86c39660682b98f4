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
    def of(cls, cluster, jobs, containers, power, engine: str, **refused) -> "StartCosts | None":
        """The costs of ``containers`` and ``power`` (None when neither is given) for the
        jobs of ``jobs``; ``refused``: the Scheduler's options not modelled with them
        (UnsupportedError naming the first given)."""
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

    def decide(self, d: Decisions, jobs) -> Decisions:
        """``d`` with each job's configure, pull and end times (``jobs``: the queued
        jobs, in ``d``'s order)."""
        configure, pull = self._costs(d, commit=False)
        started = d.outcome == START
        run = np.minimum(pull + jobs.runtime, jobs.time_limit)
        end = np.where(started, d.now + configure + run, -1).astype(np.int64)
        return replace(d, configure_time=configure, pull_time=pull, end_time=end)

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
        """Jobs on ``nodes`` ended at ``now``."""
        if self.power is not None:
            self.power.ended(nodes, now)


def refuse_with_power(costs: StartCosts | None, what: str) -> None:
    """UnsupportedError for ``what`` (a Scheduler call) with power saving: node events,
    and running jobs given from outside, whose nodes' power states are not known."""
    if costs is not None and costs.power is not None:
        raise UnsupportedError(f"{what} with power saving is not modelled in the "
                               "embeddable Scheduler yet (simulate models node events "
                               "with power saving)")
