"""GPU-cluster traces (Philly, Alibaba PAI, Helios) read as workloads: the samples in
tests/data/gpu (README there credits them), the derived cluster and time limits,
fractional GPUs, malformed input naming file:line:field, and the published counts of
the full traces when ../shared/traces holds them. One small node-engine run (CLI)."""
from __future__ import annotations

import datetime as dt
import os
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastsched as fs
import shared_dir
from fastsched.cli import main
from fastsched.io.gpureaders import sniff_gpu_format
from fastsched.io.gputrace import LIMIT_STEPS, derive_limits, read_gpu_trace, read_pai_nodes
from fastsched.model.errors import ConfigWarning, InputError

DATA = Path(__file__).parent / "data" / "gpu"
SHARED = shared_dir.SHARED / "traces" / "gpu"


def epoch(text: str) -> int:
    return int(dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S")
               .replace(tzinfo=dt.timezone.utc).timestamp())


def read(path, *args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = read_gpu_trace(path, *args, **kwargs)
    return trace, [str(w.message) for w in caught if issubclass(w.category, ConfigWarning)]


def test_sniffed_formats():
    assert sniff_gpu_format(DATA / "philly_cluster_job_log.json") == "philly"
    assert sniff_gpu_format(DATA / "philly_pollux_excerpt.csv") == "philly"
    assert sniff_gpu_format(DATA / "pai" / "openb_pod_list_default.csv") == "pai"
    assert sniff_gpu_format(DATA / "pai_task_table.csv") == "pai"
    assert sniff_gpu_format(DATA / "helios_cluster_log.csv") == "helios"
    assert sniff_gpu_format(DATA / "README.md") is None


def test_philly_cluster_job_log():
    trace, said = read(DATA / "philly_cluster_job_log.json")
    w = trace.workload
    assert trace.format == "philly" and len(w) == 3
    assert [(s.line, s.reason) for s in trace.skipped] == [
        (4, "application_1506638472019_14202: never ran or was still running (no start or "
            "end)"),
        (5, "application_1506638472019_14203: never ran or was still running (no start or "
            "end)")]
    assert list(w.name) == ["application_1506638472019_14199", "application_1506638472019_14200",
                            "application_1506638472019_14201"]          # by submit time
    first = epoch("2017-10-07 01:13:23") - epoch("2017-10-07 01:12:09") + \
        epoch("2017-10-09 06:53:12") - epoch("2017-10-07 01:13:30")       # two attempts
    assert w.jobs.runtime.tolist() == [first, 3600, 330]
    assert w.jobs.submit_time[0] == epoch("2017-10-07 01:11:39")
    assert trace.recorded_start[0] == epoch("2017-10-07 01:12:09")
    assert (w.jobs.num_nodes * w.jobs.gpus_per_node).tolist() == [8, 16, 1]
    assert w.jobs.num_nodes.tolist() == [1, 2, 1]
    assert list(trace.state) == ["COMPLETED", "CANCELLED", "FAILED"]
    assert [w.user_names[u] for u in w.jobs.user] == ["ce2f4c", "a1b2c3", "ce2f4c"]
    assert [w.account_names[a] for a in w.account] == ["ee9e8c", "ee9e8c", "6214e9"]
    # derived: 8-GPU nodes, enough for the peak (16 GPUs at 02:00-03:00, plus the 8 of
    # the long job): 3 nodes; the limits from the run times, both said
    assert trace.derived and trace.cluster.num_nodes == 3
    assert set(trace.cluster.gpus.tolist()) == {8}
    assert any("derived 3 nodes x 8 GPUs" in s for s in said)
    assert any("no time limits" in s for s in said)
    assert w.jobs.time_limit.tolist() == [3 * 86_400, 3600, 3600]


def test_philly_pollux_csv_on_a_given_cluster():
    cluster = fs.Cluster.homogeneous(4, cpus=32, gpus=8, prefix="gpu")
    trace, said = read(DATA / "philly_pollux_excerpt.csv", cluster=cluster, limits="exact")
    jobs = trace.jobs
    assert len(jobs) + len(trace.skipped) == 40 and not trace.derived
    assert not any("gives no cluster" in s for s in said)
    assert (jobs.time_limit == np.maximum(jobs.runtime, 1)).all()
    assert (jobs.num_nodes * jobs.gpus_per_node <= 32).all()
    too_big = [s for s in trace.skipped if "cannot run" in s.reason]
    assert len(too_big) == len(trace.skipped)


def test_pai_declared_cluster_and_fractional_gpus():
    path = DATA / "pai" / "openb_pod_list_default.csv"
    trace, said = read(path)
    assert not trace.derived and trace.cluster.num_nodes == 1213
    assert int(trace.cluster.gpus.sum()) == 6212
    assert trace.fractional == 43 and "43 job(s) of the trace use a fraction" in trace.notes[1]
    never = [s for s in trace.skipped if "never ran" in s.reason]
    assert trace.skipped[0].reason.startswith("openb-pod-0061: never ran")
    assert len(never) == 11 and len(trace.jobs) == 109
    assert set(trace.jobs.gpus_per_node.tolist()) <= {0, 1, 2, 4, 8}
    dropped, _ = read(path, fractional="drop")
    frac = [s for s in dropped.skipped if "fraction of a GPU" in s.reason]
    assert 0 < len(frac) <= 43 and len(dropped.jobs) == 109 - len(frac)
    with pytest.raises(InputError) as e:
        read(path, fractional="error")
    assert (e.value.file, e.value.line, e.value.field) == (str(path), 3, "gpus")


def test_pai_node_list_models():
    cluster = read_pai_nodes(DATA / "pai" / "openb_node_list_gpu_node.csv")
    models = {}
    for types in cluster.gpu_types:
        for name, count in types:
            models[name] = models.get(name, 0) + 1
    assert models == {"G2": 549, "T4": 404, "P100": 134, "V100M16": 55, "G3": 39,
                      "V100M32": 30, "A10": 2}                 # nodes per GPU model
    assert cluster.gpu_type == ""                               # several types


def test_pai_task_table():
    trace, _ = read(DATA / "pai_task_table.csv", fmt="pai")
    jobs = trace.jobs
    assert len(jobs) == 3 and [s.line for s in trace.skipped] == [5]
    assert trace.fractional == 2                  # 0.5 GPU; 2 x 0.25 (counted, never ran)
    assert list(trace.workload.name) == ["4f057009a5d481acec67b088/tensorflow",
                                         "6b5d8a3e8f2a1b7c9d0e1f22/worker",
                                         "6b5d8a3e8f2a1b7c9d0e1f22/ps"]
    assert jobs.num_nodes.tolist() == [1, 4, 1] and jobs.gpus_per_node.tolist() == [1, 1, 0]
    assert jobs.cpus_per_node.tolist() == [6, 8, 4]
    assert jobs.runtime.tolist() == [960, 3600, 3600]


def test_helios():
    trace, said = read(DATA / "helios_cluster_log.csv")
    jobs, w = trace.jobs, trace.workload
    assert jobs.job_id.tolist() == [1425511, 1425512, 1425513, 1425514, 1425515]
    assert [s.job_id for s in trace.skipped] == [1425516]
    assert jobs.num_nodes.tolist() == [1, 1, 1, 2, 1]
    assert jobs.gpus_per_node.tolist() == [1, 4, 1, 8, 0]
    assert jobs.cpus_per_node.tolist() == [1, 16, 1, 32, 4]
    assert jobs.runtime.tolist() == [36848, 249, 675233, 7200, 2]
    assert trace.recorded_start[3] - jobs.submit_time[3] == 480
    assert trace.cluster.cpus[0] == 32 and trace.cluster.num_nodes >= 2


def test_derived_limits():
    assert derive_limits(np.array([0, 1, 3600, 3601, 86_400 * 31 + 5])).tolist() == [
        3600, 3600, 3600, 7200, 86_400 * 32]
    assert derive_limits(np.array([0, 59, 3601]), "exact").tolist() == [1, 59, 3601]
    with pytest.raises(InputError):
        derive_limits(np.array([1]), "never")


@given(st.lists(st.integers(0, 10**8), min_size=1, max_size=50))
def test_derived_limits_cover_the_run_time(runtimes):
    runtimes = np.array(runtimes)
    limits = derive_limits(runtimes)
    assert (limits >= np.maximum(runtimes, 1)).all()
    assert (np.isin(limits, LIMIT_STEPS) | (limits % 86_400 == 0)).all()
    order = np.argsort(runtimes)
    assert (np.diff(limits[order]) >= 0).all()


@pytest.mark.parametrize("name, text, line, field", [
    ("h.csv", "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,"
     "duration,queue\n1,u,v,x,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,"
     "2020-06-09 18:42:01,60,0\n", 2, "gpu_num"),
    ("h.csv", "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,"
     "duration,queue\n1,u,v,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,"
     "2020-06-09 18:42:01,60,0\n2,u,v,1,1,1,COMPLETED,June 9th,2020-06-09 18:41:01,"
     "2020-06-09 18:42:01,60,0\n", 3, "submit_time"),
    ("p.csv", "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,-5,1,5,a\n",
     2, "duration"),
    ("p.json", '[{"submitted_time": "2017-10-07 01:11:39", "attempts": [{"start_time": '
     '"yesterday", "end_time": null}]}]', None, "entry 1: attempts[0].start_time"),
    ("h.csv", "job_id,user,vc,gpu_num,node_num,submit_time,start_time\n1,u,v,1,1,x,y\n", 1,
     "end_time"),
])
def test_malformed_input_names_file_line_field(tmp_path, name, text, line, field):
    path = tmp_path / name
    path.write_text(text)
    fmt = "philly" if name.startswith("p") else "helios"
    with pytest.raises(InputError) as e:
        read(path, fmt)
    assert (e.value.file, e.value.line, e.value.field) == (str(path), line, field)


HELIOS_HEADER = ("job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,"
                 "end_time,duration,queue")


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 64), st.integers(0, 128), st.integers(0, 8),
                          st.integers(0, 10**6), st.integers(-1, 10**6),
                          st.sampled_from(["", "x", "1.5", "-3"])), min_size=1, max_size=15))
