"""The node engine's state kept between a Scheduler's passes (fastsched.engine.kept):
every pass gives exactly the pure pass's decisions (plan_nodes afresh over the same
state), through random submit / schedule / apply / complete / fail / drain / resume
sequences, with the run index kept (request types indexed at their first plan, at
their fifth or never, drawn per pass), and leaves the kept state as it found it.
apply and complete bring the kept state up to date in place: it is built once, and
again only when the nodes' availability changed."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastsched import InputError, JobRequest, JobTable, RunningJobs
import fastsched.engine.plan as plan
from fastsched.model.cluster import Cluster, Partition
from fastsched.model.policies import get_policy
from fastsched.sim.scheduler import Scheduler

FIELDS = ("job_id", "outcome", "start_time", "node_offsets", "nodes", "gpu_mask", "num_nodes",
          "partition", "held", "rows")


def pure(s: Scheduler, now: int, full: bool):
    s._keep_state = False
    try:
        return s.schedule(now, full=full)
    finally:
        s._keep_state = True


def assert_same(a, b):
    for f in FIELDS:
        x, y = getattr(a, f), getattr(b, f)
        assert x.shape == y.shape and (x == y).all(), f
    assert (a.now, a.version, a.engine) == (b.now, b.version, b.engine)


def free_now(f) -> tuple:
    """A kept free-now state as plain values: per node its free resources, GPU bits and
    idle bit, and each list of nodes by free GPUs as a set (its order is not read)."""
    lists = []
    for v in range(len(f.bhead)):
        x, members = f.bhead[v], set()
        while x >= 0:
            assert f.bval[x] == v and x not in members
            members.add(int(x))
            x = f.bnext[x]
        lists.append(members)
    return (f.fg.tolist(), f.fc.tolist(), f.fm.tolist(), f.fmask.tolist(), f.idle.tolist(),
            f.bval.tolist(), lists)


@st.composite
def clusters(draw):
    """3-6 nodes of 2-8 GPUs, CPUs and memory; an overlapping second partition."""
    X = draw(st.integers(3, 6))
    gpus = [draw(st.sampled_from([2, 4, 8])) for _ in range(X)]
    cpus = [draw(st.sampled_from([4, 8, 16])) for _ in range(X)]
    mem = [draw(st.sampled_from([1000, 4000])) for _ in range(X)]
    parts = [Partition("all", np.arange(X)), Partition("some", np.arange(X // 2, X))]
    return Cluster([f"n{i}" for i in range(X)], cpus, gpus, mem, partitions=parts)


def job(draw, cluster: Cluster, job_id: int, now: int) -> JobRequest:
    part = draw(st.integers(0, 1))
    nodes = cluster.partitions[part].nodes
    limit = draw(st.integers(1, 30))
    return JobRequest(job_id=job_id, submit_time=now, time_limit=limit,
                      runtime=draw(st.integers(0, limit)),
                      num_nodes=draw(st.integers(1, min(3, len(nodes)))),
                      cpus_per_node=draw(st.integers(0, 4)),
                      gpus_per_node=draw(st.integers(0, 2)),
                      mem_per_node=draw(st.sampled_from([0, 500, 1000])), partition=part)


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
def test_every_pass_is_the_pure_pass(policy):
    index_after = plan._INDEX_AFTER_PASS
    try:
        _every_pass_is_the_pure_pass(policy)
    finally:
        plan._INDEX_AFTER_PASS = index_after


@settings(max_examples=36, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), cluster=clusters())
def _every_pass_is_the_pure_pass(policy, data, cluster):
    draw = data.draw
    s = Scheduler(cluster, policy, reservations="nodes", reserve_depth=draw(st.integers(1, 3)),
                  resolution=draw(st.sampled_from([1, 1, 4])))
    now, next_id = 0, 1
    built = None        # (builds, availability) at the last kept pass
    for _ in range(draw(st.integers(1, 25))):
        op = draw(st.sampled_from(["submit", "submit", "schedule", "apply", "apply", "time",
                                   "end", "fail", "drain", "resume"]))
        if op == "submit":
            k = draw(st.integers(1, 4))
            for _ in range(k):
                s.submit(job(draw, cluster, next_id, now))
                next_id += 1
        elif op == "time":       # time passes: what has reached its planned end ends
            now += draw(st.integers(1, 12))
            r = s.running_jobs
            ended = r.job_id[r.planned_end <= now]
            if len(ended):
                s.complete(ended, now, state=draw(st.sampled_from(["COMPLETED", "FAILED"])))
            if len(r) and draw(st.booleans()):      # and one more, early
                left = sorted(set(s.running) - set(ended.tolist()))
                if left:
                    s.complete(draw(st.sampled_from(left)), now)
        elif op == "end":        # a job ends early, at the time of the kept run index
            if len(s.running):
                s.complete(draw(st.sampled_from(s.running)), now)
        elif op in ("fail", "drain", "resume"):
            nodes = draw(st.lists(st.integers(0, cluster.num_nodes - 1), min_size=1,
                                  max_size=2))
            if op == "fail":
                s.fail_nodes(nodes, now)
            else:
                (s.drain_nodes if op == "drain" else s.resume_nodes)(nodes)
        else:
            full = draw(st.booleans())
            # when request types get a run index (0: at their first plan; -1: never),
            # the same for both: the kept index's slots serve later passes
            plan._INDEX_AFTER_PASS = draw(st.sampled_from([4, 0, 0, -1]))
            kept = s.schedule(now, full=full)
            if built is not None and (built[1] == s.available).all():
                assert s._kept.builds == built[0]       # kept through apply and complete
            built = (s._kept.builds, s.available.copy())
            assert_same(kept, pure(s, now, full))
            assert s.schedule(now, full=full) is kept       # nothing changed: the memo's
            free = free_now(s._kept._free)
            for _ in range(draw(st.integers(1, 3))):      # the kept state as it was
                s._memo.clear()
                assert_same(s.schedule(now, full=full), kept)
                assert free_now(s._kept._free) == free    # its starts given back in place
            if op == "apply":
                s.apply(kept)


def test_a_kept_state_is_rebuilt_for_other_running_jobs_and_checks_planned_ends():
    cluster = Cluster.homogeneous(4, cpus=8, gpus=4, mem_mb=100)
    s = Scheduler(cluster, "conservative", reservations="nodes")
    for i in range(1, 6):
        s.submit(JobRequest(job_id=i, submit_time=0, time_limit=10 * i, runtime=5,
                            num_nodes=2, gpus_per_node=2))
    d = s.schedule(0)
    state = s._kept.p.WT
    assert s.schedule(3)._names() == pure(s, 3, False)._names()
    assert s._kept.p.WT is state and s._kept.now == 3      # kept, moved to the new now
    s.apply(s.schedule(3))
    assert_same(s.schedule(4), pure(s, 4, False))       # kept, with the started jobs
    assert s._kept.p.WT is state and s._kept.builds == 1
    s._running = replace(s._running)                   # another object
    s._memo.clear()                     # (an edit behind the Scheduler's back: no version)
    assert_same(s.schedule(4), pure(s, 4, False))       # rebuilt for it
    assert s._kept.builds == 2
    with pytest.raises(InputError, match="planned end 13 <= now"):
        s.schedule(13)
    assert_same(s.schedule(12), pure(s, 12, False))     # the failed call changed nothing
    assert (d.outcome == 0).sum() == 4         # two GPUs of each node a job: four fit


def test_the_run_index_is_kept_and_moves_to_a_later_now(monkeypatch):
    monkeypatch.setattr(plan, "_INDEX_AFTER_PASS", 0)
    cluster = Cluster.homogeneous(6, cpus=8, gpus=4, mem_mb=100)
    s = Scheduler(cluster, "conservative", reservations="nodes")
    for i in range(1, 17):
        s.submit(JobRequest(job_id=i, submit_time=0, time_limit=10 + i, runtime=5,
                            num_nodes=1 + i % 3, gpus_per_node=1 + i % 2))
    d = s.schedule(0, full=True)
    ix = s._kept._ix
    assert ix.top[1] == 2 and len(s._kept._slots) == 2      # two request types, indexed
    assert_same(s.schedule(0, full=True), d)
    assert s._kept._ix.top[1] == 2          # no new slots: the kept ones served the types
    assert_same(s.schedule(1, full=True), pure(s, 1, True))
    assert s._kept._ix.top is ix.top and s._kept._ix.top[1] == 2     # moved to 1, kept
    assert_same(s.schedule(0, full=True), pure(s, 0, True))
    assert s._kept._ix.top is not ix.top                     # an earlier now: a new one


def test_from_state_queues_the_first_jobs_and_the_state_follows_the_loop():
    """from_state(queued=N): the rest is submitted later; through passes, starts, ends
    and submits the kept state is built once and every pass is the pure pass."""
    cluster = Cluster.homogeneous(4, cpus=8, gpus=4, mem_mb=100)
    pending = JobTable.from_requests([JobRequest(job_id=i, submit_time=0, time_limit=5 + i,
                                                 runtime=5, num_nodes=1 + i % 2,
                                                 gpus_per_node=1 + i % 3)
                                      for i in range(1, 13)])
    with pytest.raises(InputError, match="queued must be in 0..12"):
        Scheduler.from_state(cluster, RunningJobs.empty(), pending, queued=13)
    s = Scheduler.from_state(cluster, RunningJobs.empty(), pending, queued=4)
    assert len(s.pending) == 4
    for now, rows in ((0, [4, 5]), (3, [6, 7, 8]), (6, [9, 10, 11])):
        r = s.running_jobs
        if (r.planned_end <= now).any():
            s.complete(r.job_id[r.planned_end <= now], now)
        d = s.schedule(now)
        assert_same(d, pure(s, now, False))
        s.apply(d)
        s.submit(pending.take(np.array(rows)))
    ended = s.running_jobs.job_id[s.running_jobs.planned_end <= 12]
    s.complete(ended, 12)
    assert_same(s.schedule(12), pure(s, 12, False))
    assert s._kept.builds == 1 and len(ended) and len(s.running)


def _memo_scheduler():
    """A Scheduler of a jobs table with periodic priorities (reversed from 10 s), some
    jobs running, a pass at 0 memoised."""
    cluster = Cluster.homogeneous(4, cpus=8, gpus=4, mem_mb=100)
    jobs = JobTable.from_requests([JobRequest(job_id=i, submit_time=0, time_limit=10 + i,
                                              runtime=5, num_nodes=1 + i % 2,
                                              gpus_per_node=1 + i % 3) for i in range(1, 13)])
    s = Scheduler(cluster, "conservative", reservations="nodes", jobs=jobs, period=10,
                  priority=lambda now, progress: np.arange(12.0) * (1 if now < 10 else -1))
    s.submit(jobs.take(np.arange(4)))
    s.apply(s.schedule(0))
    s.submit(jobs.take(np.arange(4, 10)))
    d = s.schedule(0)
    assert s.schedule(0) is d and (d.outcome == 0).any() and len(s.running)
    return s, jobs, d


MUTATIONS = {
    "submit": lambda s, jobs, d: s.submit(jobs.take(np.array([10]))),
    "apply": lambda s, jobs, d: s.apply(d),
    "complete": lambda s, jobs, d: s.complete(s.running[0], 0),
    "fail_nodes": lambda s, jobs, d: s.fail_nodes([0], 0),
    "drain_nodes": lambda s, jobs, d: s.drain_nodes([1]),
    "resume_nodes": lambda s, jobs, d: s.resume_nodes([1]),
    "available edited": lambda s, jobs, d: s.available.__setitem__(2, False),
    "reserve_depth": lambda s, jobs, d: setattr(s, "reserve_depth", 2),
    "policy": lambda s, jobs, d: setattr(s, "policy", get_policy("easy")),
    "resolution": lambda s, jobs, d: setattr(s, "resolution", 4),
    "priorities of another pass": lambda s, jobs, d: s.expected_start_times(10),
}


@pytest.mark.parametrize("change", sorted(MUTATIONS))
def test_the_memo_answers_an_unchanged_state_and_every_change_plans_again(change):
    s, jobs, d = _memo_scheduler()
    assert s.schedule(0, full=True) is not d        # other options: planned
    d = s.schedule(0)
    pure(s, 0, False)                               # (a pure pass keeps the memo)
    assert s.schedule(0) is d
    MUTATIONS[change](s, jobs, d)
    again = s.schedule(0)
    assert again is not d
    assert_same(again, pure(s, 0, False))
    assert s.schedule(0) is again
