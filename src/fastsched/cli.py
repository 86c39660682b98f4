"""The ``fastsched`` command: a thin layer, each subcommand calls one public function."""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import zlib

import numpy as np

from .argtypes import (choice_of, comma_list, duration, machine_size, non_negative_int,
                       positive_int, positive_seconds, seconds)
from .errors import FastschedError, InputError
from .engine.interrupt import Interrupted, kernel_running, signals_interrupt
from .policies import POLICIES

SUMMARY_ROWS = [
    ("jobs", "jobs", "{:,}"), ("skipped", "skipped", "{:,}"),
    ("never_started", "never started", "{:,}"), ("timeouts", "killed at limit", "{:,}"),
    ("avg_wait", "avg wait (s)", "{:,.1f}"), ("median_wait", "median wait (s)", "{:,.1f}"),
    ("max_wait", "max wait (s)", "{:,}"),
    ("avg_jct", "avg job completion time (s)", "{:,.1f}"),
    ("median_jct", "median job completion time (s)", "{:,.1f}"),
    ("p95_jct", "p95 job completion time (s)", "{:,.1f}"),
    ("p99_jct", "p99 job completion time (s)", "{:,.1f}"),
    ("avg_bounded_slowdown", "avg bounded slowdown", "{:,.2f}"),
    ("utilisation", "node utilisation (nodes in use)", "{:.2%}"),
    ("cpu_utilisation", "CPU utilisation", "{:.2%}"),
    ("gpu_utilisation", "GPU utilisation", "{:.2%}"),
    ("gpu_fragmentation", "free GPUs stranded on partly used nodes", "{:.2%}"),
    ("makespan", "makespan (s)", "{:,}"),
    ("engine", "engine", "{}"),
    ("passes", "scheduling passes", "{:,}"), ("sim_seconds", "simulation wall time (s)", "{:.4f}"),
    ("compile_seconds", "engine compile/load time (s)", "{:.2f}"),
]


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    signals_interrupt()
    try:
        return args.run(args) or 0
    except KeyboardInterrupt as e:        # Ctrl-C, SIGTERM; Interrupted says where the run was
        code = 128 + int(getattr(e, "signum", signal.SIGINT))
        print(f"fastsched: {e if isinstance(e, Interrupted) else 'interrupted'}; "
              "no result written", file=sys.stderr)
        if kernel_running():
            sys.stdout.flush()          # a kernel still compiling cannot be stopped:
            sys.stderr.flush()          # end the process without waiting for it
            os._exit(code)
        return code
    except FastschedError as e:
        print(f"fastsched: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:               # e.g. `fastsched ... | head`: not an error
        sys.stdout = open(os.devnull, "w")
        return 0
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        print(f"fastsched: error: {where}{e.strerror or e}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fastsched", description=(
        "Slurm-compatible scheduling core: replay workload traces under FCFS, EASY and "
        "conservative backfilling, check schedules, run benchmarks."))
    from . import __version__
    p.add_argument("--version", action="version", version=f"fastsched {__version__}")
    sub = p.add_subparsers(title="commands", metavar="COMMAND")

    s = sub.add_parser("simulate", help="replay a trace under a policy and print the summary",
                       description="Replay an SWF trace (plain, .gz or .xz) on its machine "
                       "(P single-processor nodes), or a workload CSV (as written by "
                       "'fastsched generate workload') on --cluster, and print the summary.")
    s.add_argument("trace", nargs="?",
                   help="SWF trace, or workload CSV (.csv, .csv.gz); not with --resume")
    _policy_args(s)
    s.add_argument("--procs", type=machine_size,
                   help="SWF machine size (default: the MaxProcs/MaxNodes header)")
    s.add_argument("--cluster", help="for a workload CSV: slurm.conf, or ai-8k / ai-100k / ai-1m")
    s.add_argument("--strict", action="store_true",
                   help="a job that cannot run is an error instead of being skipped")
    s.add_argument("--jobs-out", metavar="FILE.csv", help="write one record per job as CSV")
    s.add_argument("--summary-json", metavar="FILE", help="write the summary as JSON")
    s.add_argument("--show-skipped", action="store_true", help="list every skipped job")
    s.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    s.add_argument("--checkpoint", metavar="FILE",
                   help="save the node engine's state to FILE now and then (written whole: "
                   "temporary file, then rename), to go on later with --resume FILE")
    s.add_argument("--checkpoint-every", type=duration, default=600, metavar="DURATION",
                   help="wall time between checkpoints: 90, 90s, 10m, 2h (default 10m)")
    s.add_argument("--resume", metavar="FILE",
                   help="go on from a checkpoint: the same command (read from FILE, on the "
                   "same input files) continues, giving the schedule an uninterrupted run "
                   "gives; output, progress and checkpoint options given here replace the "
                   "saved ones")
    s.add_argument("--start-times", type=seconds, metavar="T",
                   help="also rebuild the state at time T (running and pending jobs just "
                   "before the pass at T) and print every pending job's expected start, like "
                   "squeue --start (a full conservative plan; times in seconds)")
    s.add_argument("--csv", metavar="FILE", help="with --start-times: write that table as CSV")
    _site_args(s)
    s.set_defaults(run=_cmd_simulate)

    d = sub.add_parser("demo", help="replay the bundled KTH-SP2 trace under fcfs, easy and "
                       "conservative, side by side",
                       description="Replay the bundled KTH-SP2 trace (Parallel Workloads "
                       "Archive) under the three policies, verify each schedule, and print the "
                       "summaries side by side.")
    d.add_argument("--trace", help="another SWF trace instead of the bundled one")
    d.add_argument("--procs", type=machine_size, help="machine size (default: from the header)")
    d.set_defaults(run=_cmd_demo)

    c = sub.add_parser("check", help="verify a schedule (jobs CSV) against its trace",
                       description="Check a schedule independently of the scheduler: no "
                       "overcommit, no start before submit, end = start + min(runtime, limit), "
                       "and the policy's promises (fcfs order; no reservation delayed under "
                       "easy/conservative). Exit status 1 if it finds violations; 3 if "
                       "it found none but could not check the policy asked for (a schedule "
                       "planned with concrete-node reservations, column planning=nodes: "
                       "the policy checks implement the textbook counts model).")
    c.add_argument("jobs_csv", metavar="JOBS.csv", help="records written by simulate --jobs-out")
    c.add_argument("--trace", required=True,
                   help="the SWF trace or workload CSV the schedule replays")
    c.add_argument("--cluster", help="for a workload CSV: slurm.conf, or ai-8k / ai-100k / ai-1m")
    c.add_argument("--policy", choices=sorted(POLICIES),
                   help="also check this policy's promises")
    c.add_argument("--reserve-depth", type=positive_int, default=1, help="EASY reservations (default 1)")
    c.add_argument("--procs", type=machine_size, help="machine size (default: from the header)")
    c.add_argument("--config", metavar="CFG.toml",
                   help="also check the configuration's QOS and association limits")
    _add_topology_args(c, "with --exclusive-topo or a workload's 'exclusive' column: also "
                       "check that no job shared an --exclusive=topo job's leaf groups while it "
                       "ran; tree = the cluster's topology.conf switches, block = "
                       "--block-topology FILE")
    c.set_defaults(run=_cmd_check, switches=None, segment=None, gres_conf=None)

    b = sub.add_parser("bench", help="run a standard benchmark scenario",
                       description="Run a standard benchmark scenario in-process and print "
                       "decisions per second, the median wall time over several runs (after a "
                       "warm-up) and the peak RSS.")
    from .bench import SCENARIOS, SUMMARIES
    b.add_argument("scenario", choices=sorted(SCENARIOS), help="; ".join(
        f"{name}: {text}" for name, text in SUMMARIES.items()))
    b.add_argument("--repeat", type=positive_int, default=7, help="timed runs (default 7)")
    b.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    b.add_argument("--jobs", type=positive_int, metavar="N",
                   help="ai-mix-1m only: simulate N jobs (default 1,000,000; one run)")
    from .generate import CLUSTERS
    b.add_argument("--clusters", type=comma_list(choice_of(CLUSTERS)), metavar="A,B",
                   help="scaling only: clusters of the grid (default ai-8k,ai-100k,ai-1m)")
    b.add_argument("--pending", type=comma_list(positive_int), metavar="N,M",
                   help="scaling only: queue sizes of the grid (default 1000,10000,100000,1000000)")
    b.set_defaults(run=_cmd_bench)

    from .generate import add_generate_parser
    from .launch import add_run_parser
    from .sbatch import add_sbatch_parser
    from .views import add_views_parser
    add_generate_parser(sub)
    add_sbatch_parser(sub)
    add_run_parser(sub)
    add_views_parser(sub)
    return p


def _policy_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", choices=sorted(POLICIES), default="easy",
                   help="scheduling policy (default: easy)")
    p.add_argument("--reserve-depth", type=positive_int, default=1,
                   help="number of blocked jobs EASY reserves for (default 1, Lifka's EASY)")


