"""The node-level (GPU-granular) engine: heterogeneous nodes, overlapping
partitions, partial-node jobs, unavailable nodes.

Semantics: docs/gpu-semantics.md; the executable definition is
``tests/naive_nodes.py``, and this engine must give identical starts, nodes
and GPU masks. The whole event loop runs inside one Numba function.

Data layout (all flat NumPy arrays, one row per node):

* free now: ``fg/fc/fm`` (GPUs, CPUs, MB not used by running jobs) and
  ``fmask`` (bit k set = GPU k free);
* running jobs per node: ``RT/RG/RC/RM/RJ[node, :rlen[node]]`` = planned end
  and (g, c, m) of each running job on the node, sorted by planned end;
* the pass's work profile per node: breakpoints ``WT[node, k]`` with the free
  (g, c, m) from ``WT[node, k]`` to ``WT[node, k + 1]`` (the last segment runs
  forever). It is rebuilt lazily, the first time a pass touches a node, from
  the running jobs, and then receives the pass's starts and reservations.

Speed: a job can only start now if its partition has N nodes whose free-now
resources (running jobs only) cover its request. Those counts are computed per
request *type* (partition, g, c, m) and cached until the next start; a pass is
skipped when no queued job passes, and the walk stops after the last that does
(what follows cannot change this pass's starts).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .cluster import Cluster, NodeState
from .errors import InputError
from .jobs import JobTable
from .validation import check_basic, reject

__all__ = ["simulate_nodes", "plan_nodes", "RunningJobs", "NodeDecisions", "check_node_jobs",
           "node_availability", "POLICY_CODES", "START", "RESERVED", "BLOCKED"]

POLICY_CODES = {"fcfs": 0, "easy": 1, "conservative": 2}
_FCFS, _EASY, _CONS = 0, 1, 2
_INF = np.int64(1) << np.int64(62)


# --------------------------------------------------------------------------- inputs

def node_availability(cluster: Cluster, available=None) -> np.ndarray:
    """Per-node bool: usable by the scheduler.

    ``available``: None (all nodes), a bool array, or an integer array of
    :class:`NodeState` codes (available iff ``UP``).
    """
    n = cluster.num_nodes
    if available is None:
        return np.ones(n, dtype=np.bool_)
    a = np.asarray(available)
    if a.shape != (n,):
        raise InputError(f"availability has {a.size} entries for {n} nodes")
    if a.dtype == np.bool_:
        return a.copy()
    return a.astype(np.int64) == int(NodeState.UP)


def _request_types(jobs: JobTable):
    """Distinct (partition, gpus, cpus, mem) requests and each job's type index."""
    cols = (jobs.partition.astype(np.int64), jobs.gpus_per_node.astype(np.int64),
            jobs.cpus_per_node.astype(np.int64), jobs.mem_per_node.astype(np.int64))
    n = len(cols[0])
    if n == 0:
        return np.zeros((0, 4), dtype=np.int64), np.zeros(0, dtype=np.int64)
    # rows in lexicographic order (what np.unique(axis=0) gives, much faster)
    order = np.lexsort(cols[::-1])
    new = np.zeros(n, dtype=np.bool_)
    new[0] = True
    for col in cols:
        s = col[order]
        new[1:] |= s[1:] != s[:-1]
    types = np.stack([col[order][new] for col in cols], axis=1)
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    return types, inverse


def _partition_nodes(cluster: Cluster, avail: np.ndarray):
    """CSR of each partition's available nodes, ascending."""
    offsets = np.zeros(len(cluster.partitions) + 1, dtype=np.int64)
    lists = []
    for p, part in enumerate(cluster.partitions):
        nodes = np.unique(np.asarray(part.nodes, dtype=np.int64))
        nodes = nodes[(nodes >= 0) & (nodes < cluster.num_nodes)]
        nodes = nodes[avail[nodes]]
        lists.append(nodes)
        offsets[p + 1] = offsets[p] + len(nodes)
    flat = np.concatenate(lists) if lists else np.zeros(0, dtype=np.int64)
    return offsets, flat.astype(np.int64)


def check_node_jobs(cluster: Cluster, jobs: JobTable, available=None) -> None:
    """Raise InputError (naming the first bad job) for a job the node engine can never run.

    Beyond the basic checks (unique ids, limit >= 1, runtime >= 0, submit >= 0,
    num_nodes >= 1, requests >= 0, a valid partition index), a job needs
    ``num_nodes`` available nodes of its partition whose capacity covers its
    per-node request.
    """
    if len(jobs) == 0:
        return
    check_basic(jobs)
    P = len(cluster.partitions)
    reject(jobs, (jobs.partition < 0) | (jobs.partition >= P), "partition",
            f"names partition index {{v}}, the cluster has {P} partition(s)")
    avail = node_availability(cluster, available)
    offsets, flat = _partition_nodes(cluster, avail)
    types, inverse = _request_types(jobs)
    capacity = np.zeros(len(types), dtype=np.int64)
    for k, (p, g, c, m) in enumerate(types):
        nodes = flat[offsets[p]:offsets[p + 1]]
        capacity[k] = int(np.count_nonzero((cluster.gpus[nodes] >= g) & (cluster.cpus[nodes] >= c)
                                           & (cluster.mem_mb[nodes] >= m)))
    bad = jobs.num_nodes > capacity[inverse]
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        k = inverse[i]
        name = cluster.partitions[int(jobs.partition[i])].name
        raise InputError(
            f"job {jobs.job_id[i]} needs {jobs.num_nodes[i]} nodes with {jobs.gpus_per_node[i]} "
            f"GPUs, {jobs.cpus_per_node[i]} CPUs and {jobs.mem_per_node[i]} MB in partition "
            f"{name!r}, which has {capacity[k]} such available node(s)", field="num_nodes")


