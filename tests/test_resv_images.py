"""Jobs running in an advance reservation with container images: a member runs on its
node's twin (fastsched.sim.resvlayout), which shares the node's image cache (one disk):
the engine on the layout against the twin (tests/naive_nodes.py, whose caches are the
physical nodes'), a hand-worked run, the checker and the CLI."""
import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

import naive_nodes
from naive_resv import TAIL
from fastsched import Containers, ImagePull, JobTable, simulate, verify
from fastsched.cli import main
from fastsched.model.reservations import Reservation, Reservations
from fastsched.model.resvjobs import JobReservations
from fastsched.sim.images import engine_images, pull_workload
from fastsched.tools.testing import containers
from test_constraints import SETTINGS, constrained_cases, engine_inputs
from test_containers import _twin_images
from test_resvjobs import _reservations, engine_run, twin_members


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("conservative", 1)])
@SETTINGS
@given(data=st.data())
def test_member_jobs_with_images_match_twin(data, policy, depth):
    cluster, available, jobs, parts, deps, groups, caps, rank = data.draw(constrained_cases())
    jobs = jobs.take(np.arange(len(jobs)))      # every job asks for a CPU, as Slurm's do
    jobs.cpus_per_node = np.maximum(jobs.cpus_per_node, 1).astype(jobs.cpus_per_node.dtype)
    resv = _reservations(data.draw, cluster, available, jobs, parts)
    c = data.draw(containers(len(jobs)))
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    ids = [int(j) for j in jobs.job_id]
    run = engine_run(cluster, jobs, policy, depth, available, resv, pc, dependencies=dp,
                     limits=lg,
                     rank=None if rank is None else np.array([rank[j] for j in ids]),
                     on_layout=lambda layout: {"images": engine_images(c, layout.node_of)})
    twin = _twin_images(ids, c)
    out, _ = naive_nodes.simulate(
        cluster, naive_nodes.jobs_from_table(jobs), policy, depth, available, partitions=parts,
        deps=deps, groups=groups, caps=caps, rank=rank,
        blocked=list(zip(*(a.tolist() for a in resv.windows(0)))),
        members=twin_members(resv, jobs), images=twin)
    out = {j: r for j, r in out.items() if r[0] < TAIL}    # the simulator drops these
    naive_nodes.assert_same_records(run, ids, out)
    for i, j in enumerate(ids):
        if j in out:
            assert run.pull[i] == twin[3].get(j, 0), j
    member = resv.member >= 0
    event(f"members started: {min(int((member & (run.start >= 0)).sum()), 2)}, "
          f"member pulls: {min(int((member & (run.pull > 0)).sum()), 2)}")


def _one_node_case():
    """One node g1 under maint [50, 80) (alice's), pulls of 10 s, two images cached.
    Job 1 (bob, img) runs first on g1 and pulls; job 2 (alice's member, img) finds img
    on the twin; job 3 (member, other) pulls other there; job 4 (bob, other) waits for
    the window's end and finds other cached on g1."""
    from fastsched import Cluster
    cluster = Cluster(["g1"], cpus=[8], gpus=[0], mem_mb=[0])
    jobs = JobTable.from_arrays(job_id=[1, 2, 3, 4], submit_time=[0, 0, 0, 0],
                                time_limit=[40, 15, 15, 100], runtime=[20, 10, 5, 10],
                                num_nodes=1, cpus_per_node=8, user=0)   # (one at a time)
    resv = JobReservations.of(
        Reservations((Reservation("maint", 50, 80, (0,), users=("alice",)),), 1),
        ["", "maint", "maint", ""], ["bob", "alice", "alice", "bob"], ["a"] * 4)
    c = Containers(np.array(["img", "img", "other", "other"], dtype=object),
                   ImagePull(default=10, capacity=2))
    return cluster, jobs, resv, c


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
def test_a_twin_shares_its_nodes_image_cache(policy):
    cluster, jobs, resv, c = _one_node_case()
    r = simulate(cluster, jobs, policy, advance_reservations=resv, containers=c)
    rec = r.jobs.sort_values("job_id")
    assert rec[["start_time", "end_time", "pull_time"]].values.tolist() == [
        [0, 30, 10], [50, 60, 0], [60, 75, 10], [80, 90, 0]]
    assert r.summary["images"]["images_pulled"] == 2
    report = r.verify()         # (each run's pull inside it; the reservations' rules)
    assert report.ok and "outside_reservation" in report.checks, report


def test_the_checker_catches_a_member_pulled_past_its_window():
    """Job 3's run moved 10 s later (its pull pushing it past the window's end) fails."""
    import dataclasses
    cluster, jobs, resv, c = _one_node_case()
    r = simulate(cluster, jobs, "easy", advance_reservations=resv, containers=c)
    s = r.schedule
    late = dataclasses.replace(s, start_time=np.where(s.job_id == 3, 70, s.start_time),
                               end_time=np.where(s.job_id == 3, 85, s.end_time))
    bad = verify(r.cluster, pull_workload(r.workload, r.pull), late,
                 advance_reservations=resv)
    assert "outside_reservation" in {v.kind for v in bad.violations}


def test_cli_members_with_image_pulls_and_the_check(tmp_path, capsys):
    import pandas as pd
    conf = tmp_path / "slurm.conf"
    conf.write_text("NodeName=g1 CPUs=8\nPartitionName=p Nodes=g1 Default=YES\n")
    w = tmp_path / "w.csv"
    w.write_text("job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,"
                 "cpus_per_node,mem_per_node,partition,user,account,container_image,"
                 "reservation\n"
                 "1,0,40,20,1,0,8,0,p,bob,a,img,\n2,0,15,10,1,0,8,0,p,alice,a,img,maint\n"
                 "3,0,15,5,1,0,8,0,p,alice,a,other,maint\n4,0,100,10,1,0,8,0,p,bob,a,other,\n")
    resv = tmp_path / "resv.txt"
    resv.write_text("ReservationName=maint StartTime=50 EndTime=80 Nodes=g1 Users=alice\n")
    out = tmp_path / "out.csv"
    common = ["--cluster", str(conf), "--resv-file", str(resv)]
    assert main(["simulate", str(w), *common, "--image-pull", "default=10s,cache=2",
                 "--no-progress", "--jobs-out", str(out)]) == 0
    assert "container images: 2 start(s) pulled (2 node pulls" in capsys.readouterr().out
    rows = pd.read_csv(out).sort_values("job_id")
    assert rows[["start_time", "end_time", "pull_time"]].values.tolist() == [
        [0, 30, 10], [50, 60, 0], [60, 75, 10], [80, 90, 0]]
    assert main(["check", str(out), "--trace", str(w), *common]) == 0
