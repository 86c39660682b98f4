"""``fastsched bench``: run a standard benchmark scenario."""
from __future__ import annotations

import argparse
import json

from ..bench.scenarios import SCENARIOS, SUMMARIES
from ..bench.scenarios import format_figures, run_scenario
from ..model.errors import InputError
from ..tools.generate import CLUSTERS
from .argtypes import choice_of, comma_list, failure_model, positive_int


def configure(parser: argparse.ArgumentParser, command: str) -> None:
    parser.description = ("Run a standard benchmark scenario in-process and print "
                        "decisions per second, the median wall time over several runs (after a "
                        "warm-up) and the peak RSS.")
    parser.add_argument("scenario", choices=sorted(SCENARIOS), help="; ".join(
        f"{name}: {text}" for name, text in SUMMARIES.items()))
    parser.add_argument("--repeat", type=positive_int, default=7, help="timed runs (default 7)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument("--jobs", type=positive_int, metavar="N",
                        help="ai-mix-1m only: simulate N jobs (default 1,000,000; one run)")
    parser.add_argument("--clusters", type=comma_list(choice_of(CLUSTERS)), metavar="A,B",
                        help="scaling: clusters of the grid (default ai-8k,ai-100k,ai-1m); "
                        "short-queue: the clusters (default ai-100k,ai-1m)")
    parser.add_argument("--pending", type=comma_list(positive_int), metavar="N,M",
                        help="scaling: queue sizes of the grid (default 1000,10000,100000,1000000); "
                        "short-queue: the queue lengths (default 1000)")
    parser.add_argument("--failures", metavar="SPEC", type=_failure_spec,
                        help="ai-mix-1m only: run it again with this failure model (e.g. "
                        "mtbf=30d,repair=4h,seed=1; every job requeueable and checkpointing "
                        "hourly at 60 s) and report both runs and their ratio")
    parser.add_argument("--reservations", type=positive_int, metavar="N",
                        help="easy-100k and conservative-100k only: N advance reservations "
                        "held (32 nodes each, 4 h, opening every 30 min from an hour ago)")
    parser.set_defaults(run=run)


def run(args) -> int:
    own = {"jobs": ("ai-mix-1m",), "clusters": ("scaling", "short-queue"),
           "pending": ("scaling", "short-queue"), "failures": ("ai-mix-1m",),
           "reservations": ("easy-100k", "conservative-100k")}
    options = {k: getattr(args, k) for k in own if getattr(args, k) is not None}
    for k in options:
        if args.scenario not in own[k]:
            raise InputError(f"--{k} is for the {' and '.join(own[k])} scenario"
                             f"{'s' if len(own[k]) > 1 else ''} only", field=f"--{k}")
    figures = run_scenario(args.scenario, repeat=args.repeat, **options)
    print(format_figures(figures))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)
    return 0


def _failure_spec(text: str) -> str:
    """A failure model's text, checked now (before minutes of replay)."""
    failure_model(text)
    return text
