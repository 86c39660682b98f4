"""Slurm 22.05's backfill plan, written plainly: the slow twin of ``engine/slurmplan``.

One backfill cycle as ``sched/backfill`` (``_attempt_backfill``) runs it, with the
will-run test of ``select/cons_tres`` (``_will_run_test``, ``_eval_nodes``), for jobs that
ask ``-N k --gres=gpu:g -t limit`` in one partition. Node sets are Python sets, the
backfill map a Python list of records; no cleverness. docs/slurm-model.md names the
Slurm function behind every rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Running:
    end: int
    nodes: list[int]
    gpus: int          # per node
    cores: int = 1     # per node


@dataclass
class Pending:
    job_id: int
    nodes: int
    gpus: int          # per node
    limit: int         # seconds
    cores: int = 1     # per node
    partition: frozenset | None = None   # the nodes it may use; None: all
    user: int | None = None              # None: a user of its own


@dataclass
class Cluster:
    gpus: list[int]
    cores: list[int]
    weight: list[int] = field(default_factory=list)

    def __post_init__(self):
        if not self.weight:
            self.weight = [1] * len(self.gpus)


@dataclass
class Plan:
    start: int | None      # None: no start within the window (squeue shows N/A)
    nodes: list[int]       # planned (or started) nodes, empty when start is None
    started: bool = False


CPUS_FREE = True


def _select(cluster, job, avail, free_gpus, free_cores):
    """``_eval_nodes``: consecutive runs of usable nodes, best fit; None if it fails."""
    usable = [i for i in range(len(cluster.gpus))
              if i in avail and free_gpus[i] >= job.gpus and free_cores[i] >= job.cores]
    runs = []                       # [first..last nodes of one weight], in node order
    for i in usable:
        if runs and runs[-1][-1] == i - 1 and cluster.weight[runs[-1][-1]] == cluster.weight[i]:
            runs[-1].append(i)
        else:
            runs.append([i])
    cpus = {i: free_cores[i] if CPUS_FREE else job.cores for i in usable}
    rem_nodes, rem_cpus = job.nodes, job.nodes * job.cores
    chosen = []
    while runs:
        best = None
        for r in runs:
            if not r:
                continue
            r_cpus = sum(cpus[i] for i in r)
            sufficient = r_cpus >= rem_cpus and len(r) >= rem_nodes
            w = cluster.weight[r[0]]
            if best is None or w < best[0]:
                best = (w, sufficient, r_cpus, r)
            elif w == best[0] and ((sufficient and not best[1])
                                   or (sufficient and r_cpus < best[2])
                                   or (not sufficient and r_cpus > best[2])):
                best = (w, sufficient, r_cpus, r)
        if best is None:
            break
        run = best[3]
        if rem_nodes <= 1:
            fits = [i for i in run if cpus[i] >= rem_cpus]
            if fits:
                run = [min(fits, key=lambda i: (cpus[i], i))]
        for i in run:
            if rem_nodes <= 0 and rem_cpus <= 0:
                break
            chosen.append(i)
            rem_nodes -= 1
            rem_cpus -= cpus[i]
        if rem_nodes <= 0 and rem_cpus <= 0:
            return sorted(chosen)
        best[3].clear()
    return None


def _will_run(cluster, job, avail, running, now):
    """``_will_run_test``: (start, nodes) or None; start is ``now`` if it fits now."""
    free_gpus = list(cluster.gpus)
    free_cores = list(cluster.cores)
    for r in running:
        for n in r.nodes:
            free_gpus[n] -= r.gpus
            free_cores[n] -= r.cores
    nodes = _select(cluster, job, avail, free_gpus, free_cores)
    if nodes is not None:
        return now, nodes
    ending = sorted(running, key=lambda r: r.end)
    window, anchor, k = 30, None, 0
    while k < len(ending):
        last = None
        removed = 0
        while k < len(ending):
            r = ending[k]
            k += 1
            if not avail.intersection(r.nodes):
                continue
            if anchor is None:
                anchor = r.end + (window - r.end % window)
            last = r
            for n in r.nodes:
                free_gpus[n] += r.gpus
                free_cores[n] += r.cores
            if k == len(ending) or ending[k].end > anchor + window:
                break
            removed += 1
            if removed > 200:
                last = "skip"
                break
        if last is None:
            break
        if last == "skip":
            continue
        while True:
            window *= 2
            if k == len(ending) or ending[k].end <= anchor + window:
                break
        nodes = _select(cluster, job, avail, free_gpus, free_cores)
        if nodes is not None:
            return max(last.end, now + 1) if last.end <= now else last.end, nodes
    return None


class _Map:
    """The backfill map (``node_space``): records [begin, end) in time order, each with
    the nodes no planned job holds then. ``add`` is ``_add_reservation``."""

    def __init__(self, begin, end, nodes):
        self.recs = [[begin, end, set(nodes)]]

    def add(self, start, end, nodes, resolution):
        recs = self.recs
        start = max(start, recs[0][0])
        end = max(end, start + resolution)
        before, after, j, placed = 0, None, 0, False
        while j < len(recs):
            if recs[j][1] > start:
                recs.insert(j + 1, [start, recs[j][1], set(recs[j][2])])
                recs[j][1] = start
                placed = True
                break
            if recs[j][1] == start:
                placed = True
                break
            before = j
            j += 1
        while placed and j + 1 < len(recs):
            j += 1
            if end < recs[j][1]:
                recs.insert(j + 1, [end, recs[j][1], set(recs[j][2])])
                recs[j][1] = end
            recs[j][2] -= set(nodes)
            if end == recs[j][1]:
                after = j + 1 if j + 1 < len(recs) else None
                break
        i = before
        while i != after and i + 1 < len(recs):
            if recs[i][2] == recs[i + 1][2]:
                recs[i][1] = recs[i + 1][1]
                del recs[i + 1]
                break
            i += 1


def plan(cluster, running, queue, now, *, resolution=60, window=7 * 86400,
         max_job_test=None, available=None, caps=(0, 0, 0)):
    """One backfill cycle at ``now``: a Plan per queued job, in queue order.
    ``available``: the nodes in service (default all). ``max_job_test``: how many jobs
    may reach the will-run test; ``caps``: how many per partition, per user, per user
    and partition (0: no cap)."""
    running = list(running)
    up = set(range(len(cluster.gpus))) if available is None else set(available)
    begin = now // resolution * resolution
    window_end = (now + window) // resolution * resolution
    bf_map = _Map(begin, window_end, up)
    plans, tested, counts = [], 0, [{}, {}, {}]
    for q, job in enumerate(queue):
        user = ("own", q) if job.user is None else job.user
        keys = (job.partition, user, (user, job.partition))
        over = any(cap and counts[i].get(keys[i], 0) >= cap for i, cap in enumerate(caps))
        if (max_job_test is not None and tested >= max_job_test) or over:
            plans.append(Plan(None, []))
            continue
        for i, cap in enumerate(caps):
            if cap:
                counts[i][keys[i]] = counts[i].get(keys[i], 0) + 1
        part = up if job.partition is None else up & job.partition
        plan_, tried = _plan_job(cluster, job, part, running, bf_map, now, resolution,
                                 window)
        tested += tried
        plans.append(plan_)
    return plans


def _plan_job(cluster, job, part, running, bf_map, now, resolution, window):
    """(the job's Plan, whether it reached the will-run test)."""
    later, tried = now, False
    while True:
        start_res, later = later, 0
        end = (start_res if start_res > now else now) + job.limit
        avail = set(part)
        recs = bf_map.recs
        for j, (b, e, free) in enumerate(recs):
            if e > start_res and j + 1 < len(recs) and later == 0:
                nxt = part & recs[j + 1][2]
                if not nxt <= (avail & free):
                    later = e
            if e <= start_res:
                pass
            elif b <= end:
                avail &= free
            else:
                break
        if len(avail) < job.nodes:
            if later:
                continue
            return Plan(None, []), tried
        tried = True
        got = _will_run(cluster, job, avail, running, now)
        if got is None:
            if later:
                continue
            return Plan(None, []), tried
        start, nodes = got
        start = max(start, start_res)
        if start <= now:
            running.append(Running(now + job.limit, nodes, job.gpus, job.cores))
            return Plan(now, nodes, started=True), tried
        if later and start > later:
            continue
        res_start = start // resolution * resolution
        res_end = (start + job.limit) // resolution * resolution
        if start > now + window:
            return Plan(None, []), tried
        if _overlaps(bf_map, nodes, res_start, res_end):
            later = start
            continue
        bf_map.add(res_start, res_end, nodes, resolution)
        return Plan(start, nodes), tried


def _overlaps(bf_map, nodes, start, end):
    return any(e > start and b < end and not set(nodes) <= free
               for b, e, free in bf_map.recs)


@dataclass
class Submitted:
    """A job of a workload to replay: submitted at ``submit``, runs ``runtime`` seconds
    (at most its limit) once started."""
    submit: int
    job: Pending
    runtime: int


def simulate(cluster, workload, *, resolution=60, window=86400, max_job_test=None,
             available=None):
    """A cycle (:func:`plan`) at every instant a job is submitted or ends; the queue in
    submission order. Returns (start, nodes) per job, (None, []) if it never starts."""
    n = len(workload)
    arrival = sorted(range(n), key=lambda j: (workload[j].submit, workload[j].job.job_id))
    out = [(None, [])] * n
    active, queue, nxt = [], [], 0          # active: (job, start, nodes) in start order
    while nxt < n or active:
        ends = [s + min(workload[j].runtime, workload[j].job.limit) for j, s, _ in active]
        times = ([workload[arrival[nxt]].submit] if nxt < n else []) + ends
        now = min(times)
        active = [a for a, e in zip(active, ends) if e > now]
        while nxt < n and workload[arrival[nxt]].submit <= now:
            queue.append(arrival[nxt])
            nxt += 1
        if not queue:
            continue
        running = [Running(max(s + workload[j].job.limit, now + 1), nodes,
                           workload[j].job.gpus, workload[j].job.cores)
                   for j, s, nodes in active]
        plans = plan(cluster, running, [workload[j].job for j in queue], now,
                     resolution=resolution, window=window, max_job_test=max_job_test,
                     available=available)
        started = [j for j, p in zip(queue, plans) if p.started]
        for j, p in zip(queue, plans):
            if p.started:
                out[j] = (now, p.nodes)
                active.append((j, now, p.nodes))
        queue = [j for j in queue if j not in started]
        if not started and not active and nxt == n:
            break
    return out
