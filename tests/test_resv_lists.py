"""Jobs naming several reservations (``--reservation=a,b``): the engine against the twin
(tests/naive_resv.py's ``listed``) on random reservations and lists, Slurm's rules
(every name must exist and let the job in; it runs in whichever lets it start first,
the one defined first on a tie), the checker, the #SBATCH parser, the workload column
and the CLI."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

import naive_nodes
from naive_resv import TAIL, Members
from fastsched import Cluster, InputError, Scheduler, simulate, verify
from fastsched.engine.inputs import check_node_jobs, ever_available
from fastsched.cli import main
from fastsched.model.reservations import Reservation, Reservations
from fastsched.model.resvjobs import JobReservations
from test_constraints import SETTINGS
from test_resvjobs import (_cluster, _conf, _jobs, _workload, disjoint_reservations,
                           engine_run, simulate_schedule, small_jobs)

FEW = settings(SETTINGS, max_examples=30)


@st.composite
def list_cases(draw):
    """3-6 identical nodes, 2-3 reservations on disjoint nodes (one window each), and
    2-10 jobs of 1-2 nodes, most naming several of the reservations they fit in, in any
    order (the others none)."""
    N = draw(st.integers(3, 6))
    cluster = Cluster.homogeneous(N, gpus=4, cpus=4, prefix="n")
    items = disjoint_reservations(draw, N, [(), (), ("FLEX",)], [()])
    assume(len(items) >= 2)
    n = draw(st.integers(2, 10))
    jobs = small_jobs(draw, n)
    names = []
    for i in range(n):
        fits = [r.name for r in items if len(r.nodes) >= jobs.num_nodes[i]]
        names.append(",".join(draw(st.lists(st.sampled_from(fits), unique=True,
                                            min_size=min(len(fits), 2))))
                     if fits and draw(st.integers(0, 3)) else "")
    event(f"jobs naming several: {min(sum(',' in x for x in names), 3)}")
    return cluster, jobs, JobReservations.of(Reservations(tuple(items), N), names)


def twin_listed(resv, jobs):
    def of(k):
        return set(resv.items[k].nodes), [(resv.items[k].start, resv.items[k].end)]

    def flex(k):
        return "FLEX" in resv.items[k].flags
    ids = jobs.job_id.tolist()
    return Members({ids[i]: of(k) for i, k in enumerate(resv.member.tolist()) if k >= 0},
                   flex={ids[i] for i, k in enumerate(resv.member.tolist())
                         if k >= 0 and flex(k)},
                   listed={ids[i]: [of(k) + (("FLEX",) if flex(k) else ())
                                    for k in np.flatnonzero(row).tolist()]
                           for i, row in enumerate(resv.listed) if row.sum() > 1})


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("easy", 2),
                                          ("conservative", 1)])
@FEW
@given(data=st.data())
def test_listed_jobs_match_twin(data, policy, depth):
    cluster, jobs, resv = data.draw(list_cases())
    ids = jobs.job_id.tolist()
    pc = check_node_jobs(cluster, jobs, ever_available(cluster, None, None), None)
    run = engine_run(cluster, jobs, policy, depth, None, resv, pc)
    out, _ = naive_nodes.simulate(
        cluster, naive_nodes.jobs_from_table(jobs), policy, depth,
        blocked=list(zip(*(a.tolist() for a in resv.windows(0)))),
        members=twin_listed(resv, jobs))
    out = {j: r for j, r in out.items() if r[0] < TAIL}    # the simulator drops these
    naive_nodes.assert_same_records(run, ids, out)
    report = verify(cluster, jobs, simulate_schedule(jobs, run), advance_reservations=resv)
    # (not_started: under fcfs a member no window takes blocks the queue behind it)
    assert {v.kind for v in report.violations} <= {"not_started"}, report
    several = np.flatnonzero((resv.listed.sum(axis=1) > 1) & (run.start >= 0))
    event(f"listed jobs that ran in their second or third: "
          f"{min(int((_ran_beyond_first(resv, run, several)).sum()), 2)}")
    flex = np.array(["FLEX" in r.flags for r in resv.items])
    event(f"listed jobs with a FLEX one, started: "
          f"{min(int(resv.listed[several][:, flex].any(axis=1).sum()), 2)}")


def _ran_beyond_first(resv, run, rows):
    first = resv.member[rows]
    node = run.alloc_nodes[run.alloc_offsets[rows]]
    return np.array([node[q] not in resv.items[first[q]].nodes for q in range(len(rows))],
                    dtype=bool)


_TWO = Reservations((Reservation("a", 50, 80, (0,), users=("alice",)),
                     Reservation("b", 20, 60, (1,), users=("alice",))), 4)


def _two(names, users=("bob", "bob", "alice", "alice")):
    return JobReservations.of(_TWO, names, list(users), ["x"] * 4)


@pytest.mark.parametrize("policy", ["easy", "conservative"])
def test_a_job_runs_in_the_reservation_that_lets_it_start_first(policy):
    """b opens at 20 on g2, a at 50 on g1. Job 3 (alice, 20 s) naming a and b runs in b at
    20, whatever the order of its list. Job 4 (alice, 40 s, queued first) naming both too
    takes b's [20, 60) whole; job 3 then runs in a at 50."""
    for names in (["", "", "a,b", ""], ["", "", "b,a", ""]):
        r = simulate(_cluster(), _jobs(), policy, advance_reservations=_two(names))
        assert r.schedule.start_time[2] == 20 and r.schedule.nodes_of(2).tolist() == [1]
        assert r.reservation[2] == "b"
        assert verify(r.cluster, r.workload, r.schedule,
                      advance_reservations=_two(names)).ok
    both = _two(["", "", "a,b", "b,a"])
    r = simulate(_cluster(), _jobs(), policy, advance_reservations=both)
    assert r.schedule.start_time.tolist() == [80, 0, 50, 20]
    assert [r.schedule.nodes_of(i).tolist() for i in (2, 3)] == [[0], [1]]
    assert r.reservation.tolist() == ["", "", "a", "b"]
    assert verify(r.cluster, r.workload, r.schedule, advance_reservations=both).ok


