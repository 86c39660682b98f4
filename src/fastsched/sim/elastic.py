"""Elastic jobs in a simulation's records: each shape of a shrunk attempt is its own
record (state RESIZING but the last, as ``sacct --duplicates`` lists a resized job),
and what the shrinks kept (:mod:`fastsched.model.elastic`)."""
from __future__ import annotations

import numpy as np

from ..model.constraints import csr_take
from ..model.lifecycle import saved_progress


def add_resizes(table: dict, resizes) -> dict:
    """``table`` (:func:`fastsched.sim.lifecycle.attempt_table`) with a record per
    shape of ``resizes`` (:class:`fastsched.engine.elastic.Resizes`), each attempt's
    last record starting where its last resize ended (a shape has its attempt's
    ``limit``); key ``resized`` marks the new records. Rows in (job, attempt, start) order."""
    where = {(int(r), int(a)): k for k, (r, a) in enumerate(zip(table["row"], table["attempt"]))}
    m = np.array([where[(int(r), int(a))] for r, a in zip(resizes.job, resizes.attempt)],
                 dtype=np.int64)
    start = table["start"].copy()
    np.maximum.at(start, m, resizes.end)
    k = len(table["row"])

    def cat(key, extra):
        return np.concatenate([table[key] if key != "start" else start, extra])
    row, attempt = cat("row", resizes.job), cat("attempt", resizes.attempt)
    start, end = cat("start", resizes.start), cat("end", resizes.end)
    out = {"row": row, "attempt": attempt, "start": start, "end": end,
           "elapsed": end - start,
           "killed": cat("killed", np.zeros(len(m), dtype=bool)),
           "node_fail": cat("node_fail", np.zeros(len(m), dtype=bool)),
           "partition": cat("partition", table["partition"][m]),
           "pull": None if table["pull"] is None else cat("pull", table["pull"][m]),
           "limit": None if table.get("limit") is None else cat("limit", table["limit"][m]),
           "resized": np.concatenate([np.zeros(k, dtype=bool), np.ones(len(m), dtype=bool)])}
    # (a shape a resize ended was neither preempted nor CONFIGURING)
    for key, dtype in (("preempted", bool), ("configure", np.int64)):
        if key in table:
            out[key] = None if table[key] is None else \
                cat(key, np.zeros(len(m), dtype=dtype))
    counts = np.concatenate([np.diff(table["alloc_offsets"]), np.diff(resizes.alloc_offsets)])
    nodes = np.concatenate([table["alloc_nodes"], resizes.alloc_nodes])
    masks = np.concatenate([table["alloc_gpu_mask"], resizes.alloc_gpu_mask])
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    order = np.lexsort((start, attempt, row))
    for key in out:
        if out[key] is not None:
            out[key] = out[key][order]
    off, entries = csr_take(offsets, order)
    out.update(alloc_offsets=off, alloc_nodes=nodes[entries], alloc_gpu_mask=masks[entries],
               last_runtime=table["last_runtime"], node_fail_job=table["node_fail_job"])
    if "preempted_job" in table:
        out["preempted_job"] = table["preempted_job"]
    return out


def shape_goodput_args(table: dict) -> dict:
    """The per-record arguments :func:`fastsched.model.lifecycle.goodput` takes for the
    shapes of attempts: each record's share of its attempt's pull, its attempt's run
    after the pull before it, the attempt's whole run after the pull, and whether the
    attempt was killed. ``interval``: each record's checkpoint interval."""
    row, attempt = table["row"], table["attempt"]
    if not len(row):
        empty = np.zeros(0, dtype=np.int64)
        return {"pull": empty, "before": empty, "attempt_run": empty,
                "killed": np.zeros(0, dtype=bool)}
    first = np.ones(len(row), dtype=bool)
    first[1:] = (row[1:] != row[:-1]) | (attempt[1:] != attempt[:-1])
    group = np.cumsum(first) - 1
    begin = table["start"][first][group]
    last = np.flatnonzero(np.append(first[1:], True))
    pull = np.zeros(len(row), dtype=np.int64) if table["pull"] is None else table["pull"]
    offset = table["start"] - begin                 # wall seconds into the attempt
    pulled = np.clip(pull - offset, 0, table["elapsed"])
    before = np.maximum(offset - pull, 0)
    attempt_run = np.maximum(table["end"][last] - begin[last] - pull[last], 0)[group]
    killed = table["killed"][last][group]
    return {"pull": pulled, "before": before, "attempt_run": attempt_run, "killed": killed}


def shrink_summary(table: dict, jobs, interval) -> dict:
    """The resizes of a run: how many shrinks, the jobs shrunk, how many regrowths
    (``regrows``: a shape followed by a wider one), the attempts that started again
    (``requeues``: the first shape of each attempt after the first), and
    ``shrink_kept_gpu_hours``: per shrink, the GPU-hours of work its attempt had done
    since its last checkpoint (at the widths it ran), what a kill there would have
    thrown away. Those spans overlap from one shrink to the next: the cost of
    requeueing instead is that of a run without ``--no-kill``, not this sum."""
    row, attempt = table["row"], table["attempt"]
    first = np.ones(len(row), dtype=bool)
    first[1:] = (row[1:] != row[:-1]) | (attempt[1:] != attempt[:-1])
    width = np.diff(table["alloc_offsets"])
    gpus = width * jobs.gpus_per_node[row]
    grew = table["resized"] & (np.append(width[1:], 0) > width)
    shrank = table["resized"] & ~grew
    kept = 0
    for k in np.flatnonzero(shrank).tolist():
        h = k
        while not first[h]:
            h -= 1
        pull_end = table["start"][h] + (0 if table["pull"] is None else table["pull"][h])
        ran = max(int(table["end"][k] - pull_end), 0)
        since = int(pull_end + saved_progress(ran, interval[k]))   # the last checkpoint
        for q in range(h, k + 1):
            span = min(table["end"][q], table["end"][k]) - max(table["start"][q], since,
                                                              pull_end)
            kept += int(gpus[q]) * max(int(span), 0)
    return {"requeues": int(((attempt > 0) & first).sum()),
            "shrinks": int(shrank.sum()),
            "shrunk_jobs": int(len(np.unique(row[shrank]))),
            "regrows": int(grew.sum()),
            "shrink_kept_gpu_hours": kept / 3600.0}
