"""fastsched.verify's counts-model policy checks (verify/counts_policy.py) against their naive twin,
``naive.check_policy``: the same (kind, job_id) set of policy violations on
simulated schedules (checked under their own and under other policies) and on
mutated ones."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import fastsched
from fastsched.model.jobs import JobTable
from fastsched.model.schedule import Schedule
from fastsched.tools.testing import cluster_and_workload
from fastsched.verify import verify
from naive import POLICY_KINDS, check_policy, jobs_from_table

PROPS = settings(max_examples=120, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

#: (policy, reserve_depth) pairs, for simulating and for checking
SETUPS = [("fcfs", 1), ("easy", 1), ("easy", 2), ("easy", 3), ("conservative", 1)]
#: (simulated, checked) pairs where the checked policy forbids some of what the
#: simulated one does, so violation sets are often non-empty
CROSS = [(("easy", 1), ("fcfs", 1)), (("easy", 1), ("conservative", 1)),
         (("easy", 1), ("easy", 2)), (("easy", 2), ("easy", 3)),
         (("conservative", 1), ("fcfs", 1)), (("easy", 3), ("conservative", 1))]


def draw_workload(data):
    """cluster_and_workload(max_jobs=15); half the time with no zero-length jobs
    (runtime 0 -> 1), since the reservation checks skip every instant at which
    a zero-length job started and these are common in the raw workloads."""
    cluster, jobs = data.draw(cluster_and_workload(max_jobs=15))
    if data.draw(st.booleans(), label="no zero-length jobs"):
        cols = jobs.to_dict()
        cols["runtime"] = np.maximum(cols["runtime"], 1)
        jobs = JobTable(**cols)
    return cluster, jobs


def fast_set(cluster, jobs, sched, policy, depth):
    report = verify(cluster, jobs, sched, policy=policy, reserve_depth=depth)
    return {(v.kind, v.job_id) for v in report.violations if v.kind in POLICY_KINDS}, report


def twin_set(cluster, jobs, sched, policy, depth):
    times = {int(j): (int(s), int(e))
             for j, s, e in zip(sched.job_id, sched.start_time, sched.end_time)}
    return set(check_policy(jobs_from_table(jobs), times, cluster.num_nodes, policy, depth))


def zero_instant_jobs(sched):
    """Ids of started jobs that started at an instant where a zero-length job started."""
    start, end = np.asarray(sched.start_time), np.asarray(sched.end_time)
    zero_t = set(start[(start >= 0) & (end <= start)].tolist())
    return {int(j) for j, s in zip(sched.job_id, start) if s >= 0 and int(s) in zero_t}


def overcommitting_start(jobs, sched, procs):
    """Is some judged job j (started, not early, not at a zero-length instant)
    started where the plan's running jobs (those the docstring lists, held
    until start + limit) and j need more than ``procs`` nodes? Then the schedule
    overcommits at start(j) and verify does not judge j's plan."""
    start, end = np.asarray(sched.start_time), np.asarray(sched.end_time)
    need, limit = np.asarray(jobs.num_nodes), np.asarray(jobs.time_limit)
    key = list(zip(jobs.submit_time.tolist(), jobs.job_id.tolist()))
    zero_t = set(start[(start >= 0) & (end <= start)].tolist())
    for j in range(len(start)):
        t = start[j]
        if t < 0 or t < jobs.submit_time[j] or t in zero_t:
            continue
        busy = sum(int(need[i]) for i in range(len(start))
                   if start[i] >= 0 and start[i] + limit[i] > t
                   and (start[i] < t < end[i]
                        or (start[i] == t and key[i] < key[j] and end[i] > t)))
        if busy + need[j] > procs:
            return True
    return False


