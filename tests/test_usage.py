"""usage_at: exact decayed usage against a second-by-second twin."""
import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fastsched.policy.config import SchedulerConfig
from fastsched.model.jobs import JobTable
from fastsched.policy.usage import last_reset, usage_at
from fastsched.io.workload import Workload

import naive_limits as naive
from site_cases import draw_site


@st.composite
def runs(draw):
    n = draw(st.integers(1, 6))
    base = draw(st.sampled_from([0, 86000]))           # 86000: crosses a DAILY reset
    start = [base + draw(st.integers(-1, 600)) if draw(st.integers(0, 5)) else -1
             for _ in range(n)]
    end = [(s + draw(st.integers(0, 600)) if draw(st.booleans()) else -1) if s >= 0 else -1
           for s in start]
    start = [max(s, -1) if s >= base else -1 for s in start]
    end = [e if s >= 0 else -1 for s, e in zip(start, end)]
    cfg, w = draw_site(draw, n, base)
    now = base + draw(st.integers(0, 900))
    return cfg, w, np.array(start), np.array(end), now


@settings(max_examples=60, deadline=None)
@given(runs())
def test_usage_matches_per_second_twin(sc):
    cfg, w, start, end, now = sc
    tree = cfg.build_tree(w)
    fast = usage_at(cfg, tree, w, start, end, now).raw
    slow = naive.naive_usage(cfg, tree, w, start, end, now,
                             reset_every=86400 if cfg.usage_reset_period == "DAILY" else None)
    assert fast == pytest.approx(slow, rel=1e-9, abs=1e-6)


def test_half_life_halves_a_finished_jobs_usage():
    jobs = JobTable.from_arrays(job_id=[1], submit_time=0, time_limit=100, runtime=10,
                                num_nodes=1, cpus_per_node=4, user=[0])
    w = Workload(jobs, np.zeros(1, np.int32), ["u"], ["a"], np.zeros(1, np.int32), ["o"])
    cfg = SchedulerConfig(decay_half_life=1000)
    tree = cfg.build_tree(w)
    u1 = usage_at(cfg, tree, w, [0], [10], 10).raw[0]
    u2 = usage_at(cfg, tree, w, [0], [10], 1010).raw[0]
    assert u2 == pytest.approx(u1 / 2, rel=1e-12)
    # without decay: CPU-seconds
    cfg0 = dataclasses.replace(cfg, decay_half_life=0)
    assert usage_at(cfg0, tree, w, [0], [10], 5000).raw[0] == 40.0
    # running job: only the part up to now counts; not started: nothing
    assert usage_at(cfg0, tree, w, [0], [-1], 7).raw[0] == 28.0
    assert usage_at(cfg0, tree, w, [-1], [-1], 7).raw[0] == 0.0


def test_reset_boundaries():
    assert last_reset("DAILY", 86400 * 3 + 5) == 86400 * 3
    assert last_reset("WEEKLY", 86400 * 9 + 5) == 86400 * 3       # Sat 01-10 -> Sun 01-04
    assert last_reset("WEEKLY", 86400 * 10) == 86400 * 10         # Sunday 1970-01-11
    assert last_reset("MONTHLY", 86400 * 40) == 86400 * 31        # 1970-02-01
    assert last_reset("QUARTERLY", 86400 * 100) == 86400 * 90     # 1970-04-01
    assert last_reset("YEARLY", 86400 * 400) == 86400 * 365       # 1971-01-01


def test_at_the_reset_instant_usage_is_zero_for_usage_at_and_the_twin():
    """A DAILY reset at exactly ``now``: only time after it counts, so nothing yet."""
    jobs = JobTable.from_arrays(job_id=[1], submit_time=86000, time_limit=1000, runtime=600,
                                num_nodes=1, cpus_per_node=2, user=[0])
    w = Workload(jobs, np.array([0], np.int32), ["u0"], ["a0"], np.zeros(1, np.int32), ["o"])
    cfg = SchedulerConfig(decay_half_life=0, usage_reset_period="DAILY")
    tree = cfg.build_tree(w)
    start, end = np.array([86000]), np.array([-1])
    for now, want in ((86399, 2 * 399), (86400, 0.0), (86401, 2.0)):
        assert usage_at(cfg, tree, w, start, end, now).raw.tolist() == [want]
        assert naive.naive_usage(cfg, tree, w, start, end, now, reset_every=86400) == \
            pytest.approx([want])
