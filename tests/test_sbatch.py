"""Slurm request parsing and normalisation (fastsched.io.sbatch) and `fastsched sbatch`."""

import pytest

import fastsched as fs

from fastsched.model.cluster import Cluster
from fastsched.model.errors import InputError
from fastsched.model.jobs import UNLIMITED
from fastsched.tools.generate import ai_cluster
from fastsched.cli import build_parser
from fastsched.io.sbatch import (format_request, normalise, parse_args, parse_array,
                              parse_dependency, parse_memory, parse_script, to_job_request)
from fastsched.io.slurmconf import write_cluster



@pytest.fixture(scope="module")
def gpu8():
    """4 identical nodes: 112 CPUs, 8 h100 GPUs, 2,000,000 MB; one partition 'all'."""
    return Cluster.homogeneous(4, cpus=112, gpus=8, mem_mb=2_000_000, gpu_type="h100")


def norm(argv, cluster=None):
    return normalise(parse_args(argv), cluster)


# --------------------------------------------------------------------------- table

TABLE = [
    # argv, cluster?, expected fields
    (["-N", "2"], False, dict(num_nodes=2, max_nodes=2, num_tasks=2, cpus_per_node=1,
                              gpus_per_node=0)),
    (["--nodes=2-4", "-n", "3"], False, dict(num_nodes=2, max_nodes=3, num_tasks=3,
                                             tasks_per_node=2)),
    (["-N2", "--ntasks-per-node=4", "-c", "3"], False,
     dict(num_tasks=8, tasks_per_node=4, cpus_per_node=12)),
    (["--gres=gpu:h100:4", "-N", "3"], False, dict(gpus_per_node=4, gpu_type="h100",
                                                  gpus_total=12)),
    (["--gres=gpu"], False, dict(gpus_per_node=1, gpu_type="")),
    (["--gres=gpu:a100"], False, dict(gpus_per_node=1, gpu_type="a100")),
    (["--gres=gpu:2"], False, dict(gpus_per_node=2, gpu_type="")),
    (["-G", "16", "-N", "2"], False, dict(gpus_per_node=8, gpus_total=16)),
    (["--gpus=h100:16"], True, dict(num_nodes=2, gpus_per_node=8, gpu_type="h100")),
    (["--gpus-per-node", "4", "--cpus-per-gpu=10"], False, dict(cpus_per_node=40)),
    (["-n", "8", "--gpus-per-task=1", "-N", "2"], False, dict(tasks_per_node=4,
                                                             gpus_per_node=4)),
    (["-n", "16", "--gpus-per-task=1", "-c", "4"], True, dict(num_nodes=2, tasks_per_node=8,
                                                             gpus_per_node=8,
                                                             cpus_per_node=32)),
    (["-n", "300"], True, dict(num_nodes=3, tasks_per_node=100, cpus_per_node=100)),
    (["--gpus-per-node=2", "--mem-per-gpu=10G"], False, dict(mem_per_node=20480)),
    (["-n", "4", "--mem-per-cpu=100"], False, dict(mem_per_node=400)),
    (["--mem=4G"], False, dict(mem_per_node=4096)),
    (["--exclusive", "-N", "2"], True, dict(cpus_per_node=112, gpus_per_node=8,
                                            mem_per_node=0, exclusive="node")),
    (["--mem=0"], True, dict(mem_per_node=2_000_000, mem_all=True)),
    (["-p", "a,b", "-q", "high", "-A", "proj", "-C", "h100&ib"], False,
     dict(partitions=["a", "b"], qos="high", account="proj", constraint="h100&ib")),
    (["-t", "90", "--time-min=30"], False, dict(time_limit=5400, time_min=1800)),
    (["srun", "-N", "1", "python", "train.py", "-N", "9"], False, dict(num_nodes=1)),
]


@pytest.mark.parametrize("argv,with_cluster,expected", TABLE,
                         ids=[" ".join(t[0]) for t in TABLE])
def test_normalisation_table(argv, with_cluster, expected, gpu8):
    n = norm(argv, gpu8 if with_cluster else None)
    for key, value in expected.items():
        assert getattr(n, key) == value, key


