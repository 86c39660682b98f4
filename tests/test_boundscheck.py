"""Bounds checking reaches the cached kernels.

CI runs the engine's twin suites a second time with ``NUMBA_BOUNDSCHECK=1``
(.ci/run), so that an index out of range in a kernel is an IndexError there
instead of silent memory corruption (many kernels also run without reference
counting: tests/test_nrt.py). Numba leaves the flag out of its cache key; this
checks that fastsched's key has it, so the checked run never loads unchecked
machine code compiled earlier into the same cache.
"""
import os
import subprocess
import sys

import pytest

#: node x = 2 of a 2-node profile is out of range. The arrays are views of longer
#: ones, so that the unchecked read past their end stays inside memory we own.
PROBE = """
import numpy as np
from fastsched.engine.profile import _segment_at
from fastsched.engine.state import Profile
wo = np.zeros(8, dtype=np.int64)[:2]; wlen = np.ones(8, dtype=np.int64)[:2]
WT = np.zeros(4, dtype=np.int64)
_segment_at(np.int64(0), np.int64(5), Profile(WT, WT, WT, WT, wo, wlen, wlen, wo, wo))     # compiles (and caches)
try:
    _segment_at(np.int64(2), np.int64(5), Profile(WT, WT, WT, WT, wo, wlen, wlen, wo, wo))
    print("unchecked")
except IndexError:
    print("checked")
"""


def _probe(cache, boundscheck):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), NUMBA_BOUNDSCHECK=boundscheck)
    r = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.strip()


@pytest.mark.parametrize("first", ["0", "1"])
def test_switching_bounds_checking_never_loads_the_other_kind_of_code(tmp_path, first):
    other = "1" if first == "0" else "0"
    want = {"0": "unchecked", "1": "checked"}
    assert _probe(tmp_path, first) == want[first]
    assert _probe(tmp_path, other) == want[other]       # same cache, the other flag
