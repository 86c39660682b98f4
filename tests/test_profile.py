"""The node engine's work profile kept between passes (fastsched.engine).

After every instant of a simulation the kept profile must equal the one built
from scratch from the running jobs (the reservations of the pass undone,
breakpoints that no longer change anything dropped), and the kept free-now
counts per request type must equal a recount. With a resolution r > 1 every
hold ends on the absolute grid of multiples of r: the engine (event loop and
single pass) must match the twin (tests/naive_nodes.py) there too.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import naive_nodes
from test_nodeplan import assert_valid, node_cases, twin
from fastsched.engine import loop as engine_loop, plan as engine_plan, profile
from fastsched.model.constraints import Dependencies, LimitGroups
from fastsched.engine import RunningJobs, check_node_jobs, plan_nodes, run_nodes
from fastsched.engine.loop import _EventLoop

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])
POLICIES = st.sampled_from([("fcfs", 1), ("easy", 1), ("easy", 3), ("conservative", 1)])
RESOLUTIONS = st.sampled_from([1, 2, 3, 7, 10])


def _steps(pairs):
    """(time, (g, c, m)) segments with equal neighbours merged."""
    out = []
    for t, v in pairs:
        if not out or out[-1][1] != v:
            out.append((t, v))
    return out


def scratch_profile(loop, x, now):
    """Node x's profile from its running jobs (started, actual end > now), each
    holding until start + limit rounded up to a multiple of the resolution."""
    holds = []
    for j in np.flatnonzero((loop.out.start >= 0) & (loop.out.end > now)):
        if x in loop.out.alloc_nodes[loop.jobs.offsets[j]:loop.jobs.offsets[j + 1]]:
            res = int(loop.rules.res)
            he = -(-(int(loop.out.start[j]) + int(loop.jobs.limit[j])) // res) * res
            holds.append((he, int(loop.jobs.rg[j]), int(loop.jobs.rc[j]), int(loop.jobs.rm[j])))
    cap = (int(loop.nodes.capG[x]), int(loop.nodes.capC[x]), int(loop.nodes.capM[x]))

    def free(b):
        return tuple(cap[k] - sum(h[k + 1] for h in holds if h[0] > b) for k in range(3))
    times = [now] + sorted({h[0] for h in holds})
    return _steps([(b, free(b)) for b in times]), {h[0] for h in holds}


def assert_profile_kept(loop, now):
    for x in range(len(loop.nodes.capG)):
        WT, WG, WC, WM = loop.profile(x)
        L = int(loop.p.wlen[x])
        assert len(WT) == L and L + 2 <= loop.p.wcap[x]     # room for two more breakpoints
        assert WT[0] <= now
        times = [now] + [int(t) for t in WT[1:L]]
        assert all(a < b for a, b in zip(times, times[1:])), (x, times)
        kept = _steps([(times[k], (int(WG[k]), int(WC[k]), int(WM[k]))) for k in range(L)])
        expect, ends = scratch_profile(loop, x, now)
        assert kept == expect, (x, now, kept, expect)
        assert set(times[1:]) <= ends, "a breakpoint that is no running job's held end"
        assert (int(loop.free.fg[x]), int(loop.free.fc[x]), int(loop.free.fm[x])) == expect[0][1]
    tp, tg, tc, tm, _ = loop.types
    for ty in np.flatnonzero(loop.free.tcount >= 0):
        nodes = loop.nodes.pflat[loop.nodes.poff[tp[ty]]:loop.nodes.poff[tp[ty] + 1]]
        cnt = np.count_nonzero((loop.free.fg[nodes] >= tg[ty]) & (loop.free.fc[nodes] >= tc[ty])
                               & (loop.free.fm[nodes] >= tm[ty]))
        assert loop.free.tcount[ty] == cnt, (ty, now)


@pytest.fixture(params=[16, 0])
def index_after(request, monkeypatch):
    """The scan path, and the run index from a type's first plan (it writes the profile too)."""
    monkeypatch.setattr(engine_loop, "_INDEX_AFTER", request.param)
    return request.param


