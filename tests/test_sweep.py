"""Sweeps (fastsched.tools.sweep, fastsched.tools.sweepfile, ``fastsched sweep``): the
grid a sweep file gives, each cell's row against a direct simulate, identical tables
whatever the executor, resuming, Parquet, and errors."""
import importlib.util
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import fastsched as fs
from fastsched.cli import main
from fastsched.model.errors import InputError, UnsupportedError
from fastsched.tools import sweep as sweep_mod
from fastsched.tools.sweep import TIMING_COLUMNS, read_results, run_cell, run_sweep
from fastsched.tools.sweepfile import load_sweep, parse_sweep

# 2 traces x (fcfs + easy x 2 depths + conservative) x 2 orders = 16 cells of 300 jobs
SWEEP = """\
policies = ["fcfs", "easy", "conservative"]
reserve_depths = [1, 3]
orders = ["submit", "wfp3"]

[[trace]]
path = "KTH-SP2"
jobs = 300

[[trace]]
name = "lublin"
path = "lublin_256"
jobs = 300
"""


@pytest.fixture
def sweep_file(tmp_path):
    path = tmp_path / "sweep.toml"
    path.write_text(SWEEP)
    return path


def untimed(frame):
    return frame.drop(columns=list(TIMING_COLUMNS)).reset_index(drop=True)


# --------------------------------------------------------------------------- the grid

def test_the_grid_in_order(sweep_file):
    grid = load_sweep(sweep_file)
    assert len(grid) == 16
    first = [(c.trace.name, c.policy, c.reserve_depth, c.order) for c in grid.cells[:8]]
    assert first == [("KTH-SP2", "fcfs", None, "submit"), ("KTH-SP2", "fcfs", None, "WFP3"),
                     ("KTH-SP2", "easy", 1, "submit"), ("KTH-SP2", "easy", 1, "WFP3"),
                     ("KTH-SP2", "easy", 3, "submit"), ("KTH-SP2", "easy", 3, "WFP3"),
                     ("KTH-SP2", "conservative", None, "submit"),
                     ("KTH-SP2", "conservative", None, "WFP3")]
    assert grid.cells[8].trace.name == "lublin"
    # a waiting order carries its recomputation period; the others none
    assert [c.order_period for c in grid.cells[:2]] == [None, 60]
    assert grid.cells[0].trace.path == str(fs.bundled_trace("KTH-SP2"))


@settings(max_examples=15, deadline=None)
@given(policies=st.lists(st.sampled_from(["fcfs", "easy", "conservative"]), min_size=1,
                         unique=True),
       depths=st.lists(st.integers(1, 9), min_size=1, max_size=3, unique=True),
       orders=st.lists(st.sampled_from(["submit", "SJF", "F1", "WFP3"]), min_size=1,
                       unique=True),
       seeds=st.lists(st.integers(0, 99), min_size=1, max_size=3, unique=True),
       files=st.integers(0, 2), generated=st.integers(0, 2))
def test_the_grid_is_the_product_of_its_axes(policies, depths, orders, seeds, files,
                                             generated):
    traces = "".join(f'[[trace]]\nname = "f{i}"\npath = "KTH-SP2"\n' for i in range(files))
    traces += "".join(f'[[trace]]\nname = "g{i}"\ngenerate = "ai-mix"\ncluster = "ai-8k"\n'
                      f"jobs = 10\n" for i in range(generated))
    text = (f"policies = {json.dumps(policies)}\nreserve_depths = {depths}\n"
            f"orders = {json.dumps(orders)}\nseeds = {seeds}\n" + traces)
    if files + generated == 0:
        with pytest.raises(InputError, match="at least one"):
            parse_sweep(text)
        return
    grid = parse_sweep(text)
    per_trace = sum(len(depths) if p == "easy" else 1 for p in policies) * len(orders)
    assert len(grid) == per_trace * (files + generated * len(seeds))
    keys = [tuple(sorted(c.config().items(), key=lambda kv: kv[0])) for c in grid.cells]
    assert len(set(keys)) == len(keys)          # every cell distinct


