"""Fair-share usage at a point in simulated time, from when jobs ran.

:func:`usage_at` charges every job that ran before ``now`` (the part of a
running job up to ``now`` included) to its user association: billed TRES
(TRESBillingWeights) x its QOS's UsageFactor, accrued continuously and decayed
with PriorityDecayHalfLife. A job running from ``s`` to ``e`` at billing rate
``r`` contributes, at time ``now``::

    integral_s^e r * 2^(-(now - t) / h) dt
        = r * h / ln 2 * (2^(-(now - e) / h) - 2^(-(now - s) / h))

(exactly ``r * (e - s)`` when h = 0, no decay). Slurm decays in steps of
PriorityCalcPeriod; this is the continuous limit of those steps, so values
differ from a live Slurm by the step size. With PriorityUsageResetPeriod, only
running time after the last reset counts (simulated seconds are read as Unix
time, UTC: DAILY at midnight, WEEKLY on Sunday 00:00, MONTHLY / QUARTERLY /
YEARLY on the first day of the month / quarter / year).

:class:`UsageTracker` gives the same usage at increasing times (the simulator's
PriorityCalcPeriods) without re-summing every job: decay is multiplicative, so the
decayed usage of ended jobs is carried forward and only what changed is added.
"""
from __future__ import annotations

from datetime import datetime, timezone

import numpy as np

from ..model.errors import InputError
from ..model.progress import per_job
from .fairshare import AssociationTree, Usage
from .limits import job_tres

__all__ = ["usage_at", "last_reset", "UsageTracker", "billing_rates"]


