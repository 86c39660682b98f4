"""The run index's storage (:mod:`fastsched.engine.runindex`): one table of entries
kept in key order by a treap, with the per-slot subtree maxima that let a search skip
subtrees without a long enough run.

Storage: one int64 table ``TR[id, field]``, a free list ``fr`` and ``meta =
[used, free count, slots, last added id, insertion hints]`` (:func:`new_meta`).
Its upkeep is bound by memory traffic (~10^5 entries, tens of MB: beyond the
L2 caches), so a row is small and cache-line aligned (:func:`_rows`):
one 64-byte line with the key and the links (node ids, GPUs, CPUs, MB, entry
ids and slot masks fit in 32 bits and are packed in pairs, :func:`_get`),
one line of per-slot maxima (8 slots; 16 columns once a ninth slot is added,
:func:`add_slot`). A treap priority is a hash of the row id (:func:`_prio`):
computed, not stored; the shape of the treap never changes an answer, only
the entries' key order does.

Reference counts: every kernel here but the allocating ones (``_rows``,
``tr_empty``, ``tr_reserve``, ``add_slot``, ``new_meta``, ``ix_packable``) is a
:func:`fastsched.engine.leafkernel.leaf_kernel`, compiled without Numba's reference
counting (that module says why, and why it is safe).
"""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
import numpy as np
from numba import njit

from .leafkernel import leaf_kernel

# A row: eight int64 words (one 64-byte line) then the slot maxima (column
# _MX + q: slot q's subtree max length). Words 0-3 are the key in key order,
# (g, c) and (m, x) packed so that comparing the words compares the pairs;
# words 4-6 pack the int32 links and the slot mask.
_A, _GC, _MN, _LN, _LR, _UK, _PN = range(7)         # words
NFIELDS = 8             # the first slot column
_MX = NFIELDS
# half-word fields, read and written by _get / _set: 2 * word + (1: high half)
_C, _G = 2 * _GC, 2 * _GC + 1
_X, _M = 2 * _MN, 2 * _MN + 1
_LF, _RT = 2 * _LR, 2 * _LR + 1
_UP, _MK = 2 * _UK, 2 * _UK + 1
_PV, _NX = 2 * _PN, 2 * _PN + 1
_LO = np.int64(0xFFFFFFFF)
MAX_SLOTS = 16
_SLOT_COLS = 8          # slot columns of a new table: one line
_INF = np.int64(1) << np.int64(62)
_NH = 4                 # insertion hints kept per job: (start, entry) pairs in meta[5:]


@njit(cache=True)
def new_meta():
    """``meta = [used, free count, slots, last added id, next hint
    to replace, (start, entry) x _NH hints]``."""
    meta = np.zeros(5 + 2 * _NH, dtype=np.int64)
    meta[3] = -1
    for h in range(_NH):
        meta[6 + 2 * h] = -1
    return meta


def new_table(slots: int = 0, cap: int = 1024):
    """Empty storage for ``slots`` slots: (TR, fr, meta)."""
    meta = new_meta()
    meta[2] = slots
    TR = tr_empty(cap) if slots <= _SLOT_COLS else _rows(cap, _MX + MAX_SLOTS)
    return TR, np.empty(cap, dtype=np.int64), meta


@njit(cache=True)
def tr_empty(cap):
    """A table of ``cap`` rows with room for 8 slots (no entries: the slot count
    is in ``meta``)."""
    return _rows(cap, NFIELDS + _SLOT_COLS)


@njit(cache=True)
def _rows(cap, width):
    """An uninitialised (cap, width) table whose rows start on 64-byte lines
    (width: a multiple of 8)."""
    buf = np.empty(cap * width + 8, dtype=np.int64)
    off = (-buf.ctypes.data % 64) // 8
    return buf[off:off + cap * width].reshape((cap, width))


