"""B5's whole-replay cost per job as the job count grows (issue 17): ai-mix on ai-100k
under the site's Fair Tree priorities, limits and EASY, at several sizes in one process.

    python benchmarks/b5_growth.py [--jobs 10000,30000,100000,300000] [--repeat 1]

Prints per size the wall and CPU seconds of the whole simulate_site run (inputs built
before the clock starts; a 200-job run on ai-8k first loads the compiled kernels), the
CPU microseconds per job, the passes and the peak RSS so far; then the growth exponent
of CPU time over job count (least squares on log-log; 1.0 = linear).
"""
import argparse
import resource
import statistics
import time

import numpy as np

from fastsched.bench.machine import machine
from fastsched.bench.scenarios import ai_mix_site_inputs, ai_mix_site_run


def run(sizes, repeat):
    ai_mix_site_run(*ai_mix_site_inputs(200, "ai-8k"))
    rows = []
    for n in sizes:
        inputs = ai_mix_site_inputs(n)
        walls, cpus = [], []
        for _ in range(repeat):
            t, c = time.perf_counter(), time.process_time()
            result = ai_mix_site_run(*inputs)
            walls.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        rows.append((n, wall, cpu))
        print(f"{n:>9,} jobs: wall {wall:8.1f} s  CPU {cpu:8.1f} s  "
              f"{cpu / n * 1e6:7.0f} us CPU/job  passes {result.summary['passes']:,}  "
              f"peak RSS {rss:,.0f} MB", flush=True)
    if len(rows) > 1:
        n, _, cpu = (np.array(c, dtype=float) for c in zip(*rows))
        slope = np.polyfit(np.log(n), np.log(cpu), 1)[0]
        print(f"growth exponent of CPU time over jobs: {slope:.2f}; "
              f"CPU per job, largest / smallest: x{cpu[-1] / n[-1] / (cpu[0] / n[0]):.2f}")
    print(f"machine: {machine()}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", default="10000,30000,100000,300000")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    run([int(x) for x in args.jobs.split(",")], args.repeat)


if __name__ == "__main__":
    main()
