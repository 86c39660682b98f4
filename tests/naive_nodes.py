"""The slow, obviously-correct twin of the node-level engine (``fastsched.engine``).

THE DEFINITION of the GPU-granular semantics (docs/gpu-semantics.md says the same
in words). Plain Python lists and dicts, no cleverness: every question ("how much
is free on node n at instant t?") is answered by summing over intervals.

* Node n has capacity (G_n GPUs, C_n CPUs, M_n MB), belongs to every partition
  whose ``nodes`` contain it, and is available or not (never used when not).
* A job asks for N nodes of its partition p with (g, c, m) on each, for a limit
  d >= 1; its actual end is start + min(runtime, d), its planned end start + d.
* Plans hold (g, c, m) on concrete nodes over half-open [begin, begin + d):
  running jobs (planned, from their start), jobs started in this pass, and
  reservations made earlier in this pass.
* A node is *eligible* for a job when it is available, in the job's partition,
  and its capacity is at least the request. It is *free for the job over [s, e)*
  when at every instant of [s, e) its capacity minus the plan's holds covers
  (g, c, m). A job *fits at t* when N eligible nodes are free for it over
  [t, t + d). Its *earliest start* is the smallest t >= now at which it fits.
* Node choice at t: the feasible nodes sorted by
  (-run_start, free GPUs at t, free CPUs at t, free MB at t, node index), the
  first N, where run_start is the smallest s with now <= s <= t such that the
  node is free for the job over [s, t + d). At t == now every run_start is now,
  so this is plain best fit; for t > now it prefers nodes that free up closest
  before t and leaves nodes idle now for backfill. Nodes are reported ascending.
* GPU indices: a starting job takes, on each node, the lowest-numbered GPU
  indices not used by running jobs. Reservations hold counts only.
* Passes (queue order: submit, then job id) and the event loop are those of
  ``tests/naive.py``: fcfs stops at the first job that does not fit now; easy
  starts what fits now, reserves the first ``reserve_depth`` jobs that do not
  (at their earliest start) and skips the rest (the profile formulation for
  every depth, including 1: there is no Lifka shadow/extra special case);
  conservative gives every job its earliest start and starts those at now.
* --exclusive=topo (placement ``exclusive``): a job starts now only on nodes whose
  whole leaf group is idle over [now, now + d) (every available node of it has its
  full capacity free in the plan), and never falls back to plain best fit. While it
  runs it holds every available node of its leaf groups in full; reservations keep
  the plain rule.
* Container images (``images``): each node keeps an ordered list of images, most
  recently used last, at most ``capacity`` long. A job with an image starting at t
  pulls it for ``pull_seconds[image]`` when any of its nodes lacks it (else 0), and
  ends at t + min(pull + runtime, d); then on each of its nodes the image moves to the
  end of the list (added if missing, the first dropped beyond capacity). Starts at
  one instant are taken in the order the pass started them. Checkpoints count from
  the pull's end.
* Power saving (``power``): a job started at t (in the order the pass started them,
  before its pull) on a node with no job running is given a powered-down node when
  that node is CLOUD and never ran a job, or (not excluded, SuspendTime set) every job
  it ran ended more than SuspendTime before t. Each such node takes a resume token: the
  k-th power-up of the run at ms r_k = max(1000 t, r_{k-1} + period), in seconds
  ceil(r_k / 1000); it boots from then, but not before SuspendTimeout after its
  power-down began, and is ready ``boot`` seconds later (``boots[x]`` for a node x
  given its own). Its power-down began at its
  last end + SuspendTime; with SuspendRate (``suspend_ms``) at its power-down token:
  at each instant, before anything changes then, the nodes idle (no job, not excluded,
  not a CLOUD node never used) whose idle period has no token yet take them in order
  of (last end, node): the next is due at ms d = max(1000 (last end + SuspendTime),
  the previous one's + suspend_ms), and is taken (the node powered down from
  ceil(d / 1000)) when that is before the instant.
  The job's boot wait is its nodes' latest readiness (a node still booting for another
  job counts) minus t; it starts then and ends boot + min(pull + runtime, d) after t,
  holding its nodes over [t, t + boot + d) in the passes after the one that started it.
  With node events: a node's last end is when its last job ended or was killed, but
  not before its boot is done; a node that comes back (up / resume) with no job on it,
  not powered down then, ended its last job then (Slurm restarts its idle clock); a
  drain of a node booting (ready after t) with jobs on it kills them as a down does.
  A job killed before its boot wait is over never ran: its attempt starts when it is
  killed (its boot wait cut to that), and saves no progress.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, replace

import naive_elastic
import naive_images
import naive_timemin
import naive_topology
from naive_elastic import done as _done, first_shape as _first_shape, shrink as _shrink
from naive import dependencies_satisfied
from naive_preempt import naive_preempt, ready_first


@dataclass(frozen=True)
class NaiveNodeJob:
    job_id: int
    submit: int
    nodes: int          # N >= 1
    gpus: int = 0       # per node
    cpus: int = 1       # per node
    mem: int = 0        # MB per node
    limit: int = 1      # >= 1, what planning uses
    runtime: int = 0    # >= 0, what really happens (capped at limit)
    partition: int = 0  # index into cluster.partitions
    pull: int = 0       # its image pull at its start (set when it starts)
    boot: int = 0       # its wait for powered-down nodes (set when it starts)

    def duration(self) -> int:
        return self.boot + min(self.runtime + self.pull, self.limit)


def jobs_from_table(table) -> list[NaiveNodeJob]:
    """NaiveNodeJobs from a :class:`fastsched.model.jobs.JobTable`."""
    return [NaiveNodeJob(job_id=int(table.job_id[i]), submit=int(table.submit_time[i]),
                         nodes=int(table.num_nodes[i]), gpus=int(table.gpus_per_node[i]),
                         cpus=int(table.cpus_per_node[i]), mem=int(table.mem_per_node[i]),
                         limit=int(table.time_limit[i]), runtime=int(table.runtime[i]),
                         partition=int(table.partition[i]))
            for i in range(len(table))]


def _as_job(job) -> NaiveNodeJob:
    return job if isinstance(job, NaiveNodeJob) else NaiveNodeJob(**job)


@dataclass
class _Node:
    gpus: int
    cpus: int
    mem: int
    partitions: set
    available: bool


def _nodes_of(cluster, available) -> list[_Node]:
    nodes = []
    for n in range(cluster.num_nodes):
        parts = {p for p, part in enumerate(cluster.partitions)
                 if n in {int(x) for x in part.nodes}}
        ok = True if available is None else bool(available[n])
        nodes.append(_Node(int(cluster.gpus[n]), int(cluster.cpus[n]), int(cluster.mem_mb[n]),
                           parts, ok))
    return nodes


# ---- the plan: per node, a list of holds (begin, end, gpus, cpus, mem), half-open ----

def _free_at(node, holds, t):
    g = node.gpus - sum(h[2] for h in holds if h[0] <= t < h[1])
    c = node.cpus - sum(h[3] for h in holds if h[0] <= t < h[1])
    m = node.mem - sum(h[4] for h in holds if h[0] <= t < h[1])
    return g, c, m


def _eligible(node, job):
    return (node.available and job.partition in node.partitions
            and node.gpus >= job.gpus and node.cpus >= job.cpus and node.mem >= job.mem)


def _free_over(node, holds, job, s, e):
    """Is the job's request free on the node at every instant of [s, e)? Free
    capacity only drops where a hold begins, so s and those beginnings suffice."""
    instants = [s] + [h[0] for h in holds if s < h[0] < e]
    for t in instants:
        g, c, m = _free_at(node, holds, t)
        if g < job.gpus or c < job.cpus or m < job.mem:
            return False
    return True


def _feasible_nodes(nodes, plan, job, t):
    return [n for n, node in enumerate(nodes)
            if _eligible(node, job) and _free_over(node, plan[n], job, t, t + job.limit)]


def _earliest_start(now, nodes, plan, job):
    """The first instant at which a job can fit is now or the end of some hold."""
    candidates = {now}
    for n, node in enumerate(nodes):
        if _eligible(node, job):
            candidates |= {h[1] for h in plan[n] if h[1] > now}
    for t in sorted(candidates):
        if len(_feasible_nodes(nodes, plan, job, t)) >= job.nodes:
            return t
    raise AssertionError("unreachable: check_node_jobs guarantees enough eligible nodes")


def _run_start(now, node, holds, job, t):
    """Smallest s in [now, t] with the request free over [s, t + d): now or a hold's end."""
    for s in sorted({now} | {h[1] for h in holds if now < h[1] <= t}):
        if _free_over(node, holds, job, s, t + job.limit):
            return s
    raise AssertionError("unreachable: s = t works")


