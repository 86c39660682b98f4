"""A boot time per node or partition (``boot[NAME]=...``): the engine against its twin
(tests/naive_nodes.py) with per-node boots, the Scheduler at the simulator's instants,
the checks of fastsched.verify.power judging each node by its own boot, ResumeTimeout
per node, the ``--power`` spelling and its errors, and the example of docs/lifecycle.md."""
import warnings

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from fastsched import Cluster, JobTable, PowerSaving, Scheduler, simulate, verify
from fastsched.cli import main
from fastsched.engine import run_nodes
from fastsched.io.slurmconf import read_cluster
from fastsched.io.slurmpower import node_boots, power_nodes
from fastsched.model.errors import InputError, UnsupportedError
from fastsched.sim.power import engine_power
from fastsched.tools.testing import lifecycles, node_event_rows, power_models
from constrained_twin import attempt_rows, run_both
from test_constraints import SETTINGS, constrained_cases, engine_inputs
from test_nodeplan import node_cases
from test_power import FEW, _with_cpus
from scheddrive import drive


def _twin_power(pm, cluster):
    """The twin's power dict, the ``boots`` names resolved here: a partition's name, else
    a node's (the strategy draws single node names)."""
    cloud, excluded = power_nodes(cluster, pm)
    parts = {p.name: [int(x) for x in np.asarray(p.nodes).tolist()] for p in cluster.partitions}
    names = list(cluster.node_names)
    boots = {}
    for name, seconds in pm.boots:
        for x in parts.get(name) or [names.index(name)]:
            boots[x] = seconds
    return {"suspend_time": pm.suspend_time, "suspend_timeout": pm.suspend_timeout,
            "boot": pm.boot, "boots": boots, "period_ms": pm.resume_period_ms(),
            "suspend_ms": pm.suspend_period_ms(),
            "cloud": set(np.flatnonzero(cloud).tolist()),
            "excluded": set(np.flatnonzero(excluded).tolist())}


@SETTINGS
@given(data=st.data(), policy=st.sampled_from(["fcfs", "easy", "conservative"]))
def test_per_node_boots_match_twin(data, policy):
    case = data.draw(constrained_cases())
    cluster = case[0]
    pm = data.draw(power_models(cluster, boots=True))
    twin = _twin_power(pm, cluster)
    run, ids, _ = run_both(case, policy, 1, engine={"power": engine_power(pm, cluster)},
                           twin={"power": twin})
    for i, j in enumerate(ids):
        assert run.configure[i] == twin.get("boot_out", {}).get(j, 0), j
    event(f"nodes with their own boot: {min(len(twin['boots']), 3)}")


@FEW
@given(data=st.data(), policy=st.sampled_from(["fcfs", "easy", "conservative"]))
def test_per_node_boots_with_node_events_match_twin(data, policy):
    """Drains of booting nodes and nodes coming back, each node booting in its own time:
    the attempts with their boot waits as the twin's."""
    case = data.draw(constrained_cases())
    pm = data.draw(power_models(case[0], boots=True))
    rows = data.draw(node_event_rows(case[0].num_nodes, max_events=8, max_time=60,
                                     kinds=("down", "up", "drain", "drain", "resume")))
    twin = _twin_power(pm, case[0])
    run, ids, killed = run_both(case, policy, 1, rows=rows,
                                lifecycle=data.draw(lifecycles(len(case[2]))),
                                engine={"power": engine_power(pm, case[0])},
                                twin={"power": twin})
    assert attempt_rows(run, ids, "configure") == sorted(killed)
    for i, j in enumerate(ids):
        if run.start[i] >= 0:
            assert run.configure[i] == twin.get("boot_out", {}).get(j, 0), j
    event(f"killed attempts: {min(len(killed), 2)}")


