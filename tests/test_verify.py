"""Tests of fastsched.verify: hand-built schedules, one per violation kind, and
a mutation property (valid schedule passes; a job moved earlier is caught)."""
from __future__ import annotations

import heapq

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastsched.model.cluster import Cluster, Partition
from fastsched.model.errors import FastschedError, InputError, UnsupportedError
from fastsched.model.jobs import JobTable
from fastsched.model.schedule import Schedule
from fastsched.verify import ScheduleError, VerifyReport, Violation, verify
import fastsched as fs


def make(rows, starts, nodes, *, ends=None, cpus=1, gpus=0, partition=0):
    """rows: (job_id, submit, limit, runtime, num_nodes); ends default to the correct ones."""
    ids, sub, lim, rt, nn = (np.array(c, dtype=np.int64) for c in zip(*rows))
    jobs = JobTable.from_arrays(job_id=ids, submit_time=sub, time_limit=lim, runtime=rt,
                                num_nodes=nn, cpus_per_node=cpus, gpus_per_node=gpus,
                                partition=partition)
    starts = np.array(starts, dtype=np.int64)
    if ends is None:
        ends = np.where(starts >= 0, starts + np.minimum(rt, lim), -1)
    off = np.zeros(len(rows) + 1, dtype=np.int64)
    off[1:] = np.cumsum([len(x) for x in nodes])
    flat = np.array([x for ns in nodes for x in ns], dtype=np.int64)
    return jobs, Schedule(ids.copy(), starts, np.array(ends, dtype=np.int64), off, flat)


def kinds(report):
    return {v.kind for v in report.violations}


# P = 4. A (2 nodes) runs [0,100), B (1 node) [0,50). H1 needs all 4 nodes, so it
# waits for A; H2 (2 nodes, limit 50) would fit in [50,100). J (1 node, limit 100)
# is backfilled at 0: it ends by 100, so it does not delay H1 (EASY allows it),
# but it overlaps the hole [50,100) conservative reserves for H2.
EASY_ROWS = [(1, 0, 100, 100, 2),   # A
             (2, 0, 50, 50, 1),     # B
             (3, 0, 100, 100, 4),   # H1
             (4, 0, 50, 50, 2),     # H2
             (5, 0, 100, 100, 1)]   # J
EASY_STARTS = [0, 0, 100, 200, 0]
EASY_NODES = [[0, 1], [2], [0, 1, 2, 3], [0, 1], [3]]


def test_valid_easy_schedule_passes():
    cluster = Cluster.homogeneous(4)
    jobs, sched = make(EASY_ROWS, EASY_STARTS, EASY_NODES)
    for report in (verify(cluster, jobs, sched), verify(cluster, jobs, sched, policy="easy"),
                   verify(cluster, jobs, sched, policy="easy", reserve_depth=1)):
        assert report.ok, str(report)
        assert report.checked_jobs == 5
        assert str(report).startswith("ok: 5 jobs")
        report.raise_if_failed()   # does not raise
    assert "overcommit" in verify(cluster, jobs, sched).checks
    assert any("easy" in c for c in verify(cluster, jobs, sched, policy="easy").checks)


def test_conservative_forbids_what_easy_allows():
    cluster = Cluster.homogeneous(4)
    jobs, sched = make(EASY_ROWS, EASY_STARTS, EASY_NODES)
    assert verify(cluster, jobs, sched, policy="easy").ok
    # easy with two reservations also reserves H2's hole [50, 100)
    assert kinds(verify(cluster, jobs, sched, policy="easy", reserve_depth=2)) == {
        "reservation_delayed"}
    report = verify(cluster, jobs, sched, policy="conservative")
    assert not report.ok
    assert kinds(report) == {"reservation_delayed"}
    (v,) = report.violations
    assert (v.job_id, v.time) == (5, 0)
    assert "job 5" in v.message and "[4]" in v.message   # names the delayed job H2


def test_fcfs_order_broken():
    cluster = Cluster.homogeneous(4)
    jobs, sched = make(EASY_ROWS, EASY_STARTS, EASY_NODES)
    report = verify(cluster, jobs, sched, policy="fcfs")
    assert kinds(report) == {"fcfs_order"}
    assert [v.job_id for v in report.violations] == [5]
    # a pure FCFS order of the same jobs passes
    fcfs_starts = [0, 0, 100, 200, 200]
    fcfs_nodes = [[0, 1], [2], [0, 1, 2, 3], [0, 1], [2]]
    jobs, sched = make(EASY_ROWS, fcfs_starts, fcfs_nodes)
    assert verify(cluster, jobs, sched, policy="fcfs").ok