def _site_args(p: argparse.ArgumentParser) -> None:
    """Options of a workload CSV simulation: site configuration, planning grid, topology."""
    g = p.add_argument_group("site, planning and placement (workload CSVs; node engine)")
    g.add_argument("--config", metavar="CFG.toml",
                   help="scheduler configuration: multifactor priorities recomputed every "
                   "PriorityCalcPeriod with decayed usage, QOS/association limits, PriorityTier")
    g.add_argument("--order", metavar="NAME",
                   help="queue order by a research policy instead of submit time: FCFS, SJF, "
                   "WFP3, UNICEP, F1-F4 (Carastan-Santos & de Camargo; scores recomputed "
                   "every --order-period)")
    g.add_argument("--order-period", type=positive_seconds, default=60, metavar="S",
                   help="with --order: recompute the scores every S seconds of simulated "
                   "time (default 60)")
    g.add_argument("--resolution", type=positive_seconds, default=1, metavar="S",
                   help="plan on a grid of S seconds (Slurm's bf_resolution; default 1: exact)")
    g.add_argument("--window", type=seconds, metavar="S",
                   help="reserve only starts within S seconds (bf_window; default: no limit)")
    _add_topology_args(g, "topology-aware starts: tree = the cluster's topology.conf "
                       "switches, block = --block-topology FILE")
    g.add_argument("--switches", metavar="K[@TIME]",
                   help="every multi-node job spans at most K leaf switches, waiting at most "
                   "TIME (Slurm time) for that (--switches of sbatch)")
    g.add_argument("--segment", type=positive_int, metavar="N",
                   help="multi-node jobs whose node count N divides go in segments of N "
                   "nodes, each in one base block (--segment of sbatch)")
    g.add_argument("--gres-conf", metavar="FILE",
                   help="gres.conf: keep a job's GPUs on a node inside its NVLink (Links=) or "
                   "socket (Cores=) groups")


