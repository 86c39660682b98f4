"""`rl-env` (benchmarks/RESULTS.md): fastsched.gym steps with a trivial policy, in-process.

Run:   python -m pytest benchmarks/test_bench_rl_env.py --benchmark-enable
Smoke: python -m pytest benchmarks/test_bench_rl_env.py --benchmark-disable -q

Per backfilling mode, one pytest-benchmark group holds: the environment (default
profile=8, and profile=0), the plain-Python environment it replaced (tests/naive_gym.py,
same observations bit for bit) and the plain RLScheduler simulator alone making the same
FCFS decisions (the research mode, tools.rlsim). Each timed call runs the same 20 Lublin-1
windows of 256 jobs; ``extra_info["steps"]`` / the time is steps/s (``fastsched bench
rl-env`` prints it).
"""
from __future__ import annotations

import pytest

gymnasium = pytest.importorskip("gymnasium")

from fastsched.gym import RLSchedulerEnv  # noqa: E402
from fastsched.io.swf import bundled_trace  # noqa: E402
from fastsched.tools.rlscheduler import (policy_keys, read_rl_trace, schedule_window,  # noqa: E402
                                         window_starts)

ROUNDS = 7
WINDOW = 256


@pytest.fixture(scope="module")
def lublin():
    jobs = read_rl_trace(bundled_trace("lublin_256"))
    return jobs, window_starts(len(jobs), seed=0, windows=20, length=WINDOW)


def _steps(jobs, starts, backfill):
    keys = policy_keys(jobs, "FCFS")
    return sum(schedule_window(jobs, s, WINDOW, keys, backfill=backfill).decisions
               for s in starts)


def _episodes(env, starts):
    def run():
        for s in starts:
            env.reset(seed=0, options={"start": s})
            while not env.step(0)[2]:
                pass
    return run


@pytest.mark.parametrize("backfill", [False, True])
@pytest.mark.parametrize("profile", [8, 0])
def test_rl_env_fast(benchmark, lublin, backfill, profile):
    jobs, starts = lublin
    benchmark.group = f"rl-env backfill={backfill}"
    benchmark.extra_info.update(engine="fastsched.gym", profile=profile,
                                steps=_steps(jobs, starts, backfill))
    env = RLSchedulerEnv(jobs, window=WINDOW, backfill=backfill, profile=profile)
    benchmark.pedantic(_episodes(env, starts), rounds=ROUNDS, warmup_rounds=1, iterations=1)


@pytest.mark.parametrize("backfill", [False, True])
def test_rl_env_plain(benchmark, lublin, backfill):
    from naive_gym import PlainRLSchedulerEnv   # tests/, on sys.path via conftest
    jobs, starts = lublin
    benchmark.group = f"rl-env backfill={backfill}"
    benchmark.extra_info.update(engine="plain env (tests/naive_gym.py)", profile=8,
                                steps=_steps(jobs, starts, backfill))
    env = PlainRLSchedulerEnv(jobs, window=WINDOW, backfill=backfill)
    benchmark.pedantic(_episodes(env, starts), rounds=ROUNDS, warmup_rounds=1, iterations=1)


@pytest.mark.parametrize("backfill", [False, True])
def test_rl_simulator_plain(benchmark, lublin, backfill):
    jobs, starts = lublin
    keys = policy_keys(jobs, "FCFS")
    benchmark.group = f"rl-env backfill={backfill}"
    benchmark.extra_info.update(engine="plain simulator (tools.rlsim)",
                                steps=_steps(jobs, starts, backfill))

    def run():
        for s in starts:
            schedule_window(jobs, s, WINDOW, keys, backfill=backfill)
    benchmark.pedantic(run, rounds=ROUNDS, warmup_rounds=1, iterations=1)
