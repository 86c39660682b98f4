"""What planning with preemptable capacity (``Preemption.backfill``) costs: ai-mix jobs
on ai-8k with a scavenger partition (all nodes, PriorityTier 0, a share of the jobs)
that batch (tier 1) and interactive (tier 2) jobs preempt (partition_prio, REQUEUE),
simulated under EASY and conservative with and without it, in one process: CPU and
wall seconds of each run (after a warm-up run that loads the kernels; with REPEAT > 1
the runs alternate off/on and the medians and spreads are printed), the load average,
and what the schedule did (preempted attempts, GPU-hours lost).

    python benchmarks/preempt_backfill.py [JOBS] [SCAVENGER_SHARE] [REPEAT]
"""
import os
import statistics
import sys
import time
from dataclasses import replace

import numpy as np

from fastsched import simulate
from fastsched.model.cluster import Partition
from fastsched.model.jobs import JobTable
from fastsched.model.preemption import REQUEUE, Preemption
from fastsched.tools.generate import ai_cluster, ai_mix


def inputs(num_jobs: int, share: float):
    c = ai_cluster("ai-8k")
    parts = list(c.partitions) + [Partition("scavenger", np.arange(c.num_nodes),
                                            priority_tier=0, max_time=14 * 86_400)]
    c = replace(c, partitions=parts)
    w = ai_mix(c, num_jobs, seed=1)
    rng = np.random.default_rng(2)
    jobs = w.jobs
    scav = (rng.random(len(jobs)) < share) & (jobs.partition == 0)
    jobs = JobTable(**{**jobs.to_dict(),
                       "partition": np.where(scav, len(parts) - 1, jobs.partition)})
    return c, jobs, w.lifecycle(True, 121)


def run(c, jobs, lc, policy: str, backfill: bool):
    pre = replace(Preemption.partition_prio(c, REQUEUE), backfill=backfill)
    t0, c0 = time.perf_counter(), time.process_time()
    r = simulate(c, jobs, policy, preemption=pre, lifecycle=lc)
    return r, time.perf_counter() - t0, time.process_time() - c0


def main(argv):
    num_jobs = int(argv[1]) if len(argv) > 1 else 20_000
    share = float(argv[2]) if len(argv) > 2 else 0.3
    repeat = int(argv[3]) if len(argv) > 3 else 1
    c, jobs, lc = inputs(num_jobs, share)
    run(c, jobs.take(np.arange(min(300, len(jobs)))), None, "easy", True)     # warm-up
    for policy in ("easy", "conservative"):
        times = {False: [], True: []}
        for _ in range(repeat):
            for backfill in (False, True):
                r, wall, cpu = run(c, jobs, lc, policy, backfill)
                times[backfill].append((wall, cpu))
                p = r.summary["preemption"]
                print(f"{policy:12s} backfill={backfill!s:5s} wall {wall:7.2f} s  cpu {cpu:7.2f} s"
                      f"  preempted attempts {p['preempted_attempts']:,}"
                      f"  lost GPU-h {p['lost_gpu_hours']:,.0f}"
                      f"  load {os.getloadavg()[0]:.1f}", flush=True)
        if repeat > 1:
            med = {b: [statistics.median(x[k] for x in times[b]) for k in (0, 1)]
                   for b in times}
            spread = {b: [(min(x[k] for x in times[b]), max(x[k] for x in times[b]))
                          for k in (0, 1)] for b in times}
            print(f"{policy:12s} median wall / cpu: off {med[False][0]:.2f} / "
                  f"{med[False][1]:.2f} s ({spread[False][1][0]:.2f}-{spread[False][1][1]:.2f})"
                  f", on {med[True][0]:.2f} / {med[True][1]:.2f} s "
                  f"({spread[True][1][0]:.2f}-{spread[True][1][1]:.2f}): "
                  f"x{med[True][1] / med[False][1]:.2f} CPU", flush=True)


if __name__ == "__main__":
    main(sys.argv)
