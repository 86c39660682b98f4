"""Schedules given as records (a jobs CSV read into a DataFrame): parse and verify them."""
from __future__ import annotations

import numpy as np

from ..model.cluster import Cluster
from ..model.errors import InputError
from ..model.images import with_pull
from ..model.jobs import JobTable
from ..model.schedule import Schedule
from .report import VerifyReport


def schedule_from_frame(cluster: Cluster, df) -> Schedule:
    """A :class:`Schedule` from a DataFrame with columns job_id, start_time, end_time
    and nodes (a Slurm hostlist of names in ``cluster.node_names``; "" or missing
    for none). Missing start/end times (NaN, NA or "") become -1. An optional ``planning``
    column (one value: "counts", "nodes" or "slurm") is :attr:`Schedule.planning`."""
    from ..io.hostlist import expand

    for col in ("job_id", "start_time", "end_time", "nodes"):
        if col not in df.columns:
            raise InputError(f"schedule frame needs column {col!r}", field=col)
    index = {nm: k for k, nm in enumerate(cluster.node_names)}

    def times(col):
        v = df[col].to_numpy()
        if v.dtype == object:             # a CSV read as text: "" = never started
            v = np.where(v == "", np.nan, v)
        try:
            f = np.asarray(v, dtype=np.float64)
        except (TypeError, ValueError):
            raise InputError(f"column {col!r} must be numeric", field=col) from None
        f = np.where(np.isnan(f), -1, f)
        if (f != np.round(f)).any():
            row = int(np.flatnonzero(f != np.round(f))[0])
            raise InputError(f"row {row}: {v[row]!r} is not a whole number of seconds", field=col)
        return f.astype(np.int64)

    lists = []
    for row, hl in enumerate(df["nodes"].tolist()):
        if hl is None or (isinstance(hl, float) and np.isnan(hl)) or hl == "":
            lists.append([])
            continue
        try:
            idx = [index[nm] for nm in expand(str(hl))]
        except KeyError as exc:
            raise InputError(f"row {row}: unknown node {exc.args[0]!r} in {hl!r}",
                             field="nodes") from None
        lists.append(idx)
    counts = np.array([len(x) for x in lists], dtype=np.int64)
    offsets = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    flat = np.fromiter((k for x in lists for k in x), dtype=np.int64, count=int(offsets[-1]))
    return Schedule(job_id=df["job_id"].to_numpy().astype(np.int64),
                    start_time=times("start_time"), end_time=times("end_time"),
                    alloc_offsets=offsets, alloc_nodes=flat, planning=_planning(df))


def _planning(df) -> str | None:
    if "planning" not in df.columns or len(df) == 0:
        return None
    values = set(df["planning"].astype(str)) - {"", "nan"}
    if not values:
        return None
    if len(values) != 1 or not values <= {"counts", "nodes", "slurm"}:
        raise InputError(f"column 'planning' must hold one value, 'counts', 'nodes' or "
                         f"'slurm'; got "
                         f"{sorted(values)[:3]}", field="planning")
    return values.pop()


