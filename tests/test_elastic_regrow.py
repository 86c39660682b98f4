"""Regrowth (``Lifecycle.regrow``, ``simulate --regrow``): a running ``--no-kill`` job on
fewer nodes than it asks for takes nodes that come back, its work left going faster in
proportion. The engine against the twin (tests/naive_elastic.py ``regrow``, the rule
written out) on random event streams, the records and summary, the checks (bad_resize,
overcommit, resumed_work), the refusals and the CLI."""
import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from fastsched import Cluster, JobTable, NodeEvents, simulate
from fastsched.cli import main
from fastsched.engine import run_nodes
from fastsched.io.workload import Workload, write_workload
from fastsched.model.errors import UnsupportedError
from fastsched.model.lifecycle import Lifecycle
from fastsched.tools.testing import node_event_rows
from constrained_twin import assert_same_runs
from test_constraints import SETTINGS, constrained_cases
from test_elastic import _cluster, _jobs, _rows, as_twin, elastic_lifecycles, ids_of
from test_lifecycle import tampered

#: the suite's time budget: these drawn runs are long (failures, requeues, twins)
FEWER = settings(SETTINGS, max_examples=17)
_KINDS = ("down", "down", "up", "drain", "resume")


@st.composite
def _elastic_cases(draw):
    """A few alike nodes, multi-node jobs, most ``--no-kill`` (some with a node range),
    and node events: random downs, ups, drains and resumes, plus, most of the time, a
    node of a job that a run without events has on several nodes going down while it
    runs and coming back (up or resume) before it would end: random events alone rarely
    shrink a job and give it a node back."""
    n = draw(st.integers(3, 7))
    cluster = Cluster.homogeneous(n, gpus=4, cpus=4, prefix="g")
    k = draw(st.integers(1, 6))
    limit = np.array(draw(st.lists(st.integers(20, 200), min_size=k, max_size=k)))
    share = np.array(draw(st.lists(st.sampled_from([0.3, 0.6, 1.0, 1.3]), min_size=k,
                                   max_size=k)))
    jobs = JobTable.from_arrays(
        job_id=np.arange(1, k + 1),
        submit_time=sorted(draw(st.lists(st.integers(0, 40), min_size=k, max_size=k))),
        time_limit=limit, runtime=(limit * share).astype(np.int64),
        num_nodes=draw(st.lists(st.integers(1, n), min_size=k, max_size=k)),
        gpus_per_node=draw(st.lists(st.sampled_from([1, 2, 4]), min_size=k, max_size=k)),
        cpus_per_node=1, user=0)
    rows = draw(node_event_rows(n, max_events=4, max_time=150, kinds=_KINDS))
    lc = dataclasses.replace(draw(elastic_lifecycles(jobs)), regrow=True)
    plain = run_nodes(cluster, jobs, "easy")
    wide = np.flatnonzero((plain.start >= 0) & (jobs.num_nodes > 1)
                          & (plain.end > plain.start + 2))
    no_kill, low = lc.no_kill.copy(), lc.nodes_min.copy()
    for _ in range(draw(st.integers(0, 2)) if len(wide) else 0):
        i = int(draw(st.sampled_from(wide.tolist())))
        no_kill[i], low[i] = True, min(low[i], jobs.num_nodes[i] - 1)   # it shrinks
        s, e = int(plain.start[i]), int(plain.end[i])
        down = draw(st.integers(s + 1, e - 2))
        x = int(draw(st.sampled_from(
            plain.alloc_nodes[plain.alloc_offsets[i]:plain.alloc_offsets[i + 1]].tolist())))
        rows += [(down, "down", [x]), (draw(st.integers(down, e - 1)),
                                       draw(st.sampled_from(["up", "resume"])), [x])]
    return cluster, jobs, rows, dataclasses.replace(lc, no_kill=no_kill, nodes_min=low)


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("easy", 2),
                                          ("conservative", 1)])
@FEWER
@given(case=_elastic_cases())
def test_regrowth_of_failed_jobs_matches_twin(case, policy, depth):
    cluster, jobs, rows, lc = case
    _, out, _, resized = as_twin(cluster, jobs, rows, lc, policy, depth)
    event(f"resizes: {min(len(resized), 3)}, regrowths: {min(_regrowths(resized, out), 2)}")


