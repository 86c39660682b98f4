"""Sweeps: a grid of simulations (traces x seeds x policies x parameters, read from a
sweep file, :mod:`fastsched.tools.sweepfile`) run on a process pool, Dask or Ray, and
gathered into one table.

Each cell is one :func:`fastsched.simulate`; its row holds the cell's configuration
(``CONFIG_COLUMNS``) and the run's summary metrics. A run is deterministic, so every
executor gives the same table except the wall-time columns (``TIMING_COLUMNS``).

Resumable: every finished row is appended at once to a journal beside the output
(``OUTPUT.partial``); the table is written whole at the end (temporary file, then
rename) and the journal removed. A rerun with the same output runs only the cells
found in neither the table nor the journal, so an interrupted sweep (Ctrl-C, a killed
process, rows deleted from the table) goes on where it stopped.
"""
from __future__ import annotations

import functools
import json
import math
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from ..io.sacct import is_sacct, read_sacct
from ..io.swf import read_swf
from ..io.workload import read_workload
from ..model.cluster import Cluster
from ..model.errors import FastschedError, InputError, UnsupportedError
from ..policy.research import research_priority
from ..sim.simulator import simulate
from .generate import ai_mix, load_cluster
from .sweepfile import CONFIG_COLUMNS, SUBMIT_ORDER, Cell, SweepGrid, cell_key, load_sweep

__all__ = ["run_sweep", "run_cell", "read_results", "results_frame", "EXECUTORS",
           "TIMING_COLUMNS", "CONFIG_COLUMNS", "METRIC_COLUMNS", "load_sweep"]

EXECUTORS = ("process", "dask", "ray", "serial")
#: columns that measure wall time: they differ from run to run
TIMING_COLUMNS = ("sim_seconds", "compile_seconds")
#: summary entries that are configuration columns already (or not scalars)
_NOT_METRICS = {"policy", "reserve_depth", "trace", "semantics", "placement"}
#: the summary's metrics (simulate's), columns of every table even if no cell ran
METRIC_COLUMNS = ["jobs", "never_started", "timeouts", "avg_wait", "median_wait", "max_wait",
                  "avg_jct", "median_jct", "p95_jct", "p99_jct", "avg_bounded_slowdown",
                  "utilisation", "cpu_utilisation", "gpu_utilisation", "gpu_fragmentation",
                  "makespan", "first_submit", "last_end", "nodes", "skipped", "model",
                  "engine", "node_events", "passes", "sim_seconds", "compile_seconds"]
#: metric column types; other metrics are floats
_INT_METRICS = ("jobs", "skipped", "never_started", "timeouts", "max_wait", "makespan",
                "first_submit", "last_end", "nodes", "node_events", "passes")
_STR_METRICS = ("model", "engine", "error")
_CONFIG_TYPES = {"trace": "string", "source": "string", "cluster": "string",
                 "max_jobs": "Int64", "load": "Float64", "seed": "Int64", "policy": "string",
                 "reserve_depth": "Int64", "order": "string", "order_period": "Int64",
                 "reservations": "string"}


