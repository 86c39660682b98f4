"""A simulation's jobs as ``sacct --parsable2`` prints them: a ``|``-separated header
naming the fields, then one line per job, values in Slurm's formats.

:func:`write_sacct` takes the result of :func:`fastsched.simulate` (any object with
``cluster``, ``workload``, ``schedule`` and ``states()``), and optionally the
:class:`~fastsched.io.workload.Workload` it came from (user, account, QOS and job
names; without it User is the job's user number and Account/QOS are empty).
:func:`fastsched.read_sacct` reads the file back on the same cluster.

Value formats follow sacct (``src/sacct/print.c`` and ``src/common/slurm_time.c``,
read for their output forms):

* times ``2024-03-01T12:00:00``, local time of ``tz`` (sacct prints local time),
  ``Unknown`` for a start or end the job never had;
* Elapsed and Timelimit ``[D-]HH:MM:SS`` (``secs2time_str``), Timelimit
  ``UNLIMITED`` for no limit; ElapsedRaw seconds, TimelimitRaw minutes;
* TRES lists ``billing=8,cpu=8,gres/gpu=2,mem=32G,node=2`` (names sorted, memory in
  M, or G/T when whole); NodeList a hostlist, ``None assigned`` for a job that never
  ran; ExitCode ``0:0``;
* JobID of an array task ``123_4`` (JobIDRaw the task's own id);
* Reservation: the advance reservation the job ran in (``--reservation``, or the
  MAGNETIC one that drew it; empty: none), read back as the workload's
  ``reservation`` column.

State is COMPLETED, TIMEOUT (killed at its limit) or PENDING (never started by the
end of the run); a job refused by a submit limit (``REJECTED`` in
``result.jobs``) never reaches Slurm's accounting, and is written as CANCELLED with
no start.
"""
from __future__ import annotations

import numpy as np

from ..model.errors import InputError
from ..model.jobs import UNLIMITED
from .hostlist import schedule_hostlists
from .times import format_time

__all__ = ["SACCT_FIELDS", "DEFAULT_SACCT_FIELDS", "write_sacct", "sacct_lines",
           "sacct_columns", "parse_sacct_fields"]

#: what sacct prints for a job's NodeList before it has nodes
NO_NODES = "None assigned"

#: the fields --sacct-format takes by default: every one :func:`fastsched.read_sacct` reads
DEFAULT_SACCT_FIELDS = ("JobID", "JobIDRaw", "JobName", "User", "Account", "Partition",
                        "QOS", "Submit", "Eligible", "Start", "End", "Elapsed", "Timelimit",
                        "ReqTRES", "AllocTRES", "NNodes", "NodeList", "State", "ExitCode",
                        "Reservation")


class _Jobs:
    """The per-job arrays the fields are made of (computed when a field asks)."""

    def __init__(self, result, workload, tz: str, origin: int):
        self.result = result
        self.cluster, self.w, self.s = result.cluster, result.workload, result.schedule
        self.state = np.asarray(result.states(), dtype=object)
        self.state[self.state == "REJECTED"] = "CANCELLED"
        ran_in = getattr(result, "partition", None)       # node engine: where each ran
        self.partition_index = self.w.partition if ran_in is None else \
            np.where(ran_in >= 0, ran_in, self.w.partition)   # pending: the one asked for
        self.meta = workload
        self.tz, self.origin = tz, int(origin)
        self.started = self.s.start_time >= 0
        self.n = len(self.w)
        self.tres = None                # the TRES texts, shared by ReqTRES and AllocTRES

    def times(self, seconds: np.ndarray, known: np.ndarray) -> np.ndarray:
        return format_epoch(np.where(known, seconds + self.origin, 0), known, self.tz)

    def elapsed(self) -> np.ndarray:
        return np.where(self.started, self.s.end_time - self.s.start_time, 0)

    def text(self, names, index) -> np.ndarray:
        table = np.array(list(names) + [""], dtype=object)
        index = np.asarray(index, dtype=np.int64)
        return table[np.where((index >= 0) & (index < len(names)), index, len(names))]


def _job_id(j: _Jobs) -> np.ndarray:
    ids = j.s.job_id.astype(str).astype(object)
    meta = j.meta
    if meta is not None and getattr(meta, "array_task", None) is not None:
        task = np.asarray(meta.array_task)
        tasks = task >= 0
        if tasks.any():
            ids[tasks] = (np.asarray(meta.array_job)[tasks].astype(str).astype(object) + "_"
                          + task[tasks].astype(str).astype(object))
    return ids


def _user(j: _Jobs) -> np.ndarray:
    if j.meta is not None:
        return j.text(j.meta.user_names, j.w.user)
    return np.where(j.w.user >= 0, j.w.user.astype(str), "").astype(object)


def _account(j: _Jobs) -> np.ndarray:
    if j.meta is None:
        return np.full(j.n, "", dtype=object)
    return j.text(j.meta.account_names, j.meta.account)


