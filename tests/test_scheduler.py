"""The library API (submit / schedule / apply / complete) makes the simulator's decisions."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from fastsched import Cluster, InputError, JobRequest, JobTable, simulate
from fastsched.scheduler import BLOCKED, RESERVED, START, Scheduler, StaleDecisionsError
from fastsched.testing import cluster_and_workload


def drive_all(scheduler, jobs, one_by_one=False):
    """Drive ``scheduler`` through ``jobs`` with the simulator's event order; returns
    (start, nodes, gpu masks) per job (caller's order). Jobs ending at an instant are
    completed with one complete() call, or one call each with ``one_by_one``."""
    got = {}
    ends = {}
    duration = {int(j): int(min(r, lim)) for j, r, lim in
                zip(jobs.job_id, jobs.runtime, jobs.time_limit)}
    pending_times = set(jobs.submit_time.tolist())
    while pending_times or ends:
        now = min(list(pending_times) + list(ends.values()))
        first = True
        while True:
            done = [j for j, e in ends.items() if e == now]
            for batch in ([[j] for j in done] if one_by_one else [done] if done else []):
                scheduler.complete(batch if len(batch) > 1 else batch[0])
            for j in done:
                del ends[j]
            if first and now in pending_times:
                pending_times.discard(now)
                scheduler.submit(jobs.take(jobs.submit_time == now))
            first = False
            d = scheduler.schedule(now)
            scheduler.apply(d)
            for i in np.flatnonzero(d.outcome == START):
                j = int(d.job_id[i])
                got[j] = (now, d.nodes_of(i).tolist(), d.gpu_masks_of(i).tolist())
                ends[j] = now + duration[j]
            if now not in ends.values():
                break
    return [got[int(j)] for j in jobs.job_id]


def drive(cluster, jobs, policy, reserve_depth=1):
    """A plain event loop over the public API, with the simulator's event order:
    start times per job (jobs completed one complete() call each)."""
    s = Scheduler(cluster, policy, reserve_depth=reserve_depth)
    return np.array([got[0] for got in drive_all(s, jobs, one_by_one=True)])


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
    df = d.to_pandas()
    assert list(df.columns) == ["job_id", "outcome", "start_time", "reason", "num_nodes",
                                "nodes", "gpu_ids"]
    assert df.num_nodes.tolist() == [3, 4, 1, 1]          # what each job asks for
    assert df.nodes.tolist() == ["node[001-003]", "", "node004", ""]
    assert df.gpu_ids.tolist() == ["", "", "", ""]        # no GPUs on these nodes


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


# --------------------------------------------------------------------------- any cluster

from test_nodeplan import gpu_cluster, jobs_of, node_cases  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from fastsched import UnsupportedError  # noqa: E402
from fastsched.cluster import Partition  # noqa: E402
from fastsched.engine import RunningJobs, simulate_nodes  # noqa: E402


def expected_of(start, offsets, nodes, masks, jobs):
    return [(int(start[i]), nodes[offsets[i]:offsets[i + 1]].tolist(),
             masks[offsets[i]:offsets[i + 1]].tolist()) for i in range(len(jobs))]


def gpu_workload():
    """Three 8-GPU nodes and one 4-GPU node (two partitions), partial- and whole-node
    GPU jobs arriving over time: the node engine's kind of workload."""
    parts = [Partition("gpu", np.arange(4)), Partition("big", np.array([0, 1, 2]))]
    cluster = Cluster(["gpu01", "gpu02", "gpu03", "gpu04"], [32, 32, 32, 16], [8, 8, 8, 4],
                      [1000] * 4, partitions=parts)
    # (id, submit, limit, runtime, nodes, gpus, cpus, partition)
    jobs = jobs_of((1, 0, 100, 80, 1, 4, 8, 0), (2, 0, 50, 50, 2, 8, 32, 1),
                   (3, 5, 30, 10, 1, 1, 2, 0), (4, 5, 200, 150, 3, 8, 32, 1),
                   (5, 10, 20, 25, 1, 2, 4, 0), (6, 10, 60, 0, 1, 3, 4, 0),
                   (7, 20, 40, 40, 4, 1, 1, 0), (8, 30, 10, 10, 1, 8, 1, 1),
                   (9, 30, 500, 300, 2, 2, 2, 0), (10, 31, 5, 5, 1, 1, 1, 0))
    return cluster, jobs


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
def test_api_loop_equals_simulator_on_gpu_nodes(policy):
    cluster, jobs = gpu_workload()
    result = simulate(cluster, jobs, policy)
    assert result.summary["engine"] == "nodes"
    s = result.schedule
    s_sched = Scheduler(cluster, policy)
    assert s_sched.engine == "nodes"                  # heterogeneous cluster
    got = drive_all(s_sched, jobs)
    assert got == expected_of(s.start_time, s.alloc_offsets, s.alloc_nodes, s.alloc_gpu_mask,
                              jobs)
    assert len(s_sched.pending) == 0 and s_sched.running == []
    np.testing.assert_array_equal(s_sched.state.free_gpu_mask, cluster.new_state().free_gpu_mask)


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=node_cases())
def test_api_loop_equals_node_simulator(policy, case):
    cluster, available, jobs = case
    start, end, off, nodes, masks = simulate_nodes(cluster, jobs, policy, 1, available)
    got = drive_all(Scheduler(cluster, policy, engine="nodes", available=available), jobs)
    assert got == expected_of(start, off, nodes, masks, jobs)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cw=cluster_and_workload(max_jobs=15), policy=st.sampled_from(["easy", "conservative"]))
