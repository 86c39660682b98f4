"""Preemption (partition_prio, qos; REQUEUE, CANCEL; GraceTime, PreemptExemptTime): the
engine against the twin (tests/naive_preempt.py, in the event loop of
tests/naive_nodes.py) on random cases, with node failures too; slurm.conf and TOML
reading; records, summary, checks; the CLI."""
from dataclasses import replace
from functools import partial

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fastsched import NodeEvents, simulate
from fastsched.cli import main
from fastsched.engine.preempt import Preemptor
from fastsched.io.slurmconf import read_cluster
from fastsched.model.errors import InputError, UnsupportedError
from fastsched.model.lifecycle import Lifecycle
from fastsched.model.preemption import CANCEL, OFF, REQUEUE, Preemption, parse_mode
from fastsched.model.reservations import Reservation, Reservations
from fastsched.sim.preemption import site_preemption
from fastsched.tools.testing import lifecycles, node_event_rows
from constrained_twin import attempt_rows, run_both
from test_constraints import SETTINGS, constrained_cases, engine_inputs
from test_power import _twin_power
from test_resvjobs import disjoint_reservations

_MODE_NAMES = {OFF: "OFF", CANCEL: "CANCEL", REQUEUE: "REQUEUE"}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_preemption_with_power_saving_matches_twin(data):
    """Victims CONFIGURING or not (a preemptor taking a booting node waits for its boot,
    a victim killed while its nodes boot never ran, its nodes idle from their boot's
    end), the victims ordered by Slurm's start time (a CONFIGURING job's: its
    allocation's, from which PreemptExemptTime counts until its nodes are ready); a
    victim in its GraceTime while its nodes boot stops at its grace end, or, ready
    first, runs to its own end."""
    from fastsched.sim.power import engine_power
    from fastsched.tools.testing import power_models
    from fastsched.verify.lifecycle import verify_attempts
    if data.draw(st.booleans()):    # full nodes at 0, preemptors while they may boot
        case, pre = data.draw(grace_cases())
    else:
        case = data.draw(constrained_cases())
        classes = data.draw(st.integers(2, 3))  # QOS classes (most cases have 1 partition)
        pre = data.draw(preemptions(classes, len(case[2]), True))
        # every higher class may preempt every lower one (preemptions are frequent)
        pre = replace(pre, may=np.tril(np.ones((classes, classes), dtype=bool), -1),
                      mode=np.where(pre.mode == OFF, REQUEUE, pre.mode),
                      backfill=data.draw(st.booleans()))
    cluster, jobs = case[0], case[2]
    pm = data.draw(power_models(cluster))
    twin = _twin_power(pm, cluster)
    lc = data.draw(lifecycles(len(jobs)))
    ids = [int(j) for j in jobs.job_id]
    policy = data.draw(st.sampled_from(["fcfs", "easy", "conservative"]))
    run, _, killed = run_both(case, policy, 1, lifecycle=lc,
                              engine={"preemption": partial(Preemptor, pre),
                                      "power": engine_power(pm, cluster)},
                              twin={"preempt": _twin_rules(pre, ids), "power": twin})
    assert attempt_rows(run, ids, "preempted", "configure") == sorted(killed)
    for i, j in enumerate(ids):
        if run.start[i] >= 0:
            assert run.configure[i] == twin.get("boot_out", {}).get(j, 0), j
    from fastsched.sim.lifecycle import attempt_table
    t = attempt_table(run)
    a = replace(_attempts(run), configure=t.get("configure"))
    pc = engine_inputs(*case[2:7])[0]
    report = verify_attempts(cluster, jobs, a, None, lc, preemption=pre, partitions=pc,
                             power=pm)
    # (the attempt checks see no partition choices: a job run in another choice is a
    # bad_allocation there, as in _check_preemptors)
    wrong = [v for v in report.violations if v.kind != "bad_allocation"]
    assert not wrong, wrong[:3]
    booting = sum(1 for k in np.flatnonzero(t["preempted"]) if t["configure"][k] > 0)
    event(f"preempted attempts: {min(int(run.attempts.preempted.sum()), 3)}, "
          f"CONFIGURING: {min(booting, 2)}")


