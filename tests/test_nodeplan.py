"""The node-level engine (fastsched.engine) against its twin (tests/naive_nodes.py).

Identical start times, node lists and GPU masks on random small heterogeneous
clusters; the pool engine's fcfs on homogeneous whole-node workloads; resource
checks by fastsched.verify; hand-worked examples.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import naive_nodes
from fastsched import Cluster, JobTable, simulate, verify
from fastsched.model.cluster import NodeState, Partition
from fastsched.model.errors import InputError
from fastsched.engine import check_node_jobs, simulate_nodes
from fastsched.model.schedule import Schedule
from fastsched.tools.testing import cluster_and_workload

SETTINGS = settings(max_examples=50, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# --------------------------------------------------------------------------- strategies

@st.composite
def node_clusters(draw):
    """(Cluster, available bools): 1-6 nodes, 1-3 overlapping partitions, some nodes down."""
    n = draw(st.integers(1, 6))
    gpus = draw(st.lists(st.sampled_from([0, 1, 2, 4, 8]) | st.integers(0, 8),
                         min_size=n, max_size=n))
    cpus = draw(st.lists(st.integers(1, 16), min_size=n, max_size=n))
    mem = draw(st.lists(st.sampled_from([0, 100, 200, 400]), min_size=n, max_size=n))
    parts = []
    for k in range(draw(st.integers(1, 3))):
        members = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
        parts.append(Partition(f"p{k}", np.array(sorted(members), dtype=np.int64)))
    available = draw(st.lists(st.booleans() | st.just(True), min_size=n, max_size=n))
    available[parts[0].nodes[0]] = True       # some partition always has a usable node
    cluster = Cluster([f"n{i}" for i in range(n)], cpus, gpus, mem, partitions=parts)
    return cluster, np.array(available, dtype=np.bool_)


@st.composite
def node_workloads(draw, cluster, available, max_jobs=14, max_time=30):
    """Jobs that pass check_node_jobs: partial-node, whole-node and multi-node requests,
    ties, zero-length jobs and jobs killed at their limit."""
    usable = [p for p, part in enumerate(cluster.partitions) if available[part.nodes].any()]
    n = draw(st.integers(1, max_jobs))
    submit_pool = draw(st.lists(st.integers(0, max_time), min_size=1, max_size=3))
    limit_pool = draw(st.lists(st.integers(1, max_time), min_size=1, max_size=3))
    rows = []
    for _ in range(n):
        p = draw(st.sampled_from(usable))
        nodes = [int(x) for x in cluster.partitions[p].nodes if available[x]]
        ref = draw(st.sampled_from(nodes))                 # a node the request fits on
        G, C, M = int(cluster.gpus[ref]), int(cluster.cpus[ref]), int(cluster.mem_mb[ref])
        kind = draw(st.sampled_from(["partial", "whole", "any"]))
        if kind == "whole":
            g, c, m = G, C, M
        elif kind == "partial":
            g, c, m = min(G, draw(st.integers(0, 2))), draw(st.integers(1, max(1, C // 2))), \
                draw(st.sampled_from([0, M // 2]))
            c = min(c, C)
        else:
            g, c, m = draw(st.integers(0, G)), draw(st.integers(0, C)), draw(st.integers(0, M))
        fitting = sum(1 for x in nodes if cluster.gpus[x] >= g and cluster.cpus[x] >= c
                      and cluster.mem_mb[x] >= m)
        num = draw(st.sampled_from([1, fitting]) | st.integers(1, fitting))
        limit = draw(st.sampled_from(limit_pool) | st.integers(1, max_time))
        rkind = draw(st.sampled_from(["under", "exact", "zero", "killed"]))
        runtime = {"zero": 0, "exact": limit, "killed": limit + draw(st.integers(1, 10)),
                   "under": draw(st.integers(0, limit))}[rkind]
        submit = draw(st.sampled_from(submit_pool) | st.integers(0, max_time))
        rows.append((submit, limit, runtime, num, c, g, m, p))
    ids = draw(st.sampled_from(["in_order", "shuffled"]))
    job_id = list(range(1, n + 1)) if ids == "in_order" else draw(st.permutations(range(1, n + 1)))
    cols = list(zip(*rows))
    return JobTable.from_arrays(job_id=job_id, submit_time=cols[0], time_limit=cols[1],
                                runtime=cols[2], num_nodes=cols[3], cpus_per_node=cols[4],
                                gpus_per_node=cols[5], mem_per_node=cols[6], partition=cols[7])


@st.composite
def node_cases(draw):
    cluster, available = draw(node_clusters())
    return cluster, available, draw(node_workloads(cluster, available))


# --------------------------------------------------------------------------- helpers

def twin(cluster, jobs, policy, depth=1, available=None):
    """The twin's result as engine-shaped arrays (caller's job order)."""
    out, _ = naive_nodes.simulate(cluster, naive_nodes.jobs_from_table(jobs), policy, depth,
                                  available=available)
    start = np.array([out[j][0] for j in jobs.job_id], dtype=np.int64)
    end = np.array([out[j][1] for j in jobs.job_id], dtype=np.int64)
    nodes = np.array([x for j in jobs.job_id for x in out[j][2]], dtype=np.int64)
    masks = np.array([sum(1 << k for k in gl) for j in jobs.job_id for gl in out[j][3]],
                     dtype=np.uint64)
    return start, end, nodes, masks


def assert_same_as_twin(cluster, available, jobs, policy, depth=1):
    start, end, offsets, nodes, masks = simulate_nodes(cluster, jobs, policy, depth, available)
    t_start, t_end, t_nodes, t_masks = twin(cluster, jobs, policy, depth, available)
    np.testing.assert_array_equal(start, t_start)
    np.testing.assert_array_equal(end, t_end)
    np.testing.assert_array_equal(nodes, t_nodes)
    np.testing.assert_array_equal(masks, t_masks)
    assert_valid(cluster, available, jobs, start, end, offsets, nodes, masks)


def assert_valid(cluster, available, jobs, start, end, offsets, nodes, masks):
    """fastsched.verify's resource checks, plus what it does not know: availability and GPUs."""
    sched = Schedule(job_id=jobs.job_id.copy(), start_time=start, end_time=end,
                     alloc_offsets=offsets, alloc_nodes=nodes)
    verify(cluster, jobs, sched).raise_if_failed()
    if available is not None:
        assert available[nodes].all(), "an unavailable node was used"
    spans = []
    for i in range(len(jobs)):
        for k in range(offsets[i], offsets[i + 1]):
            x, mask = int(nodes[k]), int(masks[k])
            assert bin(mask).count("1") == jobs.gpus_per_node[i]
            assert mask >> int(cluster.gpus[x]) == 0
            spans.append((x, int(start[i]), int(end[i]), mask))
    for a in range(len(spans)):
        for b in range(a + 1, len(spans)):
            xa, sa, ea, ma = spans[a]
            xb, sb, eb, mb = spans[b]
            if xa == xb and sa < eb and sb < ea:
                assert ma & mb == 0, "two running jobs share a GPU"


