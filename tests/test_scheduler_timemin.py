"""``--time-min`` in the embeddable Scheduler: driven at the simulator's instants, it
starts what ``simulate(..., time_min=...)`` starts, with the same limits (each START
decision carries the limit the job runs with); what it refuses."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fastsched import Cluster, JobTable, NodeEvents, Scheduler, simulate
from fastsched.model.errors import InputError, UnsupportedError
from fastsched.model.lifecycle import Lifecycle
from scheddrive import drive, simulated
from test_constraints import constrained_cases, engine_inputs
from test_nodeplan import node_clusters, node_workloads
from test_scheduler_ranges import ranged
from fastsched.tools.testing import node_event_rows
from test_scheduler_requeue import _check, elastic_lifecycles, failure_cases


def _scaled(data, jobs, k=None):
    """The drawn jobs on a minute-scale clock (a cut limit is whole minutes; ``k``: the
    scale, else drawn), most with a time minimum below their limit."""
    k = data.draw(st.sampled_from([7, 40, 60, 90])) if k is None else k
    jobs = jobs.take(np.arange(len(jobs)))
    for name in ("submit_time", "time_limit", "runtime"):
        setattr(jobs, name, (getattr(jobs, name) * k).astype(getattr(jobs, name).dtype))
    tmin = [data.draw(st.sampled_from([0, 1, max(int(lim) // 4, 1), int(lim) // 2])
                      | st.integers(1, int(lim))) for lim in jobs.time_limit]
    return jobs, np.array(tmin, dtype=np.int64)


SETTINGS = settings(max_examples=45, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@SETTINGS
@given(data=st.data())
def test_scheduler_cuts_limits_as_the_simulator(policy, data):
    cluster, _ = data.draw(node_clusters())
    jobs = data.draw(node_workloads(cluster, np.ones(cluster.num_nodes, dtype=bool),
                                    max_jobs=14))
    jobs, tmin = _scaled(data, jobs)
    _same(policy, cluster, jobs, tmin, {})


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@SETTINGS
@given(data=st.data())
def test_scheduler_cuts_limits_with_constraints_as_the_simulator(policy, data):
    cluster, _, jobs, parts, deps, groups, caps, _ = data.draw(constrained_cases())
    jobs, tmin = _scaled(data, jobs)
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    _same(policy, cluster, jobs, tmin, {"partitions": pc, "dependencies": dp, "limits": lg})


@st.composite
def gap_cases(draw):
    """A gap to backfill: a one-node job runs, a job of every node waits for it, and
    later jobs on fewer nodes fit before that reservation only with a cut limit."""
    X = draw(st.integers(2, 5))
    k = draw(st.sampled_from([1, 60]))
    n = draw(st.integers(1, 8))
    first = draw(st.integers(2, 40))
    limits = [first, draw(st.integers(1, 40))] + draw(st.lists(st.integers(1, 80),
                                                             min_size=n, max_size=n))
    nodes = [1, X] + draw(st.lists(st.integers(1, X - 1), min_size=n, max_size=n))
    submit = [0, 0] + draw(st.lists(st.integers(0, first), min_size=n, max_size=n))
    runtime = [draw(st.integers(1, lim)) for lim in limits]
    tmin = [0, 0] + [draw(st.sampled_from([0, 1, max(lim // 4, 1)]) | st.integers(1, lim))
                     for lim in limits[2:]]
    jobs = JobTable.from_arrays(job_id=np.arange(1, n + 3), submit_time=np.array(submit) * k,
                                time_limit=np.array(limits) * k,
                                runtime=np.array(runtime) * k, num_nodes=nodes)
    return Cluster.homogeneous(X), jobs, np.array(tmin, dtype=np.int64) * k


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@SETTINGS
@given(case=gap_cases())
def test_scheduler_cuts_limits_in_gaps_as_the_simulator(policy, case):
    _same(policy, *case, {})


def _same(policy, cluster, jobs, tmin, options):
    s = Scheduler(cluster, policy, jobs=jobs, time_min=tmin, **options)
    got = drive(s, jobs).starts
    r = simulate(cluster, jobs, policy, reservations="nodes", time_min=tmin, **options)
    sched = r.schedule
    want = {int(j): (int(sched.start_time[i]), sorted(sched.nodes_of(i).tolist()),
                     int(r.workload.time_limit[i]))
            for i, j in enumerate(jobs.job_id) if sched.start_time[i] >= 0}
    assert got == want
    cut = sum(1 for i, j in enumerate(jobs.job_id)
              if int(j) in got and got[int(j)][2] < jobs.time_limit[i])
    event(f"cut limits: {min(cut, 3)}")


def test_a_start_carries_its_cut_limit_and_holds_its_nodes_for_it():
    jobs = JobTable.from_arrays(job_id=[1, 2, 3], submit_time=0, time_limit=[600, 1200, 3600],
                                runtime=[600, 1200, 1000], num_nodes=[1, 2, 1])
    s = Scheduler(Cluster.homogeneous(2), "easy", jobs=jobs, time_min=[0, 0, 300])
    s.submit(jobs)
    d = s.schedule(0)
    # 1 starts; 2 (both nodes) is reserved at 600; 3 fits before it only with a
    # limit cut to the 600 s left, whole minutes, at least its 300 s minimum
    assert list(d.starts) == [1, 3] and d.time_limit.tolist() == [600, 1200, 600]
    s.apply(d)
    assert s.running_jobs.planned_end.tolist() == [600, 600]


def test_refused_combinations():
    jobs = JobTable.from_arrays(job_id=[1, 2], submit_time=0, time_limit=600, runtime=60,
                                num_nodes=1)
    cluster = Cluster.homogeneous(2)
    with pytest.raises(InputError, match="jobs="):
        Scheduler(cluster, "easy", time_min=[0, 60])
    with pytest.raises(InputError, match="time_min"):
        Scheduler(cluster, "easy", jobs=jobs, time_min=[0, 700])
    with pytest.raises(UnsupportedError, match="slurm"):
        Scheduler(cluster, "conservative", jobs=jobs, time_min=[0, 60], reservations="slurm")
    assert Scheduler(cluster, "easy", jobs=jobs, time_min=[0, 0]).engine == "pool"


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@SETTINGS
@given(data=st.data())
def test_scheduler_cuts_limits_with_failures_as_the_simulator(policy, data):
    """With a lifecycle (requeue, checkpoints, --no-kill, node ranges) and node events:
    each attempt is planned anew, and runs with the limit its start gave, as
    ``simulate`` runs it (attempt for attempt; each job's last limit)."""
    if data.draw(st.booleans()):
        cluster, jobs, rows, lc = data.draw(failure_cases(policy,
                                                          shrink=data.draw(st.booleans())))
        k = data.draw(st.sampled_from([7, 60]))
        jobs, tmin = _scaled(data, jobs, k)
    else:               # a gap to backfill, and failures in it
        cluster, jobs, tmin = data.draw(gap_cases())
        k = int(np.gcd.reduce(np.concatenate([jobs.time_limit, jobs.runtime])))
        rows = data.draw(node_event_rows(cluster.num_nodes, max_events=4, max_time=40,
                                         kinds=("down", "down", "up", "drain", "resume")))
        lc = data.draw(elastic_lifecycles(len(jobs)))
    rows = [(t * k, kind, nodes) for t, kind, nodes in rows]
    lc = replace(lc, checkpoint_interval=lc.checkpoint_interval * k, delay=lc.delay * k)
    if data.draw(st.booleans()):
        lc = ranged(data.draw, jobs, lc)
    s = Scheduler(cluster, policy, jobs=jobs, lifecycle=lc, time_min=tmin)
    driven = drive(s, jobs, lc, rows)
    r = simulate(cluster, jobs, policy, reservations="nodes", lifecycle=lc, time_min=tmin,
                 events=NodeEvents.from_rows(rows, cluster.num_nodes))
    _check(policy, driven.attempts, driven.held, r, s, jobs)
    assert driven.attempts == simulated(r)
    t, ids = r.attempts, r.workload.job_id
    limit = r.workload.time_limit[t["row"]] if t["limit"] is None else t["limit"]
    last = {}
    for q in range(len(t["row"])):
        if t["start"][q] >= 0:
            last[int(ids[t["row"][q]])] = int(limit[q])
    assert {j: v[2] for j, v in driven.starts.items()} == last
    cut = sum(1 for j, v in driven.starts.items() if v[2] < jobs.time_limit[ids == j][0])
    event(f"cut limits: {min(cut, 2)}")
