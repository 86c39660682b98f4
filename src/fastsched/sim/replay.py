"""What Slurm did vs a policy: the schedule a sacct dump recorded and the same jobs
replayed under a policy, side by side.

The jobs are the dump's workload (:attr:`fastsched.io.sacct.SacctLog.workload`: one
job per job id that ran, submitted when it became eligible, running as long as its
last run). Their recorded start and end are their last run's (for a requeued job, the
run that ended it; the earlier runs are its wait). Both sides are summarised by the
same function (:func:`fastsched.sim.results.summarize`: waits, JCT, bounded
slowdown, node/CPU/GPU utilisation over each side's own span), so the columns differ
only by the schedule. A job whose run held GPUs of a type (``gres/gpu:a100``) is
replayed on nodes with that type (:mod:`fastsched.sim.gputypes`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..model.constraints import csr_take
from ..model.schedule import Schedule
from .gputypes import typed_workload
from .results import BSLD_TAU, SimulationResult, summarize

__all__ = ["ReplayReport", "replay_report", "recorded_schedule", "workload_gpu_types"]


@dataclass
class ReplayReport:
    """``recorded`` and ``replayed`` summaries (dicts), the replay's ``result``,
    ``jobs``: one row per job (pandas) with its size, both starts, waits and bounded
    slowdowns and ``moved`` = replayed start - recorded start (negative: earlier), the
    ``recorded_schedule`` and ``notes`` (how typed GPU requests were placed)."""

    recorded: dict
    replayed: dict
    result: SimulationResult
    jobs: object
    recorded_schedule: Schedule | None = None
    notes: list = field(default_factory=list)

    def schedules(self, policy: str = "replayed") -> dict:
        """Both schedules as per-job records for :mod:`fastsched.tools.plots`
        (``submit_time``, ``start_time`` and ``end_time``, missing for a job the replay
        never started, ``num_nodes``, ``gpus``): ``{"recorded (Slurm)": ...,
        f"{policy} (replayed)": ...}``."""
        import pandas as pd
        out = {}
        for label, s in (("recorded (Slurm)", self.recorded_schedule),
                         (f"{policy} (replayed)", self.result.schedule)):
            started = s.start_time >= 0
            frame = self.jobs[["job_id", "submit_time", "num_nodes", "gpus"]].copy()
            frame["start_time"] = pd.array(np.where(started, s.start_time, 0), dtype="Int64")
            frame["end_time"] = pd.array(np.where(started, s.end_time, 0), dtype="Int64")
            frame.loc[~started, ["start_time", "end_time"]] = pd.NA
            out[label] = frame
        return out

    def moved_most(self, top: int = 10):
        """The ``top`` jobs whose start moved most, either way."""
        order = self.jobs["moved"].abs().sort_values(ascending=False, kind="stable").index
        return self.jobs.loc[order[:top]]

    def by(self, column: str):
        """Mean recorded and replayed wait and bounded slowdown per value of
        ``column`` (``partition``, ``account`` or ``user``), most jobs first."""
        frame = self.jobs.groupby(column, sort=False).agg(
            jobs=("job_id", "size"), recorded_wait=("recorded_wait", "mean"),
            replayed_wait=("replayed_wait", "mean"), recorded_bsld=("recorded_bsld", "mean"),
            replayed_bsld=("replayed_bsld", "mean"))
        return frame.sort_values("jobs", ascending=False, kind="stable")


def _last_runs(log) -> np.ndarray:
    """Per job of ``log.workload``, in its order: the row of its last run in ``log``."""
    runs = log.jobs.job_id
    last = np.lexsort((log.attempt, runs))
    keep = np.r_[runs[last][1:] != runs[last][:-1], True] if len(runs) else np.zeros(0, bool)
    last = last[keep]
    return last[np.searchsorted(runs[last], log.workload.jobs.job_id)]


def workload_gpu_types(log) -> np.ndarray:
    """Per job of ``log.workload``: the GPU type its last run held ("" none or
    several)."""
    return log.gpu_type[_last_runs(log)]


def recorded_schedule(log) -> Schedule:
    """The recorded schedule of ``log.workload``'s jobs, in its order: each job's last
    run (start, end, nodes)."""
    rows = _last_runs(log)
    s = log.schedule
    offsets, index = csr_take(s.alloc_offsets, rows)
    return Schedule(job_id=log.workload.jobs.job_id.copy(), start_time=s.start_time[rows],
                    end_time=s.end_time[rows], alloc_offsets=offsets,
                    alloc_nodes=s.alloc_nodes[index],
                    alloc_gpu_mask=None if s.alloc_gpu_mask is None else s.alloc_gpu_mask[index])


def replay_report(cluster, log, policy: str = "easy", **options) -> ReplayReport:
    """Replay ``log.workload`` (a :class:`fastsched.io.sacct.SacctLog`) on ``cluster``
    under ``policy`` (``options`` as :func:`fastsched.simulate` takes them) and compare
    it with what the dump recorded."""
    from .simulator import simulate
    w = log.workload
    typed_cluster, typed, placed = typed_workload(cluster, w, workload_gpu_types(log))
    result = simulate(typed_cluster, typed.jobs, policy, skipped=log.skipped,
                      **typed.constraints(), **options)
    recorded = recorded_schedule(log)
    rec_summary = summarize(cluster, w.jobs, recorded)
    rec_summary["skipped"] = len(log.skipped)
    return ReplayReport(rec_summary, result.summary, result,
                        _job_rows(cluster, w, recorded, result.schedule), recorded,
                        placed.notes)


def _bsld(submit, start, end) -> np.ndarray:
    run = (end - start).astype(np.float64)
    return np.maximum((end - submit) / np.maximum(run, BSLD_TAU), 1.0)


def _job_rows(cluster, w, recorded: Schedule, replayed: Schedule):
    import pandas as pd
    jobs = w.jobs
    started = replayed.start_time >= 0
    names = np.array([p.name for p in cluster.partitions] + [""], dtype=object)
    frame = pd.DataFrame({
        "job_id": jobs.job_id,
        "user": np.array(w.user_names, dtype=object)[jobs.user],
        "account": np.array(w.account_names, dtype=object)[w.account],
        "partition": names[jobs.partition],
        "submit_time": jobs.submit_time,
        "num_nodes": jobs.num_nodes,
        "gpus": jobs.num_nodes * jobs.gpus_per_node,
        "recorded_start": recorded.start_time,
        "replayed_start": pd.array(np.where(started, replayed.start_time, 0), dtype="Int64"),
        "recorded_wait": recorded.start_time - jobs.submit_time,
        "replayed_wait": pd.array(np.where(started, replayed.start_time - jobs.submit_time,
                                           0), dtype="Int64"),
        "recorded_bsld": _bsld(jobs.submit_time, recorded.start_time, recorded.end_time),
        "replayed_bsld": np.where(started, _bsld(jobs.submit_time, replayed.start_time,
                                                 replayed.end_time), np.nan),
    })
    frame.loc[~started, ["replayed_start", "replayed_wait"]] = pd.NA
    frame["moved"] = frame["replayed_start"] - frame["recorded_start"]
    return frame