def _add_topology_args(parser, topology_help: str) -> None:
    """--topology, --block-topology and --exclusive-topo (simulate and check)."""
    parser.add_argument("--topology", choices=["tree", "block"], help=topology_help)
    parser.add_argument("--block-topology", metavar="FILE",
                        help="topology.conf with BlockName=/BlockSizes= lines (with "
                        "--topology block)")
    parser.add_argument("--exclusive-topo", action="store_true",
                        help="every multi-node job is --exclusive=topo: it starts only on "
                        "idle leaf groups (base blocks / leaf switches) and keeps them to "
                        "itself while it runs (a workload's 'exclusive' column marks single "
                        "jobs)")


def _load_trace(path: str, *, procs=None, strict=False, cluster_spec=None):
    """(cluster, workload or None, jobs, skipped) from an SWF trace, or a workload CSV on
    ``cluster_spec``."""
    from .cluster import Cluster
    if str(path).lower().endswith((".csv", ".csv.gz")):
        from .generate import load_cluster
        from .workload import read_workload
        if not cluster_spec:
            raise InputError("a workload CSV needs --cluster (slurm.conf or a standard name)",
                             file=path)
        if procs is not None:
            raise InputError("--procs is the machine size of an SWF trace; a workload CSV runs "
                             "on --cluster", field="--procs")
        cluster = load_cluster(cluster_spec)
        workload = read_workload(path, cluster, strict=strict)
        return cluster, workload, workload.jobs, workload.skipped
    if cluster_spec:
        raise InputError("--cluster is for workload CSVs; an SWF trace runs on its own machine "
                         "of single-processor nodes (size: MaxProcs, or --procs)",
                         field="--cluster")
    from .swf import read_swf
    trace = read_swf(path, procs=procs, strict=strict)
    return Cluster.homogeneous(trace.procs), None, trace.jobs, trace.skipped


