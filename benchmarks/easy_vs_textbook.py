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
* ``textbook``: start times only, from plain rows (converted outside the timing);
* ``nodes`` and ``simulate-nodes``: the nodes model (reservations on concrete
  nodes), :func:`fastsched.engine.run_nodes` and the whole
  ``simulate(..., reservations="nodes")`` with its summary; its starts are the
  nodes model's (not the textbook's), so they are not compared here (whole-node
  runs: tests/test_wholenode.py); ``--general`` adds ``nodes-general``, the same
  run through the general pass instead of the whole-node one (slow on big machines);
* ``before`` (with ``--old DIR``): ``run_counts`` of an earlier commit, imported as
  the package ``fastsched_old`` from DIR (``git archive C | tar -x -C D``,
  ``python setup.py build_ext --inplace`` in D, ``cp -r D/src/fastsched
  DIR/fastsched_old``); its starts and nodes must equal ``run_counts``'.

Peak memory: what ``tracemalloc`` saw during one more run of each (NumPy reports
its arrays to it), apart from the timing.

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
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import swf_like  # noqa: E402
import textbook_easy  # noqa: E402


def workloads(names, count=None):
    import fastsched
    for name in names:
        if name == "kth-sp2":
            trace = fastsched.read_swf(fastsched.bundled_trace("KTH-SP2"))
            yield name, trace.procs, trace.jobs
        else:
            nodes, jobs = swf_like.generate(name, jobs=count)
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
    ap.add_argument("--old", help="a directory holding the package fastsched_old")
    ap.add_argument("--jobs", type=int, help="only the first N jobs of the SWF-like workloads")
    ap.add_argument("--general", action="store_true",
                    help="also time the nodes model's general pass (nodes-general)")
    args = ap.parse_args(argv)
    from fastsched import Cluster, simulate
    from fastsched.engine import loop as engine_loop
    from fastsched.engine import run_nodes
    from fastsched.engine.counts import run_counts, run_counts_runs
    old = None
    if args.old:                      # after fastsched: the other way round, Cython mixes them
        sys.path.insert(0, args.old)
        from fastsched_old.engine.counts import run_counts as old
        from fastsched_old import Cluster as OldCluster
    for name, nodes, jobs in workloads(args.only, args.jobs):
        cluster = Cluster.homogeneous(nodes)
        rows = textbook_easy.jobs_from_table(jobs)
        runners = {"textbook": lambda: textbook_easy.simulate_easy(rows, nodes),
                   "engine": lambda: run_counts_runs(cluster, jobs, "easy"),
                   "run_counts": lambda: run_counts(cluster, jobs, "easy"),
                   "nodes": lambda: run_nodes(cluster, jobs, "easy"),
                   "simulate-nodes": lambda: simulate(cluster, jobs, "easy",
                                                      reservations="nodes")}
        if args.general:
            runners["nodes-general"] = lambda: _general(engine_loop, run_nodes, cluster, jobs)
        if old is not None:
            old_cluster = OldCluster.homogeneous(nodes)
            runners["before"] = lambda: old(old_cluster, jobs, "easy")
        outs = {k: f() for k, f in runners.items()}          # warm-up, and the check
        same = (np.array_equal(np.asarray(outs["textbook"]), outs["engine"].start)
                and np.array_equal(outs["engine"].start, outs["run_counts"].start))
        if args.general:
            a, b = outs["nodes"], outs["nodes-general"]
            same = same and all(np.array_equal(getattr(a, f), getattr(b, f)) for f in
                                ("start", "end", "alloc_offsets", "alloc_nodes"))
        if old is not None:
            a, b = outs["before"], outs["run_counts"]
            same = same and all(np.array_equal(getattr(a, f), getattr(b, f)) for f in
                                ("start", "end", "alloc_offsets", "alloc_nodes"))
        outs = None
        peak = {}
        for k, f in runners.items():
            tracemalloc.start()
            f()
            peak[k] = tracemalloc.get_traced_memory()[1] / 1e6
            tracemalloc.stop()
        wall = {k: [] for k in runners}
        cpu = {k: [] for k in runners}
        for _ in range(args.repeat):
            for k, f in runners.items():
                _, w, c = timed(f)
                wall[k].append(w)
                cpu[k].append(c)
        runs = run_counts_runs(cluster, jobs, "easy").nodes
        checked = "same starts" + (" and nodes as before" if old else "") + \
            (", nodes model: same records from both passes" if args.general else "")
        print(f"{name}: {nodes} nodes, {len(jobs)} jobs, {int(jobs.num_nodes.sum())} node "
              f"slots, {len(runs.first)} runs; {checked}: {same}")
        for k in runners:
            print(f"  {k:10s} wall {fmt(wall[k])} s  cpu {fmt(cpu[k])} s  "
                  f"peak {peak[k]:.1f} MB")
        tb = statistics.median(wall["textbook"])
        for k in [k for k in runners if k != "textbook"]:
            print(f"  textbook / {k}: x{tb / statistics.median(wall[k]):.1f} wall, "
                  f"x{statistics.median(cpu['textbook']) / statistics.median(cpu[k]):.1f} cpu")


def _general(engine_loop, run_nodes, cluster, jobs):
    engine_loop.WHOLE_NODE_PASS = False
    try:
        return run_nodes(cluster, jobs, "easy")
    finally:
        engine_loop.WHOLE_NODE_PASS = True


if __name__ == "__main__":
    main()