def _regrowths(resized, out):
    """About how many shapes of the twin's ``resized`` log a wider one follows (after
    an attempt's last logged shape: the job's record in ``out``), for the statistics."""
    log = sorted(resized)
    nxt = [len(b[4]) if a[:2] == b[:2] else len(out.get(a[0], (0, 0, []))[2])
           for a, b in zip(log, log[1:] + [(None, None)])]
    return sum(w > len(a[4]) for a, w in zip(log, nxt))


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("easy", 2),
                                          ("conservative", 1)])
@FEWER
@given(data=st.data())
def test_regrowth_matches_twin(data, policy, depth):
    cluster, available, jobs, parts, deps, _, _, rank = data.draw(constrained_cases())
    rows = data.draw(node_event_rows(cluster.num_nodes, max_events=8, max_time=60,
                                     kinds=_KINDS))
    lc = dataclasses.replace(data.draw(elastic_lifecycles(jobs)), regrow=True)
    _, out, _, resized = as_twin(cluster, jobs, rows, lc, policy, depth, available,
                                 parts=parts, deps=deps, rank=rank)
    event(f"resizes: {min(len(resized), 3)}, regrowths: {min(_regrowths(resized, out), 2)}")


@FEWER
@given(data=st.data())
def test_runs_with_regrowth_pass_the_checks(data):
    cluster, jobs, rows, lc = data.draw(_elastic_cases())
    r = simulate(cluster, jobs, data.draw(st.sampled_from(["fcfs", "easy", "conservative"])),
                 events=NodeEvents.from_rows(rows, cluster.num_nodes), lifecycle=lc,
                 reservations="nodes")
    report = r.verify()
    assert report.ok, report
    if lc.elastic:
        event(f"regrowths: {min(r.summary['lifecycle']['regrows'], 2)}")


@FEWER
@given(data=st.data())
def test_without_regrow_or_a_node_back_runs_are_as_before(data):
    cluster, available, jobs, parts, deps, _, _, rank = data.draw(constrained_cases())
    rows = data.draw(node_event_rows(cluster.num_nodes, max_events=8, max_time=60,
                                     kinds=("down", "drain")))
    lc = data.draw(elastic_lifecycles(jobs))
    ev = NodeEvents.from_rows(rows, cluster.num_nodes)
    runs = [run_nodes(cluster, jobs, "easy", 1, available, events=ev,
                      lifecycle=dataclasses.replace(lc, regrow=g)) for g in (False, True)]
    assert_same_runs(*runs)
    assert _rows(ids_of(jobs), runs[0].attempts) == _rows(ids_of(jobs), runs[1].attempts)


def _regrown(regrow=True):
    """Job 1 (4 nodes, 400 s: 1600 node-seconds) loses gpu001 at 100; it is back at
    200. Job 2 runs on gpu005; gpu006 stays idle (only nodes that come back regrow)."""
    lc = Lifecycle.of(2, no_kill=[True, False], nodes_min=[2, 0], regrow=regrow)
    ev = NodeEvents.from_rows([(100, "down", [0]), (200, "up", [0])], 6)
    return simulate(_cluster(), _jobs([400, 100], [4, 1]), "easy", events=ev, lifecycle=lc)


def test_a_shrunk_job_takes_back_its_node_and_ends_sooner():
    r = _regrown()
    f = r.jobs[r.jobs.job_id == 1]
    assert f.state.tolist() == ["RESIZING", "RESIZING", "COMPLETED"]
    assert f.start_time.tolist() == [0, 100, 200]
    # 400 node-seconds by 100 on 4, 300 by 200 on 3, the 900 left on 4: 225 s
    assert f.end_time.tolist() == [100, 200, 425]
    assert f.nodes.tolist() == ["gpu[001-004]", "gpu[002-004]", "gpu[001-004]"]
    assert f.num_nodes.tolist() == [4, 3, 4]
    lcs = r.summary["lifecycle"]
    assert (lcs["shrinks"], lcs["regrows"], lcs["shrunk_jobs"]) == (1, 1, 1)
    gpu_s = 8 * (4 * 100 + 3 * 100 + 4 * 225) + 8 * 100
    assert lcs["allocated_gpu_hours"] == pytest.approx(gpu_s / 3600)
    assert lcs["goodput"] == pytest.approx(1.0)
    report = r.verify()
    assert report.ok and "bad_resize" in report.checks
    # without regrowth it ends at 100 + 1200 / 3
    plain = _regrown(False)
    assert plain.jobs[plain.jobs.job_id == 1].end_time.tolist() == [100, 500]


