"""Jobs of a ``Flags=FLEX`` reservation: they may run outside it (before, after, on
other nodes) as well as in it. The engine (the twin-node layout, fastsched.sim.resvlayout)
against the twin (tests/naive_resv.py's FLEX view) on random reservations, the
checker, the API, the Scheduler and the CLI."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from naive_resv import Members
from fastsched import JobTable, Scheduler, simulate, verify
from fastsched.cli import main
from fastsched.model.errors import UnsupportedError
from fastsched.model.reservations import Reservation, Reservations
from fastsched.model.resvjobs import JobReservations, may_use
from test_constraints import SETTINGS
from test_resvjobs import (_cluster, disjoint_reservations, members_match_twin,
                           simulate_schedule)
from test_scheduler_resv import _driven, _started, scheduler_matches_simulator


def _reservations(draw, cluster, jobs):
    """1-3 reservations on disjoint nodes, one window each, some FLEX (at least one),
    some MAGNETIC, some for some of the users u0, u1, u2, and the jobs running in the
    FLEX ones."""
    N = cluster.num_nodes
    items = disjoint_reservations(draw, N, [("FLEX",), ("FLEX",), (), ("MAGNETIC",)],
                                  [(), ("u0",), ("-u0",)])
    assume(any("FLEX" in r.flags for r in items))
    users = [f"u{u}" for u in draw(st.lists(st.integers(0, 2), min_size=len(jobs),
                                            max_size=len(jobs)))]
    names = [""] * len(jobs)
    for i in range(len(jobs)):
        k = draw(st.integers(-1, len(items) - 1))
        if k >= 0 and may_use(items[k], users[i], None) and "FLEX" in items[k].flags:
            names[i] = items[k].name
    return JobReservations.of(Reservations(tuple(items), N), names, users)


def _twin(resv, jobs):
    ids = jobs.job_id.tolist()
    of = {i: (set(resv.items[k].nodes), [(resv.items[k].start, resv.items[k].end)])
          for i, k in zip(ids, resv.member.tolist()) if k >= 0}
    flex = [i for i, k in zip(ids, resv.member.tolist())
            if k >= 0 and "FLEX" in resv.items[k].flags]
    drawn = {i: [(set(resv.items[k].nodes), [(resv.items[k].start, resv.items[k].end)])
                 for k in np.flatnonzero(row).tolist()]
             for i, row in zip(ids, resv.attracted) if row.any()}
    return Members(of, drawn, flex=flex)


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("easy", 2),
                                          ("conservative", 1)])
@SETTINGS
@given(data=st.data())
def test_flex_jobs_match_twin(data, policy, depth):
    cluster, jobs, resv, run = members_match_twin(
        data, policy, depth,
        lambda draw, cluster, available, jobs, parts: _reservations(draw, cluster, jobs),
        _twin)
    report = verify(cluster, jobs, simulate_schedule(jobs, run), advance_reservations=resv)
    kinds = {v.kind for v in report.violations}
    assert not kinds & {"reserved_node", "outside_reservation", "overcommit"}, report


# ---- a worked case: g1-g2 reserved for alice over [50, 80), FLEX ----

def _jobs():
    # 1 (bob) fills g3-g4 until 100; 3 (alice, in flex) runs before the window on g1;
    # 4 (alice, in flex) is submitted when it opens and fills it on g1-g2; 5 (bob) keeps
    # off g1-g2 while it is open
    return JobTable.from_arrays(job_id=[1, 3, 4, 5], submit_time=[0, 0, 50, 0],
                                time_limit=[100, 20, 30, 40], runtime=[100, 20, 30, 40],
                                num_nodes=[2, 1, 2, 2], gpus_per_node=4, cpus_per_node=1,
                                user=0)


_FLEX = Reservations((Reservation("flex", 50, 80, (0, 1), users=("alice",),
                                  flags=("FLEX",)),), 4)


def _members(resv=_FLEX):
    return JobReservations.of(resv, ["", "flex", "flex", ""],
                              ["bob", "alice", "alice", "bob"], ["a"] * 4)


@pytest.mark.parametrize("policy", ["easy", "conservative"])
def test_flex_jobs_run_before_and_in_the_window(policy):
    r = simulate(_cluster(), _jobs(), policy, advance_reservations=_members())
    s = r.schedule
    # 3 runs before the window on a reserved node, 4 in it, 5 (bob) after it
    assert s.start_time.tolist() == [0, 0, 50, 80]
    assert [s.nodes_of(row).tolist() for row in range(4)] == [[2, 3], [0], [0, 1], [0, 1]]
    assert r.reservation.tolist() == ["", "flex", "flex", ""]    # sacct's Reservation
    report = verify(r.cluster, r.workload, s, advance_reservations=_members())
    assert report.ok and "outside_reservation" in report.checks, report
    # in a plain reservation, job 3 waits for the window
    plain = _FLEX.items[0].__class__(**{**_FLEX.items[0].__dict__, "flags": ()})
    r2 = simulate(_cluster(), _jobs(), policy,
                  advance_reservations=_members(Reservations((plain,), 4)))
    assert r2.schedule.start_time.tolist()[1] == 50


def test_flex_job_runs_outside_the_reservation_nodes():
    # the window is too short for job 3 (100 s): a FLEX member starts on g3 at once
    jobs = JobTable.from_arrays(job_id=[3], submit_time=[0], time_limit=[100], runtime=[100],
                                num_nodes=[2], gpus_per_node=4, cpus_per_node=1, user=0)
    resv = JobReservations.of(_FLEX, ["flex"], ["alice"])
    s = simulate(_cluster(), jobs, "easy", advance_reservations=resv).schedule
    assert s.start_time.tolist() == [0] and s.nodes_of(0).tolist() == [2, 3]
    assert verify(_cluster(), jobs, s, advance_reservations=resv).ok


def test_checker_flex_members_outside_but_not_in_other_windows():
    """A FLEX member may run anywhere but on another reservation's nodes in its window;
    a job that is not a member still never runs on the FLEX reservation's nodes in it."""
    two = Reservations(_FLEX.items + (Reservation("other", 0, 200, (3,)),), 4)
    resv = JobReservations.of(two, ["flex", ""], ["alice", "bob"])
    jobs = JobTable.from_arrays(job_id=[1, 2], submit_time=[0, 0], time_limit=[100, 10],
                                runtime=[100, 10], num_nodes=[3, 1], gpus_per_node=4,
                                cpus_per_node=1, user=0)
    ok = simulate(_cluster(), jobs, "easy", advance_reservations=resv)
    assert ok.schedule.nodes_of(0).tolist() == [0, 1, 2]
    assert verify(ok.cluster, ok.workload, ok.schedule, advance_reservations=resv).ok
    s = ok.schedule
    bad = s.__class__(**{**s.__dict__, "alloc_nodes": np.array([1, 2, 3, 0])})
    kinds = sorted((v.kind, v.job_id) for v in verify(
        ok.cluster, ok.workload, bad, advance_reservations=resv).violations)
    # job 1 (flex) on g4 of 'other'; job 2 (bob) on g1 over [0, 10): before the window
    assert kinds == [("reserved_node", 1)]
    late = s.__class__(**{**s.__dict__, "start_time": np.array([0, 55]),
                          "end_time": np.array([100, 65])})
    kinds = sorted((v.kind, v.job_id) for v in verify(
        ok.cluster, ok.workload, late, advance_reservations=resv).violations)
    assert ("reserved_node", 2) in kinds and ("outside_reservation", 1) not in kinds


