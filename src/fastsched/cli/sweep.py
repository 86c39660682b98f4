"""``fastsched sweep``: run a grid of simulations from a sweep file into one table."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from ..tools.sweep import EXECUTORS, TIMING_COLUMNS, load_sweep, run_sweep
from ..tools.sweepfile import cell_key
from .argtypes import positive_int

#: metrics the command prints per cell (the table holds every summary metric)
SHOWN = ["avg_wait", "avg_bounded_slowdown", "utilisation"]
#: at most this many rows printed (the table has them all)
MAX_SHOWN_ROWS = 40


def configure(parser: argparse.ArgumentParser, command: str) -> None:
    parser.description = (
        "Run every simulation of a grid (traces x seeds x policies x reserve depths x\n"
        "queue orders x reservation models, read from a TOML sweep file: docs/sweeps.md)\n"
        "and gather one row per cell (its configuration and summary metrics) into one\n"
        "table. Resumable: after an interruption, the same command runs only the cells\n"
        "missing from the output.")
    parser.epilog = ("example sweep file:\n"
                     "  policies = [\"fcfs\", \"easy\", \"conservative\"]\n"
                     "  reserve_depths = [1, 4]        # EASY only\n"
                     "  orders = [\"submit\", \"SJF\", \"WFP3\"]\n"
                     "  seeds = [1, 2]                 # generated workloads only\n"
                     "  [[trace]]\n"
                     "  path = \"KTH-SP2\"               # bundled, or relative to the sweep file\n"
                     "  [[trace]]\n"
                     "  generate = \"ai-mix\"\n"
                     "  cluster = \"ai-8k\"\n"
                     "  jobs = 2000\n")
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("sweep", help="sweep file (TOML)")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="results table: .csv, .csv.gz, or .parquet (needs "
                        "fastsched[parquet]); default: the sweep file's name with .csv, in "
                        "the current directory. Finished rows also go to FILE.partial as "
                        "they come, until the table is written")
    parser.add_argument("--executor", choices=list(EXECUTORS), default="process",
                        help="process (a local process pool, default), dask (a local Dask "
                        "cluster, or --address; fastsched[dask]), ray (a local Ray instance, "
                        "or --address; fastsched[ray]) or serial (this process)")
    parser.add_argument("--workers", type=positive_int,
                        help="worker processes (default: the number of CPUs)")
    parser.add_argument("--address", help="with dask or ray: the scheduler or cluster to "
                        "use instead of a local one (e.g. tcp://host:8786, or auto for ray)")
    parser.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    parser.set_defaults(run=run)


def run(args) -> int:
    grid = load_sweep(args.sweep)
    output = args.output or f"{Path(args.sweep).name.rsplit('.', 1)[0]}.csv"
    print(f"{args.sweep}: {len(grid):,} cells, executor {args.executor}")
    try:
        frame = run_sweep(grid, output, executor=args.executor, workers=args.workers,
                          address=args.address, progress=False if args.no_progress else None)
    except KeyboardInterrupt:
        print(f"fastsched: the finished cells are kept in {output}.partial; the same command "
              "goes on from them", file=sys.stderr)
        raise
    keys = {cell_key(c.config()) for c in grid.cells}
    rows = frame[[cell_key(r) in keys for r in frame.to_dict("records")]]
    print(_table(rows))
    failed = rows["error"].notna().sum()
    if failed:
        print(f"{failed} cell(s) could not run (the error column says why; a rerun tries "
              "them again)")
    print(f"ran {frame.attrs['cells_run']:,} cell(s); {len(grid) - frame.attrs['cells_run']:,} "
          "were done already")
    print(f"wrote {len(frame):,} rows to {output} (timing columns: "
          f"{', '.join(TIMING_COLUMNS)})")
    return 0


def _table(rows) -> str:
    """The cells' varying configuration columns and the ``SHOWN`` metrics, as text."""
    config = [c for c in ("trace", "seed", "policy", "reserve_depth", "order", "reservations")
              if rows[c].nunique(dropna=False) > 1] or ["policy"]
    shown = rows[config + SHOWN].head(MAX_SHOWN_ROWS)
    text = pd.DataFrame({c: [_cell(v) for v in shown[c]] for c in shown.columns}).to_string(
        index=False)
    if len(rows) > MAX_SHOWN_ROWS:
        text += f"\n... {len(rows) - MAX_SHOWN_ROWS:,} more rows in the table"
    return text


def _cell(value) -> str:
    if pd.isna(value):
        return "-"
    return f"{value:,.3f}" if isinstance(value, float) else str(value)
