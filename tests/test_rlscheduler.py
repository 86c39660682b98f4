"""Research mode: RLScheduler (SC'20). Its published Tables V and VI, cell by cell; its
simulator's rules on hand-made windows; its trace conventions; the command."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastsched.cli import main
from fastsched.io.swf import bundled_trace
from fastsched.model.errors import InputError
from fastsched.tools.rlscheduler import (DIGITS, POLICIES, PUBLISHED, policy_keys,
                                         read_rl_trace, reproduce, schedule_window,
                                         window_bsld, window_starts, window_utilisation)
from fastsched.tools.rlsim import RLJobs, RLWindow

from naive_rlscheduler import check_window, score

ISSUE_STARTS = [1981, 2756, 4299, 8850, 3316, 2714, 5228, 7762, 4022, 7085]


@pytest.fixture(scope="module")
def tables():
    return {(name, bf): reproduce(bundled_trace(name), backfill=bf)
            for name, bf in PUBLISHED}


@pytest.mark.parametrize("name,backfill", sorted(PUBLISHED))
@pytest.mark.parametrize("metric", sorted(DIGITS))
def test_every_published_cell_reproduces_to_the_printed_digits(tables, name, backfill,
                                                                 metric):
    table = tables[name, backfill]
    assert table.starts == ISSUE_STARTS
    got = {p: round(table.mean(metric, p), DIGITS[metric]) for p in POLICIES}
    assert got == PUBLISHED[name, backfill][metric]


def test_the_window_starts_are_gyms_seeding_np_random_1():
    assert window_starts(10_000) == ISSUE_STARTS
    assert window_starts(10_000, seed=2) != ISSUE_STARTS
    assert all(1024 <= s < 10_000 - 1025 for s in window_starts(10_000, seed=7, windows=50))
    with pytest.raises(InputError):
        window_starts(2000)


def test_the_bundled_lublin_traces_are_read_as_rlscheduler_reads_them():
    for name in ("lublin_256", "lublin_256_new2"):
        jobs = read_rl_trace(bundled_trace(name))
        assert len(jobs) == 10_000 and jobs.machine_nodes == jobs.machine_procs == 256
        assert jobs.header_lines[1] == "; Acknowledge: Uri Lublin, Hebrew University"
        assert (jobs.request == jobs.run).all()      # field 9 is -1 throughout


@pytest.mark.parametrize("policy", POLICIES)
def test_sort_keys_equal_rlschedulers_per_job_scores(policy):
    jobs = read_rl_trace(bundled_trace("lublin_256"))
    keys = policy_keys(jobs, policy)
    for i in range(0, len(jobs), 7):
        want = score(policy, int(jobs.submit[i]), int(jobs.procs[i]), int(jobs.request[i]))
        assert keys[i] == want


# --------------------------------------------------------------------------- rules

def make_jobs(rows, nodes=4, procs=None):
    """rows: (submit, run, procs, request)."""
    a = np.array(rows, dtype=np.int64).reshape(-1, 4)
    return RLJobs("hand", np.arange(1, len(a) + 1), a[:, 0], a[:, 1], a[:, 3], a[:, 2],
                  nodes, procs or nodes)


# job 2 needs the whole machine at t=1; shadow = 10 (job 1's estimated end). Job 3
# (2 + 8 = 10) is not < 10: never backfilled; job 4 (3 + 6 = 9) is, although it came later.
HAND = [(0, 10, 3, 10), (1, 10, 4, 10), (2, 8, 1, 8), (3, 6, 1, 6)]


def test_backfilling_is_strict_scans_fcfs_and_the_head_waits():
    jobs = make_jobs(HAND)
    win = schedule_window(jobs, 0, 4, policy_keys(jobs, "FCFS"), backfill=True)
    assert win.started == [(0, 0), (3, 3), (1, 10), (2, 20)]
    win = schedule_window(jobs, 0, 4, policy_keys(jobs, "FCFS"), backfill=False)
    assert win.started == [(0, 0), (1, 10), (2, 20), (3, 20)]


def test_a_head_stays_the_head_until_it_starts():
    # SJF picks job 2 (run 10) at t=1; job 3 (run 1, 4 procs) arrives later, is shorter
    # but cannot overtake it: the head keeps its place.
    jobs = make_jobs([(0, 10, 3, 10), (1, 10, 4, 10), (2, 1, 4, 1)])
    win = schedule_window(jobs, 0, 3, policy_keys(jobs, "SJF"), backfill=False)
    assert win.started == [(0, 0), (1, 10), (2, 20)]


def test_metrics_as_rlscheduler_scores_them():
    jobs = make_jobs(HAND)
    win = schedule_window(jobs, 0, 4, policy_keys(jobs, "FCFS"), backfill=True)
    bslds = [1.0, 1.0, (10 - 1 + 10) / 10, (20 - 2 + 8) / 10]
    assert math.isclose(window_bsld(win), sum(bslds) / 4)
    work = 10 * 3 + 6 * 1 + 10 * 4 + 8 * 1
    assert math.isclose(window_utilisation(win, 4), work / ((20 - 0) * 4))


def test_nodes_of_several_processors_are_counted_whole():
    jobs = make_jobs([(0, 5, 3, 5), (0, 5, 2, 5)], nodes=2, procs=4)   # 2 procs per node
    assert jobs.nodes() == [2, 1]
    win = schedule_window(jobs, 0, 2, policy_keys(jobs, "FCFS"), backfill=False)
    assert win.started == [(0, 0), (1, 5)]


@st.composite
def windows(draw):
    n = draw(st.integers(1, 25))
    gaps = draw(st.lists(st.integers(0, 20), min_size=n, max_size=n))
    rows = []
    for submit in np.cumsum(gaps).tolist():
        run = draw(st.integers(1, 40))
        rows.append((submit, run, draw(st.integers(1, 6)), run + draw(st.integers(0, 20))))
    return make_jobs(rows, nodes=6)


@settings(max_examples=150, deadline=None)
@given(jobs=windows(), policy=st.sampled_from(POLICIES), backfill=st.booleans())
def test_every_schedule_is_feasible_and_complete(jobs, policy, backfill):
    win = schedule_window(jobs, 0, len(jobs), policy_keys(jobs, policy), backfill=backfill)
    assert check_window(win, jobs.machine_nodes) == []
    if not backfill:      # without backfilling jobs start in decision order
        times = [t for _, t in win.started]
        assert times == sorted(times)


def test_a_window_outside_the_trace_or_a_job_not_queued_is_refused():
    jobs = make_jobs(HAND)
    with pytest.raises(ValueError):
        RLWindow(jobs, 2, 4, backfill=False)
    win = RLWindow(jobs, 0, 4, backfill=False)
    with pytest.raises(ValueError, match="not queued"):
        win.run(1)
    assert (win.queue, win.started, win.free) == ([0], [], 4)     # nothing changed


# --------------------------------------------------------------------------- traces

HEADER = "; MaxNodes: 8\n; MaxProcs: 16\n"


def rec(job, submit, run, alloc, req, limit):
    return " ".join(map(str, [job, submit, -1, run, alloc, -1, -1, req, limit] + [-1] * 9))


def test_trace_conventions(tmp_path):
    p = tmp_path / "t.swf"
    p.write_text(HEADER + "\n".join([
        rec(3, 30, 40, 2, 5, -1),      # procs = max(2, 5); request = runtime
        rec(1, 10, 0, 1, 1, 50),       # runtime 0: left out
        rec(2, 20, -5, 4, -1, 60),     # negative runtime counts as 10
    ]) + "\n")
    jobs = read_rl_trace(p)
    assert jobs.job_id.tolist() == [2, 3]           # job-number order
    assert jobs.procs.tolist() == [4, 5] and jobs.run.tolist() == [10, 40]
    assert jobs.request.tolist() == [60, 40]
    assert (jobs.machine_nodes, jobs.machine_procs, jobs.nodes()) == (8, 16, [2, 3])


@pytest.mark.parametrize("line,header,where", [
    (rec(1, 0, 10, 20, 1, 10), HEADER, "t.swf:3: field 5"),            # > 16 procs
    (rec(1, 0, 10, 2, 1, 0), HEADER, "t.swf:3: field 9"),              # no request
    (rec(1, 0, 10.5, 2, 1, 10), HEADER, "t.swf:3: field 4"),           # not integral
    (rec(1, 0, 10, 2, 1, 10), "; MaxProcs: 16\n", "field MaxNodes"),   # no MaxNodes
    ("1 2 3", HEADER, "t.swf:3: expected 18 fields"),
])
def test_bad_traces_raise_input_errors_naming_line_and_field(tmp_path, line, header, where):
    p = tmp_path / "t.swf"
    p.write_text(header + line + "\n")
    with pytest.raises(InputError, match=where):
        read_rl_trace(p)


# --------------------------------------------------------------------------- command

def test_the_command_prints_the_tables_rows(capsys, tmp_path):
    out_json = tmp_path / "w.json"
    assert main(["research", "rlscheduler", "--trace", "lublin_256_new2.swf.xz",
                 "--backfill", "--json", str(out_json)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("backfilling on") and out[1].endswith(", 7085")
    assert out[3].split() == ["FCFS", "WFP3", "UNI", "SJF", "F1"]
    assert out[4].split() == ["bsld", "247.61", "318.35", "379.59", "91.99", "148.25"]
    assert out[5].split() == ["utilisation", "0.587", "0.583", "0.587", "0.593", "0.552"]
    assert out[6].split()[:2] == ["bsld", "(paper)"]
    assert '"starts"' in out_json.read_text()


def test_the_papers_rows_are_shown_only_for_the_papers_protocol(capsys):
    assert main(["research", "rlscheduler", "--trace", "lublin_256", "--windows", "2"]) == 0
    out = capsys.readouterr().out
    assert "2 windows" in out and "(paper)" not in out


def test_the_command_on_a_missing_trace_is_an_error(capsys):
    assert main(["research", "rlscheduler", "--trace", "nope.swf"]) == 2
    assert "nope.swf" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["research", "--help"], ["research", "rlscheduler", "--help"]])
def test_help(capsys, argv):
    with pytest.raises(SystemExit) as ei:
        main(argv)
    assert ei.value.code == 0 and "usage: fastsched research" in capsys.readouterr().out