def _qos(j: _Jobs) -> np.ndarray:
    if j.meta is None:
        return np.full(j.n, "", dtype=object)
    return j.text(j.meta.qos_names, j.meta.qos)


def _job_name(j: _Jobs) -> np.ndarray:
    name = None if j.meta is None else getattr(j.meta, "name", None)
    if name is None:
        return np.full(j.n, "", dtype=object)
    return np.asarray(name, dtype=object).astype(str).astype(object)


def _partition(j: _Jobs) -> np.ndarray:
    return j.text([p.name for p in j.cluster.partitions], j.partition_index)


def _limit(j: _Jobs) -> np.ndarray:
    values, inverse = np.unique(j.w.time_limit, return_inverse=True)
    texts = np.array([format_time(None if v >= UNLIMITED else int(v)) for v in values.tolist()],
                     dtype=object)
    return texts[inverse.reshape(-1)]


def _limit_raw(j: _Jobs) -> np.ndarray:
    minutes = (j.w.time_limit + 59) // 60
    return np.where(j.w.time_limit >= UNLIMITED, "UNLIMITED", minutes.astype(str)).astype(object)


def _durations(seconds: np.ndarray) -> np.ndarray:
    values, inverse = np.unique(seconds, return_inverse=True)
    return np.array([format_time(int(v)) for v in values.tolist()],
                    dtype=object)[inverse.reshape(-1)]


def _tres(j: _Jobs, allocated: bool) -> np.ndarray:
    """TRES totals per job (``billing`` = CPUs, Slurm's default billing weight), one
    text per distinct request; AllocTRES is empty for a job that never started."""
    if j.tres is None:
        w = j.w
        nodes = w.num_nodes.astype(np.int64)
        totals = [nodes, nodes * w.cpus_per_node, nodes * w.gpus_per_node,
                  nodes * w.mem_per_node]
        kind, first = _distinct(totals)
        texts = np.array([tres_text(*(int(t[k]) for t in totals)) for k in first.tolist()]
                         or [""], dtype=object)
        j.tres = texts[kind]
    if not allocated:
        return j.tres
    out = j.tres.copy()
    out[~j.started] = ""
    return out


def _distinct(columns) -> tuple[np.ndarray, np.ndarray]:
    """(kind per entry, first entry of each kind): entries equal in every column share
    a kind (hashing, linear in the entries)."""
    import pandas as pd
    key = np.zeros(len(columns[0]), dtype=np.int64)
    for col in columns:
        codes, uniques = pd.factorize(col)
        key = pd.factorize(key * len(uniques) + codes)[0]
    first = np.zeros(int(key.max()) + 1 if len(key) else 0, dtype=np.int64)
    first[key[::-1]] = np.arange(len(key) - 1, -1, -1)
    return key, first


def tres_text(nodes: int, cpus: int, gpus: int, mem_mb: int) -> str:
    """``billing=8,cpu=8,gres/gpu=2,mem=32G,node=2`` (items sorted by name; no memory
    item for 0 MB, no GPU item for 0 GPUs)."""
    items = [f"billing={cpus}", f"cpu={cpus}"]
    if gpus:
        items.append(f"gres/gpu={gpus}")
    if mem_mb:
        items.append(f"mem={_mem(mem_mb)}")
    items.append(f"node={nodes}")
    return ",".join(items)


def _mem(mb: int) -> str:
    for unit, size in (("T", 1024 ** 2), ("G", 1024)):
        if mb % size == 0:
            return f"{mb // size}{unit}"
    return f"{mb}M"


def _node_list(j: _Jobs) -> np.ndarray:
    rows = schedule_hostlists(j.cluster.node_names, j.s)
    rows[~j.started] = NO_NODES
    return rows


def _reservation(j: _Jobs) -> np.ndarray:
    """The result's (a run with member jobs), else the workload's ``reservation``
    column (a result of a run without them: nobody named one), else empty."""
    names = getattr(j.result, "reservation", None)
    if names is None and j.meta is not None:
        names = getattr(j.meta, "reservation", None)
    if names is None:
        return np.full(j.n, "", dtype=object)
    return np.asarray(names, dtype=object).astype(str).astype(object)


def _reason(j: _Jobs) -> np.ndarray:
    return np.where(j.started, "None", "").astype(object)