def test_backfill_that_delays_head_reservation():
    cluster = Cluster.homogeneous(4)
    rows = list(EASY_ROWS)
    rows[4] = (5, 0, 150, 150, 1)   # J now runs past 100, where H1 is reserved
    jobs, sched = make(rows, [0, 0, 150, 250, 0], EASY_NODES)
    assert verify(cluster, jobs, sched).ok          # resources are fine
    report = verify(cluster, jobs, sched, policy="easy")
    assert kinds(report) == {"reservation_delayed"}
    (v,) = report.violations
    assert v.job_id == 5 and v.time == 0 and "[3]" in v.message   # H1 delayed
    with pytest.raises(ScheduleError) as exc:
        report.raise_if_failed()
    assert isinstance(exc.value, FastschedError)
    assert "reservation_delayed" in str(exc.value) and exc.value.report is report
    assert str(report).startswith("1 violations")


def test_could_start():
    # P = 4; A holds 2 nodes for [0,100). H (2 nodes) is queued at 0 and could run
    # at once but waits until 50; J (1 node) starts at 10, while H is still waiting.
    cluster = Cluster.homogeneous(4)
    rows = [(1, 0, 100, 100, 2), (2, 0, 10, 10, 2), (3, 10, 10, 10, 1)]
    jobs, sched = make(rows, [0, 50, 10], [[0, 1], [2, 3], [2]])
    assert verify(cluster, jobs, sched).ok
    for policy in ("easy", "conservative"):
        report = verify(cluster, jobs, sched, policy=policy)
        could = [v for v in report.violations if v.kind == "could_start"]
        assert [(v.job_id, v.time) for v in could] == [(2, 10)]
        assert "job 3" in could[0].message


def test_overcommit():
    cluster = Cluster.homogeneous(2)
    rows = [(1, 0, 10, 10, 1), (2, 0, 10, 10, 1), (3, 0, 10, 10, 1), (4, 0, 5, 0, 1)]
    # 1 on node0 [0,10); 2 on node0 [10,20) (touching: fine); 4 zero-length on node0 at 5
    jobs, sched = make(rows, [0, 10, 0, 5], [[0], [0], [1], [0]])
    assert verify(cluster, jobs, sched).ok
    # 3 moved onto node0 at 5: overlaps job 1
    jobs, sched = make(rows, [0, 10, 5, 5], [[0], [0], [0], [0]])
    report = verify(cluster, jobs, sched)
    assert kinds(report) == {"overcommit"}
    v = [v for v in report.violations if v.job_id == 3]
    assert len(v) == 1 and v[0].time == 5
    assert "node001" in v[0].message and "1" in v[0].message and "3" in v[0].message
    # job 3 overlaps job 2 too: [5,15) vs [10,20) on node0
    assert {(v.job_id, v.time) for v in report.violations} == {(3, 5), (2, 10)}


def test_overcommit_cpus_gpus_mem():
    rows = [(1, 0, 10, 10, 1), (2, 0, 10, 10, 1)]
    jobs, sched = make(rows, [0, 0], [[0], [0]], cpus=2)
    assert verify(Cluster.homogeneous(1, cpus=4), jobs, sched).ok
    assert kinds(verify(Cluster.homogeneous(1, cpus=3), jobs, sched)) == {"overcommit"}
    jobs, sched = make(rows, [0, 0], [[0], [0]], gpus=2)
    assert verify(Cluster.homogeneous(1, cpus=2, gpus=4), jobs, sched).ok
    assert kinds(verify(Cluster.homogeneous(1, cpus=2, gpus=3), jobs, sched)) == {"overcommit"}
    jobs = JobTable.from_arrays(job_id=[1, 2], submit_time=0, time_limit=10, runtime=10,
                                num_nodes=1, mem_per_node=600)
    assert verify(Cluster.homogeneous(1, cpus=2, mem_mb=1200), jobs, sched).ok
    assert kinds(verify(Cluster.homogeneous(1, cpus=2, mem_mb=1000), jobs, sched)) == {
        "overcommit"}


def test_basic_time_checks():
    cluster = Cluster.homogeneous(4)
    rows = [(1, 10, 10, 5, 1), (2, 0, 10, 50, 1), (3, 0, 10, 10, 1)]
    jobs, sched = make(rows, [10, 0, 0], [[0], [1], [2]])
    assert verify(cluster, jobs, sched).ok     # job 2 is killed at its limit: ends at 10
    jobs, sched = make(rows, [5, 0, -1], [[0], [1], []], ends=[10, 50, -1])
    report = verify(cluster, jobs, sched)
    got = {(v.kind, v.job_id) for v in report.violations}
    assert got == {("early_start", 1), ("wrong_end", 2), ("not_started", 3)}
    assert not report.ok and "3 violations" in str(report)


