"""squeue --start at an instant of a simulation: fastsched.start_times_at and
``fastsched simulate ... --start-times T [--csv FILE]``."""
import csv

import numpy as np
import pytest

import fastsched as fs
from fastsched.cli import main
from fastsched.sim.snapshot import SQUEUE_START_COLUMNS

from test_scheduler import gpu_workload


def tiny_swf(tmp_path):
    # 4 processors: 1 (3 procs, 0-10), 2 (3 procs), 3 (4 procs), 4 (1 proc, 30 s)
    rows = [(1, 0, 10, 3, 10), (2, 1, 10, 3, 10), (3, 2, 10, 4, 10), (4, 3, 30, 1, 30)]
    lines = ["; Version: 2.2", "; MaxProcs: 4"] + [
        f"{j} {s} -1 {r} {p} -1 -1 {p} {lim} -1 1 7 -1 -1 -1 -1 -1 -1" for j, s, r, p, lim in rows]
    path = tmp_path / "tiny.swf"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_pool_start_times_are_a_conservative_plan_of_the_state(tmp_path):
    result = fs.simulate_swf(tiny_swf(tmp_path), "easy")
    # at 3 (before the pass): job 1 runs until 10; 2, 3, 4 pending. Full conservative
    # plan: 2 at 10 (3 procs), 3 at 20 (all 4), 4 at 30 (it would delay 3 before).
    frame = fs.start_times_at(result, 3)
    assert list(frame.columns) == SQUEUE_START_COLUMNS
    assert frame.JOBID.tolist() == [2, 3, 4]
    assert frame.START_TIME.tolist() == [10, 20, 30]
    assert frame.NODES.tolist() == [3, 4, 1]
    assert frame.ST.tolist() == ["PD"] * 3 and frame.USER.tolist() == ["7"] * 3
    assert frame.SCHEDNODES.tolist() == ["(null)"] * 3      # the pool holds counts
    assert frame.REASON.tolist() == ["Resources", "Priority", "Priority"]
    # at 0 nothing runs yet: job 1 would start now, on the lowest nodes
    frame = fs.start_times_at(result, 0)
    assert frame.JOBID.tolist() == [1] and frame.START_TIME.tolist() == [0]
    assert frame.SCHEDNODES.tolist() == ["node[001-003]"] and frame.REASON.tolist() == ["None"]
    assert len(fs.start_times_at(result, 1000)) == 0


def test_gpu_start_times_name_the_reserved_nodes():
    cluster, jobs = gpu_workload()
    result = fs.simulate(cluster, jobs, "easy")
    for t in (5, 10, 31):
        running, pending = result.state_at(t)
        frame = fs.start_times_at(result, t)
        sched = fs.Scheduler.from_state(cluster, running, pending, reservations="nodes")
        d = sched._pass(t, "conservative", 1, True, -1)        # the plan it reports
        assert frame.JOBID.tolist() == d.job_id.tolist()
        assert frame.START_TIME.tolist() == d.start_time.tolist()
        assert (frame.START_TIME >= t).all()
        hosts = [fs.compress_hostlist([cluster.node_names[k] for k in d.nodes_of(i)])
                 for i in range(len(d))]
        assert frame.SCHEDNODES.tolist() == hosts and all(hosts)
        started_later = result.schedule.start_time[np.isin(jobs.job_id, frame.JOBID)]
        assert (started_later >= t).all()


def test_cli_start_times_prints_and_writes_csv(tmp_path, capsys):
    out_csv = tmp_path / "start.csv"
    assert main(["simulate", str(tiny_swf(tmp_path)), "--start-times", "3",
                 "--csv", str(out_csv)]) == 0
    out = capsys.readouterr().out
    header = out.split("expected starts (squeue --start):\n")[1].splitlines()[0]
    assert header.split() == SQUEUE_START_COLUMNS
    rows = list(csv.DictReader(open(out_csv)))
    assert [(r["JOBID"], r["START_TIME"], r["REASON"]) for r in rows] == \
        [("2", "10", "Resources"), ("3", "20", "Priority"), ("4", "30", "Priority")]


