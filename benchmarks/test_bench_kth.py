"""B4 `kth-easy` (benchmarks/RESULTS.md): the whole KTH-SP2 trace, in-process.

Run:   python -m pytest benchmarks/ --benchmark-enable
Smoke: python -m pytest benchmarks/ --benchmark-disable -q   (each benchmark runs once)

The compiled engine and the naive pure-Python twin (tests/naive.py) are in the
same pytest-benchmark group per policy, so one run reports both medians and
pytest-benchmark's relative column gives the naive/fast ratio directly.
Only the simulation is timed: the trace is parsed once per session (conftest),
and the naive job list is built outside the timed call.
"""
from __future__ import annotations

import pytest

import fastsched

FAST_ROUNDS = 7      # >= 7 timed runs per policy, plus one warm-up
NAIVE_ROUNDS = {"easy": 5, "conservative": 3}   # naive conservative takes tens of seconds per run


@pytest.mark.parametrize("policy", ["easy", "conservative", "fcfs"])
def test_kth_fast(benchmark, kth, policy):
    trace, cluster = kth
    benchmark.group = f"B4 kth {policy}"
    benchmark.extra_info.update(engine="fastsched", policy=policy,
                                jobs=len(trace.jobs), procs=trace.procs)
    result = benchmark.pedantic(fastsched.simulate, args=(cluster, trace.jobs, policy),
                                rounds=FAST_ROUNDS, warmup_rounds=1, iterations=1)
    assert result.summary["policy"] == policy
    assert len(result.jobs) == len(trace.jobs)


@pytest.mark.parametrize("policy", ["easy", "conservative"])
def test_kth_naive(benchmark, kth, policy):
    import naive  # tests/naive.py, on sys.path via conftest

    trace, _ = kth
    jobs = naive.jobs_from_table(trace.jobs)
    benchmark.group = f"B4 kth {policy}"
    benchmark.extra_info.update(engine="naive (tests/naive.py)", policy=policy,
                                jobs=len(jobs), procs=trace.procs)
    result = benchmark.pedantic(naive.simulate, args=(jobs, trace.procs, policy),
                                rounds=NAIVE_ROUNDS[policy], warmup_rounds=0, iterations=1)
    assert len(result) == len(jobs)
