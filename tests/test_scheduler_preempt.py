"""Preemption in the embeddable Scheduler: driven at the simulator's instants, it
preempts and starts what ``simulate(..., preemption=...)`` does (every attempt: start,
end, nodes, preempted or not); its decisions name the victims, their modes and stop
times; what it refuses."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fastsched import Cluster, JobTable, Scheduler, simulate
from fastsched.model.errors import InputError, UnsupportedError
from fastsched.model.constraints import Placement
from fastsched.model.lifecycle import Lifecycle
from fastsched.model.preemption import CANCEL, REQUEUE, Preemption
from fastsched.model.reservations import Reservations
from scheddrive import drive_or_discard, simulated
from test_nodeplan import node_clusters, node_workloads
from test_preempt import preemptions
from test_resvjobs import disjoint_reservations


def _tiered(draw, cluster):
    """``cluster`` with drawn partition PriorityTiers (the queue's order)."""
    tiers = draw(st.lists(st.integers(1, 3), min_size=len(cluster.partitions),
                          max_size=len(cluster.partitions)))
    return Cluster(cluster.node_names, cluster.cpus, cluster.gpus, cluster.mem_mb,
                   partitions=[replace(p, priority_tier=k)
                               for p, k in zip(cluster.partitions, tiers)])


@st.composite
def preempt_cases(draw):
    cluster = _tiered(draw, draw(node_clusters())[0])
    available = np.ones(cluster.num_nodes, dtype=bool)
    jobs = draw(node_workloads(cluster, available, max_jobs=14))
    pre, lc = _rules(draw, cluster, jobs)
    return cluster, jobs, pre, lc


def _rules(draw, cluster, jobs):
    """Drawn preemption rules and lifecycle for ``jobs`` (their runtimes made >= 1 s:
    the drive passes once per instant)."""
    jobs.runtime = np.maximum(jobs.runtime, 1)
    n = len(jobs)
    qos = draw(st.booleans())
    classes = draw(st.integers(2, 3)) if qos else len(cluster.partitions)
    # planning with preemptable capacity both ways: Slurm's (the default) and opted out
    pre = replace(draw(preemptions(classes, n, qos)), backfill=draw(st.booleans()))
    if draw(st.booleans()):            # often: every class preempts those ranked below
        rank = np.array(draw(st.permutations(range(classes))))
        mode = draw(st.lists(st.sampled_from([CANCEL, REQUEUE]), min_size=classes,
                             max_size=classes))
        pre = replace(pre, may=rank[:, None] > rank[None, :],
                      mode=np.array(mode, dtype=np.int64))
    lc = Lifecycle.of(n, requeue=draw(st.lists(st.booleans(), min_size=n, max_size=n)),
                      checkpoint_interval=draw(st.lists(st.integers(0, 10), min_size=n,
                                                        max_size=n)),
                      delay=draw(st.integers(1, 5)))
    return pre, lc


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@settings(max_examples=42, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=preempt_cases())
def test_scheduler_preempts_as_the_simulator(policy, case):
    """Cases that never end are discarded (scheddrive.drive_or_discard)."""
    cluster, jobs, pre, lc = case
    s = Scheduler(cluster, policy, jobs=jobs, preemption=pre, lifecycle=lc)
    got = drive_or_discard(s, jobs, lc).attempts
    r = simulate(cluster, jobs, policy, preemption=pre, lifecycle=lc)
    assert got == simulated(r)
    event(f"preempted attempts: {min(sum(a[4] for a in got), 3)}")


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=preempt_cases(), data=st.data())
def test_scheduler_preempts_around_advance_reservations_as_the_simulator(policy, case, data):
    """A preemptor neither fits on nor preempts on nodes a reservation's window holds
    during its run, in the Scheduler as in simulate (driven at the windows' edges too)."""
    cluster, jobs, pre, lc = case
    jobs.cpus_per_node = np.maximum(jobs.cpus_per_node, 1).astype(jobs.cpus_per_node.dtype)
    items = disjoint_reservations(data.draw, cluster.num_nodes, [()], [()])
    resv = Reservations(tuple(items), cluster.num_nodes)
    edges = {int(t) for r in items for t in (r.start, r.end)}
    s = Scheduler(cluster, policy, jobs=jobs, preemption=pre, lifecycle=lc,
                  advance_reservations=resv or None)
    got = drive_or_discard(s, jobs, lc, instants=edges).attempts
    r = simulate(cluster, jobs, policy, preemption=pre, lifecycle=lc,
                 advance_reservations=resv or None)
    assert got == simulated(r)
    event(f"preempted attempts: {min(sum(a[4] for a in got), 3)}")


def _two_tiers(grace=0, mode=REQUEUE):
    from fastsched.model.cluster import Partition
    nodes = np.arange(2)
    parts = [Partition("low", nodes, priority_tier=1, grace_time=grace),
             Partition("high", nodes, priority_tier=10)]
    cluster = Cluster(["a", "b"], [4, 4], [0, 0], [0, 0], partitions=parts)
    jobs = JobTable.from_arrays(job_id=[1, 2], submit_time=[0, 10], time_limit=[100, 50],
                                runtime=[100, 50], num_nodes=[2, 1], cpus_per_node=[4, 4],
                                partition=[0, 1])
    return cluster, jobs, Preemption.partition_prio(cluster, mode)