def check_frame(cluster: Cluster, jobs: JobTable, df, *, source: str = "schedule",
                policy: str | None = None, reserve_depth: int = 1,
                reservations: str | None = None, events=None, lifecycle=None,
                power=None, **constraints) -> VerifyReport:
    """Verify a schedule given as records (e.g. a jobs CSV) against the jobs it schedules.

    ``constraints`` (``dependencies``, ``limits``, ``partitions``, ``placement``)
    and ``reservations`` go to :func:`fastsched.verify.verify`; an optional
    ``priority`` column (the priority each job started with) is the queue order
    of the nodes model.

    Rows are matched to jobs by ``job_id`` (any order); a job missing from the
    records, or a record of an unknown or repeated job, is an InputError naming
    ``source`` and the CSV line (header = line 1).

    Records with an ``attempt`` column (a run with node failures: a row per
    attempt) are checked attempt by attempt under ``events`` (the run's
    :class:`fastsched.model.events.NodeEvents`) and ``lifecycle`` (its
    :class:`fastsched.model.lifecycle.Lifecycle`; None: no checkpoints, Slurm's
    requeue delay): :mod:`fastsched.verify.lifecycle`, without policy or constraint
    checks (asking for them is an UnsupportedError); with ``time_min`` each record's
    ``time_limit`` is the limit its attempt ran with.

    A ``pull_time`` column (a run with container images) is the seconds each record
    pulled its image first, inside its run: its end is then start + min(pull +
    runtime, limit).

    ``power`` (:class:`fastsched.model.power.PowerSaving`: a run with power saving) needs
    a ``configure_time`` column, the seconds each job waited CONFIGURING for its nodes'
    boots before its start: the power checks of :mod:`fastsched.verify.power`.

    ``time_min`` (per job, sbatch ``--time-min``; in ``constraints``) reads the
    ``time_limit`` column as the limit each job ran with (``jobs`` has those asked
    for): the ``time_limit`` check of :mod:`fastsched.verify.timemin`.
    """
    if "attempt" in df.columns:
        from ..model.errors import UnsupportedError
        from ..model.lifecycle import Lifecycle
        preemption = constraints.pop("preemption", None)
        choices = constraints.pop("partitions", None) if preemption is not None else None
        time_min = constraints.pop("time_min", None)
        resv = constraints.pop("advance_reservations", None)
        if policy is not None or any(v is not None for v in constraints.values()):
            raise UnsupportedError("records with attempts (a run with node failures) are "
                                   "checked without policy or constraint checks")
        return check_attempt_frame(cluster, jobs, df, source=source, events=events,
                                   lifecycle=lifecycle or Lifecycle.of(len(jobs)),
                                   preemption=preemption, partitions=choices,
                                   time_min=time_min, power=power,
                                   advance_reservations=resv)
    if "job_id" not in df.columns:
        raise InputError("needs a 'job_id' column", file=source, field="job_id")
    try:
        raw = np.asarray(df["job_id"].to_numpy(), dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError("job_id values must be integers", file=source, field="job_id") from None
    if (raw != np.round(raw)).any():
        raise InputError("job_id values must be integers", file=source, field="job_id")
    ids = raw.astype(np.int64)
    position = {int(j): k for k, j in enumerate(jobs.job_id)}
    seen = np.full(len(jobs), -1, dtype=np.int64)
    for row, j in enumerate(ids):
        k = position.get(int(j))
        if k is None:
            raise InputError(f"job {j} is not in the trace", file=source, line=row + 2,
                             field="job_id")
        if seen[k] >= 0:
            raise InputError(f"job {j} appears twice (also line {seen[k] + 2})", file=source,
                             line=row + 2, field="job_id")
        seen[k] = row
    if (seen < 0).any():
        missing = jobs.job_id[seen < 0]
        raise InputError(f"{len(missing)} job(s) of the trace have no record, e.g. job "
                         f"{missing[0]}", file=source, field="job_id")
    ordered = df.iloc[seen].reset_index(drop=True)
    try:
        schedule = schedule_from_frame(cluster, ordered)
    except InputError as e:
        raise InputError(e.reason, file=source, field=e.field) from None
    jobs = with_pull(jobs, _pull(ordered, source))
    if constraints.get("time_min") is not None:     # the limits the records ran with
        from ..model.timemin import with_limits
        ran = _seconds_column(ordered, "time_limit", source)
        if ran is None:
            raise InputError("--time-min checks need a 'time_limit' column (the limit each "
                             "job ran with)", file=source, field="time_limit")
        constraints["asked_limit"] = jobs.time_limit
        jobs = with_limits(jobs, ran)
    from . import verify
    configure = None
    if power is not None:
        configure = _seconds_column(ordered, "configure_time", source)
        if configure is None:
            raise InputError("power checks need a 'configure_time' column (records of "
                             "simulate --power)", file=source, field="configure_time")
    return verify(cluster, jobs, schedule, policy=policy, reserve_depth=reserve_depth,
                  reservations=reservations, priority=_priority(ordered), power=power,
                  configure=configure, **constraints)


def _pull(df, source: str):
    """The ``pull_time`` column as int64 seconds (empty: 0), or None without one."""
    return _seconds_column(df, "pull_time", source)


def _seconds_column(df, name: str, source: str):
    """Column ``name`` as int64 seconds (empty: 0), or None without one."""
    if name not in df.columns:
        return None
    values = df[name].replace("", 0)
    try:
        raw = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raw = np.array([np.nan])
    if not (np.isfinite(raw) & (raw >= 0) & (raw == np.round(raw))).all():
        raise InputError(f"column '{name}' must hold whole seconds >= 0", file=source,
                         field=name)
    return raw.astype(np.int64)


def _priority(df):
    """The ``priority`` column as floats (NaN: none), or None without one."""
    if "priority" not in df.columns:
        return None
    values = df["priority"].replace("", np.nan)
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError("column 'priority' must be numeric", field="priority") from None


def check_attempt_frame(cluster: Cluster, jobs: JobTable, df, *, source: str, events,
                        lifecycle, preemption=None, partitions=None,
                        time_min=None, power=None,
                        advance_reservations=None) -> VerifyReport:
    """:func:`verify_attempts` of records with an ``attempt`` column (a row per
    attempt; ``state`` NODE_FAIL or PREEMPTED marks the killed ones, RESIZING the shapes
    of an elastic job a shrink ended; ``preemption``: the run's rules, or None, with the
    jobs' partition choices ``partitions``; a record's ``partition`` column names the
    partition it ran in, else its job's; ``time_min``: per job, sbatch ``--time-min``,
    the ``time_limit`` column then holding each attempt's limit, checked against it and
    ``jobs.time_limit``; ``power``: the run's power saving, with the ``configure_time``
    column; ``advance_reservations``: the run's, each attempt held to them); rows are matched to ``jobs`` by ``job_id``. A
    record of an unknown job, a job with no record, or an unknown partition name is an
    InputError naming ``source``."""
    from .lifecycle import Attempts, take_rows, verify_attempts
    position = {int(j): k for k, j in enumerate(jobs.job_id)}
    ids = np.asarray(df["job_id"], dtype=np.int64)
    row = np.array([position.get(int(j), -1) for j in ids], dtype=np.int64)
    if (row < 0).any():
        k = int(np.flatnonzero(row < 0)[0])
        raise InputError(f"job {ids[k]} is not in the trace", file=source, line=k + 2,
                         field="job_id")
    if len(np.setdiff1d(np.arange(len(jobs)), row)):
        missing = jobs.job_id[np.setdiff1d(np.arange(len(jobs)), row)]
        raise InputError(f"{len(missing)} job(s) of the trace have no record, e.g. job "
                         f"{missing[0]}", file=source, field="job_id")
    try:
        attempt = np.asarray(df["attempt"].replace("", 0), dtype=np.int64)
        schedule = schedule_from_frame(cluster, df)
    except (TypeError, ValueError):
        raise InputError("column 'attempt' must hold whole numbers", file=source,
                         field="attempt") from None
    except InputError as e:
        raise InputError(e.reason, file=source, field=e.field) from None
    state = df["state"].astype(str).to_numpy() if "state" in df.columns else \
        np.full(len(df), "", dtype=object)
    preempted = state == "PREEMPTED"
    killed = (state == "NODE_FAIL") | preempted
    resized = state == "RESIZING"         # a shape of an elastic job (verify.elastic)
    ran = schedule.start_time >= 0
    keep = np.flatnonzero(ran)
    offsets, nodes = take_rows(schedule.alloc_offsets, schedule.alloc_nodes, keep)
    pull = _pull(df, source)
    configure = _seconds_column(df, "configure_time", source)
    if power is not None and configure is None:
        raise InputError("power checks need a 'configure_time' column (records of "
                         "simulate --power)", file=source, field="configure_time")
    limit = None
    if time_min is not None:
        limit = _seconds_column(df, "time_limit", source)
        if limit is None:
            raise InputError("--time-min checks need a 'time_limit' column (the limit each "
                             "attempt ran with)", file=source, field="time_limit")
        limit = limit[keep]
    return verify_attempts(cluster, jobs, Attempts(row[keep], attempt[keep],
                                                   schedule.start_time[keep],
                                                   schedule.end_time[keep], killed[keep],
                                                   offsets, nodes,
                                                   None if pull is None else pull[keep],
                                                   resized=resized[keep] if resized.any()
                                                   else None,
                                                   preempted=preempted[keep],
                                                   partition=_ran_in(cluster, jobs, df, row,
                                                                     ran, source)[keep],
                                                   limit=limit,
                                                   configure=None if configure is None
                                                   else configure[keep]),
                           events, lifecycle, preemption=preemption, partitions=partitions,
                           time_min=time_min, power=power,
                           advance_reservations=advance_reservations)


def _ran_in(cluster, jobs, df, row, ran, source) -> np.ndarray:
    """The partition (index) each record ran in: its ``partition`` column, else its
    job's (-1: a record that never ran names none)."""
    if "partition" not in df.columns:
        return np.asarray(jobs.partition, dtype=np.int64)[row]
    index = {p.name: k for k, p in enumerate(cluster.partitions)}
    names = df["partition"].fillna("").astype(str).tolist()
    bad = [k for k, name in enumerate(names) if name not in index and (ran[k] or name)]
    if bad:
        raise InputError(f"unknown partition {names[bad[0]]!r}", file=source,
                         line=bad[0] + 2, field="partition")
    return np.array([index.get(name, -1) for name in names], dtype=np.int64)
