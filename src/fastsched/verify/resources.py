"""The checks every schedule gets: input shape, starts and ends, allocations, overcommit."""
from __future__ import annotations

import numpy as np

from ..model.cluster import Cluster
from ..model.errors import InputError
from ..model.jobs import JobTable
from ..model.schedule import Schedule
from .report import Violation

#: violations whose message lists the co-running jobs (finding them costs a scan)
_DETAILED_OVERCOMMITS = 1000


def check_inputs(cluster: Cluster, jobs: JobTable, schedule: Schedule) -> None:
    n = len(jobs)
    if len(schedule) != n:
        raise InputError(f"schedule has {len(schedule)} rows for {n} jobs")
    for name in ("start_time", "end_time"):
        if len(getattr(schedule, name)) != n:
            raise InputError(f"schedule.{name} has {len(getattr(schedule, name))} entries "
                             f"for {n} jobs")
    jid = np.asarray(schedule.job_id, dtype=np.int64)
    bad = np.flatnonzero(jid != jobs.job_id)
    if len(bad):
        i = int(bad[0])
        raise InputError(f"schedule row {i} is job {int(jid[i])} but jobs row {i} is job "
                         f"{int(jobs.job_id[i])}: rows must be in the same order "
                         f"({len(bad)} rows differ)")
    off = np.asarray(schedule.alloc_offsets, dtype=np.int64)
    if (len(off) != n + 1 or off[0] != 0 or (np.diff(off) < 0).any()
            or off[-1] != len(schedule.alloc_nodes)):
        raise InputError("schedule.alloc_offsets must have jobs + 1 non-decreasing entries "
                         "from 0 to len(alloc_nodes)")


def basic(jobs, start, end, out, explained=None):
    jid = jobs.job_id
    unstarted = start < 0 if explained is None else (start < 0) & ~explained
    for i in np.flatnonzero(unstarted):
        out.append(Violation("not_started", int(jid[i]), int(jobs.submit_time[i]),
                             f"job {jid[i]} (submitted {jobs.submit_time[i]}) never started"))
    started = start >= 0
    for i in np.flatnonzero(started & (start < jobs.submit_time)):
        out.append(Violation("early_start", int(jid[i]), int(start[i]),
                             f"job {jid[i]} started at {start[i]} before its submit time "
                             f"{jobs.submit_time[i]}"))
    want = start + np.minimum(jobs.runtime, jobs.time_limit)
    for i in np.flatnonzero(started & (end != want)):
        out.append(Violation("wrong_end", int(jid[i]), int(start[i]),
                             f"job {jid[i]} started at {start[i]} ended at {end[i]}, expected "
                             f"{want[i]} (start + min(runtime {jobs.runtime[i]}, "
                             f"limit {jobs.time_limit[i]}))"))


