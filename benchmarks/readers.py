"""Reading and start-up (issue 17, item 4): SWF reading, the vectorised reader vs its
line-by-line twin (tests/naive_swf.py) alternated in one process; reading a 1M-job
workload (CSV and Parquet); reading a 1M-row sacct dump (benchmarks/sacct_like.py;
``--old DIR``: also the ``src`` of another checkout, alternated); whole processes
(``import fastsched``, ``fastsched --help``, ``fastsched simulate KTH --policy
easy``). Medians, CPU beside wall.

    python benchmarks/readers.py [--repeat 7] [--jobs 1000000] [--dir /tmp/readers]
    python benchmarks/readers.py --only swf
    python benchmarks/readers.py --only sacct --repeat 5 [--old /tmp/old/src]
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def _timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def _median(pairs):
    return (statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs))


def swf(repeat: int) -> None:
    import naive_swf
    from fastsched.io import swf as fast
    for name in ("KTH-SP2", "lublin_256"):
        path = fast.bundled_trace(name)
        fast.read_swf(path), naive_swf.read_swf(path)         # warm both
        new, old = [], []
        for _ in range(repeat):                                # alternate old and new
            new.append(_timed(lambda: fast.read_swf(path)))
            old.append(_timed(lambda: naive_swf.read_swf(path)))
        (nw, nc), (ow, oc) = _median(new), _median(old)
        ratios = sorted(o[1] / n[1] for o, n in zip(old, new))
        print(f"read_swf {name}: new {nw * 1e3:.1f} ms wall / {nc * 1e3:.1f} ms CPU; "
              f"old {ow * 1e3:.1f} / {oc * 1e3:.1f} ms; old/new CPU x{oc / nc:.1f} "
              f"(per pair x{ratios[0]:.1f}-x{ratios[-1]:.1f}), {repeat} pairs")


def workload(repeat: int, jobs: int, folder: Path) -> None:
    from fastsched.io.workload import read_workload, write_workload
    from fastsched.tools.generate import ai_mix, load_cluster
    cluster = load_cluster("ai-100k")
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"ai-mix-{jobs}.csv", folder / f"ai-mix-{jobs}.parquet"]
    if not all(p.exists() for p in paths):
        w = ai_mix(cluster, jobs, seed=0)
        for p in paths:
            write_workload(w, cluster, p)
    for p in paths:
        runs = [_timed(lambda: read_workload(p, cluster)) for _ in range(repeat)]
        wall, cpu = _median(runs)
        print(f"read_workload {p.name} ({p.stat().st_size / 1e6:.0f} MB): {wall:.2f} s wall "
              f"(min {min(r[0] for r in runs):.2f}) / {cpu:.2f} s CPU, {repeat} runs")


_SACCT_RUN = """
import json, sys, time
from fastsched import read_cluster
from fastsched.io.sacct import read_sacct
cluster = read_cluster(sys.argv[2])
times = []
for _ in range(2):                  # first: lazy imports (pandas), fresh memory; then warm
    wall, cpu = time.perf_counter(), time.process_time()
    log = read_sacct(sys.argv[1], cluster)
    times += [time.perf_counter() - wall, time.process_time() - cpu]
print(json.dumps(times + [len(log.jobs)]))
"""


def sacct(repeat: int, rows: int, folder: Path, old: str | None) -> None:
    """``read_sacct`` of a site-shaped dump, each run in its own process: its first read
    (as ``fastsched simulate`` reads a dump) and a second one; with ``old``, that
    checkout's reader alternated with this one."""
    import json
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import sacct_like
    dump, conf = sacct_like.write(folder, rows)
    sources = {"this": str(ROOT / "src")} | ({"old": old} if old else {})
    runs = {k: [] for k in sources}
    for _ in range(repeat):
        for label, src in sources.items():
            out = subprocess.run([sys.executable, "-c", _SACCT_RUN, str(dump), str(conf)],
                                 env=dict(os.environ, PYTHONPATH=src), check=True,
                                 capture_output=True, text=True).stdout
            runs[label].append(json.loads(out.splitlines()[-1]))
    for label, r in runs.items():
        for name, at in (("first read", 0), ("second read", 2)):
            wall, cpu = (sorted(x[at + k] for x in r) for k in (0, 1))
            print(f"read_sacct {dump.name} ({dump.stat().st_size / 1e6:.0f} MB, {r[0][4]:,} "
                  f"runs) [{label}, {name}]: {statistics.median(wall):.2f} s wall "
                  f"({wall[0]:.2f}-{wall[-1]:.2f}) / {statistics.median(cpu):.2f} s CPU "
                  f"({cpu[0]:.2f}-{cpu[-1]:.2f}), {repeat} processes")


def processes(repeat: int) -> None:
    kth = str(ROOT / "src/fastsched/data/KTH-SP2-1996-2.1-cln.swf.gz")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "import fastsched": [sys.executable, "-c", "import fastsched"],
        "fastsched --help": [sys.executable, "-m", "fastsched.cli", "--help"],
        "fastsched simulate KTH --policy easy --no-progress":
            [sys.executable, "-m", "fastsched.cli", "simulate", kth, "--policy", "easy",
             "--no-progress"],
    }
    for label, argv in commands.items():
        runs = []
        for _ in range(repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            wall = time.perf_counter()
            subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            runs.append((time.perf_counter() - wall, cpu))
        wall, cpu = _median(runs)
        print(f"{label}: {wall:.2f} s wall / {cpu:.2f} s CPU (median of {repeat})")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--jobs", type=int, default=1_000_000)
    p.add_argument("--dir", type=Path, default=Path("/tmp/fastsched-readers"))
    p.add_argument("--only", choices=("swf", "workload", "processes", "sacct"))
    p.add_argument("--rows", type=int, default=1_000_000, help="sacct dump rows")
    p.add_argument("--old", help="src folder of another checkout to time beside this one")
    args = p.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}")
    if args.only in (None, "swf"):
        swf(args.repeat)
    if args.only in (None, "processes"):
        processes(min(args.repeat, 5))
    if args.only in (None, "workload"):
        workload(min(args.repeat, 5), args.jobs, args.dir)
    if args.only in (None, "sacct"):
        sacct(args.repeat, args.rows, args.dir, args.old)


if __name__ == "__main__":
    main()
