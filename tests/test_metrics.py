"""gpu_fragmentation against a plain per-second count (its naive twin)."""
import numpy as np
from hypothesis import given, settings

import fastsched as fs
from fastsched.metrics import gpu_fragmentation
from test_nodeplan import node_cases  # small heterogeneous clusters and workloads


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


@settings(max_examples=40, deadline=None)
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
