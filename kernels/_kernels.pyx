# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled kernels of fastsched (private: use the public API in fastsched).

The counted-pool engine: a machine of ``P`` interchangeable nodes where each job
takes ``procs`` whole nodes (an SWF machine is P single-processor nodes). Plans
are counts of free nodes over time, so they reduce exactly to the textbook
algorithms (Lifka's EASY, Mu'alem and Feitelson's conservative backfilling);
concrete nodes are only chosen when a job starts (lowest free indices first).

Semantics are defined by ``tests/naive.py``; this file must give identical
start times. The queue, dependencies and limit groups follow the node engine's
rules (``fastsched.engine.loop``), so both reservation models order and hold
jobs alike.
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport int64_t, uint64_t

cnp.import_array()

# dependency kinds (fastsched.model.constraints), limit-group caps (its CAPS, in that
# order; the last counts submitted jobs) and the control array's slots and requests
# (fastsched.engine.interrupt); tests check that these numbers match those modules
cdef enum:
    AFTER = 0
    AFTERANY = 1
    AFTEROK = 2
    AFTERNOTOK = 3
    NCAPS = 5
    SUBMIT_CAP = 4
    REQUEST = 0
    NOW = 1
    DONE = 2
    STOP = 1
    PAUSE = 2

DEPENDENCY_KINDS = (AFTER, AFTERANY, AFTEROK, AFTERNOTOK)
CONTROL = {"REQUEST": REQUEST, "NOW": NOW, "DONE": DONE, "STOP": STOP, "PAUSE": PAUSE}
LIMIT_CAPS = (NCAPS, SUBMIT_CAP)

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
# A bitmap of free nodes (bit set = free): a starting job takes the lowest free
# indices, whole runs of set bits at a time, so O(words + runs); a finishing
# job sets its runs back a word at a time. A job's nodes are kept as runs
# (first node, count), so memory follows running allocations, not processors.

cdef extern from *:
    int __builtin_ctzll(unsigned long long) nogil


cdef inline uint64_t _ones_from(int64_t lo, int64_t hi) noexcept nogil:
    """The bits lo..hi-1 of a word set (0 <= lo < hi <= 64)."""
    cdef uint64_t upper = ~(<uint64_t>0) if hi == 64 else ((<uint64_t>1) << hi) - 1
    return upper & ~(((<uint64_t>1) << lo) - 1)


cdef inline int64_t _give_back_run(uint64_t[::1] bits, int64_t first_word, int64_t lo,
                                   int64_t count) noexcept nogil:
    """Mark nodes lo..lo+count-1 free again; return the new first word."""
    cdef int64_t hi = lo + count, w, a, b
    while lo < hi:
        w = lo >> 6
        a = lo & 63
        b = min(64, hi - (w << 6))
        bits[w] |= _ones_from(a, b)
        lo = (w << 6) + b
    w = (hi - count) >> 6
    return w if w < first_word else first_word


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

# ---------------------------------------------------------------- the event loop
# The counts model's event loop, with the node engine's queue, dependencies and
# limits (fastsched.engine.loop): the same rules, written for a pool.

cdef class PoolLoop:
    """The counts model's event loop and all its state, resumable.

    ``arrays`` (a dict of NumPy arrays, built by :mod:`fastsched.engine.counts`)
    holds every input, output and piece of state, indexed by job in submit order;
    the loop works on them in place, so the owner reads results from them and can
    change the queue order between calls. The scalars (next arrival, queue length,
    events, passes, jobs ended, release entries, first free word, free nodes, node
    runs written) live in ``arrays["sc"]`` between calls, so a pickled loop goes on
    where it stopped. Job ``j``'s nodes are the runs ``run_off[j]`` to
    ``run_off[j] + run_cnt[j] - 1`` of ``run_lo`` / ``run_len`` (first node, count),
    in the order it took them; those two arrays grow (new arrays in ``arrays``).

    The policy comes as numbers (:meth:`fastsched.model.policies.Policy.kernel_rules`):
    ``stop_at_head`` (nothing passes the first job that cannot start: FCFS) and
    ``depth`` (how many blocked jobs get reservations per pass; depth 1 is
    Lifka's shadow time and extra nodes, deeper ones plan on a profile).
    """
    cdef readonly dict arrays
    cdef readonly int64_t num_nodes, depth
    cdef readonly bint stop_at_head
    cdef int64_t n
    # jobs: submit time, nodes, limit, runtime, queue rank,
    # and what starting one charges to its limit groups (jobs, GPUs, CPUs, MB)
    cdef int64_t[::1] submit, procs, limit, runtime, rank
    cdef int64_t[:, ::1] demand
    # dependencies: each job's dependents (ch_off CSR), unsatisfied count, flags
    cdef int64_t[::1] ch_off, ch_job, ch_kind, pend
    cdef cnp.uint8_t[::1] never, arrived
    # limit groups: each job's groups (jg_off CSR), caps and usage
    cdef int64_t[::1] jg_off, jg
    cdef int64_t[:, ::1] caps, usage
    # outputs
    cdef int64_t[::1] start, end, run_off, run_cnt, run_lo, run_len, reason, eligible, planned
    # state: the queue, the completion heap, planned releases, the pass's profile
    cdef int64_t[::1] queue, ev_key, ev_job, rt, rn, pt, pf, suffix_min, started, sc
    cdef uint64_t[::1] free_bits
    cdef int64_t a, qlen, nev, passes, done, m, first_word, free, nruns
    cdef object error               # what growing the runs raised: the loop is spoilt

    def __init__(self, dict arrays, int64_t num_nodes, bint stop_at_head, int64_t depth):
        self.arrays = arrays
        self.num_nodes, self.stop_at_head, self.depth = num_nodes, stop_at_head, depth
        self.n = arrays["submit"].shape[0]
        self.submit, self.procs, self.limit = arrays["submit"], arrays["procs"], arrays["limit"]
        self.runtime, self.rank = arrays["runtime"], arrays["rank"]
        self.demand = arrays["demand"]
        self.ch_off, self.ch_job, self.ch_kind = (arrays["ch_off"], arrays["ch_job"],
                                                  arrays["ch_kind"])
        self.pend, self.never, self.arrived = arrays["pend"], arrays["never"], arrays["arrived"]
        self.jg_off, self.jg = arrays["jg_off"], arrays["jg"]
        self.caps, self.usage = arrays["caps"], arrays["usage"]
        self.start, self.end = arrays["start"], arrays["end"]
        self.run_off, self.run_cnt = arrays["run_off"], arrays["run_cnt"]
        self.run_lo, self.run_len = arrays["run_lo"], arrays["run_len"]
        self.reason, self.eligible, self.planned = (arrays["reason"], arrays["eligible"],
                                                    arrays["planned"])
        self.queue, self.ev_key, self.ev_job = arrays["queue"], arrays["ev_key"], arrays["ev_job"]
        self.rt, self.rn, self.pt, self.pf = arrays["rt"], arrays["rn"], arrays["pt"], arrays["pf"]
        self.suffix_min, self.started = arrays["suffix_min"], arrays["started"]
        self.free_bits, self.sc = arrays["free_bits"], arrays["sc"]
        self.a, self.qlen, self.nev, self.passes = self.sc[0], self.sc[1], self.sc[2], self.sc[3]
        self.done, self.m, self.first_word, self.free = (self.sc[4], self.sc[5], self.sc[6],
                                                         self.sc[7])
        self.nruns = self.sc[8]

    def __reduce__(self):
        return PoolLoop, (self.arrays, self.num_nodes, self.stop_at_head, self.depth)

    def run(self, int64_t t_stop, int64_t[::1] control):
        """Every instant up to ``t_stop`` (see :func:`fastsched.engine.loop._run`: the
        same order of events and the same stop and pause requests in ``control``)."""
        if self.error is not None:
            raise self.error
        with nogil:
            self._run(t_stop, control)
        if self.error is not None:
            raise self.error
        sc = self.sc
        sc[0], sc[1], sc[2], sc[3] = self.a, self.qlen, self.nev, self.passes
        sc[4], sc[5], sc[6], sc[7] = self.done, self.m, self.first_word, self.free
        sc[8] = self.nruns

    cdef void _run(self, int64_t t_stop, int64_t[::1] control) noexcept nogil:
        cdef int64_t now, j, k
        cdef bint moved = False, released
        while (self.a < self.n or self.nev > 0) and self.error is None:
            now = self.submit[self.a] if self.a < self.n else self.ev_key[0]
            if self.nev > 0 and self.ev_key[0] < now:
                now = self.ev_key[0]
            if now > t_stop or control[REQUEST] == STOP or (moved and control[REQUEST] == PAUSE):
                break
            moved = True
            control[NOW] = now
            while True:
                while self.nev > 0 and self.ev_key[0] == now:
                    j = self.ev_job[0]
                    _heap_pop(self.ev_key, self.ev_job, &self.nev)
                    self._complete(j)
                    self.done += 1
                    control[DONE] = self.done
                    self._release(j, False, self.runtime[j] <= self.limit[j], now)
                while self.a < self.n and self.submit[self.a] == now:
                    self._arrive(self.a, now)
                    self.a += 1
                if self.qlen == 0:
                    break
                k = self._pass(now)
                if k < 0:
                    break
                self.passes += 1
                released = k > 0 and self._after_pass(now, k)
                # zero-length jobs end now, or starts released dependents: pass again
                if not released and (self.nev == 0 or self.ev_key[0] != now):
                    break

    # ---- the queue, arrivals, completions and dependencies (as the node engine's)
    cdef void _enqueue(self, int64_t j) noexcept nogil:
        """Insert job ``j`` into the queue, kept sorted by rank."""
        cdef int64_t lo = 0, hi = self.qlen, mid, q
        while lo < hi:
            mid = (lo + hi) >> 1
            if self.rank[self.queue[mid]] <= self.rank[j]:
                lo = mid + 1
            else:
                hi = mid
        for q in range(self.qlen, lo, -1):
            self.queue[q] = self.queue[q - 1]
        self.queue[lo] = j
        self.qlen += 1

    cdef void _arrive(self, int64_t j, int64_t now) noexcept nogil:
        """Job ``j`` is submitted: rejected over a submit cap, else counted and queued
        when its dependencies are satisfied."""
        cdef int64_t e, g, held = -1
        for e in range(self.jg_off[j], self.jg_off[j + 1]):
            g = self.jg[e]
            if self.caps[g, SUBMIT_CAP] >= 0 and \
                    self.usage[g, SUBMIT_CAP] + 1 > self.caps[g, SUBMIT_CAP]:
                held = g * NCAPS + SUBMIT_CAP
        if held >= 0:
            self.reason[j] = held
            return
        for e in range(self.jg_off[j], self.jg_off[j + 1]):
            self.usage[self.jg[e], SUBMIT_CAP] += 1
        self.arrived[j] = 1
        if self.pend[j] == 0 and not self.never[j]:
            self.eligible[j] = now
            self._enqueue(j)

    cdef void _release(self, int64_t j, bint started, bint ok, int64_t now) noexcept nogil:
        """Job ``j`` started (``started``) or ended (``ok``: COMPLETED): count down its
        dependents' unsatisfied dependencies and queue those now free to run."""
        cdef int64_t e, c, k
        for e in range(self.ch_off[j], self.ch_off[j + 1]):
            c = self.ch_job[e]
            k = self.ch_kind[e]
            if started:
                if k != AFTER:
                    continue
            elif k == AFTER:
                continue
            elif (k == AFTEROK and not ok) or (k == AFTERNOTOK and ok):
                self.never[c] = 1
                continue
            self.pend[c] -= 1
            if self.pend[c] == 0 and self.arrived[c] and not self.never[c]:
                self.eligible[c] = now
                self._enqueue(c)

    cdef void _complete(self, int64_t j) noexcept nogil:
        """Job ``j`` ends: its nodes, planned release and limit usage come back."""
        cdef int64_t e, k
        self.free += self.procs[j]
        _release_remove(self.rt, self.rn, &self.m, self.start[j] + self.limit[j], self.procs[j])
        for k in range(self.run_off[j], self.run_off[j] + self.run_cnt[j]):
            self.first_word = _give_back_run(self.free_bits, self.first_word, self.run_lo[k],
                                             self.run_len[k])
        for e in range(self.jg_off[j], self.jg_off[j + 1]):
            for k in range(NCAPS - 1):
                self.usage[self.jg[e], k] -= self.demand[j, k]
            self.usage[self.jg[e], SUBMIT_CAP] -= 1

    cdef bint _after_pass(self, int64_t now, int64_t nstarted) noexcept nogil:
        """Drop the jobs the pass started from the queue (keeping order) and release
        their dependents; whether any dependent was queued."""
        cdef int64_t q, w = 0, k
        for q in range(self.qlen):
            if self.start[self.queue[q]] < 0:
                self.queue[w] = self.queue[q]
                w += 1
        self.qlen = w
        for k in range(nstarted):
            self._release(self.started[k], True, True, now)
        return self.qlen > w

    # ---- one pass
    cdef int64_t _held(self, int64_t j) noexcept nogil:
        """The first cap of a limit group that starting job ``j`` would exceed
        (group * NCAPS + cap), or -1."""
        cdef int64_t e, g, k
        for e in range(self.jg_off[j], self.jg_off[j + 1]):
            g = self.jg[e]
            for k in range(NCAPS - 1):
                if self.caps[g, k] >= 0 and self.usage[g, k] + self.demand[j, k] > self.caps[g, k]:
                    return g * NCAPS + k
        return -1

    cdef bint _passes_limits(self, int64_t j) noexcept nogil:
        """Whether no limit holds job ``j`` (its reason is recorded either way)."""
        self.reason[j] = self._held(j)
        return self.reason[j] < 0

    cdef void _start(self, int64_t j, int64_t now, int64_t nstarted) noexcept nogil:
        """Start job ``j`` now on the lowest-numbered free nodes."""
        cdef int64_t e, k
        self.start[j] = now
        self.planned[j] = now
        self.end[j] = now + min(self.runtime[j], self.limit[j])
        self.free -= self.procs[j]
        self._take_lowest(j)
        _release_add(self.rt, self.rn, &self.m, now + self.limit[j], self.procs[j])
        _heap_push(self.ev_key, self.ev_job, &self.nev, self.end[j], j)
        for e in range(self.jg_off[j], self.jg_off[j + 1]):
            for k in range(NCAPS - 1):
                self.usage[self.jg[e], k] += self.demand[j, k]
        self.started[nstarted] = j

    cdef void _take_lowest(self, int64_t j) noexcept nogil:
        """Give job ``j`` the ``procs[j]`` lowest free nodes, written as runs."""
        cdef int64_t w = self.first_word, need = self.procs[j], b, k, lo
        cdef uint64_t x, y
        self.run_off[j] = self.nruns
        while need > 0:
            x = self.free_bits[w]
            while x != 0 and need > 0:
                b = __builtin_ctzll(x)
                y = ~(x >> b)                   # 0: every bit from b up is free
                k = 64 - b if y == 0 else __builtin_ctzll(y)
                k = min(k, need)
                x &= ~_ones_from(b, b + k)
                need -= k
                lo = (w << 6) + b
                if self.nruns > self.run_off[j] and \
                        self.run_lo[self.nruns - 1] + self.run_len[self.nruns - 1] == lo:
                    self.run_len[self.nruns - 1] += k       # a run across words
                else:
                    if self.nruns == self.run_lo.shape[0]:
                        self._grow_runs()
                        if self.nruns == self.run_lo.shape[0]:
                            return
                    self.run_lo[self.nruns] = lo
                    self.run_len[self.nruns] = k
                    self.nruns += 1
            self.free_bits[w] = x
            if x == 0:
                w += 1
        self.first_word = w
        self.run_cnt[j] = self.nruns - self.run_off[j]

    cdef void _grow_runs(self) noexcept nogil:
        """Twice the room for runs (new arrays in ``arrays``, so they pickle)."""
        with gil:
            size = 2 * self.run_lo.shape[0] + 64
            try:
                lo, count = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64)
            except BaseException as e:      # MemoryError, KeyboardInterrupt: run() raises it
                self.error = e
                return
            lo[:self.nruns] = self.arrays["run_lo"][:self.nruns]
            count[:self.nruns] = self.arrays["run_len"][:self.nruns]
            self.arrays["run_lo"], self.arrays["run_len"] = lo, count
            self.run_lo, self.run_len = lo, count

    cdef int64_t _pass(self, int64_t now) noexcept nogil:
        """One pass at ``now``: jobs in queue order start while they fit (jobs a limit
        holds are passed over, blocking nobody); then, unless ``stop_at_head``,
        backfill behind the first that does not (the head). Returns how many
        started, or -1 when no queued job could fit now (the pass is skipped)."""
        cdef int64_t q = 0, j, nstart = 0
        if self.free < _suffix_min(self.queue, self.qlen, self.procs, self.suffix_min,
                                   self.num_nodes):
            return -1
        while q < self.qlen:
            j = self.queue[q]
            if self._passes_limits(j):
                if self.procs[j] > self.free:
                    break
                self._start(j, now, nstart)
                nstart += 1
            q += 1
        if self.stop_at_head:
            return nstart if nstart > 0 else -1     # FCFS: a blocked head blocks the pass
        if q == self.qlen:
            return nstart
        if self.depth == 1:
            return self._backfill_easy(now, q, nstart)
        return self._backfill_profile(now, q, nstart)

    cdef int64_t _backfill_easy(self, int64_t now, int64_t h, int64_t nstart) noexcept nogil:
        """Lifka's EASY behind the head ``queue[h]``: its shadow time is when enough
        running jobs will have ended for it, ``extra`` what is free then beyond its
        need. A later job starts now if it fits now and either ends by the shadow
        time or uses only extra nodes."""
        cdef int64_t q, j, i, shadow = -1, extra, avail = self.free
        cdef int64_t need = self.procs[self.queue[h]]
        for i in range(self.m):
            avail += self.rn[i]
            if avail >= need:
                shadow = self.rt[i]
                break
        extra = avail - need
        q = h + 1
        while q < self.qlen and self.free >= self.suffix_min[q]:
            j = self.queue[q]
            q += 1
            if not self._passes_limits(j) or self.procs[j] > self.free:
                continue
            if now + self.limit[j] <= shadow:
                self._start(j, now, nstart)
                nstart += 1
            elif self.procs[j] <= extra:
                extra -= self.procs[j]
                self._start(j, now, nstart)
                nstart += 1
        return nstart

    cdef int64_t _backfill_profile(self, int64_t now, int64_t h, int64_t nstart) noexcept nogil:
        """EASY with ``depth`` reservations, or conservative: from the head on, each job
        starts if it fits now in the profile (running jobs, this pass's starts and
        reservations), else gets a reservation at its earliest start while fewer
        than ``depth`` were made, else is skipped. The walk stops once no later
        job could start now: reservations after that cannot change the starts."""
        cdef int64_t size = _profile_build(now, self.free, self.rt, self.rn, self.m, self.pt,
                                           self.pf)
        cdef int64_t q, j, i, reserved = 0
        for q in range(h, self.qlen):
            if self.pf[0] < self.suffix_min[q]:
                break
            j = self.queue[q]
            if not self._passes_limits(j):
                continue
            if reserved < self.depth:
                i = _profile_earliest(self.pt, self.pf, size, self.procs[j], self.limit[j])
                if i > 0:
                    reserved += 1
            elif _profile_fits_now(self.pt, self.pf, size, self.procs[j], self.limit[j]):
                i = 0
            else:
                continue
            self.planned[j] = self.pt[i]
            _profile_reserve(self.pt, self.pf, &size, i, self.procs[j], self.limit[j])
            if i == 0:
                self._start(j, now, nstart)
                nstart += 1
        return nstart


