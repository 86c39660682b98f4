"""Time-swept metrics (GPU fragmentation, busy nodes) against plain per-second counts
(their naive twins), and every utilisation figure being a share."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import fastsched as fs
from fastsched.sim.metrics import busy_node_seconds, gpu_fragmentation
from test_nodeplan import node_cases  # small heterogeneous clusters and workloads
from fastsched.tools.testing import cluster_and_workload


def naive_fragmentation(cluster, jobs, schedule):
    """Second by second: free GPUs on partly used nodes / all free GPUs."""
    first, last = int(jobs.submit_time.min()), int(schedule.end_time.max())
    stranded = free = 0
    for u in range(first, last):
        used = [0] * cluster.num_nodes
        for i in range(len(jobs)):
            if schedule.start_time[i] <= u < schedule.end_time[i]:
                for n in schedule.nodes_of(i):
                    used[n] += int(jobs.gpus_per_node[i])
        for n in range(cluster.num_nodes):
            cap = int(cluster.gpus[n])
            free += cap - used[n]
            if 0 < used[n]:
                stranded += cap - used[n]
    return None if free == 0 else stranded / free


def test_hand_worked():
    # one node of 8 GPUs: a 2-GPU job over [0, 10), then idle until 20 (a 1-s job at 19)
    cluster = fs.Cluster(["g1"], cpus=[8], gpus=[8], mem_mb=[0])
    jobs = fs.JobTable.from_arrays(job_id=[1, 2], submit_time=[0, 19], time_limit=[10, 1],
                                   runtime=[10, 1], num_nodes=1, cpus_per_node=1,
                                   gpus_per_node=[2, 8])
    r = fs.simulate(cluster, jobs, "fcfs")
    # free GPU-seconds: 6*10 + 8*9 + 0*1 = 132; stranded: 6*10 = 60
    assert gpu_fragmentation(cluster, jobs, r.schedule) == 60 / 132


@settings(max_examples=28, deadline=None)
@given(case=node_cases())
def test_fast_equals_naive(case):
    cluster, _, jobs = case
    r = fs.simulate(cluster, jobs, "easy")
    fast = gpu_fragmentation(cluster, jobs, r.schedule)
    slow = naive_fragmentation(cluster, jobs, r.schedule)
    if cluster.gpus.sum() == 0:
        assert fast is None
    elif slow is None:
        assert fast is None
    else:
        assert np.isclose(fast, slow)


# --------------------------------------------------------------------------- utilisation

def naive_busy_node_seconds(schedule):
    """Second by second: nodes holding at least one job."""
    busy = 0
    for u in range(int(schedule.start_time.min()), int(schedule.end_time.max())):
        busy += len({int(n) for i in range(len(schedule))
                     if schedule.start_time[i] <= u < schedule.end_time[i]
                     for n in schedule.nodes_of(i)})
    return busy


def test_jobs_sharing_a_node_count_it_once():
    # two 1-GPU jobs on one 8-GPU node at the same time; the second node stays idle
    cluster = fs.Cluster(["g1", "g2"], cpus=[8, 8], gpus=[8, 8], mem_mb=[0, 0])
    jobs = fs.JobTable.from_arrays(job_id=[1, 2], submit_time=[0, 0], time_limit=[10, 10],
                                   runtime=[10, 10], num_nodes=1, cpus_per_node=1,
                                   gpus_per_node=1)
    r = fs.simulate(cluster, jobs, "fcfs")
    assert r.schedule.alloc_nodes.tolist() == [0, 0]          # best fit: both on g1
    assert busy_node_seconds(r.schedule) == 10
    assert r.summary["utilisation"] == 10 / (2 * 10)
    assert r.summary["gpu_utilisation"] == 2 * 10 / (16 * 10)
    assert r.summary["cpu_utilisation"] == 2 * 10 / (16 * 10)


@settings(max_examples=28, deadline=None)
@given(case=node_cases())
def test_busy_node_seconds_equals_naive(case):
    cluster, _, jobs = case
    r = fs.simulate(cluster, jobs, "easy")
    started = r.schedule.start_time >= 0
    if started.any():
        assert busy_node_seconds(r.schedule) == naive_busy_node_seconds(r.schedule)


UTILISATIONS = ("utilisation", "cpu_utilisation", "gpu_utilisation", "gpu_fragmentation")


@settings(max_examples=28, deadline=None)
@given(case=node_cases(), policy=st.sampled_from(["fcfs", "easy", "conservative"]))
def test_every_utilisation_is_a_share(case, policy):
    cluster, _, jobs = case
    s = fs.simulate(cluster, jobs, policy).summary
    for key in UTILISATIONS:
        assert s[key] is None or 0.0 <= s[key] <= 1.0, (key, s[key])


@settings(max_examples=28, deadline=None)
@given(cw=cluster_and_workload())
def test_pool_engine_utilisation_is_a_share(cw):
    cluster, jobs = cw
    r = fs.simulate(cluster, jobs, "easy")
    assert r.summary["engine"] == "pool"
    assert 0.0 <= r.summary["utilisation"] <= 1.0
    assert busy_node_seconds(r.schedule, exclusive=True) == busy_node_seconds(r.schedule)
