"""``--time-min``: a job that cannot start now with its time limit starts with a shorter
one, at least its time minimum, cut at whole minutes before the next hold on its nodes
(Slurm's backfill). The engine against the twin (tests/naive_timemin.py over
tests/naive_nodes.py), runs without a time minimum unchanged, the records, the
``time_limit`` check, the readers and the CLI."""
import dataclasses

import numpy as np
import pandas as pd
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import naive_nodes
from fastsched import Cluster, InputError, JobTable, NodeEvents, simulate
from fastsched.cli import main
from fastsched.engine import run_nodes
from fastsched.io.workload import Workload, read_workload, requests_to_workload, write_workload
from fastsched.model.errors import UnsupportedError
from fastsched.model.lifecycle import Lifecycle
from fastsched.model.timemin import with_limits
from fastsched.verify import verify
from constrained_twin import assert_same_runs, run_both
from test_constraints import SETTINGS, constrained_cases, engine_inputs
from test_reservations import windows_of
from test_elastic import elastic_lifecycles
from naive_resv import TAIL
from test_resvjobs import _conf, _reservations, engine_run, twin_members
from fastsched.tools.testing import lifecycles, node_event_rows, power_models
from fastsched.sim.power import engine_power
from test_containers import _images, _twin_images
from test_power import _twin_power

#: the suite's time budget: these drawn runs are long (failures, requeues, twins)
FEWER = settings(SETTINGS, max_examples=17)


