"""The whole-node pass (fastsched.engine.wholenode): identical records to the general
pass of the node engine, and to its twin (tests/naive_nodes.py), on runs where every
job takes whole nodes of a uniform cluster; and the runs that must not take it."""
from unittest import mock

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import naive_nodes
from fastsched import Cluster, JobTable, simulate
from fastsched.engine import loop as engine_loop
from fastsched.engine import run_nodes
from fastsched.model.constraints import AFTER, AFTERANY, AFTEROK, AFTERNOTOK, CAPS
from fastsched.model.errors import UnsupportedError
from test_constraints import SETTINGS, engine_inputs

POLICIES = [("fcfs", 1), ("easy", 1)]


@st.composite
def whole_node_cases(draw):
    """A uniform cluster, jobs asking for whole nodes (some running past their limit,
    submitted in any row order), optional dependencies, limit groups and queue ranks,
    and the time grid and planning window."""
    X = draw(st.integers(1, 10))
    cpus, gpus = draw(st.integers(1, 4)), draw(st.sampled_from([0, 1, 4, 8]))
    mem = draw(st.sampled_from([0, 1000]))
    cluster = Cluster.homogeneous(X, cpus=cpus, gpus=gpus, mem_mb=mem)
    n = draw(st.integers(1, 20))
    limit = draw(st.lists(st.integers(1, 120), min_size=n, max_size=n))
    jobs = JobTable.from_arrays(
        job_id=draw(st.permutations(range(1, n + 1))),
        submit_time=draw(st.lists(st.integers(0, 150), min_size=n, max_size=n)),
        time_limit=limit, runtime=[draw(st.integers(0, t + 30)) for t in limit],
        num_nodes=draw(st.lists(st.integers(1, X), min_size=n, max_size=n)),
        cpus_per_node=cpus, gpus_per_node=gpus, mem_per_node=mem)
    ids = [int(j) for j in jobs.job_id]
    deps = {}
    for j in ids:
        if len(ids) > 1 and draw(st.integers(0, 4)) == 0:
            deps[j] = [(draw(st.sampled_from([o for o in ids if o != j])),
                        draw(st.sampled_from([AFTER, AFTERANY, AFTEROK, AFTERNOTOK])))]
    G = draw(st.integers(0, 2))
    caps = [tuple(draw(st.sampled_from([-1, 1, 2])) if k in (0, 4) else -1
                  for k in range(len(CAPS))) for _ in range(G)]
    groups = {j: draw(st.lists(st.integers(0, G - 1), max_size=1)) if G else [] for j in ids}
    rank = {j: draw(st.integers(0, 3)) for j in ids} if draw(st.booleans()) else None
    res = draw(st.sampled_from([1, 1, 30]))
    window = draw(st.sampled_from([None, None, 40]))
    return cluster, jobs, deps, groups, caps, rank, res, window


def _run(case, policy, depth, whole: bool, images=None):
    """run_nodes through the whole-node pass or the general one; asserts which ran."""
    cluster, jobs, deps, groups, caps, rank, res, window = case
    ids = [int(j) for j in jobs.job_id]
    pc, dp, lg = engine_inputs(jobs, {j: [0] for j in ids}, deps, groups, caps)
    key = None if rank is None else np.array([rank[j] for j in ids])
    took = []
    real = engine_loop.whole_node_run

    def spy(*args):
        took.append(real(*args))
        return took[-1]
    with mock.patch.object(engine_loop, "WHOLE_NODE_PASS", whole), \
            mock.patch.object(engine_loop, "whole_node_run", spy):
        run = run_nodes(cluster, jobs, policy, depth, partitions=pc, dependencies=dp,
                        limits=lg, rank=key, resolution=res, window=window, images=images)
    assert took == ([True] if whole else []), "the run did not take the pass under test"
    return run


