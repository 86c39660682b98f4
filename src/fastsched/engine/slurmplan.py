"""The Slurm-faithful planning model: one ``sched/backfill`` cycle of Slurm 22.05.

Given running jobs and a queue in priority order, plan each job as Slurm's backfill
does (``_attempt_backfill``), with the will-run test of ``select/cons_tres``
(``_will_run_test``, ``_eval_nodes``): whole nodes reserved for future jobs in a
map of ``bf_resolution`` slots, running jobs removed in end-time groups, nodes
chosen best-fit over runs of consecutive usable nodes. Every rule and the Slurm
function it comes from: docs/slurm-model.md. The slow twin: tests/naive_slurm.py.

Node sets are bitsets of 64-bit words (a node per bit), so a map record costs
``ceil(nodes / 64)`` words and a set operation as many instructions.
"""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
import numpy as np
from numba import njit

#: will-run removes at most this many running jobs between two tests (``_will_run_test``)
_GROUP_CAP = 201
#: the first end-time window of the will-run groups, in seconds (``_will_run_test``)
_FIRST_WINDOW = 30


@njit(cache=True)
def _popcount(words):
    n = 0
    for w in words:
        x = w
        while x:
            x &= x - np.uint64(1)
            n += 1
    return n


@njit(cache=True)
def _has(words, i):
    return (words[i >> 6] >> np.uint64(i & 63)) & np.uint64(1)


@njit(cache=True)
def _select(k, g, c, avail, free_g, free_c, weight, run_first, run_last, run_cpus, chosen):
    """``_eval_nodes`` (no topology, no required nodes): k nodes with g GPUs and c cores
    free each, written to ``chosen``; returns False if they cannot be found."""
    n_nodes = free_g.shape[0]
    runs = 0
    for w in range(avail.shape[0]):
        if avail[w] == 0:
            continue                                # 64 nodes none may use: skip them
        for i in range(w * 64, min(w * 64 + 64, n_nodes)):
            if not (_has(avail, i) and free_g[i] >= g and free_c[i] >= c):
                continue
            if runs and run_last[runs - 1] == i - 1 and weight[i - 1] == weight[i]:
                run_last[runs - 1] = i
                run_cpus[runs - 1] += free_c[i]
            else:
                run_first[runs] = i
                run_last[runs] = i
                run_cpus[runs] = free_c[i]
                runs += 1
    rem_nodes = k
    rem_cpus = k * c
    got = 0
    while True:
        best = -1
        best_suff = False
        for r in range(runs):
            if run_first[r] < 0:
                continue
            size = run_last[r] - run_first[r] + 1
            suff = run_cpus[r] >= rem_cpus and size >= rem_nodes
            w = weight[run_first[r]]
            if best < 0 or w < weight[run_first[best]]:
                better = True
            elif w == weight[run_first[best]]:
                better = ((suff and not best_suff) or (suff and run_cpus[r] < run_cpus[best])
                          or (not suff and run_cpus[r] > run_cpus[best]))
            else:
                better = False
            if better:
                best = r
                best_suff = suff
        if best < 0:
            return False
        lo = run_first[best]
        hi = run_last[best]
        if rem_nodes <= 1:
            fit = -1
            for i in range(lo, hi + 1):
                if free_c[i] >= rem_cpus and (fit < 0 or free_c[i] < free_c[fit]):
                    fit = i
                    if free_c[i] == rem_cpus:
                        break
            if fit >= 0:
                lo = fit
                hi = fit
        for i in range(lo, hi + 1):
            if rem_nodes <= 0 and rem_cpus <= 0:
                break
            chosen[got] = i
            got += 1
            rem_nodes -= 1
            rem_cpus -= free_c[i]
        if rem_nodes <= 0 and rem_cpus <= 0:
            chosen[:got].sort()
            return True
        run_first[best] = -1


@njit(cache=True)
def _overlaps_any(avail, r, r_ptr, r_nodes):
    for p in range(r_ptr[r], r_ptr[r + 1]):
        if _has(avail, r_nodes[p]):
            return True
    return False


