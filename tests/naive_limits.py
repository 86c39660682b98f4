"""Plain-Python twins of limit compilation and of "may this job start now?".

One job at a time, following the rules of ``fastsched.policy.limits`` as written in
its docstring: groups are named by keys (``("qos_grp", qos)``, ``("qos_user",
qos, user)``, ``("assoc_max_jobs", node)``, ``("assoc_max_submit", node)``,
``("assoc_grp", node)``), each with caps in CAPS order and reason names.
"""
from __future__ import annotations

from fastsched.policy.limits import (ASSOC_GRP_REASONS, ASSOC_MAX_JOBS_REASONS,
                              ASSOC_MAX_SUBMIT_REASONS, PER_JOB_CHECKS, QOS_GRP_REASONS,
                              QOS_USER_REASONS)


def _caps(jobs, tres, submit):
    def v(x):
        return -1 if x is None else x
    return (v(jobs), tres.get("gres/gpu", -1), tres.get("cpu", -1), tres.get("mem", -1),
            v(submit))


def _demand(jobs, i):
    nodes = int(jobs.num_nodes[i])
    return {"jobs": 1, "gres/gpu": nodes * int(jobs.gpus_per_node[i]),
            "cpu": nodes * int(jobs.cpus_per_node[i]), "mem": nodes * int(jobs.mem_per_node[i]),
            "node": nodes, "wall": int(jobs.time_limit[i])}


def _node_limits(config, tree):
    out = {}
    for a in config.accounts:
        out[tree.index[a.name]] = a.limits
    for u in config.users:
        name = f"{u.account}/{u.name}"
        if name in tree.index:
            out[tree.index[name]] = u.limits
    return out


def _path(tree, node):
    """The job's user association, then its accounts upwards (root excluded)."""
    out = []
    while node > 0:
        out.append(node)
        node = int(tree.parent[node])
    return out


def _first_on_path(path, node_limits, get):
    for v in path:
        lim = node_limits.get(v)
        if lim is not None and get(lim) is not None:
            return get(lim)
    return None


def naive_groups(config, tree, workload):
    """Per job: list of (key, caps, reasons) in the order they are checked."""
    jobs = workload.jobs
    qos_names = config.qos_names
    job_q = config.job_qos(workload)
    ua = tree.job_associations(workload)
    node_limits = _node_limits(config, tree)
    out = []
    for i in range(len(jobs)):
        q = config.qos[qos_names[int(job_q[i])]]
        L = q.limits
        user = int(jobs.user[i])
        path = _path(tree, int(tree.user_nodes[int(ua[i])]))
        entries = []
        if L.GrpTRES or L.GrpJobs is not None or L.GrpSubmitJobs is not None:
            entries.append((("qos_grp", q.name), _caps(L.GrpJobs, L.GrpTRES, L.GrpSubmitJobs),
                            QOS_GRP_REASONS))
        if L.MaxTRESPerUser or L.MaxJobs is not None or L.MaxSubmitJobs is not None:
            entries.append((("qos_user", q.name, user),
                            _caps(L.MaxJobs, L.MaxTRESPerUser, L.MaxSubmitJobs),
                            QOS_USER_REASONS))
        if L.MaxJobs is None:
            mj = _first_on_path(path, node_limits, lambda lm: lm.MaxJobs)
            if mj is not None:
                entries.append((("assoc_max_jobs", path[0]), (mj, -1, -1, -1, -1),
                                ASSOC_MAX_JOBS_REASONS))
        if L.MaxSubmitJobs is None:
            ms = _first_on_path(path, node_limits, lambda lm: lm.MaxSubmitJobs)
            if ms is not None:
                entries.append((("assoc_max_submit", path[0]), (-1, -1, -1, -1, ms),
                                ASSOC_MAX_SUBMIT_REASONS))
        for v in path:
            lim = node_limits.get(v)
            if lim is not None and (lim.GrpTRES or lim.GrpJobs is not None
                                    or lim.GrpSubmitJobs is not None):
                entries.append((("assoc_grp", v),
                                _caps(lim.GrpJobs, lim.GrpTRES, lim.GrpSubmitJobs),
                                ASSOC_GRP_REASONS))
        out.append(entries)
    return out