def _placement(args, cluster, jobs, workload=None):
    """The Placement the options ask for (with the workload's --exclusive=topo jobs),
    or None."""
    from .constraints import Placement
    from .topology import BlockTopology, levels_array, read_block_topology, read_gres_conf
    if args.topology is None and (args.switches or args.segment or args.block_topology
                                  or args.exclusive_topo):
        raise InputError("--switches, --segment, --exclusive-topo and --block-topology need "
                         "--topology", field="--topology")
    groups = read_gres_conf(args.gres_conf).masks if args.gres_conf else ()
    if args.topology is None:
        return Placement.topology(np.zeros((0, cluster.num_nodes)), len(jobs),
                                  gpu_groups=groups) if args.gres_conf else None
    if args.topology == "block":
        if not args.block_topology:
            raise InputError("--topology block needs --block-topology FILE", field="--topology")
        levels = read_block_topology(args.block_topology, cluster).levels
    else:
        levels = levels_array(cluster.topology)
    multi = jobs.num_nodes > 1
    max_leaves, wait = 0, -1
    if args.switches:
        max_leaves, wait = _switches(args.switches)
    segment = np.ones(len(jobs), dtype=np.int64)
    if args.segment:
        segment[multi & (jobs.num_nodes % args.segment == 0)] = args.segment
    exclusive = multi & bool(args.exclusive_topo)
    if workload is not None:
        exclusive = exclusive | workload.exclusive_topo
    return Placement.topology(levels, len(jobs), unit=segment,
                              max_leaves=np.where(multi, max_leaves, 0), leaf_wait=wait,
                              gpu_groups=groups, exclusive_topo=exclusive)


def _switches(text: str) -> tuple[int, int]:
    """--switches=K[@TIME] as (K, wait seconds or -1)."""
    from .slurmconf import parse_time
    count, _, wait = text.partition("@")
    if not count.isdigit() or int(count) < 1:
        raise InputError(f"--switches wants K[@TIME] with K >= 1, got {text!r}",
                         field="--switches")
    seconds = parse_time(wait) if wait else None
    return int(count), -1 if seconds is None else int(seconds)


def _research_priority(name: str, jobs, cluster):
    """``priority(now, progress)`` for a named research order (lower score first); sizes in
    GPUs on GPU clusters, else CPUs."""
    from .priority import research_order
    size = "gpus" if cluster.gpus.any() else "cpus"
    research_order(name, jobs.take(np.zeros(0, dtype=np.int64)), 0, size=size)  # check name
    return lambda now, progress: -research_order(name, jobs, now, size=size)


def _workload_constraints(workload) -> dict:
    """The workload's dependencies, partition lists and array throttles, where it has any."""
    if workload is None:
        return {}
    out = {}
    deps = getattr(workload, "dependencies", None)
    if deps is not None and len(deps.parent):
        out["dependencies"] = deps
    parts = getattr(workload, "partitions", None)
    if parts is not None and len(parts.partition) > len(workload):
        out["partitions"] = parts
    limits = getattr(workload, "limits", None)
    if limits is not None and len(limits.caps):
        out["limits"] = limits
    return out


