"""``fastsched demo``: the bundled KTH-SP2 trace under the three policies, verified."""
from __future__ import annotations

import argparse

from ..io.swf import bundled_trace
from ..sim.simulator import simulate_swf
from ..verify import verify
from .argtypes import machine_size
from .common import summary_table


def configure(parser: argparse.ArgumentParser, command: str) -> None:
    parser.description = ("Replay the bundled KTH-SP2 trace (Parallel Workloads "
                        "Archive) under the three policies, verify each schedule, and print the "
                        "summaries side by side.")
    parser.add_argument("--trace", help="another SWF trace instead of the bundled one")
    parser.add_argument("--procs", type=machine_size, help="machine size (default: from the header)")
    parser.set_defaults(run=run)


def run(args) -> int:
    trace = args.trace or bundled_trace("KTH-SP2")
    results = []
    for policy in ("fcfs", "easy", "conservative"):
        r = simulate_swf(trace, policy, procs=args.procs, progress=False)
        report = verify(r.cluster, r.workload, r.schedule, policy=policy)
        r.summary["verified"] = "ok" if report.ok else f"{len(report.violations)} violations"
        results.append((policy, r.summary))
    first = results[0][1]
    print(f"{trace}\n{first['nodes']} processors, {first['jobs']:,} jobs "
          f"({first['skipped']} skipped); every schedule checked by fastsched.verify\n")
    print(summary_table(results, extra=[("verified", "verified", "{}")]))
    print("\nSemantics: " + "; ".join(f"{k}: {v}" for k, v in first["semantics"].items()))
    return 0 if all(s["verified"] == "ok" for _, s in results) else 1
