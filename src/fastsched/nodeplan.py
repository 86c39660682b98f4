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
* the work profile per node: breakpoints ``T[k]`` with the free (g, c, m)
  ``G/C/M[k]`` from ``T[k]`` to ``T[k + 1]`` (the last segment runs forever),
  stored *ragged*: node x's k-th breakpoint is ``WT[wo[x] + k]`` (``WG/WC/WM``
  alike, ``k < wlen[x]``) in its own segment of ``wcap[x]`` entries of flat
  arrays. Breakpoint counts are very uneven (ai-1m, 1M reservations: mean 40,
  max 462), so a padded nodes x max array was 13x the live data. A node that
  outgrows its segment moves to a twice bigger one at the end (:func:`_room`).
  The profile is kept between passes and updated in place: built once from
  the running jobs, a start holds its resources until its held end (on the
  absolute grid of multiples of the resolution, so breakpoints never move), a
  completion gives back what the job held from now on and drops breakpoints
  that no longer change anything, and a pass's reservations are undone when
  the pass ends. Between passes every breakpoint but the first is the held end
  of a running job, so a pass only sets a node's first breakpoint to now.

Speed: a job can only start now if its partition has N nodes whose free-now
resources (running jobs only) cover its request. Those counts are computed per
request *type* (partition, g, c, m), counted once and kept up to date through
starts and completions;
a pass is skipped when no queued job passes, and the walk stops after the last
that does (what follows cannot change this pass's starts). A start is at most
the need-th smallest node *tail* (wholly free after it), which bounds the scans.
A type planned often in a pass switches to a run index
(:mod:`fastsched.runindex`): its answers come in O(log) per run looked at
instead of a scan of every node's profile, and holds update it incrementally.

Reference counts: the kernels that allocate nothing and return no array are
leaf kernels, compiled without Numba's reference counting
(:mod:`fastsched.leafkernel` says why, and why it is safe); ``_plan_multi``
allocates its heap, so it asks for counting back (``_nrt=True``: callees
inherit the flag).
"""
from __future__ import annotations

from dataclasses import dataclass

from . import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
import numpy as np
from numba import njit

from .model.cluster import Cluster, NodeState
from .engine.placement import choose_gpus_kernel, topo_place
from .runindex import (MAX_SLOTS as _MAX_SLOTS, _A, _LN, add_slot, ix_add_slot, ix_hold,
                       ix_new_job, ix_packable, ix_touched, new_meta, tr_empty, tr_node,
                       tr_reserve, tr_succ)
from .model.constraints import (AFTER, AFTERANY, AFTERNOTOK, AFTEROK, Dependencies, LimitGroups,
                          PartitionChoices, csr_take)
from .model.errors import InputError
from .leafkernel import leaf_kernel
from .interrupt import DONE as _DONE, NOW as _NOW, PAUSE as _PAUSE, REQUEST as _REQUEST
from .interrupt import STOP as _STOP
from .interrupt import call as _call, interrupted as _interrupted, new_control
from .prefetch import prefetch, prefetch1
from .model.jobs import JobTable
from .model.validation import check_basic, reject, request_capacity

__all__ = ["simulate_nodes", "run_nodes", "NodeRun", "limit_reasons", "plan_nodes", "RunningJobs", "NodeDecisions", "check_node_jobs",
           "node_availability", "POLICY_CODES", "START", "RESERVED", "BLOCKED"]

POLICY_CODES = {"fcfs": 0, "easy": 1, "conservative": 2}
_FCFS, _EASY, _CONS = 0, 1, 2
_AFTER, _AFTERANY, _AFTEROK, _AFTERNOTOK = AFTER, AFTERANY, AFTEROK, AFTERNOTOK
_INF = np.int64(1) << np.int64(62)
_NCAPS = 5         # columns of LimitGroups.caps (constraints.CAPS)
#: a request type gets a run index after this many plans in one pass (< 0: never):
#: in the event loop, whose passes are many and mostly short, and in a single pass
#: (:func:`plan_nodes`), which plans the whole queue once, so builds pay sooner.
#: Read at each call, so tests can force either path.
_INDEX_AFTER = 16
_INDEX_AFTER_PASS = 4


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


def _request_types(jobs: JobTable, partition=None, rows=None):
    """Distinct (partition, gpus, cpus, mem) requests and each entry's type index.

    Entries are the jobs, or (multi-partition) ``partition[e]`` for job ``rows[e]``."""
    if partition is None:
        partition, rows = jobs.partition, slice(None)
    cols = (np.asarray(partition, dtype=np.int64), jobs.gpus_per_node[rows].astype(np.int64),
            jobs.cpus_per_node[rows].astype(np.int64), jobs.mem_per_node[rows].astype(np.int64))
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
        nodes = np.asarray(part.nodes, dtype=np.int64)
        if len(nodes) > 1 and not (nodes[1:] > nodes[:-1]).all():     # (mostly sorted)
            nodes = np.unique(nodes)
        nodes = nodes[(nodes >= 0) & (nodes < cluster.num_nodes)]
        nodes = nodes[avail[nodes]]
        lists.append(nodes)
        offsets[p + 1] = offsets[p] + len(nodes)
    flat = np.concatenate(lists) if lists else np.zeros(0, dtype=np.int64)
    return offsets, flat.astype(np.int64)


def _partition_bits(poff, pflat, num_nodes: int) -> np.ndarray:
    """Per node, bit p set when it is an available node of partition p (empty when
    there are more than 64 partitions: the pass then recounts instead)."""
    P = len(poff) - 1
    if P > 64:
        return np.zeros(0, dtype=np.uint64)
    bits = np.zeros(num_nodes, dtype=np.uint64)
    for p in range(P):
        bits[pflat[poff[p]:poff[p + 1]]] |= np.uint64(1) << np.uint64(p)
    return bits


def check_node_jobs(cluster: Cluster, jobs: JobTable, available=None,
                    partitions: PartitionChoices | None = None) -> PartitionChoices:
    """Raise InputError (naming the first bad job) for a job the node engine can never run.

    Beyond the basic checks (unique ids, limit >= 1, runtime >= 0, submit >= 0,
    num_nodes >= 1, requests >= 0, valid partition indices), a job needs
    ``num_nodes`` available nodes whose capacity covers its per-node request in
    its partition, or in at least one of its ``partitions``. Returns the
    choices without the partitions where the job can never run.
    """
    if partitions is None:
        partitions = PartitionChoices.single(jobs.partition)
    if len(jobs) == 0:
        return partitions
    check_basic(jobs)
    P = len(cluster.partitions)
    reject(jobs, (jobs.partition < 0) | (jobs.partition >= P), "partition",
            f"names partition index {{v}}, the cluster has {P} partition(s)")
    part = partitions.partition
    if len(part) and (part.min() < 0 or part.max() >= P):
        raise InputError(f"partition choices name an index outside 0..{P - 1}", field="partition")
    avail = node_availability(cluster, available)
    offsets, flat = _partition_nodes(cluster, avail)
    rows = np.repeat(np.arange(len(jobs)), np.diff(partitions.offsets))
    capacity = request_capacity([flat[offsets[p]:offsets[p + 1]] for p in range(P)], part,
                                jobs.gpus_per_node[rows], jobs.cpus_per_node[rows],
                                jobs.mem_per_node[rows], cluster)
    fits = jobs.num_nodes[rows] <= capacity
    ok_jobs = np.bincount(rows[fits], minlength=len(jobs)) > 0
    if not ok_jobs.all():
        i = int(np.flatnonzero(~ok_jobs)[0])
        e = int(partitions.offsets[i])
        names = ",".join(cluster.partitions[int(p)].name
                         for p in part[partitions.offsets[i]:partitions.offsets[i + 1]])
        raise InputError(
            f"job {jobs.job_id[i]} needs {jobs.num_nodes[i]} nodes with {jobs.gpus_per_node[i]} "
            f"GPUs, {jobs.cpus_per_node[i]} CPUs and {jobs.mem_per_node[i]} MB in partition "
            f"{names!r}, which has {capacity[e]} such available node(s)",
            field="num_nodes")
    if fits.all():
        return partitions
    offs = np.zeros(len(jobs) + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows[fits], minlength=len(jobs)), out=offs[1:])
    return PartitionChoices(offs, part[fits])


# --------------------------------------------------------------------------- kernels

@njit(cache=True)
def _widen(A, width):
    B = np.empty((A.shape[0], width), dtype=A.dtype)
    B[:, :A.shape[1]] = A
    return B


# The ragged profile's layout is owned by the kernels below and
# :func:`_segments`: node x's breakpoints are ``W?[wo[x]:wo[x] + wlen[x]]``, in
# a segment of ``wcap[x]`` entries; ``wst`` = [top (first entry never used),
# holes (entries of abandoned segments)].

@njit(cache=True)
def _resized(A, size, top):
    B = np.empty(size, dtype=A.dtype)
    B[:top] = A[:top]
    return B


@leaf_kernel
def _copy_segment(WT, WG, WC, WM, src, dst, n):
    """Copy n breakpoints from offset src to dst (dst < src or no overlap)."""
    for k in range(n):
        WT[dst + k] = WT[src + k]
        WG[dst + k] = WG[src + k]
        WC[dst + k] = WC[src + k]
        WM[dst + k] = WM[src + k]


@njit(cache=True)
def _compact(WT, WG, WC, WM, wo, wlen, wcap):
    """Slide every segment down over the holes (in place, in offset order, so a
    move never overwrites a segment not moved yet); returns the new top."""
    top = 0
    for x in np.argsort(wo, kind="mergesort"):
        o = wo[x]
        if o != top:
            _copy_segment(WT, WG, WC, WM, o, top, wlen[x])
            wo[x] = top
        top += wcap[x]
    return top


@njit(cache=True)
def _room(x, WT, WG, WC, WM, wo, wlen, wcap, wst, extra=2):
    """Keep room for ``extra`` more breakpoints on node x (two: what a hold or
    a give-back may add; callers test ``wlen[x] + extra > wcap[x]`` first: the
    call and the returned arrays cost in hot loops). A node that outgrows its
    segment moves to one twice as big at the top, leaving a hole. When the arrays are
    full, they are compacted if the holes are over half the live segments (a
    node's old segments add up to less than its current one, so holes never
    outweigh the live segments), and doubled if that is not enough. Returns
    the arrays (new ones when doubled)."""
    need = wlen[x] + extra
    if need <= wcap[x]:
        return WT, WG, WC, WM
    cap = wcap[x]
    while cap < need:
        cap *= 2
    top = wst[0]
    if top + cap > WT.shape[0] and 2 * wst[1] > top - wst[1]:
        top = _compact(WT, WG, WC, WM, wo, wlen, wcap)
        wst[1] = 0
    if top + cap > WT.shape[0]:
        size = max(WT.shape[0], 16)
        while size < top + cap:
            size *= 2
        WT = _resized(WT, size, top)
        WG = _resized(WG, size, top)
        WC = _resized(WC, size, top)
        WM = _resized(WM, size, top)
    _copy_segment(WT, WG, WC, WM, wo[x], top, wlen[x])
    wst[1] += wcap[x]
    wo[x] = top
    wcap[x] = cap
    wst[0] = top + cap
    return WT, WG, WC, WM


@leaf_kernel
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


@leaf_kernel
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


@leaf_kernel
def _build(x, now, WT, WG, WC, WM, wo, wlen, RT, RG, RC, RM, rlen, fg, fc, fm):
    """Work profile of node x from scratch, from its running jobs (held ends
    ``RT`` all > now, sorted). The engine builds it once and then keeps it."""
    o = wo[x]
    WT[o] = now
    WG[o] = fg[x]
    WC[o] = fc[x]
    WM[o] = fm[x]
    L = 1
    for r in range(rlen[x]):
        rt = RT[x, r]
        if rt == WT[o + L - 1]:
            WG[o + L - 1] += RG[x, r]
            WC[o + L - 1] += RC[x, r]
            WM[o + L - 1] += RM[x, r]
        else:
            WT[o + L] = rt
            WG[o + L] = WG[o + L - 1] + RG[x, r]
            WC[o + L] = WC[o + L - 1] + RC[x, r]
            WM[o + L] = WM[o + L - 1] + RM[x, r]
            L += 1
    wlen[x] = L


@leaf_kernel
def _build_all(now, WT, WG, WC, WM, wo, wlen, RT, RG, RC, RM, rlen, fg, fc, fm):
    """Every node's work profile from scratch (a single pass's set-up)."""
    for x in range(wlen.shape[0]):
        _build(x, now, WT, WG, WC, WM, wo, wlen, RT, RG, RC, RM, rlen, fg, fc, fm)


@leaf_kernel
def _on_grid(t, res):
    """t rounded up to the absolute time grid of multiples of res (res = 1: t
    itself). Every hold ends on it, so the profile's breakpoints do not move
    with ``now`` and the profile can be kept between passes."""
    if res == 1:
        return t
    return (t + res - 1) // res * res


@leaf_kernel
def _advance(x, now, WT, WG, WC, WM, wo, wlen):
    """Drop node x's breakpoints at or before ``now``: its first segment starts at now."""
    o = wo[x]
    L = wlen[x]
    k = 0
    while k + 1 < L and WT[o + k + 1] <= now:
        k += 1
    if k > 0:
        for r in range(k, L):
            WT[o + r - k] = WT[o + r]
            WG[o + r - k] = WG[o + r]
            WC[o + r - k] = WC[o + r]
            WM[o + r - k] = WM[o + r]
        wlen[x] = L - k
    WT[o] = now


