"""Standard benchmark scenarios (see BENCHMARKS.md), runnable in-process.

Each scenario prepares its input once, warms up, then times several runs and
reports the median: the machine is shared and noisy.
"""
from __future__ import annotations

import os
import platform
import resource
import statistics
import time


def machine() -> str:
    """CPU model and core count, for the record next to every figure."""
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores"


def time_runs(fn, repeat: int) -> list[float]:
    fn()  # warm-up
    times = []
    for _ in range(max(repeat, 1)):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return times


def _kth_easy(repeat: int) -> dict:
    """B4: the whole KTH-SP2 trace under EASY and conservative, in-process."""
    from .cluster import Cluster
    from .sim import simulate
    from .swf import bundled_trace, read_swf
    trace = read_swf(bundled_trace("KTH-SP2"))
    cluster = Cluster.homogeneous(trace.procs)
    figures = {"scenario": "kth-easy (B4)", "jobs": len(trace.jobs), "processors": trace.procs}
    for policy in ("easy", "conservative"):
        times = time_runs(lambda: simulate(cluster, trace.jobs, policy), repeat)
        median = statistics.median(times)
        figures[f"{policy}_median_ms"] = round(1000 * median, 2)
        figures[f"{policy}_min_ms"] = round(1000 * min(times), 2)
        figures[f"{policy}_jobs_per_s"] = round(len(trace.jobs) / median)
    figures["runs"] = repeat
    figures["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    figures["machine"] = machine()
    return figures


SCENARIOS = {"kth-easy": _kth_easy}


def run_scenario(name: str, repeat: int = 7) -> dict:
    return SCENARIOS[name](repeat)
