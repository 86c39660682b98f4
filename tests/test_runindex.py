"""The run index (fastsched.engine.runindex) and the node engine's indexed path.

The engine switches a request type to its run index after ``_INDEX_AFTER``
plans in a pass of the event loop (``_INDEX_AFTER_PASS`` in a single pass); the exactness suites mostly run small queues that stay on
the scan path, so here the index is forced on (0: from the first plan; 2: a
switch in the middle of a pass) and checked against the naive twin, and a
deep benchmark state is planned both ways and must give identical decisions.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_constraints import assert_same, constrained_cases
from test_nodepass import check_against_simulation
from test_nodeplan import assert_same_as_twin, node_cases
from fastsched.engine import limits as engine_limits, loop as engine_loop, plan as engine_plan

FAST = settings(max_examples=17, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


@pytest.fixture(params=[0, 2])
def indexed(request, monkeypatch):
    monkeypatch.setattr(engine_loop, "_INDEX_AFTER", request.param)
    monkeypatch.setattr(engine_plan, "_INDEX_AFTER_PASS", request.param)
    return request.param


# --------------------------------------------------------------------------- engine, index forced

@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@FAST
@given(case=node_cases())
def test_indexed_engine_equals_twin(indexed, policy, case):
    cluster, available, jobs = case
    assert_same_as_twin(cluster, available, jobs, policy, 1 if policy != "easy" else 2)


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@FAST
@given(case=node_cases())
def test_indexed_single_pass_equals_simulation(indexed, policy, case):
    cluster, available, jobs = case
    check_against_simulation(cluster, available, jobs, policy)


@pytest.mark.parametrize("policy,depth", [("easy", 1), ("conservative", 1)])
@FAST
@given(case=constrained_cases(), resolution=st.sampled_from([1, 5]))
def test_indexed_constraints_match_twin(indexed, policy, depth, case, resolution):
    assert_same(case, policy, depth, resolution=resolution)


@pytest.mark.parametrize("policy", ["easy", "conservative"])
def test_deep_pass_same_with_and_without_index(monkeypatch, policy):
    """A deep pass on a small standard state: the indexed and the scanning
    engine give identical outcomes, starts, nodes and GPU masks."""
    from fastsched.bench.state import busy_state, run_pass
    state = busy_state("ai-8k", pending=1500, seed=3)
    out = {}
    for after in (-1, 0, 16):
        monkeypatch.setattr(engine_plan, "_INDEX_AFTER_PASS", after)
        out[after] = run_pass(state, policy, full=True, depth=300)
    ref = out[-1]
    assert (ref.outcome == 1).sum() > 100 and (ref.outcome == 0).sum() > 10   # a deep pass
    for after in (0, 16):
        d = out[after]
        for f in ("outcome", "planned_start", "node_offsets", "nodes", "gpu_mask", "partition"):
            np.testing.assert_array_equal(getattr(d, f), getattr(ref, f), err_msg=f"{after} {f}")


def test_unpackable_cluster_plans_the_same_by_scanning(monkeypatch):
    """The index packs node amounts in 32 bits; a cluster whose memory does not
    fit (`ix_packable` false) must take the exact scan path instead. Memory
    only ever meets sums and comparisons, so scaling every memory figure by the
    same factor must leave every decision as it was: the packable state goes
    through the index, the scaled one through the scan, and they must agree."""
    import dataclasses
    from fastsched import JobTable
    from fastsched.bench.state import busy_state, run_pass
    from fastsched.engine.treap import ix_packable
    monkeypatch.setattr(engine_plan, "_INDEX_AFTER_PASS", 0)
    state = busy_state("ai-8k", pending=600, seed=5)
    scale = 4096                                    # 2,000,000 MB x 4096 > 2**31
    cl = state.cluster
    big = dataclasses.replace(cl, mem_mb=cl.mem_mb * scale)
    assert ix_packable(cl.gpus, cl.cpus, cl.mem_mb)
    assert not ix_packable(big.gpus, big.cpus, big.mem_mb)
    cols = state.pending.to_dict()
    cols["mem_per_node"] = cols["mem_per_node"] * scale
    scaled = dataclasses.replace(state, cluster=big, pending=JobTable(**cols),
                                 running=dataclasses.replace(state.running,
                                                             mem=state.running.mem * scale))
    for policy in ("easy", "conservative"):
        ref, d = (run_pass(s, policy, full=True, depth=300) for s in (state, scaled))
        assert (ref.outcome == 1).sum() > 50 and (ref.outcome == 0).sum() > 10
        for f in ("outcome", "planned_start", "node_offsets", "nodes", "gpu_mask", "partition"):
            np.testing.assert_array_equal(getattr(d, f), getattr(ref, f), err_msg=f"{policy} {f}")


@settings(max_examples=42, deadline=None)
@given(entries=st.lists(st.tuples(st.integers(1, 50), st.lists(st.integers(0, 3), min_size=1,
                                                                max_size=3)), max_size=12),
       data=st.data())
def test_min_limits_per_type(entries, data):
    """The run index's per-type threshold: the shortest limit of the jobs in
    the queue's range that list the type (any of their partitions), else _INF."""
    n = len(entries)
    limit = np.array([lim for lim, _ in entries], dtype=np.int64)
    pc_off = np.cumsum([0] + [len(tys) for _, tys in entries]).astype(np.int64)
    pc_type = np.array([ty for _, tys in entries for ty in tys], dtype=np.int64)
    queue = np.array(data.draw(st.permutations(range(n))), dtype=np.int64)
    q0 = data.draw(st.integers(0, n))
    q1 = data.draw(st.integers(q0, n))
    got = engine_limits._min_limits(queue, q0, q1, limit, pc_off, pc_type, 4)
    for ty in range(4):
        lims = [entries[j][0] for j in queue[q0:q1] if ty in entries[j][1]]
        assert got[ty] == (min(lims) if lims else engine_limits._INF)
