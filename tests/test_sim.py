"""The Python API of the simulator: simulate(), its result, bad input, simulate_swf()."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import naive
import fastsched as fs
from fastsched import Cluster, InputError, JobTable, simulate, simulate_swf, verify
from fastsched.sim.results import RECORD_COLUMNS
from fastsched.tools.testing import cluster_and_workload

POLICIES = ("fcfs", "easy", "conservative")

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def table(**overrides):
    """A tiny hand-worked workload on 4 nodes (see test_summary_hand_worked)."""
    cols = dict(job_id=[1, 2, 3, 4], submit_time=[0, 1, 2, 3], time_limit=[10, 10, 5, 4],
                runtime=[10, 15, 3, 4], num_nodes=[3, 4, 1, 2])
    cols.update(overrides)
    return JobTable.from_arrays(**cols)


# --------------------------------------------------------------------------- records

def test_jobs_frame_columns_and_dtypes():
    r = simulate(Cluster.homogeneous(4), table(), "easy")
    df = r.jobs
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == RECORD_COLUMNS == [
        "job_id", "submit_time", "start_time", "end_time", "wait_time", "run_time",
        "time_limit", "state", "num_nodes", "procs", "gpus", "nodes", "gpu_ids", "planning"]
    assert len(df) == 4
    assert (df["gpu_ids"] == "").all()                     # an SWF machine has no GPUs
    for col in ("job_id", "submit_time", "time_limit", "procs", "gpus"):
        assert df[col].dtype == np.int64, col
    for col in ("start_time", "end_time", "wait_time", "run_time"):  # NA: never started
        assert df[col].dtype == "Int64", col
    assert pd.api.types.is_integer_dtype(df["num_nodes"])
    for col in ("state", "nodes"):
        assert pd.api.types.is_string_dtype(df[col]) or df[col].dtype == object, col
        assert all(isinstance(v, str) for v in df[col]), col
    assert (df["wait_time"] == df["start_time"] - df["submit_time"]).all()
    assert (df["run_time"] == df["end_time"] - df["start_time"]).all()
    assert (df["procs"] == df["num_nodes"]).all()          # 1 CPU per node
    assert (df["gpus"] == 0).all()


def test_timeout_state_and_end_times():
    jobs = table()
    r = simulate(Cluster.homogeneous(4), jobs, "easy")
    df = r.jobs
    # job 2 asked 10 s but would run 15: killed at its limit
    assert df["state"].tolist() == ["COMPLETED", "TIMEOUT", "COMPLETED", "COMPLETED"]
    expected_end = r.schedule.start_time + np.minimum(jobs.runtime, jobs.time_limit)
    np.testing.assert_array_equal(r.schedule.end_time, expected_end)
    np.testing.assert_array_equal(df["end_time"].to_numpy(), expected_end)
    assert df.loc[df.job_id == 2, "run_time"].item() == 10


@pytest.mark.parametrize("policy", POLICIES)
def test_nodes_hostlist_expands_to_distinct_nodes(policy):
    cluster = Cluster.homogeneous(12)
    jobs = JobTable.from_arrays(job_id=np.arange(1, 9), submit_time=[0, 0, 1, 1, 2, 3, 3, 4],
                                time_limit=[5, 7, 3, 9, 4, 6, 2, 8],
                                runtime=[5, 2, 3, 12, 0, 6, 2, 1],
                                num_nodes=[5, 7, 12, 1, 3, 4, 6, 2])
    r = simulate(cluster, jobs, policy)
    names = set(cluster.node_names)
    for i, hl in enumerate(r.jobs["nodes"]):
        expanded = fs.expand_hostlist(hl)
        assert len(expanded) == len(set(expanded)) == jobs.num_nodes[i]
        assert set(expanded) <= names
        assert sorted(expanded) == sorted(cluster.node_names[k] for k in r.schedule.nodes_of(i))


def test_schedule_order_follows_input_order_when_shuffled():
    jobs = table()
    cluster = Cluster.homogeneous(4)
    ref = simulate(cluster, jobs, "easy")
    by_id = dict(zip(ref.schedule.job_id.tolist(),
                     zip(ref.schedule.start_time.tolist(), ref.schedule.end_time.tolist())))
    by_id_nodes = {int(j): sorted(ref.schedule.nodes_of(i).tolist())
                   for i, j in enumerate(ref.schedule.job_id)}
    for seed in range(5):
        perm = np.random.default_rng(seed).permutation(len(jobs))
        shuffled = jobs.take(perm)
        r = simulate(cluster, shuffled, "easy")
        np.testing.assert_array_equal(r.schedule.job_id, shuffled.job_id)
        assert r.jobs["job_id"].tolist() == shuffled.job_id.tolist()
        for i, j in enumerate(shuffled.job_id.tolist()):
            assert (r.schedule.start_time[i], r.schedule.end_time[i]) == by_id[j]
            assert sorted(r.schedule.nodes_of(i).tolist()) == by_id_nodes[j]
            assert r.jobs["submit_time"].iloc[i] == shuffled.submit_time[i]
        fs.verify(cluster, shuffled, r.schedule, policy="easy").raise_if_failed()


# --------------------------------------------------------------------------- summary

def test_summary_hand_worked():
    """4 nodes, EASY.

    job 1: submit 0, 3 nodes, limit 10, runtime 10 -> [0, 10)
    job 2: submit 1, 4 nodes, limit 10, runtime 15 -> head, shadow 10, killed: [10, 20)
    job 3: submit 2, 1 node,  limit 5,  runtime 3  -> backfilled (2 + 5 <= 10): [2, 5)
    job 4: submit 3, 2 nodes, limit 4,  runtime 4  -> never fits before job 2: [20, 24)
    """
    r = simulate(Cluster.homogeneous(4), table(), "easy")
    assert r.schedule.start_time.tolist() == [0, 10, 2, 20]
    assert r.schedule.end_time.tolist() == [10, 20, 5, 24]
    waits = np.array([0, 9, 0, 17])
    runs = np.array([10, 10, 3, 4])
    tau = 10
    bsld = [max((w + rt) / max(rt, tau), 1.0) for w, rt in zip(waits, runs)]
    assert bsld == [1.0, 1.9, 1.0, 2.1]
    s = r.summary
    expected_keys = {"jobs", "skipped", "timeouts", "avg_wait", "median_wait", "max_wait",
                     "avg_bounded_slowdown", "utilisation", "makespan", "sim_seconds",
                     "policy", "reserve_depth", "semantics"}
    assert expected_keys <= set(s)
    assert s["jobs"] == 4
    assert s["skipped"] == 0
    assert s["timeouts"] == 1
    assert s["avg_wait"] == pytest.approx(6.5)
    assert s["median_wait"] == pytest.approx(4.5)
    assert s["max_wait"] == 17
    assert s["avg_bounded_slowdown"] == pytest.approx(np.mean(bsld)) == pytest.approx(1.5)
    assert s["makespan"] == 24
    jct = waits + runs                                     # end - submit: [10, 19, 3, 21]
    assert s["avg_jct"] == pytest.approx(13.25)
    assert s["median_jct"] == pytest.approx(14.5)
    assert s["p95_jct"] == pytest.approx(np.percentile(jct, 95)) == pytest.approx(20.7)
    assert s["p99_jct"] == pytest.approx(20.94)
    assert s["never_started"] == 0
    node_seconds = 3 * 10 + 4 * 10 + 1 * 3 + 2 * 4
    assert s["utilisation"] == pytest.approx(node_seconds / (4 * 24)) == pytest.approx(0.84375)
    assert isinstance(s["sim_seconds"], float) and s["sim_seconds"] >= 0
    assert s["policy"] == "easy"
    assert s["reserve_depth"] == 1
    assert isinstance(s["semantics"], dict)
    assert s["semantics"]["bounded_slowdown_tau"] == tau
    assert "runtime_over_limit" in s["semantics"]


def test_summary_fcfs_and_reserve_depth():
    """Same workload under FCFS: job 3 may not pass job 2, so it waits until 20."""
    r = simulate(Cluster.homogeneous(4), table(), "fcfs")
    assert r.schedule.start_time.tolist() == [0, 10, 20, 20]
    assert r.summary["policy"] == "fcfs"
    assert r.summary["reserve_depth"] is None
    assert r.summary["avg_wait"] == pytest.approx((0 + 9 + 18 + 17) / 4)
    assert r.summary["max_wait"] == 18
    r = simulate(Cluster.homogeneous(4), table(), "easy", reserve_depth=3)
    assert r.summary["reserve_depth"] == 3
    assert simulate(Cluster.homogeneous(4), table(), "conservative").summary["reserve_depth"] is None


def test_skipped_passed_through():
    skipped = ["a", "b"]
    r = simulate(Cluster.homogeneous(4), table(), "easy", skipped=skipped)
    assert r.summary["skipped"] == 2
    assert r.skipped == ["a", "b"]


def test_policies_differ_on_second_reservation():
    """4 nodes. EASY protects only the head (job 2): job 4 backfills at 3 and delays
    job 3. Conservative protects job 3 too; FCFS backfills nothing."""
    jobs = JobTable.from_arrays(job_id=[1, 2, 3, 4], submit_time=[0, 1, 2, 3],
                                time_limit=[10, 10, 10, 30], runtime=[10, 10, 10, 30],
                                num_nodes=[3, 3, 4, 1])
    cluster = Cluster.homogeneous(4)
    starts = {p: simulate(cluster, jobs, p).schedule.start_time.tolist() for p in POLICIES}
    assert starts == {"fcfs": [0, 10, 20, 30], "easy": [0, 10, 33, 3],
                      "conservative": [0, 10, 20, 30]}
    # reserve_depth 2 protects job 3 as well
    assert simulate(cluster, jobs, "easy", reserve_depth=2).schedule.start_time.tolist() \
        == [0, 10, 20, 30]


# --------------------------------------------------------------------------- fuzzing

@pytest.mark.parametrize("policy", POLICIES)
@SETTINGS
@given(cw=cluster_and_workload())
def test_every_schedule_verifies(policy, cw):
    cluster, jobs = cw
    r = simulate(cluster, jobs, policy)
    report = fs.verify(cluster, jobs, r.schedule, policy=policy)
    assert report.ok, str(report)
    assert len(r.jobs) == len(jobs)


@SETTINGS
@given(cw=cluster_and_workload(), depth=st.integers(2, 4))
def test_easy_reserve_depth_verifies(cw, depth):
    cluster, jobs = cw
    r = simulate(cluster, jobs, "easy", reserve_depth=depth)
    report = fs.verify(cluster, jobs, r.schedule, policy="easy", reserve_depth=depth)
    assert report.ok, str(report)


# --------------------------------------------------------------------------- real trace

@pytest.fixture(scope="module")
def kth():
    return fs.read_swf(fs.bundled_trace())


@pytest.mark.parametrize("policy", POLICIES)
def test_kth_prefix_equals_naive(kth, policy):
    jobs = kth.jobs.take(slice(0, 3000))
    assert len(jobs) == 3000
    r = simulate(Cluster.homogeneous(kth.procs), jobs, policy)
    out = naive.simulate(naive.jobs_from_table(jobs), kth.procs, policy)
    start = np.array([out[int(j)][0] for j in jobs.job_id])
    end = np.array([out[int(j)][1] for j in jobs.job_id])
    np.testing.assert_array_equal(r.schedule.start_time, start)
    np.testing.assert_array_equal(r.schedule.end_time, end)


# --------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("overrides, field, job", [
    (dict(num_nodes=[3, 5, 1, 2]), "num_nodes", 2),
    (dict(time_limit=[10, 10, 0, 4]), "time_limit", 3),
    (dict(runtime=[10, 15, 3, -1]), "runtime", 4),
    (dict(job_id=[7, 8, 7, 9]), "job_id", 7),
])
def test_bad_job_is_input_error_naming_the_job(overrides, field, job):
    with pytest.raises(InputError) as ei:
        simulate(Cluster.homogeneous(4), table(**overrides), "easy")
    assert f"job {job} " in str(ei.value) or f"job id {job} " in str(ei.value)
    assert ei.value.field == field


def test_unknown_policy_and_bad_reserve_depth():
    with pytest.raises(InputError, match="sjf"):
        simulate(Cluster.homogeneous(4), table(), "sjf")
    with pytest.raises(InputError, match="reserve_depth"):
        simulate(Cluster.homogeneous(4), table(), "easy", reserve_depth=0)


def test_errors_are_fastsched_errors():
    assert issubclass(InputError, fs.FastschedError)
    assert issubclass(fs.UnsupportedError, fs.FastschedError)


def test_heterogeneous_cluster_goes_to_the_node_engine():
    cluster = Cluster(["a1", "a2", "b1"], cpus=[1, 1, 2], gpus=[0, 0, 0], mem_mb=[0, 0, 0])
    r = simulate(cluster, table(num_nodes=[1, 1, 1, 1]), "easy")
    assert r.summary["engine"] == "nodes"
    assert "concrete nodes" in r.summary["semantics"]["allocation"]
    assert verify(cluster, r.workload, r.schedule).ok
    with pytest.raises(InputError, match="job 1"):
        simulate(cluster, table(num_nodes=[4, 1, 1, 1]), "easy")


def test_partial_node_requests_go_to_the_node_engine():
    cluster = Cluster.homogeneous(4, cpus=8)
    r = simulate(cluster, table(num_nodes=[1, 1, 1, 1], cpus_per_node=[4, 4, 8, 8]), "easy")
    assert r.summary["engine"] == "nodes"
    # jobs 1 and 2 (4 CPUs each) share node 0 (best fit), the rest take whole nodes
    assert [r.schedule.nodes_of(i).tolist() for i in range(4)] == [[0], [0], [1], [2]]
    # whole nodes on the same cluster use the counted pool engine
    r = simulate(cluster, table(cpus_per_node=8), "easy")
    assert r.summary["engine"] == "pool"
    assert r.schedule.start_time.tolist() == [0, 10, 2, 20]
    assert r.jobs["procs"].tolist() == [24, 32, 8, 16]


@pytest.mark.parametrize("policy", POLICIES)
def test_inputs_not_mutated(policy):
    # not in submit order, so the simulator must sort internally
    jobs = table().take(np.array([3, 1, 0, 2]))
    cluster = Cluster.homogeneous(4)
    before = {k: v.copy() for k, v in jobs.to_dict().items()}
    cluster_before = (list(cluster.node_names), cluster.cpus.copy(), cluster.gpus.copy(),
                      cluster.mem_mb.copy())
    simulate(cluster, jobs, policy)
    for k, v in before.items():
        np.testing.assert_array_equal(getattr(jobs, k), v, err_msg=k)
        assert getattr(jobs, k).dtype == v.dtype
    assert cluster.node_names == cluster_before[0]
    np.testing.assert_array_equal(cluster.cpus, cluster_before[1])
    np.testing.assert_array_equal(cluster.gpus, cluster_before[2])
    np.testing.assert_array_equal(cluster.mem_mb, cluster_before[3])


def test_bad_input_does_not_mutate():
    jobs = table(num_nodes=[3, 5, 1, 2])
    before = {k: v.copy() for k, v in jobs.to_dict().items()}
    with pytest.raises(InputError):
        simulate(Cluster.homogeneous(4), jobs, "easy")
    for k, v in before.items():
        np.testing.assert_array_equal(getattr(jobs, k), v)


# --------------------------------------------------------------------------- simulate_swf

def swf_line(job, submit, run, procs, limit):
    f = [job, submit, -1, run, procs, -1, -1, procs, limit, -1, 1, -1, -1, -1, -1, -1, -1, -1]
    return " ".join(str(x) for x in f)


def test_simulate_swf_counts_skipped(tmp_path):
    lines = [
        "; Version: 2.2",
        "; MaxProcs: 4",
        swf_line(1, 0, 10, 3, 10),
        swf_line(2, 1, 15, 4, 10),
        swf_line(3, 2, 3, 1, 5),
        swf_line(4, 3, 4, 2, 4),
        swf_line(5, 4, 5, 8, 10),    # more processors than the machine: skipped
    ]
    path = tmp_path / "tiny.swf"
    path.write_text("\n".join(lines) + "\n")
    r = simulate_swf(path, "easy")
    assert r.summary["skipped"] == 1
    assert len(r.skipped) == 1 and r.skipped[0].job_id == 5
    assert r.summary["jobs"] == 4
    assert r.summary["nodes"] == 4
    assert r.summary["timeouts"] == 1
    assert r.summary["trace"] == str(path)
    assert r.jobs["job_id"].tolist() == [1, 2, 3, 4]
    assert r.jobs["start_time"].tolist() == [0, 10, 2, 20]
    with pytest.raises(InputError):
        simulate_swf(path, "easy", strict=True)
