"""fastsched bench's reporting (decisions/s, median wall, peak RSS) and the B6 plot script.
Times are only checked to be reported: their values depend on the machine and its load."""
import importlib.util
from pathlib import Path

import pytest

from fastsched.bench.scenarios import format_figures, run_scenario
from fastsched.bench.state import measure_point

ROOT = Path(__file__).resolve().parents[1]


def test_kth_easy_reports_decisions_median_and_rss():
    fig = run_scenario("kth-easy", repeat=1)
    for policy in ("easy", "conservative"):
        assert fig[f"{policy}_decisions_per_s"] >= 0 and fig[f"{policy}_median_ms"] >= 0
    assert fig["peak_rss_mb"] > 0 and fig["runs"] == 1


def test_node_point_reports_decisions_median_and_rss():
    # no time limit: a cold Numba cache on a busy machine may take minutes to warm up
    fig = measure_point("ai-8k", 300, "easy", False, repeat=1, max_seconds=None)
    assert "not_measured" not in fig
    assert fig["decisions_per_s"] >= 0 and fig["median_ms"] >= 0 and fig["peak_rss_mb"] > 0
    # median_ms is rounded to 0.1 ms, us_per_decision is not
    assert fig["gpus"] == 8_000 and fig["us_per_decision"] == pytest.approx(
        1000 * fig["median_ms"] / 300, abs=1000 * 0.05 / 300 + 1e-3)


def test_node_point_over_its_time_is_not_measured():
    fig = measure_point("ai-8k", 300, "easy", False, repeat=2, max_seconds=0.0)
    assert fig["not_measured"].startswith("a warmup pass took")
    assert len(fig["first_runs_s"]) == 1 and "median_ms" not in fig


def test_ai_mix_site_reports_wall_decisions_and_rss():
    fig = run_scenario("ai-mix-1m", repeat=3, jobs=300)
    assert fig["jobs"] == 300 and fig["runs"] == 1 and fig["passes"] > 0
    assert fig["wall_s"] >= 0 and fig["decisions_per_s"] >= 0 and fig["peak_rss_mb"] > 0


def test_ai_mix_site_with_failures_reports_both_runs():
    fig = run_scenario("ai-mix-1m", repeat=1, jobs=300, failures="mtbf=7d,repair=1h,seed=1")
    assert fig["failures"] == "mtbf=7d,repair=1h,seed=1"
    assert fig["killed_attempts_failures"] > 0 and 0 < fig["goodput_failures"] < 1
    assert {"cpu_s_failures", "wall_s_failures", "cpu_ratio_failures"} <= set(fig)
    assert fig["passes_failures"] > 0 and fig["passes"] > 0


def test_reservations_are_held_by_the_benchmark_pass():
    """with_reservations: windows on disjoint 32-node runs; the pass plans no job on
    a reserved node while its window is open."""
    import numpy as np
    from fastsched.bench.state import busy_state, run_pass, with_reservations
    state = with_reservations(busy_state("ai-8k", pending=300), 10)
    start, end, node = state.blocked
    assert len(np.unique(node)) == 10 * 32 and (start[:2] < state.now).all()
    d = run_pass(state, "conservative", True)
    assert (d.outcome < 2).all()
    clashes = 0
    for i in range(len(d)):
        t0 = d.planned_start[i]
        t1 = t0 + int(state.pending.time_limit[state.pending.job_id == d.job_id[i]][0])
        on = np.isin(node, d.nodes_of(i))
        clashes += int(np.count_nonzero(on & (start < t1) & (end > t0)))
    assert clashes == 0
    fig = measure_point("ai-8k", 300, "easy", False, repeat=1, max_seconds=None,
                        reservations=10)
    assert fig["reservations"] == 10 and fig["cpu_median_ms"] >= 0


def test_bench_jobs_is_for_ai_mix_only(capsys):
    from fastsched.cli import main
    assert main(["bench", "kth-easy", "--jobs", "10"]) == 2
    assert "--jobs" in capsys.readouterr().err


