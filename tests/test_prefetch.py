"""fastsched.engine.prefetch: a hint that compiles in kernels, changes nothing, and
takes arrays of its own dimension only (prefetch: 2-D, prefetch1: 1-D)."""
import numpy as np
import pytest
from numba import njit
from numba.core.errors import TypingError

from fastsched.engine.prefetch import prefetch, prefetch1


@njit
def _sum_with_prefetch(A):
    s = 0
    for i in range(A.shape[0]):
        if i + 1 < A.shape[0]:
            prefetch(A, i + 1, 0)
        for j in range(A.shape[1]):
            s += A[i, j]
    return s


def test_prefetch_leaves_values_alone():
    A = np.arange(24, dtype=np.int64).reshape(6, 4)
    before = A.copy()
    assert _sum_with_prefetch(A) == before.sum()
    np.testing.assert_array_equal(A, before)


def test_prefetch_wants_a_2d_array():
    @njit
    def one_d(a):
        prefetch(a, 0, 0)
    with pytest.raises(TypingError):
        one_d(np.zeros(3))


@njit
def _sum1_with_prefetch(a):
    s = 0
    for i in range(a.shape[0]):
        if i + 8 < a.shape[0]:
            prefetch1(a, i + 8)
        s += a[i]
    return s


def test_prefetch1_leaves_values_alone_and_wants_a_1d_array():
    a = np.arange(40, dtype=np.int64)
    assert _sum1_with_prefetch(a) == a.sum()
    np.testing.assert_array_equal(a, np.arange(40))

    @njit
    def two_d(A):
        prefetch1(A, 0)
    with pytest.raises(TypingError):
        two_d(np.zeros((2, 2)))
