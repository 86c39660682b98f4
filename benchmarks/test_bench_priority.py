"""B1 `priority-1m`: Fair Tree + multifactor priority for 1,000,000 pending jobs of 2,000 users.

Run: python -m pytest benchmarks/test_bench_priority.py --benchmark-enable
"""
import pytest

from fastsched.bench.scenarios import priority_1m_inputs, priority_1m_pass


@pytest.fixture(scope="module")
def b1_inputs():
    return priority_1m_inputs()


def test_priority_1m(benchmark, b1_inputs):
    benchmark.group = "B1 priority-1m"
    prio = benchmark.pedantic(priority_1m_pass, args=b1_inputs, rounds=7, warmup_rounds=1,
                              iterations=1)
    assert len(prio) == len(b1_inputs[2]) and prio.min() >= 1