def _scaled(data, jobs):
    """The drawn jobs on a coarser clock (times up to 30 s are below Slurm's minute),
    each with a time minimum: none, or up to its limit."""
    k = data.draw(st.sampled_from([1, 7, 40]))
    jobs = jobs.take(np.arange(len(jobs)))
    for name in ("submit_time", "time_limit", "runtime"):
        setattr(jobs, name, (getattr(jobs, name) * k).astype(getattr(jobs, name).dtype))
    tmin = [data.draw(st.sampled_from([0, 1, max(int(lim) // 4, 1), int(lim) // 2])
                      | st.integers(0, int(lim))) for lim in jobs.time_limit]
    return jobs, np.array(tmin, dtype=np.int64), k


def _twin(cluster, available, jobs, parts, deps, groups, caps, rank, tmin, policy, depth,
          blocked=()):
    ids = [int(j) for j in jobs.job_id]
    ran = {}
    out, _ = naive_nodes.simulate(
        cluster, naive_nodes.jobs_from_table(jobs), policy, depth, available, partitions=parts,
        deps=deps, groups=groups, caps=caps, rank=rank, blocked=blocked,
        time_min={j: int(tmin[i]) for i, j in enumerate(ids)}, ran_limits=ran)
    return out, ran


def _same_limits(run, jobs, ran):
    for i, j in enumerate(int(x) for x in jobs.job_id):
        if run.start[i] >= 0:
            assert run.time_limit[i] == ran[j][-1], j


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("easy", 2),
                                          ("conservative", 1)])
@SETTINGS
@given(data=st.data())
def test_time_min_starts_match_twin(data, policy, depth):
    cluster, available, jobs, parts, deps, groups, caps, rank = data.draw(constrained_cases())
    jobs, tmin, k = _scaled(data, jobs)
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    ids = [int(j) for j in jobs.job_id]
    key = None if rank is None else np.array([rank[j] for j in ids])
    run = run_nodes(cluster, jobs, policy, depth, available, partitions=pc, dependencies=dp,
                    limits=lg, rank=key, time_min=tmin)
    out, ran = _twin(cluster, available, jobs, parts, deps, groups, caps, rank, tmin, policy,
                     depth)
    naive_nodes.assert_same_records(run, ids, out)
    if (tmin > 0).any():
        _same_limits(run, jobs, ran)
        cut = int(((run.time_limit < jobs.time_limit) & (run.start >= 0)).sum())
        event(f"cut limits: {min(cut, 2)}")


@st.composite
def _crowded(draw):
    """A few alike nodes and a queue of jobs longer than a minute, about half of them
    with a time minimum: cut limits are common (the cases above mostly test that the
    rule stays out of the way of everything else)."""
    n = draw(st.integers(2, 5))
    cluster = Cluster.homogeneous(n, gpus=4, cpus=4, prefix="g")
    k = draw(st.integers(4, 16))
    limit = np.array(draw(st.lists(st.integers(60, 900), min_size=k, max_size=k)))
    share = np.array(draw(st.lists(st.sampled_from([0.0, 0.3, 1.0, 1.2]), min_size=k,
                                   max_size=k)))
    jobs = JobTable.from_arrays(
        job_id=np.arange(1, k + 1),
        submit_time=sorted(draw(st.lists(st.integers(0, 600), min_size=k, max_size=k))),
        time_limit=limit, runtime=(limit * share).astype(np.int64),
        num_nodes=draw(st.lists(st.integers(1, n), min_size=k, max_size=k)),
        gpus_per_node=draw(st.lists(st.sampled_from([1, 4]), min_size=k, max_size=k)),
        cpus_per_node=1, user=0)
    tmin = np.array([draw(st.sampled_from([0, 1, int(x) // 4, int(x) // 2])) for x in limit])
    return cluster, jobs, tmin


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("easy", 2),
                                          ("conservative", 1)])
@SETTINGS
@given(case=_crowded())
def test_crowded_time_min_starts_match_twin(case, policy, depth):
    cluster, jobs, tmin = case
    parts = {int(j): [0] for j in jobs.job_id}
    run = run_nodes(cluster, jobs, policy, depth, time_min=tmin)
    out, ran = _twin(cluster, None, jobs, parts, {}, {}, [], None, tmin, policy, depth)
    naive_nodes.assert_same_records(run, [int(j) for j in jobs.job_id], out)
    if (tmin > 0).any():
        _same_limits(run, jobs, ran)
        cut = int(((run.time_limit < jobs.time_limit) & (run.start >= 0)).sum())
        event(f"cut limits: {min(cut, 3)}")


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("easy", 2),
                                          ("conservative", 1)])
@SETTINGS
@given(data=st.data())
def test_time_min_before_advance_reservations_matches_twin(data, policy, depth):
    cluster, available, jobs, parts, deps, groups, caps, rank = data.draw(constrained_cases())
    jobs, tmin, k = _scaled(data, jobs)
    jobs.cpus_per_node = np.maximum(jobs.cpus_per_node, 1).astype(jobs.cpus_per_node.dtype)
    blocked = [(s * k, e * k, x) for s, e, x in windows_of(data.draw, cluster.num_nodes)]
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    ids = [int(j) for j in jobs.job_id]
    key = None if rank is None else np.array([rank[j] for j in ids])
    arrays = tuple(np.array(c, dtype=np.int64) for c in zip(*blocked))
    run = run_nodes(cluster, jobs, policy, depth, available, partitions=pc, dependencies=dp,
                    limits=lg, rank=key, blocked=arrays, time_min=tmin)
    out, ran = _twin(cluster, available, jobs, parts, deps, groups, caps, rank, tmin, policy,
                     depth, blocked)
    naive_nodes.assert_same_records(run, ids, out)
    if (tmin > 0).any():
        _same_limits(run, jobs, ran)
        cut = int(((run.time_limit < jobs.time_limit) & (run.start >= 0)).sum())
        event(f"cut limits: {min(cut, 2)}")
    for i in np.flatnonzero(run.start >= 0):       # no job overlaps a window of its nodes
        nodes = run.alloc_nodes[run.alloc_offsets[i]:run.alloc_offsets[i + 1]]
        assert not any(x in nodes and s < run.end[i] and run.start[i] < e
                       for s, e, x in blocked)


@SETTINGS
@given(data=st.data())
def test_without_a_time_min_runs_are_byte_identical(data):
    cluster, available, jobs, parts, deps, groups, caps, rank = data.draw(constrained_cases())
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    policy = data.draw(st.sampled_from(["fcfs", "easy", "conservative"]))
    zero = np.zeros(len(jobs), dtype=np.int64)
    runs = [run_nodes(cluster, jobs, policy, 1, available, partitions=pc, dependencies=dp,
                      limits=lg, time_min=t) for t in (None, zero)]
    assert_same_runs(*runs)
    assert runs[1].time_limit is None


# ------------------------------------------------------------------ the worked example

def _cluster(n=4):
    return Cluster.homogeneous(n, gpus=8, cpus=8, prefix="gpu")


def _example():
    """4 nodes. Job 1 runs on 2 until 3600; job 2 (4 nodes) is reserved at 3600; job 3
    (2 nodes, 2 h limit, 30 min minimum, 50 min of work) fits the 2 free nodes only
    with a limit below 3600 - 10 s: 59 whole minutes."""
    return JobTable.from_arrays(job_id=[1, 2, 3], submit_time=[0, 5, 10],
                                time_limit=[3600, 3600, 7200], runtime=[3600, 1800, 3000],
                                num_nodes=[2, 4, 2], gpus_per_node=8, cpus_per_node=8,
                                user=0)


def test_a_job_starts_in_the_gap_with_a_cut_limit():
    jobs = _example()
    for policy in ("easy", "conservative"):
        r = simulate(_cluster(), jobs, policy, reservations="nodes",
                     time_min=[0, 0, 1800])
        j = r.jobs.set_index("job_id")
        assert (j.start_time[3], j.end_time[3], j.time_limit[3], j.state[3]) == \
            (10, 3010, 3540, "COMPLETED"), policy
        assert j.start_time[2] == 3600 and j.time_limit[2] == 3600
        assert r.asked_limit.tolist() == [3600, 3600, 7200]
        assert r.verify().ok and "time_limit" in r.verify().checks
    plain = simulate(_cluster(), jobs, "easy", reservations="nodes")
    assert plain.jobs.start_time.tolist() == [0, 3600, 5400]      # waits behind job 2


def test_a_job_beyond_its_cut_limit_ends_timeout():
    jobs = _example()
    jobs.runtime = np.array([3600, 1800, 4000], dtype=jobs.runtime.dtype)
    r = simulate(_cluster(), jobs, "easy", reservations="nodes", time_min=[0, 0, 1800])
    j = r.jobs.set_index("job_id")
    assert (j.start_time[3], j.end_time[3], j.state[3]) == (10, 3550, "TIMEOUT")
    assert r.summary["timeouts"] == 1 and r.verify().ok


def test_a_time_min_too_long_for_the_gap_waits():
    # 3590 s to job 2's reservation: a 60 min minimum does not fit, the job waits
    r = simulate(_cluster(), _example(), "easy", reservations="nodes",
                 time_min=[0, 0, 3600])
    assert r.jobs.set_index("job_id").start_time[3] == 5400


def test_the_time_limit_check_catches_broken_records():
    r = simulate(_cluster(), _example(), "easy", reservations="nodes",
                 time_min=[0, 0, 1800])
    s = r.schedule
    for limits in ([3600, 3600, 1740], [3600, 3600, 7260], [3000, 3600, 3540]):
        bad = verify(r.cluster, with_limits(r.workload, limits), s, time_min=r.time_min,
                     asked_limit=r.asked_limit)
        assert "time_limit" in bad.kinds(), limits
    # the end is checked against the limit it ran with: a job running past it
    long = verify(r.cluster, with_limits(r.workload, [3600, 3600, 2000]), s,
                  time_min=r.time_min, asked_limit=r.asked_limit)
    assert "wrong_end" in long.kinds()
    # without the time minimum, a cut limit is a violation too
    assert "time_limit" in verify(r.cluster, r.workload, s, time_min=np.zeros(3, np.int64),
                                  asked_limit=r.asked_limit).kinds()


def test_bad_time_min_is_refused_and_preemption_is_not():
    jobs = _example()
    with pytest.raises(InputError, match="time_min 9000 s must be >= 0 and at most"):
        simulate(_cluster(), jobs, "easy", time_min=[0, 0, 9000])
    with pytest.raises(InputError, match="time_min: 2 entries for 3 jobs"):
        simulate(_cluster(), jobs, "easy", time_min=[0, 0])
    with pytest.raises(UnsupportedError, match="counts model does not take time_min"):
        simulate(_cluster(), jobs, "easy", reservations="counts", time_min=[0, 0, 1800])
    with pytest.raises(UnsupportedError, match="reservations='slurm' takes no time_min"):
        simulate(_cluster(), jobs, "conservative", reservations="slurm",
                 time_min=[0, 0, 1800])
    from fastsched.model.preemption import REQUEUE, Preemption
    pre = Preemption("preempt/qos", np.array([[False, False], [True, False]]),
                     np.array([REQUEUE, REQUEUE]), np.zeros(2, dtype=np.int64),
                     np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.int64),
                     np.array([0, 0, 1]))
    # with preemption (tests/test_timemin_preempt.py): job 3 may preempt job 1, yet it
    # starts on the free nodes with its cut limit and preempts nothing
    r = simulate(_cluster(), jobs, "easy", preemption=pre, time_min=[0, 0, 1800])
    j = r.jobs.set_index("job_id")
    assert (j.start_time[3], j.time_limit[3]) == (10, 3540)
    assert (r.jobs.state != "PREEMPTED").all()
    # all zero: no time minimum, any model
    assert simulate(_cluster(), jobs, "easy", reservations="counts",
                    time_min=[0, 0, 0]).time_min is None


# ------------------------------------------------------------------ readers and the CLI

_CONF = ("ClusterName=t\nNodeName=gpu[1-4] CPUs=8 Gres=gpu:8\n"
         "PartitionName=all Nodes=ALL Default=YES\n")
_HEAD = ("job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,cpus_per_node,"
         "mem_per_node,partition,user,account,time_min\n")
_ROWS = ("1,0,3600,3600,2,8,8,0,all,u,a,\n2,5,3600,1800,4,8,8,0,all,u,a,0\n"
         "3,10,7200,3000,2,8,8,0,all,u,a,1800\n")


def test_the_cli_runs_and_checks_a_time_min_column(tmp_path):
    conf, trace, recs = tmp_path / "slurm.conf", tmp_path / "w.csv", tmp_path / "jobs.csv"
    conf.write_text(_CONF)
    trace.write_text(_HEAD + _ROWS)
    assert main(["simulate", str(trace), "--cluster", str(conf), "--jobs-out", str(recs),
                 "--no-progress"]) == 0
    out = pd.read_csv(recs).set_index("job_id")
    assert (out.start_time[3], out.end_time[3], out.time_limit[3]) == (10, 3010, 3540)
    assert out.planning[3] == "nodes"
    assert main(["check", str(recs), "--trace", str(trace), "--cluster", str(conf)]) == 0
    # the policy checks do not model cut limits: NOT CHECKED (exit 3)
    assert main(["check", str(recs), "--trace", str(trace), "--cluster", str(conf),
                 "--policy", "easy"]) == 3
    # records that claim job 3 ran with its full limit, ending as if so
    bad = out.copy()
    bad.loc[3, "time_limit"] = 7260
    bad.reset_index().to_csv(tmp_path / "bad.csv", index=False)
    assert main(["check", str(tmp_path / "bad.csv"), "--trace", str(trace), "--cluster",
                 str(conf)]) == 1


def test_the_readers_take_time_min(tmp_path):
    from fastsched.io.sbatch import normalise, parse_script
    cluster = _cluster()
    w = tmp_path / "w.csv"
    w.write_text(_HEAD + _ROWS)
    work = read_workload(w, cluster)
    assert work.time_min.tolist() == [0, 0, 1800]
    assert work.constraints()["time_min"].tolist() == [0, 0, 1800]
    write_workload(work, cluster, tmp_path / "again.csv")
    assert read_workload(tmp_path / "again.csv", cluster).time_min.tolist() == [0, 0, 1800]
    bad = tmp_path / "bad.csv"
    bad.write_text(_HEAD + "1,0,100,50,1,8,8,0,all,u,a,200\n")
    with pytest.raises(InputError, match=r"bad.csv:2: field time_min: time_min 200 s is "
                       "above the job's time_limit 100 s"):
        read_workload(bad, cluster)
    bad.write_text(_HEAD + "1,0,100,50,1,8,8,0,all,u,a,x\n")
    with pytest.raises(InputError, match=r"bad.csv:2: field time_min"):
        read_workload(bad, cluster)
    # an #SBATCH script's --time-min (minutes) becomes the workload's time_min
    norm = normalise(parse_script("#!/bin/bash\n#SBATCH -N 2 -t 2:00:00 --time-min=30\n"
                                  "#SBATCH --gres=gpu:8 -c 8\n"), cluster)
    built = requests_to_workload([(norm, 10, 3000)], cluster)
    assert built.time_min.tolist() == [1800] and built.jobs.time_limit.tolist() == [7200]
    plain = requests_to_workload([(normalise(parse_script("#SBATCH -t 5\n"), cluster), 0, 1)],
                                 cluster)
    assert plain.constraints() == {}


def test_an_sbatch_script_with_time_min_runs_from_the_cli(tmp_path):
    from fastsched.io.sbatch import normalise, parse_script
    cluster = _cluster()
    scripts = ["#!/bin/bash\n#SBATCH -N 2 -t 60 --gres=gpu:8 -c 8\n",
               "#!/bin/bash\n#SBATCH -N 4 -t 60 --gres=gpu:8 -c 8\n",
               "#!/bin/bash\n#SBATCH -N 2 -t 2:00:00 --time-min=30 --gres=gpu:8 -c 8\n"]
    items = [(normalise(parse_script(s), cluster), t, r)
             for s, t, r in zip(scripts, [0, 5, 10], [3600, 1800, 3000])]
    w = requests_to_workload(items, cluster)
    conf, trace, recs = tmp_path / "slurm.conf", tmp_path / "w.csv", tmp_path / "jobs.csv"
    conf.write_text(_CONF)
    write_workload(w, cluster, trace)
    assert main(["simulate", str(trace), "--cluster", str(conf), "--jobs-out", str(recs),
                 "--no-progress"]) == 0
    out = pd.read_csv(recs).set_index("job_id")
    assert (out.start_time[3], out.time_limit[3]) == (10, 3540)
    assert main(["check", str(recs), "--trace", str(trace), "--cluster", str(conf)]) == 0


def test_a_workload_api_run():
    cluster = _cluster()
    jobs = _example()
    w = Workload(jobs, np.zeros(3, np.int32), ["u"], ["a"], np.zeros(1, np.int32), ["o"],
                 time_min=np.array([0, 0, 1800]))
    r = simulate(cluster, w.jobs, "easy", **w.constraints())
    assert r.jobs.time_limit.tolist() == [3600, 3600, 3540]
    assert r.summary["reservations"] == "nodes"


def test_a_site_run_keeps_the_time_min():
    from fastsched.policy.config import parse_config
    from fastsched.sim.site import simulate_site
    from test_site import CONFIG
    jobs = _example()
    w = Workload(jobs, np.zeros(3, np.int32), ["u0", "u1"], ["a", "b"], np.array([0, 1]),
                 ["a", "b"], time_min=np.array([0, 0, 1800]))
    r = simulate_site(_cluster(), w, parse_config(CONFIG))
    assert r.jobs.time_limit.tolist() == [3600, 3600, 3540] and r.verify().ok


def test_sbatch_test_only_says_the_expected_start_ignores_time_min(tmp_path, capsys):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH -t 60 --time-min=30\n")
    assert main(["sbatch", "--test-only", str(script)]) == 0
    assert "--time-min: an empty cluster has no later hold to cut it for" in \
        capsys.readouterr().out


def test_the_help_names_time_min(capsys):
    for command in ("simulate", "check"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert "time_min column" in capsys.readouterr().out


# ------------------------------------------------------------------ node failures and requeue

def _limits_by_attempt(run, ids):
    """(job id, attempt) -> the limit it ran with: killed attempts, then each started
    job's last."""
    a = run.attempts
    out = {(ids[a.job[k]], int(a.attempt[k])): int(a.limit[k]) for k in range(len(a))}
    for i in np.flatnonzero(run.start >= 0).tolist():
        out[(ids[i], int(a.restarts[i]))] = int(run.time_limit[i])
    return out


@st.composite
def _failing(draw):
    """The crowded cases with node events on their clock (downs, ups, drains) and a
    lifecycle: requeue or not, checkpoints, and often --no-kill with a node range.
    Most also fail a node of a job that a run without events starts with a cut limit,
    while it runs (random events alone rarely hit one)."""
    cluster, jobs, tmin = draw(_crowded())
    rows = draw(node_event_rows(cluster.num_nodes, max_events=6, max_time=900,
                                kinds=("down", "down", "up", "drain", "resume")))
    plain = run_nodes(cluster, jobs, "easy", time_min=tmin)
    cut = [] if plain.time_limit is None else np.flatnonzero(
        (plain.start >= 0) & (plain.time_limit < jobs.time_limit) & (plain.end > plain.start + 1))
    if len(cut) and draw(st.integers(0, 3)):
        i = int(draw(st.sampled_from(cut.tolist())))
        t = draw(st.integers(int(plain.start[i]) + 1, int(plain.end[i]) - 1))
        x = int(plain.alloc_nodes[plain.alloc_offsets[i]])
        rows += [(t, "down", [x])] + ([(t + draw(st.integers(0, 300)), "up", [x])]
                                      if draw(st.booleans()) else [])
    else:
        i = None
    lc = draw(st.one_of(lifecycles(len(jobs), max_interval=300, max_delay=200),
                        elastic_lifecycles(jobs)))
    if i is not None and draw(st.integers(0, 3)):      # the victim is requeued
        requeue = lc.requeue.copy()
        requeue[i] = True
        no_kill = None if lc.no_kill is None else lc.no_kill.copy()
        if no_kill is not None:
            no_kill[i] = False
        lc = dataclasses.replace(lc, requeue=requeue, no_kill=no_kill)
    return cluster, jobs, tmin, rows, lc


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("easy", 2),
                                          ("conservative", 1)])
