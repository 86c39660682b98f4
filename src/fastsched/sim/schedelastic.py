"""Node ranges and regrowth in the embeddable :class:`fastsched.Scheduler`.

Node ranges (``--nodes=MIN-MAX``, ``Lifecycle.nodes_min``): a pass plans each job on
its MAX nodes and, when that start is not now, starts it now on as many as fit, at
least MIN, with the simulator's code (:func:`fastsched.engine.passes._narrow_now`, through
:func:`fastsched.engine.plan.plan_kept`'s ``nodes_min``). Its START decision holds
the nodes it got (``Decisions.nodes_of``), :meth:`Scheduler.apply` holds them for
its time limit, and the caller runs it for ``ceil(runtime x MAX / n)`` seconds on
``n`` nodes (:mod:`fastsched.model.elastic`); a ``--no-kill`` one shrinks from
there at :meth:`Scheduler.fail_nodes` (:mod:`.schedrequeue`).

Regrowth (``Lifecycle.regrow``): at :meth:`Scheduler.resume_nodes`, the nodes that were
down or drained until then are offered to the running ``--no-kill`` jobs on fewer nodes
than they ask for, in submit order, as the simulator offers them
(:meth:`fastsched.engine.elastic.Shrinks.grow`, :mod:`fastsched.model.elastic`): each
takes, lowest first and up to its count, those in the partition it runs in where its
whole request is free (from now to its hold's end: only running jobs hold anything
between passes, and their holds only end), with each node's lowest free GPUs; its next
shape ends when its node-seconds are done.
"""
from __future__ import annotations

import numpy as np

from ..engine import RunningJobs
from ..model.elastic import finish
from ..model.errors import UnsupportedError
from .bookkeeping import csr_offsets


def check_elastic(lifecycle, placement, limits, reservations, **refused) -> None:
    """:func:`check_ranges`, and with ``regrow`` the same options refused, and limit caps
    and any ``placement`` (GPU groups too), as :func:`fastsched.simulate` refuses them
    (a growth is no pass start: not checked against caps nor shaped by groups), and
    advance ``reservations`` (a growth here sees running jobs only)."""
    check_ranges(lifecycle, placement, **refused)
    if lifecycle is None or not lifecycle.regrow:
        return
    given = [name for name, value in refused.items() if value is not None] + \
        (["limits (QOS/association caps)"] if limits is not None and len(limits.caps) else []) \
        + (["placement"] if placement is not None else []) \
        + (["advance reservations"] if reservations is not None else [])
    if given:
        raise UnsupportedError(f"regrowing --no-kill jobs (regrow) with {', '.join(given)} "
                               "is not modelled in the Scheduler")


def check_ranges(lifecycle, placement, **refused) -> None:
    """UnsupportedError naming the Scheduler's options in ``refused`` (not None: given)
    that node ranges in ``lifecycle`` are not modelled with, nor topology ``placement``
    (a range starts on fewer nodes by best fit alone, as :func:`fastsched.simulate`'s;
    GPU groups alone are fine)."""
    if lifecycle is None or not lifecycle.ranged:
        return
    topology = placement is not None and placement.levels.shape[0] > 0
    given = [name for name, value in refused.items() if value is not None] + \
        (["topology placement"] if topology else [])
    if given:
        raise UnsupportedError(f"node ranges (nodes_min) with {', '.join(given)} are not "
                               "modelled in the Scheduler")


