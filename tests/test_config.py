"""The TOML configuration: the shipped example, and bad input naming file, line and key."""
from importlib import resources

import numpy as np
import pytest

from fastsched.model.cluster import Cluster, Partition
from fastsched.policy.config import SchedulerConfig, load_config, parse_config, parse_tres
from fastsched.model.errors import InputError
from fastsched.model.jobs import JobTable
from fastsched.io.workload import Workload

EXAMPLE = resources.files("fastsched") / "data" / "example-config.toml"


def test_example_config_loads():
    cfg = load_config(EXAMPLE)
    w = cfg.weights
    assert (w.PriorityWeightAge, w.PriorityWeightFairshare, w.PriorityWeightQOS) == \
        (1000, 10000, 2000)
    assert w.PriorityWeightTRES == {"GRES/gpu": 500.0}
    assert w.PriorityMaxAge == 7 * 86400
    assert cfg.decay_half_life == 7 * 86400 and cfg.calc_period == 300
    assert cfg.tres_billing_weights == {"CPU": 1.0, "Mem": 0.25 / 1024, "Node": 0.0,
                                        "GRES/gpu": 2.0}
    high = cfg.qos["high"]
    assert (high.Priority, high.UsageFactor) == (100, 2.0)
    assert high.limits.MaxTRESPerUser == {"gres/gpu": 64}
    assert (high.limits.MaxJobs, high.limits.MaxSubmitJobs) == (4, 20)
    assert high.limits.MaxWallDurationPerJob == 86400
    assert cfg.qos_factor().tolist() == [0.1, 1.0, 0.0]          # normal, high, low
    names = [a.name for a in cfg.accounts]
    assert names == [f"org{o:02d}" for o in range(1, 21)] + [f"acct{a:03d}" for a in range(1, 201)]
    assert {a.parent for a in cfg.accounts[:20]} == {"root"}
    assert [a.parent for a in cfg.accounts[20:]] == [f"org{a // 10 + 1:02d}" for a in range(200)]
    assert cfg.accounts[20].limits.GrpTRES == {"gres/gpu": 512}
    assert cfg.partitions == {"batch": {"PriorityJobFactor": 1},
                              "interactive": {"PriorityTier": 2, "PriorityJobFactor": 10}}


def test_tree_from_config_with_default_and_own_shares():
    cfg = load_config(EXAMPLE)
    jobs = JobTable.from_arrays(job_id=[1, 2, 3], submit_time=0, time_limit=60, runtime=1,
                                num_nodes=1, user=[0, 1, 0])
    w = Workload(jobs, np.array([0, 0, 1], np.int32), ["user0001", "erin"],
                 ["acct001", "acct011"], np.zeros(2, np.int32), ["o"])
    tree = cfg.build_tree(w)
    assert tree.user_names == ["acct001/user0001", "acct001/erin", "acct011/user0001"]
    assert tree.shares[tree.index["acct001/user0001"]] == 2       # [[user]] override
    assert tree.shares[tree.index["acct001/erin"]] == 1           # default
    assert tree.names[tree.parent[tree.index["acct011"]]] == "org02"
    assert tree.job_associations(w).tolist() == [0, 1, 2]


def test_example_config_fits_every_generated_workload():
    """The shipped example names the accounts of ai-mix: any seed, any standard cluster."""
    from fastsched.tools.generate import ai_cluster, ai_mix
    from fastsched.policy.limits import compile_limits
    cfg = load_config(EXAMPLE)
    cluster = ai_cluster("ai-8k")
    for seed in range(3):
        w = ai_mix(cluster, 3000, seed=seed)
        tree = cfg.build_tree(w)
        assert len(tree.user_names) >= len(np.unique(w.jobs.user))
        compile_limits(cfg, w, cluster, tree=tree)


def test_partition_overrides():
    cfg = load_config(EXAMPLE)
    cl = Cluster.homogeneous(4)
    cl = Cluster(cl.node_names, cl.cpus, cl.gpus, cl.mem_mb,
                 [Partition("batch", np.arange(4)), Partition("interactive", np.arange(2))])
    assert cfg.partition_factor(cl).tolist() == [0.1, 1.0]
    assert [p.priority_tier for p in cfg.apply_partitions(cl).partitions] == [1, 2]
    with pytest.raises(InputError, match="unknown partition 'batch'") as e:
        cfg.partition_factor(Cluster.homogeneous(2))
    line = EXAMPLE.read_text().splitlines().index("[partition.batch]") + 1
    assert e.value.field == "partition.batch" and e.value.line == line


def test_defaults_without_file():
    cfg = parse_config("")
    assert cfg.qos_names == ["normal"] and cfg.fairshare_algorithm == "fair_tree"
    assert cfg.tres_billing_weights["CPU"] == 1.0


def test_tres_strings():
    assert parse_tres("cpu=64, MEM=2G ,gres/gpu=8,node=2") == \
        {"cpu": 64, "mem": 2048, "gres/gpu": 8, "node": 2}
    assert parse_tres("cpu=4,cpu=-1") == {}
    for bad in ("gpu=4", "cpu", "cpu=x", "mem=1.5K", "cpu=-2"):
        with pytest.raises(InputError):
            parse_tres(bad)


