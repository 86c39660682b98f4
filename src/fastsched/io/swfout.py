"""A simulation's schedule as a Standard Workload Format trace (the 18 fields of
:mod:`fastsched.io.swf`, with ``;`` header comments), which :func:`fastsched.read_swf`
reads back.

Each job is one line: its submit time, the simulated wait and run time, and its
request. Processors are CPUs (nodes x CPUs per node; on an SWF trace's machine of
single-processor nodes, the trace's own processor counts). Fields:

====  ======================  ==============================================
  1   job number              the job id
  2   submit time             as simulated
  3   wait time               start - submit; -1: never started
  4   run time                end - start (at most the limit); -1: never started
  5   allocated processors    nodes x CPUs per node; -1: never started
  6   average CPU time        -1
  7   used memory             -1
  8   requested processors    nodes x CPUs per node
  9   requested time          the time limit (-1: unlimited)
 10   requested memory        KB per processor (-1: none asked)
 11   status                  1 completed, 0 killed at its limit, 5 never started
 12   user id                 the job's user number (-1: none)
 13   group id                the account number with a workload, else -1
 14   executable              -1
 15   queue                   the QOS number with a workload, else -1
 16   partition               1 + the partition's index in the cluster (-1: none)
 17   preceding job           -1
 18   think time              -1
====  ======================  ==============================================

The header says the machine (``MaxNodes``, ``MaxProcs``: the cluster's nodes and
CPUs), the job count, the policy, and ``UnixStartTime`` (the ``origin`` the times
are relative to).
"""
from __future__ import annotations

import numpy as np

from ..model.jobs import UNLIMITED

__all__ = ["write_swf", "swf_header"]


def swf_header(result, *, origin: int = 0, note: str = "") -> list[str]:
    """The ``; Key: value`` header lines of :func:`write_swf`."""
    c = result.cluster
    policy = result.summary.get("policy", "") if isinstance(result.summary, dict) else ""
    lines = ["; Version: 2.2",
             f"; Computer: fastsched simulation{f' (policy {policy})' if policy else ''}",
             "; Conversion: fastsched (simulated schedule)",
             f"; MaxJobs: {len(result.workload)}",
             f"; MaxRecords: {len(result.workload)}",
             f"; UnixStartTime: {int(origin)}",
             f"; MaxNodes: {c.num_nodes}",
             f"; MaxProcs: {int(c.cpus.sum())}",
             "; Note: wait, run time, status and allocation are the simulated schedule's; "
             "status 5 with wait -1: never started"]
    if note:
        lines.append(f"; Note: {note}")
    return lines


def swf_fields(result, workload=None) -> np.ndarray:
    """The (jobs, 18) int64 fields of :func:`write_swf`, in the result's job order."""
    w, s = result.workload, result.schedule
    n = len(w)
    started = s.start_time >= 0
    procs = w.num_nodes.astype(np.int64) * w.cpus_per_node
    out = np.full((n, 18), -1, dtype=np.int64)
    out[:, 0] = s.job_id
    out[:, 1] = w.submit_time
    out[:, 2] = np.where(started, s.start_time - w.submit_time, -1)
    out[:, 3] = np.where(started, s.end_time - s.start_time, -1)
    out[:, 4] = np.where(started, procs, -1)
    out[:, 7] = procs
    out[:, 8] = np.where(w.time_limit >= UNLIMITED, -1, w.time_limit)
    kb = (w.mem_per_node * 1024) // np.maximum(w.cpus_per_node, 1)
    out[:, 9] = np.where(w.mem_per_node > 0, kb, -1)
    out[:, 10] = np.where(~started, 5, np.where(w.runtime > w.time_limit, 0, 1))
    out[:, 11] = np.where(w.user >= 0, w.user, -1)
    if workload is not None:
        out[:, 12] = workload.account
        out[:, 14] = workload.qos
    part = getattr(result, "partition", None)
    part = w.partition if part is None else part
    out[:, 15] = np.where(part >= 0, part.astype(np.int64) + 1, -1)
    return out


def write_swf(result, path, *, workload=None, origin: int = 0, note: str = "") -> None:
    """Write ``result``'s schedule to ``path`` as an SWF trace (module docs);
    ``workload``: the :class:`~fastsched.io.workload.Workload` it came from (accounts
    and QOS as group and queue numbers); ``origin``: the UnixStartTime to record."""
    fields = swf_fields(result, workload)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(swf_header(result, origin=origin, note=note)) + "\n")
        if len(fields):
            np.savetxt(f, fields, fmt="%d", delimiter=" ")
