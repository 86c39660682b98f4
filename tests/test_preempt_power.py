"""Preemption with power saving and node ranges: a job of a node range started on fewer
nodes, its nodes booting or up, is a victim like any (whole, on the nodes it holds;
stopped while they boot it never ran, saves nothing; stopped later it keeps the
node-seconds of its last checkpoint counted from its start reset when its nodes were
ready); with GraceTimes and PreemptExemptTimes of the victims' classes (a victim in its
grace time whose nodes are ready first runs to its own end). The engine against the
twin (tests/naive_preempt.py in the event loop of tests/naive_nodes.py), the checks of
such runs, the Scheduler at the simulator's instants, and worked examples."""
from dataclasses import replace
from functools import partial

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fastsched import JobTable, simulate
from fastsched.engine.preempt import Preemptor
from fastsched.model.lifecycle import Lifecycle
from fastsched.model.power import PowerSaving
from fastsched.model.preemption import CANCEL, REQUEUE, Preemption
from constrained_twin import attempt_rows, run_both
from test_lifecycle import tampered
from test_power import _twin_power
from test_preempt import _attempts, _twin_rules, tiered, tiered_case

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@st.composite
def ranged_boot_cases(draw):
    """Two low tiers (GraceTimes up to 60 s drawn) filling 3-5 like nodes at 0 with jobs
    most of a node range (the last may ask for more nodes than are left and start
    narrow), most nodes CLOUD (powered down: the jobs at 0 are CONFIGURING for their
    boots of 3-30 s); PreemptExemptTimes drawn; high-tier jobs, most of a node
    range, arriving while those boot or after, which must preempt; jobs of every
    tier queued behind. Returns (case, rules, lifecycle, power model)."""
    n = draw(st.integers(3, 5))
    cpus = draw(st.sampled_from([2, 4]))
    cluster, parts = tiered(n, cpus, [draw(st.sampled_from([0, 0, 5, 20, 60]))
                                      for _ in range(2)])
    boot = draw(st.integers(3, 30))
    rows, low = [], []
    left = n
    while left > 0:
        k = draw(st.integers(1, left))
        left -= k
        more = draw(st.integers(0, min(2, n - k))) if left == 0 else 0
        limit = draw(st.integers(60, 200))
        rows.append((0, limit, draw(st.integers(40, limit)), k + more, cpus,
                     draw(st.integers(0, 1))))
        low.append(k if more else draw(st.integers(0, k - 1)))
    for _ in range(draw(st.integers(1, 2))):   # preemptors, while the low tiers boot
        limit = draw(st.integers(10, 60))
        k = draw(st.integers(1, n))
        rows.append((draw(st.integers(1, boot) | st.integers(boot, boot + 40)), limit,
                     draw(st.integers(1, limit)), k, cpus, 2))
        low.append(draw(st.integers(0, k - 1)))
    for _ in range(draw(st.integers(0, 3))):   # queued behind them
        limit = draw(st.integers(5, 100))
        k = draw(st.integers(1, n))
        rows.append((draw(st.integers(2, 40)), limit, draw(st.integers(1, limit)), k,
                     draw(st.integers(1, cpus)), draw(st.integers(0, 2))))
        low.append(draw(st.integers(0, k - 1)))
    case = tiered_case(cluster, parts, rows)
    mode = [draw(st.sampled_from([CANCEL, REQUEUE, REQUEUE])) for _ in range(3)]
    exempt = [draw(st.sampled_from([0, 0, 5, 20])) for _ in range(3)]
    pre = replace(Preemption.partition_prio(cluster, REQUEUE),
                  mode=np.array(mode, dtype=np.int64), backfill=draw(st.booleans()),
                  exempt=np.array(exempt, dtype=np.int64))
    m = len(rows)
    lc = replace(Lifecycle.of(m, delay=draw(st.integers(1, 10)),
                              checkpoint_interval=draw(st.sampled_from([0, 3, 7]))),
                 requeue=np.array(draw(st.lists(st.sampled_from([True, True, False]),
                                                min_size=m, max_size=m)), dtype=bool),
                 nodes_min=np.array(low, dtype=np.int64))
    names = list(cluster.node_names)
    pm = PowerSaving(suspend_time=draw(st.none() | st.integers(0, 20)),
                     suspend_timeout=draw(st.integers(0, 5)), resume_timeout=30, boot=boot,
                     resume_rate=draw(st.sampled_from([0, 7, 60])),
                     cloud_nodes=tuple(x for x in names if draw(st.integers(0, 3)) > 0))
    return case, pre, lc, pm


