"""A simulation so far, as a priority function sees it between two passes.

The event loops keep their per-job state in submit order; a priority function
reads it in the caller's job order. A :class:`Column` maps one at a time, so
that reading the jobs that matter (the pending ones, the running ones) costs
what it reads, not the number of jobs ever submitted; code that wants a whole
array still gets one (NumPy operators, ``np.asarray``, array methods).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin


class Column(NDArrayOperatorsMixin):
    """One per-job array in the caller's job order over ``values`` kept in another
    order (caller's job i is ``values[inverse[i]]``), read lazily.

    Indexing (job indices, a slice, a mask) reads only those entries; operators,
    ``np.asarray`` and array attributes (``.copy()``, ``.tolist()``, ``.max()``...)
    act on the whole array, built on first use. Valid while the loop is paused:
    indexing reads the loop's live state.
    """

    __slots__ = ("_values", "_inverse", "_whole")

    def __init__(self, values: np.ndarray, inverse: np.ndarray):
        self._values = values
        self._inverse = inverse
        self._whole = None

    def __len__(self) -> int:
        return len(self._inverse)

    def __getitem__(self, rows):
        return self._values[self._inverse[rows]]

    def __array__(self, dtype=None, copy=None):
        if self._whole is None:
            self._whole = self._values[self._inverse]
        return self._whole if dtype is None else self._whole.astype(dtype)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = tuple(np.asarray(x) if isinstance(x, Column) else x for x in inputs)
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(np.asarray(self), name)

    def __repr__(self) -> str:
        return f"Column({np.asarray(self)!r})"


def per_job(values, n: int, name: str):
    """``values`` as something indexed by job: a :class:`Column` as it is, else an
    int64 array; either must have ``n`` entries."""
    from .errors import InputError
    out = values if isinstance(values, Column) else np.asarray(values, dtype=np.int64)
    if len(out) != n or (not isinstance(out, Column) and out.ndim != 1):
        raise InputError(f"{name} must have {n} entries (got {np.shape(values)})", field=name)
    return out


@dataclass(frozen=True)
class Progress:
    """A simulation so far, in the caller's job order: when each job started, ended
    and became eligible (-1 where not known yet).
    Arrays, or :class:`Column` views of a paused event loop (:meth:`over`)."""

    start: np.ndarray
    end: np.ndarray
    eligible: np.ndarray

    @classmethod
    def over(cls, start, end, eligible, inverse) -> "Progress":
        """The progress of a loop whose arrays are in another order (``inverse``:
        caller's job i is entry ``inverse[i]``)."""
        return cls(Column(start, inverse), Column(end, inverse), Column(eligible, inverse))