# --------------------------------------------------------------------------- kernels

@njit(cache=True)
def _widen(A, width):
    B = np.empty((A.shape[0], width), dtype=A.dtype)
    B[:, :A.shape[1]] = A
    return B


@njit(cache=True)
def _heap_push(key, val, size, k, v):
    i = size
    while i > 0:
        parent = (i - 1) // 2
        if key[parent] < k or (key[parent] == k and val[parent] <= v):
            break
        key[i] = key[parent]
        val[i] = val[parent]
        i = parent
    key[i] = k
    val[i] = v
    return size + 1


@njit(cache=True)
def _heap_pop(key, val, size):
    """Drop the smallest entry; returns the new size."""
    size -= 1
    k = key[size]
    v = val[size]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and (key[child + 1] < key[child] or
                                 (key[child + 1] == key[child] and val[child + 1] < val[child])):
            child += 1
        if k < key[child] or (k == key[child] and v <= val[child]):
            break
        key[i] = key[child]
        val[i] = val[child]
        i = child
    if size > 0:
        key[i] = k
        val[i] = v
    return size


@njit(cache=True)
def _build(x, now, WT, WG, WC, WM, wlen, RT, RG, RC, RM, rlen, fg, fc, fm):
    """Work profile of node x from its running jobs (planned ends all > now)."""
    WT[x, 0] = now
    WG[x, 0] = fg[x]
    WC[x, 0] = fc[x]
    WM[x, 0] = fm[x]
    L = 1
    for r in range(rlen[x]):
        if RT[x, r] == WT[x, L - 1]:
            WG[x, L - 1] += RG[x, r]
            WC[x, L - 1] += RC[x, r]
            WM[x, L - 1] += RM[x, r]
        else:
            WT[x, L] = RT[x, r]
            WG[x, L] = WG[x, L - 1] + RG[x, r]
            WC[x, L] = WC[x, L - 1] + RC[x, r]
            WM[x, L] = WM[x, L - 1] + RM[x, r]
            L += 1
    wlen[x] = L


@njit(cache=True)
def _split(x, t, WT, WG, WC, WM, wlen):
    """Make t (>= WT[x, 0]) a breakpoint of node x; return its index. Needs room for one more."""
    L = wlen[x]
    k = L - 1
    while WT[x, k] > t:
        k -= 1
    if WT[x, k] == t:
        return k
    for r in range(L, k + 1, -1):
        WT[x, r] = WT[x, r - 1]
        WG[x, r] = WG[x, r - 1]
        WC[x, r] = WC[x, r - 1]
        WM[x, r] = WM[x, r - 1]
    WT[x, k + 1] = t
    WG[x, k + 1] = WG[x, k]
    WC[x, k + 1] = WC[x, k]
    WM[x, k + 1] = WM[x, k]
    wlen[x] = L + 1
    return k + 1


@njit(cache=True)
def _hold(x, s, e, g, c, m, WT, WG, WC, WM, wlen):
    a = _split(x, s, WT, WG, WC, WM, wlen)
    b = _split(x, e, WT, WG, WC, WM, wlen)
    for k in range(a, b):
        WG[x, k] -= g
        WC[x, k] -= c
        WM[x, k] -= m


@njit(cache=True)
def _segment_at(x, t, WT, wlen):
    k = wlen[x] - 1
    while WT[x, k] > t:
        k -= 1
    return k


@njit(cache=True)
def _lex_order(k0, k1, k2, k3, count):
    """Order of 0..count-1 by (k0, k1, k2, k3, position): stable sorts, least significant first."""
    order = np.arange(count)
    for key in (k3, k2, k1, k0):
        sub = key[order]
        order = order[np.argsort(sub, kind="mergesort")]
    return order


