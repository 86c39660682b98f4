"""SWF-like synthetic workloads of two machine shapes the stored traces lack
(/work/shared/traces/SOURCES.md has neither LANL-CM5 nor a 49k-node log).

Documented generator, seeded, plain NumPy:

* ``lanl-cm5``: the shape of the Parallel Workloads Archive's LANL-CM5 log
  (1,024 nodes, about 122k jobs over two years; partitions of 32 to 1,024
  nodes, powers of two).
* ``mira``: the shape of a 49,152-node Blue Gene/Q log (22,508 jobs; blocks
  of 512 nodes and up, powers of two and a few multiples; about 2,000 nodes per
  job on average). ``big-50k``: the same jobs, 25,000 of them, on 50,000 nodes.

Both draw: job sizes from the machine's allowed sizes (weights falling with
size), runtimes log-uniform from 1 minute to the limit class, requested limits
from a few classes (runtime <= limit; 5% of jobs run to their limit and are
killed there), and Poisson arrivals at a rate that offers ``load`` times the
machine's node-seconds (0.5 for lanl-cm5, whose 1,024-node jobs keep EASY
below 60% busy; 0.75 for the others), so queues build up and EASY backfills. Job ids 1..n in
submit order. Nothing here is fitted to a real log: it is a workload of that
shape, for timing, not for statistics.
"""
from __future__ import annotations

import numpy as np

_BGQ_SIZES = [512, 1024, 2048, 4096, 8192, 12_288, 16_384, 32_768, 49_152]
_BGQ_WEIGHTS = [50, 24, 12, 7, 4, 1.2, 1.2, 0.5, 0.3]
_BGQ_LIMITS = [1800, 6 * 3600, 12 * 3600, 24 * 3600]
SHAPES = {
    # name: (nodes, jobs, sizes, size weights, limit classes in s, offered load)
    "lanl-cm5": (1024, 122_060, [32, 64, 128, 256, 512, 1024], [40, 25, 15, 10, 6, 4],
                 [900, 3600, 3 * 3600, 12 * 3600], 0.5),
    "mira": (49_152, 22_508, _BGQ_SIZES, _BGQ_WEIGHTS, _BGQ_LIMITS, 0.75),
    "big-50k": (50_000, 25_000, _BGQ_SIZES, _BGQ_WEIGHTS, _BGQ_LIMITS, 0.75),
}


def generate(shape: str, *, jobs: int | None = None, load: float | None = None,
             seed: int = 1):
    """(num_nodes, JobTable) of an SWF-like workload of ``shape`` (see module doc)."""
    from fastsched import JobTable
    nodes, n, sizes, weights, limits, default_load = SHAPES[shape]
    n = n if jobs is None else jobs
    load = default_load if load is None else load
    rng = np.random.default_rng(seed)
    w = np.asarray(weights, dtype=float)
    size = rng.choice(np.asarray(sizes), size=n, p=w / w.sum())
    limit = rng.choice(np.asarray(limits), size=n)
    runtime = np.exp(rng.uniform(np.log(60), np.log(limit))).astype(np.int64)
    runtime = np.where(rng.random(n) < 0.05, limit + 60, runtime)
    mean_work = float(np.mean(size * np.minimum(runtime, limit)))
    gap = mean_work / (nodes * load)
    submit = np.cumsum(rng.exponential(gap, size=n)).astype(np.int64)
    table = JobTable.from_arrays(job_id=np.arange(1, n + 1), submit_time=submit,
                                 time_limit=limit, runtime=runtime, num_nodes=size)
    return nodes, table


def write_swf(path, nodes: int, table) -> None:
    """Write ``table`` as an SWF file (18 fields; one processor per node)."""
    with open(path, "w") as f:
        f.write(f"; MaxNodes: {nodes}\n; MaxProcs: {nodes}\n")
        for i in range(len(table)):
            p = int(table.num_nodes[i])
            f.write(f"{int(table.job_id[i])} {int(table.submit_time[i])} -1 "
                    f"{int(table.runtime[i])} {p} -1 -1 {p} {int(table.time_limit[i])} "
                    "-1 1 -1 -1 -1 -1 -1 -1 -1\n")
