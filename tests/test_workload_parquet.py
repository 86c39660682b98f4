"""Workloads as Parquet (fastsched.io.parquet): what is written reads back as the CSV does,
a missing pyarrow names the extra, and bad cells are errors naming row and column."""
from __future__ import annotations

import dataclasses
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from fastsched.io.workload import read_workload, write_workload
from fastsched.model.errors import InputError, UnsupportedError
from fastsched.model.jobs import JOB_FIELDS
from fastsched.tools.generate import ai_cluster, ai_mix
from test_workload_constraints import CLUSTER, _read_rows, submitted_rows

pa = pytest.importorskip("pyarrow")     # in the "test" extra; skipped only without it
pq = pytest.importorskip("pyarrow.parquet")


def assert_same_workload(a, b):
    for name in JOB_FIELDS:
        x, y = getattr(a.jobs, name), getattr(b.jobs, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    for f in dataclasses.fields(a):
        if f.name == "jobs":
            continue
        x, y = getattr(a, f.name), getattr(b, f.name)
        if dataclasses.is_dataclass(x):
            for g in dataclasses.fields(x):
                u, v = getattr(x, g.name), getattr(y, g.name)
                assert (np.array_equal(u, v) if isinstance(u, np.ndarray) else u == v), \
                    (f.name, g.name)
        elif isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), f.name
        else:
            assert x == y, f.name


@pytest.mark.parametrize("suffix", [".parquet", ".pq"])
def test_ai_mix_round_trip(tmp_path, suffix):
    cluster = ai_cluster("ai-8k")
    w = ai_mix(cluster, 2_000, seed=3)
    write_workload(w, cluster, tmp_path / ("w" + suffix))
    write_workload(w, cluster, tmp_path / "w.csv")
    from_parquet = read_workload(tmp_path / ("w" + suffix), cluster)
    assert_same_workload(from_parquet, read_workload(tmp_path / "w.csv", cluster))
    assert from_parquet.user_names == w.user_names
    assert np.array_equal(from_parquet.jobs.runtime, w.jobs.runtime)
    columns = pq.read_schema(tmp_path / ("w" + suffix)).names
    assert columns[:12] == ["job_id", "submit_time", "time_limit", "runtime", "num_nodes",
                            "gpus_per_node", "cpus_per_node", "mem_per_node", "partition",
                            "user", "account", "org"]


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=submitted_rows())
def test_round_trip_with_constraints(tmp_path, rows):
    """Arrays, dependencies, partition lists, QOS and names: Parquet = CSV."""
    try:
        w = _read_rows(tmp_path, rows)
    except InputError:
        return
    write_workload(w, CLUSTER, tmp_path / "out.parquet")
    write_workload(w, CLUSTER, tmp_path / "out.csv")
    assert_same_workload(read_workload(tmp_path / "out.parquet", CLUSTER),
                         read_workload(tmp_path / "out.csv", CLUSTER))


def _table(**columns):
    base = {"job_id": [1, 2], "submit_time": [0, 5], "time_limit": [60, 60],
            "runtime": [30, 30], "num_nodes": [1, 1], "gpus_per_node": [0, 0],
            "cpus_per_node": [1, 1], "mem_per_node": [0, 0], "partition": ["batch", "batch"],
            "user": ["u", "v"], "account": ["a", "a"]}
    base.update(columns)
    return pa.table(base)


def test_hand_written_table(tmp_path):
    path = tmp_path / "w.parquet"
    pq.write_table(_table(num_nodes=pa.array([1, 2], pa.int32()),
                          qos=pa.array([None, "high"], pa.string())), path)
    w = read_workload(path, CLUSTER)
    assert w.jobs.num_nodes.tolist() == [1, 2]
    assert [w.qos_names[q] for q in w.qos] == ["normal", "high"]


@pytest.mark.parametrize("columns,line,field,message", [
    ({"runtime": pa.array([30, None], pa.int64())}, 3, "runtime", "missing value"),
    ({"runtime": pa.array([30.5, 30.0])}, 2, "runtime", "is not an integer"),
    ({"user": pa.array(["u", None])}, 3, "user", "missing value"),
    ({"job_id": pa.array([1, 2**64 - 1], pa.uint64())}, 3, "job_id", "out of range"),
])
def test_bad_cells_name_row_and_column(tmp_path, columns, line, field, message):
    path = tmp_path / "w.parquet"
    pq.write_table(_table(**columns), path)
    with pytest.raises(InputError, match=message) as e:
        read_workload(path, CLUSTER)
    assert (e.value.file, e.value.line, e.value.field) == (str(path), line, field)


def test_missing_column_and_not_parquet(tmp_path):
    path = tmp_path / "w.parquet"
    pq.write_table(_table().drop(["runtime"]), path)
    with pytest.raises(InputError, match="missing column 'runtime'"):
        read_workload(path, CLUSTER)
    path.write_text("job_id,submit_time\n")
    with pytest.raises(InputError, match="cannot read Parquet") as e:
        read_workload(path, CLUSTER)
    assert e.value.file == str(path)


def test_without_pyarrow_the_error_names_the_extra(tmp_path, monkeypatch):
    w = ai_mix(CLUSTER, 20, seed=1)
    write_workload(w, CLUSTER, tmp_path / "w.parquet")
    for name in [m for m in sys.modules if m == "pyarrow" or m.startswith("pyarrow.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyarrow", None)      # import pyarrow -> ImportError
    for call in (lambda: write_workload(w, CLUSTER, tmp_path / "x.parquet"),
                 lambda: read_workload(tmp_path / "w.parquet", CLUSTER)):
        with pytest.raises(UnsupportedError, match=r"fastsched\[parquet\]"):
            call()
    assert not (tmp_path / "x.parquet").exists()
