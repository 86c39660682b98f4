"""A workload CSV's ``gpu_type`` column (io/workloadgpu.py): spellings, errors naming
file, line and field, typed rows that cannot run skipped, written back out, and placed
on the nodes with their type through derived partitions from the CLI and the API."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastsched as fs
from fastsched.cli import main
from fastsched.io.workload import read_workload, write_workload
from fastsched.io.workloadgpu import gpu_type_value
from fastsched.model.errors import InputError
from fastsched.sim.gputypes import typed_workload

CONF = """\
NodeName=a[1-2] CPUs=32 RealMemory=64000 Gres=gpu:a100:4
NodeName=v[1-2] CPUs=32 RealMemory=64000 Gres=gpu:v100:4
NodeName=h1 CPUs=32 RealMemory=64000 Gres=gpu:h100:8
PartitionName=gpu Nodes=a[1-2],v[1-2],h1 Default=YES MaxTime=1-0
PartitionName=old Nodes=v[1-2] MaxTime=1-0
"""
HEADER = ("job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,cpus_per_node,"
          "mem_per_node,partition,user,account,gpu_type\n")
# v100 jobs 1 and 2 fill both v100 nodes; v100 job 3 waits for one though the a100 and
# h100 nodes are idle; job 4 (untyped, short) backfills at once
ROWS = ("1,0,7200,3600,1,4,4,1000,gpu,u,a,v100\n"
        "2,0,7200,3600,1,4,4,1000,gpu,u,a,gres/gpu:v100\n"
        "3,60,7200,1800,1,4,4,1000,gpu,u,a,gpu:v100\n"
        "4,60,600,300,1,4,4,1000,gpu,u,a,\n")


@pytest.fixture
def site(tmp_path):
    (tmp_path / "slurm.conf").write_text(CONF)
    (tmp_path / "w.csv").write_text(HEADER + ROWS)
    return tmp_path, fs.read_cluster(tmp_path / "slurm.conf")


def test_spellings_read_as_one_type(site):
    folder, cluster = site
    w = read_workload(folder / "w.csv", cluster)
    assert w.gpu_type.tolist() == ["v100", "v100", "v100", ""]
    assert gpu_type_value(" gres/gpu:a100 ") == "a100" == gpu_type_value("GPU:a100")


@pytest.mark.parametrize("row, line, message", [
    ("5,0,60,60,1,1,1,1,gpu,u,a,b200\n", 6, "'b200' is not a GPU type of the cluster"),
    ("5,0,60,60,1,1,1,1,gpu,u,a,gres/gpu:x\n", 6, "'gres/gpu:x' is not a GPU type"),
    ("5,0,60,60,1,0,1,1,gpu,u,a,a100\n", 6, "on a row asking for no GPUs"),
])
def test_bad_types_name_file_line_and_field(site, row, line, message):
    folder, cluster = site
    path = folder / "bad.csv"
    path.write_text(HEADER + ROWS + row)
    with pytest.raises(InputError, match=message) as e:
        read_workload(path, cluster)
    assert (e.value.file, e.value.line, e.value.field) == (str(path), line, "gpu_type")


def test_typed_rows_count_only_nodes_with_their_type(site):
    """8 GPUs per node: only h1 has that many, and it has no v100: the v100 row can never
    run (skipped, or an error with strict=True); the h100 row and the untyped one can."""
    folder, cluster = site
    path = folder / "big.csv"
    path.write_text(HEADER + "1,0,60,60,1,8,1,1,gpu,u,a,v100\n2,0,60,60,1,8,1,1,gpu,u,a,h100\n"
                    "3,0,60,60,1,8,1,1,gpu,u,a,\n")
    w = read_workload(path, cluster)
    assert w.jobs.job_id.tolist() == [2, 3]
    assert [(s.job_id, s.line) for s in w.skipped] == [(1, 2)]
    assert "8 GPUs (v100)" in w.skipped[0].reason
    with pytest.raises(InputError, match="job 1 can never run") as e:
        read_workload(path, cluster, strict=True)
    assert e.value.line == 2


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["", "a100", "v100", "h100"]),
                          st.sampled_from(["gpu", "old"]), st.integers(1, 4)),
                min_size=1, max_size=12), st.sampled_from([".csv", ".csv.gz", ".parquet"]))
def test_written_back_and_read_again(site, rows, suffix):
    folder, cluster = site
    body = "".join(f"{k + 1},{k},600,60,1,{g},1,1,{p},u,a,{t}\n"
                   for k, (t, p, g) in enumerate(rows))
    (folder / "in.csv").write_text(HEADER + body)
    w = read_workload(folder / "in.csv", cluster)
    out = folder / f"out{suffix}"
    write_workload(w, cluster, out)
    back = read_workload(out, cluster)
    assert back.gpu_type.tolist() == w.gpu_type.tolist()
    assert back.jobs.job_id.tolist() == w.jobs.job_id.tolist()
    if not (w.gpu_type != "").any():
        assert "gpu_type" not in (pd.read_parquet(out) if suffix == ".parquet"
                                  else pd.read_csv(out)).columns


def test_a_parquet_null_is_untyped(site):
    folder, cluster = site
    frame = pd.read_csv(folder / "w.csv", keep_default_na=False)
    frame["gpu_type"] = ["v100", None, "v100", None]
    frame.to_parquet(folder / "w.parquet")
    assert read_workload(folder / "w.parquet", cluster).gpu_type.tolist() == \
        ["v100", "", "v100", ""]


def test_api_places_typed_jobs_on_their_nodes(site):
    folder, cluster = site
    w = read_workload(folder / "w.csv", cluster)
    typed_cluster, typed, placed = typed_workload(cluster, w)      # the column by default
    assert [p.name for p in typed_cluster.partitions] == ["gpu", "old", "gpu:v100"]
    assert typed.jobs.partition.tolist() == [2, 2, 2, 0]
    result = fs.simulate(typed_cluster, typed.jobs, policy="easy", **typed.constraints())
    s = result.schedule
    start = dict(zip(s.job_id.tolist(), s.start_time.tolist()))
    assert start == {1: 0, 2: 0, 3: 3600, 4: 60}
    on = {int(j): {cluster.node_names[n] for n in s.nodes_of(i)}
          for i, j in enumerate(s.job_id.tolist())}
    assert on[1] | on[2] | on[3] <= {"v1", "v2"}


def test_a_sacct_workload_carries_its_types(site):
    """A sacct dump's workload keeps each job's type (its last run's AllocTRES), which
    typed_workload then uses by default and a workload CSV writes out."""
    from fastsched.sim.replay import workload_gpu_types
    folder, cluster = site
    (folder / "sacct.txt").write_text(
        "JobID|Submit|Start|End|Timelimit|NNodes|NodeList|State|AllocTRES\n"
        "7|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T10:05:00|10|1|a1|COMPLETED|"
        "cpu=2,gres/gpu:a100=1,gres/gpu=1,node=1\n"
        "8|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T10:05:00|10|1|v2|COMPLETED|"
        "cpu=2,gres/gpu=1,node=1\n")
    log = fs.read_sacct(folder / "sacct.txt", cluster)
    assert log.workload.gpu_type.tolist() == ["a100", ""] == workload_gpu_types(log).tolist()
    write_workload(log.workload, cluster, folder / "from-sacct.csv")
    assert read_workload(folder / "from-sacct.csv", cluster).gpu_type.tolist() == ["a100", ""]


def test_cli_simulate_a_typed_workload(site, capsys):
    folder, _ = site
    out = folder / "jobs.csv"
    assert main(["simulate", str(folder / "w.csv"), "--cluster", str(folder / "slurm.conf"),
                 "--policy", "easy", "--no-progress", "--jobs-out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "3 job(s) ask for a GPU type: placed on the nodes with it through derived " \
           "partition(s) gpu:v100" in said
    frame = pd.read_csv(out).set_index("job_id")
    assert frame.partition.tolist() == ["gpu:v100"] * 3 + ["gpu"]
    assert set(frame.nodes.loc[[1, 2, 3]]) == {"v1", "v2"}
    assert frame.wait_time.tolist() == [0, 0, 3540, 0]
    assert main(["check", str(out), "--trace", str(folder / "w.csv"), "--cluster",
                 str(folder / "slurm.conf"), "--policy", "easy"]) == 0
    assert "ok: 4 jobs" in capsys.readouterr().out