def test_bad_allocation():
    cluster = Cluster.homogeneous(4)
    rows = [(1, 0, 10, 10, 2), (2, 0, 10, 10, 2), (3, 0, 10, 10, 1), (4, 0, 10, 10, 1),
            (5, 0, 10, 10, 1)]
    nodes = [[0], [1, 1], [7], [-1], [2]]
    jobs, sched = make(rows, [0, 0, 0, 0, -1], nodes, ends=[10, 10, 10, 10, -1])
    report = verify(cluster, jobs, sched)
    bad = {v.job_id: v.message for v in report.violations if v.kind == "bad_allocation"}
    assert set(bad) == {1, 2, 3, 4, 5}
    assert "needs 2" in bad[1]
    assert "duplicate" in bad[2] and "node002" in bad[2]
    assert "out of range" in bad[3] and "out of range" in bad[4]
    assert "never started" in bad[5]


def test_node_outside_partition():
    cluster = Cluster([f"n{i}" for i in range(4)], np.ones(4), np.zeros(4), np.zeros(4),
                      partitions=[Partition("a", np.array([0, 1])),
                                  Partition("b", np.array([2, 3]))])
    rows = [(1, 0, 10, 10, 2), (2, 0, 10, 10, 2)]
    jobs, sched = make(rows, [0, 0], [[0, 1], [2, 3]], partition=[0, 1])
    assert verify(cluster, jobs, sched).ok
    jobs, sched = make(rows, [0, 0], [[0, 1], [1, 3]], partition=[0, 1])
    report = verify(cluster, jobs, sched)
    bad = [v for v in report.violations if v.kind == "bad_allocation"]
    assert [v.job_id for v in bad] == [2] and "n1" in bad[0].message
    assert "'b'" in bad[0].message
    with pytest.raises(UnsupportedError):
        verify(cluster, jobs, sched, policy="easy")


def test_input_errors():
    cluster = Cluster.homogeneous(4)
    jobs, sched = make(EASY_ROWS, EASY_STARTS, EASY_NODES)
    sched.job_id = sched.job_id[::-1].copy()
    with pytest.raises(InputError, match="same order"):
        verify(cluster, jobs, sched)
    jobs, sched = make(EASY_ROWS, EASY_STARTS, EASY_NODES)
    with pytest.raises(InputError):
        verify(cluster, jobs, sched, policy="sjf")
    with pytest.raises(InputError):
        verify(cluster, jobs.take(np.arange(4)), sched)


def test_report_types():
    v = Violation("early_start", 1, 0, "job 1 early")
    report = VerifyReport([v], 1, ["early_start"])
    assert not report.ok and "early_start" in str(report)
    with pytest.raises(ScheduleError, match="job 1 early"):
        report.raise_if_failed()


# ---- mutation property ----------------------------------------------------------

def greedy_fcfs(P, submit, need, dur):
    """Tiny FCFS placement on P single-CPU nodes: starts and node lists."""
    n = len(submit)
    order = sorted(range(n), key=lambda i: (submit[i], i))
    free = list(range(P))
    busy = []                     # (end, i, nodes)
    starts, lists = [0] * n, [None] * n
    t = 0
    for i in order:
        t = max(t, submit[i])
        while True:
            while busy and busy[0][0] <= t:
                for x in heapq.heappop(busy)[2]:
                    heapq.heappush(free, x)
            if len(free) >= need[i]:
                break
            t = busy[0][0]
        ns = [heapq.heappop(free) for _ in range(need[i])]
        starts[i], lists[i] = t, ns
        if dur[i] > 0:
            heapq.heappush(busy, (t + dur[i], i, ns))
        else:
            for x in ns:
                heapq.heappush(free, x)
    return starts, lists


@st.composite
def workload(draw):
    P = draw(st.integers(1, 5))
    n = draw(st.integers(2, 12))
    submit = sorted(draw(st.lists(st.integers(1, 30), min_size=n, max_size=n)))
    need = draw(st.lists(st.integers(1, P), min_size=n, max_size=n))
    limit = draw(st.lists(st.integers(1, 20), min_size=n, max_size=n))
    runtime = [draw(st.integers(0, 25)) for _ in range(n)]
    pick = draw(st.integers(0, n - 1))
    back = draw(st.integers(1, 40))
    return P, submit, need, limit, runtime, pick, back


