"""RLScheduler's window in arrays, stepped and observed by Numba kernels: what fastsched.gym runs.

The rules are :mod:`fastsched.tools.rlsim`'s (``RLWindow``, the plain twin, which
follows ``HPCSimPickJobs.HPCEnv``); here one kernel call runs a decision and writes the
next observation, so that an environment step costs microseconds. Kept as RLWindow
keeps them:

- the running list in RLScheduler's list order: a start appends, each event re-sorts it
  stably by actual end and a head's shadow by estimated end (insertion sorts, stable,
  as Python's sort is); the profile feature takes a stable order of it by estimate
  without changing it;
- the queue in (submit, job) order, which is the order RLWindow's queue has whenever it
  is read: it is stably sorted by submit before each observation and each backfill
  scan, arrivals come in job order (so an arrival follows every queued job with its
  submit time), and removals keep the order of the rest.

Arithmetic is RLWindow's and the plain environment's, in the same order and types
(integer clocks, float64 ratios rounded once to float32), so observations and rewards
are the same bits (tests/test_rlfast.py against tests/naive_gym.py).
"""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)

import numpy as np
from numba import njit

from .rlsim import RLJobs, columns

__all__ = ["FastWindow", "MAX_WAIT", "JOB_FEATURES", "job_features"]

MAX_WAIT = 12 * 3600          # RLScheduler's MAX_WAIT_TIME: waits are scaled by 12 h
JOB_FEATURES = 5

# rows of the trace table
SUBMIT, RUN, REQUEST, NODES, PROCS = range(5)
# slots of the state vector: the window's scalars, then its fixed sizes
NOW, NEXT, STOP, FIRST, FREE, NQ, NR, NS, DECISIONS, \
    MNODES, MPROCS, QSIZE, PSIZE, LENGTH = range(14)
# rows of the per-window lists: queued jobs, running jobs, started jobs and their starts
QUEUE, RUNNING, SJOB, STIME = range(4)
# rows of the per-job times
END, ESTIMATE = range(2)


def job_features(jobs: RLJobs) -> np.ndarray:
    """Every job's observation row with its fixed features: requested time / longest
    runtime, procs / machine procs, and the row-is-a-job flag (wait and fits-now: 0)."""
    rows = np.zeros((len(jobs), JOB_FEATURES), dtype=np.float32)
    rows[:, 1] = np.minimum(jobs.request / max(int(jobs.run.max()), 1), 1.0)
    rows[:, 2] = np.minimum(jobs.procs / jobs.machine_procs, 1.0)
    rows[:, 4] = 1.0
    return rows


