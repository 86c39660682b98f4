"""``--time-min`` with preemption: a pass tries a cut start on the free resources before
it plans over preemptable jobs, and a job preempts (after the pass) only when its
request does not fit the free resources, for its own limit; it then starts like any
job (its limit cut at a later reservation there, never at a preemptable job's end).
The engine against the twin (tests/naive_timemin.py in tests/naive_nodes.py, with
tests/naive_preempt.py and tests/naive_preemptplan.py), the checks, the embeddable
Scheduler at the simulator's instants, a hand-worked example (also through the CLI)
and what a wrong rule would give there."""
from dataclasses import replace
from functools import partial

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import naive_nodes
import naive_timemin
from fastsched import Scheduler, simulate
from fastsched.cli import main
from fastsched.engine.preempt import Preemptor
from fastsched.io.hostlist import expand
from fastsched.io.slurmconf import read_cluster
from fastsched.io.workload import read_workload
from fastsched.model.lifecycle import Lifecycle
from fastsched.model.preemption import CANCEL, OFF, REQUEUE, Preemption
from fastsched.sim.lifecycle import attempt_table
from fastsched.sim.preemption import site_preemption
from fastsched.tools.testing import lifecycles
from fastsched.verify.lifecycle import Attempts, verify_attempts
from constrained_twin import attempt_rows, run_both
from scheddrive import drive_or_discard, simulated
from test_constraints import constrained_cases, engine_inputs
from test_preempt import _twin_rules, grace_cases, preemptions, tiered, tiered_case
from test_scheduler_preempt import preempt_cases
from test_timemin import _limits_by_attempt, _scaled

#: examples per drawn test (each well under 10 s of CPU: the suite's budget)
_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large]
TWIN = settings(max_examples=60, deadline=None, suppress_health_check=_HEALTH)
DRIVEN = settings(max_examples=40, deadline=None, suppress_health_check=_HEALTH)
FEW = settings(max_examples=20, deadline=None, suppress_health_check=_HEALTH)


@st.composite
def _gap_cases(draw):
    """Tiered nodes (test_preempt.tiered): a high-tier job on one node, low-tier jobs on
    others, a high-tier job of every node that cannot preempt enough (the high one is
    not preemptable) and so is reserved at its end, and jobs of every tier arriving
    before it: gaps that a cut limit fits, next to preemptable jobs."""
    n = draw(st.integers(3, 5))
    cpus = draw(st.sampled_from([2, 4]))
    cluster, parts = tiered(n, cpus, [draw(st.sampled_from([0, 5, 20])) for _ in range(2)])
    first = draw(st.integers(20, 80))
    rows = [(0, first, first, 1, cpus, 2)]
    for _ in range(draw(st.integers(1, n - 2))):
        limit = draw(st.integers(40, 300))
        rows.append((0, limit, draw(st.integers(20, limit)), 1, cpus, draw(st.integers(0, 1))))
    rows.append((1, draw(st.integers(10, 60)), draw(st.integers(5, 10)), n, cpus, 2))
    for _ in range(draw(st.integers(1, 4))):
        limit = draw(st.integers(5, 120))
        rows.append((draw(st.integers(2, first)), limit, draw(st.integers(1, limit)),
                     draw(st.integers(1, n - 1)), draw(st.integers(1, cpus)),
                     draw(st.integers(0, 2))))
    mode = [draw(st.sampled_from([CANCEL, REQUEUE])) for _ in range(3)]
    pre = replace(Preemption.partition_prio(cluster, REQUEUE),
                  mode=np.array(mode, dtype=np.int64), backfill=draw(st.booleans()))
    return tiered_case(cluster, parts, rows), pre


