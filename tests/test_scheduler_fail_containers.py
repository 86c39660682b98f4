"""Node failures with requeue and container images in the embeddable Scheduler: driven
at the simulator's instants through a drawn node-event stream, it starts, pulls, kills,
shrinks and requeues what ``simulate(..., events=..., lifecycle=..., containers=...)``
does, attempt for attempt (start, end, nodes, state, the work a checkpoint saved): an
attempt's work and checkpoints start after its pull, a failed node keeps its images;
a hand-checked example."""
import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fastsched import Cluster, Containers, JobTable, NodeEvents, Scheduler, simulate
from fastsched.model.images import ImagePull
from fastsched.model.lifecycle import Lifecycle, saved_progress
from fastsched.tools.testing import containers
from scheddrive import drive, simulated
from test_scheduler_requeue import _check, failure_cases, spare_node_cases


def _resized(t):
    return t["resized"] if "resized" in t else np.zeros(len(t["row"]), dtype=bool)


def _pulls(r):
    """``r``'s pulls as :func:`scheddrive.drive` lists them, per attempt that started (a
    shape a shrink ended is no start)."""
    t, ids = r.attempts, r.workload.job_id
    out, seen = [], {}
    started = np.flatnonzero((t["start"] >= 0) & ~_resized(t)).tolist()
    for k in sorted(started, key=lambda k: (int(t["row"][k]), int(t["attempt"][k]))):
        j = int(ids[t["row"][k]])
        out.append((j, seen.get(j, 0), int(t["pull"][k])))
        seen[j] = seen.get(j, 0) + 1
    return sorted(out)


def _saved(r, lc):
    """(job id, attempt, end, saved) of each attempt a failure killed in ``r``, of the
    jobs never shrunk: the checkpoints of its work after its pull (engine/requeue.py;
    a shrunk one's node-seconds show in its next attempt's end)."""
    t, ids = r.attempts, r.workload.job_id
    shrunk = set(t["row"][_resized(t)].tolist())
    killed = t["killed"] & ~_resized(t) & (t["start"] >= 0)
    return sorted((int(ids[t["row"][k]]), int(t["attempt"][k]), int(t["end"][k]),
                   int(saved_progress(max(int(t["end"][k] - t["start"][k] - t["pull"][k]), 0),
                                      lc.checkpoint_interval[t["row"][k]])))
                  for k in np.flatnonzero(killed) if int(t["row"][k]) not in shrunk)


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_scheduler_fails_nodes_with_containers_as_the_simulator(policy, data):
    """Down, up, drain and resume events; requeue on and off, checkpoints, ``--no-kill``
    jobs (every job, sometimes: shrinks are frequent); pulls of up to 12 s, so a
    failure often lands in one; fcfs with spare nodes."""
    # fcfs: with spare nodes, no job waits for down nodes (test_scheduler_requeue._check)
    cluster, jobs, rows, lc = data.draw(spare_node_cases(policy) if policy == "fcfs" else
                                        failure_cases(policy, shrink=data.draw(st.booleans())))
    c = data.draw(containers(len(jobs), max_cache=2))
    s = Scheduler(cluster, policy, jobs=jobs, reservations="nodes", lifecycle=lc,
                  containers=c)
    driven = drive(s, jobs, lc, rows)
    r = simulate(cluster, jobs, policy, reservations="nodes", lifecycle=lc, containers=c,
                 events=NodeEvents.from_rows(rows, cluster.num_nodes))
    _check(policy, driven.attempts, driven.held, r, s, jobs)
    a = s.attempts
    shrunk = set(a.job_id[a.state == "RESIZING"].tolist())
    a = a[(a.state == "NODE_FAIL") & ~a.job_id.isin(shrunk)]
    assert sorted(zip(a.job_id.tolist(), a.attempt.tolist(), a.end_time.tolist(),
                      a.saved.tolist())) == _saved(r, lc)
    assert driven.pulls == _pulls(r)
    assert s.start_costs.images.node_pulls == r.summary["images"]["images_pulled"]
    t = r.attempts
    in_pull = t["killed"] & (t["start"] >= 0) & (t["end"] < t["start"] + t["pull"])
    event(f"killed in its pull: {bool(in_pull.any())}, a kill after a pull saved work: "
          f"{bool((a.saved > 0).any() and (t['pull'] > 0).any())}, "
          f"shrunk: {bool(len(shrunk))}")


def _case():
    """Two nodes; job 1 (image a: a 20 s pull, runs 100 s, 1 node) and job 2 (image b:
    a 20 s pull, runs 40 s, 1 node) at 0; checkpoints every 10 s, requeued after 5 s,
    one image a node; n2 fails at 15 and is back at 16, n1 fails at 55 and is back at
    58."""
    cluster = Cluster(["n1", "n2"], [4, 4], [0, 0], [0, 0])
    jobs = JobTable.from_arrays(job_id=[1, 2], submit_time=0, time_limit=300,
                                runtime=[100, 40], num_nodes=1, cpus_per_node=4)
    c = Containers.of(["a", "b"], ImagePull(default=20, capacity=1))
    lc = Lifecycle.of(2, delay=5, checkpoint_interval=10)
    rows = [(15, "down", [1]), (16, "up", [1]), (55, "down", [0]), (58, "up", [0])]
    return cluster, jobs, c, lc, rows


def test_a_kill_keeps_the_checkpoints_after_the_pull_and_the_failed_node_its_image():
    """Job 1 pulls a on n1 (0-20) and works from 20; killed at 55 it worked 35 s: its
    checkpoints (every 10 s of work: at 30, 40, 50) keep 30 s, 70 s left (counted from
    its start, without the pull, it would keep 50). Job 2, killed at 15 in its pull on
    n2, keeps nothing: 40 s left. Requeued, job 2 restarts at 20 on n2, which kept b
    through its failure: no pull, it ends at 60; job 1 restarts at 60 on n1, which kept
    a: no pull, it ends at 60 + 70 = 130."""
    cluster, jobs, c, lc, rows = _case()
    s = Scheduler(cluster, "easy", jobs=jobs, reservations="nodes", lifecycle=lc,
                  containers=c)
    got = drive(s, jobs, lc, rows)
    r = simulate(cluster, jobs, "easy", reservations="nodes", lifecycle=lc, containers=c,
                 events=NodeEvents.from_rows(rows, cluster.num_nodes))
    a = s.attempts
    assert a.job_id.tolist() == [2, 1] and a.end_time.tolist() == [15, 55]
    assert a.saved.tolist() == [0, 30] and a.remaining.tolist() == [40, 70]
    assert a.begin_time.tolist() == [20, 60]
    want = [(1, 0, 55, [0], True), (1, 60, 130, [0], False),
            (2, 0, 15, [1], True), (2, 20, 60, [1], False)]
    assert got.attempts == simulated(r) == want
    assert got.pulls == _pulls(r) == [(1, 0, 20), (1, 1, 0), (2, 0, 20),
                                               (2, 1, 0)]
    assert _saved(r, lc) == [(1, 0, 55, 30), (2, 0, 15, 0)]
    assert r.verify().ok
