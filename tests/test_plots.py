"""Plots (fastsched.tools.plots, ``fastsched plot``): each kind renders a non-blank PNG
of the fixed size, the same pixels twice; the step functions against a per-instant
count."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from fastsched.cli import main
from fastsched.model.errors import InputError
from fastsched.tools import plots

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
from matplotlib.image import imread  # noqa: E402

SIZE = (int(plots.FIGSIZE[1] * plots.DPI), int(plots.FIGSIZE[0] * plots.DPI))   # rows, cols


def jobs_frame():
    """Four jobs on node[1-4]: one waits, one never starts."""
    return pd.DataFrame({
        "job_id": [1, 2, 3, 4], "submit_time": [0, 0, 5, 6],
        "start_time": pd.array([0, 10, 12, None], dtype="Int64"),
        "end_time": pd.array([10, 30, 20, None], dtype="Int64"),
        "num_nodes": [2, 4, 1, 1], "procs": [2, 4, 1, 1], "gpus": [0, 0, 0, 0],
        "nodes": ["node[1-2]", "node[1-4]", "node10", None],
        "partition": ["a", "b", "a", "b"]})


def render(fig, path):
    fig.savefig(path)
    pixels = imread(path)
    assert pixels.shape[:2] == SIZE
    assert (pixels[..., :3] < 0.9).any()           # something drawn besides white
    return pixels


def sweep_table():
    rows = []
    for trace in ("t1", "t2"):
        for policy, depths in (("fcfs", [None]), ("easy", [1, 2, 4])):
            for depth in depths:
                for seed in (1, 2):
                    rows.append({"trace": trace, "policy": policy, "reserve_depth": depth,
                                 "seed": seed, "order": "submit",
                                 "avg_bounded_slowdown": 10.0 + (depth or 8) + seed})
    return pd.DataFrame(rows).astype({"reserve_depth": "Int64"})


@pytest.mark.parametrize("kind", ["gantt", "gantt-partition", "util", "util-share", "queue",
                                  "cdf-wait", "cdf-bsld", "sweep", "sweep-one-trace"])
def test_each_plot_renders_the_same_image_twice(tmp_path, kind):
    jobs = jobs_frame()
    make = {
        "gantt": lambda: plots.gantt(jobs),
        "gantt-partition": lambda: plots.gantt(jobs, color_by="partition"),
        "util": lambda: plots.utilisation(jobs),
        "util-share": lambda: plots.utilisation(jobs, unit="procs", capacity=8),
        "queue": lambda: plots.queue_length(jobs),
        "cdf-wait": lambda: plots.cdf({"a": jobs, "b": jobs.assign(start_time=jobs.end_time)}),
        "cdf-bsld": lambda: plots.cdf({"a": jobs}, metric="bsld"),
        "sweep": lambda: plots.sweep_plot(sweep_table()),
        "sweep-one-trace": lambda: plots.sweep_plot(sweep_table().query("trace == 't1'"),
                                                    x="seed"),
    }[kind]
    first = render(make(), tmp_path / "a.png")
    second = render(make(), tmp_path / "b.png")
    np.testing.assert_array_equal(first, second)


def test_svg_too(tmp_path):
    plots.queue_length(jobs_frame()).savefig(tmp_path / "q.svg")
    assert (tmp_path / "q.svg").read_text().lstrip().startswith("<?xml")


def naive_level(times, changes, at):
    """The step function's value at ``at``: every change at or before it."""
    return sum(d for t, d in zip(times, changes) if t <= at)


@settings(max_examples=42, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 30), st.integers(1, 5)),
                min_size=1, max_size=20))
def test_steps_match_a_per_instant_count(spans):
    start = np.array([s for s, _, _ in spans])
    end = start + np.array([d for _, d, _ in spans])
    size = np.array([n for _, _, n in spans])
    t, level = plots._steps(start, size, end, -size)
    assert list(t) == sorted(set(start) | set(end))
    for when, value in zip(t, level):
        running = sum(n for s, e, n in zip(start, end, size) if s <= when < e)
        assert value == running == naive_level(np.r_[start, end], np.r_[size, -size], when)


