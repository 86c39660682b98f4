"""Jobs running in an advance reservation (``--reservation``) with node events (drain,
resume, down, up) and failures: the engine (on the reservations' twin nodes, each event
on a node and its twins, fastsched.sim.resvlayout) against the twin
(tests/naive_nodes.py with tests/naive_resv.py's members) on drawn event streams, the
attempt checks with the reservation checks on those runs (catching a member moved out of
its window), Slurm's rules on a small case, and the CLI."""
import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import naive_nodes
from naive_resv import TAIL
from fastsched import NodeEvents, Scheduler, simulate
from fastsched.cli import main
from fastsched.model.errors import UnsupportedError
from fastsched.model.lifecycle import Lifecycle
from fastsched.sim.resvlayout import layout_events
from fastsched.tools.testing import lifecycles, node_event_rows
from fastsched.verify.lifecycle import Attempts, verify_attempts
from constrained_twin import attempt_rows
from scheddrive import drive, simulated
from test_constraints import SETTINGS, constrained_cases, engine_inputs
from test_resvjobs import _cluster, _jobs, _members, _reservations, engine_run, twin_members
from test_scheduler_resv import _instants

#: few examples: each runs the engine and the twin with events (the suite's budget)
FEW = settings(SETTINGS, max_examples=18)
KINDS = ("down", "down", "up", "drain", "drain", "resume")


def _case(data, own_partition=False):
    """A constrained case (every job asking for a CPU, as Slurm's do), its member jobs,
    node events and lifecycle; ``own_partition``: each job in its table partition only."""
    cluster, available, jobs, parts, deps, groups, caps, rank = data.draw(constrained_cases())
    if own_partition:
        parts = {int(j): [int(p)] for j, p in zip(jobs.job_id, jobs.partition)}
    jobs = jobs.take(np.arange(len(jobs)))
    jobs.cpus_per_node = np.maximum(jobs.cpus_per_node, 1).astype(jobs.cpus_per_node.dtype)
    resv = _reservations(data.draw, cluster, available, jobs, parts)
    rows = data.draw(node_event_rows(cluster.num_nodes, max_events=6, max_time=60,
                                     kinds=KINDS))
    for r in resv.items:        # a failure as a window opens: where members run
        if data.draw(st.booleans()):
            t = int(r.start) + data.draw(st.integers(1, 6))     # (members start there)
            rows += [(t, "down", list(r.nodes[:1])), (t + data.draw(st.integers(0, 30)), "up",
                                                      list(r.nodes[:1]))]
    lc = data.draw(lifecycles(len(jobs)))
    return (cluster, available, jobs, parts, deps, groups, caps, rank), resv, rows, lc


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("easy", 2),
                                          ("conservative", 1)])
@FEW
@given(data=st.data())
def test_member_jobs_with_node_events_match_twin(data, policy, depth):
    case, resv, rows, lc = _case(data)
    cluster, available, jobs, parts, deps, groups, caps, rank = case
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    ids = [int(j) for j in jobs.job_id]
    events = NodeEvents.from_rows(rows, cluster.num_nodes)
    run = engine_run(cluster, jobs, policy, depth, available, resv, pc, dependencies=dp,
                     limits=lg, lifecycle=lc,
                     rank=None if rank is None else np.array([rank[j] for j in ids]),
                     on_layout=lambda layout: {"events": layout_events(events, layout)})
    killed = []
    out, _ = naive_nodes.simulate(
        cluster, naive_nodes.jobs_from_table(jobs), policy, depth, available, partitions=parts,
        deps=deps, groups=groups, caps=caps, rank=rank,
        blocked=list(zip(*(a.tolist() for a in resv.windows(0)))),
        members=twin_members(resv, jobs), events=rows,
        requeue={j: bool(lc.requeue[i]) for i, j in enumerate(ids)},
        checkpoint={j: int(lc.checkpoint_interval[i]) for i, j in enumerate(ids)},
        delay=lc.delay, attempts=killed)
    out = {j: r for j, r in out.items() if r[0] < TAIL}    # the simulator drops these
    naive_nodes.assert_same_records(run, ids, out)
    assert attempt_rows(run, ids) == sorted(k[:5] for k in killed)
    member = {ids[i] for i in np.flatnonzero(resv.member >= 0)}
    event(f"killed member attempts: {min(sum(k[0] in member for k in killed), 2)}")


