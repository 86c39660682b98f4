"""slurm.conf and gres.conf as Slurm reads them: a realistic site (Include, comments,
continuations, DEFAULT lines, NodeSets, several GPU types, DownNodes), CPUs derived
as Slurm's read_config.c derives them, the default partition, and a warning naming
file:line for every key that changes scheduling but is not modelled."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastsched.io.conflines import logical_lines, split_words
from fastsched.io.gresconf import parse_gres_conf
from fastsched.io.sbatch import normalise, parse_args
from fastsched.io.slurmconf import read_cluster, write_cluster
from fastsched.io.workload import read_workload
from fastsched.model.cluster import Cluster, Partition
from fastsched.model.errors import ConfigWarning, InputError, UnsupportedError

SITE = """\
# Demo site: slurm.conf (comments, continuation lines, an Include, mixed case keys)
ClusterName=Demo
SlurmctldHost=ctl01(10.0.0.1)
AuthType=auth/munge            # not about scheduling: ignored
SchedulerType=sched/backfill
SchedulerParameters=bf_window=2880,bf_resolution=300,bf_max_job_test=500,\\
default_queue_depth=200,bf_continue
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
PriorityType=priority/multifactor
PriorityWeightFairshare=10000
PriorityWeightAge=1000
PriorityDecayHalfLife=7-0
GresTypes=gpu
Include conf.d/nodes.conf
partitionname=DEFAULT MaxTime=2-00:00:00 State=UP
PartitionName=cpu Nodes=cpus Default=YES DefaultTime=1:00:00
PartitionName=gpu Nodes=gpunodes MaxTime=1-0 QOS=gpuqos AllowAccounts=ml,vision \\
    OverSubscribe=NO MaxNodes=2
