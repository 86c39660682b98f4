"""Preemption with dependencies, limits and topology placement in the embeddable
Scheduler: driven at the simulator's instants, it preempts and starts what
``simulate(..., preemption=..., dependencies=..., limits=..., placement=...)`` does
(every attempt), which verify's attempt checks accept; no limit cap is exceeded."""
import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fastsched import Cluster, JobTable, Scheduler, simulate
from fastsched.model.cluster import Partition
from fastsched.model.constraints import (AFTER, AFTERANY, AFTERNOTOK, AFTEROK, CAPS,
                                         Dependencies, LimitGroups, Placement)
from fastsched.model.lifecycle import Lifecycle
from fastsched.model.preemption import REQUEUE, Preemption
from scheddrive import drive, drive_or_discard, simulated
from test_constraints import engine_inputs
from test_scheduler_preempt import preempt_cases
from test_scheduler_preemptplan import shared_preempt_cases


def _any_preempt_cases():
    """The shared-node preemption cases (preemption frequent), now and then
    :func:`preempt_cases` (partitions on some nodes)."""
    return st.one_of(shared_preempt_cases(), preempt_cases())


@st.composite
def constrained_preempt_cases(draw):
    """Preemption cases with dependencies (after, afterany, afterok, afternotok),
    limit groups (caps on running jobs, GPUs, CPUs, memory, submitted jobs) drawn as
    tests/test_constraints.py draws them, and in half the cases partition choices."""
    cluster, jobs, pre, lc = draw(_any_preempt_cases())
    ids = [int(j) for j in jobs.job_id]
    deps = {j: draw(st.lists(st.tuples(st.sampled_from([o for o in ids if o != j]),
                                       st.sampled_from([AFTER, AFTERANY, AFTEROK,
                                                        AFTERNOTOK])),
                             min_size=1, max_size=2))
            for j in ids if len(ids) > 1 and draw(st.integers(0, 2)) == 0}
    G = draw(st.integers(1, 3))
    caps = [tuple(draw(st.sampled_from([-1, 1, 2, 3])) if k in (0, 4) else
                  draw(st.sampled_from([-1, -1, 2, 4, 8, 16])) for k in range(len(CAPS)))
            for _ in range(G)]
    groups = {j: draw(st.lists(st.integers(0, G - 1), max_size=2, unique=True)) for j in ids}
    P = len(cluster.partitions)
    choices = draw(st.booleans()) and P > 1       # (half the cases: partition choices)
    parts = {j: [int(p)] + ([q for q in draw(st.lists(st.integers(0, P - 1), max_size=1))
                             if q != p] if choices else [])
             for j, p in zip(ids, jobs.partition)}
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    return cluster, jobs, pre, lc, dict({"dependencies": dp, "limits": lg},
                                        **({"partitions": pc} if choices else {}))


@st.composite
def placed_preempt_cases(draw):
    """Preemption cases with topology placement: leaf switches of two nodes,
    ``--segment``, ``--switches`` (with a wait) and GPU groups."""
    cluster, jobs, pre, lc = draw(_any_preempt_cases())
    n = len(jobs)
    leaf = np.arange(cluster.num_nodes) // 2
    ints = lambda lo, hi: draw(st.lists(st.integers(lo, hi), min_size=n,  # noqa: E731
                                        max_size=n))
    pl = Placement.topology(leaf.reshape(1, -1), n, max_leaves=ints(0, 2),
                            leaf_wait=ints(-1, 10), unit=ints(1, 2),
                            gpu_groups=draw(st.sampled_from([[0x1, 0x2],
                                                             [0x3, 0xC, 0x30, 0xC0]])))
    return cluster, jobs, pre, lc, {"placement": pl}


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@pytest.mark.parametrize("cases", [constrained_preempt_cases, placed_preempt_cases])
@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_scheduler_preempts_with_constraints_as_the_simulator(policy, cases, data):
    """Dependencies, limits, partition choices, placement: the same attempts as
    ``simulate``, which ``fastsched.verify``'s attempt checks accept (with the rules:
    preemptor, exempt time); no limit group's cap is exceeded at any attempt's start (those checks do not
    read limits)."""
    cluster, jobs, pre, lc, options = data.draw(cases())
    s = Scheduler(cluster, policy, jobs=jobs, preemption=pre, lifecycle=lc, **options)
    # (a bound of 10 instants per job: a ping-pong is discarded before it costs much)
    got = drive_or_discard(s, jobs, lc, bound=10 * len(jobs) + 20).attempts
    r = simulate(cluster, jobs, policy, preemption=pre, lifecycle=lc, **options)
    assert got == simulated(r)
    report = r.verify()
    # the attempt checks see no partition choices: a job run in another of its choices is
    # a bad_allocation there (tests/test_preempt.py); nothing else may be reported
    assert all("partitions" in options and v.kind == "bad_allocation"
               and "not in partition" in v.message for v in report.violations), report
    if "limits" in options:
        _within_caps(jobs, options["limits"], got)
    event(f"preempted attempts: {min(sum(a[4] for a in got), 3)}")


