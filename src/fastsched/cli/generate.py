"""``fastsched generate cluster|workload|config|slurm-state``: the standard inputs and
examples."""
from __future__ import annotations

import argparse
from importlib import resources
from pathlib import Path

from ..io.gpureaders import GPU_FORMATS
from ..io.slurmconf import topology_path, write_cluster
from ..io.workload import write_workload
from ..tools.generate import (CLUSTERS, DAY, WORKLOADS, ai_cluster, ai_mix, load_cluster,
                              nodes_for_load)
from ..model.cluster import Cluster
from ..model.errors import InputError
from .argtypes import non_negative_int, positive_float, positive_int, seed


def configure(g: argparse.ArgumentParser, command: str) -> None:
    g.description = ("Write the standard inputs of the benchmarks (benchmarks/RESULTS.md) "
                     "and examples: a cluster as slurm.conf + topology.conf + gres.conf, a "
                     "seeded ai-mix workload as CSV, or the example site configuration.")
    gsub = g.add_subparsers(title="what", metavar="WHAT")
    g.set_defaults(run=lambda args: (g.print_help(), 2)[1])

    c = gsub.add_parser("cluster", help="write a standard cluster, or N identical nodes, as "
                        "slurm.conf (+ topology.conf, gres.conf)",
                        description="Write a standard cluster as a slurm.conf subset (NodeName, "
                        "PartitionName), its tree topology as topology.conf and its GPUs' "
                        "socket groups as gres.conf in the same directory (both overwritten); "
                        "or, with --nodes, a cluster of N identical nodes of any size (one "
                        "partition 'all', Default=YES; slurm.conf only); or, with --load L "
                        "--trace FILE, such a cluster with N chosen so the trace offers "
                        "load L (docs/site-inputs.md).")
    c.add_argument("name", nargs="?", choices=sorted(CLUSTERS),
                   help="standard cluster (ai-8k, ai-100k, ai-1m); or give --nodes")
    c.add_argument("--nodes", type=positive_int, metavar="N", help="N identical nodes")
    c.add_argument("--load", type=positive_float, metavar="L",
                   help="with --trace, instead of --nodes: as many identical nodes as make "
                   "the trace's offered load (GPU-seconds / (submission span x cluster "
                   "GPUs)) at most L, e.g. 0.8: N = ceil(GPU-seconds / (L x span x G)), at "
                   "least its widest job; the chosen N is printed")
    c.add_argument("--trace", metavar="FILE",
                   help="with --load: a GPU trace (Philly, PAI, Helios or a GPU job list, "
                   "read as 'simulate' reads it with this --gpus-per-node)")
    c.add_argument("--format", dest="trace_format", default="auto",
                   choices=("auto",) + GPU_FORMATS, help="with --trace: its format (default: "
                   "by content)")
    c.add_argument("--gpus-per-node", type=non_negative_int, default=8, metavar="G",
                   help="with --nodes: GPUs per node (default 8; 0: CPU nodes)")
    c.add_argument("--cpus", type=positive_int, metavar="C",
                   help="with --nodes: CPUs per node (default 8 per GPU, 64 without GPUs)")
    c.add_argument("--mem", type=non_negative_int, default=0, metavar="MB",
                   help="with --nodes: RealMemory per node in MB (default 0: not counted)")
    c.add_argument("--gpu-type", default="", metavar="T",
                   help="with --nodes: the GPUs' type, e.g. a100 (Gres=gpu:a100:G)")
    c.add_argument("-o", "--output", required=True, metavar="slurm.conf",
                   help="slurm.conf to write; topology.conf goes next to it")
    c.set_defaults(run=_cmd_generate_cluster)

    w = gsub.add_parser("workload", help="write a seeded standard workload as CSV",
                        description="Write a seeded standard workload as CSV (.csv or .csv.gz) "
                        "or Parquet (.parquet): "
                        "job_id, submit_time, time_limit, runtime, num_nodes, gpus_per_node, "
                        "cpus_per_node, mem_per_node, partition, user, account, org.")
    w.add_argument("name", choices=list(WORKLOADS), help="workload (ai-mix)")
    w.add_argument("--cluster", required=True, metavar="slurm.conf",
                   help="cluster file (or a standard cluster name: "
                        + ", ".join(sorted(CLUSTERS)) + ")")
    w.add_argument("--jobs", type=non_negative_int, required=True, metavar="N",
                   help="number of jobs")
    w.add_argument("--seed", type=seed, default=0, help="random seed (default 0)")
    w.add_argument("--load", type=positive_float, default=1.05,
                   help="offered load as a fraction of the cluster's GPU-hours (default 1.05)")
    w.add_argument("-o", "--output", required=True, metavar="jobs.csv",
                   help="CSV to write (.csv.gz compresses), or .parquet (needs "
                        "pip install 'fastsched[parquet]')")
    w.set_defaults(run=_cmd_generate_workload)

    site = gsub.add_parser("config", help="write the example site configuration (TOML)",
                        description="Write the example site configuration: multifactor "
                        "priority weights, the association tree of ai-mix workloads "
                        "(org01..org20 > acct001..acct200) with shares and limits, QOS and "
                        "partition overrides. Edit it for your site.")
    site.add_argument("-o", "--output", required=True, metavar="site.toml", help="file to write")
    site.set_defaults(run=_cmd_generate_config)

    state = gsub.add_parser("slurm-state", help="write a recorded state of a real Slurm "
                            "cluster and Slurm's own plan of it (for fastsched plan)",
                            description="Write a moment of a real Slurm 22.05.8 cluster (64 "
                            "nodes x 8 GPUs, select/cons_tres, full-depth backfill): "
                            "slurm.conf, running.csv (the running jobs), squeue_start.csv "
                            "(the 986 pending jobs with squeue --start's planned start and "
                            "nodes: the pending list of fastsched plan and the plan to "
                            "compare with) and sdiag.txt (the cycle's time: Last cycle when "
                            "1796230571). Recorded with ../shared/slurm-states' recipe; "
                            "docs/slurm-model.md.")
    state.add_argument("-o", "--output", required=True, metavar="DIR",
                       help="directory to write (created)")
    state.set_defaults(run=_cmd_generate_state)