def test_fuzz_helios(tmp_path, rows):
    """Any table: a workload of valid jobs with every row kept or listed, or one error
    naming the file, line and field."""
    t0 = epoch("2020-06-01 00:00:00")
    iso = lambda t: dt.datetime.fromtimestamp(t0 + t, dt.timezone.utc).strftime(
        "%Y-%m-%d %H:%M:%S")
    lines = [HELIOS_HEADER]
    for k, (g, c, n, s, run, junk) in enumerate(rows):
        start = "" if run < 0 else iso(s + 5)
        end = "" if run < 0 else iso(s + 5 + run)
        lines.append(f"{k + 1},u{k % 3},vc{k % 2},{junk or g},{c},{n},COMPLETED,{iso(s)},"
                     f"{start},{end},{max(run, 0)},5")
    path = tmp_path / "fuzz.csv"
    path.write_text("\n".join(lines) + "\n")
    try:
        trace, _ = read(path, "helios")
    except InputError as e:
        assert e.file == str(path) and e.line >= 2 and e.field == "gpu_num"
        return
    jobs = trace.jobs
    assert len(jobs) + len(trace.skipped) == len(rows)
    assert (jobs.num_nodes >= 1).all() and (jobs.time_limit >= jobs.runtime).all()
    assert (jobs.gpus_per_node <= 8).all() and (np.diff(jobs.submit_time) >= 0).all()