cdef inline int64_t _suffix_min(int64_t[::1] queue, int64_t qlen, int64_t[::1] procs,
                                int64_t[::1] suffix_min, int64_t big) noexcept nogil:
    """suffix_min[q] = smallest request among queue[q:]; returns suffix_min[0]."""
    cdef int64_t q
    suffix_min[qlen] = big
    for q in range(qlen - 1, -1, -1):
        suffix_min[q] = min(suffix_min[q + 1], procs[queue[q]])
    return suffix_min[0]


# ------------------------------------------------------------ one pass, as data

cdef int64_t _plan_profile(int64_t now, int64_t[::1] procs, int64_t[::1] limit,
                           cnp.uint8_t[::1] held, int64_t size, int64_t[::1] pt,
                           int64_t[::1] pf, bint stop_at_head, int64_t depth,
                           int64_t[::1] planned) noexcept nogil:
    """The what-if pass over every pending job (no early stop): each job in order
    starts now if it fits, else gets a reservation while fewer than ``depth`` were
    made, else is skipped; ``stop_at_head`` stops after the first reservation.
    Jobs ``held`` by a limit are passed over."""
    cdef int64_t q, i, reserved = 0
    for q in range(procs.shape[0]):
        if held[q]:
            continue
        if reserved < depth:
            i = _profile_earliest(pt, pf, size, procs[q], limit[q])
            if i > 0:
                reserved += 1
        elif _profile_fits_now(pt, pf, size, procs[q], limit[q]):
            i = 0
        else:
            continue
        planned[q] = pt[i]
        _profile_reserve(pt, pf, &size, i, procs[q], limit[q])
        if i > 0 and stop_at_head:
            break
    return size