#: sacct field name -> its values per job (object array of str)
SACCT_FIELDS = {
    "JobID": _job_id,
    "JobIDRaw": lambda j: j.s.job_id.astype(str).astype(object),
    "JobName": _job_name,
    "User": _user,
    "Account": _account,
    "Partition": _partition,
    "QOS": _qos,
    "Submit": lambda j: j.times(j.w.submit_time, np.ones(j.n, bool)),
    "Eligible": lambda j: j.times(j.w.submit_time, np.ones(j.n, bool)),
    "Start": lambda j: j.times(j.s.start_time, j.started),
    "End": lambda j: j.times(j.s.end_time, j.started),
    "Elapsed": lambda j: _durations(j.elapsed()),
    "ElapsedRaw": lambda j: j.elapsed().astype(str).astype(object),
    "Timelimit": _limit,
    "TimelimitRaw": _limit_raw,
    "ReqTRES": lambda j: _tres(j, False),
    "AllocTRES": lambda j: _tres(j, True),
    "ReqCPUS": lambda j: (j.w.num_nodes.astype(np.int64) * j.w.cpus_per_node).astype(str)
    .astype(object),
    "AllocCPUS": lambda j: np.where(j.started, j.w.num_nodes.astype(np.int64)
                                    * j.w.cpus_per_node, 0).astype(str).astype(object),
    "ReqNodes": lambda j: j.w.num_nodes.astype(str).astype(object),
    "NNodes": lambda j: j.w.num_nodes.astype(str).astype(object),
    "NodeList": _node_list,
    "State": lambda j: j.state,
    "ExitCode": lambda j: np.full(j.n, "0:0", dtype=object),
    "Reservation": _reservation,
    "CPUTimeRAW": lambda j: (j.elapsed() * j.w.num_nodes.astype(np.int64)
                             * j.w.cpus_per_node).astype(str).astype(object),
}
_BY_LOWER = {k.lower(): k for k in SACCT_FIELDS}


def parse_sacct_fields(text) -> list[str]:
    """``JobID,User,Elapsed%12`` (sacct's ``--format``: any case, ``%N`` widths ignored,
    as ``--parsable2`` ignores them) -> field names as Slurm spells them; an unknown
    name is an InputError listing the known ones."""
    names = text.split(",") if isinstance(text, str) else list(text)
    out = []
    for raw in names:
        name = raw.strip().split("%")[0]
        if not name:
            continue
        if name.lower() not in _BY_LOWER:
            raise InputError(f"unknown sacct field {name!r}; known: "
                             f"{', '.join(SACCT_FIELDS)}", field="--sacct-format")
        out.append(_BY_LOWER[name.lower()])
    if not out:
        raise InputError("no sacct fields given", field="--sacct-format")
    return out


def sacct_columns(result, fields=DEFAULT_SACCT_FIELDS, *, workload=None, tz: str = "UTC",
                  origin: int = 0) -> dict[str, list[str]]:
    """Field name -> its text per job, in the order of ``fields``."""
    names = parse_sacct_fields(fields)
    jobs = _Jobs(result, workload, tz, origin)
    done: dict = {}
    for name in names:                 # Submit and Eligible are the same texts
        key = "Submit" if name == "Eligible" else name
        if key not in done:
            done[key] = SACCT_FIELDS[key](jobs).astype(str).tolist()
    return {name: done["Submit" if name == "Eligible" else name] for name in names}


def sacct_lines(result, fields=DEFAULT_SACCT_FIELDS, **options) -> list[str]:
    """The header and one ``|``-separated line per job (no newlines); values as they
    are (sacct prints a ``|`` inside a job name bare, too)."""
    columns = sacct_columns(result, fields, **options)
    return ["|".join(columns)] + list(map("|".join, zip(*columns.values())))


def write_sacct(result, path, fields=DEFAULT_SACCT_FIELDS, *, workload=None,
                tz: str = "UTC", origin: int = 0) -> None:
    """Write ``result``'s jobs to ``path`` as ``sacct --parsable2 --format=FIELDS``
    prints them (module docs); ``workload``: the :class:`~fastsched.io.workload.Workload`
    the jobs came from, for names; ``tz``: the zone times are printed in; ``origin``:
    seconds added to every time (e.g. an SWF trace's UnixStartTime)."""
    lines = sacct_lines(result, fields, workload=workload, tz=tz, origin=origin)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines))
        f.write("\n")


def format_epoch(seconds: np.ndarray, known: np.ndarray, tz: str = "UTC") -> np.ndarray:
    """Epoch seconds -> ``YYYY-MM-DDTHH:MM:SS`` in zone ``tz`` (``Unknown`` where not
    ``known``)."""
    seconds = np.asarray(seconds, dtype=np.int64)
    if tz not in ("UTC", "utc", "Z") and len(seconds):
        import pandas as pd
        values, inverse = np.unique(seconds, return_inverse=True)
        try:
            local = pd.to_datetime(values, unit="s", utc=True).tz_convert(tz).tz_localize(None)
        except Exception as e:                # an unknown zone name
            raise InputError(f"unknown time zone {tz!r} ({e})", field="tz") from None
        seconds = local.to_numpy(dtype="datetime64[s]").astype(np.int64)[inverse.reshape(-1)]
    texts = np.datetime_as_string(seconds.astype("datetime64[s]"), unit="s").astype(object)
    texts[~np.asarray(known, bool)] = "Unknown"
    return texts
