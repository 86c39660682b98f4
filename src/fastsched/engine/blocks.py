"""Exclusive topology blocks (--exclusive=topo): a job that asks for it starts
only on leaf groups (base blocks or leaf switches) idle over its run and holds
every available node of them whole until its held end, in the profile and in
the running lists (entries ``RJ = -2 - j``; on its own nodes, capacity minus its
request); they come back at its end."""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
import numpy as np
from numba import njit

from ..model.cluster import Cluster
from ..model.constraints import csr_take
from ..model.errors import InputError
from .profile import _advance, _give_back, _hold, _room
from .running import RunningJobs, _add_running, _take_running


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
def _in_idle_blocks(pref, s, e, topo, nodes, p):
    """The nodes of ``pref`` (order kept) whose whole leaf group is idle over [s, e):
    every node of it has its full capacity free there in the pass's plan."""
    state = np.zeros(topo.boff.shape[0] - 1, dtype=np.int8)     # 0 unknown, 1 idle, 2 busy
    keep = np.zeros(pref.shape[0], dtype=np.bool_)
    for i in range(pref.shape[0]):
        b = topo.levels[0, pref[i]]
        if b < 0:
            continue
        if state[b] == 0:
            state[b] = 1 if _block_idle(b, e, topo, nodes, p) else 2
        keep[i] = state[b] == 1
    return pref[keep]


@njit(cache=True)
def _block_idle(b, e, topo, nodes, p):
    """Does every node of leaf group b have its full capacity free until e?"""
    for q in range(topo.boff[b], topo.boff[b + 1]):
        y = topo.bnodes[q]
        o = p.wo[y]
        k = 0
        while k < p.wlen[y] and p.WT[o + k] < e:
            if p.WG[o + k] != nodes.capG[y] or p.WC[o + k] != nodes.capC[y] or \
                    p.WM[o + k] != nodes.capM[y]:
                return False
            k += 1
    return True


@njit(cache=True)
def _hold_blocks(j, now, pe, own, ask, topo, nodes, free, p, run):
    """Exclusive job ``j`` (request ``ask``) started now on ``own`` (ascending):
    every node of its leaf groups is held whole over [now, pe) (``pe``: its held
    end) in the profile and in the running state, by entries ``RJ = -2 - j`` (on
    its own nodes: capacity minus its request). Returns the profile and running
    lists (maybe moved or widened: :func:`_room`, :func:`_add_running`)."""
    for b in np.unique(topo.levels[0][own]):
        for q in range(topo.boff[b], topo.boff[b + 1]):
            y = topo.bnodes[q]
            k = np.searchsorted(own, y)
            mine = k < own.shape[0] and own[k] == y
            hg = nodes.capG[y] - (ask.g if mine else 0)
            hc = nodes.capC[y] - (ask.c if mine else 0)
            hm = nodes.capM[y] - (ask.m if mine else 0)
            p.WT[p.wo[y]] = now          # kept profile: every later breakpoint is > now
            _hold(y, now, pe, hg, hc, hm, p)
            if p.wlen[y] + 2 > p.wcap[y]:
                p = _room(y, p)
            free.fg[y] -= hg
            free.fc[y] -= hc
            free.fm[y] -= hm
            run = _add_running(y, pe, hg, hc, hm, -2 - j, run)
    return p, run


@njit(cache=True)
def _release_blocks(j, now, own, topo, free, p, run):
    """Exclusive job ``j`` ended at ``now``: what :func:`_hold_blocks` held comes back
    (free now, and in the kept profile from now to its held end)."""
    for b in np.unique(topo.levels[0][own]):
        for q in range(topo.boff[b], topo.boff[b + 1]):
            y = topo.bnodes[q]
            _advance(y, now, p)
            e, g, c, m = _take_running(y, -2 - j, run)
            free.fg[y] += g
            free.fc[y] += c
            free.fm[y] += m
            _give_back(y, now, e, g, c, m, p)


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
