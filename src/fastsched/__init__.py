"""fastsched: a Slurm-compatible scheduling core with a compiled backfill engine.

Public API (everything else is private)::

    import fastsched as fs
    trace = fs.read_swf(fs.bundled_trace("KTH-SP2"))
    result = fs.simulate(fs.Cluster.homogeneous(trace.procs), trace.jobs, "easy")
    result.summary, result.jobs          # dict, pandas DataFrame
    fs.verify(result.cluster, result.workload, result.schedule, policy="easy").raise_if_failed()

    sched = fs.Scheduler(cluster, "easy")     # embed: submit / schedule (pure) / apply / complete
"""
from .engine import _jitcache  # noqa: F401  (first: kernels compiled below are keyed on it)
from .checkpoint import Checkpoints
from .checkpoint import load as load_checkpoint
from .cluster import Cluster, ClusterState, NodeState, Partition
from .config import SchedulerConfig, load_config, parse_config
from .errors import FastschedError, InputError, UnsupportedError
from .fairshare import AssociationTree, Usage, classic, fair_tree
from .generate import ai_cluster, ai_mix
from .hostlist import compress as compress_hostlist, expand as expand_hostlist
from .engine.interrupt import Interrupted
from .jobs import JobRequest, JobTable
from .launch import Allocation, allocate_local, task_environments
from .launch import run as launch_run
from .limits import blocked_reasons, compile_limits
from .policies import POLICIES
from .priority import (RESEARCH_ORDERS, PriorityWeights, multifactor, research_order,
                       research_queue)
from .results import SimulationResult
from .sbatch import NormalisedRequest, SlurmRequest, normalise, parse_args, parse_script, to_job_request
from .schedule import Schedule
from .scheduler import Decisions, Scheduler, StaleDecisionsError
from .sim import simulate, simulate_swf
from .site import priority_function, simulate_site
from .snapshot import start_times_at
from .slurmconf import read_cluster, write_cluster
from .swf import SWFTrace, bundled_trace, read_swf
from .topology import (BlockTopology, GpuGroups, choose_gpus, levels_array, parse_gres_conf,
                       place_block, place_tree, placement_quality, placement_summary,
                       read_block_topology, read_gres_conf)
from .usage import UsageTracker, usage_at
from .verify import ScheduleError, VerifyReport, Violation, schedule_from_frame, verify
from .views import sprio, sshare
from .workload import Workload, read_workload, requests_to_workload, write_workload

__version__ = "0.1.0"

__all__ = [
    "Cluster", "ClusterState", "NodeState", "Partition",
    "FastschedError", "InputError", "UnsupportedError", "ScheduleError", "Interrupted",
    "Checkpoints", "load_checkpoint",
    "JobRequest", "JobTable", "Schedule", "SimulationResult", "POLICIES",
    "Scheduler", "Decisions", "StaleDecisionsError", "start_times_at",
    "simulate", "simulate_swf", "read_swf", "SWFTrace", "bundled_trace",
    "verify", "VerifyReport", "Violation", "schedule_from_frame",
    "compress_hostlist", "expand_hostlist",
    "ai_cluster", "ai_mix", "Workload", "read_cluster", "write_cluster", "read_workload",
    "write_workload", "requests_to_workload",
    "AssociationTree", "Usage", "fair_tree", "classic",
    "Allocation", "allocate_local", "task_environments", "launch_run",
    "SlurmRequest", "NormalisedRequest", "parse_args", "parse_script", "normalise",
    "to_job_request",
    "PriorityWeights", "multifactor", "research_order", "research_queue", "RESEARCH_ORDERS",
    "place_tree", "place_block", "levels_array", "BlockTopology", "read_block_topology",
    "GpuGroups", "parse_gres_conf", "read_gres_conf", "choose_gpus",
    "placement_quality", "placement_summary",
    "SchedulerConfig", "load_config", "parse_config", "compile_limits", "blocked_reasons",
    "usage_at", "UsageTracker", "sprio", "sshare", "simulate_site", "priority_function",
]
