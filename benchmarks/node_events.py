"""Per node-event cost of the event loop (what a failure model pays per failure and
repair, outside the passes): drain then resume one node at a time on a loop with 200
ai-mix jobs running, for each cluster named (default ai-8k ai-100k ai-1m); CPU per
event, median of 5 rounds of 800 events (the first round also loads the kernels).
Then a failure's dearer case: ``down`` on a node of a running job (killed and
requeued), one per job, after ten such events that load the kernels; CPU per event.
Last, what each event costs the compiled run besides: a call of the loop (the run is
cut at every event) with no instant to run; CPU per call, median of 5 rounds of 500.

    python benchmarks/node_events.py [CLUSTER ...]
"""
import statistics
import sys
import time

import numpy as np

from fastsched.engine.loop import _EventLoop
from fastsched.model.constraints import Dependencies, LimitGroups, PartitionChoices
from fastsched.tools.generate import ai_cluster, ai_mix


def running_loop(name: str):
    """(cluster, loop, now): 200 ai-mix jobs of ``name`` submitted, running, free counts taken."""
    cluster = ai_cluster(name)
    jobs = ai_mix(cluster, 200, seed=1).jobs
    n = len(jobs)
    loop = _EventLoop(cluster, jobs, "easy", 1, None, PartitionChoices.single(jobs.partition),
                      Dependencies.none(n), LimitGroups.none(n), 1, None, None, None,
                      None, None, node_events=True)
    now = int(jobs.submit_time.max())
    loop.run(now)
    return cluster, loop, now


def per_event_us(name: str, rounds: int = 5, pairs: int = 400) -> list[float]:
    cluster, loop, _ = running_loop(name)
    rng = np.random.default_rng(0)
    out = []
    for _ in range(rounds):
        nodes = rng.integers(0, cluster.num_nodes, pairs).tolist()
        t = time.process_time()
        for x in nodes:
            loop.apply_node_event(10**9, "drain", [x])
            loop.apply_node_event(10**9, "resume", [x])
        out.append((time.process_time() - t) / (2 * pairs) * 1e6)
    return out


def per_kill_us(name: str, warm: int = 10) -> tuple[float, int]:
    """CPU us per ``down`` event that kills one running job, and the events timed."""
    _, loop, now = running_loop(name)
    rl = loop.run_lists
    nodes, seen = [], set()
    for x in np.flatnonzero(rl.rlen > 0).tolist():     # one node per job: each kills one
        held = set(rl.RJ[x, :rl.rlen[x]].tolist())
        if not held & seen:
            seen |= held
            nodes.append(x)
    for x in nodes[:warm]:
        loop.apply_node_event(now + 1, "down", [x])
    t = time.process_time()
    for x in nodes[warm:]:
        loop.apply_node_event(now + 1, "down", [x])
    return (time.process_time() - t) / max(len(nodes) - warm, 1) * 1e6, len(nodes) - warm


def per_run_call_us(name: str, rounds: int = 5, calls: int = 500) -> list[float]:
    """CPU us per call of the loop's ``run`` that has no instant to run."""
    _, loop, now = running_loop(name)
    out = []
    for _ in range(rounds):
        t = time.process_time()
        for _ in range(calls):
            loop.run(now)
        out.append((time.process_time() - t) / calls * 1e6)
    return out


if __name__ == "__main__":
    for name in sys.argv[1:] or ["ai-8k", "ai-100k", "ai-1m"]:
        us = per_event_us(name)
        print(f"{name}: {statistics.median(us):.1f} us CPU per event "
              f"(rounds: {', '.join(f'{u:.1f}' for u in us)})", flush=True)
        kill, k = per_kill_us(name)
        print(f"{name}: {kill:.1f} us CPU per down event killing a job ({k} events)", flush=True)
        call = per_run_call_us(name)
        print(f"{name}: {statistics.median(call):.1f} us CPU per call of the loop with no "
              f"instant to run (rounds: {', '.join(f'{u:.1f}' for u in call)})", flush=True)
