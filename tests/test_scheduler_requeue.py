"""Requeue and checkpoint resume at Scheduler.fail_nodes: driven at the simulator's
instants through a drawn node-event stream, the Scheduler starts, kills and requeues
what ``simulate(..., events=..., lifecycle=...)`` does (every attempt: start, end,
nodes, killed or not; the attempts it reports: number, requeued, begin time, progress
kept, work left); what it refuses, leaving the state unchanged."""
import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, reject, settings
from hypothesis import strategies as st

from fastsched import Cluster, JobTable, NodeEvents, Scheduler, simulate
from fastsched.io.hostlist import compress
from fastsched.model.errors import InputError, UnsupportedError
from fastsched.model.lifecycle import Lifecycle, saved_progress
from fastsched.sim.decisions import START
from fastsched.tools.testing import lifecycles, node_event_rows
from test_constraints import constrained_cases, engine_inputs
from test_nodeplan import node_clusters, node_workloads


def drive(s, jobs, lc, rows, events=True):
    """Drive Scheduler ``s`` through ``jobs`` and the node events ``rows`` as the
    simulator's loop does: at each instant (submits, ends, events, ``s.requeue_time``)
    complete what ends, apply the events (``down``: fail_nodes), submit what arrives,
    then pass and apply until no job ends at once and no start released a dependent
    (the simulator passes again then). Returns (every attempt as (job id,
    start, end, nodes, killed), sorted; whether a job waited for down nodes)."""
    ids = [int(j) for j in jobs.job_id]
    row = {j: k for k, j in enumerate(ids)}
    left = {j: int(r) for j, r in zip(ids, jobs.runtime)}
    limit = {j: int(t) for j, t in zip(ids, jobs.time_limit)}
    submits = sorted(set(jobs.submit_time.tolist()))
    stream = sorted(rows, key=lambda e: e[0])
    ends, running, done, held = {}, {}, [], False

    def end(now):
        """Complete the jobs ending at ``now``: those killed at their limit TIMEOUT."""
        for j in [j for j, e in ends.items() if e == now]:
            s.complete(j, now, state="COMPLETED" if left[j] <= limit[j] else "TIMEOUT")
            start, nodes = running.pop(j)
            done.append((j, start, now, nodes, False))
            del ends[j]

    for _ in range(50 * len(ids) + 50 + len(stream)):
        times = submits[:1] + list(ends.values()) + [t for t, _, _ in stream[:1]] + \
            ([s.requeue_time] if s.requeue_time >= 0 else [])
        if not times or (not submits and not ends and s.requeue_time < 0
                         and not len(s.pending)):
            break
        now = min(times)
        end(now)
        while stream and stream[0][0] == now:
            _, kind, nodes = stream.pop(0)
            if kind == "down":
                before = len(s.attempts)
                killed = s.fail_nodes(nodes, now).tolist()
                new = s.attempts.iloc[before:]
                assert sorted(new.job_id.tolist()) == sorted(killed)
                for a in new.itertuples():
                    j = a.job_id
                    start, on = running.pop(j)
                    del ends[j]
                    done.append((j, start, now, on, True))
                    saved = int(saved_progress(now - start, lc.checkpoint_interval[row[j]]))
                    assert (a.start_time, a.saved, a.remaining) == (start, saved,
                                                                     left[j] - saved)
                    assert a.requeued == bool(lc.requeue[row[j]])
                    assert a.begin_time == (now + lc.delay if a.requeued else -1)
                    left[j] -= saved
            else:
                (s.drain_nodes if kind == "drain" else s.resume_nodes)(nodes)
        if submits and submits[0] == now:
            submits.pop(0)
            s.submit(jobs.take(jobs.submit_time == now))
        while True:
            d = s.schedule(now)
            s.apply(d)
            held = held or "ReqNodeNotAvail" in d.reason
            for i in np.flatnonzero(d.outcome == START).tolist():
                j = int(d.job_id[i])
                running[j] = (now, sorted(d.nodes_of(i).tolist()))
                ends[j] = now + min(left[j], limit[j])
            released = set(s.pending.job_id.tolist()) - set(d.job_id.tolist())
            if now not in ends.values() and not released:     # (the simulator's rule)
                break
            end(now)
    else:
        raise AssertionError("the drive does not end")
    return sorted(done), held


def simulated(r):
    t, ids = r.attempts, r.workload.job_id
    return sorted((int(ids[t["row"][k]]), int(t["start"][k]), int(t["end"][k]),
                   sorted(t["alloc_nodes"][t["alloc_offsets"][k]:t["alloc_offsets"][k + 1]]
                          .tolist()), bool(t["killed"][k]))
                  for k in range(len(t["row"])) if t["start"][k] >= 0)


