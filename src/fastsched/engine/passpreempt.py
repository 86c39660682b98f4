"""Planning with preemptable capacity in a single pass (:func:`fastsched.engine.plan.plan_kept`
with ``preempting``), as the event loop plans with it (:mod:`.preemptplan`).

The kernels test a candidate by its job index (:func:`.preemptplan._is_candidate`: its
start, partition, class and whether it is stopping), read from the running lists'
``RJ`` entries. The event loop indexes running and queued jobs alike; a single pass
indexes only the pending jobs and leaves the running lists' jobs unnamed (-1). With
``preempting``, the pass's job indices are the pending jobs (queue order) then the
running jobs (their order in :class:`.running.RunningJobs`): each running entry names
its job, and the outputs and the per-job rules cover both.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.errors import InputError
from .state import Outputs, Preempting, as_i64

__all__ = ["PassPreempting"]


@dataclass(frozen=True)
class PassPreempting:
    """What a single pass plans with preemptable capacity from. Per pending job (the
    pending table's rows): ``can`` (it may preempt someone) and ``qos`` (its class under
    preempt/qos; None: the class is the partition). Per running job (the
    :class:`.running.RunningJobs` order): ``run_start`` (its attempt's start; -1: it is
    no candidate), ``run_partition`` (where it runs), ``run_qos`` (under preempt/qos)
    and ``run_stopping`` (a victim in its GraceTime: it holds its resources). ``may``
    (class x class: the first may preempt the second, mode not OFF) and ``exempt``
    (PreemptExemptTime per class)."""

    can: np.ndarray
    qos: np.ndarray | None
    run_start: np.ndarray
    run_partition: np.ndarray
    run_qos: np.ndarray | None
    run_stopping: np.ndarray
    may: np.ndarray
    exempt: np.ndarray

    def rules(self, order, run, running, res: int, out: Outputs) -> Preempting:
        """The kernels' :class:`.state.Preempting` for a pass over the pending jobs in
        queue ``order``: names the running entries of ``run`` (built from ``running``
        with held ends on the grid of ``res``) and writes the running jobs' starts and
        partitions into ``out`` (sized pending + running)."""
        n = len(order)
        R = len(running.job_id)
        if len(self.run_start) != R or len(self.can) != n:
            raise InputError(f"preempting covers {len(self.can)} pending and "
                             f"{len(self.run_start)} running jobs, the pass has {n} and {R}",
                             field="preempting")
        _name_entries(run, running, res, n)
        out.start[n:] = as_i64(self.run_start)
        out.part_used[n:] = as_i64(self.run_partition)
        can = np.zeros(n + R, dtype=np.bool_)
        can[:n] = np.asarray(self.can, dtype=np.bool_)[order]
        qos = np.zeros(0, dtype=np.int64)
        if self.qos is not None:
            qos = np.concatenate([as_i64(self.qos)[order], as_i64(self.run_qos)])
        stopping = np.zeros(n + R, dtype=np.bool_)
        stopping[n:] = np.asarray(self.run_stopping, dtype=np.bool_)
        # (``run_start`` is Slurm's start already: the allocation's while CONFIGURING)
        return Preempting(can, np.ascontiguousarray(self.may, dtype=np.bool_),
                          as_i64(self.exempt), qos, stopping, np.zeros(0, dtype=np.int64))


def _name_entries(run, running, res: int, n: int) -> None:
    """Each node's running list entry (sorted by held end, equal ends in entry order, as
    :func:`.running._running_lists` fills it) names its job: ``n`` + its index."""
    x = as_i64(running.nodes)
    if not len(x):
        return
    counts = np.diff(as_i64(running.node_offsets))
    job = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    end = as_i64(running.planned_end)[job]
    held = (end + res - 1) // res * res
    by = np.lexsort((np.arange(len(x)), held, x))
    xs = x[by]
    k = np.arange(len(x)) - np.searchsorted(xs, xs, side="left")
    run.RJ[xs, k] = n + job[by]


def trimmed(out: Outputs, n: int) -> Outputs:
    """The outputs of the pending jobs only (the first ``n``)."""
    return out._replace(start=out.start[:n], end=out.end[:n], planned=out.planned[:n],
                        reason=out.reason[:n], part_used=out.part_used[:n])
