"""Seeded generators for the standard cluster (``ai-100k`` and its scaled
variants) and the standard workload ``ai-mix``, the inputs of the benchmark
scenarios in benchmarks/RESULTS.md.

``ai-mix``: 40% of jobs ask for 1 GPU, 10% for 2, 10% for 4, 25% for one
whole node, 15% for 2^k whole nodes (k = 1..9, P(k) ~ 2^-0.7k); CPUs and
memory in proportion to GPUs; 10% interactive; time limits log-uniform from
10 minutes to 7 days (whole minutes); runtimes the limit x U(0.05, 1), or
killed at the limit for 10%; 2,000 users in 200 accounts in 20 organisations,
user activity Zipf(1.2); Poisson arrivals at an offered load of 1.05.

Everything is vectorised NumPy (no per-job Python loop) and deterministic: the
same arguments and seed give identical arrays on every machine with the same
NumPy (``np.random.default_rng``, PCG64).

Choices fixed here:

* a job "killed at the limit" has ``runtime = time_limit + 60`` s, so its
  runtime exceeds its limit and it ends in state TIMEOUT;
* an interactive job's limit is ``min(limit, 4 h)`` (partition MaxTime);
  any job's node count is capped to the largest power of two that fits its
  partition (only matters on ``ai-8k``, whose interactive partition has 82 nodes);
* the offered load counts what jobs really use, ``gpus x min(runtime, limit)``:
  the arrival rate is ``load x total_gpus / mean(that)`` per second, computed
  from the drawn jobs; arrivals are a Poisson process, submit times are the
  floor of the cumulative exponential gaps, the first at 0;
* user ``u`` (0..1999) is named ``user{u+1:04d}``, belongs to account
  ``acct{u//10+1:03d}``, which belongs to ``org{u//100+1:02d}``; the Workload
  lists only the users, accounts and organisations that submit jobs, in name
  order, so that indices are the same after a round trip through CSV.
"""
from __future__ import annotations

import os

import numpy as np

from ..io.slurmconf import read_cluster
from ..io.workload import Workload
from ..model.cluster import Cluster, Partition
from ..model.errors import InputError
from ..model.jobs import JobTable
from ..model.validation import MAX_COUNT

__all__ = ["CLUSTERS", "WORKLOADS", "ai_cluster", "ai_mix", "load_cluster",
           "nodes_for_load"]

#: standard clusters: name -> (nodes, digits in node names)
CLUSTERS = {"ai-8k": (1_000, 5), "ai-100k": (12_500, 5), "ai-1m": (125_000, 6)}
WORKLOADS = ("ai-mix",)

NODE_GPUS = 8
NODE_CPUS = 112
NODE_MEM_MB = 2_000_000
GPU_TYPE = "h100"
LEAF_NODES = 32
LEAVES_PER_SPINE = 16
DAY = 86_400
HOUR = 3_600

#: ai-mix parameters
SIZE_SHARES = (0.40, 0.10, 0.10, 0.25, 0.15)   # 1, 2, 4 GPUs, one node, several nodes
SMALL_GPUS = (1, 2, 4)
MULTI_K = np.arange(1, 10)                     # 2^1 .. 2^9 nodes
MULTI_DECAY = 0.7                              # P(k) ~ 2^(-0.7 k)
LIMIT_MIN_MINUTES, LIMIT_MAX_MINUTES = 10, 7 * 24 * 60
TIMEOUT_SHARE = 0.10
TIMEOUT_EXTRA = 60                             # runtime = limit + 60 s for killed jobs
RUNTIME_FRACTION = (0.05, 1.0)
NUM_USERS, USERS_PER_ACCOUNT, ACCOUNTS_PER_ORG = 2_000, 10, 10
ZIPF_EXPONENT = 1.2
INTERACTIVE_SHARE = 0.10


