"""Fair-share usage over time (tools.usagehistory), its plot, and the one-page HTML
report (tools.report, ``fastsched plot --kind fairshare|report``)."""
import base64
import html.parser

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from fastsched.cli import main
from fastsched.model.errors import InputError
from fastsched.policy.usage import usage_at
from fastsched.tools import plots
from fastsched.tools.report import report_html, report_numbers
from fastsched.tools.usagehistory import account_usage, schedule_times

import naive_limits as naive
from site_cases import draw_site

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
from matplotlib.image import imread  # noqa: E402

SIZE = (int(plots.FIGSIZE[1] * plots.DPI), int(plots.FIGSIZE[0] * plots.DPI))   # rows, cols


# --------------------------------------------------------------------------- usage

@st.composite
def site_runs(draw):
    """(config, workload, start, end, times): up to 6 jobs, some never started, some
    still running at the last sample, samples that may cross (or fall on) a DAILY reset."""
    n = draw(st.integers(1, 6))
    base = draw(st.sampled_from([0, 86000]))
    start = np.array([base + draw(st.integers(0, 600)) if draw(st.integers(0, 4)) else -1
                      for _ in range(n)])
    end = np.where(start >= 0, start + np.array([draw(st.integers(0, 600)) for _ in range(n)]),
                   -1)
    cfg, w = draw_site(draw, n, base)
    times = sorted(draw(st.lists(st.integers(base, base + 1300), min_size=1, max_size=6,
                                 unique=True)))
    return cfg, w, start, end, times


@settings(max_examples=25, deadline=None)
@given(site_runs())
def test_account_usage_matches_usage_at_and_the_per_second_twin(sc):
    """At each sample time the usage of every account is what usage_at charges its users
    for what their jobs ran before then, summed up the tree, and the per-second twin's
    (tests/naive_limits.naive_usage)."""
    cfg, w, start, end, times = sc
    tree = cfg.build_tree(w)
    reset_every = 86400 if cfg.usage_reset_period == "DAILY" else None
    for depth in (1, 2):
        frame = account_usage(cfg, w, start, end, times=times, depth=depth)
        assert list(frame.index) == times
        names = list(frame.columns)
        assert names == (["o"] if depth == 1 else ["a0", "a1"])
        rows = [tree.index[a] for a in names]
        for t in times:
            known = (start >= 0) & (start <= t)
            s, e = np.where(known, start, -1), np.where(known, end, -1)
            want = tree.node_usage(usage_at(cfg, tree, w, s, e, t).raw)[rows]
            slow = tree.node_usage(np.asarray(naive.naive_usage(
                cfg, tree, w, s, e, t, reset_every=reset_every)))[rows]
            assert frame.loc[t].to_numpy() == pytest.approx(want, rel=1e-9, abs=1e-6)
            assert frame.loc[t].to_numpy() == pytest.approx(slow, rel=1e-9, abs=1e-6)


def small_site():
    """A config and 4-job workload with two accounts under one organisation."""
    from fastsched.io.workload import Workload
    from fastsched.model.jobs import JobTable
    from fastsched.policy.config import SchedulerConfig
    jobs = JobTable.from_arrays(job_id=[1, 2, 3, 4], submit_time=[0, 0, 5, 6], time_limit=100,
                                runtime=10, num_nodes=1, cpus_per_node=[2, 4, 1, 1],
                                user=[0, 1, 0, 1])
    w = Workload(jobs, np.array([0, 1, 0, 1], np.int32), ["u0", "u1"], ["a0", "a1"],
                 np.zeros(2, np.int32), ["o"])
    return SchedulerConfig(decay_half_life=0), w


def test_default_samples_span_first_submit_to_last_end():
    cfg, w = small_site()
    start, end = np.array([0, 10, 12, -1]), np.array([10, 30, 20, -1])
    frame = account_usage(cfg, w, start, end, samples=4, depth=2)
    assert list(frame.index) == [0, 10, 20, 30]
    # no decay: a0 ran 2 CPUs x 10 s and 1 CPU x 8 s, a1 4 CPUs x 20 s
    assert frame["a0"].tolist() == [0, 20, 28, 28]
    assert frame["a1"].tolist() == [0, 0, 40, 80]


def test_usage_errors():
    cfg, w = small_site()
    start, end = np.array([0, 10, 12, -1]), np.array([10, 30, 20, -1])
    with pytest.raises(InputError, match="4 entries"):
        account_usage(cfg, w, start[:2], end)
    with pytest.raises(InputError, match="no account at depth 3"):
        account_usage(cfg, w, start, end, depth=3)
    with pytest.raises(InputError, match="increasing"):
        account_usage(cfg, w, start, end, times=[5, 1])


