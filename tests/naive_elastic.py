"""The twin's elastic jobs (tests/naive_nodes.py): the shapes of an attempt that
node failures shrank, and its work counted second by second (perfectly malleable:
each second after the pull does as many node-seconds as the job has nodes)."""
from __future__ import annotations

from dataclasses import replace


def first_shape(r, asked):
    """A running job's attempt before its first shrink: it started on its nodes now
    (maybe fewer than the job ``asked`` is queued with) and has the queued job's
    runtime x nodes node-seconds to do."""
    job, start, chosen, _ = r
    return {"starts": [start], "widths": [len(chosen)], "runtime": asked.runtime,
            "width": asked.nodes, "pull_end": start + job.pull}


def done(shape, t):
    """Node-seconds done by ``t``, second by second: each second after the pull does
    as many as the job has nodes then."""
    total = 0
    for u in range(shape["starts"][0], t):
        if u >= shape["pull_end"]:
            total += [w for s, w in zip(shape["starts"], shape["widths"]) if s <= u][-1]
    return total


def shrink(now, r, keep, shape, attempt, resized):
    """Running entry ``r`` loses the nodes not in ``keep`` at ``now`` (its ``shape``
    grows by one; a second loss at the same instant replaces the shape that never
    ran). Perfectly malleable: it needs its first runtime x width node-seconds, and
    ends at the first second by which they are done (never after start + limit)."""
    job, start, chosen, gpus = r
    if now > shape["starts"][-1]:
        if resized is not None:
            resized.append((job.job_id, attempt, shape["starts"][-1], now, list(chosen)))
        shape["starts"].append(now)
        shape["widths"].append(len(keep))
    else:
        shape["widths"][-1] = len(keep)
    work = shape["runtime"] * shape["width"]
    end = max(now, shape["pull_end"])
    while done(shape, end) < work:
        end += 1
    job = replace(job, nodes=len(keep), runtime=end - start - job.pull)
    return (job, start, keep, [g for x, g in zip(chosen, gpus) if x in keep])


