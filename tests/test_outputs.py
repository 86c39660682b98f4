"""Outputs of a simulation: sacct-like records, SWF, Batsim's jobs.csv, Parquet/Arrow.
Each is read back (our sacct and SWF readers, pandas/pyarrow) to the numbers written.
Only the pool engine runs here (small SWF traces); node-engine shaped results are
built by hand (SimulationResult of a schedule), so no Numba compile is needed."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastsched as fs
from fastsched.cli import main
from fastsched.io.batsimout import BATSIM_COLUMNS, interval_sets
from fastsched.io.sacctout import parse_sacct_fields, sacct_lines, tres_text
from fastsched.io.swf import read_swf_fields
from fastsched.io.sacctvalues import parse_tres
from fastsched.model.errors import InputError, UnsupportedError
from fastsched.model.jobs import UNLIMITED
from fastsched.sim.results import SimulationResult

SWF = """\
; MaxProcs: 8
; UnixStartTime: 1700000000
1 0 -1 100 4 -1 -1 4 200 -1 1 3 -1 -1 -1 -1 -1 -1
2 10 -1 500 8 -1 -1 8 400 -1 1 4 -1 -1 -1 -1 -1 -1
3 20 -1 50 2 -1 -1 2 60 -1 1 3 -1 -1 -1 -1 -1 -1
4 30 -1 0 1 -1 -1 1 10 -1 1 5 -1 -1 -1 -1 -1 -1
5 40 -1 30 4 -1 -1 4 -1 -1 1 5 -1 -1 -1 -1 -1 -1
"""

CONF = """\
NodeName=c[01-04] CPUs=8 RealMemory=64000
NodeName=g[1-2] CPUs=32 RealMemory=256000 Gres=gpu:a100:4
PartitionName=cpu Nodes=c[01-04] Default=YES MaxTime=UNLIMITED
PartitionName=gpu Nodes=g[1-2] MaxTime=UNLIMITED
"""


@pytest.fixture
def swf_result(tmp_path):
    path = tmp_path / "t.swf"
    path.write_text(SWF)
    trace = fs.read_swf(path)
    return fs.simulate(fs.Cluster.homogeneous(trace.procs), trace.jobs, "easy",
                       reservations="counts")


@pytest.fixture
def site(tmp_path):
    (tmp_path / "slurm.conf").write_text(CONF)
    return fs.read_cluster(tmp_path / "slurm.conf")


def hand_result(cluster, rows, *, pending=()):
    """A result of jobs ``rows`` = (submit, wait, run, limit, part, first node, nodes,
    cpus, gpus, mem) per job, run where the row says (no engine)."""
    n = len(rows)
    submit, wait, run, limit, part, first, nodes, cpus, gpus, mem = (
        np.array(col, dtype=np.int64) for col in zip(*rows))
    jobs = fs.JobTable.from_arrays(job_id=np.arange(1, n + 1), submit_time=submit,
                                   time_limit=limit, runtime=run, num_nodes=nodes,
                                   cpus_per_node=cpus, gpus_per_node=gpus, mem_per_node=mem,
                                   partition=part, user=np.arange(n) % 3)
    start = submit + wait
    end = start + np.minimum(run, limit)
    base = np.where(part == 0, 0, 4)
    first = np.where(part == 1, np.minimum(first, 2 - nodes), first)
    started = np.ones(n, bool)
    started[list(pending)] = False
    counts = np.where(started, nodes, 0)
    offsets = np.concatenate(([0], np.cumsum(counts)))
    alloc = np.concatenate([base[i] + first[i] + np.arange(counts[i]) for i in range(n)])
    sched = fs.Schedule(job_id=jobs.job_id, start_time=np.where(started, start, -1),
                        end_time=np.where(started, end, -1), alloc_offsets=offsets,
                        alloc_nodes=alloc.astype(np.int64))
    return SimulationResult(cluster, jobs, sched, {"policy": "easy"},
                            partition=np.where(started, part, -1).astype(np.int32))


T0 = 1709287200


def site_rows():
    """Jobs of every shape on the site cluster (c01-c04: 8 CPUs; g1-g2: 4 GPUs)."""
    return st.lists(st.tuples(
        st.integers(0, 10**6), st.integers(0, 10**5), st.integers(0, 10**5),
        st.sampled_from([60, 3600, 86_400 + 7, UNLIMITED]), st.integers(0, 1),
        st.integers(0, 1), st.integers(1, 2), st.integers(1, 8), st.integers(0, 4),
        st.sampled_from([0, 1000, 2048, 60 * 1024])), min_size=1, max_size=12)


# --------------------------------------------------------------------------- sacct


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=site_rows(), zone=st.sampled_from(["UTC", "Europe/Berlin", "America/New_York"]))
def test_sacct_round_trip(tmp_path, site, rows, zone):
    rows = [(T0 + s, w, r, lim, p, f, nd, c, g * p, m) for s, w, r, lim, p, f, nd, c, g, m in rows]
    result = hand_result(site, rows)
    path = tmp_path / "out.sacct"
    fs.write_sacct(result, path, tz=zone)
    log = fs.read_sacct(path, site, tz=zone)
    assert not log.skipped
    order = np.argsort(log.jobs.job_id)
    jobs, s = result.workload, result.schedule
    got = log.jobs.take(order)
    for name in ("job_id", "submit_time", "num_nodes", "cpus_per_node", "gpus_per_node",
                 "mem_per_node", "partition"):
        assert getattr(got, name).tolist() == getattr(jobs, name).tolist(), name
    assert got.time_limit.tolist() == np.maximum(jobs.time_limit,
                                                 s.end_time - s.start_time).tolist()
    assert log.schedule.start_time[order].tolist() == s.start_time.tolist()
    assert log.schedule.end_time[order].tolist() == s.end_time.tolist()
    for k, i in enumerate(order.tolist()):
        assert log.schedule.nodes_of(i).tolist() == sorted(s.nodes_of(k).tolist())
    assert list(log.state[order]) == list(result.states())


def test_sacct_of_a_simulation_reads_back(tmp_path, swf_result):
    path = tmp_path / "out.txt"
    fs.write_sacct(swf_result, path)
    cluster = swf_result.cluster
    log = fs.read_sacct(path, cluster)
    assert fs.read_sacct.__module__ == "fastsched.io.sacct"
    assert log.schedule.start_time.tolist() == swf_result.schedule.start_time.tolist()
    assert log.workload.jobs.runtime.tolist() == (swf_result.schedule.end_time
                                                  - swf_result.schedule.start_time).tolist()
    # Slurm's spellings: the header, an unlimited limit, a one-node hostlist
    lines = path.read_text().splitlines()
    assert lines[0].startswith("JobID|JobIDRaw|JobName|User|Account|Partition|QOS|Submit|")
    assert "|UNLIMITED|" in lines[5] or "|00:00:30|" in lines[5]


def test_sacct_values_as_slurm_prints_them(site):
    rows = [(T0, 5, 90_061, 2 * 86_400, 1, 0, 2, 16, 4, 128 * 1024),   # 2 nodes, 4 GPUs each
            (T0 + 1, 0, 10, 3600, 0, 2, 1, 1, 0, 1000),
            (T0 + 2, 0, 10, 3600, 0, 0, 1, 1, 0, 0)]
    result = hand_result(site, rows, pending=[2])
    lines = sacct_lines(result, "jobid,Elapsed%20,Timelimit,AllocTRES,NodeList,State,Start,"
                        "TimelimitRaw,ElapsedRaw")
    assert lines[0] == "JobID|Elapsed|Timelimit|AllocTRES|NodeList|State|Start|" \
                       "TimelimitRaw|ElapsedRaw"
    assert lines[1] == ("1|1-01:01:01|2-00:00:00|billing=32,cpu=32,gres/gpu=8,mem=256G,node=2|"
                        "g[1-2]|COMPLETED|2024-03-01T10:00:05|2880|90061")
    assert lines[2] == "2|00:00:10|01:00:00|billing=1,cpu=1,mem=1000M,node=1|c03|" \
                       "COMPLETED|2024-03-01T10:00:01|60|10"
    assert lines[3] == "3|00:00:00|01:00:00||None assigned|PENDING|Unknown|60|0"
    assert tres_text(1, 4, 0, 0) == "billing=4,cpu=4,node=1"
    assert parse_tres(tres_text(3, 12, 6, 3 * 1024)) == (3, 12, 6, "", 3 * 1024)


def test_sacct_names_from_the_workload(tmp_path, site):
    result = hand_result(site, [(T0, 0, 10, 60, 0, 0, 1, 1, 0, 0)] * 2)
    workload = fs.Workload(jobs=result.workload, account=[1, 0], user_names=["ann", "bo", "cy"],
                           account_names=["phys", "ml"], org_of_account=[0, 0],
                           org_names=["uni"], qos=[0, 0], qos_names=["normal"],
                           name=np.array(["train", "eval"], dtype=object),
                           array_job=np.array([7, -1]), array_task=np.array([3, -1]))
    lines = sacct_lines(result, "JobID,JobIDRaw,JobName,User,Account,QOS,Partition",
                        workload=workload)
    assert lines[1:] == ["7_3|1|train|ann|ml|normal|cpu", "2|2|eval|bo|phys|normal|cpu"]


def test_sacct_fields_refused():
    assert parse_sacct_fields("jobid, nodelist%40 ,STATE") == ["JobID", "NodeList", "State"]
    with pytest.raises(InputError, match="unknown sacct field 'Colour'") as e:
        parse_sacct_fields("JobID,Colour")
    assert e.value.field == "--sacct-format"
    with pytest.raises(InputError):
        parse_sacct_fields(" , ")


# --------------------------------------------------------------------------- SWF


def test_swf_round_trip(tmp_path, swf_result):
    path = tmp_path / "out.swf"
    fs.write_swf(swf_result, path, origin=1700000000)
    back = fs.read_swf(path)
    w, s = swf_result.workload, swf_result.schedule
    assert back.procs == 8 and back.header["UnixStartTime"] == "1700000000"
    assert back.jobs.job_id.tolist() == w.job_id.tolist()
    assert back.jobs.submit_time.tolist() == w.submit_time.tolist()
    assert back.jobs.num_nodes.tolist() == w.num_nodes.tolist()
    assert back.jobs.time_limit.tolist() == w.time_limit.tolist()
    assert back.jobs.runtime.tolist() == (s.end_time - s.start_time).tolist()
    fields = read_swf_fields(path).fields
    assert fields.shape == (5, 18)
    assert fields[:, 2].tolist() == (s.start_time - w.submit_time).tolist()
    assert fields[:, 11].tolist() == [3, 4, 3, 5, 5]                # user ids kept
    assert set(fields[:, 10].tolist()) <= {0, 1}                      # completed / killed


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=site_rows())
def test_swf_of_any_result_reads_back(tmp_path, site, rows):
    result = hand_result(site, rows, pending=[0])
    path = tmp_path / "any.swf"
    fs.write_swf(result, path)
    fields = read_swf_fields(path).fields
    w, s = result.workload, result.schedule
    assert fields[:, 0].tolist() == w.job_id.tolist()
    assert fields[0, 2] == fields[0, 3] == -1 and fields[0, 10] == 5   # never started
    procs = w.num_nodes * w.cpus_per_node
    assert fields[:, 7].tolist() == procs.tolist()
    assert fields[1:, 3].tolist() == (s.end_time - s.start_time)[1:].tolist()
    back = fs.read_swf(path)                     # the never-started job is skipped, listed
    assert [k.job_id for k in back.skipped] == [1] and back.procs == int(site.cpus.sum())
    order = np.argsort(back.jobs.job_id)
    assert back.jobs.time_limit[order].tolist() == [
        lim if lim < UNLIMITED else max(run, 1) for lim, run in
        zip(w.time_limit[1:].tolist(), (s.end_time - s.start_time)[1:].tolist())]


# --------------------------------------------------------------------------- Batsim


def test_interval_sets():
    offsets = np.array([0, 4, 4, 7, 8])
    nodes = np.array([3, 0, 1, 5, 9, 7, 8, 2])
    assert interval_sets(offsets, nodes).tolist() == ["0-1 3 5", "", "7-9", "2"]
    assert interval_sets(np.array([0, 0]), np.array([], np.int64)).tolist() == [""]


@pytest.mark.parametrize("first,count,want", [
    ([0, 3, 7], [2, 1, 3], ["0-1 3", "", "7-9"]),        # as the counts model keeps them
    ([3, 0, 7], [1, 2, 3], ["0-1 3", "", "7-9"]),        # not ascending: sorted
    ([0, 2, 7], [2, 2, 3], ["0-3", "", "7-9"]),          # touching: one interval
    ([0, 1, 7], [3, 1, 0], ["0-2", "", ""]),             # overlapping, and an empty run
])
def test_interval_sets_from_node_runs(first, count, want):
    """A schedule that keeps node runs gives the interval sets of its nodes one by one."""
    from fastsched.io.batsimout import schedule_interval_sets
    from fastsched.model.noderuns import NodeRuns
    from fastsched.model.schedule import Schedule
    runs = NodeRuns(offsets=np.array([0, 2, 2, 3]), first=np.array(first),
                    count=np.array(count))
    s = Schedule(job_id=np.arange(3), start_time=np.zeros(3), end_time=np.ones(3),
                 alloc_offsets=runs.node_offsets(), alloc_nodes=None, node_runs=runs)
    assert schedule_interval_sets(s).tolist() == want == \
        interval_sets(runs.node_offsets(), runs.nodes()).tolist()


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=site_rows())
def test_batsim_jobs_csv(tmp_path, site, rows):
    result = hand_result(site, rows, pending=[len(rows) - 1])
    path = tmp_path / "out_jobs.csv"
    fs.write_batsim(result, path, "site")
    frame = pd.read_csv(path, keep_default_na=False)
    assert list(frame.columns) == BATSIM_COLUMNS
    w, s = result.workload, result.schedule
    done = frame.iloc[:-1]
    assert (done.finish_time - done.starting_time == done.execution_time).all()
    assert (done.turnaround_time == done.finish_time - done.submission_time).all()
    assert (done.waiting_time == done.starting_time - done.submission_time).all()
    assert done.starting_time.tolist() == s.start_time[:-1].tolist()
    for text, k in zip(done.allocated_resources, range(len(done))):   # the interval set
        got = set()
        for part in str(text).split():
            lo, _, hi = part.partition("-")
            got |= set(range(int(lo), int(hi or lo) + 1))
        assert got == set(s.nodes_of(k).tolist())
    killed = w.runtime[:-1] > w.time_limit[:-1]
    assert done.success.tolist() == (~killed).astype(int).tolist()
    assert frame.final_state.iloc[-1] == "REJECTED" and frame.starting_time.iloc[-1] == -1
    assert set(frame.workload_name) == {"site"} and set(done.metadata) <= {"cpu", "gpu"}


# --------------------------------------------------------------------------- jobs table


@pytest.mark.parametrize("name", ["jobs.parquet", "jobs.arrow", "jobs.feather", "jobs.csv.gz"])
def test_jobs_by_suffix(tmp_path, swf_result, name):
    path = tmp_path / name
    fs.write_jobs(swf_result.jobs, path)
    if name.endswith(".parquet"):
        back = pd.read_parquet(path)
    elif name.endswith(".csv.gz"):
        back = pd.read_csv(path)
    else:
        back = pd.read_feather(path)
    assert list(back.columns) == list(swf_result.jobs.columns)
    assert back.start_time.tolist() == swf_result.jobs.start_time.tolist()
    assert back.nodes.tolist() == swf_result.jobs.nodes.tolist()


def test_jobs_unknown_suffix_and_missing_pyarrow(tmp_path, swf_result, monkeypatch):
    with pytest.raises(InputError, match="cannot tell the format"):
        fs.write_jobs(swf_result.jobs, tmp_path / "jobs.xlsx")
    import builtins
    real = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name.startswith("pyarrow"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    with pytest.raises(UnsupportedError, match=r"fastsched\[parquet\]"):
        fs.write_jobs(swf_result.jobs, tmp_path / "jobs.parquet")
    assert not (tmp_path / "jobs.parquet").exists()


# --------------------------------------------------------------------------- CLI


def test_cli_outputs(tmp_path, capsys):
    trace = tmp_path / "t.swf"
    trace.write_text(SWF)
    out = {k: str(tmp_path / v) for k, v in
           (("jobs", "j.parquet"), ("sacct", "s.txt"), ("swf", "o.swf"), ("batsim", "b.csv"))}
    assert main(["simulate", str(trace), "--no-progress", "--jobs-out", out["jobs"],
                 "--sacct-out", out["sacct"], "--sacct-format", "JobID,State,Elapsed",
                 "--swf-out", out["swf"], "--batsim-out", out["batsim"]]) == 0
    text = capsys.readouterr().out
    assert "wrote 5 sacct records" in text and "wrote 5 Batsim job rows" in text
    assert open(out["sacct"]).readline() == "JobID|State|Elapsed\n"
    assert len(pd.read_parquet(out["jobs"])) == 5
    assert fs.read_swf(out["swf"]).jobs.job_id.tolist() == [1, 2, 3, 4, 5]
    assert pd.read_csv(out["batsim"]).workload_name.iloc[0] == "t"
    # bad output options fail before the run, naming the option
    assert main(["simulate", str(trace), "--sacct-out", "x", "--sacct-format", "Nope"]) == 2
    assert "--sacct-format: unknown sacct field 'Nope'" in capsys.readouterr().err
    assert main(["simulate", str(trace), "--jobs-out", str(tmp_path / "j.txt")]) == 2
    assert "cannot tell the format" in capsys.readouterr().err
