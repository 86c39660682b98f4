"""The memoised plan of EASY's blocked head job (fastsched.engine.memo): a run with
it makes the decisions of a run without it, byte for byte (on drawn constrained
cases with node events, which change partitions and profiles between passes), and
on an ai-mix it answers most passes."""
import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from fastsched import Cluster, JobTable, NodeEvents, Partition
from fastsched.engine import loop as engine_loop, run_nodes
from fastsched.engine.state import new_scratch
from fastsched.tools.generate import ai_cluster, ai_mix
from fastsched.tools.testing import node_event_rows
from test_constraints import SETTINGS, constrained_cases, engine_inputs


def _run(memo: bool, *args, **options):
    """``run_nodes(*args, **options)`` with the memo or without (no room for it);
    (the run, plans answered from the memo)."""
    made = []

    def scratch(nn, num_nodes=0):
        made.append(new_scratch(nn, num_nodes if memo else 0))
        return made[-1]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine_loop, "new_scratch", scratch)
        run = run_nodes(*args, **options)
    return run, int(made[-1].memo[9])


def _same(a, b):
    for name in ("start", "end", "alloc_offsets", "partition", "reason", "never", "eligible"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    ran = np.repeat(a.start >= 0, np.diff(a.alloc_offsets))    # (the others' are not set)
    for name in ("alloc_nodes", "alloc_gpu_mask"):
        np.testing.assert_array_equal(getattr(a, name)[ran], getattr(b, name)[ran], err_msg=name)
    assert a.passes == b.passes


@SETTINGS
@given(data=st.data(), policy=st.sampled_from(["easy", "conservative"]))
def test_memo_changes_no_decision(data, policy):
    cluster, available, jobs, parts, deps, groups, caps, _ = data.draw(constrained_cases())
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    rows = data.draw(node_event_rows(cluster.num_nodes, max_events=6, max_time=60))
    args = (cluster, jobs, policy, data.draw(st.integers(1, 3)), available)
    options = dict(partitions=pc, dependencies=dp, limits=lg,
                   events=NodeEvents.from_rows(rows, cluster.num_nodes))
    with_memo, hits = _run(True, *args, **options)
    without, none = _run(False, *args, **options)
    assert none == 0
    _same(with_memo, without)
    event(f"plans from the memo: {min(hits, 3)}")


@st.composite
def blocked_heads(draw):
    """(cluster, jobs): GPU nodes in two partitions and a third of them all, and jobs
    of 1 to all nodes of theirs submitted over two minutes: big jobs wait over many
    passes while small ones start, end and are submitted around them, on their
    partition's nodes or only on the other's."""
    n = draw(st.integers(3, 8))
    h = draw(st.integers(2, n - 1))
    gpus = draw(st.lists(st.sampled_from([4, 4, 8]), min_size=n, max_size=n))
    nodes = np.arange(n)
    cluster = Cluster([f"n{i}" for i in range(n)], [8] * n, gpus, [0] * n,
                      partitions=[Partition("a", nodes[:h]), Partition("b", nodes[h:]),
                                  Partition("all", nodes)])
    k = draw(st.integers(8, 30))
    part = np.array(draw(st.lists(st.sampled_from([0, 0, 0, 1, 1, 1, 2]), min_size=k,
                                  max_size=k)))
    size = np.array([h, n - h, n])[part]
    runtime = np.array(draw(st.lists(st.integers(1, 60), min_size=k, max_size=k)))
    jobs = JobTable.from_arrays(
        job_id=np.arange(1, k + 1),
        submit_time=draw(st.lists(st.integers(0, 120), min_size=k, max_size=k)),
        time_limit=runtime + np.array(draw(st.lists(st.integers(0, 9), min_size=k, max_size=k))),
        runtime=runtime, num_nodes=[draw(st.integers(1, int(s))) for s in size],
        cpus_per_node=draw(st.sampled_from([1, 8])),
        gpus_per_node=draw(st.lists(st.sampled_from([0, 1, 2, 4, 4, 4]), min_size=k, max_size=k)),
        partition=part)
    return cluster, jobs


@SETTINGS
@given(case=blocked_heads(), policy=st.sampled_from(["easy", "conservative"]),
       data=st.data())
def test_memo_changes_no_decision_of_blocked_heads(case, policy, data):
    cluster, jobs = case
    rows = data.draw(node_event_rows(cluster.num_nodes, max_events=3, max_time=120)
                     | st.just([]))
    args = (cluster, jobs, policy, data.draw(st.integers(1, 2)))
    events = NodeEvents.from_rows(rows, cluster.num_nodes)
    with_memo, hits = _run(True, *args, events=events)
    without, _ = _run(False, *args, events=events)
    _same(with_memo, without)
    event(f"plans from the memo: {min(hits, 3)}")


def test_memo_answers_the_blocked_head_on_an_ai_mix():
    cluster = ai_cluster("ai-8k")
    jobs = ai_mix(cluster, 1500, seed=1).jobs
    with_memo, hits = _run(True, cluster, jobs, "easy")
    without, _ = _run(False, cluster, jobs, "easy")
    _same(with_memo, without)
    assert hits > with_memo.passes // 10
