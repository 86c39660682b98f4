"""Power saving with node events in the embeddable Scheduler: driven at the simulator's
instants through drawn node events (fail_nodes, drain_nodes, resume_nodes with ``now``),
it starts, boots, kills and requeues what ``simulate(..., power=..., events=...,
lifecycle=...)`` does, attempt for attempt (a job killed while CONFIGURING never ran),
with the same power-ups; Slurm's rules on small cases (docs/lifecycle.md, "Power saving
with node events"); what it refuses, leaving the state unchanged."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fastsched import Cluster, JobTable, NodeEvents, PowerSaving, Scheduler, simulate
from fastsched.model.errors import InputError, UnsupportedError
from fastsched.model.lifecycle import Lifecycle
from fastsched.tools.testing import power_models
from scheddrive import drive
from test_scheduler_requeue import _check, failure_cases, spare_node_cases

SETTINGS = settings(max_examples=24, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _scheduler_vs_simulate(policy, case, pm):
    cluster, jobs, rows, lc = case
    lc = replace(lc, no_kill=None)          # (elastic jobs are refused with power saving)
    s = Scheduler(cluster, policy, jobs=jobs, lifecycle=lc, power=pm)
    driven = drive(s, jobs, lc, rows)
    got, held = driven.attempts, driven.held
    r = simulate(cluster, jobs, policy, reservations="nodes", lifecycle=lc, power=pm,
                 events=NodeEvents.from_rows(rows, cluster.num_nodes))
    _check(policy, got, held, r, s, jobs)
    assert s.start_costs.power.power_ups == r.summary["power"]["power_ups"]
    configuring = sum(1 for g in got if g[4] and g[1] == g[2])
    event(f"attempts killed CONFIGURING: {min(configuring, 2)}")


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@SETTINGS
@given(data=st.data())
def test_scheduler_with_power_and_node_events_as_the_simulator(policy, data):
    case = data.draw(failure_cases(policy))
    _scheduler_vs_simulate(policy, case, data.draw(power_models(case[0])))


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@SETTINGS
@given(data=st.data())
def test_scheduler_with_power_and_spare_nodes_as_the_simulator(policy, data):
    """Short SuspendTimes: nodes come back powered down or not, drains meet boots."""
    case = data.draw(spare_node_cases(policy))
    _scheduler_vs_simulate(policy, case, data.draw(power_models(case[0], max_time=8)))


# ------------------------------------------------------------------ examples

def _cloud(n=3, boot=300, **kw):
    cluster = Cluster.homogeneous(n, cpus=1, prefix="n")
    return cluster, PowerSaving(suspend_time=600, boot=boot, resume_timeout=900,
                                resume_rate=0, cloud_nodes=tuple(cluster.node_names), **kw)


def _jobs(runtime, nodes, submit=0):
    n = len(runtime)
    return JobTable.from_arrays(job_id=np.arange(1, n + 1), submit_time=submit,
                                time_limit=3600, runtime=runtime, num_nodes=nodes,
                                cpus_per_node=1, user=0)


def test_a_drain_kills_the_jobs_of_a_booting_node_which_never_ran():
    cluster, pm = _cloud()
    jobs = _jobs([100, 100], [1, 1])
    lc = Lifecycle.of(2, requeue=[True, False], delay=5)
    s = Scheduler(cluster, "easy", jobs=jobs, power=pm, lifecycle=lc)
    s.submit(jobs)
    d = s.schedule(0)
    assert d.job_state == ["CONFIGURING", "CONFIGURING"] and d.configure_time.tolist() == [300, 300]
    s.apply(d)
    # job 1's node drained while it boots: job 1 is killed (requeued), job 2 runs on
    assert s.drain_nodes([0], now=100).tolist() == [1]
    a = s.attempts
    assert a[["job_id", "start_time", "end_time", "state", "requeued", "begin_time",
              "saved"]].values.tolist() == [[1, 100, 100, "NODE_FAIL", True, 105, 0]]
    # its node boots on: idle from its boot's end (300), powered down after 900
    assert s.start_costs.power.states(299).tolist() == ["POWERING_UP", "POWERING_UP",
                                                        "POWERED_DOWN"]
    assert s.start_costs.power.states(900).tolist()[0] == ""
    assert s.start_costs.power.states(901).tolist()[0] == "POWERING_DOWN"
    # the requeued job waits for its node's boot on n3 (a new power-up)
    d = s.schedule(105)
    assert d.job_id.tolist() == [1] and d.configure_time.tolist() == [300]
    assert d.nodes.tolist() == [2]
    # a drain of a node whose boot is done kills nothing
    s.apply(d)
    assert s.drain_nodes([1], now=400).tolist() == []


def test_a_resume_restarts_the_idle_clock_unless_powered_down():
    cluster = Cluster.homogeneous(2, cpus=1, prefix="n")
    pm = PowerSaving(suspend_time=100, boot=60, resume_timeout=600, resume_rate=0,
                     suspend_timeout=10)
    jobs = _jobs([10, 10], [1, 1], submit=[0, 400])

    def run(back: int):
        s = Scheduler(cluster, "easy", jobs=jobs.take(np.array([0])), power=pm)
        s.submit(jobs.take(np.array([0])))
        s.apply(s.schedule(0))
        s.complete(1, 10)
        s.drain_nodes([0, 1], now=50)
        s.resume_nodes([0, 1], now=back)
        return s.start_costs.power.states(back + 100).tolist()

    # back at 90 (idle since 10 and 0, not yet powered down): idle again from 90, so
    # still on at 190 (idle exactly SuspendTime; from 10 they would be down)
    assert run(90) == ["", ""]
    # back at 105: n2 (idle since 0) is powering down and stays so; n1 restarts
    assert run(105) == ["", "POWERED_DOWN"]


def test_fail_nodes_without_a_lifecycle_ends_a_configuring_job_at_the_kill():
    cluster, pm = _cloud(2)
    jobs = _jobs([100], [2])
    s = Scheduler(cluster, "easy", jobs=jobs, power=pm)
    s.submit(jobs)
    s.apply(s.schedule(0))
    assert s.fail_nodes([1], 50).tolist() == [1]
    assert s._catalog.start[0] == 50 and s._catalog.end[0] == 50
    assert s.start_costs.power.busy.tolist() == [0, 0]


def test_from_state_takes_the_running_jobs_nodes_as_on():
    cluster, pm = _cloud(2)
    running, _ = simulate(cluster, _jobs([1000], [1]), "easy").state_at(10)
    pending = JobTable.from_arrays(job_id=[7], submit_time=10, time_limit=3600, runtime=50,
                                   num_nodes=2, cpus_per_node=1, user=0)
    s = Scheduler.from_state(cluster, running, pending, "easy", power=pm)
    # n1 runs job 1 (on), n2 is a CLOUD node never used: job 7 waits for job 1's end,
    # then for n2's boot alone
    assert s.start_costs.power.states(10).tolist() == ["", "POWERED_DOWN"]
    assert s.start_costs.power.busy.tolist() == [1, 0]
    assert s.schedule(10).configure_time.tolist() == [0]       # (not started)
    s.complete(1, 1000)
    d = s.schedule(1000)
    assert d.job_state == ["CONFIGURING"] and d.configure_time.tolist() == [300]


def test_what_is_refused_by_name_leaving_the_state_unchanged():
    cluster, pm = _cloud(2)
    jobs = _jobs([100, 100], [1, 1])
    s = Scheduler(cluster, "easy", jobs=jobs, power=pm)
    s.submit(jobs)
    s.apply(s.schedule(0))
    before = (s.available.tolist(), s.running, s.start_costs.power.busy.tolist(),
              s.start_costs.power.idle.tolist())
    for call in (lambda: s.drain_nodes([0]), lambda: s.resume_nodes([0])):
        with pytest.raises(InputError, match="with power saving needs now="):
            call()
    down = Scheduler(cluster, "easy", jobs=jobs, power=replace(
        pm, boot=1000, suspend_time=None, cloud_nodes=("n002",)))     # n002 never up
    for call in (lambda: down.fail_nodes([0], 5), lambda: down.drain_nodes([0], 5),
                 lambda: down.resume_nodes([0], 5)):
        with pytest.raises(UnsupportedError, match="over ResumeTimeout"):
            call()
    elastic = Scheduler(cluster, "easy", jobs=jobs, power=pm,
                        lifecycle=Lifecycle.of(2, no_kill=[True, False]))
    with pytest.raises(UnsupportedError, match="elastic"):
        elastic.fail_nodes([0], 5)
    assert (s.available.tolist(), s.running, s.start_costs.power.busy.tolist(),
            s.start_costs.power.idle.tolist()) == before
