"""sacct --parsable2 dumps -> the workload that ran and the schedule Slurm recorded:
steps, attempts, arrays, het jobs, missing values, time zones, malformed lines, and
`fastsched check` of what Slurm did. No engine runs here except one pool-engine
simulate through the CLI."""
from __future__ import annotations

import gzip

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastsched as fs
from fastsched.cli import main
from fastsched.io.sacct import read_sacct
from fastsched.io.sacctvalues import parse_job_ids, parse_times, parse_tres
from fastsched.model.errors import FastschedError, InputError
from fastsched.model.jobs import UNLIMITED

CONF = """\
NodeName=c[01-04] CPUs=8 RealMemory=64000
NodeName=g[1-2] CPUs=32 RealMemory=256000 Gres=gpu:a100:4
PartitionName=cpu Nodes=c[01-04] Default=YES MaxTime=2-0
PartitionName=gpu Nodes=g[1-2] MaxTime=1-0
"""

HEADER = ("JobID|JobIDRaw|User|Account|Partition|QOS|Submit|Eligible|Start|End|Timelimit|"
          "ReqTRES|AllocTRES|NNodes|NodeList|State|ExitCode|Priority")
ROWS = [
    # a GPU job and its steps
    "100|100|alice|ml|gpu|normal|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T10:00:05|"
    "2024-03-01T11:00:05|02:00:00|cpu=8,gres/gpu=2,mem=32G,node=1|"
    "billing=8,cpu=8,gres/gpu:a100=2,gres/gpu=2,mem=32G,node=1|1|g1|COMPLETED|0:0|5000",
    "100.batch|100.batch||ml||||2024-03-01T10:00:05|2024-03-01T10:00:05|2024-03-01T11:00:05||||"
    "1|g1|COMPLETED|0:0|",
    "100.0|100.0||ml||||2024-03-01T10:00:06|2024-03-01T10:00:06|2024-03-01T11:00:00||||1|g1|"
    "COMPLETED|0:0|",
    # an array task on two nodes; Partition_Limit; CPUs not a multiple of the node count
    "101_3|104|bob|phys|cpu|normal|2024-03-01T10:01:00|2024-03-01T10:01:00|"
    "2024-03-01T10:02:00|2024-03-01T10:30:00|Partition_Limit|cpu=9,node=2|cpu=9,mem=2000M,"
    "node=2|2|c[01-02]|TIMEOUT|0:15|4000",
    # pending array range, pending job, still running, cancelled while pending
    "101_[5-9]|101|bob|phys|cpu|normal|2024-03-01T10:01:00|Unknown|Unknown|Unknown|"
    "Partition_Limit|cpu=1,node=1||1|None assigned|PENDING|0:0|3000",
    "102|102|carol|phys||normal|2024-03-01T10:05:00|Unknown|None|Unknown|01:00:00|"
    "cpu=1,mem=1G,node=1||1|None assigned|PENDING|0:0|3000",
    "105+0|105|erin|ml|gpu|normal|2024-03-01T10:00:00|2024-03-01T10:00:00|"
    "2024-03-01T10:10:00|Unknown|01:00:00|cpu=4,node=1|cpu=4,gres/gpu=1,node=1|1|g2|RUNNING|"
    "0:0|2000",
    "106|106|frank|ml|gpu|normal|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T10:00:00|"
    "2024-03-01T10:00:00|01:00:00|cpu=4,node=1||1|None assigned|CANCELLED by 0|0:0|2000",
    # a requeued job: two runs of job 103 (sacct -D), the first ended by the requeue
    "103|103|dave|phys|cpu|normal|2024-03-01T09:00:00|2024-03-01T09:00:00|2024-03-01T09:00:10|"
    "2024-03-01T09:10:00|UNLIMITED|cpu=1,mem=1G,node=1|cpu=1,mem=1G,node=1|1|c03|REQUEUED|"
    "0:0|1000",
    "103|103|dave|phys|cpu|normal|2024-03-01T09:10:00|2024-03-01T09:11:00|2024-03-01T09:12:00|"
    "2024-03-01T09:40:00|UNLIMITED|cpu=1,mem=1G,node=1|cpu=1,mem=1G,node=1|1|c03|COMPLETED|"
    "0:0|1000",
    # het-job components; the second ran 60 s past its limit (KillWait); no partition
    "107+0|107|gina||gpu||2024-03-01T12:00:00|2024-03-01T12:00:00|2024-03-01T12:00:00|"
    "2024-03-01T12:10:00|00:30:00|cpu=1,node=1|cpu=1,gres/gpu=1,node=1|1|g2|COMPLETED|0:0|",
    "107+1|108|gina|||normal|2024-03-01T12:00:00|2024-03-01T12:00:00|2024-03-01T12:00:00|"
    "2024-03-01T12:11:00|00:10:00|cpu=8,node=1|cpu=8,node=1|1|c04|TIMEOUT|0:0|",
]
T0 = 1709287200          # 2024-03-01T10:00:00 UTC