@FEWER
@given(case=_failing())
def test_time_min_with_failures_and_requeue_matches_twin(case, policy, depth):
    cluster, jobs, tmin, rows, lc = case
    ids = [int(j) for j in jobs.job_id]
    run = run_nodes(cluster, jobs, policy, depth, time_min=tmin, lifecycle=lc,
                    events=NodeEvents.from_rows(rows, cluster.num_nodes))
    killed, resized, ran = [], [], {}
    out, _ = naive_nodes.simulate(
        cluster, naive_nodes.jobs_from_table(jobs), policy, depth, events=rows,
        requeue={j: bool(lc.requeue[i]) for i, j in enumerate(ids)},
        checkpoint={j: int(lc.checkpoint_interval[i]) for i, j in enumerate(ids)},
        delay=lc.delay, attempts=killed, resized=resized,
        no_kill=None if lc.no_kill is None else {j: bool(lc.no_kill[i])
                                                 for i, j in enumerate(ids)},
        nodes_min=None if lc.nodes_min is None else {j: int(lc.nodes_min[i])
                                                     for i, j in enumerate(ids)},
        time_min={j: int(tmin[i]) for i, j in enumerate(ids)}, ran_limits=ran)
    naive_nodes.assert_same_records(run, ids, out)
    a = run.attempts
    assert sorted((ids[a.job[k]], int(a.attempt[k]), int(a.start[k]), int(a.end[k]),
                   a.alloc_nodes[a.alloc_offsets[k]:a.alloc_offsets[k + 1]].tolist())
                  for k in range(len(a))) == sorted(killed)
    if (tmin > 0).any():
        assert _limits_by_attempt(run, ids) == {(j, k): v for j, limits in ran.items()
                                                for k, v in enumerate(limits)}
        again = sum(len(limits) > 1 and limits[0] < jobs.time_limit[ids.index(j)]
                    for j, limits in ran.items())
        event(f"cut attempts started again: {min(again, 2)}")
    event(f"killed: {min(len(killed), 2)}, shrinks: {min(len(resized), 2)}")


