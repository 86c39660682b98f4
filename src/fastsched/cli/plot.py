"""``fastsched plot``: figures of schedules (jobs CSVs) and sweeps (results tables)."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..model.errors import InputError
from ..tools import plots
from ..tools.sweep import read_results
from .argtypes import positive_int
from .common import write_atomic

KINDS = ("gantt", "util", "queue", "cdf", "sweep")


def configure(parser: argparse.ArgumentParser, command: str) -> None:
    parser.description = (
        "Plot a schedule (a jobs CSV from 'simulate --jobs-out'): gantt (nodes x time), "
        "util (nodes, CPUs or GPUs in use over time), queue (pending jobs over time); "
        "several schedules: cdf (wait, completion time or bounded slowdown, one line per "
        "file); a sweep's results table: sweep (a metric against a parameter, one line per "
        "policy). Needs matplotlib (pip install 'fastsched[plot]').")
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="jobs CSV(s); with --kind sweep, a sweep table (.csv or .parquet)")
    parser.add_argument("--kind", choices=KINDS, required=True, help="what to plot")
    parser.add_argument("-o", "--output", metavar="FIG",
                        help="image file: .png, .svg or .pdf (default: KIND.png)")
    parser.add_argument("--title", help="the figure's title")
    parser.add_argument("--color-by", metavar="COLUMN",
                        help="gantt: colour jobs by this column (e.g. partition); default: "
                        "by job")
    parser.add_argument("--unit", choices=["nodes", "procs", "gpus"], default="nodes",
                        help="util: what to count (default: nodes)")
    parser.add_argument("--capacity", type=positive_int,
                        help="util: the machine's size in --unit, to plot the share in use")
    parser.add_argument("--metric", help="cdf: wait (default), jct or bsld; sweep: a "
                        "metric column (default: avg_bounded_slowdown)")
    parser.add_argument("--label", action="append", metavar="NAME",
                        help="cdf: the legend name of each FILE, in order (default: the "
                        "file names)")
    parser.add_argument("--x", default="reserve_depth", metavar="COLUMN",
                        help="sweep: the parameter on x (default: reserve_depth; e.g. order, "
                        "seed)")
    parser.add_argument("--by", default="policy", metavar="COLUMN",
                        help="sweep: one line per value of this column (default: policy)")
    parser.set_defaults(run=run)


def run(args) -> int:
    if args.kind not in ("cdf",) and len(args.files) > 1:
        raise InputError(f"--kind {args.kind} plots one file; cdf takes several",
                         field="files")
    if args.label and len(args.label) != len(args.files):
        raise InputError(f"{len(args.label)} --label for {len(args.files)} files",
                         field="--label")
    fig = _figure(args)
    output = args.output or f"{args.kind}.png"
    write_atomic(fig.savefig, output)
    print(f"wrote {output}")
    return 0


def _figure(args):
    path = args.files[0]
    if args.kind == "sweep":
        return plots.sweep_plot(read_results(path), metric=args.metric or "avg_bounded_slowdown",
                                x=args.x, by=args.by, title=args.title)
    if args.kind == "cdf":
        labels = args.label or [Path(f).name for f in args.files]
        return plots.cdf({label: plots.read_jobs(f) for label, f in zip(labels, args.files)},
                         metric=args.metric or "wait", title=args.title)
    jobs = plots.read_jobs(path)
    if args.kind == "gantt":
        return plots.gantt(jobs, color_by=args.color_by, title=args.title)
    if args.kind == "util":
        return plots.utilisation(jobs, unit=args.unit, capacity=args.capacity,
                                 title=args.title)
    return plots.queue_length(jobs, title=args.title)