def run_sweep(grid: SweepGrid, output=None, *, executor: str = "process",
              workers: int | None = None, address: str | None = None,
              progress: bool | None = None):
    """Run every cell of ``grid`` (a :class:`~fastsched.tools.sweepfile.SweepGrid`, e.g.
    from :func:`load_sweep`) not yet in ``output`` and return the whole table (a pandas
    DataFrame, one row per cell in grid order, then any rows of ``output`` that are not
    cells of this grid); ``frame.attrs["cells_run"]`` counts the cells this call ran.

    ``output``: a ``.csv`` (``.csv.gz``) or ``.parquet`` file (Parquet needs the extra
    ``fastsched[parquet]``); None keeps nothing (no resuming). ``executor``: "process"
    (a local process pool of ``workers`` processes, default: the CPU count), "dask"
    (``fastsched[dask]``: a local Dask cluster of ``workers`` processes, or the
    scheduler at ``address``), "ray" (``fastsched[ray]``: a local Ray instance, or the
    cluster at ``address``) or "serial" (this process). ``progress``: a bar on stderr
    (None: only at a terminal). A cell whose inputs the simulator refuses gets its
    message in the ``error`` column (and runs again in a rerun); any other exception
    stops the sweep, keeping the finished rows for the rerun.
    """
    _check_options(executor, workers, address)
    fmt = None if output is None else _table_format(output)
    pool = _executor(executor, workers, address)           # extras checked before any run
    done = {} if output is None else _finished(output)
    keys = [cell_key(c.config()) for c in grid.cells]
    todo = [c for c, k in zip(grid.cells, keys) if k not in done]
    journal = None if output is None else _Journal(_journal_path(output))
    bar = _progress_bar(len(grid), len(grid) - len(todo), progress)
    try:
        for row in pool(todo):
            done[cell_key(row)] = row
            if journal is not None:
                journal.append(row)
            bar.update()
    finally:
        bar.close()
        if journal is not None:
            journal.close()
    in_grid = set(keys)
    rows = [done[k] for k in keys] + [r for k, r in done.items() if k not in in_grid]
    frame = results_frame(rows)
    frame.attrs["cells_run"] = len(todo)
    if output is not None:
        _write_table(frame, output, fmt)
        _journal_path(output).unlink(missing_ok=True)
    return frame


def _check_options(executor, workers, address) -> None:
    if executor not in EXECUTORS:
        raise InputError(f"unknown executor {executor!r} (choose from {', '.join(EXECUTORS)})",
                         field="executor")
    if workers is not None and (isinstance(workers, bool) or int(workers) < 1):
        raise InputError(f"workers must be >= 1, got {workers!r}", field="workers")
    if address is not None and executor not in ("dask", "ray"):
        raise InputError("an address is for the dask and ray executors", field="address")


def run_cell(cell: Cell) -> dict:
    """One row: ``cell``'s configuration and the summary metrics of its simulation (or
    the simulator's message in ``error``). Runs in a worker; results are plain values."""
    row = cell.config()
    try:
        cluster, workload, jobs, skipped = _inputs(cell.trace, cell.seed)
        options = {}
        if cell.order != SUBMIT_ORDER:
            options.update(priority=research_priority(cell.order, jobs, cluster),
                           period=cell.order_period)
        if cell.reservations != "auto":
            options["reservations"] = cell.reservations
        result = simulate(cluster, jobs, cell.policy, reserve_depth=cell.reserve_depth or 1,
                          skipped=skipped, progress=False, **(workload.constraints() if workload is not None else {}),
                          **options)
    except FastschedError as e:
        row["error"] = str(e)
        return row
    for key, value in result.summary.items():
        if key not in _NOT_METRICS:
            row["model" if key == "reservations" else key] = value
    row["error"] = None
    return row


def results_frame(rows: list[dict]):
    """The rows as a DataFrame with fixed column types (nullable integers, floats and
    strings), so that a table read back from CSV or Parquet equals the one written."""
    columns = CONFIG_COLUMNS + METRIC_COLUMNS
    for row in rows:
        columns += [k for k in row if k not in columns and k != "error"]
    columns.append("error")
    frame = pd.DataFrame([{c: _plain(r.get(c)) for c in columns} for r in rows],
                         columns=columns)
    return frame.astype(_column_types(columns))


def read_results(path):
    """A sweep's table (CSV or Parquet) as :func:`run_sweep` returned it."""
    if _table_format(path) == "parquet":
        frame = pd.read_parquet(path)
    else:
        header = pd.read_csv(path, nrows=0).columns
        frame = pd.read_csv(path, keep_default_na=False, na_values=[""],
                            dtype=_column_types(header))
    missing = [c for c in CONFIG_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"not a sweep table: no column {missing[0]!r}", file=str(path))
    return frame.astype(_column_types(list(frame.columns)))