def test_decisions_name_victims_mode_and_grace_end():
    cluster, jobs, pre = _two_tiers(grace=30)
    s = Scheduler(cluster, "easy", jobs=jobs, preemption=pre,
                  lifecycle=Lifecycle.of(2, delay=5))
    s.submit(jobs.take(np.array([0])))
    s.apply(s.schedule(0))
    s.submit(jobs.take(np.array([1])))
    d = s.schedule(10)
    assert list(d.starts) == [] and d.preempt.job_id == 2
    assert d.preempt.victims.tolist() == [1] and d.preempt.mode == ("REQUEUE",)
    assert d.preempt.stop.tolist() == [40]
    s.apply(d)
    assert s.running == [1] and s.preempt_time == 40     # it runs out its grace time
    d = s.schedule(40)                 # job 1 stops, job 2 starts
    assert s.running == [] and list(d.starts) == [2]
    s.apply(d)
    assert s.preempt_time == 45        # job 1 queued again after the requeue delay
    s.schedule(45)
    assert [int(j) for j in s.pending.job_id] == [1]


def test_a_victim_is_planned_to_end_at_its_grace_end():
    """The doc example (docs/lifecycle.md, "Between a preemption and the preemptor's
    start"), on 4-CPU nodes: job 3 preempts jobs 1 (no grace) and 2 (600 s) at 100;
    job 2 is planned to end at 700, so job 4 (behind job 3, 2000 s) does not take job
    1's node: job 3 starts at 700, as the simulator starts it."""
    from fastsched.model.cluster import Partition
    nodes = np.arange(2)
    parts = [Partition("lowa", nodes, priority_tier=1),
             Partition("lowb", nodes, priority_tier=1, grace_time=600),
             Partition("high", nodes, priority_tier=10)]
    cluster = Cluster(["a", "b"], [4, 4], [0, 0], [0, 0], partitions=parts)
    jobs = JobTable.from_arrays(job_id=[1, 2, 3, 4], submit_time=[0, 0, 100, 150],
                                time_limit=[86400, 86400, 3600, 2000],
                                runtime=[36000, 36000, 3600, 2000], num_nodes=[1, 1, 2, 1],
                                cpus_per_node=[4, 4, 4, 4], partition=[0, 1, 2, 2])
    pre = Preemption.partition_prio(cluster, REQUEUE)
    lc = Lifecycle.of(4, delay=121)
    s = Scheduler(cluster, "easy", jobs=jobs, preemption=pre, lifecycle=lc)
    s.submit(jobs.take(np.array([0, 1])))
    s.apply(s.schedule(0))
    s.submit(jobs.take(np.array([2])))
    d = s.schedule(100)
    assert d.preempt.victims.tolist() == [1, 2] and d.preempt.stop.tolist() == [100, 700]
    s.apply(d)
    r = s.running_jobs
    assert r.job_id.tolist() == [2] and r.planned_end.tolist() == [700]
    d = s.schedule(100)
    s.apply(d)
    s.submit(jobs.take(np.array([3])))
    d = s.schedule(150)
    assert list(d.starts) == []                       # job 4 would delay job 3
    s.apply(d)
    got = drive_or_discard(Scheduler(cluster, "easy", jobs=jobs, preemption=pre,
                                     lifecycle=lc), jobs, lc).attempts
    assert got == simulated(simulate(cluster, jobs, "easy", preemption=pre, lifecycle=lc))
    assert [a for a in got if a[0] == 3][0][1] == 700        # its start


def test_cancel_ends_the_victim():
    cluster, jobs, pre = _two_tiers(mode=CANCEL)
    s = Scheduler(cluster, "easy", jobs=jobs, preemption=pre)
    s.submit(jobs.take(np.array([0])))
    s.apply(s.schedule(0))
    s.submit(jobs.take(np.array([1])))
    d = s.schedule(10)
    assert d.preempt.mode == ("CANCEL",) and d.preempt.stop.tolist() == [10]
    s.apply(d)
    assert s.running == [] and s.preempt_time == -1
    d = s.schedule(10)
    assert list(d.starts) == [2] and len(d.preempt) == 0


def test_refused_combinations():
    cluster, jobs, pre = _two_tiers()
    with pytest.raises(InputError, match="jobs="):
        Scheduler(cluster, "easy", preemption=pre)
    with pytest.raises(UnsupportedError, match="exclusive=topo"):
        Scheduler(cluster, "easy", jobs=jobs, preemption=pre,
                  placement=Placement.topology(np.zeros((1, 2)), 2, exclusive_topo=True))
    with pytest.raises(InputError, match="lifecycle"):
        Scheduler(cluster, "easy", jobs=jobs, preemption=pre, lifecycle=Lifecycle.of(3))
