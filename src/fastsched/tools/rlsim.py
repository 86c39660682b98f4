"""RLScheduler's simulator (SC'20), research mode: one window of a trace, one decision at a time.

The rules are those of ``HPCSimPickJobs.HPCEnv`` in github.com/DIR-LAB/deep-batch-scheduler
(``schedule``, ``skip_for_resources``, ``moveforward_for_resources_backfill``,
``moveforward_for_job``, ``job_score``), which differ from textbook EASY:

- the caller picks a queued job (the *head*); it stays the head until it starts: the
  clock moves event by event (one arrival or one completion each) until it fits;
- without backfilling nothing else starts meanwhile; with backfilling, before each
  event every queued job, in FCFS order, starts if it fits now and
  ``now + request_time < shadow`` (strict), where the shadow is computed once per head
  (running jobs by estimated end, until enough processors are free); there is no
  extra-nodes rule;
- an arrival at or before the next completion comes first; completions leave in the
  order of a stable sort of the running list by actual end, which the shadow's stable
  sort by estimated end also reorders, so both lists are kept as RLScheduler keeps them;
- after a start, the clock moves until the queue is not empty (or the window ends).

The cluster is counted, not placed: a job needs ``ceil(procs / procs_per_node)`` nodes.
Plain Python on lists of job indices: a window is about a thousand decisions.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["RLJobs", "RLWindow", "columns"]


@dataclass(frozen=True)
class RLJobs:
    """A trace as RLScheduler reads it (``job.Workloads``), in job-number order.

    ``procs`` = max(allocated, requested) processors; ``request`` = requested time, the
    runtime where the trace has -1; jobs with a zero runtime are left out.
    """

    path: str
    job_id: np.ndarray          #: int64
    submit: np.ndarray          #: int64, seconds
    run: np.ndarray             #: int64, seconds, > 0
    request: np.ndarray         #: int64, seconds, > 0
    procs: np.ndarray           #: int64, 1..machine_procs
    machine_nodes: int
    machine_procs: int
    header_lines: tuple = ()

    def __len__(self) -> int:
        return len(self.job_id)

    @property
    def procs_per_node(self) -> float:
        return self.machine_procs / self.machine_nodes

    def nodes(self) -> list[int]:
        """Nodes each job takes: ``ceil(procs / procs_per_node)``."""
        ppn = self.procs_per_node
        return [int(math.ceil(p / ppn)) for p in self.procs.tolist()]


class RLWindow:
    """One window of ``length`` consecutive jobs from ``start``, on an empty cluster.

    ``queue`` holds the queued jobs (indices into the trace) in RLScheduler's list
    order; :meth:`run` starts the job the caller picks. ``started`` lists every start
    as (job, time) in order (heads and backfilled jobs); ``decisions`` counts the heads;
    ``now`` is the clock.
    """

    def __init__(self, jobs: RLJobs, start: int, length: int, *, backfill: bool,
                 _columns=None):
        if not (0 <= start and start + length <= len(jobs) and length > 0):
            raise ValueError(f"window [{start}, {start + length}) outside the trace's "
                             f"{len(jobs)} jobs")
        cols = _columns or columns(jobs)
        self.submit, self.run_time, self.request, self.nodes, self.procs = cols
        self.ppn = jobs.procs_per_node
        self.backfill = backfill
        self.first, self.stop = start, start + length
        self.now = self.submit[start]
        self.queue = [start]
        self.next = start + 1
        self.free = jobs.machine_nodes
        self.running: list[int] = []
        self.end: dict[int, int] = {}        # actual end of each started job
        self.estimate: dict[int, int] = {}   # its start + requested time
        self.started: list[tuple[int, int]] = []
        self.decisions = 0                   # calls of run: the heads chosen

    @property
    def done(self) -> bool:
        return not self.queue

    def run(self, job: int, backfill: bool | None = None) -> bool:
        """Start queued ``job`` as the head (waiting, and backfilling if on, until it fits),
        then move on until a job is queued; True when the window is finished.
        ``backfill`` overrides the window's choice for this head."""
        if job not in self.queue:
            raise ValueError(f"job {job} is not queued (queued: {len(self.queue)} jobs)")
        if self.nodes[job] > self.free:
            fill = self.backfill if backfill is None else backfill
            self._wait_with_backfill(job) if fill else self._wait(job)
        self._start(job)
        self.decisions += 1
        self.queue.remove(job)
        self._until_queued()
        return self.done

    # ------------------------------------------------------------------ events

    def _start(self, job: int) -> None:
        self.end[job] = self.now + self.run_time[job]
        self.estimate[job] = self.now + self.request[job]
        self.started.append((job, self.now))
        self.free -= self.nodes[job]
        self.running.append(job)

    def _event(self) -> None:
        """One event: the next arrival if it comes no later than the next completion,
        else that completion."""
        self.running.sort(key=self.end.__getitem__)
        release = self.end[self.running[0]] if self.running else math.inf
        if self.next < self.stop and self.submit[self.next] <= release:
            self.now = max(self.now, self.submit[self.next])
            self.queue.append(self.next)
            self.next += 1
        else:
            self.now = max(self.now, release)
            self.free += self.nodes[self.running.pop(0)]

    def _wait(self, head: int) -> None:
        while self.nodes[head] > self.free:
            self._event()

    def _until_queued(self) -> None:
        while not self.queue and self.next < self.stop:
            self._event()

    # ------------------------------------------------------------------ backfilling

    def _shadow(self, head: int) -> int:
        """When the head could start if running jobs end at their estimates."""
        self.running.sort(key=self.estimate.__getitem__)
        free = self.free * self.ppn
        shadow = self.now
        for j in self.running:
            free += self.nodes[j] * self.ppn
            shadow = self.estimate[j]
            if free >= self.procs[head]:
                break
        return shadow

    def _wait_with_backfill(self, head: int) -> None:
        shadow = self._shadow(head)
        nodes, request = self.nodes, self.request
        while nodes[head] > self.free:
            self.queue.sort(key=self.submit.__getitem__)
            if self.free:
                latest = shadow - self.now      # a backfilled job's request is below it
                for j in [j for j in self.queue if request[j] < latest]:
                    if nodes[j] <= self.free:
                        self._start(j)
                        self.queue.remove(j)
            self._event()


def columns(jobs: RLJobs):
    """The per-job lists a window reads (shared by the windows of one trace)."""
    return (jobs.submit.tolist(), jobs.run.tolist(), jobs.request.tolist(), jobs.nodes(),
            jobs.procs.tolist())
