"""Preemption in a simulation: the site's settings (slurm.conf and the scheduler
config's QOS) as a :class:`fastsched.model.preemption.Preemption`, and what it cost
(``summary["preemption"]``)."""
from __future__ import annotations

import numpy as np

from ..io.times import parse_time
from ..model.errors import InputError, UnsupportedError
from ..model.lifecycle import saved_progress
from ..model.elastic import REGROW_PREEMPT
from ..model.preemption import OFF, PREEMPT_TYPES, Preemption, parse_mode
from .elastic import shape_goodput_args

__all__ = ["site_preemption", "preemption_summary", "preemption_line", "check_preemption"]


def tier_order(cluster, jobs) -> np.ndarray:
    """Each job's queue priority when none is given and preemption is on: its (first)
    partition's PriorityTier, as Slurm sorts its queue tier first (``sort_job_queue2``);
    ties by submit time, then job id. Without it a preemptor's freed nodes would go to
    the lower-tier jobs submitted before it, which it would preempt again."""
    tier = np.array([p.priority_tier for p in cluster.partitions], dtype=np.float64)
    return tier[np.asarray(jobs.partition)] if len(tier) else np.zeros(len(jobs))


def check_preemption(pre: Preemption, jobs, placement=None) -> None:
    """A preemption a run can apply: classes per job where it has them, no
    --exclusive=topo jobs (their leaf groups are released by node lists)."""
    if pre.job_class is not None and len(pre.job_class) != len(jobs):
        raise InputError(f"preemption classes cover {len(pre.job_class)} jobs, the table "
                         f"has {len(jobs)}", field="preemption")
    if pre.job_class is not None and len(pre.job_class) and (
            (pre.job_class < 0).any() or (pre.job_class >= len(pre.mode)).any()):
        raise InputError(f"preemption classes must be in 0..{len(pre.mode) - 1}",
                         field="preemption")
    if placement is not None and placement.exclusive_topo.any():
        raise UnsupportedError("preemption with --exclusive=topo jobs is not modelled")


def check_preemption_run(lifecycle=None) -> None:
    """UnsupportedError for what preemption is not modelled with: regrowth of
    ``--no-kill`` jobs (:data:`fastsched.model.elastic.REGROW_PREEMPT` says why).
    Elastic jobs that only shrink, and node ranges, are preempted whole, on the nodes
    they hold then (:mod:`fastsched.engine.preempt`), also while those boot (power
    saving: the attempt never ran)."""
    if lifecycle is not None and lifecycle.regrow:
        raise UnsupportedError(REGROW_PREEMPT)


def site_preemption(cluster, config=None, job_qos=None) -> Preemption:
    """The preemption a cluster's slurm.conf sets (``PreemptType``, ``PreemptMode``,
    ``PreemptExemptTime``; partitions' PreemptMode and GraceTime), with the QOS of
    ``config`` (a :class:`fastsched.policy.config.SchedulerConfig`; ``job_qos``: each
    job's QOS index) under preempt/qos. Slurm refuses PreemptMode=OFF with a preempt
    plugin (read_config.c: "PreemptType and PreemptMode values incompatible") and a
    global PreemptMode=SUSPEND without GANG ("PreemptMode=SUSPEND requires GANG too");
    so does this (InputError). SUSPEND,GANG is valid in Slurm and not modelled here
    (UnsupportedError)."""
    other = {str(k).lower(): (str(k), str(v)) for k, v in
             (cluster.settings.other.items() if cluster.settings is not None else ())}
    spelled, kind = other.get("preempttype", ("PreemptType", "preempt/none"))
    kind = kind.strip().lower()
    if kind not in PREEMPT_TYPES:
        raise InputError(f"{kind!r}: expected one of {', '.join(PREEMPT_TYPES)}",
                         field=spelled)
    if kind == "preempt/none":
        return Preemption.none()
    spelled, text = other.get("preemptmode", ("PreemptMode", "OFF"))
    words = {w.strip().upper() for w in text.split(",")}
    if "SUSPEND" in words and "GANG" not in words:
        raise InputError(f"{spelled}={text}: Slurm refuses it (\"PreemptMode=SUSPEND "
                         "requires GANG too\": the gang scheduler resumes suspended jobs)",
                         field=spelled)
    mode = parse_mode(text, field=spelled)
    if mode == OFF:
        raise InputError(f"PreemptType={kind} with PreemptMode=OFF: Slurm refuses them "
                         "(\"PreemptType and PreemptMode values incompatible\")",
                         field=spelled)
    exempt = 0
    if "preemptexempttime" in other:
        spelled, text = other["preemptexempttime"]
        try:
            exempt = parse_time(text) or 0
        except InputError as e:
            raise InputError(e.reason, field=spelled) from None
    if kind == "preempt/partition_prio":
        return Preemption.partition_prio(cluster, mode, exempt)
    if config is None:
        raise InputError("PreemptType=preempt/qos needs the QOS of a scheduler config "
                         "(--config)", field="PreemptType")
    return Preemption.qos(config, job_qos, mode, exempt)


def preemption_summary(jobs, table: dict, lifecycle) -> dict:
    """The summary's ``preemption`` part: preempted attempts, jobs cancelled by
    preemption, and the GPU-hours they ran, lost (after their last checkpoint) and
    kept (checkpointed). Each record counts at the nodes it held: a preempted attempt
    that a failure shrank, or that started narrow on a node range, at each shape's
    width, its checkpoints over the whole attempt (as :func:`.lifecycle.
    lifecycle_summary` counts them)."""
    row, attempt = table["row"], table["attempt"]
    pre = np.asarray(table["preempted"], dtype=bool)
    key = row.astype(np.int64) * (int(attempt.max(initial=0)) + 1) + attempt
    of = np.isin(key, key[pre])         # every record (shape) of a preempted attempt
    width = np.where(table["start"] >= 0, np.diff(table["alloc_offsets"]), jobs.num_nodes[row])
    gpus = (width.astype(np.int64) * jobs.gpus_per_node[row])[of]
    interval = lifecycle.checkpoint_interval[row]
    if "resized" in table:
        shapes = shape_goodput_args(table)
        ran = table["elapsed"] - np.minimum(shapes["pull"], table["elapsed"])
        saved = np.clip(saved_progress(shapes["attempt_run"], interval) - shapes["before"],
                        0, ran)
    else:
        pull = np.zeros(len(row), dtype=np.int64) if table.get("pull") is None \
            else table["pull"]
        ran = np.maximum(table["elapsed"] - pull, 0)
        saved = saved_progress(ran, interval)
    ran, saved = ran[of], saved[of]
    hours = 3600.0
    return {"preempted_attempts": int(pre.sum()),
            "preempted_jobs": int(len(np.unique(row[pre]))),
            "cancelled_jobs": int(np.asarray(table["preempted_job"]).sum()),
            "preempted_gpu_hours": float(np.dot(gpus, table["elapsed"][of])) / hours,
            "lost_gpu_hours": float(np.dot(gpus, ran - saved)) / hours,
            "checkpointed_gpu_hours": float(np.dot(gpus, saved)) / hours}


def preemption_line(summary: dict) -> str:
    """One line on what preemption cost a run (its summary's ``preemption``)."""
    p = summary["preemption"]
    return (f"preemption: {p['preempted_attempts']:,} attempt(s) of {p['preempted_jobs']:,} "
            f"job(s) preempted, {p['cancelled_jobs']:,} cancelled; "
            f"{p['lost_gpu_hours']:,.1f} GPU-h lost, {p['checkpointed_gpu_hours']:,.1f} GPU-h "
            "kept by checkpoints")
