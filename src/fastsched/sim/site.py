"""A site's configuration in the simulator: Slurm's multifactor priorities,
recomputed every PriorityCalcPeriod from usage decayed over simulated time,
QOS and association limits, and partition PriorityTier.

:func:`simulate_site` is :func:`fastsched.simulate` for a
:class:`~fastsched.io.workload.Workload` under a
:class:`~fastsched.policy.config.SchedulerConfig` (from a TOML file):

* queue order: partition PriorityTier (of the job's first partition), then
  the multifactor priority, both higher first; priorities are recomputed at
  the start of every ``calc_period`` window that has an event, with age from
  when each job became eligible and fair share from the usage of every job
  that ran before (charged up to that instant, decayed by PriorityDecayHalfLife);
* limits: the config's running caps become limit groups (a job they hold
  waits with the limit's name as its reason and blocks nobody); a job a
  per-job limit forbids (MaxWallDurationPerJob, MaxTRESPerJob, or a running cap
  it exceeds alone) stays pending with that reason;
* the workload's own constraints (dependencies, partition lists, array
  throttles) apply too.
"""
from __future__ import annotations

import numpy as np

from ..model.constraints import held_forever, merge_limits
from ..policy.limits import compile_limits
from ..policy.priority import multifactor
from .simulator import simulate
from ..policy.usage import UsageTracker

__all__ = ["simulate_site", "priority_function", "site_limits"]

#: a tier outranks any priority (Slurm's priorities are 32-bit)
_TIER_SCALE = float(2 ** 33)


def priority_function(config, workload, cluster, tree=None):
    """``priority(now, progress) -> float64[n]``: tier-major multifactor keys at ``now``
    (a :class:`SitePriority`).

    Only jobs that may be queued before the next recomputation (not started,
    submitted before ``now + calc_period``) are computed; the others get -inf.
    Calls with increasing ``now`` (a simulation) cost what changed since the last
    one: the queued jobs, those that started and usage carried forward
    (:class:`~fastsched.policy.usage.UsageTracker`); an earlier ``now`` starts over.
    """
    return SitePriority(config, workload, cluster, tree)


class SitePriority:
    """A site's queue priorities over time (see :func:`priority_function`): called
    with a whole progress, or asked for some jobs' keys (:meth:`keys`, what the
    simulator's event loops do)."""

    def __init__(self, config, workload, cluster, tree=None):
        jobs = workload.jobs
        self.config, self.cluster, self.jobs = config, cluster, jobs
        self.tree = config.build_tree(workload) if tree is None else tree
        self.assoc = self.tree.job_associations(workload)
        self.qos_factor = config.qos_factor()[config.job_qos(workload)]
        self.part_factor = config.partition_factor(cluster)
        tier = np.array([p.priority_tier for p in cluster.partitions], dtype=np.float64)
        self.job_tier = tier[jobs.partition]
        # the cluster's totals (job size, TRES factors) once, not a sum over every node
        # at each recomputation: what multifactor derives from ``cluster=``
        cpus = cluster.cpus.sum()
        self.totals = {"total_nodes": cluster.num_nodes, "total_cpus": int(cpus),
                       "tres_totals": {"CPU": float(cpus), "Mem": float(cluster.mem_mb.sum()),
                                       "Node": float(cluster.num_nodes),
                                       "GRES/gpu": float(cluster.gpus.sum())}}
        self.window = _QueueWindow(jobs.submit_time, int(config.calc_period))
        self.tracker = UsageTracker(config, self.tree, workload, job_associations=self.assoc)
        self.waiting = []       # jobs started since the tracker last looked (None: start over)
        self.asked = None       # the jobs of the last call of keys()
        self.now = None
        self.fairshare = None   # the last call's factors per association (None: not needed)

    def __call__(self, now, progress):
        key = np.full(len(self.jobs), -np.inf)
        rows, started = self.window.advance(now, progress.start)
        self.waiting.append(started)
        if not len(rows):
            return key
        started = None if any(s is None for s in self.waiting) else np.concatenate(self.waiting)
        self.waiting.clear()
        key[rows] = self._keys(now, progress, rows, started)
        return key

    def keys(self, now, progress, rows):
        """The keys of jobs ``rows`` at ``now`` (every job that may be queued before
        the next call, and so every job that starts before it; running ones too)."""
        if self.asked is None or now < self.now:
            started = None
        else:
            started = self.asked[progress.start[self.asked] >= 0]
        self.asked, self.now = rows, now
        return self._keys(now, progress, rows, started)

    def _keys(self, now, progress, rows, started):
        # the tracker sees every recomputation, queue empty or not: its usage carried
        # forward is then the same, decay step for decay step, whatever the queue held
        # (with nothing to rank it only carries forward: nobody reads the answer)
        usage = self.tracker.at(now, progress.start, progress.end, started,
                                answer=len(rows) > 0)
        self.fairshare = None
        if not len(rows):
            return np.zeros(0)
        self.fairshare = self.config.fairshare(self.tree, usage)
        return self._priorities(now, progress, rows, self.fairshare)

    def keys_late(self, progress, rows):
        """The keys jobs ``rows`` would have had in the last call of :meth:`keys`, had
        they been among its jobs: jobs running then, requeued since and about to be
        queued, whose eligible time has not changed since (asked before the next call)."""
        if self.fairshare is None:      # that call had nothing to rank
            self.fairshare = self.config.fairshare(self.tree, self.tracker.answer())
        return self._priorities(self.now, progress, rows, self.fairshare)

    def _priorities(self, now, progress, rows, fairshare):
        """Each job's key from its own fields alone (so one job's is the same alone or
        among others)."""
        jobs = self.jobs
        eligible = progress.eligible[rows]
        submit = jobs.submit_time[rows]
        accrue = np.where(eligible >= 0, eligible, submit)
        prio = multifactor(jobs.take(rows), now, self.config.weights,
                           fairshare=fairshare,
                           fairshare_index=self.assoc[rows], qos_factor=self.qos_factor[rows],
                           partition_factor=self.part_factor, **self.totals,
                           accrue_time=np.maximum(accrue, submit))
        return self.job_tier[rows] * _TIER_SCALE + prio