def plan_pool(int64_t now, int64_t free_now, const int64_t[::1] release_time,
              const int64_t[::1] release_nodes, const int64_t[::1] procs_in,
              const int64_t[::1] limit_in, bint stop_at_head, int64_t depth, held_in=None):
    """One scheduling pass over a queue, reported for every pending job (no early stop).

    now, free_now : int64                 pass time and nodes free now
    release_time, release_nodes : int64[m] running jobs' planned ends (strictly
                                          increasing, > now) and the nodes freed then
    procs_in, limit_in : int64[q]         pending jobs in queue order: nodes, time limit
    stop_at_head, depth                   the policy's numbers (see PoolLoop)
    held_in : bool[q] or None             jobs a limit holds (passed over)

    Returns (outcome int8[q], planned_start int64[q]): outcome 0 = start now,
    1 = reserved to start at planned_start, 2 = blocked (not planned, start -1).
    """
    cdef int64_t q = procs_in.shape[0], m = release_time.shape[0]
    planned_arr = np.full(q, -1, dtype=np.int64)
    held_arr = np.zeros(q, dtype=np.uint8) if held_in is None else \
        np.ascontiguousarray(held_in, dtype=np.uint8)
    cdef int64_t[::1] procs = np.ascontiguousarray(procs_in, dtype=np.int64)
    cdef int64_t[::1] limit = np.ascontiguousarray(limit_in, dtype=np.int64)
    cdef int64_t[::1] rt = np.ascontiguousarray(release_time, dtype=np.int64)
    cdef int64_t[::1] rn = np.ascontiguousarray(release_nodes, dtype=np.int64)
    cdef int64_t[::1] pt = np.empty(m + 2 * q + 2, dtype=np.int64)
    cdef int64_t[::1] pf = np.empty(m + 2 * q + 2, dtype=np.int64)
    cdef int64_t[::1] planned = planned_arr
    cdef cnp.uint8_t[::1] held = held_arr
    cdef int64_t size
    with nogil:
        size = _profile_build(now, free_now, rt, rn, m, pt, pf)
        _plan_profile(now, procs, limit, held, size, pt, pf, stop_at_head, depth, planned)
    outcome = np.where(planned_arr == now, 0, np.where(planned_arr > now, 1, 2)).astype(np.int8)
    return outcome, planned_arr
