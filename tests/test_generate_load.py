"""``generate cluster --load L --trace FILE``: the node count that gives a trace an
offered load (tools.generate.nodes_for_load), its rule checked on any workload
(hypothesis), and the command end to end on a GPU job list."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastsched.cli import main
from fastsched.io.slurmconf import read_cluster
from fastsched.io.workload import Workload
from fastsched.model.cluster import Cluster
from fastsched.model.errors import InputError
from fastsched.model.jobs import JobTable
from fastsched.tools.generate import nodes_for_load


def workload(submit, runtime, nodes, gpn) -> Workload:
    n = len(submit)
    jobs = JobTable.from_arrays(
        job_id=np.arange(1, n + 1), submit_time=np.sort(submit), time_limit=np.full(n, 10**9),
        runtime=runtime, num_nodes=nodes, cpus_per_node=np.ones(n, np.int64),
        gpus_per_node=gpn, mem_per_node=np.zeros(n, np.int64), partition=np.zeros(n, np.int32),
        user=np.zeros(n, np.int32))
    return Workload(jobs, np.zeros(n, np.int32), ["u"], ["a"], np.zeros(1, np.int32), ["o"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 10**5), st.integers(1, 4),
                          st.integers(0, 8)), min_size=2, max_size=40),
       st.sampled_from([1, 4, 8]), st.floats(0.05, 2.0))
def test_the_smallest_cluster_at_or_under_the_load(rows, g, load):
    submit, runtime, nodes, gpn = (np.array(c, np.int64) for c in zip(*rows))
    gpn = np.minimum(gpn, g)
    w = workload(submit, runtime, nodes, gpn)
    if w.span == 0 or w.gpu_seconds() == 0:
        with pytest.raises(InputError):
            nodes_for_load(w, g, load)
        return
    n = nodes_for_load(w, g, load)
    assert n >= int(nodes.max())
    assert w.offered_load(Cluster.homogeneous(n, gpus=g)) <= load * (1 + 1e-9)
    if n > max(int(nodes.max()), 1):          # not held up by the widest job: minimal
        assert w.offered_load(Cluster.homogeneous(n - 1, gpus=g)) > load


def test_bad_loads():
    w = workload(np.array([0, 100]), np.array([50, 50]), np.array([1, 1]), np.array([8, 8]))
    assert nodes_for_load(w, 8, 1.0) == 1            # 800 GPU-s / (1 x 100 s x 8) = 1
    assert nodes_for_load(w, 8, 0.5) == 2
    assert nodes_for_load(w, 8, 0.05) == 20
    for bad in (0, -1, float("nan")):
        with pytest.raises(InputError):
            nodes_for_load(w, 8, bad)
    with pytest.raises(InputError, match="GPU nodes"):
        nodes_for_load(w, 0, 0.5)


def test_cli_sizes_from_a_gpu_job_list(tmp_path, capsys):
    trace = tmp_path / "jobs.csv"
    # 10 jobs of 8 GPUs for 1000 s each, submitted over 900 s: 80,000 GPU-s
    trace.write_text("job_id,submit_time,runtime,num_gpus\n" + "".join(
        f"{k},{100 * k},1000,8\n" for k in range(10)))
    out = tmp_path / "slurm.conf"
    assert main(["generate", "cluster", "--load", "0.8", "--trace", str(trace),
                 "--gpus-per-node", "4", "--gpu-type", "a100", "-o", str(out)]) == 0
    said = capsys.readouterr().out
    # ceil(80,000 / (0.8 x 900 x 4)) = ceil(27.8) = 28
    assert "28 nodes x 4 GPUs give an offered load of 0.794 (asked 0.8)" in said
    cluster = read_cluster(out)
    assert cluster.num_nodes == 28 and cluster.gpu_type == "a100"


@pytest.mark.parametrize("argv, field", [
    (["--load", "0.8"], "--trace"),
    (["--trace", "x.csv"], "--load"),
    (["--load", "0.8", "--trace", "T", "--nodes", "3"], "--load"),
    (["--load", "0.8", "--trace", "T", "--gpus-per-node", "0"], "--gpus-per-node"),
])
def test_cli_option_errors(tmp_path, argv, field, capsys):
    trace = tmp_path / "jobs.csv"
    trace.write_text("job_id,submit_time,runtime,num_gpus\n1,0,10,1\n2,5,10,1\n")
    argv = [str(trace) if a == "T" else a for a in argv]
    assert main(["generate", "cluster", *argv, "-o", str(tmp_path / "s.conf")]) != 0
    assert f"field {field}" in capsys.readouterr().err