def last_reset(period: str, now: int) -> int:
    """Time of the last PriorityUsageResetPeriod reset at or before ``now`` (or a
    time before any job for NONE / NOW)."""
    now = int(now)
    period = period.upper()
    if period in ("NONE", "NOW"):
        return np.iinfo(np.int64).min // 2
    if period == "DAILY":
        return now - now % 86400
    if period == "WEEKLY":                 # 1970-01-01 was a Thursday; 1970-01-04 a Sunday
        day = now // 86400
        return (day - (day + 4) % 7) * 86400
    t = datetime.fromtimestamp(now, tz=timezone.utc)
    if period == "MONTHLY":
        t = t.replace(day=1)
    elif period == "QUARTERLY":
        t = t.replace(month=(t.month - 1) // 3 * 3 + 1, day=1)
    elif period == "YEARLY":
        t = t.replace(month=1, day=1)
    else:
        raise InputError(f"unknown PriorityUsageResetPeriod {period!r}",
                         field="PriorityUsageResetPeriod")
    return int(t.replace(hour=0, minute=0, second=0, microsecond=0).timestamp())


def usage_at(config, tree: AssociationTree, workload, schedule_start, schedule_end,
             now: int, *, job_associations=None) -> Usage:
    """:class:`Usage` of every user association of ``tree`` at time ``now``.

    ``schedule_start`` / ``schedule_end`` are per job (workload order; -1 =
    never started; an end of -1 or after ``now`` means still running). The
    tree must come from ``config.build_tree`` (or
    :meth:`AssociationTree.from_workload`) for this workload;
    ``job_associations`` (``tree.job_associations(workload)``, computed when
    not given) saves that lookup when the same workload is charged often.
    """
    jobs = workload.jobs
    n = len(jobs)
    start = np.asarray(schedule_start, dtype=np.int64)
    end = np.asarray(schedule_end, dtype=np.int64)
    if start.shape != (n,) or end.shape != (n,):
        raise InputError(f"schedule_start / schedule_end must have {n} entries "
                         f"(got {start.shape}, {end.shape})")
    now = int(now)
    usage = config.new_usage(tree)
    lo = np.maximum(start, last_reset(config.usage_reset_period, now))
    hi = np.where((end < 0) | (end > now), now, end)
    ran = np.flatnonzero((start >= 0) & (hi > lo))
    if not len(ran):
        return usage
    lo, hi = lo[ran].astype(np.float64), hi[ran].astype(np.float64)
    h = float(config.decay_half_life)
    if h > 0:
        k = np.log(2.0) / h
        # 2^(-(now-hi)/h) * (1 - 2^(-(hi-lo)/h)) / k, with expm1 for short runs
        seconds = np.exp(-k * (now - hi)) * -np.expm1(-k * (hi - lo)) / k
    else:
        seconds = hi - lo
    tres = job_tres(jobs)
    assoc = (tree.job_associations(workload) if job_associations is None
             else job_associations)[ran]
    factor = config.usage_factor()[config.job_qos(workload)[ran]]
    usage.add_usage(assoc, {"CPU": tres["cpu"][ran] * seconds,
                            "Mem": tres["mem"][ran] * seconds,
                            "Node": tres["node"][ran] * seconds,
                            "GRES/gpu": tres["gres/gpu"][ran] * seconds},
                    usage_factor=factor)
    return usage


def billing_rates(config, workload) -> np.ndarray:
    """float64 per job: its billed usage per second of running (TRESBillingWeights x
    allocated TRES x its QOS's UsageFactor), what :func:`usage_at` charges per second."""
    tres = job_tres(workload.jobs)
    weights = config.tres_billing_weights
    rate = np.zeros(len(workload), dtype=np.float64)
    for name, key in (("CPU", "cpu"), ("Mem", "mem"), ("Node", "node"), ("GRES/gpu", "gres/gpu")):
        if weights.get(name, 0.0):
            rate += weights[name] * tres[key]
    return rate * config.usage_factor()[config.job_qos(workload)]


class UsageTracker:
    """:func:`usage_at` at a sequence of increasing times, at the cost of the jobs that
    ran since the last one (the simulator asks at every PriorityCalcPeriod).

    Decay is multiplicative, so the decayed usage of every job that has ended is
    carried forward (x 2^(-dt/h) from one time to the next) and only jobs that ended
    since are added; jobs still running are charged afresh each time. A
    PriorityUsageResetPeriod boundary, a first call or an earlier ``now`` recompute
    from every job. Equal to :func:`usage_at` up to rounding (a relative 1e-12).
    """

    def __init__(self, config, tree: AssociationTree, workload, *, job_associations=None):
        self.config, self.tree = config, tree
        self.assoc = (tree.job_associations(workload) if job_associations is None
                      else np.asarray(job_associations))
        self.rate = billing_rates(config, workload)
        self.k = np.log(2.0) / config.decay_half_life if config.decay_half_life > 0 else 0.0
        self.n = len(workload)
        self.now = None
        self.unanswered = None      # (running jobs, their starts, time) of an unanswered call
        self.empty = config.new_usage(tree)     # copied for each answer (weights checked once)

    def at(self, now: int, start, end, started=None, *, answer: bool = True) -> Usage | None:
        """Usage at ``now`` from ``start`` / ``end`` (per job, as :func:`usage_at` takes
        them, or :class:`~fastsched.model.progress.Column` views: only the running jobs
        are read). ``started``: the jobs that started since the previous call (indices;
        None: unknown, recompute from every job); jobs started earlier keep theirs.
        ``answer`` False: only carry the usage forward to ``now`` and return None (a
        caller with no job to rank; the next answers are the same as with it: what is
        carried forward never depends on the running jobs' charge)."""
        now = int(now)
        start = per_job(start, self.n, "start")
        end = per_job(end, self.n, "end")
        reset = last_reset(self.config.usage_reset_period, now)
        if started is None or self.now is None or now < self.now or reset != self.reset:
            self._restart(now, reset, start)
        else:
            self._advance(now, np.asarray(started, dtype=np.int64))
        run = self.running
        s = start[run]      # (read once: a Column reads through two index arrays)
        if len(run):        # a killed attempt (start reset) leaves; its restart comes back
            keep = s >= 0
            if not keep.all():
                self.is_running[run[~keep]] = False
                run = self.running = run[keep]
                s = s[keep]
        e = end[run]
        over = (e >= 0) & (e <= now)                 # ended since the last call
        if over.any():
            self._charge(self.done, run[over], s[over], e[over], now)
            self.is_running[run[over]] = False
            run = self.running = run[~over]
            s = s[~over]
        if not answer:
            self.unanswered = (run, s, now)
            return None
        self.unanswered = None
        return self._answer(run, s, now)

    def answer(self) -> Usage:
        """The usage the last call of :meth:`at`, made with ``answer`` False, would have
        returned (asked before the next call: the usage carried forward is then kept)."""
        if self.unanswered is None:
            raise RuntimeError("the last call of at() answered, or there was none")
        return self._answer(*self.unanswered)

    def _answer(self, run, s, now) -> Usage:
        # a shallow copy of the empty usage (copy.copy costs as much as the charge below)
        usage = object.__new__(type(self.empty))
        usage.__dict__.update(self.empty.__dict__)
        usage.raw = self.done.copy()
        self._charge(usage.raw, run, s, None, now)
        return usage

    def _restart(self, now, reset, start):
        self.reset = reset
        self.done = np.zeros(self.tree.num_users, dtype=np.float64)
        self.running = np.flatnonzero(start >= 0)
        self.is_running = np.zeros(self.n, dtype=bool)
        self.is_running[self.running] = True
        self.now = now

    def _advance(self, now, started):
        if self.k and now > self.now:
            self.done *= np.exp(-self.k * (now - self.now))
        # a job killed and restarted since the last call is running once
        started = started[~self.is_running[started]]
        self.is_running[started] = True
        self.running = np.concatenate([self.running, started])
        self.now = now

    def _charge(self, raw, jobs, start, hi, now):
        """Add the usage at ``now`` of ``jobs`` running from max(``start``, reset) to
        ``hi`` (``start`` and ``hi``: one per job; ``hi`` None: to ``now``, the jobs
        still running; their decay since ``hi`` is then 2^0 = 1 exactly, and is not
        computed)."""
        lo = np.maximum(start, self.reset)
        if hi is None:
            keep = lo < now
            jobs, lo = jobs[keep], lo[keep].astype(np.float64)
            span = now - lo
            decay = None
        else:
            keep = hi > lo
            jobs, lo, hi = jobs[keep], lo[keep].astype(np.float64), hi[keep].astype(np.float64)
            span = hi - lo
            decay = now - hi
        if self.k and decay is None:
            seconds = -np.expm1(-self.k * span) / self.k
        elif self.k:
            seconds = np.exp(-self.k * decay) * -np.expm1(-self.k * span) / self.k
        else:
            seconds = span
        np.add.at(raw, self.assoc[jobs], self.rate[jobs] * seconds)
