"""A sweep file: the grid of simulations ``fastsched sweep`` runs, read from TOML.

::

    policies = ["fcfs", "easy", "conservative"]
    reserve_depths = [1, 4]        # EASY's reservations (other policies run once)
    orders = ["submit", "SJF"]     # queue order: submit time, or a research order
    seeds = [1, 2]                 # generated workloads only (trace files run once)
    reservations = "counts"        # counts, nodes or auto (default: as simulate chooses)
    order_period = 60              # seconds between recomputations of waiting orders

    [[trace]]
    path = "KTH-SP2"               # a bundled trace, or a file (relative to this file)
    jobs = 5000                    # optional: the first N jobs only

    [[trace]]
    name = "ai"                    # default: the file's name
    generate = "ai-mix"            # a generated workload, one per seed
    cluster = "ai-8k"              # a standard cluster, or a slurm.conf (relative path)
    jobs = 2000
    load = 1.05

Every list key also takes a single value. The grid is traces x seeds x policies x
reserve depths x orders x reservation models, in that order; each point is a
:class:`Cell`, which holds everything a worker needs to run it (absolute paths).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from ..io.swf import bundled_trace
from ..io.textfile import read_text
from ..io.tomllines import TomlLines, load_toml
from ..model.errors import InputError
from ..model.policies import POLICIES
from ..model.validation import MAX_COUNT, MAX_NODES, MAX_SECONDS
from ..policy.priority import RESEARCH_ORDERS, WAITING_ORDERS
from .generate import CLUSTERS, WORKLOADS

__all__ = ["Cell", "TraceSpec", "SweepGrid", "load_sweep", "parse_sweep", "cell_key",
           "CONFIG_COLUMNS"]

#: the queue order by submit time (Slurm's FCFS queue), the default
SUBMIT_ORDER = "submit"
GRID_KEYS = ("policies", "reserve_depths", "orders", "seeds", "reservations", "order_period")
TRACE_KEYS = ("name", "path", "generate", "cluster", "jobs", "procs", "load")
RESERVATIONS = ("auto", "counts", "nodes")
#: the columns that say which cell a row of results is (its key)
CONFIG_COLUMNS = ["trace", "source", "cluster", "max_jobs", "load", "seed", "policy",
                  "reserve_depth", "order", "order_period", "reservations"]


@dataclass(frozen=True)
class TraceSpec:
    """One ``[[trace]]``: a file (SWF, workload CSV, sacct dump) or a generated workload."""

    name: str
    path: str | None = None          # absolute path
    generate: str | None = None      # a workload generator (fastsched.tools.generate)
    cluster: str | None = None       # standard cluster name or absolute slurm.conf path
    jobs: int | None = None          # a file: the first N jobs; generated: N jobs
    procs: int | None = None         # SWF machine size
    load: float | None = None        # generated: offered load


@dataclass(frozen=True)
class Cell:
    """One simulation of the grid: a trace (and seed), a policy and its parameters."""

    trace: TraceSpec
    seed: int | None
    policy: str
    reserve_depth: int | None        # EASY only
    order: str                       # "submit" or a research order (fastsched.policy.priority)
    order_period: int | None         # waiting research orders only
    reservations: str                # auto, counts or nodes

    def config(self) -> dict:
        """The row's configuration columns (``CONFIG_COLUMNS``)."""
        t = self.trace
        return {"trace": t.name, "source": t.generate or t.path, "cluster": t.cluster,
                "max_jobs": t.jobs, "load": t.load, "seed": self.seed, "policy": self.policy,
                "reserve_depth": self.reserve_depth, "order": self.order,
                "order_period": self.order_period, "reservations": self.reservations}


@dataclass(frozen=True)
class SweepGrid:
    """A parsed sweep file: its cells in grid order."""

    source: str | None
    cells: tuple[Cell, ...]

    def __len__(self) -> int:
        return len(self.cells)


def load_sweep(path) -> SweepGrid:
    """Read a sweep file (its keys: docs/sweeps.md); relative paths are from its folder."""
    return parse_sweep(read_text(path), source=str(path), base=Path(path).resolve().parent)


def parse_sweep(text: str, source: str | None = None, base=None) -> SweepGrid:
    """Parse sweep TOML ``text``; ``source`` names it in errors, ``base`` is the folder
    relative paths start from (default: the current one)."""
    doc, where = load_toml(text, source)
    for key in doc:
        if key not in GRID_KEYS and key != "trace":
            raise where.error(f"unknown key (allowed: {', '.join(GRID_KEYS + ('[[trace]]',))})",
                              key)
    base = Path(base or ".").resolve()
    traces = doc.get("trace")
    if not isinstance(traces, list) or not traces:
        raise where.error("a sweep needs at least one [[trace]] table", "trace")
    specs = [_trace(entry, i, base, where) for i, entry in enumerate(traces)]
    names = [s.name for s in specs]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise where.error(f"two traces named {name!r}: give each a distinct name",
                              f"trace[{i}].name")
    policies = _values(doc, "policies", where, _policy, required=True)
    depths = _values(doc, "reserve_depths", where, _int_range(1, MAX_COUNT), default=[1])
    orders = _values(doc, "orders", where, _order, default=[SUBMIT_ORDER])
    seeds = _values(doc, "seeds", where, _int_range(0, 2**63 - 1), default=[0])
    models = _values(doc, "reservations", where, _choice(RESERVATIONS), default=["auto"])
    period = _values(doc, "order_period", where, _int_range(1, MAX_SECONDS), default=[60])
    if len(period) != 1:
        raise where.error("one order_period for the whole sweep", "order_period")
    cells = []
    for spec in specs:
        for seed in (seeds if spec.generate else [None]):
            for policy in policies:
                for depth in (depths if policy == "easy" else [None]):
                    for order in orders:
                        waiting = order in WAITING_ORDERS
                        for model in models:
                            cells.append(Cell(spec, seed, policy, depth, order,
                                              period[0] if waiting else None, model))
    return SweepGrid(source, tuple(cells))


