"""``fastsched replay-report``: what Slurm did (a sacct dump's recorded schedule) vs a
policy replayed on the same jobs, side by side."""
from __future__ import annotations

import argparse

from ..sim.replay import replay_report
from .argtypes import positive_int
from .common import load_sacct, policy_args, print_skipped, summary_table, write_atomic


def configure(parser: argparse.ArgumentParser, command: str) -> None:
    parser.description = (
        "Replay the jobs of a 'sacct --parsable2' dump on the site's slurm.conf under a "
        "policy and compare with what Slurm recorded: waits, job completion times, bounded "
        "slowdown and utilisation side by side, per partition (or account, user), and the "
        "jobs whose start moved most; --plots DIR draws wait CDFs and utilisation over "
        "time. Each job is submitted when it became eligible (or, when it waits for "
        "parents in the dump, at its submit time) and runs as long as its last run did "
        "(docs/site-inputs.md).")
    parser.add_argument("sacct", help="sacct --parsable2 dump (plain, .gz, .xz, .bz2)")
    parser.add_argument("--cluster", metavar="slurm.conf",
                        help="the site's slurm.conf (or ai-8k / ai-100k / ai-1m)")
    policy_args(parser)
    parser.add_argument("--tz", default="UTC", metavar="ZONE",
                        help="the time zone sacct printed its times in (default UTC)")
    parser.add_argument("--skip-bad", action="store_true",
                        help="leave malformed lines out (listed) instead of stopping")
    parser.add_argument("--by", choices=("partition", "account", "user"), default="partition",
                        help="the breakdown table's grouping (default: partition)")
    parser.add_argument("--top", type=positive_int, default=10, metavar="N",
                        help="list the N jobs whose start moved most (default 10)")
    parser.add_argument("--jobs-out", metavar="FILE.csv",
                        help="write the per-job comparison (both starts, waits, bounded "
                        "slowdowns, moved) as CSV")
    parser.add_argument("--plots", metavar="DIR",
                        help="write PNG figures to DIR (created): wait_cdf.png (the CDF of "
                        "waits, recorded and replayed) and utilisation.png (GPUs in use "
                        "over time, nodes on a cluster without GPUs, both schedules); needs "
                        "matplotlib (pip install 'fastsched[plot]')")
    parser.add_argument("--show-skipped", action="store_true", help="list every record left out")
    parser.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    parser.set_defaults(run=run)


def run(args) -> int:
    cluster, log = load_sacct(args.sacct, args.cluster, tz=args.tz, skip_bad=args.skip_bad)
    for note in log.notes:
        print(f"note: {args.sacct}: {note}")
    report = replay_report(cluster, log, args.policy, reserve_depth=args.reserve_depth,
                           reservations=args.reservations,
                           progress=False if args.no_progress else None)
    for note in report.notes:
        print(f"note: {args.sacct}: {note}")
    print(f"{args.sacct}: {len(log.workload):,} jobs on {args.cluster}: what Slurm did vs "
          f"{args.policy} replayed")
    print(summary_table([("recorded (Slurm)", report.recorded),
                         (f"{args.policy} (replayed)", report.replayed)]))
    print(f"\nper {args.by} (mean wait in s, mean bounded slowdown):")
    print(report.by(args.by).to_string(float_format=lambda v: f"{v:,.1f}"))
    moved = report.moved_most(args.top)
    print(f"\nthe {len(moved)} job(s) whose start moved most (moved = replayed - recorded "
          "start, s):")
    print(moved[["job_id", "user", "partition", "recorded_wait", "replayed_wait", "moved"]]
          .to_string(index=False))
    print_skipped(log.skipped, show_all=args.show_skipped, what="record(s) left out")
    if args.plots:
        for path in write_plots(report, cluster, args.plots, args.policy):
            print(f"wrote {path}")
    if args.jobs_out:
        write_atomic(lambda path: report.jobs.to_csv(path, index=False), args.jobs_out)
        print(f"wrote {len(report.jobs):,} job comparisons to {args.jobs_out}")
    return 0


def write_plots(report, cluster, folder, policy: str) -> list[str]:
    """The figures of ``--plots``: wait CDFs and utilisation, recorded vs replayed."""
    import os
    from ..tools import plots
    schedules = report.schedules(policy)
    unit = "gpus" if int(cluster.gpus.sum()) else "nodes"
    capacity = int(cluster.gpus.sum()) if unit == "gpus" else cluster.num_nodes
    figures = {"wait_cdf.png": plots.cdf(schedules, metric="wait",
                                         title="wait: what Slurm did vs " + policy),
               "utilisation.png": plots.utilisation(schedules, unit=unit, capacity=capacity,
                                                    title=f"{unit} in use: what Slurm did vs "
                                                    + policy)}
    os.makedirs(folder, exist_ok=True)
    written = []
    for name, fig in figures.items():
        path = os.path.join(folder, name)
        write_atomic(fig.savefig, path)
        written.append(path)
    return written
