"""Jobs running in an advance reservation that are elastic: ``--no-kill`` jobs that
shrink when a node fails under them. On the twin layout (fastsched.sim.resvlayout) a
node and its twins go down together and are never busy at once, so a member's nodes
are distinct physical nodes: the engine on the layout, mapped back, against the twin
(tests/naive_nodes.py, on the physical nodes); a hand-worked run; the checks; what
stays refused (regrowth, node ranges)."""
import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import naive_nodes
from naive_resv import TAIL
from fastsched import Cluster, JobTable, NodeEvents, simulate
from fastsched.model.errors import UnsupportedError
from fastsched.model.lifecycle import Lifecycle
from fastsched.model.reservations import Reservation, Reservations
from fastsched.model.resvjobs import JobReservations
from fastsched.sim.resvlayout import layout_events
from constrained_twin import attempt_rows
from test_constraints import SETTINGS, engine_inputs
from test_elastic import _rows
from test_resv_events import FEW, _case
from test_resvjobs import engine_run, twin_members


def _elastic(data, jobs, lc, resv):
    """``lc`` with each member ``--no-kill`` and each other job drawn so or not (no node
    ranges: refused with members)."""
    n = len(jobs)
    kill = data.draw(st.lists(st.booleans(), min_size=n, max_size=n)) | (resv.member >= 0)
    return Lifecycle.of(n, requeue=lc.requeue, checkpoint_interval=lc.checkpoint_interval,
                        checkpoint_cost=lc.checkpoint_cost, delay=lc.delay,
                        no_kill=np.array(kill))


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("conservative", 1)])
@settings(SETTINGS, max_examples=40)
@given(data=st.data())
def test_elastic_member_jobs_match_twin(data, policy, depth):
    case, resv, rows, lc = _case(data)
    cluster, available, jobs, parts, deps, groups, caps, rank = case
    lc = _elastic(data, jobs, lc, resv)
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    ids = [int(j) for j in jobs.job_id]
    events = NodeEvents.from_rows(rows, cluster.num_nodes)
    run = engine_run(cluster, jobs, policy, depth, available, resv, pc, dependencies=dp,
                     limits=lg, lifecycle=lc,
                     rank=None if rank is None else np.array([rank[j] for j in ids]),
                     on_layout=lambda layout: {"events": layout_events(events, layout)})
    killed, resized = [], []
    out, _ = naive_nodes.simulate(
        cluster, naive_nodes.jobs_from_table(jobs), policy, depth, available, partitions=parts,
        deps=deps, groups=groups, caps=caps, rank=rank,
        blocked=list(zip(*(a.tolist() for a in resv.windows(0)))),
        members=twin_members(resv, jobs), events=rows,
        requeue={j: bool(lc.requeue[i]) for i, j in enumerate(ids)},
        checkpoint={j: int(lc.checkpoint_interval[i]) for i, j in enumerate(ids)},
        delay=lc.delay, attempts=killed, resized=resized,
        no_kill={j: bool(lc.no_kill[i]) for i, j in enumerate(ids)})
    out = {j: r for j, r in out.items() if r[0] < TAIL}    # the simulator drops these
    naive_nodes.assert_same_records(run, ids, out)
    assert attempt_rows(run, ids) == sorted(k[:5] for k in killed)
    assert (_rows(ids, run.resizes) if lc.elastic else []) == sorted(resized)
    shrunk = set([] if run.resizes is None else run.resizes.job.tolist())
    event(f"members shrunk: {min(sum(resv.member[j] >= 0 for j in shrunk), 2)}")


@FEW
@given(data=st.data())
def test_elastic_runs_with_members_pass_the_attempt_and_reservation_checks(data):
    case, resv, rows, lc = _case(data, own_partition=True)
    cluster, available, jobs, parts, deps, groups, caps, _ = case
    lc = _elastic(data, jobs, lc, resv)
    _, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    r = simulate(cluster, jobs, data.draw(st.sampled_from(["fcfs", "easy", "conservative"])),
                 dependencies=dp, limits=lg,
                 events=NodeEvents.from_rows(rows, cluster.num_nodes), lifecycle=lc,
                 reservations="nodes", advance_reservations=resv)
    report = r.verify()         # (attempts, shapes and the reservations' rules)
    assert report.ok, report
    assert "reserved_node" in report.checks


def _hand():
    """g1-g4; maint [50, 300) on g1, g2 for alice. Job 1 (bob, 2 nodes) runs [0, 40) on
    g1, g2. Job 2 (alice, 2 nodes, --no-kill, 100 s) starts at 50 on g1, g2 (their
    twins); g2 fails at 60: it shrinks onto g1, its 200 node-seconds less the 20 done
    take 180 s more, to 240. Job 3 (alice, 1 node, 20 s) finds g2 back at 70 (its twin
    with it) and starts there, to 90."""
    cluster = Cluster([f"g{i}" for i in range(1, 5)], cpus=[8] * 4, gpus=[4] * 4,
                      mem_mb=[0] * 4)
    jobs = JobTable.from_arrays(job_id=[1, 2, 3], submit_time=[0, 0, 0],
                                time_limit=[40, 200, 100], runtime=[40, 100, 20],
                                num_nodes=[2, 2, 1], gpus_per_node=4, cpus_per_node=1,
                                user=0)
    resv = JobReservations.of(
        Reservations((Reservation("maint", 50, 300, (0, 1), users=("alice",)),), 4),
        ["", "maint", "maint"], ["bob", "alice", "alice"], ["a"] * 3)
    lc = Lifecycle.of(3, no_kill=[False, True, False])
    ev = NodeEvents.from_rows([(60, "down", [1]), (70, "up", [1])], 4)
    return cluster, jobs, resv, lc, ev


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
def test_a_member_shrinks_on_its_failed_twin(policy):
    cluster, jobs, resv, lc, ev = _hand()
    r = simulate(cluster, jobs, policy, advance_reservations=resv, lifecycle=lc, events=ev)
    t = r.attempts
    got = sorted((int(t["row"][k]) + 1, int(t["start"][k]), int(t["end"][k]),
                  t["alloc_nodes"][t["alloc_offsets"][k]:t["alloc_offsets"][k + 1]].tolist())
                 for k in range(len(t["row"])))
    assert got == [(1, 0, 40, [0, 1]), (2, 50, 60, [0, 1]), (2, 60, 240, [0]),
                   (3, 70, 90, [1])]
    assert sorted(zip(t["start"].tolist(), t["resized"].tolist())) == [
        (0, False), (50, True), (60, False), (70, False)]
    report = r.verify()
    assert report.ok and {"outside_reservation", "bad_resize"} <= set(report.checks), report
    assert r.summary["lifecycle"]["attempts"] == 3


def test_regrowing_member_jobs_and_node_ranges_stay_refused():
    cluster, jobs, resv, _, ev = _hand()
    lc = Lifecycle.of(3, no_kill=[False, True, False], regrow=True)
    with pytest.raises(UnsupportedError, match="not modelled with regrow"):
        simulate(cluster, jobs, "easy", advance_reservations=resv, lifecycle=lc, events=ev)
    with pytest.raises(UnsupportedError, match="not modelled with node_ranges"):
        simulate(cluster, jobs, "easy", advance_reservations=resv, events=ev,
                 lifecycle=Lifecycle.of(3, nodes_min=[0, 0, 1]))
