"""Node failures (down/up), requeue and checkpoint resume: the engine against the twin
(tests/naive_nodes.py) on random event streams, the records and summary of a run,
the failure model, the workload columns and the CLI."""
import json

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

import naive_nodes
from fastsched import Cluster, JobTable, NodeEvents, simulate
from fastsched.cli import main
from fastsched.engine import run_nodes
from fastsched.io.workload import Workload, read_workload, write_workload
from fastsched.model.errors import InputError
from fastsched.model.failures import FailureModel
from fastsched.model.lifecycle import REQUEUE_DELAY, Lifecycle, goodput
from fastsched.engine.requeue import REQUEUE_DELAY as ENGINE_DELAY
from fastsched.tools.testing import lifecycles, node_event_rows
from constrained_twin import attempt_rows, run_both
from test_constraints import SETTINGS, WindowedReorder, constrained_cases, engine_inputs


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("easy", 2),
                                          ("conservative", 1)])
@SETTINGS
@given(data=st.data())
def test_failures_and_requeues_match_twin(data, policy, depth):
    case = data.draw(constrained_cases())
    rows = data.draw(node_event_rows(case[0].num_nodes, max_events=8, max_time=60,
                                     kinds=("down", "down", "down", "up", "drain", "resume")))
    run, ids, killed = run_both(case, policy, depth, rows=rows,
                                lifecycle=data.draw(lifecycles(len(case[2]))))
    assert attempt_rows(run, ids) == sorted(killed)
    event(f"killed attempts: {min(len(killed), 3)}, requeued: "
          f"{min(sum(int(x) for x in run.attempts.restarts), 2)}")


@SETTINGS
@given(data=st.data(), period=st.integers(1, 15))
def test_failures_with_recomputed_priorities_match_twin(data, period):
    """A job killed and requeued between two recomputations keeps the rank the last one
    gave it (running jobs are in the queue window)."""
    cluster, available, jobs, parts, deps, groups, caps, _ = data.draw(constrained_cases())
    rows = data.draw(node_event_rows(cluster.num_nodes, max_events=8, max_time=60,
                                     kinds=("down", "down", "up", "drain", "resume")))
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    ids = [int(j) for j in jobs.job_id]
    reorder = lambda b, j: (j * 5 + b) % 7  # noqa: E731
    run = run_nodes(cluster, jobs, "easy", 1, available, partitions=pc, dependencies=dp,
                    limits=lg, reorder=WindowedReorder(reorder, ids), period=period,
                    events=NodeEvents.from_rows(rows, cluster.num_nodes),
                    lifecycle=Lifecycle.of(len(jobs)))
    out, _ = naive_nodes.simulate(
        cluster, naive_nodes.jobs_from_table(jobs), "easy", 1, available, partitions=parts,
        deps=deps, groups=groups, caps=caps, events=rows, period=period,
        reorder=lambda b, s, e, el: {j: reorder(b, j) for j in ids})
    naive_nodes.assert_same_records(run, ids, out)


def _jobs(runtime, nodes, gpus=8):
    n = len(runtime)
    return JobTable.from_arrays(job_id=np.arange(1, n + 1), submit_time=0, time_limit=1000,
                                runtime=runtime, num_nodes=nodes, gpus_per_node=gpus,
                                cpus_per_node=8, user=0)


def _cluster(n=4):
    return Cluster.homogeneous(n, gpus=8, cpus=8, prefix="gpu")


