"""The ``fastsched`` command, called in-process through ``fastsched.cli.main``."""
import csv
import json
import subprocess

import pytest

from fastsched.cli import main
from fastsched.sim.results import RECORD_COLUMNS


def swf_line(job, submit, run, procs, limit):
    f = [job, submit, -1, run, procs, -1, -1, procs, limit, -1, 1, -1, -1, -1, -1, -1, -1, -1]
    return " ".join(str(x) for x in f)


# 4 processors. EASY protects only the head (job 2): job 4 backfills at 3 and delays
# job 3 to 33. Conservative protects job 3 too (job 4 waits until 30); FCFS backfills
# nothing. Job 5 asks for more than the machine and is skipped.
EXPECTED_STARTS = {
    "fcfs": {1: 0, 2: 10, 3: 20, 4: 30},
    "easy": {1: 0, 2: 10, 3: 33, 4: 3},
    "conservative": {1: 0, 2: 10, 3: 20, 4: 30},
}


@pytest.fixture
def trace(tmp_path):
    lines = ["; Version: 2.2", "; MaxProcs: 4",
             swf_line(1, 0, 10, 3, 10),
             swf_line(2, 1, 10, 3, 10),
             swf_line(3, 2, 10, 4, 10),
             swf_line(4, 3, 30, 1, 30),
             swf_line(5, 4, 5, 9, 10)]
    p = tmp_path / "tiny.swf"
    p.write_text("\n".join(lines) + "\n")
    return p


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def simulate_to(capsys, trace, tmp_path, policy):
    csv_path = tmp_path / f"{policy}.csv"
    json_path = tmp_path / f"{policy}.json"
    code, out, err = run(capsys, "simulate", trace, "--policy", policy,
                         "--jobs-out", csv_path, "--summary-json", json_path)
    assert code == 0, err
    return csv_path, json_path, out


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# --------------------------------------------------------------------------- simulate

def test_simulate_writes_csv_and_json(capsys, trace, tmp_path):
    csv_path, json_path, out = simulate_to(capsys, trace, tmp_path, "easy")
    assert "policy easy" in out
    assert "skipped 1 job" in out and "job 5" in out
    assert "wrote 4 job records" in out
    with open(csv_path, newline="") as f:
        header = next(csv.reader(f))
    assert header == RECORD_COLUMNS
    rows = read_csv(csv_path)
    assert sorted(int(r["job_id"]) for r in rows) == [1, 2, 3, 4]
    for r in rows:
        assert int(r["end_time"]) == int(r["start_time"]) + int(r["run_time"])
        assert r["state"] == "COMPLETED"
        assert r["nodes"].startswith("node")
    summary = json.loads(json_path.read_text())
    assert summary["jobs"] == 4
    assert summary["skipped"] == 1
    assert summary["policy"] == "easy"
    assert isinstance(summary["sim_seconds"], float)
    assert isinstance(summary["semantics"], dict) and "queue_order" in summary["semantics"]


@pytest.mark.parametrize("option, method", [("--jobs-out", "to_csv"),
                                             ("--summary-json", "summary_json")])
def test_interrupted_write_leaves_no_truncated_file(capsys, trace, tmp_path, monkeypatch,
                                                    option, method):
    from fastsched.sim.results import SimulationResult
    target = tmp_path / "out.csv.gz"

    def write_then_fail(self, path):
        with open(path, "w") as f:
            f.write("job_id,submit_time\n1,")         # half a record
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(SimulationResult, method, write_then_fail)
    assert run(capsys, "simulate", trace, option, target)[0] == 2
    assert not target.exists()
    target.write_text("old\n")
    code, _, err = run(capsys, "simulate", trace, option, target)
    assert code == 2 and "No space left on device" in err and str(target) in err
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv.gz", "tiny.swf"]
    monkeypatch.undo()
    assert run(capsys, "simulate", trace, option, target)[0] == 0
    assert target.read_bytes() != b"old\n"


def test_policies_differ(capsys, trace, tmp_path):
    for policy, expected in EXPECTED_STARTS.items():
        csv_path, json_path, _ = simulate_to(capsys, trace, tmp_path, policy)
        starts = {int(r["job_id"]): int(r["start_time"]) for r in read_csv(csv_path)}
        assert starts == expected, policy
        assert json.loads(json_path.read_text())["policy"] == policy
    assert EXPECTED_STARTS["easy"] != EXPECTED_STARTS["fcfs"]


