"""Power saving with node events (drain, resume, down, up): the engine against the twin
(tests/naive_nodes.py) on drawn event streams and power models, the attempt checks of
fastsched.verify.lifecycle on those runs (catching a broken record), Slurm's rules on
small cases (a node failing or drained while it boots, a node coming back), and the
CLI (simulate --power with --events / --failures, fastsched check)."""
import json

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from fastsched import Cluster, JobTable, NodeEvents, PowerSaving, simulate
from fastsched.cli import main
from fastsched.model.errors import UnsupportedError
from fastsched.model.lifecycle import Lifecycle
from fastsched.sim.power import engine_power
from fastsched.tools.testing import lifecycles, node_event_rows, power_models
from constrained_twin import attempt_rows, run_both
from test_constraints import SETTINGS, constrained_cases
from test_power import _twin_power

KINDS = ("down", "down", "up", "drain", "drain", "resume")


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("easy", 2),
                                          ("conservative", 1)])
@SETTINGS
@given(data=st.data())
def test_power_with_node_events_matches_twin(data, policy, depth):
    case = data.draw(constrained_cases())
    cluster = case[0]
    pm = data.draw(power_models(cluster))
    rows = data.draw(node_event_rows(cluster.num_nodes, max_events=8, max_time=60,
                                     kinds=KINDS))
    killed = _same_as_twin(case, policy, depth, rows, data.draw(lifecycles(len(case[2]))), pm)
    event(f"killed attempts: {min(len(killed), 3)}, killed CONFIGURING: "
          f"{min(_configuring(killed), 2)}")


def _same_as_twin(case, policy, depth, rows, lc, pm):
    """The engine's run with power model ``pm``, node events ``rows`` and lifecycle
    ``lc`` equals the twin's: records, attempts with their boot times, each start's
    boot. Returns the twin's killed attempts."""
    twin = _twin_power(pm, case[0])
    run, ids, killed = run_both(case, policy, depth, rows=rows, lifecycle=lc,
                                engine={"power": engine_power(pm, case[0])},
                                twin={"power": twin})
    assert attempt_rows(run, ids, "configure") == sorted(killed)
    for i, j in enumerate(ids):
        if run.start[i] >= 0:
            assert run.configure[i] == twin.get("boot_out", {}).get(j, 0), j
    return killed


def _configuring(killed):
    """How many killed attempts were killed while CONFIGURING (they never ran)."""
    return sum(1 for k in killed if k[-1] > 0 and k[2] == k[3])


@st.composite
def outages(draw, num_nodes: int, max_events: int = 6, max_time: int = 40):
    """Drains and downs of 1-3 nodes, each followed by their resume or up 0-15 s later:
    nodes leave while they boot and come back idle, before or after SuspendTime."""
    rows = []
    for _ in range(draw(st.integers(1, max_events))):
        nodes = draw(st.lists(st.integers(0, num_nodes - 1), min_size=1,
                              max_size=min(3, num_nodes), unique=True))
        t, kind = draw(st.integers(0, max_time)), draw(st.sampled_from(["drain", "down"]))
        rows += [(t, kind, nodes), (t + draw(st.integers(0, 15)),
                                    "resume" if kind == "drain" else "up", nodes)]
    return rows


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@SETTINGS
@given(data=st.data())
def test_power_with_outages_matches_twin(data, policy):
    """Short SuspendTimes and outages that end: nodes come back powered or not, and
    drains meet boots."""
    case = data.draw(constrained_cases())
    cluster = case[0]
    pm = data.draw(power_models(cluster, max_time=8))
    killed = _same_as_twin(case, policy, 1, data.draw(outages(cluster.num_nodes)),
                           Lifecycle.of(len(case[2])), pm)
    event(f"killed CONFIGURING: {min(_configuring(killed), 2)}")


