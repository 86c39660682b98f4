"""The counts reservation model's event loop: one pool of identical nodes,
whole-node jobs, plans as counts of free nodes over time (the textbook
algorithms; semantics in docs/semantics.md, definition in ``tests/naive.py``).

The loop runs in the Cython kernel ``_kernels.PoolLoop``; this module lays out
its inputs and reads its outputs. It takes what the nodes model's loop takes
apart from node-level options: queue order (an array or a function of time),
dependencies and limit groups (and so job arrays' throttles), with the same
rules, and it loads no Numba.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.cluster import Cluster
from ..model.constraints import CAPS, Dependencies, LimitGroups, check_covers
from ..model.jobs import JobTable
from ..model.noderuns import NodeRuns
from ..model.policies import get_policy
from . import _kernels
from .driver import (EngineRun, Progress, drive, loop_deps, set_queue_rank, set_rows_rank,
                     submit_order)
from .inputs import _check_policy, _permute_csr
from .interrupt import call, new_control
from .state import as_i64

_NEVER = np.int64(1) << np.int64(62)                # runs every instant


class CountsLoop:
    """The counts model's event loop between calls (the interface of
    :class:`fastsched.engine.loop._EventLoop`): run to a time, change the queue
    order, read progress, pickle. Jobs are indexed in submit order inside."""

    def __init__(self, cluster: Cluster, jobs: JobTable, policy: str, reserve_depth: int,
                 dependencies: Dependencies, limits: LimitGroups):
        n = len(jobs)
        self.n = n
        self.order, self.inverse = submit_order(jobs)
        stop_at_head, depth = get_policy(policy).kernel_rules(reserve_depth)
        self.arrays = _arrays(cluster.num_nodes, jobs, self.order, self.inverse, dependencies,
                              limits)
        self.kernel = _kernels.PoolLoop(self.arrays, cluster.num_nodes, stop_at_head, depth)
        self.control = new_control()

    @property
    def done(self) -> bool:
        sc = self.arrays["sc"]
        return sc[0] >= self.n and sc[2] == 0

    @property
    def queued(self) -> int:
        return int(self.arrays["sc"][1])

    def next_time(self) -> int:
        """The next instant the loop will process (-1: none)."""
        a, nev = self.arrays["sc"][0], self.arrays["sc"][2]
        t = [int(self.arrays["submit"][a])] if a < self.n else []
        t += [int(self.arrays["ev_key"][0])] if nev > 0 else []
        return min(t) if t else -1

    def set_rank(self, rank) -> None:
        """New queue order (``rank`` in the caller's job order, lower first, unique)."""
        a = self.arrays
        set_queue_rank(a["rank"], a["queue"], a["sc"][1], np.asarray(rank)[self.order])

    def set_rows_rank(self, rows, key, base: int) -> None:
        """New queue order of the jobs ``rows`` (submit order; :func:`set_rows_rank`)."""
        a = self.arrays
        set_rows_rank(a["rank"], a["queue"], int(a["sc"][1]), rows, key, base)

    @property
    def submit(self) -> np.ndarray:
        return self.arrays["submit"]

    def queued_jobs(self) -> np.ndarray:
        return self.arrays["queue"][:self.arrays["sc"][1]]

    def requeue_waiting(self) -> np.ndarray:
        return np.zeros(0, dtype=np.int64)          # no node failures in this model

    def end_times(self) -> np.ndarray:
        return self.arrays["end"]

    def start_times(self) -> np.ndarray:
        return self.arrays["start"]

    def progress(self) -> Progress:
        a = self.arrays
        return Progress.over(a["start"], a["end"], a["eligible"], self.inverse)

    def run(self, t_stop: int, tick=None) -> None:
        """Every instant up to ``t_stop`` (see :meth:`fastsched.engine.loop._EventLoop.run`)."""
        control = self.control
        call(self.kernel.run, int(t_stop), control, control=control,
             tick=None if tick is None else (lambda: tick(control)))

    def node_runs(self) -> NodeRuns:
        """Every started job's nodes as runs of consecutive node indices, in the
        caller's job order."""
        inv, a = self.inverse, self.arrays
        count = np.where(a["start"] >= 0, a["run_cnt"], 0)[inv]
        offsets = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(count, out=offsets[1:])
        # the runs of job inv[i] sit at run_off[inv[i]] onwards, in start order
        first = np.repeat(a["run_off"][inv] - offsets[:-1], count) + np.arange(offsets[-1])
        return NodeRuns(offsets=offsets, first=a["run_lo"][first], count=a["run_len"][first])

    def result(self) -> EngineRun:
        inv, a = self.inverse, self.arrays
        runs = self.node_runs()
        return EngineRun(start=a["start"][inv], end=a["end"][inv],
                         alloc_offsets=runs.node_offsets(), alloc_nodes=None, node_runs=runs,
                         alloc_gpu_mask=None,
                         partition=np.zeros(self.n, dtype=np.int32), reason=a["reason"][inv],
                         never=a["never"][inv].astype(bool), eligible=a["eligible"][inv],
                         passes=int(a["sc"][3]))


def _arrays(num_nodes: int, jobs: JobTable, order, inverse, dependencies: Dependencies,
            limits: LimitGroups) -> dict:
    """The kernel's inputs, outputs and state (see ``_kernels.PoolLoop``)."""
    n = len(jobs)

    def q(a):
        return as_i64(np.asarray(a)[order])
    procs = q(jobs.num_nodes)
    demand = np.stack([np.ones(n, dtype=np.int64), procs * q(jobs.gpus_per_node),
                       procs * q(jobs.cpus_per_node), procs * q(jobs.mem_per_node)], axis=1)
    deps = loop_deps(dependencies, inverse, n)
    jg_off, jg = _permute_csr(limits.offsets, limits.group, order)
    caps = as_i64(limits.caps).reshape(-1, len(CAPS))
    bits = np.zeros((num_nodes + 63) // 64, dtype=np.uint64)
    bits[:num_nodes // 64] = ~np.uint64(0)
    if num_nodes % 64:
        bits[num_nodes // 64] = (np.uint64(1) << np.uint64(num_nodes % 64)) - np.uint64(1)
    sc = np.zeros(9, dtype=np.int64)
    sc[7] = num_nodes                                   # free nodes
    return {
        "submit": q(jobs.submit_time), "procs": procs, "limit": q(jobs.time_limit),
        "runtime": q(jobs.runtime),
        "rank": np.arange(n, dtype=np.int64), "demand": np.ascontiguousarray(demand),
        "ch_off": deps.ch_off, "ch_job": deps.ch_job, "ch_kind": deps.ch_kind,
        "pend": deps.pend, "never": np.zeros(n, dtype=np.uint8),
        "arrived": np.zeros(n, dtype=np.uint8),
        "jg_off": as_i64(jg_off), "jg": as_i64(jg), "caps": np.ascontiguousarray(caps),
        "usage": np.zeros_like(caps),
        "start": np.full(n, -1, dtype=np.int64), "end": np.full(n, -1, dtype=np.int64),
        "run_off": np.zeros(n, dtype=np.int64), "run_cnt": np.zeros(n, dtype=np.int64),
        "run_lo": np.empty(n + 64, dtype=np.int64), "run_len": np.empty(n + 64, dtype=np.int64),
        "reason": np.full(n, -1, dtype=np.int64), "eligible": np.full(n, -1, dtype=np.int64),
        "planned": np.full(n, -1, dtype=np.int64),
        "queue": np.empty(n + 1, dtype=np.int64),
        "ev_key": np.empty(num_nodes + 1, dtype=np.int64),
        "ev_job": np.empty(num_nodes + 1, dtype=np.int64),
        "rt": np.empty(num_nodes + 1, dtype=np.int64),
        "rn": np.empty(num_nodes + 1, dtype=np.int64),
        "pt": np.empty(num_nodes + 2 * n + 2, dtype=np.int64),
        "pf": np.empty(num_nodes + 2 * n + 2, dtype=np.int64),
        "suffix_min": np.empty(n + 1, dtype=np.int64),
        "started": np.empty(n + 1, dtype=np.int64),
        "free_bits": bits, "sc": sc,
    }


def run_counts(cluster: Cluster, jobs: JobTable, policy: str, reserve_depth: int = 1, *,
               dependencies: Dependencies | None = None, limits: LimitGroups | None = None,
               rank=None, reorder=None, period: int | None = None, tick=None,
               checkpoints=None, resume=None) -> EngineRun:
    """Simulate ``jobs`` on ``cluster`` (one pool of identical nodes; every job
    takes ``num_nodes`` whole nodes, checked by the caller:
    :func:`fastsched.model.validation.check_jobs`) under the counts model.

    ``dependencies`` / ``limits``, the queue order (``rank``, or ``reorder``
    every ``period`` seconds), ``tick``, ``checkpoints`` and ``resume``: as
    :func:`fastsched.engine.loop.run_nodes` takes them, with the same meaning.
    """
    _check_policy(policy, reserve_depth)
    n = len(jobs)
    dependencies = Dependencies.none(n) if dependencies is None else dependencies
    limits = LimitGroups.none(n) if limits is None else limits
    check_covers(n, dependencies=dependencies, limits=limits)
    loop = None if resume is not None else CountsLoop(cluster, jobs, policy, reserve_depth,
                                                      dependencies, limits)
    return drive(loop, jobs, rank=rank, reorder=reorder, period=period, tick=tick,
                 checkpoints=checkpoints, resume=resume)


@dataclass(frozen=True)
class CountsRuns:
    """A counts-model run with its allocations as node runs, in the caller's job
    order: ``start`` / ``end`` (-1: never started) and ``nodes``."""
    start: np.ndarray
    end: np.ndarray
    nodes: NodeRuns


def run_counts_runs(cluster: Cluster, jobs: JobTable, policy: str,
                    reserve_depth: int = 1) -> CountsRuns:
    """:func:`run_counts` in submit order without constraints, keeping each job's
    nodes as runs (O(runs) memory, not one entry per node). Its starts, ends and
    nodes are :func:`run_counts`' (tests/test_counts.py)."""
    _check_policy(policy, reserve_depth)
    n = len(jobs)
    loop = CountsLoop(cluster, jobs, policy, reserve_depth, Dependencies.none(n),
                      LimitGroups.none(n))
    loop.run(int(_NEVER))
    inv, a = loop.inverse, loop.arrays
    return CountsRuns(start=a["start"][inv], end=a["end"][inv], nodes=loop.node_runs())
