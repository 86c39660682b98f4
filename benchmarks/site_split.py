"""Where a B5 site simulation's wall time goes: the compiled event loop
(``_EventLoop.run``) against everything done between its calls at each
PriorityCalcPeriod (the priority function; the engine's progress copies, rank
sort and queue re-sort).

    python benchmarks/site_split.py 100000          # ai-mix jobs on ai-100k, B5's site
    python benchmarks/site_split.py 100000 --old    # the priority function recomputed from
                                                    # every job (tests/test_site_incremental.py)
"""
import argparse
import resource
import sys
import time
from pathlib import Path

import fastsched.sim.site as site
from fastsched.engine import inputs as nodeinputs, loop as nodeloop
from fastsched.bench.scenarios import ai_mix_site_inputs, ai_mix_site_run


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("jobs", type=int)
    p.add_argument("--old", action="store_true", help="the former, non-incremental priorities")
    args = p.parse_args()
    acc = dict.fromkeys(("engine", "priority", "progress", "unique_rank", "set_rank"), 0.0)

    def timed(f, key):
        def g(*a, **k):
            t = time.perf_counter()
            out = f(*a, **k)
            acc[key] += time.perf_counter() - t
            return out
        return g

    loop = nodeloop._EventLoop
    loop.run, loop.progress = timed(loop.run, "engine"), timed(loop.progress, "progress")
    loop.set_rank = timed(loop.set_rank, "set_rank")
    nodeloop._unique_rank = timed(nodeinputs._unique_rank, "unique_rank")
    make = site.priority_function
    if args.old:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        from test_site_incremental import _old_priority_function as make
    site.priority_function = lambda *a: timed(make(*a), "priority")
    ai_mix_site_run(*ai_mix_site_inputs(200, "ai-8k"))      # load the compiled kernels
    acc.update(dict.fromkeys(acc, 0.0))
    inputs = ai_mix_site_inputs(args.jobs)
    t = time.perf_counter()
    result = ai_mix_site_run(*inputs)
    wall = time.perf_counter() - t
    rest = wall - sum(acc.values())
    print(f"{args.jobs} jobs ({'old' if args.old else 'new'}): {wall:.1f} s, "
          f"{result.summary['passes']} passes, peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB")
    print("  " + ", ".join(f"{k} {v:.1f} s ({100 * v / wall:.0f}%)" for k, v in acc.items())
          + f", rest {rest:.1f} s")


if __name__ == "__main__":
    main()
