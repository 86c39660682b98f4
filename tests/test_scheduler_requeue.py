"""Requeue and checkpoint resume at Scheduler.fail_nodes: driven at the simulator's
instants through a drawn node-event stream, the Scheduler starts, kills and requeues
what ``simulate(..., events=..., lifecycle=...)`` does (every attempt: start, end,
nodes, killed or not; the attempts it reports: number, requeued, begin time, progress
kept, work left); what it refuses, leaving the state unchanged."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, reject, settings
from hypothesis import strategies as st

from fastsched import Cluster, JobTable, NodeEvents, Scheduler, simulate
from fastsched.io.hostlist import compress
from fastsched.model.errors import InputError
from fastsched.model.lifecycle import Lifecycle
from fastsched.tools.testing import lifecycles, node_event_rows
from scheddrive import drive, simulated
from test_constraints import constrained_cases, engine_inputs
from test_nodeplan import node_clusters, node_workloads


def aimed(draw, cluster, jobs, policy, rows, nodes=None, wide=False):
    """``rows`` after a first failure that hits a job of the run without failures (a
    node of ``nodes`` it runs on, inside its run), when one runs for 2 s or more: most
    cases then kill something."""
    r = simulate(cluster, jobs, policy, reservations="nodes").schedule
    hit = []
    for i in np.flatnonzero(r.end_time - r.start_time >= 2).tolist():
        on = [x for x in r.nodes_of(i).tolist() if nodes is None or x in nodes]
        hit += [(int(r.start_time[i]), int(r.end_time[i]), x, len(r.nodes_of(i)))
                for x in on]
    if not hit:
        return rows
    many = [h for h in hit if h[3] > 1]      # a multi-node job: a --no-kill one shrinks
    start, end, x, _ = draw(st.sampled_from(many if many and (wide or draw(st.booleans()))
                                            else hit))
    t = draw(st.integers(start + 1, end - 1))
    first = [(t, "down", [x])] + ([(t + draw(st.integers(0, 10)), "up", [x])]
                                  if draw(st.booleans()) else [])
    return first + [(u + t, kind, on) for u, kind, on in rows]


@st.composite
def failure_cases(draw, policy, shrink=False):
    """A cluster, jobs, node events and a lifecycle; ``shrink``: every job ``--no-kill``,
    the first failure on a multi-node job's node when one runs."""
    cluster, _ = draw(node_clusters())
    available = np.ones(cluster.num_nodes, dtype=bool)
    jobs = draw(node_workloads(cluster, available, max_jobs=12))
    rows = draw(node_event_rows(cluster.num_nodes, max_events=6, max_time=30,
                                kinds=("down", "down", "down", "up", "drain", "resume")))
    rows = aimed(draw, cluster, jobs, policy, rows, wide=shrink)
    lc = draw(elastic_lifecycles(len(jobs)))
    return cluster, jobs, rows, replace(lc, no_kill=np.ones(len(jobs), dtype=bool)) \
        if shrink else lc


@st.composite
def elastic_lifecycles(draw, n):
    """:func:`lifecycles`, often with ``--no-kill`` jobs (they shrink to one node)."""
    lc = draw(lifecycles(n, max_interval=10, max_delay=6))
    if draw(st.booleans()):
        lc = replace(lc, no_kill=np.array(draw(st.lists(st.booleans() | st.just(True),
                                                         min_size=n, max_size=n)), dtype=bool))
    return lc


def _check(policy, got, held, r, s, jobs):
    if policy == "fcfs" and held:
        # a job too few nodes are up for stops the simulator's fcfs walk but not the
        # Scheduler's (it waits aside, ReqNodeNotAvail), whether the nodes are down or
        # drained (tests/test_scheduler_drain.py): not a requeue matter
        event("discarded: fcfs with a job waiting for down nodes")
        reject()
    assert got == simulated(r)
    t = r.attempts
    ids = r.workload.job_id
    shapes = t["resized"] if "resized" in t else np.zeros(len(t["row"]), dtype=bool)
    ended = (t["killed"] | shapes) & (t["start"] >= 0)
    want = sorted((int(ids[t["row"][k]]), int(t["attempt"][k]), int(t["end"][k]),
                   "RESIZING" if shapes[k] else "NODE_FAIL") for k in np.flatnonzero(ended))
    a = s.attempts
    a = a[(a.state == "NODE_FAIL") | (a.start_time < a.end_time)]   # shapes that ran
    assert sorted(zip(a.job_id.tolist(), a.attempt.tolist(), a.end_time.tolist(),
                      a.state.tolist())) == want
    event(f"killed attempts: {min(int((a.state == 'NODE_FAIL').sum()), 3)}, requeued: "
          f"{min(int(a.requeued.sum()), 2)}, shrinks: {min(int(shapes.sum()), 2)}")


