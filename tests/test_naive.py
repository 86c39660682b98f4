"""The naive twin (tests/naive.py): hand-worked examples and properties."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastsched.model.jobs import JobTable
from fastsched.tools.testing import cluster_and_workload, swf_clusters, workloads
from naive import NaiveJob, jobs_from_table, simulate

PROPS = settings(max_examples=42, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow])


def J(job_id, submit, procs, limit, runtime=None):
    return NaiveJob(job_id, submit, procs, limit, limit if runtime is None else runtime)


def starts(result):
    return {job_id: start for job_id, (start, _) in sorted(result.items())}


# ---- hand-worked examples ----

# P=4. A holds 3 until 10; B (head, 2 procs) waits for 10; C (1 proc, 5 s) fits now.
BLOCKED = [J(1, 0, 3, 10), J(2, 0, 2, 5), J(3, 0, 1, 5)]


def test_fcfs_blocks_behind_head():
    # C fits at 0 but FCFS never skips the head: B and C both start at 10.
    assert simulate(BLOCKED, 4, "fcfs") == {1: (0, 10), 2: (10, 15), 3: (10, 15)}


def test_easy_backfills_short_job_before_shadow():
    # Shadow for B is 10 (A ends, 4 free, extra 2); C ends at 5 <= 10: backfilled.
    assert simulate(BLOCKED, 4, "easy") == {1: (0, 10), 2: (10, 15), 3: (0, 5)}
    assert simulate(BLOCKED, 4, "conservative") == {1: (0, 10), 2: (10, 15), 3: (0, 5)}


def test_easy_uses_extra_processors():
    # Shadow 10, extra 4 - 2 = 2: C (1 proc, 100 s) runs past the shadow on an
    # extra processor; B still starts at 10 with 3 free.
    jobs = [J(1, 0, 3, 10), J(2, 0, 2, 5), J(3, 0, 1, 100)]
    assert simulate(jobs, 4, "easy") == {1: (0, 10), 2: (10, 15), 3: (0, 100)}


def test_easy_refuses_job_that_would_delay_head():
    # B needs the whole machine: shadow 10, extra 0. C fits now but would run
    # past 10 on a processor B needs: refused, it runs after B.
    jobs = [J(1, 0, 3, 10), J(2, 0, 4, 5), J(3, 0, 1, 100)]
    expected = {1: (0, 10), 2: (10, 15), 3: (15, 115)}
    assert simulate(jobs, 4, "easy") == expected
    assert simulate(jobs, 4, "conservative") == expected


# P=4. A: 3 procs [0,10). B (2 procs) head: shadow 10, extra 2. C needs all 4.
# D (1 proc, 100 s) fits on EASY's extra processor but would delay C, whom
# only conservative (or EASY with 2 reservations) protects.
EASY_VS_CONS = [J(1, 0, 3, 10), J(2, 0, 2, 10), J(3, 0, 4, 10), J(4, 0, 1, 100)]


def test_easy_and_conservative_differ():
    # EASY: D backfills at 0; C must then wait for D (ends 100).
    assert starts(simulate(EASY_VS_CONS, 4, "easy")) == {1: 0, 2: 10, 3: 100, 4: 0}
    # Conservative: B reserved [10,20), C [20,30); D would overlap C, so D gets 30.
    assert starts(simulate(EASY_VS_CONS, 4, "conservative")) == {1: 0, 2: 10, 3: 20, 4: 30}
    # EASY with two reservations protects C too.
    assert starts(simulate(EASY_VS_CONS, 4, "easy", reserve_depth=2)) == {1: 0, 2: 10, 3: 20,
                                                                           4: 30}


def test_conservative_gives_later_job_a_slot_that_delays_nobody():
    # P=4. A: 2 procs [0,10). B: 4 procs, reserved [10,20). C: 2 procs, 10 s
    # fits before B's reservation (half-open: ends exactly at 10) -> starts at 0.
    # D: 2 procs, 11 s would overlap B -> after B, at 20.
    jobs = [J(1, 0, 2, 10), J(2, 0, 4, 10), J(3, 0, 2, 10), J(4, 1, 2, 11)]
    assert starts(simulate(jobs, 4, "conservative")) == {1: 0, 2: 10, 3: 0, 4: 20}


def test_zero_length_jobs_repass_at_same_timestamp():
    # Each zero-length job holds the machine for its pass, completes at 0, and
    # the next pass at 0 starts the next job.
    jobs = [J(1, 0, 2, 10, runtime=0), J(2, 0, 2, 10, runtime=0), J(3, 0, 2, 5)]
    for policy in ("fcfs", "easy", "conservative"):
        assert simulate(jobs, 2, policy) == {1: (0, 0), 2: (0, 0), 3: (0, 5)}, policy


def test_ends_before_submits_at_same_timestamp():
    jobs = [J(1, 0, 1, 5), J(2, 5, 1, 5)]
    assert simulate(jobs, 1, "fcfs") == {1: (0, 5), 2: (5, 10)}


def test_job_killed_at_limit_and_early_finish():
    # A asks 5 s but would run 100: killed at 5. C finishes at 3 though it asked 10.
    jobs = [J(1, 0, 1, 5, runtime=100), J(2, 0, 1, 3)]
    assert simulate(jobs, 1, "fcfs") == {1: (0, 5), 2: (5, 8)}
    jobs = [J(1, 0, 1, 10, runtime=3), J(2, 0, 1, 3)]
    assert simulate(jobs, 1, "easy") == {1: (0, 3), 2: (3, 6)}


def test_rejects_bad_input():
    with pytest.raises(ValueError):
        simulate([J(1, 0, 5, 1)], 4, "fcfs")
    with pytest.raises(ValueError):
        simulate([J(1, 0, 1, 1), J(1, 2, 1, 1)], 4, "fcfs")
    with pytest.raises(ValueError):
        simulate([J(1, 0, 1, 1)], 4, "sjf")


# ---- properties ----

def check_schedule(jobs, procs, result):
    assert set(result) == {job.job_id for job in jobs}          # every job finishes
    by_id = {job.job_id: job for job in jobs}
    for job_id, (start, end) in result.items():
        job = by_id[job_id]
        assert start >= job.submit
        assert end == start + min(job.runtime, job.limit)
    for t in {start for start, _ in result.values()}:           # usage peaks at starts
        used = sum(by_id[i].procs for i, (s, e) in result.items() if s <= t < e)
        assert used <= procs


@PROPS
@given(cluster_and_workload(), st.sampled_from(["fcfs", "easy", "conservative"]))
def test_valid_schedule(cw, policy):
    cluster, table = cw
    jobs = jobs_from_table(table)
    check_schedule(jobs, cluster.num_nodes, simulate(jobs, cluster.num_nodes, policy))


@PROPS
@given(cluster_and_workload())
def test_fcfs_starts_in_queue_order(cw):
    cluster, table = cw
    jobs = sorted(jobs_from_table(table), key=lambda j: (j.submit, j.job_id))
    result = simulate(jobs, cluster.num_nodes, "fcfs")
    starts_in_order = [result[j.job_id][0] for j in jobs]
    assert starts_in_order == sorted(starts_in_order)


@PROPS
@given(cluster_and_workload())
def test_easy_shadow_equals_profile(cw):
    cluster, table = cw
    jobs = jobs_from_table(table)
    assert (simulate(jobs, cluster.num_nodes, "easy")
            == simulate(jobs, cluster.num_nodes, "easy-profile", reserve_depth=1))


@settings(max_examples=42, deadline=None)
@given(cluster_and_workload(max_jobs=15), st.integers(2, 4))
def test_easy_depth_k_valid_and_unbounded_is_conservative(cw, k):
    cluster, table = cw
    jobs = jobs_from_table(table)
    check_schedule(jobs, cluster.num_nodes, simulate(jobs, cluster.num_nodes, "easy", k))
    assert (simulate(jobs, cluster.num_nodes, "easy", reserve_depth=len(jobs) + 1)
            == simulate(jobs, cluster.num_nodes, "conservative"))


@settings(max_examples=21, deadline=None)
@given(swf_clusters().flatmap(lambda p: st.tuples(st.just(p), workloads(p))))
def test_workloads_are_well_formed(pw):
    procs, table = pw
    assert isinstance(table, JobTable) and len(table) >= 1
    assert len(np.unique(table.job_id)) == len(table)
    assert (table.time_limit >= 1).all() and (table.runtime >= 0).all()
    assert ((table.num_nodes >= 1) & (table.num_nodes <= procs)).all()
    assert (np.diff(table.submit_time) >= 0).all() and (table.cpus_per_node == 1).all()