@FEWER
@given(case=_failing(), policy=st.sampled_from(["fcfs", "easy", "conservative"]))
def test_runs_with_time_min_and_failures_pass_the_checks(case, policy):
    cluster, jobs, tmin, rows, lc = case
    r = simulate(cluster, jobs, policy, events=NodeEvents.from_rows(rows, cluster.num_nodes),
                 lifecycle=lc, time_min=tmin, reservations="nodes")
    report = r.verify()
    assert report.ok, report
    assert ("time_limit" in report.checks) == (tmin > 0).any()


def _failed_example():
    """The example's job 3 (cut to 3540 s at 10, checkpointing every 600 s) loses a
    node at 1000 that is back at 1200."""
    lc = Lifecycle.of(3, checkpoint_interval=[0, 0, 600])
    ev = NodeEvents.from_rows([(1000, "down", [2]), (1200, "up", [2])], 4)
    return simulate(_cluster(), _example(), "easy", events=ev, lifecycle=lc,
                    time_min=[0, 0, 1800])


def test_a_cut_attempt_killed_by_a_failure_is_planned_again_with_its_own_limit():
    r = _failed_example()
    f = r.jobs[r.jobs.job_id == 3]
    # killed at 1000 with 600 s saved; requeued at 1121, it waits for 2 nodes until
    # 1200; 2 h do not fit before job 2 at 3600, so its limit is cut again, to the
    # 40 whole minutes left, and its 2400 s left end right then
    assert f.attempt.tolist() == [0, 1]
    assert f.state.tolist() == ["NODE_FAIL", "COMPLETED"]
    assert f.start_time.tolist() == [10, 1200] and f.end_time.tolist() == [1000, 3600]
    assert f.time_limit.tolist() == [3540, 2400]
    assert r.attempts["limit"].tolist() == [3600, 3600, 3540, 2400]
    # its last attempt had 2400 s left and a limit of 2400 s: no timeout (its first
    # runtime, 3000 s, is over that limit)
    assert r.summary["timeouts"] == 0
    report = r.verify()
    assert report.ok and "time_limit" in report.checks


