"""Preemption with power saving in the embeddable Scheduler: driven at the simulator's
instants, it boots, starts and preempts what ``simulate(..., preemption=...,
power=...)`` does, attempt for attempt (a victim stopped while CONFIGURING never ran),
with the same power-ups; docs/lifecycle.md's example (a victim preempted while its
nodes boot); what it refuses."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fastsched import Cluster, JobTable, NodeEvents, PowerSaving, Scheduler, simulate
from fastsched.model.cluster import Partition
from fastsched.model.lifecycle import Lifecycle
from fastsched.model.preemption import OFF, REQUEUE, Preemption
from fastsched.tools.testing import power_models
from scheddrive import drive_or_discard, simulated
from test_scheduler_preempt import preempt_cases
from test_scheduler_preempt_requeue import failing_preempt_cases


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_scheduler_preempts_with_power_saving_as_the_simulator(policy, data):
    """GraceTime and PreemptExemptTime drawn; cases that never end are discarded
    (scheddrive.drive_or_discard)."""
    cluster, jobs, pre, lc = data.draw(preempt_cases())
    # every class preempts those ranked below (preemptions are frequent), no mode OFF
    rank = np.array(data.draw(st.permutations(range(len(pre.mode)))))
    pre = replace(pre, may=rank[:, None] > rank[None, :],
                  mode=np.where(pre.mode == OFF, REQUEUE, pre.mode))
    pm = data.draw(power_models(cluster))
    s = Scheduler(cluster, policy, jobs=jobs, preemption=pre, lifecycle=lc, power=pm)
    got = drive_or_discard(s, jobs, lc).attempts
    r = simulate(cluster, jobs, policy, preemption=pre, lifecycle=lc, power=pm)
    assert got == simulated(r)
    assert s.start_costs.power.power_ups == r.summary["power"]["power_ups"]
    configuring = sum(1 for a in got if a[4] and a[1] == a[2])
    event(f"preempted attempts: {min(sum(a[4] for a in got), 3)}, "
          f"stopped CONFIGURING: {min(configuring, 2)}")


def _cloud_tiers(second: int = 100):
    """docs/lifecycle.md, "Preemption with power saving": two CLOUD nodes, partitions
    scavenger (tier 1) and high (tier 10) on both; job 1 (scavenger, 2 nodes) at 0, jobs
    2 and 3 (high, 1 node) at ``second`` and 1000."""
    nodes = np.arange(2)
    parts = [Partition("scavenger", nodes, priority_tier=1),
             Partition("high", nodes, priority_tier=10)]
    cluster = Cluster(["gpu01", "gpu02"], [4, 4], [0, 0], [0, 0], partitions=parts)
    jobs = JobTable.from_arrays(job_id=[1, 2, 3], submit_time=[0, second, 1000],
                                time_limit=3600, runtime=[3000, 1800, 1800],
                                num_nodes=[2, 1, 1], cpus_per_node=4, partition=[0, 1, 1])
    pm = PowerSaving(suspend_time=300, boot=300, resume_timeout=600, resume_rate=0,
                     cloud_nodes=("gpu01", "gpu02"))
    return cluster, jobs, Preemption.partition_prio(cluster, REQUEUE), pm


def test_a_victim_preempted_while_its_nodes_boot():
    cluster, jobs, pre, pm = _cloud_tiers()
    lc = Lifecycle.of(3, delay=1, checkpoint_interval=60)    # (nothing to save: never ran)
    s = Scheduler(cluster, "easy", jobs=jobs, preemption=pre, lifecycle=lc, power=pm)
    s.submit(jobs.take(np.array([0])))
    d = s.schedule(0)
    assert d.job_state == ["CONFIGURING"] and d.configure_time.tolist() == [300]
    s.apply(d)
    s.submit(jobs.take(np.array([1])))
    d = s.schedule(100)                  # job 1 CONFIGURING: Slurm's start is 0
    assert d.preempt.job_id == 2 and d.preempt.victims.tolist() == [1]
    # planned with job 1's nodes counted as free (Preemption.backfill), not after its
    # end at 3900: a CONFIGURING job is a candidate too
    assert s.expected_start_times(100).expected_start.tolist() == [100]
    s.apply(d)
    assert s.running == [] and s.start_costs.power.states(100).tolist() == \
        ["POWERING_UP", "POWERING_UP"]   # its nodes' boots go on
    d = s.schedule(100)
    assert list(d.starts) == [2] and d.nodes.tolist() == [0]
    assert d.configure_time.tolist() == [200]      # it waits for gpu01's boot
    want = [(1, 100, 100, [0, 1], True), (1, 3400, 6400, [0, 1], False),
            (2, 300, 2100, [0], False), (3, 1300, 3100, [1], False)]
    got = drive_or_discard(Scheduler(cluster, "easy", jobs=jobs, preemption=pre,
                                     lifecycle=lc, power=pm), jobs, lc).attempts
    r = simulate(cluster, jobs, "easy", preemption=pre, lifecycle=lc, power=pm)
    assert got == simulated(r) == want
    assert r.verify().ok


@pytest.mark.parametrize("grace,want", [
    # the grace ends at 200, before the nodes are ready (300): job 1 stops then while
    # CONFIGURING (it never ran); job 2 waits for gpu01's boot
    (100, [(1, 200, 200, [0, 1], True), (1, 3400, 6400, [0, 1], False),
           (2, 300, 2100, [0], False), (3, 1300, 3100, [1], False)]),
    # the grace would end at 700, after the nodes are ready (300): job_config_fini then
    # resets job 1's end to 300 + 3600, undoing it; job 1 runs to its own end (3300)
    # and job 2, waiting for it, starts then, job 3 beside it
    (600, [(1, 300, 3300, [0, 1], False), (2, 3300, 5100, [0], False),
           (3, 3300, 5100, [1], False)])])
def test_grace_time_of_a_victim_while_its_nodes_boot(grace, want):
    """Job 2 (high tier) preempts job 1 (scavenger, GraceTime ``grace``) at 100 while its
    nodes boot (allocated at 0, ready at 300): preempt.c ``_job_check_grace_internal``
    cuts its end time to 100 + ``grace``; a grace end before the ready time stops it
    there, a later one is undone by job_mgr.c ``job_config_fini``. The Scheduler driven
    at the simulator's instants and ``simulate`` give the attempts ``want``; ``verify``
    passes. (Stopped at its grace end whatever its ready time, job 1 would end
    PREEMPTED at 700 in the second case and job 2 start then.)"""
    cluster, jobs, pre, pm = _cloud_tiers()
    pre = replace(pre, grace=np.array([grace, 0]))
    lc = Lifecycle.of(3, delay=1, checkpoint_interval=60)
    got = drive_or_discard(Scheduler(cluster, "easy", jobs=jobs, preemption=pre,
                                     lifecycle=lc, power=pm), jobs, lc).attempts
    r = simulate(cluster, jobs, "easy", preemption=pre, lifecycle=lc, power=pm)
    assert got == simulated(r) == want
    assert r.verify().ok


@pytest.mark.parametrize("submit,want", [
    # at 100 job 1 is CONFIGURING, its Slurm start 0: exempt until 200, stopped then
    # while its nodes boot (never ran); job 2 waits for gpu01's boot (300)
    (100, [(1, 200, 200, [0, 1], True), (1, 3400, 6400, [0, 1], False),
           (2, 300, 2100, [0], False), (3, 1300, 3100, [1], False)]),
    # at 350 job 1 runs, its start reset to 300: exempt until 500; it kept its
    # checkpoint at 180 s of run (60 s apart): 2820 s left
    (350, [(1, 300, 500, [0, 1], True), (1, 3400, 6220, [0, 1], False),
           (2, 500, 2300, [0], False), (3, 1300, 3100, [1], False)])])
def test_exempt_time_counts_from_slurms_start_time(submit, want):
    """PreemptExemptTime 200 s: a victim CONFIGURING is exempt until its allocation plus
    200 (acct_policy.c ``acct_policy_get_preemptable_time`` reads ``start_time``), one
    whose nodes are ready until its reset start plus 200 (job_mgr.c
    ``job_config_fini``). Job 2 (high tier) arrives at ``submit``; the Scheduler driven
    at the simulator's instants and ``simulate`` give the attempts ``want``, and
    ``verify`` passes, and catches the preemption under a PreemptExemptTime of 201 s.
    (Counted from the allocation always, job 2 would preempt at 350 in the second case;
    from the ready time always, at 500 in the first.)"""
    from fastsched.verify.lifecycle import Attempts, verify_attempts
    cluster, jobs, pre, pm = _cloud_tiers(submit)
    pre = replace(pre, exempt=np.array([200, 200]))
    lc = Lifecycle.of(3, delay=1, checkpoint_interval=60)
    got = drive_or_discard(Scheduler(cluster, "easy", jobs=jobs, preemption=pre,
                                     lifecycle=lc, power=pm), jobs, lc).attempts
    r = simulate(cluster, jobs, "easy", preemption=pre, lifecycle=lc, power=pm)
    assert got == simulated(r) == want
    assert r.verify().ok
    t = r.attempts
    a = Attempts(t["row"], t["attempt"], t["start"], t["end"], t["killed"],
                 t["alloc_offsets"], t["alloc_nodes"], preempted=t["preempted"],
                 partition=t["partition"], configure=t["configure"])
    longer = replace(pre, exempt=np.array([201, 201]))
    assert "preempt_exempt" in verify_attempts(cluster, jobs, a, None, lc, preemption=longer,
                                               power=pm).kinds()


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_scheduler_preempts_with_power_and_node_events_as_the_simulator(policy, data):
    """Node events too (down, up, drain, resume): a drain kills the jobs of a node
    booting for them, victims (in their GraceTime or not) or not, as ``simulate``
    does."""
    cluster, jobs, pre, lc, rows = data.draw(failing_preempt_cases(policy))
    pm = data.draw(power_models(cluster))
    s = Scheduler(cluster, policy, jobs=jobs, preemption=pre, lifecycle=lc, power=pm)
    got = drive_or_discard(s, jobs, lc, rows).attempts
    r = simulate(cluster, jobs, policy, preemption=pre, lifecycle=lc, power=pm,
                 events=NodeEvents.from_rows(rows, cluster.num_nodes))
    assert got == simulated(r)
    assert s.start_costs.power.power_ups == r.summary["power"]["power_ups"]
    event(f"preempted attempts: {min(int(r.attempts['preempted'].sum()), 2)}, "
          f"killed: {min(len(s.attempts), 2)}")
