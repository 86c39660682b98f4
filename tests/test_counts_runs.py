"""The counts model keeps each job's nodes as runs of consecutive nodes
(kernels/_kernels.pyx, ``PoolLoop._take_lowest``): the nodes are the lowest free
ones as before (a plain-Python twin here), runs cross 64-node words, the run
arrays grow and pickle, and the bundled traces give byte-identical results to
the engine that stored one node index per processor (digests recorded from it)."""
import hashlib
import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastsched import Cluster, JobTable, verify
from fastsched.engine.counts import CountsLoop, NodeRuns, run_counts, run_counts_runs
from fastsched.model.constraints import Dependencies, LimitGroups
from fastsched.model.schedule import Schedule

SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
POLICIES = [("fcfs", 1), ("easy", 1), ("easy", 3), ("conservative", 1)]


@st.composite
def wide_pools(draw):
    """Pools of up to 300 nodes (several 64-node words) and jobs of up to all of them;
    runtimes >= 1, so each instant has one pass and starts follow queue order."""
    P = draw(st.integers(1, 300))
    n = draw(st.integers(1, 30))
    sizes = draw(st.lists(st.one_of(st.integers(1, min(P, 70)), st.integers(1, P)),
                          min_size=n, max_size=n))
    jobs = JobTable.from_arrays(
        job_id=np.arange(1, n + 1),
        submit_time=sorted(draw(st.lists(st.integers(0, 30), min_size=n, max_size=n))),
        num_nodes=sizes, time_limit=draw(st.lists(st.integers(1, 12), min_size=n, max_size=n)),
        runtime=draw(st.lists(st.integers(1, 14), min_size=n, max_size=n)))
    return Cluster.homogeneous(P), jobs


def lowest_free_twin(P, jobs, start, end):
    """Each job's nodes when every start takes the lowest free nodes: at each
    instant the jobs ending then free theirs, then the jobs starting then take
    them in queue order (submit, job id)."""
    free = set(range(P))
    nodes = {}
    for t in sorted(set(start[start >= 0].tolist()) | set(end[start >= 0].tolist())):
        for i in np.nonzero((end == t) & (start >= 0))[0]:
            free |= set(nodes[i])
        for i in sorted(np.nonzero(start == t)[0], key=lambda i: (jobs.submit_time[i], i)):
            nodes[i] = sorted(free)[:int(jobs.num_nodes[i])]
            free -= set(nodes[i])
    return nodes


def expanded(runs: NodeRuns, i):
    return [x for k in range(runs.offsets[i], runs.offsets[i + 1])
            for x in range(runs.first[k], runs.first[k] + runs.count[k])]


@pytest.mark.parametrize("policy,depth", POLICIES)
@SETTINGS
@given(case=wide_pools())
def test_runs_are_the_lowest_free_nodes(case, policy, depth):
    cluster, jobs = case
    run = run_counts(cluster, jobs, policy, depth)
    kept = run_counts_runs(cluster, jobs, policy, depth)
    np.testing.assert_array_equal(run.start, kept.start)
    np.testing.assert_array_equal(run.end, kept.end)
    twin = lowest_free_twin(cluster.num_nodes, jobs, run.start, run.end)
    runs = kept.nodes
    for i in range(len(jobs)):
        got = run.alloc_nodes[run.alloc_offsets[i]:run.alloc_offsets[i + 1]].tolist()
        assert got == twin[i] == expanded(runs, i), i
        first, count = runs.first[runs.offsets[i]:runs.offsets[i + 1]], \
            runs.count[runs.offsets[i]:runs.offsets[i + 1]]
        assert (count > 0).all() and (first[1:] > first[:-1] + count[:-1]).all(), \
            "runs ascending and maximal"
    schedule = Schedule(job_id=jobs.job_id, start_time=run.start, end_time=run.end,
                        alloc_offsets=run.alloc_offsets, alloc_nodes=run.alloc_nodes,
                        planning="counts")
    verify(cluster, jobs, schedule).raise_if_failed()


