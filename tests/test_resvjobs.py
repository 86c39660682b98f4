"""Jobs running in an advance reservation (``--reservation``): the engine (on the
reservations' twin nodes, fastsched.sim.resvlayout) against the twin
(tests/naive_resv.py) on random reservations and members, the access rule, the checker,
the readers and the CLI."""
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import naive_nodes
from naive_resv import TAIL, Members
from fastsched import Cluster, InputError, JobTable, simulate, verify
from fastsched.engine import run_nodes
from fastsched.model.errors import UnsupportedError
from fastsched.model.reservations import Reservation, Reservations
from fastsched.model.resvjobs import JobReservations
from fastsched.sim.resvlayout import mapped_back, member_layout
from test_constraints import SETTINGS, constrained_cases, engine_inputs


def _reservations(draw, cluster, available, jobs, parts):
    """1-3 reservations on disjoint nodes, one window each, and each job's membership
    (-1: none; a job is made a member only where it can ever run)."""
    N = cluster.num_nodes
    group = draw(st.lists(st.integers(-1, 2), min_size=N, max_size=N))
    items = []
    for k in range(3):
        nodes = tuple(x for x in range(N) if group[x] == k)
        if nodes:
            s = draw(st.integers(0, 60))
            items.append(Reservation(f"r{k}", s, s + draw(st.integers(1, 60)), nodes))
    assume(items)
    ok = np.ones(N, bool) if available is None else np.asarray(available, bool)
    member = np.full(len(jobs), -1, dtype=np.int32)
    for i, j in enumerate(jobs.job_id.tolist()):
        k = draw(st.integers(-1, len(items) - 1))
        if k < 0:
            continue
        fits = [x for x in items[k].nodes if ok[x] and cluster.gpus[x] >= jobs.gpus_per_node[i]
                and cluster.cpus[x] >= jobs.cpus_per_node[i]
                and cluster.mem_mb[x] >= jobs.mem_per_node[i]]
        if any(sum(x in set(cluster.partitions[p].nodes.tolist()) for x in fits)
               >= jobs.num_nodes[i] for p in parts[j]):
            member[i] = k
    return JobReservations(tuple(items), N, member=member)


def engine_run(cluster, jobs, policy, depth, available, resv, pc, **kw):
    """The simulator's way: the layout, the node engine on it, the run mapped back."""
    horizon = int(jobs.submit_time.max()) + int(jobs.time_limit.max())
    layout = member_layout(cluster, resv, pc, resv.windows(horizon), horizon)
    avail = None if available is None else np.asarray(available)[layout.node_of]
    run = run_nodes(layout.cluster, jobs, policy, depth, avail, partitions=layout.partitions,
                    blocked=layout.blocked, **kw)
    return mapped_back(run, layout)


def twin_members(resv, jobs):
    return Members({int(jobs.job_id[i]): (set(resv.items[k].nodes),
                                          [(resv.items[k].start, resv.items[k].end)])
                    for i, k in enumerate(resv.member.tolist()) if k >= 0})


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("easy", 2),
                                          ("conservative", 1)])
@SETTINGS
@given(data=st.data())
def test_member_jobs_match_twin(data, policy, depth):
    cluster, available, jobs, parts, deps, groups, caps, rank = data.draw(constrained_cases())
    jobs = jobs.take(np.arange(len(jobs)))      # every job asks for a CPU, as Slurm's do
    jobs.cpus_per_node = np.maximum(jobs.cpus_per_node, 1).astype(jobs.cpus_per_node.dtype)
    resv = _reservations(data.draw, cluster, available, jobs, parts)
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    ids = [int(j) for j in jobs.job_id]
    key = None if rank is None else np.array([rank[j] for j in ids])
    run = engine_run(cluster, jobs, policy, depth, available, resv, pc, dependencies=dp,
                     limits=lg, rank=key)
    blocked = list(zip(*(a.tolist() for a in resv.windows(0))))
    out, _ = naive_nodes.simulate(
        cluster, naive_nodes.jobs_from_table(jobs), policy, depth, available, partitions=parts,
        deps=deps, groups=groups, caps=caps, rank=rank, blocked=blocked,
        members=twin_members(resv, jobs))
    out = {j: r for j, r in out.items() if r[0] < TAIL}    # the simulator drops these
    naive_nodes.assert_same_records(run, ids, out)
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


def test_unknown_reservation_or_list_is_refused():
    with pytest.raises(InputError, match="'nope' is invalid"):
        JobReservations.of(_MAINT, ["nope"], ["alice"], ["a"])
    with pytest.raises(UnsupportedError, match="list of reservations"):
        JobReservations.of(_MAINT, ["maint,other"], ["alice"], ["a"])
    with pytest.raises(InputError, match="4 jobs"):
        simulate(_cluster(), _jobs().take(np.arange(3)), "easy",
                 advance_reservations=_members())


def test_overlapping_reservations_with_members_are_refused():
    two = Reservations((Reservation("a", 0, 10, (0, 1)), Reservation("b", 20, 30, (1,))), 4)
    members = JobReservations.of(two, ["a", "", "", ""], None, None)
    with pytest.raises(UnsupportedError, match="shares a node"):
        simulate(_cluster(), _jobs(), "easy", advance_reservations=members)