@njit(cache=True)
def _plan_job(now, g, c, m, d, need, only_now, skip_now, plist, capG, capC, capM,
              WT, WG, WC, WM, wlen, stamp, pass_id, RT, RG, RC, RM, rlen, fg, fc, fm, chosen):
    """Earliest start of a job (or only "now?" when ``only_now``); fills ``chosen[:need]``
    with its nodes, ascending. Returns the start, or -1 (only_now and it does not fit).
    ``skip_now``: the caller knows it cannot fit now (only builds the profiles)."""
    P = plist.shape[0]
    # --- fits now?
    cand = np.empty(P, dtype=np.int64)
    nc = 0
    for i in range(P):
        x = plist[i]
        if capG[x] < g or capC[x] < c or capM[x] < m:
            continue
        if stamp[x] != pass_id:
            _build(x, now, WT, WG, WC, WM, wlen, RT, RG, RC, RM, rlen, fg, fc, fm)
            stamp[x] = pass_id
        if skip_now or WG[x, 0] < g or WC[x, 0] < c or WM[x, 0] < m:
            continue
        ok = True
        k = 1
        L = wlen[x]
        while k < L and WT[x, k] < now + d:
            if WG[x, k] < g or WC[x, k] < c or WM[x, k] < m:
                ok = False
                break
            k += 1
        if ok:
            cand[nc] = x
            nc += 1
    if nc >= need and not skip_now:
        k0 = np.zeros(nc, dtype=np.int64)
        k1 = np.empty(nc, dtype=np.int64)
        k2 = np.empty(nc, dtype=np.int64)
        k3 = np.empty(nc, dtype=np.int64)
        for i in range(nc):
            x = cand[i]
            k1[i] = WG[x, 0]
            k2[i] = WC[x, 0]
            k3[i] = WM[x, 0]
        if need == 1:
            best = 0
            for i in range(1, nc):
                if (k1[i] < k1[best] or (k1[i] == k1[best] and (k2[i] < k2[best] or (
                        k2[i] == k2[best] and k3[i] < k3[best])))):
                    best = i
            chosen[0] = cand[best]
        else:
            order = _lex_order(k0, k1, k2, k3, nc)
            for i in range(need):
                chosen[i] = cand[order[i]]
            chosen[:need].sort()
        return now
    if only_now:
        return -1
    if need == 1:
        # t = the earliest run start over all nodes; every candidate's run starts
        # at t, so the choice is by (free at t, index): no sort needed.
        bt = _INF
        bx = -1
        bg = bc = bm = 0
        for i in range(P):
            x = plist[i]
            if capG[x] < g or capC[x] < c or capM[x] < m:
                continue
            L = wlen[x]
            k = 0
            while k < L and WT[x, k] <= bt:
                if WG[x, k] >= g and WC[x, k] >= c and WM[x, k] >= m:
                    k2 = k + 1
                    while k2 < L and WG[x, k2] >= g and WC[x, k2] >= c and WM[x, k2] >= m:
                        k2 += 1
                    if k2 == L or WT[x, k2] - WT[x, k] >= d:
                        a = WT[x, k]
                        if (a < bt or (a == bt and (WG[x, k] < bg or (WG[x, k] == bg and (
                                WC[x, k] < bc or (WC[x, k] == bc and WM[x, k] < bm)))))):
                            bt = a
                            bx = x
                            bg = WG[x, k]
                            bc = WC[x, k]
                            bm = WM[x, k]
                        break
                    k = k2 + 1
                else:
                    k += 1
        chosen[0] = bx
        return bt
    # --- the feasible start intervals [a, b] of every eligible node
    total = 0
    for i in range(P):
        x = plist[i]
        if capG[x] >= g and capC[x] >= c and capM[x] >= m:
            total += (wlen[x] + 1) // 2 + 1
    ra = np.empty(total, dtype=np.int64)
    rb = np.empty(total, dtype=np.int64)
    rx = np.empty(total, dtype=np.int64)
    nr = 0
    for i in range(P):
        x = plist[i]
        if capG[x] < g or capC[x] < c or capM[x] < m:
            continue
        L = wlen[x]
        k = 0
        while k < L:
            if WG[x, k] >= g and WC[x, k] >= c and WM[x, k] >= m:
                k2 = k + 1
                while k2 < L and WG[x, k2] >= g and WC[x, k2] >= c and WM[x, k2] >= m:
                    k2 += 1
                a = WT[x, k]
                if k2 == L:
                    ra[nr] = a
                    rb[nr] = _INF
                    rx[nr] = x
                    nr += 1
                elif WT[x, k2] - a >= d:
                    ra[nr] = a
                    rb[nr] = WT[x, k2] - d
                    rx[nr] = x
                    nr += 1
                k = k2 + 1
            else:
                k += 1
    # --- smallest t covered by `need` intervals: sweep starts, min-heap of ends
    order = np.argsort(ra[:nr], kind="mergesort")
    hk = np.empty(nr, dtype=np.int64)
    hv = np.empty(nr, dtype=np.int64)
    hs = 0
    t = -1
    i = 0
    while i < nr:
        t = ra[order[i]]
        while i < nr and ra[order[i]] == t:
            hs = _heap_push(hk, hv, hs, rb[order[i]], 0)
            i += 1
        while hs > 0 and hk[0] < t:
            hs = _heap_pop(hk, hv, hs)
        if hs >= need:
            break
        t = -1
    # --- choose: (-run start, free at t, index)
    k0 = np.empty(nr, dtype=np.int64)
    k1 = np.empty(nr, dtype=np.int64)
    k2 = np.empty(nr, dtype=np.int64)
    k3 = np.empty(nr, dtype=np.int64)
    cx = np.empty(nr, dtype=np.int64)
    nc = 0
    for r in range(nr):         # runs are in node order, each node's in time order
        if ra[r] <= t and t <= rb[r]:
            x = rx[r]
            s = _segment_at(x, t, WT, wlen)
            k0[nc] = -ra[r]
            k1[nc] = WG[x, s]
            k2[nc] = WC[x, s]
            k3[nc] = WM[x, s]
            cx[nc] = x
            nc += 1
    order = _lex_order(k0, k1, k2, k3, nc)
    for i in range(need):
        chosen[i] = cx[order[i]]
    chosen[:need].sort()
    return t


