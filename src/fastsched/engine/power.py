"""Power saving in the event loop: which nodes of a starting job are powered down,
their resume tokens and boots, and the job's start reset to when its last node is
ready (:mod:`fastsched.model.power` says what Slurm does).

A node's power state follows from per-node arrays updated at starts and ends, never
by a scan of all nodes: ``busy`` (jobs on it), ``idle`` (when its last job ended;
``NEVER``: a CLOUD node never used) and ``ready`` (when its last boot ended). At a
start a node with no job is powered down when it never ran one and is CLOUD, or was
idle longer than SuspendTime and is not excluded; with SuspendRate, also had its
power-down token: the idle nodes wait for tokens in a heap by (idle, node), and
:func:`settle` hands out those due before an instant, first thing at a start or a
node event there (O(log nodes) per node powered down). :func:`start_power` runs once
per start after the pass that started it, before its image pull: O(the job's nodes). The pass held the
job's nodes over its limit from now; a job that waits for a boot holds them until its
reset start plus its limit (:func:`extend_holds`, after the pass: its planning counts
the boot from the next pass on). Node events (docs/lifecycle.md, "Power saving with node
events"): a drain kills the jobs of a node still booting (:func:`booting`), a node that
comes back unpowered-down is idle from then (:func:`nodes_back`), and a job killed while
CONFIGURING starts at its kill (:func:`killed_start`, :func:`end_power`).
"""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
from collections import namedtuple

import numpy as np
from numba import njit

from .leafkernel import leaf_kernel
from .profile import _hold, _merge_at, _on_grid, _room, _split
from .running import _insert_running, _take_running

#: ``idle`` of a CLOUD node that never ran a job: powered down since always
NEVER = np.int64(-(1 << 60))
#: ``down`` of a node not powered down in its current idle period (or not yet)
UNSET = np.int64(1 << 60)

#: ``conf`` = [on (0/1), SuspendTime (-1: NONE), SuspendTimeout, the largest boot
#: (seconds), ms between power-ups (0: no limit), ms between power-downs (0: no limit)];
#: per node ``boot`` (seconds from its resume to ready), ``excl`` (never powered down),
#: ``busy``, ``idle``, ``ready``, ``on_since`` (its last power-up or 0) and ``on_total``
#: (seconds powered in its closed on-periods), ``busy_since`` / ``busy_total`` (seconds
#: with a job, from its allocation), ``down`` (with SuspendRate: when its power-down began
#: in its current idle period, UNSET: not yet); per job ``configure`` (seconds its last
#: start waited for boots) and ``pend`` (the jobs whose holds :func:`extend_holds` still
#: has to lengthen); ``cnt`` = [next power-up's earliest ms, power-ups so far, jobs in
#: ``pend``, nodes in ``heap``, next power-down's earliest ms]; ``heap`` / ``hpos``: the
#: idle nodes waiting for a power-down token, a binary heap by (idle + SuspendTime, node),
#: and each node's place in it (-1: none).
PowerState = namedtuple("PowerState", ["conf", "boot", "excl", "busy", "idle", "ready",
                                       "on_since", "on_total", "busy_since", "busy_total",
                                       "down", "configure", "pend", "cnt", "heap", "hpos"])


def new_power_state(n: int, num_nodes: int, power=None) -> PowerState:
    """The state of a run of ``n`` jobs; ``power`` = (SuspendTime or -1, SuspendTimeout,
    boot seconds (one for every node, or one per node), ms between power-ups, cloud bool
    per node, excluded bool per node[, ms between power-downs]), None: off (the hooks
    then do nothing). With SuspendRate every node that may power down waits for a token
    from time 0 (in node order at a tie)."""
    X = num_nodes if power is not None else 0
    conf = np.zeros(6, dtype=np.int64)
    excl = np.zeros(X, dtype=np.bool_)
    boots = np.zeros(X, dtype=np.int64)
    idle = np.zeros(X, dtype=np.int64)
    heap = np.zeros(X, dtype=np.int64)
    hpos = np.full(X, -1, dtype=np.int64)
    cnt = np.zeros(5, dtype=np.int64)
    if power is not None:
        st, sto, boot, period, cloud, excluded = power[:6]
        cloud = np.asarray(cloud, dtype=np.bool_)
        boots[:] = np.broadcast_to(np.asarray(boot, dtype=np.int64), (X,))
        conf[:] = (1, st, sto, boots.max(initial=0), period, power[6] if len(power) > 6 else 0)
        excl[:] = excluded
        idle[cloud] = NEVER
        if conf[5] > 0 and st >= 0:
            # equal keys in node order: already a heap
            waiting = np.flatnonzero(~cloud & ~excl)
            heap[:len(waiting)] = waiting
            hpos[waiting] = np.arange(len(waiting))
            cnt[3] = len(waiting)
    return PowerState(conf, boots, excl, np.zeros(X, dtype=np.int64), idle,
                      np.zeros(X, dtype=np.int64), np.zeros(X, dtype=np.int64),
                      np.zeros(X, dtype=np.int64), np.zeros(X, dtype=np.int64),
                      np.zeros(X, dtype=np.int64), np.full(X, UNSET, dtype=np.int64),
                      np.zeros(n, dtype=np.int64), np.zeros(n + 1, dtype=np.int64), cnt,
                      heap, hpos)


