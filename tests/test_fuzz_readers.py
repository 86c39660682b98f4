"""Fuzz every input reader: random bytes, truncation, huge and negative numbers, wrong
encodings. Each input must give a correct result or a one-line InputError (with the
file, and the line where there is one), never a traceback and never a value that
overflowed."""
from __future__ import annotations

import argparse
import gzip

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastsched.model.cluster import Cluster
from fastsched.policy.config import load_config
from fastsched.model.errors import FastschedError, InputError
from fastsched.io.sbatch import normalise, parse_script
from fastsched.io.slurmconf import read_cluster
from fastsched.io.swf import read_swf
from fastsched.io.gresconf import read_gres_conf
from fastsched.io.topology import read_block_topology
from fastsched.model.validation import MAX_COUNT, MAX_MEMORY_MB, MAX_SECONDS
from fastsched.io.workload import read_workload, requests_to_workload

FUZZ = settings(max_examples=48, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

#: numbers as text, from ordinary to absurd
NUMBERS = st.one_of(
    st.integers(-3, 40).map(str),
    st.integers(-2**70, 2**70).map(str),
    st.sampled_from(["1e30", "-1e30", "1e308", "nan", "inf", "-inf", "2.5", "9" * 30,
                     str(2**63), str(2**63 - 1), str(2**31), "0x10", ""]),
)
#: a field: mostly numbers, sometimes junk
FIELDS = st.one_of(NUMBERS, NUMBERS, st.text(max_size=6))


def failure(call):
    """Run ``call``; return its InputError (checked to be one line), or None on success."""
    try:
        call()
    except FastschedError as e:
        assert "\n" not in str(e) and len(str(e)) < 500, str(e)
        return e
    return None


def in_range(jobs, max_nodes=None):
    """A JobTable holds no value that overflowed or makes no sense."""
    assert (jobs.submit_time >= 0).all() and (jobs.submit_time <= MAX_SECONDS).all()
    assert (jobs.time_limit >= 1).all() and (jobs.time_limit <= MAX_SECONDS).all()
    assert (jobs.runtime >= 0).all() and (jobs.runtime <= MAX_SECONDS).all()
    assert (jobs.num_nodes >= 1).all()
    if max_nodes is not None:
        assert (jobs.num_nodes <= max_nodes).all()
    assert (jobs.mem_per_node >= 0).all() and (jobs.mem_per_node <= MAX_MEMORY_MB).all()


def write(tmp_path, name, data) -> str:
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
    return str(path)


def mangle(text: str, how: str, cut: float) -> bytes:
    """``text`` as bytes: plain, truncated, gzipped and truncated, UTF-16, or Latin-1."""
    raw = text.encode("utf-8", "replace")
    if how == "truncate":
        return raw[:int(len(raw) * cut)]
    if how == "gzip-cut":
        packed = gzip.compress(raw)
        return packed[:max(1, int(len(packed) * cut))]
    if how == "utf16":
        return text.encode("utf-16")
    if how == "latin1":
        return (text + "\u00e9").encode("latin-1", "replace")
    return raw


MANGLE = st.tuples(st.sampled_from(["plain"] * 5 + ["truncate", "gzip-cut", "utf16", "latin1"]),
                   st.floats(0, 1))


# --------------------------------------------------------------------------- SWF

SWF_LINE = st.lists(FIELDS, min_size=16, max_size=19).map(" ".join)
GOOD_SWF = "1 0 -1 10 2 -1 -1 2 100 -1 1 3 3 -1 -1 -1 -1 -1"


@FUZZ
@given(lines=st.lists(st.one_of(SWF_LINE, st.just(GOOD_SWF)), max_size=4),
       header=st.one_of(NUMBERS, st.just("16")), mangled=MANGLE)
def test_swf(tmp_path, lines, header, mangled):
    text = f"; MaxProcs: {header}\n" + "\n".join(lines) + "\n"
    name = "t.swf.gz" if mangled[0] == "gzip-cut" else "t.swf"
    path = write(tmp_path, name, mangle(text, *mangled))
    result = {}
    err = failure(lambda: result.update(trace=read_swf(path)))
    if err is None:
        in_range(result["trace"].jobs, result["trace"].procs)
    else:
        assert err.file == path


@FUZZ
@given(data=st.binary(max_size=200))
def test_swf_random_bytes(tmp_path, data):
    path = write(tmp_path, "t.swf", data)
    err = failure(lambda: read_swf(path, procs=4))
    assert err is None or err.file == path


# --------------------------------------------------------------------------- workload CSV

CSV_HEADER = ("job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,cpus_per_node,"
              "mem_per_node,partition,user,account")
GOOD_ROW = "1,0,100,50,1,1,1,10,p,u,a"
CSV_ROW = st.tuples(st.lists(FIELDS, min_size=7, max_size=9),
                    st.sampled_from(["p", "p,p", "q", ""])).map(
    lambda r: ",".join(r[0][:8] + [r[1], "u", "a"]))


@pytest.fixture(scope="module")
def small_cluster():
    return Cluster.homogeneous(4, cpus=8, gpus=4, mem_mb=1000, prefix="n")


@FUZZ
@given(rows=st.lists(st.one_of(CSV_ROW, st.just(GOOD_ROW)), max_size=4), mangled=MANGLE)
def test_workload_csv(tmp_path, small_cluster, rows, mangled):
    from fastsched.model.cluster import Partition
    cluster = Cluster(small_cluster.node_names, small_cluster.cpus, small_cluster.gpus,
                      small_cluster.mem_mb, [Partition("p", np.arange(4))])
    text = CSV_HEADER + "\n" + "\n".join(rows) + "\n"
    name = "w.csv.gz" if mangled[0] == "gzip-cut" else "w.csv"
    path = write(tmp_path, name, mangle(text, *mangled))
    result = {}
    err = failure(lambda: result.update(w=read_workload(path, cluster)))
    if err is None:
        w = result["w"]
        in_range(w.jobs, 4)
        assert (w.jobs.gpus_per_node <= 4).all() and (w.jobs.cpus_per_node <= 8).all()
        assert all(s.line >= 2 for s in w.skipped)
    else:
        assert err.file == path


# --------------------------------------------------------------------------- slurm.conf

CONF_LINE = st.one_of(
    st.builds("NodeName=n[1-{}] CPUs={} RealMemory={} Gres=gpu:{}".format,
              st.integers(-1, 9), NUMBERS, NUMBERS, NUMBERS),
    st.builds("NodeName=n[1-2] {}={}".format,
              st.sampled_from(["CPUs", "RealMemory", "Gres=gpu:h100:", "State"]), NUMBERS),
    st.builds("PartitionName=p Nodes=ALL MaxTime={} PriorityTier={}".format,
              st.one_of(NUMBERS, st.sampled_from(["1-0", "99999999999-0", "1:2:3"])), NUMBERS),
    st.builds("DownNodes=n{} State={}".format, NUMBERS, st.sampled_from(["DOWN", "IDLE"])),
    st.text(max_size=20),
)


@FUZZ
@given(lines=st.lists(CONF_LINE, min_size=1, max_size=2), mangled=MANGLE)
def test_slurm_conf(tmp_path, lines, mangled):
    text = "\n".join(lines) + "\nPartitionName=q Nodes=ALL\n"
    path = write(tmp_path, "slurm.conf", mangle(text, *mangled))
    result = {}
    err = failure(lambda: result.update(c=read_cluster(path)))
    if err is None:
        c = result["c"]
        assert (c.cpus >= 0).all() and (c.mem_mb >= 0).all() and (c.mem_mb <= MAX_MEMORY_MB).all()
        assert all(p.max_time is None or 0 <= p.max_time <= MAX_SECONDS for p in c.partitions)


SWITCH_LINE = st.one_of(
    st.builds("SwitchName=s{} Nodes=n[{}-{}]".format, NUMBERS, NUMBERS, NUMBERS),
    st.builds("SwitchName=top Switches=s[{}-{}]".format, NUMBERS, NUMBERS),
    st.text(max_size=20),
)


@FUZZ
@given(lines=st.lists(SWITCH_LINE, max_size=3), mangled=MANGLE)
def test_tree_topology_conf(tmp_path, lines, mangled):
    conf = write(tmp_path, "slurm.conf", "NodeName=n[1-8] CPUs=4\nPartitionName=p Nodes=ALL\n")
    topo = write(tmp_path, "topology.conf", mangle("\n".join(lines) + "\n", *mangled))
    err = failure(lambda: read_cluster(conf))
    assert err is None or err.file in (conf, topo)


# --------------------------------------------------------------------------- gres.conf, topology

GRES_LINE = st.one_of(
    st.builds("Name=gpu File=/dev/nvidia[{}-{}] Cores={}".format, NUMBERS, NUMBERS, NUMBERS),
    st.builds("Name=gpu File=/dev/nvidia{} Links={},{}".format, NUMBERS, NUMBERS, NUMBERS),
    st.text(max_size=20),
)
BLOCK_LINE = st.one_of(
    st.builds("BlockName=b{} Nodes=n[{}-{}]".format, NUMBERS, NUMBERS, NUMBERS),
    st.builds("BlockSizes={},{}".format, NUMBERS, NUMBERS),
    st.text(max_size=20),
)


@FUZZ
@given(gres=st.lists(GRES_LINE, max_size=4), blocks=st.lists(BLOCK_LINE, max_size=4),
       mangled=MANGLE)
def test_gres_and_block_topology(tmp_path, gres, blocks, mangled):
    gres_path = write(tmp_path, "gres.conf", mangle("\n".join(gres), *mangled))
    err = failure(lambda: read_gres_conf(gres_path))
    assert err is None or err.file == gres_path
    topo_path = write(tmp_path, "topology.conf", mangle("\n".join(blocks), *mangled))
    err = failure(lambda: read_block_topology(topo_path, [f"n{i}" for i in range(1, 9)]))
    assert err is None or err.file == topo_path


# --------------------------------------------------------------------------- TOML

TOML_VALUE = st.one_of(NUMBERS.filter(lambda v: v and v.lstrip("-").isdigit()),
                       NUMBERS.map(lambda v: f'"{v}"'), st.sampled_from(["1e30", "nan", "true"]))
TOML_KEY = st.sampled_from(["PriorityWeightAge", "PriorityMaxAge", "PriorityCalcPeriod",
                            "PriorityDecayHalfLife", "PriorityWeightTRES"])
ACCOUNT_KEY = st.sampled_from(["RawShares", "MaxJobs", "GrpJobs", "GrpTRES",
                               "MaxWallDurationPerJob", "MaxTRESPerJob", "GrpSubmit"])


@FUZZ
@given(key=TOML_KEY, value=TOML_VALUE, akey=ACCOUNT_KEY, avalue=TOML_VALUE, mangled=MANGLE)
def test_toml_config(tmp_path, key, value, akey, avalue, mangled):
    text = (f"[priority]\n{key} = {value}\n[[account]]\nname = \"a\"\n{akey} = {avalue}\n")
    path = write(tmp_path, "site.toml", mangle(text, *mangled))
    result = {}
    err = failure(lambda: result.update(cfg=load_config(path)))
    if err is None:
        assert all(abs(v) <= MAX_MEMORY_MB for v in numbers_in(result["cfg"]))
    else:
        assert err.file == path


def numbers_in(obj, depth=0):
    """Every int and float held by ``obj`` (dataclasses, dicts, lists), a few levels deep."""
    if isinstance(obj, bool) or depth > 5:
        return
    if isinstance(obj, (int, float)):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from numbers_in(v, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from numbers_in(v, depth + 1)
    elif hasattr(obj, "__dataclass_fields__"):
        for name in obj.__dataclass_fields__:
            yield from numbers_in(getattr(obj, name), depth + 1)


# --------------------------------------------------------------------------- #SBATCH

SBATCH_OPTION = st.sampled_from(["-N", "--ntasks", "--time", "--mem", "--gres=gpu:",
                                 "--gpus-per-node", "--cpus-per-task", "--array",
                                 "--mem-per-gpu", "--switches", "--nodes", "--begin",
                                 "--nice", "--dependency=afterok:"])


@FUZZ
@given(options=st.lists(st.tuples(SBATCH_OPTION, FIELDS), max_size=2), bom=st.booleans(),
       mangled=MANGLE)
def test_sbatch_script(tmp_path, small_cluster, options, bom, mangled):
    lines = ["#!/bin/bash", "#SBATCH -t 10"] + [
        f"#SBATCH {o}{v}" if o.endswith(":") else f"#SBATCH {o}={v}" for o, v in options]
    text = ("\ufeff" if bom else "") + "\n".join(lines) + "\nsrun x\n"
    path = write(tmp_path, "job.sh", mangle(text, *mangled))
    result = {}
    err = failure(lambda: result.update(n=normalise(parse_script(path), small_cluster)))
    if err is None:
        n = result["n"]
        assert 1 <= n.num_nodes <= 4
        assert n.time_limit is None or 0 < n.time_limit <= MAX_SECONDS
        if n.time_limit is not None:
            err = failure(lambda: result.update(
                w=requests_to_workload([(n, 0, 10)], small_cluster)))
            assert err is not None or in_range(result["w"].jobs, 4) is None


# --------------------------------------------------------------------------- CLI arguments

CLI_OPTIONS = [("simulate", "--reserve-depth"), ("simulate", "--start-times"),
               ("simulate", "--procs"), ("simulate", "--window"), ("simulate", "--resolution"),
               ("simulate", "--segment"), ("simulate", "--order-period"),
               ("sprio", "--at"), ("run", "-N"), ("run", "-n"), ("run", "--master-port"),
               ("generate", "--jobs"), ("generate", "--seed"), ("generate", "--load")]


@settings(max_examples=72, deadline=None)
@given(option=st.sampled_from(CLI_OPTIONS), value=NUMBERS)
def test_cli_integer_arguments(option, value):
    from fastsched.cli import build_parser
    command, flag = option
    argv = {"simulate": ["simulate", "t.swf", flag, value],
            "sprio": ["sprio", "w.csv", "--cluster", "c", flag, value],
            "run": ["run", flag, value, "--", "true"],
            "generate": ["generate", "workload", "ai-mix", "--cluster", "c", "--jobs", "1",
                         "-o", "x", flag, value]}[command]
    try:
        args = build_parser(argv).parse_args(argv)
    except SystemExit as e:
        assert e.code == 2
        return
    values = [v for v in vars(args).values() if not isinstance(v, bool)]
    assert all(0 <= v <= max(MAX_COUNT, MAX_SECONDS) for v in values
               if isinstance(v, int) and v is not args.__dict__.get("seed"))
    assert all(np.isfinite(v) and v > 0 for v in values if isinstance(v, float))


def test_every_reader_refuses_a_directory(tmp_path):
    cluster = Cluster.homogeneous(2)
    for read in (read_swf, lambda p: read_workload(p, cluster), read_cluster, read_gres_conf,
                 lambda p: read_block_topology(p, ["n1"]), load_config, parse_script):
        assert isinstance(failure(lambda: read(tmp_path)), InputError), read


def test_fuzz_helpers_catch_what_they_should(tmp_path):
    # The fuzz tests above rely on these: an overflowed table fails in_range, a multi-line
    # error fails failure().
    from fastsched.model.jobs import JobTable
    bad = JobTable.from_arrays(job_id=[1], submit_time=[2**62], time_limit=[1], runtime=[0],
                               num_nodes=[1])
    with pytest.raises(AssertionError):
        in_range(bad)

    def two_lines():
        raise InputError("a\nb")
    with pytest.raises(AssertionError):
        failure(two_lines)
    with pytest.raises(argparse.ArgumentTypeError):
        failure(lambda: (_ for _ in ()).throw(argparse.ArgumentTypeError("x")))