class FastWindow:
    """One window of ``length`` consecutive jobs at a time, on an empty cluster, as
    :class:`~fastsched.tools.rlsim.RLWindow` runs it; :meth:`reset` starts the next.

    Reads like RLWindow: ``now``, ``free``, ``queue`` (list), ``running`` (list),
    ``started`` (list of (job, time)), ``decisions``, ``done``, ``first``, ``stop``, the
    per-job lists ``submit``, ``run_time``, ``request``, ``nodes``, ``procs``, and
    ``end`` / ``estimate`` (arrays over the trace's jobs, set for started jobs).
    ``queue_size`` and ``profile`` size the observation (:meth:`observe`).
    """

    def __init__(self, jobs: RLJobs, length: int, *, backfill: bool, queue_size: int = 128,
                 profile: int = 8, _columns=None, _features=None):
        cols = _columns or columns(jobs)
        self.submit, self.run_time, self.request, self.nodes, self.procs = cols
        self.table = np.array(cols, dtype=np.int64)
        self.features = job_features(jobs) if _features is None else _features
        self.backfill = bool(backfill)
        self.state = np.zeros(14, dtype=np.int64)
        self.state[[MNODES, MPROCS, QSIZE, PSIZE, LENGTH]] = \
            (jobs.machine_nodes, jobs.machine_procs, queue_size, profile, length)
        self.lists = np.zeros((4, length), dtype=np.int64)
        self.times = np.zeros((2, len(jobs)), dtype=np.int64)
        self.end, self.estimate = self.times
        self.length, self.num_jobs = int(length), len(jobs)

    def reset(self, start: int) -> None:
        """Begin the window of jobs ``start`` to ``start + length - 1``."""
        if not (0 <= start and start + self.length <= self.num_jobs):
            raise ValueError(f"window [{start}, {start + self.length}) outside the trace's "
                             f"{self.num_jobs} jobs")
        st = self.state
        st[[NOW, NEXT, STOP, FIRST, FREE, NQ, NR, NS, DECISIONS]] = \
            (self.submit[start], start + 1, start + self.length, start, st[MNODES], 1, 0, 0, 0)
        self.lists[QUEUE, 0] = start

    # ---------------------------------------------------------------- decisions

    def run(self, job: int, backfill: bool | None = None) -> bool:
        """RLWindow.run: start queued ``job`` as the head; True when the window is done."""
        at = np.flatnonzero(self.lists[QUEUE, :self.state[NQ]] == job)
        if not len(at):
            raise ValueError(f"job {job} is not queued (queued: {self.state[NQ]} jobs)")
        fill = self.backfill if backfill is None else bool(backfill)
        return _run(self.table, self.state, self.lists, self.times, int(at[0]), fill)

    def step(self, row: int, backfill: bool | None, jobs, cluster, profile, mask) -> bool:
        """Run the job in observation row ``row`` (modulo the rows shown), then write the
        next observation into the given arrays (:meth:`observe`); True when done.
        Raises ValueError when nothing is queued (done, or before :meth:`reset`)."""
        fill = self.backfill if backfill is None else backfill
        return _step(self.table, self.state, self.lists, self.times, self.features, row,
                     fill, jobs, cluster, profile, mask)

    def observe(self, jobs, cluster, profile, mask) -> None:
        """Write the observation (float32 arrays ``jobs`` queue_size x 5, ``cluster`` 3,
        ``profile`` profile x 2; fastsched.gym says what they hold) and the int8
        action ``mask`` (1 for each row that shows a job)."""
        _observe(self.table, self.state, self.lists, self.times, self.features, jobs,
                 cluster, profile, mask)

    # ---------------------------------------------------------------- reading

    now = property(lambda self: int(self.state[NOW]), doc="The clock.")
    free = property(lambda self: int(self.state[FREE]), doc="Free nodes.")
    decisions = property(lambda self: int(self.state[DECISIONS]), doc="Heads chosen so far.")
    first = property(lambda self: int(self.state[FIRST]), doc="The window's first job.")
    stop = property(lambda self: int(self.state[STOP]), doc="One past its last job.")
    done = property(lambda self: not self.state[NQ], doc="True when nothing is queued.")
    queue = property(lambda self: self.lists[QUEUE, :self.state[NQ]].tolist(),
                     doc="Queued jobs in (submit, job) order.")
    running = property(lambda self: self.lists[RUNNING, :self.state[NR]].tolist(),
                       doc="Running jobs in RLScheduler's list order.")

    @property
    def started(self) -> list[tuple[int, int]]:
        """Every start so far as (job, time), in order."""
        n = self.state[NS]
        return list(zip(self.lists[SJOB, :n].tolist(), self.lists[STIME, :n].tolist()))


# --------------------------------------------------------------------------- kernels

@njit(cache=True)
def _sort_by(running, n, key):
    """Stable insertion sort of ``running[:n]`` by ``key[job]`` (nearly sorted: O(n))."""
    for i in range(1, n):
        job = running[i]
        k = key[job]
        p = i
        while p > 0 and key[running[p - 1]] > k:
            running[p] = running[p - 1]
            p -= 1
        running[p] = job


@njit(cache=True)
def _start(tr, st, lists, times, job):
    now = st[NOW]
    times[END, job] = now + tr[RUN, job]
    times[ESTIMATE, job] = now + tr[REQUEST, job]
    lists[SJOB, st[NS]] = job
    lists[STIME, st[NS]] = now
    st[NS] += 1
    st[FREE] -= tr[NODES, job]
    lists[RUNNING, st[NR]] = job
    st[NR] += 1


@njit(cache=True)
def _event(tr, st, lists, times):
    """RLWindow._event: the next arrival if no later than the next completion, else it."""
    running = lists[RUNNING]
    nr = st[NR]
    _sort_by(running, nr, times[END])
    nxt = st[NEXT]
    if nxt < st[STOP] and (nr == 0 or tr[SUBMIT, nxt] <= times[END, running[0]]):
        st[NOW] = max(st[NOW], tr[SUBMIT, nxt])
        queue = lists[QUEUE]
        p = st[NQ]            # after every queued job with a submit time <= its own
        while p > 0 and tr[SUBMIT, queue[p - 1]] > tr[SUBMIT, nxt]:
            queue[p] = queue[p - 1]
            p -= 1
        queue[p] = nxt
        st[NQ] += 1
        st[NEXT] = nxt + 1
    elif nr > 0:
        job = running[0]
        st[NOW] = max(st[NOW], times[END, job])
        st[FREE] += tr[NODES, job]
        running[:nr - 1] = running[1:nr]
        st[NR] = nr - 1