def test_on_a_tie_the_reservation_defined_first():
    """Both windows open at 50 (Slurm sorts a job's list by reservation id: the file's
    order): job 3 runs in a, on g1."""
    same = Reservations((Reservation("a", 50, 80, (0,)), Reservation("b", 50, 80, (1,))), 4)
    for names in (["", "", "b,a", ""], ["", "", "a,b", ""]):
        r = simulate(_cluster(), _jobs(), "easy",
                     advance_reservations=JobReservations.of(same, names))
        assert r.schedule.start_time[2] == 50 and r.schedule.nodes_of(2).tolist() == [0]
        assert r.reservation[2] == "a"


def test_every_name_must_exist_and_let_the_job_in():
    with pytest.raises(InputError, match="job row 2: requested reservation 'c' is invalid"):
        _two(["", "", "a,c", ""])
    with pytest.raises(InputError, match="job row 2: access denied to requested "
                       "reservation 'b'"):
        JobReservations.of(Reservations((_TWO.items[0], Reservation("b", 0, 9, (1,),
                                                                    users=("bob",))), 4),
                           ["", "", "a,b", ""], ["bob", "bob", "alice", "alice"])
    with pytest.raises(InputError, match="requested reservation '' is invalid"):
        _two(["", "", "a,", ""])
    assert _two(["", "", "b,a,b", ""]).listed[2].tolist() == [True, True]   # (once each)
    flex = Reservations((_TWO.items[0], Reservation("f", 0, 9, (1,), flags=("FLEX",))), 4)
    assert JobReservations.of(flex, ["", "", "a,f", ""], ["alice"] * 4).listed[2].tolist() \
        == [True, True]                                    # (a FLEX one in a list too)


_FLEX = Reservations((Reservation("a", 50, 80, (0,), users=("alice",)),
                      Reservation("f", 200, 300, (1,), users=("alice",), flags=("FLEX",))), 4)


@pytest.mark.parametrize("policy", ["easy", "conservative"])
def test_a_list_with_a_flex_reservation_runs_by_flex_rules(policy):
    """Job 3 (alice, 20 s, submitted at 5) names a (g1, [50, 80)) and f (FLEX, g2, [200,
    300)). In a it would wait for 50 (the plain member below); as f's FLEX member it may
    run on any node outside other reservations' windows: g3 is idle at 5 (job 2 holds
    g1 and job 4 g2 from 0; job 1 waits for a's window to close on g1, at 80), so it
    starts there at 5, in f, whatever the order of its list (Slurm queues it once per
    reservation, each with its own flags: job_queue_rec_resv_list)."""
    def run(names):
        resv = JobReservations.of(_FLEX, names, ["bob", "bob", "alice", "alice"], ["x"] * 4)
        r = simulate(_cluster(), _jobs(), policy, advance_reservations=resv)
        assert verify(r.cluster, r.workload, r.schedule, advance_reservations=resv).ok
        return r
    for names in (["", "", "a,f", ""], ["", "", "f,a", ""]):
        r = run(names)
        assert r.schedule.start_time.tolist() == [80, 0, 5, 0]
        assert r.schedule.nodes_of(2).tolist() == [2] and r.reservation[2] == "f"
    plain = run(["", "", "a", ""])
    assert plain.schedule.start_time[2] == 50 and plain.schedule.nodes_of(2).tolist() == [0]