@leaf_kernel
def _merge_at(x, k, WT, WG, WC, WM, wo, wlen):
    """Remove breakpoint k (>= 1) of node x when it no longer changes anything."""
    o = wo[x]
    L = wlen[x]
    if k < 1 or k >= L or WG[o + k] != WG[o + k - 1] or WC[o + k] != WC[o + k - 1] \
            or WM[o + k] != WM[o + k - 1]:
        return
    for r in range(k + 1, L):
        WT[o + r - 1] = WT[o + r]
        WG[o + r - 1] = WG[o + r]
        WC[o + r - 1] = WC[o + r]
        WM[o + r - 1] = WM[o + r]
    wlen[x] = L - 1


@leaf_kernel
def _give_back(x, s, e, g, c, m, WT, WG, WC, WM, wo, wlen):
    """Undo a hold of (g, c, m) over [s, e) on node x (s >= its first breakpoint):
    a completion (s = now, after :func:`_advance`) or a reservation at the end of
    its pass. The breakpoints at s and e go when they no longer change anything.
    Needs room for two more breakpoints, like :func:`_hold`."""
    o = wo[x]
    if e <= s:
        return
    a = _split(x, s, WT, WG, WC, WM, wo, wlen)
    b = _split(x, e, WT, WG, WC, WM, wo, wlen)
    for k in range(a, b):
        WG[o + k] += g
        WC[o + k] += c
        WM[o + k] += m
    _merge_at(x, b, WT, WG, WC, WM, wo, wlen)
    _merge_at(x, a, WT, WG, WC, WM, wo, wlen)


@leaf_kernel
def _tcount_update(x, og, oc, om, tcount, type_p, type_g, type_c, type_m, pbits, fg, fc, fm):
    """Node x's free-now went from (og, oc, om) to ``fg/fc/fm[x]``: adjust the
    kept free-now counts of the types already counted (``tcount`` >= 0) whose
    partition holds x. Without ``pbits`` (> 64 partitions) they are recounted."""
    if pbits.shape[0] == 0:
        tcount[:] = -1
        return
    bits = pbits[x]
    for ty in range(tcount.shape[0]):
        if tcount[ty] < 0 or not (bits >> np.uint64(type_p[ty])) & np.uint64(1):
            continue
        was = og >= type_g[ty] and oc >= type_c[ty] and om >= type_m[ty]
        now = fg[x] >= type_g[ty] and fc[x] >= type_c[ty] and fm[x] >= type_m[ty]
        if was and not now:
            tcount[ty] -= 1
        elif now and not was:
            tcount[ty] += 1


@leaf_kernel
def _split(x, t, WT, WG, WC, WM, wo, wlen):
    """Make t (>= WT[x, 0]) a breakpoint of node x; return its index. Needs room for one more."""
    o = wo[x]
    L = wlen[x]
    k = L - 1
    while WT[o + k] > t:
        k -= 1
    if WT[o + k] == t:
        return k
    for r in range(L, k + 1, -1):
        WT[o + r] = WT[o + r - 1]
        WG[o + r] = WG[o + r - 1]
        WC[o + r] = WC[o + r - 1]
        WM[o + r] = WM[o + r - 1]
    WT[o + k + 1] = t
    WG[o + k + 1] = WG[o + k]
    WC[o + k + 1] = WC[o + k]
    WM[o + k + 1] = WM[o + k]
    wlen[x] = L + 1
    return k + 1


@leaf_kernel
def _hold(x, s, e, g, c, m, WT, WG, WC, WM, wo, wlen):
    o = wo[x]
    a = _split(x, s, WT, WG, WC, WM, wo, wlen)
    b = _split(x, e, WT, WG, WC, WM, wo, wlen)
    for k in range(a, b):
        WG[o + k] -= g
        WC[o + k] -= c
        WM[o + k] -= m


@leaf_kernel
def _prefetch_node(x, WT, WG, WC, WM, wo, wlen, TR, last):
    """Start loading what a hold on node x reads first: its profile's last two
    lines in each array (_split scans back from the end) and its last run index
    entry (the index update walks back from it). Asked for together, the misses
    overlap instead of coming one after the other; for the next node of a job,
    they also overlap the current node's work."""
    k = wo[x] + wlen[x] - 1
    for A in (WT, WG, WC, WM):
        prefetch1(A, k)
        if k >= wo[x] + 8:
            prefetch1(A, k - 8)
    if last.shape[0] > 0 and last[x] >= 0:
        prefetch(TR, last[x], 0)


@leaf_kernel
def _segment_at(x, t, WT, wo, wlen):
    o = wo[x]
    k = wlen[x] - 1
    while WT[o + k] > t:
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
              WT, WG, WC, WM, wo, wlen, chosen, levels, unit, max_leaves, excl, boff, bnodes):
    """Earliest start of a job (or only "now?" when ``only_now``); fills ``chosen[:need]``
    with its nodes, ascending. Returns the start, -1 (only_now and it does not fit) or
    -2 (it fits now, but not within its topology constraint: no plan this pass).
    ``skip_now``: the caller knows it cannot fit now. The kept profiles (every
    breakpoint but the first > now) get their first segment moved to now here.
    With topology ``levels`` (L > 0), a start now takes the nodes
    :func:`fastsched.engine.placement.topo_place` picks from the candidates in best-fit order
    (``unit``: --segment, ``max_leaves``: --switches in force); when it finds none and
    no constraint is in force, plain best fit. ``excl`` (--exclusive=topo): only
    candidates whose whole leaf group (``bnodes[boff[b]:boff[b + 1]]``) is idle
    over [now, now + d), and no fallback."""
    P = plist.shape[0]
    # --- fits now?
    cand = np.empty(P, dtype=np.int64)
    nc = 0
    for i in range(P):
        x = plist[i]
        if capG[x] < g or capC[x] < c or capM[x] < m:
            continue
        o = wo[x]
        WT[o] = now
        if skip_now or WG[o] < g or WC[o] < c or WM[o] < m:
            continue
        ok = True
        k = 1
        L = wlen[x]
        while k < L and WT[o + k] < now + d:
            if WG[o + k] < g or WC[o + k] < c or WM[o + k] < m:
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
            o = wo[cand[i]]
            k1[i] = WG[o]
            k2[i] = WC[o]
            k3[i] = WM[o]
        if levels.shape[0] > 0:
            pref = cand[:nc][_lex_order(k0, k1, k2, k3, nc)]
            if excl:
                pref = _in_idle_blocks(pref, now, now + d, levels, boff, bnodes, capG, capC,
                                       capM, WT, WG, WC, WM, wo, wlen)
            got = topo_place(pref, levels, need, unit, max_leaves)
            if got.shape[0] == need:
                chosen[:need] = got
                return now
            if excl or unit > 1 or max_leaves > 0:
                return -2
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
    # Every node is wholly free after its last breakpoint (its tail), so the
    # start is at most the need-th smallest tail of an eligible node: t_up.
    # Nothing that starts after t_up can matter, which keeps the scans short.
    tails = np.empty(P, dtype=np.int64)
    nt = 0
    for i in range(P):
        x = plist[i]
        if capG[x] >= g and capC[x] >= c and capM[x] >= m:
            tails[nt] = WT[wo[x] + wlen[x] - 1]
            nt += 1
    if need == 1:
        t_up = tails[:nt].min()
    else:
        t_up = np.partition(tails[:nt], need - 1)[need - 1]
    if need == 1:
        # t = the earliest run start over all nodes; every candidate's run starts
        # at t, so the choice is by (free at t, index): no sort needed. The
        # sentinel (t_up, +inf...) loses to any run starting at or before t_up.
        bt = t_up
        bx = -1
        bg = bc = bm = _INF
        for i in range(P):
            x = plist[i]
            if capG[x] < g or capC[x] < c or capM[x] < m:
                continue
            o = wo[x]
            L = wlen[x]
            k = 0
            while k < L and WT[o + k] <= bt:
                if WG[o + k] >= g and WC[o + k] >= c and WM[o + k] >= m:
                    k2 = k + 1
                    while k2 < L and WG[o + k2] >= g and WC[o + k2] >= c and WM[o + k2] >= m:
                        k2 += 1
                    if k2 == L or WT[o + k2] - WT[o + k] >= d:
                        a = WT[o + k]
                        if (a < bt or (a == bt and (WG[o + k] < bg or (WG[o + k] == bg and (
                                WC[o + k] < bc or (WC[o + k] == bc and WM[o + k] < bm)))))):
                            bt = a
                            bx = x
                            bg = WG[o + k]
                            bc = WC[o + k]
                            bm = WM[o + k]
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
        o = wo[x]
        L = wlen[x]
        k = 0
        while k < L and WT[o + k] <= t_up:
            if WG[o + k] >= g and WC[o + k] >= c and WM[o + k] >= m:
                k2 = k + 1
                while k2 < L and WG[o + k2] >= g and WC[o + k2] >= c and WM[o + k2] >= m:
                    k2 += 1
                a = WT[o + k]
                if k2 == L:
                    ra[nr] = a
                    rb[nr] = _INF
                    rx[nr] = x
                    nr += 1
                elif WT[o + k2] - a >= d:
                    ra[nr] = a
                    rb[nr] = WT[o + k2] - d
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
            s = wo[x] + _segment_at(x, t, WT, wo, wlen)
            k0[nc] = -ra[r]
            k1[nc] = WG[s]
            k2[nc] = WC[s]
            k3[nc] = WM[s]
            cx[nc] = x
            nc += 1
    order = _lex_order(k0, k1, k2, k3, nc)
    for i in range(need):
        chosen[i] = cx[order[i]]
    chosen[:need].sort()
    return t


