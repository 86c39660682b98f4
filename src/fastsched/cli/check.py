"""``fastsched check``: verify a schedule independently of the scheduler."""
from __future__ import annotations

import argparse
import zlib

import numpy as np
import pandas as pd

from ..model.errors import InputError
from ..model.policies import POLICIES
from ..verify import check_frame
from ..io.events import read_node_events
from ..sim.lifecycle import run_events, run_lifecycle
from .argtypes import failure_model, machine_size, non_negative_int, positive_int, power_text
from ..verify import verify
from .common import (add_topology_args, config_limits, format_args, gpu_options, load_sacct,
                     load_trace, placement_from_args, print_skipped, trace_format)


def configure(parser: argparse.ArgumentParser, command: str) -> None:
    parser.description = (
        "Check a schedule independently of the scheduler: no overcommit, no start before "
        "submit, end = start + min(runtime, limit), and the policy's promises (fcfs order; "
        "no reservation delayed and no job left waiting that fitted, under the reservation "
        "model the schedule was planned with: its planning column, else counts). Exit "
        "status 1 if it finds violations; 3 if it found none but could not check the "
        "policy asked for (the nodes-model check over its size limit).")
    parser.add_argument("jobs_csv", metavar="JOBS.csv",
                        help="records written by simulate --jobs-out, or a sacct --parsable2 "
                        "dump (what Slurm did: its own workload and schedule, on --cluster)")
    parser.add_argument("--trace",
                        help="the SWF trace or workload CSV the schedule replays (needed for a "
                        "jobs CSV; a sacct dump is its own trace). With a time_min column "
                        "(sbatch --time-min) the records' time_limit must lie in [time_min, "
                        "time_limit] (the time_limit check; policy checks are then skipped)")
    parser.add_argument("--cluster", help="for a workload CSV: slurm.conf, or ai-8k / ai-100k / ai-1m")
    parser.add_argument("--policy", choices=sorted(POLICIES),
                        help="also check this policy's promises")
    parser.add_argument("--reserve-depth", type=positive_int, default=1, help="EASY reservations (default 1)")
    parser.add_argument("--reservations", choices=["counts", "nodes"],
                        help="judge easy/conservative by this reservation model: counts "
                        "(textbook algorithms, the pool engine) or nodes (concrete-node "
                        "reservations, the node engine; docs/gpu-semantics.md). Default: the "
                        "schedule's planning column, else counts")
    parser.add_argument("--node-check-limit", type=non_negative_int, metavar="CELLS",
                        help="the most work the nodes-model policy check may take, in plan "
                        "cells (default 2e10, a few minutes; 0: no limit); above it the "
                        "policy is NOT CHECKED (exit 3)")
    parser.add_argument("--procs", type=machine_size, help="machine size (default: from the header)")
    parser.add_argument("--config", metavar="CFG.toml",
                        help="also check the configuration's QOS and association limits")
    add_topology_args(parser, "with --exclusive-topo or a workload's 'exclusive' column: also "
                        "check that no job shared an --exclusive=topo job's leaf groups while it "
                        "ran; tree = the cluster's topology.conf switches, block = "
                        "--block-topology FILE")
    parser.add_argument("--events", metavar="FILE.csv",
                        help="the node events the run applied (simulate --events): records "
                        "with an attempt column are checked attempt by attempt against them "
                        "(and, under --cluster's PreemptType and --config's QOS, each "
                        "PREEMPTED attempt for its PreemptExemptTime and for a job that may "
                        "preempt it pending for its nodes: preempt_exempt, preemptor)")
    parser.add_argument("--regrow", action="store_true",
                        help="the run regrew --no-kill jobs (simulate --regrow): a shape may "
                        "also gain nodes that came back at its start, up to the job's count "
                        "(bad_resize)")
    parser.add_argument("--failures", metavar="SPEC", type=failure_model,
                        help="the failure model the run drew events from (simulate --failures)")
    parser.add_argument("--resv-file", metavar="FILE",
                        help="the advance reservations of the run (simulate --resv-file): also "
                        "check that no job ran on a reserved node while it was open, and that "
                        "the jobs of the trace's reservation column (a sacct dump's "
                        "Reservation field) ran only on its nodes, inside its windows "
                        "(Flags=FLEX: anywhere but in another reservation's window)")
    parser.add_argument("--power", metavar="SPEC", type=power_text,
                        help="the power saving of the run (simulate --power, over --cluster's "
                        "slurm.conf keys): records with a configure_time column are checked "
                        "for jobs started before their nodes booted, power-ups over "
                        "ResumeRate and nodes kept up past SuspendTime beyond what "
                        "SuspendRate explains (such records get these checks under the slurm.conf keys "
                        "even without --power; records with attempts under --events or "
                        "--failures too)")
    format_args(parser)
    parser.set_defaults(run=run, switches=None, segment=None, gres_conf=None)