def test_api_loop_equals_simulator_nodes_too_on_pool(cw, policy):
    """The pool engine's starts and its lowest-numbered free nodes, as the simulator."""
    cluster, jobs = cw
    s = simulate(cluster, jobs, policy).schedule
    got = drive_all(Scheduler(cluster, policy), jobs)
    assert [(g[0], sorted(g[1])) for g in got] == \
        [(int(s.start_time[i]), sorted(s.nodes_of(i).tolist())) for i in range(len(jobs))]


def test_gpu_decisions_name_nodes_and_gpu_indices():
    cluster = gpu_cluster([8, 8])
    s = Scheduler(cluster, "easy")
    s.submit(jobs_of((1, 0, 100, 100, 1, 4, 1, 0)))
    s.apply(s.schedule(0))
    s.submit(jobs_of((4, 0, 200, 200, 1, 1, 1, 0), (2, 0, 10, 10, 2, 8, 1, 0),
                     (3, 0, 10, 10, 1, 1, 1, 0)))
    d = s.schedule(0)
    # as tests/test_nodepass.py's hand-worked pass: 2 reserved at 100 on both nodes,
    # 3 backfills on node 0's GPU 4, 4 would delay 2
    assert d.outcome.tolist() == [RESERVED, START, BLOCKED]
    df = d.to_pandas()
    assert df.nodes.tolist() == ["g[0-1]", "g0", ""]
    assert df.gpu_ids.tolist() == ["", "g0(IDX:4)", ""]
    assert df.reason.tolist() == ["Resources", "", "Priority"]
    s.apply(d)
    assert s.state.free_gpu_mask.tolist() == [0b11100000, 0xFF]
    est = s.expected_start_times(1).set_index("job_id")
    assert est.expected_start.to_dict() == {2: 100, 4: 110}
    assert est.schednodes.to_dict() == {2: "g[0-1]", 4: "g0"}
    assert est.reason.to_dict() == {2: "Resources", 4: "Priority"}


def test_pool_engine_on_gpu_nodes_takes_every_gpu():
    cluster = Cluster.homogeneous(3, cpus=4, gpus=4, prefix="gpu")
    s = Scheduler(cluster, "easy")
    s.submit(JobRequest(job_id=1, submit_time=0, time_limit=10, runtime=10, num_nodes=2,
                        gpus_per_node=4))
    d = s.schedule(0)
    assert s.engine == "pool" and d.to_pandas().gpu_ids[0] == "gpu001(IDX:0-3),gpu002(IDX:0-3)"
    s.apply(d)
    assert s.state.free_gpu_mask.tolist() == [0, 0, 0b1111]


def test_auto_switches_to_the_node_engine_for_good():
    cluster = Cluster.homogeneous(2, cpus=4, gpus=4)
    s = Scheduler(cluster, "conservative")
    s.submit(JobRequest(job_id=1, submit_time=0, time_limit=10, runtime=10, num_nodes=1,
                        cpus_per_node=4))
    s.apply(s.schedule(0))
    assert s.engine == "pool"
    s.submit(JobRequest(job_id=2, submit_time=1, time_limit=5, runtime=5, gpus_per_node=1))
    assert s.engine == "nodes"
    d = s.schedule(1)
    # job 1 holds all of node 0 (pool allocation): job 2 goes to node 1
    assert d.starts.tolist() == [2] and d.nodes_of(0).tolist() == [1]
    with pytest.raises(UnsupportedError):
        Scheduler(cluster, "easy", engine="pool").submit(
            JobRequest(job_id=2, submit_time=1, time_limit=5, runtime=5, gpus_per_node=1))


def snapshot(s):
    return (s.pending.job_id.tolist(), s.running, s._version, s.engine,
            s.state.free_gpu_mask.tolist(), s.state.free_cpus.tolist(),
            s.state.free_mem_mb.tolist(),
            {f: getattr(s.running_jobs, f).tolist() for f in
             ("job_id", "planned_end", "node_offsets", "nodes", "gpus", "gpu_mask")})