@leaf_kernel
def _plan_indexed(now, d, need, only_now, root, q, TR, WT, WG, WC, WM, wo, wlen, chosen):
    """:func:`_plan_job` (no topology) over the run index, slot ``q`` (the job's
    type): the same start and nodes. The slot's runs in key order (start, free
    g/c/m at the start, node) are the best-fit order of a start now and the
    start-sorted sweep of a later one."""
    z = tr_succ(TR, root, -1, d, q)
    if z < 0 or (only_now and TR[z, _A] != now):
        return -1
    if need == 1:
        chosen[0] = tr_node(TR, z)
        return TR[z, _A]
    return _plan_multi(z, now, d, need, only_now, root, q, TR, WT, WG, WC, WM, wo, wlen, chosen)


@njit(cache=True, _nrt=True)
def _plan_multi(z, now, d, need, only_now, root, q, TR, WT, WG, WC, WM, wo, wlen, chosen):
    """:func:`_plan_indexed` for a multi-node job, from its first run ``z``."""
    # --- smallest t covered by `need` feasible intervals [a, a + len - d]
    cap = 4 * need + 16
    hk = np.empty(cap, dtype=np.int64)
    hv = np.empty(cap, dtype=np.int64)
    hs = 0
    t = -1
    while z >= 0:
        t = TR[z, _A]
        if only_now and t != now:
            return -1
        at_t = 0
        while z >= 0 and TR[z, _A] == t:
            chosen[at_t] = tr_node(TR, z)
            at_t += 1
            if at_t == need:
                # need runs start at t: t is the start, and they are the choice (the
                # runs that start at t come first, in key order: free at t, node)
                chosen[:need].sort()
                return t
            if hs == cap:
                cap *= 2
                hk2 = np.empty(cap, dtype=np.int64)
                hv2 = np.empty(cap, dtype=np.int64)
                hk2[:hs] = hk[:hs]
                hv2[:hs] = hv[:hs]
                hk = hk2
                hv = hv2
            b = _INF if TR[z, _LN] >= _INF else t + TR[z, _LN] - d
            hs = _heap_push(hk, hv, hs, b, z)
            z = tr_succ(TR, root, z, d, q)
        while hs > 0 and hk[0] < t:
            hs = _heap_pop(hk, hv, hs)
        if hs >= need:
            break
        t = -1
    if t < 0:
        return -1
    # --- choose among the runs covering t: (-run start, free at t, node)
    cx = np.empty(hs, dtype=np.int64)
    ca = np.empty(hs, dtype=np.int64)
    for i in range(hs):
        cx[i] = tr_node(TR, hv[i])
        ca[i] = TR[hv[i], _A]
    by_node = np.argsort(cx)
    k0 = np.empty(hs, dtype=np.int64)
    k1 = np.empty(hs, dtype=np.int64)
    k2 = np.empty(hs, dtype=np.int64)
    k3 = np.empty(hs, dtype=np.int64)
    for i in range(hs):
        x = cx[by_node[i]]
        sg = wo[x] + _segment_at(x, t, WT, wo, wlen)
        k0[i] = -ca[by_node[i]]
        k1[i] = WG[sg]
        k2[i] = WC[sg]
        k3[i] = WM[sg]
    order = _lex_order(k0, k1, k2, k3, hs)
    for i in range(need):
        chosen[i] = cx[by_node[order[i]]]
    chosen[:need].sort()
    return t


@njit(cache=True)
def _ix_build(now, g, c, m, th, plist, capG, capC, capM, TR, fr, meta, WT, WG, WC, WM, wo,
              wlen, last, elig, root):
    """A new slot for a type in the shared run index: every capable node of its
    partition (first segments moved to now first) gets its runs at least ``th``
    long, and the slot's bit in ``elig[x]`` (holds on x can change its runs).
    Returns (root, TR, fr)."""
    TR = add_slot(TR, meta)
    q = meta[2] - 1
    for i in range(plist.shape[0]):
        x = plist[i]
        if capG[x] < g or capC[x] < c or capM[x] < m:
            continue
        elig[x] |= np.int64(1) << q
        WT[wo[x]] = now
        if meta[0] + wlen[x] + 2 > TR.shape[0]:
            TR, fr = tr_reserve(TR, fr, meta, wlen[x] + 2)
        root = ix_add_slot(TR, fr, meta, root, x, q, g, c, m, th, WT, WG, WC, WM, wo, wlen,
                           last)
    return root, TR, fr


@njit(cache=True)
def _min_limits(queue, q0, q1, limit, pc_off, pc_type, T):
    """Per request type: the shortest time limit of the jobs of ``queue[q0:q1]``
    that may ask for it (``_INF``: none). A pass only takes capacity away, so a
    run shorter than this, or a piece of it later, can never start one of them:
    the run index leaves such runs out (:func:`fastsched.runindex.ix_hold`)."""
    tmin = np.full(T, _INF, dtype=np.int64)
    for r in range(q0, q1):
        j = queue[r]
        for e in range(pc_off[j], pc_off[j + 1]):
            if limit[j] < tmin[pc_type[e]]:
                tmin[pc_type[e]] = limit[j]
    return tmin


@leaf_kernel
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


@leaf_kernel
def _held(j, nn, rg, rc, rm, jg_off, jg, caps, gusage):
    """The first cap of a limit group that starting job ``j`` would exceed, as
    ``group * NCAPS + cap``, or -1 when no limit holds it."""
    for e in range(jg_off[j], jg_off[j + 1]):
        grp = jg[e]
        want0 = 1
        want1 = nn[j] * rg[j]
        want2 = nn[j] * rc[j]
        want3 = nn[j] * rm[j]
        if caps[grp, 0] >= 0 and gusage[grp, 0] + want0 > caps[grp, 0]:
            return grp * _NCAPS + 0
        if caps[grp, 1] >= 0 and gusage[grp, 1] + want1 > caps[grp, 1]:
            return grp * _NCAPS + 1
        if caps[grp, 2] >= 0 and gusage[grp, 2] + want2 > caps[grp, 2]:
            return grp * _NCAPS + 2
        if caps[grp, 3] >= 0 and gusage[grp, 3] + want3 > caps[grp, 3]:
            return grp * _NCAPS + 3
    return -1


@leaf_kernel
def _charge(j, sign, nn, rg, rc, rm, jg_off, jg, gusage):
    """Add (sign=1) or remove (sign=-1) running job ``j`` from its groups' usage."""
    for e in range(jg_off[j], jg_off[j + 1]):
        grp = jg[e]
        gusage[grp, 0] += sign
        gusage[grp, 1] += sign * nn[j] * rg[j]
        gusage[grp, 2] += sign * nn[j] * rc[j]
        gusage[grp, 3] += sign * nn[j] * rm[j]


@leaf_kernel
def _fits_now_somewhere(j, nn, pc_off, pc_type, tcount, type_p, type_g, type_c, type_m,
                        poff, pflat, fg, fc, fm):
    """Could job ``j`` start now in one of its partitions, counting running jobs only?"""
    for e in range(pc_off[j], pc_off[j + 1]):
        if _type_count(pc_type[e], tcount, type_p, type_g, type_c, type_m,
                       poff, pflat, fg, fc, fm) >= nn[j]:
            return True
    return False


# --------------------------------------------------------------------------- --exclusive=topo

def _block_nodes(levels: np.ndarray, avail: np.ndarray):
    """(boff, bnodes): CSR of each leaf group's available nodes, ascending: what an
    --exclusive=topo job holds with a group. Built once per run."""
    if levels.shape[0] == 0:
        return np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64)
    leaf = levels[0].astype(np.int64)
    keep = np.flatnonzero((leaf >= 0) & avail)
    boff = np.zeros(int(leaf.max(initial=-1)) + 2, dtype=np.int64)
    np.cumsum(np.bincount(leaf[keep], minlength=len(boff) - 1), out=boff[1:])
    return boff, keep[np.argsort(leaf[keep], kind="stable")].astype(np.int64)


def _exclusive(pl, avail: np.ndarray, order: np.ndarray):
    """The kernels' --exclusive=topo inputs: (per job in ``order``, boff, bnodes); all
    off (and no CSR built) without levels or without exclusive jobs."""
    excl = pl.exclusive_topo[order] & (pl.levels.shape[0] > 0)
    if not excl.any():
        return (np.ascontiguousarray(excl), np.zeros(1, dtype=np.int64),
                np.zeros(0, dtype=np.int64))
    return (np.ascontiguousarray(excl),) + _block_nodes(pl.levels, avail)


@njit(cache=True)
def _in_idle_blocks(pref, s, e, levels, boff, bnodes, capG, capC, capM, WT, WG, WC, WM, wo, wlen):
    """The nodes of ``pref`` (order kept) whose whole leaf group is idle over [s, e):
    every node of it has its full capacity free there in the pass's plan."""
    state = np.zeros(boff.shape[0] - 1, dtype=np.int8)     # 0 unknown, 1 idle, 2 busy
    keep = np.zeros(pref.shape[0], dtype=np.bool_)
    for i in range(pref.shape[0]):
        b = levels[0, pref[i]]
        if b < 0:
            continue
        if state[b] == 0:
            state[b] = 1
            for q in range(boff[b], boff[b + 1]):
                y = bnodes[q]
                o = wo[y]
                k = 0
                while k < wlen[y] and WT[o + k] < e:
                    if WG[o + k] != capG[y] or WC[o + k] != capC[y] or WM[o + k] != capM[y]:
                        state[b] = 2
                        break
                    k += 1
                if state[b] == 2:
                    break
        keep[i] = state[b] == 1
    return pref[keep]


@njit(cache=True)
def _add_running(x, pe, g, c, m, jid, RT, RG, RC, RM, RJ, rlen, R):
    """Node x's running list gets (held end ``pe``, g, c, m, ``jid``), kept sorted by
    held end. Returns the arrays (widened when full) and R."""
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
    RG[x, r] = g
    RC[x, r] = c
    RM[x, r] = m
    RJ[x, r] = jid
    rlen[x] += 1
    return RT, RG, RC, RM, RJ, R