def run(args) -> int:
    if trace_format(args.jobs_csv, args.format if args.format == "sacct" else "auto") \
            == "sacct":
        return _check_sacct(args)
    if not args.trace:
        raise InputError("a jobs CSV needs --trace (the trace or workload it schedules)",
                         field="--trace")
    cluster, workload, jobs, _ = load_trace(args.trace, procs=args.procs,
                                             cluster_spec=args.cluster, fmt=args.format,
                                             tz=args.tz, skip_bad=args.skip_bad,
                                             gpu=gpu_options(args))
    constraints = (workload.constraints() if workload is not None else {})
    if args.config:
        constraints["limits"] = config_limits(args.config, cluster, workload)
    placement = placement_from_args(args, cluster, jobs, workload)
    if placement is not None:
        constraints["placement"] = placement
    from ..io.reservations import run_reservations
    resv = run_reservations(args.resv_file, cluster, workload)
    if resv is not None:
        constraints["advance_reservations"] = resv
    # EmptyDataError and UnicodeDecodeError are ValueErrors; a damaged .gz raises
    # EOFError or zlib.error
    try:
        frame = pd.read_csv(args.jobs_csv, keep_default_na=False, index_col=False)
    except (ValueError, EOFError, zlib.error, pd.errors.ParserError) as e:
        raise InputError(f"not a jobs CSV: {' '.join(str(e).split())}",
                         file=args.jobs_csv) from None
    if "attempt" in frame.columns:
        events = run_events(cluster, jobs, read_node_events(args.events, cluster)
                            if args.events else None, args.failures)
        pre = _preemption(args, cluster, workload)
        report = check_frame(cluster, jobs, frame, source=args.jobs_csv, events=events,
                             lifecycle=run_lifecycle(cluster, jobs, workload,
                                                     regrow=args.regrow),
                             preemption=pre,
                             partitions=constraints.get("partitions") if pre else None,
                             time_min=constraints.get("time_min"), power=_power(args, cluster,
                                                                                frame),
                             advance_reservations=resv)
        if args.policy:
            report.not_checked.append(f"{args.policy}: records with attempts (node "
                                      "failures) are checked without policy")
        return _print_report(report)
    if args.power is not None or "configure_time" in frame.columns:
        constraints["power"] = _power(args, cluster, frame)
    report = check_frame(cluster, jobs, frame,
                         source=args.jobs_csv, policy=args.policy,
                         reserve_depth=args.reserve_depth, reservations=args.reservations,
                         **_node_check_limit(args), **constraints)
    return _print_report(report)


def _power(args, cluster, frame):
    """The power saving the records ran under (``--power`` over --cluster's slurm.conf
    keys; records with a ``configure_time`` column get it anyway), or None."""
    if args.power is None and "configure_time" not in frame.columns:
        return None
    from ..io.slurmpower import power_saving
    return power_saving(cluster, args.power)


def _preemption(args, cluster, workload):
    """The preemption of ``--cluster``'s slurm.conf (and ``--config``'s QOS) the records
    are checked under (PreemptExemptTime, preemptors), or None without."""
    from ..sim.preemption import site_preemption
    config, qos = None, None
    if args.config and workload is not None:
        from ..policy.config import load_config
        config = load_config(args.config)
        qos = config.job_qos(workload)
    pre = site_preemption(cluster, config, qos)
    return pre if pre.active else None


def _check_sacct(args) -> int:
    """Check what Slurm did: a sacct dump's recorded schedule on --cluster."""
    for option in ("trace", "config", "topology", "procs"):
        if getattr(args, option):
            raise InputError(f"--{option} does not apply to a sacct dump (its own workload, "
                             "on --cluster)", field=f"--{option}")
    cluster, log = load_sacct(args.jobs_csv, args.cluster, tz=args.tz, skip_bad=args.skip_bad)
    priority = log.priority if not np.isnan(log.priority).all() else None
    resv = None
    if args.resv_file:          # each run in the reservation its Reservation field names
        from ..io.reservations import recorded_reservations
        resv = recorded_reservations(args.resv_file, cluster, log.reservation,
                                     log.jobs.job_id)
    # Slurm's backfill reserves concrete nodes: judge a recorded schedule by the nodes
    # model unless told otherwise
    report = verify(cluster, log.jobs, log.schedule, policy=args.policy,
                    reserve_depth=args.reserve_depth,
                    reservations=args.reservations or "nodes", priority=priority,
                    advance_reservations=resv, **_node_check_limit(args))
    print(f"{args.jobs_csv}: {len(log.jobs):,} runs of {len(np.unique(log.jobs.job_id)):,} "
          f"jobs ({int((log.attempt > 0).sum()):,} after a requeue), {log.steps:,} step "
          f"lines ignored, {len(log.skipped):,} records left out")
    for note in log.notes:
        print(f"note: {note}")
    print_skipped(log.skipped, show_all=False, what="record(s) left out of the check")
    return _print_report(report)


def _print_report(report) -> int:
    print(report)
    for v in report.violations[:20]:
        print(f"  {v.kind}: {v.message}")
    if len(report.violations) > 20:
        print(f"  ... and {len(report.violations) - 20} more")
    if not report.ok:
        return 1
    return 3 if report.not_checked else 0


def _node_check_limit(args) -> dict:
    """verify's node_check_limit from --node-check-limit (0: none; absent: verify's)."""
    if args.node_check_limit is None:
        return {}
    return {"node_check_limit": args.node_check_limit or None}
