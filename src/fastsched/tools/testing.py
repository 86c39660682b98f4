"""Hypothesis strategies for fuzzing schedulers (yours or fastsched's).

Workloads are built to be nasty: small submit times so queues build up, many
ties (equal submit times, equal limits), zero-length jobs, jobs killed at their
limit (runtime > limit), jobs needing most or all of the machine, and job ids
that are unique but not always in submit order. Example::

    from hypothesis import given
    from fastsched.tools.testing import cluster_and_workload

    @given(cluster_and_workload())
    def test_my_policy(cw):
        cluster, jobs = cw
        ...

hypothesis is an optional dependency: ``pip install fastsched[testing]``.
"""
from __future__ import annotations

import numpy as np

try:
    from hypothesis import strategies as st
except ImportError as e:
    raise ImportError("fastsched.tools.testing needs hypothesis: pip install fastsched[testing]",
                      name=e.name) from None

from ..model.cluster import Cluster
from ..model.events import NODE_EVENT_KINDS
from ..model.images import Containers, ImagePull
from ..model.jobs import JobTable
from ..model.lifecycle import Lifecycle
from ..model.power import PowerSaving

__all__ = ["swf_clusters", "workloads", "cluster_and_workload", "node_event_rows",
           "lifecycles", "power_models"]


def swf_clusters(max_procs: int = 16) -> st.SearchStrategy[int]:
    """A machine size P in 1..max_procs (small sizes favoured: more contention)."""
    if max_procs < 1:
        raise ValueError("max_procs must be >= 1")
    return st.one_of(st.integers(1, min(4, max_procs)), st.integers(1, max_procs))