@leaf_kernel
def _take_running(x, jid, RT, RG, RC, RM, RJ, rlen):
    """Remove ``jid``'s entries from node x's running list (order kept); returns
    their latest held end and summed (g, c, m)."""
    e = g = c = m = 0
    w = 0
    for r in range(rlen[x]):
        if RJ[x, r] == jid:
            e = max(e, RT[x, r])
            g += RG[x, r]
            c += RC[x, r]
            m += RM[x, r]
        else:
            RT[x, w] = RT[x, r]
            RG[x, w] = RG[x, r]
            RC[x, w] = RC[x, r]
            RM[x, w] = RM[x, r]
            RJ[x, w] = RJ[x, r]
            w += 1
    rlen[x] = w
    return e, g, c, m


@njit(cache=True)
def _hold_blocks(j, now, pe, own, g, c, m, levels, boff, bnodes, capG, capC, capM,
                 fg, fc, fm, WT, WG, WC, WM, wo, wlen, wcap, wst, RT, RG, RC, RM, RJ, rlen, R):
    """Exclusive job ``j`` started now on ``own`` (ascending): every node of its leaf
    groups is held whole over [now, pe) (``pe``: its held end) in the profile and in
    the running state, by entries ``RJ = -2 - j`` (on its own nodes: capacity minus
    its request). Returns the running arrays (maybe widened), R and the profile
    arrays (maybe moved: :func:`_room`)."""
    blocks = np.unique(levels[0][own])
    for b in blocks:
        for q in range(boff[b], boff[b + 1]):
            y = bnodes[q]
            k = np.searchsorted(own, y)
            mine = k < own.shape[0] and own[k] == y
            hg = capG[y] - (g if mine else 0)
            hc = capC[y] - (c if mine else 0)
            hm = capM[y] - (m if mine else 0)
            WT[wo[y]] = now          # kept profile: every later breakpoint is > now
            _hold(y, now, pe, hg, hc, hm, WT, WG, WC, WM, wo, wlen)
            if wlen[y] + 2 > wcap[y]:
                WT, WG, WC, WM = _room(y, WT, WG, WC, WM, wo, wlen, wcap, wst)
            fg[y] -= hg
            fc[y] -= hc
            fm[y] -= hm
            RT, RG, RC, RM, RJ, R = _add_running(y, pe, hg, hc, hm, -2 - j, RT, RG, RC, RM, RJ,
                                                 rlen, R)
    return RT, RG, RC, RM, RJ, R, WT, WG, WC, WM


@njit(cache=True)
def _release_blocks(j, now, own, levels, boff, bnodes, fg, fc, fm, WT, WG, WC, WM, wo, wlen,
                    RT, RG, RC, RM, RJ, rlen):
    """Exclusive job ``j`` ended at ``now``: what :func:`_hold_blocks` held comes back
    (free now, and in the kept profile from now to its held end)."""
    for b in np.unique(levels[0][own]):
        for q in range(boff[b], boff[b + 1]):
            y = bnodes[q]
            _advance(y, now, WT, WG, WC, WM, wo, wlen)
            e, g, c, m = _take_running(y, -2 - j, RT, RG, RC, RM, RJ, rlen)
            fg[y] += g
            fc[y] += c
            fm[y] += m
            _give_back(y, now, e, g, c, m, WT, WG, WC, WM, wo, wlen)


@njit(cache=True, nogil=True)
def _pass(now, queue, qlen, policy, depth, full, res, window,
          limit, runtime, nn, rg, rc, rm, pc_off, pc_part, pc_type, offsets,
          type_p, type_g, type_c, type_m, capG, capC, capM, poff, pflat,
          fg, fc, fm, fmask, WT, WG, WC, WM, wo, wlen, wcap, wst, RT, RG, RC, RM, RJ, rlen, R,
          tcount, chosen, trial, start, end, planned, alloc_nodes, alloc_mask,
          jg_off, jg, caps, gusage, reason, part_used, levels, unit, max_leaves, leaf_wait,
          eligible, gmasks, index_after, pbits, excl, boff, bnodes, keep, ctl):
    """One scheduling pass at ``now`` over ``queue[:qlen]`` (job indices, queue order).

    The one copy of the planning logic: the event loop (:func:`_run`) and
    the single pass (:func:`plan_nodes`) both call it. It starts jobs (sets
    ``start/end/planned``, ``alloc_nodes/alloc_mask`` at ``offsets[j]``,
    ``part_used``, and updates the free-now state ``fg/fc/fm/fmask``, the
    running lists ``RT..RJ/rlen`` and the limit groups' ``gusage``), and
    records reservations (``planned[j] = t > now`` and their nodes in
    ``alloc_nodes``; no mask). A job a limit holds gets ``reason[j]`` (group *
    NCAPS + cap) and is skipped: no start, no reservation, blocks nobody. Jobs
    it does not reach are left untouched. Topology (``levels``, per job
    ``unit``, ``max_leaves`` in force until ``eligible + leaf_wait``; wait < 0:
    forever) shapes starts (see :func:`_plan_job`); GPUs on a node are taken
    by :func:`fastsched.engine.placement.choose_gpus_kernel` over ``gmasks`` when given. ``full``: walk the whole queue (no
    early stop, no skipped pass). ``index_after``: a request type's later starts come from a run
    index (:mod:`fastsched.runindex`, same answers) once it has been planned
    more than this many times in the pass (< 0: never; not with topology; the first
    ``MAX_SLOTS`` such types share one index, later ones keep the scan path).
    ``pbits``: :func:`_partition_bits`, to keep the free-now counts up to date
    through starts (empty: recount after every start). ``excl`` (per job),
    ``boff``/``bnodes`` (:func:`_block_nodes`): --exclusive=topo jobs start only
    on idle leaf groups and hold them whole (:func:`_hold_blocks`). ``ctl``: the
    control array of :mod:`fastsched.interrupt`; on a stop request the pass
    ends after the job it is planning (jobs not reached are left untouched).

    The work profile ``WT..WM/wo/wlen/wcap/wst`` (ragged, see :func:`_room`) is
    kept between passes: on entry it holds the running jobs only (every
    breakpoint but the first > now; room for two more breakpoints on every
    node: wlen + 2 <= wcap), like ``tcount`` (free-now counts per type, -1: not counted
    yet). Starts stay in it; reservations are undone before returning when
    ``keep`` (the caller plans from it again; :func:`plan_nodes` drops it).

    Returns ``(nstarted or -1 when the pass was skipped, WT, WG, WC, WM,
    RT, RG, RC, RM, RJ, R)``: the arrays may have been replaced by bigger ones.
    """
    last = -1
    if policy == _FCFS or full:
        last = qlen - 1
    else:
        for q in range(qlen - 1, -1, -1):
            if _fits_now_somewhere(queue[q], nn, pc_off, pc_type, tcount, type_p, type_g,
                                   type_c, type_m, poff, pflat, fg, fc, fm):
                last = q
                break
    if last < 0:
        return -1, WT, WG, WC, WM, RT, RG, RC, RM, RJ, R
    reserved = 0
    nstarted = 0
    resv = np.empty(last + 1, dtype=np.int64)      # the reserved jobs (undone at the end: keep)
    # the run index: one for the pass, a slot per indexed type (built lazily,
    # updated by every hold); a type without a slot keeps the scan path
    T = type_p.shape[0]
    slot = np.full(T, -1, dtype=np.int64)
    qn = np.zeros(T, dtype=np.int64)
    sg = np.empty(_MAX_SLOTS, dtype=np.int64)     # per slot: the type's request
    sc = np.empty(_MAX_SLOTS, dtype=np.int64)
    sm = np.empty(_MAX_SLOTS, dtype=np.int64)
    sth = np.empty(_MAX_SLOTS, dtype=np.int64)   # per slot: the shortest run it keeps
    tmin = np.empty(0, dtype=np.int64)
    nix = 0
    # the index packs node amounts in 32 bits: a cluster beyond that keeps the scan path
    indexed = index_after >= 0 and levels.shape[0] == 0 and ix_packable(capG, capC, capM)
    root = -1
    TR = tr_empty(1024)
    fr = np.empty(1024, dtype=np.int64)
    meta = new_meta()
    elig = np.zeros(0, dtype=np.int64)          # per node: the slots of its types (bits)
    lastid = np.zeros(0, dtype=np.int64)        # each node's last entry
    ids = np.empty(0, dtype=np.int64)           # buffers of ix_hold
    ibuf = np.empty((8, 0), dtype=np.int64)
    for q in range(last + 1):
        if ctl[_REQUEST] == _STOP:
            break
        j = queue[q]
        held = _held(j, nn, rg, rc, rm, jg_off, jg, caps, gusage)
        if held >= 0:
            reason[j] = held
            continue
        reason[j] = -1
        maybe_now = _fits_now_somewhere(j, nn, pc_off, pc_type, tcount, type_p, type_g,
                                        type_c, type_m, poff, pflat, fg, fc, fm)
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
        # the earliest start over the job's partitions (ties: the first listed);
        # plans hold from it to its end rounded up to the time grid
        dur = limit[j]
        ml = max_leaves[j]
        if ml > 0 and leaf_wait[j] >= 0 and now - eligible[j] >= leaf_wait[j]:
            ml = 0                  # --switches=k@wait: waited long enough
        t = -1
        for e in range(pc_off[j], pc_off[j + 1]):
            p = pc_part[e]
            plist = pflat[poff[p]:poff[p + 1]]
            now_here = _type_count(pc_type[e], tcount, type_p, type_g, type_c, type_m,
                                   poff, pflat, fg, fc, fm) >= nn[j]
            if only_now and not now_here:
                continue
            ty = pc_type[e]
            if indexed and slot[ty] < 0 and nix < _MAX_SLOTS:
                qn[ty] += 1
                if qn[ty] > index_after:
                    if nix == 0:
                        lastid = np.full(capG.shape[0], -1, dtype=np.int64)
                        elig = np.zeros(capG.shape[0], dtype=np.int64)
                        tmin = _min_limits(queue, q, last + 1, limit, pc_off, pc_type, T)
                    sg[nix] = type_g[ty]
                    sc[nix] = type_c[ty]
                    sm[nix] = type_m[ty]
                    sth[nix] = tmin[ty]
                    root, TR, fr = _ix_build(now, sg[nix], sc[nix], sm[nix], sth[nix], plist,
                                             capG, capC, capM, TR, fr, meta, WT, WG, WC, WM,
                                             wo, wlen, lastid, elig, root)
                    slot[ty] = nix
                    nix += 1
            if slot[ty] >= 0:
                te = _plan_indexed(now, dur, nn[j], only_now, root, slot[ty], TR, WT, WG, WC,
                                   WM, wo, wlen, trial)
            else:
                te = _plan_job(now, rg[j], rc[j], rm[j], dur, nn[j], only_now, not now_here,
                               plist, capG, capC, capM, WT, WG, WC, WM, wo, wlen, trial, levels,
                               unit[j], ml, excl[j], boff, bnodes)
            if te >= 0 and (t < 0 or te < t):
                t = te
                part_used[j] = p
                chosen[:nn[j]] = trial[:nn[j]]
                if t == now:
                    break
        if t < 0:
            if policy == _FCFS:
                break
            continue
        if t - now > window:        # beyond the planning window: no reservation
            continue
        held_end = _on_grid(t + dur, res)
        # room for the holds first, so that the loop over the job's nodes assigns no
        # array: Numba counts references to an array variable reassigned in a loop
        # on every turn (atomic instructions, ~12 ns a variable)
        room = 0                # run-index entries the holds may add, in all
        room1 = 0               # ... at one node
        for i in range(nn[j]):
            x = chosen[i]
            if wlen[x] + 4 > wcap[x]:   # a hold adds two breakpoints; keep two more free
                WT, WG, WC, WM = _room(x, WT, WG, WC, WM, wo, wlen, wcap, wst, 4)
            room += nix * (wlen[x] + 4)
            room1 = max(room1, nix * (wlen[x] + 4))
        if nix > 0:
            if ids.shape[0] < 2 * room1:
                ids = np.empty(4 * room1, dtype=np.int64)
                ibuf = np.empty((8, 4 * room1), dtype=np.int64)
            if meta[0] + room > TR.shape[0]:
                TR, fr = tr_reserve(TR, fr, meta, room)
        ix_new_job(meta)        # insertion hints: this job's own entries only
        _prefetch_node(chosen[0], WT, WG, WC, WM, wo, wlen, TR, lastid)
        for i in range(nn[j]):
            x = chosen[i]
            if i + 1 < nn[j]:       # overlap the next node's first misses with this one
                _prefetch_node(chosen[i + 1], WT, WG, WC, WM, wo, wlen, TR, lastid)
            touched = np.int64(0)
            if nix > 0:         # the slots whose runs this hold can change: before it...
                ka = _split(x, t, WT, WG, WC, WM, wo, wlen)
                kb = _split(x, held_end, WT, WG, WC, WM, wo, wlen)
                touched = ix_touched(x, ka, kb, nix, sg, sc, sm, elig, WG, WC, WM, wo)
            _hold(x, t, held_end, rg[j], rc[j], rm[j], WT, WG, WC, WM, wo, wlen)
            if touched != 0:    # ... and their entries updated after it
                root = ix_hold(TR, fr, meta, root, x, ka, kb, touched, nix, sg, sc, sm, sth, WT,
                               WG, WC, WM, wo, wlen, lastid, ids, ibuf)
        planned[j] = t
        if t > now:
            resv[reserved] = j
            reserved += 1
            for i in range(nn[j]):
                alloc_nodes[offsets[j] + i] = chosen[i]
            continue
        # start j now on `chosen`
        start[j] = now
        end[j] = now + min(runtime[j], limit[j])
        _charge(j, 1, nn, rg, rc, rm, jg_off, jg, gusage)
        pe = held_end
        for i in range(nn[j]):
            x = chosen[i]
            o = offsets[j] + i
            alloc_nodes[o] = x
            taken = np.uint64(0)
            if gmasks.shape[0] > 0:
                taken = choose_gpus_kernel(fmask[x], rg[j], gmasks)
            else:
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
            _tcount_update(x, fg[x] + rg[j], fc[x] + rc[j], fm[x] + rm[j], tcount, type_p,
                           type_g, type_c, type_m, pbits, fg, fc, fm)
            RT, RG, RC, RM, RJ, R = _add_running(x, pe, rg[j], rc[j], rm[j], j, RT, RG, RC, RM,
                                                 RJ, rlen, R)
        if excl[j]:     # --exclusive=topo: the rest of its leaf groups is held too
            RT, RG, RC, RM, RJ, R, WT, WG, WC, WM = _hold_blocks(
                j, now, pe, chosen[:nn[j]], rg[j], rc[j], rm[j], levels, boff, bnodes,
                capG, capC, capM, fg, fc, fm, WT, WG, WC, WM, wo, wlen, wcap, wst,
                RT, RG, RC, RM, RJ, rlen, R)
            tcount[:] = -1          # recounted when next asked
        nstarted += 1
    # the next pass starts from the running jobs: undo this pass's reservations
    for i in range(reserved - 1 if keep else -1, -1, -1):
        j = resv[i]
        e = _on_grid(planned[j] + limit[j], res)
        for o in range(offsets[j], offsets[j] + nn[j]):
            _give_back(alloc_nodes[o], planned[j], e, rg[j], rc[j], rm[j], WT, WG, WC, WM, wo, wlen)
    return nstarted, WT, WG, WC, WM, RT, RG, RC, RM, RJ, R