def naive_rejected(config, tree, workload, groups):
    """{job row: reason} for jobs a per-job limit or a lone-job cap forbids."""
    jobs = workload.jobs
    qos_names = config.qos_names
    job_q = config.job_qos(workload)
    ua = tree.job_associations(workload)
    node_limits = _node_limits(config, tree)
    out = {}
    for i in range(len(jobs)):
        q = config.qos[qos_names[int(job_q[i])]]
        path = _path(tree, int(tree.user_nodes[int(ua[i])]))
        d = _demand(jobs, i)
        qos_fails, assoc_fails = [], []
        for limit, t, q_reason, a_reason in PER_JOB_CHECKS:
            if t is None:
                def get(lm):
                    return lm.MaxWallDurationPerJob
                need = d["wall"]
            else:
                def get(lm, t=t):
                    return lm.MaxTRESPerJob.get(t)
                need = d[t]
            if get(q.limits) is not None:
                if need > get(q.limits):
                    qos_fails.append(q_reason)
            else:
                lim = _first_on_path(path, node_limits, get)
                if lim is not None and need > lim:
                    assoc_fails.append(a_reason)
        fails = qos_fails + assoc_fails
        if not fails:
            for key, caps, reasons in groups[i]:
                need = (1, d["gres/gpu"], d["cpu"], d["mem"], 1)
                for c in range(5):
                    if caps[c] >= 0 and need[c] > caps[c]:
                        fails.append(reasons[c])
                        break
                if fails:
                    break
        if fails:
            out[i] = fails[0]
    return out


def naive_blocked(groups, jobs, running: set, i: int) -> str:
    """Reason job ``i`` may not start with ``running`` jobs running, or ""."""
    d = _demand(jobs, i)
    need = (1, d["gres/gpu"], d["cpu"], d["mem"])
    for key, caps, reasons in groups[i]:
        used = [0, 0, 0, 0]
        for j in running:
            if any(k == key for k, _, _ in groups[j]):
                dj = _demand(jobs, j)
                used = [used[0] + 1, used[1] + dj["gres/gpu"], used[2] + dj["cpu"],
                        used[3] + dj["mem"]]
        for c in range(4):
            if caps[c] >= 0 and used[c] + need[c] > caps[c]:
                return reasons[c]
    return ""


def naive_usage(config, tree, workload, start, end, now, reset_every=None):
    """Usage per user association, stepped one second at a time.

    Each second [t, t+1) a running job adds r * c to its association after
    the association's usage is multiplied by d (d = 2^(-1/h), c = the decayed
    weight of one second, h/ln2 * (1 - d); d = c = 1 without decay).
    ``reset_every``: usage is zeroed at multiples of it (DAILY = 86400), ``now`` included
    (usage_at counts only time after the last reset at or before ``now``).
    """
    import math
    jobs = workload.jobs
    h = config.decay_half_life
    d = 2.0 ** (-1.0 / h) if h > 0 else 1.0
    c = h / math.log(2.0) * (1.0 - d) if h > 0 else 1.0
    assoc = tree.job_associations(workload)
    qos = config.job_qos(workload)
    factors = config.usage_factor()
    w = config.tres_billing_weights
    rate = {}
    for i in range(len(jobs)):
        nodes = int(jobs.num_nodes[i])
        rate[i] = (w["CPU"] * nodes * int(jobs.cpus_per_node[i])
                   + w["Mem"] * nodes * int(jobs.mem_per_node[i]) + w["Node"] * nodes
                   + w["GRES/gpu"] * nodes * int(jobs.gpus_per_node[i])) * factors[int(qos[i])]
    usage = [0.0] * tree.num_users
    t0 = min([int(s) for s in start if s >= 0] + [now])
    for t in range(t0, now):
        if reset_every and t % reset_every == 0:
            usage = [0.0] * tree.num_users
        usage = [u * d for u in usage]
        for i in range(len(jobs)):
            e = int(end[i]) if end[i] >= 0 else now
            if 0 <= start[i] <= t < e:
                usage[int(assoc[i])] += rate[i] * c
    if reset_every and now % reset_every == 0:
        usage = [0.0] * tree.num_users      # a reset at the instant asked about counts
    return usage