def test_the_attempt_checks_hold_each_attempt_to_its_own_limit():
    from fastsched.verify.lifecycle import Attempts, verify_attempts
    r = _failed_example()
    t = r.attempts

    def check(limit):
        return verify_attempts(r.cluster, r.workload, Attempts(
            t["row"], t["attempt"], t["start"], t["end"], t["killed"], t["alloc_offsets"],
            t["alloc_nodes"], limit=np.array(limit)), r.events, r.lifecycle,
            time_min=r.time_min, asked_limit=r.asked_limit)
    assert check([3600, 3600, 3540, 2400]).ok
    # the first attempt claims its full limit: fine for the limits, but the second
    # attempt's cut one is then below the minimum if it is 1740
    assert check([3600, 3600, 7200, 2400]).ok
    assert "time_limit" in check([3600, 3600, 3540, 1740]).kinds()
    assert "time_limit" in check([3600, 3600, 7260, 2400]).kinds()
    # the last attempt ran 2400 s: with a limit of 1800 it would have ended earlier
    assert "wrong_end" in check([3600, 3600, 3540, 1800]).kinds()


def test_the_cli_runs_and_checks_time_min_with_node_events(tmp_path):
    conf, trace, recs = tmp_path / "slurm.conf", tmp_path / "w.csv", tmp_path / "jobs.csv"
    events = tmp_path / "events.csv"
    conf.write_text(_CONF)
    trace.write_text(_HEAD.replace("time_min", "time_min,checkpoint_interval")
                     + "".join(row + ("600" if row.startswith("3,") else "0") + "\n"
                               for row in (_ROWS.replace("\n", ",\n")).split("\n")[:-1]))
    events.write_text("time,event,nodes,reason\n1000,down,gpu3,xid79\n1200,up,gpu3,\n")
    assert main(["simulate", str(trace), "--cluster", str(conf), "--events", str(events),
                 "--jobs-out", str(recs), "--no-progress"]) == 0
    out = pd.read_csv(recs)
    f = out[out.job_id == 3]
    assert f.time_limit.tolist() == [3540, 2400] and f.attempt.tolist() == [0, 1]
    assert main(["check", str(recs), "--trace", str(trace), "--cluster", str(conf),
                 "--events", str(events)]) == 0
    bad = out.copy()
    bad.loc[(bad.job_id == 3) & (bad.attempt == 1), "time_limit"] = 1740
    bad.to_csv(tmp_path / "bad.csv", index=False)
    assert main(["check", str(tmp_path / "bad.csv"), "--trace", str(trace), "--cluster",
                 str(conf), "--events", str(events)]) == 1