def ai_cluster(name: str = "ai-100k") -> Cluster:
    """The standard GPU cluster ``ai-8k``, ``ai-100k`` or ``ai-1m``.

    8 h100 GPUs, 112 CPUs and 2,000,000 MB per node; leaf blocks of 32 nodes,
    16 leaves per spine; partitions ``batch`` (all nodes, tier 1, 14 days) and
    ``interactive`` (the first 1,024 nodes per 12,500, tier 2, 4 hours); ``batch`` is
    the default partition.
    """
    if name not in CLUSTERS:
        raise InputError(f"unknown cluster {name!r}; choose one of {sorted(CLUSTERS)}")
    n, width = CLUSTERS[name]
    names = [f"gpu{i:0{width}d}" for i in range(1, n + 1)]
    idx = np.arange(n, dtype=np.int64)
    n_inter = int(round(1024 * n / 12_500))
    partitions = [
        Partition("batch", idx.copy(), priority_tier=1, max_time=14 * DAY),
        Partition("interactive", idx[:n_inter].copy(), priority_tier=2, max_time=4 * HOUR),
    ]
    topology = {"leaf": (idx // LEAF_NODES).astype(np.int32),
                "spine": (idx // (LEAF_NODES * LEAVES_PER_SPINE)).astype(np.int32)}
    return Cluster(names, np.full(n, NODE_CPUS), np.full(n, NODE_GPUS), np.full(n, NODE_MEM_MB),
                   partitions=partitions, gpu_type=GPU_TYPE, topology=topology,
                   default_partition="batch")


def _zipf_probabilities(n: int, exponent: float) -> np.ndarray:
    p = np.arange(1, n + 1, dtype=np.float64) ** -exponent
    return p / p.sum()


def _pow2_floor(x: np.ndarray) -> np.ndarray:
    """Largest power of two <= x (x >= 1), elementwise."""
    x = np.asarray(x, dtype=np.int64)
    out = np.ones_like(x)
    while True:
        nxt = out * 2
        grow = nxt <= x
        if not grow.any():
            return out
        out = np.where(grow, nxt, out)


def _mix_partitions(cluster: Cluster) -> tuple[np.ndarray, int | None]:
    """(batch partitions, interactive partition or None) for ai-mix on ``cluster``.

    The standard clusters' ``batch`` and ``interactive``. Any other cluster: of
    the partitions with GPU nodes, the one with the shortest MaxTime (if shorter
    than the longest) takes the interactive jobs, the others the batch jobs.
    """
    with_gpus = [i for i, p in enumerate(cluster.partitions) if (cluster.gpus[p.nodes] > 0).any()]
    if not with_gpus:
        raise InputError("ai-mix needs GPU nodes; no partition of the cluster has any")
    names = [cluster.partitions[i].name for i in with_gpus]
    if "batch" in names and "interactive" in names:
        return np.array([with_gpus[names.index("batch")]]), with_gpus[names.index("interactive")]
    max_time = [cluster.partitions[i].max_time or np.inf for i in with_gpus]
    shortest = int(np.argmin(max_time))
    if max_time[shortest] == max(max_time):
        return np.array(with_gpus), None
    return np.array(with_gpus[:shortest] + with_gpus[shortest + 1:]), with_gpus[shortest]


def _partition_shapes(cluster: Cluster):
    """Per partition: (GPUs, CPUs, memory) of a node that every GPU node of it holds,
    and its number of GPU nodes (zeros for a partition without GPUs)."""
    shapes = np.zeros((4, len(cluster.partitions)), dtype=np.int64)
    for i, p in enumerate(cluster.partitions):
        nodes = p.nodes[cluster.gpus[p.nodes] > 0]
        if len(nodes):
            shapes[:, i] = (cluster.gpus[nodes].min(), cluster.cpus[nodes].min(),
                            cluster.mem_mb[nodes].min(), len(nodes))
    return tuple(shapes)


def _spread(parts: np.ndarray, gpu_nodes: np.ndarray, n: int, seed: int) -> np.ndarray:
    """Partitions for ``n`` jobs over ``parts`` in proportion to their GPU nodes, drawn
    from a stream of their own: the other draws do not depend on the partitions."""
    if len(parts) == 1:
        return np.full(n, parts[0], dtype=np.int32)
    weight = gpu_nodes[parts] / gpu_nodes[parts].sum()
    return np.random.default_rng([seed, 1]).choice(parts, size=n, p=weight).astype(np.int32)


def ai_mix(cluster: Cluster, num_jobs: int, seed: int = 0, load: float = 1.05) -> Workload:
    """``num_jobs`` jobs of the standard ``ai-mix`` workload for ``cluster``.

    ``cluster`` needs GPU nodes. On a standard cluster (:func:`ai_cluster`)
    the jobs go to ``batch`` and ``interactive``; on any other, to its GPU
    partitions (see :func:`_mix_partitions`), each job sized to the smallest GPU
    node of its partition. ``load`` is the offered load: GPU-seconds
    used / (cluster GPUs x submission span). Jobs come sorted by submit time,
    with ids 1..num_jobs. See the module docstring for the exact rules.
    """
    num_jobs = int(num_jobs)
    if not 0 <= num_jobs <= MAX_COUNT:
        raise InputError(f"number of jobs must be in 0..{MAX_COUNT:,}, got {num_jobs}",
                         field="jobs")
    if not (load > 0 and np.isfinite(load)):
        raise InputError(f"offered load must be > 0, got {load}", field="load")
    batch_parts, p_inter = _mix_partitions(cluster)
    node_gpus, node_cpus, node_mem, gpu_nodes = _partition_shapes(cluster)

    rng = np.random.default_rng(seed)
    n = num_jobs

    # --- sizes: category 0..2 small (1/2/4 GPUs), 3 one full node, 4 several full nodes
    category = rng.choice(5, size=n, p=np.array(SIZE_SHARES))
    pk = 2.0 ** (-MULTI_DECAY * MULTI_K)
    k = rng.choice(MULTI_K, size=n, p=pk / pk.sum())

    # --- partition: 10% interactive; batch jobs spread over the batch partitions
    interactive = rng.random(n) < INTERACTIVE_SHARE
    partition = _spread(batch_parts, gpu_nodes, n, seed)
    if p_inter is not None:
        partition = np.where(interactive, p_inter, partition).astype(np.int32)

    # sizes in the partition's nodes; node counts capped to what the partition holds
    full = node_gpus[:, None]
    gpus_per_node = np.minimum(np.array(SMALL_GPUS + (0, 0)), full)
    gpus_per_node[:, 3:] = full
    gpus_per_node = gpus_per_node[partition, category].astype(np.int32)
    num_nodes = np.where(category == 4, np.int64(1) << k, 1).astype(np.int64)
    num_nodes = np.minimum(num_nodes, _pow2_floor(np.maximum(gpu_nodes, 1))[partition])
    num_nodes = num_nodes.astype(np.int32)
    share = gpus_per_node.astype(np.int64)
    cpus_per_node = (node_cpus[partition] * share // node_gpus[partition]).astype(np.int32)
    mem_per_node = node_mem[partition] * share // node_gpus[partition]

    # --- time limits: log-uniform in whole minutes, capped by the partition's MaxTime
    lo, hi = np.log(LIMIT_MIN_MINUTES), np.log(LIMIT_MAX_MINUTES)
    minutes = np.rint(np.exp(rng.uniform(lo, hi, size=n))).astype(np.int64)
    minutes = np.clip(minutes, LIMIT_MIN_MINUTES, LIMIT_MAX_MINUTES)
    max_minutes = np.array([(p.max_time // 60) if p.max_time is not None else LIMIT_MAX_MINUTES
                            for p in cluster.partitions], dtype=np.int64)
    minutes = np.maximum(np.minimum(minutes, max_minutes[partition]), 1)
    time_limit = minutes * 60

    # --- runtimes: limit x U(0.05, 1), or killed at the limit for 10%
    killed = rng.random(n) < TIMEOUT_SHARE
    frac = rng.uniform(*RUNTIME_FRACTION, size=n)
    runtime = np.where(killed, time_limit + TIMEOUT_EXTRA,
                       np.maximum(np.floor(time_limit * frac), 1).astype(np.int64))

    # --- users: truncated Zipf(1.2) over 2,000 users, ranks shuffled by the seed
    rank_to_user = rng.permutation(NUM_USERS)
    rank = rng.choice(NUM_USERS, size=n, p=_zipf_probabilities(NUM_USERS, ZIPF_EXPONENT))
    uid = rank_to_user[rank]                                   # 0..1999
    # only users (accounts, orgs) that submit jobs are listed, in name order, so that
    # indices survive a round trip through the CSV file
    used_users = np.unique(uid)
    used_accounts = np.unique(used_users // USERS_PER_ACCOUNT)
    used_orgs = np.unique(used_accounts // ACCOUNTS_PER_ORG)
    user = np.searchsorted(used_users, uid).astype(np.int32)
    account = np.searchsorted(used_accounts, uid // USERS_PER_ACCOUNT).astype(np.int32)
    org_of_account = np.searchsorted(used_orgs, used_accounts // ACCOUNTS_PER_ORG)

    # --- arrivals: Poisson at the rate giving the offered load
    gaps = rng.exponential(1.0, size=n)
    if n:
        used = num_nodes.astype(np.float64) * gpus_per_node * np.minimum(runtime, time_limit)
        rate = load * float(cluster.gpus.sum()) / float(used.mean())   # jobs per second
        gaps[0] = 0.0
        submit_time = np.floor(np.cumsum(gaps) / rate).astype(np.int64)
    else:
        submit_time = np.zeros(0, dtype=np.int64)

    jobs = JobTable.from_arrays(
        job_id=np.arange(1, n + 1, dtype=np.int64), submit_time=submit_time,
        time_limit=time_limit, runtime=runtime, num_nodes=num_nodes,
        cpus_per_node=cpus_per_node, gpus_per_node=gpus_per_node, mem_per_node=mem_per_node,
        partition=partition, user=user)
    return Workload(
        jobs=jobs, account=account,
        user_names=[f"user{u + 1:04d}" for u in used_users.tolist()],
        account_names=[f"acct{a + 1:03d}" for a in used_accounts.tolist()],
        org_of_account=org_of_account,
        org_names=[f"org{o + 1:02d}" for o in used_orgs.tolist()])



def load_cluster(spec: str) -> Cluster:
    """A cluster from a slurm.conf path, or a standard name (ai-8k, ai-100k, ai-1m)."""
    if spec in CLUSTERS and not os.path.exists(spec):
        return ai_cluster(spec)
    return read_cluster(spec)


def nodes_for_load(workload: Workload, gpus_per_node: int, load: float) -> int:
    """The node count N of G = ``gpus_per_node`` GPUs each on which ``workload`` offers
    ``load``: its offered load (GPU-seconds used / (submission span x cluster GPUs),
    :meth:`~fastsched.io.workload.Workload.offered_load`) is at most ``load`` on N
    nodes and above it on N - 1, so N = ceil(GPU-seconds / (load x span x G)); at least
    the most nodes one job asks for, and 1."""
    if not (load > 0 and np.isfinite(load)):
        raise InputError(f"offered load must be > 0, got {load}", field="load")
    if gpus_per_node < 1:
        raise InputError("sizing by load needs GPU nodes (--gpus-per-node >= 1)",
                         field="gpus_per_node")
    span = workload.span
    if len(workload) < 2 or span <= 0:
        raise InputError("the trace needs jobs submitted at two different times to have an "
                         "offered load", field="trace")
    if workload.gpu_seconds() <= 0:
        raise InputError("the trace's jobs use no GPUs: no GPU load to size by",
                         field="trace")
    need = workload.gpu_seconds() / (load * span * gpus_per_node)
    widest = int(workload.jobs.num_nodes.max(initial=1))
    return max(int(np.ceil(need - 1e-9 * need)), widest, 1)
