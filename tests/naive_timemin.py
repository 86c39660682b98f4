"""The twin of ``--time-min`` starts (:mod:`fastsched.engine.timemin`), over the plan
of :mod:`naive_nodes` (per node, a list of holds).

The rule, written out: a job with a time minimum ``tmin`` below its limit that does
not start now with its limit is tried in its partitions in order; in the first where
``nodes`` of them hold its request over ``[now, now + tmin)`` it takes those chosen by
best fit (as any start now), and its limit becomes its own when nothing on those nodes
lacks the request before ``now + limit``, else the whole minutes from now to the first
instant something does (a hold begins there), never below ``tmin``. Slurm:
``_set_backfill_timelimits`` and ``_reset_job_time_limit`` in backfill.c.
"""
from __future__ import annotations

from dataclasses import replace

import naive_nodes as nn


def shorten(now, nodes, plan, job, parts, tmin):
    """(now, nodes, partition, the job with its cut limit), or None."""
    if not 0 < tmin < job.limit:
        return None
    for p in parts:
        jp = replace(job, partition=p, limit=tmin)
        if sum(nn._eligible(node, jp) for node in nodes) < job.nodes:
            continue
        if not nn._fits_now(now, nodes, plan, jp):
            continue
        chosen = nn._choose_nodes(now, nodes, plan, jp, now)
        lacking = [h[0] for x in chosen for h in plan[x]
                   if now < h[0] < now + job.limit and not _holds(nodes[x], plan[x], jp, h[0])]
        limit = job.limit if not lacking else \
            min(job.limit, max(tmin, (min(lacking) - now) // 60 * 60))
        return now, chosen, p, replace(job, limit=limit)
    return None


def _holds(node, holds, job, t):
    g, c, m = nn._free_at(node, holds, t)
    return g >= job.gpus and c >= job.cpus and m >= job.mem