@njit(cache=True)
def _will_run(k, g, c, avail, now, free_g, free_c, weight, order, n_run, r_end, r_ptr,
              r_nodes, r_gpus, r_cores, fut_g, fut_c, scratch, chosen):
    """``_will_run_test``: the job's start (``now`` if it fits now) and nodes; -1 if none."""
    rf, rl, rc = scratch
    if _select(k, g, c, avail, free_g, free_c, weight, rf, rl, rc, chosen):
        return now
    fut_g[:] = free_g
    fut_c[:] = free_c
    window = _FIRST_WINDOW
    anchor = -1
    pos = 0
    while pos < n_run:
        last = -1
        removed = 0
        capped = False
        while pos < n_run:
            r = order[pos]
            pos += 1
            if not _overlaps_any(avail, r, r_ptr, r_nodes):
                continue
            if anchor < 0:
                anchor = r_end[r] + (window - r_end[r] % window)
            last = r
            for p in range(r_ptr[r], r_ptr[r + 1]):
                fut_g[r_nodes[p]] += r_gpus[p]
                fut_c[r_nodes[p]] += r_cores[p]
            if pos == n_run or r_end[order[pos]] > anchor + window:
                break
            removed += 1
            if removed >= _GROUP_CAP:
                capped = True
                break
        if last < 0:
            break
        if capped:
            continue
        while True:
            window *= 2
            if pos == n_run or r_end[order[pos]] <= anchor + window:
                break
        if _select(k, g, c, avail, fut_g, fut_c, weight, rf, rl, rc, chosen):
            return r_end[last] if r_end[last] > now else now + 1
    return -1


@njit(cache=True)
def _map_split(j, t, m_begin, m_end, m_next, m_free, n_rec):
    """Split record j at time t: a new record [t, its end) follows it. Returns the
    number of records."""
    m_begin[n_rec] = t
    m_end[n_rec] = m_end[j]
    m_free[n_rec] = m_free[j]
    m_end[j] = t
    m_next[n_rec] = m_next[j]
    m_next[j] = n_rec
    return n_rec + 1


@njit(cache=True)
def _map_add(start, end, nodes, resolution, m_begin, m_end, m_next, m_free, n_rec):
    """``_add_reservation``: take ``nodes`` out of the map over [start, end)."""
    start = max(start, m_begin[0])
    end = max(end, start + resolution)
    before = 0
    after = -1
    j = 0
    placed = False
    while True:
        if m_end[j] > start:
            n_rec = _map_split(j, start, m_begin, m_end, m_next, m_free, n_rec)
            placed = True
            break
        if m_end[j] == start:
            placed = True
            break
        before = j
        j = m_next[j]
        if j == 0:
            break
    while placed:
        j = m_next[j]
        if j == 0:
            break
        if end < m_end[j]:
            n_rec = _map_split(j, end, m_begin, m_end, m_next, m_free, n_rec)
        for p in range(nodes.shape[0]):
            m_free[j, nodes[p] >> 6] &= ~(np.uint64(1) << np.uint64(nodes[p] & 63))
        if end == m_end[j]:
            if m_next[j]:
                after = m_next[j]
            break
    i = before
    while i != after:
        j = m_next[i]
        if j == 0:
            break
        if not np.array_equal(m_free[i], m_free[j]):
            i = j
            continue
        m_end[i] = m_end[j]
        m_next[i] = m_next[j]
        break
    return n_rec


@njit(cache=True)
def _map_overlaps(nodes, start, end, m_begin, m_end, m_next, m_free):
    """``_test_resv_overlap``: do ``nodes`` meet a planned job within [start, end)?"""
    j = 0
    while True:
        if m_end[j] > start and m_begin[j] < end:
            for p in range(nodes.shape[0]):
                if not _has(m_free[j], nodes[p]):
                    return True
        j = m_next[j]
        if j == 0:
            return False


@njit(cache=True)
def _subset(a, b):
    for w in range(a.shape[0]):
        if a[w] & ~b[w]:
            return False
    return True


