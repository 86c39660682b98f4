"""The compiled engine gives the naive twin's start times, to the second."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import naive
from fastsched import Cluster, JobTable, simulate
from fastsched.tools.testing import cluster_and_workload

SETTINGS = settings(max_examples=84, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def naive_schedule(cluster, jobs, policy, reserve_depth=1):
    out = naive.simulate(naive.jobs_from_table(jobs), cluster.num_nodes, policy, reserve_depth)
    start = np.array([out[j][0] for j in jobs.job_id])
    end = np.array([out[j][1] for j in jobs.job_id])
    return start, end


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@SETTINGS
@given(cw=cluster_and_workload())
def test_fast_equals_naive(policy, cw):
    cluster, jobs = cw
    result = simulate(cluster, jobs, policy)
    start, end = naive_schedule(cluster, jobs, policy)
    np.testing.assert_array_equal(result.schedule.start_time, start)
    np.testing.assert_array_equal(result.schedule.end_time, end)


@SETTINGS
@given(cw=cluster_and_workload(), depth=st.integers(2, 6))
def test_fast_equals_naive_easy_depth(cw, depth):
    cluster, jobs = cw
    result = simulate(cluster, jobs, "easy", reserve_depth=depth)
    start, _ = naive_schedule(cluster, jobs, "easy", depth)
    np.testing.assert_array_equal(result.schedule.start_time, start)


def test_policies_differ_on_a_known_case():
    """Guards against the policies silently collapsing into one another.

    4 nodes. Job 1 (3 nodes, 10 s) runs; job 2 (4 nodes) waits for it (head);
    job 3 (1 node, 5 s) fits before the shadow time: EASY and conservative
    backfill it at 0, FCFS makes it wait behind job 2 (starts at 10 + 10 = 20).
    """
    jobs = JobTable.from_arrays(job_id=[1, 2, 3], submit_time=[0, 0, 0], time_limit=[10, 10, 5],
                                runtime=[10, 10, 5], num_nodes=[3, 4, 1])
    cluster = Cluster.homogeneous(4)
    starts = {p: simulate(cluster, jobs, p).schedule.start_time.tolist()
              for p in ("fcfs", "easy", "conservative")}
    assert starts == {"fcfs": [0, 10, 20], "easy": [0, 10, 0], "conservative": [0, 10, 0]}