@st.composite
def preemptions(draw, classes: int, n: int, qos: bool):
    """Random rules over ``classes`` classes (partitions, or QOS of ``n`` jobs); what may
    preempt what follows a random order of the classes (a cycle is refused)."""
    rank = draw(st.permutations(list(range(classes))))
    may = np.array([[draw(st.booleans()) and rank[a] > rank[b] for b in range(classes)]
                    for a in range(classes)], dtype=bool).reshape(classes, classes)
    mode = np.array(draw(st.lists(st.sampled_from([OFF, CANCEL, REQUEUE, REQUEUE]),
                                  min_size=classes, max_size=classes)), dtype=np.int64)
    grace = np.array(draw(st.lists(st.sampled_from([0, 0, 3, 10]), min_size=classes,
                                   max_size=classes)), dtype=np.int64)
    exempt = np.array(draw(st.lists(st.sampled_from([0, 0, 5, 20]), min_size=classes,
                                    max_size=classes)), dtype=np.int64)
    level = np.array(draw(st.lists(st.integers(0, 2), min_size=classes, max_size=classes)),
                     dtype=np.int64)
    job_class = np.array(draw(st.lists(st.integers(0, classes - 1), min_size=n, max_size=n)),
                         dtype=np.int64) if qos else None
    kind = "preempt/qos" if qos else "preempt/partition_prio"
    return Preemption(kind, may, mode, grace, exempt, level, job_class)


def _twin_rules(pre, ids):
    """The twin's functions of (job id, partition) for rules ``pre``."""
    row = {j: i for i, j in enumerate(ids)}

    def cls(j, p):
        return p if pre.job_class is None else int(pre.job_class[row[j]])
    return {"may": lambda i, p, v, vp: bool(pre.may[cls(i, p), cls(v, vp)]),
            "mode": lambda v, vp: _MODE_NAMES[int(pre.mode[cls(v, vp)])],
            "grace": lambda v, vp: int(pre.grace[cls(v, vp)]),
            "exempt": lambda v, vp: int(pre.exempt[cls(v, vp)]),
            "level": lambda v, vp: int(pre.level[cls(v, vp)]),
            "backfill": pre.backfill}


def _check_twin(data, policy, depth, qos, with_events, backfill=False, case=None,
                windows=False):
    case = data.draw(constrained_cases()) if case is None else case
    cluster, jobs = case[0], case[2]
    engine, twin = {}, {}
    if windows:                     # advance reservations held for every job
        jobs.cpus_per_node = np.maximum(jobs.cpus_per_node, 1).astype(jobs.cpus_per_node.dtype)
        items = disjoint_reservations(data.draw, cluster.num_nodes, [()], [()])
        start, end, node = Reservations(tuple(items), cluster.num_nodes).windows(0)
        engine["blocked"] = (start, end, node)
        twin["blocked"] = list(zip(start.tolist(), end.tolist(), node.tolist()))
        event(f"reservations: {len(items)}")
    classes = data.draw(st.integers(1, 3)) if qos else len(cluster.partitions)
    pre = replace(data.draw(preemptions(classes, len(jobs), qos)), backfill=backfill)
    rows = data.draw(node_event_rows(cluster.num_nodes, max_events=4, max_time=60,
                                     kinds=("down", "up", "drain", "resume"))) \
        if with_events else []
    lc = data.draw(lifecycles(len(jobs)))
    ids = [int(j) for j in jobs.job_id]
    run, _, killed = run_both(case, policy, depth, rows=rows or None, lifecycle=lc,
                              engine={"preemption": partial(Preemptor, pre), **engine},
                              twin={"preempt": _twin_rules(pre, ids), **twin})
    assert attempt_rows(run, ids, "preempted") == sorted(killed)
    event(f"preempted attempts: {min(int(run.attempts.preempted.sum()), 3)}")
    pc = engine_inputs(*case[2:7])[0]
    _check_preemptors(data, cluster, jobs, run, pre, pc, lc, rows)
    return run


