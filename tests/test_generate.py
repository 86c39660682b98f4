"""The standard cluster and workload generators, and their file formats."""
from __future__ import annotations

import gzip

import numpy as np
import pytest

from fastsched.model.errors import ConfigWarning, InputError
from fastsched.cli import build_parser
from fastsched.tools.generate import ai_cluster, ai_mix
from fastsched.model.jobs import JOB_FIELDS
from fastsched.io.slurmconf import format_time, parse_time, read_cluster, write_cluster
from fastsched.io.workload import read_workload, write_workload


@pytest.fixture(scope="module")
def c100k():
    return ai_cluster("ai-100k")


@pytest.fixture(scope="module")
def big(c100k):
    return ai_mix(c100k, 200_000, seed=7)


def _same_jobs(a, b):
    return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in JOB_FIELDS)


# ----------------------------------------------------------------------------- cluster

def test_ai_100k_shape(c100k):
    c = c100k
    assert c.num_nodes == 12_500 and int(c.gpus.sum()) == 100_000
    assert (c.cpus == 112).all() and (c.mem_mb == 2_000_000).all() and (c.gpus == 8).all()
    assert c.gpu_type == "h100"
    assert c.node_names[0] == "gpu00001" and c.node_names[-1] == "gpu12500"
    batch, inter = c.partitions
    assert (batch.name, inter.name) == ("batch", "interactive")
    assert np.array_equal(batch.nodes, np.arange(12_500))
    assert np.array_equal(inter.nodes, np.arange(1_024))
    assert (batch.priority_tier, batch.max_time) == (1, 14 * 86_400)
    assert (inter.priority_tier, inter.max_time) == (2, 4 * 3_600)
    leaf, spine = c.topology["leaf"], c.topology["spine"]
    assert list(c.topology) == ["leaf", "spine"]
    assert leaf[31] == 0 and leaf[32] == 1 and leaf[-1] == 12_499 // 32
    assert spine[511] == 0 and spine[512] == 1 and spine[-1] == 12_499 // 512
    assert np.bincount(leaf).max() == 32


def test_scaled_variants():
    small = ai_cluster("ai-8k")
    assert small.num_nodes == 1_000 and len(small.partitions[1].nodes) == 82
    assert small.node_names[-1] == "gpu01000"
    with pytest.raises(InputError):
        ai_cluster("ai-7")


# ----------------------------------------------------------------------------- workload

def test_determinism(c100k):
    a, b = ai_mix(c100k, 5_000, seed=3), ai_mix(c100k, 5_000, seed=3)
    assert _same_jobs(a.jobs, b.jobs) and np.array_equal(a.account, b.account)
    c = ai_mix(c100k, 5_000, seed=4)
    assert not np.array_equal(a.jobs.runtime, c.jobs.runtime)
    assert not np.array_equal(a.jobs.user, c.jobs.user)


