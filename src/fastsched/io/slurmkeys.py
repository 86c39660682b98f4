"""Which slurm.conf keys fastsched models, keeps, or warns about; global keys into
:class:`~fastsched.model.settings.SlurmSettings`.

A key is listed here when it changes what Slurm schedules (which jobs start, when,
where) and fastsched does not model it: reading it gives a ConfigWarning. Keys that
change nothing for scheduling (daemons, addresses, logging, accounting storage)
are kept on ``settings.other`` silently. Meanings from the slurm.conf man page.
"""
from __future__ import annotations

from ..model.errors import InputError
from ..model.settings import SlurmSettings
from .times import parse_time

__all__ = ["GLOBAL_NOT_MODELLED", "NODE_NOT_MODELLED", "PARTITION_NOT_MODELLED",
           "SCHEDULER_PARAMETERS_MODELLED", "global_setting", "partition_warnings",
           "parse_scheduler_parameters"]

_PRIORITY_NOTE = ("kept on Cluster.settings; simulate applies priority weights only from "
                  "--config (fastsched generate config), so this run orders the queue "
                  "without it")

#: SchedulerParameters options the simulator applies (simulate takes them as
#: --resolution / --window when those are not given)
SCHEDULER_PARAMETERS_MODELLED = ("bf_resolution", "bf_window")
#: SchedulerParameters options the lifecycle applies: when a requeued job may start again
_SCHEDULER_PARAMETERS_LIFECYCLE = ("requeue_delay",)
#: SchedulerParameters options the Slurm planning model applies too (fastsched plan)
_SCHEDULER_PARAMETERS_PLAN = ("bf_max_job_test", "bf_max_job_part", "bf_max_job_user",
                              "bf_max_job_user_part")
#: SchedulerParameters options that change no scheduling decision: when a cycle runs,
#: how it yields its locks and resumes (bf_continue), when batch jobs launch
_SCHEDULER_PARAMETERS_HARMLESS = {"bf_interval", "sched_interval", "bf_yield_interval",
                                  "bf_yield_sleep", "max_rpc_cnt", "bf_running_job_reserve",
                                  "bf_continue", "sched_min_interval", "batch_sched_delay"}


def _scheduler_type(value: str) -> str:
    if value.strip().lower() == "sched/builtin":
        return "strict priority order without backfill: run with --policy fcfs to match"
    return ""


def _select_type(value: str) -> str:
    if value.strip().lower() == "select/linear":
        return "whole-node allocation: jobs here share nodes unless they ask for all of one"
    return ""


def _select_parameters(value: str) -> str:
    if "memory" not in value.lower():
        return ("memory is not a consumable resource in Slurm with these parameters, but "
                "fastsched counts it per node")
    return ""


def _preempt(value: str) -> str:
    if "suspend" in value.lower() or "gang" in value.lower():
        return "SUSPEND/GANG preemption is not modelled: simulate refuses it"
    return ""


def _scheduler_parameters(value: str) -> str:
    unmodelled = [k for k in parse_scheduler_parameters(value)
                  if k not in SCHEDULER_PARAMETERS_MODELLED
                  and k not in _SCHEDULER_PARAMETERS_LIFECYCLE
                  and k not in _SCHEDULER_PARAMETERS_PLAN
                  and k not in _SCHEDULER_PARAMETERS_HARMLESS]
    if not unmodelled:
        return ""
    return (f"{', '.join(unmodelled)} not modelled (only "
            f"{' and '.join(SCHEDULER_PARAMETERS_MODELLED)} are, requeue_delay sets "
            "the requeue delay, and fastsched plan "
            f"applies {', '.join(_SCHEDULER_PARAMETERS_PLAN)}; the rest are kept on "
            "Cluster.settings.scheduler_parameters)")


#: lower-case global key -> warning text, or a function of the value giving it ("" none)
GLOBAL_NOT_MODELLED = {
    "schedulertype": _scheduler_type,
    "schedulerparameters": _scheduler_parameters,
    "selecttype": _select_type,
    "selecttypeparameters": _select_parameters,
    "preempttype": _preempt,
    "preemptmode": _preempt,
    "prioritytype": lambda v: _PRIORITY_NOTE if "multifactor" in v.lower() else "",
    "prioritydecayhalflife": _PRIORITY_NOTE,
    "priorityweightage": _PRIORITY_NOTE, "priorityweightassoc": _PRIORITY_NOTE,
    "priorityweightfairshare": _PRIORITY_NOTE, "priorityweightjobsize": _PRIORITY_NOTE,
    "priorityweightpartition": _PRIORITY_NOTE, "priorityweightqos": _PRIORITY_NOTE,
    "priorityweighttres": _PRIORITY_NOTE, "priorityfavorsmall": _PRIORITY_NOTE,
    "prioritymaxage": _PRIORITY_NOTE, "priorityflags": _PRIORITY_NOTE,
    "priorityusageresetperiod": _PRIORITY_NOTE, "prioritycalcperiod": _PRIORITY_NOTE,
    "accountingstorageenforce": "association and QOS limits are enforced only from --config",
    "enforcepartlimits": "partition limits are not enforced at submission",
    "overtimelimit": "jobs are killed exactly at their time limit",
    "killwait": "jobs are killed exactly at their time limit",
    "defmempercpu": "memory defaults come from each job's request",
    "defmempernode": "memory defaults come from each job's request",
    "defmempergpu": "memory defaults come from each job's request",
    "defcpupergpu": "CPU defaults come from each job's request",
    "maxmempercpu": "memory limits are not enforced",
    "maxmempernode": "memory limits are not enforced",
    "maxjobcount": "no limit on the number of jobs in the system",
    "maxarraysize": "array sizes are not limited",
    "fairsharedampeningfactor": _PRIORITY_NOTE,
    "suspendtime": "power saving is modelled only under simulate --power and sbatch "
                   "--test-only --power (else nodes are always up)",
}