@njit(cache=True)
def tr_reserve(TR, fr, meta, extra):
    """Room for ``extra`` more entries (doubling): returns (TR, fr). Hot callers
    test ``meta[0] + extra > TR.shape[0]`` first: a call that returns arrays
    costs reference counting even when nothing grows."""
    if meta[0] + extra <= TR.shape[0]:
        return TR, fr
    cap = TR.shape[0]
    while cap < meta[0] + extra:
        cap *= 2
    T2 = _rows(cap, TR.shape[1])
    T2[:meta[0]] = TR[:meta[0]]
    f2 = np.empty(cap, dtype=np.int64)
    f2[:meta[1]] = fr[:meta[1]]
    return T2, f2


@njit(cache=True)
def add_slot(TR, meta):
    """Storage for one more slot (no entry has a run of it yet): the table,
    widened to 16 slot columns at the ninth slot. The new slot is ``meta[2] - 1``."""
    meta[2] += 1
    if NFIELDS + meta[2] <= TR.shape[1]:
        return TR               # unused slot columns hold -1 already (_add)
    T2 = _rows(TR.shape[0], NFIELDS + MAX_SLOTS)
    T2[:meta[0], :TR.shape[1]] = TR[:meta[0]]
    T2[:meta[0], TR.shape[1]:] = -1
    return T2


@njit(cache=True)
def ix_packable(capG, capC, capM):
    """True if every node's GPUs, CPUs and MB fit the packed 32-bit halves of
    the key (a run's free at its start lies between 0 and the capacity)."""
    lim = np.int64(1) << np.int64(31)
    return capG.shape[0] < lim and (capG.shape[0] == 0 or (
        capG.max() < lim and capC.max() < lim and capM.max() < lim))


@leaf_kernel
def _get(TR, t, f):
    """Half-word field f of entry t (signed 32-bit: links are -1 for none)."""
    w = TR[t, f >> 1]
    return w >> 32 if f & 1 else (w << 32) >> 32


@leaf_kernel
def _set(TR, t, f, v):
    """Set half-word field f of entry t to v (-2**31 <= v < 2**31)."""
    w = TR[t, f >> 1]
    if f & 1:
        TR[t, f >> 1] = (w & _LO) | (v << 32)
    else:
        TR[t, f >> 1] = (w & ~_LO) | (v & _LO)


@leaf_kernel
def _free_is(TR, t, g, c, m):
    """Entry t's free at its start is (g, c, m)."""
    return _get(TR, t, _G) == g and _get(TR, t, _C) == c and _get(TR, t, _M) == m


@leaf_kernel
def tr_key(TR, t):
    """Entry t's key (a, g, c, m, x, length)."""
    return (TR[t, _A], _get(TR, t, _G), _get(TR, t, _C), _get(TR, t, _M), _get(TR, t, _X),
            TR[t, _LN])


@leaf_kernel
def tr_node(TR, t):
    """Entry t's node."""
    return _get(TR, t, _X)


@leaf_kernel
def _prio(t):
    """Entry t's treap priority: splitmix64 of its row id (a reused row keeps its
    priority; it is as independent of the new key as a fresh draw)."""
    h = np.uint64(t + 1) * np.uint64(0x9E3779B97F4A7C15)
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    h = h ^ (h >> np.uint64(31))
    return np.int64(h >> np.uint64(1))


@leaf_kernel
def _less(TR, i, j):
    """key(i) < key(j): (a, g, c, m, x, length)."""
    for f in (_A, _GC, _MN, _LN):
        if TR[i, f] != TR[j, f]:
            return TR[i, f] < TR[j, f]
    return False


@leaf_kernel
def _pull(TR, t):
    """Recompute t's subtree max length of every slot; True if one changed."""
    lf = _get(TR, t, _LF)
    rt = _get(TR, t, _RT)
    mk = _get(TR, t, _MK)
    ln = TR[t, _LN]
    changed = False
    for q in range(TR.shape[1] - NFIELDS):
        v = ln if (mk >> q) & 1 else -1
        if lf >= 0 and TR[lf, _MX + q] > v:
            v = TR[lf, _MX + q]
        if rt >= 0 and TR[rt, _MX + q] > v:
            v = TR[rt, _MX + q]
        if TR[t, _MX + q] != v:
            TR[t, _MX + q] = v
            changed = True
    return changed