@njit(cache=True)
def _shadow(tr, st, lists, times, head):
    """RLWindow._shadow: when the head could start if running jobs end at their
    estimates (the running list re-sorted by estimate, as there)."""
    running = lists[RUNNING]
    nr = st[NR]
    _sort_by(running, nr, times[ESTIMATE])
    ppn = st[MPROCS] / st[MNODES]
    free = st[FREE] * ppn
    shadow = st[NOW]
    for i in range(nr):
        job = running[i]
        free += tr[NODES, job] * ppn
        shadow = times[ESTIMATE, job]
        if free >= tr[PROCS, head]:
            break
    return shadow


@njit(cache=True)
def _backfill_now(tr, st, lists, times, shadow):
    """Start, in queue order, each queued job that fits now and is requested for less
    than ``shadow - now``; the rest keep their order."""
    latest = shadow - st[NOW]
    queue = lists[QUEUE]
    kept = 0
    for i in range(st[NQ]):
        job = queue[i]
        if tr[REQUEST, job] < latest and tr[NODES, job] <= st[FREE]:
            _start(tr, st, lists, times, job)
        else:
            queue[kept] = job
            kept += 1
    st[NQ] = kept


@njit(cache=True)
def _run(tr, st, lists, times, at, fill):
    """RLWindow.run of the job at queue position ``at``; True when the window is done."""
    head = lists[QUEUE, at]
    if tr[NODES, head] > st[FREE]:
        shadow = _shadow(tr, st, lists, times, head) if fill else 0
        while tr[NODES, head] > st[FREE]:
            if fill and st[FREE]:
                _backfill_now(tr, st, lists, times, shadow)
            _event(tr, st, lists, times)
    _start(tr, st, lists, times, head)
    st[DECISIONS] += 1
    queue = lists[QUEUE]
    nq = st[NQ]
    p = 0
    while queue[p] != head:
        p += 1
    queue[p:nq - 1] = queue[p + 1:nq]
    st[NQ] = nq - 1
    while st[NQ] == 0 and st[NEXT] < st[STOP]:
        _event(tr, st, lists, times)
    return st[NQ] == 0


@njit(cache=True)
def _observe(tr, st, lists, times, features, jobs, cluster, profile, mask):
    """The plain environment's observation, written in place (see FastWindow.observe)."""
    now, free, nq = st[NOW], st[FREE], st[NQ]
    qsize = st[QSIZE]
    shown = min(nq, qsize)
    queue = lists[QUEUE]
    for i in range(shown):
        job = queue[i]
        for c in range(JOB_FEATURES):
            jobs[i, c] = features[job, c]
        jobs[i, 0] = min((now - tr[SUBMIT, job]) / MAX_WAIT, 1.0)
        jobs[i, 3] = 1.0 if tr[NODES, job] <= free else 0.0
        mask[i] = 1
    jobs[shown:] = 0.0
    mask[shown:] = 0
    cluster[0] = free / st[MNODES]
    cluster[1] = min(nq / qsize, 1.0)
    cluster[2] = st[NS] / st[LENGTH]
    if st[PSIZE]:
        _profile(tr, st, lists, times, profile)


@njit(cache=True)
def _profile(tr, st, lists, times, out):
    """For each of the first ``profile`` running jobs in a stable order by estimated end:
    time until it / 12 h (clipped to [0, 1]) and the nodes free from then / nodes."""
    size = out.shape[0]
    order = np.empty(size, dtype=np.int64)      # running jobs, stable by estimate
    k = 0
    est = times[ESTIMATE]
    running = lists[RUNNING]
    for i in range(st[NR]):
        job = running[i]
        e = est[job]
        if k == size and est[order[k - 1]] <= e:
            continue
        p = min(k, size - 1)
        while p > 0 and est[order[p - 1]] > e:
            order[p] = order[p - 1]
            p -= 1
        order[p] = job
        k = min(k + 1, size)
    freed = st[FREE]
    now = st[NOW]
    for i in range(k):
        job = order[i]
        out[i, 0] = min(max((est[job] - now) / MAX_WAIT, 0.0), 1.0)
        freed += tr[NODES, job]
        out[i, 1] = freed / st[MNODES]
    out[k:, 0] = 0.0
    out[k:, 1] = 1.0


@njit(cache=True)
def _step(tr, st, lists, times, features, row, fill, jobs, cluster, profile, mask):
    """Run the job in observation row ``row`` (Python's modulo by the rows shown), then
    observe; True when the window is done."""
    if st[NQ] == 0:
        raise ValueError("the window is done (or not begun): nothing is queued")
    done = _run(tr, st, lists, times, row % min(st[NQ], st[QSIZE]), fill)
    _observe(tr, st, lists, times, features, jobs, cluster, profile, mask)
    return done