def regrow(s, rq, back: np.ndarray, now: int) -> None:
    """The nodes ``back`` (ascending) came back at ``now``: the running ``--no-kill`` jobs
    of Scheduler ``s`` on fewer nodes than they ask for take them (the requeue state
    ``rq`` keeps their shapes and logs each ended shape, RESIZING)."""
    r, rows = s._running, s._running_rows
    counts = np.diff(r.node_offsets)
    known = np.flatnonzero(rows >= 0)
    known = known[rq.no_kill[rows[known]] & (counts[known] < rq.width[rows[known]])]
    order = known[np.lexsort((r.job_id[known], s._catalog.submit(rows[known])))]
    jobs = s._catalog.take(rows[order])
    taken = {}
    for k, j in enumerate(order.tolist()):
        own = r.nodes[r.node_offsets[j]:r.node_offsets[j + 1]]
        pool = back[np.isin(back, s.cluster.partitions[int(rq.part[rows[j]])].nodes)
                    & ~np.isin(back, own)]
        g, c, m = (int(a[k]) for a in (jobs.gpus_per_node, jobs.cpus_per_node,
                                       jobs.mem_per_node))
        st = s.state
        free = (st.free_cpus[pool] >= c) & (st.free_mem_mb[pool] >= m) & \
            (_popcount(st.free_gpu_mask[pool]) >= g)
        take = pool[free][:int(rq.width[rows[j]]) - len(own)]
        if not len(take):
            continue
        masks = np.array([_lowest(int(st.free_gpu_mask[x]), g) for x in take.tolist()],
                         dtype=np.uint64)
        s._hold(RunningJobs.from_arrays(
            job_id=r.job_id[j:j + 1], planned_end=r.planned_end[j:j + 1],
            node_offsets=np.array([0, len(take)], dtype=np.int64), nodes=take,
            gpus=np.full(len(take), g), cpus=np.full(len(take), c),
            mem=np.full(len(take), m), gpu_mask=masks), +1)
        taken[j] = (take, masks, g, c, m)
        _reshape(rq, s, int(rows[j]), int(r.job_id[j]), own, len(own) + len(take), now)
    if taken:
        s._running = _with_nodes(r, taken)
        s._version += 1


def _reshape(rq, s, row: int, job_id: int, nodes, width: int, now: int) -> None:
    """Job ``row``'s shape on ``nodes`` ends at ``now`` (a RESIZING record), the next has
    ``width`` nodes and ends when the attempt's node-seconds are done."""
    start = int(s._catalog.start[row])
    starts, widths = rq.shapes[row]      # (a job on fewer nodes than it asks for has them)
    starts.append(now)
    widths.append(width)
    end = finish(starts, widths, start, int(rq.left[row]) * int(rq.width[row]))
    rq.log.append((job_id, int(rq.restarts[row]), starts[-2], now, "RESIZING", False, -1, 0,
                   end - now, np.asarray(nodes).copy()))
    if starts[-2] == now:        # a second resize at the instant: that shape never ran
        del starts[-2], widths[-2]


def _with_nodes(r: RunningJobs, taken: dict) -> RunningJobs:
    """``r`` with the entries of ``taken`` (running position -> (nodes, GPU bits, gpus,
    cpus, mem per node)) added, each job's nodes ascending."""
    per = np.diff(r.node_offsets)
    job_of = np.repeat(np.arange(len(r)), per)
    cols = [job_of, r.nodes, r.gpus, r.cpus, r.mem, r.gpu_mask]
    for j, (take, masks, g, c, m) in taken.items():
        n = len(take)
        extra = [np.full(n, j), take, np.full(n, g), np.full(n, c), np.full(n, m), masks]
        cols = [np.concatenate([a, np.asarray(b, dtype=a.dtype)]) for a, b in zip(cols, extra)]
        per[j] += n
    by = np.lexsort((cols[1], cols[0]))
    job_of, nodes, gpus, cpus, mem, mask = (a[by] for a in cols)
    return RunningJobs(r.job_id, r.planned_end, csr_offsets(per), nodes, gpus, cpus, mem,
                       mask, r.exclusive_topo)


def _popcount(masks: np.ndarray) -> np.ndarray:
    return np.array([bin(int(x)).count("1") for x in masks], dtype=np.int64)


def _lowest(free_bits: int, want: int) -> int:
    """The ``want`` lowest set bits of ``free_bits``."""
    out = 0
    while want > 0:
        bit = free_bits & -free_bits
        out |= bit
        free_bits ^= bit
        want -= 1
    return out
