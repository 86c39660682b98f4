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

from ..engine import RunningJobs, check_node_jobs, node_availability
from ..engine.inputs import ever_available
from ..model.cluster import Cluster
from ..model.errors import InputError
from ..model.reservations import Reservations
from ..model.resvjobs import JobReservations, members_of
from .decisions import BLOCKED, Decisions
from .resvlayout import TAIL, MemberLayout, member_layout, refuse_with_members, window_horizon
from .schedrunning import checked_running


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

    def running_on_layout(self, running: RunningJobs, inside: np.ndarray) -> RunningJobs:
        """``running`` (on the cluster's nodes) on the layout: each entry running inside
        a reservation's window (``inside`` >= 0, :func:`running_inside`) on its node's
        twin, the others on their nodes."""
        N, node_of = self.cluster.num_nodes, self.layout.node_of
        twin = np.full(N, -1, dtype=np.int64)
        twin[node_of[N:]] = np.arange(N, len(node_of), dtype=np.int64)
        nodes = np.asarray(running.nodes, dtype=np.int64)
        return replace(running, nodes=np.where(inside >= 0, twin[nodes], nodes))

    def node_indices(self, nodes: np.ndarray) -> np.ndarray:
        """The layout's indices of the cluster's ``nodes``: each node and its twins."""
        return np.flatnonzero(np.isin(self.layout.node_of, nodes)).astype(np.int64)


def running_inside(resv: Reservations, running: RunningJobs) -> np.ndarray:
    """Per entry (running job, node) of ``running``, the index of the reservation whose
    window the job runs in on that node (-1: none): the node is one of its nodes and
    the job's planned end falls inside one of its windows. No job but one running in a
    reservation holds its nodes while a window is open, and such a job ends (by its time
    limit) inside the window it started in, so the planned end tells them apart."""
    nodes = np.asarray(running.nodes, dtype=np.int64)
    last = np.repeat(np.asarray(running.planned_end, dtype=np.int64),
                     np.diff(running.node_offsets)) - 1        # its last second held
    out = np.full(len(nodes), -1, dtype=np.int64)
    for k, r in enumerate(resv.items):
        first, length, step = int(r.start), int(r.end) - int(r.start), r.period
        opened = first + np.maximum((last - first) // step, 0) * step if step else first
        inside = np.isin(nodes, np.asarray(r.nodes, dtype=np.int64)) & (last >= opened) \
            & (last < opened + length)
        out[inside] = k
    return out


def with_occupied(resv: Reservations, occupied: np.ndarray, num_jobs: int) -> JobReservations:
    """``resv`` (the ``num_jobs`` queued jobs' reservations) with the reservations
    ``occupied`` by running jobs (bool per reservation) laid out for them too."""
    if isinstance(resv, JobReservations):
        return JobReservations(resv.items, resv.num_nodes, member=resv.member,
                               attracted=resv.attracted, listed=resv.listed,
                               occupied=resv.occupied | occupied)
    return JobReservations(resv.items, resv.num_nodes,
                           member=np.full(num_jobs, -1, dtype=np.int32), occupied=occupied)


def occupied_reservations(cluster: Cluster, running: RunningJobs, resv, num_jobs: int):
    """For :meth:`fastsched.Scheduler.from_state`: ``(inside, resv)``, where ``inside``
    is :func:`running_inside` of ``running`` (checked first, InputError naming the
    field) and ``resv`` the advance reservations ``resv`` of the ``num_jobs`` queued
    jobs, with those the running jobs run in laid out for them too."""
    none = np.full(len(running.nodes), -1, dtype=np.int64)
    if not resv or not len(running.job_id):
        return none, resv
    inside = running_inside(resv, checked_running(cluster, running, "nodes"))
    occupied = np.isin(np.arange(len(resv.items)), inside)
    return inside, with_occupied(resv, occupied, num_jobs) if occupied.any() else resv