def test_node_engine_failed_calls_leave_state_unchanged():
    cluster, jobs = gpu_workload()
    s = Scheduler(cluster, "easy")
    s.submit(jobs.take(jobs.submit_time == 0))
    d = s.schedule(0)
    s.apply(d)
    before = snapshot(s)
    bad = [lambda: s.submit(jobs_of((11, 1, 10, 10, 1, 9, 1, 0))),          # 9 GPUs: none
           lambda: s.submit(jobs_of((12, 1, 10, 10, 1, 1, 1, 0), (1, 1, 10, 10, 1, 1, 1, 0))),
           lambda: s.submit(jobs_of((13, 1, 10, 10, 1, 1, 1, 5))),          # partition 5
           lambda: s.complete([1, 99]),                                      # 99 not running
           lambda: s.schedule(100),                                          # 1 past its limit
           lambda: s.schedule(1.5),
           lambda: s.apply(d)]                                               # stale
    for call in bad:
        with pytest.raises((InputError, StaleDecisionsError, UnsupportedError)):
            call()
        assert snapshot(s) == before
    d1 = s.schedule(1)
    assert snapshot(s) == before                    # a pass is pure
    s.complete([1, 2])
    assert s.state.free_gpu_mask.tolist() == [0xFF, 0xFF, 0xFF, 0xF]
    with pytest.raises(StaleDecisionsError):
        s.apply(d1)


# --------------------------------------------------------------------------- state at t

def check_state_at(cluster, jobs, policy, available=None):
    """At every instant, the rebuilt state's pass starts what the simulation started
    there, on the same nodes and GPUs."""
    result = simulate(cluster, jobs, policy)
    s = result.schedule
    for t in np.unique(np.concatenate([jobs.submit_time, s.start_time, s.end_time])):
        if ((s.start_time == t) & (s.end_time == t)).any():   # zero-length: several passes
            continue
        running, pending = result.state_at(int(t))
        assert set(running.job_id.tolist()) == set(
            jobs.job_id[(s.start_time < t) & (s.end_time > t)].tolist())
        sched = Scheduler.from_state(cluster, running, pending, policy,
                                     engine=result.summary["engine"])
        d = sched.schedule(int(t))
        assert set(d.starts.tolist()) == set(jobs.job_id[s.start_time == t].tolist())
        where = {int(j): i for i, j in enumerate(jobs.job_id)}
        for i in np.flatnonzero(d.outcome == START):
            k = where[int(d.job_id[i])]
            assert sorted(d.nodes_of(i).tolist()) == sorted(s.nodes_of(k).tolist())
            if s.alloc_gpu_mask is not None:
                np.testing.assert_array_equal(d.gpu_masks_of(i),
                                              s.alloc_gpu_mask[s.alloc_offsets[k]:
                                                               s.alloc_offsets[k + 1]])
        est = sched.expected_start_times(int(t))
        assert (est.expected_start >= t).all() and len(est) == len(pending)


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
def test_state_at_rebuilds_the_simulators_state_gpu(policy):
    cluster, jobs = gpu_workload()
    check_state_at(cluster, jobs, policy)


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cw=cluster_and_workload(max_jobs=12))
def test_state_at_rebuilds_the_simulators_state_pool(policy, cw):
    check_state_at(*cw, policy)


def test_from_state_rejects_bad_running_jobs():
    cluster = gpu_cluster([8, 8])
    pending = jobs_of((5, 0, 10, 10, 1, 1, 1, 0))
    def running(**kw):
        args = dict(job_id=[1, 2], planned_end=[50, 60], node_offsets=[0, 1, 2],
                    nodes=[0, 0], gpus=[4, 4], cpus=[1, 1], mem=[0, 0])
        args.update(kw)
        return RunningJobs.from_arrays(**args)
    ok = Scheduler.from_state(cluster, running(), pending, "easy")
    assert ok.state.free_gpu_mask.tolist() == [0, 0xFF]     # lowest free indices, in order
    for bad in (dict(gpus=[5, 4]), dict(nodes=[0, 2]), dict(node_offsets=[0, 2, 2]),
                dict(gpu_mask=[0b1111, 0b11110]), dict(job_id=[1, 1])):
        with pytest.raises(InputError, match="running"):
            Scheduler.from_state(cluster, running(**bad), pending, "easy")
    with pytest.raises(InputError, match="already queued or running"):
        Scheduler.from_state(cluster, running(), jobs_of((1, 0, 10, 10, 1, 1, 1, 0)), "easy")


def test_waiting_reasons_are_per_partition():
    from fastsched.scheduler import waiting_reasons
    outcome = np.array([START, RESERVED, BLOCKED, BLOCKED, RESERVED, START])
    partition = np.array([0, 0, 1, 0, 1, 1])
    assert waiting_reasons(outcome, partition).tolist() == \
        ["", "Resources", "Resources", "Priority", "Priority", ""]
    assert waiting_reasons(outcome, None).tolist() == \
        ["", "Resources", "Priority", "Priority", "Priority", ""]