@SETTINGS
@given(case=node_cases(), pd=POLICIES, resolution=RESOLUTIONS)
def test_kept_profile_equals_rebuild_after_every_instant(index_after, case, pd, resolution):
    cluster, available, jobs = case
    policy, depth = pd
    n = len(jobs)
    parts = check_node_jobs(cluster, jobs, available)
    loop = _EventLoop(cluster, jobs, policy, depth, available, parts, Dependencies.none(n),
                      LimitGroups.none(n), resolution=resolution)
    while not loop.done:
        now = loop.next_time()
        loop.run(now)
        assert_profile_kept(loop, now)
    # stepping changed nothing: the same run in one go
    once = run_nodes(cluster, jobs, policy, depth, available, resolution=resolution)
    np.testing.assert_array_equal(loop.result().start, once.start)
    np.testing.assert_array_equal(loop.result().alloc_nodes, once.alloc_nodes)


def twin_run(cluster, available, jobs, policy, depth, resolution, window):
    out, _ = naive_nodes.simulate(cluster, naive_nodes.jobs_from_table(jobs), policy, depth,
                                  available=available, resolution=resolution, window=window)
    return out


@SETTINGS
@given(case=node_cases(), pd=POLICIES, resolution=RESOLUTIONS.filter(lambda r: r > 1),
       window=st.sampled_from([None, 0, 6, 20]))
def test_event_loop_on_grid_matches_twin(case, pd, resolution, window):
    cluster, available, jobs = case
    policy, depth = pd
    run = run_nodes(cluster, jobs, policy, depth, available, resolution=resolution,
                    window=window)
    out = twin_run(cluster, available, jobs, policy, depth, resolution, window)
    np.testing.assert_array_equal(run.start, [out[j][0] for j in jobs.job_id])
    np.testing.assert_array_equal(run.alloc_nodes, [x for j in jobs.job_id for x in out[j][2]])
    np.testing.assert_array_equal(
        run.alloc_gpu_mask, np.array([sum(1 << k for k in gl) for j in jobs.job_id
                                      for gl in out[j][3]], dtype=np.uint64))
    assert_valid(cluster, available, jobs, run.start, run.end, run.alloc_offsets,
                 run.alloc_nodes, run.alloc_gpu_mask)


@SETTINGS
@given(case=node_cases(), pd=POLICIES, resolution=RESOLUTIONS.filter(lambda r: r > 1),
       window=st.sampled_from([None, 6]))
def test_single_pass_on_grid_matches_twin(case, pd, resolution, window):
    """plan_nodes at an instant of the twin's simulation (``now`` mostly off the
    grid) starts what the twin started there, on the same nodes and GPUs."""
    cluster, available, jobs = case
    policy, depth = pd
    out = twin_run(cluster, available, jobs, policy, depth, resolution, window)
    ids = [int(j) for j in jobs.job_id]
    start = np.array([out[j][0] for j in ids])
    end = np.array([out[j][1] for j in ids])
    for t in np.unique(np.concatenate([jobs.submit_time, start, end])):
        if ((start == t) & (end == t)).any():      # zero-length jobs: several passes at t
            continue
        run = [i for i in range(len(ids)) if start[i] < t < end[i]]
        waiting = (jobs.submit_time <= t) & (start >= t)
        if not waiting.any():
            continue
        entries = [(x, sum(1 << k for k in gl)) for i in run
                   for x, gl in zip(out[ids[i]][2], out[ids[i]][3])]
        running = RunningJobs.from_arrays(
            job_id=[ids[i] for i in run],
            planned_end=[start[i] + int(jobs.time_limit[i]) for i in run],
            node_offsets=np.concatenate([[0], np.cumsum([len(out[ids[i]][2]) for i in run])]),
            nodes=[e[0] for e in entries], gpus=[int(jobs.gpus_per_node[i]) for i in run],
            cpus=[int(jobs.cpus_per_node[i]) for i in run],
            mem=[int(jobs.mem_per_node[i]) for i in run],
            gpu_mask=np.array([e[1] for e in entries], dtype=np.uint64))
        d = plan_nodes(cluster, running, jobs.take(waiting), int(t), policy, depth, available,
                       resolution=resolution, window=window)
        expect = {ids[i] for i in np.flatnonzero(start == t)}
        assert set(d.starts.tolist()) == expect, t
        for i in np.flatnonzero(d.outcome == 0):
            j = int(d.job_id[i])
            assert d.nodes_of(i).tolist() == out[j][2]
            assert d.gpu_masks_of(i).tolist() == [sum(1 << k for k in gl) for gl in out[j][3]]