def _label(run, jobs, lc):
    """Name what a run hit: a narrow victim stopped while its nodes booted, or after."""
    a = run.attempts
    victims = np.flatnonzero(a.preempted)
    held = np.diff(a.alloc_offsets)
    narrow = [k for k in victims if held[k] < int(np.asarray(jobs.num_nodes)[a.job[k]])]
    event(f"narrow victim CONFIGURING: {any(a.start[k] == a.end[k] for k in narrow)}")
    event(f"narrow victim after its boot: {any(a.start[k] < a.end[k] for k in narrow)}")


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@SETTINGS
@given(data=st.data())
def test_narrow_victims_while_nodes_boot_match_twin(data, policy):
    """Node range jobs started narrow on booting nodes meet preemptors: the engine's
    records, attempts and boot waits are the twin's, and ``verify_attempts`` (with the
    preemption rules, the power model and the ranges) accepts the run."""
    from fastsched.sim.power import engine_power
    from fastsched.sim.lifecycle import attempt_table
    from fastsched.verify.lifecycle import verify_attempts
    from test_constraints import engine_inputs
    case, pre, lc, pm = data.draw(ranged_boot_cases())
    cluster, jobs = case[0], case[2]
    ids = [int(j) for j in jobs.job_id]
    twin = _twin_power(pm, cluster)
    run, _, killed = run_both(
        case, policy, 1, lifecycle=lc,
        engine={"preemption": partial(Preemptor, pre), "power": engine_power(pm, cluster)},
        twin={"preempt": _twin_rules(pre, ids), "power": twin,
              "nodes_min": {j: int(lc.nodes_min[i]) for i, j in enumerate(ids)}})
    assert attempt_rows(run, ids, "preempted", "configure") == sorted(killed)
    for i, j in enumerate(ids):
        if run.start[i] >= 0:
            assert run.configure[i] == twin.get("boot_out", {}).get(j, 0), j
    a = replace(_attempts(run), configure=attempt_table(run).get("configure"))
    pc = engine_inputs(*case[2:7])[0]
    report = verify_attempts(cluster, jobs, a, None, lc, preemption=pre, partitions=pc,
                             power=pm)
    # (the attempt checks see no partition choices: a job run in another choice is a
    # bad_allocation there)
    wrong = [v for v in report.violations if v.kind != "bad_allocation"]
    assert not wrong, wrong[:3]
    assert {"preemptor", "resumed_work"} <= set(report.checks)
    assert ("bad_resize" in report.checks) == lc.ranged
    _label(run, jobs, lc)


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@SETTINGS
@given(data=st.data())
def test_scheduler_at_the_simulators_instants(data, policy):
    """The same cases without node ranges (the Scheduler refuses them with power
    saving): victims in their GraceTime while their nodes boot, stopped at its end or
    not (their nodes ready first); the Scheduler driven at the simulator's instants
    gives ``simulate``'s attempts."""
    from fastsched import Scheduler
    from scheddrive import drive_or_discard, simulated
    case, pre, lc, pm = data.draw(ranged_boot_cases())
    cluster, jobs = case[0], case[2]
    lc = replace(lc, nodes_min=None)
    s = Scheduler(cluster, policy, jobs=jobs, preemption=pre, lifecycle=lc, power=pm)
    got = drive_or_discard(s, jobs, lc).attempts
    r = simulate(cluster, jobs, policy, preemption=pre, lifecycle=lc, power=pm)
    assert got == simulated(r)
    assert s.start_costs.power.power_ups == r.summary["power"]["power_ups"]


