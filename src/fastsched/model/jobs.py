"""Jobs: a struct of NumPy arrays (``JobTable``) and a small per-job request.

A job asks for ``num_nodes`` distinct nodes with, on each node, ``gpus_per_node``
GPUs, ``cpus_per_node`` CPUs and ``mem_per_node`` MB of memory, for at most
``time_limit`` seconds. ``runtime`` is what the job would really run (known to a
simulator from a trace, never used for planning). Times are int64 seconds.

Slurm's ``UNLIMITED``/``INFINITE`` time limit is :data:`UNLIMITED`: a limit at
or above it (``2**63 - 1`` included) is stored as it. Submit times may be real
epoch seconds, up to :data:`MAX_TIME`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InputError

#: an unlimited time limit, in seconds (~2,177 years): beyond any replay, yet small
#: enough that starts planned behind millions of unlimited jobs stay far below the
#: engines' "never" (2**62) and below int64 overflow
UNLIMITED = 2**36
#: the latest submit time accepted (~34,800 years of epoch seconds; epoch
#: *milliseconds* are beyond it and refused)
MAX_TIME = 2**40

#: column name -> dtype, in the order records and CSV files use.
JOB_FIELDS: dict[str, type] = {
    "job_id": np.int64,
    "submit_time": np.int64,
    "time_limit": np.int64,
    "runtime": np.int64,
    "num_nodes": np.int32,
    "cpus_per_node": np.int32,
    "gpus_per_node": np.int32,
    "mem_per_node": np.int64,
    "partition": np.int32,
    "user": np.int32,
}


class JobTable:
    """Jobs as parallel NumPy arrays (one entry per job): scales to millions.

    Build one with :meth:`from_arrays`; every column named in ``JOB_FIELDS`` is
    an attribute of the same length. Optional columns default to: 1 CPU per
    node, 0 GPUs, 0 MB, partition 0, user -1. Time limits above
    :data:`UNLIMITED` are stored as :data:`UNLIMITED`.
    """

    __slots__ = tuple(JOB_FIELDS)

    def __init__(self, **columns):
        n = None
        for name, dtype in JOB_FIELDS.items():
            if name not in columns:
                raise TypeError(f"JobTable needs column {name!r}")
            col = np.ascontiguousarray(columns[name], dtype=dtype)
            if col.ndim != 1:
                raise InputError(f"column {name!r} must be one-dimensional")
            if n is None:
                n = len(col)
            elif len(col) != n:
                raise InputError(f"column {name!r} has {len(col)} entries, expected {n}")
            if name == "time_limit" and n and col.max() > UNLIMITED:
                col = np.minimum(col, UNLIMITED)
            setattr(self, name, col)
        unknown = set(columns) - set(JOB_FIELDS)
        if unknown:
            raise TypeError(f"unknown JobTable columns: {sorted(unknown)}")

    @classmethod
    def from_arrays(cls, *, job_id, submit_time, time_limit, runtime, num_nodes,
                    cpus_per_node=1, gpus_per_node=0, mem_per_node=0,
                    partition=0, user=-1) -> "JobTable":
        n = len(np.asarray(job_id))
        def col(v, dtype):
            a = np.asarray(v, dtype=dtype)
            return np.full(n, a, dtype=dtype) if a.ndim == 0 else a
        return cls(job_id=col(job_id, np.int64), submit_time=col(submit_time, np.int64),
                   time_limit=col(time_limit, np.int64), runtime=col(runtime, np.int64),
                   num_nodes=col(num_nodes, np.int32), cpus_per_node=col(cpus_per_node, np.int32),
                   gpus_per_node=col(gpus_per_node, np.int32),
                   mem_per_node=col(mem_per_node, np.int64),
                   partition=col(partition, np.int32), user=col(user, np.int32))

    @classmethod
    def from_requests(cls, requests) -> "JobTable":
        """Build a table from an iterable of :class:`JobRequest`."""
        reqs = list(requests)
        return cls(**{name: np.array([getattr(r, name) for r in reqs], dtype=dtype)
                      for name, dtype in JOB_FIELDS.items()})

    def __len__(self) -> int:
        return len(self.job_id)

    def take(self, index) -> "JobTable":
        """A new table with the rows ``index`` (an integer array or boolean mask)."""
        rows = np.asarray(index)
        if rows.ndim != 1:
            return JobTable(**{name: getattr(self, name)[index] for name in JOB_FIELDS})
        # rows of checked columns are checked: no second pass over them (a replay
        # takes the queue's rows every PriorityCalcPeriod)
        table = object.__new__(JobTable)
        for name in JOB_FIELDS:
            setattr(table, name, getattr(self, name)[rows])
        return table

    def request(self, i: int) -> "JobRequest":
        """Row ``i`` as a :class:`JobRequest`."""
        return JobRequest(**{name: getattr(self, name)[i].item() for name in JOB_FIELDS})

    def to_dict(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name) for name in JOB_FIELDS}

    def to_pandas(self):
        import pandas as pd
        return pd.DataFrame(self.to_dict())

    def __repr__(self) -> str:
        return f"JobTable({len(self)} jobs)"


@dataclass(frozen=True)
class JobRequest:
    """One job, for single submissions and readable tests."""

    job_id: int
    submit_time: int
    time_limit: int
    runtime: int
    num_nodes: int = 1
    cpus_per_node: int = 1
    gpus_per_node: int = 0
    mem_per_node: int = 0
    partition: int = 0
    user: int = -1