def _attempts(run):
    from fastsched.sim.lifecycle import attempt_table
    from fastsched.verify.lifecycle import Attempts
    t = attempt_table(run)
    return Attempts(t["row"], t["attempt"], t["start"], t["end"], t["killed"],
                    t["alloc_offsets"], t["alloc_nodes"], preempted=t["preempted"],
                    partition=t["partition"])


def _check_preemptors(data, cluster, jobs, run, pre, pc, lc, rows):
    """The run passes the preemption checks with its rules (the attempt checks see no
    partition choices: a job run in another choice is a ``bad_allocation`` there); with
    rules under which nothing may preempt one victim's class, that victim is caught."""
    from fastsched.verify.lifecycle import verify_attempts
    a = _attempts(run)
    events = NodeEvents.from_rows(rows, cluster.num_nodes) if rows else None
    report = verify_attempts(cluster, jobs, a, events, lc, preemption=pre, partitions=pc)
    assert not report.kinds() & {"preemptor", "preempt_exempt"}, report
    assert "preemptor" in report.checks
    victims = np.flatnonzero(a.preempted)
    if not len(victims):
        return
    k = int(data.draw(st.sampled_from(victims.tolist())))
    c = int(a.partition[k]) if pre.job_class is None else int(pre.job_class[a.row[k]])
    may = np.array(pre.may, dtype=bool)
    may[:, c] = False
    doctored = verify_attempts(cluster, jobs, a, events, lc, partitions=pc,
                               preemption=replace(pre, may=may))
    caught = {v.job_id for v in doctored.violations if v.kind == "preemptor"}
    assert int(jobs.job_id[a.row[k]]) in caught


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("easy", 2),
                                          ("conservative", 1)])
@SETTINGS
@given(data=st.data())
def test_partition_prio_matches_twin(data, policy, depth):
    _check_twin(data, policy, depth, qos=False, with_events=False)


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@SETTINGS
@given(data=st.data())
def test_qos_matches_twin(data, policy):
    _check_twin(data, policy, 1, qos=True, with_events=False)


@SETTINGS
@given(data=st.data())
def test_preemption_with_node_failures_matches_twin(data):
    _check_twin(data, data.draw(st.sampled_from(["easy", "conservative"])), 1,
                qos=data.draw(st.booleans()), with_events=True)


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@SETTINGS
@given(data=st.data())
def test_preemption_with_advance_reservations_matches_twin(data, policy):
    """A preemptor looks for victims only on nodes no reservation window holds during
    its run (Slurm's job_test_resv before select_nodes)."""
    _check_twin(data, policy, 1, qos=data.draw(st.booleans()), with_events=False,
                windows=True)


def test_a_preemptor_does_not_count_a_reserved_node():
    """g1 is reserved [0, 2000) for no one; low job 1 runs on g2 from 0. High job 2 (QOS
    1, 30 s) at 10 cannot use g1, so it preempts job 1 and starts at 10 on g2 (job 1,
    requeued, again at 10 + 121 = 131). Counting g1 as free it would wait for job 1's
    end at 1000."""
    from fastsched import Cluster, JobTable
    c = Cluster(["g1", "g2"], cpus=[8, 8], gpus=[4, 4], mem_mb=[0, 0])
    pre = Preemption("preempt/qos", np.array([[False, False], [True, False]]),
                     np.array([REQUEUE, REQUEUE]), np.zeros(2, int), np.zeros(2, int),
                     np.array([0, 1]), job_class=np.array([0, 1]))
    jobs = JobTable.from_arrays(job_id=[1, 2], submit_time=[0, 10], time_limit=[1000, 30],
                                runtime=[1000, 30], num_nodes=1, gpus_per_node=4,
                                cpus_per_node=1, user=0)
    resv = Reservations((Reservation("m", 0, 2000, (0,)),), 2)
    for policy in ("easy", "conservative"):
        r = simulate(c, jobs, policy, preemption=pre, advance_reservations=resv)
        assert r.attempts["start"].tolist() == [0, 131, 10]
        assert r.attempts["preempted"].tolist() == [True, False, False]
        assert r.schedule.nodes_of(1).tolist() == [1] and r.verify().ok


