"""Calling compiled kernels many times with arguments whose types never change,
without Numba's dispatch at every call.

Numba's dispatcher types every argument at each call to pick the compiled
version; it does so quickly for arrays and scalars, but a namedtuple is typed
in Python, field by field. The event loop's state is a dozen namedtuples
holding ~120 arrays: ~50 us of dispatch per call of ``_run``, and ~30 us per
compiled call a node event makes (giving back a killed job's resources). A run
with node failures calls them tens of thousands of times (each event cuts the
compiled run in two).

:class:`Entries` resolves a kernel's compiled version once, for the types of the
arguments of its first call, and calls it directly after. Its owner promises
that the types stay: the event loop's state keeps its dtypes, dimensions and
layouts (its arrays are replaced only by the kernels' own, built alike).
``CHECK`` (the tests turn it on) types the arguments at every call anyway and
raises TypeError when they differ from those the version was resolved for.
"""
from __future__ import annotations

#: type the arguments at every call and compare (tests)
CHECK = False


class Entries:
    """Per kernel, its compiled version for the argument types first seen. Not
    pickled (a checkpoint's loop resolves them again when loaded)."""

    def __init__(self):
        self._found = {}

    def __reduce__(self):
        return Entries, ()

    def entry(self, kernel, args):
        """``kernel``'s compiled version for ``args`` (compiled or loaded if needed)."""
        found = self._found.get(kernel)
        if found is not None and not CHECK:
            return found[1]
        sig = tuple(kernel.typeof_pyval(a) for a in args)
        if found is not None:
            if sig != found[0]:
                raise TypeError(f"{kernel.__name__}'s argument types changed: {sig} "
                                f"after {found[0]}")
            return found[1]
        found = (sig, kernel.compile(sig))
        self._found[kernel] = found
        return found[1]

    def __call__(self, kernel, *args):
        """``kernel(*args)`` through its resolved version."""
        return self.entry(kernel, args)(*args)
