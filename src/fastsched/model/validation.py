"""Validation of jobs against a cluster, shared by the simulator and the scheduler."""
from __future__ import annotations

import numpy as np

from .cluster import Cluster
from .errors import InputError, UnsupportedError
from .jobs import MAX_TIME, JobTable

# Caps on every size and time an input may give. Each is far beyond what any real
# site could need, yet small enough that no input can make fastsched allocate
# absurd arrays, fork without end, or overflow int64 arithmetic.
#: nodes of a cluster or SWF machine (the largest machines have ~10^5; hostlists cap at 2^24 too)
MAX_NODES = 1 << 24
#: jobs of a workload or trace, and any other count (int32 job rows and columns)
MAX_COUNT = (1 << 31) - 1
#: any time or duration in seconds an input may give (~35,000 years): submit + limit and
#: every sum of times the engine forms stay far below its 2^62 "infinity" and int64
#: (time limits beyond jobs.UNLIMITED are unlimited, not errors)
MAX_SECONDS = MAX_TIME
#: memory per node in MB (an exabyte)
MAX_MEMORY_MB = 1 << 40
#: processes one local ``fastsched run`` may start (each is a fork)
MAX_LOCAL_TASKS = 4096


def check_basic(jobs: JobTable) -> None:
    """What every engine needs: unique ids, at least one node, a limit of at least
    1 s, no negative runtime, submit time or request, submit times up to MAX_TIME."""
    ids = np.sort(jobs.job_id)
    dup = ids[1:][ids[1:] == ids[:-1]]
    if len(dup):
        raise InputError(f"job id {dup[0]} appears more than once", field="job_id")
    reject(jobs, jobs.num_nodes < 1, "num_nodes", "asks for {v} nodes (at least 1 needed)")
    reject(jobs, jobs.time_limit < 1, "time_limit", "has time limit {v} s (at least 1 s needed)")
    reject(jobs, jobs.runtime < 0, "runtime", "has negative runtime {v}")
    reject(jobs, jobs.submit_time < 0, "submit_time", "has negative submit time {v}")
    reject(jobs, jobs.submit_time > MAX_TIME, "submit_time",
           f"has submit time {{v}}, beyond the latest accepted ({MAX_TIME} s; epoch "
           "milliseconds?)")
    for name in ("gpus_per_node", "cpus_per_node", "mem_per_node"):
        reject(jobs, getattr(jobs, name) < 0, name, "asks for {v} " + name + " (negative)")


def check_jobs(cluster: Cluster, jobs: JobTable) -> None:
    """Raise if any job can never run on ``cluster`` under the counts model.

    Validate once, at the boundary (submit, simulate): the kernels then trust
    their arrays. InputError names the first bad job; UnsupportedError says why
    the counts model cannot plan these jobs (:func:`counts_model_refuses`).
    """
    if not cluster.is_homogeneous():
        raise UnsupportedError(counts_model_refuses(cluster, jobs))
    if len(jobs) == 0:
        return
    check_basic(jobs)
    reject(jobs, jobs.num_nodes > cluster.num_nodes, "num_nodes",
           f"asks for {{v}} nodes, the cluster has {cluster.num_nodes}")
    node_cpus, node_gpus = int(cluster.cpus[0]), int(cluster.gpus[0])
    reject(jobs, jobs.cpus_per_node > node_cpus, "cpus_per_node",
           f"asks for {{v}} CPUs per node, nodes have {node_cpus}")
    reject(jobs, jobs.gpus_per_node > node_gpus, "gpus_per_node",
           f"asks for {{v}} GPUs per node, nodes have {node_gpus}")
    reject(jobs, jobs.mem_per_node > cluster.mem_mb[0], "mem_per_node",
           f"asks for {{v}} MB per node, nodes have {int(cluster.mem_mb[0])}")
    why = counts_model_refuses(cluster, jobs)
    if why:
        raise UnsupportedError(why)


def counts_model_refuses(cluster: Cluster, jobs: JobTable) -> str | None:
    """Why the counts model (one pool of identical nodes, whole-node jobs) cannot plan
    ``jobs`` on ``cluster``, or None when it can."""
    if not cluster.is_homogeneous():
        return ("the counts model plans a single pool of identical nodes (e.g. an SWF "
                "machine); heterogeneous nodes and several partitions need the nodes model "
                "(reservations='nodes')")
    node_cpus, node_gpus = int(cluster.cpus[0]), int(cluster.gpus[0])
    partial = (jobs.cpus_per_node < node_cpus) & (jobs.gpus_per_node < max(node_gpus, 1))
    if partial.any():
        i = int(np.flatnonzero(partial)[0])
        return (f"job {jobs.job_id[i]} asks for part of a node ({jobs.cpus_per_node[i]} of "
                f"{node_cpus} CPUs, {jobs.gpus_per_node[i]} of {node_gpus} GPUs); the counts "
                "model allocates whole nodes, partial-node jobs need the nodes model "
                "(reservations='nodes')")
    return None


def reject(jobs: JobTable, bad: np.ndarray, field: str, message: str) -> None:
    """InputError naming the first job where ``bad`` holds ({v} = its ``field``)."""
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        value = getattr(jobs, field)[i]
        raise InputError(f"job {jobs.job_id[i]} " + message.format(v=value), field=field)


def request_capacity(part_nodes, partition, gpus, cpus, mem, cluster: Cluster) -> np.ndarray:
    """Per entry e: how many nodes of ``part_nodes[partition[e]]`` each hold ``gpus[e]``
    GPUs, ``cpus[e]`` CPUs and ``mem[e]`` MB (a job fits its partition when that is at
    least its node count). One count per distinct request: a loop over request types,
    not entries."""
    columns = [np.asarray(c, dtype=np.int64) for c in (partition, gpus, cpus, mem)]
    kind, first = _distinct_rows(columns)
    per_kind = np.zeros(len(first), dtype=np.int64)
    for k, (p, g, c, m) in enumerate(zip(*(col[first].tolist() for col in columns))):
        nodes = part_nodes[p]
        per_kind[k] = np.count_nonzero((cluster.gpus[nodes] >= g) & (cluster.cpus[nodes] >= c)
                                       & (cluster.mem_mb[nodes] >= m))
    return per_kind[kind]


def _distinct_rows(columns) -> tuple[np.ndarray, np.ndarray]:
    """(type per entry, first entry of each type): entries equal in every column share a
    type. Hash-based and linear (np.unique(axis=0) sorts rows: 4x slower on 1M jobs)."""
    import pandas as pd
    key = np.zeros(len(columns[0]), dtype=np.int64)
    for col in columns:
        codes, uniques = pd.factorize(col)
        key = pd.factorize(key * len(uniques) + codes)[0]     # stays < number of entries
    first = np.zeros(int(key.max()) + 1 if len(key) else 0, dtype=np.int64)
    first[key[::-1]] = np.arange(len(key) - 1, -1, -1)       # the last write is the first entry
    return key, first
