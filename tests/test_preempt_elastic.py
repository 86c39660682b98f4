"""Preemption with elastic jobs and node ranges: ``--no-kill`` jobs that node failures
shrank, and jobs of a node range started on fewer nodes, are preempted whole, on the
nodes they hold then; a node range job preempts until its MIN nodes fit. The engine
against the twin (tests/naive_preempt.py in the event loop of tests/naive_nodes.py,
which shrinks as tests/naive_elastic.py says), the checks of such runs, and what is
refused."""
from dataclasses import replace
from functools import partial

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, reject, settings
from hypothesis import strategies as st

from fastsched import JobTable, NodeEvents, simulate
from fastsched.engine import run_nodes
from fastsched.engine.interrupt import Interrupted
from fastsched.engine.preempt import Preemptor
from fastsched.model.errors import UnsupportedError
from fastsched.model.lifecycle import Lifecycle
from fastsched.model.preemption import CANCEL, REQUEUE, Preemption
from constrained_twin import _bounded, attempt_rows, run_both
from test_lifecycle import tampered
from test_preempt import _twin_rules, tiered, tiered_case

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@st.composite
def elastic_preempt_cases(draw):
    """Two low tiers (grace times drawn) filling 3-5 like nodes at 0 with multi-node
    jobs, most ``--no-kill``, most with a minimum (a node range); nodes going down (and
    some back) while they run, so that they shrink; high-tier jobs (some ``--no-kill``,
    most of a node range) arriving while they run, which must preempt; jobs of every
    tier queued behind. Returns (case, rules, lifecycle, node event rows)."""
    n = draw(st.integers(3, 5))
    cpus = draw(st.sampled_from([2, 4]))
    cluster, parts = tiered(n, cpus, [draw(st.sampled_from([0, 0, 5, 20])) for _ in range(2)])
    rows, no_kill, low = [], [], []
    left = n
    while left > 0:                 # the low tiers fill the nodes, wide; the last one
        k = draw(st.integers(1, left))      # may ask for more and start narrow on k
        left -= k
        more = draw(st.integers(0, min(2, n - k))) if left == 0 else 0
        limit = draw(st.integers(60, 200))
        rows.append((0, limit, draw(st.integers(40, limit)), k + more, cpus,
                     draw(st.integers(0, 1))))
        no_kill.append(k + more > 1 and draw(st.sampled_from([True, True, False])))
        low.append(k if more else draw(st.integers(0, k - 1)))
    for _ in range(draw(st.integers(1, 2))):   # preemptors
        limit = draw(st.integers(10, 60))
        k = draw(st.integers(1, n))
        rows.append((draw(st.integers(5, 30)), limit, draw(st.integers(1, limit)), k,
                     cpus, 2))
        no_kill.append(k > 1 and draw(st.booleans()))
        low.append(draw(st.integers(0, k - 1)))
    for _ in range(draw(st.integers(0, 3))):   # queued behind them
        limit = draw(st.integers(5, 100))
        rows.append((draw(st.integers(2, 40)), limit, draw(st.integers(1, limit)),
                     draw(st.integers(1, n)), draw(st.integers(1, cpus)),
                     draw(st.integers(0, 2))))
        no_kill.append(draw(st.booleans()))
        low.append(0)
    case = tiered_case(cluster, parts, rows)
    mode = [draw(st.sampled_from([CANCEL, REQUEUE, REQUEUE])) for _ in range(3)]
    pre = replace(Preemption.partition_prio(cluster, REQUEUE),
                  mode=np.array(mode, dtype=np.int64), backfill=draw(st.booleans()))
    events = sorted((draw(st.integers(1, 25)), "down", [draw(st.integers(0, n - 1))])
                    for _ in range(draw(st.integers(1, 3))))
    events += sorted((t + draw(st.integers(1, 30)), "up", which) for t, _, which in events
                     if draw(st.booleans()))
    events.sort(key=lambda e: e[0])
    m = len(rows)
    lc = replace(Lifecycle.of(m, delay=draw(st.integers(1, 10)),
                              checkpoint_interval=draw(st.sampled_from([0, 7, 15]))),
                 requeue=np.array(draw(st.lists(st.sampled_from([True, True, False]),
                                                min_size=m, max_size=m)), dtype=bool),
                 no_kill=np.array(no_kill, dtype=bool),
                 nodes_min=np.array(low, dtype=np.int64))
    return case, pre, lc, events