# ---- a worked example ---------------------------------------------------------------

def _example(submit: int):
    """3 CLOUD nodes of 2 CPUs booting 60 s. Job 1 (high tier, 1 node) at 0 takes n0;
    job 2 (low tier, 3 nodes, at least 1, checkpoints every 25 s) at 0 starts narrow on
    n1, n2 (runtime 300 x 3 / 2 = 450 s from its boot's end, 60); job 3 (high tier, 2
    nodes, 100 s) at ``submit`` must preempt job 2."""
    cluster = tiered(3, 2, [0, 0])[0]
    jobs = JobTable.from_arrays(job_id=[1, 2, 3], submit_time=[0, 0, submit],
                                time_limit=[1000, 1000, 100], runtime=[500, 300, 100],
                                num_nodes=[1, 3, 2], cpus_per_node=2, partition=[2, 0, 2])
    lc = Lifecycle.of(3, checkpoint_interval=[0, 25, 0], delay=10, nodes_min=[0, 1, 0])
    pm = PowerSaving(boot=60, resume_timeout=600, suspend_time=None, resume_rate=0,
                     cloud_nodes=tuple(cluster.node_names))
    pre = Preemption.partition_prio(cluster, REQUEUE)
    r = simulate(cluster, jobs, "easy", lifecycle=lc, power=pm, preemption=pre,
                 reservations="nodes")
    f = r.jobs
    return r, f[["job_id", "attempt", "start_time", "end_time", "state", "num_nodes",
                 "configure_time"]].values.tolist()


def test_narrow_victim_stopped_while_its_nodes_boot():
    """Job 3 at 30 preempts job 2 while n1, n2 boot: job 2's attempt never ran (30 to 30,
    CONFIGURING 30 s, nothing saved); job 3 takes n1, n2 and waits for their boot
    (60 to 160); job 2, requeued (eligible at 40) with all 300 s to do, starts narrow at
    160 on the two free nodes, now up: 450 s, to 610. (Kept work counted from the
    allocation, as if the boot ran the job, would keep its "checkpoint" at 25: 50
    node-seconds, 16 s at 3 nodes, and end it at 586.)"""
    r, rows = _example(30)
    assert rows == [[1, 0, 60, 560, "COMPLETED", 1, 60],
                    [2, 0, 30, 30, "PREEMPTED", 2, 30],
                    [2, 1, 160, 610, "COMPLETED", 2, 0],
                    [3, 0, 60, 160, "COMPLETED", 2, 30]]
    assert r.verify().ok


def test_narrow_victim_stopped_after_its_boot_keeps_its_checkpoint():
    """Job 3 at 100 preempts job 2, running since its boot's end (60) on 2 of its 3
    nodes: its last checkpoint (at 85: 25 s of run) kept 25 x 2 = 50 node-seconds, 16 s
    at its 3 nodes (rounded down); requeued with 284 s, it starts narrow at 200 on n1,
    n2 and runs 284 x 3 / 2 = 426 s, to 626. Counted from its allocation (0) as if the
    boot ran the job, its checkpoint at 100 would keep 100 x 2 = 200 node-seconds (66 s):
    it would end at 551. ``verify`` passes and catches the requeued attempt ending a
    second late (``resumed_work``)."""
    r, rows = _example(100)
    assert rows == [[1, 0, 60, 560, "COMPLETED", 1, 60],
                    [2, 0, 60, 100, "PREEMPTED", 2, 60],
                    [2, 1, 200, 626, "COMPLETED", 2, 0],
                    [3, 0, 100, 200, "COMPLETED", 2, 0]]
    assert r.verify().ok
    t = r.attempts
    k = int(np.flatnonzero((t["row"] == 1) & (t["attempt"] == 1))[0])
    assert "resumed_work" in tampered(r, end=(k, t["end"][k] + 1)).kinds()
