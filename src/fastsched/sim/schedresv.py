"""Jobs that use an advance reservation (``--reservation``, MAGNETIC) in the embeddable
:class:`fastsched.Scheduler`: it schedules on the twin-node layout the simulator runs
them on (:mod:`.resvlayout`: each node of a reservation with members gets a twin, held
outside its windows), holding the same windows, so that driven at the simulator's
instants it starts what :func:`fastsched.simulate` starts. Its decisions show the
cluster's own nodes and partitions, and keep the layout's nodes (``layout_nodes``) for
:meth:`fastsched.Scheduler.apply`."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..engine import check_node_jobs, node_availability
from ..engine.inputs import ever_available
from ..model.cluster import Cluster
from ..model.errors import InputError
from ..model.reservations import Reservations
from ..model.resvjobs import members_of
from .decisions import BLOCKED, Decisions
from .resvlayout import TAIL, MemberLayout, member_layout, refuse_with_members, window_horizon


class SchedulerMembers:
    """The layout of a Scheduler's member jobs (``layout``) and the cluster it stands
    for (``cluster``)."""

    def __init__(self, cluster: Cluster, layout: MemberLayout):
        self.cluster, self.layout = cluster, layout

    @classmethod
    def of(cls, cluster: Cluster, jobs, resv: Reservations | None, partitions,
           **refused) -> "SchedulerMembers | None":
        """The layout when some job of ``jobs`` runs in or is drawn to one of ``resv``'s
        reservations (None else); ``refused``: the Scheduler's options that do not run
        with member jobs (UnsupportedError naming the first given)."""
        members = members_of(resv)
        if members is None:
            return None
        if jobs is None:
            raise InputError("jobs running in a reservation are jobs of a table: pass it as "
                             "jobs=", field="advance_reservations")
        members.check_jobs(len(jobs))
        refuse_with_members(**refused)
        choices = check_node_jobs(cluster, jobs, ever_available(cluster, None, None),
                                  partitions)
        horizon = window_horizon(jobs)
        layout = member_layout(cluster, members, choices, resv.windows(horizon), horizon, jobs)
        layout = replace(layout, partitions=check_node_jobs(
            layout.cluster, jobs, ever_available(layout.cluster, None, None),
            layout.partitions))
        return cls(cluster, layout)

    def available(self, available) -> np.ndarray | None:
        """Node availability of the cluster's nodes (checked), on the layout (a twin as
        its node)."""
        if available is None:
            return None
        return node_availability(self.cluster, available)[self.layout.node_of]

    def windows(self, now: int):
        """The windows a pass at ``now`` holds: the layout's (the simulator's), those not
        yet closed."""
        start, end, node = self.layout.blocked
        keep = end > now
        return start[keep], end[keep], node[keep]

    def shown(self, d: Decisions) -> Decisions:
        """``d`` (a pass on the layout) on the cluster's own nodes and partitions; a job
        planned at :data:`TAIL` (no window left can take it) is BLOCKED, as the
        simulator leaves it pending."""
        late = d.start_time >= TAIL
        outcome = np.where(late, BLOCKED, d.outcome).astype(d.outcome.dtype)
        start = np.where(late, -1, d.start_time)
        keep = np.repeat(~late, np.diff(d.node_offsets))
        counts = np.where(late, 0, np.diff(d.node_offsets))
        offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        nodes = d.nodes[keep]
        masks = None if d.gpu_mask is None else d.gpu_mask[keep]
        partition = np.where(d.partition >= 0, self.layout.partition_of[
            np.maximum(d.partition, 0)], d.partition).astype(d.partition.dtype)
        return replace(d, outcome=outcome, start_time=start, node_offsets=offsets,
                       nodes=self.layout.node_of[nodes], gpu_mask=masks,
                       partition=partition, cluster=self.cluster, layout_nodes=nodes)

    def node_indices(self, nodes: np.ndarray) -> np.ndarray:
        """The layout's indices of the cluster's ``nodes``: each node and its twins."""
        return np.flatnonzero(np.isin(self.layout.node_of, nodes)).astype(np.int64)
