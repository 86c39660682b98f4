"""Jobs running in an advance reservation (``--reservation``): the engine (on the
reservations' twin nodes, fastsched.sim.resvlayout) against the twin
(tests/naive_resv.py) on random reservations and members, the access rule, the checker,
the readers and the CLI."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import naive_nodes
from naive_resv import TAIL, Members
from fastsched import Cluster, InputError, JobTable, simulate, verify
from fastsched.cli import main
from fastsched.engine import run_nodes
from fastsched.model.errors import UnsupportedError
from fastsched.model.reservations import Reservation, Reservations
from fastsched.model.resvjobs import JobReservations, may_use
from fastsched.sim.resvlayout import mapped_back, member_layout
from test_constraints import SETTINGS, constrained_cases, engine_inputs


def small_jobs(draw, n: int, longest: int = 30) -> JobTable:
    """``n`` jobs 1..n of 1-2 nodes, 0-4 GPUs and 1-4 CPUs, submitted in [0, 60], each
    running 1..``longest`` s with a limit up to 10 s above it."""
    def ints(lo, hi):
        return np.array(draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n)))
    runtime = ints(1, longest)
    return JobTable.from_arrays(job_id=np.arange(1, n + 1), submit_time=ints(0, 60),
                                runtime=runtime, time_limit=runtime + ints(0, 10),
                                num_nodes=ints(1, 2), gpus_per_node=ints(0, 4),
                                cpus_per_node=ints(1, 4), user=0)


def disjoint_reservations(draw, num_nodes: int, flags, users) -> list:
    """Up to 3 reservations r0-r2 on disjoint nodes (each node in one or none), one
    window each within [0, 120), their flags and users drawn from ``flags`` / ``users``."""
    group = draw(st.lists(st.integers(-1, 2), min_size=num_nodes, max_size=num_nodes))
    items = []
    for k in range(3):
        nodes = tuple(x for x in range(num_nodes) if group[x] == k)
        if nodes:
            s = draw(st.integers(0, 60))
            flag, user = draw(st.sampled_from(flags)), draw(st.sampled_from(users))
            items.append(Reservation(f"r{k}", s, s + draw(st.integers(1, 60)), nodes,
                                     users=user, flags=flag))
    return items


def _reservations(draw, cluster, available, jobs, parts):
    """1-3 reservations on disjoint nodes, one window each, some MAGNETIC, some for
    some of the users u0, u1, u2, and the jobs running in them (a job is made a member
    only where it may and can ever run)."""
    N = cluster.num_nodes
    items = disjoint_reservations(draw, N, [(), ("MAGNETIC",)],
                                  [(), ("u0",), ("-u0",), ("u1", "u0")])
    assume(items)
    ok = np.ones(N, bool) if available is None else np.asarray(available, bool)
    users = [f"u{u}" for u in draw(st.lists(st.integers(0, 2), min_size=len(jobs),
                                            max_size=len(jobs)))]
    names = [""] * len(jobs)
    for i, j in enumerate(jobs.job_id.tolist()):
        k = draw(st.integers(-1, len(items) - 1))
        if k < 0 or not may_use(items[k], users[i], None):
            continue
        fits = [x for x in items[k].nodes if ok[x] and cluster.gpus[x] >= jobs.gpus_per_node[i]
                and cluster.cpus[x] >= jobs.cpus_per_node[i]
                and cluster.mem_mb[x] >= jobs.mem_per_node[i]]
        if any(sum(x in set(cluster.partitions[p].nodes.tolist()) for x in fits)
               >= jobs.num_nodes[i] for p in parts[j]):
            names[i] = items[k].name
    return JobReservations.of(Reservations(tuple(items), N), names, users)


def engine_run(cluster, jobs, policy, depth, available, resv, pc, on_layout=None, **kw):
    """The simulator's way: the layout, the node engine on it (``kw``, and the keyword
    arguments ``on_layout(layout)`` gives), the run mapped back."""
    horizon = int(jobs.submit_time.max()) + int(jobs.time_limit.max())
    layout = member_layout(cluster, resv, pc, resv.windows(horizon), horizon, jobs)
    avail = None if available is None else np.asarray(available)[layout.node_of]
    kw.update(on_layout(layout) if on_layout else {})
    run = run_nodes(layout.cluster, jobs, policy, depth, avail, partitions=layout.partitions,
                    blocked=layout.blocked, **kw)
    return mapped_back(run, layout)


def twin_members(resv, jobs):
    def of(k):
        return set(resv.items[k].nodes), [(resv.items[k].start, resv.items[k].end)]
    ids = jobs.job_id.tolist()
    return Members({ids[i]: of(k) for i, k in enumerate(resv.member.tolist()) if k >= 0},
                   {ids[i]: [of(k) for k in np.flatnonzero(row).tolist()]
                    for i, row in enumerate(resv.attracted) if row.any()})


def members_match_twin(data, policy, depth, draw_reservations, twin_of):
    """A constrained case with the advance reservations ``draw_reservations(draw,
    cluster, available, jobs, parts)`` draws, run by the engine and by its twin (members
    as ``twin_of(resv, jobs)`` has them): the same records. Returns (cluster, jobs,
    resv, run) for the caller's checks."""
    cluster, available, jobs, parts, deps, groups, caps, rank = data.draw(constrained_cases())
    jobs = jobs.take(np.arange(len(jobs)))      # every job asks for a CPU, as Slurm's do
    jobs.cpus_per_node = np.maximum(jobs.cpus_per_node, 1).astype(jobs.cpus_per_node.dtype)
    resv = draw_reservations(data.draw, cluster, available, jobs, parts)
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    ids = [int(j) for j in jobs.job_id]
    key = None if rank is None else np.array([rank[j] for j in ids])
    run = engine_run(cluster, jobs, policy, depth, available, resv, pc, dependencies=dp,
                     limits=lg, rank=key)
    blocked = list(zip(*(a.tolist() for a in resv.windows(0))))
    out, _ = naive_nodes.simulate(
        cluster, naive_nodes.jobs_from_table(jobs), policy, depth, available, partitions=parts,
        deps=deps, groups=groups, caps=caps, rank=rank, blocked=blocked,
        members=twin_of(resv, jobs))
    out = {j: r for j, r in out.items() if r[0] < TAIL}    # the simulator drops these
    naive_nodes.assert_same_records(run, ids, out)
    return cluster, jobs, resv, run


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("easy", 2),
                                          ("conservative", 1)])