def test_cli_start_times_name_the_workloads_users(tmp_path, capsys):
    cluster = fs.ai_cluster("ai-8k")
    jobs_csv = tmp_path / "jobs.csv"
    w = fs.ai_mix(cluster, 3000, seed=1)
    fs.write_workload(w, cluster, jobs_csv)
    t = int(w.jobs.submit_time[-1])
    out_csv = tmp_path / "start.csv"
    assert main(["simulate", str(jobs_csv), "--cluster", "ai-8k", "--no-progress",
                 "--start-times", str(t), "--csv", str(out_csv)]) == 0
    rows = list(csv.DictReader(open(out_csv)))
    assert rows, "nothing pending: pick another instant"
    by_id = dict(zip(w.jobs.job_id.tolist(), w.jobs.user.tolist()))
    assert [r["USER"] for r in rows] == [w.user_names[by_id[int(r["JOBID"])]] for r in rows]
    assert all(r["USER"].startswith("user") for r in rows)


@pytest.mark.parametrize("argv, message", [
    (["--csv", "x.csv"], "--csv goes with --start-times"),
    (["--start-times", "-1"], "must be >= 0"),
])
def test_cli_start_times_errors(tmp_path, capsys, argv, message):
    path = tiny_swf(tmp_path)
    try:
        code = main(["simulate", str(path)] + argv)
    except SystemExit as e:          # argparse rejects bad values itself
        code = e.code
    assert code == 2 and message in capsys.readouterr().err


def test_state_at_rejects_a_non_integer_time(tmp_path):
    result = fs.simulate_swf(tiny_swf(tmp_path), "easy")
    with pytest.raises(fs.InputError, match="integer"):
        result.state_at(1.5)


def test_start_times_under_a_site_configuration():
    """Held jobs show their limit, dependency waiters show Dependency, order is by priority."""
    import numpy as np
    from fastsched import Cluster, JobTable
    from fastsched.policy.config import parse_config
    from fastsched.model.constraints import AFTERANY, Dependencies
    from fastsched.sim.site import simulate_site
    from fastsched.sim.snapshot import start_times_at
    from fastsched.io.workload import Workload
    # one 8-GPU node; user 0 may run one job at a time (QOS MaxJobsPerUser=1)
    jobs = JobTable.from_arrays(job_id=[1, 2, 3, 4], submit_time=[0, 1, 2, 3],
                                time_limit=100, runtime=100, num_nodes=1, gpus_per_node=4,
                                user=[0, 0, 1, 1])
    wl = Workload(jobs, account=np.array([0, 0, 1, 1]), user_names=["u0", "u1"],
                  account_names=["a", "b"], org_of_account=np.array([0, 1]),
                  org_names=["a", "b"])
    wl.dependencies = Dependencies([0, 0, 0, 0, 1], [2], [AFTERANY])    # 4 after 3
    cfg = parse_config('[qos.normal]\nMaxJobsPerUser = 1\n')
    cluster = Cluster(["g0"], [8], [8], [0])
    result = simulate_site(cluster, wl, cfg)
    assert list(result.schedule.start_time) == [0, 100, 2, 102]
    frame = start_times_at(result, 50).set_index("JOBID")
    assert frame.loc[2, "REASON"] == "QOSMaxJobsPerUserLimit" and frame.loc[2, "START_TIME"] == -1
    assert frame.loc[4, "REASON"] == "Dependency" and frame.loc[4, "START_TIME"] == -1
    assert sorted(frame.index) == [2, 4]
    named = start_times_at(result, 50, wl.user_names).set_index("JOBID")
    assert named.loc[[2, 4], "USER"].tolist() == ["u0", "u1"]