def test_ai_mix_proportions(c100k, big):
    j, n = big.jobs, len(big)
    assert n == 200_000
    assert np.array_equal(j.job_id, np.arange(1, n + 1))
    assert j.submit_time[0] == 0 and (np.diff(j.submit_time) >= 0).all()
    gpus = big.gpus
    single = j.num_nodes == 1
    for share, mask in [(0.40, single & (j.gpus_per_node == 1)),
                        (0.10, single & (j.gpus_per_node == 2)),
                        (0.10, single & (j.gpus_per_node == 4)),
                        (0.25, single & (j.gpus_per_node == 8)),
                        (0.15, ~single)]:
        assert abs(mask.mean() - share) < 0.01, (share, mask.mean())
    multi = j.num_nodes[~single]
    assert (multi & (multi - 1) == 0).all() and multi.max() <= 512 and multi.min() >= 2
    assert (j.gpus_per_node[~single] == 8).all()
    # multi-node sizes: P(2^k) ~ 2^-0.7k, so each doubling is 2^-0.7 = 0.616 times as likely
    ratio = (multi == 4).sum() / (multi == 2).sum()
    assert abs(ratio - 2 ** -0.7) < 0.05
    # CPUs and memory proportional to GPUs
    assert np.array_equal(j.cpus_per_node, 14 * j.gpus_per_node)
    assert np.array_equal(j.mem_per_node, 250_000 * j.gpus_per_node.astype(np.int64))
    # limits and runtimes
    assert j.time_limit.min() >= 600 and j.time_limit.max() <= 7 * 86_400
    assert (j.time_limit % 60 == 0).all()
    killed = j.runtime > j.time_limit
    assert abs(killed.mean() - 0.10) < 0.01
    ok = ~killed
    assert (j.runtime[ok] >= 0.05 * j.time_limit[ok] - 1).all()
    assert (j.runtime[ok] < j.time_limit[ok]).all()
    # log-uniform: the median limit is about sqrt(10 min x 7 days) for batch jobs
    batch = j.partition == 0
    med = np.median(j.time_limit[batch]) / 60
    assert abs(np.log(med) - np.log(np.sqrt(10 * 10_080))) < 0.1
    # interactive
    inter = j.partition == 1
    assert abs(inter.mean() - 0.10) < 0.01
    assert j.time_limit[inter].max() <= 4 * 3_600
    # users, accounts, orgs
    uid = np.array([int(u[4:]) - 1 for u in big.user_names])[j.user]
    assert uid.min() >= 0 and uid.max() < 2_000
    acct = np.array([int(a[4:]) - 1 for a in big.account_names])[big.account]
    org = np.array([int(o[3:]) - 1 for o in big.org_names])[big.org]
    assert np.array_equal(acct, uid // 10) and np.array_equal(org, uid // 100)
    assert len(big.user_names) > 1_900
    assert len(big.account_names) == 200 and len(big.org_names) == 20
    counts = np.sort(np.bincount(j.user, minlength=2_000))[::-1]
    h = np.sum(np.arange(1, 2_001) ** -1.2)
    assert abs(counts[0] / n - 1 / h) < 0.01          # top user's share
    assert abs(counts[0] / counts[1] - 2 ** 1.2) < 0.15
    # offered load
    used = gpus * np.minimum(j.runtime, j.time_limit).astype(np.float64)
    span = j.submit_time[-1] - j.submit_time[0]
    load = used.sum() / (100_000 * span)
    assert abs(load - 1.05) < 0.03 * 1.05
    assert big.offered_load(c100k) == pytest.approx(load)


def test_load_parameter_and_small_cluster():
    c = ai_cluster("ai-8k")
    w = ai_mix(c, 20_000, seed=1, load=0.5)
    assert abs(w.offered_load(c) - 0.5) < 0.05
    inter = w.jobs.partition == 1
    assert w.jobs.num_nodes[inter].max() <= 64        # 82-node interactive partition
    assert w.jobs.num_nodes.max() <= 512
    with pytest.raises(InputError):
        ai_mix(c, 10, load=0)


def test_ai_mix_needs_gpus():
    from fastsched.model.cluster import Cluster
    with pytest.raises(InputError, match="GPU nodes"):
        ai_mix(Cluster.homogeneous(4, cpus=8), 10)


OTHER_SITE = (
    "NodeName=a[01-06] CPUs=64 RealMemory=500000 Gres=gpu:4\n"
    "NodeName=h[01-10] CPUs=112 RealMemory=2000000 Gres=gpu:8\n"
    "NodeName=c[01-04] CPUs=32 RealMemory=100000\n"
    "PartitionName=a100 Nodes=a[01-06] MaxTime=2-0 Default=YES\n"
    "PartitionName=h100 Nodes=h[01-10] MaxTime=2-0\n"
    "PartitionName=debug Nodes=a[01-02],h[01-02] MaxTime=1:00:00 PriorityTier=2\n"
    "PartitionName=cpu Nodes=c[01-04]\n")


def test_ai_mix_on_any_sites_partitions(tmp_path, capsys):
    """Other partition names: jobs go to the GPU partitions (the shortest MaxTime takes
    the interactive ones), each sized to fit its partition's GPU nodes."""
    conf = tmp_path / "slurm.conf"
    conf.write_text(OTHER_SITE)
    out = tmp_path / "jobs.csv"
    assert _run(["generate", "workload", "ai-mix", "--cluster", str(conf), "--jobs", "3000",
                 "--seed", "2", "-o", str(out)]) == 0
    c = read_cluster(conf)
    j = read_workload(out, c).jobs
    names = np.array([p.name for p in c.partitions])[j.partition]
    share = {p: np.mean(names == p) for p in ("a100", "h100", "debug", "cpu")}
    assert share["cpu"] == 0 and 0.07 < share["debug"] < 0.13
    assert 0.25 < share["a100"] < 0.45 and 0.45 < share["h100"] < 0.65     # by GPU nodes, 6:10
    node_gpus = {"a100": 4, "h100": 8, "debug": 4}
    gpu_nodes = {"a100": 6, "h100": 10, "debug": 4}
    for p in node_gpus:
        mine = names == p
        assert j.gpus_per_node[mine].max() == node_gpus[p]
        assert 1 <= j.num_nodes[mine].min() and j.num_nodes[mine].max() <= gpu_nodes[p]
    assert (j.time_limit[names == "debug"] <= 3600).all() and j.time_limit.max() <= 2 * 86_400
    assert (j.cpus_per_node[names == "a100"] == 16 * j.gpus_per_node[names == "a100"]).all()


def test_empty_workload(c100k):
    assert len(ai_mix(c100k, 0)) == 0


# ----------------------------------------------------------------------------- slurm.conf

@pytest.mark.parametrize("name", ["ai-8k", "ai-100k"])
def test_cluster_round_trip(tmp_path, name):
    c = ai_cluster(name)
    conf = tmp_path / "slurm.conf"
    write_cluster(c, conf, name=name)
    text = conf.read_text()
    last = c.node_names[-1][3:]
    assert f"NodeName=gpu[00001-{last}] CPUs=112 RealMemory=2000000 Gres=gpu:h100:8" in text
    assert (f"PartitionName=batch Nodes=gpu[00001-{last}] PriorityTier=1 "
            "MaxTime=14-00:00:00 Default=YES") in text
    topo = (tmp_path / "topology.conf").read_text()
    assert "SwitchName=leaf00001 Nodes=gpu[00001-00032]\n" in topo
    r = read_cluster(conf)
    assert r.node_names == c.node_names and r.gpu_type == "h100"
    for f in ("cpus", "gpus", "mem_mb"):
        assert np.array_equal(getattr(r, f), getattr(c, f))
    assert [(p.name, p.priority_tier, p.max_time) for p in r.partitions] == \
        [(p.name, p.priority_tier, p.max_time) for p in c.partitions]
    for a, b in zip(r.partitions, c.partitions):
        assert np.array_equal(a.nodes, b.nodes)
    assert list(r.topology) == ["leaf", "spine"]
    for level in c.topology:
        assert np.array_equal(r.topology[level], c.topology[level])


def test_ai_1m_names():
    c = ai_cluster("ai-1m")
    assert c.num_nodes == 125_000 and c.node_names[0] == "gpu000001"
    assert c.node_names[-1] == "gpu125000"


@pytest.mark.parametrize("text,seconds", [
    ("30", 1_800), ("30:15", 1_815), ("04:00:00", 14_400), ("2-12", 216_000),
    ("2-12:30", 217_800), ("14-00:00:00", 14 * 86_400), ("UNLIMITED", None),
    ("infinite", None)])
def test_parse_time(text, seconds):
    assert parse_time(text) == seconds


def test_format_time():
    assert format_time(14_400) == "04:00:00" and format_time(86_401) == "1-00:00:01"
    assert format_time(None) == "UNLIMITED"
    for s in (0, 59, 3_600, 1_209_600, 12_345_678):
        assert parse_time(format_time(s)) == s


def test_read_handwritten_conf(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text(
        "# a comment\n"
        "SlurmctldHost=ctl  # unknown keys are ignored\n"
        "NodeName=DEFAULT CPUs=16 RealMemory=1000\n"
        "nodename=a[1-2] Gres=gpu:4 Sockets=2 CoresPerSocket=8\n"
        "NodeName=b01 CPUs=8 State=UNKNOWN\n"
        "PartitionName=all Nodes=ALL Default=YES MaxTime=UNLIMITED\n"
        "PartitionName=short Nodes=a1,b01 PriorityTier=3 MaxTime=30\n")
    c = read_cluster(conf)                     # no topology.conf: flat
    assert c.node_names == ["a1", "a2", "b01"]
    assert list(c.cpus) == [16, 16, 8] and list(c.gpus) == [4, 4, 0]
    assert list(c.mem_mb) == [1000, 1000, 1000] and c.gpu_type == ""
    assert c.partitions[0].max_time is None and list(c.partitions[0].nodes) == [0, 1, 2]
    assert c.partitions[1].priority_tier == 3 and c.partitions[1].max_time == 1_800
    assert list(c.partitions[1].nodes) == [0, 2]
    assert c.topology == {}


@pytest.mark.parametrize("line,lineno,field", [
    ("NodeName=n[1-2] CPUs=x", 2, "CPUs"),
    ("NodeName=n[1-2 CPUs=4", 2, "NodeName"),
    ("NodeName=n1 Gres=gpu:h100:many", 2, "Gres"),
    ("PartitionName=p Nodes=n1 MaxTime=1:2:3:4", 2, "MaxTime"),
    ("PartitionName=p Nodes=zz9", 2, "Nodes"),
    ("PartitionName=p Nodes=n1 oops", 2, "oops"),
])
def test_conf_errors(tmp_path, line, lineno, field):
    conf = tmp_path / "slurm.conf"
    conf.write_text("NodeName=n[1-2] CPUs=4\n" + line + "\n" if not line.startswith("NodeName")
                    else "# nodes\n" + line + "\n")
    with pytest.raises(InputError) as e:
        read_cluster(conf)
    assert e.value.file == str(conf) and e.value.line == lineno and e.value.field == field
    assert f"{conf}:{lineno}:" in str(e.value)


def test_topology_errors(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("NodeName=n[1-4] CPUs=4\n")
    (tmp_path / "topology.conf").write_text("SwitchName=s1 Nodes=n[1-2]\n"
                                            "SwitchName=s2 Nodes=n[2-9]\n")
    with pytest.raises(InputError) as e:
        read_cluster(conf)
    assert e.value.file.endswith("topology.conf") and e.value.line == 2
    (tmp_path / "topology.conf").write_text("SwitchName=s1 Nodes=n[1-2]\n"
                                            "SwitchName=s2 Nodes=n[3-4]\n"
                                            "SwitchName=top Switches=s[1-2]\n")
    c = read_cluster(conf)
    assert list(c.topology) == ["s"] and list(c.topology["s"]) == [0, 0, 1, 1]
    conf.write_text("NodeName=n[1-4] CPUs=4\nTopologyPlugin=topology/flat\n")
    assert read_cluster(conf).topology == {}


def test_three_level_topology_and_mixed_nodes(tmp_path):
    from fastsched.model.cluster import Cluster, Partition
    n = 40
    idx = np.arange(n)
    c = Cluster([f"n{i}" for i in range(1, n + 1)], np.r_[np.full(20, 4), np.full(20, 8)],
                np.zeros(n), np.full(n, 100), partitions=[Partition("p", idx[5:30])],
                topology={"rack": idx // 4, "row": idx // 8, "hall": idx // 24})
    conf = tmp_path / "slurm.conf"
    write_cluster(c, conf)
    assert "NodeName=n[1-20] CPUs=4" in conf.read_text()
    r = read_cluster(conf)
    assert list(r.topology) == ["rack", "row", "hall"]
    for level in c.topology:
        assert np.array_equal(r.topology[level], c.topology[level])
    assert np.array_equal(r.cpus, c.cpus) and np.array_equal(r.partitions[0].nodes, idx[5:30])
    assert r.partitions[0].max_time is None
    bad = Cluster(c.node_names, c.cpus, c.gpus, c.mem_mb,
                  topology={"rack": idx // 4, "hall": idx // 6})     # racks straddle halls
    with pytest.raises(InputError, match="does not nest"):
        write_cluster(bad, tmp_path / "bad.conf")


# ----------------------------------------------------------------------------- workload CSV

@pytest.mark.parametrize("suffix", [".csv", ".csv.gz"])
def test_workload_round_trip(tmp_path, c100k, suffix):
    w = ai_mix(c100k, 3_000, seed=5)
    path = tmp_path / ("jobs" + suffix)
    write_workload(w, c100k, path)
    if suffix.endswith(".gz"):
        with gzip.open(path, "rt") as f:
            header = f.readline().strip()
    else:
        header = path.read_text().split("\n", 1)[0]
    assert header == ("job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,"
                      "cpus_per_node,mem_per_node,partition,user,account,org")
    r = read_workload(path, c100k)
    assert _same_jobs(r.jobs, w.jobs)
    assert r.user_names == w.user_names and r.account_names == w.account_names
    assert np.array_equal(r.account, w.account)
    assert r.org_names == w.org_names and np.array_equal(r.org_of_account, w.org_of_account)


def test_workload_round_trip_names_small(tmp_path, c100k):
    w = ai_mix(c100k, 50, seed=2)
    path = tmp_path / "jobs.csv"
    write_workload(w, c100k, path)
    r = read_workload(path, c100k)
    names = lambda x: [x.user_names[u] for u in x.jobs.user]  # noqa: E731
    assert names(r) == names(w)
    assert [r.account_names[a] for a in r.account] == [w.account_names[a] for a in w.account]
    assert np.array_equal(r.jobs.runtime, w.jobs.runtime)


HEADER = ("job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,cpus_per_node,"
          "mem_per_node,partition,user,account\n")
GOOD = "1,0,600,300,1,8,112,2000000,batch,alice,physics\n"


@pytest.mark.parametrize("row,field", [
    ("2,10,6x0,300,1,8,112,2000000,batch,alice,physics\n", "time_limit"),
    ("2,10,600,300,,8,112,2000000,batch,alice,physics\n", "num_nodes"),
    ("2,10,600,300,1.5,8,112,2000000,batch,alice,physics\n", "num_nodes"),
    ("2,10,600,300,1,8,112,2000000,gpu,alice,physics\n", "partition"),
    ("2,10,600,300,1,8,112,2000000,batch,,physics\n", "user"),
    ("2,-1,600,300,1,8,112,2000000,batch,alice,physics\n", "submit_time"),
    ("2,10,0,300,1,8,112,2000000,batch,alice,physics\n", "time_limit"),
    ("1,10,600,300,1,8,112,2000000,batch,alice,physics\n", "job_id"),
])
def test_workload_errors(tmp_path, c100k, row, field):
    path = tmp_path / "jobs.csv"
    path.write_text(HEADER + GOOD + row + GOOD.replace("1,0,", "3,0,", 1))
    with pytest.raises(InputError) as e:
        read_workload(path, c100k)
    assert e.value.file == str(path) and e.value.line == 3 and e.value.field == field


def test_workload_structure_errors(tmp_path, c100k):
    path = tmp_path / "jobs.csv"
    path.write_text(HEADER.replace(",runtime", "") + "1,0,600,1,8,112,2000000,batch,a,b\n")
    with pytest.raises(InputError) as e:
        read_workload(path, c100k)
    assert e.value.line == 1 and e.value.field == "runtime"
    path.write_text(HEADER + GOOD + "2,0,600,300,1,8,112,2000000,batch,a,b,c,d,e\n")
    with pytest.raises(InputError) as e:
        read_workload(path, c100k)
    assert e.value.line == 3
    path.write_text(HEADER + GOOD + "\n" + GOOD.replace("1,", "2,", 1))
    with pytest.raises(InputError) as e:
        read_workload(path, c100k)
    assert e.value.line == 3
    path.write_text(HEADER + "2,5,600,300,1,8,112,2000000,batch,bob,physics\n" + GOOD)
    w = read_workload(path, c100k)            # sorted by submit time; no org column
    assert list(w.jobs.job_id) == [1, 2] and w.user_names == ["alice", "bob"]
    assert w.org_names == ["physics"]


# ----------------------------------------------------------------------------- CLI

def _run(argv):
    args = build_parser(argv).parse_args(argv)
    return args.run(args)


def test_cli(tmp_path, capsys):
    conf = tmp_path / "slurm.conf"
    assert _run(["generate", "cluster", "ai-8k", "-o", str(conf)]) == 0
    assert "1,000 nodes, 8,000 GPUs" in capsys.readouterr().out
    out = tmp_path / "jobs.csv.gz"
    assert _run(["generate", "workload", "ai-mix", "--cluster", str(conf), "--jobs", "2000",
                 "--seed", "3", "--load", "0.9", "-o", str(out)]) == 0
    msg = capsys.readouterr().out
    assert "2,000 jobs" in msg and "offered load" in msg
    w = read_workload(out, read_cluster(conf))
    assert _same_jobs(w.jobs, ai_mix(ai_cluster("ai-8k"), 2000, seed=3, load=0.9).jobs)


def test_cli_writes_the_example_gres_conf_and_site_config(tmp_path, capsys):
    """gres.conf comes with a generated cluster and fits its nodes; generate config
    writes the example site, whose accounts are ai-mix's."""
    from fastsched.policy.config import load_config
    from fastsched.io.gresconf import read_gres_conf
    conf = tmp_path / "slurm.conf"
    assert _run(["generate", "cluster", "ai-8k", "-o", str(conf)]) == 0
    gres = read_gres_conf(tmp_path / "gres.conf")
    assert gres.num_gpus == int(read_cluster(conf).gpus.max()) == 8
    assert gres.source == "Cores" and gres.masks.tolist() == [0x0F, 0xF0]
    assert _run(["generate", "config", "-o", str(tmp_path / "site.toml")]) == 0
    cfg = load_config(tmp_path / "site.toml")
    cfg.build_tree(ai_mix(ai_cluster("ai-8k"), 500, seed=4))     # every account known


def test_standard_clusters_keep_their_ai_mix():
    """The benchmark figures rest on these jobs: sums of every column for one seed."""
    j = ai_mix(ai_cluster("ai-8k"), 400, seed=11).jobs
    cols = (j.submit_time, j.time_limit, j.runtime, j.num_nodes, j.gpus_per_node,
            j.cpus_per_node, j.mem_per_node, j.partition, j.user)
    assert [int(c.sum()) for c in cols] == [4851803, 30831300, 19070501, 874, 1570, 21980,
                                            392500000, 38, 28218]


@pytest.mark.parametrize("line, field, message", [
    ("NodeName=n[1-2] CPUs=999999999999999999999999", "CPUs", "out of range"),
    ("NodeName=n[1-2] RealMemory=99999999999999999999", "RealMemory", "out of range"),
    ("NodeName=n[1-2] CPUs=4 State=SLEEPY", "State", "unknown node state"),
])
def test_conf_values_out_of_range_or_unsupported(tmp_path, line, field, message):
    conf = tmp_path / "slurm.conf"
    conf.write_text(line + "\n")
    with pytest.raises(InputError, match=message) as e:
        read_cluster(conf)
    assert e.value.line == 1 and e.value.field == field


def test_down_nodes_are_left_out_of_partitions_with_a_warning(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("NodeName=n[1-4] CPUs=4\nDownNodes=n[1-2] State=DOWN Reason=psu\n"
                    "PartitionName=p Nodes=ALL\n")
    with pytest.warns(ConfigWarning, match="slurm.conf:2: State=DOWN"):
        c = read_cluster(conf)
    assert list(c.partitions[0].nodes) == [2, 3] and list(c.node_state) == [1, 1, 0, 0]

def test_parse_time_refuses_absurd_times():
    with pytest.raises(InputError, match="out of range"):
        parse_time("99999999999999999-0")


@pytest.mark.parametrize("content", [b"\xff\xfeN\x00o\x00", b"NodeName=n1\x00 CPUs=4\n"])
def test_binary_conf_is_an_input_error(tmp_path, content):
    conf = tmp_path / "slurm.conf"
    conf.write_bytes(content)
    with pytest.raises(InputError, match="not (UTF-8 text|a text file)"):
        read_cluster(conf)


def test_generate_refuses_absurd_job_counts(capsys):
    from fastsched.cli import main
    with pytest.raises(SystemExit):
        main(["generate", "workload", "ai-mix", "--cluster", "ai-8k", "--jobs", "3000000000",
              "-o", "x.csv"])
    assert "--jobs: must be <=" in capsys.readouterr().err
    with pytest.raises(InputError, match="number of jobs"):
        ai_mix(ai_cluster("ai-8k"), 3_000_000_000)


def test_number_too_long_for_int_is_an_input_error(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("# nodes\nNodeName=n[1-2] CPUs=" + "9" * 5000 + "\n")
    with pytest.raises(InputError, match="a number of 5,000 digits is out of range") as e:
        read_cluster(conf)
    assert e.value.line == 2
