"""Preemption and node failures together in the embeddable Scheduler: with a
``lifecycle``, the jobs on failed nodes are requeued at ``fail_nodes`` as
``simulate(events=..., lifecycle=..., preemption=...)`` requeues them, one job's
attempts counted across failures and preemptions. Driven at the simulator's instants
through drawn node-event streams, it starts, preempts, kills and requeues what the
simulator does (every attempt); what it refuses."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, reject, settings
from hypothesis import strategies as st

from fastsched import NodeEvents, Scheduler, simulate
from fastsched.model.errors import UnsupportedError
from fastsched.model.lifecycle import Lifecycle
from fastsched.tools.testing import node_event_rows
from scheddrive import drive_or_discard, simulated
from test_scheduler_preempt import _two_tiers, preempt_cases
from test_scheduler_preemptplan import shared_preempt_cases
from test_scheduler_requeue import aimed


@st.composite
def failing_preempt_cases(draw, policy):
    """:func:`preempt_cases` (or the shared-node ones) with a drawn node-event stream,
    its first failure often on a node a job runs on."""
    cluster, jobs, pre, lc = draw(st.one_of(preempt_cases(), shared_preempt_cases()))
    rows = draw(node_event_rows(cluster.num_nodes, max_events=6, max_time=30,
                                kinds=("down", "down", "down", "up", "drain", "resume")))
    rows = aimed(draw, cluster, jobs, policy, rows)
    return cluster, jobs, replace(pre, backfill=draw(st.booleans())), lc, rows


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_scheduler_preempts_and_requeues_as_the_simulator(policy, data):
    cluster, jobs, pre, lc, rows = data.draw(failing_preempt_cases(policy))
    s = Scheduler(cluster, policy, jobs=jobs, preemption=pre, lifecycle=lc)
    driven = drive_or_discard(s, jobs, lc, rows)
    got, held = driven.attempts, driven.held
    if policy == "fcfs" and held:
        # a job too few nodes are up for stops the simulator's fcfs walk but not the
        # Scheduler's (tests/test_scheduler_requeue.py): not a preemption matter
        event("discarded: fcfs with a job waiting for down nodes")
        reject()
    r = simulate(cluster, jobs, policy, preemption=pre, lifecycle=lc,
                 events=NodeEvents.from_rows(rows, cluster.num_nodes))
    assert got == simulated(r)
    a = s.attempts
    t = r.attempts
    fail = t["killed"] & ~t["preempted"] & (t["start"] >= 0)
    ids = r.workload.job_id
    assert sorted(zip(a.job_id.tolist(), a.attempt.tolist(), a.end_time.tolist())) == \
        sorted((int(ids[t["row"][k]]), int(t["attempt"][k]), int(t["end"][k]))
               for k in np.flatnonzero(fail))
    event(f"killed: {min(len(a), 2)}, preempted: "
          f"{min(int(t['preempted'].sum()), 2)}, both: "
          f"{bool(len(a)) and bool(t['preempted'].any())}")


def test_a_victim_in_its_grace_time_killed_by_a_failure():
    """Job 1 (low tier, 2 nodes) is preempted at 10 by job 2 with 30 s of GraceTime;
    node 0 fails at 20: job 1 ends NODE_FAIL and is requeued (attempt 1, begin 25),
    job 2 starts on node 1 at 20 (it needs one node), and the grace end at 40 stops
    nothing (its attempt is over)."""
    cluster, jobs, pre = _two_tiers(grace=30)
    lc = Lifecycle.of(2, delay=5)
    s = Scheduler(cluster, "easy", jobs=jobs, preemption=pre, lifecycle=lc)
    s.submit(jobs.take(np.array([0])))
    s.apply(s.schedule(0))
    s.submit(jobs.take(np.array([1])))
    d = s.schedule(10)
    s.apply(d)
    assert d.preempt.victims.tolist() == [1] and s.preempt_time == 40
    assert s.fail_nodes([0], 20).tolist() == [1]
    a = s.attempts
    assert a[["job_id", "attempt", "state", "requeued", "begin_time"]].values.tolist() == \
        [[1, 0, "NODE_FAIL", True, 25]]
    d = s.schedule(20)
    assert list(d.starts) == [2]
    s.apply(d)
    assert s.requeue_time == 25
    d = s.schedule(25)             # job 1 is back, waiting: node 0 is down
    s.apply(d)
    assert [int(j) for j in s.pending.job_id] == [1]
    s.schedule(40)                 # the old grace end stops no one
    assert s.running == [2]


def test_preemption_with_regrowing_no_kill_jobs_is_refused():
    """--no-kill jobs that only shrink run with preemption
    (tests/test_scheduler_preempt_elastic.py); regrowing ones are refused."""
    cluster, jobs, pre = _two_tiers()
    lc = Lifecycle.of(2, no_kill=np.array([True, False]), regrow=True)
    with pytest.raises(UnsupportedError, match="no-kill.*regrow.*preemption"):
        Scheduler(cluster, "easy", jobs=jobs, preemption=pre, lifecycle=lc)
