"""QOS and association limits compiled into the engine's form (:class:`LimitGroups`).

:func:`compile_limits` turns a :class:`~fastsched.policy.config.SchedulerConfig` and
a workload into

* ``rejected``: jobs that a per-job limit forbids outright (MaxTRESPerJob,
  MaxWallDurationPerJob) or that exceed a running-job cap on their own (e.g.
  16 GPUs under ``GrpTRES=gres/gpu=8``), each with squeue's reason. Slurm
  leaves such a job pending forever with that reason; the engine never starts it.
* :class:`~fastsched.model.constraints.LimitGroups`: the caps on *running* jobs.
  A job counts against, in this order (the order its reason is looked for):

  1. its QOS's Grp limits (GrpJobs, GrpTRES, GrpSubmitJobs) - ``QOSGrp*``;
  2. its QOS's per-user limits for its user (MaxJobsPerUser, MaxTRESPerUser,
     MaxSubmitJobsPerUser) - ``QOSMax*PerUser*``;
  3. its user association's MaxJobs, unless its QOS sets MaxJobsPerUser -
     ``AssocMaxJobsLimit``;
  4. its user association's MaxSubmitJobs, unless its QOS sets
     MaxSubmitJobsPerUser - ``AssocMaxSubmitJobLimit``. (A job whose QOS
     overrides the cap neither counts against it nor is held by it; Slurm
     still counts it in the association's totals. Groups cannot say "counts
     but is not checked".)
  5. the Grp limits of its user association and of every account above it,
     nearest first - ``AssocGrp*``.

Precedence (Slurm's resource_limits page): a Max* limit is taken from the
first place that defines it in the order job QOS, user association, parent
accounts ascending; so a QOS MaxWall overrides an association MaxWall, and an
association MaxJobs set on an account holds for each user association below
it that does not set its own. Grp* limits all apply, each to its own
aggregate. Running caps cover jobs, GPUs (``gres/gpu``), CPUs and memory;
``node=`` is only supported in MaxTRESPerJob.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..model.constraints import CAPS, LimitGroups
from ..model.errors import InputError

__all__ = ["compile_limits", "blocked_reasons", "Rejected", "job_tres", "QOS_GRP_REASONS",
           "QOS_USER_REASONS", "ASSOC_GRP_REASONS", "ASSOC_MAX_JOBS_REASONS",
           "ASSOC_MAX_SUBMIT_REASONS", "PER_JOB_CHECKS"]

# squeue reason names per cap, in CAPS order (max_jobs, max_gpus, max_cpus, max_mem,
# max_submit); Slurm's job_reason_string() spellings. "AccountingPolicy" (Slurm's
# fallback reason) stands for caps a group never sets.
QOS_GRP_REASONS = ("QOSGrpJobsLimit", "QOSGrpGRES", "QOSGrpCpuLimit", "QOSGrpMemLimit",
                   "QOSGrpSubmitJobsLimit")
QOS_USER_REASONS = ("QOSMaxJobsPerUserLimit", "QOSMaxGRESPerUser", "QOSMaxCpuPerUserLimit",
                    "QOSMaxMemoryPerUser", "QOSMaxSubmitJobPerUserLimit")
ASSOC_GRP_REASONS = ("AssocGrpJobsLimit", "AssocGrpGRES", "AssocGrpCpuLimit",
                     "AssocGrpMemLimit", "AssocGrpSubmitJobsLimit")
ASSOC_MAX_JOBS_REASONS = ("AssocMaxJobsLimit",) + ("AccountingPolicy",) * 4
ASSOC_MAX_SUBMIT_REASONS = ("AccountingPolicy",) * 4 + ("AssocMaxSubmitJobLimit",)
#: per-job checks in the order they are made: (limit, TRES or None, QOS reason, assoc reason)
PER_JOB_CHECKS = (
    ("MaxTRESPerJob", "cpu", "QOSMaxCpuPerJobLimit", "AssocMaxCpuPerJobLimit"),
    ("MaxTRESPerJob", "mem", "QOSMaxMemoryPerJob", "AssocMaxMemPerJob"),
    ("MaxTRESPerJob", "node", "QOSMaxNodePerJobLimit", "AssocMaxNodePerJobLimit"),
    ("MaxTRESPerJob", "gres/gpu", "QOSMaxGRESPerJob", "AssocMaxGRESPerJob"),
    ("MaxWallDurationPerJob", None, "QOSMaxWallDurationPerJobLimit",
     "AssocMaxWallDurationPerJobLimit"),
)
_CAP_TRES = (None, "gres/gpu", "cpu", "mem", None)      # CAPS order


class Rejected(NamedTuple):
    """Jobs a limit forbids outright: job rows (int64) and reason names (object)."""

    rows: np.ndarray
    reasons: np.ndarray


def job_tres(jobs) -> dict[str, np.ndarray]:
    """int64 per job: what a job counts against limits (cpu, mem MB, node, gres/gpu)."""
    nodes = jobs.num_nodes.astype(np.int64)
    return {"cpu": nodes * jobs.cpus_per_node, "mem": nodes * jobs.mem_per_node,
            "node": nodes, "gres/gpu": nodes * jobs.gpus_per_node}


def _demand(jobs) -> np.ndarray:
    """int64[n, 5]: per job, its demand on each cap (1 job, GPUs, CPUs, MB, 1 submission)."""
    t = job_tres(jobs)
    one = np.ones(len(jobs), dtype=np.int64)
    return np.stack([one, t["gres/gpu"], t["cpu"], t["mem"], one], axis=1)


def _caps(limits, grp: bool, src: str, field: str) -> list[int]:
    """Cap row (CAPS order, -1 = none) of a Limits' Grp or per-user limits."""
    tres = limits.GrpTRES if grp else limits.MaxTRESPerUser
    if "node" in tres:
        raise InputError(f"{field}: node= is not supported in "
                         f"{'GrpTRES' if grp else 'MaxTRESPerUser'} (only cpu, mem, gres/gpu)",
                         file=src, field=field)
    jobs = limits.GrpJobs if grp else limits.MaxJobs
    submit = limits.GrpSubmitJobs if grp else limits.MaxSubmitJobs
    row = [-1 if jobs is None else jobs]
    row += [tres.get(t, -1) for t in _CAP_TRES[1:4]]
    row += [-1 if submit is None else submit]
    return row