@pytest.mark.parametrize("text, line, field, message", [
    ('policies = ["easy"]\nbogus = 1\n[[trace]]\npath = "KTH-SP2"\n', 2, "bogus", "unknown key"),
    ('policies = ["sjf"]\n[[trace]]\npath = "KTH-SP2"\n', 1, "policies", "unknown 'sjf'"),
    ('policies = ["easy"]\n', None, "trace", "at least one"),
    ('policies = ["easy"]\n[[trace]]\npath = "KTH-SP2"\n[[trace]]\ngenerate = "ai-mix"\n'
     'jobs = 5\n', 4, "trace[1]", "needs cluster"),
    ('policies = ["easy"]\n[[trace]]\npath = "KTH-SP2"\njobs = 0\n', 4, "trace[0].jobs",
     "must be in 1"),
    ('policies = ["easy"]\norders = ["LJF"]\n[[trace]]\npath = "KTH-SP2"\n', 2, "orders",
     "unknown order"),
    ('policies = ["easy", "easy"]\n[[trace]]\npath = "KTH-SP2"\n', 1, "policies", "twice"),
    ('policies = ["easy"]\n[[trace]]\npath = "KTH-SP2"\n[[trace]]\npath = "KTH-SP2"\n', 4,
     "trace[1].name", "two traces named"),
    ('policies = ["easy"]\n[[trace]]\npath = "x.swf"\nwhat = 3\n', 4, "trace[0].what",
     "unknown key"),
    ('policies = ["easy"]\n[[trace]]\n', 2, "trace[0]", "either path"),
    ('policies = ["easy"]\nreserve_depths = [1,,]\n', 2, None, "not valid TOML"),
])
def test_errors_name_file_line_and_field(text, line, field, message):
    with pytest.raises(InputError, match=message) as ei:
        parse_sweep(text, source="s.toml")
    assert ei.value.file == "s.toml"
    assert ei.value.line == line
    assert ei.value.field == field


# --------------------------------------------------------------------------- cells

@pytest.mark.parametrize("index", [0, 1, 3, 4, 9, 15])
def test_a_cell_is_the_simulation_it_names(sweep_file, index):
    """The row's metrics are the summary of a plain simulate call with the cell's
    options (the research order as ``--order`` gives it)."""
    cell = load_sweep(sweep_file).cells[index]
    trace = fs.read_swf(cell.trace.path)
    jobs = trace.jobs.take(np.arange(len(trace.jobs)) < cell.trace.jobs)
    options = {}
    if cell.order == "WFP3":
        options = dict(priority=lambda now, progress: -fs.research_order("WFP3", jobs, now),
                       period=60)
    expected = fs.simulate(fs.Cluster.homogeneous(trace.procs), jobs, cell.policy,
                           reserve_depth=cell.reserve_depth or 1, skipped=trace.skipped,
                           **options).summary
    row = run_cell(cell)
    assert row["error"] is None and row["model"] == expected["reservations"]
    for key in ("jobs", "avg_wait", "max_wait", "avg_bounded_slowdown", "utilisation",
                "makespan", "passes"):
        assert row[key] == expected[key], key


def test_a_cell_the_simulator_refuses_has_its_message(tmp_path):
    """The counts model cannot plan GPU jobs: the cell's row says so, the sweep goes on;
    a rerun tries it again."""
    text = ('policies = ["easy"]\nreservations = "counts"\nseeds = [1, 2]\n[[trace]]\n'
            'generate = "ai-mix"\ncluster = "ai-8k"\njobs = 50\n')
    out = tmp_path / "out.csv"
    frame = run_sweep(parse_sweep(text), out, executor="serial", progress=False)
    assert len(frame) == 2 and list(frame["seed"]) == [1, 2]
    assert frame["error"].notna().all() and frame["avg_wait"].isna().all()
    assert "counts" in frame["error"][0]
    again = run_sweep(parse_sweep(text), out, executor="serial", progress=False)
    assert again.attrs["cells_run"] == 2
    pd.testing.assert_frame_equal(untimed(again), untimed(frame))