@st.composite
def _procs(draw, procs: int) -> int:
    kind = draw(st.sampled_from(["any", "one", "all", "most"]))
    if kind == "one":
        return 1
    if kind == "all":
        return procs
    if kind == "most":
        return draw(st.integers((procs + 1) // 2, procs))
    return draw(st.integers(1, procs))


@st.composite
def _runtime(draw, limit: int, max_time: int) -> int:
    kind = draw(st.sampled_from(["under", "exact", "zero", "killed"]))
    if kind == "zero":
        return 0
    if kind == "exact":
        return limit
    if kind == "killed":
        return draw(st.integers(limit + 1, limit + max_time))
    return draw(st.integers(0, limit))


@st.composite
def workloads(draw, procs: int, max_jobs: int = 30, max_time: int = 50,
              min_jobs: int = 1) -> JobTable:
    """A JobTable for an SWF machine of ``procs`` processors (num_nodes = procs
    asked, cpus_per_node = 1), rows sorted by submit time; submits in
    0..max_time, limits in 1..max_time, runtimes in 0..limit+max_time."""
    if procs < 1 or max_time < 1 or not 0 <= min_jobs <= max_jobs:
        raise ValueError("need procs >= 1, max_time >= 1, 0 <= min_jobs <= max_jobs")
    n = draw(st.integers(min_jobs, max_jobs))
    # Small pools of shared values make ties common.
    submit_span = draw(st.integers(0, max_time))
    submit_pool = draw(st.lists(st.integers(0, submit_span), min_size=1, max_size=3))
    limit_pool = draw(st.lists(st.integers(1, max_time), min_size=1, max_size=3))
    submits, limits, runtimes, sizes = [], [], [], []
    for _ in range(n):
        submits.append(draw(st.one_of(st.sampled_from(submit_pool),
                                      st.integers(0, submit_span))))
        limit = draw(st.one_of(st.sampled_from(limit_pool), st.integers(1, max_time)))
        limits.append(limit)
        runtimes.append(draw(_runtime(limit, max_time)))
        sizes.append(draw(_procs(procs)))
    order = sorted(range(n), key=lambda i: submits[i])
    id_kind = draw(st.sampled_from(["in_order", "shuffled", "sparse"]))
    if id_kind == "in_order":
        ids = list(range(1, n + 1))
    elif id_kind == "shuffled":
        ids = draw(st.permutations(list(range(1, n + 1))))
    else:
        ids = draw(st.lists(st.integers(0, 10**9), min_size=n, max_size=n, unique=True))
    return JobTable.from_arrays(
        job_id=np.array(ids, dtype=np.int64),
        submit_time=np.array([submits[i] for i in order], dtype=np.int64),
        time_limit=np.array([limits[i] for i in order], dtype=np.int64),
        runtime=np.array([runtimes[i] for i in order], dtype=np.int64),
        num_nodes=np.array([sizes[i] for i in order], dtype=np.int32),
        cpus_per_node=1)


@st.composite
def cluster_and_workload(draw, max_procs: int = 16,
                         max_jobs: int = 30) -> tuple[Cluster, JobTable]:
    """(Cluster.homogeneous(P), a workload for P processors)."""
    procs = draw(swf_clusters(max_procs))
    return Cluster.homogeneous(procs), draw(workloads(procs, max_jobs=max_jobs))


@st.composite
def node_event_rows(draw, num_nodes: int, max_events: int = 6, max_time: int = 40,
                    kinds=NODE_EVENT_KINDS):
    """Rows ``(time, kind, [node indices])`` for
    :meth:`fastsched.model.events.NodeEvents.from_rows`: a few events of ``kinds``
    on 1-3 nodes each, at small times (many ties with submits and ends), in any
    order; ``down`` is often followed by ``up`` on the same nodes."""
    rows = []
    for _ in range(draw(st.integers(0, max_events))):
        nodes = draw(st.lists(st.integers(0, num_nodes - 1), min_size=1,
                              max_size=min(3, num_nodes), unique=True))
        t = draw(st.integers(0, max_time))
        kind = draw(st.sampled_from(list(kinds)))
        rows.append((t, kind, nodes))
        if kind == "down" and "up" in kinds and draw(st.booleans()):
            rows.append((t + draw(st.integers(0, max_time // 2)), "up", nodes))
    return rows


@st.composite
def lifecycles(draw, n: int, max_interval: int = 20, max_delay: int = 10):
    """A :class:`fastsched.model.lifecycle.Lifecycle` for ``n`` jobs: each job
    requeued or not, checkpointing every 1..``max_interval`` s (cost below the
    interval) or never, and a small requeue delay (at least Slurm's 1 s)."""
    requeue = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    interval = draw(st.lists(st.integers(0, max_interval), min_size=n, max_size=n))
    cost = [draw(st.integers(0, i - 1)) if i > 0 else 0 for i in interval]
    return Lifecycle.of(n, requeue=requeue, checkpoint_interval=interval, checkpoint_cost=cost,
                        delay=draw(st.integers(1, max_delay)))


@st.composite
def containers(draw, n: int, max_images: int = 3, max_pull: int = 12, max_cache: int = 3):
    """A :class:`fastsched.model.images.Containers` for ``n`` jobs: each job one of
    1..``max_images`` images or none, pulls of 0..``max_pull`` s (a default and some
    per image) and a node cache of 0..``max_cache`` images (0: every start pulls)."""
    names = [f"img{k}" for k in range(draw(st.integers(1, max_images)))]
    image = draw(st.lists(st.sampled_from([""] + names), min_size=n, max_size=n))
    seconds = {name: draw(st.integers(0, max_pull)) for name in names
               if draw(st.booleans())}
    return Containers.of(image, ImagePull(default=draw(st.integers(0, max_pull)),
                                          capacity=draw(st.integers(0, max_cache)),
                                          seconds=seconds))


@st.composite
def power_models(draw, cluster: Cluster, max_time: int = 30, max_boot: int = 15,
                 boots: bool = False):
    """A :class:`fastsched.model.power.PowerSaving` for ``cluster``: SuspendTime NONE or
    0..``max_time`` s (0: a node powers down the instant it is idle), SuspendTimeout and
    boot of 0..``max_boot`` s (boot within ResumeTimeout), ResumeRate and SuspendRate
    unlimited or 1..120 a minute (tokens that queue power-ups and power-downs for
    seconds), some CLOUD nodes and some excluded nodes (SuspendExcNodes). ``boots``:
    also a boot per node for some nodes, by partition (one, maybe) and by node name."""
    names = list(cluster.node_names)
    boot = draw(st.integers(0, max_boot))
    own: tuple = ()
    if boots:
        parts = [p for p in cluster.partitions if len(p.nodes)]
        named: set = set()
        if parts and draw(st.booleans()):
            part = draw(st.sampled_from(parts))
            own = ((part.name, draw(st.integers(0, max_boot))),)
            named = {names[x] for x in np.asarray(part.nodes).tolist()}
        own += tuple((n, draw(st.integers(0, max_boot))) for n in names
                     if n not in named and draw(st.booleans()))
    return PowerSaving(
        suspend_time=draw(st.none() | st.integers(0, max_time)),
        suspend_timeout=draw(st.integers(0, max_boot)), resume_timeout=max_boot,
        resume_rate=draw(st.sampled_from([0, 1, 7, 30, 120])), boot=boot,
        suspend_rate=draw(st.sampled_from([0, 1, 7, 60, 120])),
        cost=draw(st.sampled_from([0.0, 1.5])), cloud_cost=draw(st.none() | st.just(4.0)),
        cloud_nodes=tuple(n for n in names if draw(st.booleans())),
        exc_nodes=tuple(n for n in names if draw(st.integers(0, 3)) == 0), boots=own)
