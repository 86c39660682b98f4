"""The node engine's single pass (fastsched.engine.plan_nodes) against its event loop.

Rebuilding the state the simulator had at an instant t, just before its pass
(running = started before t and not yet ended; pending = submitted by t and not
started before t), plan_nodes must start exactly the jobs the simulation
started at t, on the same nodes and GPUs. Plus purity and hand-worked passes.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_nodeplan import gpu_cluster, jobs_of, node_cases
from fastsched import JobTable
from fastsched.model.errors import InputError
from fastsched.model.jobs import JOB_FIELDS
from fastsched.engine import (BLOCKED, RESERVED, START, RunningJobs, plan_nodes,
                                simulate_nodes)

SETTINGS = settings(max_examples=42, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def state_at(jobs, result, t):
    """(running, pending) as the simulator had them at t, just before its pass."""
    start, end, off, nodes, masks = result
    run = np.flatnonzero((start < t) & (end > t))
    counts = np.diff(off)[run]
    entries = np.concatenate([np.arange(off[i], off[i + 1]) for i in run]) if len(run) \
        else np.zeros(0, dtype=np.int64)
    running = RunningJobs.from_arrays(
        job_id=jobs.job_id[run], planned_end=start[run] + jobs.time_limit[run],
        node_offsets=np.concatenate([[0], np.cumsum(counts)]), nodes=nodes[entries],
        gpus=np.repeat(jobs.gpus_per_node[run], counts),
        cpus=np.repeat(jobs.cpus_per_node[run], counts),
        mem=np.repeat(jobs.mem_per_node[run], counts), gpu_mask=masks[entries])
    pending = jobs.take((jobs.submit_time <= t) & (start >= t))
    return running, pending


def check_against_simulation(cluster, available, jobs, policy, depth=1):
    result = simulate_nodes(cluster, jobs, policy, depth, available)
    start, end, off, nodes, masks = result
    where = {int(j): i for i, j in enumerate(jobs.job_id)}
    instants = np.unique(np.concatenate([jobs.submit_time, start, end]))
    checked = 0
    for t in instants:
        if ((start == t) & (end == t)).any():      # zero-length jobs: several passes at t
            continue
        running, pending = state_at(jobs, result, t)
        if len(pending) == 0:
            continue
        for full in (False, True):
            d = plan_nodes(cluster, running, pending, int(t), policy, depth, available, full=full)
            expect = set(jobs.job_id[start == t].tolist())
            assert set(d.starts.tolist()) == expect, (t, full)
            for i in np.flatnonzero(d.outcome == START):
                k = where[int(d.job_id[i])]
                np.testing.assert_array_equal(d.nodes_of(i), nodes[off[k]:off[k + 1]])
                np.testing.assert_array_equal(d.gpu_masks_of(i), masks[off[k]:off[k + 1]])
            assert (d.planned_start[d.outcome == START] == t).all()
            assert (d.planned_start[d.outcome == RESERVED] > t).all()
            assert (d.planned_start[d.outcome == BLOCKED] == -1).all()
            queued = pending.num_nodes[np.lexsort((pending.job_id, pending.submit_time))]
            np.testing.assert_array_equal(np.diff(d.node_offsets),
                                          np.where(d.outcome != BLOCKED, queued, 0))
            if policy == "conservative" and full:
                assert (d.outcome != BLOCKED).all()      # squeue --start: everyone has a time
            if policy == "easy":
                assert (d.outcome == RESERVED).sum() <= depth
        checked += 1
    return checked


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@SETTINGS
@given(case=node_cases())
def test_single_pass_starts_what_the_simulation_started(policy, case):
    cluster, available, jobs = case
    check_against_simulation(cluster, available, jobs, policy)


@settings(max_examples=28, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=node_cases(), depth=st.integers(2, 3))
def test_single_pass_easy_depth(case, depth):
    cluster, available, jobs = case
    check_against_simulation(cluster, available, jobs, "easy", depth)


# --------------------------------------------------------------------------- purity

def snapshot(obj):
    return {k: np.array(v, copy=True) for k, v in vars(obj).items() if v is not None} \
        if hasattr(obj, "__dict__") else None


@SETTINGS
@given(case=node_cases(), policy=st.sampled_from(["fcfs", "easy", "conservative"]),
       full=st.booleans())
def test_plan_nodes_is_pure(case, policy, full):
    cluster, available, jobs = case
    result = simulate_nodes(cluster, jobs, policy, 1, available)
    t = int(np.median(result[0]))
    running, pending = state_at(jobs, result, t)
    before_r = {f: np.array(getattr(running, f), copy=True)
                for f in RunningJobs.__dataclass_fields__ if getattr(running, f) is not None}
    before_p = {f: getattr(pending, f).copy() for f in JOB_FIELDS}
    before_c = (cluster.gpus.copy(), cluster.cpus.copy(), cluster.mem_mb.copy(),
                [p.nodes.copy() for p in cluster.partitions])
    avail = available.copy()
    a = plan_nodes(cluster, running, pending, t, policy, 1, available, full=full)
    b = plan_nodes(cluster, running, pending, t, policy, 1, available, full=full)
    for f, v in before_r.items():
        np.testing.assert_array_equal(getattr(running, f), v)
    for f, v in before_p.items():
        np.testing.assert_array_equal(getattr(pending, f), v)
    np.testing.assert_array_equal(cluster.gpus, before_c[0])
    np.testing.assert_array_equal(cluster.cpus, before_c[1])
    np.testing.assert_array_equal(cluster.mem_mb, before_c[2])
    for p, nodes in zip(cluster.partitions, before_c[3]):
        np.testing.assert_array_equal(p.nodes, nodes)
    np.testing.assert_array_equal(available, avail)
    for f in ("job_id", "outcome", "planned_start", "node_offsets", "nodes", "gpu_mask"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))


# --------------------------------------------------------------------------- hand-worked

def two_node_state():
    # Two 8-GPU nodes; job 1 holds GPUs 0-3 of node 0 until 100. Pending (submit 0):
    # job 2 wants both nodes whole for 10 s, job 3 one GPU for 10 s, job 4 one GPU
    # for 200 s.
    cluster = gpu_cluster([8, 8])
    running = RunningJobs.from_arrays(job_id=[1], planned_end=[100], node_offsets=[0, 1],
                                      nodes=[0], gpus=[4], cpus=[1], mem=[0])
    pending = jobs_of((4, 0, 200, 200, 1, 1, 1, 0), (2, 0, 10, 10, 2, 8, 1, 0),
                      (3, 0, 10, 10, 1, 1, 1, 0))      # given out of order: sorted inside
    return cluster, running, pending


def test_hand_worked_easy():
    cluster, running, pending = two_node_state()
    d = plan_nodes(cluster, running, pending, 0, "easy")
    assert d.job_id.tolist() == [2, 3, 4]
    # 2 is reserved at 100 on both nodes; 3 backfills on node 0 (best fit), lowest
    # free GPU index 4; 4 would delay 2 on either node and EASY has no second
    # reservation: blocked.
    assert d.outcome.tolist() == [RESERVED, START, BLOCKED]
    assert d.planned_start.tolist() == [100, 0, -1]
    assert d.nodes_of(0).tolist() == [0, 1] and d.gpu_masks_of(0).tolist() == [0, 0]
    assert d.nodes_of(1).tolist() == [0] and d.gpu_masks_of(1).tolist() == [1 << 4]
    assert len(d.nodes_of(2)) == 0
    assert d.starts.tolist() == [3]


def test_hand_worked_conservative_full_is_squeue_start():
    cluster, running, pending = two_node_state()
    d = plan_nodes(cluster, running, pending, 0, "conservative", full=True)
    # 4 fits from 110 on either node (both free from 110, same free resources): node 0
    assert d.outcome.tolist() == [RESERVED, START, RESERVED]
    assert d.planned_start.tolist() == [100, 0, 110]
    assert d.nodes_of(2).tolist() == [0]
    df = d.to_pandas()
    assert df.outcome.tolist() == ["reserved", "start", "reserved"]


def test_hand_worked_fcfs_stops_at_first_misfit():
    cluster, running, pending = two_node_state()
    d = plan_nodes(cluster, running, pending, 0, "fcfs")
    assert d.outcome.tolist() == [BLOCKED] * 3 and d.walked == 1


def test_early_stop_versus_full():
    # Node 0 is fully busy until 50; both pending jobs need it (partition "one").
    # Nothing can start now, so the non-full pass is skipped (everything blocked);
    # full=True plans them: 1 reserved at 50, and under easy 2 is blocked (depth 1).
    from fastsched.model.cluster import Partition
    parts = [Partition("all", np.arange(2)), Partition("one", np.array([0]))]
    cluster = gpu_cluster([8, 8], partitions=parts)
    running = RunningJobs.from_arrays(job_id=[9], planned_end=[50], node_offsets=[0, 1],
                                      nodes=[0], gpus=[8], cpus=[16], mem=[0])
    pending = jobs_of((1, 0, 10, 10, 1, 8, 1, 1), (2, 1, 10, 10, 1, 1, 1, 1))
    d = plan_nodes(cluster, running, pending, 5, "easy")
    assert d.outcome.tolist() == [BLOCKED, BLOCKED] and d.walked == 0
    d = plan_nodes(cluster, running, pending, 5, "easy", full=True)
    assert d.outcome.tolist() == [RESERVED, BLOCKED] and d.planned_start.tolist() == [50, -1]
    d = plan_nodes(cluster, running, pending, 5, "conservative", full=True)
    assert d.outcome.tolist() == [RESERVED, RESERVED]
    assert d.planned_start.tolist() == [50, 60]


def test_running_masks_default_to_lowest_indices():
    cluster = gpu_cluster([8])
    running = RunningJobs.from_arrays(job_id=[1, 2], planned_end=[100, 100],
                                      node_offsets=[0, 1, 2], nodes=[0, 0], gpus=[2, 3],
                                      cpus=[1, 1], mem=[0, 0])
    pending = jobs_of((3, 0, 10, 10, 1, 2, 1, 0))
    d = plan_nodes(cluster, running, pending, 0, "easy")
    assert d.gpu_masks_of(0).tolist() == [0b1100000]


def test_bad_running_state_is_rejected():
    cluster = gpu_cluster([8])
    pending = jobs_of((3, 0, 10, 10, 1, 2, 1, 0))
    late = RunningJobs.from_arrays(job_id=[1], planned_end=[10], node_offsets=[0, 1],
                                   nodes=[0], gpus=[2], cpus=[1], mem=[0])
    with pytest.raises(InputError, match="planned end 10 <= now"):
        plan_nodes(cluster, late, pending, 10, "easy")
    over = RunningJobs.from_arrays(job_id=[1, 2], planned_end=[20, 20], node_offsets=[0, 1, 2],
                                   nodes=[0, 0], gpus=[5, 5], cpus=[1, 1], mem=[0, 0])
    with pytest.raises(InputError, match="more than node 0"):
        plan_nodes(cluster, over, pending, 10, "easy")
    empty = plan_nodes(cluster, RunningJobs.empty(), JobTable.from_requests([]), 0, "easy")
    assert len(empty) == 0
