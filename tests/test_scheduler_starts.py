"""Container images and power saving in the embeddable Scheduler: driven at the
simulator's instants, it starts what ``simulate(..., containers=..., power=...)``
starts, with the same pulls, boots (CONFIGURING), real starts and ends; drains leave
the image caches as the simulator does; what it refuses, leaving the state unchanged."""
import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fastsched import (Cluster, Containers, ImagePull, JobTable, PowerSaving, Scheduler,
                       simulate)
from fastsched.model.errors import InputError, UnsupportedError
from fastsched.model.events import NodeEvents
from fastsched.model.preemption import Preemption
from fastsched.sim.decisions import RESERVED, START
from fastsched.tools.testing import containers, power_models
from test_nodeplan import node_clusters, node_workloads
from test_scheduler_drain import drains

SETTINGS = settings(max_examples=34, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def drive(s, jobs, events=()):
    """Drive Scheduler ``s`` through ``jobs`` with the simulator's event order (at an
    instant: node events, completions, arrivals, then passes while jobs end at it);
    each start ends at its decision's ``end_time``. Returns per job (caller's order)
    (real start, end, nodes, pull, configure), None if it never started."""
    got, ends = {}, {}
    submits = set(jobs.submit_time.tolist())
    visits = {int(t) for t, _, _ in events}
    while submits or ends or (visits and len(got) < len(jobs)):
        now = min(submits | set(ends.values()) | visits)
        visits.discard(now)
        for t, kind, nodes in events:
            if t == now:
                (s.drain_nodes if kind == "drain" else s.resume_nodes)(nodes, now)
        first = True
        while True:
            done = [j for j, e in ends.items() if e == now]
            if done:
                s.complete(done, now)
            for j in done:
                del ends[j]
            if first and now in submits:
                submits.discard(now)
                s.submit(jobs.take(jobs.submit_time == now))
            first = False
            d = s.schedule(now)
            s.apply(d)
            for i in np.flatnonzero(d.outcome == START).tolist():
                j = int(d.job_id[i])
                got[j] = (now + int(d.configure_time[i]), int(d.end_time[i]),
                          sorted(d.nodes_of(i).tolist()), int(d.pull_time[i]),
                          int(d.configure_time[i]))
                ends[j] = int(d.end_time[i])
            if now not in ends.values():
                break
    return [got.get(int(j)) for j in jobs.job_id]


def simulated(r, *, pulls: bool, boots: bool):
    f, sch = r.jobs, r.schedule
    out = []
    for i in range(len(f)):
        if sch.start_time[i] < 0:
            out.append(None)
            continue
        out.append((int(sch.start_time[i]), int(f.end_time[i]),
                    sorted(sch.nodes_of(i).tolist()),
                    int(f.pull_time[i]) if pulls else 0,
                    int(f.configure_time[i]) if boots else 0))
    return out


@st.composite
def cases(draw, max_jobs=12):
    cluster, _ = draw(node_clusters())
    jobs = draw(node_workloads(cluster, np.ones(cluster.num_nodes, dtype=bool),
                               max_jobs=max_jobs))
    return cluster, jobs


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@SETTINGS
@given(case=cases(), data=st.data())
def test_scheduler_pulls_images_as_the_simulator(policy, case, data):
    cluster, jobs = case
    c = data.draw(containers(len(jobs)))
    s = Scheduler(cluster, policy, jobs=jobs, containers=c)
    got = drive(s, jobs)
    r = simulate(cluster, jobs, policy, containers=c)
    assert got == simulated(r, pulls=True, boots=False)
    assert s.start_costs.images.node_pulls == r.summary["images"]["images_pulled"]
    event(f"starts that pulled: {min(sum(1 for g in got if g and g[3] > 0), 3)}")


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@SETTINGS
@given(case=cases(), data=st.data())
def test_drained_nodes_keep_their_images_as_in_the_simulator(policy, case, data):
    """fcfs is left out as in tests/test_scheduler_drain.py: a job too few nodes are up
    for stops the simulator's fcfs walk but waits aside in the Scheduler."""
    cluster, jobs = case
    c = data.draw(containers(len(jobs)))
    horizon = int(jobs.submit_time.max() + jobs.time_limit.max())
    events = data.draw(drains(cluster.num_nodes, horizon))
    s = Scheduler(cluster, policy, jobs=jobs, containers=c)
    got = drive(s, jobs, events)
    r = simulate(cluster, jobs, policy, containers=c,
                 events=NodeEvents.from_rows(events, cluster.num_nodes))
    assert got == simulated(r, pulls=True, boots=False)
    event(f"drains: {min(len(events), 2)}")


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@SETTINGS
@given(case=cases(), data=st.data())
def test_scheduler_boots_nodes_as_the_simulator(policy, case, data):
    cluster, jobs = case
    pm = data.draw(power_models(cluster))
    with_images = data.draw(st.booleans())
    c = data.draw(containers(len(jobs))) if with_images else None
    # a priority order: the pass's starts take resume tokens and cache slots in it
    priority = data.draw(st.none() | st.lists(st.integers(0, 3), min_size=len(jobs),
                                              max_size=len(jobs)).map(np.array))
    s = Scheduler(cluster, policy, jobs=jobs, power=pm, containers=c, priority=priority)
    got = drive(s, jobs)
    r = simulate(cluster, jobs, policy, power=pm, containers=c, reservations="nodes",
                 priority=priority)
    assert got == simulated(r, pulls=with_images, boots=True)
    assert s.start_costs.power.power_ups == r.summary["power"]["power_ups"]
    event(f"jobs CONFIGURING: {min(sum(1 for g in got if g and g[4] > 0), 3)}")


# ------------------------------------------------------------------ examples

def _jobs(runtime, nodes, limit=1000, submit=0, gpus=0):
    n = len(runtime)
    return JobTable.from_arrays(job_id=np.arange(1, n + 1), submit_time=submit,
                                time_limit=limit, runtime=runtime, num_nodes=nodes,
                                gpus_per_node=gpus, cpus_per_node=1, user=0)


def test_a_start_carries_its_pull_and_the_cache_is_kept_at_apply():
    cluster = Cluster.homogeneous(2, cpus=1, prefix="n")
    jobs = _jobs([100, 100, 100], [1, 1, 2], submit=[0, 0, 200])
    c = Containers.of(["x", "", "x"], ImagePull(default=50, capacity=2))
    s = Scheduler(cluster, "fcfs", jobs=jobs, containers=c)
    s.submit(jobs.take(jobs.submit_time == 0))
    d = s.schedule(0)
    assert d.pull_time.tolist() == [50, 0] and d.end_time.tolist() == [150, 100]
    assert d.job_state == ["RUNNING", "RUNNING"]
    assert s.start_costs.images.cached(0) == []            # a pass changes nothing
    s.apply(d)
    assert s.start_costs.images.cached(0) == ["x"] and s.start_costs.images.cached(1) == []
    s.complete(2, 100)
    s.complete(1, 150)
    s.submit(jobs.take(jobs.submit_time == 200))
    d = s.schedule(200)                                # n2 lacks x: the job pulls
    assert d.pull_time.tolist() == [50] and d.end_time.tolist() == [350]


def test_a_start_on_powered_down_nodes_is_configuring_until_they_boot():
    cluster = Cluster.homogeneous(3, cpus=1, prefix="n")
    pm = PowerSaving(suspend_time=100, boot=60, resume_timeout=600, resume_rate=1,
                     cloud_nodes=("n002", "n003"))
    jobs = _jobs([500, 50, 10], [1, 2, 1], limit=[1000, 50, 100], submit=[0, 0, 1000])
    s = Scheduler(cluster, "easy", jobs=jobs, power=pm)
    assert s.start_costs.power.states(0).tolist() == ["", "POWERED_DOWN", "POWERED_DOWN"]
    s.submit(jobs.take(jobs.submit_time == 0))
    d = s.schedule(0)
    # job 2 bursts into the cloud: one resume token a minute, so it runs from 120
    assert d.job_state == ["RUNNING", "CONFIGURING"]
    assert d.configure_time.tolist() == [0, 120] and d.end_time.tolist() == [500, 170]
    assert d.reason == ["", ""]                  # allocated, not pending (Slurm: None)
    s.apply(d)
    assert s.running_jobs.planned_end.tolist() == [1000, 170]   # the limit from 120
    assert s.start_costs.power.states(30).tolist() == ["", "POWERING_UP", "POWERING_UP"]
    s.complete(2, 170)
    s.complete(1, 500)
    # n001 idle from 500: still up at 600 (idle exactly SuspendTime), down after
    assert s.start_costs.power.states(600).tolist()[0] == ""
    assert s.start_costs.power.states(601).tolist()[0] == "POWERING_DOWN"
    assert s.start_costs.power.states(630).tolist()[0] == "POWERED_DOWN"
    s.submit(jobs.take(jobs.submit_time == 1000))
    d = s.schedule(1000)
    assert d.configure_time.tolist() == [60] and d.job_state == ["CONFIGURING"]


def test_a_boot_over_resume_timeout_leaves_cloud_nodes_down():
    cluster = Cluster.homogeneous(2, cpus=1, prefix="n")
    pm = PowerSaving(boot=120, resume_timeout=60, cloud_nodes=("n002",))
    s = Scheduler(cluster, "easy", power=pm)
    assert s.available.tolist() == [True, False]
    s.submit(_jobs([10, 10], [1, 1]))
    d = s.schedule(0)
    # the second job waits for n001 (its limit), never for the CLOUD node
    assert d.outcome.tolist() == [START, RESERVED] and d.start_time.tolist() == [0, 1000]
    assert d.nodes.tolist() == [0, 0]


def test_what_is_refused_by_name_leaving_the_state_unchanged():
    cluster = Cluster.homogeneous(2, cpus=1, prefix="n")
    jobs = _jobs([10, 10], [1, 1])
    c = Containers.of(["a", "b"])
    with pytest.raises(UnsupportedError, match="containers with reservations='counts'"):
        Scheduler(cluster, "easy", jobs=jobs, containers=c, reservations="counts")
    with pytest.raises(UnsupportedError, match="power saving with reservations='slurm'"):
        Scheduler(cluster, "conservative", power=PowerSaving(), reservations="slurm")
    with pytest.raises(InputError, match="jobs="):
        Scheduler(cluster, "easy", containers=c)
    with pytest.raises(InputError, match="cover 2 jobs"):
        Scheduler(cluster, "easy", jobs=jobs.take(np.array([0])), containers=c)
    pre = Preemption.none()
    assert not pre.active                           # inactive preemption: accepted
    Scheduler(cluster, "easy", jobs=jobs, containers=c, preemption=pre)
    s = Scheduler(cluster, "easy", jobs=jobs, power=PowerSaving(suspend_time=10))
    s.submit(jobs)
    s.apply(s.schedule(0))
    before = (s.available.copy(), s.running, s.start_costs.power.busy.copy())
    # node events with power saving: tests/test_scheduler_power_events.py
    for call in (lambda: s.drain_nodes([1]), lambda: s.resume_nodes([1])):
        with pytest.raises(InputError, match="power saving needs now="):
            call()
        assert (s.available.tolist(), s.running, s.start_costs.power.busy.tolist()) == \
            (before[0].tolist(), before[1], before[2].tolist())


# ------------------------------------------------------------------ CLI

_BURST = """SuspendTime=600
ResumeRate=20
ResumeTimeout=900
NodeName=onprem[001-002] CPUs=64 RealMemory=512000 Gres=gpu:8
NodeName=cloud[001-004] CPUs=64 RealMemory=512000 Gres=gpu:8 State=CLOUD
PartitionName=gpu Nodes=onprem[001-002],cloud[001-004] Default=YES MaxTime=UNLIMITED
"""


def _sbatch(capsys, *args):
    from fastsched.cli import main
    code = main(["sbatch", *args])
    out, err = capsys.readouterr()
    return code, out + err


def test_cli_sbatch_test_only_shows_the_boots_and_the_pull(tmp_path, capsys):
    conf = tmp_path / "burst.conf"
    conf.write_text(_BURST)
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH -N 2\n#SBATCH --gpus-per-node=8\n#SBATCH -t 60\n"
                      "#SBATCH --container-image=ubuntu:22.04\nsrun true\n")
    code, out = _sbatch(capsys, "--test-only", "--cluster", str(conf), "--image-pull",
                        "default=2m,ubuntu:22.04=30s", "--power", "boot=5m", str(script))
    # 2 on-prem nodes: up at 0, nothing boots
    assert code == 0 and "job state at its start: RUNNING\n" in out
    assert "image pull: 30 s" in out
    # 4 nodes: 2 CLOUD nodes boot, a token every 3 s (ResumeRate=20)
    code, out = _sbatch(capsys, "--test-only", "--cluster", str(conf), "--power", "boot=5m",
                        str(script), "-N", "4")
    assert code == 0 and "CONFIGURING for 303 s" in out and "image pull" not in out
    code, out = _sbatch(capsys, "--test-only", "--power", "boot=5m", str(script))
    assert code == 2 and "--power needs the nodes: give --cluster" in out
    assert "normalised request" not in out               # refused before any output
    code, out = _sbatch(capsys, "--test-only", "--cluster", str(conf), "--power", "boot=x",
                        str(script))
    assert code == 2 and "not a duration" in out