def compare(cluster, jobs, sched, policy, depth, *, subset_if_overcommit=False):
    fast, report = fast_set(cluster, jobs, sched, policy, depth)
    twin = twin_set(cluster, jobs, sched, policy, depth)
    if policy == "fcfs" and FCFS_ZERO_INSTANT_BUG:
        # verify's known bug (test_fcfs_order_at_zero_length_instant): it skips
        # fcfs_order at such instants; compare everything else.
        skip = zero_instant_jobs(sched)
        fast = {x for x in fast if x[1] not in skip}
        twin = {x for x in twin if x[1] not in skip}
    if subset_if_overcommit and overcommitting_start(jobs, sched, cluster.num_nodes):
        # verify skips judging j (and the reservations of that plan: could_start)
        # where the running jobs and j alone need more than P nodes; it reports
        # the overcommit instead (its docstring says so); the twin judges such
        # plans anyway, so here verify may report less, never more.
        event("overcommit at a judged start: subset only")
        assert fast <= twin, (policy, depth, sorted(fast - twin), str(report))
        return fast
    assert fast == twin, (policy, depth, sorted(fast - twin), sorted(twin - fast), str(report))
    for kind in sorted({k for k, _ in fast}):
        event(f"found {kind}")
    return fast


# Once a bug: verify exempted zero-length instants from fcfs_order too. Fixed;
# the flag stays so the comparison above reads plainly.
FCFS_ZERO_INSTANT_BUG = False


def test_fcfs_order_at_zero_length_instant():
    # P = 1; job 2 (zero length) is queued after job 1 but starts at 0 while
    # job 1 waits until 5: out of FCFS order.
    cluster = fastsched.Cluster.homogeneous(1)
    jobs = fastsched.JobTable.from_arrays(job_id=[1, 2], submit_time=[0, 0],
                                          time_limit=[10, 5], runtime=[10, 0], num_nodes=1)
    sched = Schedule(np.array([1, 2]), np.array([5, 0]), np.array([15, 0]),
                     np.array([0, 1, 2]), np.array([0, 0]))
    assert twin_set(cluster, jobs, sched, "fcfs", 1) == {("fcfs_order", 2)}
    assert fast_set(cluster, jobs, sched, "fcfs", 1)[0] == {("fcfs_order", 2)}


@PROPS
@given(st.data())
def test_simulated_schedules(data):
    cluster, jobs = draw_workload(data)
    sim, chk = data.draw(st.one_of(st.sampled_from(CROSS),
                                   st.tuples(st.sampled_from(SETUPS), st.sampled_from(SETUPS))),
                         label="simulated, checked")
    sched = fastsched.simulate(cluster, jobs, sim[0], reserve_depth=sim[1]).schedule
    found = compare(cluster, jobs, sched, *chk)
    if chk == sim:
        assert found == set()


def mutate(sched, i, kind, delta):
    start = np.array(sched.start_time, dtype=np.int64)
    end = np.array(sched.end_time, dtype=np.int64)
    lists = [np.asarray(sched.nodes_of(k)) for k in range(len(start))]
    if kind == "later":
        start[i] += delta
        end[i] += delta
    elif kind == "earlier":                    # may start before its submit
        d = min(delta, int(start[i]))
        start[i] -= d
        end[i] -= d
    elif kind == "unstart":
        start[i] = end[i] = -1
        lists[i] = np.zeros(0, dtype=np.int64)
    else:                                      # "stretch": a wrong end, still judged
        end[i] += delta
    off = np.zeros(len(start) + 1, dtype=np.int64)
    off[1:] = np.cumsum([len(x) for x in lists])
    nodes = np.concatenate(lists).astype(np.int64) if lists else np.zeros(0, np.int64)
    return Schedule(np.array(sched.job_id), start, end, off, nodes)


@PROPS
@given(st.data())
def test_mutated_schedules(data):
    cluster, jobs = draw_workload(data)
    sim = data.draw(st.sampled_from(SETUPS), label="simulated")
    chk = data.draw(st.sampled_from(SETUPS), label="checked")
    sched = fastsched.simulate(cluster, jobs, sim[0], reserve_depth=sim[1]).schedule
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        i = data.draw(st.integers(0, len(jobs) - 1), label="job")
        kind = data.draw(st.sampled_from(["later", "later", "earlier", "unstart", "stretch"]),
                         label="kind")
        delta = data.draw(st.integers(1, 60), label="delta")
        sched = mutate(sched, i, kind, delta)
    compare(cluster, jobs, sched, *chk, subset_if_overcommit=True)
