"""The site simulation's incremental priority work against the direct computation:
UsageTracker == usage_at, _QueueWindow == the full scan, and the priority function
(carried across PriorityCalcPeriods) == the old one recomputed from every job, key
for key at every period of a whole simulation."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fastsched.policy.config import SchedulerConfig, parse_config
from fastsched.model.errors import InputError
from fastsched.tools.generate import ai_cluster, ai_mix
from fastsched.model.jobs import JobTable
from fastsched.policy.priority import multifactor
from fastsched.sim.simulator import simulate
from fastsched.sim.site import (_TIER_SCALE, _QueueWindow, priority_function, simulate_site,
                            site_limits)
from fastsched.policy.usage import UsageTracker, usage_at
from fastsched.io.workload import Workload

from site_cases import draw_site


@st.composite
def histories(draw):
    """Jobs with a start and an end, a config, and increasing times to look at them."""
    n = draw(st.integers(1, 12))
    base = draw(st.sampled_from([0, 85000]))          # 85000: crosses a DAILY reset
    start = np.array([base + draw(st.integers(0, 3000)) if draw(st.integers(0, 4)) else -1
                      for _ in range(n)])
    end = np.where(start >= 0, start + np.array([draw(st.integers(0, 900)) for _ in range(n)]),
                   -1)
    cfg, w = draw_site(draw, n, base)
    times = sorted(base + np.array(draw(st.lists(st.integers(0, 4500), min_size=1,
                                                  max_size=8))))
    known_end = draw(st.booleans())      # the end is known from the start (as the engine has it)
    return cfg, w, start, end, [int(t) for t in times], known_end


def _seen_at(t, start, end, known_end):
    """What a simulation at ``t`` knows: jobs started before t; their end if known."""
    s = np.where((start >= 0) & (start < t), start, -1)
    e = np.where(s >= 0, end, -1)
    return s, e if known_end else np.where(e <= t, e, -1)


@settings(max_examples=80, deadline=None)
@given(histories())
def test_tracker_matches_usage_at(h):
    cfg, w, start, end, times, known_end = h
    tree = cfg.build_tree(w)
    tracker = UsageTracker(cfg, tree, w)
    prev = np.full(len(w), -1)
    for t in times:
        s, e = _seen_at(t, start, end, known_end)
        started = np.flatnonzero((s >= 0) & (prev < 0))
        got = tracker.at(t, s, e, started).raw
        want = usage_at(cfg, tree, w, s, e, t).raw
        assert got == pytest.approx(want, rel=1e-12, abs=1e-9)
        prev = s
    # an earlier time starts over
    s, e = _seen_at(times[0], start, end, known_end)
    assert tracker.at(times[0], s, e, []).raw == pytest.approx(
        usage_at(cfg, tree, w, s, e, times[0]).raw, rel=1e-12, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(histories(), st.lists(st.booleans(), min_size=8, max_size=8))
def test_tracker_without_answers_carries_the_same(h, asked):
    """A call that only carries the usage forward (``answer=False``, a period with no
    job to rank) leaves the tracker as an answered call does: later answers are equal
    bit for bit."""
    cfg, w, start, end, times, known_end = h
    tree = cfg.build_tree(w)
    every, some = UsageTracker(cfg, tree, w), UsageTracker(cfg, tree, w)
    prev = np.full(len(w), -1)
    for t, ask in zip(times, asked):
        s, e = _seen_at(t, start, end, known_end)
        started = np.flatnonzero((s >= 0) & (prev < 0))
        want = every.at(t, s, e, started).raw
        got = some.at(t, s, e, started, answer=ask)
        if ask:
            assert got.raw.tobytes() == want.tobytes()
        else:
            assert got is None
        prev = s
    assert some.at(times[-1], s, e, []).raw.tobytes() == \
        every.at(times[-1], s, e, []).raw.tobytes()


def test_tracker_carries_decay_forward():
    jobs = JobTable.from_arrays(job_id=[1, 2], submit_time=0, time_limit=100, runtime=10,
                                num_nodes=1, cpus_per_node=4, user=[0, 0])
    w = Workload(jobs, np.zeros(2, np.int32), ["u"], ["a"], np.zeros(1, np.int32), ["o"])
    cfg = SchedulerConfig(decay_half_life=1000)
    tracker = UsageTracker(cfg, cfg.build_tree(w), w)
    assert tracker.at(0, [-1, -1], [-1, -1], []).raw[0] == 0.0
    u10 = tracker.at(10, [0, -1], [10, -1], [0]).raw[0]
    assert tracker.at(1010, [0, -1], [10, -1], []).raw[0] == pytest.approx(u10 / 2, rel=1e-12)
    assert list(tracker.running) == []       # the ended job is carried, not re-summed
    both = tracker.at(2010, [0, 2000], [10, 2010], [1]).raw[0]
    assert both == pytest.approx(u10 / 4 + u10, rel=1e-12)
    with pytest.raises(InputError, match="2 entries"):
        tracker.at(3000, [0], [10], [])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=1, max_size=30), st.integers(1, 7),
       st.lists(st.integers(0, 60), min_size=1, max_size=10), st.data())
def test_queue_window_matches_full_scan(submit, period, steps, data):
    submit = np.array(submit)
    n = len(submit)
    start = np.full(n, -1)
    window = _QueueWindow(submit, period)
    prev = np.full(n, -1)
    for now in sorted(steps) + [min(steps)]:          # increasing, then an earlier time
        # a job can have started only once submitted before now
        for j in np.flatnonzero((submit < now) & (start < 0)):
            if data.draw(st.booleans()):
                start[j] = now - 1
        rows, started = window.advance(now, start)
        want = np.flatnonzero((start < 0) & (submit < now + period))
        assert sorted(rows.tolist()) == want.tolist()
        if started is not None:
            assert sorted(started.tolist()) == np.flatnonzero((start >= 0) & (prev < 0)).tolist()
        prev = start.copy()


def _old_priority_function(config, workload, cluster, tree):
    """The priority function before it was made incremental: every job at every call."""
    jobs = workload.jobs
    assoc = tree.job_associations(workload)
    qos_factor = config.qos_factor()[config.job_qos(workload)]
    part_factor = config.partition_factor(cluster)
    tier = np.array([p.priority_tier for p in cluster.partitions], dtype=np.float64)
    job_tier = tier[jobs.partition]
    period = int(config.calc_period)

    def priority(now, progress):
        key = np.full(len(jobs), -np.inf)
        rows = np.flatnonzero((progress.start < 0) & (jobs.submit_time < now + period))
        if not len(rows):
            return key
        usage = usage_at(config, tree, workload, progress.start, progress.end, now,
                         job_associations=assoc)
        accrue = np.where(progress.eligible >= 0, progress.eligible, jobs.submit_time)
        prio = multifactor(jobs.take(rows), now, config.weights,
                           fairshare=config.fairshare(tree, usage),
                           fairshare_index=assoc[rows], qos_factor=qos_factor[rows],
                           partition_factor=part_factor, cluster=cluster,
                           accrue_time=np.maximum(accrue[rows], jobs.submit_time[rows]))
        key[rows] = job_tier[rows] * _TIER_SCALE + prio
        return key

    return priority


SITE = """
[priority]
PriorityWeightFairshare = 10000
PriorityWeightAge = 1000
PriorityWeightQOS = 500
PriorityMaxAge = "1-0"
PriorityCalcPeriod = "5"
PriorityDecayHalfLife = "{half_life}"
PriorityUsageResetPeriod = "{reset}"
{flags}TRESBillingWeights = "CPU=0.1,GRES/gpu=1.0"

