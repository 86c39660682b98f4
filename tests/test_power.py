"""Power saving and cloud bursting: the engine's boots against the twin
(tests/naive_nodes.py), runs without power saving unchanged, the checks of
fastsched.verify.power (passing on runs, catching broken schedules), the summary's cost
vs wait, the model's text and slurm.conf keys, and the CLI."""
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fastsched import Cluster, JobTable, PowerSaving, Scheduler, simulate, verify
from fastsched.cli import main
from fastsched.engine import run_nodes
from fastsched.io.slurmconf import read_cluster
from fastsched.io.slurmpower import power_nodes, power_saving
from fastsched.model.errors import InputError, UnsupportedError
from fastsched.model.reservations import Reservation, Reservations
from fastsched.sim.power import engine_power
from fastsched.tools.testing import power_models
from constrained_twin import run_both
from test_constraints import SETTINGS, constrained_cases, engine_inputs
from test_nodeplan import node_cases
from test_reservations import windows_of
from scheddrive import drive


def _twin_power(pm, cluster):
    cloud, excluded = power_nodes(cluster, pm)
    return {"suspend_time": pm.suspend_time, "suspend_timeout": pm.suspend_timeout,
            "boot": pm.boot, "period_ms": pm.resume_period_ms(),
            "suspend_ms": pm.suspend_period_ms(),
            "cloud": set(np.flatnonzero(cloud).tolist()),
            "excluded": set(np.flatnonzero(excluded).tolist())}


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("easy", 2),
                                          ("conservative", 1)])
@SETTINGS
@given(data=st.data())
def test_boots_match_twin(data, policy, depth):
    case = data.draw(constrained_cases())
    cluster = case[0]
    pm = data.draw(power_models(cluster))
    res = data.draw(st.sampled_from([1, 1, 7]))
    twin = _twin_power(pm, cluster)
    engine, twin_kw = {"power": engine_power(pm, cluster), "resolution": res}, {}
    if data.draw(st.booleans()):        # advance reservations: nodes held over windows
        case = (case[0], case[1], _with_cpus(case[2])) + case[3:]
        blocked = windows_of(data.draw, cluster.num_nodes)
        engine["blocked"] = tuple(np.array(c, dtype=np.int64) for c in zip(*blocked))
        twin_kw["blocked"] = blocked
    run, ids, _ = run_both(case, policy, depth, engine=engine,
                           twin={"power": twin, "resolution": res, **twin_kw})
    for i, j in enumerate(ids):
        assert run.configure[i] == twin.get("boot_out", {}).get(j, 0), j
    assert run.power["power_ups"] >= 0
    event(f"jobs that waited for boots: {min(int((run.configure > 0).sum()), 3)}")


def _with_cpus(jobs):
    """``jobs`` each asking for a CPU, as Slurm's do (reservations hold nodes whole)."""
    jobs = jobs.take(np.arange(len(jobs)))
    jobs.cpus_per_node = np.maximum(jobs.cpus_per_node, 1).astype(jobs.cpus_per_node.dtype)
    return jobs


@SETTINGS
@given(data=st.data())
def test_without_power_saving_the_run_is_unchanged(data):
    """No power model, or one where no node ever powers down (SuspendTime=NONE, no CLOUD
    node): the same run, byte for byte."""
    cluster, available, jobs, parts, deps, groups, caps, _ = data.draw(constrained_cases())
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    plain = run_nodes(cluster, jobs, "easy", 1, available, partitions=pc, dependencies=dp,
                      limits=lg)
    never = PowerSaving(suspend_time=None, boot=data.draw(st.integers(0, 20)))
    powered = run_nodes(cluster, jobs, "easy", 1, available, partitions=pc,
                        dependencies=dp, limits=lg, power=engine_power(never, cluster))
    for name in ("start", "end", "alloc_offsets", "partition", "reason", "eligible"):
        assert np.array_equal(getattr(plain, name), getattr(powered, name)), name
    held = np.repeat(plain.start >= 0, np.diff(plain.alloc_offsets))
    for name in ("alloc_nodes", "alloc_gpu_mask"):
        assert np.array_equal(getattr(plain, name)[held], getattr(powered, name)[held])
    assert plain.configure is None and not powered.configure.any()
    assert powered.power["power_ups"] == 0


