"""Jobs that use an advance reservation in the embeddable Scheduler
(fastsched.sim.schedresv): driven at the simulator's instants it starts what
``simulate(..., advance_reservations=JobReservations)`` starts, on the same nodes; its
decisions name the cluster's own nodes and partitions; what it refuses."""
import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from fastsched import Cluster, Scheduler, simulate
from fastsched.model.errors import InputError, UnsupportedError
from fastsched.model.constraints import Placement
from fastsched.model.reservations import Reservation, Reservations
from fastsched.model.resvjobs import JobReservations
from fastsched.sim.decisions import BLOCKED, RESERVED, START
from fastsched.sim.resvlayout import TAIL, window_horizon
from test_constraints import SETTINGS, constrained_cases, engine_inputs
from test_resvjobs import _MAINT, _cluster, _jobs, _members, _reservations, small_jobs
from test_scheduler import drive_all


def _instants(s, resv, jobs):
    """When the simulator's loop visits for the windows: every hold's end (a window
    closing for the others, opening for the members), but the twins' last."""
    ends = resv.windows(window_horizon(jobs))[1] if s._members is None else \
        s._members.layout.blocked[1]
    return {int(e) for e in ends if e < TAIL}


def _started(r):
    s = r.schedule
    return {int(j): (int(s.start_time[i]), sorted(s.nodes_of(i).tolist()))
            for i, j in enumerate(s.job_id.tolist()) if s.start_time[i] >= 0}


def _driven(s, jobs, resv):
    got = drive_all(s, jobs, instants=_instants(s, resv, jobs))
    return {int(j): (g[0], sorted(g[1])) for j, g in zip(jobs.job_id.tolist(), got)
            if g is not None}


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("easy", 2),
                                          ("conservative", 1)])
@SETTINGS
@given(data=st.data())
def test_the_scheduler_runs_member_jobs_as_the_simulator(data, policy, depth):
    scheduler_matches_simulator(data, policy, depth, _reservations)


def scheduler_matches_simulator(data, policy, depth, draw_reservations) -> None:
    """A constrained case with the member jobs ``draw_reservations(draw, cluster,
    available, jobs, parts)`` draws (every node available): a Scheduler driven at the
    simulator's instants starts what ``simulate`` starts."""
    cluster, _, jobs, parts, deps, groups, caps, _ = data.draw(constrained_cases())
    jobs = jobs.take(np.arange(len(jobs)))      # every job asks for a CPU, as Slurm's do
    jobs.cpus_per_node = np.maximum(jobs.cpus_per_node, 1).astype(jobs.cpus_per_node.dtype)
    resv = draw_reservations(data.draw, cluster, None, jobs, parts)
    pc, _, lg = engine_inputs(jobs, parts, deps, groups, caps)
    r = simulate(cluster, jobs, policy, reserve_depth=depth, partitions=pc, limits=lg,
                 advance_reservations=resv)
    s = Scheduler(cluster, policy, jobs=jobs, reserve_depth=depth, partitions=pc, limits=lg,
                  advance_reservations=resv)
    assert _driven(s, jobs, resv) == _started(r)


@st.composite
def member_runs(draw):
    """2-5 identical nodes, 2-8 jobs of 1-2 nodes and their reservations
    (:func:`test_resvjobs._reservations`: disjoint, one window each, some jobs in them)."""
    N = draw(st.integers(2, 5))
    cluster = Cluster.homogeneous(N, gpus=4, cpus=4, prefix="n")
    n = draw(st.integers(2, 8))
    jobs = small_jobs(draw, n, longest=40)
    resv = _reservations(draw, cluster, None, jobs, {j: [0] for j in range(1, n + 1)})
    return cluster, jobs, resv


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@settings(SETTINGS, max_examples=25)
@given(case=member_runs())
def test_from_state_rebuilds_a_run_with_member_jobs(case, policy):
    """At each instant a job started, ``from_state`` on ``state_at`` (a job running
    inside its reservation's window on the twins, the others on the nodes) starts what
    the simulator started there, on the same nodes."""
    cluster, jobs, resv = case
    r = simulate(cluster, jobs, policy, advance_reservations=resv)
    s = r.schedule
    row = {int(j): i for i, j in enumerate(jobs.job_id)}
    inside = 0
    for t in np.unique(s.start_time[s.start_time >= 0]).tolist():
        if ((s.start_time == t) & (s.end_time == t)).any():   # zero-length: several passes
            continue
        running, pending = r.state_at(t)
        rows = [row[int(j)] for j in pending.job_id]
        sched = Scheduler.from_state(cluster, running, pending, policy,
                                     advance_reservations=resv.take(rows))
        inside += int((sched.running_jobs.nodes >= cluster.num_nodes).any())
        d = sched.schedule(t)
        assert set(d.starts.tolist()) == set(jobs.job_id[s.start_time == t].tolist())
        for i in np.flatnonzero(d.outcome == START):
            assert d.nodes_of(i).tolist() == s.nodes_of(row[int(d.job_id[i])]).tolist()
    event(f"instants with a member running in its window: {min(inside, 3)}")