def test_flex_with_maint_overlap_or_magnetic_is_refused_by_name():
    for flag in ("MAINT", "OVERLAP", "MAGNETIC"):
        with pytest.raises(UnsupportedError, match=f"FLEX with {flag}"):
            Reservations((Reservation("a", 0, 10, (0,), flags=("FLEX", flag)),), 4)


def test_scheduler_plans_flex_jobs_as_the_simulator():
    members = _members()
    sim = simulate(_cluster(), _jobs(), "conservative", advance_reservations=members)
    s = Scheduler(_cluster(), "conservative", jobs=_jobs(), advance_reservations=members)
    assert _driven(s, _jobs(), members) == _started(sim)
    s = Scheduler(_cluster(), "conservative", jobs=_jobs(), advance_reservations=members)
    s.submit(_jobs().take(np.array([0, 1, 3])))
    d = s.schedule(now=0)       # 3 starts on g1 before the window; 5 planned after it
    assert d.to_pandas().set_index("job_id").nodes.to_dict() == {1: "g[3-4]", 3: "g1",
                                                                 5: "g[1-2]"}


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 2), ("conservative", 1)])
@SETTINGS
@given(data=st.data())
def test_the_scheduler_runs_flex_jobs_as_the_simulator(data, policy, depth):
    scheduler_matches_simulator(
        data, policy, depth,
        lambda draw, cluster, available, jobs, parts: _reservations(draw, cluster, jobs))