def _within_caps(jobs, limits, attempts):
    """At each attempt's start, the attempts running then (start <= t < end) use at most
    each cap of each of their groups (jobs, GPUs, CPUs, MB)."""
    row = {int(j): i for i, j in enumerate(jobs.job_id)}
    want = {j: (1, *(int(jobs.num_nodes[i]) * int(getattr(jobs, f)[i])
                     for f in ("gpus_per_node", "cpus_per_node", "mem_per_node")))
            for j, i in row.items()}
    for t in sorted({a[1] for a in attempts}):
        use = np.zeros((len(limits.caps), 4), dtype=np.int64)
        for j, start, end, _, _ in attempts:
            if start <= t < end:
                i = row[j]
                for g in limits.group[limits.offsets[i]:limits.offsets[i + 1]]:
                    use[g] += want[j]
        caps = limits.caps[:, :4]
        assert ((caps < 0) | (use <= caps)).all(), (t, use, caps)


def _three_nodes():
    """Nodes a, b (partition low, tier 1) and c (with a, b: partition high, tier 10), 4
    CPUs each; job 1 (low) runs on a and b from 0."""
    parts = [Partition("low", np.arange(2), priority_tier=1),
             Partition("high", np.arange(3), priority_tier=10)]
    return Cluster(["a", "b", "c"], [4] * 3, [0] * 3, [0] * 3, partitions=parts)


def _jobs(submit, partition, nodes):
    n = len(submit)
    return JobTable.from_arrays(job_id=np.arange(1, n + 1), submit_time=submit,
                                time_limit=[100] * n, runtime=[100] * n, num_nodes=nodes,
                                cpus_per_node=[4] * n, partition=partition)


def _same_as_simulate(cluster, jobs, pre, lc, **options):
    got = drive(Scheduler(cluster, "easy", jobs=jobs, preemption=pre, lifecycle=lc,
                          **options), jobs, lc).attempts
    assert got == simulated(simulate(cluster, jobs, "easy", preemption=pre, lifecycle=lc,
                                     **options))
    return got


def test_a_job_a_limit_holds_does_not_preempt():
    """Jobs 2 and 3 (high) share a group of at most one running job: job 2 runs on c,
    job 3 is held by the limit and preempts no one; it starts when job 2 ends at 110
    (job 1 ended at 100: on a)."""
    cluster = _three_nodes()
    jobs = _jobs([0, 10, 10], [0, 1, 1], [2, 1, 1])
    pre = Preemption.partition_prio(cluster, REQUEUE)
    lc = Lifecycle.of(3, delay=5)
    limits = LimitGroups(np.array([0, 0, 1, 2]), np.array([0, 0]),
                         np.array([[1, -1, -1, -1, -1]]), [tuple("g:" + c for c in CAPS)])
    s = Scheduler(cluster, "easy", jobs=jobs, preemption=pre, lifecycle=lc, limits=limits)
    s.submit(jobs.take(np.array([0])))
    s.apply(s.schedule(0))
    s.submit(jobs.take(np.array([1, 2])))
    d = s.schedule(10)
    assert list(d.starts) == [2] and len(d.preempt) == 0
    got = _same_as_simulate(cluster, jobs, pre, lc, limits=limits)
    assert not any(a[4] for a in got) and (3, 110, 210, [0], False) in got
    got = _same_as_simulate(cluster, jobs, pre, lc)          # unlimited: job 3 preempts
    assert (1, 0, 10, [0, 1], True) in got


def test_a_start_that_queues_a_dependent_is_followed_by_a_pass():
    """At 10 job 2 (high) starts on c and so releases job 3 (``after`` job 2, high,
    submitted before job 4): the pass that started job 2 preempts nothing; the next
    one, as the simulator's next pass, has job 3 preempt job 1 (requeued, its own
    dependent job 5 not released by its stop), and jobs 3 and 4 start on a and b."""
    cluster = _three_nodes()
    jobs = _jobs([0, 10, 10, 10, 0], [0, 1, 1, 1, 0], [2, 1, 1, 1, 1])
    jobs.job_id[:] = [1, 2, 3, 4, 5]
    deps = Dependencies(np.array([0, 0, 0, 1, 1, 2]), np.array([1, 0]),
                        np.array([AFTER, AFTEROK]))
    pre = Preemption.partition_prio(cluster, REQUEUE)
    lc = Lifecycle.of(5, delay=5)
    s = Scheduler(cluster, "easy", jobs=jobs, preemption=pre, lifecycle=lc,
                  dependencies=deps)
    s.submit(jobs.take(np.array([0, 4])))
    s.apply(s.schedule(0))
    s.submit(jobs.take(np.array([1, 2, 3])))
    d = s.schedule(10)
    assert list(d.starts) == [2] and len(d.preempt) == 0
    s.apply(d)
    d = s.schedule(10)
    assert d.preempt.job_id == 3 and d.preempt.victims.tolist() == [1]
    s.apply(d)
    assert [int(j) for j in s.pending.job_id] == [3, 4]      # job 5 waits for job 1
    d = s.schedule(10)
    assert sorted(d.starts) == [3, 4]
    _same_as_simulate(cluster, jobs, pre, lc, dependencies=deps)
