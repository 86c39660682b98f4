"""The obvious version of fastsched.io.submission: submitted rows -> jobs and constraints.

Written for a reader, one job and one reference at a time. ``rows`` are dicts
with ``job_id``, ``submit_time``, ``user``, ``name``, ``qos``, ``partition``
(a list of partition names), ``dependency`` and ``array`` (Slurm text or "").
Raises ValueError where the fast path raises InputError.
"""
from __future__ import annotations

from fastsched.io.sbatch import parse_array, parse_dependency

KINDS = ("after", "afterany", "afterok", "afternotok")


def expand(rows):
    """One dict per job, sorted by (submit_time, job_id)."""
    jobs = []
    for r, row in enumerate(rows):
        if row["array"]:
            indexes, limit = parse_array(row["array"])
            for p, task in enumerate(indexes):
                jobs.append(dict(row, job_id=row["job_id"] + p, array_job=row["job_id"],
                                 array_task=task, throttle=limit or 0, row=r))
        else:
            jobs.append(dict(row, array_job=-1, array_task=-1, throttle=0, row=r))
    ids = [j["job_id"] for j in jobs]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate job id")
    array_ids = {j["array_job"] for j in jobs if j["array_job"] >= 0}
    if any(j["array_job"] < 0 and j["job_id"] in array_ids for j in jobs):
        raise ValueError("job id is also an array job id")
    return sorted(jobs, key=lambda j: (j["submit_time"], j["job_id"]))


def resolve(jobs, token):
    """Positions of the jobs a dependency token names."""
    if "_" in token:
        a, t = (int(x) for x in token.split("_"))
        hits = [k for k, j in enumerate(jobs) if j["array_job"] == a and j["array_task"] == t]
    else:
        a = int(token)
        hits = [k for k, j in enumerate(jobs) if j["array_job"] == a]
        if not hits:
            hits = [k for k, j in enumerate(jobs) if j["job_id"] == a]
    if not hits:
        raise ValueError(f"unknown job {token}")
    return hits


def singleton_parents(jobs, k, full=False):
    """Earlier jobs of the same user and name: all of them (``full``), or back to and
    including the latest earlier singleton job."""
    out = []
    for e in range(k - 1, -1, -1):
        j = jobs[e]
        if (j["user"], j["name"]) != (jobs[k]["user"], jobs[k]["name"]):
            continue
        out.append(e)
        if not full and j["singleton"]:
            break
    return sorted(out)


def build(rows, full_singleton=False):
    """Jobs in submit order, each with ``edges``: a set of (parent position, kind)."""
    jobs = expand(rows)
    for j in jobs:
        items, mode = parse_dependency(j["dependency"]) if j["dependency"] else ([], "all")
        j["items"], j["mode"] = items, mode
        j["singleton"] = any(kind == "singleton" for kind, _ in items)
    for k, j in enumerate(jobs):
        if j["mode"] != "all":
            raise ValueError("'?' unsupported")
        edges = set()
        for kind, ids in j["items"]:
            if kind == "singleton":
                edges |= {(e, "afterany") for e in singleton_parents(jobs, k, full_singleton)}
                continue
            if kind not in KINDS:
                raise ValueError(f"unsupported {kind}")
            for token in ids:
                if "+" in token:
                    raise ValueError("delay unsupported")
                for e in resolve(jobs, token):
                    if e >= k:
                        raise ValueError("depends on itself or a later job")
                    edges.add((e, kind))
        j["edges"] = edges
    return jobs