@njit(cache=True)
def _cycle(up, parts, q_part, node_g, node_c, weight, r_end, r_ptr, r_nodes, r_gpus, r_cores, n_run,
           q_nodes, q_gpus, q_cores, q_limit, now, resolution, window, max_test, q_keys,
           caps, out_start, out_started, out_ptr, out_nodes):
    """One backfill cycle; running jobs' arrays have room for the jobs it starts. ``up``:
    the nodes in service (the map's first record); job q may use ``parts[q_part[q]]``.
    ``max_test``: jobs that reach the will-run test (bf_max_job_test); ``caps``: jobs
    tested per partition, per user and per user and partition (0: no cap), job q
    counting against ``q_keys[q]``'s three entries."""
    n_nodes = node_g.shape[0]
    words = up.shape[0]
    n_q = q_nodes.shape[0]
    free_g = node_g.copy()
    free_c = node_c.copy()
    for r in range(n_run):
        for p in range(r_ptr[r], r_ptr[r + 1]):
            free_g[r_nodes[p]] -= r_gpus[p]
            free_c[r_nodes[p]] -= r_cores[p]
    order = np.argsort(r_end[:n_run], kind="mergesort")
    order = np.concatenate((order, np.empty(n_q, np.int64)))
    m_size = 2 * n_q + 3
    m_begin = np.zeros(m_size, np.int64)
    m_end = np.zeros(m_size, np.int64)
    m_next = np.zeros(m_size, np.int64)
    m_free = np.zeros((m_size, words), np.uint64)
    m_begin[0] = now // resolution * resolution
    m_end[0] = (now + window) // resolution * resolution
    m_free[0] = up
    n_rec = 1
    fut_g = np.empty_like(free_g)
    fut_c = np.empty_like(free_c)
    scratch = (np.empty(n_nodes, np.int64), np.empty(n_nodes, np.int64),
               np.empty(n_nodes, np.int64))
    chosen = np.empty(n_nodes, np.int64)
    avail = np.empty(words, np.uint64)
    nxt = np.empty(words, np.uint64)
    counts = np.zeros((3, q_keys.max() + 1 if n_q else 1), np.int64)
    tested = 0
    out_ptr[0] = 0
    for q in range(n_q):
        out_start[q] = -1
        out_ptr[q + 1] = out_ptr[q]
        if tested >= max_test or _over_caps(q_keys[q], caps, counts):
            continue
        k = q_nodes[q]
        start, tried = _plan_job(q, k, parts[q_part[q]], free_g, free_c, weight, order, n_run,
                                 r_end, r_ptr, r_nodes, r_gpus, r_cores, q_gpus, q_cores,
                                 q_limit, now, resolution, window, m_begin, m_end, m_next,
                                 m_free, fut_g, fut_c, scratch, chosen, avail, nxt)
        tested += tried
        if start < 0:
            continue
        out_start[q] = start
        out_nodes[out_ptr[q]:out_ptr[q] + k] = chosen[:k]
        out_ptr[q + 1] = out_ptr[q] + k
        if start <= now:
            out_started[q] = 1
            n_run = _start(q, k, chosen, now, free_g, free_c, order, n_run, r_end, r_ptr,
                           r_nodes, r_gpus, r_cores, q_gpus, q_cores, q_limit)
        else:
            n_rec = _map_add(start // resolution * resolution,
                             (start + q_limit[q]) // resolution * resolution, chosen[:k],
                             resolution, m_begin, m_end, m_next, m_free, n_rec)


@njit(cache=True)
def _over_caps(keys, caps, counts):
    """``_job_exceeds_max_bf_param``: a job past a cap is skipped; one within every cap
    counts against each."""
    for kind in range(3):
        if caps[kind] > 0 and counts[kind, keys[kind]] >= caps[kind]:
            return True
    for kind in range(3):
        if caps[kind] > 0:
            counts[kind, keys[kind]] += 1
    return False


@njit(cache=True)
def _start(q, k, chosen, now, free_g, free_c, order, n_run, r_end, r_ptr, r_nodes, r_gpus,
           r_cores, q_gpus, q_cores, q_limit):
    """Run job q from now on ``chosen``: a running job the next will-run tests see."""
    r = n_run
    r_end[r] = now + q_limit[q]
    r_ptr[r + 1] = r_ptr[r] + k
    r_nodes[r_ptr[r]:r_ptr[r] + k] = chosen[:k]
    r_gpus[r_ptr[r]:r_ptr[r] + k] = q_gpus[q]
    r_cores[r_ptr[r]:r_ptr[r] + k] = q_cores[q]
    for p in range(k):
        free_g[chosen[p]] -= q_gpus[q]
        free_c[chosen[p]] -= q_cores[q]
    pos = n_run
    while pos > 0 and r_end[order[pos - 1]] > r_end[r]:
        order[pos] = order[pos - 1]
        pos -= 1
    order[pos] = r
    return n_run + 1


@njit(cache=True)
def _plan_job(q, k, part, free_g, free_c, weight, order, n_run, r_end, r_ptr, r_nodes,
              r_gpus, r_cores, q_gpus, q_cores, q_limit, now, resolution, window, m_begin,
              m_end, m_next, m_free, fut_g, fut_c, scratch, chosen, avail, nxt):
    """The TRY_LATER loop of ``_attempt_backfill`` for one job: (its start, -1 if none;
    whether it reached the will-run test)."""
    tried = False
    g = q_gpus[q]
    c = q_cores[q]
    limit = q_limit[q]
    later = now
    while True:
        start_res = later
        later = 0
        end = (start_res if start_res > now else now) + limit
        avail[:] = part
        j = 0
        while True:
            if m_end[j] > start_res and m_next[j] and later == 0:
                for w in range(avail.shape[0]):
                    nxt[w] = part[w] & m_free[m_next[j], w]
                cur_ok = True
                for w in range(avail.shape[0]):
                    if nxt[w] & ~(avail[w] & m_free[j, w]):
                        cur_ok = False
                        break
                if not cur_ok:
                    later = m_end[j]
            if m_end[j] <= start_res:
                pass
            elif m_begin[j] <= end:
                for w in range(avail.shape[0]):
                    avail[w] &= m_free[j, w]
            else:
                break
            j = m_next[j]
            if j == 0:
                break
        if _popcount(avail) < k:
            if later:
                continue
            return -1, tried
        tried = True
        start = _will_run(k, g, c, avail, now, free_g, free_c, weight, order, n_run, r_end,
                          r_ptr, r_nodes, r_gpus, r_cores, fut_g, fut_c, scratch, chosen)
        if start < 0:
            if later:
                continue
            return -1, tried
        start = max(start, start_res)
        if start <= now:
            return start, tried
        if later and start > later:
            continue
        if start > now + window:
            return -1, tried
        if _map_overlaps(chosen[:k], start // resolution * resolution,
                         (start + limit) // resolution * resolution, m_begin, m_end,
                         m_next, m_free):
            later = start
            continue
        return start, tried


