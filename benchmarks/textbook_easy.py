"""A textbook EASY backfilling simulator in plain Python: the peer that
benchmarks/easy_vs_textbook.py times the counts model against.

Written from the textbook rules (Lifka's EASY; Mu'alem and Feitelson 2001,
section 2), with plain lists, a dict and ``heapq``; no NumPy:

* A machine of ``total`` interchangeable nodes; a job asks for ``procs`` of
  them, its user's time ``limit`` and really runs ``min(runtime, limit)``
  (over its limit it is killed at the limit).
* The queue is first come, first served: (submit time, job id).
* At every instant something happens (a job ends or is submitted): the
  ending jobs free their nodes, the new jobs join the queue, then one
  scheduling pass. A job that ran for zero seconds ends at once, so then the
  instant gets another pass.
* A pass starts jobs from the front of the queue while they fit. The first
  that does not is the head: its shadow time is the earliest time, counting
  running jobs' ends at start + limit (what the scheduler knows), at which
  enough nodes are free for it; the extra nodes are those free then (after
  every job due to end at that time) beyond its need. Every later job starts
  now if it fits now and either ends (by its limit) no later than the shadow
  time or uses no more than the extra nodes (which it then takes out of the
  extra).

These are the rules of fastsched's counts model under ``policy="easy"``
(tests/naive.py defines them), so both give the same start times: tested in
tests/test_textbook_easy.py. ``jobs_from_table`` converts a JobTable to the
plain rows this module takes (outside the timing).
"""
from __future__ import annotations

import heapq


def jobs_from_table(table) -> list[tuple[int, int, int, int, int]]:
    """(job id, submit, procs, limit, runtime) rows of a fastsched JobTable."""
    return list(zip(table.job_id.tolist(), table.submit_time.tolist(),
                    table.num_nodes.tolist(), table.time_limit.tolist(),
                    table.runtime.tolist()))


def simulate_easy(jobs, total: int) -> list[int]:
    """Start time of every job (in the order given) under EASY on ``total`` nodes."""
    return _Easy(jobs, total).run()


class _Easy:
    def __init__(self, jobs, total):
        self.jobs = list(jobs)
        self.total = total
        self.free = total
        self.start = [-1] * len(self.jobs)
        self.queue = []        # waiting jobs (indices), first come first served
        self.running = {}      # index -> (expected end = start + limit, procs)
        self.ends = []         # heap of (actual end, index)

    def run(self) -> list[int]:
        jobs = self.jobs
        arrivals = sorted(range(len(jobs)), key=lambda i: (jobs[i][1], jobs[i][0]))
        a = 0
        while a < len(arrivals) or self.ends:
            now = jobs[arrivals[a]][1] if a < len(arrivals) else self.ends[0][0]
            if self.ends and self.ends[0][0] < now:
                now = self.ends[0][0]
            while True:
                while self.ends and self.ends[0][0] == now:
                    self.finish(heapq.heappop(self.ends)[1])
                while a < len(arrivals) and jobs[arrivals[a]][1] == now:
                    self.queue.append(arrivals[a])    # same submit: by job id, as sorted
                    a += 1
                if not self.queue:
                    break
                self.schedule(now)
                if not (self.ends and self.ends[0][0] == now):
                    break                             # no zero-length job started
        return self.start

    def finish(self, i) -> None:
        self.free += self.jobs[i][2]
        del self.running[i]

    def launch(self, i, now) -> None:
        _, _, procs, limit, runtime = self.jobs[i]
        self.start[i] = now
        self.free -= procs
        self.running[i] = (now + limit, procs)
        heapq.heappush(self.ends, (now + min(runtime, limit), i))

    def schedule(self, now) -> None:
        """One EASY pass at ``now``."""
        jobs, queue = self.jobs, self.queue
        k = 0
        while k < len(queue) and jobs[queue[k]][2] <= self.free:
            self.launch(queue[k], now)
            k += 1
        if k == len(queue):
            queue.clear()
            return
        head = queue[k]
        shadow, extra = self.shadow_and_extra(jobs[head][2])
        waiting = [head]
        for i in queue[k + 1:]:
            procs, limit = jobs[i][2], jobs[i][3]
            if procs <= self.free and now + limit <= shadow:
                self.launch(i, now)
            elif procs <= self.free and procs <= extra:
                extra -= procs
                self.launch(i, now)
            else:
                waiting.append(i)
        self.queue = waiting

    def shadow_and_extra(self, need):
        """The head's shadow time and the extra nodes: all that is free then
        (every job due to end at the shadow time counted) beyond its need."""
        avail, shadow = self.free, None
        for end, procs in sorted(self.running.values()):
            if shadow is not None and end > shadow:
                break
            avail += procs
            if avail >= need:
                shadow = end
        return shadow, avail - need