def test_uneven_gpus_are_rounded_up_with_a_note():
    n = norm(["--gpus=12", "-N", "2"])
    assert n.gpus_per_node == 6
    n = norm(["--gpus=13", "-N", "2"])
    assert n.gpus_per_node == 7 and any("evenly" in x for x in n.notes)


def test_default_time_is_partition_max_time():
    n = norm(["-N", "1", "--exclusive"], ai_cluster("ai-8k"))
    assert n.partitions == ["batch"] and n.time_limit == 14 * 86_400
    n = norm(["-p", "interactive", "-t", "5:00:00"], ai_cluster("ai-8k"))
    assert any("MaxTime" in x for x in n.notes)


@pytest.mark.parametrize("text,seconds", [
    ("30", 1800), ("30:15", 1815), ("1:02:03", 3723), ("2-3", 2 * 86400 + 3 * 3600),
    ("2-3:04", 2 * 86400 + 3 * 3600 + 240), ("1-00:00:01", 86401),
    ("UNLIMITED", None), ("INFINITE", None), ("0", None)])
def test_time_formats(text, seconds):
    assert norm(["-t", text]).time_limit == seconds


@pytest.mark.parametrize("text", ["1:2:3:4", "x", "1-", "-5", "1.5"])
def test_bad_times(text):
    with pytest.raises(InputError, match="invalid time"):
        norm(["--time=" + text])


@pytest.mark.parametrize("text,mb", [("100", 100), ("100M", 100), ("2G", 2048), ("2g", 2048),
                                     ("1T", 1048576), ("1024K", 1), ("1025K", 2)])
def test_memory_units(text, mb):
    assert parse_memory(text) == mb


@pytest.mark.parametrize("text", ["1.5G", "10X", "G", "-1"])
def test_bad_memory(text):
    with pytest.raises(InputError, match="--mem"):
        norm(["--mem=" + text])


def test_dependencies():
    assert parse_dependency("afterok:20:21,afterany:23") == (
        [("afterok", ("20", "21")), ("afterany", ("23",))], "all")
    assert parse_dependency("afterok:20?afternotok:5_3") == (
        [("afterok", ("20",)), ("afternotok", ("5_3",))], "any")
    assert parse_dependency("after:7+10,singleton") == (
        [("after", ("7+10",)), ("singleton", ())], "all")
    for bad, msg in [("afterfoo:1", "unknown dependency type"), ("afterok:1,afterany:2?after:3",
                     "only one separator"), ("afterok", "expected afterok"),
                     ("afterok:x", "expected"), ("afterok:1+5", "expected"),
                     ("singleton:3", "no job ids")]:
        with pytest.raises(InputError, match=msg):
            parse_dependency(bad)


def test_unknown_dependency_names_the_option():
    with pytest.raises(InputError) as e:
        norm(["-d", "afterwards:1"])
    assert e.value.field == "-d" and "unknown dependency type 'afterwards'" in str(e.value)


def test_arrays():
    assert parse_array("0-15:4") == ([0, 4, 8, 12], None)
    assert parse_array("0,6,16-18%2") == ([0, 6, 16, 17, 18], 2)
    n = norm(["--array=1-3%1"])
    assert n.array == [1, 2, 3] and n.array_max_running == 1
    for bad in ["3-1", "1-5:0", "a", "1-5%0", "1-5%x", ""]:
        with pytest.raises(InputError):
            parse_array(bad)


# --------------------------------------------------------------------------- parsing

def test_option_spellings_are_equivalent():
    forms = [["--nodes=3"], ["--nodes", "3"], ["-N", "3"], ["-N3"], ["-N=3"]]
    assert {parse_args(f).options["nodes"] for f in forms} == {"3"}
    assert parse_args(["--tasks-per-node=2"]).options == {"ntasks-per-node": "2"}


def test_unknown_option_is_named():
    with pytest.raises(InputError, match="unknown option --frobnicate"):
        parse_args(["--frobnicate=3"])
    with pytest.raises(InputError, match="unknown option -Z"):
        parse_args(["-Z"])
    with pytest.raises(InputError, match="needs a value"):
        parse_args(["--time"])
    with pytest.raises(InputError, match="does not model"):
        parse_args(["--gpus-per-socket=1"])