def node_bits(mask: np.ndarray) -> np.ndarray:
    """A boolean node mask as the kernels' bitset (64 nodes per word)."""
    words = np.zeros((mask.shape[0] + 63) // 64, np.uint64)
    for i in np.flatnonzero(mask):
        words[i >> 6] |= np.uint64(1) << np.uint64(i & 63)
    return words


def plan_cycle(node_gpus, node_cores, node_weight, partitions, running, queue, now, *,
               resolution=60, window=7 * 86400, max_job_test=None, available=None,
               users=None, caps=(0, 0, 0)):
    """One Slurm backfill cycle at ``now`` (arrays in, arrays out).

    ``running``: (end, ptr, nodes, gpus, cores): job r holds, on each node
    ``nodes[p]`` for p in ``ptr[r]:ptr[r+1]``, ``gpus[p]`` GPUs and ``cores[p]`` cores
    until ``end[r]``.
    ``queue``: (nodes, gpus, cores, limit, partition) per job in priority order, limits
    in seconds, ``partition`` a row of ``partitions`` (bool [P, nodes]: the nodes each
    partition may use). ``available``: the nodes in service (default all).
    ``max_job_test``: how many jobs may reach the will-run test (bf_max_job_test; the
    rest get -1); ``caps``: how many per partition, per user and per user and partition
    (bf_max_job_part, bf_max_job_user, bf_max_job_user_part; 0: none), ``users`` giving
    each queued job's user as an integer (default: every job its own user).
    Returns (start, started, ptr, nodes): the planned (or actual, when ``started``)
    start per queued job, -1 where Slurm plans none (beyond ``window``, or past
    ``max_job_test``), and the planned nodes of job q at ``nodes[ptr[q]:ptr[q+1]]``."""
    r_end, r_ptr, r_nodes, r_gpus, r_cores = (np.asarray(a, np.int64) for a in running)
    q_nodes, q_gpus, q_cores, q_limit, q_part = (np.asarray(a, np.int64) for a in queue)
    n_nodes = len(node_gpus)
    up = np.ones(n_nodes, bool) if available is None else np.asarray(available, bool)
    parts = np.array([node_bits(np.asarray(p, bool) & up) for p in np.atleast_2d(partitions)])
    n_run, n_q = r_end.shape[0], q_nodes.shape[0]
    room = int(q_nodes.sum())
    grow = lambda a, extra: np.concatenate((a, np.zeros(extra, np.int64)))  # noqa: E731
    r_end, r_ptr = grow(r_end, n_q), grow(r_ptr, n_q)
    r_nodes, r_gpus, r_cores = grow(r_nodes, room), grow(r_gpus, room), grow(r_cores, room)
    out_start = np.empty(n_q, np.int64)
    out_started = np.zeros(n_q, np.uint8)
    out_ptr = np.empty(n_q + 1, np.int64)
    out_nodes = np.empty(room, np.int64)
    _cycle(node_bits(up), parts, q_part, np.asarray(node_gpus, np.int64),
           np.asarray(node_cores, np.int64), np.asarray(node_weight, np.int64), r_end,
           r_ptr, r_nodes, r_gpus, r_cores, n_run, q_nodes, q_gpus, q_cores, q_limit,
           int(now), int(resolution), int(window),
           n_q if max_job_test is None else int(max_job_test),
           _keys(q_part, users), np.asarray(caps, np.int64),
           out_start, out_started, out_ptr, out_nodes)
    return out_start, out_started.astype(bool), out_ptr, out_nodes[:out_ptr[-1]]


def _keys(q_part, users) -> np.ndarray:
    """Per queued job, the entries it counts against: (partition, user, user and
    partition), each numbered from 0."""
    if not len(q_part):
        return np.zeros((0, 3), np.int64)
    user = np.arange(len(q_part)) if users is None else np.asarray(users, np.int64)
    pair = np.unique(np.stack([user, q_part], axis=1), axis=0, return_inverse=True)[1]
    _, user = np.unique(user, return_inverse=True)
    return np.stack([q_part, user.ravel(), np.asarray(pair).ravel()], axis=1).astype(np.int64)
