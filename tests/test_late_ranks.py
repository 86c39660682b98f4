"""Requeued jobs ranked late: with a site's priorities the queue window leaves the running
jobs out, and a job requeued in the period of the last ranking is ranked in it when it
comes back (engine/driver.QueueWindow.rank_late). Against the window that ranks the
running jobs too (every job that may be requeued), records and priorities must be
the same; and the parts (the tracker's late answer, a job's key alone) against the
direct computation."""
import pickle

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import cloudpickle
from fastsched.engine import driver
from fastsched.model.failures import FailureModel
from fastsched.model.lifecycle import Lifecycle
from fastsched.model.preemption import REQUEUE, Preemption
from fastsched.model.progress import Progress
from fastsched.policy.config import parse_config
from fastsched.policy.usage import UsageTracker
from fastsched.sim import simulator
from fastsched.sim.checkpoint import Checkpoints
from fastsched.sim.site import priority_function, simulate_site
from fastsched.tools.generate import ai_cluster, ai_mix

from test_site_incremental import _seen_at, histories

SITE = """
[priority]
PriorityWeightFairshare = 10000
PriorityWeightAge = 1000
PriorityCalcPeriod = "{period}"
PriorityDecayHalfLife = "2:00:00"
TRESBillingWeights = "GRES/gpu=1.0"
"""


@settings(max_examples=60, deadline=None)
@given(histories())
def test_the_late_answer_is_the_answer_the_call_would_have_given(h):
    cfg, w, start, end, times, known_end = h
    tree = cfg.build_tree(w)
    quiet, told = UsageTracker(cfg, tree, w), UsageTracker(cfg, tree, w)
    prev = np.full(len(w), -1)
    for t in times:
        s, e = _seen_at(t, start, end, known_end)
        started = np.flatnonzero((s >= 0) & (prev < 0))
        assert quiet.at(t, s, e, started, answer=False) is None
        want = told.at(t, s, e, started).raw
        assert np.array_equal(quiet.answer().raw, want)     # bit for bit
        prev = s
    with pytest.raises(RuntimeError):
        told.answer()


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 3), st.integers(1, 6), st.data())
def test_a_key_alone_is_the_key_among_others(seed, late_count, data):
    cluster = ai_cluster("ai-8k")
    w = ai_mix(cluster, 40, seed=seed)
    cfg = parse_config(SITE.format(period=5))
    cluster = cfg.apply_partitions(cluster)
    n = len(w)
    now = int(w.jobs.submit_time.max()) + 600
    rng = np.random.default_rng(seed)
    start = np.where(rng.random(n) < 0.5, rng.integers(0, now, n), -1)
    progress = Progress(start, np.full(n, -1), np.where(rng.random(n) < 0.5, start, -1))
    rows = np.arange(n)
    late = np.sort(rng.choice(n, size=late_count, replace=False))
    together = priority_function(cfg, w, cluster).keys(now, progress, rows)
    apart = priority_function(cfg, w, cluster)
    empty = data.draw(st.booleans())    # the call had nothing to rank: no factors kept
    first = rows[:0] if empty else np.setdiff1d(rows, late)
    apart.keys(now, progress, first)
    assert np.array_equal(apart.keys_late(progress, late), together[late])


def _site_run(monkeypatch, late: bool, seed: int, **options):
    """A site run with failures: with late ranks or the running jobs in the window;
    returns (result, late rankings made, late answers asked)."""
    counts = {"rank_late": 0, "answer": 0}
    for owner, name in ((driver.QueueWindow, "rank_late"), (UsageTracker, "answer")):
        def spy(self, *a, _f=getattr(owner, name), _k=name):
            counts[_k] += 1
            return _f(self, *a)
        monkeypatch.setattr(owner, name, spy)
    if not late:
        monkeypatch.setattr(simulator._Reorder, "late", property(lambda self: False))
    cluster = ai_cluster("ai-8k")
    w = ai_mix(cluster, 600, seed=seed)
    cfg = parse_config(SITE.format(period=5))
    r = simulate_site(cluster, w, cfg, "easy",
                      failures=FailureModel.parse(f"mtbf=3d,repair=1h,seed={seed}"),
                      lifecycle=Lifecycle.of(len(w.jobs), checkpoint_interval=600,
                                             checkpoint_cost=30), **options)
    monkeypatch.undo()
    return r, counts["rank_late"], counts["answer"]


@pytest.mark.parametrize("seed", [1, 2])
def test_late_ranks_make_the_same_run_as_ranking_the_running_jobs(monkeypatch, seed):
    new, late, answers = _site_run(monkeypatch, True, seed)
    old, none, _ = _site_run(monkeypatch, False, seed)
    assert late > 10 and none == 0     # the late path ran (the test can fail)
    assert answers > 0                  # a late rank after a call with nothing to rank
    assert new.summary["lifecycle"]["requeues"] > 20
    assert new.jobs.equals(old.jobs)
    timing = ("sim_seconds", "compile_seconds")
    assert {k: v for k, v in new.summary.items() if k not in timing} == \
        {k: v for k, v in old.summary.items() if k not in timing}
    assert np.array_equal(new.priority, old.priority, equal_nan=True)


def test_a_run_with_late_ranks_resumes_from_any_checkpoint_exactly(monkeypatch):
    class SomePauses(Checkpoints):
        """A pause at every call of the loop; one state kept in 25 (pickling is slow)."""

        def __init__(self):
            super().__init__("/dev/null", 0)
            self.states, self.pauses = [], 0

        def save(self, state):
            self.pauses += 1
            if self.pauses % 25 == 1:
                self.states.append(cloudpickle.dumps(state))

    whole, _, _ = _site_run(monkeypatch, True, 1)
    keep = SomePauses()
    _site_run(monkeypatch, True, 1, checkpoints=keep)
    assert len(keep.states) > 3
    for k in (1, len(keep.states) // 2, len(keep.states) - 1):
        resumed, _, _ = _site_run(monkeypatch, True, 1, resume=pickle.loads(keep.states[k]))
        assert resumed.jobs.equals(whole.jobs)


def test_late_ranks_with_preemption_make_the_same_run(monkeypatch):
    """Preempted victims come back through the same requeue path as failed jobs: ranked
    late, the run is the one that ranks the running jobs."""
    w = ai_mix(ai_cluster("ai-8k"), 600, seed=1)
    qos = (np.arange(len(w.jobs)) % 3 == 0).astype(np.int64)    # a third may preempt
    pre = Preemption("preempt/qos", np.array([[False, False], [True, False]]),
                     np.array([REQUEUE, REQUEUE]), np.zeros(2, dtype=np.int64),
                     np.zeros(2, dtype=np.int64), np.array([0, 1]), qos)
    new, late, _ = _site_run(monkeypatch, True, 1, preemption=pre)
    old, _, _ = _site_run(monkeypatch, False, 1, preemption=pre)
    assert late > 10 and (new.jobs["state"] == "PREEMPTED").sum() > 5
    assert new.jobs.equals(old.jobs)
    assert np.array_equal(new.priority, old.priority, equal_nan=True)