@SETTINGS
@given(data=st.data())
def test_member_jobs_match_twin(data, policy, depth):
    cluster, jobs, resv, run = members_match_twin(data, policy, depth, _reservations,
                                                  twin_members)
    sched = simulate_schedule(jobs, run)
    report = verify(cluster, jobs, sched, advance_reservations=resv)
    kinds = {v.kind for v in report.violations} - {"not_started"}   # deps, limits
    assert not kinds & {"reserved_node", "outside_reservation", "overcommit"}, report


def simulate_schedule(jobs, run):
    from fastsched.sim.simulator import _started_schedule
    return _started_schedule(jobs, run, "nodes")


def _cluster():
    return Cluster([f"g{i}" for i in range(1, 5)], cpus=[8] * 4, gpus=[4] * 4,
                   mem_mb=[0] * 4)


def _jobs():
    # job 1 takes every node after the window; 2 runs before it on g1; 3 (a member)
    # waits for the window; 4 (a member) is longer than the window: it stays pending
    return JobTable.from_arrays(job_id=[1, 2, 3, 4], submit_time=[0, 0, 5, 0],
                                time_limit=[100, 50, 20, 40], runtime=[100, 50, 20, 40],
                                num_nodes=[4, 1, 1, 1], gpus_per_node=4, cpus_per_node=1,
                                user=0)


_MAINT = Reservations((Reservation("maint", 50, 80, (0,), users=("alice",)),), 4)


def _members(names=("", "", "maint", "maint")):
    return JobReservations.of(_MAINT, names, ["bob", "bob", "alice", "alice"], ["a"] * 4)


@pytest.mark.parametrize("policy", ["easy", "conservative"])
def test_a_member_runs_inside_the_window_on_its_nodes(policy):
    r = simulate(_cluster(), _jobs(), policy, advance_reservations=_members())
    s = r.schedule
    assert s.start_time.tolist() == [80, 0, 50, -1] and s.end_time.tolist()[:3] == [180, 50, 70]
    assert s.nodes_of(2).tolist() == [0]
    report = verify(r.cluster, r.workload, s, advance_reservations=_members())
    assert report.ok and "outside_reservation" in report.checks
    # the plain reservations see job 3 on the reserved node and job 4 never started
    plain = verify(r.cluster, r.workload, s, advance_reservations=_MAINT)
    assert sorted(v.kind for v in plain.violations) == ["not_started", "reserved_node"]