def _scaled_members(draw, cluster, available, jobs, parts, k):
    """Member jobs of 1-3 reservations (tests/test_resvjobs.py), their windows on the
    jobs' clock scaled by ``k``."""
    resv = _reservations(draw, cluster, available, jobs, parts)
    items = tuple(dataclasses.replace(r, start=r.start * k, end=r.end * k) for r in resv.items)
    return dataclasses.replace(resv, items=items, _names={}, _cache={})


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("conservative", 1)])
@FEWER
@given(data=st.data())
def test_time_min_of_member_jobs_matches_twin(data, policy, depth):
    """Jobs running in an advance reservation with a time minimum: a member that cannot
    run its whole limit before its window closes starts with a shorter one (the window's
    end is a hold on its twin node, fastsched.sim.resvlayout), as the twin cuts it."""
    cluster, available, jobs, parts, deps, groups, caps, rank = data.draw(constrained_cases())
    jobs, tmin, k = _scaled(data, jobs)
    jobs.cpus_per_node = np.maximum(jobs.cpus_per_node, 1).astype(jobs.cpus_per_node.dtype)
    resv = _scaled_members(data.draw, cluster, available, jobs, parts, k)
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    ids = [int(j) for j in jobs.job_id]
    key = None if rank is None else np.array([rank[j] for j in ids])
    run = engine_run(cluster, jobs, policy, depth, available, resv, pc, dependencies=dp,
                     limits=lg, rank=key, time_min=tmin)
    ran = {}
    out, _ = naive_nodes.simulate(
        cluster, naive_nodes.jobs_from_table(jobs), policy, depth, available, partitions=parts,
        deps=deps, groups=groups, caps=caps, rank=rank,
        blocked=list(zip(*(a.tolist() for a in resv.windows(0)))),
        members=twin_members(resv, jobs), time_min=dict(zip(ids, tmin.tolist())),
        ran_limits=ran)
    out = {j: r for j, r in out.items() if r[0] < TAIL}    # the simulator drops these
    naive_nodes.assert_same_records(run, ids, out)
    if not (tmin > 0).any():
        return
    _same_limits(run, jobs, ran)
    member = (resv.member >= 0) & (run.start >= 0)
    event(f"cut member limits: {min(int((run.time_limit < jobs.time_limit)[member].sum()), 2)}")


