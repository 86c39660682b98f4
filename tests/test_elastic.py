"""Elastic jobs (--no-kill with a minimum node count): a node failure shrinks them
instead of killing them. The engine against the twin (tests/naive_nodes.py) on random
event streams, the records and summary, the checks, the workload columns, #SBATCH and
the CLI."""
import dataclasses
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
from fastsched.model.elastic import finish, saved_work, work_done
from fastsched.model.errors import InputError
from fastsched.model.lifecycle import Lifecycle
from fastsched.tools.testing import lifecycles, node_event_rows
from test_constraints import SETTINGS, constrained_cases, engine_inputs
from test_lifecycle import tampered


@st.composite
def elastic_lifecycles(draw, jobs):
    """A lifecycle of ``lifecycles`` with most jobs ``--no-kill`` and a minimum of
    0..num_nodes nodes each."""
    lc = draw(lifecycles(len(jobs)))
    n = len(jobs)
    no_kill = draw(st.lists(st.sampled_from([True, True, False]), min_size=n, max_size=n))
    low = [draw(st.integers(0, int(k))) for k in jobs.num_nodes]
    return dataclasses.replace(lc, no_kill=np.array(no_kill, dtype=bool),
                               nodes_min=np.array(low, dtype=np.int64))


def as_twin(cluster, jobs, rows, lc, policy, depth, available=None, *, parts=None,
            deps=None, groups=None, caps=None, rank=None):
    """The engine's run of ``jobs`` with the node events ``rows`` and the lifecycle ``lc``
    (its ``--no-kill`` jobs shrink; with ``lc.regrow`` they regrow), asserted equal to
    the twin's: every record, killed attempt and shape. Returns (the run, the twin's
    records, killed attempts, shapes)."""
    pc = dp = lg = None
    if parts is not None:
        pc, dp, lg = engine_inputs(jobs, parts, deps or {}, groups or {}, caps or [])
    ids = ids_of(jobs)
    key = None if rank is None else np.array([rank[j] for j in ids])
    run = run_nodes(cluster, jobs, policy, depth, available, partitions=pc, dependencies=dp,
                    limits=lg, rank=key, events=NodeEvents.from_rows(rows, cluster.num_nodes),
                    lifecycle=lc)
    killed, resized = [], []
    out, _ = naive_nodes.simulate(
        cluster, naive_nodes.jobs_from_table(jobs), policy, depth, available, partitions=parts,
        deps=deps, groups=groups, caps=caps, rank=rank, events=rows,
        requeue={j: bool(lc.requeue[i]) for i, j in enumerate(ids)},
        checkpoint={j: int(lc.checkpoint_interval[i]) for i, j in enumerate(ids)},
        delay=lc.delay, attempts=killed, resized=resized, regrow=lc.regrow,
        no_kill={j: bool(lc.no_kill[i]) for i, j in enumerate(ids)},
        nodes_min={j: int(lc.nodes_min[i]) for i, j in enumerate(ids)})
    naive_nodes.assert_same_records(run, ids, out)
    assert _rows(ids, run.attempts) == sorted(killed)
    assert (_rows(ids, run.resizes) if lc.elastic else []) == sorted(resized)
    assert (run.resizes is None) == (not lc.elastic)
    return run, out, killed, resized


def ids_of(jobs):
    return [int(j) for j in jobs.job_id]


def _rows(ids, a):
    return sorted((ids[a.job[k]], int(a.attempt[k]), int(a.start[k]), int(a.end[k]),
                   a.alloc_nodes[a.alloc_offsets[k]:a.alloc_offsets[k + 1]].tolist())
                  for k in range(len(a)))


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("conservative", 1)])
@SETTINGS
@given(data=st.data())
def test_shrinks_match_twin(data, policy, depth):
    cluster, available, jobs, parts, deps, groups, caps, rank = data.draw(constrained_cases())
    rows = data.draw(node_event_rows(cluster.num_nodes, max_events=8, max_time=60,
                                     kinds=("down", "down", "down", "up", "drain", "resume")))
    lc = data.draw(elastic_lifecycles(jobs))
    _, _, killed, resized = as_twin(cluster, jobs, rows, lc, policy, depth, available,
                                    parts=parts, deps=deps, groups=groups, caps=caps,
                                    rank=rank)
    event(f"shrinks: {min(len(resized), 3)}, killed: {min(len(killed), 2)}")


