"""Generic GPU job lists (fastsched.io.gpujobs): column aliases, seconds and ISO
timestamps, given and derived limits, partitions, detection by header, malformed
input naming file:line:field (hypothesis over the values). No engine run."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastsched.cli.common import load_trace, trace_format
from fastsched.io.gpujobs import GPUJOBS_ALIASES, is_gpujobs_header, parse_gpujobs
from fastsched.io.gpureaders import sniff_gpu_format
from fastsched.io.gputrace import derive_limits, read_gpu_trace
from fastsched.model.cluster import Cluster, Partition
from fastsched.model.errors import ConfigWarning, InputError


def write(tmp_path, text: str, name: str = "jobs.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def read(path, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = read_gpu_trace(path, **kw)
    return trace, [str(w.message) for w in caught if issubclass(w.category, ConfigWarning)]


ITP = ("JobID,submit_time,runtime,num_gpus,user,vc,time_limit\n"
       "a1,2024-03-01T00:00:00,3600,8,alice,vc1,2:00:00\n"
       "a2,2024-03-01T00:10:00Z,600,16,bob,vc2,\n"
       "a3,2024-03-01 01:00:00+01:00,7200,0.5,carol,vc1,10800\n"
       "a4,2024-03-01T02:00:00,100,4,alice,vc1,UNLIMITED\n")


def test_iso_dates_aliases_and_limits(tmp_path):
    path = write(tmp_path, ITP)
    assert sniff_gpu_format(path) == "gpujobs" and trace_format(str(path)) == "gpujobs"
    trace, said = read(path)
    w, jobs = trace.workload, trace.workload.jobs
    assert trace.format == "gpujobs" and trace.derived
    t0 = 1709251200                                        # 2024-03-01T00:00:00Z
    assert list(w.name) == ["a1", "a3", "a2", "a4"]        # by submit time; a3 is 00:00Z
    assert jobs.submit_time.tolist() == [t0, t0, t0 + 600, t0 + 7200]
    assert jobs.time_limit.tolist() == [7200, 10800, 3600, 3600]   # given; derived (round)
    assert jobs.runtime.tolist() == [3600, 7200, 600, 100]
    assert (jobs.num_nodes * jobs.gpus_per_node).tolist() == [8, 1, 16, 4]
    assert jobs.gpus_per_node[1] == 1 and trace.fractional == 1     # 0.5 GPU: one GPU
    assert [w.user_names[u] for u in jobs.user] == ["alice", "carol", "bob", "alice"]
    assert [w.account_names[a] for a in w.account] == ["vc1", "vc1", "vc2", "vc1"]
    assert any("2 job(s) without a time limit" in s for s in said)


def test_seconds_nodes_and_gpus_per_node(tmp_path):
    path = write(tmp_path, "id,submit,duration,gpus,nodes,gpus_per_node\n"
                           "7,100,50,,2,4\n8,40,10,3,,\n9,0,20,16,4,\n")
    cols = parse_gpujobs(path)
    assert cols.gpus.tolist() == [8, 3, 16] and cols.nodes.tolist() == [2, 0, 4]
    trace, _ = read(path, limits="exact")
    jobs = trace.workload.jobs
    assert jobs.job_id.tolist() == [9, 8, 7]               # numeric ids kept
    assert jobs.num_nodes.tolist() == [4, 1, 2] and jobs.gpus_per_node.tolist() == [4, 3, 4]
    assert jobs.time_limit.tolist() == [20, 10, 50]


def test_partitions_on_a_given_cluster(tmp_path):
    cluster = Cluster(["g1", "g2"], [64, 64], [8, 8], [0, 0],
                      partitions=[Partition("batch", np.array([0, 1])),
                                  Partition("debug", np.array([1]))], default_partition="batch")
    path = write(tmp_path, "job_id,submit_time,runtime,num_gpus,partition\n"
                           "1,0,10,8,debug\n2,5,10,8,\n3,6,10,8,nope\n")
    trace, said = read(path, cluster=cluster)
    assert trace.workload.jobs.partition.tolist() == [1, 0]
    assert [(s.job_id, s.line) for s in trace.skipped] == [(3, 4)]
    assert "partition 'nope' is not in the cluster" in trace.skipped[0].reason
    derived, _ = read(path)                                # derived cluster: one partition
    assert len(derived.workload) == 3
    assert any("partitions ignored" in n for n in derived.notes)


def test_not_a_job_list():
    assert not is_gpujobs_header(["job_id", "submit_time", "time_limit", "runtime",
                                  "num_nodes", "gpus_per_node", "cpus_per_node"])  # workload
    assert is_gpujobs_header(["JOBID", "Submit", "Elapsed", "GPUs"])


@pytest.mark.parametrize("row, line, field, says", [
    ("1,yesterday,10,1", 3, "submit_time", "is not a time"),
    ("1,0,ten,1", 3, "runtime", "is not a number"),
    ("1,0,10,-2", 3, "num_gpus", "is not a number >= -1"),
    ("1,0,10,", 3, "num_gpus", "no GPU count"),
    ("1,0,10,1,2:xx", 3, "time_limit", "is not a time limit"),
    ("1,0,10,1,-5", 3, "time_limit", "is not a time limit"),
    ("1,0,10,1,,1.5", 3, "nodes", "is not a whole number"),
])
def test_malformed_values_name_file_line_field(tmp_path, row, line, field, says):
    path = write(tmp_path, "job_id,submit_time,runtime,num_gpus,time_limit,nodes\n"
                           "0,0,1,1,,\n" + row + "\n")
    with pytest.raises(InputError) as e:
        parse_gpujobs(path)
    assert (e.value.file, e.value.line, e.value.field) == (str(path), line, field)
    assert says in str(e.value)


def test_missing_column(tmp_path):
    path = write(tmp_path, "job_id,submit_time,num_gpus\n1,0,1\n")
    with pytest.raises(InputError, match="no duration column") as e:
        read_gpu_trace(path, "gpujobs")
    assert e.value.line == 1


def test_cli_loads_and_says_the_limits(tmp_path, capsys):
    path = write(tmp_path, ITP)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster, workload, jobs, skipped = load_trace(str(path))
    assert len(jobs) == 4 and cluster.num_nodes >= 2 and not skipped
    assert "fraction of a GPU" in capsys.readouterr().out


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 10**7), st.integers(0, 10**6), st.integers(0, 64),
                          st.one_of(st.none(), st.integers(1, 10**6))),
                min_size=1, max_size=30),
       st.sampled_from(GPUJOBS_ALIASES["submit"]), st.sampled_from(GPUJOBS_ALIASES["duration"]),
       st.sampled_from(GPUJOBS_ALIASES["gpus"]), st.booleans())
def test_any_aliases_and_values_round_trip(tmp_path, rows, submit, duration, gpus, iso):
    def when(t):
        return np.datetime_as_string(np.datetime64(t, "s")) if iso else str(t)
    text = f"jobid,{submit},{duration},{gpus},limit\n" + "".join(
        f"{k},{when(s)},{d},{g},{'' if l is None else l}\n"
        for k, (s, d, g, l) in enumerate(rows))
    path = write(tmp_path, text)
    cols = parse_gpujobs(path)
    assert cols.submit.tolist() == [r[0] for r in rows]
    assert cols.runtime.tolist() == [r[1] for r in rows]
    assert cols.gpus.tolist() == [r[2] for r in rows]
    assert cols.limit.tolist() == [-1 if r[3] is None else r[3] for r in rows]
    assert cols.line.tolist() == list(range(2, len(rows) + 2))
    trace, _ = read(path, gpus_per_node=8)
    limits = np.array([r[3] if r[3] is not None else -1 for r in rows])
    order = np.argsort([r[0] for r in rows], kind="stable")
    expect = np.where(limits > 0, limits, derive_limits(np.array([r[1] for r in rows])))
    assert trace.workload.jobs.time_limit.tolist() == expect[order].tolist()


CELL = st.one_of(st.text(alphabet="0123456789-:.TZ+ eaxUNLIMTD_", max_size=12),
                 st.integers(-5, 10**6).map(str), st.just(""))


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(CELL, CELL, CELL, CELL, CELL), min_size=1, max_size=8))
def test_fuzz_any_cells_read_or_name_the_line_and_field(tmp_path, rows):
    """Any cell text: the list reads, or an InputError names a data line and a column
    of the header (never another exception)."""
    header = ["job_id", "submit_time", "runtime", "num_gpus", "time_limit"]
    text = ",".join(header) + "\n" + "".join(
        ",".join(c.replace(",", "") for c in r) + "\n" for r in rows)
    path = write(tmp_path, text)
    try:
        cols = parse_gpujobs(path)
    except InputError as e:
        assert e.file == str(path) and 2 <= e.line <= len(rows) + 1 and e.field in header
    else:
        assert len(cols.gpus) == len(rows) and (cols.gpus >= 0).all()
