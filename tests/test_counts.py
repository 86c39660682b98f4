"""The counts reservation model with queue order, dependencies and limit groups
against its twin (tests/naive.py): identical starts and ends; the same rules as
the nodes model where both must agree; its checkpoints; its constants."""
import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import naive
from fastsched import Cluster, JobTable, simulate, verify
from fastsched.engine import _kernels, interrupt
from fastsched.engine.counts import CountsLoop, run_counts
from fastsched.model.constraints import (AFTER, AFTERANY, AFTERNOTOK, AFTEROK, CAPS,
                                         Dependencies, LimitGroups)
from fastsched.model.errors import InputError, UnsupportedError
from test_constraints import engine_inputs

SETTINGS = settings(max_examples=63, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
POLICIES = [("fcfs", 1), ("easy", 1), ("easy", 3), ("conservative", 1)]


@st.composite
def pool_cases(draw, max_jobs=14):
    """A pool of P nodes (G GPUs each), whole-node jobs, and constraints keyed by job id."""
    P = draw(st.integers(1, 8))
    gpus = draw(st.sampled_from([0, 4]))
    n = draw(st.integers(1, max_jobs))
    ids = draw(st.lists(st.integers(1, 10 * max_jobs), min_size=n, max_size=n, unique=True))
    jobs = JobTable.from_arrays(
        job_id=ids, submit_time=draw(st.lists(st.integers(0, 20), min_size=n, max_size=n)),
        num_nodes=draw(st.lists(st.integers(1, P), min_size=n, max_size=n)),
        time_limit=draw(st.lists(st.integers(1, 10), min_size=n, max_size=n)),
        runtime=draw(st.lists(st.integers(0, 12), min_size=n, max_size=n)),
        gpus_per_node=gpus, cpus_per_node=1)
    deps = {}
    for j in ids:
        if draw(st.integers(0, 3)) == 0 and n > 1:
            deps[j] = draw(st.lists(st.tuples(st.sampled_from([o for o in ids if o != j]),
                                              st.sampled_from([AFTER, AFTERANY, AFTEROK,
                                                               AFTERNOTOK])),
                                    min_size=1, max_size=2))
    G = draw(st.integers(0, 3))
    caps = [tuple(draw(st.sampled_from([-1, -1, 1, 2, 3])) if k in (0, 4) else
                  draw(st.sampled_from([-1, -1, 2, 4, 8, 16])) for k in range(len(CAPS)))
            for _ in range(G)]
    groups = {j: draw(st.lists(st.integers(0, G - 1), max_size=2, unique=True)) if G else []
              for j in ids}
    rank = {j: draw(st.integers(0, 3)) for j in ids} if draw(st.booleans()) else None
    return Cluster.homogeneous(P, gpus=gpus), jobs, deps, groups, caps, rank


def constraints(jobs, deps, groups, caps):
    """(dependencies, limit groups) of the case (one pool: no partition choices)."""
    _, dp, lg = engine_inputs(jobs, {int(j): [0] for j in jobs.job_id}, deps, groups, caps)
    return dp, lg


def assert_same_as_twin(case, policy, depth, reorder=None, period=None):
    cluster, jobs, deps, groups, caps, rank = case
    dp, lg = constraints(jobs, deps, groups, caps)
    ids = [int(j) for j in jobs.job_id]
    priority = None if rank is None else -np.array([rank[j] for j in ids], dtype=float)
    twin_reorder = None
    if reorder is not None:
        priority = lambda b, progress: -np.array([reorder(b, j) for j in ids], float)  # noqa
        twin_reorder = lambda b, s, e, el: {j: reorder(b, j) for j in ids}  # noqa: E731
    result = simulate(cluster, jobs, policy, reserve_depth=depth, dependencies=dp, limits=lg,
                      priority=priority, period=period, reservations="counts")
    assert result.summary["reservations"] == "counts"
    waiting = {}
    twin = naive.simulate(naive.jobs_from_table(jobs), cluster.num_nodes, policy, depth,
                          deps=deps, groups=groups, caps=caps, rank=rank,
                          reorder=twin_reorder, period=period, waiting=waiting)
    s = result.schedule
    for i, j in enumerate(ids):
        if j in twin:
            assert (s.start_time[i], s.end_time[i]) == twin[j], j
        else:
            assert s.start_time[i] == -1, j
            if waiting[j] == "never":
                assert result.never[i], j
            elif isinstance(waiting[j], tuple) and waiting[j][1] == len(CAPS) - 1:
                assert result.reason_code[i] == waiting[j][0] * len(CAPS) + len(CAPS) - 1, j
    verify(cluster, jobs, s, dependencies=dp, limits=lg).raise_if_failed()
    return result


@pytest.mark.parametrize("policy,depth", POLICIES)
@SETTINGS
@given(case=pool_cases())
def test_counts_with_constraints_match_twin(case, policy, depth):
    assert_same_as_twin(case, policy, depth)


@SETTINGS
@given(case=pool_cases(), period=st.integers(1, 12), salt=st.integers(0, 5),
       pd=st.sampled_from(POLICIES))
def test_counts_periodic_reorder_matches_twin(case, period, salt, pd):
    reorder = lambda b, j: (j * 7 + b * (salt + 1)) % 5  # noqa: E731
    assert_same_as_twin(case, *pd, reorder=reorder, period=period)


@SETTINGS
@given(case=pool_cases(max_jobs=10))
def test_fcfs_starts_agree_across_models(case):
    """FCFS never plans ahead, so on whole-node jobs both models start the same jobs
    at the same times under the same queue order, dependencies and limits."""
    cluster, jobs, deps, groups, caps, rank = case
    dp, lg = constraints(jobs, deps, groups, caps)
    priority = None if rank is None else -np.array([rank[int(j)] for j in jobs.job_id], float)
    runs = [simulate(cluster, jobs, "fcfs", dependencies=dp, limits=lg, priority=priority,
                     reservations=model) for model in ("counts", "nodes")]
    for a in ("start_time", "end_time"):
        np.testing.assert_array_equal(getattr(runs[0].schedule, a), getattr(runs[1].schedule, a))
    np.testing.assert_array_equal(runs[0].never, runs[1].never)


def test_kernel_constants_match_the_model():
    assert _kernels.DEPENDENCY_KINDS == (AFTER, AFTERANY, AFTEROK, AFTERNOTOK)
    assert _kernels.LIMIT_CAPS == (len(CAPS), CAPS.index("max_submit"))
    assert _kernels.CONTROL == {"REQUEST": interrupt.REQUEST, "NOW": interrupt.NOW,
                                "DONE": interrupt.DONE, "STOP": interrupt.STOP,
                                "PAUSE": interrupt.PAUSE}


def _trace_slice(n=600):
    import fastsched as fs
    trace = fs.read_swf(fs.bundled_trace())
    return Cluster.homogeneous(trace.procs), trace.jobs.take(np.arange(n))


@pytest.mark.parametrize("policy,depth", POLICIES)
def test_bundled_trace_with_priorities_and_limits_matches_twin(policy, depth):
    """A slice of KTH-SP2 with a shortest-job-first order and per-user running caps."""
    cluster, jobs = _trace_slice()
    user = jobs.job_id % 7                        # seven made-up users
    groups = {int(j): [int(u)] for j, u in zip(jobs.job_id, user)}
    caps = [(2, -1, 16, -1, -1)] * 7              # 2 running jobs, 16 nodes per user
    rank = {int(j): int(lim) for j, lim in zip(jobs.job_id, jobs.time_limit)}
    result = assert_same_as_twin((cluster, jobs, {}, groups, caps, rank), policy, depth)
    plain = simulate(cluster, jobs, policy, reserve_depth=depth)
    assert (result.schedule.start_time != plain.schedule.start_time).sum() > 100


def test_checkpoint_resume_is_identical(tmp_path):
    """A paused counts loop pickles; the restored loop finishes as an uninterrupted one."""
    cluster, jobs = _trace_slice(2000)
    whole = run_counts(cluster, jobs, "conservative")
    loop = CountsLoop(cluster, jobs, "conservative", 1, Dependencies.none(len(jobs)),
                      LimitGroups.none(len(jobs)))
    loop.run(int(jobs.submit_time[1000]))
    assert not loop.done
    loop = pickle.loads(pickle.dumps(loop))
    while not loop.done:
        loop.run(1 << 62)
    resumed = loop.result()
    for a in ("start", "end", "alloc_nodes", "eligible"):
        np.testing.assert_array_equal(getattr(whole, a), getattr(resumed, a))
    assert whole.passes == resumed.passes


def test_counts_refuses_node_options_and_the_wrong_checkpoint():
    cluster, jobs = _trace_slice(50)
    with pytest.raises(UnsupportedError, match="window"):
        simulate(cluster, jobs, "easy", window=3600, reservations="counts")
    loop = CountsLoop(cluster, jobs, "easy", 1, Dependencies.none(50), LimitGroups.none(50))
    with pytest.raises(InputError, match="other reservation model"):
        simulate(cluster, jobs, "easy", reservations="nodes",
                 resume={"loop": loop, "reorder": None, "last": None})
