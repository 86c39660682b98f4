"""Compiling every kernel at once (``fastsched compile``, run at install), so that no
later process waits for Numba: its on-disk cache is then warm for all of them."""
from __future__ import annotations

import time

import numpy as np

from ..engine.plan import plan_nodes
from ..model.cluster import Cluster
from ..model.events import NodeEvents
from ..model.jobs import JobTable
from ..model.lifecycle import Lifecycle
from ..policy.fairshare import AssociationTree, classic, fair_tree, level_fairshare
from ..policy.priority import PriorityWeights, multifactor
from ..sim.scheduler import Scheduler
from ..sim.simulator import simulate
from ..sim.warmup import announcing, warm_up

MESSAGE = "compiling every kernel of the engine (once per install, a few minutes)..."


def compile_all(announce: bool | None = None) -> float:
    """Compile (or load) every compiled kernel a simulation, the embedded scheduler or a
    Slurm-model plan can call, so that none compiles later. Returns the seconds it
    took. ``announce``: say so on stderr while it runs (None: only at a terminal)."""
    start = time.perf_counter()
    with announcing(MESSAGE, announce):
        warm_up(False)
        _run_every_path()
        _run_rl_window()
    return time.perf_counter() - start


def _run_every_path() -> None:
    """Tiny runs through the entry points a plain node-engine run (the warm-up) leaves
    out: node failures (kernels called from Python), advance reservations, site
    priorities (the priority and fair-share kernels), one pass of the embedded
    scheduler, and the Slurm model."""
    from ..model.reservations import Reservation, Reservations
    cluster = Cluster(["g1", "g2"], cpus=[2, 2], gpus=[2, 2], mem_mb=[0, 0])
    jobs = JobTable.from_arrays(job_id=[1, 2, 3], submit_time=[0, 1, 2], time_limit=[10] * 3,
                                runtime=[5] * 3, num_nodes=1, cpus_per_node=1,
                                gpus_per_node=1)
    events = NodeEvents.from_rows([(3, "down", [0]), (4, "up", [0])], 2)
    zeros = np.zeros(len(jobs), dtype=np.int64)
    for requeue in (True, False):       # a killed job requeued, or ended NODE_FAIL
        lifecycle = Lifecycle(np.full(len(jobs), requeue), zeros, zeros)
        simulate(cluster, jobs, "conservative", reservations="nodes", events=events,
                 lifecycle=lifecycle)
    maint = Reservations((Reservation("maint", 3, 30, (1,)),), cluster.num_nodes)
    simulate(cluster, jobs, "easy", advance_reservations=maint)
    simulate(cluster, jobs, "conservative", reservations="slurm")
    _run_scheduler_loop(cluster, jobs)
    _run_preemption_with_grace(cluster)
    tree = AssociationTree.from_edges([("root", "a", 1), ("a", "u1", 1), ("a", "u2", 1)])
    usage = np.array([1.0, 2.0])
    for fairshare in (fair_tree, level_fairshare, classic):
        fairshare(tree, usage)
    multifactor(jobs, 3, PriorityWeights(), cluster=cluster)


def _run_scheduler_loop(cluster: Cluster, jobs: JobTable) -> None:
    """The embedded scheduler's loop on its kept engine state: a pass and its starts, an
    end, a new job and a pass on the updated state, a node failed and resumed; then a
    pass planned afresh (``plan_nodes``, as ``fastsched plan`` and the benchmarks)."""
    sched = Scheduler(cluster, "conservative", reservations="nodes")
    sched.submit(jobs.take(np.arange(2)))
    sched.apply(sched.schedule(now=2))
    sched.complete(int(jobs.job_id[0]), now=4)
    sched.submit(jobs.take(np.arange(2, 3)))
    sched.apply(sched.schedule(now=4))
    sched.fail_nodes([1], now=5)
    sched.resume_nodes([1], now=6)
    sched.apply(sched.schedule(now=6))
    plan_nodes(cluster, sched.running_jobs, jobs.take(np.arange(2, 3)), 7, "conservative")


def _run_preemption_with_grace(cluster: Cluster) -> None:
    """A victim running on in its GraceTime (its hold's end moved, then moved back when
    it is requeued), under preempt/qos with REQUEUE."""
    from ..model.preemption import REQUEUE, Preemption
    jobs = JobTable.from_arrays(job_id=[1, 2], submit_time=[0, 1], time_limit=[100, 10],
                                runtime=[100, 5], num_nodes=[2, 1], cpus_per_node=1,
                                gpus_per_node=2)
    pre = Preemption("preempt/qos", np.array([[False, False], [True, False]]),
                     np.array([REQUEUE, REQUEUE]), np.array([5, 0]),
                     np.zeros(2, dtype=np.int64), np.array([0, 1]), np.array([0, 1]))
    zeros = np.zeros(len(jobs), dtype=np.int64)
    simulate(cluster, jobs, "easy", preemption=pre,
             lifecycle=Lifecycle(np.ones(len(jobs), dtype=bool), zeros, zeros))


def _run_rl_window() -> None:
    """A three-job RLScheduler window through the fast window's kernels (fastsched.gym's
    steps and observations, and its run), backfilling on."""
    from .rlfast import JOB_FEATURES, FastWindow
    from .rlsim import RLJobs
    jobs = RLJobs("compile", np.arange(1, 4), np.array([0, 1, 2]), np.array([5, 5, 5]),
                  np.array([5, 6, 7]), np.array([2, 2, 1]), 2, 2)
    win = FastWindow(jobs, 3, backfill=True, queue_size=2, profile=2)

    def arrays():
        return (np.empty((2, JOB_FEATURES), np.float32), np.empty(3, np.float32),
                np.empty((2, 2), np.float32), np.empty(2, np.int8))
    win.reset(0)
    win.observe(*arrays())
    while not win.step(0, None, *arrays()):
        pass
    win.reset(0)
    win.run(0)