def allocation(cluster, jobs, schedule, start, out):
    """Checks allocations; returns (job index, node index) of the entries that occupy."""
    n, N = len(jobs), cluster.num_nodes
    off = np.asarray(schedule.alloc_offsets, dtype=np.int64)
    nodes = np.asarray(schedule.alloc_nodes, dtype=np.int64)
    counts = np.diff(off)
    a_job = np.repeat(np.arange(n, dtype=np.int64), counts)
    started = start >= 0
    valid = (nodes >= 0) & (nodes < N)
    parts = jobs.partition.astype(np.int64)
    nparts = len(cluster.partitions)
    bad_part = (parts < 0) | (parts >= nparts)
    member = np.zeros((nparts, N), dtype=np.bool_)
    for p, part in enumerate(cluster.partitions):
        member[p, np.asarray(part.nodes, dtype=np.int64)] = True
    chk = valid & ~bad_part[a_job]
    outside = np.zeros(len(nodes), dtype=np.bool_)
    outside[chk] = ~member[parts[a_job[chk]], nodes[chk]]
    o = np.lexsort((nodes, a_job))
    sj, sn = a_job[o], nodes[o]
    dup_sorted = np.zeros(len(nodes), dtype=np.bool_)
    if len(nodes) > 1:
        dup_sorted[1:] = (sj[1:] == sj[:-1]) & (sn[1:] == sn[:-1])
    dup = np.zeros(len(nodes), dtype=np.bool_)
    dup[o] = dup_sorted

    wrong_count = np.where(started, counts != jobs.num_nodes, counts != 0)
    bad_entry = ~valid | outside | dup
    bad_job = wrong_count | (started & bad_part)
    bad_job[a_job[bad_entry]] = True

    def name(x):
        return cluster.node_names[x] if 0 <= x < N else f"index {x}"

    for i in np.flatnonzero(bad_job):
        jid = int(jobs.job_id[i])
        lo, hi = off[i], off[i + 1]
        why = []
        if not started[i]:
            why.append(f"never started but holds {counts[i]} node(s)")
        elif counts[i] != jobs.num_nodes[i]:
            why.append(f"holds {counts[i]} node(s), needs {jobs.num_nodes[i]}")
        if started[i] and bad_part[i]:
            why.append(f"unknown partition {parts[i]}")
        inval = nodes[lo:hi][~valid[lo:hi]]
        if len(inval):
            why.append(f"node index(es) {inval[:5].tolist()} out of range 0..{N - 1}")
        dd = nodes[lo:hi][dup[lo:hi]]
        if len(dd):
            why.append("duplicate node(s) " + ", ".join(name(x) for x in dd[:5]))
        ob = nodes[lo:hi][outside[lo:hi]]
        if len(ob):
            pname = cluster.partitions[parts[i]].name
            why.append("node(s) " + ", ".join(name(x) for x in ob[:5])
                       + f" not in partition {pname!r}")
        t = int(start[i]) if started[i] else int(jobs.submit_time[i])
        out.append(Violation("bad_allocation", jid, t, f"job {jid} at {t}: " + "; ".join(why)))

    keep = valid & ~dup
    return a_job[keep], nodes[keep]


def overcommit(cluster, jobs, start, end, a_job, a_node, out):
    s, e = start[a_job], end[a_job]
    use = (s >= 0) & (e > s)
    a_job, a_node, s, e = a_job[use], a_node[use], s[use], e[use]
    E = len(a_job)
    if E == 0:
        return
    ev_node = np.concatenate([a_node, a_node])
    ev_time = np.concatenate([s, e])
    ev_plus = np.concatenate([np.ones(E, np.int8), np.zeros(E, np.int8)])
    ev_job = np.concatenate([a_job, a_job])
    sign = np.concatenate([np.ones(E, np.int64), -np.ones(E, np.int64)])
    o = np.lexsort((ev_plus, ev_time, ev_node))   # minus before plus: half-open intervals
    ev_node, ev_time, ev_plus, ev_job, sign = (ev_node[o], ev_time[o], ev_plus[o],
                                               ev_job[o], sign[o])
    over = np.zeros(2 * E, dtype=np.bool_)
    for per_job, cap in ((jobs.cpus_per_node, cluster.cpus), (jobs.gpus_per_node, cluster.gpus),
                         (jobs.mem_per_node, cluster.mem_mb)):
        used = np.cumsum(per_job[ev_job].astype(np.int64) * sign)  # nets to 0 per node
        over |= used > cap[ev_node]
    hits = np.flatnonzero(over & (ev_plus == 1))
    if len(hits) == 0:
        return
    seg_start = np.searchsorted(ev_node, ev_node[hits], side="left")
    jid = jobs.job_id
    for h, (p, lo) in enumerate(zip(hits, seg_start)):
        i, node, t = ev_job[p], int(ev_node[p]), int(ev_time[p])
        msg = f"node {cluster.node_names[node]} overcommitted at {t} when job {jid[i]} started"
        if h < _DETAILED_OVERCOMMITS:
            active = []
            for q in range(lo, p + 1):
                if ev_plus[q]:
                    active.append(ev_job[q])
                else:
                    active.remove(ev_job[q])
            c = sum(int(jobs.cpus_per_node[x]) for x in active)
            g = sum(int(jobs.gpus_per_node[x]) for x in active)
            mm = sum(int(jobs.mem_per_node[x]) for x in active)
            msg += (f": jobs {[int(jid[x]) for x in active]} use cpus {c}/{cluster.cpus[node]}, "
                    f"gpus {g}/{cluster.gpus[node]}, mem {mm}/{cluster.mem_mb[node]} MB")
        out.append(Violation("overcommit", int(jid[i]), t, msg))


