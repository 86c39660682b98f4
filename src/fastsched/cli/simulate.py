"""``fastsched simulate``: replay a trace or workload under a policy and print the summary."""
from __future__ import annotations

import argparse
import hashlib
import sys
from dataclasses import replace

import numpy as np

from ..io.events import read_node_events
from ..model.errors import InputError
from ..sim.images import images_line
from ..sim.power import power_line
from ..sim.lifecycle import has_failures, lifecycle_line, run_lifecycle
from ..sim.preemption import preemption_line, site_preemption
from ..sim.simulator import simulate
from . import build_parser
from .argtypes import duration, failure_model, image_pull, machine_size, power_text, seconds
from .outputs import check_outputs, output_args, write_outputs
from .common import (GPU_TRACE_FORMATS, format_args, gpu_options, load_trace,
                     placement_from_args, policy_args,
                     print_skipped, site_args, summary_table, trace_format, write_atomic)


def configure(parser: argparse.ArgumentParser, command: str) -> None:
    parser.description = ("Replay an SWF trace (plain, .gz or .xz) on its machine "
                        "(P single-processor nodes), or a workload CSV (as written by "
                        "'fastsched generate workload') or a sacct --parsable2 dump on "
                        "--cluster, or a GPU cluster trace (Philly, Alibaba PAI, Helios) on "
                        "--cluster or a cluster derived from the trace, or a GPU job list "
                        "(CSV: id, submit, duration, GPUs), and print the summary.")
    parser.add_argument("trace", nargs="?",
                        help="SWF trace, or workload CSV (.csv, .csv.gz); not with --resume. "
                        "A workload's time_min column (sbatch --time-min, seconds) lets a job "
                        "start with its limit cut down to fit a gap, as Slurm's backfill does "
                        "(nodes model; records' time_limit is the limit it ran with; an "
                        "attempt killed by --events/--failures is requeued asking for its "
                        "full limit again, each attempt's record with its own; "
                        "docs/lifecycle.md)")
    policy_args(parser)
    parser.add_argument("--procs", type=machine_size,
                        help="SWF machine size (default: the MaxProcs/MaxNodes header)")
    parser.add_argument("--cluster", help="for a workload CSV: slurm.conf, or ai-8k / ai-100k / "
                        "ai-1m; its PreemptType (preempt/partition_prio, preempt/qos with "
                        "--config's QOS), PreemptMode (REQUEUE, CANCEL), PreemptExemptTime and "
                        "partitions' PreemptMode/GraceTime apply (docs/lifecycle.md)")
    format_args(parser)
    parser.add_argument("--strict", action="store_true",
                        help="a job that cannot run is an error instead of being skipped")
    parser.add_argument("--summary-json", metavar="FILE", help="write the summary as JSON")
    parser.add_argument("--show-skipped", action="store_true", help="list every skipped job")
    parser.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    parser.add_argument("--events", metavar="FILE.csv",
                        help="node events during the run: CSV time,event,nodes[,reason] with "
                        "event drain (no new job; running ones go on), resume, down (failed: "
                        "its jobs are killed, and requeued when they may be; a job whose "
                        "workload row has no_kill=1 shrinks onto its other nodes while it "
                        "keeps nodes_min of them) or up, nodes a hostlist such as "
                        "gpu[001-004], time in seconds (nodes model; docs/lifecycle.md)")
    parser.add_argument("--failures", metavar="SPEC", type=failure_model,
                        help="seeded node failures: mtbf=30d,repair=4h,seed=1[,dist=weibull,"
                        "shape=0.7][,scope=node|switch][,horizon=90d] (per-node or per-leaf-"
                        "switch lifetimes; docs/lifecycle.md)")
    parser.add_argument("--resv-file", metavar="FILE",
                        help="advance reservations, one per line as `scontrol create "
                        "reservation` takes them: ReservationName=maint StartTime=86400 "
                        "Duration=4:00:00 Nodes=gpu[001-016] Flags=MAINT (DAILY, WEEKLY "
                        "repeat); no job runs on their nodes while they are open, and "
                        "backfill plans none across them (nodes model), but the jobs of the "
                        "workload's reservation column (sbatch --reservation): those run only "
                        "there, starting and ending by their time limit inside a window "
                        "(Flags=FLEX: there or on any other node, before, in or after it)")
    parser.add_argument("--image-pull", metavar="SPEC", type=image_pull,
                        help="container image pulls (the workload's container_image column, "
                        "sbatch --container-image): default=120s,cache=4[,IMAGE=SECONDS...]: "
                        "a job starting on nodes where any lacks its image pulls it first, "
                        "inside its run and time limit; each node caches `cache` images, least "
                        "recently used evicted (nodes model; docs/lifecycle.md)")
    parser.add_argument("--power", metavar="SPEC", type=power_text,
                        help="power saving and cloud bursting, over --cluster's slurm.conf "
                        "SuspendTime, SuspendTimeout, ResumeTimeout, ResumeRate, SuspendRate, "
                        "SuspendExcNodes/Parts and State=CLOUD nodes: boot=60s[,cost=PRICE"
                        "/node-hour][,cloud-cost=PRICE][,boot[PARTITION or HOSTLIST]=5m]"
                        "[,SuspendTime=600,ResumeRate=300...]: "
                        "idle nodes power down after SuspendTime (at most SuspendRate a "
                        "minute: the others stay up until their token), CLOUD nodes start "
                        "down; a "
                        "job given powered-down nodes is CONFIGURING while they boot, its "
                        "start reset to when they are ready; prints cost vs wait (nodes "
                        "model; docs/lifecycle.md). With --events/--failures a drain of a "
                        "booting node requeues its jobs, and a node back from an event is "
                        "idle from then unless powered down")
    pbf = parser.add_mutually_exclusive_group()
    pbf.add_argument("--preempt-backfill", dest="preempt_backfill", action="store_true",
                     default=None,
                     help="with the cluster's PreemptType (the default, as Slurm, which has "
                     "no setting to turn it off): a job that may preempt is planned (EASY's "
                     "reservation, conservative's plan) with the resources of the jobs it "
                     "may preempt free from now, as Slurm's backfill will-run test with "
                     "preemptees: other jobs do not backfill where they would delay it "
                     "(nodes model; docs/lifecycle.md)")
    pbf.add_argument("--no-preempt-backfill", dest="preempt_backfill", action="store_false",
                     help="with the cluster's PreemptType: plan a job that may preempt on "
                     "the free resources only, like any other (not Slurm's behaviour; it "
                     "still preempts after a pass when it cannot start)")
    requeue = parser.add_mutually_exclusive_group()
    requeue.add_argument("--requeue", dest="requeue", action="store_true", default=None,
                         help="a job a node failure kills goes back to the queue unless its "
                         "workload row says no (default: the cluster's JobRequeue, else yes)")
    requeue.add_argument("--no-requeue", dest="requeue", action="store_false",
                         help="a job a node failure kills ends NODE_FAIL unless its workload "
                         "row says requeue")
    parser.add_argument("--regrow", action="store_true",
                        help="a running --no-kill job on fewer nodes than it asks for (shrunk "
                        "by a failure, or started narrow on a node range) takes nodes that "
                        "come back (up/resume events), before that instant's pass, lowest "
                        "first; its work left speeds up in proportion (the malleable model's "
                        "other half; Slurm needs an --dependency=expand helper job and "
                        "SchedulerParameters=permit_job_expansion; docs/lifecycle.md)")
    parser.add_argument("--checkpoint", metavar="FILE",
                        help="save the simulation's state to FILE now and then (written whole: "
                        "temporary file, then rename), to go on later with --resume FILE")
    parser.add_argument("--checkpoint-every", type=duration, default=600, metavar="DURATION",
                        help="wall time between checkpoints: 90, 90s, 10m, 2h (default 10m)")
    parser.add_argument("--resume", metavar="FILE",
                        help="go on from a checkpoint: the same command (read from FILE, on the "
                        "same input files) continues, giving the schedule an uninterrupted run "
                        "gives; output, progress and checkpoint options given here replace the "
                        "saved ones")
    parser.add_argument("--start-times", type=seconds, metavar="T",
                        help="also rebuild the state at time T (running and pending jobs just "
                        "before the pass at T) and print every pending job's expected start, like "
                        "squeue --start (a full conservative plan; times in seconds)")
    parser.add_argument("--csv", metavar="FILE", help="with --start-times: write that table as CSV")
    output_args(parser)
    site_args(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    args, resume = _resumed(args) if args.resume else (args, None)
    if args.trace is None:
        raise InputError("give a trace (or --resume FILE)", field="trace")
    if args.csv and args.start_times is None:
        raise InputError("--csv goes with --start-times T", field="--csv")
    check_outputs(args)
    cluster, workload, jobs, skipped = load_trace(
        args.trace, procs=args.procs, strict=args.strict, cluster_spec=args.cluster,
        fmt=args.format, tz=args.tz, skip_bad=args.skip_bad, gpu=gpu_options(args))
    events = read_node_events(args.events, cluster) if args.events else None
    options = dict(reserve_depth=args.reserve_depth,
                   progress=False if args.no_progress else None,
                   placement=placement_from_args(args, cluster, jobs, workload),
                   reservations=args.reservations, events=events, failures=args.failures,
                   **_planning_grid(args, cluster))
    from ..io.reservations import run_reservations
    resv = run_reservations(args.resv_file, cluster, workload)
    if resv is not None:
        options["advance_reservations"] = resv
    if args.image_pull is not None:
        if workload is None:
            raise InputError("--image-pull needs a workload CSV (its container_image column)",
                             field="--image-pull")
        options["containers"] = workload.containers(args.image_pull)
    if args.power is not None:
        options["power"] = args.power
    config = None
    if args.config:
        from ..policy.config import load_config
        config = load_config(args.config)
    # (under the config's PriorityTier overrides, as simulate_site runs it)
    preemption = site_preemption(cluster if config is None else config.apply_partitions(cluster),
                                 config, None if config is None or workload is None
                                 else config.job_qos(workload))
    if args.preempt_backfill is not None:
        flag = "--preempt-backfill" if args.preempt_backfill else "--no-preempt-backfill"
        if not preemption.active:
            raise InputError(f"{flag} needs the cluster's PreemptType (no job may "
                             "preempt another)", field=flag)
        preemption = replace(preemption, backfill=args.preempt_backfill)
    if preemption.active:
        options["preemption"] = preemption
    ranged = workload is not None and getattr(workload, "nodes_min", None) is not None \
        and bool((workload.nodes_min > 0).any())          # node ranges start on fewer
    if args.failures is not None or has_failures(events) or preemption.active or ranged \
            or (args.regrow and events is not None) \
            or (args.power is not None and events is not None):   # a drain may requeue
        options["lifecycle"] = run_lifecycle(cluster, jobs, workload, args.requeue,
                                             regrow=args.regrow)
    if resume is not None or args.checkpoint:       # (a digest of every job: only then)
        header = {"argv": args.argv, "jobs": _fingerprint(jobs)}
    if resume is not None:
        if resume[0]["jobs"] != header["jobs"]:
            raise InputError("the inputs differ from those of the checkpointed run",
                             file=args.resume)
        options["resume"] = resume[1]
    if args.checkpoint:
        from ..sim.checkpoint import Checkpoints
        options["checkpoints"] = Checkpoints(args.checkpoint, args.checkpoint_every, header)
    if args.order:
        if args.config:
            raise InputError("--order and --config both set the queue order; pick one",
                             field="--order")
        from ..policy.research import research_priority
        options.update(priority=research_priority(args.order, jobs, cluster),
                       period=args.order_period)
    try:
        if args.config:
            if workload is None:
                raise InputError("--config needs a workload CSV (with users and accounts)",
                                 field="--config")
            # the site modules (fair share, limits) only for --config: they load Numba
            from ..sim.site import simulate_site
            result = simulate_site(cluster, workload, config, args.policy,
                                   skipped=skipped, **options)
        else:
            result = simulate(cluster, jobs, args.policy, skipped=skipped,
                              **(workload.constraints() if workload is not None else {}), **options)
    except KeyboardInterrupt:
        if args.checkpoint and options["checkpoints"].saved:
            print(f"fastsched: go on from the last checkpoint with: fastsched simulate "
                  f"--resume {args.checkpoint}", file=sys.stderr)
        raise
    result.summary["trace"] = str(args.trace)
    print(f"{args.trace}: {result.summary['nodes']} nodes, policy {args.policy}"
          + (f" (resumed from {args.resume})" if args.resume else ""))
    print(summary_table([("", result.summary)]))
    if "placement" in result.summary:
        p = result.summary["placement"]
        print(f"placement: {p['mean_groups_spanned']:.2f} leaf groups spanned per job "
              f"(p95 {p['p95_groups_spanned']:.0f}); {p['multi_node_single_group_share']:.1%} "
              f"of {p['multi_node_jobs']:,} multi-node jobs on one leaf")
    if "lifecycle" in result.summary and ("preemption" not in result.summary or
                                          args.failures is not None or has_failures(events)):
        print(lifecycle_line(result.summary))
    if "preemption" in result.summary:
        print(preemption_line(result.summary))
    if "images" in result.summary:
        print(images_line(result.summary))
    if "power" in result.summary:
        print(power_line(result.summary))
    if result.summary.get("never_started") and result.partition is not None:
        names, counts = np.unique(result.reasons()[result.schedule.start_time < 0],
                                  return_counts=True)
        order = np.argsort(-counts, kind="stable")          # most frequent first
        print(f"never started: {result.summary['never_started']:,} job(s): " + ", ".join(
            f"{names[i]} {counts[i]}" for i in order))
    if args.topology is None and workload is not None and workload.exclusive_topo.any():
        print(f"note: {int(workload.exclusive_topo.sum()):,} job(s) ask for --exclusive=topo, "
              "which needs --topology: ignored")
    if trace_format(args.trace, args.format) in ("sacct",) + GPU_TRACE_FORMATS:
        print_skipped(result.skipped, show_all=args.show_skipped, what="record(s) left out")
    else:
        print_skipped(result.skipped, show_all=args.show_skipped)
    write_outputs(args, result, workload)
    if args.summary_json:
        write_atomic(result.summary_json, args.summary_json)
        print(f"wrote summary to {args.summary_json}")
    if args.start_times is not None:
        _print_start_times(result, args.start_times, args.csv,
                           getattr(workload, "user_names", None))
    return 0


def _planning_grid(args, cluster) -> dict:
    """resolution and window: the options, else slurm.conf's SchedulerParameters
    bf_resolution / bf_window (said on a line), else exact and unlimited."""
    resolution, window = args.resolution, args.window
    settings = cluster.settings
    if resolution is None and settings.bf_resolution():
        resolution = settings.bf_resolution()
        print(f"note: bf_resolution={resolution} s from the cluster's SchedulerParameters")
    if window is None and settings.bf_window():
        window = settings.bf_window()
        print(f"note: bf_window={window // 60} min from the cluster's SchedulerParameters")
    return {"resolution": resolution or 1, "window": window}


#: options a --resume command line may give anew (the rest are the checkpointed run's)
RESUME_OPTIONS = ("jobs_out", "sacct_out", "sacct_format", "swf_out", "batsim_out",
                  "summary_json", "no_progress", "checkpoint", "checkpoint_every",
                  "show_skipped")


def _resumed(args):
    """(the checkpointed run's arguments with ``RESUME_OPTIONS`` given now, (header,
    state))."""
    from ..sim.checkpoint import load as load_checkpoint
    header, state = load_checkpoint(args.resume)
    saved = build_parser(header["argv"]).parse_args(header["argv"])
    saved.argv = header["argv"]
    given = vars(build_parser(["simulate"]).parse_args(["simulate"]))
    for name in RESUME_OPTIONS:
        if getattr(args, name) != given[name]:
            setattr(saved, name, getattr(args, name))
    saved.resume = args.resume
    return saved, (header, state)


def _fingerprint(jobs) -> str:
    """A digest of the jobs: a checkpoint resumes only the run it came from."""
    h = hashlib.sha256()
    for name, column in jobs.to_dict().items():
        h.update(name.encode())
        h.update(np.ascontiguousarray(column).tobytes())
    return h.hexdigest()


def _print_start_times(result, t: int, csv_path, user_names) -> None:
    from ..sim.snapshot import format_start_times, start_times_at
    frame = start_times_at(result, t, user_names)
    print(f"\npending at {t} ({len(frame):,} jobs), expected starts (squeue --start):")
    print(format_start_times(frame))
    if csv_path:
        write_atomic(lambda path: frame.to_csv(path, index=False), csv_path)
        print(f"wrote {len(frame):,} rows to {csv_path}")
