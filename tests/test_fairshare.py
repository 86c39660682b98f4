"""Fair share: Slurm's documented examples, twins on random trees, bad input."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fastsched.model.errors import InputError
from fastsched.policy.fairshare import AssociationTree, Usage, classic, fair_tree, level_fairshare

import naive_priority as naive

# ---------------------------------------------------------------- classic_fair_share.html example
# https://slurm.schedmd.com/classic_fair_share.html#example : A (40) > B (30), C (10);
# D (60) > E (25), F (35); user 1 in B, users 2 and 3 (1 share each) in C, user 4 in E,
# user 5 in F; usage 0.2 (user 1), 0.25 (user 2), 0.25 (user 4) of the machine.
CLASSIC_EDGES = [("root", "A", 40), ("root", "D", 60), ("A", "B", 30), ("A", "C", 10),
                 ("D", "E", 25), ("D", "F", 35), ("B", "user1", 1), ("C", "user2", 1),
                 ("C", "user3", 1), ("E", "user4", 1), ("F", "user5", 1)]


def classic_example():
    tree = AssociationTree.from_edges(CLASSIC_EDGES)
    usage = Usage(tree)
    for name, used in (("user1", 20.0), ("user2", 25.0), ("user4", 25.0)):
        usage.add_usage(tree.user_index(name), {"CPU": used})
    return tree, usage


def test_classic_documented_example():
    tree, usage = classic_example()
    # the page's usage fractions are of the whole machine (100), not of the 70 used
    f = classic(tree, usage, total_usage=100.0)
    # printed on the page (6 decimals): 0.408479 0.022097 0.125000 0.500000 0.749154
    assert f == pytest.approx([0.408479, 0.022097, 0.125000, 0.500000, 0.749154], abs=5e-7)


def test_classic_documented_effective_usage():
    # U_E of users, as printed: 0.3875, 0.275, 0.15, 0.25, 0.1458; S: .3 .05 .05 .25 .35
    tree, usage = classic_example()
    f = classic(tree, usage, total_usage=100.0)
    shares = np.array([0.3, 0.05, 0.05, 0.25, 0.35])
    ue = -np.log2(f) * shares
    assert ue == pytest.approx([0.3875, 0.275, 0.15, 0.25, 0.1458], abs=1e-4)


def test_classic_damping_and_zero_shares():
    tree, usage = classic_example()
    f1 = classic(tree, usage, total_usage=100.0)
    f2 = classic(tree, usage, damping=2, total_usage=100.0)
    assert f2 == pytest.approx(np.sqrt(f1))
    t0 = AssociationTree.from_edges([("root", "a", 1), ("a", "x", 0), ("a", "y", 1)])
    assert classic(t0, [0.0, 0.0])[0] == 0.0      # S = 0 gives 0, as Slurm


# ---------------------------------------------------------------- fair_tree.html
# https://slurm.schedmd.com/fair_tree.html prints no numeric example; these tests check
# the rules it states, on the tree of its end-user example (root > Acct1 > Acct12 > UserA,
# root > Acct1 > Acct16 > UserB).

def test_fair_tree_enduser_example():
    edges = [("root", "Acct1", 1), ("Acct1", "Acct12", 1), ("Acct1", "Acct16", 1),
             ("Acct12", "UserA", 1), ("Acct16", "UserB", 1)]
    tree = AssociationTree.from_edges(edges)
    usage = Usage(tree)
    usage.add_usage(tree.user_index("UserA"), {"CPU": 300.0})
    usage.add_usage(tree.user_index("UserB"), {"CPU": 100.0})
    f = fair_tree(tree, usage)
    lf = level_fairshare(tree, usage)
    # "If UserB has a higher FairShare value than UserA, Acct16 has a higher Level FS"
    assert f[tree.user_index("UserB")] > f[tree.user_index("UserA")]
    assert lf[tree.index["Acct16"]] > lf[tree.index["Acct12"]]
    # "The highest ranked user receives a 1.0 fairshare value"; rank / user count
    assert sorted(f) == [0.5, 1.0]
    # LF = S / U: Acct16 has S = 0.5, U = 100 / 400
    assert lf[tree.index["Acct16"]] == pytest.approx(0.5 / 0.25)


def test_fair_tree_no_usage_is_infinite_and_ties():
    tree = AssociationTree.from_edges([("root", "a", 1), ("a", "u", 1), ("a", "v", 1),
                                       ("root", "b", 1), ("b", "w", 1)])
    lf = level_fairshare(tree, np.zeros(3))
    # "Level FS values are infinity if the association has no usage"
    assert np.all(np.isinf(lf[1:]))
    # all tied: accounts a and b are merged, so all three users share rank 3 / 3
    assert fair_tree(tree, np.zeros(3)).tolist() == [1.0, 1.0, 1.0]


def test_fair_tree_user_tied_with_account():
    # "A user with the same Level Fairshare as a sibling account will receive the
    # same rank as its highest ranked user"
    tree = AssociationTree.from_edges([("root", "u", 1), ("root", "acct", 1),
                                       ("acct", "x", 1), ("acct", "y", 1)])
    f = fair_tree(tree, [10.0, 0.0, 10.0])   # u and acct both use half: LF 1
    assert f.tolist() == [1.0, 1.0, 1 / 3]   # u, then x (tied, rank 3), y (rank 1)


def test_fair_tree_worked_three_levels():
    tree, usage = classic_example()
    # D (LF 0.6/(25/70)) before A (0.4/(45/70)); F (no usage) before E; B before C;
    # in C user3 (no usage) before user2
    assert fair_tree(tree, usage).tolist() == [0.6, 0.2, 0.4, 0.8, 1.0]


def test_fair_tree_zero_shares_rank_last():
    tree = AssociationTree.from_edges([("root", "a", 0), ("root", "b", 1),
                                       ("a", "x", 1), ("b", "y", 1)])
    assert fair_tree(tree, [0.0, 50.0]).tolist() == [0.5, 1.0]


# ---------------------------------------------------------------- usage
def test_usage_billing_decay_reset():
    tree, _ = classic_example()
    usage = Usage(tree, {"CPU": 1.0, "Mem": 0.001, "GRES/gpu": 10.0})
    usage.add_usage([0, 0, 2], {"CPU": [10.0, 10.0, 4.0], "GRES/gpu": [1.0, 0.0, 0.0]},
                    usage_factor=0.5)
    assert usage.raw[[0, 2]].tolist() == [0.5 * 20 + 0.5 * 10, 2.0]
    usage.decay(3600, 1800)
    assert usage.raw[0] == pytest.approx(15.0 / 4)
    usage.reset()
    assert not usage.raw.any()


# ---------------------------------------------------------------- twins on random trees
@st.composite
def trees(draw):
    n_accounts = draw(st.integers(1, 6))
    parent = {"root": None}
    shares = {"root": 1}
    accounts = ["root"]
    for k in range(n_accounts):
        p = draw(st.sampled_from(accounts))
        name = f"acct{k}"
        parent[name], shares[name] = p, draw(st.integers(0, 3))
        accounts.append(name)
    users = []
    for k in range(draw(st.integers(1, 9))):
        p = draw(st.sampled_from(accounts))
        name = f"user{k}"
        parent[name], shares[name] = p, draw(st.integers(0, 3))
        users.append(name)
    # integer usages with many zeros and repeats: ties are common
    usage = {u: float(draw(st.sampled_from([0, 0, 1, 2, 3, 5]))) for u in users}
    return parent, shares, users, usage


def build(parent, shares, users):
    edges = [(p, c, shares[c]) for c, p in parent.items() if p is not None]
    return AssociationTree.from_edges(edges, users=users)


@settings(max_examples=126, deadline=None)
@given(trees())
def test_fair_tree_matches_twin(case):
    parent, shares, users, usage = case
    tree = build(parent, shares, users)
    raw = np.array([usage[u] for u in users])
    assert fair_tree(tree, raw).tolist() == naive.fair_tree(parent, shares, users, usage)


@settings(max_examples=126, deadline=None)
@given(trees(), st.sampled_from([1, 2, 5]))
def test_classic_matches_twin(case, damping):
    parent, shares, users, usage = case
    tree = build(parent, shares, users)
    raw = np.array([usage[u] for u in users])
    got = classic(tree, raw, damping=damping)
    want = naive.classic(parent, shares, users, usage, damping=damping)
    assert got == pytest.approx(want, rel=1e-12, abs=1e-15)
    assert np.all((got >= 0) & (got <= 1))


def test_from_workload_three_levels():
    from fastsched.tools.generate import ai_cluster, ai_mix
    w = ai_mix(ai_cluster("ai-8k"), 2000, seed=1)
    tree = AssociationTree.from_workload(w, account_shares={w.account_names[0]: 5})
    assoc = tree.job_associations(w)
    assert [tree.names[v] for v in tree.user_nodes[assoc[:3]]] == \
        [f"{w.account_names[a]}/{w.user_names[u]}" for a, u in
         zip(w.account[:3], w.jobs.user[:3])]
    f = fair_tree(tree, np.bincount(assoc, minlength=tree.num_users).astype(float))
    assert f.max() == 1.0 and f.min() > 0
    with pytest.raises(InputError, match="unknown account 'nope'"):
        AssociationTree.from_workload(w, account_shares={"nope": 2})


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("edges, message", [
    ([("root", "a", 1), ("b", "u", 1)], "'u': unknown parent 'b'"),
    ([("root", "a", 1), ("a", "a", 1)], "duplicate association 'a'"),
    ([("root", "a", 1), ("b", "c", 1), ("c", "b", 1)], "in a cycle"),
    ([("root", "a", -1)], "'a': RawShares must be >= 0"),
    ([("root", "a", 1.5)], "'a': RawShares must be an integer"),
    ([("root", "a", "x")], "'a': RawShares 'x' is not a number"),
    ([("a", "root", 1)], "'root' cannot be a child"),
])
def test_bad_trees(edges, message):
    with pytest.raises(InputError, match=message):
        AssociationTree.from_edges(edges)


def test_bad_usage():
    tree, usage = classic_example()
    with pytest.raises(InputError, match="unknown user association index 9"):
        usage.add_usage(9, {"CPU": 1.0})
    with pytest.raises(InputError, match="TRES 'GPU' has no billing weight"):
        usage.add_usage(0, {"GPU": 1.0})
    with pytest.raises(InputError, match="half-life must be > 0"):
        usage.decay(10, 0)
    with pytest.raises(InputError, match="unknown user association 'nobody'"):
        tree.user_index("nobody")
    with pytest.raises(InputError, match="user association 'A' has children"):
        AssociationTree.from_edges(CLASSIC_EDGES, users=["A"])


# ---------------------------------------------------------------- compiled kernel vs former Python
# fair_tree / level_fairshare / node_usage are Numba kernels; naive.fair_tree_arrays is the
# recursive NumPy code they replaced. They must agree bit for bit, on trees up to 4 account
# levels deep with the ties Fair Tree cares about: equal shares, zero usage (LF infinite),
# equal usage, zero shares (LF 0), usage sums that overflow (LF NaN), and sibling lists
# longer than the kernel's 16-element insertion runs (so the merge passes run).
USAGE_VALUES = [0.0, 0.0, 1.0, 1.0, 2.0, 0.1, 1 / 3, 7.25, 1e-300, 1e308]


@st.composite
def deep_trees(draw):
    edges, accounts, users = [], [("root", 0)], []
    for k in range(draw(st.integers(0, 12))):
        p, d = draw(st.sampled_from([a for a in accounts if a[1] < 4]))
        edges.append((p, f"a{k}", draw(st.sampled_from([0, 1, 1, 2, 7]))))
        accounts.append((f"a{k}", d + 1))
    n_users = draw(st.integers(1, 60))
    crowd = draw(st.sampled_from(accounts))[0]     # one account gets most users
    for k in range(n_users):
        p = crowd if draw(st.booleans()) else draw(st.sampled_from(accounts))[0]
        edges.append((p, f"u{k}", draw(st.sampled_from([0, 1, 1, 1, 3]))))
        users.append(f"u{k}")
    raw = np.array([draw(st.sampled_from(USAGE_VALUES)) for _ in users])
    order = draw(st.permutations(users))            # user numbering != node order
    return AssociationTree.from_edges(edges, users=order), raw[[users.index(u) for u in order]]


@settings(max_examples=168, deadline=None)
@given(deep_trees())
def test_fair_tree_kernel_bitwise_equals_python(case):
    tree, raw = case
    with np.errstate(over="ignore"):         # 1e308 sums overflow on purpose
        want = (naive.node_usage_arrays(tree, raw), naive.level_fairshare_arrays(tree, raw),
                naive.fair_tree_arrays(tree, raw))
    assert tree.node_usage(raw).tobytes() == want[0].tobytes()
    assert level_fairshare(tree, raw).tobytes() == want[1].tobytes()
    assert fair_tree(tree, raw).tobytes() == want[2].tobytes()


def test_fair_tree_kernel_many_siblings_and_accounts():
    # 3 tied accounts whose 300 users are merged, sorted together (merge passes) and ranked
    rng = np.random.default_rng(3)
    edges = [("root", f"a{k}", 1) for k in range(3)] + [("root", "solo", 1)]
    edges += [(f"a{k % 3}", f"u{k}", int(rng.integers(0, 3))) for k in range(300)]
    tree = AssociationTree.from_edges(edges)
    raw = rng.choice([0.0, 1.0, 2.0, 5.0], tree.num_users)
    raw[-1] = 0.0
    want = naive.fair_tree_arrays(tree, raw)
    assert fair_tree(tree, raw).tobytes() == want.tobytes()
    assert len(np.unique(want)) > 3      # the ranks are not all tied


def test_fair_tree_kernel_sort_is_stable():
    # NaN Level FS (usage sums that overflow: inf / inf) is never tied, so the order of
    # NaN siblings decides the ranks: it must be the given order, as np.lexsort's, also
    # past the 16-element insertion runs
    edges = [("root", "top", 1)] + [("top", f"x{k}", 1) for k in range(20)]
    edges += [(f"x{k}", f"u{k}_{j}", 1) for k in range(20) for j in range(2)]
    edges += [("top", f"y{k}", 1) for k in range(5)]
    tree = AssociationTree.from_edges(edges)
    raw = np.where(np.char.startswith(np.array(tree.user_names), "u"), 1e308, 1.0)
    with np.errstate(over="ignore", invalid="ignore"):
        want = naive.fair_tree_arrays(tree, raw)
        assert np.isnan(naive.level_fairshare_arrays(tree, raw)[tree.index["x0"]])
    assert fair_tree(tree, raw).tobytes() == want.tobytes()