@pytest.mark.skipif(not (SHARED / "alibaba-pai-gpu-v2023").is_dir(),
                    reason="the full PAI trace is not on this machine")
def test_pai_published_counts(tmp_path):
    """The full openb pod list: 8,152 pods, 37.8% with a fractional GPU (the figure
    the issue quotes), 1,088 CPU-only (../shared/traces/SOURCES.md)."""
    import lzma
    src = SHARED / "alibaba-pai-gpu-v2023"
    path = tmp_path / "openb_pod_list_default.csv"
    path.write_bytes(lzma.decompress((src / "openb_pod_list_default.csv.xz").read_bytes()))
    (tmp_path / "openb_node_list_all_node.csv").write_bytes(
        (src / "openb_node_list_all_node.csv").read_bytes())
    trace, _ = read(path)
    pods = len(trace.jobs) + len(trace.skipped)
    assert pods == 8152 and round(trace.fractional / pods, 3) == 0.378
    assert trace.cluster.num_nodes == 1523 and int(trace.cluster.gpus.sum()) == 6212
    import pandas as pd
    frame = pd.read_csv(path)
    assert int((frame.num_gpu == 0).sum()) == 1088


@pytest.mark.skipif(not (SHARED / "philly").is_dir(),
                    reason="the Pollux Philly trace is not on this machine")