def _column_types(columns) -> dict:
    types = {}
    for c in columns:
        if c in _CONFIG_TYPES:
            types[c] = _CONFIG_TYPES[c]
        elif c in _STR_METRICS:
            types[c] = "string"
        else:
            types[c] = "Int64" if c in _INT_METRICS else "Float64"
    return types


def _plain(value):
    """None for missing values (NaN, pandas NA), Python scalars otherwise."""
    if hasattr(value, "item"):
        value = value.item()
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


# --------------------------------------------------------------------------- inputs

@functools.lru_cache(maxsize=4)
def _inputs(spec, seed):
    """(cluster, workload or None, jobs, skipped) of a trace (and seed), read once per
    process: the cells of one trace usually follow each other."""
    if spec.generate:
        cluster = load_cluster(spec.cluster)
        workload = ai_mix(cluster, spec.jobs, seed=seed, load=spec.load)
        return cluster, workload, workload.jobs, workload.skipped
    path = spec.path
    if path.lower().endswith((".csv", ".csv.gz")) or is_sacct(path):
        if spec.cluster is None:
            raise InputError("a workload CSV or sacct dump needs cluster (slurm.conf or a "
                             "standard name) in its [[trace]]", file=path)
        if spec.jobs is not None:
            raise InputError("jobs (the first N) is for SWF traces", file=path)
        cluster = load_cluster(spec.cluster)
        if is_sacct(path):
            log = read_sacct(path, cluster)
            workload, skipped = log.workload, log.skipped
        else:
            workload = read_workload(path, cluster)
            skipped = workload.skipped
        if (workload.gpu_type != "").any():             # typed GPUs on typed nodes
            from ..sim.gputypes import typed_workload
            cluster, workload, _ = typed_workload(cluster, workload)
        return cluster, workload, workload.jobs, skipped
    if spec.cluster is not None:
        raise InputError("an SWF trace runs on its own machine: no cluster", file=path)
    trace = read_swf(path, procs=spec.procs)
    jobs = trace.jobs
    if spec.jobs is not None and spec.jobs < len(jobs):
        jobs = jobs.take(np.arange(len(jobs)) < spec.jobs)
    return Cluster.homogeneous(trace.procs), None, jobs, trace.skipped


# --------------------------------------------------------------------------- executors

def _executor(name: str, workers, address):
    """``pool(cells) -> iterator of rows`` (in completion order) for executor ``name``."""
    if name == "serial":
        return lambda cells: map(run_cell, cells)
    if name == "process":
        return functools.partial(_process_rows, workers=workers)
    if name == "dask":
        _need("distributed", "dask", "--executor dask")
        return functools.partial(_dask_rows, workers=workers, address=address)
    _need("ray", "ray", "--executor ray")
    return functools.partial(_ray_rows, workers=workers, address=address)


def _need(module: str, extra: str, what: str) -> None:
    import importlib.util
    if importlib.util.find_spec(module) is None:
        raise UnsupportedError(f"{what} needs the optional extra: pip install "
                               f"'fastsched[{extra}]' ({module} is not installed)")


def _process_rows(cells, workers=None):
    if not cells:
        return
    import multiprocessing
    # spawn: workers start clean (no threads or Numba state copied from this process)
    pool = multiprocessing.get_context("spawn").Pool(
        min(workers or os.cpu_count() or 1, len(cells)), initializer=_ignore_sigint)
    try:
        yield from pool.imap_unordered(run_cell, cells)
        pool.close()
    finally:
        pool.terminate()            # an interrupted sweep does not wait for running cells
        pool.join()


