"""``fastsched compile``: compile every kernel now, into Numba's on-disk cache."""
from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser, command: str) -> None:
    parser.description = (
        "Compile every compiled kernel of the engine now (the node engine, the embedded "
        "scheduler, the Slurm model, priorities and fair share) into Numba's on-disk cache, "
        "so that no later process waits for it. Run once after installing or updating; "
        "a kernel whose source is unchanged is loaded, not compiled again.")
    parser.add_argument("--quiet", action="store_true", help="print nothing")
    parser.set_defaults(run=run)


def run(args) -> int:
    from ..tools.precompile import compile_all
    seconds = compile_all(announce=not args.quiet)
    if not args.quiet:
        print(f"every kernel compiled or loaded from the cache in {seconds:.1f} s")
    return 0