@leaf_kernel
def _enqueue(j, queue, qlen, rank):
    """Insert job ``j`` into ``queue[:qlen]`` (kept sorted by ``rank``); returns the new length."""
    lo = 0
    hi = qlen
    while lo < hi:
        mid = (lo + hi) // 2
        if rank[queue[mid]] <= rank[j]:
            lo = mid + 1
        else:
            hi = mid
    for q in range(qlen, lo, -1):
        queue[q] = queue[q - 1]
    queue[lo] = j
    return qlen + 1


@leaf_kernel
def _release(j, started, ok, now, ch_off, ch_job, ch_kind, pend, never, arrived,
             eligible, queue, qlen, rank):
    """Job ``j`` started (``started``) or ended (``ok``: COMPLETED): count down its
    dependents' unsatisfied dependencies and queue those now free to run.
    Returns the new queue length."""
    for e in range(ch_off[j], ch_off[j + 1]):
        c = ch_job[e]
        k = ch_kind[e]
        if started:
            if k != _AFTER:
                continue
        elif k == _AFTER:
            continue
        elif (k == _AFTEROK and not ok) or (k == _AFTERNOTOK and ok):
            never[c] = True
            continue
        pend[c] -= 1
        if pend[c] == 0 and arrived[c] and not never[c]:
            eligible[c] = now
            qlen = _enqueue(c, queue, qlen, rank)
    return qlen


@njit(cache=True, nogil=True)
def _run(t_stop, sc, res, window, submit, limit, runtime, nn, rg, rc, rm, pc_off, pc_part, pc_type, offsets,
         type_p, type_g, type_c, type_m, capG, capC, capM, poff, pflat, policy, depth, rank,
         ch_off, ch_job, ch_kind, pend, never, arrived, eligible, jg_off, jg, caps, gusage,
         reason, part_used, start, end, planned, alloc_nodes, alloc_mask, fg, fc, fm, fmask,
         WT, WG, WC, WM, wo, wlen, wcap, wst, RT, RG, RC, RM, RJ, rlen, tcount, queue, evk, evj,
         chosen, trial, newly, levels, unit, max_leaves, leaf_wait, gmasks, index_after, pbits,
         excl, boff, bnodes, ctl):
    """The event loop, resumable: runs every instant <= ``t_stop`` and returns.

    Jobs are indexed in submit order. Scalars live in ``sc`` = [next arrival,
    queue length, events, pass id, passes, R]; the arrays that may be replaced
    by bigger ones (profile, running lists) are returned. At an instant:
    completions (freeing resources, limits and dependents), then arrivals
    (rejected over a max_submit cap; queued when their dependencies are
    satisfied), then a pass, repeated while zero-length
    jobs end at the instant or starts released dependents. The work profile
    and the free-now counts per type are kept across instants (see :func:`_pass`):
    a completion gives back what the job held from now to its held end.
    ``ctl`` (:mod:`fastsched.interrupt`): a stop request returns before the
    next instant and cuts a pass short; a pause request returns before the next
    instant once this call has run one (so that pausing always makes progress),
    and the loop can go on from there as if it never stopped. The loop writes
    the time and the jobs finished into it for progress bars.
    """
    n = submit.shape[0]
    a, qlen, nev, pass_id, passes, R = sc[0], sc[1], sc[2], sc[3], sc[4], sc[5]
    moved = False
    while a < n or nev > 0:
        now = submit[a] if a < n else evk[0]
        if nev > 0 and evk[0] < now:
            now = evk[0]
        if now > t_stop or ctl[_REQUEST] == _STOP or (moved and ctl[_REQUEST] == _PAUSE):
            break
        moved = True
        ctl[_NOW] = now
        while True:
            # 1. completions
            while nev > 0 and evk[0] == now:
                j = evj[0]
                nev = _heap_pop(evk, evj, nev)
                ctl[_DONE] += 1
                held_end = _on_grid(start[j] + limit[j], res)
                for q in range(offsets[j], offsets[j] + nn[j]):
                    x = alloc_nodes[q]
                    fmask[x] |= alloc_mask[q]
                    fg[x] += rg[j]
                    fc[x] += rc[j]
                    fm[x] += rm[j]
                    _tcount_update(x, fg[x] - rg[j], fc[x] - rc[j], fm[x] - rm[j], tcount,
                                   type_p, type_g, type_c, type_m, pbits, fg, fc, fm)
                    _advance(x, now, WT, WG, WC, WM, wo, wlen)
                    _give_back(x, now, held_end, rg[j], rc[j], rm[j], WT, WG, WC, WM, wo, wlen)
                    _take_running(x, j, RT, RG, RC, RM, RJ, rlen)
                if excl[j]:
                    _release_blocks(j, now, alloc_nodes[offsets[j]:offsets[j] + nn[j]], levels,
                                    boff, bnodes, fg, fc, fm, WT, WG, WC, WM, wo, wlen,
                                    RT, RG, RC, RM, RJ, rlen)
                    tcount[:] = -1      # recounted when next asked
                _charge(j, -1, nn, rg, rc, rm, jg_off, jg, gusage)
                for e in range(jg_off[j], jg_off[j + 1]):
                    gusage[jg[e], 4] -= 1
                qlen = _release(j, False, runtime[j] <= limit[j], now, ch_off, ch_job, ch_kind,
                                pend, never, arrived, eligible, queue, qlen, rank)
            # 2. arrivals
            while a < n and submit[a] == now:
                j = a
                a += 1
                for e in range(jg_off[j], jg_off[j + 1]):
                    grp = jg[e]
                    if caps[grp, 4] >= 0 and gusage[grp, 4] + 1 > caps[grp, 4]:
                        reason[j] = grp * _NCAPS + 4
                if reason[j] >= 0:          # rejected at submit
                    continue
                for e in range(jg_off[j], jg_off[j + 1]):
                    gusage[jg[e], 4] += 1
                arrived[j] = True
                if pend[j] == 0 and not never[j]:
                    eligible[j] = now
                    qlen = _enqueue(j, queue, qlen, rank)
            if qlen == 0:
                break
            # 3. one pass
            pass_id += 1
            nstarted, WT, WG, WC, WM, RT, RG, RC, RM, RJ, R = _pass(
                now, queue, qlen, policy, depth, False, res, window,
                limit, runtime, nn, rg, rc, rm, pc_off, pc_part, pc_type, offsets,
                type_p, type_g, type_c, type_m, capG, capC, capM, poff, pflat,
                fg, fc, fm, fmask, WT, WG, WC, WM, wo, wlen, wcap, wst, RT, RG, RC, RM, RJ, rlen, R,
                tcount, chosen, trial, start, end, planned, alloc_nodes, alloc_mask,
                jg_off, jg, caps, gusage, reason, part_used, levels, unit, max_leaves, leaf_wait,
                eligible, gmasks, index_after, pbits, excl, boff, bnodes, True, ctl)
            if nstarted < 0:
                break
            passes += 1
            released = False
            if nstarted > 0:
                w = 0
                k = 0
                for q in range(qlen):
                    j = queue[q]
                    if start[j] < 0:
                        queue[w] = j
                        w += 1
                    else:
                        nev = _heap_push(evk, evj, nev, end[j], j)
                        newly[k] = j
                        k += 1
                qlen = w
                for i in range(k):
                    before = qlen
                    qlen = _release(newly[i], True, True, now, ch_off, ch_job, ch_kind, pend,
                                    never, arrived, eligible, queue, qlen, rank)
                    released = released or qlen > before
            # zero-length jobs end now, or starts released dependents: pass again
            if not released and (nev == 0 or evk[0] != now):
                break
    sc[0], sc[1], sc[2], sc[3], sc[4], sc[5] = a, qlen, nev, pass_id, passes, R
    return WT, WG, WC, WM, RT, RG, RC, RM, RJ