# --------------------------------------------------------------------------- twin equality

@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@SETTINGS
@given(case=node_cases())
def test_engine_equals_twin(policy, case):
    cluster, available, jobs = case
    assert_same_as_twin(cluster, available, jobs, policy)


@SETTINGS
@given(case=node_cases(), depth=st.integers(2, 3))
def test_engine_equals_twin_easy_depth(case, depth):
    cluster, available, jobs = case
    assert_same_as_twin(cluster, available, jobs, "easy", depth)


# --------------------------------------------------------------------------- vs the pool engine

@settings(max_examples=63, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cw=cluster_and_workload())
def test_fcfs_equals_pool_engine_on_whole_nodes(cw):
    cluster, jobs = cw
    start, end, offsets, nodes, _ = simulate_nodes(cluster, jobs, "fcfs")
    pool = simulate(cluster, jobs, "fcfs").schedule
    np.testing.assert_array_equal(start, pool.start_time)
    np.testing.assert_array_equal(end, pool.end_time)
    for i in range(len(jobs)):
        assert sorted(nodes[offsets[i]:offsets[i + 1]]) == sorted(pool.nodes_of(i))


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@settings(max_examples=42, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cw=cluster_and_workload())
def test_backfill_on_whole_nodes_is_a_valid_schedule(policy, cw):
    """Concrete node reservations may legitimately differ from the pool's counts."""
    cluster, jobs = cw
    start, end, offsets, nodes, masks = simulate_nodes(cluster, jobs, policy)
    assert_valid(cluster, None, jobs, start, end, offsets, nodes, masks)


# --------------------------------------------------------------------------- hand-worked

def gpu_cluster(gpus, cpus=None, partitions=None):
    n = len(gpus)
    cpus = cpus or [16] * n
    return Cluster([f"g{i}" for i in range(n)], cpus, gpus, [1000] * n,
                   partitions=partitions or [])


def jobs_of(*rows):
    """rows: (id, submit, limit, runtime, nodes, gpus, cpus, partition)"""
    cols = list(zip(*rows))
    return JobTable.from_arrays(job_id=cols[0], submit_time=cols[1], time_limit=cols[2],
                                runtime=cols[3], num_nodes=cols[4], gpus_per_node=cols[5],
                                cpus_per_node=cols[6], partition=cols[7])


def by_id(jobs, result):
    start, end, off, nodes, masks = result
    return {int(j): (int(start[i]), nodes[off[i]:off[i + 1]].tolist(),
                     masks[off[i]:off[i + 1]].tolist()) for i, j in enumerate(jobs.job_id)}


