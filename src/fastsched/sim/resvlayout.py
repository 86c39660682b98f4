"""How the node engine runs jobs that use an advance reservation: each node of a
reservation some job runs in gets a twin node, for the member jobs only, held whole
*outside* the reservation's windows, while the node itself stays held whole *inside*
them (for every other job, as without members). A node's two sides are never busy at
the same instant, so a schedule on the pair is a schedule on the node: the run maps
the twins back to their nodes.

Member jobs take partitions ``P@R`` (the nodes of partition P in reservation R, as
twins), one per partition they ask for: Slurm's node set for a job in a reservation
is the reservation's nodes within its partition. For a ``Flags=FLEX`` reservation,
``P@R`` also has all of P's own nodes: a member may run on any of them (held in other
reservations' windows, as for any job) and on R's nodes in R's windows (the twins),
at once. Its time on one of R's nodes is then wholly inside a window (a twin) or
wholly outside every window (the node): a run crossing a window's edge on R's nodes
is the one FLEX run this layout cannot express (docs/lifecycle.md). A job drawn to
MAGNETIC reservations takes those partitions of each first, then its own: it starts
wherever it can first, in the reservation on a tie. Nothing else changes for the other
jobs (their partitions hold no twin), so a run without member jobs is untouched.

A member job that fits no window (its time limit longer than every window left, or
submitted after the last) could only start after the twins' last hold, at
:data:`TAIL`: such a start is dropped, and the job stays pending, as Slurm holds it.
Two reservations sharing a node cannot both have members (their twins would not
exclude each other); neither can power saving, preemption, node ranges or regrowing
``--no-kill`` jobs run with member jobs (each keeps per-node state the twins would
split, or, regrowing, places a running job anew). Container images can: a twin uses
its node's image cache (the engine's ``images`` input maps each node to the cache it
uses, ``node_of``), one disk for both sides. So can ``--no-kill`` jobs that shrink: a
node and its twins go down together and are never busy at the same instant, so a job's
nodes on the layout are distinct physical nodes, and its widths count them; the shapes
a shrink ended (``resizes``) map back as the runs do. So can topology placement
(:func:`layout_placement`: a twin sits in its node's leaf, switch or block at every
level; GPU groups are every node's alike).

Node events (drain, resume, down, up) apply to a node and its twins at once
(:func:`layout_events`): a reserved node that fails is down for everyone, its members
included, and a member killed there is requeued as any job, waiting for a window again.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..engine.inputs import check_node_jobs, ever_available
from ..model.cluster import Cluster, Partition
from ..model.constraints import PartitionChoices
from ..model.errors import UnsupportedError
from ..model.events import NodeEvents
from ..model.resvjobs import JobReservations

#: the end of the twins' last hold: past every time a run reaches (the engine packs
#: window times below 2**40)
TAIL = (1 << 40) - 1


@dataclass(frozen=True)
class MemberLayout:
    """The cluster with the twins (``cluster``), the member jobs' partition choices
    (``partitions``), the windows the engine holds (``blocked``: ``(start, end, node)``
    arrays), each node's own index (``node_of``, the twins' nodes), each partition's
    (``partition_of``) and the reservation each partition is in (``reservation_of``,
    an index in the reservations' ``items``, -1: the cluster's own partitions)."""

    cluster: Cluster
    partitions: PartitionChoices
    blocked: tuple
    node_of: np.ndarray
    partition_of: np.ndarray
    reservation_of: np.ndarray


def window_horizon(jobs) -> int:
    """Until when repeating windows are listed for a run of ``jobs``: the last
    submission plus the longest time limit."""
    return int(jobs.submit_time.max(initial=0)) + int(jobs.time_limit.max(initial=0))


def member_layout(cluster: Cluster, resv: JobReservations, choices: PartitionChoices,
                  blocked, horizon: int, jobs) -> MemberLayout:
    """The layout for ``resv``'s member jobs (``choices``: every job's partitions;
    ``blocked``: the windows held for the other jobs; ``horizon``: repeating windows
    are listed until it, and beyond it as many more as :func:`_backlog` says)."""
    used = [int(k) for k in resv.used]
    _check_disjoint(resv, used)
    N, P = cluster.num_nodes, len(cluster.partitions)
    twin_nodes = [np.asarray(resv.items[k].nodes, dtype=np.int64) for k in used]
    node_of = np.concatenate([np.arange(N, dtype=np.int64)] + twin_nodes)
    first = N + np.concatenate(([0], np.cumsum([len(t) for t in twin_nodes])))
    twin_of = {k: first[j] + np.arange(len(twin_nodes[j])) for j, k in enumerate(used)}
    # partitions P@R: partition p's nodes of reservation R, as twins
    parts, partition_of, index = list(cluster.partitions), list(range(P)), {}
    reservation_of = [-1] * P
    for k in used:
        r_nodes = twin_nodes[used.index(k)]
        for p, part in enumerate(cluster.partitions):
            own = np.asarray(part.nodes, dtype=np.int64)
            nodes = twin_of[k][np.isin(r_nodes, own)]
            if "FLEX" in resv.items[k].flags:       # and the partition's own nodes
                nodes = np.concatenate((own, nodes))
            index[k, p] = len(parts)
            parts.append(replace(part, name=f"{part.name}@{resv.items[k].name}",
                                 nodes=np.sort(nodes).astype(np.int64)))
            partition_of.append(p)
            reservation_of.append(k)
    big = _with_twins(cluster, node_of, parts)
    new_choices = _member_choices(resv, choices, index, P)
    holds = [tuple(np.asarray(a, dtype=np.int64) for a in blocked)] if blocked else []
    for k in used:
        holds.append(_outside(resv, k, twin_of[k],
                              horizon + _backlog(resv, k, jobs) * resv.items[k].period))
    start, end, node = (np.concatenate([h[i] for h in holds]) for i in range(3))
    order = np.lexsort((node, end, start))
    return MemberLayout(big, new_choices, (start[order], end[order], node[order]),
                        node_of, np.asarray(partition_of, dtype=np.int32),
                        np.asarray(reservation_of, dtype=np.int32))


def layout_run(cluster: Cluster, resv: JobReservations, constraints: dict, horizon: int,
               jobs) -> MemberLayout:
    """The layout of a simulator run (:func:`member_layout` of its ``constraints``'
    partition choices and windows), with ``constraints`` set to run on it: its holds,
    its partition choices (checked as any run's) and its node events."""
    layout = member_layout(cluster, resv, constraints["partitions"], constraints["blocked"],
                           horizon, jobs)
    events = layout_events(constraints.get("events"), layout)
    constraints.update(blocked=layout.blocked, events=events, partitions=check_node_jobs(
        layout.cluster, jobs, ever_available(layout.cluster, None, events),
        layout.partitions), placement=layout_placement(constraints.get("placement"), layout))
    return layout


def layout_placement(placement, layout: MemberLayout):
    """``placement`` on the layout's nodes: a twin in its node's group at every level
    (leaf switch or block, and up), so that a member's leaves, switches and segments are
    its physical nodes'; the GPU groups are every node's alike (None: None)."""
    if placement is None:
        return None
    return replace(placement, levels=placement.levels[:, layout.node_of])


def layout_events(events: NodeEvents | None, layout: MemberLayout) -> NodeEvents | None:
    """``events`` on the layout's nodes: each event on its nodes and on their twins
    (each node, then its twins ascending), so a node's two sides leave and come back
    together."""
    N = int(np.sum(layout.node_of == np.arange(len(layout.node_of))))   # (a twin's differs)
    twin_node = layout.node_of[N:]
    if events is None or not len(twin_node):
        return events
    order = np.argsort(twin_node, kind="stable")
    count = np.bincount(twin_node, minlength=N)
    first = np.concatenate(([0], np.cumsum(count)))
    x = np.asarray(events.nodes, dtype=np.int64)
    width = 1 + count[x]                      # the node and its twins, per entry
    entry = np.repeat(np.arange(len(x)), width)
    rank = np.arange(int(width.sum())) - np.repeat(np.cumsum(width) - width, width)
    twin = N + order[np.clip(first[x][entry] + rank - 1, 0, len(order) - 1)]
    nodes = np.where(rank == 0, x[entry], twin)
    per_event = np.add.reduceat(width, events.offsets[:-1]) if len(x) else \
        np.zeros(len(events), dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(per_event))).astype(np.int64)
    return NodeEvents(events.time, events.kind, offsets, nodes.astype(np.int64),
                      events.reason)