def tiered(n: int, cpus: int, grace):
    """``n`` like nodes of ``cpus`` CPUs in two low tiers (GraceTime ``grace``) and a
    high one, each over all the nodes: (cluster, its partitions)."""
    from fastsched import Cluster
    from fastsched.model.cluster import Partition
    parts = [Partition("low0", np.arange(n), priority_tier=1, grace_time=grace[0]),
             Partition("low1", np.arange(n), priority_tier=1, grace_time=grace[1]),
             Partition("high", np.arange(n), priority_tier=2)]
    return Cluster([f"n{i}" for i in range(n)], [cpus] * n, [0] * n, [0] * n,
                   partitions=parts), parts


def tiered_case(cluster, parts, rows):
    """A constrained case (tests/test_constraints.py) of ``rows`` (submit, limit,
    runtime, nodes, CPUs per node, partition) on a :func:`tiered` cluster, ranked by
    PriorityTier."""
    from fastsched import JobTable
    submit, limit, runtime, nodes, c, p = map(list, zip(*rows))
    jobs = JobTable.from_arrays(job_id=np.arange(1, len(rows) + 1), submit_time=submit,
                                time_limit=limit, runtime=runtime, num_nodes=nodes,
                                cpus_per_node=c, partition=p)
    ids = [int(j) for j in jobs.job_id]
    n = cluster.num_nodes
    return (cluster, np.ones(n, dtype=bool), jobs, {j: [q] for j, q in zip(ids, p)}, {},
            {j: [] for j in ids}, [], {j: -parts[q].priority_tier for j, q in zip(ids, p)})


