"""fastsched.verify's policy checks in the nodes model (verify/nodes_policy.py).

Sound: no violation on any node-engine schedule (random small GPU clusters and
workloads through fastsched.simulate). Able to fail: tampered engine schedules
(a backfilled job moved earlier onto reserved nodes, a head job delayed) are
caught with the right kind. Independent: the package imports no engine code.
"""
import ast
import dataclasses
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import fastsched as fs
from fastsched.model.cluster import Cluster
from fastsched.model.jobs import JobTable
from fastsched.model.schedule import Schedule
from fastsched.verify import verify
from test_nodeplan import node_clusters, node_workloads

PROPS = settings(max_examples=25, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SETUPS = [("fcfs", 1), ("easy", 1), ("easy", 2), ("easy", 3), ("conservative", 1)]
POLICY_KINDS = {"fcfs_order", "reservation_delayed", "could_start"}


@st.composite
def engine_runs(draw):
    """(cluster, jobs, policy, depth, schedule) of a node-engine run, all nodes up."""
    cluster, _ = draw(node_clusters())
    jobs = draw(node_workloads(cluster, np.ones(cluster.num_nodes, bool)))
    policy, depth = draw(st.sampled_from(SETUPS))
    r = fs.simulate(cluster, jobs, policy, reserve_depth=depth, window=10**9)  # node engine
    assert r.schedule.planning == "nodes"
    return cluster, jobs, policy, depth, r.schedule


def moved(jobs, schedule, i, t, nodes=None):
    """The schedule with job i started at t (end = t + min(runtime, limit)), on ``nodes``."""
    start, end = schedule.start_time.copy(), schedule.end_time.copy()
    start[i] = t
    end[i] = t + min(jobs.runtime[i], jobs.time_limit[i])
    lists = [schedule.nodes_of(k).tolist() for k in range(len(start))]
    if nodes is not None:
        lists[i] = list(nodes)
    off = np.r_[0, np.cumsum([len(x) for x in lists])].astype(np.int64)
    flat = np.array([x for lst in lists for x in lst], np.int64)
    return dataclasses.replace(schedule, start_time=start, end_time=end, alloc_offsets=off,
                               alloc_nodes=flat, alloc_gpu_mask=None)


# --------------------------------------------------------------------------- sound

@PROPS
@given(run=engine_runs())
def test_no_violation_on_any_node_engine_schedule(run):
    cluster, jobs, policy, depth, schedule = run
    report = verify(cluster, jobs, schedule, policy=policy, reserve_depth=depth)
    assert report.ok, str(report)
    assert report.checks[-1].endswith("(nodes model)") and not report.not_checked


@PROPS
@given(run=engine_runs(), data=st.data())
def test_no_violation_on_a_run_with_fixed_priorities(run, data):
    """The queue order is the priorities the jobs started with (SimulationResult.verify)."""
    cluster, jobs, policy, depth, _ = run
    prio = np.array(data.draw(st.lists(st.integers(0, 3), min_size=len(jobs),
                                       max_size=len(jobs))), dtype=np.float64)
    r = fs.simulate(cluster, jobs, policy, reserve_depth=depth, priority=prio)
    report = r.verify(policy, depth)
    assert report.ok and not report.not_checked, str(report)


# --------------------------------------------------------------------------- able to fail

@PROPS
@given(run=engine_runs(), data=st.data())
def test_a_waiting_job_moved_earlier_is_caught(run, data):
    """Start a job that waited at an earlier start instant, on its own nodes. The
    engine did not start it there, so it did not fit in that pass's plan: its
    nodes are taken by the running jobs (overcommit) or by a reservation
    (reservation_delayed), or it jumped the fcfs queue (fcfs_order). (A moved job
    of zero length occupies nothing, so it overcommits nothing: left out.)"""
    cluster, jobs, policy, depth, schedule = run
    start, end, submit = schedule.start_time, schedule.end_time, jobs.submit_time
    zero_t = set(start[end <= start].tolist())
    waited = np.flatnonzero(start > submit)
    assume(len(waited))
    i = data.draw(st.sampled_from(waited.tolist()))
    earlier = sorted({int(t) for t in start if submit[i] <= t < start[i]} - zero_t)
    assume(earlier and jobs.runtime[i] > 0)
    t = data.draw(st.sampled_from(earlier))
    report = verify(cluster, jobs, moved(jobs, schedule, i, t), policy=policy,
                    reserve_depth=depth)
    caught = {v.kind for v in report.violations if v.job_id == jobs.job_id[i]
              or (v.kind == "overcommit" and v.time == t)}   # named after either job
    assert caught & {"overcommit", "reservation_delayed", "fcfs_order"}, str(report)


def test_a_job_that_waited_before_its_start_instant_is_walked_once():
    """Job 10 waits at 0 (job 1 has the GPU) and starts at 1; job 11, moved to 1,
    takes memory job 4's reservation at 2 holds. (Counted twice, job 10 hid the
    break as an overcommit.)"""
    cluster = Cluster(["n0"], [3], [1], [200])
    jobs = JobTable.from_arrays(job_id=[1, 3, 4, 10, 11], submit_time=[0, 0, 0, 0, 1],
                                time_limit=[2, 2, 2, 2, 2], runtime=[1, 2, 0, 1, 1],
                                num_nodes=[1, 1, 1, 1, 1], gpus_per_node=[1, 0, 0, 1, 0],
                                cpus_per_node=[1, 1, 0, 1, 1], mem_per_node=[0, 100, 101, 0, 100])
    r = fs.simulate(cluster, jobs, "easy")
    assert r.schedule.start_time.tolist() == [0, 0, 2, 1, 2]
    report = verify(cluster, jobs, moved(jobs, r.schedule, 4, 1), policy="easy")
    assert [(v.kind, v.job_id) for v in report.violations] == [("reservation_delayed", 11)]


def scenario():
    """Two 4-GPU nodes. Job 1 takes node g0 over [0, 100); job 2 (both nodes) is
    reserved at 100; job 3 backfills on g1 over [2, 52); job 4 (limit 200, runs 10
    s) waits for job 2 to end at 200; job 5 (1 GPU), submitted at 120, waits
    behind job 2 until 200 as well."""
    cluster = Cluster(["g0", "g1"], [8, 8], [4, 4], [1000, 1000])
    jobs = JobTable.from_arrays(
        job_id=[1, 2, 3, 4, 5], submit_time=[0, 1, 2, 3, 120],
        time_limit=[100, 100, 50, 200, 10], runtime=[100, 100, 50, 10, 10],
        num_nodes=[1, 2, 1, 1, 1], gpus_per_node=[4, 4, 4, 4, 1],
        cpus_per_node=[1, 1, 1, 1, 1])
    return cluster, jobs


@pytest.mark.parametrize("policy", ["easy", "conservative"])
def test_the_scenario_is_what_the_engine_does_and_passes(policy):
    cluster, jobs = scenario()
    r = fs.simulate(cluster, jobs, policy)
    assert r.schedule.planning == "nodes"
    assert r.schedule.start_time.tolist() == [0, 100, 2, 200, 200]
    assert [r.schedule.nodes_of(i).tolist() for i in range(5)] == [[0], [0, 1], [1], [0], [1]]
    assert verify(cluster, jobs, r.schedule, policy=policy).ok


@pytest.mark.parametrize("policy", ["easy", "conservative"])
def test_a_backfill_onto_reserved_nodes_is_reservation_delayed(policy):
    """Job 4 moved to 52 on g1: it would run until 62 (no overcommit), but its
    limit reaches into job 2's reservation at 100 on g1."""
    cluster, jobs = scenario()
    r = fs.simulate(cluster, jobs, policy)
    tampered = moved(jobs, r.schedule, 3, 52, nodes=[1])
    report = verify(cluster, jobs, tampered, policy=policy)
    assert [(v.kind, v.job_id) for v in report.violations] == [("reservation_delayed", 4)]
    assert "reserved for earlier-queued job(s) [2]" in report.violations[0].message
    # on two identical nodes with whole-node jobs here, the counts model sees it too
    counts = verify(cluster, jobs, tampered, policy=policy, reservations="counts")
    assert ("reservation_delayed", 4) in {(v.kind, v.job_id) for v in counts.violations}


@pytest.mark.parametrize("policy", ["easy", "conservative"])
def test_a_delayed_head_job_is_could_start(policy):
    """Job 2 delayed from 100 to 150 and job 5 started at 120 on g0: at 120 both
    nodes were free for job 2, which waited."""
    cluster, jobs = scenario()
    r = fs.simulate(cluster, jobs, policy)
    s = moved(jobs, moved(jobs, r.schedule, 1, 150), 4, 120, nodes=[0])
    s = moved(jobs, s, 3, 250)
    report = verify(cluster, jobs, s, policy=policy)
    assert ("could_start", 2) in {(v.kind, v.job_id) for v in report.violations}, str(report)


def test_fcfs_head_that_fitted_on_concrete_nodes_is_could_start():
    """fcfs: job 2 (the head at 120) fitted then but waited while job 5 started."""
    cluster, jobs = scenario()
    jobs = jobs.take(np.array([0, 1, 4]))
    sched = Schedule(job_id=jobs.job_id, start_time=np.array([0, 130, 120]),
                     end_time=np.array([100, 230, 130]), alloc_offsets=np.array([0, 1, 3, 4]),
                     alloc_nodes=np.array([0, 0, 1, 0]), planning="nodes")
    report = verify(cluster, jobs, sched, policy="fcfs")
    assert {(v.kind, v.job_id) for v in report.violations} == {("could_start", 2),
                                                                ("fcfs_order", 5)}


def test_a_partial_node_backfill_next_to_a_reservation_is_allowed():
    """A reservation holds GPU counts, not whole nodes: a 1-GPU job may start on a
    node reserved for a 2-GPU job when 2 GPUs stay free (unlike Slurm)."""
    cluster = Cluster(["g0"], [8], [4], [1000])
    jobs = JobTable.from_arrays(job_id=[1, 2, 3], submit_time=[0, 1, 2],
                                time_limit=[100, 100, 500], runtime=[100, 100, 500],
                                num_nodes=[1, 1, 1], gpus_per_node=[3, 2, 1],
                                cpus_per_node=[1, 1, 1])
    r = fs.simulate(cluster, jobs, "conservative")
    assert r.schedule.start_time.tolist() == [0, 100, 2]
    assert verify(cluster, jobs, r.schedule, policy="conservative").ok


# --------------------------------------------------------------------------- model choice

def test_the_model_comes_from_the_schedule_or_the_argument():
    cluster, jobs = scenario()
    r = fs.simulate(cluster, jobs, "easy")
    assert verify(cluster, jobs, r.schedule, policy="easy").checks[-1] == \
        "easy(reserve_depth=1) (nodes model)"
    assert verify(cluster, jobs, r.schedule, policy="easy", reservations="counts").checks[-1] \
        == "easy(reserve_depth=1) (counts model)"
    unknown = dataclasses.replace(r.schedule, planning=None)      # another simulator's
    assert verify(cluster, jobs, unknown, policy="easy").checks[-1].endswith("(counts model)")
    assert verify(cluster, jobs, unknown, policy="easy", reservations="nodes").ok
    with pytest.raises(fs.InputError, match="reservation model"):
        verify(cluster, jobs, r.schedule, policy="easy", reservations="slurm")


def test_over_the_size_limit_the_policy_is_not_checked_saying_why():
    cluster, jobs = scenario()
    r = fs.simulate(cluster, jobs, "conservative")
    report = verify(cluster, jobs, r.schedule, policy="conservative", node_check_limit=1)
    assert report.ok and report.not_checked
    assert "over the limit" in str(report) and "NOT CHECKED: conservative" in str(report)


def test_partition_choices_are_not_judged_by_the_nodes_model():
    """A job may be reserved in one of its partitions and start in another: the
    plan of one partition cannot judge it, so the policy is not checked."""
    from fastsched.model.constraints import PartitionChoices
    cluster, jobs = scenario()
    r = fs.simulate(cluster, jobs, "easy")
    choices = PartitionChoices.single(jobs.partition)
    report = verify(cluster, jobs, r.schedule, policy="easy", partitions=choices)
    assert report.ok and "not modelled" in report.not_checked[0]


def test_priority_sets_the_queue_order():
    """Job 3 (priority 10) goes ahead of job 2: its start at 100 passes with the
    priorities; in submit order it takes job 2's place (reservation_delayed)."""
    cluster = Cluster(["g0"], [8], [4], [1000])
    jobs = JobTable.from_arrays(job_id=[1, 2, 3], submit_time=[0, 1, 2],
                                time_limit=[100, 100, 100], runtime=[100, 100, 100],
                                num_nodes=[1, 1, 1], gpus_per_node=[4, 4, 4],
                                cpus_per_node=[1, 1, 1])
    sched = Schedule(job_id=jobs.job_id, start_time=np.array([0, 200, 100]),
                     end_time=np.array([100, 300, 200]), alloc_offsets=np.arange(4),
                     alloc_nodes=np.zeros(3, np.int64), planning="nodes")
    assert verify(cluster, jobs, sched, policy="conservative", priority=[0, 1, 10]).ok
    plain = verify(cluster, jobs, sched, policy="conservative")
    assert ("reservation_delayed", 3) in {(v.kind, v.job_id) for v in plain.violations}
    assert verify(cluster, jobs, sched, policy="fcfs", priority=[0, 1, 10]).ok
    assert verify(cluster, jobs, sched, policy="fcfs").kinds() == {"fcfs_order", "could_start"}
    swapped = dataclasses.replace(sched, start_time=np.array([0, 100, 200]),
                                  end_time=np.array([100, 200, 300]))
    report = verify(cluster, jobs, swapped, policy="fcfs", priority=[0, 1, 10])
    assert {(v.kind, v.job_id) for v in report.violations} == {("fcfs_order", 2),
                                                                ("could_start", 3)}


# --------------------------------------------------------------------------- independence

def test_the_verify_package_imports_no_engine_code():
    """Only NumPy, the standard library and fastsched's data and input layers (the
    layer contracts say the same for the package's own imports; this also keeps
    Numba out)."""
    allowed = {"model", "io"}
    root = Path(fs.__file__).parent
    for path in sorted((root / "verify").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level == 1:
                    continue                                   # within the package
                names = [node.module] if node.level == 0 else \
                    [f"fastsched.{node.module or ''}".rstrip(".")]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top == "fastsched":
                    assert name.split(".")[1] in allowed, f"{path.name} imports {name}"
                else:
                    assert top in {"numpy", "bisect", "collections", "dataclasses",
                                   "__future__"}, f"{path.name} imports {name}"