def test_without_members_the_records_are_unchanged():
    plain = simulate(_cluster(), _jobs(), "easy", advance_reservations=_MAINT)
    none = simulate(_cluster(), _jobs(), "easy", advance_reservations=_members(("",) * 4))
    assert plain.jobs.equals(none.jobs) and plain.summary.keys() == none.summary.keys()


def test_the_checker_catches_a_member_outside_its_window_or_nodes():
    import dataclasses
    r = simulate(_cluster(), _jobs(), "easy", advance_reservations=_members())
    early = dataclasses.replace(r.schedule, start_time=np.array([80, 0, 45, -1]),
                                end_time=np.array([180, 50, 65, -1]))
    bad = verify(r.cluster, r.workload, early, advance_reservations=_members())
    assert "outside_reservation" in {v.kind for v in bad.violations}
    moved = dataclasses.replace(r.schedule, alloc_nodes=np.array([0, 1, 2, 3, 0, 1]))
    bad = verify(r.cluster, r.workload, moved, advance_reservations=_members())
    assert [v.message for v in bad.violations if v.kind == "outside_reservation"] == [
        "job 3 of reservation 'maint' ran on node 1, not in it"]


@pytest.mark.parametrize("users,accounts,user,account,ok", [
    (("alice",), (), "alice", "x", True), (("alice",), (), "bob", "x", False),
    (("-bob",), (), "alice", "x", True), (("-bob",), (), "bob", "x", False),
    (("alice",), ("ml",), "alice", "ops", False), (("alice",), ("ml",), "alice", "ml", True),
    ((), ("-ops",), "bob", "ml", True), ((), (), "bob", "ml", True),
    (("alice",), (), "root", "x", True)])
def test_access_follows_slurm(users, accounts, user, account, ok):
    resv = Reservations((Reservation("r", 0, 10, (0,), users, accounts),), 4)
    if ok:
        assert JobReservations.of(resv, ["r"], [user], [account]).member.tolist() == [0]
    else:
        with pytest.raises(InputError, match="access denied"):
            JobReservations.of(resv, ["r"], [user], [account])


def test_unknown_reservation_is_refused():
    with pytest.raises(InputError, match="'nope' is invalid"):
        JobReservations.of(_MAINT, ["nope"], ["alice"], ["a"])
    with pytest.raises(InputError, match="'other' is invalid"):     # (every name of a list)
        JobReservations.of(_MAINT, ["maint,other"], ["alice"], ["a"])
    with pytest.raises(InputError, match="4 jobs"):
        simulate(_cluster(), _jobs().take(np.arange(3)), "easy",
                 advance_reservations=_members())


def test_overlapping_reservations_with_members_are_refused():
    two = Reservations((Reservation("a", 0, 10, (0, 1)), Reservation("b", 20, 30, (1,))), 4)
    members = JobReservations.of(two, ["a", "", "", ""], None, None)
    with pytest.raises(UnsupportedError, match="shares a node"):
        simulate(_cluster(), _jobs(), "easy", advance_reservations=members)


def test_sbatch_reservation_reaches_the_workload():
    from fastsched.io.sbatch import format_request, normalise, parse_script
    from fastsched.io.workload import requests_to_workload
    texts = ["#!/bin/bash\n#SBATCH -N 1 -t 1 --reservation=maint\n",
             "#!/bin/bash\n#SBATCH -N 1 -t 1\n"]
    norms = [normalise(parse_script(t), _cluster()) for t in texts]
    assert [n.reservation for n in norms] == ["maint", None]
    assert all("--reservation" not in n.ignored for n in norms)
    assert "Reservation=maint" in format_request(norms[0])
    w = requests_to_workload([(n, 0, 30) for n in norms], _cluster(), user="alice")
    assert w.reservation.tolist() == ["maint", ""]
    assert w.reservations(_MAINT).member.tolist() == [0, -1]
    with pytest.raises(InputError, match="access denied"):
        requests_to_workload([(n, 0, 30) for n in norms], _cluster(),
                             user="bob").reservations(_MAINT)