def _cases():
    """A cluster, jobs and power model whose runs the checks judge (one partition per job,
    no dependencies or limits: the policy checks' setting)."""
    @st.composite
    def cases(draw):
        cluster, available, jobs, *_ = draw(constrained_cases())
        return cluster, jobs, draw(power_models(cluster))
    return cases()


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@SETTINGS
@given(case=_cases())
def test_runs_pass_the_power_checks_and_broken_ones_fail(case, policy):
    cluster, jobs, pm = case
    try:
        r = simulate(cluster, jobs, policy, reservations="nodes", power=pm)
    except InputError:          # a job that fits no node of its partition
        return
    report = r.verify(policy)
    assert report.ok, report.violations[:3]
    assert {"not_booted", "needless_configure", "resume_rate", "suspend_rate"} \
        <= set(report.checks)
    conf = r.configure
    waited = np.flatnonzero(conf > 0)
    event(f"waited: {min(len(waited), 3)}")
    # with SuspendRate a node idle past SuspendTime may be up: only fresh CLOUD nodes
    # are known powered down, and a start without them may well have been on time
    if len(waited) and (pm.suspend_rate == 0 or pm.suspend_time is None):
        # every job that waited for boots starts at its allocation instead: the first
        # of them waited for a node it powered up (its boot, the end of its power-down,
        # or a token), which the checks must see
        s = r.schedule
        shifted = type(s)(job_id=s.job_id, start_time=s.start_time - conf,
                          end_time=s.end_time - conf, alloc_offsets=s.alloc_offsets,
                          alloc_nodes=s.alloc_nodes, alloc_gpu_mask=s.alloc_gpu_mask,
                          planning=s.planning)
        bad = verify(cluster, jobs, shifted, power=pm, configure=np.zeros_like(conf))
        assert {"not_booted", "resume_rate"} & set(bad.counts()), bad.violations