def test_preemption_is_taken_and_advance_reservations_are_refused_by_name():
    from fastsched.model.reservations import Reservation, Reservations
    from test_scheduler_preempt import _two_tiers
    cluster, jobs, pre = _two_tiers()
    c = Containers.of(["a", ""])
    # containers and power saving take preemption (tests/test_scheduler_preempt_containers.py,
    # tests/test_scheduler_preempt_power.py)
    Scheduler(cluster, "easy", jobs=jobs, containers=c, preemption=pre)
    Scheduler(cluster, "easy", jobs=jobs, power=PowerSaving(), preemption=pre)
    resv = Reservations((Reservation("maint", 50, 80, (0,)),), 2)
    with pytest.raises(UnsupportedError, match="containers with advance reservations"):
        Scheduler(cluster, "easy", jobs=jobs, containers=c, advance_reservations=resv)
    # power saving takes advance reservations (tests/test_power.py), not member jobs
    from fastsched.model.resvjobs import JobReservations
    members = JobReservations.of(Reservations((Reservation("maint", 50, 80, (0, 1)),), 2),
                                 ["maint", ""])
    with pytest.raises(UnsupportedError, match="power saving with jobs in reservations"):
        Scheduler(cluster, "easy", jobs=jobs, power=PowerSaving(), advance_reservations=members)


