# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled kernels of fastsched (private: use the public API in fastsched).

The counted-pool engine: a machine of ``P`` interchangeable nodes where each job
takes ``procs`` whole nodes (an SWF machine is P single-processor nodes). Plans
are counts of free nodes over time, so they reduce exactly to the textbook
algorithms (Lifka's EASY, Mu'alem and Feitelson's conservative backfilling);
concrete nodes are only chosen when a job starts (lowest free indices first).

Semantics are defined by ``tests/naive.py``; this file must give identical
start times. Jobs are passed in queue order: sorted by (submit_time, job_id).
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport int64_t, uint64_t

cnp.import_array()

cdef enum:
    POLICY_FCFS = 0
    POLICY_EASY = 1
    POLICY_CONSERVATIVE = 2

POLICIES = {"fcfs": POLICY_FCFS, "easy": POLICY_EASY, "conservative": POLICY_CONSERVATIVE}

# --------------------------------------------------------------------------- heaps
# A binary min-heap of running jobs keyed by actual end time: the event queue.

cdef inline void _heap_push(int64_t[::1] key, int64_t[::1] val, int64_t* size,
                            int64_t k, int64_t v) noexcept nogil:
    cdef int64_t i = size[0], parent
    size[0] += 1
    while i > 0:
        parent = (i - 1) >> 1
        if key[parent] < k or (key[parent] == k and val[parent] <= v):
            break
        key[i] = key[parent]
        val[i] = val[parent]
        i = parent
    key[i] = k
    val[i] = v


cdef inline void _heap_pop(int64_t[::1] key, int64_t[::1] val, int64_t* size) noexcept nogil:
    """Remove the smallest entry (read key[0], val[0] first)."""
    cdef int64_t n = size[0] - 1, i = 0, child
    cdef int64_t k = key[n], v = val[n]
    size[0] = n
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and (key[child + 1] < key[child] or
                              (key[child + 1] == key[child] and val[child + 1] < val[child])):
            child += 1
        if k < key[child] or (k == key[child] and v <= val[child]):
            break
        key[i] = key[child]
        val[i] = val[child]
        i = child
    if n > 0:
        key[i] = k
        val[i] = v

# ---------------------------------------------------------------- free nodes
# A bitmap of free nodes (bit set = free): a starting job takes the lowest
# free indices in O(words + nodes), a finishing job sets its bits back.

cdef extern from *:
    int __builtin_ctzll(unsigned long long) nogil


cdef inline int64_t _take_lowest(uint64_t[::1] bits, int64_t first_word, int64_t need,
                                 int64_t[::1] out, int64_t out_at) noexcept nogil:
    """Write the ``need`` lowest free node indices to out[out_at:]; return the new first word."""
    cdef int64_t w = first_word, taken = 0
    cdef uint64_t x
    while taken < need:
        x = bits[w]
        while x != 0 and taken < need:
            out[out_at + taken] = (w << 6) + __builtin_ctzll(x)
            x &= x - 1
            taken += 1
        bits[w] = x
        if x == 0:
            w += 1
    return w


cdef inline int64_t _give_back(uint64_t[::1] bits, int64_t first_word, int64_t[::1] nodes,
                               int64_t lo, int64_t hi) noexcept nogil:
    """Mark nodes[lo:hi] free again; return the new first word."""
    cdef int64_t k, node
    for k in range(lo, hi):
        node = nodes[k]
        bits[node >> 6] |= (<uint64_t>1) << (node & 63)
        if (node >> 6) < first_word:
            first_word = node >> 6
    return first_word


# ------------------------------------------------------------ planned releases
# Running jobs as a sorted list of (planned end time, nodes released then),
# aggregated by time. Planning only ever needs these counts.

cdef inline int64_t _lower_bound(int64_t[::1] a, int64_t n, int64_t x) noexcept nogil:
    cdef int64_t lo = 0, hi = n, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline void _release_add(int64_t[::1] rt, int64_t[::1] rn, int64_t* m,
                              int64_t t, int64_t n) noexcept nogil:
    cdef int64_t i = _lower_bound(rt, m[0], t), j
    if i < m[0] and rt[i] == t:
        rn[i] += n
        return
    j = m[0]
    while j > i:
        rt[j] = rt[j - 1]
        rn[j] = rn[j - 1]
        j -= 1
    rt[i] = t
    rn[i] = n
    m[0] += 1


cdef inline void _release_remove(int64_t[::1] rt, int64_t[::1] rn, int64_t* m,
                                 int64_t t, int64_t n) noexcept nogil:
    cdef int64_t i = _lower_bound(rt, m[0], t), j
    rn[i] -= n
    if rn[i] == 0:
        m[0] -= 1
        for j in range(i, m[0]):
            rt[j] = rt[j + 1]
            rn[j] = rn[j + 1]

# --------------------------------------------------------------------- profile
# Free nodes over time for one pass: free[i] nodes from time pt[i] until
# pt[i + 1] (the last segment lasts forever). pt[0] is the pass time.

cdef inline int64_t _profile_build(int64_t now, int64_t free_now, int64_t[::1] rt,
                                   int64_t[::1] rn, int64_t m,
                                   int64_t[::1] pt, int64_t[::1] pf) noexcept nogil:
    cdef int64_t i, free = free_now
    pt[0] = now
    pf[0] = free
    for i in range(m):
        free += rn[i]
        pt[i + 1] = rt[i]
        pf[i + 1] = free
    return m + 1


cdef inline int64_t _profile_earliest(int64_t[::1] pt, int64_t[::1] pf, int64_t size,
                                      int64_t need, int64_t duration) noexcept nogil:
    """Index of the first breakpoint at which ``need`` nodes stay free for ``duration``."""
    cdef int64_t i = 0, j, end
    while i < size:
        if pf[i] < need:
            i += 1
            continue
        end = pt[i] + duration
        j = i + 1
        while j < size and pt[j] < end and pf[j] >= need:
            j += 1
        if j < size and pt[j] < end:   # segment j is too small: no start before it works
            i = j + 1
            continue
        return i
    return size   # unreachable when need <= P: the last segment has every node free


cdef inline bint _profile_fits_now(int64_t[::1] pt, int64_t[::1] pf, int64_t size,
                                   int64_t need, int64_t duration) noexcept nogil:
    cdef int64_t j = 0, end = pt[0] + duration
    while j < size and pt[j] < end:
        if pf[j] < need:
            return False
        j += 1
    return True


cdef inline int64_t _profile_insert(int64_t[::1] pt, int64_t[::1] pf, int64_t* size,
                                    int64_t t) noexcept nogil:
    """Make ``t`` (> pt[0]) a breakpoint; return its index."""
    cdef int64_t i = _lower_bound(pt, size[0], t), j
    if i < size[0] and pt[i] == t:
        return i
    for j in range(size[0], i, -1):
        pt[j] = pt[j - 1]
        pf[j] = pf[j - 1]
    pt[i] = t
    pf[i] = pf[i - 1]
    size[0] += 1
    return i


cdef inline void _profile_reserve(int64_t[::1] pt, int64_t[::1] pf, int64_t* size,
                                  int64_t start_index, int64_t need,
                                  int64_t duration) noexcept nogil:
    """Hold ``need`` nodes over [pt[start_index], pt[start_index] + duration)."""
    cdef int64_t end_index = _profile_insert(pt, pf, size, pt[start_index] + duration), i
    for i in range(start_index, end_index):
        pf[i] -= need

# ------------------------------------------------------------------ the passes
# Each pass walks the queue (job indices in queue order) and writes the jobs to
# start now into ``starts``; it returns how many. It does not change state.

cdef int64_t _pass_fcfs(int64_t[::1] queue, int64_t qlen, int64_t free,
                        int64_t[::1] procs, int64_t[::1] starts) noexcept nogil:
    cdef int64_t q, job, nstart = 0
    for q in range(qlen):
        job = queue[q]
        if procs[job] > free:
            break
        free -= procs[job]
        starts[nstart] = job
        nstart += 1
    return nstart


cdef int64_t _pass_easy1(int64_t now, int64_t[::1] queue, int64_t qlen, int64_t free,
                         int64_t[::1] procs, int64_t[::1] limit,
                         int64_t[::1] rt, int64_t[::1] rn, int64_t m,
                         int64_t[::1] suffix_min, int64_t[::1] starts) noexcept nogil:
    """Lifka's EASY backfill behind a blocked head ``queue[0]``.

    The head's shadow time is when enough running jobs will have ended for it;
    ``extra`` is what is free then beyond its need. A later job starts now if
    it fits now and either ends by the shadow time or uses only extra nodes.
    """
    cdef int64_t q = 0, job, nstart = 0, i, shadow, extra, avail
    job = queue[0]                      # the head: blocked (the FCFS part already ran)
    avail = free
    shadow = -1
    for i in range(m):
        avail += rn[i]
        if avail >= procs[job]:
            shadow = rt[i]
            break
    extra = avail - procs[job]
    q += 1
    while q < qlen and free >= suffix_min[q]:
        job = queue[q]
        if procs[job] <= free:
            if now + limit[job] <= shadow:
                free -= procs[job]
                starts[nstart] = job
                nstart += 1
            elif procs[job] <= extra:
                free -= procs[job]
                extra -= procs[job]
                starts[nstart] = job
                nstart += 1
        q += 1
    return nstart


cdef int64_t _pass_profile(int64_t now, int64_t[::1] queue, int64_t qlen, int64_t free,
                           int64_t[::1] procs, int64_t[::1] limit,
                           int64_t[::1] rt, int64_t[::1] rn, int64_t m,
                           int64_t reserve_depth, int64_t[::1] suffix_min,
                           int64_t[::1] pt, int64_t[::1] pf,
                           int64_t[::1] starts, int64_t[::1] planned,
                           bint stop_at_first_reservation) noexcept nogil:
    """EASY with ``reserve_depth`` reservations, or conservative (depth >= queue).

    Each job in order either fits now (and starts), or gets a reservation at
    its earliest start while fewer than ``reserve_depth`` were made, or is
    skipped. ``planned[job]`` receives the planned start (now, or the
    reservation) of every job that got one.
    The walk stops once no later job could start now (fewer free nodes now
    than the smallest later request): reservations after that point cannot
    change this pass's starts. (A what-if plan passes zeros as suffix_min.)
    ``stop_at_first_reservation`` gives FCFS: nothing passes a blocked head.
    """
    cdef int64_t size = _profile_build(now, free, rt, rn, m, pt, pf)
    cdef int64_t q, job, i, nstart = 0, reserved = 0
    for q in range(qlen):
        if pf[0] < suffix_min[q]:
            break
        job = queue[q]
        if reserved < reserve_depth:
            i = _profile_earliest(pt, pf, size, procs[job], limit[job])
            if i > 0:
                reserved += 1
        elif _profile_fits_now(pt, pf, size, procs[job], limit[job]):
            i = 0
        else:
            continue
        planned[job] = pt[i]
        _profile_reserve(pt, pf, &size, i, procs[job], limit[job])
        if i == 0:
            starts[nstart] = job
            nstart += 1
        elif stop_at_first_reservation:
            break
    return nstart


cdef inline int64_t _suffix_min(int64_t[::1] queue, int64_t qlen, int64_t[::1] procs,
                                int64_t[::1] suffix_min, int64_t big) noexcept nogil:
    """suffix_min[q] = smallest request among queue[q:]; returns suffix_min[0]."""
    cdef int64_t q
    suffix_min[qlen] = big
    for q in range(qlen - 1, -1, -1):
        suffix_min[q] = min(suffix_min[q + 1], procs[queue[q]])
    return suffix_min[0]


cdef inline int64_t _drop_started(int64_t[::1] queue, int64_t qlen,
                                  int64_t[::1] start) noexcept nogil:
    """Remove started jobs from the queue, keeping order; return the new length."""
    cdef int64_t q, w = 0
    for q in range(qlen):
        if start[queue[q]] < 0:
            queue[w] = queue[q]
            w += 1
    return w


cdef int64_t _start_jobs(int64_t now, int64_t[::1] starts, int64_t nstart,
                         int64_t[::1] procs, int64_t[::1] limit, const int64_t[::1] runtime,
                         int64_t[::1] offsets, int64_t[::1] start, int64_t[::1] end,
                         int64_t[::1] alloc, int64_t free,
                         uint64_t[::1] free_bits, int64_t* first_word,
                         int64_t[::1] rt, int64_t[::1] rn, int64_t* m,
                         int64_t[::1] ev_key, int64_t[::1] ev_job, int64_t* nev) noexcept nogil:
    """Start jobs now on the lowest-numbered free nodes; return the nodes left free."""
    cdef int64_t k, job
    for k in range(nstart):
        job = starts[k]
        start[job] = now
        end[job] = now + min(runtime[job], limit[job])
        free -= procs[job]
        first_word[0] = _take_lowest(free_bits, first_word[0], procs[job], alloc, offsets[job])
        _release_add(rt, rn, m, now + limit[job], procs[job])
        _heap_push(ev_key, ev_job, nev, end[job], job)
    return free


# --------------------------------------------------------------- the simulator

def simulate_pool(const int64_t[::1] submit, const int64_t[::1] procs_in,
                  const int64_t[::1] limit_in, const int64_t[::1] runtime,
                  int64_t num_nodes, int policy, int64_t reserve_depth,
                  int64_t[::1] control, alloc_start_in=None):
    """Event-driven simulation of jobs on a pool of ``num_nodes`` identical nodes.

    Jobs must be in queue order (sorted by submit time, then job id).

    submit, procs_in, limit_in, runtime : int64[n]  submit time, nodes, time limit (>= 1), runtime (>= 0)
    num_nodes : int64                      nodes in the pool; every procs_in[i] in 1..num_nodes
    policy : int                           POLICIES["fcfs" | "easy" | "conservative"]
    reserve_depth : int64                  reservations per pass for easy (ignored otherwise)
    alloc_start_in : int64[n] or None      where job i's nodes go in alloc_nodes (default:
                                           cumsum of procs, i.e. queue order); lets the
                                           caller get the nodes in its own job order
    control : int64[4]                     fastsched.interrupt's control array: any request in
                                           control[0] returns before the next instant (the
                                           caller then drops the result); the loop writes the
                                           time and the jobs finished into control[1], [2]

    Returns (start int64[n], end int64[n], alloc_nodes int64[sum(procs)], passes int64):
    job i ran on alloc_nodes[alloc_start[i]:alloc_start[i] + procs[i]].
    """
    cdef int64_t n = submit.shape[0]
    cdef int64_t[::1] procs = np.ascontiguousarray(procs_in, dtype=np.int64)
    cdef int64_t[::1] limit = np.ascontiguousarray(limit_in, dtype=np.int64)
    start_arr = np.full(n, -1, dtype=np.int64)
    end_arr = np.full(n, -1, dtype=np.int64)
    if alloc_start_in is None:
        offsets_arr = np.zeros(n, dtype=np.int64)
        np.cumsum(procs_in[:n - 1], out=offsets_arr[1:])
    else:
        offsets_arr = np.ascontiguousarray(alloc_start_in, dtype=np.int64)
    alloc_arr = np.empty(int(np.sum(procs_in)), dtype=np.int64)
    cdef int64_t[::1] start = start_arr, end = end_arr
    cdef int64_t[::1] offsets = offsets_arr, alloc = alloc_arr
    # Work arrays, sized once: no allocation inside the loop.
    cdef int64_t[::1] queue = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] suffix_min = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] starts = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] planned = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] ev_key = np.empty(num_nodes + 1, dtype=np.int64)
    cdef int64_t[::1] ev_job = np.empty(num_nodes + 1, dtype=np.int64)
    bits_arr = np.zeros((num_nodes + 63) // 64, dtype=np.uint64)
    bits_arr[:num_nodes // 64] = ~np.uint64(0)
    if num_nodes % 64:
        bits_arr[num_nodes // 64] = (np.uint64(1) << np.uint64(num_nodes % 64)) - np.uint64(1)
    cdef uint64_t[::1] free_bits = bits_arr
    cdef int64_t first_word = 0
    cdef int64_t[::1] rt = np.empty(num_nodes + 1, dtype=np.int64)
    cdef int64_t[::1] rn = np.empty(num_nodes + 1, dtype=np.int64)
    cdef int64_t[::1] pt = np.empty(num_nodes + 2 * n + 2, dtype=np.int64)
    cdef int64_t[::1] pf = np.empty(num_nodes + 2 * n + 2, dtype=np.int64)
    cdef int64_t nev = 0, m = 0, qlen = 0, a = 0, done = 0
    cdef int64_t free = num_nodes, now, job, k, s, q, w, nstart, passes = 0
    cdef int64_t depth = reserve_depth if policy == POLICY_EASY else n + 1
    with nogil:
        while a < n or nev > 0:
            now = submit[a] if a < n else ev_key[0]
            if nev > 0 and ev_key[0] < now:
                now = ev_key[0]
            if control[0] != 0:
                break
            control[1] = now
            while True:
                # 1. completions at `now`
                while nev > 0 and ev_key[0] == now:
                    job = ev_job[0]
                    _heap_pop(ev_key, ev_job, &nev)
                    free += procs[job]
                    _release_remove(rt, rn, &m, start[job] + limit[job], procs[job])
                    first_word = _give_back(free_bits, first_word, alloc, offsets[job],
                                            offsets[job] + procs[job])
                    done += 1
                    control[2] = done
                # 2. arrivals at `now` (only on the first round at this time)
                while a < n and submit[a] == now:
                    queue[qlen] = a
                    qlen += 1
                    a += 1
                if qlen == 0:
                    break
                # 3. one pass: the FCFS part (jobs in order while they fit) ...
                if policy == POLICY_FCFS:
                    if procs[queue[0]] > free:   # FCFS never looks past the head
                        break
                elif free < _suffix_min(queue, qlen, procs, suffix_min, num_nodes):
                    break
                passes += 1
                nstart = _pass_fcfs(queue, qlen, free, procs, starts)
                # 4. apply: FCFS part first, so the backfill plans see those jobs running
                free = _start_jobs(now, starts, nstart, procs, limit, runtime, offsets, start,
                                   end, alloc, free, free_bits, &first_word, rt, rn, &m,
                                   ev_key, ev_job, &nev)
                qlen = _drop_started(queue, qlen, start) if nstart > 0 else qlen
                if policy != POLICY_FCFS and qlen > 0 and free >= _suffix_min(queue, qlen, procs, suffix_min, num_nodes):
                    if policy == POLICY_EASY and depth == 1:
                        nstart = _pass_easy1(now, queue, qlen, free, procs, limit, rt, rn, m,
                                             suffix_min, starts)
                    else:
                        nstart = _pass_profile(now, queue, qlen, free, procs, limit, rt, rn, m,
                                               depth, suffix_min, pt, pf, starts, planned,
                                               False)
                    free = _start_jobs(now, starts, nstart, procs, limit, runtime, offsets, start,
                                       end, alloc, free, free_bits, &first_word, rt, rn,
                                       &m, ev_key, ev_job, &nev)
                    qlen = _drop_started(queue, qlen, start)
                # zero-length jobs end at `now`: complete them and pass again
                if nev == 0 or ev_key[0] != now:
                    break
    return start_arr, end_arr, alloc_arr, passes


# ------------------------------------------------------------ one pass, as data

def plan_pool(int64_t now, int64_t free_now, const int64_t[::1] release_time,
              const int64_t[::1] release_nodes, const int64_t[::1] procs_in,
              const int64_t[::1] limit_in, int policy, int64_t reserve_depth):
    """One scheduling pass over a queue, reported for every pending job (no early stop).

    now, free_now : int64                 pass time and nodes free now
    release_time, release_nodes : int64[m] running jobs' planned ends (strictly
                                          increasing, > now) and the nodes freed then
    procs_in, limit_in : int64[q]         pending jobs in queue order: nodes, time limit
    policy, reserve_depth                 as for simulate_pool; "fcfs" plans only the head

    Returns (outcome int8[q], planned_start int64[q]): outcome 0 = start now,
    1 = reserved to start at planned_start, 2 = blocked (not planned, start -1).
    """
    cdef int64_t q = procs_in.shape[0], m = release_time.shape[0]
    cdef int64_t depth = reserve_depth if policy == POLICY_EASY else q + 1
    planned_arr = np.full(q, -1, dtype=np.int64)
    cdef int64_t[::1] planned = planned_arr
    cdef int64_t[::1] queue = np.arange(q, dtype=np.int64)
    cdef int64_t[::1] no_stop = np.zeros(q + 1, dtype=np.int64)
    cdef int64_t[::1] starts = np.empty(q + 1, dtype=np.int64)
    cdef int64_t[::1] procs = np.ascontiguousarray(procs_in, dtype=np.int64)
    cdef int64_t[::1] limit = np.ascontiguousarray(limit_in, dtype=np.int64)
    cdef int64_t[::1] rt = np.ascontiguousarray(release_time, dtype=np.int64)
    cdef int64_t[::1] rn = np.ascontiguousarray(release_nodes, dtype=np.int64)
    cdef int64_t[::1] pt = np.empty(m + q + 2, dtype=np.int64)
    cdef int64_t[::1] pf = np.empty(m + q + 2, dtype=np.int64)
    with nogil:
        _pass_profile(now, queue, q, free_now, procs, limit, rt, rn, m, depth, no_stop,
                      pt, pf, starts, planned, policy == POLICY_FCFS)
    outcome = np.where(planned_arr == now, 0, np.where(planned_arr > now, 1, 2)).astype(np.int8)
    return outcome, planned_arr