@pytest.fixture
def cluster(tmp_path):
    (tmp_path / "slurm.conf").write_text(CONF)
    return fs.read_cluster(tmp_path / "slurm.conf")


def dump(tmp_path, rows, header=HEADER, name="sacct.txt"):
    path = tmp_path / name
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


def test_records_runs_attempts_and_skips(tmp_path, cluster):
    log = read_sacct(dump(tmp_path, ROWS), cluster)
    assert log.steps == 2
    assert log.job_text.tolist() == ["100", "101_3", "103", "103", "107+0", "107+1"]
    assert log.jobs.job_id.tolist() == [100, 104, 103, 103, 107, 108]
    assert log.attempt.tolist() == [0, 0, 0, 1, 0, 0]
    assert log.state.tolist() == ["COMPLETED", "TIMEOUT", "REQUEUED", "COMPLETED",
                                  "COMPLETED", "TIMEOUT"]
    assert log.line.tolist() == [2, 5, 10, 11, 12, 13]
    assert log.schedule.start_time[0] == T0 + 5 and log.schedule.end_time[0] == T0 + 3605
    nodes = [log.schedule.nodes_of(i).tolist() for i in range(len(log.jobs))]
    assert nodes == [[4], [0, 1], [2], [2], [5], [3]]
    assert log.jobs.cpus_per_node.tolist() == [8, 5, 1, 1, 1, 8]        # 9 CPUs / 2 nodes
    assert log.jobs.gpus_per_node.tolist() == [2, 0, 0, 0, 1, 0]
    assert log.jobs.mem_per_node.tolist() == [32768, 1000, 1024, 1024, 0, 0]
    assert log.gpu_type.tolist() == ["a100", "", "", "", "", ""]
    assert log.priority.tolist()[:4] == [5000, 4000, 1000, 1000] and np.isnan(log.priority[4])
    assert log.het_job.tolist() == [-1, -1, -1, -1, 107, 107]
    assert log.exit_code.tolist()[1] == "0:15"
    skipped = {(s.job_id, s.line): s.reason for s in log.skipped}
    assert skipped == {(101, 6): "never started (PENDING)", (102, 7): "never started (PENDING)",
                       (105, 8): "still running when the dump was taken (no End)",
                       (106, 9): "never started (CANCELLED)"}
    assert any("unevenly" in n for n in log.notes)
    assert any("longer than their time limit" in n for n in log.notes)
    assert any("het-job" in n for n in log.notes)


def test_limits(tmp_path, cluster):
    log = read_sacct(dump(tmp_path, ROWS), cluster)
    # Partition_Limit -> the partition's MaxTime; UNLIMITED; the 11 min run of a 10 min
    # limit is checked with its elapsed time
    assert log.jobs.time_limit.tolist() == [7200, 2 * 86400, UNLIMITED, UNLIMITED, 1800, 660]
    w = log.workload
    assert w.jobs.job_id.tolist() == [103, 100, 104, 107, 108]
    row = w.jobs.job_id.tolist().index(108)
    assert w.jobs.time_limit[row] == 600 and w.jobs.runtime[row] == 660   # killed at 600