# --------------------------------------------------------------------------- API

@dataclass(frozen=True)
class NodeRun:
    """What the node engine's event loop produced, in the caller's job order.

    Job i ran on ``alloc_nodes[alloc_offsets[i]:alloc_offsets[i+1]]``
    (ascending) with GPU bits ``alloc_gpu_mask`` there, in partition
    ``partition[i]``. A job that never started has start -1 and says why in
    ``reason[i]``: a limit group's cap (``group * 5 + cap``, see
    :mod:`fastsched.model.constraints`; cap 4 = rejected at submit), or -1 with
    ``never[i]`` (a dependency can no longer be satisfied) or still waiting for
    a dependency. ``eligible[i]``: when it entered the queue (-1: never).
    """

    start: np.ndarray
    end: np.ndarray
    alloc_offsets: np.ndarray
    alloc_nodes: np.ndarray
    alloc_gpu_mask: np.ndarray
    partition: np.ndarray
    reason: np.ndarray
    never: np.ndarray
    eligible: np.ndarray
    passes: int


def _permute_csr(offsets, values, order):
    """CSR rows reordered: new row k is old row ``order[k]``; (offsets, values)."""
    new_off, index = csr_take(offsets, order)
    return new_off, np.asarray(values)[index]


@dataclass(frozen=True)
class Progress:
    """A simulation so far, in the caller's job order (-1 where not yet)."""

    start: np.ndarray
    end: np.ndarray
    eligible: np.ndarray


class _EventLoop:
    """The compiled event loop's state between calls: lets a caller stop the
    clock (``run(t_stop)``), change the queue order (``set_rank``) and go on.
    Everything is indexed in submit order (``self.order`` maps to the caller's)."""

    def __init__(self, cluster, jobs, policy, reserve_depth, available, partitions,
                 dependencies, limits, resolution=1, window=None, placement=None):
        n = len(jobs)
        self.res, self.window = _grid(resolution, window)
        self.n = n
        avail = node_availability(cluster, available)
        self.poff, self.pflat = _partition_nodes(cluster, avail)
        self.pbits = _partition_bits(self.poff, self.pflat, cluster.num_nodes)
        order = np.lexsort((jobs.job_id, jobs.submit_time))
        self.order = order
        inverse = np.empty_like(order)
        inverse[order] = np.arange(n)
        self.inverse = inverse

        def q(a):
            return np.ascontiguousarray(np.asarray(a)[order], dtype=np.int64)

        self.submit, self.limit, self.runtime = q(jobs.submit_time), q(jobs.time_limit), \
            q(jobs.runtime)
        self.nn, self.rg, self.rc, self.rm = q(jobs.num_nodes), q(jobs.gpus_per_node), \
            q(jobs.cpus_per_node), q(jobs.mem_per_node)
        # partition choices -> per (job, partition) request types
        self.pc_off, pc_part = _permute_csr(partitions.offsets, partitions.partition, order)
        self.pc_part = pc_part.astype(np.int64)
        rows = np.repeat(order, np.diff(self.pc_off))
        types, self.pc_type = _request_types(jobs, self.pc_part, rows)
        self.types = [np.ascontiguousarray(types[:, k]) for k in range(4)]
        # dependencies -> each parent's dependents
        child = inverse[np.repeat(np.arange(n), np.diff(dependencies.offsets))]
        parent = inverse[dependencies.parent]
        by_parent = np.argsort(parent, kind="stable")
        self.ch_off = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(parent, minlength=n), out=self.ch_off[1:])
        self.ch_job = np.ascontiguousarray(child[by_parent], dtype=np.int64)
        self.ch_kind = np.ascontiguousarray(dependencies.kind[by_parent], dtype=np.int64)
        self.pend = np.bincount(child, minlength=n).astype(np.int64)
        # limit groups
        self.jg_off, jg = _permute_csr(limits.offsets, limits.group, order)
        self.jg = jg.astype(np.int64)
        self.caps = np.ascontiguousarray(limits.caps, dtype=np.int64).reshape(-1, _NCAPS)
        self.gusage = np.zeros((len(self.caps), _NCAPS), dtype=np.int64)
        self.capG = cluster.gpus.astype(np.int64)
        self.capC = cluster.cpus.astype(np.int64)
        self.capM = cluster.mem_mb.astype(np.int64)
        self.policy = POLICY_CODES[policy]
        self.depth = np.int64(reserve_depth if policy == "easy" else n + 1)
        self.rank = np.arange(n, dtype=np.int64)
        pl = _placement(placement, cluster, n)
        self.topo = (pl.levels, pl.unit[order], pl.max_leaves[order], pl.leaf_wait[order],
                     pl.gpu_groups)
        self.excl = _exclusive(pl, avail, order)
        self._allocate(cluster.num_nodes)

    def _allocate(self, X):
        n = self.n
        self.never = np.zeros(n, dtype=np.bool_)
        self.arrived = np.zeros(n, dtype=np.bool_)
        self.eligible = np.full(n, -1, dtype=np.int64)
        self.reason = np.full(n, -1, dtype=np.int64)
        self.part_used = np.full(n, -1, dtype=np.int64)
        self.start = np.full(n, -1, dtype=np.int64)
        self.end = np.full(n, -1, dtype=np.int64)
        self.planned = np.full(n, -1, dtype=np.int64)
        self.offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(self.nn, out=self.offsets[1:])
        total = int(self.offsets[-1])
        self.alloc_nodes = np.empty(total, dtype=np.int64)
        self.alloc_mask = np.zeros(total, dtype=np.uint64)
        self.fg, self.fc, self.fm = self.capG.copy(), self.capC.copy(), self.capM.copy()
        g = self.capG.astype(np.uint64)
        self.fmask = np.where(g >= 64, np.uint64(0xFFFFFFFFFFFFFFFF),
                              (np.uint64(1) << g) - np.uint64(1)).astype(np.uint64)
        R = 4
        # the kept work profile: every node wholly free (one segment, from time 0)
        self.W, self.wo, self.wcap, self.wst = _segments(np.full(X, 8, dtype=np.int64))
        self.W[1][self.wo], self.W[2][self.wo], self.W[3][self.wo] = self.capG, self.capC, self.capM
        self.wlen = np.ones(X, dtype=np.int64)
        self.Rs = [np.empty((X, R), dtype=np.int64) for _ in range(5)]
        self.rlen = np.zeros(X, dtype=np.int64)
        self.tcount = np.full(len(self.types[0]), -1, dtype=np.int64)
        self.queue = np.empty(n + 1, dtype=np.int64)
        self.evk = np.empty(n + 1, dtype=np.int64)
        self.evj = np.empty(n + 1, dtype=np.int64)
        maxN = max(1, int(self.nn.max(initial=1)))
        self.chosen = np.empty(maxN, dtype=np.int64)
        self.trial = np.empty(maxN, dtype=np.int64)
        self.newly = np.empty(n + 1, dtype=np.int64)
        self.sc = np.array([0, 0, 0, 0, 0, R], dtype=np.int64)
        self.control = new_control()

    @property
    def done(self) -> bool:
        return self.sc[0] >= self.n and self.sc[2] == 0

    def next_time(self) -> int:
        """The next instant the loop will process (-1: none)."""
        a, nev = self.sc[0], self.sc[2]
        t = [int(self.submit[a])] if a < self.n else []
        t += [int(self.evk[0])] if nev > 0 else []
        return min(t) if t else -1

    def set_rank(self, rank) -> None:
        """New queue order (``rank`` in the caller's job order, lower first, unique)."""
        self.rank = np.ascontiguousarray(np.asarray(rank)[self.order], dtype=np.int64)
        qlen = self.sc[1]
        if qlen:
            q = self.queue[:qlen]
            q[:] = q[np.argsort(self.rank[q], kind="stable")]

    def progress(self) -> "Progress":
        inv = self.inverse
        return Progress(self.start[inv], self.end[inv], self.eligible[inv])

    def run(self, t_stop: int = int(_INF), tick=None) -> None:
        """Every instant up to ``t_stop``; ``tick(control)`` now and then while it
        runs (:mod:`fastsched.interrupt`). Raises Interrupted on Ctrl-C: the loop
        is then cut mid-pass and cannot go on."""
        W, Rs, control = self.W, self.Rs, self.control
        out = _call(_run, np.int64(t_stop), self.sc, self.res, self.window, self.submit,
                    self.limit, self.runtime, self.nn,
                    self.rg, self.rc, self.rm, self.pc_off, self.pc_part, self.pc_type,
                    self.offsets, *self.types, self.capG, self.capC, self.capM, self.poff,
                    self.pflat, self.policy, self.depth, self.rank, self.ch_off, self.ch_job,
                    self.ch_kind, self.pend, self.never, self.arrived, self.eligible, self.jg_off,
                    self.jg, self.caps, self.gusage, self.reason, self.part_used, self.start,
                    self.end, self.planned, self.alloc_nodes, self.alloc_mask, self.fg, self.fc,
                    self.fm, self.fmask, *W, self.wo, self.wlen, self.wcap, self.wst, Rs[0],
                    Rs[1], Rs[2],
                    Rs[3], Rs[4], self.rlen, self.tcount, self.queue, self.evk,
                    self.evj, self.chosen, self.trial, self.newly, *self.topo,
                    np.int64(_INDEX_AFTER), self.pbits, *self.excl, control,
                    control=control, tick=None if tick is None else (lambda: tick(control)))
        self.W, self.Rs = list(out[:4]), list(out[4:])

    def profile(self, x: int):
        """Node x's kept work profile: (breakpoints, free GPUs, CPUs, MB) views."""
        return _profile_of(self.W, self.wo, self.wlen, x)

    def result(self) -> NodeRun:
        inv = self.inverse
        offsets = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(self.nn[inv], out=offsets[1:])
        # allocations are stored in submit order; the caller's order is a row permutation
        src_off, nodes = _permute_csr(self.offsets, self.alloc_nodes, inv)
        _, mask = _permute_csr(self.offsets, self.alloc_mask, inv)
        return NodeRun(start=self.start[inv], end=self.end[inv], alloc_offsets=src_off,
                       alloc_nodes=nodes, alloc_gpu_mask=mask,
                       partition=self.part_used[inv].astype(np.int32), reason=self.reason[inv],
                       never=self.never[inv], eligible=self.eligible[inv],
                       passes=int(self.sc[4]))