def test_hold_ends_on_the_absolute_grid():
    """One node (1 GPU, 2 CPUs), r = 10. A (1 GPU, 1 CPU, limit 4) runs from 0 and
    holds until 10; B (whole node) is reserved at 10; C (1 CPU, limit 5) starts at
    2 because its hold [2, 7) ends at 10 on the grid, not after B's reservation.
    With r = 1, B is reserved at 4 and C waits behind it. (On a grid that moved
    with now, B would be reserved at 11 and C, held until 12, could not start.)"""
    from fastsched import Cluster, JobTable
    cluster = Cluster(["n0"], [2], [1], [0])
    jobs = JobTable.from_arrays(job_id=[1, 2, 3], submit_time=[0, 1, 2], time_limit=[4, 10, 5],
                                runtime=[4, 10, 5], num_nodes=[1, 1, 1], cpus_per_node=[1, 2, 1],
                                gpus_per_node=[1, 1, 0], mem_per_node=[0, 0, 0])
    for policy in ("easy", "conservative"):
        for r, starts in ((1, [0, 4, 14]), (10, [0, 7, 2])):
            run = run_nodes(cluster, jobs, policy, resolution=r)
            assert run.start.tolist() == starts, (policy, r)
            out = twin_run(cluster, None, jobs, policy, 1, r, None)
            assert [out[j][0] for j in (1, 2, 3)] == starts, (policy, r)


def _one_node_profile(steps):
    """A one-node profile with breakpoints at 0, 10, 20, ... and the free (g, c, m) ``steps``."""
    p = profile.new_profile(np.array([len(steps) + 4]))
    for k, v in enumerate(steps):
        p.WT[k], p.WG[k], p.WC[k], p.WM[k] = 10 * k, v, 2 * v, 3 * v
    p.wlen[0] = len(steps)
    return p


@settings(max_examples=17, deadline=None)
@given(steps=st.lists(st.integers(4, 8), min_size=1, max_size=6), s=st.integers(0, 70),
       length=st.integers(1, 40), g=st.integers(0, 4))
def test_a_hold_split_in_two_is_the_hold(steps, s, length, g):
    """The pass splits a node's profile, lets the run index read the covered
    segments, then takes (:func:`_split` twice, :func:`_take`): the same profile
    as :func:`_hold`."""
    whole, split = _one_node_profile(steps), _one_node_profile(steps)
    profile._hold(0, s, s + length, g, g, g, whole)
    a = profile._split(0, s, split)
    b = profile._split(0, s + length, split)
    profile._take(0, a, b, g, g, g, split)
    for got, want in zip(profile.profile_of(split, 0), profile.profile_of(whole, 0)):
        assert got.tolist() == want.tolist()


def test_the_per_node_profile_kernels_are_inlined():
    """Called per node of every hold, a call passing the 8-array Profile field
    by field costs more than their work (B3)."""
    for kernel in (profile._split, profile._take):
        assert kernel.targetoptions["inline"] == "always"
