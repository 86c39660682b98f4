"""What the subcommands share: policy, site and topology options, loading a trace or a
workload, the summary table, writing a file whole."""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile

import numpy as np

from ..io.swf import read_swf
from ..model.cluster import Cluster
from ..model.constraints import Placement
from ..model.errors import InputError
from ..model.policies import POLICIES
from .argtypes import positive_int, positive_seconds, seconds


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
    ("reservations", "reservation model", "{}"), ("engine", "engine", "{}"),
    ("passes", "scheduling passes", "{:,}"), ("sim_seconds", "simulation wall time (s)", "{:.4f}"),
    ("compile_seconds", "engine compile/load time (s)", "{:.2f}"),
]


def policy_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", choices=sorted(POLICIES), default="easy",
                   help="scheduling policy (default: easy)")
    p.add_argument("--reserve-depth", type=positive_int, default=1,
                   help="number of blocked jobs EASY reserves for (default 1, Lifka's EASY)")
    p.add_argument("--reservations", choices=["counts", "nodes", "slurm"],
                   help="reservation model: counts (free-node counts, the textbook "
                   "algorithms: one pool of identical nodes, whole-node jobs; takes --order, "
                   "dependencies and limits, not partitions, topology, --resolution or "
                   "--window), nodes (concrete nodes and GPU counts: any cluster, every "
                   "option) or slurm (Slurm 22.05's backfill cycle at every event, "
                   "docs/slurm-model.md; --policy conservative, --resolution/--window "
                   "default to slurm.conf's). Default: counts where it can plan the run, "
                   "else nodes")


