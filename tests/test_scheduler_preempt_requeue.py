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
from fastsched.model.lifecycle import Lifecycle, saved_progress
from fastsched.sim.decisions import START
from fastsched.tools.testing import node_event_rows
from test_scheduler_preempt import Endless, _two_tiers, preempt_cases
from test_scheduler_preemptplan import shared_preempt_cases
from test_scheduler_requeue import aimed, simulated


def drive(s, jobs, lc, rows):
    """Drive Scheduler ``s`` as the simulator's loop runs an instant: complete what ends,
    apply the node events (``down``: fail_nodes), record the victims whose GraceTime
    ends (those still running the attempt that was preempted), submit what arrives,
    then pass and apply until a pass stops no victim at once. Returns (every attempt as
    (job id, start, end, nodes, killed or preempted), sorted; whether a job waited for
    down nodes)."""
    ids = [int(j) for j in jobs.job_id]
    row = {j: k for k, j in enumerate(ids)}
    left = {j: int(r) for j, r in zip(ids, jobs.runtime)}
    limit = {j: int(t) for j, t in zip(ids, jobs.time_limit)}
    submits = sorted(set(jobs.submit_time.tolist()))
    stream = sorted(rows, key=lambda e: e[0])
    ends, running, stops, done, held = {}, {}, {}, [], False

    def stop(j, t, requeue):
        start, nodes = running.pop(j)
        done.append((j, start, t, nodes, True))
        del ends[j]
        if requeue:
            left[j] -= int(saved_progress(t - start, lc.checkpoint_interval[row[j]]))

    for _ in range(100 * len(ids) + 100 + len(stream)):
        times = submits[:1] + list(ends.values()) + [t for t, _, _ in stream[:1]] + \
            [t for t, _, _ in stops.values()] + \
            [t for t in (s.preempt_time, s.requeue_time) if t >= 0]
        if not times:
            break
        now = min(times)
        ending = [j for j, e in ends.items() if e == now]
        if ending:
            s.complete(ending, now)
            for j in ending:
                start, nodes = running.pop(j)
                done.append((j, start, now, nodes, False))
                del ends[j]
        while stream and stream[0][0] == now:
            _, kind, nodes = stream.pop(0)
            if kind != "down":
                (s.drain_nodes if kind == "drain" else s.resume_nodes)(nodes)
                continue
            before = len(s.attempts)
            killed = s.fail_nodes(nodes, now).tolist()
            new = s.attempts.iloc[before:]
            assert sorted(new.job_id.tolist()) == sorted(killed)
            for a in new.itertuples():
                start, _ = running[a.job_id]
                assert (a.start_time, a.end_time, a.state) == (start, now, "NODE_FAIL")
                assert a.saved == saved_progress(now - start,
                                                 lc.checkpoint_interval[row[a.job_id]])
                assert a.remaining == left[a.job_id] - a.saved
                stop(a.job_id, now, a.requeued)
        for j, (t, requeue, start) in list(stops.items()):
            if t == now:
                del stops[j]
                if j in running and running[j][0] == start:    # (that attempt runs on)
                    stop(j, now, requeue)
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
            p = d.preempt
            if p is None:              # nothing may preempt: a Scheduler without it
                break
            at_once = False
            for v, mode, t in zip(p.victims.tolist(), p.mode, p.stop.tolist()):
                if t == now:
                    stop(v, now, mode == "REQUEUE")
                    at_once = True
                else:
                    stops[v] = (t, mode == "REQUEUE", running[v][0])
            if not at_once:
                break
    else:
        raise Endless(f"the drive does not end: {len(done)} attempts")
    return sorted(done), held


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
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_scheduler_preempts_and_requeues_as_the_simulator(policy, data):
    cluster, jobs, pre, lc, rows = data.draw(failing_preempt_cases(policy))
    s = Scheduler(cluster, policy, jobs=jobs, preemption=pre, lifecycle=lc)
    try:
        got, held = drive(s, jobs, lc, rows)
    except Endless:
        event("discarded: preemption ping-pong")
        reject()
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


def test_preemption_with_no_kill_jobs_is_refused():
    cluster, jobs, pre = _two_tiers()
    lc = Lifecycle.of(2, no_kill=np.array([True, False]))
    with pytest.raises(UnsupportedError, match="no-kill"):
        Scheduler(cluster, "easy", jobs=jobs, preemption=pre, lifecycle=lc)
