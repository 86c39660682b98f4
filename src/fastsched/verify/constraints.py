"""The checks of :func:`fastsched.verify` for dependencies, limits, partition choices and topology.

Like the rest of verify, these import no scheduler code: they judge a schedule
from its times and allocations alone. What each GUARANTEES when it passes:

``dependency``
    every started job started only after each of its dependencies was
    satisfied: ``after`` (the parent started, no later than the child),
    ``afterany`` (the parent ended), ``afterok`` (it ended COMPLETED, i.e.
    runtime <= limit), ``afternotok`` (it ended TIMEOUT).
``limit_exceeded``
    at no instant do a limit group's running jobs (over their actual half-open
    intervals) exceed its caps on jobs, GPUs, CPUs or memory.
``not_started`` (refined)
    a job that never started is accepted only when a dependency explains it
    (a parent never started, or ended in the state that fails it) or it counts
    against a limit group (held or rejected by a cap; not judged further).
``bad_allocation`` (with partition choices)
    a started job's nodes all lie in one of its allowed partitions.
``exclusive_topo`` (with a placement whose jobs have ``exclusive_topo``)
    while an exclusive job runs (its actual half-open interval), no other job
    runs on a node of its leaf groups (``levels[0]`` of its nodes). A job that
    asks for no GPUs, CPUs or memory uses nothing and is not counted; zero-length
    jobs occupy nothing.

Not checked: ``max_submit`` rejections (they depend on the arrival order of
jobs in the system, not on the schedule), and the policy checks (fcfs order,
reservations) when a queue order other than submit order or limits apply.
"""
from __future__ import annotations

import numpy as np

from ..model.constraints import AFTER, AFTERNOTOK, AFTEROK, CAPS


def parent_problems(jobs, start, end, deps):
    """Per dependency edge: (child row, message or None when satisfied before the child's start,
    unsatisfiable bool)."""
    child = np.repeat(np.arange(len(jobs)), np.diff(deps.offsets))
    parent = deps.parent
    kind = deps.kind.astype(np.int64)
    p_started = start[parent] >= 0
    ok = jobs.runtime[parent] <= jobs.time_limit[parent]
    ready = np.where(kind == AFTER, start[parent], end[parent])      # when satisfied
    state_ok = np.where(kind == AFTEROK, ok, np.where(kind == AFTERNOTOK, ~ok, True))
    unsatisfiable = ~p_started | ~state_ok
    c_started = start[child] >= 0
    broken = c_started & (unsatisfiable | (ready > start[child]))
    return child, parent, kind, broken, unsatisfiable


def check_dependencies(jobs, start, end, deps, violation, out) -> np.ndarray:
    """Append ``dependency`` violations; returns per job: unstarted explained by a dependency."""
    names = {0: "after", 1: "afterany", 2: "afterok", 3: "afternotok"}
    child, parent, kind, broken, unsat = parent_problems(jobs, start, end, deps)
    jid = jobs.job_id
    for e in np.flatnonzero(broken):
        c, p = child[e], parent[e]
        out.append(violation("dependency", int(jid[c]), int(start[c]),
                             f"job {jid[c]} started at {start[c]} but its dependency "
                             f"{names[int(kind[e])]}:{jid[p]} was not satisfied then "
                             f"(parent start {start[p]}, end {end[p]})"))
    explained = np.zeros(len(jobs), dtype=bool)
    explained[child[unsat]] = True
    return explained


def check_limits(jobs, start, end, limits, violation, out) -> np.ndarray:
    """Append ``limit_exceeded`` violations; returns per job: counts against a group."""
    member = np.diff(limits.offsets) > 0
    row = np.repeat(np.arange(len(jobs)), np.diff(limits.offsets))
    grp = limits.group
    use = (start[row] >= 0) & (end[row] > start[row])
    row, grp = row[use], grp[use]
    n = jobs.num_nodes.astype(np.int64)[row]
    amounts = [np.ones(len(row), np.int64), n * jobs.gpus_per_node[row],
               n * jobs.cpus_per_node[row], n * jobs.mem_per_node[row]]
    # events per group: +amount at start, -amount at end; ends first at a tie
    t = np.concatenate([start[row], end[row]])
    g = np.concatenate([grp, grp])
    sign = np.concatenate([np.ones(len(row), np.int64), -np.ones(len(row), np.int64)])
    order = np.lexsort((sign, t, g))
    g_sorted, t_sorted = g[order], t[order]
    first = np.r_[True, g_sorted[1:] != g_sorted[:-1]] if len(order) else np.zeros(0, bool)
    for cap in range(4):
        delta = (np.concatenate([amounts[cap], amounts[cap]]) * sign)[order]
        total = np.cumsum(delta)
        base = np.maximum.accumulate(np.where(first, np.arange(len(total)), 0))
        level = total - (total[base] - delta[base])          # running sum within each group
        limit = limits.caps[g_sorted, cap]
        over = (limit >= 0) & (level > limit)
        for k in np.flatnonzero(over)[:20]:
            out.append(violation("limit_exceeded", -1, int(t_sorted[k]),
                                 f"limit group {g_sorted[k]} ({limits.reasons[g_sorted[k]][cap]}) "
                                 f"has {level[k]} {CAPS[cap][4:]} running at {t_sorted[k]}, "
                                 f"cap {limit[k]}"))
    return member