def test_from_state_puts_a_job_running_in_a_window_on_the_twin():
    """Job 3 (alice, in maint: g1, [50, 80)) runs [50, 70) on g1; at 60 from_state holds
    it on g1's twin, so g1 itself stays held for the others until 80, and job 1 (every
    node) is planned at 80 as in the simulator; without the reservations given, job 3's
    g1 would be wrongly free of the window."""
    r = simulate(_cluster(), _jobs(), "conservative", advance_reservations=_members())
    running, pending = r.state_at(60)
    assert running.job_id.tolist() == [3]
    rows = [int(np.flatnonzero(_jobs().job_id == j)[0]) for j in pending.job_id]
    s = Scheduler.from_state(_cluster(), running, pending, "conservative",
                             advance_reservations=_members().take(rows))
    assert s.running_jobs.nodes.tolist() == [4]             # g1's twin
    d = s.schedule(60)
    assert dict(zip(d.job_id.tolist(), d.start_time.tolist())) == {1: 80, 4: -1}
    assert r.schedule.start_time[0] == 80
    # no queued member: the running one alone lays the reservation out
    one = pending.take(np.flatnonzero(pending.job_id == 1))
    s = Scheduler.from_state(_cluster(), running, one, "conservative",
                             advance_reservations=_MAINT)
    assert s.running_jobs.nodes.tolist() == [4] and s.schedule(60).start_time.tolist() == [80]


def test_decisions_show_the_clusters_nodes_and_partitions():
    s = Scheduler(_cluster(), "conservative", jobs=_jobs(), advance_reservations=_members())
    s.submit(_jobs())
    d = s.schedule(5)
    # 2 starts on g2 (on g1 it would reach the window); 1 waits for the window's end; 3,
    # a member, is planned on g1 (its twin) inside the window; 4 fits no window
    assert d.job_id.tolist() == [1, 2, 4, 3]
    assert d.outcome.tolist() == [RESERVED, START, BLOCKED, RESERVED]
    assert d.start_time.tolist() == [80, 5, -1, 50]
    assert [d.nodes_of(i).tolist() for i in range(4)] == [[0, 1, 2, 3], [1], [], [0]]
    assert d.to_pandas().nodes.tolist() == ["g[1-4]", "g2", "", "g1"]
    assert d.partition.tolist() == [0, 0, 0, 0] and d.cluster.num_nodes == 4
    s.apply(d)
    assert s.schedule(45).starts.tolist() == []    # 3 starts only when the window opens
    d = s.schedule(50)
    assert d.starts.tolist() == [3] and d.nodes_of(d.job_id.tolist().index(3)).tolist() == [0]
    s.apply(d)
    table = s.expected_start_times(50)
    assert table.job_id.tolist() == [1, 4]
    assert table.partition.tolist() == ["all", "all"]
    assert table.expected_start.tolist() == [80, -1]


def test_a_drained_node_takes_its_twin_with_it():
    s = Scheduler(_cluster(), "easy", jobs=_jobs(), advance_reservations=_members())
    s.submit(_jobs().take(np.array([2])))          # job 3, a member, in [50, 80) on g1
    s.drain_nodes([0])
    assert s.schedule(50).starts.tolist() == []
    s.resume_nodes([0])
    assert s.schedule(50).starts.tolist() == [3]
    with pytest.raises(InputError, match=r"node indices in 0\.\.3"):
        s.drain_nodes([4])                          # (the twin is not a node of the cluster)
    jobs = _jobs().take(np.array([1, 2]))          # (job 1 needs every node)
    members = JobReservations.of(_MAINT, ["", "maint"], ["bob", "alice"])
    # as any job that can never run on the configured nodes: refused, naming it
    with pytest.raises(InputError, match="job 3 needs 1 nodes .* in partition 'all@maint', "
                       "which has 0 such available"):
        Scheduler(_cluster(), "easy", jobs=jobs, available=[False, True, True, True],
                  advance_reservations=members)
    with pytest.raises(InputError):
        Scheduler(_cluster(), "easy", jobs=_jobs(), available=[True] * 3,
                  advance_reservations=_members())


