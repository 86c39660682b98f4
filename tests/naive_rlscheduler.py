"""Plain-Python twin of RLScheduler's heuristic scores, one job at a time, spelled as its
``HPCEnv.*_score`` methods compute them (Python numbers and NumPy scalar functions), and
a checker of a window's schedule."""
from __future__ import annotations

import numpy as np


def score(policy: str, submit: int, procs: int, request: int):
    wait = -1 - submit          # scheduled_time (-1 while queued) - submit
    if policy == "FCFS":
        return submit
    if policy == "SJF":
        return (request, submit)
    if policy == "WFP3":
        return -np.power(float(wait) / request, 3) * procs
    if policy == "UNI":
        return -(wait + 1e-15) / (np.log2(procs + 1e-15) * request)
    if policy == "F1":
        return (np.log10(request if request > 0 else 0.1) * procs
                + 870 * np.log10(submit if submit > 0 else 0.1))
    raise ValueError(policy)


def check_window(win, machine_nodes: int) -> list[str]:
    """What is wrong with a finished window's schedule (empty if nothing)."""
    problems = []
    jobs = list(range(win.first, win.stop))
    starts = dict(win.started)
    if sorted(starts) != jobs or len(win.started) != len(jobs):
        problems.append("not every job started exactly once")
    events = []
    for j, t in starts.items():
        if t < win.submit[j]:
            problems.append(f"job {j} starts at {t}, before its submission")
        events += [(t, win.nodes[j]), (t + win.run_time[j], -win.nodes[j])]
    used = 0
    for t, delta in sorted(events, key=lambda e: (e[0], e[1])):
        used += delta
        if used > machine_nodes:
            problems.append(f"{used} nodes in use at {t}")
            break
    return problems