@FEW
@given(data=st.data())
def test_a_boot_given_to_every_node_is_the_uniform_run(data):
    """``boots`` naming every node with ``boot``'s time: the engine gets an array, not
    one number, and gives the same run byte for byte."""
    cluster, available, jobs, parts, deps, groups, caps, _ = data.draw(constrained_cases())
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    pm = data.draw(power_models(cluster))
    every = PowerSaving(**{**pm.__dict__, "boots": {n: pm.boot for n in cluster.node_names}})
    assert np.ndim(engine_power(pm, cluster)[2]) == 0
    assert np.ndim(engine_power(every, cluster)[2]) == 1
    a, b = (run_nodes(cluster, jobs, "easy", 1, available, partitions=pc, dependencies=dp,
                      limits=lg, power=engine_power(p, cluster)) for p in (pm, every))
    for name in ("start", "end", "alloc_offsets", "configure"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    held = np.repeat(a.start >= 0, np.diff(a.alloc_offsets))     # the rest is scratch
    assert np.array_equal(a.alloc_nodes[held], b.alloc_nodes[held])
    assert a.power["power_ups"] == b.power["power_ups"]


@FEW
@given(case=node_cases(), data=st.data())
def test_runs_pass_the_checks_and_a_start_one_second_early_fails(case, data):
    """Without tokens a waiting job's start is its nodes' latest readiness, each by its
    own boot: the checks accept the run and flag it started a second early."""
    cluster, _, jobs = case
    pm = data.draw(power_models(cluster, boots=True))
    pm = PowerSaving(**{**pm.__dict__, "resume_rate": 0, "suspend_rate": 0})
    try:
        r = simulate(cluster, jobs, "easy", reservations="nodes", power=pm)
    except InputError:          # a job that fits no node of its partition
        return
    assert r.verify("easy").ok, r.verify("easy").violations[:3]
    waited = r.configure > 0
    event(f"waited: {min(int(waited.sum()), 3)}")
    if waited.any():
        s = r.schedule
        early = type(s)(job_id=s.job_id, start_time=s.start_time - waited,
                        end_time=s.end_time - waited, alloc_offsets=s.alloc_offsets,
                        alloc_nodes=s.alloc_nodes, alloc_gpu_mask=s.alloc_gpu_mask,
                        planning=s.planning)
        bad = verify(cluster, r.workload, early, power=pm, configure=r.configure - waited)
        assert "not_booted" in bad.counts(), bad.violations


@FEW
@given(case=node_cases(), data=st.data(), policy=st.sampled_from(["fcfs", "easy"]))
def test_scheduler_with_per_node_boots_as_the_simulator(case, data, policy):
    cluster, available, jobs = case
    jobs = _with_cpus(jobs)
    pm = data.draw(power_models(cluster, boots=True))
    run = run_nodes(cluster, jobs, policy, 1, available, power=engine_power(pm, cluster))
    s = Scheduler(cluster, policy, reservations="nodes", available=available, jobs=jobs,
                  power=pm)
    got = drive(s, jobs).attempts
    ids = jobs.job_id.tolist()
    assert got == sorted((ids[i], int(run.start[i]), int(run.end[i]), sorted(
        run.alloc_nodes[run.alloc_offsets[i]:run.alloc_offsets[i + 1]].tolist()), False)
        for i in np.flatnonzero(run.start >= 0))
    assert s.start_costs.power.power_ups == run.power["power_ups"]
    event(f"jobs that waited for boots: {min(int((run.configure > 0).sum()), 2)}")


CONF = ("SuspendTime=100\nSuspendTimeout=0\nResumeTimeout=600\nResumeRate=0\nSuspendRate=0\n"
        "NodeName=n[1-2] CPUs=1 RealMemory=1000\n"
        "NodeName=c[1-2] CPUs=1 RealMemory=1000 State=CLOUD\n"
        "PartitionName=onprem Nodes=n[1-2] Default=YES MaxTime=UNLIMITED\n"
        "PartitionName=cloud Nodes=c[1-2] MaxTime=UNLIMITED\n")
TRACE = ("job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,cpus_per_node,"
         "mem_per_node,partition,user,account\n"
         "1,0,200,100,1,0,1,0,onprem,u,a\n2,0,200,100,2,0,1,0,cloud,u,a\n"
         "3,250,200,50,2,0,1,0,onprem,u,a\n4,600,200,50,1,0,1,0,cloud,u,a\n")


def _cluster(tmp_path):
    (tmp_path / "slurm.conf").write_text(CONF)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read_cluster(tmp_path / "slurm.conf")


def test_two_partitions_boot_30_s_and_5_min(tmp_path, capsys):
    """docs/lifecycle.md: on-prem nodes boot in 30 s, CLOUD ones in 5 min. Job 2's CLOUD
    nodes boot 300 s from 0; job 3 at 250 finds n1 (idle since 100) and n2 (since 0)
    powered down and waits 30 s; job 4 at 600 finds c1 (idle since 400) powered down
    and waits 300 s."""
    cluster = _cluster(tmp_path)
    (tmp_path / "jobs.csv").write_text(TRACE)
    out = tmp_path / "out.csv"
    common = ["--cluster", str(tmp_path / "slurm.conf"), "--power", "boot=30s,boot[cloud]=5m"]
    assert main(["simulate", str(tmp_path / "jobs.csv"), *common, "--jobs-out", str(out),
                 "--no-progress"]) == 0
    import pandas as pd
    f = pd.read_csv(out)
    assert f[["job_id", "start_time", "end_time", "configure_time", "nodes"]].values.tolist() \
        == [[1, 0, 100, 0, "n1"], [2, 300, 400, 300, "c[1-2]"], [3, 280, 330, 30, "n[1-2]"],
            [4, 900, 950, 300, "c1"]]
    assert node_boots(cluster, PowerSaving.parse("boot=30,boot[cloud]=5m")).tolist() \
        == [30, 30, 300, 300]
    capsys.readouterr()
    assert main(["check", str(out), "--trace", str(tmp_path / "jobs.csv"), *common]) == 0
    # job 4 started as if c1 booted in 30 s: the checks know c1's own boot
    f.loc[3, ["start_time", "end_time", "configure_time"]] = [630, 680, 30]
    f.to_csv(out, index=False)
    capsys.readouterr()
    assert main(["check", str(out), "--trace", str(tmp_path / "jobs.csv"), *common]) == 1
    assert "not_booted" in capsys.readouterr().out
    assert main(["check", str(out), "--trace", str(tmp_path / "jobs.csv"), "--cluster",
                 str(tmp_path / "slurm.conf"), "--power", "boot=30s"]) == 0


def test_resume_timeout_applies_per_node(tmp_path):
    """A CLOUD partition booting past ResumeTimeout is DOWN for the run; an on-prem node
    that may power down is refused by name; excluded, it is not."""
    cluster = _cluster(tmp_path)
    jobs = JobTable.from_arrays(job_id=[1, 2], submit_time=0, time_limit=100, runtime=10,
                                num_nodes=1, gpus_per_node=0, cpus_per_node=1, user=0)
    late = "SuspendTime=NONE,ResumeTimeout=60,boot=30,boot[cloud]=2m"    # over slurm.conf
    r = simulate(cluster, jobs, "easy", power=late)
    assert r.jobs.nodes.tolist() == ["n1", "n2"]
    s = Scheduler(cluster, "easy", power=late)
    assert s.start_costs.power.up.tolist() == [True, True, False, False]
    with pytest.raises(UnsupportedError, match="'n2' boots in 120 s, over ResumeTimeout"):
        simulate(cluster, jobs, "easy", power=PowerSaving(
            suspend_time=100, resume_timeout=60, boot=30, boots={"n2": 120}))
    simulate(cluster, jobs, "easy", power=PowerSaving(
        suspend_time=100, resume_timeout=60, boot=30, boots={"n2": 120}, exc_nodes=("n2",)))


@pytest.mark.parametrize("text,boot,boots", [
    ("boot=60,boot[cloud]=5m", 60, (("cloud", 300),)),
    ("boot[n[1-2,4]]=30s, Boot[c1]=2m,SuspendTime=600", 60, (("n[1-2,4]", 30), ("c1", 120))),
    ("boot=10", 10, ()),
])
def test_boot_texts_parse(text, boot, boots):
    pm = PowerSaving.parse(text)
    assert (pm.boot, pm.boots) == (boot, boots)
    assert PowerSaving(boots=dict(boots)).boots == boots


@pytest.mark.parametrize("text,match,field", [
    ("boot[cloud]=-5", ">= 0", "power.boot[cloud]"),
    ("boot[cloud]=x", "duration", "power.boot[cloud]"),
    ("boot[cloud]=1,boot[cloud]=2", "twice", "power.boot[cloud]"),
    ("boot[]=3", "names no partition", "power.boot"),
])
def test_boot_texts_are_checked(text, match, field):
    with pytest.raises(InputError, match=match) as e:
        PowerSaving.parse(text)
    assert e.value.field == field


@pytest.mark.parametrize("boots,match", [
    ({"a": -1}, ">= 0"), ([("a", 1), ("a", 2)], "twice"), ({"a": 1.5}, "whole number"),
    (5, "pairs"), ({"": 3}, "partition or a hostlist"),
])
def test_boots_arguments_are_checked(boots, match):
    with pytest.raises(InputError, match=match):
        PowerSaving(boots=boots)


@pytest.mark.parametrize("boots,match,field", [
    ({"x9": 30}, "'x9' is neither a partition nor a node", "power.boot[x9]"),
    ({"n[1-3]": 30}, "'n3' is neither", "power.boot[n[1-3]]"),
    ({"cloud": 300, "c2": 30}, "'c2' is given boot 300 s by boot\\[cloud\\] and 30 s",
     "power.boot[c2]"),
])
def test_boots_are_resolved_on_the_cluster(tmp_path, boots, match, field):
    cluster = _cluster(tmp_path)
    with pytest.raises(InputError, match=match) as e:
        node_boots(cluster, PowerSaving(boots=boots))
    assert e.value.field == field
    # the same time twice is one time
    assert node_boots(cluster, PowerSaving(boots={"cloud": 9, "c2": 9})).tolist() \
        == [60, 60, 9, 9]


def test_cli_refuses_a_bad_boot(tmp_path, capsys):
    (tmp_path / "jobs.csv").write_text(TRACE)
    _cluster(tmp_path)
    with pytest.raises(SystemExit):
        main(["simulate", str(tmp_path / "jobs.csv"), "--power", "boot[cloud]=-1"])
    assert main(["simulate", str(tmp_path / "jobs.csv"), "--cluster",
                 str(tmp_path / "slurm.conf"), "--power", "boot[gpu]=1", "--no-progress"]) != 0
    assert "boot[gpu]" in capsys.readouterr().err
