"""Kernels called through their resolved compiled versions (engine/entry.py): the
event loop's state keeps its argument types over a run with node failures, kills,
requeues and priority recomputations, and the records are those of Numba's own
dispatch."""
import pickle

import numpy as np
import pytest
from numba import njit

from fastsched import Cluster, JobTable, simulate
from fastsched.engine import entry
from fastsched.engine.entry import Entries
from fastsched.model.failures import FailureModel
from fastsched.model.lifecycle import Lifecycle

CLUSTER = Cluster.homogeneous(6, cpus=8, gpus=4, mem_mb=1000)


@njit(cache=False)
def _twice(x):
    return x * 2


def test_a_resolved_entry_computes_what_the_kernel_does():
    e = Entries()
    a = np.arange(5, dtype=np.int64)
    assert np.array_equal(e(_twice, a), _twice(a))
    assert np.array_equal(e(_twice, a + 1), 2 * (a + 1))


def test_the_check_refuses_changed_argument_types(monkeypatch):
    e = Entries()
    e(_twice, np.arange(3, dtype=np.int64))
    monkeypatch.setattr(entry, "CHECK", True)
    e(_twice, np.arange(4, dtype=np.int64))          # same types: fine
    with pytest.raises(TypeError, match="argument types changed"):
        e(_twice, np.arange(3, dtype=np.float64))


def test_entries_pickle_empty():
    e = Entries()
    e(_twice, np.arange(3, dtype=np.int64))
    assert pickle.loads(pickle.dumps(e))._found == {}


def _failure_run(n=120):
    """Records of a small run whose nodes fail: jobs killed, requeued, and priorities
    recomputed between the loop's calls."""
    rng = np.random.default_rng(4)
    jobs = JobTable.from_arrays(
        job_id=np.arange(n), submit_time=np.sort(rng.integers(0, 20_000, n)),
        time_limit=rng.integers(600, 7200, n), runtime=rng.integers(300, 7200, n),
        num_nodes=rng.integers(1, 4, n), cpus_per_node=1, gpus_per_node=rng.integers(1, 5, n))
    r = simulate(CLUSTER, jobs, "easy", failures=FailureModel.parse("mtbf=1d,repair=1h,seed=3"),
                 lifecycle=Lifecycle.of(n, checkpoint_interval=600), period=300,
                 priority=lambda now, progress: (np.arange(n) * 7919 + now) % 101)
    assert r.summary["lifecycle"]["killed_attempts"] > 5       # (it kills and requeues)
    return r.jobs


def test_a_failure_run_keeps_its_argument_types_and_its_records(monkeypatch):
    monkeypatch.setattr(entry, "CHECK", True)       # every call typed and compared
    checked = _failure_run()
    monkeypatch.setattr(entry, "CHECK", False)
    monkeypatch.setattr(Entries, "entry", lambda self, kernel, args: kernel)   # Numba's
    dispatched = _failure_run()
    assert checked.equals(dispatched)