@st.composite
def _preempt_time_min_cases(draw):
    """(case, rules, time_min, lifecycle): tiered gaps next to preemptable jobs
    (:func:`_gap_cases`), tiered nodes full of low-tier jobs with high-tier preemptors
    arriving (test_preempt.grace_cases), or a constrained case where every higher class
    may preempt every lower one; times scaled so that whole minutes matter, most jobs
    with a time minimum."""
    data = draw(st.data())
    kind = draw(st.integers(0, 3))
    if kind < 2:
        case, pre = draw(_gap_cases())
    elif kind == 2:
        case, pre = draw(grace_cases())
    else:
        case = draw(constrained_cases())
        classes = draw(st.integers(2, 3))
        pre = draw(preemptions(classes, len(case[2]), True))
        pre = replace(pre, may=np.tril(np.ones((classes, classes), dtype=bool), -1),
                      mode=np.where(pre.mode == OFF, REQUEUE, pre.mode),
                      backfill=draw(st.booleans()))
    jobs, tmin, _ = _scaled(data, case[2])
    case = (*case[:2], jobs, *case[3:])
    return case, pre, tmin, draw(lifecycles(len(jobs)))


def _attempts(run):
    t = attempt_table(run)
    return Attempts(t["row"], t["attempt"], t["start"], t["end"], t["killed"],
                    t["alloc_offsets"], t["alloc_nodes"], preempted=t["preempted"],
                    partition=t["partition"], limit=t["limit"])


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("easy", 2),
                                          ("conservative", 1)])
@TWIN
@given(case=_preempt_time_min_cases())
def test_time_min_with_preemption_matches_twin(case, policy, depth):
    """Records, attempts (preempted or not) and each attempt's limit; the attempt checks
    (``preemptor``, ``preempt_exempt``, ``time_limit``) accept the run, and catch an
    attempt that claims a limit above its job's."""
    case, pre, tmin, lc = case
    cluster, jobs = case[0], case[2]
    ids = [int(j) for j in jobs.job_id]
    ran = {}
    run, _, killed = run_both(case, policy, depth, lifecycle=lc,
                              engine={"preemption": partial(Preemptor, pre), "time_min": tmin},
                              twin={"preempt": _twin_rules(pre, ids), "ran_limits": ran,
                                    "time_min": dict(zip(ids, tmin.tolist()))})
    assert attempt_rows(run, ids, "preempted") == sorted(killed)
    if not (tmin > 0).any():
        return
    assert _limits_by_attempt(run, ids) == {(j, k): v for j, limits in ran.items()
                                            for k, v in enumerate(limits)}
    pc = engine_inputs(*case[2:7])[0]
    a = _attempts(run)
    report = verify_attempts(cluster, jobs, a, None, lc, preemption=pre, partitions=pc,
                             time_min=tmin)
    wrong = [v for v in report.violations if v.kind != "bad_allocation"]
    assert not wrong, wrong[:3]
    assert {"time_limit", "preemptor"} <= set(report.checks)
    cut = np.flatnonzero(a.limit < jobs.time_limit[a.row])
    preempted = int(a.preempted.sum())
    event(f"cut attempts: {min(len(cut), 2)}, preempted: {min(preempted, 2)}, "
          f"both in one run: {bool(len(cut) and preempted)}")
    if len(cut):        # an attempt claiming more than its job asked for is caught
        limit = a.limit.copy()
        limit[cut[0]] = jobs.time_limit[a.row[cut[0]]] + 60
        bad = verify_attempts(cluster, jobs, replace(a, limit=limit), None, lc,
                              preemption=pre, partitions=pc, time_min=tmin)
        assert "time_limit" in bad.kinds()