FEW = settings(max_examples=10, deadline=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FEW
@given(case=_cases(), policy=st.sampled_from(["fcfs", "easy", "conservative"]),
       data=st.data())
def test_runs_with_reservations_pass_the_checks_and_boots_into_windows_are_seen(
        case, policy, data):
    """Power saving with advance reservations: verify's ``reserved_node`` sees each run
    from its allocation, shifted back by its wait for boots (a start is held off the
    windows over [allocation, + limit), no boot counted: Slurm's job_test_resv)."""
    cluster, jobs, _ = case
    jobs = _with_cpus(jobs)
    pm = data.draw(power_models(cluster, max_boot=30))
    # short windows on every node, opening while jobs run: some boots run into one
    windows = [(w, w + data.draw(st.integers(1, 15)), x) for x in range(cluster.num_nodes)
               for w in data.draw(st.lists(st.integers(1, 50), max_size=2))]
    resv = Reservations(tuple(Reservation(f"r{k}", s, e, (x,), flags=("OVERLAP",))
                              for k, (s, e, x) in enumerate(windows)), cluster.num_nodes)
    try:
        r = simulate(cluster, jobs, policy, power=pm, advance_reservations=resv)
    except InputError:          # a job that fits no node of its partition
        return
    report = verify(cluster, r.workload, r.schedule, power=pm, configure=r.configure,
                    advance_reservations=resv)
    assert report.ok, report.violations[:3]
    assert ("reserved_node" in report.checks) == bool(windows)
    s = r.schedule
    inside = [i for i in np.flatnonzero(r.configure > 0) for w, e, x in zip(
        *resv.windows(int(s.end_time.max()) + 1))
        if x in s.alloc_nodes[s.alloc_offsets[i]:s.alloc_offsets[i + 1]]
        and w < s.end_time[i] and s.start_time[i] - r.configure[i] < e]
    event(f"runs into a window: {min(len(inside), 2)}")
    if inside:      # the same run with no boot counted (all of it at its allocation): seen
        early = type(s)(job_id=s.job_id, start_time=s.start_time - r.configure,
                        end_time=s.end_time, alloc_offsets=s.alloc_offsets,
                        alloc_nodes=s.alloc_nodes, planning=s.planning)
        jobs_long = r.workload.take(np.arange(len(jobs)))
        jobs_long.runtime = jobs_long.runtime + r.configure
        jobs_long.time_limit = jobs_long.time_limit + r.configure
        bad = verify(cluster, jobs_long, early, advance_reservations=resv)
        assert "reserved_node" in bad.counts(), bad.violations


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@FEW
@given(case=node_cases(), data=st.data())
def test_scheduler_with_power_and_reservations_as_the_simulator(case, data, policy):
    """Driven at the simulator's instants (window ends included), the Scheduler boots
    and starts what the engine does with the same windows and power model."""
    cluster, available, jobs = case
    jobs = _with_cpus(jobs)
    blocked = windows_of(data.draw, cluster.num_nodes)
    resv = Reservations(tuple(Reservation(f"r{k}", s, e, (x,), flags=("OVERLAP",))
                              for k, (s, e, x) in enumerate(blocked)), cluster.num_nodes)
    pm = data.draw(power_models(cluster))
    run = run_nodes(cluster, jobs, policy, 1, available, blocked=resv.windows(0),
                    power=engine_power(pm, cluster))
    s = Scheduler(cluster, policy, reservations="nodes", available=available, jobs=jobs,
                  power=pm, advance_reservations=resv)
    got = drive(s, jobs, instants={e for _, e, _ in blocked}).attempts
    ids = jobs.job_id.tolist()
    assert got == sorted((ids[i], int(run.start[i]), int(run.end[i]), sorted(
        run.alloc_nodes[run.alloc_offsets[i]:run.alloc_offsets[i + 1]].tolist()), False)
        for i in np.flatnonzero(run.start >= 0))
    assert s.start_costs.power.power_ups == run.power["power_ups"]
    event(f"jobs that waited for boots: {min(int((run.configure > 0).sum()), 2)}")


def test_a_job_booting_for_its_nodes_runs_into_a_window_as_in_slurm(tmp_path):
    """A reservation opening at 150 on the CLOUD node n002: job 2, allocated it at 0
    with a 100 s limit (clear of the window), boots 60 s and runs to 160, into it:
    Slurm tests a start against reservations with its time limit alone
    (reservation.c ``_get_job_duration``) and resets its start when the nodes are ready.
    A reservation neither keeps its nodes up nor wakes them (power_save.c): n002, idle
    from 160, powers down at 261, and job 3 boots again at 300, when the window closes."""
    cluster = Cluster.homogeneous(2, cpus=1, prefix="n")
    pm = PowerSaving(suspend_time=100, suspend_timeout=0, boot=60, resume_timeout=600,
                     cloud_nodes=("n002",))
    jobs = _jobs([500, 100, 100], [1, 1, 1], limit=[500, 100, 100], submit=[0, 0, 10])
    resv = Reservations((Reservation("maint", 150, 300, (1,), flags=("MAINT",)),), 2)
    r = simulate(cluster, jobs, "easy", power=pm, advance_reservations=resv)
    f = r.jobs
    assert f.start_time.tolist() == [0, 60, 360]
    assert f.end_time.tolist() == [500, 160, 460]
    assert f.configure_time.tolist() == [0, 60, 60]
    report = verify(cluster, r.workload, r.schedule, power=pm, configure=r.configure,
                    advance_reservations=resv)
    assert report.ok and "reserved_node" in report.checks
    late = Reservations((Reservation("maint", 90, 300, (1,), flags=("MAINT",)),), 2)
    bad = verify(cluster, r.workload, r.schedule, power=pm, configure=r.configure,
                 advance_reservations=late)          # [0, 100) meets a window at 90
    assert "reserved_node" in bad.counts()
    conf = ("SuspendExcStates=DOWN,Res\nNodeName=n[001-002] CPUs=1 RealMemory=1000\n"
            "PartitionName=p Nodes=ALL Default=YES MaxTime=UNLIMITED\n")
    (tmp_path / "slurm.conf").write_text(conf)
    kept_up = read_cluster(tmp_path / "slurm.conf")
    with pytest.raises(UnsupportedError, match="SuspendExcStates=DOWN,Res"):
        simulate(kept_up, jobs, "easy", power=pm, advance_reservations=resv)
    simulate(kept_up, jobs, "easy", power=pm)        # without reservations: no matter


def test_cli_simulate_and_check_power_with_reservations(tmp_path, capsys):
    """The example above from the CLI (docs/lifecycle.md)."""
    conf, w, resv, out = (tmp_path / f for f in ("slurm.conf", "w.csv", "r.txt", "o.csv"))
    conf.write_text("SuspendTime=100\nSuspendTimeout=0\nResumeTimeout=600\nResumeRate=0\n"
                    "NodeName=n001 CPUs=1 RealMemory=1000\n"
                    "NodeName=n002 CPUs=1 RealMemory=1000 State=CLOUD\n"
                    "PartitionName=p Nodes=n[001-002] Default=YES MaxTime=UNLIMITED\n")
    w.write_text("job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,"
                 "cpus_per_node,mem_per_node,partition,user,account\n"
                 "1,0,500,500,1,0,1,0,p,u,a\n2,0,100,100,1,0,1,0,p,u,a\n"
                 "3,10,100,100,1,0,1,0,p,u,a\n")
    resv.write_text("ReservationName=maint StartTime=150 EndTime=300 Nodes=n002 Flags=MAINT\n")
    common = ["--cluster", str(conf), "--power", "boot=60s", "--resv-file", str(resv)]
    assert main(["simulate", str(w), *common, "--jobs-out", str(out), "--no-progress"]) == 0
    import pandas as pd
    f = pd.read_csv(out)
    assert f.start_time.tolist() == [0, 60, 360] and f.end_time.tolist() == [500, 160, 460]
    capsys.readouterr()
    assert main(["check", str(out), "--trace", str(w), *common]) == 0
    assert "reserved_node" in capsys.readouterr().out


def _jobs(runtime, nodes, limit=1000, submit=0):
    n = len(runtime)
    return JobTable.from_arrays(job_id=np.arange(1, n + 1), submit_time=submit,
                                time_limit=limit, runtime=runtime, num_nodes=nodes,
                                gpus_per_node=0, cpus_per_node=1, user=0)


def test_a_cloud_job_waits_for_its_boot_and_its_limit_runs_from_then():
    cluster = Cluster.homogeneous(3, cpus=1, prefix="n")
    pm = PowerSaving(suspend_time=100, boot=60, resume_timeout=600, resume_rate=1,
                     cloud_nodes=("n002", "n003"), cost=1.0, cloud_cost=3.0)
    # job 1 takes the on-prem node; job 2 (2 nodes) bursts into the cloud: one token a
    # minute, so its second node boots a minute after the first
    jobs = _jobs([500, 50, 10], [1, 2, 1], limit=[1000, 50, 100], submit=[0, 0, 1000])
    r = simulate(cluster, jobs, "easy", reservations="nodes", power=pm)
    f = r.jobs
    assert f.configure_time.tolist() == [0, 120, 60]
    assert f.start_time.tolist() == [0, 120, 1060]
    assert f.end_time.tolist() == [500, 170, 1070]        # its limit counts from 120
    assert f.state.tolist() == ["COMPLETED"] * 3
    assert f.nodes.tolist() == ["n001", "n[002-003]", "n001"]
    p = r.summary["power"]
    assert p["power_ups"] == 3 and p["jobs_configuring"] == 2
    # n001 on 0..600 (idle from 500, SuspendTime 100), then from its resume at 1000 to
    # the end (1070); n002 on 0..270, n003 on 60..271 (their job ended at 170; Slurm's
    # default SuspendRate, 60 a minute, gives n003 its power-down token a second later)
    assert p["node_hours_on"] * 3600 == pytest.approx(670 + 270 + 211)
    assert p["cloud_node_hours_on"] * 3600 == pytest.approx(481)
    assert p["node_hours_busy"] * 3600 == pytest.approx(500 + 70 + 170 * 2)
    assert p["cost"] == pytest.approx((670 * 1.0 + 481 * 3.0) / 3600)
    assert p["mean_wait_seconds"] == pytest.approx((0 + 120 + 60) / 3)
    assert r.verify("easy").ok


def test_an_idle_node_powers_down_and_the_next_job_waits_for_it():
    cluster = Cluster.homogeneous(1, cpus=1, prefix="n")
    pm = PowerSaving(suspend_time=100, suspend_timeout=30, boot=20, resume_timeout=60)
    jobs = _jobs([10, 10, 10], [1, 1, 1], submit=[0, 105, 300])
    r = simulate(cluster, jobs, "fcfs", reservations="nodes", power=pm)
    # idle from 10: powering down at 110 (job 2 at 105 runs on it), idle from 115 again:
    # powered down at 215, done at 245; job 3 at 300 waits its 20 s boot
    assert r.jobs.configure_time.tolist() == [0, 0, 20]
    assert r.jobs.start_time.tolist() == [0, 105, 320]
    early = PowerSaving(suspend_time=100, suspend_timeout=30, boot=20, resume_timeout=60)
    r2 = simulate(cluster, _jobs([10, 10], [1, 1], submit=[0, 120]), "fcfs",
                  reservations="nodes", power=early)
    # powering down from 110 until 140: the boot starts only then
    assert r2.jobs.configure_time.tolist() == [0, 40]
    excluded = PowerSaving(suspend_time=100, boot=20, exc_nodes=("n001",))
    r3 = simulate(cluster, jobs, "fcfs", reservations="nodes", power=excluded)
    assert r3.jobs.configure_time.tolist() == [0, 0, 0]


def test_a_node_powers_down_only_once_idle_longer_than_suspend_time():
    """Slurm suspends a node when ``last_busy < now - SuspendTime``: idle exactly
    SuspendTime it is still up, so even with SuspendTime=0 the jobs of one instant never
    find a node their predecessor at that instant left powered down."""
    cluster = Cluster.homogeneous(1, cpus=1, prefix="n")
    pm = PowerSaving(suspend_time=100, suspend_timeout=0, boot=20, resume_timeout=60)
    for submit, wait in ((110, 0), (111, 20)):       # job 1 leaves the node idle at 10
        r = simulate(cluster, _jobs([10, 10], [1, 1], submit=[0, submit]), "fcfs",
                     reservations="nodes", power=pm)
        assert r.jobs.configure_time.tolist() == [0, wait]
        assert r.verify("fcfs").ok
    # SuspendTime=0, a token a minute: jobs 1 and 2 share the node at 0 (job 1 ends
    # then), job 3 takes job 1's CPU at 0; nothing powers up, and the checks agree
    two = Cluster.homogeneous(1, cpus=2, prefix="n")
    pm0 = PowerSaving(suspend_time=0, suspend_timeout=0, boot=0, resume_timeout=15,
                      resume_rate=1)
    r = simulate(two, _jobs([0, 2, 0], [1, 1, 1], limit=5), "conservative",
                 reservations="nodes", power=pm0)
    assert r.jobs.start_time.tolist() == [0, 0, 0] and r.summary["power"]["power_ups"] == 0
    assert r.verify("conservative").ok


def test_a_booting_job_holds_its_nodes_for_its_boot_plus_its_limit():
    """Backfill sees a boot: the job waiting behind a booting job is planned at its reset
    start plus limit, so the short job that fits before that backfills."""
    cluster = Cluster.homogeneous(2, cpus=1, prefix="n")
    pm = PowerSaving(boot=50, resume_timeout=60, cloud_nodes=("n002",))
    jobs = _jobs([100, 100, 100, 30], [1, 1, 2, 1], limit=[100, 100, 100, 40],
                 submit=[0, 0, 1, 2])
    r = simulate(cluster, jobs, "easy", reservations="nodes", power=pm)
    f = r.jobs
    assert f.start_time.tolist()[:2] == [0, 50]
    assert f.start_time[2] == 150            # both nodes free at 150 (boot + limit)
    assert f.start_time[3] == 100            # backfilled: ends at 140 <= 150
    assert r.verify("easy").ok


def test_a_boot_over_resume_timeout_leaves_cloud_nodes_down():
    cluster = Cluster.homogeneous(2, cpus=1, prefix="n")
    pm = PowerSaving(boot=120, resume_timeout=60, cloud_nodes=("n002",))
    r = simulate(cluster, _jobs([10, 10], [1, 1]), "easy", reservations="nodes", power=pm)
    assert r.jobs.nodes.tolist() == ["n001", "n001"]
    with pytest.raises(UnsupportedError, match="ResumeTimeout"):
        simulate(cluster, _jobs([10], [1]), "easy", reservations="nodes",
                 power=PowerSaving(boot=120, resume_timeout=60, suspend_time=10))


def test_power_saving_refuses_what_it_does_not_model():
    from fastsched import NodeEvents
    cluster = Cluster.homogeneous(2, cpus=1, prefix="n")
    with pytest.raises(UnsupportedError, match="node events and a boot"):
        simulate(cluster, _jobs([10], [1]), "easy",
                 power=PowerSaving(boot=120, resume_timeout=60, cloud_nodes=("n002",)),
                 events=NodeEvents.from_rows([(5, "down", [0])], 2))
    with pytest.raises(UnsupportedError, match="counts model"):
        simulate(cluster, _jobs([10], [1]), "easy", reservations="counts",
                 power=PowerSaving())
    with pytest.raises(InputError, match="not a node"):
        simulate(cluster, _jobs([10], [1]), "easy", power=PowerSaving(cloud_nodes=("x",)))


@pytest.mark.parametrize("text,expected", [
    ("boot=5m,cost=3.2/node-hour,cloud-cost=4", dict(boot=300, cost=3.2, cloud_cost=4.0)),
    ("SuspendTime=600,ResumeRate=20", dict(suspend_time=600, resume_rate=20)),
    ("suspend-time=NONE,resume-timeout=10m", dict(suspend_time=None, resume_timeout=600)),
])
def test_power_texts_parse(text, expected):
    pm = PowerSaving.parse(text)
    for k, v in expected.items():
        assert getattr(pm, k) == v


@pytest.mark.parametrize("text,match", [("boot=x", "duration"), ("cost=-1", "number"),
                                        ("colour=red", "is not one of"),
                                        ("boot=1,boot=2", "twice"),
                                        ("ResumeRate=70000", "60000"),
                                        ("ResumeRate=1.5", "whole number")])
def test_power_texts_are_checked(text, match):
    with pytest.raises(InputError, match=match):
        PowerSaving.parse(text)


CONF = ("SuspendTime=300\nSuspendTimeout=20\nResumeTimeout=900\nResumeRate=30\n"
        "SuspendExcNodes=onprem[001-002]\nSuspendExcParts=debug\n"
        "NodeName=onprem[001-004] CPUs=8 RealMemory=1000\n"
        "NodeName=cloud[001-004] CPUs=8 RealMemory=1000 State=CLOUD\n"
        "PartitionName=onprem Nodes=onprem[001-004] Default=YES MaxTime=UNLIMITED\n"
        "PartitionName=debug Nodes=onprem004 MaxTime=UNLIMITED\n"
        "PartitionName=cloud Nodes=cloud[001-004] MaxTime=UNLIMITED\n")


def test_slurm_conf_keys_make_the_model(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text(CONF)
    with pytest.warns(Warning):
        cluster = read_cluster(conf)
    pm = power_saving(cluster, "boot=3m,cost=2")
    assert (pm.suspend_time, pm.suspend_timeout, pm.resume_timeout, pm.resume_rate,
            pm.boot, pm.cost) == (300, 20, 900, 30, 180, 2.0)
    cloud, excluded = power_nodes(cluster, pm)
    assert cloud.tolist() == [False] * 4 + [True] * 4
    assert excluded.tolist() == [True, True, False, True] + [False] * 4
    assert power_saving(cluster, "SuspendTime=NONE").suspend_time is None


def test_cli_simulate_and_check_with_power(tmp_path, capsys):
    conf = tmp_path / "slurm.conf"
    conf.write_text(CONF)
    w = tmp_path / "w.csv"
    w.write_text("job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,"
                 "cpus_per_node,mem_per_node,partition,user,account\n"
                 "1,0,1000,100,4,0,8,0,onprem,u,a\n2,0,1000,100,2,0,8,0,cloud,u,a\n"
                 "3,2000,1000,100,1,0,8,0,onprem,u,a\n")
    out, summary = tmp_path / "jobs.csv", tmp_path / "s.json"
    assert main(["simulate", str(w), "--cluster", str(conf), "--power", "boot=2m,cost=1.5",
                 "--jobs-out", str(out), "--summary-json", str(summary),
                 "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "power saving (SuspendTime 300 s, boot 120 s)" in text
    import pandas as pd
    f = pd.read_csv(out)
    # job 2's cloud nodes boot (2 s apart: ResumeRate 30); job 3 lands on onprem003,
    # powered down since 400 (onprem001-002 and 004 are excluded, but it takes best fit)
    assert f.configure_time.tolist()[:2] == [0, 122]
    assert json.loads(summary.read_text())["power"]["power_ups"] >= 2
    assert main(["check", str(out), "--trace", str(w), "--cluster", str(conf),
                 "--power", "boot=2m", "--policy", "easy"]) == 0
    f.loc[1, "start_time"] -= 5
    f.loc[1, "configure_time"] -= 5
    f.loc[1, "end_time"] -= 5
    f.to_csv(out, index=False)
    assert main(["check", str(out), "--trace", str(w), "--cluster", str(conf),
                 "--power", "boot=2m"]) == 1
    assert "not_booted" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["simulate", str(w), "--cluster", str(conf), "--power", "boot=x"])