@FEW
@given(data=st.data())
def test_runs_with_members_and_events_pass_the_attempt_and_reservation_checks(data):
    # (the attempt checks hold each job to its table partition; simulate runs on every
    # node: the case's down ones up, more room for each job)
    case, resv, rows, lc = _case(data, own_partition=True)
    cluster, available, jobs, parts, deps, groups, caps, _ = case
    _, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    r = simulate(cluster, jobs, data.draw(st.sampled_from(["fcfs", "easy", "conservative"])),
                 dependencies=dp, limits=lg,
                 events=NodeEvents.from_rows(rows, cluster.num_nodes), lifecycle=lc,
                 reservations="nodes", advance_reservations=resv)
    report = _checked(r, resv)
    assert report.ok, report
    assert {"on_down_node", "resumed_work", "reserved_node"} <= set(report.checks)
    row = r.attempts["row"]
    ran_in_one = (resv.member[row] >= 0).any() or resv.attracted[row].any()
    assert ("outside_reservation" in report.checks) == bool(ran_in_one)
    event(f"members: {bool((resv.member >= 0).any())}, killed attempts: "
          f"{min(int(r.attempts['killed'].sum()), 2)}")


def _checked(r, resv, **changed):
    """The attempt checks of run ``r`` with its advance reservations; ``changed``:
    attempt fields replaced (a broken record)."""
    t = dict(r.attempts, **changed)
    return verify_attempts(r.cluster, r.workload, Attempts(
        t["row"], t["attempt"], t["start"], t["end"], t["killed"], t["alloc_offsets"],
        t["alloc_nodes"], partition=t["partition"]), r.events, r.lifecycle,
        advance_reservations=resv)


_DOWN = [(55, "down", [0]), (60, "up", [0])]


@pytest.mark.parametrize("policy", ["easy", "conservative"])
def test_a_member_killed_in_its_window_runs_again_inside_it(policy):
    """Job 3 (a member of maint, [50, 80) on g1) starts at 50; g1 fails at 55 (down for
    everyone) and is back at 60: the member, requeued 1 s after the kill, starts again
    inside the window at 60 and ends at 80, its limit still fitting."""
    r = simulate(_cluster(), _jobs(), policy, advance_reservations=_members(),
                 events=NodeEvents.from_rows(_DOWN, 4), lifecycle=Lifecycle.of(4, delay=1))
    rec = r.jobs
    three = rec[rec.job_id == 3]
    assert three[["attempt", "start_time", "end_time", "state"]].values.tolist() == [
        [0, 50, 55, "NODE_FAIL"], [1, 60, 80, "COMPLETED"]]
    assert rec[rec.job_id == 1].start_time.tolist() == [80]
    assert _checked(r, _members()).ok
    own = r.verify()                  # the result checks itself with its reservations
    assert own.ok and {"reserved_node", "outside_reservation"} <= set(own.checks)
    # moved out of its window (its second attempt 5 s late): outside_reservation
    late = r.attempts["start"].copy()
    k = int(np.flatnonzero((r.attempts["row"] == 2) & (r.attempts["attempt"] == 1))[0])
    late[k] += 5
    bad = _checked(r, _members(), start=late, end=np.where(
        np.arange(len(late)) == k, r.attempts["end"] + 5, r.attempts["end"]))
    assert "outside_reservation" in {v.kind for v in bad.violations}


def test_a_member_whose_window_is_lost_to_a_failure_stays_pending():
    """g1 fails at 55 and is back only at 78: no room left for the member's 20 s in
    [50, 80): it stays pending after its killed attempt (Slurm holds a job whose
    reservation has ended)."""
    r = simulate(_cluster(), _jobs(), "easy", advance_reservations=_members(),
                 events=NodeEvents.from_rows([(55, "down", [0]), (78, "up", [0])], 4),
                 lifecycle=Lifecycle.of(4, delay=1))
    assert r.schedule.start_time.tolist() == [80, 0, -1, -1]
    t = r.attempts          # its killed attempt, in its window on g1
    k = np.flatnonzero(t["row"] == 2)
    assert (t["start"][k].tolist(), t["end"][k].tolist(), t["killed"][k].tolist()) == (
        [50], [55], [True])
    assert t["alloc_nodes"][t["alloc_offsets"][k[0]]] == 0
    assert _checked(r, _members()).ok


def test_what_it_refuses_with_member_jobs_and_events():
    # --no-kill jobs shrink with members (tests/test_resv_elastic.py); they do not regrow
    lc = Lifecycle.of(4, no_kill=[True] * 4)
    r = simulate(_cluster(), _jobs(), "easy", advance_reservations=_members(),
                 events=NodeEvents.from_rows(_DOWN, 4), lifecycle=lc)
    assert r.verify().ok
    with pytest.raises(UnsupportedError, match="not modelled with regrow"):
        simulate(_cluster(), _jobs(), "easy", advance_reservations=_members(),
                 events=NodeEvents.from_rows(_DOWN, 4),
                 lifecycle=Lifecycle.of(4, no_kill=[True] * 4, regrow=True))