@st.composite
def spare_node_cases(draw, policy):
    """Identical nodes, of which one or two fail (down, drain, up, resume) and every job
    fits on the others: no job ever waits for down nodes (fcfs's divergence above)."""
    X = draw(st.integers(2, 6))
    cluster = Cluster.homogeneous(X, cpus=draw(st.sampled_from([1, 4])),
                                  gpus=draw(st.sampled_from([0, 2])), prefix="n")
    jobs = draw(node_workloads(cluster, np.ones(X, dtype=bool), max_jobs=12))
    failing = draw(st.lists(st.integers(0, X - 1), min_size=1, max_size=min(2, X - 1),
                            unique=True))
    jobs.num_nodes = np.minimum(jobs.num_nodes, X - len(failing))
    rows = draw(node_event_rows(len(failing), max_events=6, max_time=30,
                                kinds=("down", "down", "down", "up", "drain", "resume")))
    rows = [(t, kind, [failing[k] for k in nodes]) for t, kind, nodes in rows]
    rows = aimed(draw, cluster, jobs, policy, rows, failing)
    return cluster, jobs, rows, draw(elastic_lifecycles(len(jobs)))


def _scheduler_vs_simulate(policy, case):
    cluster, jobs, rows, lc = case
    s = Scheduler(cluster, policy, jobs=jobs, reservations="nodes", lifecycle=lc)
    driven = drive(s, jobs, lc, rows)
    got, held = driven.attempts, driven.held
    r = simulate(cluster, jobs, policy, reservations="nodes", lifecycle=lc,
                 events=NodeEvents.from_rows(rows, cluster.num_nodes))
    _check(policy, got, held, r, s, jobs)


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_scheduler_requeues_as_the_simulator(policy, data):
    _scheduler_vs_simulate(policy, data.draw(failure_cases(policy)))


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@settings(max_examples=17, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_no_kill_jobs_shrink_as_the_simulator(policy, data):
    _scheduler_vs_simulate(policy, data.draw(failure_cases(policy, shrink=True)))


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_scheduler_requeues_as_the_simulator_with_spare_nodes(policy, data):
    _scheduler_vs_simulate(policy, data.draw(spare_node_cases(policy)))


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@settings(max_examples=17, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_requeue_with_dependencies_and_limits_as_the_simulator(policy, data):
    """A requeued job keeps counting as submitted in its limit groups, releases its
    afterok/afterany dependents only at its last end and its after ones only once."""
    cluster, _, jobs, parts, deps, groups, caps, _ = data.draw(constrained_cases())
    rows = data.draw(node_event_rows(cluster.num_nodes, max_events=6, max_time=30,
                                     kinds=("down", "down", "up", "drain", "resume")))
    lc = data.draw(elastic_lifecycles(len(jobs)))
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    rows = aimed(data.draw, cluster, jobs, policy, rows)
    s = Scheduler(cluster, policy, jobs=jobs, partitions=pc, dependencies=dp, limits=lg,
                  lifecycle=lc)
    driven = drive(s, jobs, lc, rows)
    got, held = driven.attempts, driven.held
    r = simulate(cluster, jobs, policy, reservations="nodes", partitions=pc, dependencies=dp, limits=lg, lifecycle=lc,
                 events=NodeEvents.from_rows(rows, cluster.num_nodes))
    _check(policy, got, held, r, s, jobs)


def _jobs():
    return JobTable.from_arrays(job_id=np.arange(1, 5), submit_time=0, time_limit=1000,
                                runtime=[500, 500, 300, 800], num_nodes=[2, 1, 1, 1],
                                gpus_per_node=8, cpus_per_node=8, user=0)


def test_a_failure_requeues_from_the_last_checkpoint_after_the_delay():
    """The simulator's worked example (tests/test_lifecycle.py) through the API."""
    jobs = _jobs()
    lc = Lifecycle.of(4, requeue=[1, 1, 0, 1], checkpoint_interval=[60, 0, 0, 0],
                      checkpoint_cost=[10, 0, 0, 0])
    s = Scheduler(Cluster.homogeneous(4, gpus=8, cpus=8, prefix="gpu"), "easy", jobs=jobs,
                  lifecycle=lc)
    s.submit(jobs)
    s.apply(s.schedule(0))                     # 1 on gpu[001-002], 2 and 3; 4 waits
    assert s.fail_nodes([0], 100).tolist() == [1]
    a = s.attempts
    assert a.to_dict("records") == [
        {"job_id": 1, "attempt": 0, "start_time": 0, "end_time": 100, "state": "NODE_FAIL",
         "requeued": True, "begin_time": 221, "saved": 60, "remaining": 440,
         "nodes": "gpu[001-002]"}]
    assert s.requeue_time == 221 and s.running == [2, 3]
    d = s.schedule(100)
    assert list(d.starts) == [4] and len(s.pending) == 1     # (job 4 itself)
    s.apply(d)
    assert len(s.pending) == 0
    s.resume_nodes([0])
    s.apply(s.schedule(200))
    d = s.schedule(221)                        # queued again: waits for two nodes
    assert d.job_id.tolist() == [1] and list(d.starts) == [] and s.requeue_time == -1
    s.complete(3, 300)
    d = s.schedule(300)
    assert list(d.starts) == [1] and compress(["gpu001", "gpu004"]) == "gpu[001,004]"
    assert d.nodes_of(0).tolist() == [0, 3]


def test_a_job_not_requeued_ends_and_without_lifecycle_nothing_changes():
    jobs = _jobs()
    cluster = Cluster.homogeneous(4, gpus=8, cpus=8)
    for lc in (Lifecycle.of(4, requeue=False), None):
        s = Scheduler(cluster, "easy", jobs=jobs, lifecycle=lc)
        s.submit(jobs)
        s.apply(s.schedule(0))
        assert s.fail_nodes([0, 3], 10).tolist() == [1, 3]
        assert s.requeue_time == -1 and s.running == [2]
        if lc is None:
            assert s.attempts is None
        else:
            assert s.attempts.requeued.tolist() == [False, False]
            assert s.attempts.begin_time.tolist() == [-1, -1]
        d = s.schedule(500)
        assert d.job_id.tolist() == [4]


def test_bad_lifecycles_are_refused():
    """(fail_nodes with containers: tests/test_scheduler_fail_containers.py)"""
    jobs = _jobs()
    cluster = Cluster.homogeneous(4, gpus=8, cpus=8)
    with pytest.raises(InputError, match="jobs="):
        Scheduler(cluster, "easy", lifecycle=Lifecycle.of(4))
    with pytest.raises(InputError, match="lifecycle"):
        Scheduler(cluster, "easy", jobs=jobs, lifecycle=Lifecycle.of(3))


def test_a_no_kill_job_shrinks_then_a_second_failure_kills_it():
    jobs = JobTable.from_arrays(job_id=[1, 2], submit_time=0, time_limit=1000,
                                runtime=[100, 50], num_nodes=[4, 1], cpus_per_node=8)
    lc = Lifecycle.of(2, no_kill=[True, False], checkpoint_interval=[30, 0], delay=5)
    s = Scheduler(Cluster.homogeneous(5, cpus=8), "easy", jobs=jobs, lifecycle=lc)
    s.submit(jobs)
    s.apply(s.schedule(0))                      # 1 on node[001-004], 2 on node005
    assert s.fail_nodes([0], 40).tolist() == [1]
    r = s.running_jobs
    assert s.running == [1, 2] and r.nodes[:r.node_offsets[1]].tolist() == [1, 2, 3]
    a = s.attempts.iloc[-1]
    # 400 node-seconds of work, 160 done by 40; 240 on 3 nodes: 80 s more
    assert (a.state, a.start_time, a.end_time, a.remaining, a.nodes) == \
        ("RESIZING", 0, 40, 80, "node[001-004]")
    d = s.schedule(40)                          # node001 is down: nothing else to start
    assert len(d) == 0
    s.resume_nodes([0])
    assert s.state.free_cpus.tolist()[0] == 8   # the lost node's CPUs came back
    assert s.fail_nodes([1, 2, 3], 59).tolist() == [1]      # below one node: killed
    a = s.attempts.iloc[-1]
    # killed at 59: its checkpoint at 30 s kept 120 node-seconds, 30 s at 4 nodes
    assert (a.state, a.start_time, a.requeued, a.saved, a.remaining, a.begin_time) == \
        ("NODE_FAIL", 40, True, 30, 70, 64)