def _cmd_simulate(args) -> int:
    from .sim import simulate
    args, resume = _resumed(args) if args.resume else (args, None)
    if args.trace is None:
        raise InputError("give a trace (or --resume FILE)", field="trace")
    if args.csv and args.start_times is None:
        raise InputError("--csv goes with --start-times T", field="--csv")
    cluster, workload, jobs, skipped = _load_trace(args.trace, procs=args.procs,
                                                   strict=args.strict, cluster_spec=args.cluster)
    options = dict(reserve_depth=args.reserve_depth,
                   progress=False if args.no_progress else None,
                   placement=_placement(args, cluster, jobs, workload),
                   window=args.window, resolution=args.resolution)
    if resume is not None or args.checkpoint:       # (a digest of every job: only then)
        header = {"argv": args.argv, "jobs": _fingerprint(jobs)}
    if resume is not None:
        if resume[0]["jobs"] != header["jobs"]:
            raise InputError("the inputs differ from those of the checkpointed run",
                             file=args.resume)
        options["resume"] = resume[1]
    if args.checkpoint:
        from .checkpoint import Checkpoints
        options["checkpoints"] = Checkpoints(args.checkpoint, args.checkpoint_every, header)
    if args.order:
        if args.config:
            raise InputError("--order and --config both set the queue order; pick one",
                             field="--order")
        options.update(priority=_research_priority(args.order, jobs, cluster),
                       period=args.order_period)
    try:
        if args.config:
            from .config import load_config
            from .site import simulate_site
            if workload is None:
                raise InputError("--config needs a workload CSV (with users and accounts)",
                                 field="--config")
            result = simulate_site(cluster, workload, load_config(args.config), args.policy,
                                   skipped=skipped, **options)
        else:
            result = simulate(cluster, jobs, args.policy, skipped=skipped,
                              **_workload_constraints(workload), **options)
    except KeyboardInterrupt:
        if args.checkpoint and options["checkpoints"].saved:
            print(f"fastsched: go on from the last checkpoint with: fastsched simulate "
                  f"--resume {args.checkpoint}", file=sys.stderr)
        raise
    result.summary["trace"] = str(args.trace)
    print(f"{args.trace}: {result.summary['nodes']} nodes, policy {args.policy}"
          + (f" (resumed from {args.resume})" if args.resume else ""))
    if args.checkpoint and result.summary["engine"] == "pool":
        print("note: the pool engine writes no checkpoints (its runs take seconds)")
    print(_table([("", result.summary)]))
    if "placement" in result.summary:
        p = result.summary["placement"]
        print(f"placement: {p['mean_groups_spanned']:.2f} leaf groups spanned per job "
              f"(p95 {p['p95_groups_spanned']:.0f}); {p['multi_node_single_group_share']:.1%} "
              f"of {p['multi_node_jobs']:,} multi-node jobs on one leaf")
    if result.summary.get("never_started") and result.partition is not None:
        import pandas as pd
        reasons = pd.Series(result.reasons()[result.schedule.start_time < 0]).value_counts()
        print(f"never started: {result.summary['never_started']:,} job(s): " + ", ".join(
            f"{r} {c}" for r, c in reasons.items()))
    if args.topology is None and workload is not None and workload.exclusive_topo.any():
        print(f"note: {int(workload.exclusive_topo.sum()):,} job(s) ask for --exclusive=topo, "
              "which needs --topology: ignored")
    _print_skipped(result.skipped, show_all=args.show_skipped)
    if args.jobs_out:
        _write(result.to_csv, args.jobs_out)
        print(f"wrote {len(result.workload):,} job records to {args.jobs_out}")
    if args.summary_json:
        _write(result.summary_json, args.summary_json)
        print(f"wrote summary to {args.summary_json}")
    if args.start_times is not None:
        _print_start_times(result, args.start_times, args.csv,
                           getattr(workload, "user_names", None))
    return 0


#: options a --resume command line may give anew (the rest are the checkpointed run's)
RESUME_OPTIONS = ("jobs_out", "summary_json", "no_progress", "checkpoint", "checkpoint_every",
                  "show_skipped")


def _resumed(args):
    """(the checkpointed run's arguments with ``RESUME_OPTIONS`` given now, (header,
    state))."""
    from .checkpoint import load
    header, state = load(args.resume)
    saved = _parser().parse_args(header["argv"])
    saved.argv = header["argv"]
    given = vars(_parser().parse_args(["simulate"]))
    for name in RESUME_OPTIONS:
        if getattr(args, name) != given[name]:
            setattr(saved, name, getattr(args, name))
    saved.resume = args.resume
    return saved, (header, state)


def _fingerprint(jobs) -> str:
    """A digest of the jobs: a checkpoint resumes only the run it came from."""
    import hashlib
    h = hashlib.sha256()
    for name, column in jobs.to_dict().items():
        h.update(name.encode())
        h.update(np.ascontiguousarray(column).tobytes())
    return h.hexdigest()


def _print_start_times(result, t: int, csv_path, user_names) -> None:
    from .snapshot import format_start_times, start_times_at
    frame = start_times_at(result, t, user_names)
    print(f"\npending at {t} ({len(frame):,} jobs), expected starts (squeue --start):")
    print(format_start_times(frame))
    if csv_path:
        _write(lambda path: frame.to_csv(path, index=False), csv_path)
        print(f"wrote {len(frame):,} rows to {csv_path}")


def _cmd_demo(args) -> int:
    from .sim import simulate_swf
    from .swf import bundled_trace
    from .verify import verify
    trace = args.trace or bundled_trace("KTH-SP2")
    results = []
    for policy in ("fcfs", "easy", "conservative"):
        r = simulate_swf(trace, policy, procs=args.procs, progress=False)
        report = verify(r.cluster, r.workload, r.schedule, policy=policy)
        r.summary["verified"] = "ok" if report.ok else f"{len(report.violations)} violations"
        results.append((policy, r.summary))
    first = results[0][1]
    print(f"{trace}\n{first['nodes']} processors, {first['jobs']:,} jobs "
          f"({first['skipped']} skipped); every schedule checked by fastsched.verify\n")
    print(_table(results, extra=[("verified", "verified", "{}")]))
    print("\nSemantics: " + "; ".join(f"{k}: {v}" for k, v in first["semantics"].items()))
    return 0 if all(s["verified"] == "ok" for _, s in results) else 1