def aimed(draw, cluster, jobs, policy, rows, nodes=None):
    """``rows`` after a first failure that hits a job of the run without failures (a
    node of ``nodes`` it runs on, inside its run), when one runs for 2 s or more: most
    cases then kill something."""
    r = simulate(cluster, jobs, policy, reservations="nodes").schedule
    hit = []
    for i in np.flatnonzero(r.end_time - r.start_time >= 2).tolist():
        on = [x for x in r.nodes_of(i).tolist() if nodes is None or x in nodes]
        hit += [(int(r.start_time[i]), int(r.end_time[i]), x) for x in on]
    if not hit:
        return rows
    start, end, x = draw(st.sampled_from(hit))
    t = draw(st.integers(start + 1, end - 1))
    first = [(t, "down", [x])] + ([(t + draw(st.integers(0, 10)), "up", [x])]
                                  if draw(st.booleans()) else [])
    return first + [(u + t, kind, on) for u, kind, on in rows]


@st.composite
def failure_cases(draw, policy):
    cluster, _ = draw(node_clusters())
    available = np.ones(cluster.num_nodes, dtype=bool)
    jobs = draw(node_workloads(cluster, available, max_jobs=12))
    rows = draw(node_event_rows(cluster.num_nodes, max_events=6, max_time=30,
                                kinds=("down", "down", "down", "up", "drain", "resume")))
    rows = aimed(draw, cluster, jobs, policy, rows)
    return cluster, jobs, rows, draw(lifecycles(len(jobs), max_interval=10, max_delay=6))


def _check(policy, got, held, r, s, jobs):
    if policy == "fcfs" and held:
        # a job too few nodes are up for stops the simulator's fcfs walk but not the
        # Scheduler's (it waits aside, ReqNodeNotAvail), whether the nodes are down or
        # drained (tests/test_scheduler_drain.py): not a requeue matter
        event("discarded: fcfs with a job waiting for down nodes")
        reject()
    assert got == simulated(r)
    t = r.attempts
    killed = t["killed"] & (t["start"] >= 0)
    ids = r.workload.job_id
    want = sorted((int(ids[t["row"][k]]), int(t["attempt"][k])) for k in np.flatnonzero(killed))
    a = s.attempts
    assert sorted(zip(a.job_id.tolist(), a.attempt.tolist())) == want
    event(f"killed attempts: {min(len(a), 3)}, requeued: {min(int(a.requeued.sum()), 2)}")


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
    return cluster, jobs, rows, draw(lifecycles(len(jobs), max_interval=10, max_delay=6))


def _scheduler_vs_simulate(policy, case):
    cluster, jobs, rows, lc = case
    s = Scheduler(cluster, policy, jobs=jobs, reservations="nodes", lifecycle=lc)
    got, held = drive(s, jobs, lc, rows)
    r = simulate(cluster, jobs, policy, reservations="nodes", lifecycle=lc,
                 events=NodeEvents.from_rows(rows, cluster.num_nodes))
    _check(policy, got, held, r, s, jobs)


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_scheduler_requeues_as_the_simulator(policy, data):
    _scheduler_vs_simulate(policy, data.draw(failure_cases(policy)))


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_scheduler_requeues_as_the_simulator_with_spare_nodes(policy, data):
    _scheduler_vs_simulate(policy, data.draw(spare_node_cases(policy)))


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_requeue_with_dependencies_and_limits_as_the_simulator(policy, data):
    """A requeued job keeps counting as submitted in its limit groups, releases its
    afterok/afterany dependents only at its last end and its after ones only once."""
    cluster, _, jobs, parts, deps, groups, caps, _ = data.draw(constrained_cases())
    rows = data.draw(node_event_rows(cluster.num_nodes, max_events=6, max_time=30,
                                     kinds=("down", "down", "up", "drain", "resume")))
    lc = data.draw(lifecycles(len(jobs), max_interval=10, max_delay=6))
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    rows = aimed(data.draw, cluster, jobs, policy, rows)
    s = Scheduler(cluster, policy, jobs=jobs, partitions=pc, dependencies=dp, limits=lg,
                  lifecycle=lc)
    got, held = drive(s, jobs, lc, rows)
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


def test_refused_combinations_leave_the_state_unchanged():
    from fastsched.model.images import Containers, ImagePull
    jobs = _jobs()
    cluster = Cluster.homogeneous(4, gpus=8, cpus=8)
    with pytest.raises(InputError, match="jobs="):
        Scheduler(cluster, "easy", lifecycle=Lifecycle.of(4))
    with pytest.raises(InputError, match="lifecycle"):
        Scheduler(cluster, "easy", jobs=jobs, lifecycle=Lifecycle.of(3))
    with pytest.raises(UnsupportedError, match="no-kill"):
        Scheduler(cluster, "easy", jobs=jobs, lifecycle=Lifecycle.of(4, no_kill=True))
    s = Scheduler(cluster, "easy", jobs=jobs, lifecycle=Lifecycle.of(4),
                  containers=Containers.of(["a"] * 4, ImagePull(default=5)))
    s.submit(jobs)
    s.apply(s.schedule(0))
    with pytest.raises(UnsupportedError, match="containers"):
        s.fail_nodes([0], 10)
    assert s.running == [1, 2, 3] and s.available.all() and len(s.attempts) == 0