def test_workload_one_job_per_id(tmp_path, cluster):
    w = read_sacct(dump(tmp_path, ROWS), cluster).workload
    jobs = w.jobs
    i = jobs.job_id.tolist().index(103)
    # first attempt's submit, the eligible time of that attempt; last attempt's runtime
    assert jobs.submit_time[i] == T0 - 3600 and jobs.runtime[i] == 28 * 60
    assert [w.user_names[u] for u in jobs.user] == ["dave", "alice", "bob", "gina", "gina"]
    assert [w.account_names[a] for a in w.account] == ["phys", "ml", "phys", "unknown",
                                                       "unknown"]
    assert [w.qos_names[q] for q in w.qos] == ["normal"] * 5
    assert jobs.partition.tolist() == [0, 1, 0, 1, 0]              # empty -> default cpu
    assert w.array_job.tolist() == [-1, -1, 101, -1, -1]
    assert w.array_task.tolist() == [-1, -1, 3, -1, -1]


def test_recorded_schedule_checks_clean(tmp_path, cluster):
    log = read_sacct(dump(tmp_path, ROWS), cluster)
    report = fs.verify(cluster, log.jobs, log.schedule)
    assert report.ok, report.violations


def test_overcommit_in_the_record_is_found(tmp_path, cluster):
    rows = [
        "1|1|u|a|cpu|normal|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T10:00:00|"
        "2024-03-01T11:00:00|02:00:00|cpu=6,node=1|cpu=6,node=1|1|c01|COMPLETED|0:0|",
        "2|2|u|a|cpu|normal|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T10:30:00|"
        "2024-03-01T10:40:00|02:00:00|cpu=4,node=1|cpu=4,node=1|1|c01|COMPLETED|0:0|",
    ]
    log = read_sacct(dump(tmp_path, rows), cluster)
    report = fs.verify(cluster, log.jobs, log.schedule)
    assert [v.kind for v in report.violations] == ["overcommit"]


def test_time_zones(tmp_path, cluster):
    local = ["2024-07-01T12:00:00", "2024-07-01T12:00:00+02:00", "2024-07-01T10:00:00Z",
             "Unknown", "None", "INVALID", ""]
    utc, bad = parse_times(np.array(local, object), "Europe/Berlin")
    assert utc.tolist() == [1719828000] * 3 + [-1] * 4 and not bad.any()
    # the autumn hour that happens twice is taken as the first (summer time)
    twice, _ = parse_times(np.array(["2024-10-27T02:30:00"], object), "Europe/Berlin")
    assert twice.tolist() == [1729989000]
    path = dump(tmp_path, [ROWS[0]])
    shifted = read_sacct(path, cluster, tz="America/New_York").schedule.start_time[0]
    assert shifted - read_sacct(path, cluster).schedule.start_time[0] == 5 * 3600


DIGITS = st.integers(0, 10**6).map(str)
JOB_IDS = st.builds(
    lambda base, tag, step: base + tag + step, st.integers(1, 10**15).map(str),
    st.one_of(st.just(""), DIGITS.map("_{}".format), st.just("_[1-5%2]"),
              DIGITS.map("+{}".format)),
    st.sampled_from(["", ".batch", ".extern", ".0", ".12"]))


@settings(max_examples=120, deadline=None)
@given(st.lists(JOB_IDS, min_size=1, max_size=30))
def test_bytes_job_ids_match_the_plain_parser(ids):
    """The vectorised JobID parser (on bytes) gives what the per-value regex gives."""
    from fastsched.io.sacctvalues import job_ids_from_bytes
    width = max(map(len, ids)) + 1
    m = np.zeros((len(ids), width), np.uint8)
    for k, text in enumerate(ids):
        m[k, :len(text)] = np.frombuffer(text.encode(), np.uint8)
    *fast, ok = job_ids_from_bytes(m, np.array([len(t) for t in ids]))
    assert ok.all()
    for a, b in zip(fast, parse_job_ids(np.array(ids, dtype=object))):
        assert a.tolist() == b.tolist()