def test_ignored_options_are_listed():
    n = norm(["-o", "out.txt", "--mail-type=END", "-N", "1"])
    assert n.ignored == ["--mail-type", "-o"]


SCRIPT = """#!/bin/bash
# leading comment
#SBATCH -N 2 --ntasks-per-node=4
#SBATCH --time=10:00   # ten minutes
#SBATCH -J "two words"
#SBATCH --partition=batch

echo start
#SBATCH --nodes=99
"""


def test_script_parsing_stops_at_first_command(tmp_path):
    p = tmp_path / "job.sh"
    p.write_text(SCRIPT)
    req = parse_script(p)
    assert req.options["nodes"] == "2" and req.options["job-name"] == "two words"
    n = normalise(req)
    assert (n.num_nodes, n.num_tasks, n.time_limit) == (2, 8, 600)


def test_command_line_overrides_script(tmp_path):
    p = tmp_path / "job.sh"
    p.write_text(SCRIPT)
    req = parse_script(p).merged(parse_args(["-N", "3", "-t", "5"]))
    n = normalise(req)
    assert (n.num_nodes, n.time_limit, n.partitions) == (3, 300, ["batch"])


def test_malformed_script_line_names_its_line(tmp_path):
    p = tmp_path / "bad.sh"
    p.write_text("#!/bin/sh\n#SBATCH -N 1\n\n#SBATCH --nodez=2\nhostname\n")
    with pytest.raises(InputError) as e:
        parse_script(p, strict=True)
    assert e.value.line == 4 and e.value.field == "--nodez" and str(p) in str(e.value)
    with pytest.warns(fs.ConfigWarning, match=f"{p}:4: --nodez: unknown sbatch option"):
        req = parse_script(p)                       # not strict: a warning, kept
    assert req.unknown == {"--nodez": "2"} and normalise(req).ignored == ["--nodez"]


PYXIS = """#!/bin/bash
#SBATCH -N 2 --gpus-per-node=8 -t 4:00:00
#SBATCH --container-image="nvcr.io#nvidia/pytorch:24.05-py3"  # quoted: '#' starts a comment
#SBATCH --container-mounts=/data:/data,/scratch:/scratch:ro --container-workdir /workspace
#SBATCH --container-name=train --no-container-mount-home --container-remap-root
#SBATCH --my-site-plugin fast -Y --another=1
srun python train.py
"""


def test_pyxis_options_kept_and_unknown_options_warned(tmp_path):
    import warnings
    p = tmp_path / "pyxis.sh"
    p.write_text(PYXIS)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        req = parse_script(p)
    messages = [str(w.message) for w in caught]
    assert messages == [f"{p}:6: --my-site-plugin: unknown sbatch option, kept but not "
                        "modelled (strict mode makes it an error)",
                        f"{p}:6: -Y: unknown sbatch option, kept but not modelled (strict "
                        "mode makes it an error)",
                        f"{p}:6: --another: unknown sbatch option, kept but not modelled "
                        "(strict mode makes it an error)"]
    assert all(issubclass(w.category, fs.ConfigWarning) for w in caught)
    n = normalise(req)
    assert (n.num_nodes, n.gpus_per_node, n.time_limit) == (2, 8, 4 * 3600)
    assert n.container == {"container-image": "nvcr.io#nvidia/pytorch:24.05-py3",
                           "container-mounts": "/data:/data,/scratch:/scratch:ro",
                           "container-workdir": "/workspace", "container-name": "train",
                           "no-container-mount-home": None, "container-remap-root": None}
    assert req.unknown == {"--my-site-plugin": "fast", "-Y": None, "--another": "1"}
    assert n.ignored == ["--another", "--my-site-plugin", "-Y"]
    assert any(line.startswith("Container(pyxis)=--container-image=nvcr.io#nvidia/pytorch")
               for line in format_request(n))
    with pytest.raises(InputError) as e:                       # strict: the first one
        parse_script(p, strict=True)
    assert (e.value.line, e.value.field) == (6, "--my-site-plugin")
    # the command line stays strict, as sbatch is; container flags take no value
    with pytest.raises(InputError, match="unknown option --my-site-plugin"):
        parse_args(["--my-site-plugin", "x"])
    with pytest.raises(InputError, match="--container-remap-root takes no value"):
        parse_args(["--container-remap-root=yes"])
    assert parse_args(["--container-image", "ubuntu", "job.sh"]).script == "job.sh"