@njit(cache=True)
def _type_count(ty, tcount, type_p, type_g, type_c, type_m, poff, pflat, fg, fc, fm):
    """Available nodes of the type's partition whose free-now (running jobs only) covers it."""
    if tcount[ty] < 0:
        p = type_p[ty]
        g = type_g[ty]
        c = type_c[ty]
        m = type_m[ty]
        cnt = 0
        for i in range(poff[p], poff[p + 1]):
            x = pflat[i]
            if fg[x] >= g and fc[x] >= c and fm[x] >= m:
                cnt += 1
        tcount[ty] = cnt
    return tcount[ty]


@njit(cache=True)
def _pass(now, queue, qlen, policy, depth, full, pass_id,
          limit, runtime, nn, rg, rc, rm, rp, rtype, offsets,
          type_p, type_g, type_c, type_m, capG, capC, capM, poff, pflat,
          fg, fc, fm, fmask, WT, WG, WC, WM, wlen, K, RT, RG, RC, RM, RJ, rlen, R,
          stamp, tcount, chosen, start, end, planned, alloc_nodes, alloc_mask):
    """One scheduling pass at ``now`` over ``queue[:qlen]`` (job indices, queue order).

    The one copy of the planning logic: the event loop (:func:`_simulate`) and
    the single pass (:func:`plan_nodes`) both call it. It starts jobs (sets
    ``start/end/planned``, ``alloc_nodes/alloc_mask`` at ``offsets[j]``, and
    updates the free-now state ``fg/fc/fm/fmask`` and the running lists
    ``RT..RJ/rlen``), and records reservations (``planned[j] = t > now`` and
    their nodes in ``alloc_nodes``; no mask). Jobs it does not reach or skips
    are left untouched. ``full``: walk the whole queue (no early stop, no
    skipped pass). ``pass_id`` must differ from every earlier pass's.

    Returns ``(nstarted or -1 when the pass was skipped, WT, WG, WC, WM, K,
    RT, RG, RC, RM, RJ, R)``: the work arrays may have been widened.
    """
    tcount[:] = -1
    last = -1
    if policy == _FCFS or full:
        last = qlen - 1
    else:
        for q in range(qlen - 1, -1, -1):
            j = queue[q]
            if _type_count(rtype[j], tcount, type_p, type_g, type_c, type_m,
                           poff, pflat, fg, fc, fm) >= nn[j]:
                last = q
                break
    if last < 0:
        return -1, WT, WG, WC, WM, K, RT, RG, RC, RM, RJ, R
    reserved = 0
    nstarted = 0
    for q in range(last + 1):
        j = queue[q]
        plist = pflat[poff[rp[j]]:poff[rp[j] + 1]]
        maybe_now = _type_count(rtype[j], tcount, type_p, type_g, type_c, type_m,
                                poff, pflat, fg, fc, fm) >= nn[j]
        if policy == _FCFS:
            if not maybe_now:
                break
            only_now = True
        elif policy == _EASY:
            if reserved >= depth:
                if not maybe_now:
                    continue
                only_now = True
            else:
                only_now = False
        else:
            only_now = False
        # room for two more breakpoints on every node
        need_w = 0
        for i in range(plist.shape[0]):
            need_w = max(need_w, wlen[plist[i]] + 2, rlen[plist[i]] + 3)
        if need_w > K:
            while K < need_w:
                K *= 2
            WT = _widen(WT, K)
            WG = _widen(WG, K)
            WC = _widen(WC, K)
            WM = _widen(WM, K)
        t = _plan_job(now, rg[j], rc[j], rm[j], limit[j], nn[j], only_now,
                      not maybe_now, plist,
                      capG, capC, capM, WT, WG, WC, WM, wlen, stamp, pass_id,
                      RT, RG, RC, RM, rlen, fg, fc, fm, chosen)
        if t < 0:
            if policy == _FCFS:
                break
            continue
        for i in range(nn[j]):
            _hold(chosen[i], t, t + limit[j], rg[j], rc[j], rm[j], WT, WG, WC, WM, wlen)
        planned[j] = t
        if t > now:
            reserved += 1
            for i in range(nn[j]):
                alloc_nodes[offsets[j] + i] = chosen[i]
            continue
        # start j now on `chosen`
        start[j] = now
        end[j] = now + min(runtime[j], limit[j])
        pe = now + limit[j]
        for i in range(nn[j]):
            x = chosen[i]
            o = offsets[j] + i
            alloc_nodes[o] = x
            taken = np.uint64(0)
            left = rg[j]
            free_bits = fmask[x]
            b = 0
            while left > 0:
                bit = np.uint64(1) << np.uint64(b)
                if free_bits & bit:
                    taken |= bit
                    left -= 1
                b += 1
            alloc_mask[o] = taken
            fmask[x] &= ~taken
            fg[x] -= rg[j]
            fc[x] -= rc[j]
            fm[x] -= rm[j]
            if rlen[x] + 1 > R:
                R *= 2
                RT = _widen(RT, R)
                RG = _widen(RG, R)
                RC = _widen(RC, R)
                RM = _widen(RM, R)
                RJ = _widen(RJ, R)
            r = rlen[x]
            while r > 0 and RT[x, r - 1] > pe:
                RT[x, r] = RT[x, r - 1]
                RG[x, r] = RG[x, r - 1]
                RC[x, r] = RC[x, r - 1]
                RM[x, r] = RM[x, r - 1]
                RJ[x, r] = RJ[x, r - 1]
                r -= 1
            RT[x, r] = pe
            RG[x, r] = rg[j]
            RC[x, r] = rc[j]
            RM[x, r] = rm[j]
            RJ[x, r] = j
            rlen[x] += 1
        nstarted += 1
        tcount[:] = -1
    return nstarted, WT, WG, WC, WM, K, RT, RG, RC, RM, RJ, R


