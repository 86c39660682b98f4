"""Plain-Python twins of the fair-share and priority kernels, written for a reader.

Trees are dicts: ``parent[name]`` (root's parent is None), ``shares[name]``
(RawShares), ``users`` (list of user-association names, the order that
numbers them) and ``usage[user]`` (raw usage of each user association).
"""
from __future__ import annotations

import math

ROOT = "root"


def children_of(parent: dict) -> dict:
    kids = {name: [] for name in parent}
    for name, p in parent.items():
        if p is not None:
            kids[p].append(name)
    return kids


def subtree_usage(name, kids, usage) -> float:
    if not kids[name]:
        return float(usage.get(name, 0.0))
    return float(sum(subtree_usage(c, kids, usage) for c in kids[name]))


def level_fs(name, parent, shares, kids, usage) -> float:
    """Fair Tree's Level FS: S / U among siblings (0 if S = 0, inf if U = 0)."""
    p = parent[name]
    sibling_shares = sum(shares[c] for c in kids[p])
    S = shares[name] / sibling_shares if sibling_shares > 0 else 0.0
    parent_usage = subtree_usage(p, kids, usage)
    U = subtree_usage(name, kids, usage) / parent_usage if parent_usage > 0 else 0.0
    if S == 0:
        return 0.0
    if U == 0:
        return math.inf
    return S / U


def fair_tree(parent, shares, users, usage) -> list:
    """Fair Tree factor of each user, in ``users`` order."""
    kids = children_of(parent)
    is_user = set(users)
    n_users = len(users)
    lf = {name: level_fs(name, parent, shares, kids, usage) for name in parent if name != ROOT}
    factor = {}
    rank = n_users          # rank given to the current tie group
    rank_no_ties = n_users  # rank the next user gets if not tied

    def visit(siblings, starts_tied):
        nonlocal rank, rank_no_ties
        # highest Level FS first; on equal Level FS users come before accounts
        ordered = sorted(siblings, key=lambda a: (-lf[a], a not in is_user))
        previous = None
        i = 0
        while i < len(ordered):
            a = ordered[i]
            tied = starts_tied if i == 0 else lf[a] == previous
            if a in is_user:
                if not tied:
                    rank = rank_no_ties
                factor[a] = rank / n_users
                rank_no_ties -= 1
                i += 1
            else:
                # accounts with the same Level FS are merged before descending
                group = [a]
                while (i + len(group) < len(ordered)
                       and ordered[i + len(group)] not in is_user
                       and lf[ordered[i + len(group)]] == lf[a]):
                    group.append(ordered[i + len(group)])
                merged = [c for g in group for c in kids[g]]
                visit(merged, tied)
                i += len(group)
            previous = lf[a]

    visit(kids[ROOT], False)
    return [factor.get(u, 0.0) for u in users]


def classic(parent, shares, users, usage, damping=1.0, total_usage=None) -> list:
    """Classic fair share 2^(-U_E / S / d) of each user, in ``users`` order."""
    kids = children_of(parent)
    total = subtree_usage(ROOT, kids, usage) if total_usage is None else total_usage

    def norm_shares(name):
        if name == ROOT:
            return 1.0
        p = parent[name]
        sibling_shares = sum(shares[c] for c in kids[p])
        frac = shares[name] / sibling_shares if sibling_shares > 0 else 0.0
        return norm_shares(p) * frac

    def norm_usage(name):
        if total <= 0:
            return 0.0
        return min(subtree_usage(name, kids, usage) / total, 1.0)

    def effective_usage(name):
        p = parent[name]
        if p == ROOT:
            return norm_usage(name)
        sibling_shares = sum(shares[c] for c in kids[p])
        if sibling_shares == 0:
            return effective_usage(p)
        ua = norm_usage(name)
        return ua + (effective_usage(p) - ua) * (shares[name] / sibling_shares)

    out = []
    for u in users:
        S = norm_shares(u)
        out.append(0.0 if S <= 0 else 2.0 ** (-(effective_usage(u) / S) / damping))
    return out