def cell_key(config: dict) -> tuple:
    """A hashable key of a row's configuration columns (NaN and None alike: a row
    read back from a table has NaN where the cell had None)."""
    return tuple(_plain(config.get(c)) for c in CONFIG_COLUMNS)


def _plain(value):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if hasattr(value, "item"):          # NumPy scalars
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _trace(entry, i: int, base: Path, where: TomlLines) -> TraceSpec:
    field = f"trace[{i}]"
    if not isinstance(entry, dict):
        raise where.error("[[trace]] entries must be tables", field)
    for key in entry:
        if key not in TRACE_KEYS:
            raise where.error(f"unknown key (allowed: {', '.join(TRACE_KEYS)})", f"{field}.{key}")
    path, generate = entry.get("path"), entry.get("generate")
    if (path is None) == (generate is None):
        raise where.error("give either path (a trace file) or generate (a workload "
                          "generator)", field)
    cluster = entry.get("cluster")
    if cluster is not None:
        cluster = _string(cluster, f"{field}.cluster", where)
        if cluster not in CLUSTERS:
            cluster = str(base / cluster)
    jobs = entry.get("jobs")
    if jobs is not None:
        jobs = _int_range(1, MAX_COUNT)(jobs, f"{field}.jobs", where)
    procs = entry.get("procs")
    if procs is not None:
        procs = _int_range(1, MAX_NODES)(procs, f"{field}.procs", where)
    if generate is not None:
        generate = _choice(WORKLOADS)(generate, f"{field}.generate", where)
        if cluster is None or jobs is None:
            raise where.error("a generated workload needs cluster and jobs", field)
        load = entry.get("load", 1.05)
        if isinstance(load, bool) or not isinstance(load, (int, float)) or not (
                math.isfinite(load) and load > 0):
            raise where.error(f"must be a number > 0, got {load!r}", f"{field}.load")
        name = entry.get("name", generate)
        return TraceSpec(_string(name, f"{field}.name", where), None, generate, cluster, jobs,
                         None, float(load))
    if "load" in entry:
        raise where.error("load is for generated workloads", f"{field}.load")
    if jobs is not None and str(path).lower().endswith((".csv", ".csv.gz")):
        raise where.error("jobs (the first N) is for SWF traces", f"{field}.jobs")
    text = _string(path, f"{field}.path", where)
    path = _trace_path(text, base)
    name = entry.get("name", _stem(text))
    return TraceSpec(_string(name, f"{field}.name", where), path, None, cluster, jobs, procs)


def _trace_path(text: str, base: Path) -> str:
    """A file relative to the sweep file, else a bundled trace by name."""
    candidate = base / text
    if candidate.exists() or Path(text).is_absolute():
        return str(candidate)
    try:
        return str(bundled_trace(text))
    except InputError:
        return str(candidate)           # the reader names the missing file


def _stem(text: str) -> str:
    """A trace's default name: its file name without compression and format suffixes."""
    name = Path(text).name
    for suffixes in ((".gz", ".xz", ".bz2"), (".swf", ".csv", ".txt", ".log")):
        if name.lower().endswith(suffixes):
            name = name[:name.rfind(".")]
    return name


def _values(doc: dict, key: str, where: TomlLines, parse, *, required=False, default=None) -> list:
    """A grid axis: a list (or one value) of ``key``, each checked by ``parse``."""
    if key not in doc:
        if required:
            raise where.error("missing (a list of values)", key)
        return default
    raw = doc[key]
    items = raw if isinstance(raw, list) else [raw]
    if not items:
        raise where.error("an empty list", key)
    values = [parse(v, key, where) for v in items]
    for i, v in enumerate(values):
        if v in values[:i]:
            raise where.error(f"{v!r} given twice", key)
    return values


def _string(value, field: str, where: TomlLines) -> str:
    if not isinstance(value, str) or not value:
        raise where.error(f"must be a non-empty string, got {value!r}", field)
    return value


def _int_range(lo: int, hi: int):
    def parse(value, field, where):
        if isinstance(value, bool) or not isinstance(value, int):
            raise where.error(f"must be an integer, got {value!r}", field)
        if not lo <= value <= hi:
            raise where.error(f"must be in {lo}..{hi:,}, got {value}", field)
        return value
    return parse


def _choice(names):
    def parse(value, field, where):
        if value not in names:
            raise where.error(f"unknown {value!r} (choose from {', '.join(names)})", field)
        return value
    return parse


def _policy(value, field, where):
    return _choice(sorted(POLICIES))(value, field, where)


def _order(value, field, where):
    """"submit", or a research order by name in any case (stored as its canonical name)."""
    if isinstance(value, str) and value.lower() == SUBMIT_ORDER:
        return SUBMIT_ORDER
    if isinstance(value, str) and value.upper() in RESEARCH_ORDERS:
        return value.upper()
    raise where.error(f"unknown order {value!r} (choose from {SUBMIT_ORDER}, "
                      f"{', '.join(RESEARCH_ORDERS)})", field)