@njit(cache=True)
def _simulate(submit, limit, runtime, nn, rg, rc, rm, rp, rtype, offsets,
              type_p, type_g, type_c, type_m, capG, capC, capM, poff, pflat, policy, depth):
    n = submit.shape[0]
    X = capG.shape[0]
    start = np.full(n, -1, dtype=np.int64)
    end = np.full(n, -1, dtype=np.int64)
    planned = np.full(n, -1, dtype=np.int64)
    total = 0
    for j in range(n):
        total += nn[j]
    alloc_nodes = np.empty(total, dtype=np.int64)
    alloc_mask = np.zeros(total, dtype=np.uint64)
    fg = capG.copy()
    fc = capC.copy()
    fm = capM.copy()
    fmask = np.zeros(X, dtype=np.uint64)
    for x in range(X):
        for b in range(capG[x]):
            fmask[x] |= np.uint64(1) << np.uint64(b)
    K = 8
    WT = np.empty((X, K), dtype=np.int64)
    WG = np.empty((X, K), dtype=np.int64)
    WC = np.empty((X, K), dtype=np.int64)
    WM = np.empty((X, K), dtype=np.int64)
    wlen = np.zeros(X, dtype=np.int64)
    R = 4
    RT = np.empty((X, R), dtype=np.int64)
    RG = np.empty((X, R), dtype=np.int64)
    RC = np.empty((X, R), dtype=np.int64)
    RM = np.empty((X, R), dtype=np.int64)
    RJ = np.empty((X, R), dtype=np.int64)
    rlen = np.zeros(X, dtype=np.int64)
    stamp = np.full(X, -1, dtype=np.int64)
    pass_id = 0
    ntypes = type_p.shape[0]
    tcount = np.full(ntypes, -1, dtype=np.int64)
    queue = np.empty(n + 1, dtype=np.int64)
    qlen = 0
    evk = np.empty(n + 1, dtype=np.int64)
    evj = np.empty(n + 1, dtype=np.int64)
    nev = 0
    maxN = 1
    for j in range(n):
        maxN = max(maxN, nn[j])
    chosen = np.empty(maxN, dtype=np.int64)
    passes = 0
    a = 0
    while a < n or nev > 0:
        now = submit[a] if a < n else evk[0]
        if nev > 0 and evk[0] < now:
            now = evk[0]
        while True:
            # 1. completions
            while nev > 0 and evk[0] == now:
                j = evj[0]
                nev = _heap_pop(evk, evj, nev)
                for q in range(offsets[j], offsets[j] + nn[j]):
                    x = alloc_nodes[q]
                    fmask[x] |= alloc_mask[q]
                    fg[x] += rg[j]
                    fc[x] += rc[j]
                    fm[x] += rm[j]
                    w = 0
                    for r in range(rlen[x]):
                        if RJ[x, r] != j:
                            RT[x, w] = RT[x, r]
                            RG[x, w] = RG[x, r]
                            RC[x, w] = RC[x, r]
                            RM[x, w] = RM[x, r]
                            RJ[x, w] = RJ[x, r]
                            w += 1
                    rlen[x] = w
            # 2. arrivals
            while a < n and submit[a] == now:
                queue[qlen] = a
                qlen += 1
                a += 1
            if qlen == 0:
                break
            # 3. one pass
            pass_id += 1
            nstarted, WT, WG, WC, WM, K, RT, RG, RC, RM, RJ, R = _pass(
                now, queue, qlen, policy, depth, False, pass_id,
                limit, runtime, nn, rg, rc, rm, rp, rtype, offsets,
                type_p, type_g, type_c, type_m, capG, capC, capM, poff, pflat,
                fg, fc, fm, fmask, WT, WG, WC, WM, wlen, K, RT, RG, RC, RM, RJ, rlen, R,
                stamp, tcount, chosen, start, end, planned, alloc_nodes, alloc_mask)
            if nstarted < 0:
                break
            passes += 1
            if nstarted > 0:
                w = 0
                for q in range(qlen):
                    j = queue[q]
                    if start[j] < 0:
                        queue[w] = j
                        w += 1
                    else:
                        nev = _heap_push(evk, evj, nev, end[j], j)
                qlen = w
            # zero-length jobs end now: complete them and pass again
            if nev == 0 or evk[0] != now:
                break
    return start, end, alloc_nodes, alloc_mask, passes


# --------------------------------------------------------------------------- API

