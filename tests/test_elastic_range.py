"""Jobs of a node range (``nodes_min`` < ``num_nodes``, from ``--nodes=MIN-MAX``): a job
that cannot start now on all its nodes starts on as many as fit now, at least MIN,
with its runtime stretched to the same node-seconds. The engine against the twin
(tests/naive_nodes.py), runs without a range unchanged, the records, checks and CLI."""
import dataclasses

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from fastsched import Cluster, JobTable, NodeEvents, simulate
from fastsched.cli import main
from fastsched.engine import run_nodes
from fastsched.io.workload import Workload, write_workload
from fastsched.model.errors import UnsupportedError
from fastsched.model.lifecycle import Lifecycle
from constrained_twin import assert_same_runs
from test_constraints import SETTINGS, constrained_cases, engine_inputs
from test_elastic import as_twin
from test_lifecycle import tampered


def _ranges(draw, jobs, no_kill):
    n = len(jobs)
    low = [draw(st.sampled_from([0, 1, int(k) // 2, int(k)])) for k in jobs.num_nodes]
    kill = [draw(st.booleans()) if no_kill else False for _ in range(n)]
    return Lifecycle.of(n, no_kill=np.array(kill), nodes_min=np.array(low))


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("easy", 2),
                                          ("conservative", 1)])
@SETTINGS
@given(data=st.data())
def test_range_starts_match_twin(data, policy, depth):
    cluster, available, jobs, parts, deps, groups, caps, rank = data.draw(constrained_cases())
    lc = _ranges(data.draw, jobs, False)
    run, _, killed, resized = as_twin(cluster, jobs, [], lc, policy, depth, available,
                                      parts=parts, deps=deps, groups=groups, caps=caps,
                                      rank=rank)
    assert killed == [] and resized == [] and run.resizes is None
    narrow = int((np.diff(run.alloc_offsets) < jobs.num_nodes)[run.start >= 0].sum())
    event(f"started narrow: {min(narrow, 2)}")


@SETTINGS
@given(data=st.data())
def test_without_a_range_runs_are_byte_identical(data):
    cluster, available, jobs, parts, deps, groups, caps, rank = data.draw(constrained_cases())
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    policy = data.draw(st.sampled_from(["fcfs", "easy", "conservative"]))
    whole = Lifecycle.of(len(jobs), nodes_min=jobs.num_nodes)       # MIN = MAX: no range
    runs = [run_nodes(cluster, jobs, policy, 1, available, partitions=pc, dependencies=dp,
                      limits=lg, lifecycle=lc) for lc in (None, whole)]
    assert_same_runs(*runs)


def _jobs(runtime, nodes, limit=1000):
    n = len(runtime)
    return JobTable.from_arrays(job_id=np.arange(1, n + 1), submit_time=np.arange(n),
                                time_limit=limit, runtime=runtime, num_nodes=nodes,
                                gpus_per_node=8, cpus_per_node=8, user=0)


def _cluster(n=8):
    return Cluster.homogeneous(n, gpus=8, cpus=8, prefix="gpu")


def test_a_range_job_starts_on_the_free_nodes_and_runs_longer():
    # job 2 asks for 8 nodes, at least 4; 5 are free at 1: it starts there and needs
    # 300 x 8 node-seconds: 480 s on 5 nodes
    jobs = _jobs([100, 300, 100], [3, 8, 4])
    lc = Lifecycle.of(3, nodes_min=[0, 4, 0])
    for policy in ("fcfs", "easy", "conservative"):
        r = simulate(_cluster(), jobs, policy, lifecycle=lc, reservations="nodes")
        j = r.jobs.set_index("job_id")
        assert (j.start_time[2], j.end_time[2], j.num_nodes[2]) == (1, 481, 5), policy
        assert j.start_time[3] == 481 and j.state[2] == "COMPLETED"
        assert r.verify().ok
    plain = simulate(_cluster(), jobs, "easy", reservations="nodes")
    assert plain.jobs.start_time.tolist() == [0, 100, 400]     # waits for all 8


def test_the_time_limit_caps_a_narrow_start():
    jobs = _jobs([100, 300], [6, 8], limit=400)
    r = simulate(_cluster(), jobs, "easy", lifecycle=Lifecycle.of(2, nodes_min=[0, 2]),
                 reservations="nodes")
    j = r.jobs.set_index("job_id")
    assert (j.start_time[2], j.end_time[2], j.num_nodes[2], j.state[2]) == \
        (1, 401, 2, "TIMEOUT")       # 1200 s on 2 nodes, capped at 400
    assert r.verify().ok


def test_a_killed_narrow_job_is_requeued_on_all_its_nodes():
    # job 2 (8 nodes, at least 2) starts at 1 on 2 nodes; node failure at 101 kills it
    # (no --no-kill): its checkpoint at 60 s kept 60 x 2 node-seconds = 15 s at 8 nodes
    jobs = _jobs([100, 400], [6, 8], limit=5000)
    lc = Lifecycle.of(2, nodes_min=[0, 2], checkpoint_interval=[0, 60],
                      checkpoint_cost=[0, 1])
    ev = NodeEvents.from_rows([(101, "down", [6, 7]), (102, "up", [6, 7])], 8)
    r = simulate(_cluster(), jobs, "easy", events=ev, lifecycle=lc)
    assert r.verify().ok
    t = r.attempts
    rows = np.flatnonzero(t["row"] == 1)
    assert t["start"][rows].tolist() == [1, 222]
    assert np.diff(t["alloc_offsets"])[rows].tolist() == [2, 8]
    assert t["end"][rows[-1]] == 222 + 400 - 15


def test_the_range_checks_catch_broken_records():
    jobs = _jobs([100, 300, 100], [3, 8, 4])
    lc = Lifecycle.of(3, nodes_min=[0, 4, 0])
    r = simulate(_cluster(), jobs, "easy", lifecycle=lc, reservations="nodes")
    assert r.verify().ok and "bad_resize" in r.verify().checks
    # it ends before its 2400 node-seconds are done on 5 nodes
    assert "resumed_work" in tampered(r, end=(1, 301)).kinds()
    # a start on fewer nodes than its minimum
    tight = dataclasses.replace(lc, nodes_min=np.array([0, 6, 0]))
    from fastsched.verify.lifecycle import Attempts, verify_attempts
    t = r.attempts
    bad = verify_attempts(r.cluster, r.workload, Attempts(
        t["row"], t["attempt"], t["start"], t["end"], t["killed"], t["alloc_offsets"],
        t["alloc_nodes"], t.get("pull"), t.get("resized")), r.events, tight)
    assert "bad_resize" in bad.kinds()


def test_a_range_with_topology_is_refused():
    from fastsched.model.constraints import Placement
    jobs = _jobs([100, 300], [2, 4])
    pl = Placement.none(2, 8)
    pl = dataclasses.replace(pl, levels=np.zeros((1, 8), dtype=np.int32))
    with pytest.raises(UnsupportedError, match="node range"):
        run_nodes(_cluster(), jobs, "easy", placement=pl,
                  lifecycle=Lifecycle.of(2, nodes_min=[0, 2]))


def test_cli_range_job_starts_narrow_and_check_passes(tmp_path):
    jobs = _jobs([100, 300, 100], [3, 8, 4])
    w = Workload(jobs, np.zeros(3, np.int32), ["u"], ["a"], np.zeros(1, np.int32), ["o"],
                 nodes_min=np.array([0, 4, 0]))
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=t\nNodeName=gpu[001-008] CPUs=8 Gres=gpu:8\n"
                    "PartitionName=all Nodes=ALL Default=YES\n")
    write_workload(w, _cluster(), tmp_path / "w.csv")
    recs = tmp_path / "jobs.csv"
    assert main(["simulate", str(tmp_path / "w.csv"), "--cluster", str(conf),
                 "--jobs-out", str(recs), "--no-progress", "--reservations", "nodes"]) == 0
    import pandas as pd
    out = pd.read_csv(recs).set_index("job_id")
    assert (out.start_time[2], out.end_time[2], out.num_nodes[2]) == (1, 481, 5)
    assert main(["check", str(recs), "--trace", str(tmp_path / "w.csv"), "--cluster",
                 str(conf)]) == 0