def test_philly_pollux_published_counts(tmp_path):
    """82,247 jobs in 15 virtual clusters, 6214e9 the largest (SOURCES.md)."""
    import lzma
    path = tmp_path / "philly.csv"
    path.write_bytes(lzma.decompress((SHARED / "philly" / "philly_jobs_pollux.csv.xz")
                                     .read_bytes()))
    trace, _ = read(path)
    w = trace.workload
    assert len(w) == 82_247 and len(w.account_names) == 15
    counts = np.bincount(w.account, minlength=15)
    assert w.account_names[int(counts.argmax())] == "6214e9"


def test_cli_simulate_gpu_trace_and_generate_cluster(tmp_path, capsys):
    conf = tmp_path / "slurm.conf"
    assert main(["generate", "cluster", "--nodes", "3", "--gpus-per-node", "8", "--cpus", "64",
                 "--gpu-type", "a100", "-o", str(conf)]) == 0
    cluster = fs.read_cluster(conf)
    assert cluster.num_nodes == 3 and cluster.gpu_type == "a100" and cluster.cpus[0] == 64
    assert main(["generate", "cluster", "ai-8k", "--nodes", "3", "-o", str(conf)]) == 2
    capsys.readouterr()
    out = tmp_path / "s.txt"
    assert main(["simulate", str(DATA / "helios_cluster_log.csv"), "--cluster", str(conf),
                 "--no-progress", "--sacct-out", str(out)]) == 0
    text = capsys.readouterr()
    assert "jobs " in text.out and "job 1425516 (line 7): never ran" in text.out
    assert "no time limits" in text.err and "derived" not in text.err.split("limits")[0]
    log = fs.read_sacct(out, cluster)
    assert sorted(log.workload.jobs.job_id.tolist()) == [1425511, 1425512, 1425513, 1425514,
                                                         1425515]


PAI_HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
              "creation_time,deletion_time,scheduled_time")


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 128_000), st.integers(0, 8), st.integers(0, 1000),
                          st.integers(0, 10**7), st.one_of(st.none(), st.integers(0, 10**5)),
                          st.integers(0, 10**5), st.sampled_from(["", "x", "-1"])),
                min_size=1, max_size=15),
       st.sampled_from(["round-up", "drop", "error"]))