@SETTINGS
@given(data=st.data())
def test_runs_with_power_and_events_pass_the_attempt_checks(data):
    cluster, available, jobs, parts, deps, groups, caps, rank = data.draw(constrained_cases())
    rows = data.draw(node_event_rows(cluster.num_nodes, max_events=8, max_time=60,
                                     kinds=KINDS))
    r = simulate(cluster, jobs, data.draw(st.sampled_from(["fcfs", "easy", "conservative"])),
                 events=NodeEvents.from_rows(rows, cluster.num_nodes),
                 lifecycle=data.draw(lifecycles(len(jobs))), reservations="nodes",
                 power=data.draw(power_models(cluster)))
    report = r.verify()
    assert report.ok, report
    assert "on_down_node" in report.checks and "resumed_work" in report.checks
    records = r.jobs
    assert (records["start_time"].dropna() <= records["end_time"].dropna()).all()
    event(f"attempts CONFIGURING when killed: "
          f"{min(int(((records['configure_time'] > 0) & (records['run_time'] == 0) & (records['state'] == 'NODE_FAIL')).sum()), 2)}")


def _cluster(n=4):
    return Cluster.homogeneous(n, gpus=8, cpus=8, prefix="gpu")


def _jobs(runtime, nodes, submit=None):
    k = len(runtime)
    return JobTable.from_arrays(job_id=np.arange(1, k + 1),
                                submit_time=np.zeros(k) if submit is None else submit,
                                runtime=runtime, time_limit=3600, num_nodes=nodes,
                                gpus_per_node=8, cpus_per_node=8, user=0)


def _cloud(cluster, boot=300, **kw):
    return PowerSaving(suspend_time=600, boot=boot, resume_timeout=900, resume_rate=0,
                       cloud_nodes=tuple(cluster.node_names), **kw)


def test_a_node_failing_while_it_boots_requeues_its_job_which_never_ran():
    """Two CLOUD nodes boot 300 s for a 2-node job; node 0 fails at 100 s: the job was
    CONFIGURING, so its attempt starts and ends at 100 s (Slurm resets the start only
    when the nodes are ready) with 100 s of configure and no progress; requeued 121 s
    later, it takes node 1 (booted at 300 s, idle since) and node 2 (a fresh boot)."""
    c = _cluster(4)
    lc = Lifecycle.of(1, checkpoint_interval=[10])
    r = simulate(c, _jobs([1000], [2]), "easy", power=_cloud(c), lifecycle=lc,
                 events=NodeEvents.from_rows([(100, "down", [0])], 4), reservations="nodes")
    t = r.attempts
    assert t["start"].tolist() == [100, 521] and t["end"].tolist() == [100, 1521]
    assert t["configure"].tolist() == [100, 300] and t["killed"].tolist() == [True, False]
    assert t["alloc_nodes"].tolist() == [0, 1, 1, 2]
    assert r.verify().ok


def test_a_drain_of_a_booting_node_requeues_its_jobs_but_not_of_a_ready_one():
    """node_mgr.c: a DRAIN request for a node allocated and being powered up requeues
    its jobs; a drain of a node whose job runs lets it run on."""
    c = _cluster(2)
    pm = _cloud(c)
    early = simulate(c, _jobs([1000], [1]), "easy", power=pm, reservations="nodes",
                     events=NodeEvents.from_rows([(100, "drain", [0])], 2))
    t = early.attempts
    assert t["start"].tolist() == [100, 221 + 300] and t["alloc_nodes"].tolist() == [0, 1]
    late = simulate(c, _jobs([1000], [1]), "easy", power=pm, reservations="nodes",
                    events=NodeEvents.from_rows([(400, "drain", [0])], 2))
    assert late.attempts["start"].tolist() == [300]
    assert late.attempts["end"].tolist() == [1300]
    assert early.verify().ok and late.verify().ok


def test_a_node_that_comes_back_restarts_its_idle_clock_unless_powered_down():
    """Node 0 (not CLOUD, SuspendTime 600) is drained at 0 and resumed at 500, idle since
    0 but not yet powered down: Slurm sets its last_busy at the resume, so a job at 1000
    finds it up (it would have powered down at 600 otherwise). Resumed at 700 instead,
    it is powered down and the job waits for its boot."""
    c = _cluster(1)
    pm = PowerSaving(suspend_time=600, suspend_timeout=30, boot=60, resume_rate=0)

    def run(back):
        return simulate(c, _jobs([100], [1], submit=[1000]), "easy", power=pm,
                        reservations="nodes",
                        events=NodeEvents.from_rows([(0, "drain", [0]), (back, "resume", [0])],
                                                    1))
    assert run(500).jobs["configure_time"].tolist() == [0]
    assert run(700).jobs["configure_time"].tolist() == [60]


