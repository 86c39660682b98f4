"""Advance reservation files: one reservation per line, in the key=value words of
``scontrol create reservation`` (the leading ``scontrol create reservation`` is
optional, keys are case-insensitive), e.g.::

    ReservationName=maint StartTime=86400 Duration=4:00:00 Nodes=gpu[001-016] Flags=MAINT

``StartTime``/``EndTime``: seconds of simulated time, or a date
(``YYYY-MM-DD[THH:MM[:SS]]``, UTC: as seconds since the epoch, for workloads with
epoch times such as sacct dumps); ``Duration``: a Slurm time (minutes, ``HH:MM:SS``,
``D-HH:MM:SS``...); ``Nodes``: a hostlist (or ``ALL``), or ``NodeCnt=N`` (the first N
nodes of ``PartitionName``, else of the cluster); ``Users``/``Accounts``: who may use
it (:mod:`fastsched.model.resvjobs`); ``Flags``: those
:data:`fastsched.model.reservations.FLAGS` lists. A key that
would change what the reservation holds and is not modelled (``CoreCnt``, ``TRES``,
``Licenses``, ``BurstBuffer``...) is refused by name; lines starting with ``#`` and
blank lines are skipped.
"""
from __future__ import annotations

import shlex
from datetime import datetime, timezone

import numpy as np

from ..model.cluster import Cluster
from ..model.errors import InputError, UnsupportedError
from ..model.reservations import Reservation, Reservations
from ..model.resvjobs import JobReservations
from .hostlist import expand
from .textfile import read_text
from .times import parse_time

#: keys taken (lower case), and those that only describe the reservation
_KEYS = ("reservationname", "reservation", "starttime", "endtime", "duration", "nodes",
         "nodecnt", "partitionname", "partition", "users", "accounts", "flags")
_INFORMATIVE = ("groups", "qos", "comment", "maxstartdelay", "purgecomptime")


def read_reservations(path, cluster: Cluster) -> Reservations:
    """The reservations of the file at ``path`` on ``cluster``'s nodes; a malformed line
    is an InputError naming the file, line and field."""
    fname = str(path)
    items = []
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        try:
            items.append(parse_reservation(text, cluster))
        except InputError as e:
            raise InputError(e.reason, file=fname, line=number, field=e.field) from None
        except UnsupportedError as e:
            raise UnsupportedError(f"{fname}:{number}: {e}") from None
    try:
        return Reservations(tuple(items), cluster.num_nodes)
    except InputError as e:
        raise InputError(e.reason, file=fname, field=e.field) from None
    except UnsupportedError as e:
        raise UnsupportedError(f"{fname}: {e}") from None


def parse_reservation(text: str, cluster: Cluster) -> Reservation:
    """One reservation from its key=value words (see the module)."""
    words = shlex.split(text)
    if [w.lower() for w in words[:3]] == ["scontrol", "create", "reservation"]:
        words = words[3:]
    values = {}
    for word in words:
        key, eq, value = word.partition("=")
        k = key.lower()
        if not eq:
            raise InputError(f"{word!r} is not key=value", field=key)
        if k in _INFORMATIVE:
            continue
        if k not in _KEYS:
            raise UnsupportedError(f"reservation key {key!r} is not modelled (modelled: "
                                   "ReservationName, StartTime, EndTime, Duration, Nodes, "
                                   "NodeCnt, PartitionName, Users, Accounts, Flags)")
        values[{"reservation": "reservationname", "partition": "partitionname"}.get(k, k)] = value
    name = values.get("reservationname", "")
    if "starttime" not in values:
        raise InputError(f"reservation {name!r} has no StartTime", field="StartTime")
    start = _when(values["starttime"], "StartTime")
    if "endtime" in values:
        end = _when(values["endtime"], "EndTime")
    elif "duration" in values:
        seconds = _duration(values["duration"])
        end = start + seconds
    else:
        raise InputError(f"reservation {name!r} needs EndTime or Duration", field="Duration")
    return Reservation(name, start, end, _nodes(values, cluster),
                       tuple(_list(values.get("users"))), tuple(_list(values.get("accounts"))),
                       tuple(f.upper() for f in _list(values.get("flags"))))


