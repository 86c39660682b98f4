"""EASY on large traces: fastsched's counts model against the plain-Python
textbook simulator (benchmarks/textbook_easy.py), side by side in one process.

For each workload it checks that both give the same start times, then times
them alternately (textbook, engine, run_counts, textbook, ...) ``--repeat``
times after one warm-up each, and prints medians (min-max) of wall and CPU
time and the ratios of the medians:

* ``engine``: :func:`fastsched.engine.counts.run_counts_runs`, starts, ends and
  every job's nodes as runs (what the counts model computes);
* ``run_counts``: :func:`fastsched.engine.counts.run_counts`, the same run
  expanded to one node index per allocated node (the EngineRun the simulator
  takes today; O(sum of job sizes) memory);
* ``textbook``: start times only, from plain rows (converted outside the timing).

Workloads: KTH-SP2 (bundled), and the seeded SWF-like workloads of
benchmarks/swf_like.py: ``lanl-cm5`` (1,024 nodes, 122,060 jobs), ``mira``
(49,152 nodes, 22,508 jobs) and ``big-50k`` (50,000 nodes, 25,000 whole-node
jobs). Run: ``PYTHONPATH=src python benchmarks/easy_vs_textbook.py --repeat 5``.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import swf_like  # noqa: E402
import textbook_easy  # noqa: E402


def workloads(names):
    import fastsched
    for name in names:
        if name == "kth-sp2":
            trace = fastsched.read_swf(fastsched.bundled_trace("KTH-SP2"))
            yield name, trace.procs, trace.jobs
        else:
            nodes, jobs = swf_like.generate(name)
            yield name, nodes, jobs


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def fmt(xs):
    return f"{statistics.median(xs):.4f} ({min(xs):.4f}-{max(xs):.4f})"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", nargs="*", default=["kth-sp2", "lanl-cm5", "mira", "big-50k"])
    args = ap.parse_args(argv)
    from fastsched import Cluster
    from fastsched.engine.counts import run_counts, run_counts_runs
    for name, nodes, jobs in workloads(args.only):
        cluster = Cluster.homogeneous(nodes)
        rows = textbook_easy.jobs_from_table(jobs)
        runners = {"textbook": lambda: textbook_easy.simulate_easy(rows, nodes),
                   "engine": lambda: run_counts_runs(cluster, jobs, "easy"),
                   "run_counts": lambda: run_counts(cluster, jobs, "easy")}
        outs = {k: f() for k, f in runners.items()}          # warm-up, and the check
        same = (np.array_equal(np.asarray(outs["textbook"]), outs["engine"].start)
                and np.array_equal(outs["engine"].start, outs["run_counts"].start))
        wall = {k: [] for k in runners}
        cpu = {k: [] for k in runners}
        for _ in range(args.repeat):
            for k, f in runners.items():
                _, w, c = timed(f)
                wall[k].append(w)
                cpu[k].append(c)
        runs = outs["engine"].nodes
        print(f"{name}: {nodes} nodes, {len(jobs)} jobs, {int(jobs.num_nodes.sum())} node "
              f"slots, {len(runs.first)} runs; same starts: {same}")
        for k in runners:
            print(f"  {k:10s} wall {fmt(wall[k])} s  cpu {fmt(cpu[k])} s")
        tb = statistics.median(wall["textbook"])
        for k in ("engine", "run_counts"):
            print(f"  textbook / {k}: x{tb / statistics.median(wall[k]):.1f} wall, "
                  f"x{statistics.median(cpu['textbook']) / statistics.median(cpu[k]):.1f} cpu")


if __name__ == "__main__":
    main()
