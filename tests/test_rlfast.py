"""fastsched.tools.rlfast (RLScheduler's window in arrays, Numba kernels) against its plain
twins: the same decisions give RLWindow's trajectory (tests of the simulator) and the
plain environment's observations, masks and rewards bit for bit (tests/naive_gym.py)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastsched.tools.rlfast import FastWindow
from fastsched.tools.rlsim import RLJobs, RLWindow


@st.composite
def traces(draw, min_jobs=1):
    """Small traces with what RLScheduler's meet: equal and out-of-order submits, runs
    over their request, nodes of several (or a fractional number of) processors, waits
    past the 12 h the observation clips at."""
    n = draw(st.integers(min_jobs, 40))
    scale = draw(st.sampled_from([1, 600, 20_000]))
    gaps = draw(st.lists(st.integers(-3, 12), min_size=n, max_size=n))
    submit = np.maximum(np.cumsum(gaps), 0) * scale
    nodes = draw(st.integers(1, 8))
    procs_total = draw(st.sampled_from([nodes, 2 * nodes, 4 * nodes, 3 * nodes + 1]))
    run = np.array(draw(st.lists(st.integers(1, 60), min_size=n, max_size=n))) * scale
    slack = np.array(draw(st.lists(st.integers(-20, 30), min_size=n, max_size=n))) * scale
    procs = draw(st.lists(st.integers(1, procs_total), min_size=n, max_size=n))
    jobs = RLJobs("hypothesis", np.arange(1, n + 1), submit.astype(np.int64),
                  run.astype(np.int64), np.maximum(run + slack, 1).astype(np.int64),
                  np.array(procs, dtype=np.int64), nodes, procs_total)
    # a job the machine cannot hold would wait forever in either
    return jobs if max(jobs.nodes()) <= nodes else jobs_clipped(jobs)


def jobs_clipped(jobs):
    ppn = jobs.procs_per_node
    procs = np.array([p if math.ceil(p / ppn) <= jobs.machine_nodes else 1
                      for p in jobs.procs.tolist()], dtype=np.int64)
    return RLJobs(jobs.path, jobs.job_id, jobs.submit, jobs.run, jobs.request, procs,
                  jobs.machine_nodes, jobs.machine_procs)


def _same_state(fast, plain):
    submit = plain.submit
    assert fast.queue == sorted(plain.queue, key=submit.__getitem__)
    assert fast.running == plain.running
    assert fast.started == plain.started
    assert (fast.now, fast.free, fast.decisions, fast.done) == \
        (plain.now, plain.free, plain.decisions, plain.done)
    for j in plain.running:
        assert (fast.end[j], fast.estimate[j]) == (plain.end[j], plain.estimate[j])


@settings(max_examples=180, deadline=None)
@given(jobs=traces(), data=st.data(), backfill=st.booleans())
def test_the_fast_window_runs_the_plain_windows_trajectory(jobs, data, backfill):
    start = data.draw(st.integers(0, len(jobs) - 1))
    length = data.draw(st.integers(1, len(jobs) - start))
    plain = RLWindow(jobs, start, length, backfill=backfill)
    fast = FastWindow(jobs, length, backfill=backfill)
    fast.reset(start)
    _same_state(fast, plain)
    while not plain.done:
        plain.queue.sort(key=plain.submit.__getitem__)
        job = plain.queue[data.draw(st.integers(0, len(plain.queue) - 1))]
        fill = data.draw(st.sampled_from([None, False, True]))
        assert fast.run(job, fill) == plain.run(job, fill)
        _same_state(fast, plain)


def test_a_fast_window_refuses_a_job_not_queued_and_a_window_outside_the_trace():
    jobs = RLJobs("hand", np.arange(1, 4), np.array([0, 5, 9]), np.array([10, 10, 10]),
                  np.array([10, 10, 10]), np.array([2, 2, 2]), 2, 2)
    fast = FastWindow(jobs, 3, backfill=False)
    with pytest.raises(ValueError):
        fast.reset(1)
    fast.reset(0)
    with pytest.raises(ValueError, match="not queued"):
        fast.run(1)
    assert (fast.queue, fast.started, fast.free) == ([0], [], 2)    # nothing changed
    arrays = (np.empty((128, 5), np.float32), np.empty(3, np.float32),
              np.empty((8, 2), np.float32), np.empty(128, np.int8))
    while not fast.step(0, None, *arrays):
        pass
    with pytest.raises(ValueError, match="nothing is queued"):
        fast.step(0, None, *arrays)
    assert [t for _, t in fast.started] == [0, 10, 20]


gymnasium = pytest.importorskip("gymnasium")
from fastsched.gym import RLSchedulerEnv  # noqa: E402
from naive_gym import PlainRLSchedulerEnv  # noqa: E402


def _same(obs_a, info_a, obs_b, info_b):
    assert obs_a.keys() == obs_b.keys()
    for key in obs_b:
        assert obs_a[key].dtype == obs_b[key].dtype and obs_a[key].shape == obs_b[key].shape
        assert obs_a[key].tobytes() == obs_b[key].tobytes(), key
    assert info_a.keys() == info_b.keys() and info_a["now"] == info_b["now"]
    assert info_a["action_mask"].dtype == info_b["action_mask"].dtype
    assert info_a["action_mask"].tobytes() == info_b["action_mask"].tobytes()


@settings(max_examples=120, deadline=None)
@given(jobs=traces(min_jobs=5), data=st.data(),
       backfill=st.sampled_from([False, True, "agent"]),
       metric=st.sampled_from(["bsld", "wait", "utilisation"]))
def test_the_environment_observes_and_rewards_as_the_plain_one_bit_for_bit(
        jobs, data, backfill, metric):
    window = data.draw(st.integers(1, (len(jobs) - 2) // 2))
    options = dict(window=window, backfill=backfill, metric=metric,
                   queue_size=data.draw(st.integers(1, 12)), profile=data.draw(st.integers(0, 6)))
    fast, plain = RLSchedulerEnv(jobs, **options), PlainRLSchedulerEnv(jobs, **options)
    for episode in range(2):
        seed = data.draw(st.integers(0, 2**16))
        _same(*fast.reset(seed=seed), *plain.reset(seed=seed))
        while True:
            row = data.draw(st.integers(-30, 30))     # rows past the queue wrap around
            action = np.array([row, data.draw(st.integers(0, 1))]) if backfill == "agent" \
                else row
            a, b = _outcome(fast.step, action), _outcome(plain.step, action)
            if isinstance(b, Exception):      # a zero span: utilisation is 0 / 0 in both
                assert type(a) is type(b) and metric == "utilisation"
                break
            _same(a[0], a[4], b[0], b[4])
            assert a[1:4] == b[1:4] and type(a[1]) is type(b[1])
            if b[2]:
                break


def _outcome(step, action):
    try:
        return step(action)
    except ZeroDivisionError as e:
        return e


def test_lublin_windows_give_the_plain_environments_bits():
    from fastsched.io.swf import bundled_trace
    from fastsched.tools.rlscheduler import read_rl_trace
    jobs = read_rl_trace(bundled_trace("lublin_256"))
    rng = np.random.default_rng(7)
    for backfill in (False, True):
        fast, plain = RLSchedulerEnv(jobs, backfill=backfill), \
            PlainRLSchedulerEnv(jobs, backfill=backfill)
        for seed in range(2):
            _same(*fast.reset(seed=seed), *plain.reset(seed=seed))
            done = False
            while not done:
                action = int(rng.integers(0, 128))
                a, b = fast.step(action), plain.step(action)
                _same(a[0], a[4], b[0], b[4])
                assert a[1:4] == b[1:4]
                done = b[2]