def test_unknown_time_zone(tmp_path, cluster):
    with pytest.raises(InputError, match="unknown time zone"):
        read_sacct(dump(tmp_path, ROWS), cluster, tz="Mars/Olympus")


def test_values():
    assert parse_tres("billing=8,cpu=8,gres/gpu:a100=2,gres/gpu=2,mem=3.5G,node=2") == \
        (2, 8, 2, "a100", 3584)
    assert parse_tres("cpu=4,gres/gpu:v100=1,gres/gpu:t4=2") == (-1, 4, 3, "", -1)
    assert parse_tres("") == (-1, -1, 0, "", -1)
    base, task, het, step, pending = parse_job_ids(
        np.array(["12", "12_3", "12_[4-9%2]", "12+1", "12.batch", "12_3.0"], object))
    assert base.tolist() == [12] * 6 and task.tolist() == [-1, 3, -1, -1, -1, 3]
    assert het.tolist() == [-1, -1, -1, 1, -1, -1]
    assert step.tolist() == [False] * 4 + [True] * 2
    assert pending.tolist() == [False, False, True, False, False, False]


@pytest.mark.parametrize("row, line, field, message", [
    ("1|1|u", 2, "JobID", "3 fields"),
    ("x1|1|u|a|cpu|n|2024-03-01T10:00:00||2024-03-01T10:00:00|2024-03-01T10:01:00|1|"
     "cpu=1,node=1|cpu=1,node=1|1|c01|COMPLETED|0:0|", 2, "JobID", "not a job id"),
    ("1|1|u|a|cpu|n|2024-03-01T10:00:00||2024-13-01T10:00:00|2024-03-01T10:01:00|1|"
     "cpu=1,node=1|cpu=1,node=1|1|c01|COMPLETED|0:0|", 2, "Start", "not a time"),
    ("1|1|u|a|cpu|n|2024-03-01T10:00:00||2024-03-01T10:00:00|2024-03-01T10:01:00|1:2:3:4|"
     "cpu=1,node=1|cpu=1,node=1|1|c01|COMPLETED|0:0|", 2, "Timelimit", "bad time"),
    ("1|1|u|a|cpu|n|2024-03-01T10:00:00||2024-03-01T10:00:00|2024-03-01T10:01:00|1|"
     "cpu=1,node=1|cpu=x,node=1|1|c01|COMPLETED|0:0|", 2, "AllocTRES", "not a count"),
    ("1|1|u|a|cpu|n|2024-03-01T10:00:00||2024-03-01T10:00:00|2024-03-01T10:01:00|1|"
     "cpu=1,node=1|cpu=1,node=1|2|c01|COMPLETED|0:0|", 2, "NNodes", "names 1 nodes"),
    ("1|1|u|a|cpu|n|2024-03-01T10:00:00||2024-03-01T10:00:00|2024-03-01T10:01:00|1|"
     "cpu=1,node=1|cpu=1,node=1|1|zz9|COMPLETED|0:0|", 2, "NodeList", "not a node"),
    ("1|1|u|a|cpu|n|2024-03-01T10:00:00||2024-03-01T10:00:00|2024-03-01T09:01:00|1|"
     "cpu=1,node=1|cpu=1,node=1|1|c01|COMPLETED|0:0|", 2, "End", "before its start"),
])
def test_malformed_lines(tmp_path, cluster, row, line, field, message):
    path = dump(tmp_path, [ROWS[0], row], name="mixed.txt")
    with pytest.raises(InputError, match=message) as e:
        read_sacct(dump(tmp_path, [row]), cluster)
    assert (e.value.file, e.value.line, e.value.field) == (str(tmp_path / "sacct.txt"),
                                                           line, field)
    log = read_sacct(path, cluster, skip_bad=True)      # skipped, listed, the rest read
    assert log.jobs.job_id.tolist() == [100]
    assert [(s.line, s.reason.split(":")[0]) for s in log.skipped] == [(3, "malformed")]