def test_bad_value_in_script_names_line_at_normalise(tmp_path):
    p = tmp_path / "bad.sh"
    p.write_text("#!/bin/sh\n#SBATCH --gres=gpu:x:y\n")
    with pytest.raises(InputError) as e:
        normalise(parse_script(p))
    assert e.value.line == 2 and e.value.field == "--gres"
    assert f"{p}:2: field --gres: malformed --gres 'gpu:x:y'" in str(e.value)


def test_script_text_with_unterminated_quote():
    with pytest.raises(InputError, match="<script>:2: .*unterminated"):
        parse_script("#!/bin/sh\n#SBATCH -J 'oops\n")


# --------------------------------------------------------------------------- contradictions

@pytest.mark.parametrize("argv,match", [
    (["--gpus-per-task=1"], "requires a task count"),
    (["--mem=1G", "--mem-per-gpu=1G", "--gpus-per-node=1"], "mutually exclusive"),
    (["--mem=1G", "--mem-per-cpu=1G"], "mutually exclusive"),
    (["-N", "4", "-n", "2"], "fewer tasks than nodes"),
    (["--gres=gpu:x:y"], "malformed --gres"),
    (["--gres=gpu:a:b:1"], "malformed --gres"),
    (["--gres=gpu:1,gpu:2"], "gpu given twice"),
    (["--gpus=x:y:z"], "malformed"),
    (["-c", "2", "--cpus-per-gpu=2", "--gpus-per-node=1"], "mutually exclusive"),
    (["--gres=gpu:2", "--gpus-per-node=2"], "give one"),
    (["--cpus-per-gpu=4"], "without any GPUs"),
    (["--mem-per-gpu=4G"], "without any GPUs"),
    (["-G", "2", "-N", "4"], "leaves nodes without GPUs"),
    (["--gres=gpu:a100:1", "--gpus=h100:1"], "different GPU types"),
    (["-t", "10", "--time-min=20"], "longer than --time"),
    (["-N", "4-2"], "invalid node count"),
    (["-n", "0"], "at least 1"),
    (["--exclusive=bogus"], "invalid --exclusive"),
    (["-n", "2", "--gpus-per-task=1", "--gpus-per-node=3"], "contradicts"),
])
def test_contradictions_rejected(argv, match):
    with pytest.raises(InputError, match=match):
        norm(argv)


@pytest.mark.parametrize("argv,match", [
    (["--gpus-per-node=9"], "no node of partition"),
    (["-n", "2", "--gpus-per-task=9"], "largest node has"),
    (["-p", "nosuch"], "unknown partition"),
    (["--gres=gpu:a100:1"], "no node has GPU type 'a100'"),
    (["-N", "5"], "nodes requested"),
    (["--mem=3000000"], "MB per node"),
    (["-c", "113"], "CPUs per node"),
])
def test_rejected_against_cluster(argv, match, gpu8):
    with pytest.raises(InputError, match=match):
        norm(argv, gpu8)


# --------------------------------------------------------------------------- job request

def test_to_job_request(gpu8):
    n = norm(["-N", "2", "--exclusive", "-t", "1:00:00"], gpu8)
    job = to_job_request(n, job_id=7, submit_time=5)
    assert (job.job_id, job.submit_time, job.num_nodes, job.cpus_per_node, job.gpus_per_node,
            job.time_limit, job.runtime) == (7, 5, 2, 112, 8, 3600, 3600)
    unlimited = to_job_request(norm(["-t", "UNLIMITED"]), 1, 0)     # Slurm's INFINITE
    assert unlimited.time_limit == unlimited.runtime == UNLIMITED


# --------------------------------------------------------------------------- CLI

def run(capsys, *argv):
    args = build_parser(["sbatch"]).parse_args(["sbatch", *map(str, argv)])
    try:
        code = args.run(args)
    except InputError as e:
        code = 2
        print(f"fastsched: error: {e}")
    out, _ = capsys.readouterr()
    return code, out


