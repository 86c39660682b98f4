"""``fastsched plan``: plan a cluster's moment (running + pending jobs) as Slurm would,
and ``fastsched compare-plan``: compare two plans job by job."""
from __future__ import annotations

import argparse
import datetime as dt
import sys

from ..io.planstate import nodelists, read_plan_state, read_planned, write_planned
from ..io.squeuejson import read_squeue_json
from ..model.errors import InputError
from ..sim.plan import PLAN_POLICIES, RESERVATION_MODELS, plan
from ..tools.compareplan import compare_plans
from ..tools.generate import load_cluster
from . import COMMANDS


def configure(p: argparse.ArgumentParser, command: str) -> None:
    if command == "compare-plan":
        _configure_compare(p)
        return
    p.description = (
        "Plan every pending job's start and nodes at --now. --reservations slurm (the "
        "default) plans what Slurm 22.05's backfill plans on this state, job for job "
        "(docs/slurm-model.md); nodes is fastsched's GPU-granular plan, counts the "
        "partition's GPUs as one pool (starts only, no nodes). "
        "SchedulerParameters bf_resolution, bf_window and bf_max_job_test come from "
        "--cluster's slurm.conf. Running jobs that started at or after --now were started "
        "by the cycle at --now and are planned in their queue place. Preemption is not "
        "planned (no --preempt-backfill): the slurm model is Slurm's backfill without "
        "preemptees, the nodes and counts models take one partition (preempt/partition_prio "
        "never preempts within one), and the running jobs' files carry no partition or QOS "
        "to tell who may be preempted.")
    p.add_argument("--cluster", required=True, help="slurm.conf (or ai-8k / ai-100k / ai-1m)")
    p.add_argument("--running", metavar="RUNNING.csv",
                   help="job_id,start,end,nodes,nodelist,tres_per_node (epoch seconds)")
    p.add_argument("--pending", metavar="PENDING.csv",
                   help="job_id,nodes,time_limit,tres_per_node[,priority,partition]; "
                   "queue order: by priority when given, else by job id")
    p.add_argument("--squeue-json", metavar="SQUEUE.json",
                   help="instead of --running/--pending: a `squeue --json` dump (running "
                   "and pending jobs; priorities from it order the queue)")
    p.add_argument("--now", required=True, type=_epoch, metavar="T",
                   help="the cycle's time: epoch seconds or an ISO time (UTC unless it "
                   "names a zone)")
    p.add_argument("--reservations", choices=RESERVATION_MODELS, default="slurm",
                   help="planning model (default slurm)")
    p.add_argument("--policy", choices=PLAN_POLICIES, default="conservative",
                   help="conservative (every job planned; Slurm's backfill, the only one "
                   "--reservations slurm takes) or easy (only the first blocked job)")
    p.add_argument("--resolution", type=int, help="bf_resolution in seconds (default: "
                   "slurm.conf's, else 60)")
    p.add_argument("--window", type=int, help="bf_window in seconds (default: slurm.conf's, "
                   "else 86400)")
    p.add_argument("--max-job-test", type=int, help="bf_max_job_test (default: slurm.conf's, "
                   "else 500)")
    p.add_argument("-o", "--output", metavar="PLANNED.csv",
                   help="write job_id,planned_start,nodelist,reason (default: stdout)")
    p.set_defaults(run=_cmd_plan)


def _configure_compare(p):
    p.description = COMMANDS["compare-plan"][1][0].upper() + COMMANDS["compare-plan"][1][1:] + (
        ": the share of jobs at exactly the same start, within 60 s and on the same node "
        "set, the distribution of start differences, and the first diverging jobs with the "
        "likeliest rule behind each. Files: job_id,planned_start and nodelist (or Slurm's "
        "sched_nodes); an empty start is N/A.")
    p.add_argument("first", metavar="PLANNED.csv", help="a plan (fastsched plan -o)")
    p.add_argument("second", metavar="SLURM_PLANNED.csv", help="the plan to compare with "
                   "(squeue --start: job_id,planned_start,sched_nodes)")
    p.add_argument("--show", type=int, default=10, help="diverging jobs to list (default 10)")
    p.set_defaults(run=_cmd_compare)


def _epoch(text: str) -> int:
    t = text.strip()
    if t.isdigit():
        return int(t)
    try:
        when = dt.datetime.fromisoformat(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither epoch seconds nor an ISO "
                                         "time") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return int(when.timestamp())


def _cmd_plan(args) -> int:
    if bool(args.squeue_json) == bool(args.running or args.pending) or \
            (not args.squeue_json and not (args.running and args.pending)):
        raise InputError("give --running and --pending, or --squeue-json",
                         field="--squeue-json")
    cluster = load_cluster(args.cluster)
    state = read_squeue_json(args.squeue_json, cluster) if args.squeue_json else \
        read_plan_state(args.running, args.pending, cluster)
    planned = plan(cluster, state, args.now, reservations=args.reservations,
                   policy=args.policy, resolution=args.resolution, window=args.window,
                   max_job_test=args.max_job_test)
    lists = nodelists(cluster, planned.node_offsets, planned.nodes)
    write_planned(args.output or sys.stdout, planned.job_id, planned.start, lists,
                  planned.reasons())
    if args.output:
        shown = int((planned.start >= 0).sum())
        print(f"planned {shown} of {len(planned.job_id)} jobs "
              f"({int(planned.started.sum())} start now) -> {args.output}")
    return 0


def _cmd_compare(args) -> int:
    result = compare_plans(read_planned(args.first), read_planned(args.second), show=args.show)
    print(result.format(first=args.first, second=args.second))
    return 0