def test_run_arrays_grow_and_pickle():
    """A loop whose run arrays start empty grows them, also after a restore."""
    jobs = JobTable.from_arrays(job_id=np.arange(1, 401), submit_time=np.arange(400) // 4,
                                num_nodes=np.arange(400) % 97 + 1, time_limit=5,
                                runtime=np.arange(400) % 5 + 1)
    cluster = Cluster.homogeneous(200)
    whole = run_counts(cluster, jobs, "easy")
    loop = CountsLoop(cluster, jobs, "easy", 1, Dependencies.none(400), LimitGroups.none(400))
    loop.arrays["run_lo"] = loop.arrays["run_len"] = np.empty(0, dtype=np.int64)
    loop = pickle.loads(pickle.dumps(loop))
    loop.run(40)
    loop = pickle.loads(pickle.dumps(loop))
    loop.run(1 << 62)
    resumed = loop.result()
    assert len(loop.arrays["run_lo"]) >= len(loop.node_runs().first) > 400
    for a in ("start", "end", "alloc_offsets", "alloc_nodes"):
        np.testing.assert_array_equal(getattr(whole, a), getattr(resumed, a))


#: sha256[:16] of start, end, alloc_offsets, alloc_nodes (int64 bytes) from the engine
#: that wrote one node index per processor (commit 53a07fc)
BEFORE = {
    ("KTH-SP2", "easy", 1): "d4fe850a3d441290",
    ("KTH-SP2", "conservative", 1): "0b4bc2a1c80072c3",
    ("KTH-SP2", "fcfs", 1): "a464023d9171595c",
    ("KTH-SP2", "easy", 4): "fe96d4a602782e58",
    ("lublin_256", "easy", 1): "b9f8695473233b80",
    ("lublin_256", "conservative", 1): "3ec29fbcc1b4d39a",
    ("lublin_256", "fcfs", 1): "301d6c5d9caebe38",
    ("lublin_256", "easy", 4): "207bdaa1ff11d2d4",
    ("lublin_256_new2", "easy", 1): "b8b63c50d2c1e625",
    ("lublin_256_new2", "conservative", 1): "4ec2d0767e3754ec",
    ("lublin_256_new2", "fcfs", 1): "bf6c995bfe97e7d4",
    ("lublin_256_new2", "easy", 4): "552dbf85ba0d3fa0",
}


@pytest.fixture(scope="module")
def traces():
    import fastsched as fs
    return {name: fs.read_swf(fs.bundled_trace(name))
            for name in ("KTH-SP2", "lublin_256", "lublin_256_new2")}


@pytest.mark.parametrize("key", sorted(BEFORE))
def test_bundled_traces_byte_identical_to_before(traces, key):
    name, policy, depth = key
    trace = traces[name]
    run = run_counts(Cluster.homogeneous(trace.procs), trace.jobs, policy, depth)
    assert (run.start >= 0).all()             # so every node slot was written
    h = hashlib.sha256()
    for a in (run.start, run.end, run.alloc_offsets, run.alloc_nodes):
        h.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
    assert h.hexdigest()[:16] == BEFORE[key]


def test_no_room_for_runs_raises_memory_error(monkeypatch):
    """Growing the runs can fail: run() raises MemoryError, now and on every later call
    (the loop stopped halfway through a start), and wrote nothing out of bounds."""
    from fastsched.engine import _kernels

    class NoMemory:
        int64 = np.int64

        def empty(self, *args, **kwargs):
            raise MemoryError("no room for runs")

    jobs = JobTable.from_arrays(job_id=np.arange(1, 21), submit_time=0, num_nodes=3,
                                time_limit=5, runtime=5)
    loop = CountsLoop(Cluster.homogeneous(10), jobs, "easy", 1, Dependencies.none(20),
                      LimitGroups.none(20))
    loop.arrays["run_lo"] = loop.arrays["run_len"] = np.empty(2, dtype=np.int64)
    loop = pickle.loads(pickle.dumps(loop))
    monkeypatch.setattr(_kernels, "np", NoMemory())
    with pytest.raises(MemoryError, match="no room"):
        loop.run(1 << 62)
    monkeypatch.undo()
    assert (loop.arrays["start"] >= 0).sum() == 3      # the third took no nodes
    with pytest.raises(MemoryError):
        loop.run(1 << 62)