def test_scaling_grid_from_the_cli(capsys, tmp_path):
    """--clusters/--pending choose the grid; every point warms up on a small state."""
    import json
    from fastsched.cli import main
    out = tmp_path / "s.json"
    assert main(["bench", "scaling", "--clusters", "ai-8k", "--pending", "200,400",
                 "--repeat", "1", "--json", str(out)]) == 0
    points = json.loads(out.read_text())["points"]
    assert [(p["pending"], p["policy"]) for p in points] == [
        (200, "easy"), (200, "conservative"), (400, "easy"), (400, "conservative")]
    for p in points:
        assert p["cluster"] == "ai-8k" and p["runs"] == 1 and p["median_ms"] >= 0
        assert p["warmup"] == "small" and p["warmup_ms"] >= 0
        assert sum(p["outcomes"].values()) == p["pending"]
    assert "400  conservative" in capsys.readouterr().out


def test_short_queue_from_the_cli(capsys, tmp_path):
    """B9: the kept-state and pure passes timed alternately, CPU beside wall, same
    decisions; then the loop (pass, apply, complete, submit) on the kept state, never
    rebuilt."""
    import json
    from fastsched.cli import main
    out = tmp_path / "b9.json"
    assert main(["bench", "short-queue", "--clusters", "ai-8k", "--pending", "300",
                 "--repeat", "2", "--json", str(out)]) == 0
    p, loop = json.loads(out.read_text())["points"]
    assert p["cluster"] == "ai-8k" and p["pending"] == 300 and p["same_decisions"] is True
    assert loop["pending"] == 300
    assert p["starts"] > 0 and p["kept_cpu_ms"] >= 0 and p["pure_wall_ms"] >= 0
    assert loop["mode"] == "loop" and loop["same_decisions"] is True
    assert loop["kept_builds"] == 1 and loop["kept_pass_cpu_ms"] >= 0
    assert "kept_wall_spread_ms: " in capsys.readouterr().out


@pytest.mark.parametrize("argv, says", [
    (["bench", "kth-easy", "--pending", "10"], "--pending is for the scaling and short-queue"),
    (["bench", "easy-100k", "--pending", "10"], "--pending is for the scaling and short-queue"),
    (["bench", "scaling", "--clusters", "ai-9k"], "unknown 'ai-9k'"),
    (["bench", "kth-easy", "--reservations", "3"], "--reservations is for the easy-100k"),
    (["bench", "easy-100k", "--failures", "mtbf=1d,repair=1h"], "--failures is for the ai-mix-1m"),
    (["bench", "ai-mix-1m", "--failures", "mtbf=1d"], "needs repair"),
    (["bench", "scaling", "--pending", "10,x"], "not an integer"),
    (["bench", "scaling", "--pending", ","], "empty list"),
])
def test_scaling_options_are_checked(capsys, argv, says):
    from fastsched.cli import main
    try:
        code = main(argv)
    except SystemExit as e:         # argparse's own usage errors
        code = e.code
    assert code == 2 and says in capsys.readouterr().err


POINTS = {"scenario": "scaling", "machine": "test", "points": [
    {"cluster": "ai-8k", "gpus": 8000, "pending": 1000, "policy": "easy", "median_ms": 3.0,
     "decisions_per_s": 333333, "us_per_decision": 3.0, "peak_rss_mb": 140.0},
    {"cluster": "ai-100k", "gpus": 100000, "pending": 1000, "policy": "easy",
     "median_ms": 80.0, "decisions_per_s": 12500, "us_per_decision": 80.0},
    {"cluster": "ai-8k", "gpus": 8000, "pending": 10000, "policy": "easy", "median_ms": 5.0,
     "decisions_per_s": 2000000, "us_per_decision": 0.5},
    {"cluster": "ai-100k", "gpus": 100000, "pending": 100000, "policy": "conservative",
     "not_measured": "a run took more than 120 s"}]}


def test_format_figures_tabulates_points():
    text = format_figures(POINTS)
    lines = text.splitlines()
    assert lines[0].split(":") == ["                    scenario", " scaling"]
    header = [ln for ln in lines if "decisions/s" in ln]
    assert len(header) == 1 and "median ms" in header[0] and "peak RSS MB" in header[0]
    assert any("333333" in ln for ln in lines)
    assert any("more than 120 s" in ln for ln in lines)


def test_plot_scaling_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    spec = importlib.util.spec_from_file_location("plot_scaling",
                                                  ROOT / "benchmarks" / "plot_scaling.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    s = mod.series(POINTS["points"], "gpus", ("policy", "pending"))
    assert s == {("easy", 1000): [(8000, 3.0), (100000, 80.0)], ("easy", 10000): [(8000, 0.5)]}
    out = tmp_path / "scaling.png"
    mod.plot(POINTS, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
