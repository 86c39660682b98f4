"""What a simulation returns: per-job records and a summary with its semantics.

Records are built from the arrays only when asked for (``result.jobs``), so a
simulation of a million jobs does not pay for a million hostlist strings.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .cluster import Cluster
from .jobs import JobTable
from .metrics import gpu_fragmentation
from .schedule import Schedule

#: bounded slowdown threshold (seconds), as in Feitelson's metrics
BSLD_TAU = 10

#: columns of the per-job records, in CSV order
RECORD_COLUMNS = ["job_id", "submit_time", "start_time", "end_time", "wait_time", "run_time",
                  "time_limit", "state", "num_nodes", "procs", "gpus", "nodes", "gpu_ids"]


@dataclass
class SimulationResult:
    """A finished simulation: ``jobs`` (DataFrame), ``summary`` (dict), ``schedule`` (arrays)."""

    cluster: Cluster
    workload: JobTable
    schedule: Schedule
    summary: dict
    skipped: list = field(default_factory=list)

    @cached_property
    def jobs(self):
        """One record per job, as a pandas DataFrame (columns: ``RECORD_COLUMNS``)."""
        import pandas as pd
        from .hostlist import compress
        w, s = self.workload, self.schedule
        names = self.cluster.node_names
        hostlists = [compress([names[k] for k in s.nodes_of(i)]) for i in range(len(s))]
        gpu_ids = [_gpu_ids(names, s.nodes_of(i), s.gpus_of(i)) for i in range(len(s))]
        return pd.DataFrame({
            "job_id": s.job_id,
            "submit_time": w.submit_time,
            "start_time": s.start_time,
            "end_time": s.end_time,
            "wait_time": s.start_time - w.submit_time,
            "run_time": s.end_time - s.start_time,
            "time_limit": w.time_limit,
            "state": np.where(w.runtime > w.time_limit, "TIMEOUT", "COMPLETED"),
            "num_nodes": w.num_nodes,
            "procs": w.num_nodes.astype(np.int64) * w.cpus_per_node,
            "gpus": w.num_nodes.astype(np.int64) * w.gpus_per_node,
            "nodes": hostlists,
            "gpu_ids": gpu_ids,
        }, columns=RECORD_COLUMNS)

    def to_csv(self, path) -> None:
        self.jobs.to_csv(path, index=False)

    def summary_json(self, path) -> None:
        with open(path, "w") as f:
            json.dump(self.summary, f, indent=2)
            f.write("\n")


def _gpu_ids(names, nodes, gpus) -> str:
    """GPU indices per node, as ``scontrol show job -d`` shows them: ``gpu001(IDX:0-3)``."""
    from .hostlist import compress_numbers
    return ",".join(f"{names[n]}(IDX:{compress_numbers(g)})" for n, g in zip(nodes, gpus) if g)


def summarize(cluster: Cluster, workload: JobTable, schedule: Schedule) -> dict:
    """Metrics of a finished schedule (all jobs started)."""
    n = len(workload)
    if n == 0:
        return {"jobs": 0}
    wait = (schedule.start_time - workload.submit_time).astype(np.float64)
    run = (schedule.end_time - schedule.start_time).astype(np.float64)
    bsld = np.maximum((wait + run) / np.maximum(run, BSLD_TAU), 1.0)
    first, last = int(workload.submit_time.min()), int(schedule.end_time.max())
    makespan = last - first
    node_seconds = float(np.dot(workload.num_nodes.astype(np.float64), run))
    capacity = float(cluster.num_nodes) * makespan
    total_gpus = float(cluster.gpus.sum())
    gpu_seconds = float(np.dot((workload.num_nodes.astype(np.float64)
                                * workload.gpus_per_node), run))
    return {
        "jobs": n,
        "timeouts": int((workload.runtime > workload.time_limit).sum()),
        "avg_wait": float(wait.mean()),
        "median_wait": float(np.median(wait)),
        "max_wait": int(wait.max()),
        "avg_bounded_slowdown": float(bsld.mean()),
        "utilisation": node_seconds / capacity if capacity > 0 else 0.0,
        "gpu_utilisation": (gpu_seconds / (total_gpus * makespan)
                            if total_gpus > 0 and makespan > 0 else None),
        "gpu_fragmentation": gpu_fragmentation(cluster, workload, schedule),
        "makespan": makespan,
        "first_submit": first,
        "last_end": last,
    }