def test_runs():
    assert list(plots._runs([0, 1, 2, 5, 7, 8])) == [(0, 2), (5, 5), (7, 8)]
    assert list(plots._runs([])) == []
    assert sorted(["n10", "n9", "n100"], key=plots._natural) == ["n9", "n10", "n100"]


def test_errors_name_the_column():
    with pytest.raises(InputError, match="no column 'nodes'"):
        plots.gantt(jobs_frame().drop(columns="nodes"))
    with pytest.raises(InputError, match="unknown metric"):
        plots.cdf({"a": jobs_frame()}, metric="slowness")
    with pytest.raises(InputError, match="no column 'colour'"):
        plots.gantt(jobs_frame(), color_by="colour")
    with pytest.raises(InputError, match="unknown unit"):
        plots.utilisation(jobs_frame(), unit="cores")


@pytest.fixture
def jobs_csv(tmp_path):
    path = tmp_path / "jobs.csv"
    jobs_frame().to_csv(path, index=False)
    return path


@pytest.mark.parametrize("argv", [["--kind", "gantt", "--color-by", "partition"],
                                  ["--kind", "util", "--capacity", "10"],
                                  ["--kind", "queue", "--title", "q"],
                                  ["--kind", "cdf", "--metric", "jct"]])
def test_the_command(capsys, tmp_path, jobs_csv, argv):
    out = tmp_path / "fig.png"
    assert main(["plot", str(jobs_csv), *argv, "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {out}"
    assert imread(out).shape[:2] == SIZE


def test_the_command_plots_a_sweep_table(capsys, tmp_path):
    table = tmp_path / "sweep.csv"
    from fastsched.tools.sweep import results_frame
    results_frame(sweep_table().to_dict("records")).to_csv(table, index=False)
    out = tmp_path / "s.png"
    assert main(["plot", "--kind", "sweep", str(table), "-o", str(out), "--x", "seed"]) == 0
    assert imread(out).shape[:2] == SIZE


def test_the_command_cdf_of_several_files(capsys, tmp_path, jobs_csv):
    out = tmp_path / "c.png"
    assert main(["plot", "--kind", "cdf", str(jobs_csv), str(jobs_csv), "--label", "x",
                 "--label", "y", "-o", str(out)]) == 0
    assert main(["plot", "--kind", "cdf", str(jobs_csv), str(jobs_csv), "--label", "x",
                 "-o", str(out)]) == 2
    assert "2 files" in capsys.readouterr().err
    assert main(["plot", "--kind", "gantt", str(jobs_csv), str(jobs_csv)]) == 2
    assert main(["plot", "--kind", "gantt", str(tmp_path / "none.csv")]) == 2
    assert "none.csv" in capsys.readouterr().err


def test_without_matplotlib_the_extra_is_named(capsys, monkeypatch, jobs_csv):
    import sys
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)     # import fails
    assert main(["plot", "--kind", "queue", str(jobs_csv)]) == 2
    assert "pip install 'fastsched[plot]'" in capsys.readouterr().err


def test_utilisation_of_several_schedules(tmp_path):
    """Two schedules on one axis (replay-report --plots), each its own line."""
    later = jobs_frame().assign(start_time=lambda f: f.start_time + 5,
                                end_time=lambda f: f.end_time + 5)
    fig = plots.utilisation({"a": jobs_frame(), "b": later}, capacity=4)
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.get_lines()] == ["a", "b"]
    assert ax.get_lines()[1].get_xdata()[0] == ax.get_lines()[0].get_xdata()[0] + 5
    assert ax.get_ylim()[1] == pytest.approx(1.05 * 5 / 4)      # 5 of 4 nodes: shown
    render(fig, tmp_path / "u.png")
    with pytest.raises(InputError):
        plots.utilisation({})