def test_a_missing_trace_file_is_each_cells_error(tmp_path):
    text = 'policies = ["fcfs", "easy"]\n[[trace]]\npath = "nope.swf"\n'
    frame = run_sweep(parse_sweep(text, base=tmp_path), executor="serial", progress=False)
    assert all("nope.swf" in e for e in frame["error"])


# --------------------------------------------------------------------------- executors

@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    path = tmp_path_factory.mktemp("ref") / "sweep.toml"
    path.write_text(SWEEP)
    grid = load_sweep(path)
    return grid, run_sweep(grid, executor="serial", progress=False)


def test_the_table(reference):
    grid, frame = reference
    assert len(frame) == len(grid) and frame["error"].isna().all()
    assert list(frame.columns[:11]) == fs.tools.sweepfile.CONFIG_COLUMNS
    assert frame.attrs["cells_run"] == len(grid)
    assert (frame["jobs"] == 300).all()
    # the orders change the schedules
    kth = frame[frame["trace"] == "KTH-SP2"]
    assert kth.groupby("order")["avg_wait"].sum().nunique() == 2


def test_process_pool_gives_the_serial_table(reference):
    grid, expected = reference
    frame = run_sweep(grid, executor="process", workers=2, progress=False)
    pd.testing.assert_frame_equal(untimed(frame), untimed(expected))


@pytest.mark.skipif(importlib.util.find_spec("distributed") is None,
                    reason="dask.distributed not installed (pip install 'fastsched[dask]')")
def test_dask_local_cluster_gives_the_serial_table(reference):
    grid, expected = reference
    frame = run_sweep(grid, executor="dask", workers=2, progress=False)
    pd.testing.assert_frame_equal(untimed(frame), untimed(expected))


@pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                    reason="ray not installed (pip install 'fastsched[ray]')")
def test_ray_local_instance_gives_the_serial_table(reference):
    grid, expected = reference
    frame = run_sweep(grid, executor="ray", workers=2, progress=False)
    pd.testing.assert_frame_equal(untimed(frame), untimed(expected))


@pytest.mark.parametrize("executor, module, extra", [("dask", "distributed", "dask"),
                                                     ("ray", "ray", "ray")])
def test_a_missing_extra_is_named(monkeypatch, sweep_file, executor, module, extra):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == module else real(name, *a))
    with pytest.raises(UnsupportedError, match=rf"fastsched\[{extra}\]"):
        run_sweep(load_sweep(sweep_file), executor=executor)


def test_bad_executor_options(sweep_file):
    grid = load_sweep(sweep_file)
    with pytest.raises(InputError, match="unknown executor"):
        run_sweep(grid, executor="mpi")
    with pytest.raises(InputError, match="workers"):
        run_sweep(grid, executor="process", workers=0)
    with pytest.raises(InputError, match="address"):
        run_sweep(grid, executor="process", address="tcp://x:1")
    with pytest.raises(InputError, match=r"\.csv"):
        run_sweep(grid, "out.xlsx", executor="serial")
    with pytest.raises(InputError, match="no such folder"):
        run_sweep(grid, "nowhere/out.csv", executor="serial")


# --------------------------------------------------------------------------- resuming