def test_schedule_times_line_records_up_with_the_workload():
    _, w = small_site()
    jobs = pd.DataFrame({"job_id": [4, 2, 1, 3, 2], "start_time": [None, 3, 0, 12, 10],
                         "end_time": [None, 5, 10, 20, 30]})        # job 2: two attempts
    start, end = schedule_times(jobs, w)
    assert start.tolist() == [0, 10, 12, -1] and end.tolist() == [10, 30, 20, -1]
    with pytest.raises(InputError, match="job 3 of the workload has no record"):
        schedule_times(jobs[jobs.job_id != 3], w, source="x.csv")


def render(fig, path):
    fig.savefig(path)
    pixels = imread(path)
    assert pixels.shape[:2] == SIZE
    assert (pixels[..., :3] < 0.9).any()
    return pixels


def usage_frame(accounts=14):
    t = np.arange(0, 1000, 50)
    return pd.DataFrame({f"acct{k:02d}": (k + 1) * np.minimum(t, 500 + 10 * k) for k in
                         range(accounts)}, index=pd.Index(t, name="time"))


@pytest.mark.parametrize("options", [{}, {"share": True}, {"top": 3}, {"top": 50}])
def test_the_fairshare_plot_renders_the_same_image_twice(tmp_path, options):
    first = render(plots.fairshare(usage_frame(), **options), tmp_path / "a.png")
    second = render(plots.fairshare(usage_frame(), **options), tmp_path / "b.png")
    np.testing.assert_array_equal(first, second)


def test_the_rest_of_the_accounts_are_one_line():
    lines = plots._top_columns(usage_frame(5), 2)
    assert list(lines.columns) == ["acct03", "acct04", "3 other accounts"]
    assert lines["3 other accounts"].tolist() == usage_frame(5).iloc[:, :3].sum(axis=1).tolist()
    with pytest.raises(InputError, match="no account usage"):
        plots.fairshare(usage_frame(0))


# --------------------------------------------------------------------------- report

def jobs_frame():
    """Four jobs on node[1-4]: one waits, one never starts; jobs 1 and 2 share nodes."""
    return pd.DataFrame({
        "job_id": [1, 2, 3, 4], "submit_time": [0, 0, 5, 6],
        "start_time": pd.array([0, 10, 12, None], dtype="Int64"),
        "end_time": pd.array([10, 30, 20, None], dtype="Int64"),
        "num_nodes": [2, 4, 1, 1], "procs": [2, 4, 1, 1], "gpus": [0, 0, 0, 0],
        "nodes": ["node[1-2]", "node[1-4]", "node1", None]})


def test_report_numbers_by_hand():
    n = report_numbers(jobs_frame(), capacity=4)
    # waits 0, 10, 7; JCTs 10, 30, 15; runs 10, 20, 8 -> bsld 1, 1.5, 1.5
    assert (n["jobs"], n["never_started"], n["max_wait"], n["makespan"]) == (4, 1, 10, 30)
    assert n["avg_wait"] == pytest.approx(17 / 3) and n["median_wait"] == 7
    assert n["avg_jct"] == pytest.approx(55 / 3)
    assert n["avg_bounded_slowdown"] == pytest.approx(4 / 3)
    assert n["max_bounded_slowdown"] == 1.5
    # node busy time: node1 [0,30), node2 [0,30), node3, node4 [10,30) -> 100 of 4 x 30
    assert n["utilisation"] == pytest.approx(100 / 120)
    assert report_numbers(jobs_frame(), capacity=8, unit="procs")["utilisation"] == \
        pytest.approx((2 * 10 + 4 * 20 + 8) / 240)
    assert report_numbers(jobs_frame())["utilisation"] is None


class Page(html.parser.HTMLParser):
    """What the report holds: images (their src), table cells, headings, and every
    tag that could load something."""

    def __init__(self):
        super().__init__()
        self.images, self.cells, self.headings, self.loads = [], [], [], []
        self._in = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.images.append(a["src"])
        if tag in ("script", "link", "iframe", "object", "embed") or \
                (tag != "img" and ("src" in a or "href" in a)):
            self.loads.append(tag)
        self._in = tag

    def handle_data(self, data):
        if self._in in ("td", "th"):
            self.cells.append(data)
        if self._in in ("h1", "h2"):
            self.headings.append(data)

    def handle_endtag(self, tag):
        self._in = None


def parse(text):
    page = Page()
    page.feed(text)
    page.close()
    return page