@pytest.mark.parametrize("configure,kinds", [(450, {"early_start", "overcommit"}),
                                             (0, {"not_booted"})])
def test_the_checks_catch_a_broken_attempt(configure, kinds):
    """The second attempt (allocated at 221, CONFIGURING 300 s) said allocated at 71,
    before its requeue and while the first held node 1, or not CONFIGURING at all
    although its fresh CLOUD node had to boot."""
    c = _cluster(4)
    pm = _cloud(c)
    r = simulate(c, _jobs([1000], [2]), "easy", power=pm, reservations="nodes",
                 lifecycle=Lifecycle.of(1),
                 events=NodeEvents.from_rows([(100, "down", [0])], 4))
    assert {"not_booted", "resume_rate"} <= set(r.verify().checks)
    from fastsched.verify.lifecycle import Attempts, verify_attempts
    t = dict(r.attempts)
    t["configure"] = t["configure"].copy()
    t["configure"][1] = configure
    report = verify_attempts(r.cluster, r.workload, Attempts(
        t["row"], t["attempt"], t["start"], t["end"], t["killed"], t["alloc_offsets"],
        t["alloc_nodes"], configure=t["configure"]), r.events, r.lifecycle, power=pm)
    assert kinds <= {v.kind for v in report.violations}


def test_what_is_not_modelled_is_refused():
    c = _cluster(2)
    ev = NodeEvents.from_rows([(100, "down", [0])], 2)
    with pytest.raises(UnsupportedError, match="over ResumeTimeout"):
        simulate(c, _jobs([10], [1]), "easy", events=ev, reservations="nodes",
                 power=_cloud(c, boot=1000))
    with pytest.raises(UnsupportedError, match="no-kill"):
        simulate(c, _jobs([10], [1]), "easy", events=ev, reservations="nodes",
                 power=_cloud(c), lifecycle=Lifecycle.of(1, no_kill=[True]))


def test_cli_power_with_events_and_failures(tmp_path, capsys):
    conf = tmp_path / "burst.conf"
    conf.write_text("SuspendTime=300\nResumeTimeout=900\n"
                    "NodeName=n[1-4] CPUs=64 RealMemory=512000 Gres=gpu:8\n"
                    "NodeName=c[1-4] CPUs=64 RealMemory=512000 Gres=gpu:8 State=CLOUD\n"
                    "PartitionName=gpu Nodes=n[1-4],c[1-4] Default=YES MaxTime=UNLIMITED\n")
    assert main(["generate", "workload", "ai-mix", "--cluster", str(conf), "--jobs", "60",
                 "--seed", "1", "--load", "0.9", "-o", str(tmp_path / "w.csv")]) == 0
    ev = tmp_path / "events.csv"
    ev.write_text("time,event,nodes\n3000,down,n1\n3100,drain,c[1-2]\n9000,up,n1\n"
                  "9500,resume,c[1-2]\n")
    out = tmp_path / "out.csv"
    args = ["simulate", str(tmp_path / "w.csv"), "--cluster", str(conf), "--events", str(ev),
            "--power", "boot=5m,cost=3.2,cloud-cost=6.4", "--jobs-out", str(out),
            "--summary-json", str(tmp_path / "s.json")]
    assert main(args) == 0
    assert "power saving" in capsys.readouterr().out
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["power"]["power_ups"] > 0 and summary["node_events"] == 4
    assert main(["check", str(out), "--trace", str(tmp_path / "w.csv"), "--cluster", str(conf),
                 "--events", str(ev), "--power", "boot=5m"]) == 0
    assert main(args[:-4] + ["--failures", "mtbf=1d,repair=2h,seed=3", "--jobs-out",
                             str(out)]) == 0