def test_fuzz_pai(tmp_path, rows, fractional):
    lines = [PAI_HEADER]
    for k, (cpu, gpus, milli, created, wait, run, junk) in enumerate(rows):
        scheduled = "" if wait is None else created + wait
        deleted = created + (wait or 0) + run
        lines.append(f"openb-pod-{k:04d},{junk or cpu},1024,{gpus},{milli if gpus else 0},,"
                     f"LS,Running,{created},{deleted},{scheduled}")
    path = tmp_path / "pods.csv"
    path.write_text("\n".join(lines) + "\n")
    try:
        trace, _ = read(path, "pai", fractional=fractional)
    except InputError as e:
        assert e.file == str(path) and e.line >= 2 and e.field in ("cpu_milli", "gpus")
        return
    jobs = trace.jobs
    assert len(jobs) + len(trace.skipped) == len(rows)
    assert trace.fractional == sum(1 for r in rows if r[1] == 1 and 0 < r[2] < 1000)
    assert (jobs.cpus_per_node >= 1).all() and (jobs.num_nodes >= 1).all()
    assert (jobs.runtime >= 0).all() and (jobs.time_limit >= jobs.runtime).all()


times = st.one_of(st.none(), st.integers(0, 10**6).map(
    lambda t: dt.datetime.fromtimestamp(1_500_000_000 + t, dt.timezone.utc)
    .strftime("%Y-%m-%d %H:%M:%S")), st.just("soon"))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.fixed_dictionaries({
    "submitted_time": times, "status": st.sampled_from(["Pass", "Killed", "Failed"]),
    "attempts": st.lists(st.fixed_dictionaries({
        "start_time": times, "end_time": times,
        "detail": st.lists(st.fixed_dictionaries({"ip": st.just("m1"), "gpus": st.lists(
            st.just("gpu0"), max_size=8)}), max_size=3)}), max_size=3)}), max_size=10))
def test_fuzz_philly(tmp_path, jobs):
    import json
    path = tmp_path / "log.json"
    path.write_text(json.dumps(jobs))
    try:
        trace, _ = read(path, "philly", cluster=fs.Cluster.homogeneous(4, cpus=8, gpus=8))
    except InputError as e:
        assert e.file == str(path) and e.field.startswith("entry ")
        return
    assert len(trace.jobs) + len(trace.skipped) == len(jobs)
    assert (trace.jobs.runtime >= 0).all() and (trace.jobs.num_nodes >= 1).all()


def test_cli_strict_refuses_a_left_out_job(capsys):
    path = DATA / "helios_cluster_log.csv"
    assert main(["simulate", str(path), "--strict", "--no-progress"]) == 2
    assert f"{path}:7: job 1425516 cannot run: never ran" in capsys.readouterr().err


def test_pai_task_instances_share_gpus_each(tmp_path):
    """Two instances of half a GPU each: two shared GPUs, planned as two whole ones
    (one per instance, on their own nodes), not packed into one."""
    path = tmp_path / "pai_task_table.csv"
    path.write_text("job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,"
                    "plan_mem,plan_gpu,gpu_type\nj1,worker,2,Terminated,0,100,100,1.0,50,T4\n")
    trace, _ = read(path)
    assert trace.fractional == 1
    assert (trace.jobs.num_nodes[0], trace.jobs.gpus_per_node[0]) == (2, 1)
    with pytest.raises(InputError) as e:
        read(path, fractional="error")
    assert (e.value.line, e.value.field) == (2, "gpus")


def test_helios_declared_gpus(tmp_path):
    """cluster_gpu_number.csv next to the log sizes the derived cluster."""
    (tmp_path / "cluster_log.csv").write_text((DATA / "helios_cluster_log.csv").read_text())
    (tmp_path / "cluster_gpu_number.csv").write_text(
        "date,vchbv,vcJkd,total\n2020-09-01,64,32,96\n2020-09-02,64,48,112\n")
    trace, said = read(tmp_path / "cluster_log.csv")
    assert trace.cluster.num_nodes == 14 and int(trace.cluster.gpus.sum()) == 112
    assert "112 GPUs, the most cluster_gpu_number.csv declares" in trace.notes[0]
    assert any("112 GPUs declared" in s for s in said)