def test_the_report_is_one_self_contained_page(tmp_path):
    slow = jobs_frame().assign(start_time=jobs_frame().start_time + 5,
                               end_time=jobs_frame().end_time + 5)
    text = report_html({"easy": jobs_frame(), "<fcfs & co>": slow}, capacity=4,
                       usage={"easy": usage_frame()})
    page = parse(text)
    assert page.loads == []                          # nothing fetched from anywhere
    assert "http" not in text.replace("http-equiv", "")
    # 2 CDFs; per schedule: utilisation, queue, gantt; the fair share of "easy"
    assert len(page.images) == 2 + 3 + 3 + 1
    for src in page.images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<fcfs & co>" in page.headings and "<fcfs & co>" in page.cells   # escaped
    assert "mean wait (s)" in page.cells and "5.7" in page.cells and "10.7" in page.cells
    assert "83.33%" in page.cells                       # node utilisation of easy
    assert report_html({"easy": jobs_frame()}) == report_html({"easy": jobs_frame()})


def test_report_errors():
    with pytest.raises(InputError, match="no schedules"):
        report_html({})
    with pytest.raises(InputError, match="expected per-job records"):
        report_html({"a": [1, 2]})


# --------------------------------------------------------------------------- command

SLURM_CONF = """NodeName=n[1-4] CPUs=8 RealMemory=64000
PartitionName=batch Nodes=n[1-4] Default=YES MaxTime=UNLIMITED
"""
WORKLOAD = """job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,cpus_per_node,mem_per_node,partition,user,account,org
1,0,100,10,2,0,2,0,batch,u0,a0,o1
2,0,100,20,4,0,4,0,batch,u1,a1,o1
3,5,100,8,1,0,1,0,batch,u2,a2,o2
4,6,100,10,1,0,1,0,batch,u2,a2,o2
"""


@pytest.fixture
def site(tmp_path):
    (tmp_path / "slurm.conf").write_text(SLURM_CONF)
    (tmp_path / "w.csv").write_text(WORKLOAD)
    jobs_frame().to_csv(tmp_path / "jobs.csv", index=False)
    return tmp_path


def test_the_command_plots_fair_share(capsys, site):
    out = site / "fs.png"
    args = ["plot", str(site / "jobs.csv"), "--kind", "fairshare", "--workload",
            str(site / "w.csv"), "--cluster", str(site / "slurm.conf")]
    assert main([*args, "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {out}"
    assert imread(out).shape[:2] == SIZE
    assert main([*args, "--depth", "2", "--share", "--top", "1", "-o", str(out)]) == 0
    assert main([*args, "--depth", "3", "-o", str(out)]) == 2
    assert "no account at depth 3" in capsys.readouterr().err
    assert main(["plot", str(site / "jobs.csv"), "--kind", "fairshare"]) == 2
    assert "needs --workload" in capsys.readouterr().err


def test_the_command_writes_the_report(capsys, site):
    out = site / "r.html"
    assert main(["plot", "--kind", "report", str(site / "jobs.csv"), str(site / "jobs.csv"),
                 "--label", "easy", "--label", "fcfs", "--capacity", "4",
                 "--workload", str(site / "w.csv"), "--cluster", str(site / "slurm.conf"),
                 "-o", str(out)]) == 0
    page = parse(out.read_text())
    assert len(page.images) == 2 + 2 * 4
    assert ["easy", "fcfs"] == [h for h in page.headings if h in ("easy", "fcfs")]
    assert "83.33%" in page.cells


def test_records_in_parquet_plot_and_report_as_csv_does(capsys, site):
    pytest.importorskip("pyarrow")
    from fastsched.io.jobsout import write_jobs
    write_jobs(jobs_frame(), site / "jobs.parquet")
    back = plots.read_jobs(site / "jobs.parquet")
    assert back["start_time"].isna().tolist() == [False, False, False, True]
    pd.testing.assert_frame_equal(back, plots.read_jobs(site / "jobs.csv"), check_dtype=False)
    out = site / "p.html"
    assert main(["plot", "--kind", "report", str(site / "jobs.parquet"), "--capacity", "4",
                 "-o", str(out)]) == 0
    assert "83.33%" in parse(out.read_text()).cells


def test_the_numbers_are_the_results_summary():
    """report_numbers over a result's records = the simulator's summary (same
    definitions); a result's cluster gives the capacity."""
    import fastsched as fs
    trace = fs.read_swf(fs.bundled_trace("KTH-SP2"))
    jobs = trace.jobs.take(np.arange(400))
    result = fs.simulate(fs.Cluster.homogeneous(trace.procs), jobs, "easy")
    summary = result.summary
    n = report_numbers(result.jobs, capacity=trace.procs)
    for key in ("avg_wait", "median_wait", "max_wait", "avg_jct", "p95_jct",
                "avg_bounded_slowdown", "makespan", "utilisation", "never_started"):
        assert n[key] == pytest.approx(summary[key], rel=1e-12), key
    cells = parse(report_html({"easy": result}, gantt=False)).cells
    assert f"{summary['utilisation']:.2%}" in cells
    assert f"node utilisation (of {trace.procs:,} nodes)" in cells