def _member_choices(resv: JobReservations, choices: PartitionChoices, index: dict,
                    P: int) -> PartitionChoices:
    """Each job's partition choices on the layout: a member's partitions within its
    reservation, then (a ``--reservation`` list) within each other it names, in the
    reservations' order; for a job drawn to MAGNETIC ones, its partitions within each
    (in the reservations' order) and then its own; the others' unchanged."""
    lookup = np.full((len(resv.items), P), -1, dtype=np.int64)
    for (k, p), q in index.items():
        lookup[k, p] = q
    rows = np.repeat(np.arange(len(resv.member)), np.diff(choices.offsets))
    part = choices.partition.astype(np.int64)
    m = resv.member[rows]
    own = np.where(m >= 0, lookup[np.maximum(m, 0), part], part)
    # (row, rank, partition) of every choice; rank orders a row's reservations first
    R = len(resv.items)
    parts, ranks, rows_of = [own], [np.full(len(own), R)], [rows]
    for k in np.flatnonzero(resv.attracted.any(axis=0)).tolist():
        drawn = resv.attracted[rows, k]
        parts.append(lookup[k, part[drawn]])
        ranks.append(np.full(int(drawn.sum()), k))
        rows_of.append(rows[drawn])
    for k in np.flatnonzero(resv.listed.any(axis=0)).tolist():   # the lists' others
        also = resv.listed[rows, k] & (m != k)
        parts.append(lookup[k, part[also]])
        ranks.append(np.full(int(also.sum()), R + 1 + k))
        rows_of.append(rows[also])
    part, rank, row = (np.concatenate(a) for a in (parts, ranks, rows_of))
    order = np.lexsort((rank, row))            # stable: each row's own order kept
    offsets = np.zeros(len(resv.member) + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=len(resv.member)), out=offsets[1:])
    return PartitionChoices(offsets, part[order].astype(np.int32))