@leaf_kernel
def _pull_up(TR, t):
    """Recompute the max lengths from t up; above a subtree whose maxima did
    not change nothing can change, so stop there."""
    while t >= 0 and _pull(TR, t):
        t = _get(TR, t, _UP)


@leaf_kernel
def _raise(TR, t, mk, ln):
    """t and its ancestors learn a run of length ln of the slots in mk (maxima
    only grow upwards: stop where none of them grows)."""
    while t >= 0:
        grew = False
        b = mk
        q = 0
        while b:
            if b & 1 and TR[t, _MX + q] < ln:
                TR[t, _MX + q] = ln
                grew = True
            b >>= 1
            q += 1
        if not grew:
            return
        t = _get(TR, t, _UP)


@leaf_kernel
def _rotate_up(TR, z, root):
    """Rotate z above its parent; returns the new root. (Iterative code
    throughout: Numba's cache does not keep recursive functions safely.)"""
    p = _get(TR, z, _UP)
    gp = _get(TR, p, _UP)
    if _get(TR, p, _LF) == z:
        b = _get(TR, z, _RT)
        _set(TR, p, _LF, b)
        _set(TR, z, _RT, p)
    else:
        b = _get(TR, z, _LF)
        _set(TR, p, _RT, b)
        _set(TR, z, _LF, p)
    if b >= 0:
        _set(TR, b, _UP, p)
    _set(TR, p, _UP, z)
    _set(TR, z, _UP, gp)
    if gp < 0:
        root = z
    elif _get(TR, gp, _LF) == p:
        _set(TR, gp, _LF, z)
    else:
        _set(TR, gp, _RT, z)
    for q in range(TR.shape[1] - NFIELDS):     # z now tops p's old subtree: same runs
        TR[z, _MX + q] = TR[p, _MX + q]
    _pull(TR, p)
    return root


@leaf_kernel
def _rise(TR, z, root):
    """Rotate a new leaf up to its heap place; returns the new root."""
    while _get(TR, z, _UP) >= 0 and _prio(z) > _prio(_get(TR, z, _UP)):
        root = _rotate_up(TR, z, root)
    return root


@leaf_kernel
def _insert(TR, root, z):
    """Insert entry z (fields set, no links) by a descent; returns the new root."""
    _set(TR, z, _LF, -1)
    _set(TR, z, _RT, -1)
    if root < 0:
        _set(TR, z, _UP, -1)
        return z
    t = root
    while True:
        if _less(TR, z, t):
            if _get(TR, t, _LF) < 0:
                _set(TR, t, _LF, z)
                break
            t = _get(TR, t, _LF)
        else:
            if _get(TR, t, _RT) < 0:
                _set(TR, t, _RT, z)
                break
            t = _get(TR, t, _RT)
    _set(TR, z, _UP, t)
    _raise(TR, t, _get(TR, z, _MK), TR[z, _LN])
    return _rise(TR, z, root)      # each rotation keeps the two subtrees it touches right


@leaf_kernel
def _delete_at(TR, root, t, fr, meta):
    """Remove entry t; returns the new root."""
    # rotate t down until it has at most one child, then splice it out: the
    # child's subtree (maxima right) takes its place, heap order holds
    lf = _get(TR, t, _LF)
    rt = _get(TR, t, _RT)
    while lf >= 0 and rt >= 0:
        root = _rotate_up(TR, lf if _prio(lf) > _prio(rt) else rt, root)
        lf = _get(TR, t, _LF)
        rt = _get(TR, t, _RT)
    ch = lf if lf >= 0 else rt
    p = _get(TR, t, _UP)
    if ch >= 0:
        _set(TR, ch, _UP, p)
    if p < 0:
        root = ch
    else:
        if _get(TR, p, _LF) == t:
            _set(TR, p, _LF, ch)
        else:
            _set(TR, p, _RT, ch)
        _pull_up(TR, p)
    fr[meta[1]] = t
    meta[1] += 1
    return root