def test_the_checker_holds_a_listed_flex_job_off_the_other_windows():
    """Job 3 of the list a,f (at [5, 25) on g3) moved to g4 passes (no window is open
    there); moved to [40, 60) on g1 it fits no window of a, so it is f's FLEX member,
    which crosses a's window on a's node: ``reserved_node`` (besides job 2's overcommit
    of g1 until 50)."""
    import dataclasses
    resv = JobReservations.of(_FLEX, ["", "", "a,f", ""], ["bob", "bob", "alice", "alice"],
                              ["x"] * 4)
    r = simulate(_cluster(), _jobs(), "easy", advance_reservations=resv)
    s = r.schedule

    def moved(node, t):
        first = np.arange(len(s.alloc_nodes)) == s.alloc_offsets[2]
        return dataclasses.replace(
            s, alloc_nodes=np.where(first, node, s.alloc_nodes),
            start_time=np.where(np.arange(4) == 2, t, s.start_time),
            end_time=np.where(np.arange(4) == 2, t + 20, s.end_time))
    assert verify(r.cluster, r.workload, moved(3, 5), advance_reservations=resv).ok
    bad = verify(r.cluster, r.workload, moved(0, 40), advance_reservations=resv)
    assert [(v.kind, v.message) for v in bad.violations
            if v.kind in ("reserved_node", "outside_reservation")] == [
        ("reserved_node", "job 3 ran on node 0 during reservation 'a'")]


def test_the_checker_holds_a_listed_job_to_one_of_its_reservations():
    import dataclasses
    r = simulate(_cluster(), _jobs(), "easy", advance_reservations=_two(["", "", "a,b", ""]))
    s = r.schedule                       # job 3 in b: [20, 40) on g2; moved to g1 at 20
    moved = dataclasses.replace(s, alloc_nodes=np.where(
        np.arange(len(s.alloc_nodes)) == s.alloc_offsets[2], 0, s.alloc_nodes))
    bad = verify(r.cluster, r.workload, moved, advance_reservations=_two(["", "", "a,b", ""]))
    assert [v.message for v in bad.violations if v.kind == "outside_reservation"] == [
        "job 3 of reservation 'a' ran over [20, 40), outside its windows"]
    late = dataclasses.replace(moved, start_time=np.where(np.arange(4) == 2, 50, s.start_time),
                               end_time=np.where(np.arange(4) == 2, 70, s.end_time))
    kinds = {v.kind for v in verify(r.cluster, r.workload, late,      # (inside a, on g1)
                                    advance_reservations=_two(["", "", "a,b", ""])).violations}
    assert "outside_reservation" not in kinds


def test_the_scheduler_takes_lists():
    s = Scheduler(_cluster(), "conservative", jobs=_jobs(),
                  advance_reservations=_two(["", "", "a,b", "a,b"]))
    s.submit(_jobs().take(np.array([2])))
    d = s.schedule(5)
    assert d.start_time.tolist() == [20] and d.nodes_of(0).tolist() == [1]
    for names, start in ((["", "", "a,f", ""], 5), (["", "", "a", ""], 50)):
        resv = JobReservations.of(_FLEX, names, ["bob", "bob", "alice", "alice"], ["x"] * 4)
        s = Scheduler(_cluster(), "conservative", jobs=_jobs(), advance_reservations=resv)
        s.submit(_jobs().take(np.array([2])))
        d = s.schedule(5)          # as f's FLEX member at once; in a at its window
        assert d.start_time.tolist() == [start]


def test_cli_sbatch_workload_and_check_with_a_list(tmp_path, capsys):
    from fastsched.io.slurmconf import read_cluster
    from fastsched.io.workload import read_workload, write_workload
    conf = _conf(tmp_path)
    cluster = read_cluster(conf)
    jobs = tmp_path / "jobs.csv"
    write_workload(_workload(["", "", "a,b", ""]), cluster, jobs)
    back = read_workload(jobs, cluster)
    assert dict(zip(back.jobs.job_id.tolist(), back.reservation.tolist()))[3] == "a,b"
    resv = tmp_path / "resv.txt"
    resv.write_text("ReservationName=a StartTime=50 EndTime=80 Nodes=g1 Users=alice\n"
                    "ReservationName=b StartTime=20 EndTime=60 Nodes=g2 Users=alice\n")
    out = tmp_path / "out.csv"
    assert main(["simulate", str(jobs), "--cluster", str(conf), "--resv-file", str(resv),
                 "--no-progress", "--jobs-out", str(out), "--sacct-out",
                 str(tmp_path / "out.sacct"), "--sacct-format", "JobID,Reservation,Start"]) == 0
    capsys.readouterr()
    assert pd.read_csv(out).set_index("job_id").loc[3, "start_time"] == 20
    assert "3|b|1970-01-01T00:00:20" in (tmp_path / "out.sacct").read_text()
    assert main(["check", str(out), "--trace", str(jobs), "--cluster", str(conf),
                 "--resv-file", str(resv)]) == 0
    assert "outside_reservation" in capsys.readouterr().out
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH --reservation=a,b\n#SBATCH -t 0:30\nsrun x\n")
    assert main(["sbatch", "--test-only", "--cluster", str(conf), "--resv-file", str(resv),
                 "--user", "alice", str(script)]) == 0
    assert "expected start: 20 s after submission" in capsys.readouterr().out
