"""sprio- and sshare-like tables of a simulation state (pandas DataFrames, and the CLI).

:func:`sprio` gives, for every pending job, ``sprio -l``'s columns: the job
priority and each weighted factor. Column names are sprio's headers in lower
case; the second PARTITION header (the partition factor) is ``partition_prio``:

=========  ==================  ====================================================
sprio -l   column              value
=========  ==================  ====================================================
JOBID      job_id              job id
PARTITION  partition           partition name
USER       user                user name
ACCOUNT    account             account name
PRIORITY   priority            multifactor priority (what the scheduler sorts by)
SITE       site                site factor (0: not modelled)
AGE        age                 PriorityWeightAge x age factor
ASSOC      assoc               0 (PriorityWeightAssoc is not modelled)
FAIRSHARE  fairshare           PriorityWeightFairshare x fair-share factor
JOBSIZE    jobsize             PriorityWeightJobSize x job-size factor
PARTITION  partition_prio      PriorityWeightPartition x partition factor
QOS        qos                 PriorityWeightQOS x QOS factor (``qos_name``: the QOS)
NICE       nice                nice (0: not modelled)
TRES       tres                weighted TRES factors, e.g. ``cpu=12,gres/gpu=3``
=========  ==================  ====================================================

Each weighted factor is truncated to an integer, as the priority is. All
values come from :func:`fastsched.policy.priority.multifactor` (one weight at a
time for the factor columns), so the table and the scheduler cannot disagree.

:func:`sshare` gives ``sshare -l``'s columns (Account, User, RawShares,
NormShares, RawUsage, NormUsage, EffectvUsage, FairShare, LevelFS) for every
association, depth first, from :mod:`fastsched.policy.fairshare`.

CLI: ``fastsched sprio|sshare WORKLOAD.csv --cluster C [--config cfg.toml]
[--at T]``: the usage at ``T`` comes from simulating the workload
(:func:`fastsched.sim.site.simulate_site` under the configuration, policy
``--policy``) and charging every job that
started before ``T`` for the part it ran up to ``T`` (:func:`fastsched.policy.usage.usage_at`);
pending jobs are those submitted at or before ``T`` that had not started.
"""
from __future__ import annotations


import numpy as np

from ..model.errors import InputError
from ..policy.fairshare import Usage, level_fairshare
from ..model.jobs import JobTable
from ..policy.priority import TRES_NAMES, PriorityWeights, multifactor

__all__ = ["sprio", "sshare", "format_sprio", "format_sshare", "SPRIO_HEADERS", "SSHARE_COLUMNS"]

#: DataFrame column -> sprio -l header
SPRIO_HEADERS = {"job_id": "JOBID", "partition": "PARTITION", "user": "USER",
                 "account": "ACCOUNT", "priority": "PRIORITY", "site": "SITE", "age": "AGE",
                 "assoc": "ASSOC", "fairshare": "FAIRSHARE", "jobsize": "JOBSIZE",
                 "partition_prio": "PARTITION", "qos": "QOS", "nice": "NICE", "tres": "TRES"}
SSHARE_COLUMNS = ["Account", "User", "RawShares", "NormShares", "RawUsage", "NormUsage",
                  "EffectvUsage", "FairShare", "LevelFS"]
_FACTOR_WEIGHTS = {"age": "PriorityWeightAge", "fairshare": "PriorityWeightFairshare",
                   "jobsize": "PriorityWeightJobSize", "partition_prio": "PriorityWeightPartition",
                   "qos": "PriorityWeightQOS"}


def _as_workload(jobs_or_workload):
    """A Workload; a bare JobTable becomes one with users ``user<k>`` in account ``default``."""
    from ..io.workload import Workload
    if isinstance(jobs_or_workload, Workload):
        return jobs_or_workload
    if not isinstance(jobs_or_workload, JobTable):
        raise InputError("sprio needs a Workload or a JobTable")
    jobs = jobs_or_workload
    if len(jobs) and jobs.user.min() < 0:
        raise InputError("sprio: every job needs a user (user column >= 0)", field="user")
    nu = int(jobs.user.max()) + 1 if len(jobs) else 0
    return Workload(jobs, np.zeros(len(jobs), np.int32), [f"user{k}" for k in range(nu)],
                    ["default"], np.zeros(1, np.int32), ["default"])