@SETTINGS
@given(data=st.data())
def test_runs_with_shrinks_pass_the_checks(data):
    cluster, available, jobs, parts, deps, groups, caps, rank = data.draw(constrained_cases())
    rows = data.draw(node_event_rows(cluster.num_nodes, max_events=8, max_time=60,
                                     kinds=("down", "down", "up", "drain", "resume")))
    lc = data.draw(elastic_lifecycles(jobs))
    r = simulate(cluster, jobs, data.draw(st.sampled_from(["fcfs", "easy", "conservative"])),
                 events=NodeEvents.from_rows(rows, cluster.num_nodes), lifecycle=lc,
                 reservations="nodes")
    report = r.verify()
    assert report.ok, report
    assert ("bad_resize" in report.checks) == (lc.elastic or lc.ranged)
    if lc.elastic:
        event(f"resized records: {min(int(r.attempts['resized'].sum()), 3)}")


def _jobs(runtime, nodes, gpus=8, limit=1000):
    n = len(runtime)
    return JobTable.from_arrays(job_id=np.arange(1, n + 1), submit_time=0, time_limit=limit,
                                runtime=runtime, num_nodes=nodes, gpus_per_node=gpus,
                                cpus_per_node=8, user=0)


def _cluster(n=6):
    return Cluster.homogeneous(n, gpus=8, cpus=8, prefix="gpu")


def test_the_work_model():
    # 4 nodes x 400 s = 1600 node-seconds; 3 nodes from 100, 2 from 150
    starts, widths = [0, 100, 150], [4, 3, 2]
    assert work_done(starts, widths, 0, 150) == 400 + 150
    assert finish(starts, widths, 0, 1600) == 150 + 1050 // 2
    assert finish(starts, widths, 0, 1601) == 150 + 1050 // 2 + 1   # rounded up
    assert finish([0], [4], 10, 1600) == 410                  # one shape: pull + runtime
    assert saved_work(starts, widths, 0, 200, 60) == 400 + 150 + 2 * 30   # checkpoint at 180
    assert saved_work(starts, widths, 0, 200, 0) == 0


def test_a_no_kill_job_shrinks_and_ends_later_and_its_records_are_its_shapes():
    jobs = _jobs([400, 100], [4, 1])
    lc = Lifecycle.of(2, no_kill=[True, False], nodes_min=[2, 0])
    ev = NodeEvents.from_rows([(100, "down", [0]), (150, "down", [1])], 6)
    r = simulate(_cluster(), jobs, "easy", events=ev, lifecycle=lc)
    f = r.jobs[r.jobs.job_id == 1]
    assert f.state.tolist() == ["RESIZING", "RESIZING", "COMPLETED"]
    assert f.attempt.tolist() == [0, 0, 0]
    assert f.start_time.tolist() == [0, 100, 150]
    # 1600 node-seconds: 400 by 100 on 4, 150 by 150 on 3, 1050 left on 2: 525 s
    assert f.end_time.tolist() == [100, 150, 675]
    assert f.nodes.tolist() == ["gpu[001-004]", "gpu[002-004]", "gpu[003-004]"]
    assert f.submit_time.tolist() == [0, 0, 0]
    assert r.schedule.start_time[0] == 0 and r.schedule.end_time[0] == 675
    lcs = r.summary["lifecycle"]
    assert (lcs["attempts"], lcs["killed_attempts"], lcs["shrinks"], lcs["shrunk_jobs"]) == \
        (2, 0, 2, 1)
    gpu_s = 8 * (4 * 100 + 3 * 50 + 2 * 525) + 8 * 100
    assert lcs["allocated_gpu_hours"] == pytest.approx(gpu_s / 3600)
    assert lcs["lost_gpu_hours"] == 0 and lcs["goodput"] == pytest.approx(1.0)
    # a kill would have lost everything so far (no checkpoints), at the widths it ran
    assert lcs["shrink_kept_gpu_hours"] == pytest.approx((32 * 100 + 32 * 100 + 24 * 50) / 3600)
    assert f.num_nodes.tolist() == [4, 3, 2] and f.gpus.tolist() == [32, 24, 16]
    assert r.verify().ok


