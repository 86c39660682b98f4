"""Running jobs: the input type (:class:`RunningJobs`) and the kernels' per-node
running lists (:class:`~fastsched.engine.state.Running`), sorted by held end."""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
from dataclasses import dataclass

import numpy as np
from numba import njit

from ..model.cluster import Cluster
from ..model.errors import InputError
from .leafkernel import leaf_kernel
from .state import Running


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


def check_planned_ends(running: RunningJobs, now: int) -> np.ndarray:
    """The running jobs' planned ends (int64), all after ``now`` (else InputError)."""
    pe_job = np.asarray(running.planned_end, dtype=np.int64)
    if len(pe_job) and pe_job.min() <= now:
        r = int(np.argmin(pe_job))
        raise InputError(f"running job {running.job_id[r]} has planned end {pe_job[r]} <= now "
                         f"({now}): complete it first", field="running")
    return pe_job


def _running_state(cluster: Cluster, running: RunningJobs, now: int, res: int = 1):
    """Free-now arrays ``(fg, fc, fm, fmask)``, per-node running lists (held ends:
    planned ends rounded up to multiples of ``res``, sorted) and profile segment
    sizes from ``running``."""
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
    pe_job = check_planned_ends(running, now)
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
    return (fg, fc, fm, fmask), Running(RT, RG, RC, RM, RJ, rlen), wcap


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


@njit(cache=True)
def _widen(A, width):
    B = np.empty((A.shape[0], width), dtype=A.dtype)
    B[:, :A.shape[1]] = A
    return B


@njit(cache=True)
def _add_running(x, pe, g, c, m, jid, run):
    """Node x's running list gets (held end ``pe``, g, c, m, ``jid``), kept sorted by
    held end. Returns the lists (twice as wide when full)."""
    if run.rlen[x] + 1 > run.RT.shape[1]:
        run = _widened(run)
    _insert_running(x, pe, g, c, m, jid, run)
    return run


@njit(cache=True)
def _running_room(run, nodes, count):
    """The running lists with room for one more entry on each of ``nodes[:count]``
    (twice as wide when one is full): then :func:`_insert_running` needs no check,
    and a start's loop over its nodes no reference-counted call."""
    width = run.RT.shape[1]
    for i in range(count):
        if run.rlen[nodes[i]] + 1 > width:
            return _widened(run)
    return run


@njit(cache=True)
def _widened(run):
    RT, RG, RC, RM, RJ, rlen = run
    R = 2 * RT.shape[1]
    return Running(_widen(RT, R), _widen(RG, R), _widen(RC, R), _widen(RM, R), _widen(RJ, R),
                   rlen)


@leaf_kernel
def _insert_running(x, pe, g, c, m, jid, run):
    """:func:`_add_running` where the row has room."""
    RT, RG, RC, RM, RJ, rlen = run
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


@leaf_kernel
def _take_running(x, jid, run):
    """Remove ``jid``'s entries from node x's running list (order kept); returns
    their latest held end and summed (g, c, m)."""
    RT, RG, RC, RM, RJ, rlen = run
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
