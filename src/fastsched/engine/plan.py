"""The single pass (:func:`plan_nodes`): one scheduling pass of the engine on a
given state (running jobs, pending queue), with an outcome and a reason per job."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.cluster import Cluster
from ..model.constraints import LimitGroups, PartitionChoices
from ..model.errors import InputError, UnsupportedError
from ..model.jobs import JobTable
from ..model.policies import get_policy
from ..model.reservations import check_jobs_held_off
from .blocks import _exclusive, _with_held_blocks
from .inputs import (_check_policy, _grid, _permute_csr, _placement,
                     _request_types, _unique_rank, check_node_jobs, new_nodes, node_availability)
from .interrupt import call as _call, new_control
from .kept import KeptState, free_counts
from .limits import NCAPS
from .passes import _pass, pass_kept
from .passpreempt import trimmed
from .preemptplan import no_preempting
from .profile import _build_all, block_windows, new_profile
from .running import RunningJobs, _running_state
from .state import (Jobs, Limits, Rules, Topology, as_i64, new_free, new_outputs,
                    new_request_types, new_scratch, with_capacity)

START, RESERVED, BLOCKED = 0, 1, 2
OUTCOME_NAMES = ("start", "reserved", "blocked")
#: a request type gets a run index after this many plans in a single pass (< 0:
#: never): it plans the whole queue once, so builds pay sooner than in the event
#: loop. Read at each call, so tests can force either path.
_INDEX_AFTER_PASS = 4


@dataclass(frozen=True)
class NodeDecisions:
    """One node-level pass: an outcome for every pending job, in queue order.

    ``outcome[i]``: START (start now on ``nodes_of(i)`` with GPU bits
    ``gpu_masks_of(i)``), RESERVED (planned to start at ``planned_start[i]``
    on ``nodes_of(i)``; masks 0) or BLOCKED (``planned_start`` -1, no nodes:
    skipped by EASY beyond its depth, after FCFS's stop, or after the pass's
    early stop when not ``full``).
    """

    now: int
    policy: str
    job_id: np.ndarray          # int64, queue order
    outcome: np.ndarray         # int8
    planned_start: np.ndarray   # int64, -1 when blocked
    node_offsets: np.ndarray    # int64 [n+1]
    nodes: np.ndarray           # int64, ascending per job
    gpu_mask: np.ndarray        # uint64, per node entry (0 for reservations)
    walked: int                 # queue positions the pass looked at (the rest: early stop)
    #: squeue-style reason: "" (start), "Resources" (reserved), "Priority"
    #: (blocked behind others) or the name of the limit that holds the job
    reason: np.ndarray | None = None
    partition: np.ndarray | None = None   # int32, where it starts / is reserved (-1: blocked)
    #: with ``time_min``: the limit each job starts with (cut, or its own); else None
    time_limit: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.job_id)

    def nodes_of(self, i: int) -> np.ndarray:
        return self.nodes[self.node_offsets[i]:self.node_offsets[i + 1]]

    def gpu_masks_of(self, i: int) -> np.ndarray:
        return self.gpu_mask[self.node_offsets[i]:self.node_offsets[i + 1]]

    @property
    def starts(self) -> np.ndarray:
        """Job ids to start now, in queue order."""
        return self.job_id[self.outcome == START]

    def to_pandas(self):
        import pandas as pd
        return pd.DataFrame({"job_id": self.job_id,
                             "outcome": [OUTCOME_NAMES[o] for o in self.outcome],
                             "planned_start": self.planned_start,
                             "num_nodes": np.diff(self.node_offsets),
                             "reason": self.reason})


def plan_nodes(cluster: Cluster, running: RunningJobs, pending: JobTable, now: int,
               policy: str, reserve_depth: int = 1, available=None, *,
               full: bool = False, partitions: PartitionChoices | None = None,
               limits: LimitGroups | None = None, limit_usage=None,
               rank=None, resolution: int = 1, window: int | None = None,
               placement=None, eligible=None, blocked=None, time_min=None,
               nodes_min=None) -> NodeDecisions:
    """One scheduling pass at ``now`` of the node-level engine; changes nothing.

    The same compiled pass as :func:`run_nodes` (docs/gpu-semantics.md):
    ``running`` holds resources until its planned ends (all > ``now``;
    rounded up to multiples of ``resolution``),
    ``pending`` is planned in queue order (``rank`` if given, lower first;
    then submit time, then job id; submit times are not compared with
    ``now``). fcfs/easy/conservative stop after the last job that could start
    now, like the simulator (later jobs are BLOCKED); ``full=True`` walks the
    whole queue, so conservative gives every job a planned start (``squeue
    --start``) and easy makes its reservations even when nothing can start now.
    ``partitions``/``limits``: see :mod:`fastsched.constraints`, over the
    pending jobs; ``limit_usage`` (int64[G, 5]) is what running and pending
    jobs already count against the groups (default none). ``resolution`` /
    ``window`` / ``placement``: see :func:`run_nodes`; ``eligible`` (per
    pending job, default its submit time) starts a --switches wait. ``blocked``:
    advance reservations' node windows (see :func:`run_nodes`). ``time_min`` (seconds
    per pending job, 0: none): a job that cannot start now with its limit may start
    with a shorter one (:mod:`.timemin`); ``time_limit`` then has each job's.
    ``nodes_min`` (per pending job, 0: none; ``--nodes=MIN-MAX``): a job that cannot
    start now on its ``num_nodes`` may start now on fewer, at least MIN
    (:func:`.passes._narrow_now`); ``nodes_of(i)`` has the nodes it got.
    """
    return _plan(None, cluster, running, pending, now, policy, reserve_depth, available,
                 full=full, partitions=partitions, limits=limits, limit_usage=limit_usage,
                 rank=rank, resolution=resolution, window=window, placement=placement,
                 eligible=eligible, blocked=blocked, time_min=time_min, nodes_min=nodes_min)


def plan_kept(kept: KeptState | None, cluster: Cluster, running: RunningJobs,
              pending: JobTable, now: int, policy: str, reserve_depth: int = 1,
              available=None, **options) -> NodeDecisions:
    """:func:`plan_nodes` (same arguments, same decisions) on the engine state ``kept``
    holds for ``running`` (:mod:`.kept`: built when it is not the one kept, left as it
    was found), so that passes over the same running jobs cost the queue's work, not
    the cluster's set-up. Without ``kept``, or with topology levels or advance
    reservations' windows (they change the state), the pure pass. ``preempting``
    (:class:`.passpreempt.PassPreempting`): plan with preemptable capacity, as the
    event loop does (a pure pass: it names the running jobs in the running lists); a
    plan by preempting is RESERVED, also at now."""
    return _plan(kept, cluster, running, pending, now, policy, reserve_depth, available,
                 **options)


def _plan(kept, cluster, running, pending, now, policy, reserve_depth, available, *,
          full=False, partitions=None, limits=None, limit_usage=None, rank=None,
          resolution=1, window=None, placement=None, eligible=None,
          blocked=None, time_min=None, preempting=None, nodes_min=None) -> NodeDecisions:
    _check_policy(policy, reserve_depth)
    res, win = _grid(resolution, window)
    pl = _placement(placement, cluster, len(pending))
    low = _start_nodes(pending, nodes_min, pl)
    partitions = check_node_jobs(cluster, pending if low is None else asking_nodes(pending, low),
                                 available, partitions, None if kept is None
                                 else kept.capacity(cluster, node_availability(cluster, available)))
    n = len(pending)
    limits = LimitGroups.none(n) if limits is None else limits
    if len(limits) != n:
        raise InputError(f"limits cover {len(limits)} jobs, {n} are pending", field="limits")
    G = len(limits.caps)
    usage = np.zeros((G, NCAPS), dtype=np.int64) if limit_usage is None else \
        np.array(limit_usage, dtype=np.int64)
    if usage.shape != (G, NCAPS):
        raise InputError(f"limit_usage must have shape ({G}, {NCAPS})", field="limit_usage")
    now = int(now)
    avail = node_availability(cluster, available)
    if pl.levels.shape[0] or (blocked is not None and len(blocked[0])) or \
            preempting is not None:
        kept = None
    if kept is None:
        nodes = new_nodes(cluster, avail)
        running = _with_held_blocks(cluster, running, pl.levels, avail)
        free_now, run, wcap = _running_state(cluster, running, now, int(res))
    else:
        kept = kept.ready(cluster, running, avail, int(res), now)
        nodes, run = kept.nodes, kept.run
    if rank is None:
        order = np.lexsort((pending.job_id, pending.submit_time))
    else:
        order = np.argsort(_unique_rank(rank, pending), kind="stable")
    jobs, types = _pass_jobs(pending, partitions, order, eligible, time_min, low)
    if low is not None:     # a range's MAX is planned only where that many nodes are up
        types = with_capacity(types, nodes)
    jg_off, jg = _permute_csr(limits.offsets, limits.group, order)
    lim = Limits(jg_off, as_i64(jg), as_i64(limits.caps).reshape(-1, NCAPS), usage)
    extra = 0 if preempting is None else len(running.job_id)   # running jobs named too
    out = new_outputs(n + extra, int(jobs.offsets[-1]), -1)
    pre = no_preempting() if preempting is None else \
        preempting.rules(order, run, running, int(res), out)
    if kept is None:
        p = new_profile(wcap)
        free = new_free(*free_now, len(types.p), int(nodes.capG.max(initial=0)), nodes)
        _build_all(np.int64(now), p, run, free)
        if blocked is not None and len(blocked[0]):
            check_jobs_held_off(pending)
        p = block_windows(p, blocked, nodes.capG, nodes.capC, nodes.capM, now)
    else:
        p, free = kept.p, kept.free(types)
    stop_at_head, depth = get_policy(policy).kernel_rules(reserve_depth)
    walked = 0
    if n and not (stop_at_head or full):
        cnt = free.tcount if kept is not None else free_counts(types, nodes, free)
        walked = _walked(jobs.pc_off, jobs.pc_type, jobs.low, cnt)
    elif n:
        walked = n
    if n:
        rules = Rules(stop_at_head, np.int64(depth), bool(full), res, win,
                      np.int64(_INDEX_AFTER_PASS), kept is not None, False)
        topo = Topology(pl.levels, pl.unit[order], pl.max_leaves[order], pl.leaf_wait[order],
                        pl.gpu_groups, *_exclusive(pl, avail, order))
        control = new_control()
        args = (np.int64(now), np.arange(n, dtype=np.int64), np.int64(n), rules, jobs, types,
                nodes, free, p, run, lim, topo, out, new_scratch(jobs.nn), control, pre)
        try:
            if kept is None:
                nst, p, run = _call(_pass, *args, control=control)
            else:
                ix = kept.index(types, jobs.limit, jobs.pc_off, jobs.pc_type,
                                _INDEX_AFTER_PASS >= 0)
                nst, p, run, ix = _call(pass_kept, *args, ix, control=control)
                kept.restore(p, run, free, jobs, out, n, res, ix, types)
        except BaseException:
            if kept is not None:
                kept.drop()
            raise
        if stop_at_head:       # fcfs starts a prefix of the unheld queue, then stops
            walked = _fcfs_walked(nst, out.reason, n)
    out = trimmed(out, n)
    planned = out.planned
    outcome = np.full(n, BLOCKED, dtype=np.int8)
    outcome[planned >= now] = RESERVED      # (at now: a plan by preempting)
    outcome[out.start >= 0] = START
    keep = outcome != BLOCKED
    counts = np.where(keep, jobs.nn, 0)     # (a range's narrow start: the nodes it got)
    node_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=node_offsets[1:])
    entry_keep = np.repeat(jobs.offsets[:-1] - node_offsets[:-1], counts) + \
        np.arange(node_offsets[-1], dtype=np.int64)
    return NodeDecisions(now=now, policy=policy, job_id=pending.job_id[order].copy(),
                         outcome=outcome, planned_start=planned, node_offsets=node_offsets,
                         nodes=out.alloc_nodes[entry_keep], gpu_mask=out.alloc_mask[entry_keep],
                         walked=walked, reason=_reason_names(outcome, out.reason, limits),
                         partition=out.part_used.astype(np.int32),
                         time_limit=None if time_min is None else jobs.limit.copy())


def _pass_jobs(pending: JobTable, partitions: PartitionChoices, order, eligible,
               time_min=None, low=None):
    """The single pass's :class:`Jobs` (in queue ``order``) and request types.

    A pass plans each job for its whole time limit and never sees it end, so
    its runtime is taken to be its limit (:func:`_runtime_in_a_pass`): a start's
    end is then its planned end. ``low``: each job's fewest nodes to start on (None:
    all); a narrow start stretches its runtime, not its limit (a copy then)."""
    def q(a):
        return as_i64(np.asarray(a)[order])
    nn = q(pending.num_nodes)
    limit = q(pending.time_limit)
    pc_off, pc_part = _permute_csr(partitions.offsets, partitions.partition, order)
    types, pc_type = _request_types(pending, pc_part, np.repeat(order, np.diff(pc_off)))
    offsets = np.zeros(len(nn) + 1, dtype=np.int64)
    np.cumsum(nn, out=offsets[1:])
    runtime = _runtime_in_a_pass(limit)
    if low is not None:
        runtime = runtime.copy()
    return Jobs(limit, runtime, nn, q(pending.gpus_per_node), q(pending.cpus_per_node),
                q(pending.mem_per_node), pc_off, pc_part.astype(np.int64), pc_type, offsets,
                q(pending.submit_time if eligible is None else eligible),
                nn if low is None else q(low),
                np.zeros(len(nn), dtype=np.int64) if time_min is None else q(time_min)), \
        new_request_types(types, None)


def _start_nodes(pending: JobTable, nodes_min, placement) -> np.ndarray | None:
    """Each pending job's fewest nodes to start on (``nodes_min``, 0: all of them);
    None when no job has a range. Refused with topology placement, as
    :func:`fastsched.simulate` refuses it."""
    if nodes_min is None:
        return None
    low = np.asarray(nodes_min, dtype=np.int64)
    if low.shape != (len(pending),):
        raise InputError(f"nodes_min: {low.size} entries for {len(pending)} pending jobs",
                         field="nodes_min")
    nn = np.asarray(pending.num_nodes, dtype=np.int64)
    low = np.where(low > 0, np.minimum(low, nn), nn)
    if not (low < nn).any():
        return None
    if placement.levels.shape[0]:          # (--exclusive=topo needs levels too)
        raise UnsupportedError("jobs with a node range (nodes_min) and topology placement "
                               "are not modelled yet")
    return low


def asking_nodes(pending: JobTable, nn) -> JobTable:
    """``pending`` asking for ``nn`` nodes each (a range's MIN: what must fit on the
    available nodes for it to be planned at all; it may start narrow there)."""
    out = pending.take(np.arange(len(pending)))
    out.num_nodes = np.asarray(nn, dtype=out.num_nodes.dtype)
    return out


def _runtime_in_a_pass(limit):
    """What a single pass takes a job's runtime to be: its time limit. The pass
    plans holds and never sees a job end, so only ``end = start + min(runtime,
    limit)`` reads it, and that is then the planned end (the same array)."""
    return limit


def _fcfs_walked(nstarted: int, reason: np.ndarray, n: int) -> int:
    """fcfs walks its starts and the held jobs among them, then the job it stops at."""
    for q in range(n):          # at most (starts + held + 1) steps: what the pass walked
        if reason[q] < 0:
            if nstarted == 0:
                return q + 1
            nstarted -= 1
    return n


def _reason_names(outcome, code, limits) -> np.ndarray:
    names = np.array(["", "Resources", "Priority"], dtype=object)[outcome]
    held = code >= 0
    names[held] = limit_reasons(limits, code[held])
    return names


def limit_reasons(limits: LimitGroups, code: np.ndarray) -> np.ndarray:
    """Reason names (object array, "" where none) of engine reason codes (group * 5 + cap)."""
    code = np.asarray(code, dtype=np.int64)
    table = np.array([r for caps in limits.reasons for r in caps] + [""], dtype=object)
    return table[np.where(code >= 0, code, len(table) - 1)]


def _walked(pc_off, pc_type, nn, cnt) -> int:
    """How many queue positions a pass that stops after the last job that could start
    now walks, from the free-now counts ``cnt`` per request type (running jobs only)."""
    n = len(nn)
    rows = np.repeat(np.arange(n), np.diff(pc_off))
    ok = np.flatnonzero(np.bincount(rows[cnt[pc_type] >= nn[rows]], minlength=n) > 0)
    return int(ok[-1]) + 1 if len(ok) else 0
