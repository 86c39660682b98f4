"""--exclusive=topo from the outside: the workload CSV's ``exclusive`` column, sbatch
requests (requests_to_workload) and ``fastsched simulate --exclusive-topo``."""
import csv

import numpy as np
import pytest

import fastsched as fs
from fastsched.cli import main
from fastsched.model.errors import InputError
from fastsched.io.sbatch import normalise, parse_args
from fastsched.io.workload import read_workload, requests_to_workload, write_workload

HEADER = ("job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,cpus_per_node,"
          "mem_per_node,partition,user,account")
# job 1 (2 nodes, --exclusive=topo) holds block {n0-n3}; job 2 fills block {n4-n7}; job 3
# (1 GPU) waits until job 1 ends at 30, then takes n0
ROWS = ["1,0,30,30,2,4,1,0,batch,u,a,topo", "2,0,50,50,4,4,1,0,batch,u,a,",
        "3,1,10,10,1,1,1,0,batch,u,a,"]


@pytest.fixture
def cluster():
    return fs.Cluster([f"n{i}" for i in range(8)], [8] * 8, [4] * 8, [0] * 8,
                      partitions=[fs.Partition("batch", np.arange(8))],
                      default_partition="batch")


def _write(tmp_path, rows, name="jobs.csv"):
    path = tmp_path / name
    path.write_text(HEADER + ",exclusive\n" + "\n".join(rows) + "\n")
    return path


def test_exclusive_column_reads_writes_and_rejects_other_spellings(tmp_path, cluster):
    w = read_workload(_write(tmp_path, ROWS), cluster)
    assert w.exclusive_topo.tolist() == [True, False, False]
    write_workload(w, cluster, tmp_path / "again.csv")
    assert read_workload(tmp_path / "again.csv", cluster).exclusive_topo.tolist() == \
        [True, False, False]
    plain = tmp_path / "plain.csv"
    plain.write_text(HEADER + "\n" + "1,0,30,30,2,4,1,0,batch,u,a\n")
    assert not read_workload(plain, cluster).exclusive_topo.any()
    write_workload(read_workload(plain, cluster), cluster, tmp_path / "plain2.csv")
    assert "exclusive" not in (tmp_path / "plain2.csv").read_text()
    bad = _write(tmp_path, ROWS[:2] + ["3,1,10,10,1,1,1,0,batch,u,a,node"], "bad.csv")
    with pytest.raises(InputError) as e:
        read_workload(bad, cluster)
    assert (e.value.file, e.value.line, e.value.field) == (str(bad), 4, "exclusive")
    assert "'node'" in str(e.value)


def test_array_tasks_inherit_the_flag(tmp_path, cluster):
    path = tmp_path / "a.csv"
    path.write_text(HEADER + ",array,exclusive\n1,0,30,30,1,4,1,0,batch,u,a,0-2,topo\n"
                    "9,0,30,30,1,4,1,0,batch,u,a,,\n")
    assert read_workload(path, cluster).exclusive_topo.tolist() == [True, True, True, False]


def test_sbatch_request_carries_exclusive_topo(cluster):
    argvs = [["-N", "2", "--gpus-per-node=4", "-t", "1", "--exclusive=topo"],
             ["-N", "1", "--gpus-per-node=1", "-t", "1"]]
    norms = [normalise(parse_args(a), cluster) for a in argvs]
    assert norms[0].exclusive == "topo"
    assert not any("not modelled" in n for n in norms[0].notes)
    w = requests_to_workload([(n, 0, 60) for n in norms], cluster)
    assert w.exclusive_topo.tolist() == [True, False]
    assert "not modelled" in " ".join(normalise(parse_args(["--exclusive=user"]), cluster).notes)


def _files(tmp_path, cluster):
    """slurm.conf, a two-block topology.conf, the workload with its 'exclusive' column
    and the same workload without flags."""
    conf = tmp_path / "slurm.conf"
    fs.write_cluster(cluster, conf)
    blocks = tmp_path / "topology.conf"
    blocks.write_text("BlockName=b0 Nodes=n[0-3]\nBlockName=b1 Nodes=n[4-7]\n")
    column = _write(tmp_path, ROWS)
    flagless = _write(tmp_path, [r.rsplit(",", 1)[0] + "," for r in ROWS], "flagless.csv")
    return conf, blocks, column, flagless


def test_simulate_cli_models_exclusive_topo(tmp_path, cluster, capsys):
    conf, blocks, column, flagless = _files(tmp_path, cluster)
    base = ["--cluster", str(conf), "--topology", "block", "--block-topology", str(blocks)]
    for jobs, extra in ((column, []), (flagless, ["--exclusive-topo"])):
        out = tmp_path / "out.csv"
        assert main(["simulate", str(jobs), *base, *extra, "--jobs-out", str(out)]) == 0
        rows = {int(r["job_id"]): r for r in csv.DictReader(open(out))}
        assert [(int(rows[j]["start_time"]), rows[j]["nodes"]) for j in (1, 2, 3)] == \
            [(0, "n[0-1]"), (0, "n[4-7]"), (30, "n0")]
    out = tmp_path / "out.csv"
    assert main(["simulate", str(flagless), *base, "--jobs-out", str(out)]) == 0
    assert {int(r["job_id"]): r["start_time"] for r in csv.DictReader(open(out))}[3] == "1"
    capsys.readouterr()
    assert main(["simulate", str(column), "--cluster", str(conf), "--exclusive-topo"]) == 2
    assert "need --topology" in capsys.readouterr().err
    assert main(["simulate", str(column), "--cluster", str(conf)]) == 0
    assert "--exclusive=topo, which needs --topology" in capsys.readouterr().out


def test_check_cli_finds_a_job_on_an_exclusive_block(tmp_path, cluster, capsys):
    conf, blocks, column, flagless = _files(tmp_path, cluster)
    topo = ["--topology", "block", "--block-topology", str(blocks)]
    honoured, ignored = tmp_path / "honoured.csv", tmp_path / "ignored.csv"
    assert main(["simulate", str(column), "--cluster", str(conf), *topo,
                 "--jobs-out", str(honoured)]) == 0
    # without the flag job 3 starts at 1 next to job 1 (in its block)
    assert main(["simulate", str(flagless), "--cluster", str(conf), *topo,
                 "--jobs-out", str(ignored)]) == 0
    capsys.readouterr()
    check = ["check", "--trace", str(column), "--cluster", str(conf)]
    assert main([*check, str(honoured), *topo]) == 0
    assert main([*check, str(ignored), *topo]) == 1
    assert "exclusive_topo" in capsys.readouterr().out
    # the same schedule against the flagless workload: nothing to check, and it is fine
    assert main(["check", "--trace", str(flagless), "--cluster", str(conf), str(ignored),
                 *topo]) == 0
    # --exclusive-topo marks every multi-node job, as in simulate
    assert main(["check", "--trace", str(flagless), "--cluster", str(conf), str(ignored),
                 *topo, "--exclusive-topo"]) == 1
    capsys.readouterr()
    assert main([*check, str(honoured), "--exclusive-topo"]) == 2
    assert "need --topology" in capsys.readouterr().err
