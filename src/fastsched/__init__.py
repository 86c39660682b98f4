"""fastsched: a Slurm-compatible scheduling core with a compiled backfill engine.

Public API (everything else is private; names load on first use, so
``import fastsched`` loads neither the compiled engine nor Numba)::

    import fastsched as fs
    trace = fs.read_swf(fs.bundled_trace("KTH-SP2"))
    result = fs.simulate(fs.Cluster.homogeneous(trace.procs), trace.jobs, "easy")
    result.summary, result.jobs          # dict, pandas DataFrame
    fs.verify(result.cluster, result.workload, result.schedule, policy="easy").raise_if_failed()

    sched = fs.Scheduler(cluster, "easy")     # embed: submit / schedule (pure) / apply / complete
    fs.Scheduler.from_state(cluster, running, pending)   # running: fs.RunningJobs
"""
from __future__ import annotations

import importlib
import sys
import types

__version__ = "0.1.0"

#: module -> the public names it defines (a pair: public name, name in the module)
_PUBLIC_BY_MODULE = {
    "engine.placement": ('choose_gpus', 'place_block', 'place_tree',),
    "engine": ('Progress', 'RunningJobs',),
    "engine.interrupt": ('Interrupted',),
    "io.events": ('read_node_events',),
    "io.reservations": ('read_reservations',),
    "io.planstate": ('read_plan_state', 'read_planned', 'write_planned',),
    "io.squeuejson": ('read_squeue_json',),
    "io.sacct": ('SacctLog', 'read_sacct',),
    "io.sacctout": ('write_sacct',),
    "io.swfout": ('write_swf',),
    "io.batsimout": ('write_batsim',),
    "io.jobsout": ('write_jobs',),
    "io.gputrace": ('GpuTrace', 'read_gpu_trace', 'read_pai_nodes',),
    "io.hostlist": (('compress_hostlist', 'compress'), ('expand_hostlist', 'expand'),),
    "io.sbatch": ('NormalisedRequest', 'SlurmRequest', 'normalise', 'parse_args', 'parse_script', 'to_job_request',),
    "io.slurmconf": ('read_cluster', 'write_cluster',),
    "io.swf": ('SWFTrace', 'bundled_trace', 'read_swf',),
    "io.gresconf": ('parse_gres_conf', 'read_gres_conf',),
    "io.topology": ('read_block_topology',),
    "io.workload": ('Workload', 'read_workload', 'requests_to_workload', 'write_workload',),
    "model.cluster": ('Cluster', 'ClusterState', 'NodeState', 'Partition',),
    "model.events": ('NodeEvents',),
    "model.reservations": ('Reservation', 'Reservations',),
    "model.resvjobs": ('JobReservations',),
    "model.failures": ('FailureModel',),
    "model.images": ('Containers', 'ImagePull',),
    "model.power": ('PowerSaving',),
    "io.slurmpower": ('power_saving',),
    "model.lifecycle": ('Lifecycle', 'goodput',),
    "model.preemption": ('Preemption',),
    "model.errors": ('ConfigWarning', 'FastschedError', 'InputError', 'UnsupportedError',),
    "model.jobs": ('JobRequest', 'JobTable',),
    "model.planstate": ('PlanState',),
    "model.policies": ('POLICIES',),
    "model.schedule": ('Schedule',),
    "model.settings": ('SlurmSettings',),
    "model.topology": ('BlockTopology', 'GpuGroups', 'levels_array',),
    "policy.config": ('SchedulerConfig', 'load_config', 'parse_config',),
    "policy.fairshare": ('AssociationTree', 'Usage', 'classic', 'fair_tree',),
    "policy.limits": ('blocked_reasons', 'compile_limits',),
    "policy.priority": ('RESEARCH_ORDERS', 'PriorityWeights', 'multifactor', 'research_order', 'research_queue',),
    "policy.usage": ('UsageTracker', 'usage_at',),
    "sim.checkpoint": ('Checkpoints', ('load_checkpoint', 'load'),),
    "sim.plan": ('Planned', ('plan_state', 'plan'),),
    "sim.placement": ('placement_quality', 'placement_summary',),
    "sim.results": ('SimulationResult',),
    "sim.replay": ('ReplayReport', 'replay_report',),
    "sim.gputypes": ('TypedPlacement', 'place_gpu_types', 'typed_workload',),
    "sim.decisions": ('Decisions', 'StaleDecisionsError',),
    "sim.scheduler": ('Scheduler',),
    "sim.simulator": ('simulate', 'simulate_swf',),
    "sim.site": ('priority_function', 'simulate_site',),
    "sim.preemption": ('site_preemption',),
    "sim.snapshot": ('start_times_at',),
    "sim.views": ('sprio', 'sshare',),
    "tools.compareplan": ('PlanComparison', 'compare_plans',),
    "tools.generate": ('ai_cluster', 'ai_mix', 'nodes_for_load',),
    "tools.rlscheduler": ('RLTable', 'read_rl_trace', ('reproduce_rlscheduler', 'reproduce'),),
    "tools.rlsim": ('RLJobs', 'RLWindow',),
    "tools.rlfast": (('RLFastWindow', 'FastWindow'),),
    "tools.sweepfile": ('SweepGrid', 'load_sweep', 'parse_sweep',),
    "tools.sweep": ('run_sweep', ('read_sweep_results', 'read_results'),),
    "tools.plots": (('plot_gantt', 'gantt'), ('plot_utilisation', 'utilisation'),
                    ('plot_queue_length', 'queue_length'), ('plot_cdf', 'cdf'),
                    ('plot_sweep', 'sweep_plot'), ('plot_fairshare', 'fairshare'),
                    ('read_jobs_csv', 'read_jobs'),),
    "tools.usagehistory": ('account_usage', 'schedule_times',),
    "tools.report": ('report_html', 'report_numbers',),
    "tools.launch": ('Allocation', 'ArrayTask', 'WarnSignal', 'allocate_local', 'array_task', 'parse_signal', 'task_environments', ('launch_run', 'run'),),
    "verify": ('ScheduleError', 'VerifyReport', 'Violation', 'schedule_from_frame',),
}
_WHERE = {(n if isinstance(n, str) else n[0]): (module, n if isinstance(n, str) else n[1])
          for module, names in _PUBLIC_BY_MODULE.items() for n in names}

__all__ = sorted(_WHERE) + ["verify"]

class _Package(types.ModuleType):
    """``fastsched.verify`` names both a subpackage and the public function. Loading the
    subpackage binds the name to it (the import system's ``setattr`` on this package);
    this class binds the function instead, so the name is the function whoever loads the
    subpackage first, and ``import fastsched`` need not load it (nor NumPy)."""

    def __setattr__(self, name, value):
        if name == "verify" and isinstance(value, types.ModuleType):
            value = value.verify
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str):
    if name == "verify":
        importlib.import_module(".verify", __name__)      # binds the function (_Package)
        return globals()["verify"]
    try:
        module, attr = _WHERE[name]
    except KeyError:
        raise AttributeError(f"module 'fastsched' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f".{module}", __name__), attr)
    globals()[name] = value          # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
