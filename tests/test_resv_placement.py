"""Jobs running in an advance reservation with topology placement (leaf switches and
spines, ``--switches``, ``--segment``) and GPU groups: on the twin layout
(fastsched.sim.resvlayout) a twin sits in its node's groups at every level, so a
member's leaves are its physical nodes'. The engine on the layout against the twin
(tests/naive_nodes.py, on the physical nodes); a hand-worked run; the checker."""
import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import naive_nodes
from naive_resv import TAIL
from fastsched import Cluster, JobTable, Scheduler, simulate, verify
from fastsched.model.constraints import Placement
from fastsched.model.reservations import Reservation, Reservations
from fastsched.model.resvjobs import JobReservations
from fastsched.sim.resvlayout import layout_placement
from test_constraints import SETTINGS, constrained_cases, engine_inputs, placements
from test_resvjobs import _reservations, engine_run, twin_members
from test_scheduler_resv import _driven, _started


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("conservative", 1)])
@SETTINGS
@given(data=st.data())
def test_member_jobs_with_placement_match_twin(data, policy, depth):
    cluster, available, jobs, parts, deps, groups, caps, rank = data.draw(constrained_cases())
    jobs = jobs.take(np.arange(len(jobs)))      # every job asks for a CPU, as Slurm's do
    jobs.cpus_per_node = np.maximum(jobs.cpus_per_node, 1).astype(jobs.cpus_per_node.dtype)
    resv = _reservations(data.draw, cluster, available, jobs, parts)
    pl = data.draw(placements(cluster, jobs))
    ids = [int(j) for j in jobs.job_id]
    engine_pl = Placement(np.array(pl["levels"]), [pl["unit"][j] for j in ids],
                          [pl["max_leaves"][j] for j in ids], [pl["leaf_wait"][j] for j in ids],
                          pl["gpu_groups"])
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    run = engine_run(cluster, jobs, policy, depth, available, resv, pc, dependencies=dp,
                     limits=lg,
                     rank=None if rank is None else np.array([rank[j] for j in ids]),
                     on_layout=lambda layout: {"placement": layout_placement(engine_pl, layout)})
    out, _ = naive_nodes.simulate(
        cluster, naive_nodes.jobs_from_table(jobs), policy, depth, available, partitions=parts,
        deps=deps, groups=groups, caps=caps, rank=rank,
        blocked=list(zip(*(a.tolist() for a in resv.windows(0)))),
        members=twin_members(resv, jobs), placement=pl)
    out = {j: r for j, r in out.items() if r[0] < TAIL}    # the simulator drops these
    naive_nodes.assert_same_records(run, ids, out)
    for i, j in enumerate(ids):
        if j in out:
            masks = run.alloc_gpu_mask[run.alloc_offsets[i]:run.alloc_offsets[i + 1]]
            assert [int(m) for m in masks] == [sum(1 << k for k in g) for g in out[j][3]], j
    member = (resv.member >= 0) & (run.start >= 0)
    event(f"members started: {min(int(member.sum()), 2)}, multi-node: "
          f"{min(int((member & (jobs.num_nodes > 1)).sum()), 2)}")


