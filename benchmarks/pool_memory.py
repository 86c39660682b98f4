"""Memory of a counts-model run (issue 17, item 2: O(running allocations + jobs), not
O(sum of processors)), and the digest of everything it produces, so that two source
trees can be compared (``--old``: the ``src`` of another checkout).

For each workload (KTH-SP2, and the SWF-like ones of benchmarks/swf_like.py written
as SWF files), each in its own process, trees alternated:

* ``api``: after a warm-up run (so imports are not counted), tracemalloc's peak over
  ``simulate(..., reservations="counts")`` alone, then over building the records
  (``result.jobs``), the SHA-256 of the records' CSV text, and whether
  ``result.verify()`` passes;
* ``cli``: peak RSS (``/usr/bin/time``'s maximum resident size) of the whole
  ``fastsched simulate TRACE --no-progress --jobs-out --sacct-out --swf-out``
  process, and the SHA-256 of each file it wrote.

    python benchmarks/pool_memory.py [--old /tmp/base/src] [--only mira kth-sp2]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAMES = ("kth-sp2", "lanl-cm5", "mira", "big-50k")
#: what must not change between two trees
DIGESTS = ("records", "verify", "jobs.csv", "sacct", "swf")

_API = """
import hashlib, io, json, sys, tracemalloc
from fastsched import read_swf, simulate, Cluster
trace = read_swf(sys.argv[1])
cluster = Cluster.homogeneous(trace.procs)
simulate(cluster, trace.jobs, "easy", reservations="counts").jobs     # warm-up (imports)
tracemalloc.start()
result = simulate(cluster, trace.jobs, "easy", reservations="counts")
sim = tracemalloc.get_traced_memory()[1]
tracemalloc.reset_peak()
records = result.jobs
jobs = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
text = io.StringIO()
records.to_csv(text, index=False)
print(json.dumps({"simulate MB": round(sim / 1e6, 1), "records MB": round(jobs / 1e6, 1),
                  "records": hashlib.sha256(text.getvalue().encode()).hexdigest()[:16],
                  "verify": result.verify().ok}))
"""


def trace_paths(folder: Path, names) -> dict:
    """name -> SWF path (the SWF-like workloads written once into ``folder``)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    sys.path.insert(0, str(ROOT / "src"))
    import swf_like
    paths = {}
    for name in names:
        if name == "kth-sp2":
            paths[name] = ROOT / "src/fastsched/data/KTH-SP2-1996-2.1-cln.swf.gz"
            continue
        path = folder / f"{name}.swf"
        if not path.exists():
            nodes, table = swf_like.generate(name)
            swf_like.write_swf(path, nodes, table)
        paths[name] = path
    return paths


def api(src: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", _API, str(path)], capture_output=True,
                         text=True, check=True, env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"})
    return json.loads(out.stdout.splitlines()[-1])


def cli(src: str, path: Path, folder: Path) -> dict:
    files = {k: folder / f"out.{k}" for k in ("jobs.csv", "sacct", "swf")}
    cmd = ["/usr/bin/time", "-f", "%M %e %U", sys.executable, "-m", "fastsched.cli", "simulate",
           str(path), "--no-progress", "--jobs-out", str(files["jobs.csv"]),
           "--sacct-out", str(files["sacct"]), "--swf-out", str(files["swf"])]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"})
    rss_kb, wall, user = out.stderr.split()[-3:]
    digest = {k: hashlib.sha256(p.read_bytes()).hexdigest()[:16] for k, p in files.items()}
    return {"peak RSS MB": round(int(rss_kb) / 1024), "wall s": float(wall),
            "user s": float(user), **digest}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", help="the src directory of another checkout, alternated")
    ap.add_argument("--only", nargs="*", default=list(NAMES), choices=NAMES)
    ap.add_argument("--dir", default=tempfile.gettempdir() + "/pool_memory")
    args = ap.parse_args(argv)
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    trees = {"new": str(ROOT / "src")}
    if args.old:
        trees = {"old": args.old, **trees}
    for name, path in trace_paths(folder, args.only).items():
        got = {}
        for tree, src in trees.items():
            got[tree] = {**api(src, path), **cli(src, path, folder)}
            print(f"{name} {tree}: {got[tree]}", flush=True)
        if args.old:
            same = [k for k in DIGESTS if got["new"][k] == got["old"][k]]
            print(f"{name}: identical: {', '.join(same) or 'nothing'}")


if __name__ == "__main__":
    main()
