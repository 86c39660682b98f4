"""Preemption with ``--no-kill`` jobs and node ranges in the embeddable Scheduler: driven
at the simulator's instants through the cases of tests/test_preempt_elastic.py (wide
low-tier jobs shrunk by failures or started narrow, preempted by high-tier jobs, some of
a node range), it starts, shrinks, preempts, kills and requeues what
``simulate(events=..., lifecycle=..., preemption=...)`` does, attempt for attempt;
regrowth with preemption is refused as the simulator refuses it."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import event, given, reject, settings
from hypothesis import strategies as st

from fastsched import NodeEvents, Scheduler, simulate
from fastsched.model.errors import UnsupportedError
from fastsched.model.lifecycle import Lifecycle
from fastsched.model.preemption import CANCEL, Preemption
from scheddrive import drive_or_discard, simulated
from test_preempt import tiered, tiered_case
from test_preempt_elastic import SETTINGS, elastic_preempt_cases, regrowing


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@settings(SETTINGS, max_examples=15)
@given(data=st.data())
def test_scheduler_preempts_shrunk_and_narrow_jobs_as_the_simulator(policy, data):
    case, pre, lc, rows = data.draw(elastic_preempt_cases())
    cluster, jobs = case[0], case[2]
    s = Scheduler(cluster, policy, jobs=jobs, preemption=pre, lifecycle=lc)
    driven = drive_or_discard(s, jobs, lc, rows)
    if policy == "fcfs" and driven.held:
        # a job too few nodes are up for stops the simulator's fcfs walk but not the
        # Scheduler's (tests/test_scheduler_requeue.py): not a preemption matter
        event("discarded: fcfs with a job waiting for down nodes")
        reject()
    r = simulate(cluster, jobs, policy, preemption=pre, lifecycle=lc,
                 events=NodeEvents.from_rows(rows, cluster.num_nodes))
    assert driven.attempts == simulated(r)
    t = r.attempts
    resized = t.get("resized", np.zeros(len(t["row"]), dtype=bool))
    shrunk = {(int(a), int(b)) for a, b, z in zip(t["row"], t["attempt"], resized) if z}
    hit = any((int(t["row"][k]), int(t["attempt"][k])) in shrunk
              for k in np.flatnonzero(t["preempted"]))
    narrow = any(np.diff(t["alloc_offsets"])[k] < jobs.num_nodes[t["row"][k]]
                 for k in np.flatnonzero(t["preempted"]))
    event(f"shrunk victim: {hit}, narrow or shrunk victim: {narrow}")


def test_scheduler_refuses_regrow_with_preemption():
    cluster, pre, jobs, lc = regrowing()
    with pytest.raises(UnsupportedError, match="regrow.*preemption"):
        Scheduler(cluster, "easy", jobs=jobs, preemption=pre, lifecycle=lc)
    Scheduler(cluster, "easy", jobs=jobs, preemption=pre,
              lifecycle=Lifecycle.of(1, no_kill=True, nodes_min=1))


def test_a_shrunk_victim_requeued_keeps_its_node_seconds():
    """docs/lifecycle.md's example (job 1, 4 nodes, at least 2, ``--no-kill``, checkpoints
    hourly, shrinks to 3 at 3600; job 2, high tier, 4 nodes, at least 2, preempts it at
    10000 and starts on the 3 it freed) with one more failure at 20000: job 1's requeued
    attempt (29,700 s left at 4 nodes: 25,200 node-seconds kept by its checkpoint at
    7200 s of run) started narrow on 3 nodes at 14,800 and shrinks to 2, its shape's
    ``remaining`` counted from that work, as ``simulate`` ends it."""
    from fastsched.io.slurmconf import read_cluster
    from fastsched.io.workload import read_workload
    from fastsched.sim.preemption import site_preemption
    from test_preempt_elastic import EXAMPLE_CONF, EXAMPLE_JOBS
    import tempfile
    import pathlib
    with tempfile.TemporaryDirectory() as d:
        conf, path = pathlib.Path(d, "slurm.conf"), pathlib.Path(d, "jobs.csv")
        conf.write_text(EXAMPLE_CONF)
        path.write_text(EXAMPLE_JOBS)
        cluster = read_cluster(conf)
        w = read_workload(path, cluster)
    jobs, lc, pre = w.jobs, w.lifecycle(True, 121), site_preemption(cluster)
    rows = [(3600, "down", [3]), (20000, "down", [2])]
    s = Scheduler(cluster, "easy", jobs=jobs, preemption=pre, lifecycle=lc)
    driven = drive_or_discard(s, jobs, lc, rows)
    r = simulate(cluster, jobs, "easy", preemption=pre, lifecycle=lc,
                 events=NodeEvents.from_rows(rows, cluster.num_nodes))
    assert driven.attempts == simulated(r)
    last = s.attempts.iloc[-1]
    # 29,700 s x 4 nodes less 5,200 s x 3 done by 20,000: 103,200 node-seconds on 2
    assert (last.state, last.start_time, last.end_time, last.remaining) == \
        ("RESIZING", 14800, 20000, 51600)
    assert r.jobs.end_time.max() == 20000 + 51600



@pytest.mark.parametrize("no_kill", [[False, True, False, False, False], None])
def test_a_grace_victim_killed_by_a_failure_leaves_no_stale_hold_end(no_kill):
    """3 nodes of 2 CPUs; job 1 (low1, GraceTime 5, 1 node) on n0 and job 2 (low0, no
    GraceTime, 2 nodes; ``--no-kill`` as hypothesis found it, or not: it plays no part)
    on n1-n2 from 0; jobs 4 and 5 (2 nodes, 1 node, 1 CPU each) queued at 2; job 3
    (high, 1 node) at 5 preempts job 1, the 1-node victim first: its hold is cut to its
    grace end, 10. n0 fails at 6 and kills it, so the cut is undone before the kill
    gives the hold back; job 3 then preempts job 2 (CANCEL) and runs 6-7 on n1; job 1,
    requeued, runs from 7 on n1. n0 is back at 10: job 4 takes n0 and n2, and job 5 the
    lowest of the two with one CPU left, n0 (best fit, as the twin of
    tests/naive_nodes.py places it). The engine once kept the cut's end, 10, as a
    breakpoint of n0's profile after the kill: the pass at 10 then read n0 as wholly
    free and put job 5 on n2."""
    cluster, parts = tiered(3, 2, [0, 5])
    # (submit, limit, runtime, nodes, CPUs per node, partition: low0, low1, high)
    case = tiered_case(cluster, parts, [(0, 60, 40, 1, 2, 1), (0, 60, 40, 2, 2, 0),
                                        (5, 10, 1, 1, 2, 2), (2, 5, 1, 2, 1, 0),
                                        (2, 5, 1, 1, 1, 0)])
    jobs = case[2]
    pre = replace(Preemption.partition_prio(cluster, CANCEL), backfill=False)
    lc = Lifecycle.of(5, delay=1, no_kill=no_kill)
    rows = [(6, "down", [0]), (10, "up", [0])]
    expected = [(1, 0, 6, [0], True), (1, 7, 47, [1], False), (2, 0, 6, [1, 2], True),
                (3, 6, 7, [1], False), (4, 10, 11, [0, 2], False), (5, 10, 11, [0], False)]
    s = Scheduler(cluster, "fcfs", jobs=jobs, preemption=pre, lifecycle=lc)
    assert drive_or_discard(s, jobs, lc, rows).attempts == expected
    r = simulate(cluster, jobs, "fcfs", preemption=pre, lifecycle=lc,
                 events=NodeEvents.from_rows(rows, cluster.num_nodes))
    assert simulated(r) == expected