def sprio(jobs_or_workload, now: int, config, usage: Usage, *, cluster=None,
          start_time=None):
    """pandas.DataFrame: sprio -l of the jobs pending at ``now`` (see module docstring).

    ``usage`` is the state's :class:`Usage` (its tree maps jobs to user
    associations, e.g. from :func:`fastsched.policy.usage.usage_at`); ``cluster``
    gives the partition names, job-size and TRES totals; ``start_time`` (per
    job, -1 = not started) tells which submitted jobs already run (default:
    none). Rows are in sprio's order: by priority, highest first, then job id.
    """
    import pandas as pd
    workload = _as_workload(jobs_or_workload)
    jobs = workload.jobs
    now = int(now)
    pending = jobs.submit_time <= now
    if start_time is not None:
        st = np.asarray(start_time, dtype=np.int64)
        if st.shape != (len(jobs),):
            raise InputError(f"start_time must have {len(jobs)} entries, got {st.shape}")
        pending &= (st < 0) | (st > now)
    rows = np.flatnonzero(pending)
    sub = jobs.take(rows)
    tree = usage.tree
    assoc = tree.job_associations(workload)[rows]
    kw = dict(fairshare=config.fairshare(tree, usage), fairshare_index=assoc,
              qos_factor=config.qos_factor()[config.job_qos(workload)[rows]], cluster=cluster)
    if cluster is not None:
        kw["partition_factor"] = config.partition_factor(cluster)
    w = config.weights
    frame = {"job_id": sub.job_id,
             "partition": _names([p.name for p in cluster.partitions], sub.partition)
             if cluster is not None else sub.partition,
             "user": _names(workload.user_names, sub.user),
             "account": _names(workload.account_names, workload.account[rows]),
             "priority": multifactor(sub, now, w, **kw),
             "site": np.zeros(len(rows), np.int64)}
    for col in ("age", "assoc", "fairshare", "jobsize", "partition_prio", "qos"):
        frame[col] = _one_factor(sub, now, w, kw, weight=_FACTOR_WEIGHTS.get(col))
    frame["nice"] = np.zeros(len(rows), np.int64)
    frame["tres"] = _tres_column(sub, now, w, kw)
    frame["qos_name"] = _names(config.qos_names, config.job_qos(workload)[rows])
    df = pd.DataFrame(frame)
    return df.sort_values(["priority", "job_id"], ascending=[False, True], kind="stable") \
        .reset_index(drop=True)


def _names(names, idx) -> np.ndarray:
    return np.asarray(list(names) + [""], dtype=object)[np.asarray(idx)]


def _one_factor(jobs, now, weights: PriorityWeights, kw, *, weight=None, tres=None):
    """int64 per job: one weighted factor, via multifactor with only that weight set.

    A site factor of 1 keeps the kernel's clamp-to-1 from hiding a 0 term;
    it is subtracted again (the kernel truncates after adding it).
    """
    if weight is None and tres is None:
        return np.zeros(len(jobs), np.int64)
    one = {name: 0 for name in _FACTOR_WEIGHTS.values()}
    args = dict(one, PriorityMaxAge=weights.PriorityMaxAge,
                PriorityFavorSmall=weights.PriorityFavorSmall,
                PriorityWeightTRES={} if tres is None else
                {tres: weights.PriorityWeightTRES[tres]})
    if weight is not None:
        args[weight] = getattr(weights, weight)
    if not any(args[k] for k in _FACTOR_WEIGHTS.values()) and not args["PriorityWeightTRES"]:
        return np.zeros(len(jobs), np.int64)
    return multifactor(jobs, now, PriorityWeights(**args), site=1, **kw) - 1


def _tres_column(jobs, now, weights, kw) -> np.ndarray:
    """sprio's TRES column: ``name=value`` of each non-zero weighted TRES factor."""
    out = np.full(len(jobs), "", dtype=object)
    for t in TRES_NAMES:
        if not weights.PriorityWeightTRES.get(t, 0.0):
            continue
        v = _one_factor(jobs, now, weights, kw, tres=t)
        piece = np.where(v != 0, np.char.add(f"{t.lower()}=", v.astype(str)), "").astype(object)
        sep = np.where((out != "") & (piece != ""), ",", "").astype(object)
        out = out + sep + piece
    return out


