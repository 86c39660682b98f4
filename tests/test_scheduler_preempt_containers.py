"""Preemption with container images in the embeddable Scheduler: driven at the
simulator's instants, it starts, pulls and preempts what ``simulate(...,
preemption=..., containers=...)`` does, attempt for attempt (a victim's nodes keep their
images; a requeued victim pulls again only where its image is gone; its checkpoints
count from the end of its pull), with power saving too; a hand-checked example; what
it refuses, as ``simulate`` refuses it."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fastsched import Cluster, Containers, JobTable, PowerSaving, Scheduler, simulate
from fastsched.model.cluster import Partition
from fastsched.model.errors import UnsupportedError
from fastsched.model.images import ImagePull
from fastsched.model.lifecycle import Lifecycle
from fastsched.model.preemption import OFF, REQUEUE, Preemption
from fastsched.model.reservations import Reservation, Reservations
from fastsched.model.resvjobs import JobReservations
from fastsched.tools.testing import containers, power_models
from scheddrive import drive_or_discard, simulated
from test_scheduler_preempt import preempt_cases


def simulated_pulls(r):
    """``r``'s pulls as :func:`scheddrive.drive` lists them: (job id, the job's starts
    before this one, pull seconds) per attempt that started."""
    t, ids = r.attempts, r.workload.job_id
    started = [k for k in range(len(t["row"])) if t["start"][k] >= 0]
    out, seen = [], {}
    for k in sorted(started, key=lambda k: (int(t["row"][k]), int(t["attempt"][k]))):
        j = int(ids[t["row"][k]])
        out.append((j, seen.get(j, 0), int(t["pull"][k])))
        seen[j] = seen.get(j, 0) + 1
    return sorted(out)


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_scheduler_preempts_with_containers_as_the_simulator(policy, data):
    """partition_prio and qos, REQUEUE and CANCEL, GraceTime and PreemptExemptTime,
    checkpoints, power saving in a quarter of the cases; cases that never end are
    discarded (scheddrive.drive_or_discard)."""
    cluster, jobs, pre, lc = data.draw(preempt_cases())
    if data.draw(st.booleans()):       # often: every partition on every node (crowded)
        every = np.arange(cluster.num_nodes, dtype=np.int64)
        cluster = Cluster(cluster.node_names, cluster.cpus, cluster.gpus, cluster.mem_mb,
                          partitions=[replace(p, nodes=every) for p in cluster.partitions])
    # every class preempts those ranked below (preemptions are frequent), no mode OFF
    rank = np.array(data.draw(st.permutations(range(len(pre.mode)))))
    pre = replace(pre, may=rank[:, None] > rank[None, :],
                  mode=np.where(pre.mode == OFF, REQUEUE, pre.mode))
    if data.draw(st.booleans()):       # often: every job may be requeued (restarts pull)
        lc = replace(lc, requeue=np.ones(len(jobs), dtype=bool))
    c = data.draw(containers(len(jobs), max_cache=2))
    pm = None
    if data.draw(st.integers(0, 3)) == 0:
        pm = data.draw(power_models(cluster))
    s = Scheduler(cluster, policy, jobs=jobs, preemption=pre, lifecycle=lc, containers=c,
                  power=pm)
    got = drive_or_discard(s, jobs, lc)
    r = simulate(cluster, jobs, policy, preemption=pre, lifecycle=lc, containers=c,
                 power=pm)
    assert got.attempts == simulated(r)
    assert got.pulls == simulated_pulls(r)
    assert s.start_costs.images.node_pulls == r.summary["images"]["images_pulled"]
    if pm is not None:
        assert s.start_costs.power.power_ups == r.summary["power"]["power_ups"]
    t = r.attempts
    preempted = np.asarray(t["preempted"], dtype=bool)
    in_grace = preempted & (t["end"] > t["start"] + t["pull"]) & (t["pull"] > 0)
    restarts = [p for j, k, p in got.pulls if k > 0]
    event(f"preempted attempts: {min(int(preempted.sum()), 3)}, restarts: "
          f"{min(len(restarts), 2)}, of which pulled: {min(sum(p > 0 for p in restarts), 2)}")
    event(f"a victim stopped after its pull: {bool(in_grace.any())}, power: {pm is not None}")


def _tiers(grace: int, submit: int, capacity: int = 1):
    """Two nodes, partitions low (tier 1, ``grace``) and high (tier 10) on both; job 1
    (low, 2 nodes, image a: a 20 s pull, runs 100 s) at 0, job 2 (high, 1 node, image b:
    15 s, runs 40 s) at ``submit``; checkpoints every 10 s, requeued after 5 s."""
    nodes = np.arange(2)
    parts = [Partition("low", nodes, priority_tier=1, grace_time=grace),
             Partition("high", nodes, priority_tier=10)]
    cluster = Cluster(["n1", "n2"], [4, 4], [0, 0], [0, 0], partitions=parts)
    jobs = JobTable.from_arrays(job_id=[1, 2], submit_time=[0, submit], time_limit=[200, 100],
                                runtime=[100, 40], num_nodes=[2, 1], cpus_per_node=4,
                                partition=[0, 1])
    c = Containers.of(["a", "b"], ImagePull(default=20, capacity=capacity,
                                            seconds={"b": 15}))
    lc = Lifecycle.of(2, delay=5, checkpoint_interval=10)
    return cluster, jobs, Preemption.partition_prio(cluster, REQUEUE), c, lc


def test_a_victim_in_its_grace_time_then_requeued_pulls_where_its_image_is_gone():
    """Job 1 pulls a on both nodes (0-20) and runs; job 2 preempts it at 50, GraceTime
    30: it stops at 80 having run 60 s after its pull (6 checkpoints: 40 s left). Job 2
    takes n1 at 80, whose one-image cache evicts a for b (a 15 s pull: it ends at 135).
    Requeued (begin 85), job 1 waits for n1: at 135 n2 still holds a, n1 does not, so
    it pulls again (20 s) and ends at 135 + 20 + 40 = 195."""
    cluster, jobs, pre, c, lc = _tiers(grace=30, submit=50)
    s = Scheduler(cluster, "easy", jobs=jobs, preemption=pre, lifecycle=lc, containers=c)
    s.submit(jobs.take(np.array([0])))
    d = s.schedule(0)
    assert d.pull_time.tolist() == [20] and d.end_time.tolist() == [120]
    s.apply(d)
    s.submit(jobs.take(np.array([1])))
    d = s.schedule(50)
    assert d.preempt.victims.tolist() == [1] and d.preempt.stop.tolist() == [80]
    s.apply(d)
    assert s.running_jobs.planned_end.tolist() == [80]       # held until its grace end
    want = [(1, 0, 80, [0, 1], True), (1, 135, 195, [0, 1], False),
            (2, 80, 135, [0], False)]
    got = drive_or_discard(Scheduler(cluster, "easy", jobs=jobs, preemption=pre,
                                     lifecycle=lc, containers=c), jobs, lc)
    r = simulate(cluster, jobs, "easy", preemption=pre, lifecycle=lc, containers=c)
    assert got.attempts == simulated(r) == want
    assert got.pulls == simulated_pulls(r) == [(1, 0, 20), (1, 1, 20), (2, 0, 15)]
    assert r.summary["images"]["images_pulled"] == 4     # n1 and n2, n1 (b), n1 (a)
    assert r.verify().ok


def test_a_victim_kept_its_images_and_one_stopped_in_its_pull_kept_no_work():
    """GraceTime 0, job 2 at 10: job 1 stops in its pull (nothing saved: 100 s left) and
    job 2 takes n1 at once (a 15 s pull, it ends at 65). With two images a node, n1
    keeps a beside b: the requeued job 1 pulls nothing at 65 and ends at 165; with
    one, it pulls again and ends at 185. n2 keeps a either way."""
    for capacity, end, pull in ((2, 165, 0), (1, 185, 20)):
        cluster, jobs, pre, c, lc = _tiers(grace=0, submit=10, capacity=capacity)
        s = Scheduler(cluster, "easy", jobs=jobs, preemption=pre, lifecycle=lc,
                      containers=c)
        got = drive_or_discard(s, jobs, lc)
        r = simulate(cluster, jobs, "easy", preemption=pre, lifecycle=lc, containers=c)
        want = [(1, 0, 10, [0, 1], True), (1, 65, end, [0, 1], False),
                (2, 10, 65, [0], False)]
        assert got.attempts == simulated(r) == want
        assert got.pulls == simulated_pulls(r) == [(1, 0, 20), (1, 1, pull), (2, 0, 15)]
        assert s.start_costs.images.cached(0) == (["a", "b"] if capacity == 2 else ["a"])
        assert s.start_costs.images.cached(1) == ["a"]


def test_what_simulate_refuses_with_containers_and_preemption_is_refused_alike():
    """Regrowth, with the same reason, and jobs running in a reservation, both naming
    preemption (the Scheduler refuses containers with them too; simulate runs them);
    the state is not built. (Power saving with a GraceTime runs in both, alike.)"""
    cluster, jobs, pre, c, lc = _tiers(grace=30, submit=50)
    pm = PowerSaving(suspend_time=300, boot=60, resume_timeout=600)
    got = drive_or_discard(Scheduler(cluster, "easy", jobs=jobs, preemption=pre, lifecycle=lc,
                                     containers=c, power=pm), jobs, lc)
    assert got.attempts == simulated(simulate(cluster, jobs, "easy", preemption=pre,
                                              lifecycle=lc, containers=c, power=pm))
    regrow = replace(lc, no_kill=np.ones(2, dtype=bool), regrow=True)
    members = JobReservations.of(Reservations((Reservation("r", 50, 80, (0, 1)),), 2),
                                 ["r", ""])
    for options, why in (({"lifecycle": regrow}, "regrow"),
                         ({"advance_reservations": members}, "with (containers, )?preemption")):
        messages = []
        for run in (lambda: Scheduler(cluster, "easy", jobs=jobs, preemption=pre,
                                      containers=c, **options),
                    lambda: simulate(cluster, jobs, "easy", preemption=pre, containers=c,
                                     **options)):
            with pytest.raises(UnsupportedError, match=why) as e:
                run()
            messages.append(str(e.value))
        assert messages[0] == messages[1] or "advance_reservations" in options
