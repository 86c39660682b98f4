"""``fastsched research``: research modes that reproduce published simulators' results."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..tools.rlscheduler import reproduce, trace_path
from .argtypes import int_in, positive_int
from .common import write_atomic


def configure(parser: argparse.ArgumentParser, command: str) -> None:
    parser.description = ("Research modes: reproduce a published simulator's semantics "
                          "exactly, apart from fastsched's Slurm semantics.")
    sub = parser.add_subparsers(title="modes", metavar="MODE")
    p = sub.add_parser("rlscheduler", help="RLScheduler (SC'20) Tables V and VI: FCFS, "
                       "WFP3, UNI, SJF, F1 on its windows", description=(
                           "Schedule RLScheduler's test windows of a trace under its "
                           "heuristics with its simulator's rules (see "
                           "fastsched.tools.rlscheduler) and print the mean bounded "
                           "slowdown (tau = 10 s, Table V) and utilisation (Table VI), "
                           "with the paper's rows when the trace is one of its Lublin "
                           "traces."))
    p.add_argument("--trace", required=True,
                   help="SWF trace, or a bundled one by file name (lublin_256.swf.xz, "
                   "lublin_256_new2.swf.xz)")
    p.add_argument("--backfill", action="store_true",
                   help="RLScheduler's backfilling (FCFS scan, strict shadow)")
    p.add_argument("--seed", type=int_in(0, 2**32 - 1), default=1,
                   help="seed of the window starts (default: 1, the paper's)")
    p.add_argument("--windows", type=positive_int, default=10, help="default: 10")
    p.add_argument("--length", type=positive_int, default=1024,
                   help="jobs per window (default: 1024)")
    p.add_argument("--json", metavar="FILE", help="also write every window's values as JSON")
    p.set_defaults(run=run)
    parser.set_defaults(run=lambda args: parser.print_help() or 2)


def run(args) -> int:
    table = reproduce(trace_path(args.trace), backfill=args.backfill, seed=args.seed,
                      windows=args.windows, length=args.length)
    print(table.format())
    if args.json:
        data = {"trace": table.trace, "backfill": table.backfill, "seed": table.seed,
                "starts": table.starts, "length": table.length,
                "per_window": table.per_window}
        text = json.dumps(data, indent=1) + "\n"
        write_atomic(lambda path: Path(path).write_text(text), args.json)
    return 0