def _choose_nodes(now, nodes, plan, job, t):
    def key(n):
        run_start = _run_start(now, nodes[n], plan[n], job, t)
        return (-run_start,) + _free_at(nodes[n], plan[n], t) + (n,)
    feasible = sorted(_feasible_nodes(nodes, plan, job, t), key=key)
    return sorted(feasible[:job.nodes])


def _fits_now(now, nodes, plan, job):
    return len(_feasible_nodes(nodes, plan, job, now)) >= job.nodes


def _hold(plan, job, t, chosen, res=1, nodes=None, levels=None):
    """The job's request on its nodes over [t, t + limit), the end rounded up to the
    grid of multiples of ``res``; with ``levels`` (an exclusive job starting) every
    available node of its leaf groups in full instead."""
    until = _on_grid(t + job.limit, res)
    if levels is None:
        for n in chosen:
            plan[n].append((t, until, job.gpus, job.cpus, job.mem))
        return
    for y in _group_nodes(nodes, levels, chosen):
        plan[y].append((t, until, nodes[y].gpus, nodes[y].cpus, nodes[y].mem))


# ---- limits: a job may start only if no group it counts against would exceed a cap ----

def _held(job, groups, caps, running):
    """(group, cap) of the first cap starting ``job`` would exceed (groups in the
    job's order, caps jobs/GPUs/CPUs/MB), or None."""
    want = (1, job.nodes * job.gpus, job.nodes * job.cpus, job.nodes * job.mem)
    for grp in groups.get(job.job_id, []):
        members = [r[0] for r in running if grp in groups.get(r[0].job_id, [])]
        used = (len(members), sum(j.nodes * j.gpus for j in members),
                sum(j.nodes * j.cpus for j in members), sum(j.nodes * j.mem for j in members))
        for cap in range(4):
            if caps[grp][cap] >= 0 and used[cap] + want[cap] > caps[grp][cap]:
                return grp, cap
    return None