def multifactor_one(job: dict, now, w: dict, total_nodes, total_cpus, tres_total: dict) -> int:
    """Slurm priority of one job.

    ``job``: submit, num_nodes, cpus_per_node, mem_per_node, gpus_per_node,
    fairshare, partition_factor, qos, site, nice. ``w``: age, fs, js, part,
    qos, max_age, favor_small, tres (dict TRES -> weight). ``tres_total``:
    TRES -> total for this job's partition.
    """
    age = 0.0
    if now > job["submit"]:
        waited = now - job["submit"]
        age = 1.0 if waited >= w["max_age"] else waited / w["max_age"]
    nodes = float(job["num_nodes"])
    cpus = nodes * job["cpus_per_node"]
    if w["favor_small"]:
        js = (total_nodes - nodes) / total_nodes
        if cpus:
            js = (js + (total_cpus - cpus) / total_cpus) / 2
    else:
        js = nodes / total_nodes
        if cpus:
            js = (js + cpus / total_cpus) / 2
    js = min(max(js, 0.0), 1.0)
    priority = (age * w["age"] + job["fairshare"] * w["fs"] + js * w["js"]
                + job["partition_factor"] * w["part"] + job["qos"] * w["qos"]
                + float(job["site"]) - float(job["nice"]))
    allocated = {"CPU": cpus, "Mem": nodes * job["mem_per_node"], "Node": nodes,
                 "GRES/gpu": nodes * job["gpus_per_node"]}
    for name in ("CPU", "Mem", "Node", "GRES/gpu"):
        weight = w["tres"].get(name, 0.0)
        total = tres_total.get(name, 0.0)
        if weight and allocated[name] and total > 0:
            priority += allocated[name] / total * weight
    if priority < 1:
        priority = 1.0
    if priority > 0xFFFFFFFF:
        return 0xFFFFFFFF
    return int(priority)


# ---------------------------------------------------------------- array twins
# The pure-Python Fair Tree that fastsched.policy.fairshare used before its Numba kernel, on an
# AssociationTree (arrays), kept verbatim so that the kernel can be checked *bitwise*:
# same Level FS arithmetic, same sums in the same order, same tie rules.

def node_usage_arrays(tree, user_usage):
    """Each node's usage, summed child by child in reverse breadth-first order."""
    import numpy as np
    u = np.zeros(tree.num_nodes, dtype=np.float64)
    u[tree.user_nodes] = user_usage
    for v in tree.order[::-1]:       # children before parents
        if v:
            u[tree.parent[v]] += u[v]
    return u


def level_fairshare_arrays(tree, raw):
    """Level FS S / U of every node (root NaN), as fastsched computed it in NumPy."""
    import numpy as np
    u = node_usage_arrays(tree, np.asarray(raw, dtype=np.float64))
    par = tree.parent[1:]
    lvl = tree.children_shares[par]
    with np.errstate(divide="ignore", invalid="ignore"):
        S = np.where(lvl > 0, tree.shares[1:] / np.where(lvl > 0, lvl, 1.0), 0.0)
        pu = u[par]
        U = np.where(pu > 0, u[1:] / np.where(pu > 0, pu, 1.0), 0.0)
        lf = np.where(S == 0, 0.0, S / U)
    out = np.empty(tree.num_nodes, dtype=np.float64)
    out[0] = np.nan
    out[1:] = lf
    return out


def fair_tree_arrays(tree, raw):
    """Fair Tree factor of each user association by recursion over sorted siblings."""
    import numpy as np
    lf = level_fairshare_arrays(tree, raw)
    n_users = tree.num_users
    out = np.zeros(n_users, dtype=np.float64)
    if n_users == 0:
        return out
    is_user = tree.is_user
    uon = tree.user_of_node
    cptr, cidx = tree.child_ptr, tree.child_idx
    state = [n_users, n_users]           # rank, rank-no-ties

    def visit(siblings, tied_in):
        if len(siblings) == 0:
            return
        # sort: Level FS descending, users (key 0) before accounts (key 1)
        order = np.lexsort((~is_user[siblings], -lf[siblings]))
        sib = siblings[order]
        vals = lf[sib]
        users = is_user[sib]
        prev = None
        i, m = 0, len(sib)
        while i < m:
            v = int(sib[i])
            tied = tied_in if i == 0 else (prev is not None and vals[i] == prev)
            if users[i]:
                if not tied:
                    state[0] = state[1]
                out[uon[v]] = state[0] / n_users
                state[1] -= 1
                i += 1
            else:
                j = i + 1
                while j < m and not users[j] and vals[j] == vals[i]:
                    j += 1
                merged = np.concatenate([cidx[cptr[int(w)]:cptr[int(w) + 1]]
                                         for w in sib[i:j]])
                visit(merged, tied)
                i = j
            prev = vals[i - 1]

    visit(tree.children(0), False)
    return out