def _run(case, pre, lc, events, policy):
    """The engine's run, asserted equal to the twin's (records, killed attempts, shapes);
    returns it with the job ids and the twin's shapes."""
    jobs = case[2]
    ids = [int(j) for j in jobs.job_id]
    resized = []
    run, _, killed = run_both(
        case, policy, 1, rows=events, lifecycle=lc,
        engine={"preemption": partial(Preemptor, pre)},
        twin={"preempt": _twin_rules(pre, ids), "resized": resized,
              "no_kill": {j: bool(lc.no_kill[i]) for i, j in enumerate(ids)},
              "nodes_min": {j: int(lc.nodes_min[i]) for i, j in enumerate(ids)}})
    assert attempt_rows(run, ids, "preempted") == sorted(killed)
    shapes = sorted((ids[r.job[k]], int(r.attempt[k]), int(r.start[k]), int(r.end[k]),
                     r.alloc_nodes[r.alloc_offsets[k]:r.alloc_offsets[k + 1]].tolist())
                    for r in [run.resizes] if r is not None for k in range(len(r)))
    assert shapes == sorted(resized)
    return run, ids


def _combinations(run, jobs, lc) -> bool:
    """Label what a run hit (a preempted attempt that a shrink resized; one that
    started narrow on a node range; a node range job that preempted and started
    narrow); returns whether it hit one of them."""
    a, r = run.attempts, run.resizes
    shrunk = set() if r is None else {(int(r.job[k]), int(r.attempt[k])) for k in range(len(r))}
    victims = np.flatnonzero(a.preempted)
    held = np.diff(a.alloc_offsets)
    asked = np.asarray(jobs.num_nodes)
    hits = {
        "shrunk victim": any((int(a.job[k]), int(a.attempt[k])) in shrunk for k in victims),
        "narrow victim": any((int(a.job[k]), int(a.attempt[k])) not in shrunk
                             and held[k] < asked[a.job[k]] for k in victims),
        "narrow preemptor": bool(len(victims)) and bool(
            ((np.asarray(jobs.partition) == 2) & (np.diff(run.alloc_offsets) < asked)
             & (run.start >= 0) & (lc.start_nodes(asked) < asked)).any())}
    for name, hit in hits.items():
        event(f"{name}: {hit}")
    event(f"any of them: {any(hits.values())}")
    return any(hits.values())


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@SETTINGS
@given(data=st.data())
def test_shrunk_jobs_preempted_match_twin(data, policy):
    """Shrunk ``--no-kill`` jobs and narrow node range jobs are victims (whole, on the
    nodes they hold, in the victims' order by the nodes they hold) and preemptors, in
    the engine as in the twin; a shrunk or narrow victim's requeued attempt asks for all
    its nodes with the node-seconds of its last checkpoint kept; a victim in its
    GraceTime that shrinks ends at its work's end or is stopped at its grace end; a node
    range preempts until its MIN nodes fit and starts on as many as are free then."""
    case, pre, lc, events = data.draw(elastic_preempt_cases())
    run, _ = _run(case, pre, lc, events, policy)
    _combinations(run, case[2], lc)


@SETTINGS
@given(data=st.data())
def test_runs_with_shrunk_victims_pass_the_checks(data):
    """``r.verify()`` passes on these runs (the shapes, the attempts, the preemptors),
    and catches a doctored one: a shrunk victim's preempted shape starting a second
    after the shape before it ended (``bad_resize``), or its requeued attempt, when it
    ran to its end, ending a second late (``resumed_work``: the node-seconds its
    checkpoint kept)."""
    case, pre, lc, events = data.draw(elastic_preempt_cases())
    cluster, jobs = case[0], case[2]
    policy = data.draw(st.sampled_from(["fcfs", "easy", "conservative"]))
    ev = NodeEvents.from_rows(events, cluster.num_nodes)
    try:            # (a run that never ends, preemption ping-pong, is discarded first)
        run_nodes(cluster, jobs, policy, events=ev, lifecycle=lc,
                  preemption=partial(Preemptor, pre), tick=_bounded(jobs))
    except Interrupted:
        reject()
    r = simulate(cluster, jobs, policy, events=ev, lifecycle=lc, preemption=pre,
                 reservations="nodes")
    report = r.verify()
    assert report.ok, report
    assert {"preemptor", "resumed_work"} <= set(report.checks)
    assert ("bad_resize" in report.checks) == (lc.elastic or lc.ranged)
    t = r.attempts
    resized = t.get("resized", np.zeros(len(t["row"]), dtype=bool))
    shrunk = {(int(a), int(b)) for a, b, z in zip(t["row"], t["attempt"], resized) if z}
    hit = [k for k in np.flatnonzero(t["preempted"])
           if (int(t["row"][k]), int(t["attempt"][k])) in shrunk]
    event(f"shrunk victims: {min(len(hit), 2)}")
    if not hit:
        return
    k = int(hit[0])
    assert "bad_resize" in tampered(r, start=(k, t["start"][k] + 1)).kinds()
    after = np.flatnonzero((t["row"] == t["row"][k]) & (t["attempt"] == t["attempt"][k] + 1))
    if len(after) and not t["killed"][after[-1]]:     # its work done: it ends then
        assert "resumed_work" in tampered(r, end=(int(after[-1]),
                                                  t["end"][after[-1]] + 1)).kinds()