def test_the_resize_checks_catch_a_broken_regrowth():
    r = _regrown()
    t = r.attempts              # rows: job 1's shapes (0-4, 1-3 nodes, 0-3 again), job 2
    assert r.verify().ok
    assert t["alloc_nodes"][7:11].tolist() == [0, 1, 2, 3]
    # gpu006 (idle) and gpu005 (job 2's until 100) did not come back at 200
    for bad in ([1, 2, 3, 5], [1, 2, 3, 4]):
        report = tampered(r, alloc_nodes=(slice(7, 11), bad))
        assert "bad_resize" in report.kinds(), bad
    # a run without regrowth never gains a node
    plain = dataclasses.replace(r.lifecycle, regrow=False)
    from fastsched.verify.lifecycle import Attempts, verify_attempts
    report = verify_attempts(r.cluster, r.workload, Attempts(
        t["row"], t["attempt"], t["start"], t["end"], t["killed"], t["alloc_offsets"],
        t["alloc_nodes"], resized=t["resized"]), r.events, plain)
    assert "bad_resize" in report.kinds()
    # the regrown shape claims to end before its node-seconds are done
    assert "resumed_work" in tampered(r, end=(2, 400)).kinds()


def test_a_node_back_and_down_at_one_instant_splits_a_shape_in_two_alike():
    """Hypothesis found it: both jobs shrink to g002 when g001 goes down at 1; at 2 g001
    comes back (each takes it) and goes down again (each loses it), so each record of
    g002 alone splits at 2 into two alike; only such a bounce allows that."""
    jobs = JobTable.from_arrays(job_id=[1, 2], submit_time=0, time_limit=20, runtime=6,
                                num_nodes=2, gpus_per_node=1, cpus_per_node=1, user=0)
    lc = Lifecycle.of(2, no_kill=True, regrow=True)
    rows = [(1, "down", [0]), (2, "up", [0]), (2, "down", [0]), (3, "up", [0])]
    r = simulate(Cluster.homogeneous(3, gpus=4, cpus=4, prefix="g"), jobs, "fcfs",
                 events=NodeEvents.from_rows(rows, 3), lifecycle=lc, reservations="nodes")
    t = r.attempts
    assert t["start"][:4].tolist() == [0, 1, 2, 3]
    assert t["alloc_nodes"][t["alloc_offsets"][1]:t["alloc_offsets"][3]].tolist() == [1, 1]
    assert r.verify().ok
    # without the bounce (g001 stays down from 1 to 3) the same split is a broken record
    calm = simulate(Cluster.homogeneous(3, gpus=4, cpus=4, prefix="g"), jobs, "fcfs",
                    events=NodeEvents.from_rows([(1, "down", [0]), (3, "up", [0])], 3),
                    lifecycle=lc, reservations="nodes")
    assert calm.verify().ok
    from fastsched.verify.lifecycle import Attempts, verify_attempts
    report = verify_attempts(calm.cluster, calm.workload, Attempts(
        t["row"], t["attempt"], t["start"], t["end"], t["killed"], t["alloc_offsets"],
        t["alloc_nodes"], resized=t["resized"]), calm.events, calm.lifecycle)
    assert "bad_resize" in report.kinds()