def test_header_errors(tmp_path, cluster):
    with pytest.raises(InputError, match="lacks Start") as e:
        read_sacct(dump(tmp_path, [], header="JobID|Submit|End|Timelimit|NNodes|NodeList|"
                        "State|AllocTRES"), cluster)
    assert e.value.line == 1
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(InputError, match="empty file"):
        read_sacct(tmp_path / "empty.txt", cluster)


def test_compressed_and_without_optional_fields(tmp_path, cluster):
    header = "JobID|Submit|Start|End|Timelimit|NNodes|NodeList|State|AllocTRES"
    rows = ["7|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T10:05:00|10|1|c02|"
            "COMPLETED|cpu=2,node=1"]
    path = tmp_path / "d.txt.gz"
    path.write_bytes(gzip.compress((header + "\n" + rows[0] + "\n").encode()))
    log = read_sacct(path, cluster)
    assert log.jobs.job_id.tolist() == [7] and log.workload.user_names == ["unknown"]
    assert log.workload.jobs.partition.tolist() == [0]


# --------------------------------------------------------------------------- fuzz

FIELD = st.one_of(
    st.sampled_from(["", "Unknown", "None", "INVALID", "(null)", "None assigned", "0", "1",
                     "2", "c01", "c[01-02]", "g1", "zz", "2024-03-01T10:00:00",
                     "2024-03-01T10:30:00", "2024-02-30T10:00:00", "2024-03-01T10:00:00+01:00",
                     "UNLIMITED", "Partition_Limit", "01:00:00", "1-0", "cpu=2,node=1",
                     "cpu=1,gres/gpu=1,mem=1G,node=1", "cpu=x", "COMPLETED", "12", "12_3",
                     "12+1", "12.batch", "12_[1-3]", "99999999999999999999", "-1", "9" * 40]),
    st.text(alphabet="0123456789_.+[]-:=,|TZabc ", max_size=12))


@settings(max_examples=90, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(FIELD, min_size=18, max_size=18), max_size=6), st.booleans())
def test_fuzz_reader(tmp_path, cluster, table, skip_bad):
    """Any dump gives a log whose every value is in range and whose schedule checks
    against its jobs, or a one-line InputError naming the file and line."""
    path = tmp_path / "fuzz.txt"
    path.write_text(HEADER + "\n" + "\n".join("|".join(r) for r in table) + "\n")
    try:
        log = read_sacct(path, cluster, skip_bad=skip_bad)
    except FastschedError as e:
        assert isinstance(e, InputError) and "\n" not in str(e) and e.line is not None
        assert not skip_bad or e.line == 1
        return
    n = len(log.jobs)
    assert len(log.schedule) == n == len(log.attempt) == len(log.line)
    assert (log.jobs.num_nodes >= 1).all() and (log.jobs.time_limit >= 1).all()
    assert (log.schedule.end_time >= log.schedule.start_time).all()
    assert (np.diff(log.schedule.alloc_offsets) == log.jobs.num_nodes).all()
    fs.verify(cluster, log.jobs, log.schedule)                # raises on inconsistent input
    w = log.workload.jobs
    assert len(np.unique(w.job_id)) == len(w)
    assert (np.diff(w.submit_time) >= 0).all()
    # each line is a run or left out, once (a run that cannot run on the cluster as
    # configured is checked, and left out of the workload only)
    lines = [s.line for s in log.skipped if not s.reason.startswith("cannot run")]
    lines += log.line.tolist()
    assert len(lines) == len(set(lines))


@settings(max_examples=36, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**5), st.integers(1, 4),
                          st.integers(1, 8), st.integers(1, 10**5)), min_size=1, max_size=20))