EXAMPLE_CONF = """\
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
NodeName=gpu[01-04] CPUs=64 RealMemory=512000 Gres=gpu:8
PartitionName=scavenger Nodes=ALL PriorityTier=1 Default=YES MaxTime=UNLIMITED
PartitionName=high Nodes=ALL PriorityTier=10 MaxTime=UNLIMITED
"""
EXAMPLE_JOBS = """\
job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,cpus_per_node,mem_per_node,\
partition,user,account,checkpoint_interval,checkpoint_cost,no_kill,nodes_min
1,0,86400,36000,4,8,64,0,scavenger,sam,lab,3600,60,1,2
2,10000,7200,3600,4,8,64,0,high,alice,prod,0,0,0,2
"""


def test_cli_simulate_and_check(tmp_path, capsys):
    """docs/lifecycle.md's example from the command line: job 1 shrinks to 3 nodes at
    3600, job 2 (a range of 2-4) preempts it at 10000 and runs on those 3 (4,800 s);
    job 1, requeued with 6,300 s of its work at 4 nodes kept (25,200 node-seconds by its
    checkpoint at 7200 s of run), starts narrow on 3 at 14,800 and ends at 54,400;
    ``check`` passes, and catches its requeued attempt ending a second late."""
    from fastsched.cli import main
    conf, path = tmp_path / "slurm.conf", tmp_path / "jobs.csv"
    conf.write_text(EXAMPLE_CONF)
    path.write_text(EXAMPLE_JOBS)
    events = tmp_path / "events.csv"
    events.write_text("time,event,nodes\n3600,down,gpu04\n")
    out = tmp_path / "out.csv"
    site = ["--cluster", str(conf), "--events", str(events)]
    assert main(["simulate", str(path), *site, "--jobs-out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "preemption: 1 attempt(s) of 1 job(s) preempted, 0 cancelled; 18.7 GPU-h " \
           "lost, 56.0 GPU-h kept" in text
    import pandas as pd
    f = pd.read_csv(out)
    assert f[["job_id", "start_time", "end_time", "state", "num_nodes"]].values.tolist() == [
        [1, 0, 3600, "RESIZING", 4], [1, 3600, 10000, "PREEMPTED", 3],
        [1, 14800, 54400, "COMPLETED", 3], [2, 10000, 14800, "COMPLETED", 3]]
    assert main(["check", str(out), "--trace", str(path), *site]) == 0
    capsys.readouterr()
    f.loc[2, "end_time"] += 1
    f.to_csv(out, index=False)
    assert main(["check", str(out), "--trace", str(path), *site]) == 1
    assert "resumed_work" in capsys.readouterr().out


def regrowing():
    """A 2-node low-tier ``--no-kill`` job that regrows, on 2 nodes of two tiers: (cluster,
    the rules, the job, its lifecycle)."""
    cluster = tiered(2, 8, [0, 0])[0]
    jobs = JobTable.from_arrays(job_id=[1], submit_time=0, time_limit=10, runtime=5,
                                num_nodes=2, cpus_per_node=8, partition=0)
    return (cluster, Preemption.partition_prio(cluster, REQUEUE), jobs,
            Lifecycle.of(1, no_kill=True, regrow=True))


def test_regrow_with_preemption_is_refused():
    cluster, pre, jobs, lc = regrowing()
    with pytest.raises(UnsupportedError, match="regrow.*preemption"):
        simulate(cluster, jobs, "easy", lifecycle=lc, preemption=pre, reservations="nodes")
    simulate(cluster, jobs, "easy", lifecycle=replace(lc, regrow=False), preemption=pre,
             reservations="nodes")
