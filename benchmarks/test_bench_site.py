"""B5 `ai-mix-1m` at a small size: ai-mix jobs on ai-100k under a site's multifactor
priorities (Fair Tree, age, a 5-minute PriorityCalcPeriod, GPU billing) and EASY.

Run:   python -m pytest benchmarks/test_bench_site.py --benchmark-enable
Smoke: python -m pytest benchmarks/test_bench_site.py --benchmark-disable -q

The full size (1,000,000 jobs, one run of minutes) is ``fastsched bench ai-mix-1m``;
``--jobs N`` runs a smaller one. Generating the workload is never timed.
"""
from __future__ import annotations

import pytest

from fastsched.bench.scenarios import ai_mix_site_inputs, ai_mix_site_run

JOBS = 1_000


@pytest.fixture(scope="module")
def b5_inputs():
    return ai_mix_site_inputs(JOBS)


def test_ai_mix_site_small(benchmark, b5_inputs):
    benchmark.group = "B5 ai-mix (small)"
    benchmark.extra_info["jobs"] = JOBS
    result = benchmark.pedantic(ai_mix_site_run, args=b5_inputs, rounds=3, warmup_rounds=1,
                                iterations=1)
    assert result.summary["passes"] > 0 and (result.schedule.start_time >= 0).any()
    if benchmark.stats is not None:     # None with --benchmark-disable
        benchmark.extra_info["decisions_per_s"] = round(JOBS / benchmark.stats.stats.median)