def test_written_records_read_back_exactly(tmp_path, cluster, jobs):
    """Records written as sacct writes them read back to the same numbers."""
    import datetime as dt
    iso = lambda t: dt.datetime.fromtimestamp(T0 + t, dt.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S")
    rows = []
    for k, (submit, wait, nodes, cpus, run) in enumerate(jobs):
        first = k % (5 - nodes)
        nl = f"c0{first + 1}" if nodes == 1 else f"c[0{first + 1}-0{first + nodes}]"
        rows.append(f"{k + 1}|{k + 1}|u{k % 3}|a|cpu|normal|{iso(submit)}|{iso(submit)}|"
                    f"{iso(submit + wait)}|{iso(submit + wait + run)}|2-00:00:00|"
                    f"cpu={cpus * nodes},node={nodes}|cpu={cpus * nodes},node={nodes}|{nodes}|"
                    f"{nl}|COMPLETED|0:0|")
    log = read_sacct(dump(tmp_path, rows), cluster)
    assert log.jobs.job_id.tolist() == list(range(1, len(jobs) + 1))
    assert (log.jobs.submit_time - T0).tolist() == [j[0] for j in jobs]
    assert (log.schedule.start_time - T0).tolist() == [j[0] + j[1] for j in jobs]
    assert log.jobs.runtime.tolist() == [j[4] for j in jobs]
    assert log.jobs.num_nodes.tolist() == [j[2] for j in jobs]
    assert log.jobs.cpus_per_node.tolist() == [j[3] for j in jobs]


# --------------------------------------------------------------------------- CLI

def test_cli_check_what_slurm_did(tmp_path, cluster, capsys):
    conf = tmp_path / "slurm.conf"
    path = dump(tmp_path, ROWS)
    assert main(["check", str(path), "--format", "sacct", "--cluster", str(conf)]) == 0
    out = capsys.readouterr().out
    assert "6 runs of 5 jobs (1 after a requeue), 2 step lines ignored" in out
    assert "job 105 (line 8): still running" in out and "\nok: 6 jobs" in out
    # the policy promises, judged as Slurm plans them (concrete nodes), priority order
    assert main(["check", str(path), "--cluster", str(conf), "--policy", "easy"]) in (0, 1)
    assert "easy(reserve_depth=1) (nodes model)" in capsys.readouterr().out
    twice = ROWS[0].replace("100|100", "200|200").replace("gres/gpu=2,mem", "gres/gpu=3,mem")
    bad = dump(tmp_path, ROWS[:1] + [twice], name="b.txt")            # 5 of g1's 4 GPUs
    assert main(["check", str(bad), "--cluster", str(conf)]) == 1      # sniffed as sacct
    assert "overcommit" in capsys.readouterr().out
    assert main(["check", str(path), "--format", "sacct"]) == 2          # needs --cluster
    assert "needs --cluster" in capsys.readouterr().err


def test_cli_simulate_sacct_on_the_pool_engine(tmp_path, capsys):
    """A dump of whole-node jobs on identical nodes replays on the pool engine (no
    compile): the replay's jobs are the dump's."""
    conf = tmp_path / "slurm.conf"
    conf.write_text("NodeName=n[1-4] CPUs=1\nPartitionName=all Nodes=ALL Default=YES\n")
    rows = [f"{k}|{k}|u|a|all|normal|2024-03-01T10:00:0{k}|2024-03-01T10:00:0{k}|"
            f"2024-03-01T10:00:0{k}|2024-03-01T10:10:0{k}|00:20:00|cpu={n},node={n}|"
            f"cpu={n},node={n}|{n}|n[1-{n}]|COMPLETED|0:0|" for k, n in ((1, 2), (2, 4))]
    rows[1] = rows[1].replace("2024-03-01T10:00:02|2024-03-01T10:10:02",
                              "2024-03-01T10:10:01|2024-03-01T10:20:01")
    path = dump(tmp_path, rows)
    out_csv = tmp_path / "jobs.csv"
    assert main(["simulate", str(path), "--format", "sacct", "--cluster", str(conf),
                 "--policy", "fcfs", "--jobs-out", str(out_csv), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "engine                                          pool" in out or "pool" in out
    import pandas as pd
    frame = pd.read_csv(out_csv)
    assert frame["job_id"].tolist() == [1, 2]
    assert (frame["start_time"] - T0).tolist() == [1, 601]