def test_a_member_starts_with_the_limit_its_window_leaves():
    """Jobs 1 and 2 run in maint ([600, 1800) on g1): job 1 (30 min asked, 10 min
    minimum, runs 1,000 s) starts as the window opens with the 20 min left in it, and
    ends inside; job 2 (60 min, no minimum) fits no window and stays pending. The
    records pass the time-limit and reservation checks; with a FLEX reservation the
    time minimum is refused."""
    from fastsched.model.reservations import Reservation, Reservations
    from fastsched.model.resvjobs import JobReservations
    cluster = Cluster([f"g{i}" for i in range(1, 5)], cpus=[8] * 4, gpus=[4] * 4,
                      mem_mb=[0] * 4)
    jobs = JobTable.from_arrays(job_id=[1, 2, 3], submit_time=0, time_limit=[1800, 3600, 600],
                                runtime=[1000, 3000, 600], num_nodes=1, gpus_per_node=4,
                                cpus_per_node=1, user=0)

    def members(flags=()):
        maint = Reservation("maint", 600, 1800, (0,), users=("alice",), flags=flags)
        return JobReservations.of(Reservations((maint,), 4), ["maint", "maint", ""],
                                  ["alice", "alice", "bob"])
    r = simulate(cluster, jobs, "easy", advance_reservations=members(),
                 time_min=[600, 0, 0])
    got = r.jobs.set_index("job_id")
    assert got.loc[1, ["start_time", "end_time", "time_limit"]].tolist() == [600, 1600, 1200]
    assert pd.isna(got.loc[2, "start_time"]) and got.loc[3, "start_time"] == 0
    report = verify(r.cluster, r.workload, r.schedule, advance_reservations=members(),
                    time_min=r.time_min, asked_limit=r.asked_limit)
    assert report.ok and {"time_limit", "outside_reservation"} <= set(report.checks), report
    with pytest.raises(UnsupportedError, match="FLEX"):
        simulate(cluster, jobs, "easy", advance_reservations=members(("FLEX",)),
                 time_min=[600, 0, 0])