def run_nodes(cluster: Cluster, jobs: JobTable, policy: str, reserve_depth: int = 1,
              available=None, *, partitions: PartitionChoices | None = None,
              dependencies: Dependencies | None = None, limits: LimitGroups | None = None,
              rank=None, reorder=None, period: int | None = None, resolution: int = 1,
              window: int | None = None, placement=None, tick=None, checkpoints=None,
              resume=None) -> NodeRun:
    """Simulate ``jobs`` on ``cluster`` node by node (GPU-granular), with constraints.

    ``partitions``/``dependencies``/``limits``: see :mod:`fastsched.model.constraints`
    (default: the ``partition`` column, none, none). Queue order: ``rank``
    (per job, lower first; ties by submit time, then job id; default submit
    time then job id). ``reorder(b, progress) -> rank`` recomputes it at the
    start ``b`` of every ``period``-second window of simulated time that has an
    event, for the events in that window (priorities recomputed every
    PriorityCalcPeriod); ``progress`` is a :class:`Progress` (start, end and
    eligible times so far, in the caller's order, -1 where not yet).

    ``resolution`` (s, Slurm's bf_resolution): every hold ends at its end
    rounded up to a multiple of ``resolution`` (an absolute grid: fewer
    distinct times, coarser plans; 1 = exact). ``window`` (s, bf_window): a job whose
    earliest start is more than ``window`` after now gets no reservation
    (and uses none of EASY's); None = no limit. ``placement``: topology-aware
    node choice and GPU groups (:class:`fastsched.model.constraints.Placement`).
    ``tick(control)``: called now and then while the compiled loop runs (progress
    bars: :mod:`fastsched.interrupt`). Ctrl-C raises
    :class:`fastsched.interrupt.Interrupted`. ``checkpoints``
    (:class:`fastsched.sim.checkpoint.Checkpoints`): the loop pauses at an instant
    boundary whenever one is due and saves ``{"loop", "reorder", "last"}``;
    ``resume`` (such a state) goes on from it instead of from the start, with
    the state's ``reorder`` (the inputs must be those of the saved run).
    """
    _check_policy(policy, reserve_depth)
    n = len(jobs)
    partitions = PartitionChoices.single(jobs.partition) if partitions is None else partitions
    dependencies = Dependencies.none(n) if dependencies is None else dependencies
    limits = LimitGroups.none(n) if limits is None else limits
    for what, c in (("partitions", partitions), ("dependencies", dependencies),
                    ("limits", limits)):
        if len(c) != n:
            raise InputError(f"{what} cover {len(c)} jobs, the table has {n}", field=what)
    partitions = check_node_jobs(cluster, jobs, available, partitions)
    if resume is not None:
        reorder = resume["reorder"]
    if reorder is not None and (period is None or period < 1):
        raise InputError(f"period must be >= 1 s, got {period!r}", field="period")
    if resume is not None:
        loop, last = resume["loop"], resume["last"]
    else:
        loop = _EventLoop(cluster, jobs, policy, reserve_depth, available, partitions,
                          dependencies, limits, resolution, window, placement)
        last = None
        if rank is not None:
            loop.set_rank(_unique_rank(rank, jobs))

    def watch(control):
        if tick is not None:
            tick(control)
        if checkpoints is not None and checkpoints.due():
            control[_REQUEST] = _PAUSE
    try:
        while not loop.done:
            t_stop = int(_INF)
            if reorder is not None:
                b = loop.next_time() // period * period     # the period the next instant is in
                if b != last:
                    loop.set_rank(_unique_rank(reorder(b, loop.progress()), jobs))
                    last = b
                t_stop = b + period - 1
            loop.run(t_stop, watch)
            if loop.control[_REQUEST] == _PAUSE:
                loop.control[_REQUEST] = 0
                checkpoints.save({"loop": loop, "reorder": reorder, "last": last})
    except KeyboardInterrupt as e:       # Ctrl-C between two calls: say where the run was
        raise _interrupted(loop.control, e) from None
    return loop.result()


def _placement(placement, cluster: Cluster, n: int):
    """The checked placement spec (none: topology off, lowest free GPU indices)."""
    from .model.constraints import Placement
    if placement is None:
        return Placement.none(n, cluster.num_nodes)
    if len(placement) != n:
        raise InputError(f"placement covers {len(placement)} jobs, the table has {n}",
                         field="placement")
    if placement.levels.shape[0] and placement.levels.shape[1] != cluster.num_nodes:
        raise InputError(f"placement levels cover {placement.levels.shape[1]} nodes, the "
                         f"cluster has {cluster.num_nodes}", field="placement")
    return placement


def _grid(resolution, window) -> tuple[np.int64, np.int64]:
    """Checked (resolution, window) as the kernels take them (no window: "forever")."""
    if isinstance(resolution, bool) or not isinstance(resolution, (int, np.integer)) \
            or resolution < 1:
        raise InputError(f"resolution must be an integer >= 1 s, got {resolution!r}",
                         field="resolution")
    if window is None:
        return np.int64(resolution), _INF
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 0:
        raise InputError(f"window must be an integer >= 0 s, got {window!r}", field="window")
    return np.int64(resolution), np.int64(window)


def _unique_rank(rank, jobs: JobTable) -> np.ndarray:
    """Queue positions from a sort key (lower first; ties by submit time, then job id)."""
    rank = np.asarray(rank)
    n = len(jobs)
    if rank.shape != (n,):
        raise InputError(f"rank needs one entry per job ({n}), got shape {rank.shape}",
                         field="rank")
    out = np.empty(n, dtype=np.int64)
    out[np.lexsort((jobs.job_id, jobs.submit_time, rank))] = np.arange(n)
    return out


def simulate_nodes(cluster: Cluster, jobs: JobTable, policy: str, reserve_depth: int = 1,
                   available=None, *, return_passes: bool = False):
    """Simulate ``jobs`` on ``cluster`` node by node (GPU-granular), no constraints.

    Returns, in the caller's job order, ``(start int64[n], end int64[n],
    alloc_offsets int64[n+1], alloc_nodes int64[sum N], alloc_gpu_mask
    uint64[sum N])``; with ``return_passes`` a sixth item, the number of
    passes. See :func:`run_nodes` for everything else.
    """
    run = run_nodes(cluster, jobs, policy, reserve_depth, available)
    out = (run.start, run.end, run.alloc_offsets, run.alloc_nodes, run.alloc_gpu_mask)
    return out + (run.passes,) if return_passes else out


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
    job order). ``exclusive_topo`` (bool per job, None: none): the job ran with
    --exclusive=topo, so with a placement's levels :func:`plan_nodes` holds every
    available node of its leaf groups in full until its planned end, as the
    simulator does.
    """

    job_id: np.ndarray        # int64 [r]
    planned_end: np.ndarray   # int64 [r]
    node_offsets: np.ndarray  # int64 [r+1]
    nodes: np.ndarray         # int64 [E]
    gpus: np.ndarray          # int64 [E]
    cpus: np.ndarray          # int64 [E]
    mem: np.ndarray           # int64 [E]
    gpu_mask: np.ndarray | None = None   # uint64 [E]
    exclusive_topo: np.ndarray | None = None   # bool [r]

    @classmethod
    def from_arrays(cls, *, job_id, planned_end, node_offsets, nodes, gpus, cpus, mem,
                    gpu_mask=None, exclusive_topo=None) -> "RunningJobs":
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
                   None if gpu_mask is None else np.asarray(gpu_mask, dtype=np.uint64),
                   None if exclusive_topo is None else np.asarray(exclusive_topo, dtype=bool))

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
    #: squeue-style reason: "" (start), "Resources" (reserved), "Priority"
    #: (blocked behind others) or the name of the limit that holds the job
    reason: np.ndarray | None = None
    partition: np.ndarray | None = None   # int32, where it starts / is reserved (-1: blocked)

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
                             "num_nodes": np.diff(self.node_offsets),
                             "reason": self.reason})


def _segments(wcap: np.ndarray):
    """Storage of a ragged work profile (see :func:`_room`): node x gets a
    segment of ``wcap[x]`` entries, in node order, no holes. Returns
    ([WT, WG, WC, WM], wo, wcap, wst); the contents are left to the caller."""
    wcap = np.ascontiguousarray(wcap, dtype=np.int64).copy()
    wo = np.zeros(len(wcap), dtype=np.int64)
    np.cumsum(wcap[:-1], out=wo[1:])
    size = int(wcap.sum())
    W = [np.zeros(max(size, 1), dtype=np.int64) for _ in range(4)]
    return W, wo, wcap, np.array([size, 0], dtype=np.int64)


def _profile_of(W, wo, wlen, x: int):
    """Node x's breakpoints and free (g, c, m) from each: four views."""
    o, L = int(wo[x]), int(wlen[x])
    return tuple(A[o:o + L] for A in W)


