"""Planning with preemptable capacity (``Preemption.backfill``; Slurm's backfill
will-run test with preemptees): the engine against its twin (tests/naive_preemptplan.py)
on random cases, with node failures too, and on cases without dependencies or limits
(where preemptors plan most); the worked example of docs/lifecycle.md through the API
and the CLI (the Scheduler's: tests/test_scheduler_preemptplan.py)."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastsched import simulate
from fastsched.cli import main
from fastsched.io.slurmconf import read_cluster
from fastsched.io.workload import read_workload
from fastsched.sim.preemption import site_preemption
from fastsched.model.cluster import Cluster, Partition
from test_constraints import SETTINGS
from test_nodeplan import node_workloads
from test_preempt import _check_twin

#: the suite's time budget: these drawn runs are long (failures, requeues, twins)
FEWER = settings(SETTINGS, max_examples=17)


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("easy", 2),
                                          ("conservative", 1)])
@FEWER
@given(data=st.data())
def test_partition_prio_backfill_matches_twin(data, policy, depth):
    _check_twin(data, policy, depth, qos=False, with_events=False, backfill=True)


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@FEWER
@given(data=st.data())
def test_qos_backfill_matches_twin(data, policy):
    _check_twin(data, policy, 1, qos=True, with_events=False, backfill=True)


@FEWER
@given(data=st.data())
def test_backfill_with_node_failures_matches_twin(data):
    _check_twin(data, data.draw(st.sampled_from(["easy", "conservative"])), 1,
                qos=data.draw(st.booleans()), with_events=True, backfill=True)


@st.composite
def shared_cases(draw):
    """Cases where preemptors plan most: 2-6 alike nodes, every partition on all of
    them, whole-node and partial jobs, no dependencies or limits."""
    n = draw(st.integers(2, 6))
    parts = [Partition(f"p{k}", np.arange(n)) for k in range(draw(st.integers(2, 3)))]
    cluster = Cluster([f"n{i}" for i in range(n)], [4] * n, [2] * n, [100] * n,
                      partitions=parts)
    available = np.ones(n, dtype=bool)
    jobs = draw(node_workloads(cluster, available, max_jobs=12, max_time=40))
    return (cluster, available, jobs, {int(j): [int(p)] for j, p in
                                       zip(jobs.job_id, jobs.partition)}, {}, {}, [], None)


@pytest.mark.parametrize("policy,depth", [("easy", 1), ("easy", 2), ("conservative", 1)])
@FEWER
@given(data=st.data())
def test_backfill_on_shared_nodes_matches_twin(data, policy, depth):
    _check_twin(data, policy, depth, qos=data.draw(st.booleans()), with_events=False,
                backfill=True, case=data.draw(shared_cases()))


@pytest.fixture(params=[0, 2])
def indexed(request, monkeypatch):
    """The run index forced on from a type's first (or third) plan in a pass: the
    drawn queues are too short to reach the engine's threshold."""
    from fastsched.engine import loop as engine_loop, plan as engine_plan
    monkeypatch.setattr(engine_loop, "_INDEX_AFTER", request.param)
    monkeypatch.setattr(engine_plan, "_INDEX_AFTER_PASS", request.param)
    return request.param


