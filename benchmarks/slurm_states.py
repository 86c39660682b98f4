"""One Slurm-model planning cycle on the recorded Slurm states, against Slurm's own
cycle time (sdiag) and the slow twin, in one process.

    python benchmarks/slurm_states.py [--repeat 5] [--twin]

Prints per state: jobs, planned; the fast path's median wall and CPU time over
--repeat runs (after a warm-up, so Numba's compile is excluded) with their spread;
Slurm's last and mean backfill cycle from the state's sdiag.txt, and the ratio of
Slurm's last cycle to the median; with --twin, the pure-Python twin's time once
(tests/naive_slurm.py) and its ratio to the fast path.
"""
import argparse
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import numpy as np  # noqa: E402

from fastsched import plan_state  # noqa: E402
from slurm_states import NAMES, load as load_state  # noqa: E402


def load(name):
    """(cluster, state, now, Slurm's last and mean backfill cycle in seconds)."""
    cluster, state, now, _, sdiag = load_state(name)
    stats = sdiag.split("Backfilling stats")[1]
    last = int(re.search(r"Last cycle: +(\d+)", stats).group(1))
    mean = int(re.search(r"Mean cycle: +(\d+)", stats).group(1))
    return cluster, state, now, last / 1e6, mean / 1e6


def twin_time(cluster, state, now):
    import naive_slurm as ns
    from fastsched.sim.plan import _queue_arrays, _running_arrays, _split
    running, queue = _split(state, now, np.zeros(len(state.pend_id), np.int64))
    end, ptr, nodes, gpus, cores = _running_arrays(state, running)
    run = [ns.Running(int(end[r]), nodes[ptr[r]:ptr[r + 1]].tolist(), int(gpus[r]))
           for r in range(len(end))]
    k, g, c, limit = _queue_arrays(state, queue)
    jobs = [ns.Pending(0, int(k[q]), int(g[q]), int(limit[q])) for q in range(len(k))]
    twin = ns.Cluster(cluster.gpus.tolist(), np.asarray(cluster.cpus).tolist())
    t = time.perf_counter()
    ns.plan(twin, run, jobs, now, resolution=60, window=7 * 86400)
    return time.perf_counter() - t


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--twin", action="store_true", help="also time the pure-Python twin")
    args = p.parse_args()
    for name in NAMES:
        cluster, state, now, slurm_last, slurm_mean = load(name)
        plan_state(cluster, state, now)                      # warm-up (compile, caches)
        walls, cpus = [], []
        for _ in range(args.repeat):
            w, c = time.perf_counter(), time.process_time()
            out = plan_state(cluster, state, now)
            walls.append(time.perf_counter() - w)
            cpus.append(time.process_time() - c)
        med = statistics.median(walls)
        line = (f"{name}: {len(out.job_id)} jobs, {int((out.start >= 0).sum())} planned; "
                f"wall {med * 1e3:.1f} ms ({min(walls) * 1e3:.1f}-{max(walls) * 1e3:.1f}), "
                f"CPU {statistics.median(cpus) * 1e3:.1f} ms; Slurm's cycle last "
                f"{slurm_last:.2f} s, mean {slurm_mean:.2f} s: x{slurm_last / med:.0f} "
                f"(last) x{slurm_mean / med:.0f} (mean)")
        if args.twin:
            t = twin_time(cluster, state, now)
            line += f"; twin {t:.2f} s: x{t / med:.0f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