# (toml text, expected field, expected line, message fragment)
BAD = [
    ("[priority]\nPriorityWeightAge = -1\n", "priority.PriorityWeightAge", 2, "0..4294967295"),
    ("[priority]\nPriorityWeightAge = 4294967296\n", "priority.PriorityWeightAge", 2,
     "0..4294967295"),
    ("[priority]\n\nPriorityWeightQOS = 1.5\n", "priority.PriorityWeightQOS", 3, "integer"),
    ("[priority]\nPriorityWeightAg = 1\n", "priority.PriorityWeightAg", 2, "unknown key"),
    ("[priority]\nPriorityDecayHalfLife = \"7-x\"\n", "priority.PriorityDecayHalfLife", 2,
     "bad time"),
    ("[priority]\nPriorityMaxAge = \"0\"\n", "priority.PriorityMaxAge", 2, "> 0"),
    ("[priority]\nPriorityFlags = \"MAX_TRES\"\n", "priority.PriorityFlags", 2,
     "not supported"),
    ("[priority]\nTRESBillingWeights = \"CPU=1,Disk=2\"\n", "priority.TRESBillingWeights", 2,
     "bad billing weight"),
    ("[priority]\nPriorityWeightTRES = \"CPU=-1\"\n", "priority.PriorityWeightTRES", 2,
     ">= 0"),
    ("[[account]]\nname = \"a\"\nRawShares = -1\n", "account[0].RawShares", 3, ">= 0"),
    ("[[account]]\nname = \"a\"\n[[account]]\nname = \"b\"\nparent = \"zz\"\n",
     "account[1].parent", 5, "unknown parent account 'zz'"),
    ("[[account]]\nname = \"a\"\nparent = \"b\"\n[[account]]\nname = \"b\"\nparent = \"a\"\n",
     "account[0].parent", 3, "cycle"),
    ("[[account]]\nname = \"a\"\n[[account]]\nname = \"a\"\n", "account[1].name", 4,
     "duplicate account 'a'"),
    ("[[account]]\nname = \"a\"\n[[user]]\nname = \"u\"\naccount = \"b\"\n", "user[0].account",
     5, "unknown account 'b'"),
    ("[[account]]\nname = \"a\"\nGrpTRES = \"gpu=4\"\n", "account[0].GrpTRES", 3, "bad TRES"),
    ("[[account]]\nname = \"a\"\nMaxJobsPerUser = 4\n", "account[0].MaxJobsPerUser", 3,
     "unknown key"),
    ("[qos.high]\nPriority = 10\nMaxWall = \"1:xx\"\n", "qos.high.MaxWall", 3, "bad time"),
    ("[qos.high]\nUsageFactor = -1\n", "qos.high.UsageFactor", 2, ">= 0"),
    ("[qos.high]\nMaxJobsPerUser = -5\n", "qos.high.MaxJobsPerUser", 2, ">= 0"),
    ("[partition.gpu]\nPriorityTier = 70000\n", "partition.gpu.PriorityTier", 2, "0..65533"),
]


@pytest.mark.parametrize("text,field,line,fragment", BAD)
def test_bad_input_names_file_line_and_key(text, field, line, fragment):
    with pytest.raises(InputError) as e:
        parse_config(text, source="cfg.toml")
    assert e.value.file == "cfg.toml"
    assert e.value.field == field
    assert e.value.line == line
    assert fragment in str(e.value)


def test_invalid_toml_gives_line(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text("[priority]\nPriorityWeightAge = \n")
    with pytest.raises(InputError, match="not valid TOML") as e:
        load_config(p)
    assert e.value.line == 2 and e.value.file == str(p)


def test_unknown_account_of_a_job():
    cfg = parse_config("[[account]]\nname = \"a\"\n", source="c.toml")
    jobs = JobTable.from_arrays(job_id=[7], submit_time=0, time_limit=60, runtime=1,
                                num_nodes=1, user=[0])
    w = Workload(jobs, np.zeros(1, np.int32), ["u"], ["b"], np.zeros(1, np.int32), ["o"])
    with pytest.raises(InputError, match="job 7: unknown account 'b'"):
        cfg.build_tree(w)


def test_classic_by_flag():
    cfg = parse_config("[priority]\nPriorityFlags = \"NO_FAIR_TREE\"\n")
    assert cfg.fairshare_algorithm == "classic"
    with pytest.raises(InputError, match="contradicts"):
        parse_config("[priority]\nPriorityFlags = \"NO_FAIR_TREE\"\n"
                     "FairShareAlgorithm = \"fair_tree\"\n")
    assert isinstance(cfg, SchedulerConfig)


def test_config_with_byte_order_mark_or_binary(tmp_path):
    p = tmp_path / "site.toml"
    p.write_bytes("\ufeff[priority]\nPriorityWeightAge = 1000\n".encode())
    load_config(p)
    p.write_bytes(b"[priority]\x00\n")
    with pytest.raises(InputError, match="NUL byte") as e:
        load_config(p)
    assert e.value.line == 1


@pytest.mark.parametrize("line, message", [
    ("MaxJobs = 1000000000000000000000000000000", "must be <= 2,147,483,647"),
    ('GrpTRES = "gres/gpu=99999999999999999999999"', "out of range"),
])
def test_limits_beyond_64_bits_are_refused(line, message):
    with pytest.raises(InputError, match=message) as e:
        parse_config(f'[[account]]\nname = "a"\n{line}\n', source="c.toml")
    assert e.value.line == 3
