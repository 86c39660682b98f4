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

import pandas.testing as pd_testing

from fastsched import Cluster, JobTable, simulate, verify
from fastsched.engine.counts import CountsLoop, NodeRuns, run_counts, run_counts_runs
from fastsched.model.constraints import Dependencies, LimitGroups
from fastsched.model.schedule import Schedule

SETTINGS = settings(max_examples=50, deadline=None,
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


def expanded_result(result):
    """``result`` with its schedule's nodes one index per node (no runs): what every
    output was made of before the counts model's results kept runs."""
    import dataclasses
    s = result.schedule
    flat = Schedule(job_id=s.job_id, start_time=s.start_time, end_time=s.end_time,
                    alloc_offsets=s.node_runs.node_offsets(), alloc_nodes=s.node_runs.nodes(),
                    planning=s.planning)
    return dataclasses.replace(result, schedule=flat)


def named_pool(P: int, names: str):
    """A pool of ``P`` nodes named in index order (``padded``), with a number that grows a
    digit (``unpadded``: node9, node10), or so that runs of indices cross name groups."""
    cluster = Cluster.homogeneous(P)
    if names == "padded":
        return cluster
    new = [f"node{k + 1}" for k in range(P)] if names == "unpadded" else \
        [f"{'ab'[k % 3 == 0]}{k // 2}" for k in range(P)]
    return Cluster(new, np.ones(P), np.zeros(P), np.zeros(P))


@pytest.mark.parametrize("names", ["padded", "unpadded", "irregular"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=wide_pools(), data=st.data())
def test_outputs_from_runs_equal_outputs_from_node_indices(case, names, data):
    """Records, sacct lines, SWF fields, Batsim's interval sets, the summary and the
    state at a time are the same from the counts model's runs as from the nodes one
    index per node; none of them but the state at a time expands the runs."""
    from fastsched.io.batsimout import batsim_frame
    from fastsched.io.sacctout import sacct_lines
    from fastsched.io.swfout import swf_fields
    from fastsched.sim.results import summarize
    base, jobs = case
    cluster = named_pool(base.num_nodes, names)
    result = simulate(cluster, jobs, data.draw(st.sampled_from(["easy", "conservative"])),
                      reservations="counts")
    flat = expanded_result(result)
    pd_testing.assert_frame_equal(result.jobs, flat.jobs)
    assert sacct_lines(result) == sacct_lines(flat)
    np.testing.assert_array_equal(swf_fields(result), swf_fields(flat))
    pd_testing.assert_frame_equal(batsim_frame(result), batsim_frame(flat))
    assert summarize(cluster, jobs, result.schedule, exclusive=True) == \
        summarize(cluster, jobs, flat.schedule, exclusive=True)
    assert "alloc_nodes" not in result.schedule.__dict__        # still runs only
    t = data.draw(st.integers(0, 40))
    for a, b in zip(result.state_at(t), flat.state_at(t)):
        assert repr(a) == repr(b)
    np.testing.assert_array_equal(result.schedule.alloc_nodes, flat.schedule.alloc_nodes)
    result.verify().raise_if_failed()


def test_runs_of_never_started_jobs_and_a_pickled_result():
    """Jobs a limit holds forever hold no runs; the summary and records skip them as
    before; a result pickles with its runs unexpanded and expands them after."""
    jobs = JobTable.from_arrays(job_id=np.arange(1, 31), submit_time=np.arange(30),
                                num_nodes=np.arange(30) % 7 + 1, time_limit=9, runtime=5)
    # group 0 lets no job of its own run (a cap of 0 jobs)
    held = np.arange(30) % 4 == 0
    limits = LimitGroups(offsets=np.concatenate([[0], np.cumsum(held)]),
                         group=np.zeros(int(held.sum())), caps=[(0, -1, -1, -1, -1)],
                         reasons=[("QOSMaxJobsPerUserLimit",) * 5])
    result = simulate(Cluster.homogeneous(12), jobs, "easy", limits=limits,
                      reservations="counts")
    s = result.schedule
    assert ((s.start_time < 0) == (np.arange(30) % 4 == 0)).all()
    assert (np.diff(s.alloc_offsets)[s.start_time < 0] == 0).all()
    flat = expanded_result(result)
    assert result.summary["never_started"] == 8
    pd_testing.assert_frame_equal(result.jobs, flat.jobs)
    back = pickle.loads(pickle.dumps(result))
    assert "alloc_nodes" not in back.schedule.__dict__
    np.testing.assert_array_equal(back.schedule.alloc_nodes, flat.schedule.alloc_nodes)
    for i in range(30):
        np.testing.assert_array_equal(s.nodes_of(i), flat.schedule.nodes_of(i))
    result.verify().raise_if_failed()