def test_below_its_minimum_a_shrunk_job_is_killed_and_resumes_from_its_checkpoint():
    jobs = _jobs([400, 100], [4, 1])
    lc = Lifecycle.of(2, no_kill=[True, False], nodes_min=[2, 0], checkpoint_interval=[60, 0],
                      checkpoint_cost=[5, 0], delay=1)
    ev = NodeEvents.from_rows([(100, "down", [0]), (150, "down", [1]), (200, "down", [2])], 6)
    r = simulate(_cluster(7), jobs, "easy", events=ev, lifecycle=lc)
    f = r.jobs[r.jobs.job_id == 1]
    assert f.state.tolist() == ["RESIZING", "RESIZING", "NODE_FAIL", "COMPLETED"]
    assert f.attempt.tolist() == [0, 0, 0, 1]
    # checkpoint at 180: 400 + 150 + 2 * 30 = 610 node-seconds = 152 s at 4 nodes kept
    assert f.start_time.tolist()[3] == 201 and f.end_time.tolist()[3] == 201 + 400 - 152
    lcs = r.summary["lifecycle"]
    assert lcs["lost_gpu_hours"] == pytest.approx(16 * 20 / 3600)     # [180, 200) on 2 nodes
    assert r.verify().ok


def test_the_time_limit_caps_a_shrunk_job():
    jobs = _jobs([400], [4], limit=500)
    lc = Lifecycle.of(1, no_kill=True, nodes_min=1)
    r = simulate(_cluster(4), jobs, "easy", events=NodeEvents.from_rows(
        [(100, "down", [0, 1])], 4), lifecycle=lc)
    f = r.jobs
    assert f.end_time.tolist() == [100, 500] and f.state.tolist() == ["RESIZING", "TIMEOUT"]
    assert r.verify().ok


def test_without_no_kill_runs_are_as_before():
    """Single-node --no-kill jobs cannot shrink: the run is that without the columns."""
    jobs = _jobs([300, 300, 300], [1, 1, 2])
    ev = NodeEvents.from_rows([(100, "down", [0, 2]), (150, "up", [0])], 6)
    plain = simulate(_cluster(), jobs, "easy", events=ev,
                     lifecycle=Lifecycle.of(3, checkpoint_interval=50))
    nokill = simulate(_cluster(), jobs, "easy", events=ev,
                      lifecycle=Lifecycle.of(3, checkpoint_interval=50, no_kill=[1, 1, 0]))
    assert nokill.jobs.equals(plain.jobs)
    assert {k: v for k, v in nokill.summary["lifecycle"].items()
            if not k.startswith("shr") and k != "regrows"} == plain.summary["lifecycle"]


def test_the_resize_checks_catch_broken_records():
    jobs = _jobs([400, 100], [4, 1])
    lc = Lifecycle.of(2, no_kill=[True, False], nodes_min=[2, 0])
    ev = NodeEvents.from_rows([(100, "down", [0]), (150, "down", [1])], 6)
    r = simulate(_cluster(), jobs, "easy", events=ev, lifecycle=lc)
    assert r.verify().ok
    t = r.attempts                      # rows: job 1's three shapes, then job 2
    assert t["resized"].tolist() == [True, True, False, False]
    # shapes overlap: the second starts before the first ended (counted twice)
    assert "bad_resize" in tampered(r, start=(1, 90)).kinds()
    # a shape that does not end RESIZING but is followed by another
    assert "bad_resize" in tampered(r, resized=(0, False)).kinds()
    # the job ends earlier than its node-seconds allow
    assert "resumed_work" in tampered(r, end=(2, 600)).kinds()
    # it shrank below its minimum / without --no-kill / when no node went down
    low = dataclasses.replace(lc, nodes_min=np.array([3, 0]))
    assert "bad_resize" in _check(r, low)
    assert "bad_resize" in _check(r, dataclasses.replace(lc, no_kill=np.array([False, True])))
    assert "bad_resize" in _check(r, lc, NodeEvents.from_rows([(100, "down", [0])], 6))
    # a node set that grows
    nodes = t["alloc_nodes"].copy()
    nodes[t["alloc_offsets"][2]] = 0               # the last shape on node 1 -> node 0
    assert "bad_resize" in tampered(r, alloc_nodes=(slice(None), nodes)).kinds()


def _check(r, lc, events=None):
    from fastsched.verify.lifecycle import Attempts, verify_attempts
    t = r.attempts
    return verify_attempts(r.cluster, r.workload, Attempts(
        t["row"], t["attempt"], t["start"], t["end"], t["killed"], t["alloc_offsets"],
        t["alloc_nodes"], t["pull"], t["resized"]), events or r.events, lc).kinds()