def ran_partition(cluster, jobs, schedule, start, partitions) -> np.ndarray:
    """Per job, the first allowed partition holding all its nodes (its first choice when none
    does, so the allocation check reports it)."""
    N = cluster.num_nodes
    member = np.zeros((len(cluster.partitions), N), dtype=bool)
    for p, part in enumerate(cluster.partitions):
        member[p, np.asarray(part.nodes, dtype=np.int64)] = True
    off = np.asarray(schedule.alloc_offsets, dtype=np.int64)
    nodes = np.clip(np.asarray(schedule.alloc_nodes, dtype=np.int64), 0, N - 1)
    a_job = np.repeat(np.arange(len(jobs)), np.diff(off))
    result = partitions.partition[partitions.offsets[:-1]].astype(np.int64)
    found = np.zeros(len(jobs), dtype=bool)
    counts = np.diff(partitions.offsets)
    for k in range(int(counts.max(initial=0))):
        has = counts > k
        cand = np.where(has, partitions.partition[np.minimum(partitions.offsets[:-1] + k,
                                                             len(partitions.partition) - 1)], 0)
        inside = member[cand[a_job], nodes]
        all_in = np.bincount(a_job[~inside], minlength=len(jobs)) == 0
        take = has & all_in & ~found
        result[take] = cand[take]
        found |= take
    return result


def check_exclusive_topo(jobs, start, end, a_job, a_node, placement, violation, out) -> None:
    """Append ``exclusive_topo`` violations. ``a_job``/``a_node``: the allocation
    entries that occupy (valid nodes). A sweep per leaf group over the (job, group)
    intervals: a violation is an instant where an exclusive job and another job
    both run on the group."""
    leaf = placement.levels[0].astype(np.int64)
    excl = placement.exclusive_topo
    uses = excl | ((jobs.gpus_per_node.astype(np.int64) + jobs.cpus_per_node
                    + jobs.mem_per_node) > 0)
    a_job = np.asarray(a_job, dtype=np.int64)
    grp = leaf[np.asarray(a_node, dtype=np.int64)]
    live = (start[a_job] >= 0) & (end[a_job] > start[a_job]) & (grp >= 0) & uses[a_job]
    B = int(leaf.max(initial=-1)) + 1
    pair = np.unique(a_job[live] * B + grp[live])
    pj, pg = pair // max(B, 1), pair % max(B, 1)
    # events +1 at start, -1 at end (ends first at a tie), grouped by leaf group; each
    # group's events sum to 0, so a global running sum is each group's own
    t = np.concatenate([start[pj], end[pj]])
    g = np.concatenate([pg, pg])
    sign = np.concatenate([np.ones(len(pj), np.int64), -np.ones(len(pj), np.int64)])
    is_x = np.concatenate([excl[pj], excl[pj]]).astype(np.int64)
    order = np.lexsort((sign, t, g))
    users = np.cumsum(sign[order])
    exclusive = np.cumsum((sign * is_x)[order])
    bad = np.flatnonzero((sign[order] > 0) & (exclusive >= 1) & (users >= 2))
    jid = jobs.job_id
    for k in bad[:20]:
        e = order[k] % len(pj)              # the pair whose start this is
        when, group = int(t[order[k]]), int(g[order[k]])
        on = np.flatnonzero((pg == group) & (start[pj] <= when) & (end[pj] > when))
        x = [int(pj[i]) for i in on if excl[pj[i]]]
        other = [int(pj[i]) for i in on if int(pj[i]) != x[0]]
        out.append(violation("exclusive_topo", int(jid[pj[e]]), when,
                             f"job {jid[x[0]]} (--exclusive=topo, {start[x[0]]}-{end[x[0]]}) "
                             f"shares leaf group {group} with job {jid[other[0]]} "
                             f"({start[other[0]]}-{end[other[0]]}) at {when}"))