@leaf_kernel
def _first(TR, t, d, q):
    """The first entry of subtree t (whose slot-q max length is >= d) that is
    a run of slot q at least d long."""
    while True:
        lf = _get(TR, t, _LF)
        if lf >= 0 and TR[lf, _MX + q] >= d:
            t = lf
        elif (_get(TR, t, _MK) >> q) & 1 and TR[t, _LN] >= d:
            return t
        else:
            t = _get(TR, t, _RT)


@leaf_kernel
def tr_succ(TR, root, lo, d, q):
    """The first entry in key order after entry ``lo`` (-1: from the start) that
    is a run of slot ``q`` at least ``d`` (>= 0) long; -1 if none."""
    if lo < 0:
        if root < 0 or TR[root, _MX + q] < d:
            return -1
        return _first(TR, root, d, q)
    rt = _get(TR, lo, _RT)
    if rt >= 0 and TR[rt, _MX + q] >= d:
        return _first(TR, rt, d, q)
    t = lo
    p = _get(TR, t, _UP)
    while p >= 0:
        if _get(TR, p, _LF) == t:
            if (_get(TR, p, _MK) >> q) & 1 and TR[p, _LN] >= d:
                return p
            rt = _get(TR, p, _RT)
            if rt >= 0 and TR[rt, _MX + q] >= d:
                return _first(TR, rt, d, q)
        t = p
        p = _get(TR, t, _UP)
    return -1


@leaf_kernel
def _next(TR, t):
    """The entry after t in key order, whatever its slots; -1 if none."""
    return _step(TR, t, _RT, _LF)


@leaf_kernel
def _prev(TR, t):
    """The entry before t in key order, whatever its slots; -1 if none."""
    return _step(TR, t, _LF, _RT)


@leaf_kernel
def _step(TR, t, out, back):
    """t's neighbour in key order on the side of link ``out`` (_RT: successor,
    _LF: predecessor): the far end of that subtree, else the first ancestor
    reached from the other side; -1 if none."""
    c = _get(TR, t, out)
    if c >= 0:
        while _get(TR, c, back) >= 0:
            c = _get(TR, c, back)
        return c
    p = _get(TR, t, _UP)
    while p >= 0 and _get(TR, p, out) == t:
        t = p
        p = _get(TR, t, _UP)
    return p


@leaf_kernel
def _add(TR, fr, meta, root, a, g, c, m, x, ln, mk, after=-1):
    """Insert a run of the slots in ``mk`` (storage must have room); returns the
    new root, the entry in ``meta[3]``. ``after``: an entry that is likely its
    predecessor in key order (-1: none); when it is, the run is attached next
    to it without a descent from the root."""
    if meta[1] > 0:
        meta[1] -= 1
        z = fr[meta[1]]
    else:
        z = meta[0]
        meta[0] += 1
    TR[z, _A] = a
    _set(TR, z, _G, g)
    _set(TR, z, _C, c)
    _set(TR, z, _M, m)
    _set(TR, z, _X, x)
    TR[z, _LN] = ln
    _set(TR, z, _MK, mk)
    for q in range(TR.shape[1] - NFIELDS):
        TR[z, _MX + q] = ln if (mk >> q) & 1 else -1
    meta[3] = z
    if after >= 0 and _attach_after(TR, after, z):
        return _rise(TR, z, root)
    return _insert(TR, root, z)


@leaf_kernel
def _attach_after(TR, f, z):
    """Attach z as a leaf right after entry f in key order if it belongs there
    (key(f) < key(z) < key(successor of f)); True if done."""
    if not _less(TR, f, z):
        return False
    sc = _next(TR, f)
    if sc >= 0 and not _less(TR, z, sc):
        return False
    _set(TR, z, _LF, -1)
    _set(TR, z, _RT, -1)
    if _get(TR, f, _RT) < 0:
        p = f
        _set(TR, f, _RT, z)
    else:                       # the successor is the leftmost of f's right subtree
        p = sc
        _set(TR, sc, _LF, z)
    _set(TR, z, _UP, p)
    _raise(TR, p, _get(TR, z, _MK), TR[z, _LN])
    return True


# --------------------------------------------------------------------------- node runs