def _assoc_limits(config, tree) -> list:
    """Limits per tree node (None where the config sets none)."""
    out = [None] * tree.num_nodes
    for a in config.accounts:
        out[tree.index[a.name]] = a.limits
    for u in config.users:
        v = tree.index.get(f"{u.account}/{u.name}")
        if v is not None:
            out[v] = u.limits
    return out


def _levels(tree) -> list:
    """Node arrays by depth (1, 2, ...), computed once per tree, vectorised."""
    levels = getattr(tree, "_levels", None)
    if levels is None:
        depth = np.zeros(tree.num_nodes, dtype=np.int64)
        cur = np.arange(tree.num_nodes)
        while (cur > 0).any():
            depth += cur > 0
            cur = np.where(cur > 0, tree.parent[np.maximum(cur, 0)], 0)
        levels = [np.flatnonzero(depth == d) for d in range(1, int(depth.max()) + 1)]
        tree._levels = levels
    return levels


def _inherit(tree, own: np.ndarray) -> np.ndarray:
    """Per node: its own value if set (>= 0), else its nearest ancestor's (-1: none)."""
    eff = own.copy()
    for nodes in _levels(tree):          # parents before children
        eff[nodes] = np.where(eff[nodes] >= 0, eff[nodes], eff[tree.parent[nodes]])
    return eff


def _per_job_limit(config, tree, node_limits, job_q, job_node, get) -> tuple:
    """(limit, from_qos) per job: the QOS's value if set, else the association path's."""
    qv = np.array([_none(get(q.limits)) for q in config.qos.values()], dtype=np.int64)
    own = np.array([_none(get(lim)) if lim is not None else -1 for lim in node_limits],
                   dtype=np.int64)
    av = _inherit(tree, own)
    q = qv[job_q]
    from_qos = q >= 0
    return np.where(from_qos, q, av[job_node]), from_qos


def _none(x) -> int:
    return -1 if x is None else int(x)


