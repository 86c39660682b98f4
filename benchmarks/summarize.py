"""Summarise pytest-benchmark JSON files from B4 runs: per-run medians, the median over runs, fast/naive ratio.

    python -m pytest benchmarks/ --benchmark-enable --benchmark-json=run1.json   # repeat for run2, run3...
    python benchmarks/summarize.py run1.json run2.json run3.json
"""
from __future__ import annotations

import json
import statistics
import sys


def main(paths: list[str]) -> None:
    per_run: list[dict[str, float]] = []
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        per_run.append({b["name"]: 1000 * b["stats"]["median"] for b in data["benchmarks"]})
    names = sorted({n for run in per_run for n in run})
    print(f"{'benchmark':32} " + " ".join(f"{'run' + str(i + 1):>11}" for i in range(len(paths)))
          + f" {'median':>11}")
    overall = {}
    for name in names:
        vals = [run.get(name) for run in per_run]
        overall[name] = statistics.median(v for v in vals if v is not None)
        cells = " ".join(f"{v:11.1f}" if v is not None else f"{'-':>11}" for v in vals)
        print(f"{name:32} {cells} {overall[name]:11.1f}")
    for policy in ("easy", "conservative"):
        fast, slow = f"test_kth_fast[{policy}]", f"test_kth_naive[{policy}]"
        if fast in overall and slow in overall:
            ratios = [run[slow] / run[fast] for run in per_run if fast in run and slow in run]
            print(f"naive/fast {policy}: per run " + ", ".join(f"{r:.0f}x" for r in ratios)
                  + f"; median of medians {overall[slow] / overall[fast]:.0f}x")


if __name__ == "__main__":
    main(sys.argv[1:])