def test_a_regrown_node_is_not_overcommitted():
    # job 2 (1 node) starts on gpu005 at 0 for 500 s; gpu005 drains at 50 and resumes at
    # 150: job 1 (shrunk at 100) may not take it while job 2 holds it
    lc = Lifecycle.of(2, no_kill=[True, False], nodes_min=[2, 0], regrow=True)
    ev = NodeEvents.from_rows([(50, "drain", [4]), (100, "down", [0]), (150, "resume", [4])],
                              6)
    r = simulate(_cluster(), _jobs([400, 500], [4, 1]), "easy", events=ev, lifecycle=lc)
    f = r.jobs[r.jobs.job_id == 1]
    assert f.nodes.tolist() == ["gpu[001-004]", "gpu[002-004]"]    # no regrowth
    assert r.jobs[r.jobs.job_id == 2].nodes.tolist() == ["gpu005"]
    assert r.verify().ok
    # records that say it took gpu005 back at 150 anyway: overcommitted (job 2's GPUs)
    t = dict(r.attempts)
    keys = ("row", "attempt", "start", "end", "killed", "resized")
    k = 1                                           # its shape from 100, on 3 nodes
    extra = {key: np.insert(t[key], k + 1, t[key][k]) for key in keys}
    extra["start"][k + 1], extra["end"][k] = 150, 150
    extra["resized"][k] = True
    lo, hi = t["alloc_offsets"][k], t["alloc_offsets"][k + 1]
    nodes = np.concatenate([t["alloc_nodes"][:hi], [1, 2, 3, 4], t["alloc_nodes"][hi:]])
    offsets = np.concatenate([t["alloc_offsets"][:k + 2], t["alloc_offsets"][k + 1:] + 4])
    from fastsched.verify.lifecycle import Attempts, verify_attempts
    report = verify_attempts(r.cluster, r.workload, Attempts(
        extra["row"], extra["attempt"], extra["start"], extra["end"], extra["killed"],
        offsets, nodes, resized=extra["resized"]), r.events, r.lifecycle)
    assert "overcommit" in report.kinds()
    assert lo == 4 and t["alloc_nodes"][lo:hi].tolist() == [1, 2, 3]


def test_regrowth_is_refused_where_it_is_not_modelled():
    from fastsched.model.constraints import LimitGroups
    from fastsched.model.images import Containers, ImagePull
    jobs = _jobs([400, 100], [4, 1])
    lc = Lifecycle.of(2, no_kill=[True, False], regrow=True)
    ev = NodeEvents.from_rows([(100, "down", [0]), (200, "up", [0])], 6)
    limits = LimitGroups([0, 1, 2], [0, 0], [[-1, 64, -1, -1, -1]], [("J", "G", "C", "M", "S")])
    with pytest.raises(UnsupportedError, match="regrow.*limits"):
        simulate(_cluster(), jobs, "easy", events=ev, lifecycle=lc, limits=limits)
    with pytest.raises(UnsupportedError, match="regrow.*container images"):
        simulate(_cluster(), jobs, "easy", events=ev, lifecycle=lc,
                 containers=Containers.of(["img", ""], ImagePull(default=5)))


def test_cli_regrow_and_check(tmp_path, capsys):
    cluster = _cluster()
    jobs = _jobs([400, 100], [4, 1])
    w = Workload(jobs, np.zeros(2, np.int32), ["u"], ["a"], np.zeros(1, np.int32), ["o"],
                 no_kill=np.array([True, False]), nodes_min=np.array([2, 0]))
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=t\nNodeName=gpu[001-006] CPUs=8 Gres=gpu:8\n"
                    "PartitionName=all Nodes=ALL Default=YES\n")
    write_workload(w, cluster, tmp_path / "w.csv")
    ev = tmp_path / "ev.csv"
    ev.write_text("time,event,nodes,reason\n100,down,gpu001,psu\n200,up,gpu001,\n")
    out, recs = tmp_path / "s.json", tmp_path / "jobs.csv"
    args = ["simulate", str(tmp_path / "w.csv"), "--cluster", str(conf), "--events", str(ev),
            "--summary-json", str(out), "--jobs-out", str(recs), "--no-progress", "--regrow"]
    assert main(args) == 0
    assert json.loads(out.read_text())["lifecycle"]["regrows"] == 1
    assert "1 regrowth(s)" in capsys.readouterr().out
    frame = pd.read_csv(recs)
    assert frame[frame.job_id == 1].end_time.tolist() == [100, 200, 425]
    check = ["check", str(recs), "--trace", str(tmp_path / "w.csv"), "--cluster", str(conf),
             "--events", str(ev)]
    assert main(check + ["--regrow"]) == 0
    assert main(check) == 1                 # a regrown shape, but the run had no regrowth
    assert "bad_resize" in capsys.readouterr().out


def test_the_help_names_regrow(capsys):
    for command in ("simulate", "check"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert "--regrow" in capsys.readouterr().out
