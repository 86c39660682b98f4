"""Advance reservations: windows over which nodes are held whole. The engine against the
twin (tests/naive_nodes.py) on random windows, the checker, the reader and the CLI."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import naive_nodes
from fastsched import Cluster, InputError, JobRequest, JobTable, simulate, verify
from fastsched.cli import main
from fastsched.engine import run_nodes
from fastsched.io.reservations import read_reservations
from fastsched.model.errors import UnsupportedError
from fastsched.model.reservations import Reservation, Reservations
from fastsched.sim.scheduler import Scheduler
from test_constraints import SETTINGS, constrained_cases, engine_inputs
from test_nodeplan import node_cases
from test_scheduler import drive_all, expected_of


def windows_of(draw, num_nodes):
    """Random (start, end, node) windows, overlapping ones included."""
    k = draw(st.integers(1, 4))
    out = []
    for _ in range(k):
        s = draw(st.integers(0, 60))
        e = s + draw(st.integers(1, 40))
        nodes = draw(st.lists(st.integers(0, num_nodes - 1), min_size=1, max_size=3,
                              unique=True))
        out += [(s, e, x) for x in nodes]
    return out


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("easy", 2),
                                          ("conservative", 1)])
@SETTINGS
@given(data=st.data())
def test_reserved_windows_match_twin(data, policy, depth):
    cluster, available, jobs, parts, deps, groups, caps, rank = data.draw(constrained_cases())
    jobs = jobs.take(np.arange(len(jobs)))      # every job asks for a CPU, as Slurm's do
    jobs.cpus_per_node = np.maximum(jobs.cpus_per_node, 1).astype(jobs.cpus_per_node.dtype)
    blocked = windows_of(data.draw, cluster.num_nodes)
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    ids = [int(j) for j in jobs.job_id]
    key = None if rank is None else np.array([rank[j] for j in ids])
    arrays = tuple(np.array(c, dtype=np.int64) for c in zip(*blocked))
    run = run_nodes(cluster, jobs, policy, depth, available, partitions=pc, dependencies=dp,
                    limits=lg, rank=key, blocked=arrays)
    out, _ = naive_nodes.simulate(
        cluster, naive_nodes.jobs_from_table(jobs), policy, depth, available, partitions=parts,
        deps=deps, groups=groups, caps=caps, rank=rank, blocked=blocked)
    naive_nodes.assert_same_records(run, ids, out)
    for i in np.flatnonzero(run.start >= 0):       # and no job overlaps a window of its nodes
        nodes = run.alloc_nodes[run.alloc_offsets[i]:run.alloc_offsets[i + 1]]
        assert not any(x in nodes and s < run.end[i] and run.start[i] < e
                       for s, e, x in blocked)


def _cluster():
    return Cluster([f"g{i}" for i in range(1, 5)], cpus=[8] * 4, gpus=[4] * 4,
                   mem_mb=[0] * 4)


def _jobs():
    # a 4-node job waits for the window on g1 to close; 1-node jobs go around it
    return JobTable.from_arrays(job_id=[1, 2, 3], submit_time=[0, 0, 5],
                                time_limit=[100, 50, 50], runtime=[100, 50, 50],
                                num_nodes=[4, 1, 1], gpus_per_node=4, cpus_per_node=1, user=0)


def test_a_job_waits_for_the_window_and_backfill_goes_around_it():
    maint = Reservations((Reservation("maint", 50, 80, (0,), flags=("MAINT",)),), 4)
    r = simulate(_cluster(), _jobs(), "easy", advance_reservations=maint)
    assert r.schedule.start_time.tolist() == [80, 0, 5]
    assert r.summary["advance_reservations"] == 1 and r.summary["reservations"] == "nodes"
    assert r.schedule.nodes_of(1).tolist() == [0]   # job 2 (0..50) ends as the window opens
    assert r.schedule.nodes_of(2).tolist() != [0]   # job 3 (5..55) would overlap it
    report = verify(r.cluster, r.workload, r.schedule, advance_reservations=maint)
    assert report.ok and "reserved_node" in report.checks
    plain = simulate(_cluster(), _jobs(), "easy", reservations="nodes")
    bad = verify(plain.cluster, plain.workload, plain.schedule, advance_reservations=maint)
    assert [v.kind for v in bad.violations] == ["reserved_node"]
    assert "maint" in bad.violations[0].message


def test_the_result_checks_itself_against_its_reservations():
    maint = Reservations((Reservation("maint", 50, 80, (0,), flags=("MAINT",)),), 4)
    r = simulate(_cluster(), _jobs(), "easy", advance_reservations=maint)
    report = r.verify()
    assert report.ok and "reserved_node" in report.checks
    r.schedule.start_time[1] += 10              # job 2 (0..50) now runs into the window on g1
    r.schedule.end_time[1] += 10
    assert [v.kind for v in r.verify().violations] == ["reserved_node"]


def test_policy_checks_are_skipped_not_wrong_under_reservations():
    maint = Reservations((Reservation("maint", 50, 80, (0,)),), 4)
    r = simulate(_cluster(), _jobs(), "easy", advance_reservations=maint)
    report = verify(r.cluster, r.workload, r.schedule, policy="easy",
                    advance_reservations=maint)
    assert report.ok and any("advance reservations" in s for s in report.not_checked)


def test_daily_windows_repeat():
    r = Reservations((Reservation("d", 10, 20, (0, 1), flags=("DAILY",)),), 4)
    s, e, x = r.windows(2 * 86_400 + 11)
    assert s.tolist() == [10, 10, 86_410, 86_410, 172_810, 172_810]
    assert (e - s).tolist() == [10] * 6 and x.tolist() == [0, 1] * 3


@pytest.mark.parametrize("items,error", [
    ((Reservation("a", 10, 10, (0,)),), "after start"),
    ((Reservation("a", 0, 10, (9,)),), "node index 9"),
    ((Reservation("a", 0, 10, (0,)), Reservation("a", 5, 9, (1,))), "defined twice"),
    ((Reservation("a", 0, 90_000, (0,), flags=("DAILY",)),), "cannot repeat"),
])
def test_bad_reservations_are_refused(items, error):
    with pytest.raises(InputError, match=error):
        Reservations(items, 4)


def test_a_job_asking_for_nothing_is_refused_with_reservations():
    jobs = JobTable.from_arrays(job_id=[7], submit_time=[0], time_limit=[10], runtime=[5],
                                num_nodes=1, cpus_per_node=0)
    maint = Reservations((Reservation("maint", 0, 5, (0,)),), 4)
    with pytest.raises(UnsupportedError, match="job 7"):
        simulate(_cluster(), jobs, "easy", advance_reservations=maint)


def test_unmodelled_flag_is_refused_by_name():
    with pytest.raises(UnsupportedError, match="ANY_NODES"):
        Reservations((Reservation("a", 0, 10, (0,), flags=("ANY_NODES",)),), 4)


def _conf(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("NodeName=g[1-4] CPUs=8 Gres=gpu:4\n"
                    "PartitionName=gpu Nodes=g[1-4] Default=YES\n")
    gres = tmp_path / "gres.conf"
    gres.write_text("NodeName=g[1-4] Name=gpu Count=4\n")
    return conf


def test_reader_takes_scontrol_lines(tmp_path):
    from fastsched.io.slurmconf import read_cluster
    cluster = read_cluster(_conf(tmp_path))
    f = tmp_path / "resv.txt"
    f.write_text("# maintenance\n"
                 "scontrol create reservation ReservationName=maint StartTime=50 "
                 "Duration=30 Nodes=g1 Flags=MAINT Users=root\n"
                 "\n"
                 "reservationname=d starttime=1970-01-02T00:00:00 duration=1:00:00 "
                 "nodecnt=2 partitionname=gpu flags=daily accounts=ops,ml\n")
    r = read_reservations(f, cluster)
    assert r["maint"] == Reservation("maint", 50, 50 + 30 * 60, (0,), ("root",), (),
                                     ("MAINT",))
    assert r["d"].start == 86_400 and r["d"].end == 90_000 and r["d"].nodes == (0, 1)
    assert r["d"].accounts == ("ops", "ml") and r["d"].period == 86_400


@pytest.mark.parametrize("line,error", [
    ("ReservationName=x Duration=10 Nodes=g1", "r.txt:1: field StartTime"),
    ("ReservationName=x StartTime=0 Nodes=g1", "r.txt:1: field Duration"),
    ("ReservationName=x StartTime=soon Duration=10 Nodes=g1", "field StartTime"),
    ("ReservationName=x StartTime=0 Duration=10 Nodes=g9", "field Nodes: node 'g9'"),
    ("ReservationName=x StartTime=0 Duration=10 NodeCnt=5", "field NodeCnt"),
    ("ReservationName=x StartTime=0 Duration=ten Nodes=g1", "field Duration"),
    ("ReservationName=x StartTime=0 Duration=10", "field Nodes"),
])
def test_reader_names_file_line_and_field(tmp_path, line, error):
    from fastsched.io.slurmconf import read_cluster
    cluster = read_cluster(_conf(tmp_path))
    f = tmp_path / "r.txt"
    f.write_text(line + "\n")
    with pytest.raises(InputError, match=error):
        read_reservations(f, cluster)


def test_reader_refuses_unmodelled_keys_by_name(tmp_path):
    from fastsched.io.slurmconf import read_cluster
    cluster = read_cluster(_conf(tmp_path))
    f = tmp_path / "r.txt"
    f.write_text("ReservationName=x StartTime=0 Duration=10 CoreCnt=4 Nodes=g1\n")
    with pytest.raises(UnsupportedError, match=r"r.txt:1: .*'CoreCnt'"):
        read_reservations(f, cluster)


def test_cli_simulate_and_check_with_reservations(tmp_path, capsys):
    conf = _conf(tmp_path)
    from fastsched.io.slurmconf import read_cluster
    from fastsched.io.workload import Workload, write_workload
    jobs = tmp_path / "jobs.csv"
    write_workload(Workload(_jobs(), np.zeros(3, np.int32), ["u"], ["a"],
                            np.zeros(1, np.int32), ["o"]), read_cluster(conf), jobs)
    resv = tmp_path / "resv.txt"
    resv.write_text("ReservationName=maint StartTime=50 EndTime=80 Nodes=g1 Flags=MAINT\n")
    out = tmp_path / "out.csv"
    assert main(["simulate", str(jobs), "--cluster", str(conf), "--resv-file", str(resv),
                 "--no-progress", "--jobs-out", str(out)]) == 0
    capsys.readouterr()
    assert main(["check", str(out), "--trace", str(jobs), "--cluster", str(conf),
                 "--resv-file", str(resv)]) == 0
    assert "reserved_node" in capsys.readouterr().out
    plain = tmp_path / "plain.csv"
    assert main(["simulate", str(jobs), "--cluster", str(conf), "--reservations", "nodes",
                 "--no-progress", "--jobs-out", str(plain)]) == 0
    capsys.readouterr()
    assert main(["check", str(plain), "--trace", str(jobs), "--cluster", str(conf),
                 "--resv-file", str(resv)]) != 0
    assert "maint" in capsys.readouterr().out


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@SETTINGS
@given(case=node_cases(), data=st.data())
def test_the_scheduler_holds_reservations_as_the_simulator(case, data, policy):
    cluster, available, jobs = case
    jobs = jobs.take(np.arange(len(jobs)))      # every job asks for a CPU, as Slurm's do
    jobs.cpus_per_node = np.maximum(jobs.cpus_per_node, 1).astype(jobs.cpus_per_node.dtype)
    blocked = windows_of(data.draw, cluster.num_nodes)
    resv = Reservations(tuple(Reservation(f"r{k}", s, e, (x,), flags=("OVERLAP",))
                              for k, (s, e, x) in enumerate(blocked)), cluster.num_nodes)
    run = run_nodes(cluster, jobs, policy, 1, available, blocked=resv.windows(0))
    got = drive_all(Scheduler(cluster, policy, reservations="nodes", available=available,
                              advance_reservations=resv), jobs,
                    instants={e for _, e, _ in blocked})
    assert got == expected_of(run.start, run.alloc_offsets, run.alloc_nodes,
                              run.alloc_gpu_mask, jobs)


def test_the_scheduler_takes_reservations_on_the_node_engine_only():
    resv = Reservations((Reservation("maint", 50, 80, (0,), flags=("MAINT",)),), 4)
    for model in ("counts", "slurm"):
        with pytest.raises(UnsupportedError, match="node engine"):
            Scheduler(_cluster(), "conservative", reservations=model,
                      advance_reservations=resv)
    with pytest.raises(InputError, match="4 nodes"):
        Scheduler(Cluster.homogeneous(3), advance_reservations=resv)
    s = Scheduler(_cluster(), "easy", advance_reservations=resv)
    assert s.engine == "nodes"
    with pytest.raises(UnsupportedError, match="no CPU"):
        s.submit(JobRequest(job_id=9, submit_time=0, time_limit=10, runtime=5, num_nodes=1,
                            cpus_per_node=0))
    s.submit(_jobs().take(np.array([0, 1])))
    d = s.schedule(0)              # job 1 (4 nodes, 100 s) would overlap the window on g1
    assert d.start_time.tolist() == [80, 0] and d.starts.tolist() == [2]


def test_a_pass_holds_the_windows_its_plans_can_reach():
    daily = Reservations((Reservation("d", 100, 200, (0,), flags=("DAILY",)),), 1)
    # a plan ending by 86,400 s is pushed 100 s by the first window: it ends as the second
    # opens; a second later, the second window is held too
    assert daily.windows_for_pass(0, 86_400)[0].tolist() == [100]
    assert daily.windows_for_pass(0, 86_401)[0].tolist() == [100, 86_500]
    assert daily.windows_for_pass(300, 10)[0].tolist() == []       # the first one is over
    assert daily.windows_for_pass(300, 86_300)[0].tolist() == [86_500]


@SETTINGS
@given(data=st.data())
def test_windows_are_every_occurrence_on_every_node_by_start(data):
    items = tuple(Reservation(f"r{k}", s, s + data.draw(st.integers(1, 5000)),
                              tuple(data.draw(st.lists(st.integers(0, 9), min_size=1,
                                                       max_size=3, unique=True))),
                              flags=data.draw(st.sampled_from([(), ("DAILY",), ("WEEKLY",)])))
                  for k, s in enumerate(data.draw(st.lists(st.integers(0, 300_000),
                                                           max_size=4))))
    resv = Reservations(items, 10)
    for horizon in data.draw(st.lists(st.integers(0, 2_000_000), min_size=1, max_size=3)):
        expect = []          # the plain enumeration: each window, then each repeat
        for r in items:
            s = r.start
            while True:
                expect += [(s, s + r.end - r.start, x) for x in r.nodes]
                s += r.period
                if not r.period or s >= horizon:
                    break
        got = list(zip(*(a.tolist() for a in resv.windows(horizon))))
        assert got == sorted(expect)
