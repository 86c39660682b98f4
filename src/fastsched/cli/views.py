"""``fastsched sprio`` and ``fastsched sshare``: the priority and fair-share views of a simulation state."""
from __future__ import annotations

import argparse

from ..io.slurmconf import parse_time
from ..io.workload import read_workload
from ..model.errors import InputError
from ..policy.config import SchedulerConfig, load_config
from ..policy.usage import usage_at
from ..sim.site import simulate_site
from ..sim.views import format_sprio, format_sshare, sprio, sshare
from ..tools.generate import load_cluster
from . import COMMANDS


def configure(p: argparse.ArgumentParser, command: str) -> None:
    helptext = COMMANDS[command][1]
    p.description = (helptext[0].upper() + helptext[1:] + ". The usage comes from simulating "
                     "the workload under the configuration (its priorities and limits) up to "
                     "--at: every job that started before then is charged for what it ran, "
                     "billed with TRESBillingWeights and decayed with PriorityDecayHalfLife.")
    p.add_argument("workload", metavar="WORKLOAD.csv", help="workload CSV (.csv, .csv.gz)")
    p.add_argument("--cluster", required=True, help="slurm.conf, or ai-8k / ai-100k / ai-1m")
    p.add_argument("--config", metavar="CFG.toml",
                   help="scheduler configuration (default: Slurm's defaults, the "
                   "workload's accounts)")
    p.add_argument("--at", metavar="TIME", type=_time_arg,
                   help="simulated time: seconds, or a Slurm time like 1-12:00:00 "
                   "(default: the last submission)")
    p.add_argument("--policy", default="easy", help="policy of the simulation (default easy)")
    p.add_argument("--csv", action="store_true", help="print CSV instead of a table")
    p.set_defaults(run=_cmd_sprio if command == "sprio" else _cmd_sshare)


def _time_arg(text: str) -> int:
    t = text.strip()
    if t.isascii() and t.isdigit():
        t = "0:" + t                          # plain seconds as MM:SS, range-checked
    try:
        value = parse_time(t)
    except InputError as e:
        raise argparse.ArgumentTypeError(e.reason) from None
    if value is None:
        raise argparse.ArgumentTypeError(f"--at must be a finite time, got {text!r}")
    return value


def _state(args):
    """(config, cluster, workload, tree, usage, start, at) for the CLI commands."""
    config = load_config(args.config) if args.config else SchedulerConfig()
    cluster = config.apply_partitions(load_cluster(args.cluster))
    workload = read_workload(args.workload, cluster, strict=True)
    at = args.at if args.at is not None else \
        (int(workload.jobs.submit_time.max()) if len(workload) else 0)
    tree = config.build_tree(workload)
    result = simulate_site(cluster, workload, config, args.policy)
    start, end = result.schedule.start_time, result.schedule.end_time
    usage = usage_at(config, tree, workload, start, end, at)
    return config, cluster, workload, tree, usage, start, at


def _cmd_sprio(args) -> int:
    config, cluster, workload, tree, usage, start, at = _state(args)
    frame = sprio(workload, at, config, usage, cluster=cluster, start_time=start)
    frame = frame.drop(columns="qos_name")
    print(frame.to_csv(index=False) if args.csv else format_sprio(frame), end="")
    return 0


def _cmd_sshare(args) -> int:
    config, cluster, workload, tree, usage, start, at = _state(args)
    frame = sshare(tree, usage, config)
    print(frame.to_csv(index=False) if args.csv else format_sshare(frame, tree), end="")
    return 0