@st.composite
def grace_cases(draw):
    """Two low tiers (their grace times drawn, up to 60 s) filling 2-4 like nodes with
    long jobs at 0, high-tier jobs arriving later that must preempt, and jobs of every
    tier queued behind them: the cases where a victim held until its grace end, not its
    limit, changes what starts."""
    n = draw(st.integers(2, 4))
    cpus = draw(st.sampled_from([2, 4]))
    cluster, parts = tiered(n, cpus, [draw(st.sampled_from([0, 5, 20, 60])) for _ in range(2)])
    rows = []
    for _ in range(n):                         # the low tiers fill the nodes
        limit = draw(st.integers(60, 200))
        rows.append((0, limit, draw(st.integers(40, limit)), 1, cpus,
                     draw(st.integers(0, 1))))
    for _ in range(draw(st.integers(1, 2))):   # preemptors
        limit = draw(st.integers(10, 60))
        rows.append((draw(st.integers(1, 10)), limit, draw(st.integers(1, limit)),
                     draw(st.integers(2, n)), cpus, 2))
    for _ in range(draw(st.integers(1, 4))):   # queued behind them
        limit = draw(st.integers(5, 100))
        rows.append((draw(st.integers(2, 20)), limit, draw(st.integers(1, limit)),
                     draw(st.integers(1, n)), draw(st.integers(1, cpus)),
                     draw(st.integers(0, 2))))
    case = tiered_case(cluster, parts, rows)
    mode = [draw(st.sampled_from([CANCEL, REQUEUE])) for _ in range(3)]
    pre = replace(Preemption.partition_prio(cluster, REQUEUE),
                  mode=np.array(mode, dtype=np.int64), backfill=draw(st.booleans()))
    return case, pre


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@settings(max_examples=17, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_grace_end_holds_match_twin(data, policy):
    """Victims in their GraceTime are held until their grace end in the engine and in the
    twin alike (tests/naive_nodes.py ``ends``)."""
    case, pre = data.draw(grace_cases())
    jobs = case[2]
    lc = Lifecycle.of(len(jobs), delay=data.draw(st.integers(1, 10)))
    ids = [int(j) for j in jobs.job_id]
    run, _, killed = run_both(case, policy, 1, lifecycle=lc,
                              engine={"preemption": partial(Preemptor, pre)},
                              twin={"preempt": _twin_rules(pre, ids)})
    assert attempt_rows(run, ids, "preempted") == sorted(killed)
    event(f"preempted attempts: {min(int(run.attempts.preempted.sum()), 3)}")


# ---- a scavenger partition preempted by a high tier -------------------------------

CONF = """\
PreemptType=preempt/partition_prio
PreemptMode={mode}
{extra}
NodeName=gpu[01-04] CPUs=64 RealMemory=512000 Gres=gpu:8
PartitionName=scavenger Nodes=ALL PriorityTier=1 Default=YES MaxTime=UNLIMITED {part}
PartitionName=high Nodes=ALL PriorityTier=10 MaxTime=UNLIMITED
"""
JOBS = """\
job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,cpus_per_node,mem_per_node,\
partition,user,account,checkpoint_interval,checkpoint_cost
1,0,86400,36000,2,8,64,0,scavenger,sam,lab,3600,60
2,0,86400,36000,2,8,64,0,scavenger,sam,lab,0,0
3,7200,14400,10800,2,8,64,0,high,alice,prod,0,0
4,9000,14400,3600,1,8,64,0,high,alice,prod,0,0
"""


def _site(tmp_path, mode="REQUEUE", extra="", part=""):
    conf = tmp_path / "slurm.conf"
    conf.write_text(CONF.format(mode=mode, extra=extra, part=part))
    jobs = tmp_path / "jobs.csv"
    jobs.write_text(JOBS)
    return conf, jobs


def _run(tmp_path, **kw):
    from fastsched.io.workload import read_workload
    conf, path = _site(tmp_path, **kw)
    cluster = read_cluster(conf)
    w = read_workload(path, cluster)
    return simulate(cluster, w.jobs, "easy", preemption=site_preemption(cluster),
                    lifecycle=w.lifecycle(True, 121))


def test_requeue_resumes_from_checkpoint_and_summary(tmp_path):
    r = _run(tmp_path)
    f = r.jobs
    one = f[f.job_id == 1]
    assert one.state.tolist() == ["PREEMPTED", "COMPLETED"]
    assert one.end_time.tolist()[0] == 9000           # job 4 (high) preempts it at 9000
    # 9000 s run, checkpoints every 3600 s: 7200 s kept, 28800 s left
    assert int(one.run_time.tolist()[1]) == 36000 - 7200
    two = f[f.job_id == 2]
    assert two.end_time.tolist()[0] == 7200            # job 3 preempts the youngest tie
    assert int(two.run_time.tolist()[1]) == 36000      # no checkpoints: starts over
    p = r.summary["preemption"]
    assert (p["preempted_attempts"], p["preempted_jobs"], p["cancelled_jobs"]) == (2, 2, 0)
    # lost: job 1 1800 s on 16 GPUs, job 2 7200 s on 16 GPUs
    assert p["lost_gpu_hours"] == pytest.approx((1800 + 7200) * 16 / 3600)
    assert p["checkpointed_gpu_hours"] == pytest.approx(7200 * 16 / 3600)
    assert r.verify().ok


def test_cancel_ends_preempted_for_good(tmp_path):
    r = _run(tmp_path, mode="CANCEL")
    f = r.jobs
    assert sorted(f[f.state == "PREEMPTED"].job_id.tolist()) == [1, 2]
    assert r.summary["preemption"]["cancelled_jobs"] == 2
    assert len(f) == 4 and r.verify().ok


def test_grace_time_lets_victims_run_on(tmp_path):
    r = _run(tmp_path, part="GraceTime=600")
    f = r.jobs
    assert f[f.job_id == 2].end_time.tolist()[0] == 7800     # 7200 + 600
    assert f[f.job_id == 3].start_time.tolist()[0] == 7800
    assert r.verify().ok


def test_exempt_time_delays_preemption(tmp_path):
    r = _run(tmp_path, extra="PreemptExemptTime=150")        # minutes: 9000 s
    f = r.jobs
    assert f[f.job_id == 3].start_time.tolist()[0] == 9000
    assert f[(f.state == "PREEMPTED")].end_time.min() == 9000
    assert r.verify().ok


def test_partition_preempt_mode_off_protects(tmp_path):
    r = _run(tmp_path, part="PreemptMode=OFF")
    assert "PREEMPTED" not in set(r.jobs.state)


def test_preempt_none_and_inactive_change_nothing(tmp_path):
    from fastsched.io.workload import read_workload
    conf, path = _site(tmp_path)
    cluster = read_cluster(conf)
    w = read_workload(path, cluster)
    base = simulate(cluster, w.jobs, "easy").jobs
    full = Preemption.partition_prio(cluster)
    off = replace(full, mode=np.full(len(full.mode), OFF))
    assert full.active and not off.active
    for pre in (Preemption.none(), off):
        same = simulate(cluster, w.jobs, "easy", preemption=pre).jobs
        assert same.to_csv(index=False) == base.to_csv(index=False)


def test_preempt_none_conf_gives_identical_records(tmp_path):
    conf, path = _site(tmp_path)
    plain = tmp_path / "plain.conf"
    plain.write_text(conf.read_text().replace("PreemptType=preempt/partition_prio",
                                              "PreemptType=preempt/none"))
    bare = tmp_path / "bare.conf"
    bare.write_text("\n".join(line for line in conf.read_text().splitlines()
                              if not line.startswith("Preempt")))
    outs = []
    for c in (plain, bare):
        out = tmp_path / f"{c.stem}.csv"
        assert main(["simulate", str(path), "--cluster", str(c), "--jobs-out", str(out),
                     "--no-progress"]) == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


def test_config_errors_are_typed(tmp_path):
    with pytest.raises(UnsupportedError, match="SUSPEND"):
        parse_mode("SUSPEND,GANG", field="PreemptMode")
    with pytest.raises(InputError, match="PreemptMode"):
        parse_mode("SOMETIMES", field="PreemptMode")
    conf, _ = _site(tmp_path, mode="OFF")
    with pytest.raises(InputError, match="incompatible"):
        site_preemption(read_cluster(conf))
    conf, _ = _site(tmp_path, mode="SUSPEND")
    with pytest.raises(InputError, match="requires GANG"):     # as Slurm's read_config.c
        site_preemption(read_cluster(conf))
    for mode, part in (("SUSPEND,GANG", ""), ("REQUEUE", "PreemptMode=SUSPEND")):
        conf, _ = _site(tmp_path, mode=mode, part=part)
        with pytest.raises(UnsupportedError, match="cores"):
            site_preemption(read_cluster(conf))
    conf, _ = _site(tmp_path, extra="PreemptType=preempt/qos")
    with pytest.raises(InputError):
        site_preemption(read_cluster(conf))       # twice given, or qos without a config


def test_qos_from_config(tmp_path):
    from fastsched.policy.config import load_config
    cfg = tmp_path / "sched.toml"
    cfg.write_text('[qos.normal]\nPriority = 10\nPreempt = ["scavenger"]\n'
                   '[qos.scavenger]\nPreemptMode = "CANCEL"\nGraceTime = 30\n'
                   'PreemptExemptTime = "10"\n')
    config = load_config(cfg)
    pre = Preemption.qos(config, np.array([0, 1]), REQUEUE)
    k = config.qos_names
    assert pre.may[k.index("normal"), k.index("scavenger")]
    assert not pre.may[k.index("scavenger"), k.index("normal")]
    assert pre.mode[k.index("scavenger")] == CANCEL and pre.grace[k.index("scavenger")] == 30
    assert pre.exempt[k.index("scavenger")] == 600
    bad = tmp_path / "bad.toml"
    bad.write_text('[qos.normal]\nPreempt = ["nope"]\n')
    with pytest.raises(InputError, match="nope"):
        Preemption.qos(load_config(bad), np.array([0]))
    cyc = tmp_path / "cycle.toml"
    cyc.write_text('[qos.normal]\nPreempt = ["low"]\n[qos.low]\nPreempt = ["normal"]\n')
    with pytest.raises(InputError, match="cycle"):
        Preemption.qos(load_config(cyc), np.array([0]))
    bad.write_text('[qos.normal]\nPreemptMode = "SOMETIMES"\n')
    with pytest.raises(InputError, match="PreemptMode"):
        load_config(bad)


def test_cli_simulate_and_check(tmp_path, capsys):
    conf, path = _site(tmp_path, extra="PreemptExemptTime=10")
    out = tmp_path / "out.csv"
    assert main(["simulate", str(path), "--cluster", str(conf), "--jobs-out", str(out),
                 "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "preemption: 2 attempt(s) of 2 job(s) preempted" in text
    assert main(["check", str(out), "--trace", str(path), "--cluster", str(conf)]) == 0
    assert "preempt_exempt" in capsys.readouterr().out
    # a record preempted before its exempt time is caught
    strict = tmp_path / "strict.conf"
    strict.write_text(conf.read_text().replace("PreemptExemptTime=10",
                                               "PreemptExemptTime=150"))
    assert main(["check", str(out), "--trace", str(path), "--cluster", str(strict)]) == 1
    assert "preempted after 7200 s" in capsys.readouterr().out
    # job 3, which preempted job 2 at 7200, submitted later: job 2 had no preemptor
    late = tmp_path / "late.csv"
    late.write_text(path.read_text().replace("3,7200,", "3,8000,"))
    assert main(["check", str(out), "--trace", str(late), "--cluster", str(conf)]) == 1
    text = capsys.readouterr().out
    assert "preemptor" in text and "job 2: attempt 0 preempted at 7200" in text


def test_preemption_runs_with_power_and_ranges_not_regrowth(tmp_path):
    """Regrowing elastic jobs are refused with preemption; power saving runs with a
    victim's GraceTime and PreemptExemptTime, and with node ranges (elastic jobs that
    only shrink run with preemption: tests/test_preempt_elastic.py; node ranges with
    power saving: tests/test_preempt_power.py)."""
    from fastsched.io.workload import read_workload
    from fastsched.model.power import PowerSaving
    conf, path = _site(tmp_path, part="GraceTime=600", extra="PreemptExemptTime=1")
    cluster = read_cluster(conf)
    w = read_workload(path, cluster)
    pre = site_preemption(cluster)
    lc = w.lifecycle(True, 121)
    assert simulate(cluster, w.jobs, "easy", preemption=pre, lifecycle=lc,
                    power=PowerSaving(suspend_time=60)).verify().ok
    exempt = replace(pre, grace=np.zeros_like(pre.grace))
    assert simulate(cluster, w.jobs, "easy", preemption=exempt, lifecycle=lc,
                    power=PowerSaving(suspend_time=60)).verify().ok
    plain = replace(exempt, exempt=np.zeros_like(pre.exempt))
    r = simulate(cluster, w.jobs, "easy", preemption=plain, lifecycle=lc,
                 power=PowerSaving(suspend_time=60))
    assert r.verify().ok and r.summary["preemption"]["preempted_attempts"] == 2
    elastic = replace(lc, no_kill=np.ones(len(w.jobs), dtype=bool),
                      nodes_min=np.ones(len(w.jobs), dtype=np.int64))
    with pytest.raises(UnsupportedError, match="regrow"):
        simulate(cluster, w.jobs, "easy", preemption=pre, lifecycle=replace(elastic,
                                                                            regrow=True))
    ranged = replace(lc, nodes_min=np.where(w.jobs.num_nodes > 1, 1, 0))
    assert simulate(cluster, w.jobs, "easy", preemption=plain, lifecycle=ranged,
                    power=PowerSaving(suspend_time=60)).verify().ok
    assert simulate(cluster, w.jobs, "easy", preemption=pre, lifecycle=elastic).verify().ok
    assert simulate(cluster, w.jobs, "easy", lifecycle=lc).verify().ok


# ---- a victim in its grace time is held until its grace end -------------------------

GRACE_CONF = """\
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
NodeName=gpu[01-02] CPUs=64 RealMemory=512000 Gres=gpu:8
PartitionName=lowa Nodes=ALL PriorityTier=1 Default=YES MaxTime=UNLIMITED
PartitionName=lowb Nodes=ALL PriorityTier=1 MaxTime=UNLIMITED GraceTime=600
PartitionName=high Nodes=ALL PriorityTier=10 MaxTime=UNLIMITED
"""
GRACE_JOBS = """\
job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,cpus_per_node,mem_per_node,\
partition,user,account
1,0,86400,36000,1,8,64,0,lowa,sam,lab
2,0,86400,36000,1,8,64,0,lowb,sam,lab
3,100,3600,3600,2,8,64,0,high,alice,prod
4,150,2000,2000,1,8,64,0,high,alice,prod
"""


def _grace_site(tmp_path):
    (tmp_path / "slurm.conf").write_text(GRACE_CONF)
    (tmp_path / "jobs.csv").write_text(GRACE_JOBS)
    return tmp_path / "slurm.conf", tmp_path / "jobs.csv"


@pytest.mark.parametrize("policy", ["easy", "conservative"])
def test_grace_end_holds_the_victims_nodes_for_the_preemptor(tmp_path, policy):
    """Job 3 preempts jobs 1 (no grace) and 2 (600 s); job 4, behind it, fits job 1's
    freed node until 2150, after job 2's grace end (700): Slurm plans job 2 to end at
    700 (its end_time), so job 3 is reserved there and job 4 waits."""
    from fastsched.io.workload import read_workload
    conf, path = _grace_site(tmp_path)
    cluster = read_cluster(conf)
    w = read_workload(path, cluster)
    r = simulate(cluster, w.jobs, policy, preemption=site_preemption(cluster),
                 lifecycle=w.lifecycle(True, 121))
    f = r.jobs
    first = f[f.attempt == 0].set_index("job_id")
    assert first.end_time[1] == 100 and first.end_time[2] == 700
    assert first.state[2] == "PREEMPTED" and first.time_limit[2] == 86400   # its own limit
    assert first.start_time[3] == 700
    assert first.start_time[4] == 700 + 3600        # after job 3, not on job 1's node at 150
    assert r.verify().ok


def test_grace_end_hold_cli(tmp_path, capsys):
    conf, path = _grace_site(tmp_path)
    out = tmp_path / "out.csv"
    assert main(["simulate", str(path), "--cluster", str(conf), "--jobs-out", str(out),
                 "--no-progress"]) == 0
    import pandas as pd
    f = pd.read_csv(out)
    assert f[(f.job_id == 3)].start_time.tolist() == [700]
    assert main(["check", str(out), "--trace", str(path), "--cluster", str(conf)]) == 0