PartitionName=debug Nodes=c[01-02],g1 MaxTime=30 PriorityTier=10
"""

NODES = """\
# conf.d/nodes.conf: relative Includes are relative to slurm.conf's directory
NodeName=DEFAULT Sockets=2 CoresPerSocket=16 ThreadsPerCore=2 RealMemory=256000
NodeName=c[01-04] Feature=cpu,skylake
nodename=g[1-2] Gres=gpu:a100:4 Weight=10 Feature=gpu
NodeName=g3 Gres=gpu:v100:2,gpu:1g.10gb:7 Weight=5 CPUs=32
NodeName=c05 State=DRAIN Reason="fan \\#2 broken"
NodeSet=cpus Feature=cpu
NodeSet=gpunodes Nodes=g[1-3]
Include conf.d/down.conf
"""


@pytest.fixture
def site(tmp_path):
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "slurm.conf").write_text(SITE)
    (tmp_path / "conf.d" / "nodes.conf").write_text(NODES)
    (tmp_path / "conf.d" / "down.conf").write_text("DownNodes=c04 State=DOWN Reason=psu\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cluster = read_cluster(tmp_path / "slurm.conf")
    cluster.caught = [str(w.message) for w in caught if w.category is ConfigWarning]
    return cluster


def test_site_nodes(site):
    assert site.node_names == ["c01", "c02", "c03", "c04", "g1", "g2", "g3", "c05"]
    # 2 sockets x 16 cores x 2 threads; g3 says CPUs=32 = Sockets x Cores, kept
    assert site.cpus.tolist() == [64, 64, 64, 64, 64, 64, 32, 64]
    assert site.mem_mb.tolist() == [256000] * 8
    assert site.gpus.tolist() == [0, 0, 0, 0, 4, 4, 9, 0]
    assert site.gpu_types[4] == (("a100", 4),)
    assert site.gpu_types[6] == (("v100", 2), ("1g.10gb", 7)) and site.gpu_type == ""
    assert site.weight.tolist() == [1, 1, 1, 1, 10, 10, 5, 1]
    assert site.features[0] == ("cpu", "skylake") and site.features[6] == ()
    assert site.node_state.tolist() == [0, 0, 0, 1, 0, 0, 0, 2]      # c04 DOWN, c05 DRAIN


def test_site_partitions(site):
    cpu, gpu, debug = site.partitions
    assert site.default_partition == "cpu"
    assert cpu.nodes.tolist() == [0, 1, 2]               # the NodeSet by feature, c04 down
    assert cpu.max_time == 2 * 86400 and cpu.default_time == 3600 and cpu.state == "UP"
    assert gpu.nodes.tolist() == [4, 5, 6] and gpu.max_time == 86400 and gpu.max_nodes == 2
    assert gpu.qos == "gpuqos" and gpu.allow_accounts == ("ml", "vision")
    assert gpu.allow_qos is None and gpu.oversubscribe == "NO"
    assert debug.nodes.tolist() == [0, 1, 4] and debug.priority_tier == 10
    assert debug.max_time == 30 * 60


def test_site_settings(site):
    s = site.settings
    assert s.cluster_name == "Demo" and s.priority_type == "priority/multifactor"
    assert s.scheduler_parameters == {"bf_window": 2880, "bf_resolution": 300,
                                      "bf_max_job_test": 500, "default_queue_depth": 200,
                                      "bf_continue": True}
    assert s.bf_window() == 2880 * 60 and s.bf_resolution() == 300
    assert s.priority_weights == {"Fairshare": 10000, "Age": 1000}
    assert s.priority_decay_half_life == 7 * 86400
    assert s.other["SlurmctldHost"] == "ctl01(10.0.0.1)"


def test_site_warnings_name_file_and_line(site):
    text = "\n".join(site.warnings)
    assert site.warnings == site.caught                      # issued and collected
    assert "slurm.conf:6: SchedulerParameters=" in text and "bf_max_job_test" in text
    assert "slurm.conf:10: PriorityType=priority/multifactor" in text
    assert "slurm.conf:18: QOS=gpuqos" in text and "slurm.conf:18: MaxNodes=2" in text
    assert "slurm.conf:18: AllowAccounts=ml,vision" in text
    assert "nodes.conf:6: State=DRAIN" in text and "down.conf:1: State=DOWN" in text
    assert "nodes.conf:4: node Weight differs" in text
    assert "Gres" not in text                                # GPUs of every type are modelled
    assert not any("AuthType" in w or "SlurmctldHost" in w for w in site.warnings)


def test_default_partition_is_where_jobs_naming_none_go(site, tmp_path):
    n = normalise(parse_args(["-n", "1"]), site)
    assert n.partitions == ["cpu"] and n.time_limit == 3600           # DefaultTime
    csv = tmp_path / "jobs.csv"
    csv.write_text("job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,"
                   "cpus_per_node,mem_per_node,partition,user,account\n"
                   "1,0,60,30,1,0,1,0,,u,a\n2,0,60,30,1,1,1,0,gpu,u,a\n")
    w = read_workload(csv, site)
    assert w.jobs.partition.tolist() == [0, 1]


def test_no_default_partition_refuses_a_job_naming_none():
    c = Cluster(["a", "b"], np.array([4, 4]), np.zeros(2), np.zeros(2),
                partitions=[Partition("p", np.arange(2)), Partition("q", np.arange(1))])
    assert c.default_partition is None
    with pytest.raises(InputError, match="no default partition"):
        normalise(parse_args(["-n", "1"]), c)
    assert normalise(parse_args(["-p", "q"]), c).partitions == ["q"]


def test_typed_gpu_request_checked_against_nodes_of_that_type(site):
    n = normalise(parse_args(["-p", "gpu", "--gres=gpu:a100:2"]), site)
    assert n.gpu_type == "a100" and any("2 of 3 nodes" in x for x in n.notes)
    with pytest.raises(InputError, match="no node has GPU type 'h100'"):
        normalise(parse_args(["-p", "gpu", "--gres=gpu:h100:1"]), site)


def test_write_read_round_trip_keeps_types_weights_features_default(site, tmp_path):
    write_cluster(site, tmp_path / "out.conf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)
        back = read_cluster(tmp_path / "out.conf")
    up = site.node_state == 0
    assert back.node_names == [n for n, u in zip(site.node_names, up) if True]
    assert back.gpu_types.tolist() == site.gpu_types.tolist()
    assert back.weight.tolist() == site.weight.tolist()
    assert back.features.tolist() == site.features.tolist()
    assert back.default_partition == "cpu"
    assert [p.nodes.tolist() for p in back.partitions] == \
        [p.nodes.tolist() for p in site.partitions]


@pytest.mark.parametrize("line, cpus, warns", [
    ("NodeName=n1 Sockets=2 CoresPerSocket=8 ThreadsPerCore=2", 32, False),
    ("NodeName=n1 Boards=2 SocketsPerBoard=2 CoresPerSocket=4", 16, False),
    ("NodeName=n1 CPUs=48 CoresPerSocket=12 ThreadsPerCore=2", 48, False),   # Sockets=2
    ("NodeName=n1 CPUs=16 Sockets=2 CoresPerSocket=8 ThreadsPerCore=2", 16, False),
    ("NodeName=n1 CPUs=2 Sockets=2 CoresPerSocket=8", 2, False),            # = Sockets
    ("NodeName=n1 CPUs=20 Sockets=2 CoresPerSocket=8", 16, True),           # reset
    ("NodeName=n1 CoresPerSocket=6", 6, False),                              # Sockets=Boards
    ("NodeName=n1", 1, False),
    ("NodeName=n1 CPUs=7", 7, False),
])
def test_cpus_derived_as_slurm_derives_them(tmp_path, line, cpus, warns):
    conf = tmp_path / "slurm.conf"
    conf.write_text(line + "\nPartitionName=p Nodes=ALL Default=YES\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        c = read_cluster(conf)
    assert c.cpus.tolist() == [cpus]
    assert any("resets it" in str(w.message) for w in caught) == warns


def test_node_defaults_merge_and_include_rules(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "slurm.conf").write_text(
        "ClusterName=Alpha\nNodeName=DEFAULT RealMemory=1000\nNodeName=DEFAULT CPUs=8\n"
        "Include sub/%c.conf\nPartitionName=p Nodes=ALL Default=YES\n")
    # an Include inside an included file is relative to slurm.conf's directory too
    (tmp_path / "sub" / "alpha.conf").write_text("NodeName=a[1-2]\nInclude sub/more.conf\n")
    (tmp_path / "sub" / "more.conf").write_text("NodeName=a3 CPUs=4\n")
    c = read_cluster(tmp_path / "slurm.conf")
    assert c.node_names == ["a1", "a2", "a3"] and c.cpus.tolist() == [8, 8, 4]
    assert c.mem_mb.tolist() == [1000] * 3
    (tmp_path / "slurm.conf").write_text("NodeName=a1\nInclude nowhere.conf\n")
    with pytest.raises(InputError, match="no such file") as e:
        read_cluster(tmp_path / "slurm.conf")
    assert (e.value.line, e.value.field) == (2, "Include")


def test_last_default_wins_and_no_partition_warns(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("NodeName=n[1-2] CPUs=2\nPartitionName=a Nodes=n1 Default=YES\n"
                    "PartitionName=b Nodes=n2 Default=YES\n")
    assert read_cluster(conf).default_partition == "b"
    conf.write_text("NodeName=n[1-2] CPUs=2\n")
    with pytest.warns(ConfigWarning, match="no PartitionName lines"):
        c = read_cluster(conf)
    assert [p.name for p in c.partitions] == ["all"] and c.default_partition == "all"


@pytest.mark.parametrize("text, field, message", [
    ("NodeName=n1 Gres=gpu:a100:x\n", "Gres", "bad count"),
    ("NodeName=n1 Gres=gpu:40,gpu:v100:30\n", "Gres", "at most 64"),
    ("NodeName=ALL CPUs=2\n", "NodeName", "reserved"),
    ("NodeName=n1\nPartitionName=p Nodes=n1 Default=maybe\n", "Default", "YES or NO"),
    ("NodeName=n1\nPartitionName=p Nodes=n1 State=SLEEPY\n", "State", "partition state"),
    ("NodeName=n1\nPartitionName=p Nodes=n1 MaxNodes=lots\n", "MaxNodes", "integer"),
    ("NodeName=n1 CPUs+=2\n", "CPUs", "operators"),
    ("NodeName=n1\nNodeSet=s\n", "NodeSet", "Nodes= or Feature="),
])
def test_malformed_lines_name_file_line_and_key(tmp_path, text, field, message):
    conf = tmp_path / "slurm.conf"
    conf.write_text(text)
    with pytest.raises(InputError, match=message) as e:
        read_cluster(conf)
    assert e.value.file == str(conf) and e.value.line is not None and e.value.field == field


def test_line_rules_of_slurms_parser():
    # an even number of trailing backslashes escapes them, an odd number continues
    text = ("A=1 # comment\nB=x\\#y\nC=1 \\\n  D=2\n\nE = \"two words\"\n"
            "F=a\\\\\nG=3\n")
    got = [(n, split_words(t, "f", n)) for n, t in logical_lines(text)]
    assert got == [(1, (("A", "1"),)), (2, (("B", "x#y"),)), (3, (("C", "1"), ("D", "2"))),
                   (5, ()), (6, (("E", "two words"),)), (7, (("F", "a\\"),)),
                   (8, (("G", "3"),))]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["cpus=8", "RealMemory=100", "Gres=gpu:2", "Weight=3",
                                 "Feature=a,b", "Sockets=2", "CoresPerSocket=4"]),
                max_size=6, unique=True),
       st.booleans(), st.booleans())
def test_continuations_comments_and_case_do_not_change_the_cluster(tmp_path_factory, keys,
                                                                   split, upper):
    """The same node line written on one line, or split with continuations and comments
    and with keys in another case, gives the same cluster."""
    d = tmp_path_factory.mktemp("conf")
    plain = "NodeName=n[1-3] " + " ".join(keys) + "\nPartitionName=p Nodes=ALL Default=YES\n"
    words = [k.partition("=")[0].upper() + "=" + k.partition("=")[2] if upper else k
             for k in keys]
    joined = (" \\\n   ".join(["NodeName=n[1-3]"] + words) if split
              else "nodename=n[1-3] " + " ".join(words))
    other = "# header\n" + joined + "   # trailing comment\nPartitionName=p Nodes=ALL Default=YES\n"
    (d / "a.conf").write_text(plain)
    (d / "b.conf").write_text(other)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)
        a, b = read_cluster(d / "a.conf"), read_cluster(d / "b.conf")
    for col in ("cpus", "gpus", "mem_mb", "weight"):
        assert getattr(a, col).tolist() == getattr(b, col).tolist()
    assert a.features.tolist() == b.features.tolist()


# --------------------------------------------------------------------------- gres.conf

GRES = """\
AutoDetect=nvml
NodeName=g[1-2] Name=gpu Type=a100 File=/dev/nvidia[0-1] Cores=0-15
NodeName=g[1-2] Name=gpu Type=a100 File=/dev/nvidia[2-3] Cores=16-31
NodeName=g3 Name=gpu Type=v100 Count=2
NodeName=g3 Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia2,/dev/nvidia-caps/cap21
NodeName=g4 Name=gpu Type=a100 File=/dev/nvidia[0-1] CPUs=0-15
NodeName=g4 Name=gpu Type=a100 File=/dev/nvidia[2-3] CPUs=16-31
Name=mps Count=200
"""


def test_gres_conf_per_node_type_lines():
    assert parse_gres_conf(GRES, node="g1").masks.tolist() == [0b0011, 0b1100]
    g3 = parse_gres_conf(GRES, node="g3")
    assert g3.num_gpus == 3 and g3.masks.tolist() == [1, 2, 4]       # Count, then MultipleFiles
    assert parse_gres_conf(GRES, node="g4").masks.tolist() == [0b0011, 0b1100]  # CPUs= (legacy)
    assert parse_gres_conf("AutoDetect=nvml\n", node="g1").num_gpus == 0   # count: slurm.conf


def test_gres_conf_one_layout_for_all_nodes_or_a_clear_refusal():
    same = "\n".join(GRES.splitlines()[:3] + GRES.splitlines()[5:7]) + "\n"
    assert parse_gres_conf(same).masks.tolist() == [0b0011, 0b1100]
    with pytest.raises(UnsupportedError, match="layout differs"):
        parse_gres_conf(GRES)


@pytest.mark.parametrize("text, field, message", [
    ("Name=gpu File=/dev/nvidia[0-1] Count=3\n", "Count", "names 2 devices"),
    ("Name=gpu Count=many\n", "Count", "not a GPU count"),
    ("Name=gpu Count=65\n", "Count", "not a GPU count"),
    ("Name=gpu File=/dev/nvidia0 CPUs=4-2\n", "CPUs", "CPU range"),
])
def test_gres_conf_malformed(text, field, message):
    with pytest.raises(InputError, match=message) as e:
        parse_gres_conf(text, file="gres.conf")
    assert (e.value.file, e.value.line, e.value.field) == ("gres.conf", 1, field)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='ab=# \\"\n\t.[]1-', max_size=40))
def test_any_text_gives_words_or_a_one_line_error(text):
    """Slurm's line rules on any text: words, or an InputError naming line and field."""
    for n, logical in logical_lines(text):
        try:
            words = split_words(logical, "f.conf", n)
        except InputError as e:
            assert "\n" not in str(e) and e.line == n and e.field is not None
            continue
        assert all(k and "=" not in k for k, _ in words)