[qos.normal]
Priority = 10

[qos.cheap]
Priority = 0
UsageFactor = 0.5
"""


@pytest.mark.parametrize("half_life,reset,algorithm", [
    ("1-0", "NONE", "fair_tree"), ("0", "NONE", "fair_tree"), ("2:00:00", "DAILY", "classic")])
def test_site_run_has_the_old_priorities_at_every_period(half_life, reset, algorithm):
    cluster = ai_cluster("ai-8k")
    w = ai_mix(cluster, 1500, seed=3)
    w.qos = (np.arange(len(w)) % 3 == 0).astype(np.int32)
    w.qos_names = ["normal", "cheap"]
    flags = 'PriorityFlags = "NO_FAIR_TREE"\n' if algorithm == "classic" else ""
    cfg = parse_config(SITE.format(half_life=half_life, reset=reset, flags=flags))
    assert cfg.fairshare_algorithm == algorithm
    cluster = cfg.apply_partitions(cluster)
    tree = cfg.build_tree(w)
    new = priority_function(cfg, w, cluster, tree)
    old = _old_priority_function(cfg, w, cluster, tree)
    calls = []

    def both(now, progress):
        key = new(now, progress)
        assert np.array_equal(key, old(now, progress)), f"keys differ at {now}"
        calls.append(now)
        return key

    ran = simulate(cluster, w.jobs, "easy", limits=site_limits(cfg, w, cluster, tree),
                   priority=both, period=int(cfg.calc_period))
    assert len(calls) > 100 and calls == sorted(calls)
    site = simulate_site(ai_cluster("ai-8k"), w, cfg, "easy")
    assert np.array_equal(site.schedule.start_time, ran.schedule.start_time)
    assert np.array_equal(site.priority, np.where(np.isfinite(ran.priority),
                                                  np.mod(ran.priority, _TIER_SCALE), np.nan),
                          equal_nan=True)
    # what-ifs after the run (earlier times start over) agree with the old function too
    for t in (calls[-1] + 300, calls[len(calls) // 2]):
        assert np.array_equal(site.priority_at(t), ran.priority_at(t))
