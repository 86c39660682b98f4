"""SuspendRate: power-downs limited to a token every 60000 / SuspendRate ms, handed to
the idle nodes in order of eligibility (idle + SuspendTime, then node index); a node
with no token stays up and takes jobs without a boot. Slurm's rule on small cases in
the simulator and the embeddable Scheduler, the ``suspend_rate`` check of
fastsched.verify (passing on runs, catching a node kept up with tokens to spare), the
Scheduler against simulate on drawn cases where many nodes idle at once, the key in
``--power`` and slurm.conf. (The engine against its twin: tests/test_power.py and
tests/test_power_events.py, whose power models draw SuspendRate.)"""
import json
import warnings
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from fastsched import Cluster, JobTable, PowerSaving, Scheduler, simulate, verify
from fastsched.cli import main
from fastsched.io.slurmconf import read_cluster
from fastsched.io.slurmpower import power_saving
from fastsched.model.errors import InputError
from fastsched.tools.testing import power_models
from fastsched.sim.power import engine_power
from constrained_twin import run_both
from test_constraints import constrained_cases
from test_power import _twin_power
from test_scheduler_power_events import SETTINGS, _scheduler_vs_simulate
from test_scheduler_requeue import spare_node_cases


def _jobs(runtime, nodes, submit=0):
    n = len(runtime)
    return JobTable.from_arrays(job_id=np.arange(1, n + 1), submit_time=submit,
                                time_limit=1000, runtime=runtime, num_nodes=nodes,
                                gpus_per_node=0, cpus_per_node=1, user=0)


def _model(rate, **kw):
    return PowerSaving(**{"suspend_time": 100, "suspend_timeout": 0, "boot": 20,
                          "resume_timeout": 60, "resume_rate": 0, "suspend_rate": rate,
                          **kw})


def _shifted(r):
    """``r``'s schedule with every job started at its allocation (no boot waited)."""
    s, conf = r.schedule, r.configure
    return type(s)(job_id=s.job_id, start_time=s.start_time - conf,
                   end_time=s.end_time - conf, alloc_offsets=s.alloc_offsets,
                   alloc_nodes=s.alloc_nodes, alloc_gpu_mask=s.alloc_gpu_mask,
                   planning=s.planning)


def test_idle_nodes_power_down_one_token_at_a_time():
    """Three nodes idle from 10 (SuspendTime 100): without a limit all power down at
    110; at one a minute n001 at 110, n002 at 170, n003 at 230. A 3-node job at 200
    powers up two nodes, not three, and the third stays on until its token."""
    cluster = Cluster.homogeneous(3, cpus=1, prefix="n")
    jobs = _jobs([10, 10, 10, 10], [1, 1, 1, 3], submit=[0, 0, 0, 200])
    free = simulate(cluster, jobs, "fcfs", reservations="nodes", power=_model(0))
    one = simulate(cluster, jobs, "fcfs", reservations="nodes", power=_model(1))
    assert free.jobs.configure_time.tolist() == one.jobs.configure_time.tolist() \
        == [0, 0, 0, 20]
    assert free.summary["power"]["power_ups"] == 3
    assert one.summary["power"]["power_ups"] == 2
    # powered seconds up to the last end (230): 110 each before the job without a
    # limit; with one a minute 110 + 170 + 200 (n003 until the job), then 30 each
    assert free.summary["power"]["node_hours_on"] * 3600 == 3 * 110 + 3 * 30
    assert one.summary["power"]["node_hours_on"] * 3600 == 110 + 170 + 200 + 3 * 30
    assert one.summary["power"]["suspend_rate"] == 1
    assert one.verify("fcfs").ok and free.verify("fcfs").ok


def test_a_node_kept_up_without_a_token_takes_a_job_at_once():
    """Both nodes idle from 10: n001 takes the token of 110, n002's comes at 170. Job 3
    at 120 boots n001; job 4 at 150 gets n002, still up: it starts at once (without
    a limit n002 powered down at 110 too, and job 4 waits for its boot)."""
    cluster = Cluster.homogeneous(2, cpus=1, prefix="n")
    jobs = _jobs([10, 10, 500, 10], [1, 1, 1, 1], submit=[0, 0, 120, 150])
    for rate, wait in ((1, 0), (0, 20)):
        r = simulate(cluster, jobs, "fcfs", reservations="nodes", power=_model(rate))
        assert r.jobs.nodes.tolist()[2:] == ["n001", "n002"]
        assert r.jobs.configure_time.tolist() == [0, 0, 20, wait]
        assert r.verify("fcfs").ok


