"""Node ranges (``Lifecycle(nodes_min=...)``, ``--nodes=MIN-MAX``) in the embeddable
Scheduler: driven at the simulator's instants (tests/scheddrive.py, which runs a narrow
start for its node-seconds), it starts, shrinks, kills and requeues what
``simulate(..., lifecycle=...)`` does, attempt for attempt, with and without node
events; its decisions hold the nodes a narrow start got; what it refuses."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fastsched import Cluster, JobTable, NodeEvents, Scheduler, simulate
from fastsched.model.constraints import Placement
from fastsched.model.errors import UnsupportedError
from fastsched.model.lifecycle import Lifecycle
from scheddrive import drive, simulated
from test_constraints import constrained_cases, engine_inputs
from test_scheduler_preempt import _two_tiers
from test_scheduler_requeue import _check, failure_cases, spare_node_cases

SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def ranged(draw, jobs, lc):
    """``lc`` with a node range drawn for most multi-node jobs (MIN: 0 none, 1, half,
    all)."""
    low = [draw(st.sampled_from([0, 1, max(int(k) // 2, 1), int(k)])) for k in jobs.num_nodes]
    return replace(lc, nodes_min=np.array(low, dtype=np.int64))


def _narrow(got, jobs) -> int:
    width = dict(zip(jobs.job_id.tolist(), jobs.num_nodes.tolist()))
    return sum(1 for j, _, _, nodes, _ in got if len(nodes) < width[j])


def _same(policy, cluster, jobs, lc, rows=(), **options):
    s = Scheduler(cluster, policy, jobs=jobs, reservations="nodes", lifecycle=lc, **options)
    driven = drive(s, jobs, lc, rows)
    r = simulate(cluster, jobs, policy, reservations="nodes", lifecycle=lc,
                 events=NodeEvents.from_rows(rows, cluster.num_nodes) if rows else None,
                 **options)
    _check(policy, driven.attempts, driven.held, r, s, jobs)
    event(f"narrow shapes: {min(_narrow(driven.attempts, jobs), 2)}")


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@SETTINGS
@given(data=st.data())
def test_ranges_start_narrow_as_the_simulator(policy, data):
    cluster, jobs, _, lc = data.draw(failure_cases(policy))
    _same(policy, cluster, jobs, ranged(data.draw, jobs, lc))


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@SETTINGS
@given(data=st.data())
def test_ranges_with_node_events_as_the_simulator(policy, data):
    shrink = data.draw(st.booleans())
    cluster, jobs, rows, lc = data.draw(failure_cases(policy, shrink=shrink))
    _same(policy, cluster, jobs, ranged(data.draw, jobs, lc), rows)


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@SETTINGS
@given(data=st.data())
def test_ranges_with_spare_nodes_as_the_simulator(policy, data):
    cluster, jobs, rows, lc = data.draw(spare_node_cases(policy))
    _same(policy, cluster, jobs, ranged(data.draw, jobs, lc), rows)


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@SETTINGS
@given(data=st.data())
def test_ranges_with_partitions_and_limits_as_the_simulator(policy, data):
    cluster, _, jobs, parts, deps, groups, caps, _ = data.draw(constrained_cases())
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    lc = ranged(data.draw, jobs, Lifecycle.of(len(jobs)))
    _same(policy, cluster, jobs, lc, partitions=pc, dependencies=dp, limits=lg)


def _jobs():
    """The example of docs/lifecycle.md, "Node ranges": job 2 asks for 8 nodes, at
    least 4."""
    return JobTable.from_arrays(job_id=np.arange(1, 4), submit_time=np.arange(3),
                                time_limit=1000, runtime=[100, 300, 100], num_nodes=[3, 8, 4],
                                gpus_per_node=8, cpus_per_node=8, user=0)


def _cluster():
    return Cluster.homogeneous(8, gpus=8, cpus=8, prefix="gpu")


def test_a_range_job_starts_on_the_free_nodes():
    jobs = _jobs()
    lc = Lifecycle.of(3, nodes_min=[0, 4, 0])
    s = Scheduler(_cluster(), "easy", jobs=jobs, lifecycle=lc)
    s.submit(jobs.take(jobs.submit_time == 0))
    s.apply(s.schedule(0))
    s.submit(jobs.take(jobs.submit_time == 1))
    x = s.expected_start_times(1)
    assert (x.job_id.tolist(), x.expected_start.tolist(), x.schednodes.tolist()) == \
        ([2], [1], ["gpu[004-008]"])
    d = s.schedule(1)
    assert d.starts.tolist() == [2] and d.nodes_of(0).tolist() == [3, 4, 5, 6, 7]
    s.apply(d)
    assert s.running_jobs.planned_end.tolist() == [1000, 1001]     # its time limit
    assert s.state.free_cpus.tolist() == [0] * 8
    s.submit(jobs.take(jobs.submit_time == 2))
    s.complete(1, 100)
    x = s.expected_start_times(100)       # job 3 waits for job 2's nodes (its limit)
    assert (x.job_id.tolist(), x.expected_start.tolist()) == ([3], [1001])
    got = drive(Scheduler(_cluster(), "easy", jobs=jobs, lifecycle=lc), jobs, lc).attempts
    assert got[1] == (2, 1, 481, [3, 4, 5, 6, 7], False)   # 300 x 8 node-seconds on 5


def test_a_narrow_no_kill_job_shrinks_from_its_width_and_keeps_node_seconds():
    jobs = _jobs()
    lc = Lifecycle.of(3, nodes_min=[0, 4, 0], no_kill=[False, True, False],
                      checkpoint_interval=[0, 100, 0])
    s = Scheduler(_cluster(), "easy", jobs=jobs, lifecycle=lc)
    for t in (0, 1):
        s.submit(jobs.take(jobs.submit_time == t))
        s.apply(s.schedule(t))
    s.fail_nodes([7], 101)        # 5 -> 4 nodes: 2400 - 500 node-seconds left, on 4
    a = s.attempts.iloc[-1]
    assert (a.state, a.start_time, a.end_time, a.remaining) == ("RESIZING", 1, 101, 475)
    s.fail_nodes([6], 150)        # below its minimum of 4: killed, requeued
    a = s.attempts.iloc[-1]
    # its checkpoint at 100 s of its run kept 500 node-seconds: 62 s at 8 nodes
    assert (a.state, a.start_time, a.saved, a.remaining) == ("NODE_FAIL", 101, 62, 238)


def test_without_a_range_nothing_changes():
    jobs = _jobs()
    for lc in (Lifecycle.of(3), Lifecycle.of(3, nodes_min=jobs.num_nodes)):
        got = drive(Scheduler(_cluster(), "easy", jobs=jobs, lifecycle=lc), jobs, lc)
        assert got.attempts[1] == (2, 100, 400, list(range(8)), False)


def test_refused_combinations():
    jobs = _jobs()
    lc = Lifecycle.of(3, nodes_min=[0, 4, 0])
    cluster = _cluster()
    tiers, two, pre = _two_tiers()      # (with preemption ranges run: its own tests)
    Scheduler(tiers, "easy", jobs=two, lifecycle=Lifecycle.of(2, nodes_min=[1, 0]),
              preemption=pre)
    levels = np.zeros((1, 8), dtype=np.int32)
    with pytest.raises(UnsupportedError, match="node ranges .* topology placement"):
        Scheduler(cluster, "easy", jobs=jobs, lifecycle=lc,
                  placement=Placement.topology(levels, 3))
    with pytest.raises(UnsupportedError, match="node ranges .* power"):
        Scheduler(cluster, "easy", jobs=jobs, lifecycle=lc, power="SuspendTime=60")
