"""What a simulation returns: per-job records and a summary with its semantics.

Records are built from the arrays only when asked for (``result.jobs``), so a
simulation of a million jobs does not pay for a million hostlist strings.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..model.cluster import Cluster
from ..model.jobs import JobTable
from .metrics import busy_node_seconds, gpu_fragmentation
from ..model.constraints import CAPS, csr_take
from ..model.schedule import Schedule

#: bounded slowdown threshold (seconds), as in Feitelson's metrics
BSLD_TAU = 10

#: columns of the per-job records, in CSV order
#: (``planning``: the reservation model the schedule was planned with, counts or nodes,
#: so that ``fastsched check`` judges it by the right rules)
RECORD_COLUMNS = ["job_id", "submit_time", "start_time", "end_time", "wait_time", "run_time",
                  "time_limit", "state", "num_nodes", "procs", "gpus", "nodes", "gpu_ids",
                  "planning"]
#: extra columns of node-engine runs: where each job ran, why a job never
#: started (squeue's reason), the priority it started with (NaN: none given)
CONSTRAINT_COLUMNS = ["partition", "reason", "priority"]


@dataclass
class SimulationResult:
    """A finished simulation: ``jobs`` (DataFrame), ``summary`` (dict), ``schedule`` (arrays)."""

    cluster: Cluster
    workload: JobTable
    schedule: Schedule
    summary: dict
    skipped: list = field(default_factory=list)
    #: node engine only (None otherwise), per job: the partition it ran in
    #: (-1: never started), the engine's reason code, a dependency that can no
    #: longer be satisfied, when it entered the queue, its priority at start,
    #: and the limit groups the reason codes refer to
    partition: np.ndarray | None = None
    reason_code: np.ndarray | None = None
    never: np.ndarray | None = None
    eligible: np.ndarray | None = None
    priority: np.ndarray | None = None
    limits: object = None
    #: node engine: the partition choices, dependencies and placement the run
    #: used (None: none), and ``priority_at(t) -> float64[n]``, the queue
    #: priorities the run would compute at ``t`` (None: submit order)
    partitions: object = None
    dependencies: object = None
    placement: object = None
    priority_at: object = None
    #: with node failures: every attempt of every started job
    #: (:func:`fastsched.sim.lifecycle.attempt_table`) and what a killed job does
    #: (:class:`fastsched.model.lifecycle.Lifecycle`); None otherwise
    attempts: dict | None = None
    lifecycle: object = None
    #: the node events the run applied (a failure model's included), or None
    events: object = None
    #: with container images: the seconds each job's last attempt pulled its image
    #: (part of its run; records' column ``pull_time``); None otherwise
    pull: np.ndarray | None = None
    #: with power saving: the seconds each job waited CONFIGURING for its nodes to boot
    #: (its start is when they were ready; records' column ``configure_time``)
    configure: np.ndarray | None = None
    #: the power saving model it ran under (:class:`fastsched.model.power.PowerSaving`)
    power: object = None
    #: the preemption the run applied (:class:`fastsched.model.preemption.Preemption`),
    #: or None
    preemption: object = None
    #: with jobs running in advance reservations: the reservation each job ran in (a
    #: member's, started or not, or the MAGNETIC one a drawn job started in; "": none),
    #: an object array of names (sacct's Reservation); None otherwise
    reservation: np.ndarray | None = None
    #: the advance reservations the run held (:class:`fastsched.model.reservations.
    #: Reservations` or :class:`fastsched.model.resvjobs.JobReservations`), or None
    advance_reservations: object = None
    #: with --time-min jobs: each job's time minimum (seconds, 0: none) and the limit
    #: it asked for (``workload`` has the limits the jobs ran with: a --time-min job's
    #: may be cut); None otherwise
    time_min: np.ndarray | None = None
    asked_limit: np.ndarray | None = None

    @cached_property
    def jobs(self):
        """One record per job, as a pandas DataFrame (columns: ``RECORD_COLUMNS``).

        Times are nullable integers: a job that never started has no start, end,
        wait or run time (empty in CSV). With node failures, one record per attempt
        (like ``sacct --duplicates``), in job order then column ``attempt``: a
        killed attempt ends NODE_FAIL, and a requeued attempt's ``submit_time`` is
        when the previous one was killed (Slurm resets it at a requeue). With container
        images, column ``pull_time``: the seconds the attempt pulled its image (inside
        its run time). With power saving, column ``configure_time``: the seconds the job
        was CONFIGURING, its nodes booting, before its start."""
        import pandas as pd
        from ..io.hostlist import schedule_hostlists
        w, s = self.workload, self.schedule
        names = self.cluster.node_names
        started = s.start_time >= 0

        def times(values):                  # missing (NA) where the job never started
            return pd.arrays.IntegerArray(np.where(started, values, 0).astype(np.int64),
                                          ~started)

        frame = pd.DataFrame({
            "job_id": s.job_id,
            "submit_time": w.submit_time,
            "start_time": times(s.start_time),
            "end_time": times(s.end_time),
            "wait_time": times(s.start_time - w.submit_time),
            "run_time": times(s.end_time - s.start_time),
            "time_limit": w.time_limit,
            "state": self.states(),
            "num_nodes": w.num_nodes,
            "procs": w.num_nodes.astype(np.int64) * w.cpus_per_node,
            "gpus": w.num_nodes.astype(np.int64) * w.gpus_per_node,
            "nodes": schedule_hostlists(names, s),
            "gpu_ids": np.full(len(s), "", dtype=object) if s.alloc_gpu_mask is None else
            gpu_id_rows(names, s.alloc_offsets, s.alloc_nodes, s.alloc_gpu_mask),
            "planning": pd.Categorical.from_codes(np.zeros(len(s), dtype=np.int8),
                                                  [s.planning or ""]),
            **self._constraint_columns(),
        })
        if self.pull is not None:
            frame["pull_time"] = times(self.pull)
        if self.configure is not None:
            frame["configure_time"] = times(self.configure)
        if self.attempts is None:
            return frame
        return _attempt_records(self, frame)

    def states(self) -> np.ndarray:
        """sacct-style state per job (its last attempt): COMPLETED, TIMEOUT, NODE_FAIL
        (killed by a node failure, not requeued), PREEMPTED (preempted, not requeued),
        PENDING (never started) or
        REJECTED (over a submit limit)."""
        w, s = self.workload, self.schedule
        runtime = w.runtime if self.attempts is None else self.attempts["last_runtime"]
        if self.pull is not None:        # the pull runs inside the job, against its limit
            runtime = runtime + self.pull
        state = np.where(runtime > w.time_limit, "TIMEOUT", "COMPLETED").astype(object)
        if self.attempts is not None:
            state[self.attempts["node_fail_job"]] = "NODE_FAIL"
            if "preempted_job" in self.attempts:
                state[self.attempts["preempted_job"]] = "PREEMPTED"
        state[s.start_time < 0] = "PENDING"
        if self.reason_code is not None:
            state[(s.start_time < 0) & (self.reason_code >= 0)
                  & (self.reason_code % len(CAPS) == len(CAPS) - 1)] = "REJECTED"
        return state

    def reasons(self) -> np.ndarray:
        """Why each job never started ("" for jobs that ran): a limit's name,
        DependencyNeverSatisfied, Dependency, else ReqNodeNotAvail in a run with node
        events (nodes it needs never came back) or Resources."""
        reason = np.full(len(self.workload), "", dtype=object)
        if self.reason_code is None:
            return reason
        pending = self.schedule.start_time < 0
        reason[pending] = "Resources" if self.events is None else "ReqNodeNotAvail"
        if self.dependencies is not None:
            reason[pending & (np.diff(self.dependencies.offsets) > 0)] = "Dependency"
        reason[pending & self.never] = "DependencyNeverSatisfied"
        held = pending & (self.reason_code >= 0)
        if held.any():
            from ..engine import limit_reasons
            reason[held] = limit_reasons(self.limits, self.reason_code[held])
        return reason

    def _constraint_columns(self) -> dict:
        if self.partition is None:
            return {}
        names = np.array([p.name for p in self.cluster.partitions] + [""], dtype=object)
        prio = self.priority if self.priority is not None else np.full(len(self.workload), np.nan)
        return {"partition": names[self.partition], "reason": self.reasons(), "priority": prio}

    def state_at(self, t: int):
        """The state the simulator had at ``t``, just before its pass there:
        ``(running, pending)``.

        ``running`` (a :class:`fastsched.engine.RunningJobs`): jobs started
        before ``t`` and not ended by ``t`` (completions come first at an
        instant), holding their nodes and GPUs until start + time limit; a
        pool-engine result holds whole nodes, as that engine allocates them.
        ``pending`` (a :class:`JobTable`, the workload's order): jobs submitted
        by ``t`` that had not started before ``t``. Feed both to
        :meth:`fastsched.Scheduler.from_state` for a what-if at ``t``.
        """
        from ..model.errors import InputError
        from ..engine import RunningJobs
        if isinstance(t, bool) or not isinstance(t, (int, np.integer)):
            raise InputError(f"time must be an integer number of seconds, got {t!r}",
                             field="time")
        t = int(t)
        w, s = self.workload, self.schedule
        run = np.flatnonzero((s.start_time >= 0) & (s.start_time < t) & (s.end_time > t))
        held = s.rows(run)                      # (only the running jobs' nodes expanded)
        offsets, nodes = held.alloc_offsets, held.alloc_nodes
        if self.summary.get("engine") == "pool":       # whole nodes, every GPU
            c = self.cluster
            gpus, cpus, mem = c.gpus[nodes], c.cpus[nodes], c.mem_mb[nodes]
            mask = c.new_state().free_gpu_mask[nodes]
        else:
            gpus, cpus, mem = (np.repeat(a[run], np.diff(offsets)) for a in
                               (w.gpus_per_node, w.cpus_per_node, w.mem_per_node))
            mask = held.alloc_gpu_mask
        p = self.placement
        running = RunningJobs.from_arrays(
            job_id=w.job_id[run], planned_end=s.start_time[run] + w.time_limit[run],
            node_offsets=offsets, nodes=nodes, gpus=gpus, cpus=cpus, mem=mem, gpu_mask=mask,
            exclusive_topo=None if p is None or not p.exclusive_topo.any() else
            p.exclusive_topo[run])
        pending = w.take((w.submit_time <= t) & ((s.start_time >= t) | (s.start_time < 0)))
        return running, pending

    def verify(self, policy: str | None = None, reserve_depth: int = 1):
        """:func:`fastsched.verify` of this run's schedule under the constraints it ran
        with (dependencies, limits, partition choices, advance reservations, and the
        placement's --exclusive=topo jobs) and its queue order (the priorities jobs
        started with); a :class:`~fastsched.verify.VerifyReport`. A run with node
        failures is checked attempt by attempt (:mod:`fastsched.verify.lifecycle`),
        without policy; a run with power saving gets its power checks
        (:mod:`fastsched.verify.power`)."""
        from ..verify import verify
        if self.attempts is not None:
            from ..verify.lifecycle import Attempts, verify_attempts
            t = self.attempts
            return verify_attempts(self.cluster, self.workload, Attempts(
                t["row"], t["attempt"], t["start"], t["end"], t["killed"], t["alloc_offsets"],
                t["alloc_nodes"], t.get("pull"), resized=t.get("resized"),
                preempted=t.get("preempted"), partition=t["partition"], limit=t.get("limit"),
                configure=t.get("configure")),
                self.events, self.lifecycle, preemption=self.preemption,
                partitions=self.partitions, time_min=self.time_min,
                asked_limit=self.asked_limit, power=self.power,
                advance_reservations=self.advance_reservations)
        from .images import pull_workload      # the pull is part of each job's run
        return verify(self.cluster, pull_workload(self.workload, self.pull), self.schedule,
                      policy=policy,
                      reserve_depth=reserve_depth, dependencies=self.dependencies,
                      limits=self.limits, partitions=self.partitions, placement=self.placement,
                      priority=self.priority, power=self.power, configure=self.configure,
                      time_min=self.time_min, asked_limit=self.asked_limit,
                      advance_reservations=self.advance_reservations)

    def to_csv(self, path) -> None:
        self.jobs.to_csv(path, index=False)

    def summary_json(self, path) -> None:
        with open(path, "w") as f:
            json.dump(self.summary, f, indent=2)
            f.write("\n")

    def __getstate__(self) -> dict:
        """What pickle saves: ``priority_at`` holds the caller's priority function, which
        may be a lambda or a closure that pickle cannot save by name, so it is saved by
        value with cloudpickle; the cached records are left out (rebuilt on demand)."""
        state = dict(self.__dict__)
        state.pop("jobs", None)
        if state.get("priority_at") is not None:
            import cloudpickle
            state["priority_at"] = _ByValue(cloudpickle.dumps(state["priority_at"]))
        return state

    def __setstate__(self, state: dict) -> None:
        if isinstance(state.get("priority_at"), _ByValue):
            state = dict(state, priority_at=state["priority_at"].load())
        self.__dict__.update(state)


class _ByValue:
    """A function pickled by value (cloudpickle bytes), loaded back on unpickling."""

    def __init__(self, data: bytes):
        self.data = data

    def load(self):
        import pickle
        return pickle.loads(self.data)


def _attempt_records(result, frame):
    """``frame`` (one record per job: its last attempt) with a record per killed
    attempt added and column ``attempt``: rows in job order, then attempt."""
    import pandas as pd
    from ..io.hostlist import compress_rows
    t = result.attempts
    names = result.cluster.node_names
    n = len(frame)
    row = t["row"]
    last = _last_rows(t)
    # a job killed, requeued and not started again: its killed attempts are records
    # and its own record is the next attempt, PENDING since the kill
    waiting = result.schedule.start_time[row[last]] < 0
    restarts = np.zeros(n, dtype=np.int64)
    restarts[row[last]] = t["attempt"][last] + waiting
    frame = frame.assign(attempt=restarts)
    own = last[~waiting]
    _started_widths(t, own, frame)
    earlier = ~np.isin(np.arange(len(row)), own)
    prev_end = np.concatenate([[0], t["end"][:-1]])
    submit = np.where(t["attempt"] > 0, prev_end, result.workload.submit_time[row])
    resized = t.get("resized")
    if resized is not None:             # the shapes of an attempt share its submit time
        submit, frame = _shape_times(t, submit, frame)
    frame["submit_time"] = frame["submit_time"].to_numpy().copy()
    later = t["attempt"][own] > 0
    frame.loc[row[own][later], "submit_time"] = submit[own][later]
    frame.loc[row[last][waiting], "submit_time"] = t["end"][last][waiting]
    frame["wait_time"] = frame["start_time"] - frame["submit_time"]
    k = np.flatnonzero(earlier)
    if not len(k):
        return frame
    killed = frame.iloc[row[k]].copy()
    off, entries = csr_take(t["alloc_offsets"], k)
    masks = t["alloc_gpu_mask"][entries]
    killed["submit_time"] = submit[k]
    killed["start_time"] = pd.array(t["start"][k], dtype="Int64")
    killed["end_time"] = pd.array(t["end"][k], dtype="Int64")
    killed["wait_time"] = pd.array(t["start"][k] - submit[k], dtype="Int64")
    killed["run_time"] = pd.array(t["elapsed"][k], dtype="Int64")
    killed["state"] = np.where(t["preempted"][k], "PREEMPTED", "NODE_FAIL") \
        if "preempted" in t else np.full(len(k), "NODE_FAIL", dtype=object)
    if resized is not None:
        killed["state"] = np.where(resized[k], "RESIZING", killed["state"]).astype(object)
    killed["nodes"] = compress_rows(names, off, t["alloc_nodes"][entries])
    killed["gpu_ids"] = gpu_id_rows(names, off, t["alloc_nodes"][entries], masks)
    killed["attempt"] = t["attempt"][k]
    _widths(killed, np.diff(off))       # a record holds the nodes it has (sacct NNodes)
    if t.get("limit") is not None:      # --time-min: the limit each attempt ran with
        killed["time_limit"] = t["limit"][k]
    if t.get("pull") is not None:
        killed["pull_time"] = pd.array(t["pull"][k], dtype="Int64")
    if t.get("configure") is not None:
        killed["configure_time"] = pd.array(t["configure"][k], dtype="Int64")
    if "reason" in killed.columns:      # an attempt that ran has no pending reason
        killed["reason"] = ""
    if "partition" in killed.columns:
        part_names = np.array([p.name for p in result.cluster.partitions] + [""], dtype=object)
        killed["partition"] = part_names[t["partition"][k]]
    position = np.concatenate([np.arange(n), row[k]])
    out = pd.concat([frame, killed], ignore_index=True)
    # shapes of one attempt (elastic jobs) in time order
    order = np.lexsort((out["start_time"].fillna(-1).to_numpy(dtype=np.int64),
                        out["attempt"].to_numpy(), position))
    return out.iloc[order].reset_index(drop=True)


def _shape_times(t: dict, submit: np.ndarray, frame):
    """Records of elastic jobs (:mod:`fastsched.sim.elastic`): each shape takes its
    attempt's submit time, and a job's last record starts at its last shape's start."""
    first = np.ones(len(t["row"]), dtype=bool)
    first[1:] = (t["row"][1:] != t["row"][:-1]) | (t["attempt"][1:] != t["attempt"][:-1])
    submit = submit[np.flatnonzero(first)][np.cumsum(first) - 1]
    last = _last_rows(t)
    # a shrunk last shape, when it is the job's record (not a killed attempt whose
    # requeued one never started)
    shrunk = ~first[last] & ~(t["killed"][last] & ~t["node_fail"][last])
    if shrunk.any():
        rows = t["row"][last][shrunk]
        start = frame["start_time"].to_numpy(dtype=object).copy()
        start[rows] = t["start"][last][shrunk]
        frame["start_time"] = np.asarray(start)
        frame["start_time"] = frame["start_time"].astype("Int64")
        frame["run_time"] = frame["end_time"] - frame["start_time"]
        frame = frame.copy()
        width = frame["num_nodes"].to_numpy().copy()
        width[rows] = np.diff(t["alloc_offsets"])[last][shrunk]
        _widths(frame, width)
    return submit, frame


def _started_widths(t: dict, last: np.ndarray, frame) -> None:
    """Each job's record with the nodes its last attempt (row ``last`` of ``t``, the
    job's own record) started on (a job of a node range may start on fewer than it
    asks for)."""
    started = t["start"][last] >= 0
    width = frame["num_nodes"].to_numpy().copy()
    counts = np.diff(t["alloc_offsets"])[last]
    rows = t["row"][last][started]
    if (width[rows] != counts[started]).any():
        width[rows] = counts[started]
        _widths(frame, width)


def _widths(frame, nodes) -> None:
    """Set the node counts of ``frame``'s records (and their CPUs and GPUs, per node as
    the job asked) to ``nodes``."""
    per_cpu = frame["procs"].to_numpy() // np.maximum(frame["num_nodes"].to_numpy(), 1)
    per_gpu = frame["gpus"].to_numpy() // np.maximum(frame["num_nodes"].to_numpy(), 1)
    nodes = np.asarray(nodes, dtype=np.int64)
    frame["num_nodes"] = nodes.astype(frame["num_nodes"].dtype)
    frame["procs"] = nodes * per_cpu
    frame["gpus"] = nodes * per_gpu


def _last_rows(table: dict) -> np.ndarray:
    """The index of each started job's last attempt in ``table``."""
    row = table["row"]
    last = np.ones(len(row), dtype=bool)
    last[:-1] = row[1:] != row[:-1]
    return np.flatnonzero(last)


def gpu_id_rows(names, offsets, nodes, masks) -> np.ndarray:
    """:func:`format_gpu_ids` of every job of a CSR allocation (``masks``: uint64 per
    entry, or None: no GPUs), with array operations: an object array of str."""
    from ..io.hostlist import compress_numbers, join_rows
    rows = len(offsets) - 1
    if masks is None or not masks.any():
        return np.full(rows, "", dtype=object)
    row = np.repeat(np.arange(rows), np.diff(offsets))
    held = masks != 0
    row, nodes, masks = row[held], nodes[held], masks[held]
    kinds, kind = np.unique(masks, return_inverse=True)       # few distinct GPU sets
    indices = np.array([compress_numbers(_indices(m)) for m in kinds.tolist()], dtype=object)
    lead = np.ones(len(row), dtype=bool)
    lead[1:] = row[1:] != row[:-1]
    tokens = (np.where(lead, "", ",").astype(object) + np.asarray(names, dtype=object)[nodes]
              + "(IDX:" + indices[kind] + ")")
    return join_rows(tokens, row, rows)


def format_gpu_ids(names, nodes, gpus) -> str:
    """GPU indices per node, as ``scontrol show job -d`` shows them: ``gpu001(IDX:0-3)``.

    ``gpus`` per node: a list of indices, or a uint64 bitmask (bit k = GPU k).
    Nodes without GPUs are left out.
    """
    from ..io.hostlist import compress_numbers
    return ",".join(f"{names[n]}(IDX:{compress_numbers(_indices(g))})"
                    for n, g in zip(nodes, gpus) if _indices(g))


def _indices(gpus) -> list[int]:
    if isinstance(gpus, (list, tuple)):
        return list(gpus)
    m = int(gpus)
    return [k for k in range(m.bit_length()) if (m >> k) & 1]


def summarize(cluster: Cluster, workload: JobTable, schedule: Schedule, *,
              exclusive: bool = False) -> dict:
    """Metrics of a finished schedule, over the jobs that started (``never_started``
    counts the others: held by a limit or a dependency forever, or rejected).

    Utilisations are shares of [first submit, last end): ``utilisation``, of
    node-time with at least one job on the node (jobs sharing a node count it
    once); ``cpu_utilisation`` / ``gpu_utilisation``, of CPU-/GPU-time
    allocated. JCT (job completion time) = end - submit. ``exclusive``: no two
    jobs ever share a node (the pool engine), which makes node time a plain sum.
    """
    started = schedule.start_time >= 0
    if not started.all():
        if np.diff(schedule.alloc_offsets)[~started].any():
            raise ValueError("a job that never started holds nodes")
        out = summarize(cluster, workload.take(started), schedule.rows(started),
                        exclusive=exclusive)
        out.update(jobs=len(workload), never_started=int((~started).sum()))
        return out
    n = len(workload)
    if n == 0:
        return {"jobs": 0, "never_started": 0}
    wait = (schedule.start_time - workload.submit_time).astype(np.float64)
    run = (schedule.end_time - schedule.start_time).astype(np.float64)
    jct = wait + run
    bsld = np.maximum(jct / np.maximum(run, BSLD_TAU), 1.0)
    first, last = int(workload.submit_time.min()), int(schedule.end_time.max())
    makespan = last - first
    nodes_per_job = workload.num_nodes.astype(np.float64)
    cpu_seconds = float(np.dot(nodes_per_job * workload.cpus_per_node, run))
    gpu_seconds = float(np.dot(nodes_per_job * workload.gpus_per_node, run))
    p95_jct, p99_jct = np.percentile(jct, [95, 99])
    return {
        "jobs": n,
        "never_started": 0,
        "timeouts": int((workload.runtime > workload.time_limit).sum()),
        "avg_wait": float(wait.mean()),
        "median_wait": float(np.median(wait)),
        "max_wait": int(wait.max()),
        "avg_jct": float(jct.mean()),
        "median_jct": float(np.median(jct)),
        "p95_jct": float(p95_jct),
        "p99_jct": float(p99_jct),
        "avg_bounded_slowdown": float(bsld.mean()),
        "utilisation": _share(busy_node_seconds(schedule, exclusive), cluster.num_nodes, makespan),
        "cpu_utilisation": _share(cpu_seconds, float(cluster.cpus.sum()), makespan),
        "gpu_utilisation": _share(gpu_seconds, float(cluster.gpus.sum()), makespan),
        "gpu_fragmentation": gpu_fragmentation(cluster, workload, schedule),
        "makespan": makespan,
        "first_submit": first,
        "last_end": last,
    }


def _share(used: float, capacity: float, makespan: int) -> float | None:
    """``used`` resource-seconds over ``capacity`` x ``makespan`` (None: no such resource)."""
    if capacity <= 0:
        return None
    return used / (capacity * makespan) if makespan > 0 else 0.0