def _cmd_check(args) -> int:
    import pandas as pd
    from .verify import check_frame
    cluster, workload, jobs, _ = _load_trace(args.trace, procs=args.procs,
                                             cluster_spec=args.cluster)
    constraints = _workload_constraints(workload)
    if args.config:
        constraints["limits"] = _config_limits(args.config, cluster, workload)
    placement = _placement(args, cluster, jobs, workload)
    if placement is not None:
        constraints["placement"] = placement
    # EmptyDataError and UnicodeDecodeError are ValueErrors; a damaged .gz raises
    # EOFError or zlib.error
    try:
        frame = pd.read_csv(args.jobs_csv, keep_default_na=False, index_col=False)
    except (ValueError, EOFError, zlib.error, pd.errors.ParserError) as e:
        raise InputError(f"not a jobs CSV: {' '.join(str(e).split())}",
                         file=args.jobs_csv) from None
    report = check_frame(cluster, jobs, frame,
                         source=args.jobs_csv, policy=args.policy,
                         reserve_depth=args.reserve_depth, **constraints)
    print(report)
    for v in report.violations[:20]:
        print(f"  {v.kind}: {v.message}")
    if len(report.violations) > 20:
        print(f"  ... and {len(report.violations) - 20} more")
    if not report.ok:
        return 1
    return 3 if report.not_checked else 0


def _config_limits(path, cluster, workload):
    """The limit groups ``simulate --config`` enforced (fastsched.site.site_limits)."""
    from .config import load_config
    from .site import site_limits
    if workload is None:
        raise InputError("--config needs a workload CSV", field="--config")
    config = load_config(path)
    return site_limits(config, workload, config.apply_partitions(cluster))


def _cmd_bench(args) -> int:
    from .bench import format_figures, run_scenario
    own = {"jobs": "ai-mix-1m", "clusters": "scaling", "pending": "scaling"}
    options = {k: getattr(args, k) for k in own if getattr(args, k) is not None}
    for k in options:
        if own[k] != args.scenario:
            raise InputError(f"--{k} is for the {own[k]} scenario only", field=f"--{k}")
    figures = run_scenario(args.scenario, repeat=args.repeat, **options)
    print(format_figures(figures))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)
    return 0


def _write(writer, path) -> None:
    """Run ``writer`` on a temporary file beside ``path``, then rename it to ``path``, so
    an interrupted or failed write leaves the old file (or none), never a truncated one.
    Errors name the path (pandas' OSErrors do not)."""
    import shutil
    import tempfile
    folder, name = os.path.split(os.path.abspath(path))
    try:
        # the same name in a private folder: the suffix still picks the compression
        scratch = tempfile.mkdtemp(prefix=".fastsched-", dir=folder)
        try:
            writer(os.path.join(scratch, name))
            os.replace(os.path.join(scratch, name), path)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    except OSError as e:
        raise InputError(f"cannot write: {e.strerror or e}", file=path) from None


def _table(columns: list[tuple[str, dict]], extra=()) -> str:
    rows = [(label, [fmt.format(s[key]) if s.get(key) is not None else "-" for _, s in columns])
            for key, label, fmt in list(SUMMARY_ROWS) + list(extra)]
    width = max(len(label) for label, _ in rows)
    colw = [max(len(name), *(len(v[i]) for _, v in rows)) for i, (name, _) in enumerate(columns)]
    lines = []
    if any(name for name, _ in columns):
        lines.append(" " * width + "  " + "  ".join(n.rjust(w) for (n, _), w in zip(columns, colw)))
    for label, values in rows:
        lines.append(label.ljust(width) + "  " + "  ".join(v.rjust(w) for v, w in zip(values, colw)))
    return "\n".join(lines)


def _print_skipped(skipped: list, show_all: bool) -> None:
    if not skipped:
        return
    shown = skipped if show_all else skipped[:5]
    print(f"skipped {len(skipped)} job(s) that cannot run on this machine:")
    for s in shown:
        print(f"  job {s.job_id} (line {s.line}): {s.reason}")
    if len(shown) < len(skipped):
        print(f"  ... {len(skipped) - len(shown)} more (--show-skipped lists them all)")


if __name__ == "__main__":
    sys.exit(main())