# ---- one pass: returns [(job, nodes, partition)] to start now ----

def _in_partition(job, p):
    return NaiveNodeJob(**{**job.__dict__, "partition": p})


def _group_nodes(nodes, levels, chosen):
    """Every available node in the leaf groups of ``chosen`` (what an exclusive job holds)."""
    groups = {levels[0][n] for n in chosen}
    return [y for y, node in enumerate(nodes) if node.available and levels[0][y] in groups]


def _group_idle(nodes, plan, levels, n, s, e):
    """Is every available node of n's leaf group wholly free (full capacity) over [s, e)?"""
    if levels[0][n] < 0:
        return False
    for y in _group_nodes(nodes, levels, [n]):
        whole = NaiveNodeJob(job_id=-1, submit=0, nodes=1, gpus=nodes[y].gpus,
                             cpus=nodes[y].cpus, mem=nodes[y].mem)
        if not _free_over(nodes[y], plan[y], whole, s, e):
            return False
    return True


def _topology_nodes(now, nodes, plan, job, topo):
    """Nodes for a start now under topology placement: naive_topology.topo_place over
    the feasible nodes in best-fit order (exclusive: only those whose leaf group is
    idle); None when a constraint in force (segment, switches, exclusive) cannot be
    met; plain best fit when placement finds none otherwise."""
    levels, unit, max_leaves, exclusive = topo
    feasible = _feasible_nodes(nodes, plan, job, now)
    if exclusive:
        feasible = [n for n in feasible
                    if _group_idle(nodes, plan, levels, n, now, now + job.limit)]
    pref = sorted(feasible, key=lambda n: _free_at(nodes[n], plan[n], now) + (n,))
    got = naive_topology.topo_place(pref, levels, job.nodes, unit, max_leaves)
    if len(got) == job.nodes:
        return sorted(got)
    if unit > 1 or max_leaves > 0 or exclusive:
        return None
    return _choose_nodes(now, nodes, plan, job, now)


def _plan(now, nodes, plan, job, parts, only_now, topo=None):
    """(t, nodes, partition) at the earliest start over the job's partitions (ties:
    the first listed), only "now" when ``only_now``; None when it does not fit.
    With ``topo`` (levels, unit, max_leaves in force), a partition where the job
    fits now but not within its constraint is left out."""
    best = None
    for p in parts:
        jp = _in_partition(job, p)
        if sum(_eligible(node, jp) for node in nodes) < job.nodes:
            continue          # can never run there
        if _fits_now(now, nodes, plan, jp):
            if topo is not None:
                chosen = _topology_nodes(now, nodes, plan, jp, topo)
                if chosen is None:
                    continue
                if best is None or now < best[0]:
                    best = (now, chosen, p)
                continue
            t = now
        elif only_now:
            continue
        else:
            t = _earliest_start(now, nodes, plan, jp)
        if best is None or t < best[0]:
            best = (t, _choose_nodes(now, nodes, plan, jp, t), p)
    return best