def _hand():
    """g1-g4 on leaf switches {g1, g3} and {g2, g4}; maint [0, 100) on g1, g2, g3 for
    alice. Job 1 (alice, 2 nodes, --switches=1) cannot take g1, g2 (lowest, two leaves):
    it runs on g1, g3, one leaf; without topology it takes g1, g2."""
    cluster = Cluster([f"g{i}" for i in range(1, 5)], cpus=[8] * 4, gpus=[0] * 4,
                      mem_mb=[0] * 4)
    jobs = JobTable.from_arrays(job_id=[1], submit_time=[0], time_limit=[50], runtime=[50],
                                num_nodes=2, cpus_per_node=1, user=0)
    resv = JobReservations.of(
        Reservations((Reservation("maint", 0, 100, (0, 1, 2), users=("alice",)),), 4),
        ["maint"], ["alice"], ["a"])
    pl = Placement(np.array([[0, 1, 0, 1]]), [1], [1], [-1])
    return cluster, jobs, resv, pl


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
def test_a_member_keeps_to_one_leaf_switch(policy):
    cluster, jobs, resv, pl = _hand()
    r = simulate(cluster, jobs, policy, advance_reservations=resv, placement=pl)
    assert (r.schedule.start_time.tolist(), r.schedule.nodes_of(0).tolist()) == ([0], [0, 2])
    assert r.summary["placement"]["mean_groups_spanned"] == pytest.approx(1.0)
    assert verify(r.cluster, r.workload, r.schedule, advance_reservations=resv).ok
    plain = simulate(cluster, jobs, policy, advance_reservations=resv)
    assert plain.schedule.nodes_of(0).tolist() == [0, 1]


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@settings(SETTINGS, max_examples=25)
@given(data=st.data())
def test_the_scheduler_places_member_jobs_as_the_simulator(data, policy):
    """The embeddable Scheduler with member jobs and placement, driven at the
    simulator's instants: the same starts on the same nodes as ``simulate``."""
    cluster, _, jobs, parts, deps, groups, caps, _ = data.draw(constrained_cases())
    jobs = jobs.take(np.arange(len(jobs)))
    jobs.cpus_per_node = np.maximum(jobs.cpus_per_node, 1).astype(jobs.cpus_per_node.dtype)
    resv = _reservations(data.draw, cluster, None, jobs, parts)
    pl = data.draw(placements(cluster, jobs))
    ids = [int(j) for j in jobs.job_id]
    engine_pl = Placement(np.array(pl["levels"]), [pl["unit"][j] for j in ids],
                          [pl["max_leaves"][j] for j in ids], [pl["leaf_wait"][j] for j in ids],
                          pl["gpu_groups"])
    pc, _, lg = engine_inputs(jobs, parts, deps, groups, caps)
    r = simulate(cluster, jobs, policy, partitions=pc, limits=lg, advance_reservations=resv,
                 placement=engine_pl)
    s = Scheduler(cluster, policy, jobs=jobs, partitions=pc, limits=lg,
                  advance_reservations=resv, placement=engine_pl)
    assert _driven(s, jobs, resv) == _started(r)
    member = (resv.member >= 0) & (r.schedule.start_time >= 0)
    event(f"members started: {min(int(member.sum()), 2)}")


@st.composite
def wide_members(draw):
    """4-6 identical nodes, one reservation r0 over [0, 200) on 2-4 of them, 2-8 jobs of
    1-3 nodes (each made a member or not, a member asking no more than r0's nodes)."""
    N = draw(st.integers(4, 6))
    cluster = Cluster.homogeneous(N, gpus=4, cpus=4, prefix="n")
    nodes = tuple(sorted(draw(st.sets(st.integers(0, N - 1), min_size=2, max_size=4))))
    n = draw(st.integers(2, 8))

    def ints(lo, hi):
        return np.array(draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n)))
    runtime = ints(1, 40)
    width = ints(1, 3)
    jobs = JobTable.from_arrays(job_id=np.arange(1, n + 1), submit_time=ints(0, 60),
                                runtime=runtime, time_limit=runtime + ints(0, 10),
                                num_nodes=width, gpus_per_node=ints(0, 4),
                                cpus_per_node=ints(1, 4), user=0)
    member = [draw(st.booleans()) and int(w) <= len(nodes) for w in width]
    resv = JobReservations.of(Reservations((Reservation("r0", 0, 200, nodes),), N),
                              ["r0" if m else "" for m in member])
    return cluster, jobs, resv


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@settings(SETTINGS, max_examples=25)
@given(data=st.data())
def test_multi_node_members_with_placement_match_twin(data, policy):
    """Members of 1-3 nodes (:func:`wide_members`) placed by leaf, switch limit,
    segment and GPU groups as the twin places them on the physical nodes."""
    cluster, jobs, resv = data.draw(wide_members())
    pl = data.draw(placements(cluster, jobs))
    ids = [int(j) for j in jobs.job_id]
    engine_pl = Placement(np.array(pl["levels"]), [pl["unit"][j] for j in ids],
                          [pl["max_leaves"][j] for j in ids], [pl["leaf_wait"][j] for j in ids],
                          pl["gpu_groups"])
    r = simulate(cluster, jobs, policy, advance_reservations=resv, placement=engine_pl)
    out, _ = naive_nodes.simulate(
        cluster, naive_nodes.jobs_from_table(jobs), policy, 1, None,
        blocked=list(zip(*(a.tolist() for a in resv.windows(0)))),
        members=twin_members(resv, jobs), placement=pl)
    assert _started(r) == {j: (o[0], sorted(o[2])) for j, o in out.items() if o[0] < TAIL}
    report = r.verify()         # (a member no window fits stays pending: not_started)
    assert {v.kind for v in report.violations} <= {"not_started"}, report
    wide = (resv.member >= 0) & (r.schedule.start_time >= 0) & (jobs.num_nodes > 1)
    event(f"multi-node members started: {min(int(wide.sum()), 2)}")
