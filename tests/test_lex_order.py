"""The best-fit orders of the node engine (engine.earliest._lex_order): one packed sort
when the keys' spans allow, stable sorts otherwise; both the order np.lexsort gives.
``_lex_first`` (the first few of that order, by selection) gives its first ``need``."""
import numpy as np
from hypothesis import given, settings, strategies as st

from fastsched.engine.earliest import _lex_first, _lex_order

_SMALL = st.integers(0, 8)
_WIDE = st.integers(-(1 << 61), 1 << 61)


@settings(max_examples=200, deadline=None)
@given(st.data(), st.integers(0, 40), st.booleans())
def test_lex_order_is_lexsort_with_position_ties(data, count, wide):
    keys = [np.array(data.draw(st.lists(_WIDE if wide and k == 0 else _SMALL,
                                        min_size=count + 3, max_size=count + 3)),
                     dtype=np.int64) for k in range(4)]
    got = _lex_order(*keys, count)
    k0, k1, k2, k3 = (k[:count] for k in keys)
    want = np.lexsort((np.arange(count), k3, k2, k1, k0))
    assert got.tolist() == want.tolist()


def test_lex_order_falls_back_when_spans_overflow():
    big = np.array([-(1 << 61), 1 << 61, 0, 5], dtype=np.int64)
    other = np.array([3, 1, 2, 0], dtype=np.int64)
    got = _lex_order(big, big, other, other, 4)
    assert got.tolist() == np.lexsort((np.arange(4), other, other, big, big)).tolist()


@settings(max_examples=200, deadline=None)
@given(st.data(), st.integers(1, 60), st.booleans())
def test_lex_first_is_the_head_of_lexsort(data, count, wide):
    need = data.draw(st.integers(1, count))
    keys = [np.array(data.draw(st.lists(_WIDE if wide and k == 1 else _SMALL,
                                        min_size=count, max_size=count)),
                     dtype=np.int64) for k in range(4)]
    got = _lex_first(*keys, count, need)
    want = np.lexsort((np.arange(count), keys[3], keys[2], keys[1], keys[0]))[:need]
    assert got.tolist() == want.tolist()