class _QueueWindow:
    """The jobs that may be queued before the next recomputation: not started at
    ``now``, submitted before ``now + period``. For increasing ``now`` only the last
    call's jobs and the new submissions are looked at, not every job."""

    def __init__(self, submit, period: int):
        self.by_submit = np.argsort(submit, kind="stable")
        self.sorted_submit = np.asarray(submit)[self.by_submit]
        self.period = period
        self.now = None

    def advance(self, now: int, start):
        """(rows, started): the window's jobs at ``now``, and the jobs that started
        since the last call (None when this call starts over)."""
        hi = int(np.searchsorted(self.sorted_submit, now + self.period, side="left"))
        if self.now is None or now < self.now:
            rows = self.by_submit[:hi]
            started = None
        else:
            rows = np.concatenate([self.rows, self.by_submit[self.seen:hi]])
            started = rows[start[rows] >= 0]
        self.rows = rows[start[rows] < 0]
        self.seen, self.now = hi, now
        return self.rows, started


def site_limits(config, workload, cluster, tree=None):
    """The limit groups a site run enforces: the configuration's running caps, every job a
    per-job limit forbids (held forever with its reason), and the workload's own (arrays)."""
    groups, rejected = compile_limits(config, workload, cluster, tree=tree)
    return merge_limits(groups, held_forever(rejected.rows, rejected.reasons, len(workload)),
                        getattr(workload, "limits", None))


def simulate_site(cluster, workload, config, policy: str = "easy", **options):
    """Simulate ``workload`` on ``cluster`` under ``config`` (see the module docstring).

    ``options`` go to :func:`fastsched.simulate` (``reserve_depth``,
    ``resolution``, ``window``, ``placement``, ``progress``). The records'
    ``priority`` column is the multifactor priority each job started with;
    the summary records the configuration file.
    """
    cluster = config.apply_partitions(cluster)
    tree = config.build_tree(workload)
    limits = site_limits(config, workload, cluster, tree)
    result = simulate(cluster, workload.jobs, policy, limits=limits,
                      dependencies=getattr(workload, "dependencies", None),
                      partitions=getattr(workload, "partitions", None),
                      priority=priority_function(config, workload, cluster, tree),
                      period=int(config.calc_period),
                      time_min=getattr(workload, "time_min", None), **options)
    if result.priority is not None:
        result.priority = np.where(np.isfinite(result.priority),
                                   np.mod(result.priority, _TIER_SCALE), np.nan)
    result.summary["config"] = config.source
    result.summary["semantics"]["priority"] = (
        f"multifactor ({config.fairshare_algorithm} fair share), recomputed every "
        f"{config.calc_period} s, usage half-life {config.decay_half_life} s; "
        "PriorityTier first")
    return result
