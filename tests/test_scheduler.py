"""The library API (submit / schedule / apply / complete) makes the simulator's decisions."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from fastsched import Cluster, InputError, JobRequest, JobTable, simulate
from fastsched.scheduler import BLOCKED, RESERVED, START, Scheduler, StaleDecisionsError
from fastsched.testing import cluster_and_workload


def drive(cluster, jobs, policy, reserve_depth=1):
    """A plain event loop over the public API, with the simulator's event order."""
    s = Scheduler(cluster, policy, reserve_depth=reserve_depth)
    start = {}
    ends = {}  # job id -> actual end
    duration = {int(j): int(min(r, lim)) for j, r, lim in
                zip(jobs.job_id, jobs.runtime, jobs.time_limit)}
    times = sorted(set(jobs.submit_time.tolist()))
    pending_times = set(times)
    while pending_times or ends:
        now = min(list(pending_times) + list(ends.values()))
        first = True
        while True:
            for j in [j for j, e in ends.items() if e == now]:
                s.complete(j)
                del ends[j]
            if first and now in pending_times:
                pending_times.discard(now)
                s.submit(jobs.take(jobs.submit_time == now))
            first = False
            d = s.schedule(now)
            s.apply(d)
            for j in d.starts:
                start[int(j)] = now
                ends[int(j)] = now + duration[int(j)]
            if now not in ends.values():
                break
    return np.array([start[int(j)] for j in jobs.job_id])


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cw=cluster_and_workload(max_jobs=20))
def test_api_loop_equals_simulator(policy, cw):
    cluster, jobs = cw
    expected = simulate(cluster, jobs, policy).schedule.start_time
    np.testing.assert_array_equal(drive(cluster, jobs, policy), expected)


def small():
    s = Scheduler(Cluster.homogeneous(4), "easy")
    s.submit(JobTable.from_arrays(job_id=[1, 2, 3, 4], submit_time=0, time_limit=[10, 10, 5, 20],
                                  runtime=[10, 10, 5, 20], num_nodes=[3, 4, 1, 1]))
    return s


def test_decisions_for_every_pending_job():
    s = small()
    d = s.schedule(0)
    # 1 starts; 2 (4 nodes) reserved at 10; 3 fits before the shadow time; 4 would delay 2
    assert d.job_id.tolist() == [1, 2, 3, 4]
    assert d.outcome.tolist() == [START, RESERVED, START, BLOCKED]
    assert d.start_time.tolist() == [0, 10, 0, -1]
    assert d.reason == ["", "Resources", "", "Priority"]
    assert d.nodes_of(0).tolist() == [0, 1, 2] and d.nodes_of(2).tolist() == [3]
    assert list(d.to_pandas().columns) == ["job_id", "outcome", "start_time", "reason", "num_nodes"]


def test_schedule_is_pure_and_apply_mutates():
    s = small()
    before = s.state.copy()
    d1, d2 = s.schedule(0), s.schedule(0)
    np.testing.assert_array_equal(d1.outcome, d2.outcome)
    np.testing.assert_array_equal(s.state.free_cpus, before.free_cpus)
    assert len(s.pending) == 4
    s.apply(d1)
    assert s.running == [1, 3] and len(s.pending) == 2
    assert s.state.free_cpus.tolist() == [0, 0, 0, 0]
    with pytest.raises(StaleDecisionsError):
        s.apply(d2)


def test_expected_start_times_like_squeue_start():
    s = small()
    s.apply(s.schedule(0))
    est = s.expected_start_times(1)
    # job 2 (4 nodes) after jobs 1 and 3 end at 10; job 4 after job 2: 20
    assert est.set_index("job_id")["expected_start"].to_dict() == {2: 10, 4: 20}


def test_complete_frees_nodes_and_errors_leave_state_unchanged():
    s = small()
    s.apply(s.schedule(0))
    s.complete(1)
    assert s.state.free_cpus.tolist() == [1, 1, 1, 0]
    before_pending = s.pending.job_id.tolist()
    with pytest.raises(InputError, match="not running"):
        s.complete(1)
    with pytest.raises(InputError, match="already queued"):
        s.submit(JobRequest(job_id=2, submit_time=1, time_limit=5, runtime=5))
    with pytest.raises(InputError, match="asks for 5 nodes"):
        s.submit(JobTable.from_arrays(job_id=[7, 8], submit_time=1, time_limit=5, runtime=5,
                                      num_nodes=[1, 5]))
    assert s.pending.job_id.tolist() == before_pending
    assert s.state.free_cpus.tolist() == [1, 1, 1, 0]