INDEXED = settings(FEWER, max_examples=15,
                   suppress_health_check=list(FEWER.suppress_health_check)
                   + [HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@INDEXED
@given(data=st.data())
def test_backfill_with_run_index_matches_twin(indexed, data, policy):
    """The run index stays on while preemptors plan with their candidates' resources
    (their reservations may leave a node's free capacity negative): same decisions."""
    shared = data.draw(st.booleans())
    _check_twin(data, policy, data.draw(st.sampled_from([1, 2])) if policy == "easy" else 1,
                qos=data.draw(st.booleans()), with_events=not shared and data.draw(st.booleans()),
                backfill=True, case=data.draw(shared_cases()) if shared else None)


# ---- the worked example of docs/lifecycle.md ------------------------------------

CONF = """\
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
NodeName=gpu[01-06] CPUs=64 RealMemory=512000 Gres=gpu:8
PartitionName=scavenger Nodes=ALL PriorityTier=1 Default=YES MaxTime=UNLIMITED
PartitionName=normal Nodes=ALL PriorityTier=5 PreemptMode=OFF MaxTime=UNLIMITED
PartitionName=high Nodes=ALL PriorityTier=10 MaxTime=UNLIMITED
"""
JOBS = """\
job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,cpus_per_node,mem_per_node,\
partition,user,account
1,0,10000,10000,2,8,64,0,high,alice,prod
2,0,86400,36000,2,8,64,0,scavenger,sam,lab
3,100,7200,3600,6,8,64,0,high,alice,prod
4,200,20000,20000,2,8,64,0,normal,bob,dev
"""
#: (job, attempt) -> (start, end) without (opted out) and with (the default, Slurm's)
#: planning with preemptable capacity
NO_BACKFILL = {(1, 0): (0, 10_000), (2, 0): (0, 20_200), (2, 1): (23_800, 59_800),
         (3, 0): (20_200, 23_800), (4, 0): (200, 20_200)}
BACKFILL = {(1, 0): (0, 10_000), (2, 0): (0, 10_000), (2, 1): (13_600, 49_600),
            (3, 0): (10_000, 13_600), (4, 0): (13_600, 33_600)}


def _site(tmp_path):
    conf, jobs = tmp_path / "slurm.conf", tmp_path / "jobs.csv"
    conf.write_text(CONF)
    jobs.write_text(JOBS)
    return conf, jobs


def _records(r):
    j = r.jobs
    return {(int(a), int(b)): (int(s), int(e)) for a, b, s, e in
            zip(j["job_id"], j["attempt"], j["start_time"], j["end_time"])}


@pytest.mark.parametrize("policy", ["easy", "conservative"])
def test_example_high_tier_reservation_keeps_a_job_off_its_nodes(tmp_path, policy):
    """Job 3 (high, 6 nodes) cannot preempt enough at 100 (job 1 is high too): planned
    on the free resources (opted out), its reservation is at job 2's limit end, so job 4
    (normal, never preempted) backfills and job 3 waits for it; counting job 2's nodes
    as free (the default, as Slurm), its reservation is at 10,000 and job 4 waits."""
    conf, path = _site(tmp_path)
    cluster = read_cluster(conf)
    w = read_workload(path, cluster)
    pre = site_preemption(cluster)
    assert pre.backfill
    lc = w.lifecycle(True, 121)
    off = simulate(cluster, w.jobs, policy, preemption=replace(pre, backfill=False),
                   lifecycle=lc)
    assert _records(off) == NO_BACKFILL
    assert off.verify().ok
    r = simulate(cluster, w.jobs, policy, preemption=pre, lifecycle=lc)
    assert _records(r) == BACKFILL
    assert r.verify().ok


def test_preemption_plans_with_preemptable_capacity_by_default():
    """Slurm has no setting that turns it off: the API's default is on."""
    from fastsched.model.preemption import Preemption
    assert Preemption.none().backfill
    assert Preemption("preempt/none", np.zeros((0, 0), dtype=bool),
                      *(np.zeros(0, dtype=np.int64),) * 4).backfill


@pytest.mark.parametrize("flag, job3", [(None, "3,100,10000,13600,"),
                                        ("--preempt-backfill", "3,100,10000,13600,"),
                                        ("--no-preempt-backfill", "3,100,20200,23800,")])
def test_example_cli(tmp_path, capsys, flag, job3):
    conf, path = _site(tmp_path)
    out = tmp_path / "out.csv"
    assert main(["simulate", str(path), "--cluster", str(conf), "--jobs-out", str(out),
                 "--no-progress"] + ([flag] if flag else [])) == 0
    assert "preemption: 1 attempt(s) of 1 job(s) preempted" in capsys.readouterr().out
    text = out.read_text().splitlines()
    assert any(line.startswith(job3) for line in text), text
    assert main(["check", str(out), "--trace", str(path), "--cluster", str(conf)]) == 0
    if flag is None:
        return
    nopre = tmp_path / "nopre.conf"
    nopre.write_text(CONF.replace("PreemptType=preempt/partition_prio", "")
                     .replace("PreemptMode=REQUEUE", ""))
    capsys.readouterr()
    assert main(["simulate", str(path), "--cluster", str(nopre), "--no-progress",
                 flag]) != 0
    assert f"{flag} needs the cluster's PreemptType" in capsys.readouterr().err


def test_cli_help_says_which_is_slurms(capsys):
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--no-preempt-backfill" in text
    assert "(the default, as Slurm, which has no setting to turn it off)" in text
    assert "(not Slurm's behaviour;" in text


def test_flags_are_exclusive(capsys):
    with pytest.raises(SystemExit):
        main(["simulate", "x.swf", "--preempt-backfill", "--no-preempt-backfill"])
    assert "not allowed with argument" in capsys.readouterr().err
