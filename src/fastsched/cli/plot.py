"""``fastsched plot``: figures of schedules (jobs CSVs) and sweeps (results tables), and
the one-page HTML report of several schedules."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..io.workload import read_workload
from ..model.errors import InputError
from ..policy.config import SchedulerConfig, load_config
from ..tools import plots
from ..tools.generate import load_cluster
from ..tools.report import report_html
from ..tools.sweep import read_results
from ..tools.usagehistory import DEFAULT_SAMPLES, account_usage, schedule_times
from .argtypes import positive_int
from .common import write_atomic

KINDS = ("gantt", "util", "queue", "cdf", "sweep", "fairshare", "report")
#: kinds that take several jobs CSVs
_SEVERAL = ("cdf", "report")


def configure(parser: argparse.ArgumentParser, command: str) -> None:
    parser.description = (
        "Plot a schedule (a jobs CSV from 'simulate --jobs-out'): gantt (nodes x time), "
        "util (nodes, CPUs or GPUs in use over time), queue (pending jobs over time); "
        "several schedules: cdf (wait, completion time or bounded slowdown, one line per "
        "file); a sweep's results table: sweep (a metric against a parameter, one line per "
        "policy); fairshare (decayed usage per account over time, as the site's priority "
        "model computes it: needs --workload and --cluster, and --config for a site); "
        "report (one self-contained HTML page: summary table of every file side by side "
        "and their plots, fair share too with --workload). Needs matplotlib (pip install "
        "'fastsched[plot]').")
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="jobs CSV(s) (or .parquet / .arrow) of simulate --jobs-out; "
                        "with --kind sweep, a sweep table (.csv or .parquet)")
    parser.add_argument("--kind", choices=KINDS, required=True, help="what to plot")
    parser.add_argument("-o", "--output", metavar="FIG",
                        help="image file: .png, .svg or .pdf (default: KIND.png); report: "
                        "an .html file (default: report.html)")
    parser.add_argument("--title", help="the figure's title")
    parser.add_argument("--color-by", metavar="COLUMN",
                        help="gantt: colour jobs by this column (e.g. partition); default: "
                        "by job")
    parser.add_argument("--unit", choices=["nodes", "procs", "gpus"], default="nodes",
                        help="util, report: what to count (default: nodes)")
    parser.add_argument("--capacity", type=positive_int,
                        help="util, report: the machine's size in --unit, to plot (and "
                        "report) the share in use")
    parser.add_argument("--metric", help="cdf: wait (default), jct or bsld; sweep: a "
                        "metric column (default: avg_bounded_slowdown)")
    parser.add_argument("--label", action="append", metavar="NAME",
                        help="cdf, report: the name of each FILE, in order (default: the "
                        "file names)")
    parser.add_argument("--x", default="reserve_depth", metavar="COLUMN",
                        help="sweep: the parameter on x (default: reserve_depth; e.g. order, "
                        "seed)")
    parser.add_argument("--by", default="policy", metavar="COLUMN",
                        help="sweep: one line per value of this column (default: policy)")
    site = parser.add_argument_group("fair share (fairshare, report)")
    site.add_argument("--workload", metavar="WORKLOAD.csv",
                      help="the workload CSV the schedules ran (its users, accounts, QOS)")
    site.add_argument("--cluster", help="slurm.conf, or ai-8k / ai-100k / ai-1m (with "
                      "--workload)")
    site.add_argument("--config", metavar="CFG.toml", help="the site's scheduler "
                      "configuration (default: Slurm's defaults, the workload's accounts)")
    site.add_argument("--depth", type=positive_int, default=1, metavar="D",
                      help="accounts this many levels below the root (default 1: the top "
                      "level)")
    site.add_argument("--top", type=positive_int, default=10, metavar="N",
                      help="a line for each of the N accounts of highest peak usage, one "
                      "for the rest (default 10)")
    site.add_argument("--share", action="store_true",
                      help="each account's share of all usage instead of its usage")
    site.add_argument("--samples", type=positive_int, default=DEFAULT_SAMPLES, metavar="N",
                      help=f"sample times, evenly spaced (default {DEFAULT_SAMPLES})")
    parser.set_defaults(run=run)


def run(args) -> int:
    if args.kind not in _SEVERAL and len(args.files) > 1:
        raise InputError(f"--kind {args.kind} plots one file; cdf and report take several",
                         field="files")
    if args.label and len(args.label) != len(args.files):
        raise InputError(f"{len(args.label)} --label for {len(args.files)} files",
                         field="--label")
    if args.kind == "fairshare" and not args.workload:
        raise InputError("--kind fairshare needs --workload (and --cluster)",
                         field="--workload")
    if args.workload and not args.cluster:
        raise InputError("--workload needs --cluster", field="--cluster")
    if args.kind == "report":
        output = args.output or "report.html"
        text = _report(args)
        write_atomic(lambda path: open(path, "w", encoding="utf-8").write(text), output)
    else:
        fig = _figure(args)
        output = args.output or f"{args.kind}.png"
        write_atomic(fig.savefig, output)
    print(f"wrote {output}")
    return 0


def _schedules(args) -> dict:
    labels = args.label or [Path(f).name for f in args.files]
    return {label: plots.read_jobs(f) for label, f in zip(labels, args.files)}


def _usage(args, jobs, source: str):
    """Account usage over time of one schedule, from --workload/--cluster/--config."""
    config = load_config(args.config) if args.config else SchedulerConfig()
    cluster = config.apply_partitions(load_cluster(args.cluster))
    workload = read_workload(args.workload, cluster, strict=True)
    start, end = schedule_times(jobs, workload, source=source)
    return account_usage(config, workload, start, end, samples=args.samples,
                         depth=args.depth)


def _report(args) -> str:
    schedules = _schedules(args)
    usage = None
    if args.workload:
        usage = {label: _usage(args, jobs, f)
                 for (label, jobs), f in zip(schedules.items(), args.files)}
    return report_html(schedules, title=args.title, capacity=args.capacity,
                       unit=args.unit, usage=usage)


def _figure(args):
    path = args.files[0]
    if args.kind == "sweep":
        return plots.sweep_plot(read_results(path), metric=args.metric or "avg_bounded_slowdown",
                                x=args.x, by=args.by, title=args.title)
    if args.kind == "cdf":
        return plots.cdf(_schedules(args), metric=args.metric or "wait", title=args.title)
    jobs = plots.read_jobs(path)
    if args.kind == "fairshare":
        return plots.fairshare(_usage(args, jobs, path), top=args.top, share=args.share,
                               title=args.title)
    if args.kind == "gantt":
        return plots.gantt(jobs, color_by=args.color_by, title=args.title)
    if args.kind == "util":
        return plots.utilisation(jobs, unit=args.unit, capacity=args.capacity,
                                 title=args.title)
    return plots.queue_length(jobs, title=args.title)