#: lower-case NodeName key -> why it is not modelled
NODE_NOT_MODELLED = {
    "corespeccount": "specialised cores are not set aside: every CPU is schedulable",
    "cpuspeclist": "specialised CPUs are not set aside: every CPU is schedulable",
    "memspeclimit": "memory for system use is not set aside",
    "tmpdisk": "temporary disk is not a schedulable resource here",
    "topology": "per-node topology names are not read (topology.conf is)",
    "restrictedcorespergpu": "cores restricted to GPU jobs are not set aside",
}

#: lower-case PartitionName key -> why it is not modelled
PARTITION_NOT_MODELLED = {
    "allowgroups": "group restrictions are not enforced",
    "denyaccounts": "account restrictions are not enforced",
    "denyqos": "QOS restrictions are not enforced",
    "minnodes": "minimum node counts are not enforced",
    "exclusiveuser": "whole-node exclusivity per user is not modelled",
    "exclusive": "whole-node exclusivity is not modelled",
    "lln": "least-loaded-node placement is not modelled (best fit is used)",
    "maxcpuspernode": "per-node CPU caps are not enforced",
    "maxcpuspersocket": "per-socket CPU caps are not enforced",
    "maxmempercpu": "memory limits are not enforced",
    "maxmempernode": "memory limits are not enforced",
    "defmempercpu": "memory defaults come from each job's request",
    "defmempernode": "memory defaults come from each job's request",
    "defmempergpu": "memory defaults come from each job's request",
    "defcpupergpu": "CPU defaults come from each job's request",
    "overtimelimit": "jobs are killed exactly at their time limit",
    "priorityjobfactor": _PRIORITY_NOTE,
    "tresbillingweights": _PRIORITY_NOTE,
    "reqresv": "reservations are not modelled",
    "rootonly": "submission rights are not enforced",
    "selecttypeparameters": "per-partition selection parameters are not modelled",
    "topology": "per-partition topologies are not modelled",
}


def partition_warnings(part, opts: dict) -> list[str]:
    """Warning texts for a partition: keys not modelled, and kept-but-unenforced values
    that differ from Slurm's defaults."""
    out = [f"{opts[k][0]}={opts[k][1]}: {why}" for k, why in PARTITION_NOT_MODELLED.items()
           if k in opts]
    kept = "kept on the Partition, not enforced"
    if part.max_nodes is not None:
        out.append(f"MaxNodes={part.max_nodes}: {kept} (larger jobs are scheduled)")
    if part.oversubscribe != "NO":
        out.append(f"OverSubscribe={part.oversubscribe}: {kept} (jobs share a node's CPUs "
                   "and GPUs as consumable resources, never beyond them)")
    if part.qos:
        out.append(f"QOS={part.qos}: the partition QOS is {kept}")
    for key, value in (("AllowAccounts", part.allow_accounts), ("AllowQos", part.allow_qos)):
        if value is not None:
            out.append(f"{key}={','.join(value)}: {kept}")
    if part.state != "UP":
        out.append(f"State={part.state}: {kept} (jobs in it are scheduled as if UP)")
    return out


def parse_scheduler_parameters(value: str) -> dict:
    """``bf_window=4320,bf_continue`` -> {"bf_window": 4320, "bf_continue": True}."""
    out: dict = {}
    for item in value.split(","):
        key, sep, val = item.strip().partition("=")
        if not key:
            continue
        val = val.strip()
        out[key.lower()] = True if not sep else int(val) if val.isdigit() else val
    return out


def global_setting(settings: SlurmSettings, key: str, value: str, conf) -> bool:
    """Store a global key on ``settings``; False when it is none of its fields."""
    lower = key.lower()
    simple = {"clustername": "cluster_name", "schedulertype": "scheduler_type",
              "selecttype": "select_type", "selecttypeparameters": "select_type_parameters",
              "prioritytype": "priority_type"}
    if lower in simple:
        setattr(settings, simple[lower], value)
    elif lower == "schedulerparameters":
        settings.scheduler_parameters = parse_scheduler_parameters(value)
    elif lower.startswith("priorityweight"):
        text = value.strip()
        settings.priority_weights[key[len("PriorityWeight"):]] = \
            int(text) if text.isdigit() else text
    elif lower == "prioritydecayhalflife":
        try:
            settings.priority_decay_half_life = parse_time(value) or 0
        except InputError as e:
            raise InputError(e.reason, file=conf.file, line=conf.line, field=key) from None
    else:
        return False
    return True