@leaf_kernel
def _down_at(x, pw):
    """When node ``x`` (no job on it) began powering down in its current idle period
    (UNSET: it does not, or with SuspendRate not yet: see :func:`settle`)."""
    st = pw.conf[1]
    if st < 0 or pw.excl[x]:
        return UNSET
    if pw.conf[5] == 0:
        return pw.idle[x] + st
    return pw.down[x]


@leaf_kernel
def _before(a, b, pw):
    """Whether heap entry node ``a`` comes before node ``b``: by idle time, then node
    (Slurm's power thread scans the nodes in index order)."""
    return pw.idle[a] < pw.idle[b] or pw.idle[a] == pw.idle[b] and a < b


@leaf_kernel
def _sift(k, pw):
    """Move the heap entry at ``k`` up or down to its place."""
    h = pw.heap
    n = pw.cnt[3]
    while k > 0 and _before(h[k], h[(k - 1) // 2], pw):
        p = (k - 1) // 2
        h[k], h[p] = h[p], h[k]
        pw.hpos[h[k]], pw.hpos[h[p]] = k, p
        k = p
    while True:
        c = 2 * k + 1
        if c >= n:
            break
        if c + 1 < n and _before(h[c + 1], h[c], pw):
            c += 1
        if not _before(h[c], h[k], pw):
            break
        h[k], h[c] = h[c], h[k]
        pw.hpos[h[k]], pw.hpos[h[c]] = k, c
        k = c


@leaf_kernel
def _unqueue(x, pw):
    """Node ``x`` no longer waits for a power-down token."""
    k = pw.hpos[x]
    if k < 0:
        return
    pw.hpos[x] = -1
    n = pw.cnt[3] - 1
    pw.cnt[3] = n
    if k < n:
        pw.heap[k] = pw.heap[n]
        pw.hpos[pw.heap[k]] = k
        _sift(k, pw)


@leaf_kernel
def _idle_from(x, t, pw):
    """Node ``x`` (no job on it) is idle from ``t``: not powered down in this idle
    period yet, and with SuspendRate waiting for a token (its key: ``t``)."""
    pw.idle[x] = t
    pw.down[x] = UNSET
    if pw.conf[5] == 0 or pw.conf[1] < 0 or pw.excl[x]:
        return
    if pw.hpos[x] < 0:
        pw.hpos[x] = pw.cnt[3]
        pw.heap[pw.cnt[3]] = x
        pw.cnt[3] += 1
    _sift(pw.hpos[x], pw)


@leaf_kernel
def settle(now, pw):
    """With SuspendRate: hand out the power-down tokens of the times before ``now``
    (Slurm's power thread): in order of when the nodes became eligible (idle +
    SuspendTime, then node index), each takes the next token (one every ``conf[5]`` ms,
    first come first served), and is powered down from that token's second if that is
    before ``now``. A node given a job first never took one (it stays up)."""
    if pw.conf[0] == 0 or pw.conf[5] == 0:
        return
    st = pw.conf[1]
    while pw.cnt[3] > 0:
        x = pw.heap[0]
        t_ms = max((pw.idle[x] + st) * 1000, pw.cnt[4])
        s = (t_ms + 999) // 1000
        if s >= now:
            return
        pw.cnt[4] = t_ms + pw.conf[5]
        pw.down[x] = s
        _unqueue(x, pw)


@leaf_kernel
def _powered_down(x, now, pw):
    """Whether node ``x`` (no job on it) is powered down (or powering down) at ``now``."""
    if pw.idle[x] == NEVER:
        return True
    return now > _down_at(x, pw)


@leaf_kernel
def _power_up(x, now, pw):
    """Resume node ``x`` for a job starting at ``now``: its token (first come first
    served, one per ``conf[4]`` ms), then its boot once its power-down is done.
    Closes its last on-period; the node is ready at the returned time."""
    sto, boot, period = pw.conf[2], pw.boot[x], pw.conf[4]
    r_ms = max(now * 1000, pw.cnt[0])
    pw.cnt[0] = r_ms + period
    pw.cnt[1] += 1
    r = (r_ms + 999) // 1000
    if pw.idle[x] != NEVER:
        down = _down_at(x, pw)
        pw.on_total[x] += down - pw.on_since[x]
        r = max(r, down + sto)
    pw.on_since[x] = r
    pw.ready[x] = r + boot
    return pw.ready[x]


@leaf_kernel
def start_power(j, now, jobs, out, pw):
    """Job ``j`` was allocated its nodes (``out.alloc_nodes`` at ``jobs.offsets[j]``) at
    ``now``: power up those powered down, wait for every node's boot; its start is
    reset to when the last is ready (``configure``: the wait) and its end to that
    plus min(runtime, limit). A job that waits joins ``pend``."""
    if pw.conf[0] == 0:
        return
    settle(now, pw)
    ready = now
    for q in range(jobs.offsets[j], jobs.offsets[j] + jobs.nn[j]):
        x = out.alloc_nodes[q]
        if pw.busy[x] == 0:
            if _powered_down(x, now, pw):
                _power_up(x, now, pw)
            _unqueue(x, pw)
            pw.busy_since[x] = now
        pw.busy[x] += 1
        ready = max(ready, pw.ready[x])
    pw.configure[j] = ready - now
    if ready > now:
        out.start[j] = ready
        out.end[j] = ready + min(jobs.runtime[j], jobs.limit[j])
        pw.pend[pw.cnt[2]] = j
        pw.cnt[2] += 1


@leaf_kernel
def end_power(j, now, jobs, out, pw):
    """Job ``j`` ended at ``now`` (or was killed then): a node left without a job is idle
    from now, or from the end of its boot if it is still booting (Slurm sets a resumed
    node's ``last_busy`` when it registers). A job killed while CONFIGURING never ran:
    its start is now, its ``configure`` the seconds since its allocation."""
    if pw.conf[0] == 0:
        return
    if out.start[j] > now:
        pw.configure[j] -= out.start[j] - now
        out.start[j] = now
    for q in range(jobs.offsets[j], jobs.offsets[j] + jobs.nn[j]):
        x = out.alloc_nodes[q]
        pw.busy[x] -= 1
        if pw.busy[x] == 0:
            _idle_from(x, max(now, pw.ready[x]), pw)
            pw.busy_total[x] += now - pw.busy_since[x]


@njit(cache=True)
def extend_holds(now, res, jobs, out, p, run, pw):
    """The jobs in ``pend`` started at ``now`` and wait for boots: their nodes' holds
    (profile and running lists), made by the pass over [now, now + limit), now last
    until their reset start plus their limit (on the ``res`` grid). Returns (profile,
    running lists)."""
    for k in range(pw.cnt[2]):
        j = pw.pend[k]
        old = _on_grid(now + jobs.limit[j], res)
        new = _on_grid(out.start[j] + jobs.limit[j], res)
        if new <= old:
            continue
        for q in range(jobs.offsets[j], jobs.offsets[j] + jobs.nn[j]):
            x = out.alloc_nodes[q]
            if p.wlen[x] + 2 > p.wcap[x]:
                p = _room(x, p)
            _hold(x, old, new, jobs.rg[j], jobs.rc[j], jobs.rm[j], p)
            # the hold now runs on through ``old``: no breakpoint may stay there, for
            # no event will advance the node past it (the first segment must be now's)
            _merge_at(x, _split(x, old, p), p)
            _, g, c, m = _take_running(x, j, run)
            _insert_running(x, new, g, c, m, j, run)
    pw.cnt[2] = 0
    return p, run


def killed_start(pw: PowerState, j: int, t: int, start: int) -> tuple[int, int]:
    """(start, seconds CONFIGURING) of job ``j``'s attempt killed at ``t`` (``start``: its
    start, reset to when its nodes are ready): killed while CONFIGURING, it never ran, so
    it starts at the kill (Slurm's start_time is reset only when the nodes are ready)."""
    if pw.conf[0] == 0:
        return start, 0
    alloc = start - int(pw.configure[j])
    return min(start, t), min(start, t) - alloc


def booting(pw: PowerState, t: int, nodes: np.ndarray) -> np.ndarray:
    """The nodes of ``nodes`` booting at ``t`` for the jobs allocated them: a ``drain``
    of one requeues those jobs (node_mgr.c ``update_node``: a DRAIN request for a node
    "allocated and being powered up" kills its jobs)."""
    if pw.conf[0] == 0:
        return nodes[:0]
    return nodes[(pw.busy[nodes] > 0) & (pw.ready[nodes] > t)]


def nodes_back(pw: PowerState, t: int, nodes: np.ndarray) -> None:
    """``nodes`` come back at ``t`` (``up`` / ``resume`` of a down or drained node): one
    with no job that is not powered down (nor powering down) is idle from ``t``
    (node_mgr.c sets ``last_busy = now`` at a resume unless the node is POWERED_DOWN);
    a powered-down one stays so."""
    if pw.conf[0] == 0 or not len(nodes):
        return
    settle(t, pw)
    for x in nodes[pw.busy[nodes] == 0].tolist():
        if pw.idle[x] != NEVER and not _powered_down(x, t, pw) and pw.idle[x] < t:
            _idle_from(x, t, pw)


def power_totals(pw: PowerState, horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """(seconds powered, seconds with a job) per node over [0, ``horizon``): a node's
    open on-period ends at its power-down (SuspendTime after its last job, later with
    SuspendRate; never when excluded) or at the horizon; a CLOUD node never used was
    never on."""
    st = int(pw.conf[1])
    never = pw.idle == NEVER
    off = np.full(len(pw.idle), horizon, dtype=np.int64)
    if st >= 0:
        settle(horizon, pw)
        down = pw.idle + st if pw.conf[5] == 0 else pw.down
        off = np.where(pw.excl, horizon, np.minimum(down, horizon))
    off = np.where(pw.busy > 0, horizon, off)
    on = pw.on_total + np.where(never, 0, np.maximum(off - pw.on_since, 0))
    return on, pw.busy_total.copy()
