"""Compare two plans of the same state, job by job (``fastsched compare-plan``).

How a site checks fastsched against its own Slurm: plan a state with
``fastsched plan``, read Slurm's ``squeue --start`` of the same moment, and count
the jobs planned at exactly the same start, within 60 s, and on the same nodes.
Each diverging job gets the likeliest rule behind the difference
(docs/slurm-model.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..io.hostlist import expand


@dataclass
class PlanComparison:
    jobs: int = 0                 # jobs in both plans
    exact: int = 0                # same start (or both unplanned)
    within_60s: int = 0
    same_nodes: int = 0
    only_first: int = 0           # jobs planned in the first file only
    only_second: int = 0
    differences: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    diverging: list = field(default_factory=list)   # (job_id, start1, start2, nodes1, nodes2, why)

    def share(self, count: int) -> float:
        return count / self.jobs if self.jobs else 1.0

    def format(self, first: str = "plan", second: str = "slurm") -> str:
        lines = [f"jobs in both plans      {self.jobs}",
                 f"  exact start           {self.exact} ({self.share(self.exact):.1%})",
                 f"  start within 60 s     {self.within_60s} ({self.share(self.within_60s):.1%})",
                 f"  same node set         {self.same_nodes} ({self.share(self.same_nodes):.1%})",
                 f"only in {first}: {self.only_first}; only in {second}: {self.only_second}"]
        if len(self.differences):
            q = np.percentile(self.differences, [0, 10, 50, 90, 100]).astype(np.int64)
            lines.append(f"start differences ({first} - {second}, s), over jobs both "
                         f"plan: min {q[0]} p10 {q[1]} median {q[2]} p90 {q[3]} max {q[4]}")
        if self.diverging:
            lines.append(f"first diverging jobs ({first} vs {second}):")
            for j, s1, s2, n1, n2, why in self.diverging:
                lines.append(f"  {j}: start {_t(s1)} vs {_t(s2)}, nodes {n1 or '-'} vs "
                             f"{n2 or '-'}: {why}")
        return "\n".join(lines)


def _t(start):
    return "N/A" if start is None else str(start)


def compare_plans(first: dict, second: dict, *, show: int = 10) -> PlanComparison:
    """``first``/``second``: job id -> (start or None, nodelist), as
    :func:`fastsched.io.planstate.read_planned` returns them."""
    out = PlanComparison()
    common = sorted(set(first) & set(second))
    out.only_first = len(set(first) - set(second))
    out.only_second = len(set(second) - set(first))
    out.jobs = len(common)
    diffs = []
    for j in common:
        (s1, n1), (s2, n2) = first[j], second[j]
        same_start = s1 == s2
        same_nodes = _nodes(n1) == _nodes(n2)
        out.exact += same_start
        out.within_60s += same_start or (s1 is not None and s2 is not None
                                         and abs(s1 - s2) <= 60)
        out.same_nodes += same_nodes
        if s1 is not None and s2 is not None:
            diffs.append(s1 - s2)
        if not (same_start and same_nodes) and len(out.diverging) < show:
            out.diverging.append((j, s1, s2, n1, n2, _why(s1, s2, same_nodes)))
    out.differences = np.asarray(diffs, dtype=np.int64)
    return out


def _nodes(text: str) -> frozenset:
    return frozenset(expand(text)) if text else frozenset()


def _why(s1, s2, same_nodes) -> str:
    """The rule most likely behind a difference (docs/slurm-model.md, "Comparing")."""
    if (s1 is None) != (s2 is None):
        return "planned in one only: bf_window or bf_max_job_test cut the other"
    if s1 == s2:
        return "same start, other nodes: node selection (best fit over consecutive nodes)"
    if s1 % 60 == 0 and s2 % 60 != 0 or s2 % 60 == 0 and s1 % 60 != 0:
        return ("one start on the bf_resolution grid, the other at a running job's end: "
                "slot alignment or will-run grouping")
    if not same_nodes:
        return "other nodes and start: an earlier job's reservation took other nodes (cascade)"
    return "same nodes, other start: will-run end-time grouping or whole-node reservations"
