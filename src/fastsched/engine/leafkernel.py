"""Leaf kernels: compiled without Numba's reference counting, and why that is safe.

Why: a Numba kernel that is not inlined increments and decrements the reference
count of every array it is passed and every view it takes, with atomic
(lock-prefixed) instructions; Numba's pruning pass leaves most of them in
kernels with loops and branches. They were ~45% of a conservative pass on
100k GPUs (sampled with perf; benchmarks/RESULTS.md).

Why it is safe, rule by rule:

1. A leaf kernel allocates nothing: Numba refuses to compile an allocation
   without reference counting, so no array is ever created uncounted.
2. It returns no array: its caller would own a reference the kernel never took,
   and free the array while its owner still uses it (a use-after-free).
   Numba does not refuse this; tests/test_nrt.py checks every compiled
   signature of every leaf kernel.
3. The views it takes live only during the call, inside arrays its caller
   keeps alive for the whole call (arguments are held by the caller's frame).
4. Its callees inherit the flag, so whatever it calls is a leaf kernel too; a
   callee that must allocate says ``_nrt=True`` itself, and is not called from
   a leaf kernel with its result kept.

Every kernel compiled so is declared with :func:`leaf_kernel` (tests/test_nrt.py
checks that no other spelling exists), so each declaration points here.
"""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
from numba import njit


def leaf_kernel(fn=None, *, inline="never"):
    """``fn`` compiled (and cached) without reference counting: see the module.

    ``@leaf_kernel(inline="always")``: Numba copies the kernel into each caller
    instead of calling it, for a tiny kernel called per node in a hot loop, where
    the call would cost more than the work (a state tuple is passed field by field)."""
    if fn is None:
        return lambda f: leaf_kernel(f, inline=inline)
    return njit(cache=True, _nrt=False, inline=inline)(fn)
