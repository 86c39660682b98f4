"""`place-512`: a 512-node job placed with topology constraints on `ai-100k` (target <= 1 ms).

Run:   python -m pytest benchmarks/test_bench_topology.py --benchmark-enable
Smoke: python -m pytest benchmarks/test_bench_topology.py --benchmark-disable -q

85% of the 12,500 nodes busy (a seeded random free set); tree placement with and
without a --switches limit, block placement (BlockSizes=32,128,512) with and
without --segment. The inputs are built once; only the placement call is timed.
The naive twin (tests/naive_topology.py) is in the same group for the ratio.
"""
from __future__ import annotations

import numpy as np
import pytest

from fastsched.bench.scenarios import PLACE_CASES, place_512_inputs
from fastsched.engine.placement import place_block, place_tree

ROUNDS = 50


@pytest.fixture(scope="module")
def inputs():
    return place_512_inputs()


@pytest.mark.parametrize("name, k", PLACE_CASES)
def test_place_512_fast(benchmark, inputs, name, k):
    cluster, levels, blocks, free = inputs
    benchmark.group = f"place-512 {name}"
    benchmark.extra_info.update(engine="fastsched", free_nodes=len(free))
    if name.startswith("tree"):
        nodes = benchmark.pedantic(place_tree, args=(levels, free, 512),
                                   kwargs={"max_switches": k}, rounds=ROUNDS,
                                   warmup_rounds=1, iterations=1)
    else:
        nodes = benchmark.pedantic(place_block, args=(blocks, free, 512),
                                   kwargs={"segment": k}, rounds=ROUNDS,
                                   warmup_rounds=1, iterations=1)
    assert len(nodes) == 512 and np.isin(nodes, free).all()


@pytest.mark.parametrize("name, k", PLACE_CASES[:1] + PLACE_CASES[2:3])
def test_place_512_naive(benchmark, inputs, name, k):
    import naive_topology

    cluster, levels, blocks, free = inputs
    benchmark.group = f"place-512 {name}"
    benchmark.extra_info.update(engine="naive (tests/naive_topology.py)")
    lv = (levels if name.startswith("tree") else blocks.levels).tolist()
    nodes = benchmark.pedantic(naive_topology.topo_place, args=(free.tolist(), lv, 512, 1, k),
                               rounds=3, warmup_rounds=0, iterations=1)
    assert len(nodes) == 512
