"""fastsched.gym: the RLScheduler environment is env_checker-clean, seeded, vectorises,
and driven by a heuristic it schedules exactly as the research mode does."""
import warnings

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402

from fastsched.gym import ENV_ID, RLSchedulerEnv  # noqa: E402
from fastsched.io.swf import bundled_trace  # noqa: E402
from fastsched.model.errors import InputError  # noqa: E402
from fastsched.tools.rlscheduler import read_rl_trace, reproduce  # noqa: E402


@pytest.fixture(scope="module")
def lublin():
    return read_rl_trace(bundled_trace("lublin_256"))


@pytest.mark.parametrize("backfill", [False, True, "agent"])
def test_env_checker_is_clean(backfill, lublin):
    env = gymnasium.make(ENV_ID, trace=lublin, backfill=backfill)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)


def _episode(env, seed, policy):
    obs, info = env.reset(seed=seed)
    env.action_space.seed(seed)
    trail = [obs["jobs"].copy()]
    while True:
        obs, reward, terminated, truncated, info = env.step(policy(env))
        trail.append(obs["jobs"].copy())
        if terminated:
            return reward, trail


def test_seeded_episodes_repeat(lublin):
    env = RLSchedulerEnv(lublin, window=64, backfill=True)
    a = _episode(env, 5, lambda e: e.action_space.sample())
    b = _episode(env, 5, lambda e: e.action_space.sample())
    c = _episode(env, 6, lambda e: e.action_space.sample())
    assert a[0] == b[0] and all((x == y).all() for x, y in zip(a[1], b[1]))
    assert len(a[1]) == len(b[1]) and a[0] != c[0]


@pytest.mark.parametrize("backfill", [False, True])
@pytest.mark.parametrize("metric", ["bsld", "utilisation"])
def test_the_oldest_job_every_step_is_the_research_modes_fcfs(lublin, backfill, metric):
    table = reproduce(lublin, backfill=backfill, windows=2)
    env = RLSchedulerEnv(lublin, window=1024, backfill=backfill, metric=metric)
    for start, want in zip(table.starts, table.per_window[metric]["FCFS"]):
        env.reset(seed=0, options={"start": start})
        while True:
            _, reward, terminated, _, info = env.step(0)
            if terminated:
                break
        assert reward == (-want if metric == "bsld" else want)


def test_the_agents_backfill_flag_is_the_windows_backfilling(lublin):
    for flag in (0, 1):
        fixed = RLSchedulerEnv(lublin, window=200, backfill=bool(flag))
        agent = RLSchedulerEnv(lublin, window=200, backfill="agent")
        r1, _ = _episode(fixed, 3, lambda e: 0)
        r2, _ = _episode(agent, 3, lambda e: np.array([0, flag]))
        assert r1 == r2


def test_rows_past_the_queue_wrap_and_the_mask_marks_the_jobs(lublin):
    env = RLSchedulerEnv(lublin, window=64)
    obs, info = env.reset(seed=1)
    queued = int(obs["jobs"][:, 4].sum())
    assert info["action_mask"].tolist() == [1] * queued + [0] * (128 - queued)
    env.step(127)                            # wraps onto a queued job: no error


def test_vectorised_environments_step_together(lublin):
    vec = gymnasium.make_vec(ENV_ID, num_envs=3, vectorization_mode="sync",
                             trace=lublin, window=32)
    obs, info = vec.reset(seed=2)
    assert obs["jobs"].shape == (3, 128, 5)
    for _ in range(40):
        obs, reward, terminated, truncated, info = vec.step(np.zeros(3, dtype=np.int64))
    vec.close()


@pytest.mark.parametrize("kwargs", [{"metric": "jct"}, {"backfill": "yes"},
                                    {"window": 6000}, {"queue_size": 0},
                                    {"profile": -1}])
def test_bad_parameters_are_input_errors(lublin, kwargs):
    with pytest.raises(InputError):
        RLSchedulerEnv(lublin, **kwargs)


def test_the_bench_scenario_measures_env_and_simulator_side_by_side():
    from fastsched.bench.scenarios import run_scenario
    fig = run_scenario("rl-env", repeat=1, windows=2)
    for key in ("sim_steps_per_s", "env_steps_per_s", "env_steps_per_s_noprofile",
                "sim_steps_per_s_backfill", "env_steps_per_s_backfill",
                "env_steps_per_s_cpu", "sim_steps_per_s_backfill_cpu"):
        assert fig[key] > 0
    assert fig["env_steps_per_s_vs_sim"] > 0 and "-" in fig["env_steps_per_s_spread"]


def test_the_profile_is_the_free_nodes_after_each_estimated_end(lublin):
    env = RLSchedulerEnv(lublin, window=128, profile=4)
    env.reset(seed=4)
    for _ in range(30):
        obs, *_ = env.step(0)
    win, prof = env.unwrapped.win, obs["profile"]
    ends = sorted((win.estimate[j], win.nodes[j]) for j in win.running)[:4]
    free = win.free
    for row, (end, nodes) in zip(prof, ends):
        free += nodes
        assert row[0] == pytest.approx(min((end - win.now) / 43200, 1.0))
        assert row[1] == pytest.approx(free / 256)
    assert (prof[len(ends):] == [0, 1]).all()
    plain = RLSchedulerEnv(lublin, window=128, profile=0)
    assert set(plain.reset(seed=4)[0]) == set(plain.observation_space) == {"jobs", "cluster"}