_RESV_LINE = ("ReservationName=flex StartTime=50 EndTime=80 Nodes=g[1-2] Users=alice "
              "Flags=FLEX\n")


def _conf(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("NodeName=g[1-4] CPUs=8 Gres=gpu:4\n"
                    "PartitionName=gpu Nodes=g[1-4] Default=YES\n")
    (tmp_path / "gres.conf").write_text("NodeName=g[1-4] Name=gpu Count=4\n")
    resv = tmp_path / "resv.txt"
    resv.write_text(_RESV_LINE)
    return conf, resv


def test_cli_sbatch_test_only_flex_starts_before_the_window(tmp_path, capsys):
    conf, resv = _conf(tmp_path)
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH -N 2 --gres=gpu:4 -t 2\nsrun true\n")
    assert main(["sbatch", "--test-only", "--cluster", str(conf), "--resv-file", str(resv),
                 "--user", "alice", str(script), "--reservation=flex"]) == 0
    out = capsys.readouterr().out
    assert "expected start: 0 s after submission" in out and "reservation flex" in out


def test_cli_simulate_and_check_flex_jobs(tmp_path, capsys):
    from fastsched.io.slurmconf import read_cluster
    from fastsched.io.workload import Workload, write_workload
    conf, resv = _conf(tmp_path)
    cluster = read_cluster(conf)
    table = _jobs()
    table.user = np.array([0, 1, 1, 0], dtype=table.user.dtype)     # bob, alice
    jobs = tmp_path / "jobs.csv"
    write_workload(Workload(table, np.zeros(4, np.int32), ["bob", "alice"], ["a"],
                            np.zeros(1, np.int32), ["o"],
                            reservation=np.array(["", "flex", "flex", ""], dtype=object)),
                   cluster, jobs)
    out = tmp_path / "out.csv"
    assert main(["simulate", str(jobs), "--cluster", str(conf), "--resv-file", str(resv),
                 "--no-progress", "--jobs-out", str(out)]) == 0
    rows = pd.read_csv(out).set_index("job_id")
    assert rows.start_time.to_dict() == {1: 0, 3: 0, 4: 50, 5: 80}
    capsys.readouterr()
    assert main(["check", str(out), "--trace", str(jobs), "--cluster", str(conf),
                 "--resv-file", str(resv)]) == 0
    assert "outside_reservation" in capsys.readouterr().out
    # job 4 (flex) moved after the window is fine; job 5 (bob) moved into it is not
    moved = tmp_path / "moved.csv"
    rows.loc[4, ["start_time", "end_time"]] = [100, 130]
    rows.loc[5, ["start_time", "end_time"]] = [50, 90]
    rows.reset_index().to_csv(moved, index=False)
    assert main(["check", str(moved), "--trace", str(jobs), "--cluster", str(conf),
                 "--resv-file", str(resv)]) != 0
    text = capsys.readouterr().out
    assert "1 violations (reserved_node 1)" in text and "job 5 ran on node 0" in text