@FEW
@given(case=_preempt_time_min_cases(), policy=st.sampled_from(["easy", "conservative"]))
def test_simulated_runs_pass_the_checks(case, policy):
    case, pre, tmin, lc = case
    cluster, jobs = case[0], case[2]
    pc = engine_inputs(*case[2:7])[0]
    r = simulate(cluster, jobs, policy, partitions=pc, preemption=pre, lifecycle=lc,
                 time_min=tmin)
    report = r.verify()
    # (the checks see each job's one partition, not its choices: a job run in another
    # choice is a bad_allocation there, as in test_preempt)
    wrong = [v for v in report.violations if v.kind != "bad_allocation"]
    assert not wrong, wrong[:3]
    assert ("time_limit" in report.checks) == (tmin > 0).any()


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@DRIVEN
@given(case=preempt_cases(), data=st.data())
def test_scheduler_cuts_and_preempts_as_the_simulator(policy, case, data):
    """Driven at the simulator's instants, the Scheduler gives the same attempts and
    each job's last start with the same limit."""
    cluster, jobs, pre, lc = case
    jobs, tmin, _ = _scaled(data, jobs)
    s = Scheduler(cluster, policy, jobs=jobs, preemption=pre, lifecycle=lc, time_min=tmin)
    got = drive_or_discard(s, jobs, lc)
    r = simulate(cluster, jobs, policy, preemption=pre, lifecycle=lc, time_min=tmin)
    assert got.attempts == simulated(r)
    sched = r.schedule
    assert got.starts == {int(j): (int(sched.start_time[i]), sorted(sched.nodes_of(i).tolist()),
                                   int(r.workload.time_limit[i]))
                          for i, j in enumerate(jobs.job_id) if sched.start_time[i] >= 0}
    cut = sum(v[2] < jobs.time_limit[i] for i, v in enumerate(got.starts.values()))
    event(f"cut: {min(cut, 2)}, preempted: {min(sum(a[4] for a in got.attempts), 2)}")


# ------------------------------------------------------------- the hand-worked example

_CONF = ("PreemptType=preempt/partition_prio\nPreemptMode=REQUEUE\n"
         "NodeName=gpu[01-03] CPUs=64 RealMemory=512000 Gres=gpu:8\n"
         "PartitionName=low Nodes=ALL PriorityTier=1 Default=YES MaxTime=UNLIMITED\n"
         "PartitionName=high Nodes=ALL PriorityTier=10 MaxTime=UNLIMITED\n")
_TRACE = ("job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,cpus_per_node,"
          "mem_per_node,partition,user,account,time_min\n"
          "1,0,1000,1000,1,8,64,0,high,alice,prod,\n"
          "2,0,86400,5000,1,8,64,0,low,sam,lab,\n"
          "3,5,3600,3600,3,8,64,0,high,alice,prod,600\n"
          "4,10,7200,900,1,8,64,0,high,bob,prod,600\n")

#: (job, attempt, start, end, nodes, time_limit, state): job 4 starts at 10 on the free
#: node with its limit cut to the 16 whole minutes before job 3's reservation at 1000
#: and preempts nothing (job 2's node would give it its whole 7200 s at once); job 3
#: does not fit the free nodes at 1000: it preempts job 2 and starts with its whole
#: limit, not its time minimum; job 2 runs again from 4600
_EXPECTED = [(1, 0, 0, 1000, ["gpu01"], 1000, "COMPLETED"),
             (2, 0, 0, 1000, ["gpu02"], 86400, "PREEMPTED"),
             (2, 1, 4600, 9600, ["gpu01"], 86400, "COMPLETED"),
             (3, 0, 1000, 4600, ["gpu01", "gpu02", "gpu03"], 3600, "COMPLETED"),
             (4, 0, 10, 910, ["gpu03"], 960, "COMPLETED")]


def _example(tmp_path):
    (tmp_path / "slurm.conf").write_text(_CONF)
    (tmp_path / "jobs.csv").write_text(_TRACE)
    cluster = read_cluster(tmp_path / "slurm.conf")
    return cluster, read_workload(tmp_path / "jobs.csv", cluster)


def _records(jobs: pd.DataFrame):
    return sorted((int(r.job_id), int(r.attempt), int(r.start_time), int(r.end_time),
                   sorted(expand(str(r.nodes))), int(r.time_limit), r.state)
                  for r in jobs.itertuples())