def test_the_suspend_rate_check_catches_a_node_kept_up_with_tokens_to_spare():
    cluster = Cluster.homogeneous(1, cpus=1, prefix="n")
    jobs = _jobs([10, 10], [1, 1], submit=[0, 200])
    pm = _model(1)
    r = simulate(cluster, jobs, "fcfs", reservations="nodes", power=pm)
    assert r.jobs.configure_time.tolist() == [0, 20] and r.verify("fcfs").ok
    # started at 200 without its boot: its node, alone, had its token at 110
    bad = verify(cluster, jobs, _shifted(r), power=pm, configure=np.zeros(2, np.int64))
    assert [v.kind for v in bad.violations] == ["suspend_rate"]
    # n002 and n003 idle from 0 take the tokens of 100 and 160, n001 (idle from 10)
    # would take 220: up at 200, which the check allows (two other nodes waited)
    three = Cluster.homogeneous(3, cpus=1, prefix="n")
    r3 = simulate(three, jobs, "fcfs", reservations="nodes", power=pm)
    assert r3.jobs.nodes.tolist() == ["n001", "n001"]
    assert r3.jobs.configure_time.tolist() == [0, 0]
    ok = r3.verify("fcfs")
    assert ok.ok and "suspend_rate" in ok.checks


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("conservative", 1)])
@SETTINGS
@given(data=st.data())
def test_scarce_power_down_tokens_match_twin(data, policy, depth):
    """Short SuspendTimes and one power-down token every 8.5 or 60 s, so that nodes
    idle together queue for them: the engine's boots are the twin's."""
    case = data.draw(constrained_cases())
    pm = replace(data.draw(power_models(case[0], max_time=8)),
                 suspend_time=data.draw(st.integers(0, 8)),
                 suspend_rate=data.draw(st.sampled_from([1, 7])))
    run, ids, _ = run_both(case, policy, depth, engine={"power": engine_power(pm, case[0])},
                           twin={"power": _twin_power(pm, case[0])})
    free = replace(pm, suspend_rate=0)
    other, _, _ = run_both(case, policy, depth, engine={"power": engine_power(free, case[0])},
                           twin={"power": _twin_power(free, case[0])})
    event(f"SuspendRate changed the boots: "
          f"{not np.array_equal(run.configure, other.configure)}")


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@SETTINGS
@given(data=st.data())
def test_runs_with_scarce_tokens_pass_the_power_checks(data, policy):
    """The suspend_rate check (and the others, lenient under SuspendRate) pass on runs
    where nodes queue for power-down tokens."""
    cluster, _, jobs, *_ = data.draw(constrained_cases())
    pm = replace(data.draw(power_models(cluster, max_time=8)),
                 suspend_time=data.draw(st.integers(0, 8)),
                 suspend_rate=data.draw(st.sampled_from([1, 7])))
    try:
        r = simulate(cluster, jobs, policy, reservations="nodes", power=pm)
    except InputError:          # a job that fits no node of its partition
        return
    report = r.verify(policy)
    assert report.ok and "suspend_rate" in report.checks, report.violations[:3]


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@SETTINGS
@given(data=st.data())
def test_scheduler_with_suspend_rate_as_the_simulator(policy, data):
    """Short SuspendTimes and one power-down token every 1..60 s, with spare nodes
    failing and coming back: the Scheduler starts, boots, kills and powers up what
    simulate does."""
    case = data.draw(spare_node_cases(policy))
    pm = replace(data.draw(power_models(case[0], max_time=8)),
                 suspend_rate=data.draw(st.sampled_from([1, 7, 60])))
    _scheduler_vs_simulate(policy, case, pm)


def test_scheduler_states_follow_the_tokens():
    cluster = Cluster.homogeneous(3, cpus=1, prefix="n")
    jobs = _jobs([10, 10, 10, 10], [1, 1, 1, 3], submit=[0, 0, 0, 150])
    s = Scheduler(cluster, "easy", jobs=jobs, power=_model(1, suspend_timeout=5))
    s.submit(jobs.take(np.array([0, 1, 2])))
    s.apply(s.schedule(0))
    for j in (1, 2, 3):
        s.complete(j, 10)
    p = s.start_costs.power
    assert p.states(110).tolist() == ["", "", ""]
    assert p.states(111).tolist() == ["POWERING_DOWN", "", ""]
    assert p.states(171).tolist() == ["POWERED_DOWN", "POWERING_DOWN", ""]
    assert p.states(300).tolist() == ["POWERED_DOWN"] * 3
    # a job at 150 (after those queries) finds n001 powered down, n002 and n003 up
    s.submit(jobs.take(np.array([3])))
    d = s.schedule(150)
    assert d.configure_time.tolist() == [20]      # n001 powering down from 110 to 115
    s.apply(d)
    assert p.power_ups == 1


@pytest.mark.parametrize("text,rate", [("SuspendRate=0", 0), ("suspend-rate=600", 600)])
def test_suspend_rate_texts(text, rate):
    assert PowerSaving.parse(text).suspend_rate == rate
    assert PowerSaving.parse(text).suspend_period_ms() == (60000 // rate if rate else 0)


@pytest.mark.parametrize("text,match", [("SuspendRate=70000", "60000"),
                                        ("SuspendRate=-1", "whole number"),
                                        ("SuspendRate=x", "whole number")])
def test_suspend_rate_texts_are_checked(text, match):
    with pytest.raises(InputError, match=match):
        PowerSaving.parse(text)


def test_slurm_conf_suspend_rate_and_the_cli(tmp_path, capsys):
    conf = tmp_path / "slurm.conf"
    conf.write_text("SuspendTime=100\nSuspendTimeout=0\nResumeTimeout=60\nResumeRate=0\n"
                    "SuspendRate=1\nNodeName=n[1-3] CPUs=1 RealMemory=1000\n"
                    "PartitionName=p Nodes=n[1-3] Default=YES MaxTime=UNLIMITED\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = read_cluster(conf)
    assert power_saving(cluster).suspend_rate == 1
    assert power_saving(cluster, "SuspendRate=0").suspend_rate == 0
    w = tmp_path / "w.csv"
    w.write_text("job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,"
                 "cpus_per_node,mem_per_node,partition,user,account\n"
                 "1,0,1000,10,3,0,1,0,p,u,a\n2,200,1000,10,3,0,1,0,p,u,a\n")
    out = tmp_path / "jobs.csv"
    for spec, ups in (("boot=20", 2), ("boot=20,SuspendRate=0", 3)):
        summary = tmp_path / "s.json"
        assert main(["simulate", str(w), "--cluster", str(conf), "--power", spec,
                     "--jobs-out", str(out), "--summary-json", str(summary),
                     "--no-progress"]) == 0
        assert json.loads(summary.read_text())["power"]["power_ups"] == ups
        assert main(["check", str(out), "--trace", str(w), "--cluster", str(conf),
                     "--power", spec, "--policy", "easy"]) == 0
    capsys.readouterr()