def test_cli_member_with_a_time_min_and_the_check(tmp_path, capsys):
    """The same case from the command line: the workload's time_min and reservation
    columns, a reservation file; the check accepts the records."""
    from fastsched.io.slurmconf import read_cluster
    conf = _conf(tmp_path)
    jobs = JobTable.from_arrays(job_id=[1, 2, 3], submit_time=0, time_limit=[1800, 3600, 600],
                                runtime=[1000, 3000, 600], num_nodes=1, gpus_per_node=4,
                                cpus_per_node=1, user=0)
    write_workload(Workload(jobs, np.zeros(3, np.int32), ["alice"], ["a"],
                            np.zeros(1, np.int32), ["o"],
                            reservation=np.array(["maint", "maint", ""], dtype=object),
                            time_min=np.array([600, 0, 0])),
                   read_cluster(conf), tmp_path / "w.csv")
    resv = tmp_path / "resv.txt"
    resv.write_text("ReservationName=maint StartTime=600 EndTime=1800 Nodes=g1 Users=alice\n")
    common = ["--cluster", str(conf), "--resv-file", str(resv)]
    out = tmp_path / "out.csv"
    assert main(["simulate", str(tmp_path / "w.csv"), *common, "--no-progress",
                 "--jobs-out", str(out)]) == 0
    got = pd.read_csv(out).set_index("job_id")
    assert got.loc[1, ["start_time", "end_time", "time_limit"]].tolist() == [600, 1600, 1200]
    capsys.readouterr()
    assert main(["check", str(out), "--trace", str(tmp_path / "w.csv"), *common]) == 0
    assert "time_limit" in capsys.readouterr().out


@pytest.mark.parametrize("policy,depth", [("easy", 1), ("easy", 2), ("conservative", 1)])
@FEWER
@given(data=st.data())
def test_time_min_with_boots_and_pulls_matches_twin(data, policy, depth):
    """Power saving, container images or both: a limit is cut at the pass, then the job
    waits for its nodes' boots (its cut limit counts from when they are ready, as
    Slurm's job_config_fini resets its end) and pulls its image inside that limit; the
    engine against the twin, records, boots, pulls and limits."""
    if data.draw(st.integers(0, 3)) > 0:    # crowded: cut limits are common
        cluster, jobs, tmin = data.draw(_crowded())
        available, deps, groups, caps, rank = None, {}, {}, [], None
        parts = {int(j): [0] for j in jobs.job_id}
    else:
        cluster, available, jobs, parts, deps, groups, caps, rank = \
            data.draw(constrained_cases())
        jobs, tmin, _ = _scaled(data, jobs)
    ids = [int(j) for j in jobs.job_id]
    ran = {}
    engine = {"time_min": tmin}
    twin = {"time_min": dict(zip(ids, tmin.tolist())), "ran_limits": ran}
    which = data.draw(st.sampled_from(["power", "images", "both"]))
    if which != "images":
        pm = data.draw(power_models(cluster))
        engine["power"] = engine_power(pm, cluster)
        twin["power"] = _twin_power(pm, cluster)
    if which != "power":
        images, c = _images(data, len(jobs))
        engine["images"], twin["images"] = images, _twin_images(ids, c)
    case = (cluster, available, jobs, parts, deps, groups, caps, rank)
    run, _, _ = run_both(case, policy, depth, engine=engine, twin=twin)
    limit = jobs.time_limit
    if (tmin > 0).any():
        _same_limits(run, jobs, ran)
        limit = run.time_limit
    for i, j in enumerate(ids):
        if which != "images":
            assert run.configure[i] == twin["power"].get("boot_out", {}).get(j, 0), j
        if which != "power":
            assert run.pull[i] == twin["images"][3].get(j, 0), j
    cut = (limit < jobs.time_limit) & (run.start >= 0)
    waited = (run.configure > 0) if which != "images" else (run.pull > 0)
    event(f"{which}: cut limits {min(int(cut.sum()), 2)}, "
          f"cut and waited or pulled {min(int((cut & waited).sum()), 2)}")


def test_the_cli_runs_and_checks_time_min_with_power_saving(tmp_path):
    """The example's jobs on CLOUD nodes (boot 2 min, the first power-up at 1 s): job 1
    runs from 121 to 3721, where job 2 is reserved; job 3 (at 10) is cut to the 61
    whole minutes before that, then boots for 121 s and runs its 3000 s. Its record
    holds the cut limit and the check passes (the ``time_limit`` check reads the limit
    the job ran with, not its hold from its allocation); a record claiming its full
    limit fails it."""
    conf, trace, recs = tmp_path / "slurm.conf", tmp_path / "w.csv", tmp_path / "jobs.csv"
    conf.write_text("ClusterName=t\nResumeTimeout=600\nNodeName=gpu[1-4] CPUs=8 Gres=gpu:8 "
                    "State=CLOUD\nPartitionName=all Nodes=ALL Default=YES\n")
    trace.write_text(_HEAD + _ROWS)
    assert main(["simulate", str(trace), "--cluster", str(conf), "--power", "boot=2m",
                 "--jobs-out", str(recs), "--no-progress"]) == 0
    out = pd.read_csv(recs).set_index("job_id")
    assert out.loc[3, ["start_time", "end_time", "time_limit", "configure_time"]].tolist() \
        == [131, 3131, 3660, 121]
    check = ["check", str(recs), "--trace", str(trace), "--cluster", str(conf),
             "--power", "boot=2m"]
    assert main(check) == 0
    bad = out.copy()
    bad.loc[3, "time_limit"] = 7260
    bad.reset_index().to_csv(recs, index=False)
    assert main(check) == 1