def _ignore_sigint() -> None:
    """In a pool worker: Ctrl-C at the terminal reaches every process of the group; the
    parent alone handles it (and ends the workers)."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _dask_rows(cells, workers=None, address=None):
    if not cells:
        return
    from dask.distributed import Client, LocalCluster, as_completed
    cluster = None
    if address is None:
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                               processes=True, dashboard_address=None)
    client = Client(address or cluster)
    try:
        futures = client.map(run_cell, cells, pure=False)
        for future in as_completed(futures):
            yield future.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _ray_rows(cells, workers=None, address=None):
    if not cells:
        return
    import ray
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, num_cpus=None if address else (workers or os.cpu_count()),
                 include_dashboard=False, log_to_driver=False)
    try:
        remote = ray.remote(num_cpus=1)(run_cell)
        pending = [remote.remote(c) for c in cells]
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            yield ray.get(ready[0])
    finally:
        if started:
            ray.shutdown()


# --------------------------------------------------------------------------- files

def _table_format(path) -> str:
    """"csv" or "parquet" by the name; the folder must exist (checked before any run)."""
    if not Path(path).resolve().parent.is_dir():
        raise InputError("no such folder for the results table", file=str(path))
    name = str(path).lower()
    if name.endswith((".parquet", ".pq")):
        _need("pyarrow", "parquet", "a Parquet table")
        return "parquet"
    if name.endswith((".csv", ".csv.gz")):
        return "csv"
    raise InputError("the results table is a .csv, .csv.gz or .parquet file", file=str(path))


def _journal_path(output) -> Path:
    return Path(f"{output}.partial")


def _finished(output) -> dict:
    """key -> row of the cells already done: the table's rows, then the journal's. A
    row with an error is not done: its cell runs again (its input may be fixed now)."""
    rows = []
    if os.path.exists(output):
        rows += [{k: _plain(v) for k, v in row.items()}
                 for row in read_results(output).to_dict("records")]
    journal = _journal_path(output)
    if journal.exists():
        rows += _Journal.read(journal)
    return {cell_key(row): row for row in rows if row.get("error") is None}


class _Journal:
    """Finished rows, one JSON object a line, appended and flushed as they come."""

    def __init__(self, path: Path):
        self.path = path
        self.file = None

    def append(self, row: dict) -> None:
        if self.file is None:
            self.file = open(self.path, "a", encoding="utf-8")
        self.file.write(json.dumps({k: _plain(v) for k, v in row.items()}) + "\n")
        self.file.flush()

    def close(self) -> None:
        if self.file is not None:
            self.file.close()

    @staticmethod
    def read(path: Path) -> list[dict]:
        rows = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:        # a line cut short when the run was killed
                continue
        return rows


def _write_table(frame, path, fmt) -> None:
    """Write the table whole: a temporary file beside ``path``, then rename."""
    folder, name = os.path.split(os.path.abspath(path))
    scratch = tempfile.mkdtemp(prefix=".fastsched-", dir=folder)
    try:
        tmp = os.path.join(scratch, name)
        if fmt == "parquet":
            frame.to_parquet(tmp, index=False)
        else:
            frame.to_csv(tmp, index=False)
        os.replace(tmp, path)
    finally:
        import shutil
        shutil.rmtree(scratch, ignore_errors=True)


# --------------------------------------------------------------------------- progress

def _progress_bar(total: int, done: int, progress: bool | None):
    """tqdm when installed, else a line on stderr redrawn per cell."""
    shown = sys.stderr.isatty() if progress is None else progress
    if not shown:
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:
        return _TextBar(total, done)
    return tqdm(total=total, initial=done, unit="cell", desc="sweep", dynamic_ncols=True)


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


class _TextBar:
    """``sweep: 3/12 cells`` on stderr, rewritten in place."""

    def __init__(self, total: int, done: int, stream=None):
        self.total, self.n, self.stream = total, done, stream or sys.stderr
        self._draw()

    def update(self, n: int = 1) -> None:
        self.n += n
        self._draw()

    def close(self) -> None:
        self.stream.write("\n")
        self.stream.flush()

    def _draw(self) -> None:
        self.stream.write(f"\rsweep: {self.n}/{self.total} cells")
        self.stream.flush()