def test_cli_members_with_events_and_the_check(tmp_path, capsys):
    """From the command line: g1 fails at 55 under job 4 (a member of maint, [50, 300));
    job 3, also a member, takes g1 when it is back at 60; job 4, requeued Slurm's 121 s
    after the kill, runs again inside the window; the check passes and catches the second
    attempt moved past the window's end."""
    import pandas as pd
    from fastsched.io.slurmconf import read_cluster
    from fastsched.io.workload import write_workload
    from test_resvjobs import _conf, _workload
    conf = _conf(tmp_path)
    jobs = tmp_path / "jobs.csv"
    write_workload(_workload(["", "", "maint", "maint"]), read_cluster(conf), jobs)
    resv = tmp_path / "resv.txt"
    resv.write_text("ReservationName=maint StartTime=50 EndTime=300 Nodes=g1 Users=alice\n")
    ev = tmp_path / "events.csv"
    ev.write_text("time,event,nodes\n55,down,g1\n60,up,g1\n")
    out = tmp_path / "out.csv"
    common = ["--cluster", str(conf), "--resv-file", str(resv), "--events", str(ev)]
    assert main(["simulate", str(jobs), *common, "--no-progress", "--jobs-out", str(out)]) == 0
    capsys.readouterr()
    rows = pd.read_csv(out)
    got = rows[rows.job_id >= 3][["job_id", "start_time", "end_time", "state"]]
    assert got.values.tolist() == [[4, 50, 55, "NODE_FAIL"], [4, 176, 216, "COMPLETED"],
                                   [3, 60, 80, "COMPLETED"]]
    assert main(["check", str(out), "--trace", str(jobs), *common]) == 0
    text = capsys.readouterr().out
    assert "outside_reservation" in text and "on_down_node" in text
    moved = tmp_path / "moved.csv"
    rows.loc[(rows.job_id == 4) & (rows.attempt == 1), ["start_time", "end_time"]] = [290, 330]
    rows.to_csv(moved, index=False)
    assert main(["check", str(moved), "--trace", str(jobs), *common]) != 0
    assert "job 4 of reservation 'maint' ran over [290, 330)" in capsys.readouterr().out


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@settings(SETTINGS, max_examples=10)
@given(data=st.data())
def test_the_scheduler_requeues_member_jobs_as_the_simulator(data, policy):
    """The embeddable Scheduler with member jobs, node events and a lifecycle, driven at
    the simulator's instants and the windows' ends: the same attempts as ``simulate``
    (every node up at first, as the Scheduler takes its cluster). fcfs is left out as in
    tests/test_scheduler_drain.py: a job too few nodes are up for stops the simulator's
    walk, not the Scheduler's."""
    case, resv, rows, lc = _case(data)
    cluster, _, jobs, parts, deps, groups, caps, _ = case
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    r = simulate(cluster, jobs, policy, partitions=pc, dependencies=dp, limits=lg,
                 events=NodeEvents.from_rows(rows, cluster.num_nodes), lifecycle=lc,
                 reservations="nodes", advance_reservations=resv)
    s = Scheduler(cluster, policy, jobs=jobs, partitions=pc, dependencies=dp, limits=lg,
                  lifecycle=lc, advance_reservations=resv)
    got = drive(s, jobs, lc, rows, _instants(s, resv, jobs)).attempts
    assert got == simulated(r)
    member = {int(jobs.job_id[i]) for i in np.flatnonzero(resv.member >= 0)}
    event(f"killed member attempts: {min(sum(a[0] in member and a[4] for a in got), 2)}")


@pytest.mark.parametrize("policy", ["easy", "conservative"])
def test_the_scheduler_requeues_a_member_inside_its_window(policy):
    """test_a_member_killed_in_its_window_runs_again_inside_it through the Scheduler:
    job 3 killed at 55 on g1, requeued 1 s later, runs again at 60 inside [50, 80)."""
    lc = Lifecycle.of(4, delay=1)
    s = Scheduler(_cluster(), policy, jobs=_jobs(), advance_reservations=_members(),
                  lifecycle=lc)
    got = drive(s, _jobs(), lc, _DOWN, _instants(s, _members(), _jobs())).attempts
    assert [a for a in got if a[0] == 3] == [(3, 50, 55, [0], True), (3, 60, 80, [0], False)]
    assert s.attempts[["job_id", "state", "begin_time"]].values.tolist() == [
        [3, "NODE_FAIL", 56]]
