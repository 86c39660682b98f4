"""Accounts, usage and fair share: Slurm's Fair Tree and classic algorithms.

An :class:`AssociationTree` is Slurm's association hierarchy (root >
organisations > accounts > users, any depth) held as arrays: ``parent``
(int32, -1 for the root), ``shares`` (RawShares, float64), ``is_user`` and
the children in CSR form (``child_ptr``, ``child_idx``). Users are the
*user associations*, numbered 0..num_users-1 in ``user_names`` order; a job
is charged to one of them (see :meth:`AssociationTree.job_associations`).

:class:`Usage` accumulates billed usage per user association (TRES-seconds
times TRESBillingWeights times the QOS UsageFactor), decays it by a
half-life and resets it. :func:`fair_tree` and :func:`classic` turn a tree
and a usage into one fair-share factor in [0, 1] per user association.

See ``docs/priority.md`` for the exact rules and the Slurm pages they follow.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
import numpy as np
from numba import njit

from ..model.errors import InputError

__all__ = ["AssociationTree", "Usage", "fair_tree", "classic", "level_fairshare", "MAX_RAW_SHARES",
           "DEFAULT_TRES_BILLING_WEIGHTS"]

#: largest RawShares value accepted. Slurm stores shares as uint32 and reserves
#: 0x7FFFFFFF for ``FairShare=parent`` (not supported here), so shares are
#: integers 0 .. 0x7FFFFFFE.
MAX_RAW_SHARES = 0x7FFFFFFE
#: Slurm's billing without TRESBillingWeights: allocated CPUs.
DEFAULT_TRES_BILLING_WEIGHTS = {"CPU": 1.0}
ROOT = "root"


def _check_shares(name: str, value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"association {name!r}: RawShares {value!r} is not a number",
                         field="shares") from None
    if not np.isfinite(v) or v != int(v):
        raise InputError(f"association {name!r}: RawShares must be an integer, got {value!r}",
                         field="shares")
    if v < 0:
        raise InputError(f"association {name!r}: RawShares must be >= 0, got {value!r}",
                         field="shares")
    if v > MAX_RAW_SHARES:
        raise InputError(f"association {name!r}: RawShares {value!r} exceeds {MAX_RAW_SHARES}",
                         field="shares")
    return v


class AssociationTree:
    """Slurm's association tree as arrays (node 0 is ``root``).

    Attributes: ``names`` (list of node names), ``parent`` (int32[n], -1 for
    root), ``shares`` (float64[n], RawShares; root's is 1), ``is_user``
    (bool[n]), ``child_ptr`` (int64[n+1]) and ``child_idx`` (int32[...]):
    the children of node v are ``child_idx[child_ptr[v]:child_ptr[v+1]]`` in
    the order they were given; ``user_nodes`` (int32[num_users]): node of
    each user association; ``user_names``; ``order`` (int32[n]): nodes in
    breadth-first order from the root (parents before children).
    """

    def __init__(self, names: Sequence[str], parent, shares, is_user):
        self.names = list(names)
        self.parent = np.ascontiguousarray(parent, dtype=np.int32)
        self.shares = np.ascontiguousarray(shares, dtype=np.float64)
        self.is_user = np.ascontiguousarray(is_user, dtype=bool)
        n = len(self.names)
        self.index = {name: i for i, name in enumerate(self.names)}
        counts = np.bincount(self.parent[1:], minlength=n) if n > 1 else np.zeros(n, np.int64)
        self.child_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=self.child_ptr[1:])
        # stable sort of nodes by parent keeps the given child order
        kids = np.argsort(self.parent[1:], kind="stable").astype(np.int32) + 1
        self.child_idx = kids
        self.user_nodes = np.flatnonzero(self.is_user).astype(np.int32)
        self.user_names = [self.names[v] for v in self.user_nodes.tolist()]
        self.user_of_node = np.full(n, -1, dtype=np.int32)
        self.user_of_node[self.user_nodes] = np.arange(len(self.user_nodes), dtype=np.int32)
        # breadth-first order (the constructors guarantee the tree is connected)
        order = [0]
        k = 0
        while k < len(order):
            v = order[k]
            order.extend(self.child_idx[self.child_ptr[v]:self.child_ptr[v + 1]].tolist())
            k += 1
        self.order = np.asarray(order, dtype=np.int32)
        # sum of RawShares of each node's children (Slurm's level_shares of the children)
        self.children_shares = np.zeros(n, dtype=np.float64)
        np.add.at(self.children_shares, self.parent[1:], self.shares[1:])

    # ------------------------------------------------------------------ builders
    @classmethod
    def from_edges(cls, edges: Iterable, users: Sequence[str] | None = None) -> "AssociationTree":
        """Build from ``(parent, child, raw_shares)`` edges; the root is ``"root"``.

        ``users`` names the user associations (in the order that numbers
        them); if omitted, every leaf is a user, in edge order. Raises
        :class:`InputError` naming the entry for a duplicate child, an
        unknown parent, a cycle (nodes not reachable from root), bad shares,
        a user with children or an unknown user name.
        """
        names = [ROOT]
        parent_name: list[str | None] = [None]
        shares = [1.0]
        index = {ROOT: 0}
        for k, edge in enumerate(edges):
            try:
                p, c, s = edge
            except (TypeError, ValueError):
                raise InputError(f"edge {k}: expected (parent, child, raw_shares), got {edge!r}",
                                 line=k + 1) from None
            p, c = str(p), str(c)
            if c == ROOT:
                raise InputError(f"edge {k}: 'root' cannot be a child (of {p!r})", line=k + 1)
            if c in index:
                raise InputError(f"edge {k}: duplicate association {c!r}", line=k + 1)
            index[c] = len(names)
            names.append(c)
            parent_name.append(p)
            shares.append(_check_shares(c, s))
        n = len(names)
        parent = np.full(n, -1, dtype=np.int32)
        for v in range(1, n):
            p = parent_name[v]
            if p not in index:
                raise InputError(f"association {names[v]!r}: unknown parent {p!r}",
                                 field="parent")
            parent[v] = index[p]
        # cycle check: every node must reach root by following parents
        state = np.zeros(n, dtype=np.int8)   # 0 unknown, 1 reaches root
        state[0] = 1
        for v in range(1, n):
            path = []
            u = v
            while state[u] == 0 and u not in path:
                path.append(u)
                u = int(parent[u])
            if state[u] != 1:
                raise InputError(f"association {names[u]!r} is in a cycle "
                                 f"(it is its own ancestor)", field="parent")
            for w in path:
                state[w] = 1
        has_child = np.zeros(n, dtype=bool)
        has_child[parent[1:]] = True
        is_user = np.zeros(n, dtype=bool)
        if users is None:
            is_user[1:] = ~has_child[1:]
        else:
            user_list = [str(u) for u in users]
            if len(set(user_list)) != len(user_list):
                dup = next(u for u in user_list if user_list.count(u) > 1)
                raise InputError(f"user {dup!r} listed twice", field="users")
            for u in user_list:
                if u not in index or u == ROOT:
                    raise InputError(f"unknown user association {u!r}", field="users")
                if has_child[index[u]]:
                    raise InputError(f"user association {u!r} has children", field="users")
                is_user[index[u]] = True
            # reorder so that users are numbered in the order given
            tree = cls(names, parent, shares, is_user)
            tree.user_nodes = np.array([index[u] for u in user_list], dtype=np.int32)
            tree.user_names = user_list
            tree.user_of_node[:] = -1
            tree.user_of_node[tree.user_nodes] = np.arange(len(user_list), dtype=np.int32)
            return tree
        return cls(names, parent, shares, is_user)

    @classmethod
    def from_workload(cls, workload, org_shares=1, account_shares=1,
                      user_shares=1) -> "AssociationTree":
        """root > organisations > accounts > (user, account) associations.

        ``*_shares`` are a number for all, or a mapping name -> RawShares
        (names not in the mapping get 1). User associations are the distinct
        (user, account) pairs of the jobs, named ``"account/user"``, in
        (account, user) order; :meth:`job_associations` maps jobs to them.
        A mapping key that names no organisation / account / user is an
        :class:`InputError`.
        """
        def lookup(spec, names, what):
            if isinstance(spec, Mapping):
                known = set(names)
                for key in spec:
                    if key not in known:
                        raise InputError(f"unknown {what} {key!r} in {what} shares",
                                         field=f"{what}_shares")
                return [spec.get(nm, 1) for nm in names]
            return [spec] * len(names)

        orgs, accts, users = workload.org_names, workload.account_names, workload.user_names
        pairs = np.unique(np.stack([workload.account.astype(np.int64),
                                    workload.jobs.user.astype(np.int64)], axis=1), axis=0) \
            if len(workload) else np.zeros((0, 2), dtype=np.int64)
        o_sh = lookup(org_shares, orgs, "org")
        a_sh = lookup(account_shares, accts, "account")
        u_sh_all = lookup(user_shares, users, "user")
        edges = [(ROOT, "org:" + o, s) for o, s in zip(orgs, o_sh)]
        edges += [("org:" + orgs[int(workload.org_of_account[a])], "acct:" + accts[a], a_sh[a])
                  for a in range(len(accts))]
        user_assoc = [f"{accts[a]}/{users[u]}" for a, u in pairs.tolist()]
        edges += [("acct:" + accts[a], name, u_sh_all[u])
                  for (a, u), name in zip(pairs.tolist(), user_assoc)]
        tree = cls.from_edges(edges, users=user_assoc)
        tree._pairs = pairs
        return tree

    def job_associations(self, workload) -> np.ndarray:
        """User-association index (int32) of each job of ``workload``.

        Only for trees built by :meth:`from_workload` from the same workload
        (or one with the same users and accounts).
        """
        pairs = getattr(self, "_pairs", None)
        if pairs is None:
            raise InputError("job_associations needs a tree built by from_workload")
        nu = max(len(workload.user_names), 1)
        key = pairs[:, 0] * nu + pairs[:, 1]
        jk = workload.account.astype(np.int64) * nu + workload.jobs.user
        pos = np.searchsorted(key, jk)
        pos = np.minimum(pos, max(len(key) - 1, 0))
        if len(jk) and (len(key) == 0 or np.any(key[pos] != jk)):
            i = int(np.flatnonzero((len(key) == 0) | (key[pos] != jk))[0])
            raise InputError(f"job {int(workload.jobs.job_id[i])}: (account, user) not in tree")
        return pos.astype(np.int32)

    # ------------------------------------------------------------------ helpers
    @property
    def num_nodes(self) -> int:
        return len(self.names)

    @property
    def num_users(self) -> int:
        return len(self.user_nodes)

    def children(self, v: int) -> np.ndarray:
        return self.child_idx[self.child_ptr[v]:self.child_ptr[v + 1]]

    def user_index(self, name: str) -> int:
        """Index of the user association called ``name``."""
        v = self.index.get(name)
        if v is None or self.user_of_node[v] < 0:
            raise InputError(f"unknown user association {name!r}")
        return int(self.user_of_node[v])

    def node_usage(self, user_usage) -> np.ndarray:
        """float64[num_nodes]: each node's usage = sum over the users below it."""
        u = np.zeros(self.num_nodes, dtype=np.float64)
        u[self.user_nodes] = user_usage
        _sum_up(u, self.order, self.parent)
        return u

    def __repr__(self) -> str:
        return f"AssociationTree({self.num_nodes} associations, {self.num_users} users)"


class Usage:
    """Billed usage per user association, with half-life decay and reset.

    ``raw`` (float64[num_users]) is Slurm's ``usage_raw`` of each user
    association. ``tres_weights`` are TRESBillingWeights (name -> weight, e.g.
    ``{"CPU": 1.0, "Mem": 0.25 / 1024, "GRES/gpu": 2.0}``; Mem is per MB);
    a TRES name without a weight is an error (give it weight 0 to ignore it).
    """

    def __init__(self, tree: AssociationTree, tres_weights: Mapping[str, float] | None = None):
        self.tree = tree
        weights = dict(DEFAULT_TRES_BILLING_WEIGHTS if tres_weights is None else tres_weights)
        for k, w in weights.items():
            try:
                wf = float(w)
            except (TypeError, ValueError):
                raise InputError(f"TRES billing weight {k!r}: {w!r} is not a number") from None
            if not np.isfinite(wf) or wf < 0:
                raise InputError(f"TRES billing weight {k!r} must be a finite number >= 0, "
                                 f"got {w!r}")
            weights[k] = wf
        self.tres_weights = weights
        self.raw = np.zeros(tree.num_users, dtype=np.float64)

    def billing(self, tres_seconds: Mapping[str, object]) -> np.ndarray | float:
        """Sum of weight x amount over the given TRES (scalars or arrays)."""
        total = 0.0
        for k, amount in tres_seconds.items():
            if k not in self.tres_weights:
                raise InputError(f"TRES {k!r} has no billing weight "
                                 f"(known: {sorted(self.tres_weights)})")
            a = np.asarray(amount, dtype=np.float64)
            if np.any(~np.isfinite(a)) or np.any(a < 0):
                raise InputError(f"TRES {k!r}: amounts must be finite and >= 0")
            total = total + self.tres_weights[k] * a
        return total

    def add_usage(self, user_index, tres_seconds: Mapping[str, object],
                  usage_factor=1.0) -> None:
        """Charge TRES-seconds to user association(s).

        ``user_index`` is an int or int array; ``tres_seconds`` maps TRES name
        to amount x seconds (scalar or array like ``user_index``);
        ``usage_factor`` is the QOS UsageFactor (>= 0), scalar or array.
        Repeated indices accumulate.
        """
        idx = np.asarray(user_index)
        if idx.dtype.kind not in "iu":
            raise InputError(f"user index must be integer, got {idx.dtype}")
        if idx.size and (idx.min() < 0 or idx.max() >= self.tree.num_users):
            bad = int(idx.flat[np.flatnonzero((idx.ravel() < 0) |
                                              (idx.ravel() >= self.tree.num_users))[0]])
            raise InputError(f"unknown user association index {bad} "
                             f"(tree has {self.tree.num_users} users)")
        f = np.asarray(usage_factor, dtype=np.float64)
        if np.any(~np.isfinite(f)) or np.any(f < 0):
            raise InputError(f"QOS UsageFactor must be finite and >= 0, got {usage_factor!r}")
        amount = np.broadcast_to(np.asarray(self.billing(tres_seconds), dtype=np.float64) * f,
                                 idx.shape)
        np.add.at(self.raw, idx, amount)

    def decay(self, elapsed_seconds: float, half_life: float) -> None:
        """Multiply usage by 2^(-elapsed/half_life) (PriorityDecayHalfLife)."""
        e, h = float(elapsed_seconds), float(half_life)
        if not (np.isfinite(h) and h > 0):
            raise InputError(f"half-life must be > 0 seconds, got {half_life!r}",
                             field="PriorityDecayHalfLife")
        if not (np.isfinite(e) and e >= 0):
            raise InputError(f"elapsed time must be >= 0 seconds, got {elapsed_seconds!r}")
        self.raw *= 2.0 ** (-e / h)

    def reset(self) -> None:
        """Zero all usage (PriorityUsageResetPeriod)."""
        self.raw[:] = 0.0

    def node_usage(self) -> np.ndarray:
        return self.tree.node_usage(self.raw)


def _user_usage(tree: AssociationTree, usage) -> np.ndarray:
    raw = usage.raw if isinstance(usage, Usage) else usage
    raw = np.asarray(raw, dtype=np.float64)
    if raw.shape != (tree.num_users,):
        raise InputError(f"usage has shape {raw.shape}, expected ({tree.num_users},)")
    if np.any(~np.isfinite(raw)) or np.any(raw < 0):
        raise InputError("usage must be finite and >= 0")
    return raw


def level_fairshare(tree: AssociationTree, usage) -> np.ndarray:
    """float64[num_nodes]: Fair Tree's Level FS = S / U of every association.

    S = RawShares / sum of RawShares of it and its siblings (0 if that sum is
    0); U = usage / parent's usage (0 if the parent's usage is 0); LF = 0 if
    S = 0, else S / U (infinity when U = 0). The root's entry is NaN.
    """
    u = tree.node_usage(_user_usage(tree, usage))
    return _level_fs(u, tree.parent, tree.shares, tree.children_shares)


def fair_tree(tree: AssociationTree, usage) -> np.ndarray:
    """float64[num_users]: Fair Tree fair-share factor of each user association.

    Children of each account are sorted by Level FS descending (users before
    accounts on equal Level FS) and visited depth first; users are ranked in
    that pre-order, starting at rank = number of users and decreasing by one
    per user; a user's factor is rank / number of users. Ties: sibling users
    with equal Level FS share a rank; a user tied with a sibling account gives
    that account's first user its rank; sibling accounts with equal Level FS
    have their children merged (then sorted together) before descending.
    """
    lf = level_fairshare(tree, usage)
    out = np.zeros(tree.num_users, dtype=np.float64)
    if tree.num_users:
        _fair_tree_ranks(lf, tree.is_user, tree.user_of_node, tree.child_ptr, tree.child_idx,
                         out)
    return out


# ---------------------------------------------------------------- kernels
# The simulator recomputes Fair Tree every PriorityCalcPeriod, so these run thousands of
# times per simulation. They reproduce the former NumPy/recursive code bit for bit (same
# sums in the same order, same divisions); tests/naive_priority.py keeps that code as the
# twin (``fair_tree_arrays``).

@njit(cache=True)
def _sum_up(u, order, parent):
    """Add each node's usage into its parent's, children first (reverse breadth-first)."""
    for k in range(len(order) - 1, 0, -1):
        v = order[k]
        u[parent[v]] += u[v]


@njit(cache=True)
def _level_fs(u, parent, shares, children_shares):
    """Level FS of every node (root NaN) from node usages; see :func:`level_fairshare`."""
    n = len(u)
    out = np.empty(n, dtype=np.float64)
    if n:
        out[0] = np.nan
    for v in range(1, n):
        p = parent[v]
        lvl = children_shares[p]
        S = shares[v] / lvl if lvl > 0 else 0.0
        U = u[v] / u[p] if u[p] > 0 else 0.0
        if S == 0:
            out[v] = 0.0
        elif U == 0:
            out[v] = np.inf
        else:
            out[v] = S / U
    return out


@njit(cache=True)
def _before(a, b, lf, is_user):
    """Strict sibling order: Level FS descending (NaN last), then users before accounts."""
    fa, fb = lf[a], lf[b]
    na, nb = fa != fa, fb != fb
    if na != nb:
        return nb
    if not na and fa != fb:
        return fa > fb
    return is_user[a] and not is_user[b]


@njit(cache=True)
def _sort_siblings(buf, s, e, tmp, lf, is_user):
    """Stable sort of buf[s:e] by :func:`_before` (insertion runs, then merges via tmp)."""
    run = 16
    for lo in range(s, e, run):
        hi = min(lo + run, e)
        for i in range(lo + 1, hi):
            x = buf[i]
            j = i
            while j > lo and _before(x, buf[j - 1], lf, is_user):
                buf[j] = buf[j - 1]
                j -= 1
            buf[j] = x
    src, dst = buf, tmp
    in_buf = True
    width = run
    while width < e - s:
        for lo in range(s, e, 2 * width):
            mid, hi = min(lo + width, e), min(lo + 2 * width, e)
            i, j = lo, mid
            for k in range(lo, hi):
                # the right run wins only when strictly before: keeps the sort stable
                if j < hi and (i >= mid or _before(src[j], src[i], lf, is_user)):
                    dst[k] = src[j]
                    j += 1
                else:
                    dst[k] = src[i]
                    i += 1
        src, dst = dst, src
        in_buf = not in_buf
        width *= 2
    if not in_buf:
        buf[s:e] = src[s:e]


@njit(cache=True)
def _fair_tree_ranks(lf, is_user, user_of_node, child_ptr, child_idx, out):
    """Fair Tree's depth-first ranking with an explicit stack (see :func:`fair_tree`).

    Each stack frame is one sorted sibling list, held in ``buf[start:end]``; a child
    frame is laid out right after its parent's, so ``buf`` (one slot per node) is
    enough. ``pos`` is the frame's next sibling and ``tied`` whether its first sibling
    is tied with what came before it (a user tied with the parent account).
    """
    n = len(lf)
    n_users = len(out)
    buf = np.empty(n, dtype=np.int32)
    tmp = np.empty(n, dtype=np.int32)
    start = np.empty(n + 1, dtype=np.int64)
    end = np.empty(n + 1, dtype=np.int64)
    pos = np.empty(n + 1, dtype=np.int64)
    tied_in = np.empty(n + 1, dtype=np.bool_)
    m = child_ptr[1] - child_ptr[0]
    buf[:m] = child_idx[child_ptr[0]:child_ptr[1]]
    _sort_siblings(buf, 0, m, tmp, lf, is_user)
    start[0], end[0], pos[0], tied_in[0] = 0, m, 0, False
    rank = n_users            # rank of the current tie group
    rank_no_ties = n_users    # rank the next user gets if it is not tied
    top = 0
    while top >= 0:
        s, e, i = start[top], end[top], pos[top]
        if i >= e:
            top -= 1
            continue
        v = buf[i]
        tied = tied_in[top] if i == s else lf[v] == lf[buf[i - 1]]
        if is_user[v]:
            if not tied:
                rank = rank_no_ties
            out[user_of_node[v]] = rank / n_users
            rank_no_ties -= 1
            pos[top] = i + 1
            continue
        # accounts tied with v (sorted next to it): merge their children, descend
        j = i + 1
        while j < e and not is_user[buf[j]] and lf[buf[j]] == lf[v]:
            j += 1
        k = e
        for a in range(i, j):
            w = buf[a]
            for c in range(child_ptr[w], child_ptr[w + 1]):
                buf[k] = child_idx[c]
                k += 1
        _sort_siblings(buf, e, k, tmp, lf, is_user)
        pos[top] = j
        top += 1
        start[top], end[top], pos[top], tied_in[top] = e, k, e, tied


def classic(tree: AssociationTree, usage, damping: float = 1.0,
            total_usage: float | None = None) -> np.ndarray:
    """float64[num_users]: classic fair-share factor F = 2^(-U_E / S / d).

    S = product down the path of RawShares / sum of siblings' RawShares;
    U_N = usage / ``total_usage`` (default: the root's usage; 0 if that is
    0), at most 1; for associations directly under root U_E = U_N, below
    that U_E = U_N + (U_E,parent - U_N) x RawShares / sum of siblings'
    RawShares (U_E,parent when that sum is 0); F = 0 when S = 0.
    ``damping`` is FairShareDampeningFactor (>= 1 in Slurm).
    """
    d = float(damping)
    if not (np.isfinite(d) and d > 0):
        raise InputError(f"FairShareDampeningFactor must be > 0, got {damping!r}",
                         field="FairShareDampeningFactor")
    u = tree.node_usage(_user_usage(tree, usage))
    total = u[0] if total_usage is None else float(total_usage)
    if total_usage is not None and not (np.isfinite(total) and total >= 0):
        raise InputError(f"total_usage must be >= 0, got {total_usage!r}")
    n = tree.num_nodes
    un = np.zeros(n) if total <= 0 else np.minimum(u / total, 1.0)
    S = np.ones(n)
    ue = np.zeros(n)
    ue[0] = 1.0
    for v in tree.order[1:]:
        p = tree.parent[v]
        lvl = tree.children_shares[p]
        frac = tree.shares[v] / lvl if lvl > 0 else 0.0
        S[v] = S[p] * frac
        if p == 0:
            ue[v] = un[v]
        elif lvl == 0:
            ue[v] = ue[p]
        else:
            ue[v] = un[v] + (ue[p] - un[v]) * frac
    s = S[tree.user_nodes]
    e = ue[tree.user_nodes]
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(s > 0, 2.0 ** (-(e / np.where(s > 0, s, 1.0)) / d), 0.0)
    return f