def _backlog(resv: JobReservations, k: int, jobs) -> int:
    """How many windows of reservation k past the horizon its members may need: their
    node-seconds (by time limit) over a window's, and two more (a job drawn to it may
    run outside). Every window listed is breakpoints on the twins' profiles, so not
    one per member: a member left without a window stays pending."""
    r = resv.items[k]
    if not r.period:
        return 0
    mine = resv.listed[:, k]
    work = int((jobs.num_nodes[mine].astype(np.int64) * jobs.time_limit[mine]).sum())
    return 2 + -(-work // (len(r.nodes) * (int(r.end) - int(r.start))))


def _check_disjoint(resv: JobReservations, used) -> None:
    """UnsupportedError when a reservation with members shares a node with another."""
    count = np.bincount(np.concatenate([np.asarray(r.nodes, dtype=np.int64)
                                        for r in resv.items]), minlength=resv.num_nodes)
    for k in used:
        if (count[np.asarray(resv.items[k].nodes, dtype=np.int64)] > 1).any():
            raise UnsupportedError(f"reservation {resv.items[k].name!r} shares a node with "
                                   "another reservation: jobs running in overlapping "
                                   "reservations are not modelled")


def _outside(resv: JobReservations, k: int, twins, horizon: int):
    """``(start, end, node)`` holds of reservation k's twins outside its windows opening
    before ``horizon``: before the first, between two, after the last (until TAIL)."""
    r = resv.items[k]
    length, step = int(r.end) - int(r.start), r.period
    count = 1 if not step else 1 + max(0, -(-(horizon - int(r.start)) // step) - 1)
    opens = int(r.start) + step * np.arange(count, dtype=np.int64)
    gap_start = np.concatenate(([0], opens + length))
    gap_end = np.concatenate((opens, [TAIL]))
    keep = gap_end > gap_start
    gap_start, gap_end = gap_start[keep], gap_end[keep]
    twins = np.asarray(twins, dtype=np.int64)
    return (np.repeat(gap_start, len(twins)), np.repeat(gap_end, len(twins)),
            np.tile(twins, len(gap_start)))


def _with_twins(cluster: Cluster, node_of: np.ndarray, partitions) -> Cluster:
    """``cluster`` with node ``node_of[i]``'s copy at each index i past its nodes."""
    N = cluster.num_nodes
    names = list(cluster.node_names) + [f"{cluster.node_names[x]}@twin{i}"
                                        for i, x in enumerate(node_of[N:].tolist())]
    return Cluster(names, cluster.cpus[node_of], cluster.gpus[node_of],
                   cluster.mem_mb[node_of], partitions=partitions,
                   gpu_type=cluster.gpu_type,
                   topology={k: v[node_of] for k, v in cluster.topology.items()},
                   default_partition=cluster.default_partition, weight=cluster.weight[node_of],
                   features=cluster.features[node_of], gpu_types=cluster.gpu_types[node_of],
                   node_state=cluster.node_state[node_of], settings=cluster.settings,
                   warnings=list(cluster.warnings))


def mapped_back(run, layout: MemberLayout):
    """The engine run on the layout, on the cluster's own nodes and partitions; a start
    at or after :data:`TAIL` (a member job no window could take) is dropped."""
    late = run.start >= TAIL
    start, end = np.where(late, -1, run.start), np.where(late, -1, run.end)
    ran = np.repeat(start >= 0, np.diff(run.alloc_offsets))   # (the others' are unset)
    nodes = run.alloc_nodes.copy()
    nodes[ran] = layout.node_of[nodes[ran]]
    partition = np.where(start >= 0, layout.partition_of[np.maximum(run.partition, 0)],
                         np.where(late, -1, run.partition)).astype(run.partition.dtype)
    a = run.attempts            # the attempts node failures killed (each started)
    if a is not None:
        a = replace(a, alloc_nodes=layout.node_of[a.alloc_nodes],
                    partition=layout.partition_of[a.partition].astype(a.partition.dtype))
    z = run.resizes             # the shapes shrinks ended (each started, on its nodes)
    if z is not None:
        z = replace(z, alloc_nodes=layout.node_of[z.alloc_nodes])
    return replace(run, start=start, end=end, alloc_nodes=nodes, partition=partition,
                   attempts=a, resizes=z)


def ran_in(run, layout: MemberLayout, resv: JobReservations) -> np.ndarray:
    """The name of the reservation each job of the engine run on the layout (before
    :func:`mapped_back`) ran in, as ``sacct``'s Reservation prints it: the one a member
    started in (of its ``--reservation`` list), a member's first that never started,
    the MAGNETIC one a drawn job started in, else ""."""
    started = (run.start >= 0) & (run.start < TAIL)
    k = np.where(started, layout.reservation_of[np.maximum(run.partition, 0)], -1)
    k = np.where((resv.member >= 0) & (k < 0), resv.member, k)
    names = np.array([r.name for r in resv.items] + [""], dtype=object)
    return names[np.where(k >= 0, k, len(resv.items))]


def flex_used(resv: JobReservations) -> bool:
    """Whether a job runs in (or is drawn to) a ``Flags=FLEX`` reservation of ``resv``:
    it may start on either side of the reservation's edge, which a time minimum's cut
    limit (measured on one side's holds) is not modelled with."""
    return any("FLEX" in resv.items[k].flags for k in resv.used.tolist())


def refuse_with_members(**options) -> None:
    """UnsupportedError naming the first option given (not None) that does not run
    with member jobs."""
    given = [name for name, value in options.items() if value is not None]
    if given:
        raise UnsupportedError(f"jobs running in a reservation (--reservation) are not "
                               f"modelled with {', '.join(given)} yet")