def sshare(tree, usage: Usage, config):
    """pandas.DataFrame: sshare -l of every association, depth first from root.

    Account / User: an account row has its name and an empty user; a user
    row the account it belongs to and the user. RawShares; NormShares =
    RawShares / the sum over its siblings; RawUsage (billed, decayed);
    NormUsage = RawUsage / root's; EffectvUsage = RawUsage / its parent's
    (Fair Tree's U); FairShare (users; Fair Tree or classic factor); LevelFS
    (Fair Tree; S / U). Root's shares and the classic algorithm's
    EffectvUsage and LevelFS are NaN (not exposed by fastsched.policy.fairshare).
    """
    import pandas as pd
    if usage.tree is not tree:
        raise InputError("sshare: usage belongs to another association tree")
    u = tree.node_usage(usage.raw)
    n = tree.num_nodes
    par = np.maximum(tree.parent, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        level = tree.children_shares[par]
        norm_shares = np.where(level > 0, tree.shares / np.where(level > 0, level, 1), 0.0)
        pu = u[par]
        eff = np.where(pu > 0, u / np.where(pu > 0, pu, 1), 0.0)
        norm_usage = u / u[0] if u[0] > 0 else np.zeros(n)
    fs = np.full(n, np.nan)
    fs[tree.user_nodes] = config.fairshare(tree, usage)
    fair_tree = config.fairshare_algorithm == "fair_tree"
    lfs = level_fairshare(tree, usage) if fair_tree else np.full(n, np.nan)
    if not fair_tree:
        eff = np.full(n, np.nan)
    norm_shares[0], eff[0] = np.nan, np.nan
    shares = tree.shares.copy()
    shares[0] = np.nan
    order = _depth_first(tree)
    acct_names = getattr(tree, "assoc_account", tree.names)
    user_names = getattr(tree, "assoc_user", None)
    users = np.array([user_names[v] if user_names else
                      (tree.names[v] if tree.is_user[v] else "") for v in order], dtype=object)
    accounts = np.array([acct_names[v] if not tree.is_user[v] or user_names
                         else tree.names[tree.parent[v]] for v in order], dtype=object)
    return pd.DataFrame({"Account": accounts, "User": users, "RawShares": shares[order],
                         "NormShares": norm_shares[order], "RawUsage": u[order],
                         "NormUsage": norm_usage[order], "EffectvUsage": eff[order],
                         "FairShare": fs[order], "LevelFS": lfs[order]},
                        columns=SSHARE_COLUMNS)


def _depth_first(tree) -> list[int]:
    """Nodes depth first from root, children in tree order (sshare -a's order)."""
    out, stack = [], [0]
    while stack:
        v = stack.pop()
        out.append(v)
        stack.extend(reversed(tree.children(v).tolist()))
    return out



def format_sprio(frame) -> str:
    """``sprio -l``'s table of :func:`sprio`'s frame (without its qos_name column)."""
    return _table(frame, [SPRIO_HEADERS[c] for c in frame.columns]) + "\n"


def format_sshare(frame, tree) -> str:
    """``sshare -l -a``'s table of :func:`sshare`'s frame, accounts indented by depth."""
    depth = _depths(tree)
    shown = frame.copy()
    order = _depth_first(tree)
    shown["Account"] = [" " * max(int(depth[v]) - (1 if tree.is_user[v] else 0), 0) + a
                        for v, a in zip(order, frame["Account"])]
    return _table(shown, SSHARE_COLUMNS) + "\n"


def _depths(tree) -> np.ndarray:
    d = np.zeros(tree.num_nodes, dtype=np.int64)
    for v in tree.order[1:]:
        d[v] = d[tree.parent[v]] + 1
    return d


def _fmt(value) -> str:
    if isinstance(value, (float, np.floating)):
        if np.isnan(value):
            return ""
        if np.isinf(value):
            return "inf"
        if float(value).is_integer() and abs(value) >= 1:
            return str(int(value))
        return f"{value:.6f}"
    return str(value)


def _table(frame, headers, left=("partition", "user", "account", "tres", "Account",
                                  "User")) -> str:
    """Columns right-aligned (names left-aligned), widths from the content, like Slurm."""
    cols = [[str(int(round(v))) if c == "RawUsage" else _fmt(v) for v in frame[c].tolist()]
            for c in frame.columns]
    widths = [max([len(h)] + [len(v) for v in col]) for h, col in zip(headers, cols)]
    align = [str.ljust if c in left else str.rjust for c in frame.columns]
    lines = [" ".join(a(h, w) for h, w, a in zip(headers, widths, align)).rstrip()]
    for i in range(len(frame)):
        lines.append(" ".join(a(col[i], w) for col, w, a in zip(cols, widths, align)).rstrip())
    return "\n".join(lines)