def _narrow(now, nodes, plan, job, parts, low):
    """A job of a node range (at least ``low`` nodes) that cannot start now on all its
    nodes: (now, nodes, partition, the job on them) in the first of its partitions
    where ``low`` are feasible now, on as many as are (at most its own; best fit),
    its runtime stretched to the same node-seconds (rounded up); None otherwise."""
    if low >= job.nodes:
        return None
    for p in parts:
        jp = _in_partition(job, p)
        w = min(len(_feasible_nodes(nodes, plan, jp, now)), job.nodes)
        if w >= low:
            narrow = replace(job, nodes=w, runtime=-(-job.runtime * job.nodes // w))
            return now, _choose_nodes(now, nodes, plan, replace(jp, nodes=w), now), p, narrow
    return None


def _on_grid(t, res):
    """t rounded up to the absolute time grid: the next multiple of res at or after t."""
    return -(-t // res) * res


def _pass(policy, depth, now, queue, nodes, running, parts_of, groups, caps, held_out,
          res=1, window=None, topo_of=None, blocked=(), low=None, members=None, tmin=None,
          preempting=None, ends=None):
    """A job of a node range (``low``: by job id, its fewest nodes and the partitions
    where it may start on fewer) that does not start now on all its nodes starts on
    fewer (:func:`_narrow`) before it reserves; then a job with a time minimum (``tmin``:
    by job id) starts with a shorter limit (:func:`naive_timemin.shorten`). Every hold (running, started or reserved at t) ends at its end (start +
    limit, t + limit) rounded up to the grid of multiples of ``res``; fitting is
    still "free over [t, t + limit)". A job whose earliest start is more than
    ``window`` after now gets no reservation (and uses none of EASY's). ``ends`` (by job
    id): a preempted job in its GraceTime is held until its grace end when that comes
    before its limit (Slurm sets its end_time so)."""
    plan = [[] for _ in nodes]
    for s, e, x in blocked:            # advance reservations: the node held whole
        if e > now:     # (tagged: the jobs running in the reservation do not see it)
            plan[x].append((s, e, nodes[x].gpus, nodes[x].cpus, nodes[x].mem, "window"))
    for job, start, chosen, _ in running:
        until = _on_grid(min(start + job.boot + job.limit,
                             (ends or {}).get(job.job_id, float("inf"))), res)
        if _exclusive(topo_of, job, now):
            for y in _group_nodes(nodes, topo_of(job, now)[0], chosen):
                plan[y].append((start, until, nodes[y].gpus, nodes[y].cpus, nodes[y].mem))
            continue
        for n in chosen:
            plan[n].append((start, until, job.gpus, job.cpus, job.mem))
    started, reservations = [], 0
    running = list(running)
    far = float("inf") if window is None else now + window
    for job in queue:
        held = _held(job, groups, caps, running)
        if held is not None:
            held_out[job.job_id] = held
            continue
        held_out.pop(job.job_id, None)
        parts = parts_of(job)
        topo = None if topo_of is None else topo_of(job, now)
        least, choices = (low or {}).get(job.job_id, (job.nodes, parts))
        short = (tmin or {}).get(job.job_id, 0)

        def now_narrow(job=job, parts=parts, choices=choices, least=least, short=short):
            # a job in a reservation shortens on its side of it, as it plans
            views = [(nodes, plan)] if members is None else members.views(job, nodes, plan,
                                                                          now)
            return _narrow(now, nodes, plan, job, choices, least) or next(
                (got for got in (naive_timemin.shorten(now, *v, job, parts, short)
                                 for v in views) if got is not None), None)
        # a job in a reservation sees its side of it; its holds go into the plan
        plan_in = _plan if members is None else members.planner(_plan)
        if preempting is not None:      # naive_preemptplan: preemptable capacity
            plan_in = preempting.planner(plan_in, now, running, started, res)
        if policy == "fcfs":
            best = plan_in(now, nodes, plan, job, parts, True, topo) or now_narrow()
            if best is None:
                break
        elif policy == "easy":
            best = plan_in(now, nodes, plan, job, parts, True, topo) or now_narrow()
            if best is None and reservations < depth:
                best = plan_in(now, nodes, plan, job, parts, False, topo)
                if best is None or best[0] > far:
                    continue
                reservations += 1
            if best is None:
                continue
        else:  # conservative
            best = plan_in(now, nodes, plan, job, parts, False, topo)
            if best is None or best[0] != now or len(best) > 4:
                # (a plan by preempting, even now: a start on the free nodes comes first)
                best = now_narrow() or best
            if best is None or best[0] > far:
                continue
        if len(best) > 3:
            job = best[3]
        t, chosen, p = best[:3]
        if t == now and _exclusive(topo_of, job, now):
            _hold(plan, job, t, chosen, res, nodes, topo[0])
        else:
            _hold(plan, job, t, chosen, res)
        if t == now and len(best) < 5:     # (a fifth item: by preempting, never a start)
            started.append((job, chosen, p))
            running.append((job, now, chosen, None))
    return started


def _exclusive(topo_of, job, now):
    return topo_of is not None and topo_of(job, now)[3]


def _lowest_free_gpus(node_index, node, running, count, gpu_groups=None):
    """The lowest free GPU indices, or with ``gpu_groups`` naive_topology.choose_gpus."""
    busy = {k for _, _, chosen, gpus in running
            for n, lst in zip(chosen, gpus) if n == node_index for k in lst}
    free = [k for k in range(node.gpus) if k not in busy]
    assert len(free) >= count, "unreachable: the plan said the GPUs are free"
    if gpu_groups:
        mask = naive_topology.choose_gpus(sum(1 << k for k in free), count, gpu_groups)
        return [k for k in range(64) if mask >> k & 1]
    return free[:count]


# ---- the event loop ----



def simulate(cluster, jobs, policy: str, reserve_depth: int = 1, available=None, *,
             partitions=None, deps=None, groups=None, caps=None, rank=None,
             reorder=None, period=None, resolution=1, window=None, placement=None,
             events=None, requeue=None, checkpoint=None, delay=121, attempts=None,
             blocked=(), images=None, power=None, no_kill=None, nodes_min=None,
             resized=None, preempt=None, members=None, time_min=None, ran_limits=None,
             regrow=False):
    """Simulate ``jobs`` (NaiveNodeJob or dicts of its fields) on ``cluster``
    (a fastsched.Cluster). ``available``: per-node bools (None: all available).

    Constraints, all keyed by job id: ``partitions`` (list of partition indices
    in preference order; default [job.partition]), ``deps`` (list of (parent id,
    kind)), ``groups`` (list of limit group ids) with ``caps[group]`` = (max
    jobs, GPUs, CPUs, MB running, max submitted; -1 = none), ``rank`` (queue
    key, lower first, ties by submit then id), ``reorder(b, start, end,
    eligible) -> {job id: key}`` called at the start b of every ``period``
    window that has an instant (dicts by job id of what happened so far).
    ``resolution``/``window``: see :func:`_pass`. ``placement``: dict with
    ``levels`` (list of per-node group lists, leaf first), ``unit``,
    ``max_leaves``, ``leaf_wait``, optional ``exclusive`` (--exclusive=topo; dicts
    by job id) and ``gpu_groups`` (masks). ``events``: (time, "drain" | "resume" |
    "down" | "up", [node indices]): at that instant, before anything else, the nodes
    leave (drain: no new start or hold on them; running jobs go on; down: the same,
    and every job running on one of them that does not end at that instant is
    killed) or rejoin the cluster (resume, up); the loop visits the instant while
    jobs wait. A killed job with ``requeue`` (by job id, default True) becomes a new
    attempt: it joins the queue ``delay`` seconds later (its eligible time), still
    counting as submitted, with runtime reduced by its saved progress (the elapsed
    time rounded down to a multiple of its ``checkpoint`` interval, by job id; none
    without); an ``after`` dependency on it stays satisfied. Otherwise it ends at
    the kill, not COMPLETED (NODE_FAIL). ``attempts`` (a list): each killed attempt
    is appended as (job id, attempt number, start, end, [node indices]). ``blocked``:
    (start, end, node) windows over which the node is held whole (advance
    reservations); the loop visits each window's end while jobs wait. ``images``:
    (image by job id (absent: none), pull seconds by image, images a node caches):
    container pulls (see the module); ``attempts`` entries then get the attempt's
    pull as a sixth item, and each started job's pull is in ``images_out`` (a dict
    by job id, when given as a fourth item of ``images``). ``power``: dict with
    ``suspend_time`` (None: never), ``suspend_timeout``, ``boot`` (``boots``: node ->
    its own, optional), ``period_ms`` (0: no
    limit), ``suspend_ms`` (SuspendRate's period, absent or 0: no limit), ``cloud`` and
    ``excluded`` (sets of nodes): power saving (see the module);
    each started job's boot wait goes into ``power["boot_out"]`` (a dict by job id) when
    given. Result starts are the job's start after its boot wait. Elastic jobs: a job with
    ``no_kill`` (by job id) that keeps at least ``nodes_min`` (by job id, at least 1)
    of its nodes when some go down shrinks onto the rest instead of being killed (see
    :func:`_shrink`); ``resized`` (a list) gets each shape a shrink ended as (job id,
    attempt number, start, end, [node indices]); with ``regrow`` they take nodes that
    come back (:func:`naive_elastic.regrow`: the rule is written there).
    ``members``: jobs running in a reservation (:class:`naive_resv.Members`: the rule
    is written there).
    ``time_min`` (by job id): a job's time minimum (:mod:`naive_timemin`); the limit
    each attempt ran with goes into ``ran_limits`` (by job id, a list by attempt) when
    given; a requeued attempt asks for the job's own limit again.
    ``preempt``: see :func:`naive_preempt` (the rule is written there);
    ``attempts`` entries then get whether the attempt was preempted as a last item.

    Returns (job_id -> (start, end, [node indices ascending], [[GPU indices]
    per node], partition) for started jobs, job_id -> "never" | "waiting" |
    (group, cap) for the others).
    """
    if policy not in ("fcfs", "easy", "conservative") or reserve_depth < 1:
        raise ValueError(f"bad policy {policy!r} or reserve_depth {reserve_depth}")
    jobs = [_as_job(j) for j in jobs]
    if len({j.job_id for j in jobs}) != len(jobs):
        raise ValueError("job ids must be unique")
    nodes = _nodes_of(cluster, available)
    partitions = partitions or {}
    deps, groups, caps = deps or {}, groups or {}, caps or []
    key = dict(rank or {})

    def parts_of(job):
        return partitions.get(job.job_id, [job.partition])

    topo_of, gpu_groups = None, None
    if placement is not None:
        gpu_groups = list(placement.get("gpu_groups", []))
        if placement.get("levels"):
            def topo_of(job, now):
                ml = placement["max_leaves"].get(job.job_id, 0)
                wait = placement["leaf_wait"].get(job.job_id, -1)
                if ml > 0 and wait >= 0 and now - eligible[job.job_id] >= wait:
                    ml = 0
                return (placement["levels"], placement["unit"].get(job.job_id, 1), ml,
                        placement.get("exclusive", {}).get(job.job_id, False))

    for job in jobs:
        if job.limit < 1 or job.runtime < 0 or job.nodes < 1:
            raise ValueError(f"invalid job {job}")
        seen = nodes if members is None else members.view(job, nodes, None, 0)[0]
        if all(sum(_eligible(node, _in_partition(job, p)) for node in seen) < job.nodes
               for p in parts_of(job)):
            raise ValueError(f"job {job.job_id} can never fit")

    caches = [OrderedDict() for _ in nodes]      # per node: image -> None, LRU first
    history = [[] for _ in nodes]      # per node: the end of every job started on it
    ready = [0] * len(nodes)           # per node: when its last boot ended
    token = [None]                     # the last power-up's ms

    down = {}                          # per node: (its idle time, its power-down's)
    suspend_token = [0]                # the next power-down's earliest ms

    def settle(now):   # SuspendRate: the power-down tokens of the times before now
        st, period = power["suspend_time"], power.get("suspend_ms", 0)
        if st is None or not period:
            return
        while True:
            waiting = sorted((max(history[x], default=0), x) for x in range(len(nodes))
                             if x not in power["excluded"]
                             and not (x in power["cloud"] and not history[x])
                             and not any(x in r[2] for r in running)
                             and down.get(x, (None,))[0] != max(history[x], default=0))
            if not waiting:
                return
            idle, x = waiting[0]
            t_ms = max((idle + st) * 1000, suspend_token[0])
            if -(-t_ms // 1000) >= now:
                return
            suspend_token[0] = t_ms + period
            down[x] = (idle, -(-t_ms // 1000))

    def down_at(x):    # when x's power-down began in its idle period (None: not begun)
        last, st = max(history[x], default=0), power["suspend_time"]
        if st is None or x in power["excluded"]:
            return None
        if not power.get("suspend_ms"):
            return last + st
        return down[x][1] if down.get(x, (None,))[0] == last else None

    def powered_down(x, now):       # with no job on it
        if x in power["cloud"] and not history[x]:
            return True
        settle(now)
        return down_at(x) is not None and now > down_at(x)

    def boot_wait(now, chosen):
        settle(now)
        for x in chosen:
            if any(x in r[2] for r in running):
                continue
            fresh = x in power["cloud"] and not history[x]
            if powered_down(x, now):
                r_ms = now * 1000 if token[0] is None else \
                    max(now * 1000, token[0] + power["period_ms"])
                token[0] = r_ms
                begin = -(-r_ms // 1000)
                if not fresh:
                    begin = max(begin, down_at(x) + power["suspend_timeout"])
                ready[x] = begin + power.get("boots", {}).get(x, power["boot"])
        return max([0] + [ready[x] - now for x in chosen])
    future = sorted(jobs, key=lambda j: (j.submit, j.job_id))
    arrived, rejected, eligible, never = [], {}, {}, set()
    running = []     # (job, start, [nodes], [[gpu indices] per node])
    result, held, ended = {}, {}, {}     # ended: job id -> ok (COMPLETED)

    def in_system(grp):
        return sum(1 for j in arrived if grp in groups.get(j.job_id, [])
                   and j.job_id not in ended)

    def queue_now(now):
        for job in arrived:
            if job.job_id not in eligible and job.job_id not in result and \
                    hold.get(job.job_id, now) <= now and \
                    dependencies_satisfied(job.job_id, deps, started_ever, ended, never):
                eligible[job.job_id] = now
        q = [j for j in arrived if j.job_id in eligible and j.job_id not in result]
        return sorted(q, key=lambda j: (key.get(j.job_id, 0), j.submit, j.job_id))

    def end_now(now, zero_ids=None):
        nonlocal running
        done = [r for r in running if (r[1] + r[0].duration() == now if zero_ids is None
                                       else r[0].job_id in zero_ids)]
        for r in done:
            ended[r[0].job_id] = r[0].runtime + r[0].pull <= r[0].limit
        running = [r for r in running if r not in done]

    events = sorted(events or [], key=lambda e: e[0])
    requeue, checkpoint = requeue or {}, checkpoint or {}
    hold, restarts, started_ever = {}, {}, set()     # hold: job id -> when it rejoins

    def waiting_jobs():
        return [j for j in arrived if j.job_id not in result]

    def rejoining():
        return [t for i, t in hold.items() if i not in result and i not in eligible]

    no_kill, nodes_min, shapes = no_kill or {}, nodes_min or {}, {}
    # node ranges start on fewer nodes, in the partitions where all could run while the
    # most nodes are up: up at the start or brought back by an event (the engine's
    # partition choices)
    back = {x for _, kind, which in events if kind in ("resume", "up") for x in which}
    most = [replace(x, available=True) if i in back else x for i, x in enumerate(nodes)]
    low = {j.job_id: (nodes_min[j.job_id], [
        p for p in parts_of(j) if sum(_eligible(x, _in_partition(j, p)) for x in most)
        >= j.nodes]) for j in jobs if nodes_min.get(j.job_id, 0) > 0}

    def queued(i):      # the job as it waits (all its nodes, its attempt's runtime there)
        return next(a for a in arrived if a.job_id == i)

    def gpus_of(x, count):
        return _lowest_free_gpus(x, nodes[x], running, count, gpu_groups)

    def kill(now, which):
        """Node failure of ``which``: a --no-kill job keeping its minimum shrinks, the
        others stop (requeued when their job allows)."""
        for r in [r for r in running if set(r[2]) & set(which) and r[1] + r[0].duration() > now]:
            job, start, chosen, gpus = r
            i = job.job_id
            keep = [x for x in chosen if x not in which]
            if no_kill.get(i, False) and len(keep) >= max(nodes_min.get(i, 1), 1):
                shaped = _shrink(now, r, keep, shapes.setdefault(i, _first_shape(r, queued(i))),
                                 restarts.get(i, 0), resized)
                running[running.index(r)] = shaped
                result[i] = (start, start + shaped[0].duration(), keep, shaped[3],
                             result[i][4])
                continue
            stop(now, r, True, False)

    def stop(now, r, again, preempted):
        """End running ``r`` at ``now``: requeued when ``again`` and its job allows."""
        job, start, chosen, gpus = r
        running.remove(r)
        i = job.job_id
        if power is not None:       # killed while its nodes boot: it never ran
            for x in chosen:
                history[x].remove(start + job.duration())
                history[x].append(max(now, ready[x]))
            alloc, start = start, min(start + job.boot, now)
            job = replace(job, boot=start - alloc)
            power.setdefault("boot_out", {})[i] = job.boot
        if attempts is not None:
            attempts.append((i, restarts.get(i, 0), start, now, chosen)
                            + ((job.pull,) if images is not None else ())
                            + ((preempted,) if preempt is not None else ())
                            + ((job.boot,) if power is not None else ()))
        if not (again and requeue.get(i, True)):
            result[i] = (start, now, chosen, gpus, result[i][4])
            ended[i] = False
            return
        every = checkpoint.get(i, 0)
        ran = max(now - start - job.pull, 0)
        saved = ran // every * every if every else 0
        if i in shapes or job.nodes != queued(i).nodes:   # shrunk or started narrow:
            shape = shapes.pop(i, None) or _first_shape(r, queued(i))   # node-seconds kept
            kept = _done(shape, start + job.pull + saved) if every else 0
            job = replace(job, runtime=shape["runtime"], nodes=shape["width"])
            saved = kept // shape["width"]
        k = next(k for k, a in enumerate(arrived) if a.job_id == i)
        arrived[k] = replace(job, runtime=job.runtime - saved, pull=0, limit=queued(i).limit)
        del result[i], eligible[i]
        hold[i] = now + delay
        restarts[i] = restarts.get(i, 0) + 1

    last_window = None
    closings = sorted({e for _, e, _ in blocked} | set(() if members is None else
                                                       members.closings()))
    now = -1

    def closing():          # the next window end, while jobs wait
        return [t for t in closings if t > now][:1] if waiting_jobs() else []
    order = {j.job_id: k for k, j in enumerate(future)}      # submit order
    # preemption (see naive_preempt; resets: (grace end, job, attempt, ready_first's))
    grace, wakes, waits, last, resets = [], set(), {}, {}, []
    from naive_preemptplan import Planning
    preempting = Planning(preempt, result, waits, restarts) if (preempt or {}).get(
        "backfill") else None
    while (future or running or (events and waiting_jobs()) or rejoining() or closing()
           or grace or wakes or resets):
        now = min([j.submit for j in future[:1]]
                  + [start + j.duration() for j, start, _, _ in running]
                  + [e[0] for e in events[:1]] + rejoining() + closing()
                  + [g[0] for g in grace] + [g[3] for g in resets] + list(wakes))
        while events and events[0][0] == now:      # node events come first at an instant
            _, kind, which = events.pop(0)
            if kind == "down":
                kill(now, which)
            if kind == "drain" and power is not None:
                kill(now, [x for x in which if ready[x] > now
                           and any(x in r[2] for r in running)])
            back = [x for x in which if kind in ("resume", "up") and not nodes[x].available]
            if power is not None:
                for x in back:
                    if not any(x in r[2] for r in running) and not powered_down(x, now):
                        history[x].append(now)
            for x in which:
                nodes[x].available = kind in ("resume", "up")
            if regrow and back:
                naive_elastic.regrow(now, back, running, dict(
                    result=result, shapes=shapes, order=order, queued=queued, no_kill=no_kill,
                    restarts=restarts, resized=resized, nodes=nodes, blocked=blocked,
                    res=resolution, gpus_of=gpus_of))
        wakes -= {w for w in wakes if w <= now}
        for t, i in sorted((g[0], g[1]) for g in grace if g[0] == now):
            r = [r for r in running if r[0].job_id == i and r[1] + r[0].duration() > now]
            g = next(g for g in grace if g[:2] == (t, i))
            if r and restarts.get(i, 0) == g[2]:
                stop(now, r[0], preempt["mode"](i, result[i][4]) == "REQUEUE", True)
        grace = [g for g in grace if g[0] != now]
        resets = [g for g in resets if g[3] > now]
        if reorder is not None and now // period * period != last_window:
            last_window = now // period * period
            key = reorder(last_window, {j: r[0] for j, r in result.items()},
                          {j: r[1] for j, r in result.items()}, dict(eligible))
        end_now(now)
        while future and future[0].submit == now:
            job = future.pop(0)
            over = [g for g in groups.get(job.job_id, []) if caps[g][4] >= 0
                    and in_system(g) + 1 > caps[g][4]]
            if over:
                rejected[job.job_id] = (over[-1], 4)
            else:
                arrived.append(job)
        while True:
            queue = queue_now(now)
            started = _pass(policy, reserve_depth, now, queue, nodes, running, parts_of,
                            groups, caps, held, resolution, window, topo_of, blocked, low,
                            members, time_min, preempting,
                            {i: t for t, i, a, *_ in grace + resets
                             if restarts.get(i, 0) == a})
            for k, (job, chosen, p) in enumerate(started):
                if power is not None:
                    job = replace(job, boot=boot_wait(now, chosen))
                    started[k] = (job, chosen, p)
                    power.setdefault("boot_out", {})[job.job_id] = job.boot
                if images is not None:
                    job = replace(job, pull=naive_images.pull(job, chosen, images, caches))
                    started[k] = (job, chosen, p)
                    if len(images) > 3:
                        images[3][job.job_id] = job.pull
                gpus = [_lowest_free_gpus(n, nodes[n], running, job.gpus, gpu_groups)
                        for n in chosen]
                running.append((job, now, chosen, gpus))
                for x in chosen:
                    history[x].append(now + job.duration())
                result[job.job_id] = (now + job.boot, now + job.duration(), chosen, gpus, p)
                if ran_limits is not None:
                    ran_limits.setdefault(job.job_id, []).append(job.limit)
                started_ever.add(job.job_id)
            zero = {job.job_id for job, _, _ in started if job.duration() == 0}
            end_now(now, zero)
            released = len(queue_now(now)) > len(queue) - len(started)
            if zero or released:
                continue
            if preempt is None:
                break
            chosen = naive_preempt(preempt, now, queue_now(now), nodes, running, parts_of,
                                   lambda job: _held(job, groups, caps, running) is not None,
                                   waits, last, restarts, order, wakes, result,
                                   lambda job: min(low.get(job.job_id, (job.nodes,))[0],
                                                   job.nodes), blocked)
            if chosen is None:
                break
            j, victims = chosen
            now_stop = []
            for r in victims:
                i = r[0].job_id
                gt = preempt["grace"](i, result[i][4])
                late = ready_first(now, r, gt)
                if gt > 0:
                    (resets if late else grace).append((now + gt, i, restarts.get(i, 0))
                                                       + ((late,) if late else ()))
                else:
                    now_stop.append(r)
            waits[j] = {(r[0].job_id, restarts.get(r[0].job_id, 0)) for r in victims}
            for r in now_stop:
                i = r[0].job_id
                stop(now, r, preempt["mode"](i, result[i][4]) == "REQUEUE", True)
            if not now_stop:
                break
    waiting = {}
    for job in jobs:
        if job.job_id not in result:
            waiting[job.job_id] = (rejected.get(job.job_id)
                                   or ("never" if job.job_id in never else None)
                                   or held.get(job.job_id) or "waiting")
    return result, waiting


def assert_same_records(run, ids, out) -> None:
    """An engine run (in the order of job ids ``ids``) against :func:`simulate`'s ``out``:
    the same start, end, partition and nodes per job; -1 where the twin starts none."""
    for i, j in enumerate(ids):
        if j in out:
            s, e, nodes, _, p = out[j]
            assert (run.start[i], run.end[i], run.partition[i]) == (s, e, p), j
            got = run.alloc_nodes[run.alloc_offsets[i]:run.alloc_offsets[i + 1]]
            assert list(got) == nodes, j
        else:
            assert run.start[i] == -1, j