def _when(text: str, key: str) -> int:
    if text.isdigit():
        return int(text)
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(f"{text!r} is neither seconds nor a date YYYY-MM-DD[THH:MM[:SS]]",
                         field=key) from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return int(t.timestamp())


def _duration(text: str) -> int:
    try:
        seconds = parse_time(text)
    except InputError as e:
        raise InputError(e.reason, field="Duration") from None
    if seconds is None or seconds <= 0:
        raise InputError(f"Duration {text!r} must be a positive time", field="Duration")
    return seconds


def _nodes(values: dict, cluster: Cluster) -> tuple:
    index = {n: i for i, n in enumerate(cluster.node_names)}
    part = values.get("partitionname")
    pool = list(range(cluster.num_nodes))
    if part is not None:
        names = [p.name for p in cluster.partitions]
        if part not in names:
            raise InputError(f"unknown partition {part!r}", field="PartitionName")
        pool = sorted(int(x) for x in cluster.partitions[names.index(part)].nodes)
    if "nodes" in values:
        if values["nodes"].upper() == "ALL":
            return tuple(pool)
        try:
            hosts = expand(values["nodes"])
        except InputError as e:
            raise InputError(e.reason, field="Nodes") from None
        missing = [h for h in hosts if h not in index]
        if missing:
            raise InputError(f"node {missing[0]!r} is not in the cluster", field="Nodes")
        return tuple(sorted({index[h] for h in hosts}))
    if "nodecnt" in values:
        count = values["nodecnt"]
        if not count.isdigit() or not 0 < int(count) <= len(pool):
            raise InputError(f"NodeCnt {count!r} must be 1..{len(pool)}", field="NodeCnt")
        return tuple(pool[:int(count)])
    raise InputError("a reservation needs Nodes or NodeCnt", field="Nodes")


def _list(text: str | None) -> list[str]:
    return [] if not text else [w for w in text.split(",") if w]


def recorded_reservations(path, cluster: Cluster, names, job_ids) -> JobReservations:
    """The reservations of the file at ``path`` with the runs of a recorded schedule (a
    sacct dump's rows: ``names``, each run's Reservation, "" none) as members of the
    one they name, for the checker: Slurm let them in, so no access rule is applied.
    A name the file lacks is an InputError naming the job (field Reservation)."""
    resv = read_reservations(path, cluster)
    index = {r.name: k for k, r in enumerate(resv.items)}
    distinct, inverse = np.unique(np.asarray(names, dtype=object).astype(str),
                                  return_inverse=True)
    of = np.array([index.get(n, -1 if not n else -2) for n in distinct.tolist()], np.int32)
    member = of[inverse.reshape(-1)] if len(distinct) else np.zeros(0, np.int32)
    if (member == -2).any():
        i = int(np.flatnonzero(member == -2)[0])
        raise InputError(f"job {int(job_ids[i])} ran in reservation "
                         f"{str(distinct[inverse.reshape(-1)[i]])!r}, which the reservation "
                         "file does not define", file=str(path), field="Reservation")
    return JobReservations(resv.items, resv.num_nodes, member=member)


def run_reservations(path, cluster: Cluster, workload=None) -> Reservations | None:
    """The reservations of the file at ``path`` (None: no file) with the jobs of
    ``workload`` (a :class:`fastsched.io.workload.Workload`, or None) that name one
    (its ``reservation`` column) running in it, and those a MAGNETIC one draws: what ``simulate --resv-file`` and
    ``check --resv-file`` take. A workload naming a reservation without a file is an
    InputError naming the job."""
    names = None if workload is None else workload.reservation
    named = names is not None and (names != "").any()
    if path is None:
        if named:
            i = int(np.flatnonzero(names != "")[0])
            raise InputError(f"job {int(workload.jobs.job_id[i])} runs in reservation "
                             f"{names[i]!r}: give the reservations (--resv-file)",
                             field="reservation")
        return None
    resv = read_reservations(path, cluster)
    magnetic = any("MAGNETIC" in r.flags for r in resv.items)
    return workload.reservations(resv) if named or (magnetic and workload is not None) \
        else resv