def test_simulate_reserve_depth_changes_easy(capsys, trace, tmp_path):
    csv_path = tmp_path / "d2.csv"
    code, _, err = run(capsys, "simulate", trace, "--policy", "easy", "--reserve-depth", "2",
                       "--jobs-out", csv_path)
    assert code == 0, err
    starts = {int(r["job_id"]): int(r["start_time"]) for r in read_csv(csv_path)}
    assert starts == EXPECTED_STARTS["conservative"]


def test_simulate_strict_rejects_skipped_job(capsys, trace):
    code, out, err = run(capsys, "simulate", trace, "--strict")
    assert code == 2
    assert f"{trace}:7" in err and "job 5" in err
    assert "Traceback" not in err


# --------------------------------------------------------------------------- check

def test_check_passes_then_catches_overcommit(capsys, trace, tmp_path):
    csv_path, _, _ = simulate_to(capsys, trace, tmp_path, "easy")
    code, out, err = run(capsys, "check", csv_path, "--trace", trace, "--policy", "easy")
    assert code == 0, out + err
    assert out.startswith("ok")

    # job 3 (all 4 nodes, [33, 43)) moved to [25, 35): overlaps job 4 ([3, 33))
    rows = read_csv(csv_path)
    for r in rows:
        if r["job_id"] == "3":
            r["start_time"], r["end_time"] = "25", "35"
    bad = tmp_path / "bad.csv"
    with open(bad, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=RECORD_COLUMNS)
        w.writeheader()
        w.writerows(rows)
    code, out, err = run(capsys, "check", bad, "--trace", trace, "--policy", "easy")
    assert code == 1
    assert "overcommit" in out
    assert "job 3" in out


def test_check_without_policy_catches_overcommit(capsys, trace, tmp_path):
    csv_path, _, _ = simulate_to(capsys, trace, tmp_path, "fcfs")
    code, out, _ = run(capsys, "check", csv_path, "--trace", trace)
    assert code == 0 and "ok" in out
    text = csv_path.read_text().splitlines()
    # move job 4 ([30, 60) on node001) back to [25, 55): overlaps job 3 ([20, 30), all nodes)
    text = [",".join(["4", "3", "25", "55"] + ln.split(",")[4:]) if ln.startswith("4,") else ln
            for ln in text]
    csv_path.write_text("\n".join(text) + "\n")
    code, out, _ = run(capsys, "check", csv_path, "--trace", trace)
    assert code == 1
    assert "overcommit" in out and "node001" in out


def test_check_missing_job(capsys, trace, tmp_path):
    csv_path, _, _ = simulate_to(capsys, trace, tmp_path, "easy")
    lines = csv_path.read_text().splitlines()
    short = tmp_path / "short.csv"
    short.write_text("\n".join(lines[:-1]) + "\n")     # drop the last job
    code, out, err = run(capsys, "check", short, "--trace", trace)
    assert code == 2
    assert str(short) in err
    assert "no record" in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


# --------------------------------------------------------------------------- demo, bench

def test_demo(capsys):
    code, out, err = run(capsys, "demo")
    assert code == 0, err
    for policy in ("fcfs", "easy", "conservative"):
        assert policy in out
    assert "ok" in out
    assert "28,475 jobs" in out


def test_bench(capsys):
    code, out, err = run(capsys, "bench", "kth-easy", "--repeat", "1")
    assert code == 0, err
    assert "easy_median_ms" in out
    assert "conservative_median_ms" in out


# --------------------------------------------------------------------------- errors

def test_malformed_line(capsys, tmp_path):
    p = tmp_path / "bad.swf"
    p.write_text("; MaxProcs: 4\n" + swf_line(1, 0, 10, 2, 10) + "\n"
                 + swf_line(2, 1, 10, 2, 10).replace(" 2 -1 -1 2 ", " x -1 -1 2 ", 1) + "\n")
    code, out, err = run(capsys, "simulate", p)
    assert code == 2
    assert f"{p}:3" in err
    assert "field 5 (allocated_processors)" in err
    assert "'x'" in err
    assert "Traceback" not in err
    assert err.startswith("fastsched: error:")


