"""Every SimulationResult pickles and comes back whole, whatever its queue order: an
array, a module function, a lambda or a site's multifactor priority (the node engine's
priority_at is a closure made inside the simulator)."""
import pickle

import numpy as np
import pandas as pd
import pytest

import fastsched as fs
from fastsched.policy.config import parse_config
from fastsched.sim.site import simulate_site

from test_site import CONFIG, _cluster, _workload


@pytest.fixture(scope="module")
def kth():
    trace = fs.read_swf(fs.bundled_trace("KTH-SP2"))
    return fs.Cluster.homogeneous(trace.procs), trace.jobs.take(np.arange(len(trace.jobs)) < 200)


def by_wait(now, progress, jobs=None):
    """A module-level priority function (higher first: longest wait)."""
    return now - jobs.submit_time.astype(np.float64)


def orders(jobs):
    return {
        "none": None,
        "array": -jobs.runtime.astype(np.float64),
        "function": lambda now, progress: by_wait(now, progress, jobs),
        "lambda": lambda now, progress: -jobs.time_limit * 1.0 + now,
    }


def same(a, b) -> None:
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    assert a.summary == b.summary
    for t in (0, 5_000, 10**6):
        if a.priority_at is None:
            assert b.priority_at is None
        else:
            np.testing.assert_array_equal(a.priority_at(t), b.priority_at(t))


@pytest.mark.parametrize("order", ["none", "array", "function", "lambda"])
@pytest.mark.parametrize("reservations", ["counts", "nodes"])
def test_results_pickle(kth, order, reservations):
    cluster, jobs = kth
    priority = orders(jobs)[order]
    result = fs.simulate(cluster, jobs, "easy", reservations=reservations, priority=priority,
                         period=60 if callable(priority) else None)
    back = pickle.loads(pickle.dumps(result))
    same(result, back)
    assert str(back.verify("easy")) == str(result.verify("easy"))


def test_a_site_result_pickles():
    wl = _workload(submit=[0, 10, 20], user=[0, 0, 1], runtime=[600, 100, 100])
    result = simulate_site(_cluster(), wl, parse_config(CONFIG))
    back = pickle.loads(pickle.dumps(result))
    same(result, back)
    assert list(back.schedule.start_time) == [0, 700, 600]


def test_the_cached_records_are_not_pickled(kth):
    cluster, jobs = kth
    result = fs.simulate(cluster, jobs, "easy")
    plain = len(pickle.dumps(result))
    result.jobs                                  # builds and caches the records
    assert len(pickle.dumps(result)) == plain