def site_args(p: argparse.ArgumentParser) -> None:
    """Options of a workload CSV simulation: site configuration, planning grid, topology."""
    g = p.add_argument_group("site, planning and placement (workload CSVs; node engine)")
    g.add_argument("--config", metavar="CFG.toml",
                   help="scheduler configuration: multifactor priorities recomputed every "
                   "PriorityCalcPeriod with decayed usage, QOS/association limits, PriorityTier; "
                   "QOS Preempt/PreemptMode/GraceTime/PreemptExemptTime under "
                   "PreemptType=preempt/qos")
    g.add_argument("--order", metavar="NAME",
                   help="queue order by a research policy instead of submit time: FCFS, SJF, "
                   "WFP3, UNICEP, F1-F4 (Carastan-Santos & de Camargo; scores recomputed "
                   "every --order-period)")
    g.add_argument("--order-period", type=positive_seconds, default=60, metavar="S",
                   help="with --order: recompute the scores every S seconds of simulated "
                   "time (default 60)")
    g.add_argument("--resolution", type=positive_seconds, metavar="S",
                   help="plan on a grid of S seconds (Slurm's bf_resolution; default: the "
                   "cluster's SchedulerParameters, else 1: exact)")
    g.add_argument("--window", type=seconds, metavar="S",
                   help="reserve only starts within S seconds (bf_window; default: the "
                   "cluster's SchedulerParameters, else no limit)")
    add_topology_args(g, "topology-aware starts: tree = the cluster's topology.conf "
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


def add_topology_args(parser, topology_help: str) -> None:
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


#: --format choices of simulate and check
TRACE_FORMATS = ("auto", "swf", "workload", "sacct", "philly", "pai", "helios", "gpujobs")
#: the GPU trace formats among them
GPU_TRACE_FORMATS = ("philly", "pai", "helios", "gpujobs")


def format_args(p) -> None:
    """--format, --tz and --skip-bad (simulate and check)."""
    p.add_argument("--format", choices=TRACE_FORMATS, default="auto",
                   help="input format: swf, workload (CSV), sacct (a sacct --parsable2 dump, "
                   "with --cluster), philly (cluster_job_log JSON, or Pollux's CSV), pai "
                   "(Alibaba PAI openb pod list or pai_task_table), helios (cluster_log.csv), "
                   "gpujobs (a CSV job list: id, submit, duration, GPUs[, user, account, "
                   "time_limit, nodes, gpus_per_node, partition], docs/site-inputs.md); "
                   "auto (default): by content (a 'JobID|' header: sacct; a GPU trace's "
                   "header or JSON), else by name (.csv, .csv.gz, .parquet: workload), else swf")
    p.add_argument("--tz", default="UTC", metavar="ZONE",
                   help="with sacct: the time zone of its times (sacct prints local time; "
                   "default UTC), e.g. Europe/Berlin")
    p.add_argument("--skip-bad", action="store_true",
                   help="with sacct: leave malformed lines out (counted and listed) instead "
                   "of stopping at the first")
    g = p.add_argument_group("GPU traces (philly, pai, helios, gpujobs)")
    g.add_argument("--fractional", choices=("round-up", "drop", "error"), default="round-up",
                   help="a job using part of a GPU (PAI's GPU sharing): plan it as one whole "
                   "GPU and count it (round-up, default), leave it out (drop), or stop (error)")
    g.add_argument("--gpus-per-node", type=positive_int, default=8, metavar="G",
                   help="without --cluster (and for PAI without its node list next to the "
                   "trace): the derived cluster's GPUs per node (default 8)")
    g.add_argument("--time-limits", choices=("round", "exact"), default="round",
                   help="for jobs the trace gives no limit (all but a gpujobs list's own): "
                   "the run time rounded up "
                   "to 1, 2, 4, 8, 12 h, 1, 2, 3, 7, 14 or 30 days (round, default) or the run "
                   "time itself (exact)")


def trace_format(path: str, fmt: str = "auto") -> str:
    """The format of ``path``: ``fmt`` unless "auto", else guessed from name and header."""
    from ..io.gpureaders import sniff_gpu_format
    from ..io.parquet import is_parquet
    from ..io.sacct import is_sacct
    if fmt != "auto":
        return fmt
    if is_parquet(path):
        return "workload"
    if is_sacct(path):
        return "sacct"
    gpu = sniff_gpu_format(path)
    if gpu is not None:
        return gpu
    return "workload" if str(path).lower().endswith((".csv", ".csv.gz")) else "swf"


def load_sacct(path: str, cluster_spec, *, tz: str = "UTC", skip_bad: bool = False):
    """(cluster, SacctLog) of a sacct dump on ``cluster_spec``."""
    from ..io.sacct import read_sacct
    from ..tools.generate import load_cluster
    if not cluster_spec:
        raise InputError("a sacct dump needs --cluster (the site's slurm.conf)", file=path)
    cluster = load_cluster(cluster_spec)
    return cluster, read_sacct(path, cluster, tz=tz, skip_bad=skip_bad)


def load_gpu_trace(path: str, fmt: str, cluster_spec, gpu_options: dict, strict=False):
    """(cluster, workload, jobs, skipped) of a Philly, PAI, Helios trace or GPU job list, its notes
    printed; ``strict``: a job left out is an error."""
    from ..io.gputrace import read_gpu_trace
    from ..tools.generate import load_cluster
    cluster = load_cluster(cluster_spec) if cluster_spec else None
    trace = read_gpu_trace(path, fmt, cluster, **gpu_options)
    if strict and trace.skipped:
        first = trace.skipped[0]
        raise InputError(f"job {first.job_id} cannot run: {first.reason}", file=path,
                         line=first.line)
    for note in trace.notes:
        print(f"note: {path}: {note}")
    return trace.cluster, trace.workload, trace.jobs, trace.skipped


def gpu_options(args) -> dict:
    """read_gpu_trace's options from --fractional, --gpus-per-node, --time-limits."""
    return {"fractional": args.fractional, "gpus_per_node": args.gpus_per_node,
            "limits": args.time_limits}


def load_trace(path: str, *, procs=None, strict=False, cluster_spec=None, fmt="auto",
               tz="UTC", skip_bad=False, gpu=None):
    """(cluster, workload or None, jobs, skipped) from an SWF trace, or a workload CSV or
    a sacct dump on ``cluster_spec``, or a GPU trace (``gpu``: its options)."""
    fmt = trace_format(path, fmt)
    if fmt in GPU_TRACE_FORMATS:
        if procs is not None:
            raise InputError("--procs is the machine size of an SWF trace", field="--procs")
        return load_gpu_trace(path, fmt, cluster_spec, gpu or {}, strict=strict)
    if fmt == "sacct":
        if procs is not None:
            raise InputError("--procs is the machine size of an SWF trace; a sacct dump runs "
                             "on --cluster", field="--procs")
        from ..sim.gputypes import typed_workload
        from ..sim.replay import workload_gpu_types
        cluster, log = load_sacct(path, cluster_spec, tz=tz, skip_bad=skip_bad)
        cluster, workload, placed = typed_workload(cluster, log.workload,
                                                   workload_gpu_types(log))
        for note in log.notes + placed.notes:
            print(f"note: {path}: {note}")
        return cluster, workload, workload.jobs, log.skipped
    if fmt == "workload":
        if not cluster_spec:
            raise InputError("a workload CSV needs --cluster (slurm.conf or a standard name)",
                             file=path)
        if procs is not None:
            raise InputError("--procs is the machine size of an SWF trace; a workload CSV runs "
                             "on --cluster", field="--procs")
        from ..io.workload import read_workload
        from ..tools.generate import load_cluster
        cluster = load_cluster(cluster_spec)
        workload = read_workload(path, cluster, strict=strict)
        if (workload.gpu_type != "").any():             # gpu_type column: typed placement
            from ..sim.gputypes import typed_workload
            cluster, workload, placed = typed_workload(cluster, workload)
            for note in placed.notes:
                print(f"note: {path}: {note}")
        return cluster, workload, workload.jobs, workload.skipped
    if cluster_spec:
        raise InputError("--cluster is for workload CSVs; an SWF trace runs on its own machine "
                         "of single-processor nodes (size: MaxProcs, or --procs)",
                         field="--cluster")
    trace = read_swf(path, procs=procs, strict=strict)
    return Cluster.homogeneous(trace.procs), None, trace.jobs, trace.skipped


def placement_from_args(args, cluster, jobs, workload=None):
    """The Placement the options ask for (with the workload's --exclusive=topo jobs),
    or None."""
    if args.topology is None and (args.switches or args.segment or args.block_topology
                                  or args.exclusive_topo):
        raise InputError("--switches, --segment, --exclusive-topo and --block-topology need "
                         "--topology", field="--topology")
    # the readers of the topology inputs load only when an option names one
    from ..io.gresconf import read_gres_conf
    from ..io.topology import read_block_topology
    from ..model.topology import levels_array
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
    count, _, wait = text.partition("@")
    if not count.isdigit() or int(count) < 1:
        raise InputError(f"--switches wants K[@TIME] with K >= 1, got {text!r}",
                         field="--switches")
    from ..io.slurmconf import parse_time
    seconds = parse_time(wait) if wait else None
    return int(count), -1 if seconds is None else int(seconds)


def config_limits(path, cluster, workload):
    """The limit groups ``simulate --config`` enforced (fastsched.sim.site.site_limits)."""
    if workload is None:
        raise InputError("--config needs a workload CSV", field="--config")
    from ..policy.config import load_config     # the site modules load Numba: only here
    from ..sim.site import site_limits
    config = load_config(path)
    return site_limits(config, workload, config.apply_partitions(cluster))


def write_atomic(writer, path) -> None:
    """Run ``writer`` on a temporary file beside ``path``, then rename it to ``path``, so
    an interrupted or failed write leaves the old file (or none), never a truncated one.
    Errors name the path (pandas' OSErrors do not)."""
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


def summary_table(columns: list[tuple[str, dict]], extra=()) -> str:
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


def print_skipped(skipped: list, show_all: bool,
                  what: str = "job(s) that cannot run on this machine") -> None:
    if not skipped:
        return
    shown = skipped if show_all else skipped[:5]
    print(f"skipped {len(skipped)} {what}:")
    for s in shown:
        print(f"  job {s.job_id} (line {s.line}): {s.reason}")
    if len(shown) < len(skipped):
        print(f"  ... {len(skipped) - len(shown)} more (--show-skipped lists them all)")