def _example(name: str) -> bytes:
    """A file shipped in fastsched/data."""
    return (resources.files("fastsched") / "data" / name).read_bytes()


def _cmd_generate_cluster(args) -> int:
    if (args.load is None) != (args.trace is None):
        raise InputError("--load and --trace go together", field="--load"
                         if args.load is None else "--trace")
    if args.load is not None:
        if args.nodes is not None:
            raise InputError("give --nodes or --load with --trace, not both", field="--load")
        args.nodes = _nodes_for_trace(args)
    if args.nodes is not None:
        return _write_sized_cluster(args)
    if args.name is None:
        raise InputError("name a standard cluster (ai-8k, ai-100k, ai-1m) or give --nodes N",
                         field="name")
    cluster = ai_cluster(args.name)
    write_cluster(cluster, args.output, name=args.name)
    gres = Path(args.output).with_name("gres.conf")
    gres.write_bytes(_example("example-gres.conf"))
    extra = f" (+ {topology_path(args.output)}, {gres})"
    print(f"{args.name}: {cluster.num_nodes:,} nodes, {int(cluster.gpus.sum()):,} GPUs "
          f"({cluster.gpu_type}), partitions "
          + ", ".join(f"{p.name} ({len(p.nodes):,} nodes)" for p in cluster.partitions)
          + f" -> {args.output}{extra}")
    return 0


#: bundled file -> name written by ``generate slurm-state``
SLURM_STATE_FILES = {"slurm-state-n64.conf": "slurm.conf",
                     "slurm-state-n64-running.csv": "running.csv",
                     "slurm-state-n64-squeue-start.csv.gz": "squeue_start.csv",
                     "slurm-state-n64-sdiag.txt": "sdiag.txt"}


def _cmd_generate_state(args) -> int:
    import gzip
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    for bundled, name in SLURM_STATE_FILES.items():
        data = _example(bundled)
        (out / name).write_bytes(gzip.decompress(data) if bundled.endswith(".gz") else data)
    print(f"Slurm 22.05.8 state, 64 nodes x 8 GPUs, 39 running and 986 pending jobs, cycle "
          f"at 1796230571 -> {out}/ ({', '.join(SLURM_STATE_FILES.values())})")
    return 0


def _nodes_for_trace(args) -> int:
    """N of ``--load L --trace FILE`` (tools.generate.nodes_for_load), said on a line."""
    import warnings
    from ..io.gputrace import read_gpu_trace
    from ..model.errors import ConfigWarning
    if args.gpus_per_node < 1:
        raise InputError("--load sizes GPU nodes: --gpus-per-node must be >= 1",
                         field="--gpus-per-node")
    with warnings.catch_warnings():                 # the derived cluster is replaced
        warnings.simplefilter("ignore", ConfigWarning)
        trace = read_gpu_trace(args.trace, args.trace_format, gpus_per_node=args.gpus_per_node)
    w = trace.workload
    nodes = nodes_for_load(w, args.gpus_per_node, args.load)
    print(f"{args.trace}: {len(w):,} jobs, {w.gpu_seconds() / 3600:,.0f} GPU-hours over "
          f"{w.span / DAY:,.2f} days: {nodes:,} nodes x {args.gpus_per_node} GPUs give an "
          f"offered load of {w.gpu_seconds() / (w.span * nodes * args.gpus_per_node):.3f} "
          f"(asked {args.load:g})" + (f"; its widest job needs {nodes:,} nodes" if nodes ==
                                        int(w.jobs.num_nodes.max()) and nodes > 1 else ""))
    return nodes


def _write_sized_cluster(args) -> int:
    """``--nodes N --gpus-per-node G [--cpus C] [--mem MB] [--gpu-type T]``."""
    if args.name is not None:
        raise InputError("give a standard cluster name or --nodes, not both", field="--nodes")
    if args.gpus_per_node > 64:
        raise InputError(f"at most 64 GPUs per node, got {args.gpus_per_node}",
                         field="--gpus-per-node")
    gpus = args.gpus_per_node
    cpus = args.cpus or (8 * gpus if gpus else 64)
    prefix = "gpu" if gpus else "node"
    cluster = Cluster.homogeneous(args.nodes, cpus=cpus, gpus=gpus, mem_mb=args.mem,
                                  prefix=prefix, gpu_type=args.gpu_type if gpus else "")
    write_cluster(cluster, args.output)
    print(f"{args.nodes:,} nodes x {gpus} GPUs{f' ({args.gpu_type})' if args.gpu_type else ''}"
          f", {cpus} CPUs, {args.mem:,} MB; partition all -> {args.output}")
    return 0


def _cmd_generate_config(args) -> int:
    Path(args.output).write_bytes(_example("example-config.toml"))
    print(f"example site configuration -> {args.output}")
    return 0


def _cmd_generate_workload(args) -> int:
    cluster = load_cluster(args.cluster)
    workload = ai_mix(cluster, args.jobs, seed=args.seed, load=args.load)
    write_workload(workload, cluster, args.output)
    span = workload.span
    print(f"{args.name} (seed {args.seed}): {len(workload):,} jobs over {span:,} s "
          f"({span / DAY:.1f} days), offered load {workload.offered_load(cluster):.3f} of "
          f"{int(cluster.gpus.sum()):,} GPUs -> {args.output}")
    return 0
