"""Typed GPU requests on typed nodes (sim.gputypes): derived partitions per (partition,
type), the jobs' choices mapped, untyped jobs untouched (hypothesis), and the hooks: a
sacct replay keeps a100 jobs on a100 nodes, simulate of a sacct dump, sbatch
--test-only's expected start."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastsched as fs
from fastsched.cli import main
from fastsched.model.cluster import Cluster, Partition
from fastsched.model.constraints import PartitionChoices
from fastsched.model.errors import InputError
from fastsched.sim.gputypes import place_gpu_types, typed_workload

CONF = """\
NodeName=a[1-2] CPUs=32 RealMemory=64000 Gres=gpu:a100:4
NodeName=v[1-2] CPUs=32 RealMemory=64000 Gres=gpu:v100:4
NodeName=m1 CPUs=32 RealMemory=64000 Gres=gpu:a100:2,gpu:1g.10gb:7
PartitionName=gpu Nodes=a[1-2],v[1-2],m1 Default=YES MaxTime=1-0
PartitionName=old Nodes=v[1-2] MaxTime=1-0
PartitionName=new Nodes=a[1-2] MaxTime=1-0
"""


@pytest.fixture
def cluster(tmp_path):
    (tmp_path / "slurm.conf").write_text(CONF)
    return fs.read_cluster(tmp_path / "slurm.conf")


def names(cluster, nodes):
    return [cluster.node_names[i] for i in nodes]


def test_derived_partitions(cluster):
    choices = PartitionChoices(np.array([0, 1, 2, 4, 5, 6]), np.array([0, 0, 0, 1, 1, 0]))
    placed = place_gpu_types(cluster, ["", "a100", "a100", "v100", "1g.10gb"], choices)
    parts = placed.cluster.partitions
    assert placed.derived == ["gpu:a100", "gpu:1g.10gb"]
    assert names(cluster, parts[3].nodes) == ["a1", "a2", "m1"]
    assert names(cluster, parts[4].nodes) == ["m1"]
    assert parts[3].max_time == parts[0].max_time
    # untyped: as given; a100 in gpu -> gpu:a100; a100 in [gpu, old] -> [gpu:a100] (old
    # has none); v100 in old -> old itself (all its nodes have it); 1g.10gb in gpu -> m1
    assert placed.choices.partition.tolist() == [0, 3, 3, 1, 4]
    assert placed.partition.tolist() == [0, 3, 3, 1, 4]
    assert placed.skipped.tolist() == [False, False, False, False, False]
    assert any("1 node(s) typed jobs may use hold several GPU types" in n
               for n in placed.notes)
    v100 = place_gpu_types(cluster, ["v100"], PartitionChoices.single([0]))
    assert not any("several" in n for n in v100.notes)          # m1 has no v100
    bad = place_gpu_types(cluster, ["1g.10gb"], PartitionChoices.single([2]))
    assert bad.skipped.tolist() == [True]
    assert [p.name for p in cluster.partitions] == ["gpu", "old", "new"]   # not changed


@settings(max_examples=50, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])   # read-only cluster
@given(st.lists(st.tuples(st.sampled_from(["", "a100", "v100", "1g.10gb", "h100"]),
                          st.lists(st.integers(0, 2), min_size=1, max_size=3, unique=True)),
                min_size=1, max_size=20))
def test_typed_jobs_only_on_nodes_with_their_type(cluster, jobs):
    types = [t for t, _ in jobs]
    lens = [len(c) for _, c in jobs]
    choices = PartitionChoices(np.r_[0, np.cumsum(lens)], np.concatenate([c for _, c in jobs]))
    placed = place_gpu_types(cluster, types, choices)
    out = placed.choices
    for k, (t, given_parts) in enumerate(jobs):
        mine = out.partition[out.offsets[k]:out.offsets[k + 1]].tolist()
        if not t or placed.skipped[k]:
            assert mine == given_parts
            continue
        allowed = set()
        for p in given_parts:
            allowed |= {n for n in cluster.partitions[p].nodes.tolist()
                        if any(x == t for x, _ in cluster.gpu_types[n])}
        got = set()
        for p in mine:
            nodes = placed.cluster.partitions[p].nodes.tolist()
            assert all(any(x == t for x, _ in cluster.gpu_types[n]) for n in nodes)
            got |= set(nodes)
        assert got == allowed


SACCT = ("JobID|JobIDRaw|User|Partition|Submit|Eligible|Start|End|Timelimit|AllocTRES|NNodes|"
         "NodeList|State\n"
         "1|1|u|gpu|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T10:00:00|"
         "2024-03-01T11:00:00|02:00:00|cpu=4,gres/gpu:v100=4,gres/gpu=4,node=1|1|v1|COMPLETED\n"
         "2|2|u|gpu|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T10:00:00|"
         "2024-03-01T11:00:00|02:00:00|cpu=4,gres/gpu:v100=4,gres/gpu=4,node=1|1|v2|COMPLETED\n"
         "3|3|u|gpu|2024-03-01T10:01:00|2024-03-01T10:01:00|2024-03-01T11:00:00|"
         "2024-03-01T11:30:00|02:00:00|cpu=4,gres/gpu:v100=4,gres/gpu=4,node=1|1|v1|COMPLETED\n")


def test_sacct_replay_keeps_types(tmp_path, cluster):
    """v100 jobs 1 and 2 hold both v100 nodes; v100 job 3 waits for one, though a100
    nodes are idle: replayed, it waits too (untyped, it would start at once)."""
    (tmp_path / "sacct.txt").write_text(SACCT)
    log = fs.read_sacct(tmp_path / "sacct.txt", cluster)
    report = fs.replay_report(cluster, log, "fcfs", reservations="nodes")
    jobs = report.jobs.set_index("job_id")
    assert jobs.replayed_wait.loc[3] == 3540 == jobs.recorded_wait.loc[3]
    assert jobs.partition.tolist() == ["gpu"] * 3                # names as the site's
    starts = report.result.schedule
    assert {cluster.node_names[n] for i in range(3) for n in starts.nodes_of(i)} <= {"v1", "v2"}
    c2, w2, placed = typed_workload(cluster, log.workload, ["v100"] * 3)
    assert [p.name for p in c2.partitions] == ["gpu", "old", "new", "gpu:v100"]
    assert w2.jobs.partition.tolist() == [3, 3, 3]
    assert log.workload.jobs.partition.tolist() == [0] * 3          # not changed
    with pytest.raises(InputError, match="job 1 asks for GPU type 'h100'"):
        typed_workload(cluster, log.workload, ["h100", "", ""])


def test_cli_replay_and_simulate_say_so(tmp_path, cluster, capsys):
    (tmp_path / "slurm.conf").write_text(CONF)
    (tmp_path / "sacct.txt").write_text(SACCT)
    assert main(["replay-report", str(tmp_path / "sacct.txt"), "--cluster",
                 str(tmp_path / "slurm.conf"), "--policy", "fcfs", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "3 job(s) ask for a GPU type: placed on the nodes with it through derived " \
           "partition(s) gpu:v100" in out


def test_sbatch_expected_start_on_typed_nodes(tmp_path, capsys):
    (tmp_path / "slurm.conf").write_text(CONF)
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH --gres=gpu:v100:2\n#SBATCH -t 10\nsrun x\n")
    assert main(["sbatch", "--test-only", "--cluster", str(tmp_path / "slurm.conf"),
                 str(script)]) == 0
    out = capsys.readouterr().out
    assert "expected start: 0 s after submission on an empty cluster (on the nodes with " \
           "v100 GPUs)" in out


def test_cli_simulate_a_sacct_dump_then_check(tmp_path, capsys):
    (tmp_path / "slurm.conf").write_text(CONF)
    (tmp_path / "sacct.txt").write_text(SACCT)
    site = ["--trace", str(tmp_path / "sacct.txt"), "--cluster", str(tmp_path / "slurm.conf")]
    out = tmp_path / "jobs.csv"
    assert main(["simulate", *site[1:], "--policy", "easy", "--no-progress",
                 "--jobs-out", str(out)]) == 0
    import pandas as pd
    frame = pd.read_csv(out)
    assert frame.partition.tolist() == ["gpu:v100"] * 3
    assert set(frame.nodes) == {"v1", "v2"} and frame.wait_time.tolist() == [0, 0, 3540]
    assert main(["check", str(out), *site, "--policy", "easy"]) == 0
    assert "ok: 3 jobs" in capsys.readouterr().out