@pytest.mark.parametrize("policy", ["easy", "conservative"])
def test_one_gpu_job_backfills_onto_partly_used_node(policy):
    # Two 8-GPU nodes. Job 1 (4 GPUs) runs on node 0 until 100; job 2 wants both
    # nodes whole and is reserved at 100; job 3 (1 GPU, 10 s) backfills onto the
    # partly used node 0 (best fit), on its lowest free GPU, index 4. Job 4
    # (1 GPU, 200 s) would delay job 2 on either node: it waits until 110.
    cluster = gpu_cluster([8, 8])
    jobs = jobs_of((1, 0, 100, 100, 1, 4, 1, 0), (2, 0, 10, 10, 2, 8, 1, 0),
                   (3, 0, 10, 10, 1, 1, 1, 0), (4, 0, 200, 200, 1, 1, 1, 0))
    got = by_id(jobs, simulate_nodes(cluster, jobs, policy))
    assert got[1] == (0, [0], [0b1111])
    assert got[2] == (100, [0, 1], [0xFF, 0xFF])
    assert got[3] == (0, [0], [1 << 4])
    assert got[4][0] == 110
    fcfs = by_id(jobs, simulate_nodes(cluster, jobs, "fcfs"))
    assert fcfs[3][0] == 110
    assert_same_as_twin(cluster, None, jobs, policy)


@pytest.mark.parametrize("policy", ["easy", "conservative"])
def test_reservation_prefers_nodes_freeing_up_just_before_its_start(policy):
    # Three 8-GPU nodes: job 1 holds node 0 until 50, job 2 node 1 until 100,
    # job 3 one GPU of node 2 until 100. Job 4 (2 whole nodes) can start at 100
    # on nodes 0, 1 or 2; it reserves 1 and 2 (free from 100) and leaves node 0
    # (free from 50) to job 5 (8 GPUs, 60 s), which backfills there at 50 and
    # still runs at 100, so job 4 really starts on 1 and 2.
    cluster = gpu_cluster([8, 8, 8])
    jobs = jobs_of((1, 0, 50, 50, 1, 8, 1, 0), (2, 0, 100, 100, 1, 8, 1, 0),
                   (3, 0, 100, 100, 1, 1, 1, 0), (4, 0, 10, 10, 2, 8, 1, 0),
                   (5, 0, 60, 60, 1, 8, 1, 0))
    got = by_id(jobs, simulate_nodes(cluster, jobs, policy))
    assert got[1][:2] == (0, [0]) and got[2][:2] == (0, [1]) and got[3][:2] == (0, [2])
    assert got[4][:2] == (100, [1, 2])
    assert got[5][:2] == (50, [0])
    assert_same_as_twin(cluster, None, jobs, policy)


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
def test_overlapping_partitions(policy):
    # Nodes 0, 1: CPU only; nodes 2, 3: 4 GPUs. "all" = every node, "gpu" = 2, 3.
    parts = [Partition("all", np.arange(4)), Partition("gpu", np.array([2, 3]))]
    cluster = gpu_cluster([0, 0, 4, 4], cpus=[4] * 4, partitions=parts)
    jobs = jobs_of((1, 0, 10, 10, 1, 0, 4, 0),    # CPU job in "all": best fit avoids GPU nodes
                   (2, 0, 20, 20, 2, 4, 1, 1),    # both GPU nodes
                   (3, 0, 10, 10, 1, 0, 4, 0),    # 4 CPUs: only node 1 has them
                   (4, 0, 5, 5, 1, 1, 1, 1))      # GPU job: waits for job 2
    got = by_id(jobs, simulate_nodes(cluster, jobs, policy))
    assert got[1][:2] == (0, [0])
    assert got[2][:2] == (0, [2, 3])
    assert got[3][:2] == (0, [1])
    assert got[4][:2] == (20, [2])
    assert_same_as_twin(cluster, None, jobs, policy)


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
def test_unavailable_node_is_never_used(policy):
    cluster = gpu_cluster([8, 8, 8])
    state = np.array([NodeState.UP, NodeState.DOWN, NodeState.UP], dtype=np.uint8)
    jobs = jobs_of(*[(i, i % 3, 10 + i, 5 + i, 1 + (i % 2), 1 + (i % 8), 1, 0)
                     for i in range(1, 16)])
    start, end, off, nodes, masks = simulate_nodes(cluster, jobs, policy, available=state)
    assert (start >= 0).all() and 1 not in nodes.tolist()
    assert_same_as_twin(cluster, state == NodeState.UP, jobs, policy)


def test_check_node_jobs_names_the_job_that_can_never_fit():
    parts = [Partition("batch", np.arange(4)), Partition("interactive", np.array([0, 1]))]
    cluster = gpu_cluster([8, 8, 8, 8], partitions=parts)
    jobs = jobs_of((1, 0, 10, 10, 4, 8, 1, 0), (7, 0, 10, 10, 4, 8, 1, 1))
    with pytest.raises(InputError, match=r"job 7 needs 4 nodes with 8 GPUs.*'interactive', "
                                         r"which has 2"):
        check_node_jobs(cluster, jobs)
    # a down node counts as missing
    with pytest.raises(InputError, match="job 1 needs 4 nodes.*which has 3"):
        check_node_jobs(cluster, jobs.take(np.array([0])),
                        available=np.array([True, True, False, True]))
    with pytest.raises(InputError, match="job 1 needs 4 nodes"):
        simulate_nodes(cluster, jobs.take(np.array([0])), "easy",
                       available=np.array([True, True, False, True]))
    check_node_jobs(cluster, jobs.take(np.array([0])))