class Counting:
    """run_cell that counts its calls and can stop the sweep (as Ctrl-C would) after
    ``stop_after`` cells."""

    def __init__(self, stop_after=None):
        self.cells, self.stop_after = [], stop_after

    def __call__(self, cell):
        if self.stop_after is not None and len(self.cells) == self.stop_after:
            raise KeyboardInterrupt
        self.cells.append(cell)
        return run_cell(cell)


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".parquet"])
def test_deleted_rows_are_the_only_cells_rerun(monkeypatch, tmp_path, reference, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    grid, expected = reference
    out = tmp_path / f"results{suffix}"
    first = run_sweep(grid, out, executor="serial", progress=False)
    assert not (tmp_path / f"results{suffix}.partial").exists()
    pd.testing.assert_frame_equal(read_results(out), first)
    kept = first.drop(index=[2, 5, 11])
    if suffix == ".parquet":
        kept.to_parquet(out, index=False)
    else:
        kept.to_csv(out, index=False)
    counting = Counting()
    monkeypatch.setattr(sweep_mod, "run_cell", counting)
    again = run_sweep(grid, out, executor="serial", progress=False)
    assert [grid.cells.index(c) for c in counting.cells] == [2, 5, 11]
    assert again.attrs["cells_run"] == 3
    pd.testing.assert_frame_equal(untimed(again), untimed(expected))
    pd.testing.assert_frame_equal(untimed(read_results(out)), untimed(expected))


def test_an_interrupted_sweep_goes_on_where_it_stopped(monkeypatch, tmp_path, reference):
    grid, expected = reference
    out = tmp_path / "results.csv"
    monkeypatch.setattr(sweep_mod, "run_cell", Counting(stop_after=6))
    with pytest.raises(KeyboardInterrupt):
        run_sweep(grid, out, executor="serial", progress=False)
    journal = tmp_path / "results.csv.partial"
    assert not out.exists() and len(journal.read_text().splitlines()) == 6
    # a kill while a row was being written leaves half a line: that cell runs again
    journal.write_text(journal.read_text() + '{"trace": "KTH-SP2", "sou')
    counting = Counting()
    monkeypatch.setattr(sweep_mod, "run_cell", counting)
    frame = run_sweep(grid, out, executor="serial", progress=False)
    assert [grid.cells.index(c) for c in counting.cells] == list(range(6, len(grid)))
    assert not journal.exists()
    pd.testing.assert_frame_equal(untimed(frame), untimed(expected))


def test_rows_of_other_cells_are_kept(tmp_path, reference):
    grid, expected = reference
    out = tmp_path / "results.csv"
    run_sweep(grid, out, executor="serial", progress=False)
    smaller = parse_sweep(SWEEP.replace("reserve_depths = [1, 3]", "reserve_depths = [1]"))
    frame = run_sweep(smaller, out, executor="serial", progress=False)
    assert frame.attrs["cells_run"] == 0
    assert len(frame) == len(grid)          # the depth-3 rows stay, after this grid's
    assert list(frame["reserve_depth"].iloc[-4:]) == [3, 3, 3, 3]


# --------------------------------------------------------------------------- progress

def test_text_progress_bar(capsys):
    bar = sweep_mod._TextBar(5, 2)
    bar.update()
    bar.close()
    assert capsys.readouterr().err == "\rsweep: 2/5 cells\rsweep: 3/5 cells\n"


def test_no_bar_unless_asked(monkeypatch):
    monkeypatch.setattr("sys.stderr.isatty", lambda: False, raising=False)
    assert isinstance(sweep_mod._progress_bar(3, 0, None), sweep_mod._NoBar)


# --------------------------------------------------------------------------- the command

def test_the_command(capsys, tmp_path, sweep_file, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", str(sweep_file), "--executor", "serial", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "16 cells" in out and "ran 16 cell(s); 0 were done already" in out
    assert "wrote 16 rows to sweep.csv" in out and "avg_bounded_slowdown" in out
    table = read_results(tmp_path / "sweep.csv")
    assert len(table) == 16
    assert main(["sweep", str(sweep_file), "-o", "sweep.csv", "--executor", "serial",
                 "--no-progress"]) == 0
    assert "ran 0 cell(s); 16 were done already" in capsys.readouterr().out


def test_the_command_names_a_bad_sweep_file(capsys, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('policies = ["easy"]\nreserve_depths = [0]\n[[trace]]\npath = "KTH-SP2"\n')
    assert main(["sweep", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:2: field reserve_depths: must be in 1" in err


def test_the_docs_example_runs(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import re
    from pathlib import Path
    text = (Path(__file__).resolve().parents[1] / "docs" / "sweeps.md").read_text()
    (code,) = re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/sweeps.md", "exec"), {})
    assert len(read_results(tmp_path / "kth-sweep.csv")) == 3
    assert (tmp_path / "kth-sweep.png").stat().st_size > 0
