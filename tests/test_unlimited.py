"""Unlimited time limits and real epoch times: every engine plans them, none overflows.

Slurm's UNLIMITED limit arrives as any huge number (``2**63 - 1`` from a CSV, a
reader's sentinel); the engines' own "never" is ``2**62``, so a submit time plus
such a limit used to overflow it (segfaults, endless loops, false "Dependency").
"""
import numpy as np
import pytest

import fastsched as fs
from fastsched import Cluster, InputError, JobRequest, JobTable, Scheduler, simulate, verify
from fastsched.model.jobs import MAX_TIME, UNLIMITED

POLICIES = ("fcfs", "easy", "conservative")
HUGE = [2**63 - 1, 2**62, 2**62 - 1, UNLIMITED + 1]
EPOCH = 1_700_000_000


def gpu_cluster():
    """One 4-GPU node: jobs of 2 or 3 GPUs take part of it, so the node engine runs."""
    return Cluster.homogeneous(1, cpus=8, gpus=4, mem_mb=1000)


def jobs(limits, runtimes, gpus=1, nodes=1, submit=EPOCH):
    n = len(limits)
    return JobTable.from_arrays(job_id=np.arange(1, n + 1), submit_time=submit + np.arange(n),
                                time_limit=limits, runtime=runtimes, num_nodes=nodes,
                                cpus_per_node=1, gpus_per_node=gpus)


def test_limits_above_unlimited_are_stored_as_unlimited():
    t = jobs([2**63 - 1, 5, UNLIMITED], [1, 1, 1])
    assert t.time_limit.tolist() == [UNLIMITED, 5, UNLIMITED]


@pytest.mark.parametrize("policy", POLICIES)
def test_node_engine_plans_unlimited_jobs_at_epoch_times(policy):
    # two 2-GPU jobs at a time: the third waits for the first end, the fourth for the second
    t = jobs(HUGE[:3] + [100], [50, 70, 30, 10], gpus=2)
    r = simulate(gpu_cluster(), t, policy)
    assert r.summary["engine"] == "nodes"
    s = r.schedule
    assert s.start_time.tolist() == [EPOCH, EPOCH + 1, EPOCH + 50, EPOCH + 71]
    assert (s.end_time - s.start_time).tolist() == [50, 70, 30, 10]
    verify(r.cluster, t, s, policy=None).raise_if_failed()


@pytest.mark.parametrize("policy", POLICIES)
def test_a_job_that_never_ends_runs_until_unlimited(policy):
    t = jobs([2**63 - 1, 10], [2**63 - 1, 5], gpus=3)
    r = simulate(gpu_cluster(), t, policy)
    assert r.summary["engine"] == "nodes"
    assert r.schedule.end_time.tolist() == [EPOCH + UNLIMITED, EPOCH + UNLIMITED + 5]
    assert r.jobs["state"].tolist() == ["TIMEOUT", "COMPLETED"]


@pytest.mark.parametrize("policy", POLICIES)
def test_pool_engine_plans_unlimited_jobs(policy):
    t = jobs(HUGE, [5, 6, 7, 8], gpus=0)
    r = simulate(Cluster.homogeneous(2), t, policy)
    assert r.summary["engine"] == "pool"
    assert r.schedule.start_time.tolist() == [EPOCH, EPOCH + 1, EPOCH + 5, EPOCH + 7]
    verify(r.cluster, t, r.schedule, policy=policy).raise_if_failed()


def test_conservative_reserves_behind_unlimited_jobs():
    # one node, three unlimited jobs: reservations land UNLIMITED apart, no overflow
    sched = Scheduler(gpu_cluster(), "conservative")
    for k in range(3):
        sched.submit(JobRequest(job_id=k + 1, submit_time=EPOCH, time_limit=2**63 - 1,
                                runtime=60, num_nodes=1, gpus_per_node=3))
    starts = sched.expected_start_times(now=EPOCH)["expected_start"]
    assert starts.tolist() == [EPOCH, EPOCH + UNLIMITED, EPOCH + 2 * UNLIMITED]
    decisions = sched.schedule(now=EPOCH)
    sched.apply(decisions)
    assert decisions.to_pandas()["outcome"].tolist() == ["start", "reserved", "reserved"]


def test_submit_times_beyond_max_time_are_refused():
    with pytest.raises(InputError, match="submit_time.*milliseconds"):
        simulate(gpu_cluster(), jobs([10], [5], submit=1_700_000_000_000), "easy")
    r = simulate(gpu_cluster(), jobs([10], [5], submit=MAX_TIME), "easy")
    assert r.schedule.start_time.tolist() == [MAX_TIME]


@pytest.mark.parametrize("policy", POLICIES)
def test_cli_replays_a_workload_csv_with_unlimited_limits(tmp_path, policy, capsys):
    """The CSV spelling of UNLIMITED (int64's largest value) at real epoch times."""
    import pandas as pd
    from fastsched.cli import main
    cluster = fs.ai_cluster("ai-8k")
    path = tmp_path / "w.csv"
    fs.write_workload(fs.ai_mix(cluster, 200, seed=5), cluster, path)
    frame = pd.read_csv(path)
    frame["time_limit"] = frame["time_limit"].astype("int64")
    frame.loc[::3, "time_limit"] = 2**63 - 1
    frame["submit_time"] += EPOCH
    frame.to_csv(path, index=False)
    out = tmp_path / "jobs.csv"
    assert main(["simulate", str(path), "--cluster", "ai-8k", "--policy", policy,
                 "--jobs-out", str(out), "--no-progress"]) == 0
    jobs = pd.read_csv(out)
    assert len(jobs) == 200 and (jobs["start_time"] >= EPOCH).all()
    assert (jobs["state"] != "PENDING").all()


def test_an_sbatch_script_with_an_unlimited_time_is_simulated(tmp_path):
    """``#SBATCH -t UNLIMITED`` in a partition without MaxTime: planned as UNLIMITED."""
    from fastsched.io.sbatch import normalise, parse_script
    from fastsched.io.workload import requests_to_workload
    conf = tmp_path / "slurm.conf"
    conf.write_text("NodeName=g[1-2] CPUs=8 Gres=gpu:4 RealMemory=1000\n"
                    "PartitionName=p Nodes=ALL Default=YES MaxTime=UNLIMITED\n")
    cluster = fs.read_cluster(conf)
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH -N 1 --gres=gpu:2 -t UNLIMITED\nsrun true\n")
    norm = normalise(parse_script(script), cluster)
    w = requests_to_workload([(norm, EPOCH, 600), (norm, EPOCH + 1, 300)], cluster)
    assert w.jobs.time_limit.tolist() == [UNLIMITED, UNLIMITED]
    r = fs.simulate(cluster, w.jobs, "conservative")
    assert (r.schedule.end_time - r.schedule.start_time).tolist() == [600, 300]