@settings(max_examples=90, deadline=None, suppress_health_check=list(HealthCheck))
@given(workload())
def test_mutation_caught(w):
    P, submit, need, limit, runtime, pick, back = w
    n = len(submit)
    dur = [min(r, lim) for r, lim in zip(runtime, limit)]
    starts, lists = greedy_fcfs(P, submit, need, dur)
    rows = [(i + 1, submit[i], limit[i], runtime[i], need[i]) for i in range(n)]
    cluster = Cluster.homogeneous(P)
    jobs, sched = make(rows, starts, lists)
    report = verify(cluster, jobs, sched, policy="fcfs")
    assert report.ok, str(report)
    # move one job earlier: onto the start of a job sharing one of its nodes and
    # still running then (an overlap), else before its own submit time
    i = pick
    others = [k for k in range(n) if k != i and dur[k] > 0 and starts[k] < starts[i]
              and set(lists[k]) & set(lists[i]) and dur[i] > 0]
    if others:
        k = max(others, key=lambda k: starts[k])
        new = starts[k]
        expect = "overcommit"
    else:
        new = max(0, submit[i] - back)   # submit >= 1, so new < submit
        expect = "early_start"
    starts[i] = new
    jobs, sched = make(rows, starts, lists)
    report = verify(cluster, jobs, sched)
    assert expect in kinds(report), (expect, str(report))
    if new < submit[i]:
        assert any(v.kind == "early_start" and v.job_id == i + 1 for v in report.violations)
    if expect == "overcommit":
        ids = {i + 1, k + 1}
        assert any(v.kind == "overcommit" and v.job_id in ids for v in report.violations)


# ---- agreement with the reference simulator (tests/naive.py) -------------------

naive = pytest.importorskip("naive")


def place(P, starts, ends, need):
    """Node lists for count-feasible (start, end) intervals on P single-CPU nodes."""
    n = len(starts)
    order = sorted(range(n), key=lambda i: (starts[i], ends[i] > starts[i]))
    free = list(range(P))
    busy, lists = [], [None] * n
    for i in order:
        while busy and busy[0][0] <= starts[i]:
            for x in heapq.heappop(busy)[2]:
                heapq.heappush(free, x)
        ns = [heapq.heappop(free) for _ in range(need[i])]
        lists[i] = ns
        if ends[i] > starts[i]:
            heapq.heappush(busy, (ends[i], i, ns))
        else:
            for x in ns:
                heapq.heappush(free, x)
    return lists