def test_workload_elastic_columns_round_trip(tmp_path):
    cluster = _cluster()
    path = tmp_path / "w.csv"
    head = ("job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,cpus_per_node,"
            "mem_per_node,partition,user,account,no_kill,nodes_min\n")
    path.write_text(head + "1,0,100,50,4,8,8,0,all,u,a,yes,2\n2,0,100,50,1,8,8,0,all,u,a,,\n")
    w = read_workload(path, cluster)
    assert w.no_kill.tolist() == [True, False] and w.nodes_min.tolist() == [2, 0]
    lc = w.lifecycle()
    assert lc.elastic and lc.min_nodes(w.jobs.num_nodes).tolist() == [2, 1]
    write_workload(w, cluster, tmp_path / "back.csv")
    again = read_workload(tmp_path / "back.csv", cluster)
    assert again.no_kill.tolist() == [True, False] and again.nodes_min.tolist() == [2, 0]
    plain = tmp_path / "plain.csv"
    write_workload(Workload(w.jobs, w.account, w.user_names, w.account_names,
                            w.org_of_account, w.org_names), cluster, plain)
    assert "no_kill" not in plain.read_text() and not read_workload(plain, cluster) \
        .lifecycle().elastic
    for row, field in [("1,0,100,50,4,8,8,0,all,u,a,maybe,2", "no_kill"),
                       ("1,0,100,50,4,8,8,0,all,u,a,1,5", "nodes_min"),
                       ("1,0,100,50,4,8,8,0,all,u,a,1,-1", "nodes_min")]:
        path.write_text(head + row + "\n")
        with pytest.raises(InputError, match=f":2: field {field}"):
            read_workload(path, cluster)


def test_sbatch_no_kill_and_a_node_range_reach_the_workload():
    from fastsched.io.sbatch import normalise, parse_script
    from fastsched.io.workload import requests_to_workload
    cluster = _cluster()
    texts = ["#!/bin/bash\n#SBATCH --nodes=2-4 --gpus-per-node=8 -t 10\n#SBATCH --no-kill\n",
             "#!/bin/bash\n#SBATCH -N 3 -t 10 -k\n",
             "#!/bin/bash\n#SBATCH -N 2-4 -t 10\n",
             "#!/bin/bash\n#SBATCH -N 2 -t 10 --no-kill=off\n"]
    norms = [normalise(parse_script(t), cluster) for t in texts]
    assert [n.no_kill for n in norms] == [True, True, False, False]
    assert all("--no-kill" not in n.ignored for n in norms)
    w = requests_to_workload([(n, 0, 60) for n in norms], cluster)
    assert w.jobs.num_nodes.tolist() == [4, 3, 2, 2]     # elastic: starts at its maximum
    assert w.no_kill.tolist() == [True, True, False, False]
    assert w.lifecycle().min_nodes(w.jobs.num_nodes).tolist() == [2, 1, 2, 2]


def test_cli_elastic_job_shrinks_and_check_passes(tmp_path, capsys):
    cluster = _cluster(8)
    jobs = _jobs([900] * 3, [4, 2, 1], limit=2000)
    w = Workload(jobs, np.zeros(3, np.int32), ["u"], ["a"], np.zeros(1, np.int32), ["o"],
                 no_kill=np.array([True, False, False]), nodes_min=np.array([3, 0, 0]))
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=t\nNodeName=gpu[001-008] CPUs=8 Gres=gpu:8\n"
                    "PartitionName=all Nodes=ALL Default=YES\n")
    write_workload(w, cluster, tmp_path / "w.csv")
    ev = tmp_path / "ev.csv"
    ev.write_text("time,event,nodes,reason\n300,down,gpu001,psu\n")
    out, recs = tmp_path / "s.json", tmp_path / "jobs.csv"
    args = ["simulate", str(tmp_path / "w.csv"), "--cluster", str(conf), "--events", str(ev),
            "--summary-json", str(out), "--jobs-out", str(recs), "--no-progress"]
    assert main(args) == 0
    lc = json.loads(out.read_text())["lifecycle"]
    assert lc["shrinks"] == 1 and lc["killed_attempts"] == 0
    assert "shrank" in capsys.readouterr().out
    import pandas as pd
    frame = pd.read_csv(recs)
    one = frame[frame.job_id == 1]
    assert one.state.tolist() == ["RESIZING", "COMPLETED"]
    assert one.end_time.tolist() == [300, 300 + (3600 - 1200) // 3]
    check = ["check", str(recs), "--trace", str(tmp_path / "w.csv"), "--cluster", str(conf),
             "--events", str(ev)]
    assert main(check) == 0
    assert "bad_resize" in capsys.readouterr().out
    k = int(np.flatnonzero((frame.job_id == 1).to_numpy())[1])
    frame.loc[k, "start_time"] = 250                    # overlaps the shape before it
    frame.to_csv(recs, index=False)
    assert main(check) == 1
    assert "bad_resize" in capsys.readouterr().out
