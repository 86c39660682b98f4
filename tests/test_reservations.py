"""The reservation model is chosen explicitly (or by a stated rule) and recorded: counts
(the textbook algorithms) or nodes (concrete nodes and GPU counts)."""
import numpy as np
import pytest

import fastsched as fs
from fastsched.cli import main

KTH = fs.read_swf(fs.bundled_trace("KTH-SP2"))
JOBS = KTH.jobs.take(np.arange(400))
POOL = fs.Cluster.homogeneous(KTH.procs)


def test_an_swf_machine_plans_with_counts_unless_told_otherwise():
    counts = fs.simulate(POOL, JOBS, "conservative")
    nodes = fs.simulate(POOL, JOBS, "conservative", reservations="nodes")
    assert (counts.summary["reservations"], counts.summary["engine"]) == ("counts", "pool")
    assert (nodes.summary["reservations"], nodes.summary["engine"]) == ("nodes", "nodes")
    assert counts.schedule.planning == "counts" and nodes.schedule.planning == "nodes"
    explicit = fs.simulate(POOL, JOBS, "conservative", reservations="counts")
    np.testing.assert_array_equal(explicit.schedule.start_time, counts.schedule.start_time)
    # each schedule passes the policy check of its own model
    for r in (counts, nodes):
        fs.verify(r.cluster, r.workload, r.schedule, policy="conservative").raise_if_failed()


def test_options_only_the_nodes_model_takes_choose_it_by_default_and_are_refused_by_counts():
    key = np.arange(len(JOBS), dtype=float)
    assert fs.simulate(POOL, JOBS, "easy", priority=key).summary["reservations"] == "counts"
    by_default = fs.simulate(POOL, JOBS, "easy", priority=key, window=3600)
    assert by_default.summary["reservations"] == "nodes"
    with pytest.raises(fs.UnsupportedError, match="does not take window, resolution yet"):
        fs.simulate(POOL, JOBS, "easy", priority=key, resolution=60, window=3600,
                    reservations="counts")


def test_a_gpu_cluster_cannot_plan_with_counts():
    cluster = fs.ai_cluster("ai-8k")
    jobs = fs.ai_mix(cluster, 50, seed=1).jobs
    assert fs.simulate(cluster, jobs, "easy").summary["reservations"] == "nodes"
    with pytest.raises(fs.UnsupportedError, match="single pool of identical nodes"):
        fs.simulate(cluster, jobs, "easy", reservations="counts")


def test_an_unknown_model_is_an_input_error():
    with pytest.raises(fs.InputError, match="unknown reservation model 'pbs'"):
        fs.simulate(POOL, JOBS, "easy", reservations="pbs")


def test_the_cli_takes_and_reports_the_model(tmp_path, capsys):
    swf = tmp_path / "tiny.swf"
    swf.write_text("; MaxProcs: 4\n" + "".join(
        f"{i} {i} -1 {5 + i} {1 + i % 3} -1 -1 {1 + i % 3} {10 + i} -1 1 1 1 -1 1 -1 -1 -1\n"
        for i in range(1, 9)))
    assert main(["simulate", str(swf), "--reservations", "nodes", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert [line.split()[-1] for line in out.splitlines()
            if line.startswith("reservation model")] == ["nodes"]
