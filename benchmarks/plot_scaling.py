"""Plot B6: cost per decision of one node-engine pass vs GPUs and vs pending jobs.

    fastsched bench scaling --repeat 3 --json scaling.json    # or let this script run it
    python benchmarks/plot_scaling.py scaling.json            # -> benchmarks/scaling.png
    python benchmarks/plot_scaling.py                         # runs the scenario first

Cost per decision = median pass time / pending jobs. Points reported as not measured
(a pass over 120 s) are left out and listed in the figure's footnote. Needs matplotlib
(the ``bench`` extra).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def load(path: str | None) -> dict:
    if path:
        with open(path) as f:
            return json.load(f)
    from fastsched.bench.scenarios import run_scenario
    figures = run_scenario("scaling", repeat=3)
    with open(HERE / "scaling.json", "w") as f:
        json.dump(figures, f, indent=2)
    return figures


def series(points: list[dict], x: str, by: tuple[str, str]) -> dict:
    """{(policy, value of by[1]): sorted [(x, us per decision)]} over measured points."""
    out: dict = {}
    for p in points:
        if "median_ms" not in p:
            continue
        cost = 1000.0 * p["median_ms"] / p["pending"]
        out.setdefault((p[by[0]], p[by[1]]), []).append((p[x], cost))
    return {k: sorted(v) for k, v in sorted(out.items())}


def plot(figures: dict, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    points = figures["points"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    for (policy, pending), xy in series(points, "gpus", ("policy", "pending")).items():
        left.plot(*zip(*xy), marker="o", linestyle="-" if policy == "easy" else "--",
                  label=f"{policy}, {pending:,} pending")
    for (policy, cluster), xy in series(points, "pending", ("policy", "cluster")).items():
        right.plot(*zip(*xy), marker="o", linestyle="-" if policy == "easy" else "--",
                   label=f"{policy}, {cluster}")
    left.set(xscale="log", yscale="log", xlabel="GPUs in the cluster",
             ylabel="cost per decision (µs, median pass / pending)")
    right.set(xscale="log", xlabel="pending jobs")
    for ax in (left, right):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    missed = [f"{p['cluster']} {p['pending']:,} {p['policy']}" for p in points
              if "median_ms" not in p]
    title = "B6: one node-engine pass, 85% of GPUs busy"
    fig.suptitle(title)
    if missed:
        fig.text(0.01, 0.01, "not measured (> 120 s): " + "; ".join(missed), fontsize=8)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


if __name__ == "__main__":
    plot(load(sys.argv[1] if len(sys.argv) > 1 else None), HERE / "scaling.png")
