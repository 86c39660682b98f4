"""What planning with preemptable capacity costs the embeddable Scheduler, and that it
decides as the simulator: benchmarks/preempt_backfill.py's inputs (ai-8k with a
scavenger partition) driven through a Scheduler at the simulator's instants
(tests/scheddrive.py's drive), with ``Preemption.backfill`` off and on:
passes, CPU seconds in ``schedule`` (per pass), preempted attempts, and whether every
attempt equals ``simulate``'s. A warm-up run (easy) loads the kernels first.

    python benchmarks/scheduler_preempt_backfill.py [JOBS] [SCAVENGER_SHARE]
"""
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fastsched import Scheduler, simulate  # noqa: E402
from fastsched.model.preemption import REQUEUE, Preemption  # noqa: E402
from preempt_backfill import inputs  # noqa: E402
import scheddrive  # noqa: E402


def run(c, jobs, lc, policy: str, backfill: bool) -> str:
    pre = replace(Preemption.partition_prio(c, REQUEUE), backfill=backfill)
    s = Scheduler(c, policy, jobs=jobs, preemption=pre, lifecycle=lc)
    spent, passes = [0.0], [0]
    schedule = s.schedule

    def timed(now, **kw):
        t0 = time.process_time()
        d = schedule(now, **kw)
        spent[0] += time.process_time() - t0
        passes[0] += 1
        return d
    s.schedule = timed
    got = scheddrive.drive(s, jobs, lc).attempts
    same = got == scheddrive.simulated(simulate(c, jobs, policy, preemption=pre, lifecycle=lc))
    return (f"{policy:12s} backfill={backfill!s:5s}: {passes[0]} passes, {spent[0]:.2f} s CPU "
            f"in schedule ({1000 * spent[0] / max(passes[0], 1):.2f} ms/pass); preempted "
            f"attempts {sum(a[4] for a in got)}; equal to simulate: {same}")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1500
    share = float(sys.argv[2]) if len(sys.argv) > 2 else 0.3
    c, jobs, lc = inputs(n, share)
    run(c, jobs, lc, "easy", False)          # warm-up
    for policy in ("easy", "conservative"):
        for backfill in (False, True):
            print(run(c, jobs, lc, policy, backfill), flush=True)


if __name__ == "__main__":
    main()