@settings(max_examples=48, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_reference_schedules_pass_their_policy(data):
    from fastsched.tools.testing import cluster_and_workload
    cluster, jobs = data.draw(cluster_and_workload(max_procs=6, max_jobs=15))
    policy, depth = data.draw(st.sampled_from([("fcfs", 1), ("easy", 1), ("easy", 2),
                                               ("conservative", 1)]))
    res = naive.simulate(naive.jobs_from_table(jobs), cluster.num_nodes, policy, depth)
    starts = [res[int(j)][0] for j in jobs.job_id]
    ends = [res[int(j)][1] for j in jobs.job_id]
    lists = place(cluster.num_nodes, starts, ends, [int(x) for x in jobs.num_nodes])
    off = np.zeros(len(jobs) + 1, dtype=np.int64)
    off[1:] = np.cumsum([len(x) for x in lists])
    sched = Schedule(jobs.job_id.copy(), np.array(starts, dtype=np.int64),
                     np.array(ends, dtype=np.int64), off,
                     np.array([x for ns in lists for x in ns], dtype=np.int64))
    report = verify(cluster, jobs, sched, policy=policy, reserve_depth=depth)
    assert report.ok, (policy, depth, str(report))


def test_schedule_from_frame():
    pytest.importorskip("fastsched.io.hostlist")
    pd = pytest.importorskip("pandas")
    from fastsched.verify import schedule_from_frame
    cluster = Cluster.homogeneous(12)
    df = pd.DataFrame({"job_id": [1, 2, 3], "start_time": [0, 5, None],
                       "end_time": [10, 15, None],
                       "nodes": ["node[001-004,010]", "node005", ""]})
    sched = schedule_from_frame(cluster, df)
    assert sched.nodes_of(0).tolist() == [0, 1, 2, 3, 9]
    assert sched.nodes_of(1).tolist() == [4] and sched.nodes_of(2).tolist() == []
    assert sched.start_time.tolist() == [0, 5, -1] and sched.end_time.tolist() == [10, 15, -1]
    jobs = JobTable.from_arrays(job_id=[1, 2, 3], submit_time=0, time_limit=10, runtime=10,
                                num_nodes=[5, 1, 1])
    assert {v.kind for v in verify(cluster, jobs, sched).violations} == {"not_started"}
    with pytest.raises(InputError, match="node099"):
        schedule_from_frame(cluster, df.assign(nodes=["node099", "", ""]))


# --------------------------------------------------------------------------- planning models

def test_a_node_engine_schedule_is_judged_by_the_nodes_model():
    """The node engine plans concrete-node reservations: on KTH-SP2 it starts some
    jobs later than the textbook (counts) conservative would, which the counts
    checks flag. verify judges it by the nodes model, which it passes."""
    import dataclasses
    trace = fs.read_swf(fs.bundled_trace("KTH-SP2"))
    jobs = trace.jobs.take(np.arange(5000, 7000))   # a stretch where the two models differ
    cluster = fs.Cluster.homogeneous(trace.procs)
    r = fs.simulate(cluster, jobs, "conservative", window=10**9)   # forces the node engine
    assert r.schedule.planning == "nodes"
    report = fs.verify(cluster, jobs, r.schedule, policy="conservative")
    assert report.ok and "conservative (nodes model)" in report.checks
    assert not report.not_checked and "conservative (nodes model)" in str(report)
    # the same starts judged as a counts-model schedule do break its rules
    as_counts = dataclasses.replace(r.schedule, planning="counts")
    assert fs.verify(cluster, jobs, as_counts, policy="conservative").kinds() & {
        "could_start", "reservation_delayed"}
    assert fs.verify(cluster, jobs, r.schedule, policy="conservative",
                     reservations="counts").kinds() & {"could_start", "reservation_delayed"}
    f = fs.simulate(cluster, jobs, "fcfs", window=10**9)
    assert fs.verify(cluster, jobs, f.schedule, policy="fcfs").checks[-1] == "fcfs (nodes model)"


def test_the_pool_engine_schedule_is_checked_by_the_counts_model():
    trace = fs.read_swf(fs.bundled_trace("KTH-SP2"))
    jobs = trace.jobs.take(np.arange(2000))
    cluster = fs.Cluster.homogeneous(trace.procs)
    r = fs.simulate(cluster, jobs, "conservative")
    assert r.schedule.planning == "counts"
    report = fs.verify(cluster, jobs, r.schedule, policy="conservative")
    assert report.ok and "conservative (counts model)" in report.checks
    assert not report.not_checked


# One node. With priorities the queue order is not submit order: a job queued ahead
# that was submitted after another started never waited for it.
PRIO_ROWS = [(1, 0, 10, 10, 1),    # low priority, alone at 0
             (2, 5, 10, 10, 1)]    # high priority, submitted at 5


def test_fcfs_with_priorities_judges_only_jobs_that_were_waiting():
    cluster = Cluster.homogeneous(1)
    jobs, sched = make(PRIO_ROWS, [0, 10], [[0], [0]])
    assert verify(cluster, jobs, sched, policy="fcfs", priority=[0.0, 1.0]).ok
    early = [(1, 0, 10, 10, 1), (2, 0, 10, 10, 1)]      # now job 2 waits from 0
    jobs, sched = make(early, [0, 10], [[0], [0]])
    report = verify(cluster, jobs, sched, policy="fcfs", priority=[0.0, 1.0])
    assert [(v.kind, v.job_id) for v in report.violations] == [("fcfs_order", 1)]


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6), st.booleans()),
                min_size=1, max_size=12))
def test_waiting_blockers_flag_what_the_submit_order_check_flags(rows):
    """In submit order every earlier-queued job was submitted by a later one's start,
    so the general check (any queue order) flags exactly the jobs the running-maximum
    check flags."""
    from fastsched.verify.counts_policy import fcfs_blockers, queue_order, waiting_blockers
    submit = np.array([r[0] for r in rows], dtype=np.int64)
    start = submit + np.array([r[1] for r in rows], dtype=np.int64)
    eligible = np.array([r[2] for r in rows])
    jobs = JobTable.from_arrays(job_id=np.arange(1, len(rows) + 1), submit_time=submit,
                                time_limit=np.ones(len(rows), np.int64),
                                runtime=np.ones(len(rows), np.int64),
                                num_nodes=np.ones(len(rows), np.int64))
    q = queue_order(jobs)
    general = waiting_blockers(start, submit, eligible, eligible, q)
    assert np.array_equal(general >= 0, fcfs_blockers(start, eligible, eligible, q) >= 0)
    for j in np.flatnonzero(general >= 0):
        b = general[j]
        assert submit[b] <= start[j] < start[b] and eligible[b]
