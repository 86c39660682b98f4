"""What Slurm did vs a policy (``fs.replay_report``, ``fastsched replay-report``). A
schedule written as sacct records and replayed under the policy that made it gives
back the same starts (pool engine); a dump's recorded side is each job's last run."""
from __future__ import annotations

import numpy as np
import pytest

import fastsched as fs
from fastsched.cli import main
from fastsched.sim.replay import recorded_schedule
from fastsched.sim.results import summarize

CONF = """\
NodeName=c[01-04] CPUs=8 RealMemory=64000
PartitionName=cpu Nodes=c[01-04] Default=YES MaxTime=2-0
"""
HEADER = ("JobID|JobIDRaw|User|Account|Partition|QOS|Submit|Eligible|Start|End|Timelimit|"
          "ReqTRES|AllocTRES|NNodes|NodeList|State|ExitCode")
ROWS = [
    # requeued: the first run ended by the requeue, the second completed
    "103|103|dave|phys|cpu|normal|2024-03-01T09:00:00|2024-03-01T09:00:00|2024-03-01T09:00:10|"
    "2024-03-01T09:10:00|UNLIMITED|cpu=1,node=1|cpu=1,node=1|1|c03|REQUEUED|0:0",
    "103|103|dave|phys|cpu|normal|2024-03-01T09:10:00|2024-03-01T09:11:00|2024-03-01T09:12:00|"
    "2024-03-01T09:40:00|UNLIMITED|cpu=1,node=1|cpu=1,node=1|1|c03|COMPLETED|0:0",
    # a whole-cluster job holds everything, so the next one waited
    "104|104|erin|ml|cpu|normal|2024-03-01T09:00:00|2024-03-01T09:00:00|2024-03-01T09:00:00|"
    "2024-03-01T09:30:00|01:00:00|cpu=32,node=4|cpu=32,node=4|4|c[01-04]|COMPLETED|0:0",
    "105|105|erin|ml|cpu|normal|2024-03-01T09:05:00|2024-03-01T09:05:00|2024-03-01T09:50:00|"
    "2024-03-01T10:00:00|01:00:00|cpu=8,node=1|cpu=8,node=1|1|c01|COMPLETED|0:0",
]


@pytest.fixture
def site(tmp_path):
    (tmp_path / "slurm.conf").write_text(CONF)
    (tmp_path / "sacct.txt").write_text(HEADER + "\n" + "\n".join(ROWS) + "\n")
    return tmp_path


def test_recorded_side_is_the_last_run(site):
    cluster = fs.read_cluster(site / "slurm.conf")
    log = fs.read_sacct(site / "sacct.txt", cluster)
    rec = recorded_schedule(log)
    w = log.workload.jobs
    assert w.job_id.tolist() == [103, 104, 105]
    t0 = 1709283600                                             # 2024-03-01T09:00:00Z
    assert (rec.start_time - t0).tolist() == [720, 0, 3000]
    assert (rec.end_time - t0).tolist() == [2400, 1800, 3600]
    assert [rec.nodes_of(i).tolist() for i in range(3)] == [[2], [0, 1, 2, 3], [0]]
    report = fs.replay_report(cluster, log, "fcfs")
    assert report.recorded == summarize(cluster, log.workload.jobs, rec) | {"skipped": 0}
    jobs = report.jobs.set_index("job_id")
    # replayed: 103 starts at once and runs as long as its last run (28 min); 104 waits
    # for c03 (it needs the whole cluster) until then; 105 queues behind 104 (fcfs)
    assert (jobs.recorded_wait.tolist(), jobs.moved.loc[103]) == ([720, 0, 2700], -720)
    assert jobs.replayed_start.loc[104] == t0 + 1680
    assert jobs.replayed_start.loc[105] == t0 + 1680 + 1800
    assert (jobs.moved == jobs.replayed_start - jobs.recorded_start).all()
    assert report.moved_most(2).job_id.tolist() == [104, 103]       # +1680 s, -720 s
    by = report.by("account")
    assert by.jobs.to_dict() == {"ml": 2, "phys": 1}


@pytest.mark.parametrize("policy", ["easy", "conservative"])
def test_a_simulation_replayed_from_its_sacct_records_is_unchanged(tmp_path, policy):
    """KTH-SP2 (28,475 jobs) under a policy, written as sacct records, read back and
    replayed under the same policy: every start is where it was."""
    trace = fs.read_swf(fs.bundled_trace("KTH-SP2"))
    cluster = fs.Cluster.homogeneous(trace.procs)
    result = fs.simulate(cluster, trace.jobs, policy)
    path = tmp_path / "kth.sacct"
    fs.write_sacct(result, path, origin=820_000_000)
    report = fs.replay_report(cluster, fs.read_sacct(path, cluster), policy)
    assert len(report.jobs) == len(trace.jobs)
    assert (report.jobs.moved == 0).all()
    for key in ("avg_wait", "avg_bounded_slowdown", "utilisation", "makespan"):
        assert report.recorded[key] == pytest.approx(report.replayed[key])


def test_cli_replay_report(site, capsys):
    out = site / "cmp.csv"
    assert main(["replay-report", str(site / "sacct.txt"), "--cluster",
                 str(site / "slurm.conf"), "--policy", "fcfs", "--by", "user", "--top", "2",
                 "--jobs-out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "3 jobs on" in text and "recorded (Slurm)" in text and "fcfs (replayed)" in text
    assert "per user (mean wait in s" in text and "the 2 job(s) whose start moved most" in text
    import pandas as pd
    frame = pd.read_csv(out)
    assert frame.job_id.tolist() == [103, 104, 105] and "moved" in frame.columns
    assert main(["replay-report", str(site / "sacct.txt")]) == 2      # needs --cluster


def test_cli_replay_report_plots(site, capsys):
    """--plots DIR: two PNGs of the fixed size (tools.plots FIGSIZE x DPI), drawn."""
    pytest.importorskip("matplotlib")
    from matplotlib.image import imread
    from fastsched.tools.plots import DPI, FIGSIZE
    out = site / "figs"
    assert main(["replay-report", str(site / "sacct.txt"), "--cluster",
                 str(site / "slurm.conf"), "--policy", "fcfs", "--plots", str(out),
                 "--no-progress"]) == 0
    said = capsys.readouterr().out
    for name in ("wait_cdf.png", "utilisation.png"):
        path = out / name
        assert f"wrote {path}" in said and path.stat().st_size > 0
        pixels = imread(path)
        assert pixels.shape[:2] == (int(FIGSIZE[1] * DPI), int(FIGSIZE[0] * DPI))
        assert (pixels[..., :3] < 0.9).any()


def test_report_schedules_for_plots(site):
    cluster = fs.read_cluster(site / "slurm.conf")
    report = fs.replay_report(cluster, fs.read_sacct(site / "sacct.txt", cluster), "fcfs")
    both = report.schedules("fcfs")
    assert list(both) == ["recorded (Slurm)", "fcfs (replayed)"]
    rec, rep = both.values()
    t0 = 1709283600
    assert (rec.start_time - t0).tolist() == [720, 0, 3000]
    assert (rec.end_time - rec.start_time).tolist() == (rep.end_time - rep.start_time).tolist()
    assert rec.num_nodes.tolist() == [1, 4, 1] and rec.gpus.tolist() == [0, 0, 0]
    assert (rep.start_time == report.jobs.replayed_start).all()
