"""The library API (submit / schedule / apply / complete) makes the simulator's decisions."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from fastsched import Cluster, InputError, JobRequest, JobTable, simulate
from fastsched.sim.decisions import BLOCKED, RESERVED, START, StaleDecisionsError
from fastsched.sim.scheduler import Scheduler
from fastsched.tools.testing import cluster_and_workload


def drive_all(scheduler, jobs, one_by_one=False, instants=(), events=()):
    """Drive ``scheduler`` through ``jobs`` with the simulator's event order; returns
    (start, nodes, gpu masks) per job (caller's order). Jobs ending at an instant are
    completed with one complete() call, or one call each with ``one_by_one``.
    ``instants``: more times to pass at (advance reservations' window ends);
    ``events``: (time, "drain" or "resume", node indices), applied before their instant."""
    got = {}
    ends = {}
    instants = set(instants) | {int(t) for t, _, _ in events}
    duration = {int(j): int(min(r, lim)) for j, r, lim in
                zip(jobs.job_id, jobs.runtime, jobs.time_limit)}
    pending_times = set(jobs.submit_time.tolist())
    visits = set(instants)
    while pending_times or ends or (visits and len(got) < len(jobs)):
        now = min(list(pending_times) + list(ends.values()) + list(visits))
        visits.discard(now)
        for t, kind, nodes in events:
            if t == now:
                (scheduler.drain_nodes if kind == "drain" else scheduler.resume_nodes)(nodes)
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
    return [got.get(int(j)) for j in jobs.job_id]


def drive(cluster, jobs, policy, reserve_depth=1):
    """A plain event loop over the public API, with the simulator's event order:
    start times per job (jobs completed one complete() call each)."""
    s = Scheduler(cluster, policy, reserve_depth=reserve_depth)
    return np.array([got[0] for got in drive_all(s, jobs, one_by_one=True)])


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@settings(max_examples=42, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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
from fastsched.model.cluster import Partition  # noqa: E402
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
@settings(max_examples=42, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cw=cluster_and_workload(max_jobs=20), data=st.data())
def test_api_loop_equals_simulator_with_priorities_in_the_counts_model(policy, cw, data):
    cluster, jobs = cw
    key = np.array(data.draw(st.lists(st.integers(0, 3), min_size=len(jobs),
                                      max_size=len(jobs))), dtype=float)
    result = simulate(cluster, jobs, policy, priority=key)
    s = Scheduler(cluster, policy, jobs=jobs, priority=key)
    assert s.engine == "pool" and result.summary["reservations"] == "counts"
    got = np.array([g[0] for g in drive_all(s, jobs, one_by_one=True)])
    np.testing.assert_array_equal(got, result.schedule.start_time)


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
@settings(max_examples=17, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=node_cases())
def test_api_loop_equals_node_simulator(policy, case):
    cluster, available, jobs = case
    start, end, off, nodes, masks = simulate_nodes(cluster, jobs, policy, 1, available)
    got = drive_all(Scheduler(cluster, policy, reservations="nodes", available=available), jobs)
    assert got == expected_of(start, off, nodes, masks, jobs)


@settings(max_examples=17, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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
        Scheduler(cluster, "easy", reservations="counts").submit(
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
                                     reservations=result.summary["reservations"])
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
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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
    from fastsched.sim.decisions import waiting_reasons
    outcome = np.array([START, RESERVED, BLOCKED, BLOCKED, RESERVED, START])
    partition = np.array([0, 0, 1, 0, 1, 1])
    assert waiting_reasons(outcome, partition).tolist() == \
        ["", "Resources", "Resources", "Priority", "Priority", ""]
    assert waiting_reasons(outcome, None).tolist() == \
        ["", "Resources", "Priority", "Priority", "Priority", ""]


# --------------------------------------------------------------------------- site parity

from fastsched.policy.config import parse_config  # noqa: E402
from fastsched.model.constraints import (AFTEROK, LimitGroups, PartitionChoices,  # noqa: E402
                                  Placement,
                                  dependencies_from_edges)
from fastsched.sim.site import simulate_site  # noqa: E402
from fastsched.io.workload import Workload  # noqa: E402

SITE = """
[priority]
PriorityWeightFairshare = {fairshare}
PriorityWeightAge = {age}
PriorityMaxAge = "60"
PriorityDecayHalfLife = "{half_life}"
PriorityCalcPeriod = "{period}"
TRESBillingWeights = "CPU=1.0,GRES/gpu=2.0"

[[account]]
name = "a"
users = ["u0", "u1"]
MaxJobs = {max_jobs}

[[account]]
name = "b"
users = ["u2"]
MaxSubmitJobs = {max_submit}
GrpTRES = "gres/gpu={grp_gpus}"
"""


def drive_constrained(scheduler, jobs):
    """The simulator's event order through the public API, with its end states (a
    job over its limit ends TIMEOUT) and its passes repeated at an instant while
    zero-length jobs end there or starts queue dependents. (start, nodes, GPU
    masks) per job, (-1, [], []) for jobs that never start."""
    got, ends = {}, {}
    times = set(jobs.submit_time.tolist())
    info = {int(j): (int(min(r, lim)), bool(r <= lim)) for j, r, lim in
            zip(jobs.job_id, jobs.runtime, jobs.time_limit)}
    while times or ends:
        now = min(times | {e for e, _ in ends.values()})
        first = True
        while True:
            for j in [j for j, (e, _) in ends.items() if e == now]:
                scheduler.complete(j, now, state="COMPLETED" if ends.pop(j)[1] else "TIMEOUT")
            if first and now in times:
                times.discard(now)
                scheduler.submit(jobs.take(jobs.submit_time == now))
            first = False
            queued = len(scheduler.pending)
            d = scheduler.schedule(now)
            scheduler.apply(d)
            for i in np.flatnonzero(d.outcome == START):
                j = int(d.job_id[i])
                got[j] = (now, d.nodes_of(i).tolist(), d.gpu_masks_of(i).tolist())
                ends[j] = (now + info[j][0], info[j][1])
            released = len(scheduler.pending) > queued - len(d.starts)
            if not released and now not in {e for e, _ in ends.values()}:
                break
    return [got.get(int(j), (-1, [], [])) for j in jobs.job_id]


def simulated(result):
    s = result.schedule
    return expected_of(s.start_time, s.alloc_offsets, s.alloc_nodes, s.alloc_gpu_mask,
                       result.workload)


@st.composite
def site_runs(draw):
    """A cluster of 3-5 GPU nodes in leaf switches, two partitions (the second with a
    higher PriorityTier), a site configuration with fair share, age, limits and a
    drawn PriorityCalcPeriod, and up to 10 jobs with dependencies and topology
    requests; and the run's resolution, window, reserve depth."""
    X = draw(st.integers(3, 5))
    parts = [Partition("all", np.arange(X)), Partition("high", np.arange(2), priority_tier=2)]
    cluster = Cluster([f"g{i}" for i in range(X)], [8] * X, [4] * X, [4096] * X,
                      partitions=parts)
    n = draw(st.integers(1, 10))
    ints = lambda lo, hi: [draw(st.integers(lo, hi)) for _ in range(n)]  # noqa: E731
    partition = ints(0, 1)
    runtime = ints(0, 40)
    jobs = JobTable.from_arrays(
        job_id=np.arange(1, n + 1) * 3, submit_time=sorted(ints(0, 30)),
        time_limit=[max(1, r + d) for r, d in zip(runtime, ints(-5, 20))], runtime=runtime,
        num_nodes=[draw(st.integers(1, 2 if p else 3)) for p in partition],
        cpus_per_node=ints(0, 8), gpus_per_node=ints(0, 4), mem_per_node=ints(0, 4096),
        partition=partition, user=ints(0, 2))
    wl = Workload(jobs, account=np.where(jobs.user == 2, 1, 0).astype(np.int32),
                  user_names=["u0", "u1", "u2"], account_names=["a", "b"],
                  org_of_account=np.array([0, 1], np.int32), org_names=["a", "b"])
    edges = [(c, draw(st.integers(0, c - 1)), draw(st.integers(0, 3)))
             for c in range(1, n) if draw(st.integers(0, 3)) == 0]
    if edges:
        wl.dependencies = dependencies_from_edges(n, *zip(*edges))
    cfg = parse_config(SITE.format(
        fairshare=draw(st.sampled_from([0, 1000])), age=draw(st.sampled_from([0, 100])),
        half_life=draw(st.sampled_from([0, 30])), period=draw(st.sampled_from([1, 7, 25])),
        max_jobs=draw(st.integers(1, 3)), max_submit=draw(st.integers(1, 4)),
        grp_gpus=draw(st.integers(4, 8))))
    leaf = np.arange(X) // 2
    placement = draw(st.sampled_from([None, Placement.topology(
        leaf.reshape(1, -1), n, max_leaves=ints(0, 2), leaf_wait=ints(-1, 10),
        exclusive_topo=[draw(st.integers(0, 4)) == 0 for _ in range(n)])]))
    options = dict(reserve_depth=draw(st.integers(1, 2)),
                   resolution=draw(st.sampled_from([1, 4])),
                   window=draw(st.sampled_from([None, 15])), placement=placement)
    return cluster, wl, cfg, options


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@settings(max_examples=17, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(run=site_runs())
def test_api_loop_equals_the_site_simulator(policy, run):
    """Priorities recomputed every period from usage, limits (max_submit included),
    dependencies, partition tiers, topology placement, resolution and window: the
    public API driven through a site workload schedules it as simulate_site."""
    cluster, wl, cfg, options = run
    expected = simulated(simulate_site(cluster, wl, cfg, policy, **options))
    s = Scheduler.for_site(cluster, wl, cfg, policy, **options)
    assert drive_constrained(s, wl.jobs) == expected


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=node_cases(), data=st.data())
def test_api_loop_equals_the_simulator_with_a_priority_array(case, data):
    cluster, available, jobs = case
    prio = np.array([data.draw(st.integers(0, 3)) for _ in range(len(jobs))], float)
    expected = simulated(simulate(cluster, jobs, "easy", priority=prio, resolution=2))
    s = Scheduler(cluster, "easy", jobs=jobs, priority=prio, resolution=2)
    assert drive_constrained(s, jobs) == expected


# --------------------------------------------------------------------------- failures

def full_state(obj, seen=None):
    """Every field of ``obj``, recursively (arrays as dtype and values; functions and
    clusters by identity): two equal results mean the same state."""
    seen = set() if seen is None else seen
    if isinstance(obj, np.ndarray):
        return (str(obj.dtype), obj.shape, obj.tolist())
    if isinstance(obj, (list, tuple)):
        return [full_state(v, seen) for v in obj]
    if isinstance(obj, dict):
        return {k: full_state(v, seen) for k, v in obj.items()}
    if callable(obj) or isinstance(obj, Cluster):
        return ("id", id(obj))
    if hasattr(obj, "__dict__") or hasattr(obj, "__dataclass_fields__"):
        if id(obj) in seen:
            return ("seen", id(obj))
        seen.add(id(obj))
        fields = vars(obj) if hasattr(obj, "__dict__") else \
            {f: getattr(obj, f) for f in obj.__dataclass_fields__}
        return (type(obj).__name__, full_state(fields, seen))
    return obj


def limited_scheduler():
    """gpu_workload's cluster; jobs 1, 5 and 6 share a cap of one running job, job 6
    runs after job 1 (afterok), priorities recomputed every 10 s; jobs 1-3 started
    at 0, 4-6 submitted at 5."""
    cluster, _ = gpu_workload()
    jobs = jobs_of((1, 0, 100, 80, 1, 4, 8, 0), (2, 0, 50, 50, 2, 8, 32, 1),
                   (3, 0, 30, 10, 1, 1, 2, 0), (4, 5, 200, 150, 3, 8, 32, 1),
                   (5, 5, 20, 25, 1, 2, 4, 0), (6, 5, 20, 25, 1, 2, 4, 0))
    limits = LimitGroups(np.array([0, 1, 1, 1, 1, 2, 3]), np.array([0, 0, 0]),
                         np.array([[1, -1, -1, -1, -1]]), [("MaxJobs",) * 5])
    deps = dependencies_from_edges(6, [5], [0], [AFTEROK])
    s = Scheduler(cluster, "easy", jobs=jobs, limits=limits, dependencies=deps,
                  priority=lambda now, progress: np.where(progress.start >= 0, 0.0, now + 1.0),
                  period=10)
    s.submit(jobs.take(jobs.submit_time == 0))
    s.apply(s.schedule(0))
    s.submit(jobs.take(jobs.submit_time == 5))
    return s, jobs


def test_every_failed_call_leaves_the_whole_state_unchanged():
    s, jobs = limited_scheduler()
    s.apply(s.schedule(5))
    assert s.running == [1, 2, 3]            # 4 waits for nodes, 5 for the cap, 6 for 1
    stale = s.schedule(5)
    s.resume_nodes([0])                       # (all up already: only the version moves)
    before = full_state(s)
    bad = {"unknown job": lambda: s.submit(jobs_of((9, 5, 10, 10, 1, 1, 1, 0))),
           "twice": lambda: s.submit(jobs.take(jobs.job_id == 4)),
           "stale": lambda: s.apply(stale),
           "not running": lambda: s.complete([1, 4], 6),
           "end state": lambda: s.complete(1, 6, state="DONE"),
           "time": lambda: s.complete(1, 6.5),
           "node": lambda: s.fail_nodes([0, 4], 6),
           "node type": lambda: s.fail_nodes(["gpu01"], 6),
           "fail time": lambda: s.fail_nodes([0], None),
           "resume node": lambda: s.resume_nodes([-1]),
           "pass time": lambda: s.schedule(6.5),
           "past limit": lambda: s.schedule(60)}     # job 3's limit ended at 30
    for name, call in bad.items():
        with pytest.raises((InputError, StaleDecisionsError)):
            call()
            pytest.fail(f"{name}: no error")
        assert full_state(s) == before, name


def test_pool_engine_refuses_failed_nodes_unchanged():
    s = Scheduler(Cluster.homogeneous(2), "easy", reservations="counts")
    before = full_state(s)
    with pytest.raises(UnsupportedError):
        s.fail_nodes([0], 0)
    assert full_state(s) == before


def test_failed_nodes_end_their_jobs_and_leave_planning_until_resumed():
    s, jobs = limited_scheduler()
    s.apply(s.schedule(5))
    # job 1 runs on gpu04, job 2 on gpu01-02, job 3 on gpu03
    assert s.fail_nodes([0, 3], 7).tolist() == [1, 2]
    assert s.running == [3] and s.available.tolist() == [False, True, True, False]
    assert s.state.free_gpu_mask.tolist()[1] == 0xFF       # job 2's GPUs are back
    d = s.schedule(7, full=True)
    got = dict(zip(d.job_id.tolist(), zip(d.outcome.tolist(), d.reason)))
    # job 4 needs 3 nodes of "big" (gpu01-03): not while gpu01 is down; job 5's cap is
    # free (job 1 ended) and it starts on a node that is up; job 6 was afterok on
    # job 1, which ended NODE_FAIL: it never queues
    assert got == {4: (BLOCKED, "ReqNodeNotAvail"), 5: (START, "")}
    assert set(d.nodes.tolist()) <= {1, 2}
    s.resume_nodes([0, 3])
    assert s.available.all()
    d = s.schedule(7, full=True)
    assert d.outcome[d.job_id.tolist().index(4)] == RESERVED


def test_options_are_checked_as_the_simulator_checks_them():
    cluster, jobs = gpu_workload()
    n = len(jobs)
    bad = [dict(partitions=PartitionChoices.single(np.zeros(n - 1))),
           dict(limits=LimitGroups.none(n + 1)),
           dict(priority=lambda now, progress: np.zeros(n), period=0),
           dict(priority=lambda now, progress: np.zeros(n)),
           dict(priority=np.zeros(n + 2)),
           dict(resolution=0), dict(window=-1), dict(resolution=1.5),
           dict(placement=Placement.none(n + 1, cluster.num_nodes)),
           dict(reserve_depth=0), dict(policy="sjf")]
    for options in bad:
        with pytest.raises(InputError) as sim_error:
            simulate(cluster, jobs, **options)
        with pytest.raises(InputError) as api_error:
            Scheduler(cluster, jobs=jobs, **options)
        assert (str(api_error.value), api_error.value.field) == \
            (str(sim_error.value), sim_error.value.field), options
    with pytest.raises(InputError, match="pass it as jobs=") as e:
        Scheduler(cluster, priority=np.zeros(n))
    assert e.value.field == "priority"


def test_from_state_counts_the_running_jobs_against_their_limits():
    cluster = gpu_cluster([8, 8])
    running = RunningJobs.from_arrays(job_id=[1], planned_end=[50], node_offsets=[0, 1],
                                      nodes=[0], gpus=[4], cpus=[1], mem=[0])
    pending = jobs_of((5, 0, 10, 10, 1, 1, 1, 0), (6, 0, 10, 10, 1, 1, 1, 0))
    # one group capped at one running job: running job 1 and pending job 5 are in it
    limits = LimitGroups(np.array([0, 1, 2, 2]), np.array([0, 0]),
                         np.array([[1, -1, -1, -1, -1]]), [("MaxJobs",) * 5])
    s = Scheduler.from_state(cluster, running, pending, "easy", limits=limits)
    d = s.schedule(1)
    assert d.starts.tolist() == [6] and d.reason == ["MaxJobs", ""]
    est = s.expected_start_times(1)
    assert est.expected_start.tolist() == [-1, 1] and est.reason.tolist() == ["MaxJobs", "None"]
    s.complete(1, 20)
    assert s.schedule(20).starts.tolist() == [5, 6]
    with pytest.raises(InputError, match="running then pending") as e:
        Scheduler.from_state(cluster, running, pending, "easy",
                             limits=LimitGroups.none(len(pending)))
    assert e.value.field == "limits"


@settings(max_examples=17, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(run=site_runs(), period=st.sampled_from([1, 6, 20]))
def test_priority_callables_see_the_simulators_progress(run, period):
    """At every recomputation a callable gets what the simulator gives it: the
    same times, starts, eligible times and ends of the jobs that have ended (a
    running job's end is not known to the scheduler yet)."""
    cluster, wl, _, options = run
    jobs = wl.jobs

    def recorder(calls):
        def priority(now, progress):
            ended = (progress.end >= 0) & (progress.end <= now)
            calls.append((now, progress.start.tolist(), progress.eligible.tolist(),
                          np.where(ended, progress.end, -1).tolist()))
            return np.where(progress.eligible >= 0, -progress.eligible, 0.0) + jobs.user
        return priority
    constraints = dict(dependencies=getattr(wl, "dependencies", None), period=period,
                       placement=options["placement"])
    sim_calls, api_calls = [], []
    simulate(cluster, jobs, "easy", priority=recorder(sim_calls), **constraints)
    drive_constrained(Scheduler(cluster, "easy", jobs=jobs, priority=recorder(api_calls),
                                **constraints), jobs)
    assert api_calls == sim_calls
