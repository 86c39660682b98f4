"""A site configuration in the simulator (fastsched.sim.site): fair share that moves
with usage over simulated time, limits as reasons, PriorityTier first."""
import numpy as np
import pytest

from fastsched import Cluster, JobTable, verify
from fastsched.model.cluster import Partition
from fastsched.policy.config import parse_config
from fastsched.sim.site import simulate_site
from fastsched.io.workload import Workload

CONFIG = """
[priority]
PriorityWeightFairshare = 10000
PriorityWeightAge = 0
PriorityDecayHalfLife = "0"
PriorityCalcPeriod = "1"
TRESBillingWeights = "GRES/gpu=1.0"

[[account]]
name = "a"
users = ["u0"]

[[account]]
name = "b"
users = ["u1"]
MaxJobs = 1
"""


def _workload(submit, user, runtime, gpus=8, partition=0):
    n = len(submit)
    jobs = JobTable.from_arrays(job_id=np.arange(1, n + 1), submit_time=submit,
                                time_limit=np.maximum(runtime, 1), runtime=runtime,
                                num_nodes=1, cpus_per_node=1, gpus_per_node=gpus,
                                partition=partition, user=user)
    return Workload(jobs, account=np.asarray(user), user_names=["u0", "u1"],
                    account_names=["a", "b"], org_of_account=np.array([0, 1]),
                    org_names=["a", "b"])


def _cluster(nodes=1):
    return Cluster([f"g{i}" for i in range(nodes)], [8] * nodes, [8] * nodes, [0] * nodes)


def test_fair_share_moves_the_queue():
    # u0 runs first (0-600); at 600 jobs 2 (u0) and 3 (u1) wait: u1 has no usage -> first
    wl = _workload(submit=[0, 10, 20], user=[0, 0, 1], runtime=[600, 100, 100])
    result = simulate_site(_cluster(), wl, parse_config(CONFIG))
    assert list(result.schedule.start_time) == [0, 700, 600]
    prio = result.jobs.priority.to_numpy()
    assert prio[2] > prio[1]
    assert result.summary["config"] is None and "multifactor" in \
        result.summary["semantics"]["priority"]


def test_without_usage_the_order_is_by_submit():
    wl = _workload(submit=[0, 10, 20], user=[0, 1, 0], runtime=[600, 100, 100])
    cfg = parse_config(CONFIG.replace('PriorityWeightFairshare = 10000',
                                      'PriorityWeightFairshare = 0'))
    result = simulate_site(_cluster(), wl, cfg)
    assert list(result.schedule.start_time) == [0, 600, 700]


def test_max_jobs_holds_with_its_reason_and_blocks_nobody():
    # account b: MaxJobs=1. Two nodes: u1's second job waits for its first, u0 runs
    wl = _workload(submit=[0, 1, 2], user=[1, 1, 0], runtime=[100, 100, 100])
    result = simulate_site(_cluster(2), wl, parse_config(CONFIG))
    assert list(result.schedule.start_time) == [0, 100, 2]
    verify(result.cluster, wl.jobs, result.schedule, limits=result.limits).raise_if_failed()


def test_a_job_over_a_per_job_limit_stays_pending_with_the_reason():
    cfg = parse_config(CONFIG + '\n[qos.normal]\nMaxWallDurationPerJob = "1"\n')
    wl = _workload(submit=[0, 1], user=[0, 0], runtime=[30, 3600])
    result = simulate_site(_cluster(), wl, cfg)
    df = result.jobs
    assert list(df.state) == ["COMPLETED", "PENDING"]
    assert df.reason[1] == "QOSMaxWallDurationPerJobLimit"
    assert result.summary["never_started"] == 1


def test_priority_tier_goes_first():
    c = Cluster(["g0"], [8], [8], [0], partitions=[Partition("low", np.array([0])),
                                                 Partition("high", np.array([0]),
                                                           priority_tier=5)])
    wl = _workload(submit=[0, 1, 2], user=[0, 0, 0], runtime=[50, 50, 50],
                   partition=[0, 0, 1])
    result = simulate_site(c, wl, parse_config(CONFIG))
    assert list(result.schedule.start_time) == [0, 100, 50]