def simulate_nodes(cluster: Cluster, jobs: JobTable, policy: str, reserve_depth: int = 1,
                   available=None, *, return_passes: bool = False):
    """Simulate ``jobs`` on ``cluster`` node by node (GPU-granular).

    ``policy``: "fcfs", "easy" (``reserve_depth`` reservations per pass) or
    "conservative". ``available``: see :func:`node_availability` (static for
    the whole run). Validates with :func:`check_node_jobs`.

    Returns, in the caller's job order, ``(start int64[n], end int64[n],
    alloc_offsets int64[n+1], alloc_nodes int64[sum N], alloc_gpu_mask
    uint64[sum N])``: job i ran on ``alloc_nodes[alloc_offsets[i]:alloc_offsets[i+1]]``
    (ascending), using GPU bits ``alloc_gpu_mask`` there (bit k = GPU k).
    With ``return_passes`` a sixth item: the number of scheduling passes run.
    """
    _check_policy(policy, reserve_depth)
    check_node_jobs(cluster, jobs, available)
    n = len(jobs)
    avail = node_availability(cluster, available)
    poff, pflat = _partition_nodes(cluster, avail)
    types, rtype = _request_types(jobs)
    order = np.lexsort((jobs.job_id, jobs.submit_time))
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(jobs.num_nodes, out=offsets[1:])

    def q(a):
        return np.ascontiguousarray(np.asarray(a)[order], dtype=np.int64)

    depth = int(reserve_depth) if policy == "easy" else n + 1
    start, end, alloc_nodes, alloc_mask, passes = _simulate(
        q(jobs.submit_time), q(jobs.time_limit), q(jobs.runtime), q(jobs.num_nodes),
        q(jobs.gpus_per_node), q(jobs.cpus_per_node), q(jobs.mem_per_node), q(jobs.partition),
        q(rtype), q(offsets[:-1]),
        np.ascontiguousarray(types[:, 0]), np.ascontiguousarray(types[:, 1]),
        np.ascontiguousarray(types[:, 2]), np.ascontiguousarray(types[:, 3]),
        cluster.gpus.astype(np.int64), cluster.cpus.astype(np.int64),
        cluster.mem_mb.astype(np.int64), poff, pflat, POLICY_CODES[policy], np.int64(depth))
    inverse = np.empty_like(order)
    inverse[order] = np.arange(n)
    out = (start[inverse], end[inverse], offsets, alloc_nodes, alloc_mask)
    return out + (int(passes),) if return_passes else out


def _check_policy(policy, reserve_depth) -> None:
    if policy not in POLICY_CODES:
        raise InputError(f"unknown policy {policy!r}; choose one of {sorted(POLICY_CODES)}",
                         field="policy")
    if isinstance(reserve_depth, bool) or not isinstance(reserve_depth, (int, np.integer)) \
            or reserve_depth < 1:
        raise InputError(f"reserve_depth must be an integer >= 1, got {reserve_depth!r}",
                         field="reserve_depth")


# --------------------------------------------------------------------------- single pass

START, RESERVED, BLOCKED = 0, 1, 2
OUTCOME_NAMES = ("start", "reserved", "blocked")


@dataclass(frozen=True)
class RunningJobs:
    """Jobs holding resources at the time of a pass.

    Job r holds, on each node ``nodes[node_offsets[r]:node_offsets[r+1]]``, the
    matching entries of ``gpus``/``cpus``/``mem`` (one entry per (job, node))
    until ``planned_end[r]`` (= start + time limit), on GPU indices
    ``gpu_mask`` (per entry; None: each node's lowest free indices, taken in
    job order).
    """

    job_id: np.ndarray        # int64 [r]
    planned_end: np.ndarray   # int64 [r]
    node_offsets: np.ndarray  # int64 [r+1]
    nodes: np.ndarray         # int64 [E]
    gpus: np.ndarray          # int64 [E]
    cpus: np.ndarray          # int64 [E]
    mem: np.ndarray           # int64 [E]
    gpu_mask: np.ndarray | None = None   # uint64 [E]

    @classmethod
    def from_arrays(cls, *, job_id, planned_end, node_offsets, nodes, gpus, cpus, mem,
                    gpu_mask=None) -> "RunningJobs":
        """Arrays, with ``gpus``/``cpus``/``mem`` either per entry or per job (repeated)."""
        job_id = np.asarray(job_id, dtype=np.int64)
        node_offsets = np.asarray(node_offsets, dtype=np.int64)
        nodes = np.asarray(nodes, dtype=np.int64)
        counts = np.diff(node_offsets)

        def per_entry(a):
            a = np.asarray(a, dtype=np.int64)
            if a.ndim == 0:
                return np.full(len(nodes), a, dtype=np.int64)
            if len(a) == len(job_id) and len(a) != len(nodes):
                return np.repeat(a, counts)
            return a
        return cls(job_id, np.asarray(planned_end, dtype=np.int64), node_offsets, nodes,
                   per_entry(gpus), per_entry(cpus), per_entry(mem),
                   None if gpu_mask is None else np.asarray(gpu_mask, dtype=np.uint64))

    @classmethod
    def empty(cls) -> "RunningJobs":
        z = np.zeros(0, dtype=np.int64)
        return cls(z, z, np.zeros(1, dtype=np.int64), z, z, z, z, None)

    def __len__(self) -> int:
        return len(self.job_id)