def _conf(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("NodeName=g[1-4] CPUs=8 Gres=gpu:4\n"
                    "PartitionName=gpu Nodes=g[1-4] Default=YES\n")
    (tmp_path / "gres.conf").write_text("NodeName=g[1-4] Name=gpu Count=4\n")
    return conf


def _workload(names):
    from fastsched.io.workload import Workload
    return Workload(_jobs(), np.zeros(4, np.int32), ["alice"], ["a"], np.zeros(1, np.int32),
                    ["o"], reservation=np.array(names, dtype=object))


def test_the_workload_csv_keeps_the_reservation_column(tmp_path):
    from fastsched.io.slurmconf import read_cluster
    from fastsched.io.workload import read_workload, write_workload
    cluster = read_cluster(_conf(tmp_path))
    write_workload(_workload(["", "", "maint", "maint"]), cluster, tmp_path / "w.csv")
    assert read_workload(tmp_path / "w.csv", cluster).reservation.tolist() == [
        "", "", "maint", "maint"]
    write_workload(_workload([""] * 4), cluster, tmp_path / "plain.csv")
    assert "reservation" not in (tmp_path / "plain.csv").read_text().splitlines()[0]
    bad = tmp_path / "bad.csv"
    bad.write_text((tmp_path / "w.csv").read_text().replace(",maint", ",ma int", 1))
    with pytest.raises(InputError, match="bad.csv:4: field reservation"):
        read_workload(bad, cluster)


def test_cli_simulate_and_check_member_jobs(tmp_path, capsys):
    from fastsched.io.slurmconf import read_cluster
    from fastsched.io.workload import write_workload
    conf = _conf(tmp_path)
    cluster = read_cluster(conf)
    jobs = tmp_path / "jobs.csv"
    write_workload(_workload(["", "", "maint", "maint"]), cluster, jobs)
    resv = tmp_path / "resv.txt"
    resv.write_text("ReservationName=maint StartTime=50 EndTime=80 Nodes=g1 Users=alice\n")
    out = tmp_path / "out.csv"
    assert main(["simulate", str(jobs), "--cluster", str(conf), "--resv-file", str(resv),
                 "--no-progress", "--jobs-out", str(out)]) == 0
    capsys.readouterr()
    rows = pd.read_csv(out)
    assert rows.set_index("job_id").loc[3, "start_time"] == 50
    assert main(["check", str(out), "--trace", str(jobs), "--cluster", str(conf),
                 "--resv-file", str(resv)]) == 0
    assert "outside_reservation" in capsys.readouterr().out
    moved = tmp_path / "moved.csv"     # job 3 started before its window opened
    rows.loc[rows.job_id == 3, ["start_time", "end_time"]] = [40, 60]
    rows.to_csv(moved, index=False)
    assert main(["check", str(moved), "--trace", str(jobs), "--cluster", str(conf),
                 "--resv-file", str(resv)]) != 0
    assert "job 3 of reservation 'maint' ran over [40, 60)" in capsys.readouterr().out
    # no reservation file for a workload naming one; a user the reservation refuses
    assert main(["simulate", str(jobs), "--cluster", str(conf), "--no-progress"]) != 0
    assert "give the reservations (--resv-file)" in capsys.readouterr().err
    resv.write_text("ReservationName=maint StartTime=50 EndTime=80 Nodes=g1 Users=bob\n")
    assert main(["simulate", str(jobs), "--cluster", str(conf), "--resv-file", str(resv),
                 "--no-progress"]) != 0
    assert "job 4: access denied" in capsys.readouterr().err
    # a MAGNETIC reservation draws the jobs that may use it, naming it or not
    plain = tmp_path / "plain.csv"
    write_workload(_workload([""] * 4), cluster, plain)
    resv.write_text("ReservationName=m StartTime=50 EndTime=80 Nodes=g1 Users=alice "
                    "Flags=MAGNETIC\n")
    assert main(["simulate", str(plain), "--cluster", str(conf), "--resv-file", str(resv),
                 "--no-progress", "--jobs-out", str(out)]) == 0
    assert pd.read_csv(out).set_index("job_id").loc[3, "start_time"] == 5   # sooner outside
    capsys.readouterr()
    assert main(["check", str(out), "--trace", str(plain), "--cluster", str(conf),
                 "--resv-file", str(resv)]) == 0
    assert "outside_reservation" in capsys.readouterr().out     # the jobs it draws


def test_cli_records_are_byte_identical_when_no_job_names_a_reservation(tmp_path, capsys):
    from fastsched.io.slurmconf import read_cluster
    from fastsched.io.workload import write_workload
    conf = _conf(tmp_path)
    jobs = tmp_path / "jobs.csv"
    write_workload(_workload([""] * 4), read_cluster(conf), jobs)
    named = tmp_path / "named.csv"     # the same jobs with an empty reservation column
    lines = jobs.read_text().splitlines()
    named.write_text("\n".join([lines[0] + ",reservation"] + [x + "," for x in lines[1:]])
                     + "\n")
    resv = tmp_path / "resv.txt"
    resv.write_text("ReservationName=maint StartTime=50 EndTime=80 Nodes=g1 Users=alice\n")
    outs = []
    for trace in (jobs, named):
        outs.append(tmp_path / f"out-{trace.stem}.csv")
        assert main(["simulate", str(trace), "--cluster", str(conf), "--resv-file", str(resv),
                     "--no-progress", "--jobs-out", str(outs[-1])]) == 0
    assert outs[0].read_bytes() == outs[1].read_bytes()


def test_a_daily_reservation_takes_its_members_in_each_window():
    daily = Reservations((Reservation("d", 10, 40, (0,), flags=("DAILY",)),), 4)
    jobs = JobTable.from_arrays(job_id=[1, 2, 3, 4], submit_time=[0, 50, 86_420, 86_420],
                                time_limit=[30, 20, 10, 11], runtime=[30, 20, 10, 11],
                                num_nodes=1, gpus_per_node=4, cpus_per_node=1, user=0)
    members = JobReservations.of(daily, ["d"] * 4)
    r = simulate(_cluster(), jobs, "conservative", advance_reservations=members)
    # 1 fills the first window; 2 waits for the next; 3 fits in what is left of it after
    # 2; 4, a second longer, would end after the window: it waits for the third
    assert r.schedule.start_time.tolist() == [10, 86_410, 86_430, 172_810]
    assert r.schedule.nodes_of(1).tolist() == [0]
    assert verify(r.cluster, r.workload, r.schedule, advance_reservations=members).ok


def _magnetic_case():
    """A MAGNETIC reservation of nodes 0-1 for alice over [0, 100), and four jobs: 1, 3
    and 4 alice's (4 longer than the window), 2 bob's. (reservations, jobs, users)"""
    magnetic = Reservations((Reservation("m", 0, 100, (0, 1), users=("alice",),
                                         flags=("MAGNETIC",)),), 4)
    jobs = JobTable.from_arrays(job_id=[1, 2, 3, 4], submit_time=0,
                                time_limit=[50, 50, 50, 200], runtime=[50, 50, 50, 200],
                                num_nodes=[2, 2, 2, 1], gpus_per_node=4, cpus_per_node=1,
                                user=0)
    return magnetic, jobs, ["alice", "bob", "alice", "alice"]


def test_a_magnetic_reservation_draws_the_jobs_that_may_use_it():
    magnetic, jobs, users = _magnetic_case()
    resv = JobReservations.of(magnetic, [""] * 4, users)
    assert resv.attracted[:, 0].tolist() == [True, False, True, True]
    r = simulate(_cluster(), jobs, "easy", advance_reservations=resv)
    s = r.schedule
    # 1 starts inside it (a tie with outside); 2 (bob) outside; 3 finds both taken and
    # starts inside when 1 ends (a tie again); 4, longer than the window, runs outside
    assert s.start_time.tolist() == [0, 0, 50, 50]
    assert [s.nodes_of(i).tolist() for i in range(4)] == [[0, 1], [2, 3], [0, 1], [2]]
    assert verify(r.cluster, r.workload, s, advance_reservations=resv).ok
    with pytest.raises(UnsupportedError, match="MAGNETIC: give the jobs"):
        simulate(_cluster(), jobs, "easy", advance_reservations=magnetic)


def test_member_jobs_with_node_ranges_power_saving_or_preemption_are_refused_by_name():
    from fastsched.model.lifecycle import Lifecycle
    from fastsched.model.power import PowerSaving
    ranged = Lifecycle.of(4, nodes_min=[0, 0, 0, 0])
    simulate(_cluster(), _jobs(), "easy", advance_reservations=_members(), lifecycle=ranged)
    with pytest.raises(UnsupportedError, match="node_ranges"):
        simulate(_cluster(), _jobs(), "easy", advance_reservations=_members(),
                 lifecycle=Lifecycle.of(4, nodes_min=[2, 0, 0, 0]))
    with pytest.raises(UnsupportedError, match="power"):
        simulate(_cluster(), _jobs(), "easy", advance_reservations=_members(),
                 power=PowerSaving())
    from test_scheduler_preempt import _two_tiers
    cluster, jobs, pre = _two_tiers()
    members = JobReservations.of(Reservations((Reservation("maint", 50, 80, (0, 1)),), 2),
                                 ["maint", ""])
    with pytest.raises(UnsupportedError, match="preemption"):
        simulate(cluster, jobs, "easy", advance_reservations=members, preemption=pre)
