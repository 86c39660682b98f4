"""sprio / sshare views: a hand-computed example, and the CLI."""
import numpy as np
import pytest

from fastsched.cli import main
from fastsched.model.cluster import Cluster, Partition
from fastsched.policy.config import parse_config
from fastsched.model.jobs import JobTable
from fastsched.io.slurmconf import write_cluster
from fastsched.policy.usage import usage_at
from fastsched.sim.views import SSHARE_COLUMNS, sprio, sshare
from fastsched.io.workload import Workload, write_workload

CONFIG = """
[priority]
PriorityWeightAge = 1000
PriorityWeightFairshare = 10000
PriorityWeightJobSize = 100
PriorityWeightPartition = 1000
PriorityWeightQOS = 2000
PriorityWeightTRES = "CPU=400"
PriorityMaxAge = "16:40"          # 1000 s
PriorityDecayHalfLife = 0

[qos.normal]
Priority = 10
[qos.high]
Priority = 100

[partition.batch]
PriorityJobFactor = 1
[partition.interactive]
PriorityJobFactor = 4
"""


def setup():
    base = Cluster.homogeneous(10, cpus=4)
    cluster = Cluster(base.node_names, base.cpus, base.gpus, base.mem_mb,
                      [Partition("batch", np.arange(10)), Partition("interactive", np.arange(2))])
    jobs = JobTable.from_arrays(job_id=[1, 2, 3], submit_time=[0, 0, 500], time_limit=1000,
                                runtime=900, num_nodes=[1, 2, 1], cpus_per_node=4,
                                partition=[0, 0, 1], user=[0, 0, 1])
    w = Workload(jobs, np.zeros(3, np.int32), ["u0", "u1"], ["a"], np.zeros(1, np.int32), ["a"])
    w.qos, w.qos_names = np.array([0, 1, 0], np.int32), ["normal", "high"]
    cfg = parse_config(CONFIG)
    tree = cfg.build_tree(w)
    start, end = np.array([0, -1, -1]), np.array([-1, -1, -1])     # job 1 runs since 0
    usage = usage_at(cfg, tree, w, start, end, 500)
    return cfg, cluster, w, tree, usage, start


def test_sprio_hand_computed():
    cfg, cluster, w, tree, usage, start = setup()
    df = sprio(w, 500, cfg, usage, cluster=cluster, start_time=start)
    assert df["job_id"].tolist() == [3, 2]                 # job 1 runs; highest first
    job3, job2 = df.iloc[0], df.iloc[1]
    # job 2: waited 500 of 1000 s; u0 used 2000 CPU-s (fair share 0.5); 8 of 40 CPUs and
    # 2 of 10 nodes; batch factor 1/4; QOS high (1.0); CPU TRES 8/40 x 400
    assert [job2[c] for c in ("age", "fairshare", "jobsize", "partition_prio", "qos")] == \
        [500, 5000, 20, 250, 2000]
    assert job2["tres"] == "cpu=80" and job2["priority"] == 7850
    assert job2["partition"] == "batch" and job2["user"] == "u0" and job2["account"] == "a"
    # job 3: just submitted; u1 has no usage (factor 1.0); interactive; QOS normal (0.1)
    assert [job3[c] for c in ("age", "fairshare", "jobsize", "partition_prio", "qos")] == \
        [0, 10000, 10, 1000, 200]
    assert job3["tres"] == "cpu=40" and job3["priority"] == 11250 and job3["qos_name"] == "normal"
    assert (df[["site", "assoc", "nice"]] == 0).all().all()


def test_sshare_hand_computed():
    cfg, cluster, w, tree, usage, start = setup()
    df = sshare(tree, usage, cfg)
    assert list(df.columns) == SSHARE_COLUMNS
    assert df["Account"].tolist() == ["root", "a", "a", "a"]
    assert df["User"].tolist() == ["", "", "u0", "u1"]
    assert df["RawUsage"].tolist() == [2000.0, 2000.0, 2000.0, 0.0]
    assert df["NormShares"].tolist()[1:] == [1.0, 0.5, 0.5]
    assert df["EffectvUsage"].tolist()[1:] == [1.0, 1.0, 0.0]
    assert df["FairShare"].tolist()[2:] == [0.5, 1.0]
    assert df["LevelFS"].tolist()[2:] == [0.5, np.inf]


def test_cli_sprio_and_sshare(tmp_path, capsys):
    cfg, cluster, w, tree, usage, start = setup()
    csv, conf, toml = tmp_path / "w.csv", tmp_path / "slurm.conf", tmp_path / "c.toml"
    write_workload(w, cluster, csv)
    write_cluster(cluster, conf)
    toml.write_text(CONFIG)
    args = [str(csv), "--cluster", str(conf), "--config", str(toml), "--at", "500"]
    assert main(["sprio"] + args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["JOBID", "PARTITION", "USER", "ACCOUNT", "PRIORITY", "SITE", "AGE",
                              "ASSOC", "FAIRSHARE", "JOBSIZE", "PARTITION", "QOS", "NICE", "TRES"]
    assert main(["sshare"] + args + ["--csv"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ",".join(SSHARE_COLUMNS) and len(out) == 5
    toml.write_text('[[account]]\nname = "other"\n')
    assert main(["sshare"] + args) == 2
    assert "unknown account 'a'" in capsys.readouterr().err


def test_cli_help(capsys):
    for cmd in ("sprio", "sshare"):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        assert "--config" in capsys.readouterr().out