@dataclass(frozen=True)
class NodeDecisions:
    """One node-level pass: an outcome for every pending job, in queue order.

    ``outcome[i]``: START (start now on ``nodes_of(i)`` with GPU bits
    ``gpu_masks_of(i)``), RESERVED (planned to start at ``planned_start[i]``
    on ``nodes_of(i)``; masks 0) or BLOCKED (``planned_start`` -1, no nodes:
    skipped by EASY beyond its depth, after FCFS's stop, or after the pass's
    early stop when not ``full``).
    """

    now: int
    policy: str
    job_id: np.ndarray          # int64, queue order
    outcome: np.ndarray         # int8
    planned_start: np.ndarray   # int64, -1 when blocked
    node_offsets: np.ndarray    # int64 [n+1]
    nodes: np.ndarray           # int64, ascending per job
    gpu_mask: np.ndarray        # uint64, per node entry (0 for reservations)
    walked: int                 # queue positions the pass looked at (the rest: early stop)

    def __len__(self) -> int:
        return len(self.job_id)

    def nodes_of(self, i: int) -> np.ndarray:
        return self.nodes[self.node_offsets[i]:self.node_offsets[i + 1]]

    def gpu_masks_of(self, i: int) -> np.ndarray:
        return self.gpu_mask[self.node_offsets[i]:self.node_offsets[i + 1]]

    @property
    def starts(self) -> np.ndarray:
        """Job ids to start now, in queue order."""
        return self.job_id[self.outcome == START]

    def to_pandas(self):
        import pandas as pd
        return pd.DataFrame({"job_id": self.job_id,
                             "outcome": [OUTCOME_NAMES[o] for o in self.outcome],
                             "planned_start": self.planned_start,
                             "num_nodes": np.diff(self.node_offsets)})


def _running_state(cluster: Cluster, running: RunningJobs, now: int):
    """Free-now arrays and per-node running lists (sorted by planned end) from ``running``."""
    X = cluster.num_nodes
    capG = cluster.gpus.astype(np.int64)
    capC = cluster.cpus.astype(np.int64)
    capM = cluster.mem_mb.astype(np.int64)
    offs = np.asarray(running.node_offsets, dtype=np.int64)
    x = np.asarray(running.nodes, dtype=np.int64)
    E = len(x)
    if len(offs) != len(running.job_id) + 1 or offs[0] != 0 or offs[-1] != E \
            or (np.diff(offs) < 1).any():
        raise InputError("running: node_offsets must be a CSR (0, ..., len(nodes)) with at least "
                         "one node per job", field="running")
    if len(running.planned_end) != len(running.job_id):
        raise InputError("running: planned_end needs one entry per job", field="running")
    g = np.asarray(running.gpus, dtype=np.int64)
    c = np.asarray(running.cpus, dtype=np.int64)
    m = np.asarray(running.mem, dtype=np.int64)
    if not (len(g) == len(c) == len(m) == E):
        raise InputError("running: gpus/cpus/mem need one entry per (job, node)", field="running")
    if E and ((x < 0).any() or (x >= X).any()):
        raise InputError("running: node index out of range", field="running")
    pe_job = np.asarray(running.planned_end, dtype=np.int64)
    if len(pe_job) and pe_job.min() <= now:
        r = int(np.argmin(pe_job))
        raise InputError(f"running job {running.job_id[r]} has planned end {pe_job[r]} <= now "
                         f"({now}): complete it first", field="running")
    pe = np.repeat(pe_job, np.diff(offs))
    fg = capG - np.bincount(x, weights=g, minlength=X).astype(np.int64)
    fc = capC - np.bincount(x, weights=c, minlength=X).astype(np.int64)
    fm = capM - np.bincount(x, weights=m, minlength=X).astype(np.int64)
    if (fg < 0).any() or (fc < 0).any() or (fm < 0).any():
        bad = int(np.flatnonzero((fg < 0) | (fc < 0) | (fm < 0))[0])
        raise InputError(f"running jobs hold more than node {bad} has", field="running")
    full = np.where(capG >= 64, np.uint64(0xFFFFFFFFFFFFFFFF),
                    (np.uint64(1) << capG.astype(np.uint64)) - np.uint64(1)).astype(np.uint64)
    if running.gpu_mask is not None:
        mask = np.asarray(running.gpu_mask, dtype=np.uint64)
    else:   # lowest free indices per node, in entry order: bits [used before, + g)
        order = np.argsort(x, kind="stable")
        gs = g[order]
        csum = np.cumsum(gs) - gs
        first = np.searchsorted(x[order], x[order], side="left")
        before = np.empty(E, dtype=np.int64)
        before[order] = csum - csum[first]
        mask = (((np.uint64(1) << g.astype(np.uint64)) - np.uint64(1))
                << before.astype(np.uint64)).astype(np.uint64)
    used = np.zeros(X, dtype=np.uint64)
    np.bitwise_or.at(used, x, mask)
    fmask = full & ~used
    # per-node running lists sorted by planned end
    order = np.lexsort((pe, x))
    xs = x[order]
    rlen = np.bincount(x, minlength=X).astype(np.int64)
    R = 4
    while R < int(rlen.max(initial=0)) + 1:
        R *= 2
    K = 8
    while K < int(rlen.max(initial=0)) + 3:
        K *= 2
    first = np.zeros(X + 1, dtype=np.int64)
    np.cumsum(rlen, out=first[1:])
    col = np.arange(E, dtype=np.int64) - first[xs]
    RT = np.zeros((X, R), dtype=np.int64)
    RG = np.zeros((X, R), dtype=np.int64)
    RC = np.zeros((X, R), dtype=np.int64)
    RM = np.zeros((X, R), dtype=np.int64)
    RJ = np.full((X, R), -1, dtype=np.int64)
    RT[xs, col] = pe[order]
    RG[xs, col] = g[order]
    RC[xs, col] = c[order]
    RM[xs, col] = m[order]
    return capG, capC, capM, fg, fc, fm, fmask, RT, RG, RC, RM, RJ, rlen, R, K


