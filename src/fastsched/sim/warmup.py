"""Readying the node engine's compiled kernels before a run, timed apart from it.

The first run in a fresh install compiles the Numba kernels (a minute or two);
later processes load them from Numba's on-disk cache (seconds). Both happen at
the first call of a kernel, so without a warm-up the first simulation's wall
time includes them and a command-line user waits in silence. :func:`warm_up`
runs the engine once on a two-job workload (the same argument types as a real
run), once per process, and can say on stderr that it is compiling.
"""
from __future__ import annotations

import sys
import threading
import time

#: seconds before the announcement appears (loading from the cache is often quicker)
ANNOUNCE_AFTER = 1.0
MESSAGE = "compiling the node engine (first run only, ~1-2 min)..."

_ready = False      # the kernels are compiled or loaded in this process


def warm_up(announce: bool | None = False) -> float:
    """Compile or load the node engine's kernels unless this process already has; returns
    the seconds that took (0.0 when nothing was to do).

    ``announce``: say so on stderr while it runs (after ``ANNOUNCE_AFTER`` s, with
    the seconds elapsed at a terminal, then "done in X s"); None: only at a terminal.
    """
    global _ready
    if _ready:
        return 0.0
    start = time.perf_counter()
    with _Announcement(sys.stderr, announce):
        _run_tiny()
    _ready = True
    return time.perf_counter() - start


def _run_tiny() -> None:
    """Two 1-GPU jobs sharing a node through the node engine, then the GPU-fragmentation
    sweep of the summary: every kernel a plain node-engine run calls."""
    import numpy as np
    from ..model.cluster import Cluster
    from ..model.jobs import JobTable
    from .gpusweep import _sweep
    from ..engine import run_nodes
    cluster = Cluster(["g1"], cpus=[2], gpus=[2], mem_mb=[0])
    jobs = JobTable.from_arrays(job_id=[1, 2], submit_time=[0, 1], time_limit=[10, 10],
                                runtime=[5, 5], num_nodes=1, cpus_per_node=1, gpus_per_node=1)
    run_nodes(cluster, jobs, "easy")
    empty = np.zeros(0, dtype=np.int64)
    _sweep(empty, empty, empty, np.ones(1, dtype=np.int64), 0, 0)


def announcing(message: str, announce: bool | None):
    """A context that says ``message`` on stderr while its block runs longer than
    ``ANNOUNCE_AFTER`` s (``announce`` as :func:`warm_up` takes it)."""
    return _Announcement(sys.stderr, announce, message)


class _Announcement:
    """One line on ``stream`` while its block runs longer than ``ANNOUNCE_AFTER`` s."""

    def __init__(self, stream, announce: bool | None, message: str = MESSAGE):
        self.stream, self.message = stream, message
        self.tty = hasattr(stream, "isatty") and stream.isatty()
        self.on = bool(announce) or (announce is None and self.tty)
        self.done = threading.Event()
        self.shown = False

    def __enter__(self):
        if self.on:
            self.start = time.perf_counter()
            self.thread = threading.Thread(target=self._tick, daemon=True)
            self.thread.start()
        return self

    def _tick(self) -> None:
        if self.done.wait(ANNOUNCE_AFTER):
            return
        self.shown = True
        self._write(self.message)
        while self.tty and not self.done.wait(1.0):
            self._write(f"\r{self.message} {time.perf_counter() - self.start:.0f} s")

    def __exit__(self, failed, *exc) -> None:
        if not self.on:
            return
        self.done.set()
        self.thread.join()
        if self.shown:
            lead = f"\r{self.message}" if self.tty else ""
            end = "stopped" if failed else f"done in {time.perf_counter() - self.start:.1f} s"
            self._write(f"{lead} {end}\n")

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