@pytest.fixture
def script(tmp_path):
    p = tmp_path / "job.sh"
    p.write_text("#!/bin/bash\n#SBATCH -N 2\n#SBATCH -t 30\n#SBATCH -d afterok:11\nsrun x\n")
    return p


def test_cli_test_only_on_schedulable_cluster(capsys, tmp_path, script):
    conf = tmp_path / "slurm.conf"
    write_cluster(Cluster.homogeneous(4, cpus=8, gpus=4, mem_mb=1000), conf)
    code, out = run(capsys, "--test-only", "--cluster", conf, script, "--exclusive",
                    "--array=0-3%2")
    assert code == 0
    assert "NumNodes=2 NumTasks=2" in out
    assert "TRES=cpu=16,node=2,gres/gpu=8" in out
    assert "TimeLimit=00:30:00" in out and "Dependency=afterok:11" in out
    assert "ArrayTaskId=0-3%2" in out
    assert "expected start: 0 s after submission" in out


def test_cli_options_override_script(capsys, script):
    code, out = run(capsys, "--test-only", script, "-N", "3", "--gpus-per-node=8")
    assert code == 0 and "NumNodes=3" in out and "gres/gpu=24" in out
    assert "expected start: not computed" in out


def test_cli_gpu_cluster_uses_the_node_engine(capsys, script):
    code, out = run(capsys, "--test-only", "--cluster", "ai-8k", script, "--gpus-per-node=1")
    assert code == 0 and "TresPerNode=cpu=1,gres/gpu=1" in out
    assert "expected start: 0 s after submission" in out


def test_cli_without_test_only(capsys, script):
    code, out = run(capsys, script)
    assert code == 2 and "only --test-only is supported (fastsched does not run jobs)" in out


def test_cli_errors(capsys, script):
    code, out = run(capsys, "--test-only", script, "--gpus-per-task=1")
    assert code == 2 and "requires a task count" in out
    code, out = run(capsys, "--test-only")
    assert code == 2 and "no batch script" in out
    code, out = run(capsys, "--help")
    assert code == 0 and "usage: fastsched sbatch" in out


def test_byte_order_mark_keeps_the_sbatch_lines(tmp_path):
    p = tmp_path / "bom.sh"
    p.write_bytes(b"\xef\xbb\xbf#!/bin/bash\n#SBATCH -N 2\n#SBATCH --time=10\nsrun x\n")
    assert parse_script(p).options["nodes"] == "2"
    assert parse_script("\ufeff#!/bin/bash\n#SBATCH -N 3\n").options["nodes"] == "3"


@pytest.mark.parametrize("option, field", [
    ("--array=99999999999999999999999", "--array"),
    ("--ntasks=99999999999999999999999", "--ntasks"),
    ("--gres=gpu:99999999999999999999999", "--gres"),
    ("--time=99999999999-0", "--time"),
    ("--mem=99999999999999999999T", "--mem"),
])
def test_huge_sbatch_values_are_out_of_range(tmp_path, option, field):
    p = tmp_path / "big.sh"
    p.write_text(f"#!/bin/bash\n#SBATCH {option}\nsrun x\n")
    with pytest.raises(InputError, match="out of range") as e:
        normalise(parse_script(p))
    assert e.value.line == 2 and e.value.field == field


def test_dependency_on_a_job_id_beyond_64_bits_is_an_input_error():
    with pytest.raises(InputError, match="job id out of range"):
        parse_dependency("afterok:" + "9" * 30)


def test_cli_sbatch_container_and_strict(tmp_path, capsys):
    from fastsched.cli import main
    p = tmp_path / "job.sh"
    p.write_text("#!/bin/bash\n#SBATCH -N 1 --container-image=ubuntu:24.04\n"
                 "#SBATCH --frobnicate=3\nhostname\n")
    assert main(["sbatch", "--test-only", str(p)]) == 0
    captured = capsys.readouterr()
    assert "Container(pyxis)=--container-image=ubuntu:24.04" in captured.out
    assert "Ignored(not modelled)=--frobnicate" in captured.out
    assert f"fastsched: warning: {p}:3: --frobnicate: unknown sbatch option" in captured.err
    assert main(["sbatch", "--test-only", "--strict", str(p)]) == 2
    assert f"{p}:3: field --frobnicate: unknown option --frobnicate" in capsys.readouterr().err