def plan_nodes(cluster: Cluster, running: RunningJobs, pending: JobTable, now: int,
               policy: str, reserve_depth: int = 1, available=None, *,
               full: bool = False) -> NodeDecisions:
    """One scheduling pass at ``now`` of the node-level engine; changes nothing.

    The same compiled pass as :func:`simulate_nodes` (docs/gpu-semantics.md):
    ``running`` holds resources until its planned ends (all > ``now``),
    ``pending`` is planned in queue order (submit time, then job id; submit
    times are not compared with ``now``). fcfs/easy/conservative stop after
    the last job that could start now, like the simulator (later jobs are
    BLOCKED); ``full=True`` walks the whole queue, so conservative gives every
    job a planned start (``squeue --start``) and easy makes its reservations
    even when nothing can start now.
    """
    _check_policy(policy, reserve_depth)
    check_node_jobs(cluster, pending, available)
    now = int(now)
    avail = node_availability(cluster, available)
    poff, pflat = _partition_nodes(cluster, avail)
    (capG, capC, capM, fg, fc, fm, fmask, RT, RG, RC, RM, RJ, rlen, R,
     K) = _running_state(cluster, running, now)
    n = len(pending)
    X = cluster.num_nodes
    order = np.lexsort((pending.job_id, pending.submit_time))
    types, rtype = _request_types(pending)

    def q(a):
        return np.ascontiguousarray(np.asarray(a)[order], dtype=np.int64)

    nn = q(pending.num_nodes)
    limit = q(pending.time_limit)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(nn, out=offsets[1:])
    total = int(offsets[-1])
    start = np.full(n, -1, dtype=np.int64)
    end = np.full(n, -1, dtype=np.int64)
    planned = np.full(n, -1, dtype=np.int64)
    alloc_nodes = np.full(total, -1, dtype=np.int64)
    alloc_mask = np.zeros(total, dtype=np.uint64)
    WT = np.empty((X, K), dtype=np.int64)
    WG = np.empty((X, K), dtype=np.int64)
    WC = np.empty((X, K), dtype=np.int64)
    WM = np.empty((X, K), dtype=np.int64)
    wlen = np.zeros(X, dtype=np.int64)
    stamp = np.full(X, -1, dtype=np.int64)
    tcount = np.full(len(types), -1, dtype=np.int64)
    chosen = np.empty(max(1, int(nn.max(initial=1))), dtype=np.int64)
    depth = int(reserve_depth) if policy == "easy" else n + 1
    code = POLICY_CODES[policy]
    walked = _walked(code, bool(full), rtype[order] if n else rtype, nn, types, poff, pflat,
                     fg, fc, fm) if n else 0
    if n:
        nst = _pass(np.int64(now), np.arange(n, dtype=np.int64), np.int64(n), code, np.int64(depth),
              bool(full), np.int64(0), limit, limit, nn, q(pending.gpus_per_node),
              q(pending.cpus_per_node), q(pending.mem_per_node), q(pending.partition),
              q(rtype), offsets[:-1].copy(),
              np.ascontiguousarray(types[:, 0]), np.ascontiguousarray(types[:, 1]),
              np.ascontiguousarray(types[:, 2]), np.ascontiguousarray(types[:, 3]),
              capG, capC, capM, poff, pflat, fg, fc, fm, fmask, WT, WG, WC, WM, wlen,
              np.int64(K), RT, RG, RC, RM, RJ, rlen, np.int64(R), stamp, tcount, chosen,
              start, end, planned, alloc_nodes, alloc_mask)[0]
        if code == _FCFS:       # fcfs starts a prefix of the queue, then stops
            walked = min(n, int(nst) + 1)
    outcome = np.full(n, BLOCKED, dtype=np.int8)
    outcome[planned > now] = RESERVED
    outcome[start >= 0] = START
    keep = outcome != BLOCKED
    counts = np.where(keep, nn, 0)
    node_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=node_offsets[1:])
    entry_keep = np.repeat(keep, nn)
    return NodeDecisions(now=now, policy=policy, job_id=pending.job_id[order].copy(),
                         outcome=outcome, planned_start=planned, node_offsets=node_offsets,
                         nodes=alloc_nodes[entry_keep], gpu_mask=alloc_mask[entry_keep],
                         walked=walked)


def _walked(code, full, rtype_q, nn, types, poff, pflat, fg, fc, fm) -> int:
    """How many queue positions the pass walks (before it changes any state)."""
    n = len(nn)
    if code == _FCFS or full:
        return n
    # free-now eligibility count per request type (running jobs only)
    cnt = np.zeros(len(types), dtype=np.int64)
    for k, (p, g, c, m) in enumerate(types):
        nodes = pflat[poff[p]:poff[p + 1]]
        cnt[k] = int(np.count_nonzero((fg[nodes] >= g) & (fc[nodes] >= c) & (fm[nodes] >= m)))
    ok = np.flatnonzero(cnt[rtype_q] >= nn)
    return int(ok[-1]) + 1 if len(ok) else 0