def compile_limits(config, workload, cluster=None, *, tree=None):
    """(LimitGroups, Rejected) for ``workload`` under ``config``'s QOS and associations.

    ``tree`` defaults to ``config.build_tree(workload)``; ``cluster``, if
    given, is checked against the config's ``[partition.*]`` names.
    Vectorised over jobs: a million jobs take about half a second.
    """
    if cluster is not None:
        config.partition_factor(cluster)          # raises on an unknown partition
    tree = config.build_tree(workload) if tree is None else tree
    jobs = workload.jobs
    n = len(jobs)
    job_q = config.job_qos(workload)
    job_ua = tree.job_associations(workload) if n else np.zeros(0, np.int32)
    job_node = tree.user_nodes[job_ua]
    node_limits = _assoc_limits(config, tree)
    demand = _demand(jobs)
    src = config.source
    qos_list = list(config.qos.values())

    entries_rows, entries_gid, caps_rows, reasons = [], [], [], []

    def add_kind(member: np.ndarray, key: np.ndarray, cap_of_key, reason_of_key):
        """Groups for the distinct keys of the member jobs (one entry per member)."""
        rows = np.flatnonzero(member)
        if not len(rows):
            return
        uniq, inv = np.unique(key[rows], return_inverse=True)
        base = len(caps_rows)
        for k in uniq.tolist():
            caps_rows.append(cap_of_key(k))
            reasons.append(reason_of_key(k))
        entries_rows.append(rows)
        entries_gid.append(base + inv.astype(np.int64))

    # 1. QOS Grp
    qgrp = [_caps(q.limits, True, src, f"qos.{q.name}.GrpTRES") if q.limits.any_grp() else None
            for q in qos_list]
    has = np.array([c is not None for c in qgrp], dtype=bool)
    add_kind(has[job_q] if n else np.zeros(0, bool), job_q.astype(np.int64),
             lambda k: qgrp[k], lambda k: QOS_GRP_REASONS)
    # 2. QOS per user
    quser = [_caps(q.limits, False, src, f"qos.{q.name}.MaxTRESPerUser")
             if (q.limits.MaxTRESPerUser or q.limits.MaxJobs is not None
                 or q.limits.MaxSubmitJobs is not None) else None for q in qos_list]
    has = np.array([c is not None for c in quser], dtype=bool)
    nu = max(len(workload.user_names), 1)
    add_kind(has[job_q] if n else np.zeros(0, bool),
             job_q.astype(np.int64) * nu + jobs.user,
             lambda k: quser[k // nu], lambda k: QOS_USER_REASONS)
    # 3./4. association MaxJobs / MaxSubmitJobs (per user association, inherited)
    for attr, col, reason in (("MaxJobs", 0, ASSOC_MAX_JOBS_REASONS),
                              ("MaxSubmitJobs", 4, ASSOC_MAX_SUBMIT_REASONS)):
        lim, from_qos = _per_job_limit(config, tree, node_limits, job_q, job_node,
                                       lambda lm, a=attr: getattr(lm, a))
        member = (lim >= 0) & ~from_qos
        node_cap = np.full(tree.num_nodes, -1, dtype=np.int64)
        node_cap[job_node[member]] = lim[member]

        def cap_row(k, col=col, node_cap=node_cap):
            row = [-1] * len(CAPS)
            row[col] = int(node_cap[k])
            return row
        add_kind(member, job_node.astype(np.int64), cap_row, lambda k, r=reason: r)
    # 5. association Grp, nearest first
    _add_assoc_grp(tree, node_limits, job_node, src, entries_rows, entries_gid, caps_rows,
                   reasons)

    groups = _assemble(n, entries_rows, entries_gid, caps_rows, reasons)
    rejected = _rejected(config, tree, node_limits, jobs, job_q, job_node, demand, groups)
    return groups, rejected


def _add_assoc_grp(tree, node_limits, job_node, src, entries_rows, entries_gid, caps_rows,
                   reasons) -> None:
    """One group per association with Grp limits; each job joins those on its path."""
    grp_nodes = [v for v, lim in enumerate(node_limits) if lim is not None and lim.any_grp()]
    if not grp_nodes or not len(job_node):
        return
    gid_of_node = np.full(tree.num_nodes, -1, dtype=np.int64)
    for v in grp_nodes:
        gid_of_node[v] = len(caps_rows)
        caps_rows.append(_caps(node_limits[v], True, src, f"account {tree.names[v]!r} GrpTRES"))
        reasons.append(ASSOC_GRP_REASONS)
    # walk up from every job's association at once: one step per tree level
    cur = job_node.astype(np.int64)
    rows_all = np.arange(len(job_node))
    while True:
        alive = cur > 0                      # stop at root (node 0), which sets no limits
        if not alive.any():
            break
        g = gid_of_node[np.where(alive, cur, 0)]
        hit = alive & (g >= 0)
        entries_rows.append(rows_all[hit])
        entries_gid.append(g[hit])
        cur = np.where(alive, tree.parent[np.where(alive, cur, 0)], 0).astype(np.int64)


def _assemble(n, entries_rows, entries_gid, caps_rows, reasons) -> LimitGroups:
    """CSR by job row; within a job, entries keep the order they were added in."""
    if not entries_rows:
        return LimitGroups(np.zeros(n + 1, dtype=np.int64), np.zeros(0, np.int64),
                           np.asarray(caps_rows, dtype=np.int64).reshape(-1, len(CAPS)),
                           list(reasons))
    counts = np.zeros((len(entries_rows), n), dtype=np.int32)
    for k, rows in enumerate(entries_rows):
        counts[k, rows] = 1           # each pass adds at most one entry per job
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts.sum(axis=0, dtype=np.int64), out=offsets[1:])
    before = np.cumsum(counts, axis=0) - counts       # entries of earlier passes, per job
    group = np.empty(int(offsets[-1]), dtype=np.int64)
    for k, (rows, gid) in enumerate(zip(entries_rows, entries_gid)):
        group[offsets[rows] + before[k, rows]] = gid
    return LimitGroups(offsets, group, np.asarray(caps_rows, dtype=np.int64), list(reasons))


def _rejected(config, tree, node_limits, jobs, job_q, job_node, demand, groups) -> Rejected:
    """Per-job limits first (QOS-sourced checks, then association), then lone-job caps."""
    n = len(jobs)
    code = np.full(n, -1, dtype=np.int64)          # index into ``names``
    names: list[str] = []
    tres = job_tres(jobs)
    tres[None] = jobs.time_limit.astype(np.int64)
    fails = []
    for limit, t, q_reason, a_reason in PER_JOB_CHECKS:
        get = (lambda lm, t=t: lm.MaxTRESPerJob.get(t)) if t else \
            (lambda lm: lm.MaxWallDurationPerJob)
        lim, from_qos = _per_job_limit(config, tree, node_limits, job_q, job_node, get)
        over = (lim >= 0) & (tres[t] > lim)
        fails.append((over & from_qos, q_reason))
        fails.append((over & ~from_qos, a_reason))
    for mask, name in fails[0::2] + fails[1::2]:     # every QOS check before any assoc one
        code[mask & (code < 0)] = len(names)
        names.append(name)
    # a job over a running cap on its own can never start: first such entry and cap
    if len(groups.group):
        row = np.repeat(np.arange(n), np.diff(groups.offsets))
        caps = groups.caps[groups.group]
        over = (caps >= 0) & (demand[row] > caps)
        bad = np.flatnonzero(over.any(axis=1) & (code[row] < 0))
        if len(bad):
            first = bad[np.unique(row[bad], return_index=True)[1]]
            cap = np.argmax(over[first], axis=1)
            for e, c in zip(first.tolist(), cap.tolist()):
                code[row[e]] = len(names)
                names.append(groups.reasons[int(groups.group[e])][c])
    rows = np.flatnonzero(code >= 0)
    return Rejected(rows.astype(np.int64),
                    np.array(names + [""], dtype=object)[code[rows]])


def blocked_reasons(groups: LimitGroups, jobs, running) -> np.ndarray:
    """object[n]: the reason each job may not start now given ``running``, or "".

    ``running`` is a bool mask (or row indices) of the running jobs; a job is
    held by the first cap, in its groups' order and CAPS order, that starting
    it would exceed (``max_submit`` is a submit-time cap and is not checked).
    """
    n = len(jobs)
    mask = np.zeros(n, dtype=bool)
    mask[np.asarray(running)] = True
    demand = _demand(jobs)
    row = np.repeat(np.arange(n), np.diff(groups.offsets))
    G = len(groups.caps)
    used = np.zeros((G, len(CAPS)), dtype=np.int64)
    run_e = mask[row]
    for c in range(len(CAPS)):
        used[:, c] = np.bincount(groups.group[run_e], weights=demand[row[run_e], c],
                                 minlength=G).astype(np.int64) if G else 0
    caps = groups.caps[groups.group]
    over = (caps >= 0) & (used[groups.group] + demand[row] > caps)
    over[:, CAPS.index("max_submit")] = False
    out = np.full(n, "", dtype=object)
    bad = np.flatnonzero(over.any(axis=1))
    if len(bad):
        first = np.unique(row[bad], return_index=True)[1]
        cap = np.argmax(over, axis=1)
        for e in bad[first].tolist():
            out[row[e]] = groups.reasons[int(groups.group[e])][int(cap[e])]
    return out