def test_a_failure_kills_requeues_and_resumes_from_the_last_checkpoint():
    jobs = _jobs([500, 500, 300, 800], [2, 1, 1, 1])
    lc = Lifecycle.of(4, requeue=[1, 1, 0, 1], checkpoint_interval=[60, 0, 0, 0],
                      checkpoint_cost=[10, 0, 0, 0])
    events = NodeEvents.from_rows([(100, "down", [0]), (200, "up", [0])], 4)
    r = simulate(_cluster(), jobs, "easy", events=events, lifecycle=lc)
    f = r.jobs
    one = f[f.job_id == 1]
    # killed at 100 after 100 s: 60 s kept; eligible again at 100 + 121, started when
    # two nodes were free (node 0 up at 200, job 3's node free at 300); 500 - 60 left
    assert one.state.tolist() == ["NODE_FAIL", "COMPLETED"]
    assert one.attempt.tolist() == [0, 1]
    assert one.start_time.tolist() == [0, 300] and one.end_time.tolist() == [100, 740]
    assert one.submit_time.tolist() == [0, 100]         # Slurm resets it at the requeue
    assert one.nodes.tolist() == ["gpu[001-002]", "gpu[001,004]"]
    assert f[f.job_id == 4].start_time.tolist() == [100]    # took the freed node
    lc_sum = r.summary["lifecycle"]
    assert (lc_sum["attempts"], lc_sum["killed_attempts"], lc_sum["requeues"],
            lc_sum["node_fail_jobs"]) == (5, 1, 1, 0)
    gpu_s = 16 * (100 + 440) + 8 * (500 + 300 + 800)
    assert lc_sum["allocated_gpu_hours"] == pytest.approx(gpu_s / 3600)
    assert lc_sum["lost_gpu_hours"] == pytest.approx(16 * 40 / 3600)
    ckpt = 16 * 10 * (100 // 60 + 440 // 60)
    assert lc_sum["checkpoint_gpu_hours"] == pytest.approx(ckpt / 3600)
    assert lc_sum["goodput"] == pytest.approx((gpu_s - 16 * 40 - ckpt) / gpu_s)
    assert REQUEUE_DELAY == ENGINE_DELAY == 121


def test_a_job_not_requeued_ends_node_fail_and_its_dependents_see_it_fail():
    from fastsched.model.constraints import AFTERANY, AFTEROK, Dependencies
    jobs = _jobs([500, 100, 100], [1, 1, 1])
    deps = Dependencies(np.array([0, 0, 1, 2]), np.array([0, 0]), np.array([AFTEROK, AFTERANY]))
    lc = Lifecycle.of(3, requeue=False)
    r = simulate(_cluster(2), jobs, "easy", dependencies=deps, lifecycle=lc,
                 events=NodeEvents.from_rows([(50, "down", [0])], 2))
    assert r.states().tolist()[0] == "NODE_FAIL"
    assert r.schedule.end_time.tolist()[0] == 50
    assert r.schedule.start_time.tolist()[1:] == [-1, 50]   # afterok never, afterany at 50
    assert r.summary["lifecycle"]["node_fail_jobs"] == 1
    assert len(r.jobs) == 3


def test_down_nodes_take_no_job_until_up_and_jobs_ending_then_complete():
    jobs = _jobs([100, 100, 100], [1, 1, 1])
    events = NodeEvents.from_rows([(100, "down", [0, 1]), (400, "up", [0])], 2)
    r = simulate(_cluster(2), jobs, "fcfs", events=events)
    assert r.states().tolist() == ["COMPLETED"] * 3        # ended at 100: not killed
    assert r.schedule.start_time.tolist() == [0, 0, 400]
    assert r.summary["lifecycle"]["killed_attempts"] == 0


def test_failure_model_is_seeded_and_has_the_asked_rate():
    m = FailureModel.parse("mtbf=30d,repair=4h,seed=1")
    a, b = m.events(200, 365 * 86400), m.events(200, 365 * 86400)
    assert np.array_equal(a.time, b.time) and np.array_equal(a.nodes, b.nodes)
    downs = int((a.kind == 2).sum())
    assert 2000 < downs < 2700                     # 200 nodes x 365 / (30 + 1/6) days
    other = FailureModel.parse("mtbf=30d,repair=4h,seed=2").events(200, 365 * 86400)
    assert not np.array_equal(a.time[:10], other.time[:10])
    w = FailureModel.parse("mtbf=30d,repair=4h,seed=1,dist=weibull,shape=0.7")
    assert w.dist == "weibull" and w.shape == 0.7
    assert 1800 < int((w.events(200, 365 * 86400).kind == 2).sum()) < 2900
    sw = FailureModel.parse("mtbf=10d,repair=1h,seed=1,scope=switch,horizon=100d")
    ev = sw.events(16, 0, leaf=np.arange(16) // 4)
    assert ev.time.max() < 100 * 86400 + 3600
    for e in range(len(ev)):
        nodes = ev.at(e)[2]
        assert len(nodes) == 4 and len(set(nodes // 4)) == 1   # a whole leaf at once


@pytest.mark.parametrize("text,match", [
    ("mtbf=30d", "repair"), ("mtbf=30x,repair=1h", "duration"), ("mtbf=1d,repair=1h,dist=x",
                                                                 "dist"),
    ("mtbf=1d,repair=1h,shape=2", "weibull"), ("mtbf=1d,repair=1h,colour=red", "key"),
    ("mtbf=1d,repair=1h,scope=rack", "scope"), ("mtbf=1d,repair=1h,seed=x", "seed")])
def test_failure_specs_are_checked(text, match):
    with pytest.raises(InputError, match=match):
        FailureModel.parse(text)
    with pytest.raises(InputError, match="topology"):
        FailureModel.parse("mtbf=1d,repair=1h,scope=switch").events(4, 100)


def test_lifecycle_is_checked():
    with pytest.raises(InputError, match="checkpoint"):
        Lifecycle.of(2, checkpoint_interval=[10, 0], checkpoint_cost=[10, 0])
    with pytest.raises(InputError, match="checkpoint"):
        Lifecycle.of(2, checkpoint_interval=[0, 0], checkpoint_cost=[1, 0])
    with pytest.raises(InputError, match="delay"):
        Lifecycle.of(2, delay=-1)
    with pytest.raises(InputError, match="lifecycle covers"):
        simulate(_cluster(), _jobs([1], [1]), "easy", lifecycle=Lifecycle.of(2))


def test_goodput_splits_gpu_time():
    # 100 s killed (checkpoint every 30 s, 5 s each), then 40 s to the end
    g = goodput([100, 40], [2, 2], [30, 30], [5, 5], [True, False])
    assert g["allocated_gpu_hours"] == pytest.approx(280 / 3600)
    assert g["lost_gpu_hours"] == pytest.approx(2 * 10 / 3600)
    assert g["checkpoint_gpu_hours"] == pytest.approx(2 * 5 * (3 + 1) / 3600)
    assert g["goodput"] == pytest.approx((280 - 20 - 40) / 280)


def test_workload_lifecycle_columns_round_trip(tmp_path):
    cluster = _cluster()
    path = tmp_path / "w.csv"
    path.write_text(
        "job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,cpus_per_node,"
        "mem_per_node,partition,user,account,requeue,checkpoint_interval,checkpoint_cost\n"
        "1,0,100,50,1,8,8,0,all,u,a,no,60,5\n"
        "2,0,100,50,1,8,8,0,all,u,a,,,\n"
        "3,0,100,50,1,8,8,0,all,u,a,1,0,0\n")
    w = read_workload(path, cluster)
    assert w.requeue.tolist() == [0, -1, 1]
    assert w.checkpoint_interval.tolist() == [60, 0, 0]
    lc = w.lifecycle(requeue=False)
    assert lc.requeue.tolist() == [False, False, True] and lc.delay == 121
    out = tmp_path / "back.csv"
    write_workload(w, cluster, out)
    again = read_workload(out, cluster)
    assert again.requeue.tolist() == [0, -1, 1]
    assert again.checkpoint_cost.tolist() == [5, 0, 0]
    for row, field in [("1,0,100,50,1,8,8,0,all,u,a,maybe,0,0", "requeue"),
                       ("1,0,100,50,1,8,8,0,all,u,a,1,10,10", "checkpoint_cost"),
                       ("1,0,100,50,1,8,8,0,all,u,a,1,-5,0", "checkpoint_interval")]:
        path.write_text(path.read_text().splitlines()[0] + "\n" + row + "\n")
        with pytest.raises(InputError, match=f":2: field {field}"):
            read_workload(path, cluster)


@pytest.mark.parametrize("keys,delay", [("", 121), ("AuthInfo=auth/munge,cred_expire=30\n", 31),
                                        ("SchedulerParameters=bf_continue,requeue_delay=5\n"
                                         "AuthInfo=cred_expire=30\n", 6),
                                        ("SchedulerParameters=requeue_delay=0\n", 1)])
def test_the_requeue_delay_comes_from_slurm_conf(tmp_path, keys, delay):
    """Slurm's ``_requeue_delay``: SchedulerParameters' requeue_delay, else the
    credential's lifetime; the begin time is one second past it."""
    import warnings

    from fastsched.io.slurmconf import read_cluster
    from fastsched.model.errors import ConfigWarning
    from fastsched.sim.lifecycle import site_requeue
    conf = tmp_path / "slurm.conf"
    conf.write_text("NodeName=n[1-2] CPUs=4\nPartitionName=p Nodes=ALL\n" + keys)
    with warnings.catch_warnings():          # a key it applies is not "not modelled"
        warnings.simplefilter("error", ConfigWarning)
        cluster = read_cluster(conf)
    assert site_requeue(cluster) == (True, delay)
    conf.write_text("NodeName=n[1-2] CPUs=4\nPartitionName=p Nodes=ALL\n"
                    "SchedulerParameters=requeue_delay=soon\n")
    with pytest.raises(InputError, match="requeue_delay"):
        site_requeue(read_cluster(conf))


def test_cli_failures_and_down_events(tmp_path, capsys):
    cluster = _cluster(8)
    jobs = _jobs([900] * 6, [2, 2, 1, 1, 4, 1])
    w = Workload(jobs, np.zeros(6, np.int32), ["u"], ["a"], np.zeros(1, np.int32), ["o"],
                 checkpoint_interval=np.full(6, 300), checkpoint_cost=np.full(6, 30))
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=t\nNodeName=gpu[001-008] CPUs=8 Gres=gpu:8\n"
                    "PartitionName=all Nodes=ALL Default=YES\nJobRequeue=0\n")
    write_workload(w, cluster, tmp_path / "w.csv")
    ev = tmp_path / "ev.csv"
    ev.write_text("time,event,nodes,reason\n500,down,gpu[001-002],psu\n5000,up,gpu[001-002],\n")
    out = tmp_path / "s.json"
    recs = tmp_path / "jobs.csv"
    args = ["simulate", str(tmp_path / "w.csv"), "--cluster", str(conf), "--events", str(ev),
            "--summary-json", str(out), "--jobs-out", str(recs), "--no-progress"]
    assert main(args) == 0
    lc = json.loads(out.read_text())["lifecycle"]
    assert lc["node_fail_jobs"] >= 1 and lc["requeues"] == 0       # JobRequeue=0
    assert main(args + ["--requeue"]) == 0
    lc = json.loads(out.read_text())["lifecycle"]
    assert lc["node_fail_jobs"] == 0 and lc["requeues"] >= 1
    assert "goodput" in capsys.readouterr().out
    import pandas as pd
    frame = pd.read_csv(recs)
    assert "NODE_FAIL" in set(frame.state) and frame.attempt.max() >= 1
    check = ["check", str(recs), "--trace", str(tmp_path / "w.csv"), "--cluster", str(conf),
             "--events", str(ev)]
    assert main(check) == 0
    assert "resumed_work" in capsys.readouterr().out
    k = int(np.flatnonzero(frame.attempt.to_numpy() == 1)[0])
    frame.loc[k, "end_time"] += 30                      # ran 30 s more than it had left
    frame.to_csv(recs, index=False)
    assert main(check) == 1
    assert "resumed_work" in capsys.readouterr().out
    assert main(["simulate", str(tmp_path / "w.csv"), "--cluster", str(conf),
                 "--failures", "mtbf=1h,repair=10m,seed=3", "--requeue",
                 "--summary-json", str(out), "--no-progress"]) == 0
    summary = json.loads(out.read_text())
    assert summary["node_events"] > 0 and summary["lifecycle"]["attempts"] >= 6
    with pytest.raises(SystemExit):
        main(["simulate", str(tmp_path / "w.csv"), "--failures", "mtbf=1d"])


def test_a_requeued_job_that_never_starts_again_keeps_its_killed_attempt(tmp_path):
    """Job 1 needs both nodes; one fails for good: its killed attempt is a record, and
    its own record is the next attempt, PENDING since the kill, waiting for the node
    (ReqNodeNotAvail, not a dependency it has none of); `check` accepts the records."""
    jobs = _jobs([100, 50], [2, 1])
    r = simulate(_cluster(2), jobs, "easy", lifecycle=Lifecycle.of(2, requeue=True),
                 events=NodeEvents.from_rows([(10, "down", [1])], 2))
    one = r.jobs[r.jobs.job_id == 1]
    assert one.state.tolist() == ["NODE_FAIL", "PENDING"]
    assert one.attempt.tolist() == [0, 1] and one.submit_time.tolist() == [0, 10]
    assert one.start_time.tolist()[0] == 0 and one.end_time.tolist()[0] == 10
    assert one.reason.tolist() == ["", "ReqNodeNotAvail"]
    conf = tmp_path / "slurm.conf"
    conf.write_text("NodeName=gpu[001-002] CPUs=8 Gres=gpu:8\n"
                    "PartitionName=all Nodes=ALL Default=YES\n")
    w = Workload(jobs, np.zeros(2, np.int32), ["u"], ["a"], np.zeros(1, np.int32), ["o"])
    write_workload(w, _cluster(2), tmp_path / "w.csv")
    (tmp_path / "ev.csv").write_text("time,event,nodes\n10,down,gpu002\n")
    files = [str(tmp_path / f) for f in ("w.csv", "ev.csv", "jobs.csv")]
    assert main(["simulate", files[0], "--cluster", str(conf), "--events", files[1],
                 "--requeue", "--jobs-out", files[2], "--no-progress"]) == 0
    assert main(["check", files[2], "--trace", files[0], "--cluster", str(conf),
                 "--events", files[1]]) == 0


@SETTINGS
@given(data=st.data())
def test_runs_with_failures_pass_the_attempt_checks(data):
    cluster, available, jobs, parts, deps, groups, caps, rank = data.draw(constrained_cases())
    rows = data.draw(node_event_rows(cluster.num_nodes, max_events=8, max_time=60,
                                     kinds=("down", "down", "up", "drain", "resume")))
    lc = data.draw(lifecycles(len(jobs)))
    r = simulate(cluster, jobs, data.draw(st.sampled_from(["fcfs", "easy", "conservative"])),
                 events=NodeEvents.from_rows(rows, cluster.num_nodes), lifecycle=lc,
                 reservations="nodes")
    report = r.verify()
    assert report.ok, report
    assert "resumed_work" in report.checks


def tampered(r, **changes):
    """verify_attempts of ``r``'s attempts with ``changes`` (key=(index, value)), under
    its preemption rules where it has them."""
    from fastsched.verify.lifecycle import Attempts, verify_attempts
    t = dict(r.attempts)
    for key, (k, value) in changes.items():
        t[key] = t[key].copy()
        t[key][k] = value
    return verify_attempts(r.cluster, r.workload, Attempts(
        t["row"], t["attempt"], t["start"], t["end"], t["killed"], t["alloc_offsets"],
        t["alloc_nodes"], t.get("pull"), resized=t.get("resized"),
        preempted=t.get("preempted"), partition=t["partition"]), r.events, r.lifecycle,
        preemption=r.preemption, partitions=r.partitions)


def test_the_attempt_checks_catch_broken_records():
    jobs = _jobs([500, 500, 300, 800], [2, 1, 1, 1])
    lc = Lifecycle.of(4, checkpoint_interval=[60, 0, 0, 0], checkpoint_cost=[10, 0, 0, 0])
    events = NodeEvents.from_rows([(100, "down", [0]), (200, "up", [0])], 4)
    r = simulate(_cluster(), jobs, "easy", events=events, lifecycle=lc)
    assert r.verify().ok
    t = r.attempts                     # rows: job 1 attempts 0 and 1, then jobs 2-4
    assert t["row"].tolist()[:2] == [0, 0] and t["killed"].tolist()[:2] == [True, False]
    # the second attempt starts before the first ended + the delay
    assert "attempt_overlap" in tampered(r, start=(1, 150), end=(1, 590)).kinds()
    # it resumes more work than was checkpointed (60 s): runs 400 s instead of 440
    assert "resumed_work" in tampered(r, end=(1, 700)).kinds()
    # it runs on node 0 while it is down
    bad = tampered(r, start=(1, 150), end=(1, 590))
    assert "on_down_node" in bad.kinds()
    # a kill when no node of the attempt went down
    assert "killed_without_failure" in tampered(r, end=(0, 90)).kinds()


def test_sbatch_requeue_options_reach_the_workload():
    from fastsched.io.sbatch import normalise, parse_script
    from fastsched.io.workload import requests_to_workload
    cluster = _cluster()
    texts = ["#!/bin/bash\n#SBATCH -N 1 --gpus-per-node=8 -t 10\n#SBATCH --no-requeue\n",
             "#!/bin/bash\n#SBATCH -N 1 -t 10 --requeue\n",
             "#!/bin/bash\n#SBATCH -N 1 -t 10\n",
             "#!/bin/bash\n#SBATCH --requeue\n#SBATCH -N 1 -t 10 --no-requeue\n"]
    norms = [normalise(parse_script(t), cluster) for t in texts]
    assert [n.requeue for n in norms] == [False, True, None, False]
    assert all("--requeue" not in n.ignored and "--no-requeue" not in n.ignored for n in norms)
    w = requests_to_workload([(n, 0, 60) for n in norms], cluster)
    assert w.requeue.tolist() == [0, 1, -1, 0]
    assert w.lifecycle(requeue=True).requeue.tolist() == [False, True, True, False]


def test_a_run_with_failures_resumes_from_any_checkpoint_exactly():
    import pickle

    import cloudpickle
    import fastsched as fs
    from fastsched.sim.checkpoint import Checkpoints

    class EveryPause(Checkpoints):
        def __init__(self):
            super().__init__("/dev/null", 0)
            self.states = []

        def save(self, state):
            self.states.append(cloudpickle.dumps(state))

    cluster = fs.ai_cluster("ai-8k")
    w = fs.ai_mix(cluster, 300, seed=4)
    lc = Lifecycle.of(len(w.jobs), requeue=np.arange(len(w.jobs)) % 3 > 0,
                      checkpoint_interval=600, checkpoint_cost=30)
    failures = FailureModel.parse("mtbf=20d,repair=2h,seed=5")

    def run(**kw):
        return simulate(cluster, w.jobs, "easy", failures=failures, lifecycle=lc, **kw)
    whole = run()
    assert whole.summary["lifecycle"]["killed_attempts"] > 5
    assert whole.verify().ok
    keep = EveryPause()
    run(checkpoints=keep)
    assert len(keep.states) > 3
    for k in (1, len(keep.states) // 2, len(keep.states) - 1):
        resumed = run(resume=pickle.loads(keep.states[k]))
        assert resumed.jobs.equals(whole.jobs)
        assert resumed.summary["lifecycle"] == whole.summary["lifecycle"]


@SETTINGS
@given(data=st.data())
def test_node_events_update_partitions_and_capacities_as_a_rebuild_would(data):
    from fastsched.engine.inputs import new_nodes
    from fastsched.engine.loop import _EventLoop
    from fastsched.engine.state import with_capacity
    cluster, available, jobs, parts, deps, groups, caps, rank = data.draw(constrained_cases())
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    loop = _EventLoop(cluster, jobs, "easy", 1, available, pc, dp, lg)
    for t, kind, nodes in sorted(data.draw(node_event_rows(cluster.num_nodes, max_events=6)),
                                 key=lambda r: r[0]):
        loop.apply_node_event(t, kind, nodes)
        rebuilt = new_nodes(cluster, loop.avail)
        for field in ("poff", "pflat", "pbits"):
            np.testing.assert_array_equal(getattr(loop.nodes, field), getattr(rebuilt, field))
        np.testing.assert_array_equal(loop.types.cap, with_capacity(loop.types, rebuilt).cap)


def test_the_counts_model_takes_no_lifecycle():
    from fastsched.model.errors import UnsupportedError
    with pytest.raises(UnsupportedError, match="lifecycle"):
        simulate(Cluster.homogeneous(4), _jobs([10], [1], gpus=0), "easy",
                 reservations="counts", lifecycle=Lifecycle.of(1))