def test_missing_file(capsys, tmp_path):
    missing = tmp_path / "nope.swf"
    code, out, err = run(capsys, "simulate", missing)
    assert code == 2
    assert str(missing) in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("fastsched: error:")


def test_missing_trace_for_check(capsys, trace, tmp_path):
    csv_path, _, _ = simulate_to(capsys, trace, tmp_path, "easy")
    code, _, err = run(capsys, "check", csv_path, "--trace", tmp_path / "nope.swf")
    assert code == 2
    assert "nope.swf" in err and len(err.strip().splitlines()) == 1


def test_unknown_policy_is_usage_error(capsys, trace):
    with pytest.raises(SystemExit) as ei:
        main(["simulate", str(trace), "--policy", "sjf"])
    assert ei.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice" in err and "sjf" in err


@pytest.mark.parametrize("argv", [[], ["simulate"], ["demo"], ["check"], ["bench"], ["sweep"],
                                  ["plot"]])
def test_help(capsys, argv):
    with pytest.raises(SystemExit) as ei:
        main(argv + ["--help"])
    assert ei.value.code == 0
    out = capsys.readouterr().out
    assert "usage: fastsched" in out


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "usage: fastsched" in capsys.readouterr().out


def test_entry_point_help():
    p = subprocess.run(["fastsched", "--help"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "usage: fastsched" in p.stdout
    for cmd in ("simulate", "demo", "check", "bench"):
        assert cmd in p.stdout


def test_simulate_workload_csv_on_a_slurm_conf(tmp_path, capsys):
    """generate -> files -> simulate: whole-node GPU jobs on a homogeneous cluster."""
    import fastsched as fs
    conf = tmp_path / "slurm.conf"
    cluster = fs.Cluster.homogeneous(16, cpus=112, gpus=8, mem_mb=2_000_000, prefix="gpu")
    fs.write_cluster(cluster, conf)
    w = fs.ai_mix(fs.ai_cluster("ai-8k"), 400, seed=3)
    keep = (w.jobs.gpus_per_node == 8) & (w.jobs.num_nodes <= 16)
    jobs = w.jobs.take(keep)
    jobs.partition[:] = 0
    whole = fs.Workload(jobs, w.account[keep], w.user_names, w.account_names,
                        w.org_of_account, w.org_names)
    csv = tmp_path / "jobs.csv"
    fs.write_workload(whole, cluster, csv)
    out = tmp_path / "out.csv"
    assert main(["simulate", str(csv), "--cluster", str(conf), "--policy", "conservative",
                 "--jobs-out", str(out)]) == 0
    assert f"{int(keep.sum()):,}" in capsys.readouterr().out
    assert main(["check", str(out), "--trace", str(csv), "--cluster", str(conf),
                 "--policy", "conservative"]) == 0


def test_simulate_workload_csv_needs_cluster_and_runs_gpu_granular(tmp_path, capsys):
    """ai-mix (1-GPU jobs, two partitions) goes to the node engine; check accepts it,
    and judges its easy by the nodes model (the counts model needs identical nodes)."""
    import fastsched as fs
    cluster = fs.ai_cluster("ai-8k")
    jobs_csv = tmp_path / "jobs.csv"
    fs.write_workload(fs.ai_mix(cluster, 200, seed=1), cluster, jobs_csv)
    assert main(["simulate", str(jobs_csv)]) == 2
    assert "needs --cluster" in capsys.readouterr().err
    conf = tmp_path / "slurm.conf"
    fs.write_cluster(cluster, conf)
    out = tmp_path / "out.csv"
    assert main(["simulate", str(jobs_csv), "--cluster", str(conf), "--jobs-out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "nodes" in text and "GPU utilisation" in text
    rows = list(csv.DictReader(open(out)))
    assert len(rows) == 200 and all("(IDX:" in r["gpu_ids"] for r in rows)
    assert main(["check", str(out), "--trace", str(jobs_csv), "--cluster", str(conf)]) == 0
    capsys.readouterr()
    assert main(["check", str(out), "--trace", str(jobs_csv), "--cluster", str(conf),
                 "--policy", "easy"]) == 0
    assert "easy(reserve_depth=1) (nodes model)" in capsys.readouterr().out
    assert main(["check", str(out), "--trace", str(jobs_csv), "--cluster", str(conf),
                 "--policy", "easy", "--reservations", "counts"]) == 2
    assert "homogeneous" in capsys.readouterr().err


SITE_WORKLOAD = """job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,cpus_per_node,\
mem_per_node,partition,user,account,dependency,array
1,0,100,100,2,8,8,0,batch,alice,physics,,
2,0,100,50,1,4,4,0,batch,bob,physics,afterok:1,
3,5,100,50,1,2,2,0,"batch,debug",carol,biology,,0-3%2
10,6,100,200,1,8,8,0,batch,bob,physics,afternotok:1,
"""

SITE_CONFIG = """
[priority]
PriorityWeightFairshare = 1000
PriorityCalcPeriod = "1"

[[account]]
name = "physics"
users = ["alice", "bob"]

[[account]]
name = "biology"
users = ["carol"]
MaxJobs = 1
"""


@pytest.fixture
def site(tmp_path):
    """4 nodes x 8 GPUs on two leaf switches; partitions batch (all) and debug (node 3)."""
    import numpy as np
    import fastsched as fs
    cluster = fs.Cluster([f"gpu{i}" for i in range(1, 5)], [64] * 4, [8] * 4, [0] * 4,
                         partitions=[fs.Partition("batch", np.arange(4)),
                                     fs.Partition("debug", np.array([3]))],
                         topology={"leaf": np.array([0, 0, 1, 1]), "spine": np.zeros(4)})
    conf = tmp_path / "slurm.conf"
    fs.write_cluster(cluster, conf)
    jobs = tmp_path / "jobs.csv"
    jobs.write_text(SITE_WORKLOAD)
    cfg = tmp_path / "site.toml"
    cfg.write_text(SITE_CONFIG)
    gres = tmp_path / "gres.conf"
    gres.write_text("Name=gpu File=/dev/nvidia[0-3] Cores=0-31\n"
                    "Name=gpu File=/dev/nvidia[4-7] Cores=32-63\n")
    return conf, jobs, cfg, gres


def test_simulate_a_site_with_constraints_topology_and_limits(site, tmp_path, capsys):
    conf, jobs, cfg, gres = site
    out = tmp_path / "out.csv"
    assert main(["simulate", str(jobs), "--cluster", str(conf), "--config", str(cfg),
                 "--topology", "tree", "--switches", "1@60", "--gres-conf", str(gres),
                 "--resolution", "5", "--jobs-out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "placement:" in text and "never started: 1 job(s): DependencyNeverSatisfied 1" in text
    rows = {int(r["job_id"]): r for r in csv.DictReader(open(out))}
    assert len(rows) == 7                                   # job 3's array: 4 tasks
    assert rows[1]["nodes"] in ("gpu[1-2]", "gpu[3-4]")     # one leaf switch
    assert int(rows[2]["start_time"]) == 100                # afterok:1
    assert rows[10]["state"] == "PENDING" and rows[10]["reason"] == "DependencyNeverSatisfied"
    assert rows[10]["start_time"] == rows[10]["end_time"] == rows[10]["wait_time"] == ""
    tasks = sorted(int(rows[j]["start_time"]) for j in (3, 4, 5, 6))
    assert tasks[1] >= 55             # biology MaxJobs=1: one task at a time
    assert all(r["priority"] != "" for j, r in rows.items() if j != 10)
    assert main(["check", str(out), "--trace", str(jobs), "--cluster", str(conf),
                 "--config", str(cfg)]) == 0
    assert "dependencies" in capsys.readouterr().out


def test_simulate_site_options_bad_input(site, capsys):
    conf, jobs, cfg, gres = site
    assert main(["simulate", str(jobs), "--cluster", str(conf), "--switches", "2"]) == 2
    assert "need --topology" in capsys.readouterr().err
    assert main(["simulate", str(jobs), "--cluster", str(conf), "--topology", "tree",
                 "--switches", "x@1"]) == 2
    assert "K[@TIME]" in capsys.readouterr().err
    assert main(["simulate", str(jobs), "--cluster", str(conf), "--topology", "block"]) == 2
    assert "--block-topology" in capsys.readouterr().err


def test_simulate_with_a_research_order(capsys, tmp_path):
    """One processor, job 1 runs 0-100; job 2 (50 s) then job 3 (10 s) wait: FCFS runs
    job 2 first, SJF job 3."""
    trace = tmp_path / "one.swf"
    trace.write_text("\n".join(["; MaxProcs: 1", swf_line(1, 0, 100, 1, 100),
                                swf_line(2, 1, 50, 1, 50), swf_line(3, 2, 10, 1, 10)]) + "\n")
    starts = {}
    for order in ("fcfs", "sjf"):
        out = tmp_path / f"{order}.csv"
        assert main(["simulate", str(trace), "--policy", "fcfs", "--order", order,
                     "--jobs-out", str(out)]) == 0
        starts[order] = {int(r["job_id"]): int(r["start_time"]) for r in csv.DictReader(open(out))}
    assert starts["fcfs"] == {1: 0, 2: 100, 3: 150}
    assert starts["sjf"] == {1: 0, 2: 110, 3: 100}
    capsys.readouterr()
    assert main(["simulate", str(trace), "--order", "nope"]) == 2
    assert "unknown research order" in capsys.readouterr().err


SMALL_CONF = ("NodeName=n[1-4] CPUs=8 RealMemory=1000 Gres=gpu:4\n"
              "PartitionName=p Nodes=ALL Default=YES MaxTime=1-0\n")
CSV_HEADER = ("job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,cpus_per_node,"
              "mem_per_node,partition,user,account\n")


@pytest.fixture
def small(tmp_path):
    """(slurm.conf of 4 nodes, a workload CSV whose job 2 asks for 20 nodes)."""
    conf = tmp_path / "slurm.conf"
    conf.write_text(SMALL_CONF)
    csv_path = tmp_path / "jobs.csv"
    csv_path.write_text(CSV_HEADER + "1,0,100,50,1,1,1,10,p,u,a\n2,5,100,50,20,1,1,10,p,u,a\n"
                        "3,6,100,50,4,4,8,1000,p,u,a\n")
    return conf, csv_path


def test_oversized_csv_job_is_skipped_and_listed(capsys, small, tmp_path):
    conf, csv_path = small
    out = tmp_path / "out.csv"
    code, stdout, _ = run(capsys, "simulate", csv_path, "--cluster", conf, "--no-progress",
                          "--jobs-out", out)
    assert code == 0
    assert "job 2 (line 3): needs 20 node(s)" in stdout
    assert [r["job_id"] for r in read_csv(out)] == ["1", "3"]
    code, _, err = run(capsys, "simulate", csv_path, "--cluster", conf, "--strict")
    assert code == 2 and f"{csv_path}:3: field num_nodes: job 2 can never run" in err
    assert run(capsys, "check", out, "--trace", csv_path, "--cluster", conf)[0] == 0


@pytest.mark.parametrize("argv, message", [
    (["--reserve-depth", "99999999999999999999999"], "--reserve-depth: must be <="),
    (["--start-times", "99999999999999999999999"], "--start-times: must be <="),
    (["--window", str(2**63)], "--window: must be <="),
])
def test_huge_integer_options_are_usage_errors(capsys, small, argv, message):
    conf, csv_path = small
    with pytest.raises(SystemExit) as e:
        main(["simulate", str(csv_path), "--cluster", str(conf), *argv])
    assert e.value.code == 2 and message in capsys.readouterr().err


def test_procs_beyond_any_machine_is_refused(capsys, trace):
    with pytest.raises(SystemExit):
        main(["simulate", str(trace), "--procs", str(2**63)])
    assert "--procs: must be <=" in capsys.readouterr().err


def test_cluster_with_an_swf_trace_is_refused(capsys, trace, small):
    code, _, err = run(capsys, "simulate", trace, "--cluster", small[0])
    assert code == 2 and "--cluster is for workload CSVs" in err


def test_truncated_gz_workload_is_an_input_error(capsys, small, tmp_path):
    import gzip
    conf, csv_path = small
    bad = tmp_path / "jobs.csv.gz"
    bad.write_bytes(gzip.compress(csv_path.read_bytes())[:40])
    code, _, err = run(capsys, "simulate", bad, "--cluster", conf)
    assert code == 2 and f"{bad}: cannot decompress" in err


# (a huge integer limit is Slurm's UNLIMITED, not an error: tests/test_unlimited.py)
@pytest.mark.parametrize("cell, message", [("1e30", "'1e+30' is out of range")])
def test_absurd_csv_times_are_errors(capsys, small, tmp_path, cell, message):
    conf, _ = small
    bad = tmp_path / "bad.csv"
    bad.write_text(CSV_HEADER + f"1,0,{cell},50,1,1,1,10,p,u,a\n")
    code, _, err = run(capsys, "simulate", bad, "--cluster", conf)
    assert code == 2 and f"{bad}:2: field time_limit: " in err and message in err


def test_sprio_at_beyond_any_time_is_a_usage_error(capsys, small):
    conf, csv_path = small
    with pytest.raises(SystemExit):
        main(["sprio", str(csv_path), "--cluster", str(conf), "--at", "9" * 23])
    assert "out of range" in capsys.readouterr().err


def test_check_with_a_truncated_gz_schedule_is_an_input_error(capsys, trace, tmp_path):
    import gzip
    bad = tmp_path / "jobs.csv.gz"
    bad.write_bytes(gzip.compress(b"job_id,start_time\n" * 50)[:30])
    code, _, err = run(capsys, "check", bad, "--trace", trace)
    assert code == 2 and f"{bad}: not a jobs CSV" in err


def test_check_judges_a_schedule_by_the_reservation_model_it_was_planned_with(
        tmp_path, capsys):
    """A node-engine schedule (concrete-node reservations) of an SWF trace is judged
    by the nodes model, a pool-engine one by the counts model, both passing; the
    model travels in the records' planning column and the result line names it.
    --reservations overrides it; over the nodes check's size limit, exit 3."""
    import gzip
    from fastsched.io.swf import bundled_trace
    with gzip.open(bundled_trace("KTH-SP2"), "rt") as f:
        lines = f.read().splitlines()
    header = [ln for ln in lines if ln.startswith(";")]
    body = [ln for ln in lines if ln.strip() and not ln.startswith(";")][:1500]
    trace = tmp_path / "kth.swf"
    trace.write_text("\n".join(header + body) + "\n")
    for extra, planning in ((["--window", "1000000000"], "nodes"), ([], "counts")):
        out = tmp_path / f"{planning}.csv"
        assert main(["simulate", str(trace), "--policy", "conservative", "--no-progress",
                     "--jobs-out", str(out), *extra]) == 0
        with open(out) as f:
            assert {r["planning"] for r in csv.DictReader(f)} == {planning}
        capsys.readouterr()
        assert main(["check", str(out), "--trace", str(trace),
                     "--policy", "conservative"]) == 0
        assert f"conservative ({planning} model)" in capsys.readouterr().out
    check = ["check", str(tmp_path / "counts.csv"), "--trace", str(trace), "--policy", "easy"]
    assert main(check + ["--reservations", "nodes"]) in (0, 1)
    assert "easy(reserve_depth=1) (nodes model)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        main(check + ["--reservations", "slurm"])
    assert e.value.code == 2 and "--reservations" in capsys.readouterr().err


def test_check_over_the_nodes_model_size_limit_exits_3(tmp_path, capsys, monkeypatch,
                                                       trace):
    """A check too big to run is not run: NOT CHECKED with the reason, exit 3."""
    from fastsched.verify import nodes_policy
    out = tmp_path / "jobs.csv"
    assert main(["simulate", str(trace), "--policy", "easy", "--no-progress", "--window",
                 "1000000000", "--jobs-out", str(out)]) == 0
    monkeypatch.setattr(nodes_policy, "work_estimate", lambda *a: 10**15)
    code, said, _ = run(capsys, "check", out, "--trace", trace, "--policy", "easy")
    assert code == 3 and "NOT CHECKED: easy(reserve_depth=1) (nodes model)" in said
    assert "over the limit" in said and "--node-check-limit 0" in said
    code, said, _ = run(capsys, "check", out, "--trace", trace, "--policy", "easy",
                        "--node-check-limit", "0")
    assert code == 0 and "easy(reserve_depth=1) (nodes model)" in said
