"""The textbook EASY simulator of the benchmarks (benchmarks/textbook_easy.py) is a
fair peer: it gives the counts model's EASY start times, on random workloads
(against the twin tests/naive.py too) and on the bundled traces."""
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import naive
from fastsched import Cluster, JobTable
from fastsched.engine.counts import run_counts

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import swf_like  # noqa: E402
import textbook_easy  # noqa: E402


@st.composite
def workloads(draw):
    P = draw(st.integers(1, 12))
    n = draw(st.integers(1, 25))
    ids = draw(st.lists(st.integers(1, 500), min_size=n, max_size=n, unique=True))
    return P, JobTable.from_arrays(
        job_id=ids, submit_time=draw(st.lists(st.integers(0, 25), min_size=n, max_size=n)),
        num_nodes=draw(st.lists(st.integers(1, P), min_size=n, max_size=n)),
        time_limit=draw(st.lists(st.integers(1, 10), min_size=n, max_size=n)),
        runtime=draw(st.lists(st.integers(0, 12), min_size=n, max_size=n)))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=workloads())
def test_textbook_easy_matches_counts_model_and_twin(case):
    P, jobs = case
    got = textbook_easy.simulate_easy(textbook_easy.jobs_from_table(jobs), P)
    run = run_counts(Cluster.homogeneous(P), jobs, "easy")
    assert got == run.start.tolist()
    twin = naive.simulate(naive.jobs_from_table(jobs), P, "easy", 1)
    assert got == [twin[int(j)][0] for j in jobs.job_id]


def _bundled(name):
    import fastsched as fs
    trace = fs.read_swf(fs.bundled_trace(name))
    return trace.procs, trace.jobs


@pytest.mark.parametrize("load", [
    lambda: _bundled("KTH-SP2"), lambda: _bundled("lublin_256"),
    lambda: _bundled("lublin_256_new2"),
    lambda: swf_like.generate("lanl-cm5", jobs=8000),
    lambda: swf_like.generate("mira", jobs=3000)],
    ids=["KTH-SP2", "lublin_256", "lublin_256_new2", "lanl-cm5-8k", "mira-3k"])
def test_textbook_easy_matches_counts_model_on_traces(load):
    P, jobs = load()
    got = textbook_easy.simulate_easy(textbook_easy.jobs_from_table(jobs), P)
    np.testing.assert_array_equal(got, run_counts(Cluster.homogeneous(P), jobs, "easy").start)
