"""B9 `short-queue`: ``Scheduler.schedule()`` (conservative) repeated on an unchanged
state, ai-100k 85% busy with 1,000 pending (fastsched.bench.shortqueue), with the
engine state kept between passes and with the pure pass (``plan_nodes`` afresh).

Run:   python -m pytest benchmarks/test_bench_shortqueue.py --benchmark-enable
Smoke: python -m pytest benchmarks/test_bench_shortqueue.py --benchmark-disable -q

ai-1m (the state takes ~30 s to build): ``fastsched bench short-queue``.
"""
from __future__ import annotations

import pytest

from fastsched.bench.shortqueue import DECISION_FIELDS, _same, short_queue_scheduler

_STATE: dict = {}


def scheduler():
    if not _STATE:
        _STATE["s"] = short_queue_scheduler("ai-100k")
    return _STATE["s"]


@pytest.mark.parametrize("mode", ["kept", "pure"])
def test_b9_short_queue_ai100k(benchmark, mode):
    benchmark.group = "B9 short-queue ai-100k (1k pending, conservative)"
    s, now = scheduler()
    s._keep_state = mode == "kept"
    try:
        d = benchmark.pedantic(s.schedule, args=(now,), rounds=15, warmup_rounds=1,
                               iterations=1)
        s._keep_state = mode != "kept"
        other = s.schedule(now)
    finally:
        s._keep_state = True
    assert all(_same(d, other, f) for f in DECISION_FIELDS)
    assert (d.outcome == 0).sum() > 0