def test_the_example_cuts_without_preempting_then_preempts_for_the_whole_limit(tmp_path):
    cluster, w = _example(tmp_path)
    r = simulate(cluster, w.jobs, "easy", preemption=site_preemption(cluster),
                 **w.constraints())
    assert _records(r.jobs) == _EXPECTED
    assert r.verify().ok


def _twin_example(cluster, w):
    ids = [int(j) for j in w.jobs.job_id]
    pre = site_preemption(cluster)
    parts = {j: [int(p)] for j, p in zip(ids, w.jobs.partition)}
    rank = {j: -cluster.partitions[int(p)].priority_tier for j, p in zip(ids, w.jobs.partition)}
    killed = []
    out, _ = naive_nodes.simulate(
        cluster, naive_nodes.jobs_from_table(w.jobs), "easy", 1, partitions=parts, rank=rank,
        preempt=_twin_rules(pre, ids), time_min=dict(zip(ids, w.time_min.tolist())),
        requeue={j: True for j in ids}, checkpoint={j: 0 for j in ids},
        delay=Lifecycle.of(len(ids)).delay, attempts=killed)
    names = cluster.node_names
    runs = [(j, k, s, e, sorted(names[x] for x in n)) for j, k, s, e, n, _ in killed]
    return sorted(runs + [(j, sum(1 for x in killed if x[0] == j), o[0], o[1],
                           sorted(names[x] for x in o[2])) for j, o in out.items()])


def test_the_twin_gives_the_example_and_a_wrong_rule_does_not(tmp_path, monkeypatch):
    """The twin gives the expected attempts; with a deliberately wrong rule (a job
    that may preempt gets no cut start: a preemption for its whole limit or a wait
    instead) it does not, so the expected attempts tell the two apart."""
    cluster, w = _example(tmp_path)
    want = [e[:5] for e in _EXPECTED]
    assert _twin_example(cluster, w) == want
    high = cluster.partitions.index(next(p for p in cluster.partitions if p.name == "high"))
    real = naive_timemin.shorten

    def no_cut_for_preemptors(now, nodes, plan, job, parts, tmin):
        return None if high in parts else real(now, nodes, plan, job, parts, tmin)
    monkeypatch.setattr(naive_timemin, "shorten", no_cut_for_preemptors)
    assert _twin_example(cluster, w) != want


def test_the_cli_runs_and_checks_the_example(tmp_path):
    _example(tmp_path)
    out = tmp_path / "out.csv"
    common = ["--cluster", str(tmp_path / "slurm.conf")]
    assert main(["simulate", str(tmp_path / "jobs.csv"), *common, "--jobs-out", str(out),
                 "--no-progress"]) == 0
    assert _records(pd.read_csv(out)) == _EXPECTED
    assert main(["check", str(out), "--trace", str(tmp_path / "jobs.csv"), *common]) == 0
    bad = pd.read_csv(out)
    bad.loc[bad.job_id == 4, "time_limit"] = 7300        # above what it asked for
    bad.to_csv(out, index=False)
    assert main(["check", str(out), "--trace", str(tmp_path / "jobs.csv"), *common]) == 1


def test_a_victim_ending_within_its_grace_keeps_its_own_limit_in_the_records():
    """Job 1 (GraceTime 60) is preempted at 50 and held until 110, but ends on its own
    at 100: its record holds the limit it ran with (1000), not the hold cut to its grace
    end (110); job 2 starts at 100 with its own limit."""
    cluster, parts = tiered(1, 2, [60, 0])
    case = tiered_case(cluster, parts, [(0, 1000, 100, 1, 2, 0), (50, 500, 100, 1, 2, 2)])
    pre = Preemption.partition_prio(cluster, REQUEUE)
    r = simulate(cluster, case[2], "easy", preemption=pre, time_min=[0, 60])
    j = r.jobs.set_index("job_id")
    assert (j.end_time[1], j.state[1], j.time_limit[1]) == (100, "COMPLETED", 1000)
    assert (j.start_time[2], j.time_limit[2]) == (100, 500)
    assert r.verify().ok