def test_a_boot_wait_leaves_no_stale_breakpoint():
    """Job 7 waits for n1's boot until 2, so its holds are lengthened after its pass;
    at 1, job 1 takes n1's GPU and job 2 (no GPU) goes to n1 by best fit (it has no GPU
    free left; n0 has one), in the simulator as in the Scheduler. The lengthened hold
    once left a breakpoint at 1 that no event advanced: the simulator's best fit then
    read n1 as it was before job 1 and put job 2 on n0 (a shrunk hypothesis case)."""
    cluster = Cluster(["n0", "n1"], cpus=[2, 4], gpus=[1, 1], mem_mb=[0, 0])
    pm = PowerSaving(suspend_time=None, boot=2, cloud_nodes=("n1",), exc_nodes=("n0", "n1"))
    jobs = JobTable.from_arrays(job_id=[7, 1, 2], submit_time=[0, 1, 1], time_limit=1,
                                runtime=0, num_nodes=[2, 1, 1], gpus_per_node=[0, 1, 0],
                                cpus_per_node=[1, 2, 1], mem_per_node=0)
    r = simulate(cluster, jobs, "easy", power=pm, reservations="nodes")
    want = [(2, 2, [0, 1], 0, 2), (2, 2, [1], 0, 1), (2, 2, [1], 0, 1)]
    assert simulated(r, pulls=False, boots=True) == want
    assert drive(Scheduler(cluster, "easy", jobs=jobs, power=pm), jobs) == want
