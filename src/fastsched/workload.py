"""A workload: jobs plus who submitted them (users, accounts, organisations).

:class:`Workload` wraps a :class:`~fastsched.jobs.JobTable` (whose ``user``
column indexes ``user_names`` and whose ``partition`` column indexes the
cluster's partitions) with the per-job account and the account -> organisation
map, i.e. the three-level fair-share tree organisation / account / user.

The CSV format (``.csv`` or ``.csv.gz``) has one row per job, with header::

    job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,cpus_per_node,
    mem_per_node,partition,user,account,org

Times are integer seconds, memory is MB per node; ``partition``, ``user``,
``account`` and ``org`` are names. ``org`` is optional on reading (without it
every account is its own organisation); any other extra column is ignored.
A job whose ``runtime`` exceeds its ``time_limit`` is killed at the limit
(state TIMEOUT).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .cluster import Cluster
from .errors import InputError
from .jobs import JobTable

__all__ = ["Workload", "write_workload", "read_workload", "CSV_COLUMNS"]

#: the columns every workload CSV has, in this order.
CSV_COLUMNS = ["job_id", "submit_time", "time_limit", "runtime", "num_nodes", "gpus_per_node",
               "cpus_per_node", "mem_per_node", "partition", "user", "account"]
#: optional trailing column: the organisation owning each job's account.
ORG_COLUMN = "org"
_INT_COLUMNS = CSV_COLUMNS[:8]
_NAME_COLUMNS = ["partition", "user", "account"]


@dataclass
class Workload:
    """Jobs sorted by submit time, with their users, accounts and organisations.

    ``jobs.user`` indexes ``user_names``; ``account`` (int32, one per job)
    indexes ``account_names``; ``org_of_account`` (int32, one per account)
    indexes ``org_names``.
    """

    jobs: JobTable
    account: np.ndarray
    user_names: list[str]
    account_names: list[str]
    org_of_account: np.ndarray
    org_names: list[str]

    def __post_init__(self):
        self.account = np.ascontiguousarray(self.account, dtype=np.int32)
        self.org_of_account = np.ascontiguousarray(self.org_of_account, dtype=np.int32)
        n = len(self.jobs)
        if len(self.account) != n:
            raise InputError(f"workload: {len(self.account)} accounts for {n} jobs")
        if len(self.org_of_account) != len(self.account_names):
            raise InputError(f"workload: org_of_account has {len(self.org_of_account)} entries "
                             f"for {len(self.account_names)} accounts")
        for what, idx, names in (("user", self.jobs.user, self.user_names),
                                 ("account", self.account, self.account_names),
                                 ("org", self.org_of_account, self.org_names)):
            if len(idx) and (idx.min() < 0 or idx.max() >= len(names)):
                raise InputError(f"workload: {what} index out of range 0..{len(names) - 1}")

    def __len__(self) -> int:
        return len(self.jobs)

    def __repr__(self) -> str:
        return (f"Workload({len(self)} jobs, {len(self.user_names)} users, "
                f"{len(self.account_names)} accounts, {len(self.org_names)} orgs)")

    @property
    def org(self) -> np.ndarray:
        """Organisation index of each job (int32)."""
        return self.org_of_account[self.account]

    @property
    def gpus(self) -> np.ndarray:
        """GPUs of each job (num_nodes x gpus_per_node), int64."""
        return self.jobs.num_nodes.astype(np.int64) * self.jobs.gpus_per_node

    @property
    def span(self) -> int:
        """Seconds from the first to the last submission."""
        if len(self) == 0:
            return 0
        return int(self.jobs.submit_time.max() - self.jobs.submit_time.min())

    def gpu_seconds(self) -> float:
        """GPU-seconds the jobs really use: sum of gpus x min(runtime, time_limit)."""
        used = np.minimum(self.jobs.runtime, self.jobs.time_limit).astype(np.float64)
        return float(np.dot(self.gpus.astype(np.float64), used))

    def offered_load(self, cluster: Cluster) -> float:
        """GPU-seconds used / (cluster GPUs x submission span); 1.0 = exactly full."""
        total = float(cluster.gpus.sum())
        span = self.span
        if total <= 0 or span <= 0:
            return float("nan")
        return self.gpu_seconds() / (total * span)


# --------------------------------------------------------------------------- CSV

def write_workload(workload: Workload, cluster: Cluster, path) -> None:
    """Write ``workload`` as CSV (gzip-compressed if ``path`` ends in ``.gz``)."""
    import pandas as pd
    jobs = workload.jobs
    part_names = [p.name for p in cluster.partitions]
    if len(jobs) and (jobs.partition.min() < 0 or jobs.partition.max() >= len(part_names)):
        raise InputError(f"workload: partition index out of range for cluster partitions "
                         f"{part_names}")
    cat = pd.Categorical.from_codes
    frame = pd.DataFrame({
        "job_id": jobs.job_id, "submit_time": jobs.submit_time, "time_limit": jobs.time_limit,
        "runtime": jobs.runtime, "num_nodes": jobs.num_nodes,
        "gpus_per_node": jobs.gpus_per_node, "cpus_per_node": jobs.cpus_per_node,
        "mem_per_node": jobs.mem_per_node,
        "partition": cat(jobs.partition, categories=_unique_categories(part_names, "partition")),
        "user": cat(jobs.user, categories=_unique_categories(workload.user_names, "user")),
        "account": cat(workload.account,
                       categories=_unique_categories(workload.account_names, "account")),
        ORG_COLUMN: cat(workload.org, categories=_unique_categories(workload.org_names, "org")),
    })
    compression = ({"method": "gzip", "compresslevel": 6, "mtime": 0}
                   if str(path).endswith(".gz") else None)
    frame.to_csv(path, index=False, compression=compression, lineterminator="\n")


def _unique_categories(names: list[str], what: str) -> list[str]:
    if len(set(names)) != len(names):
        raise InputError(f"workload: duplicate {what} names")
    for name in names:
        if not name or "," in name or "\n" in name or name != name.strip():
            raise InputError(f"workload: bad {what} name {name!r}")
    return list(names)


def read_workload(path, cluster: Cluster) -> Workload:
    """Read a workload CSV written by :func:`write_workload` (or by hand).

    Rows may come in any order; the result is sorted by (submit_time, job_id).
    User, account and organisation indices follow the sorted order of their
    names. Raises InputError naming file, line and column for a malformed row,
    a missing column, an unknown partition or an impossible value.
    """
    import pandas as pd
    fname = str(path)
    try:
        frame = pd.read_csv(path, keep_default_na=False, skip_blank_lines=False, engine="c",
                            dtype={c: str for c in _NAME_COLUMNS + [ORG_COLUMN]})
    except pd.errors.EmptyDataError:
        raise InputError("empty file: expected a header line", file=fname, line=1) from None
    except pd.errors.ParserError as e:
        import re
        m = re.search(r"line (\d+)", str(e))
        raise InputError(f"malformed CSV: {e}", file=fname,
                         line=int(m.group(1)) if m else None) from None
    except UnicodeDecodeError as e:
        raise InputError(f"not a text file: {e}", file=fname) from None

    frame.columns = [str(c).strip() for c in frame.columns]
    for col in CSV_COLUMNS:
        if col not in frame.columns:
            raise InputError(f"missing column {col!r} (header has {list(frame.columns)})",
                             file=fname, line=1, field=col)

    cols = {}
    for col in _INT_COLUMNS:
        cols[col] = _int_column(frame[col], fname, col)
    names = {}
    for col in _NAME_COLUMNS + ([ORG_COLUMN] if ORG_COLUMN in frame.columns else []):
        names[col] = _name_column(frame[col], fname, col)

    _check_range(cols["job_id"], cols["job_id"] < 0, fname, "job_id", "must be >= 0")
    _check_range(cols["submit_time"], cols["submit_time"] < 0, fname, "submit_time",
                 "must be >= 0")
    _check_range(cols["time_limit"], cols["time_limit"] < 1, fname, "time_limit", "must be >= 1")
    _check_range(cols["runtime"], cols["runtime"] < 0, fname, "runtime", "must be >= 0")
    _check_range(cols["num_nodes"], cols["num_nodes"] < 1, fname, "num_nodes", "must be >= 1")
    for col in ("gpus_per_node", "cpus_per_node", "mem_per_node"):
        _check_range(cols[col], cols[col] < 0, fname, col, "must be >= 0")
    too_big = (cols["num_nodes"] > np.iinfo(np.int32).max) | \
        (cols["gpus_per_node"] > 64) | (cols["cpus_per_node"] > np.iinfo(np.int32).max)
    if too_big.any():
        i = int(np.flatnonzero(too_big)[0])
        raise InputError("value out of range", file=fname, line=i + 2)

    ids = cols["job_id"]
    order_ids = np.argsort(ids, kind="stable")
    dup = np.flatnonzero(ids[order_ids][1:] == ids[order_ids][:-1])
    if len(dup):
        i = int(order_ids[dup[0] + 1])
        raise InputError(f"job id {ids[i]} appears more than once", file=fname, line=i + 2,
                         field="job_id")

    # partition names -> cluster partition indices
    part_names = [p.name for p in cluster.partitions]
    p_codes, p_uniques = names["partition"]
    lookup = np.empty(len(p_uniques), dtype=np.int32)
    for k, name in enumerate(p_uniques):
        if name not in part_names:
            i = int(np.flatnonzero(p_codes == k)[0])
            raise InputError(f"unknown partition {name!r}; cluster has {part_names}",
                             file=fname, line=i + 2, field="partition")
        lookup[k] = part_names.index(name)
    partition = lookup[p_codes]

    user, user_names = names["user"]
    account, account_names = names["account"]
    if ORG_COLUMN in names:
        org, org_names = names[ORG_COLUMN]
        org_of_account = np.full(len(account_names), -1, dtype=np.int32)
        org_of_account[account] = org
        clash = org_of_account[account] != org
        if clash.any():
            i = int(np.flatnonzero(clash)[0])
            raise InputError(f"account {account_names[account[i]]!r} belongs to two "
                             f"organisations", file=fname, line=i + 2, field=ORG_COLUMN)
    else:
        org_names = list(account_names)
        org_of_account = np.arange(len(account_names), dtype=np.int32)

    order = np.lexsort((ids, cols["submit_time"]))
    jobs = JobTable.from_arrays(
        job_id=ids[order], submit_time=cols["submit_time"][order],
        time_limit=cols["time_limit"][order], runtime=cols["runtime"][order],
        num_nodes=cols["num_nodes"][order], cpus_per_node=cols["cpus_per_node"][order],
        gpus_per_node=cols["gpus_per_node"][order], mem_per_node=cols["mem_per_node"][order],
        partition=partition[order], user=user[order])
    return Workload(jobs, account[order], user_names, account_names, org_of_account, org_names)


def _int_column(series, fname: str, col: str) -> np.ndarray:
    import pandas as pd
    if series.dtype == np.int64:
        return series.to_numpy()
    as_str = series.astype(str).str.strip()
    num = pd.to_numeric(as_str, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(num) | (num != np.floor(num)) | (np.abs(num) > 2.0 ** 62)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raw = series.iloc[i]
        shown = "" if raw is None or (isinstance(raw, float) and np.isnan(raw)) else raw
        raise InputError(f"{shown!r} is not an integer" if shown != "" else "missing value",
                         file=fname, line=i + 2, field=col)
    return num.astype(np.int64)


def _name_column(series, fname: str, col: str) -> tuple[np.ndarray, list[str]]:
    """(int32 codes, names): the distinct names stripped and sorted, codes index them.

    Factorizes first and strips only the distinct values (1M rows hold a few
    thousand names).
    """
    import pandas as pd
    codes, uniques = pd.factorize(series.to_numpy(dtype=object), sort=False)
    stripped = np.array([str(u).strip() for u in uniques] + [""], dtype=object)[:-1]
    missing = codes < 0
    empty = np.flatnonzero(stripped == "")
    if len(empty):
        missing |= np.isin(codes, empty)
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise InputError("missing value", file=fname, line=i + 2, field=col)
    remap, names = pd.factorize(stripped, sort=True)
    return remap.astype(np.int32)[codes], [str(n) for n in names]


def _check_range(values: np.ndarray, bad: np.ndarray, fname: str, col: str, what: str) -> None:
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{values[i]} {what}", file=fname, line=i + 2, field=col)