def test_for_site_takes_the_workloads_reservations():
    from fastsched.policy.config import parse_config
    from test_resvjobs import _workload
    w = _workload(["", "", "maint", "maint"])
    cfg = parse_config("")
    resv = w.reservations(Reservations((Reservation("maint", 50, 80, (0,),
                                                    users=("alice",)),), 4))
    s = Scheduler.for_site(_cluster(), w, cfg, "easy", advance_reservations=resv)
    got = drive_all(s, w.jobs, instants=_instants(s, resv, w.jobs))
    assert [g and g[0] for g in got] == [80, 0, 50, None]


def test_what_it_refuses_with_member_jobs():
    with pytest.raises(InputError, match="pass it as jobs="):
        Scheduler(_cluster(), "easy", advance_reservations=_members())
    with pytest.raises(InputError, match="reservation of 2 jobs, the table has 4"):
        Scheduler(_cluster(), "easy", jobs=_jobs(),
                  advance_reservations=JobReservations.of(_MAINT, ["maint", ""],
                                                          ["alice", "bob"]))
    magnetic = Reservations((Reservation("m", 0, 9, (0,), flags=("MAGNETIC",)),), 4)
    with pytest.raises(UnsupportedError, match="MAGNETIC: give the jobs"):
        Scheduler(_cluster(), "easy", jobs=_jobs(), advance_reservations=magnetic)
    # placement runs with members (tests/test_resv_placement.py), preemption does not
    Scheduler(_cluster(), "easy", jobs=_jobs(), advance_reservations=_members(),
              placement=Placement.topology(np.zeros((1, 4), dtype=np.int64), 4))
    # no member: as with the plain reservations
    s = Scheduler(_cluster(), "easy", advance_reservations=_members(("",) * 4))
    s.submit(_jobs().take(np.array([0, 1])))
    assert s.schedule(0).start_time.tolist() == [80, 0]


def test_cli_sbatch_test_only_starts_a_member_inside_its_reservation(tmp_path, capsys):
    from fastsched.cli import main
    from test_resvjobs import _conf
    conf = _conf(tmp_path)
    member = tmp_path / "m.sh"
    member.write_text("#!/bin/bash\n#SBATCH -N 1 -t 1 --gres=gpu:4 --reservation=maint\n")
    plain = tmp_path / "p.sh"
    plain.write_text("#!/bin/bash\n#SBATCH -N 4 -t 2 --gres=gpu:4\n")
    resv = tmp_path / "resv.txt"
    resv.write_text("ReservationName=maint StartTime=3600 EndTime=7200 Nodes=g1 Users=alice\n")
    base = ["sbatch", "--test-only", "--cluster", str(conf)]

    def last_line(args):
        assert main(base + args) == 0
        return capsys.readouterr().out.splitlines()[-1]

    assert last_line(["--resv-file", str(resv), "--user=alice", str(member)]) == \
        "expected start: 3600 s after submission on an empty cluster (in reservation maint)"
    assert last_line(["--user", "alice", f"--resv-file={resv}", str(member), "-t", "90"]) == \
        "expected start: never (no window of reservation 'maint' fits its time limit)"
    # the others keep out of the window: 2 minutes on all four nodes fit before it
    assert last_line(["--resv-file", str(resv), str(plain)]) == \
        "expected start: 0 s after submission on an empty cluster"
    assert last_line(["--resv-file", str(resv), str(plain), "-t", "61"]) == \
        "expected start: 7200 s after submission on an empty cluster"
    assert main(base + ["--resv-file", str(resv), str(member)]) == 2
    assert "job 1: access denied to requested reservation 'maint'" in capsys.readouterr().err
    assert main(base + [str(member)]) == 2
    assert "give the reservations (--resv-file)" in capsys.readouterr().err
    assert main(["sbatch", "--test-only", str(member), "--user"]) == 2
    assert "--user needs a value" in capsys.readouterr().err