def _assert_same_runs(a, b):
    for field in ("start", "end", "partition", "reason", "never", "eligible"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
    assert a.passes == b.passes
    for i in np.flatnonzero(a.start >= 0):
        sa = slice(a.alloc_offsets[i], a.alloc_offsets[i + 1])
        sb = slice(b.alloc_offsets[i], b.alloc_offsets[i + 1])
        assert a.alloc_nodes[sa].tolist() == b.alloc_nodes[sb].tolist(), i
        assert a.alloc_gpu_mask[sa].tolist() == b.alloc_gpu_mask[sb].tolist(), i
    if a.pull is not None or b.pull is not None:
        np.testing.assert_array_equal(a.pull, b.pull)
        assert a.images_pulled == b.images_pulled


@pytest.mark.parametrize("policy,depth", POLICIES)
@SETTINGS
@given(case=whole_node_cases())
def test_whole_node_pass_matches_the_general_pass(case, policy, depth):
    _assert_same_runs(_run(case, policy, depth, True), _run(case, policy, depth, False))


@pytest.mark.parametrize("policy,depth", POLICIES)
@SETTINGS
@given(case=whole_node_cases(), data=st.data())
def test_whole_node_pass_with_image_pulls_matches_the_general_pass(case, data, policy, depth):
    # a pull lengthens a run after its start: the whole-node pass plans with held ends
    n = len(case[1])
    images = (np.array(data.draw(st.lists(st.integers(-1, 2), min_size=n, max_size=n))),
              np.array(data.draw(st.lists(st.integers(0, 30), min_size=3, max_size=3))),
              data.draw(st.integers(0, 2)))
    _assert_same_runs(_run(case, policy, depth, True, images),
                      _run(case, policy, depth, False, images))


@pytest.mark.parametrize("policy,depth", POLICIES)
@SETTINGS
@given(case=whole_node_cases())
def test_whole_node_pass_matches_twin(case, policy, depth):
    cluster, jobs, deps, groups, caps, rank, res, window = case
    run = _run(case, policy, depth, True)
    ids = [int(j) for j in jobs.job_id]
    out, _ = naive_nodes.simulate(
        cluster, naive_nodes.jobs_from_table(jobs), policy, depth, deps=deps, groups=groups,
        caps=caps, rank=rank, resolution=res, window=window)
    naive_nodes.assert_same_records(run, ids, out)


def test_a_reservation_keeps_its_idle_nodes_from_a_long_backfill_job():
    # 4 nodes; job 1 runs on nodes 0-1 until 100; job 2 (4 nodes) reserves them and the
    # idle nodes 2-3 from 100; job 3 (1 node, 200 s) would still run then: it waits
    # for job 2; job 4 (50 s) ends before 100 and takes node 2
    cluster = Cluster.homogeneous(4, cpus=1)
    jobs = JobTable.from_arrays(job_id=[1, 2, 3, 4], submit_time=[0, 1, 2, 3],
                                time_limit=[100, 50, 200, 50], runtime=[100, 50, 200, 50],
                                num_nodes=[2, 4, 1, 1])
    case = (cluster, jobs, {}, {}, [], None, 1, None)
    run = _run(case, "easy", 1, True)
    assert run.start.tolist() == [0, 100, 150, 3]
    assert run.end.tolist() == [100, 150, 350, 53]
    assert run.alloc_nodes[run.alloc_offsets[3]:run.alloc_offsets[4]].tolist() == [2]
    _assert_same_runs(run, _run(case, "easy", 1, False))


@pytest.mark.parametrize("limit,starts", [(98, 2), (99, 150)])
def test_a_backfill_job_may_end_at_the_reservation_start_not_after(limit, starts):
    # job 2 reserves every node from 100; job 3, submitted at 2, may take an idle one
    # if it ends by 100 (2 + 98), not if it would end a second later
    cluster = Cluster.homogeneous(4, cpus=1)
    jobs = JobTable.from_arrays(job_id=[1, 2, 3], submit_time=[0, 1, 2],
                                time_limit=[100, 50, limit], runtime=[100, 50, limit],
                                num_nodes=[2, 4, 1])
    case = (cluster, jobs, {}, {}, [], None, 1, None)
    run = _run(case, "easy", 1, True)
    assert run.start.tolist() == [0, 100, starts]
    _assert_same_runs(run, _run(case, "easy", 1, False))


@pytest.mark.parametrize("why", ["conservative", "partial-node", "mixed-nodes", "events"])
def test_runs_that_are_not_whole_node_take_the_general_pass(why):
    cluster = Cluster.homogeneous(4, cpus=2)
    asks = {"partial-node": 1}.get(why, 2)
    if why == "mixed-nodes":
        cluster = Cluster([f"n{i}" for i in range(4)], cpus=[2, 2, 2, 4], gpus=[0] * 4,
                          mem_mb=[0] * 4)
    jobs = JobTable.from_arrays(job_id=[1, 2], submit_time=[0, 1], time_limit=[10, 10],
                                runtime=[5, 5], num_nodes=[2, 4], cpus_per_node=asks)
    policy = "conservative" if why == "conservative" else "easy"
    took = []
    real = engine_loop.whole_node_run
    with mock.patch.object(engine_loop, "whole_node_run",
                           lambda *a: took.append(real(*a)) or took[-1]):
        if why == "events":
            loop = engine_loop._EventLoop(cluster, jobs, policy, 1, None, *_no_constraints(2))
            assert not loop.rules.whole          # node events may come
            loop.apply_node_event(3, "drain", [0])
        else:
            simulate(cluster, jobs, policy, reservations="nodes")
    assert not any(took)


def test_a_whole_node_loop_refuses_node_events():
    cluster = Cluster.homogeneous(2, cpus=1)
    jobs = JobTable.from_arrays(job_id=[1], submit_time=[0], time_limit=[10], runtime=[5],
                                num_nodes=[2])
    loop = engine_loop._EventLoop(cluster, jobs, "easy", 1, None, *_no_constraints(1),
                                  node_events=False)
    assert loop.rules.whole
    with pytest.raises(UnsupportedError):
        loop.apply_node_event(3, "down", [0])
    with pytest.raises(UnsupportedError):
        loop.profile(0)


def _no_constraints(n):
    from fastsched.model.constraints import Dependencies, LimitGroups, PartitionChoices
    return (PartitionChoices(np.arange(n + 1), np.zeros(n, dtype=np.int64)),
            Dependencies.none(n), LimitGroups.none(n))
