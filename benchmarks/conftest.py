"""Shared fixtures for the pytest-benchmark suite (run: python -m pytest benchmarks/ --benchmark-enable).

Makes the naive pure-Python twin (tests/naive.py) importable, and loads the
bundled KTH-SP2 trace once per session so that parsing is never timed.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parents[1] / "tests"
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))


@pytest.fixture(scope="session")
def kth():
    """(trace, cluster) for the bundled KTH-SP2 trace: 28,475 jobs on 100 processors."""
    import fastsched

    trace = fastsched.read_swf(fastsched.bundled_trace("KTH-SP2"))
    cluster = fastsched.Cluster.homogeneous(trace.procs)
    return trace, cluster