def _running_state(cluster: Cluster, running: RunningJobs, now: int, res: int = 1):
    """Free-now arrays and per-node running lists from ``running``: held ends
    (planned ends rounded up to multiples of ``res``), sorted."""
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
    pe = np.repeat((pe_job + res - 1) // res * res, np.diff(offs))
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
    rlen = np.bincount(x, minlength=X).astype(np.int64)
    R = 4
    while R < int(rlen.max(initial=0)) + 1:
        R *= 2
    # a node's profile: room for its build and two breakpoints, and for a few
    # holds before its first move (B3 conservative, paired with the padded layout:
    # x1.05 with rlen + 3 alone, x0.95 with at least 16)
    wcap = np.maximum(rlen + 3, 16)
    RT, RG, RC, RM = (np.zeros((X, R), dtype=np.int64) for _ in range(4))
    _running_lists(x, pe, g, c, m, RT, RG, RC, RM)
    RJ = np.full((X, R), -1, dtype=np.int64)
    return capG, capC, capM, fg, fc, fm, fmask, RT, RG, RC, RM, RJ, rlen, R, wcap


@njit(cache=True)
def _running_lists(x, pe, g, c, m, RT, RG, RC, RM):
    """Fill RT/RG/RC/RM (zeros) with each node's entries of ``x`` sorted by
    held end ``pe``, equal ends in entry order. An insertion into the node's
    row per entry: a node has few running jobs (the shift is short), and a
    global sort by (node, end) costs more on a big cluster (30 -> 17 ms on ai-1m)."""
    n = np.zeros(RT.shape[0], dtype=np.int64)
    for e in range(x.shape[0]):
        y = x[e]
        k = n[y]
        while k > 0 and RT[y, k - 1] > pe[e]:
            RT[y, k] = RT[y, k - 1]
            RG[y, k] = RG[y, k - 1]
            RC[y, k] = RC[y, k - 1]
            RM[y, k] = RM[y, k - 1]
            k -= 1
        RT[y, k] = pe[e]
        RG[y, k] = g[e]
        RC[y, k] = c[e]
        RM[y, k] = m[e]
        n[y] += 1


def _with_held_blocks(cluster: Cluster, running: RunningJobs, levels, avail) -> RunningJobs:
    """``running`` where each --exclusive=topo job also holds the rest of its leaf
    groups: every available node there in full (on its own nodes, capacity minus
    its request), GPU mask 0: the running state the simulator keeps."""
    flags = running.exclusive_topo
    if flags is None or levels.shape[0] == 0 or not np.any(flags):
        return running
    flags = np.asarray(flags, dtype=bool)
    offs = np.asarray(running.node_offsets, dtype=np.int64)
    if flags.shape != (len(running.job_id),) or len(offs) != len(flags) + 1:
        raise InputError("running: exclusive_topo needs one entry per job", field="running")
    x = np.asarray(running.nodes, dtype=np.int64)
    if len(x) and ((x < 0).any() or (x >= cluster.num_nodes).any()):
        raise InputError("running: node index out of range", field="running")
    job = np.repeat(np.arange(len(flags)), np.diff(offs))
    leaf = levels[0][x].astype(np.int64)
    sel = flags[job] & (leaf >= 0)
    boff, bnodes = _block_nodes(levels, avail)
    pj, pb = np.unique(np.stack([job[sel], leaf[sel]]), axis=1)    # (job, group) pairs
    _, idx = csr_take(boff, pb)
    ej, ey = np.repeat(pj, boff[pb + 1] - boff[pb]), bnodes[idx]
    X = cluster.num_nodes
    own = np.zeros(len(ej), dtype=np.int64)          # own entry on that node, or -1
    key = job * X + x
    order = np.argsort(key, kind="stable")
    pos = np.searchsorted(key[order], ej * X + ey)
    found = (pos < len(key)) & (key[order][np.minimum(pos, len(key) - 1)] == ej * X + ey)
    own = np.where(found, order[np.minimum(pos, len(key) - 1)], -1)

    def held(cap, req):
        return cap[ey].astype(np.int64) - np.where(own >= 0, np.asarray(req)[own], 0)
    # a job that uses nothing on a node may share it (as in the simulator)
    uses = (np.asarray(running.gpus) > 0) | (np.asarray(running.cpus) > 0) | \
        (np.asarray(running.mem) > 0) | flags[job]
    users = np.unique(np.concatenate([(job * X + x)[uses], ej * X + ey])) % X
    shared = np.bincount(users, minlength=X) > 1
    if shared[ey].any():
        y = int(ey[shared[ey]][0])
        r = int(ej[shared[ey]][0])
        raise InputError(f"running job {running.job_id[r]} holds leaf group {levels[0][y]} "
                         f"(--exclusive=topo) but another running job uses its node "
                         f"{cluster.node_names[y]}", field="running")
    rows = np.concatenate([job, ej])
    by_job = np.argsort(rows, kind="stable")
    cat = lambda a, b: np.concatenate([np.asarray(a), b])[by_job]     # noqa: E731
    new_off = np.zeros(len(flags) + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=len(flags)), out=new_off[1:])
    mask = None if running.gpu_mask is None else \
        cat(running.gpu_mask, np.zeros(len(ej), dtype=np.uint64))
    return RunningJobs(running.job_id, running.planned_end, new_off, cat(x, ey),
                       cat(running.gpus, held(cluster.gpus, running.gpus)),
                       cat(running.cpus, held(cluster.cpus, running.cpus)),
                       cat(running.mem, held(cluster.mem_mb, running.mem)), mask, flags)


def plan_nodes(cluster: Cluster, running: RunningJobs, pending: JobTable, now: int,
               policy: str, reserve_depth: int = 1, available=None, *,
               full: bool = False, partitions: PartitionChoices | None = None,
               limits: LimitGroups | None = None, limit_usage=None,
               rank=None, resolution: int = 1, window: int | None = None,
               placement=None, eligible=None) -> NodeDecisions:
    """One scheduling pass at ``now`` of the node-level engine; changes nothing.

    The same compiled pass as :func:`run_nodes` (docs/gpu-semantics.md):
    ``running`` holds resources until its planned ends (all > ``now``;
    rounded up to multiples of ``resolution``),
    ``pending`` is planned in queue order (``rank`` if given, lower first;
    then submit time, then job id; submit times are not compared with
    ``now``). fcfs/easy/conservative stop after the last job that could start
    now, like the simulator (later jobs are BLOCKED); ``full=True`` walks the
    whole queue, so conservative gives every job a planned start (``squeue
    --start``) and easy makes its reservations even when nothing can start now.
    ``partitions``/``limits``: see :mod:`fastsched.model.constraints`, over the
    pending jobs; ``limit_usage`` (int64[G, 5]) is what running and pending
    jobs already count against the groups (default none). ``resolution`` /
    ``window`` / ``placement``: see :func:`run_nodes`; ``eligible`` (per
    pending job, default its submit time) starts a --switches wait.
    """
    _check_policy(policy, reserve_depth)
    res, win = _grid(resolution, window)
    pl = _placement(placement, cluster, len(pending))
    partitions = check_node_jobs(cluster, pending, available, partitions)
    n = len(pending)
    limits = LimitGroups.none(n) if limits is None else limits
    if len(limits) != n:
        raise InputError(f"limits cover {len(limits)} jobs, {n} are pending", field="limits")
    G = len(limits.caps)
    usage = np.zeros((G, _NCAPS), dtype=np.int64) if limit_usage is None else \
        np.array(limit_usage, dtype=np.int64)
    if usage.shape != (G, _NCAPS):
        raise InputError(f"limit_usage must have shape ({G}, {_NCAPS})", field="limit_usage")
    now = int(now)
    avail = node_availability(cluster, available)
    poff, pflat = _partition_nodes(cluster, avail)
    running = _with_held_blocks(cluster, running, pl.levels, avail)
    (capG, capC, capM, fg, fc, fm, fmask, RT, RG, RC, RM, RJ, rlen, R,
     wcap) = _running_state(cluster, running, now, int(res))
    X = cluster.num_nodes
    if rank is None:
        order = np.lexsort((pending.job_id, pending.submit_time))
    else:
        order = np.argsort(_unique_rank(rank, pending), kind="stable")

    def q(a):
        return np.ascontiguousarray(np.asarray(a)[order], dtype=np.int64)

    nn = q(pending.num_nodes)
    limit = q(pending.time_limit)
    pc_off, pc_part = _permute_csr(partitions.offsets, partitions.partition, order)
    types, pc_type = _request_types(pending, pc_part, np.repeat(order, np.diff(pc_off)))
    jg_off, jg = _permute_csr(limits.offsets, limits.group, order)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(nn, out=offsets[1:])
    total = int(offsets[-1])
    start = np.full(n, -1, dtype=np.int64)
    end = np.full(n, -1, dtype=np.int64)
    planned = np.full(n, -1, dtype=np.int64)
    reason = np.full(n, -1, dtype=np.int64)
    part_used = np.full(n, -1, dtype=np.int64)
    alloc_nodes = np.full(total, -1, dtype=np.int64)
    alloc_mask = np.zeros(total, dtype=np.uint64)
    W, wo, wcap, wst = _segments(wcap)
    wlen = np.zeros(X, dtype=np.int64)
    _build_all(np.int64(now), *W, wo, wlen, RT, RG, RC, RM, rlen, fg, fc, fm)
    tcount = np.full(len(types), -1, dtype=np.int64)
    chosen = np.empty(max(1, int(nn.max(initial=1))), dtype=np.int64)
    trial = np.empty_like(chosen)
    depth = int(reserve_depth) if policy == "easy" else n + 1
    code = POLICY_CODES[policy]
    walked = _walked(code, bool(full), pc_off, pc_type, nn, types, poff, pflat,
                     fg, fc, fm) if n else 0
    if n:
        control = new_control()
        nst = _call(_pass, np.int64(now), np.arange(n, dtype=np.int64), np.int64(n), code,
                    np.int64(depth),
                    bool(full), res, win, limit, limit, nn, q(pending.gpus_per_node),
                    q(pending.cpus_per_node), q(pending.mem_per_node), pc_off,
                    pc_part.astype(np.int64), pc_type, offsets[:-1].copy(),
                    *[np.ascontiguousarray(types[:, k]) for k in range(4)],
                    capG, capC, capM, poff, pflat, fg, fc, fm, fmask, *W, wo, wlen, wcap, wst,
                    RT, RG, RC, RM, RJ, rlen, np.int64(R), tcount, chosen, trial,
                    start, end, planned, alloc_nodes, alloc_mask, jg_off, jg.astype(np.int64),
                    np.ascontiguousarray(limits.caps, dtype=np.int64).reshape(-1, _NCAPS), usage,
                    reason, part_used, pl.levels, pl.unit[order], pl.max_leaves[order],
                    pl.leaf_wait[order],
                    q(pending.submit_time if eligible is None else eligible), pl.gpu_groups,
                    np.int64(_INDEX_AFTER_PASS), _partition_bits(poff, pflat, X),
                    *_exclusive(pl, avail, order), False, control, control=control)[0]
        if code == _FCFS:       # fcfs starts a prefix of the unheld queue, then stops
            walked = _fcfs_walked(nst, reason, n)
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
                         walked=walked, reason=_reason_names(outcome, reason, limits),
                         partition=part_used.astype(np.int32))


def _fcfs_walked(nstarted: int, reason: np.ndarray, n: int) -> int:
    """fcfs walks its starts and the held jobs among them, then the job it stops at."""
    for q in range(n):          # at most (starts + held + 1) steps: what the pass walked
        if reason[q] < 0:
            if nstarted == 0:
                return q + 1
            nstarted -= 1
    return n


def _reason_names(outcome, code, limits) -> np.ndarray:
    names = np.array(["", "Resources", "Priority"], dtype=object)[outcome]
    held = code >= 0
    names[held] = limit_reasons(limits, code[held])
    return names


def limit_reasons(limits: LimitGroups, code: np.ndarray) -> np.ndarray:
    """Reason names (object array, "" where none) of engine reason codes (group * 5 + cap)."""
    code = np.asarray(code, dtype=np.int64)
    table = np.array([r for caps in limits.reasons for r in caps] + [""], dtype=object)
    return table[np.where(code >= 0, code, len(table) - 1)]


def _walked(code, full, pc_off, pc_type, nn, types, poff, pflat, fg, fc, fm) -> int:
    """How many queue positions the pass walks (before it changes any state)."""
    n = len(nn)
    if code == _FCFS or full:
        return n
    # free-now eligibility count per request type (running jobs only)
    cnt = np.zeros(len(types), dtype=np.int64)
    for k, (p, g, c, m) in enumerate(types):
        nodes = pflat[poff[p]:poff[p + 1]]
        cnt[k] = int(np.count_nonzero((fg[nodes] >= g) & (fc[nodes] >= c) & (fm[nodes] >= m)))
    rows = np.repeat(np.arange(n), np.diff(pc_off))
    ok = np.flatnonzero(np.bincount(rows[cnt[pc_type] >= nn[rows]], minlength=n) > 0)
    return int(ok[-1]) + 1 if len(ok) else 0
