"""Per node-event cost of the event loop (what a failure model pays per failure and
repair, outside the passes): drain then resume one node at a time on a loop with 200
ai-mix jobs running, for each cluster named (default ai-8k ai-100k ai-1m); CPU per
event, median of 5 rounds of 800 events (the first round also loads the kernels).

    python benchmarks/node_events.py [CLUSTER ...]
"""
import statistics
import sys
import time

import numpy as np

from fastsched.engine.loop import _EventLoop
from fastsched.model.constraints import Dependencies, LimitGroups, PartitionChoices
from fastsched.tools.generate import ai_cluster, ai_mix


def per_event_us(name: str, rounds: int = 5, pairs: int = 400) -> list[float]:
    cluster = ai_cluster(name)
    jobs = ai_mix(cluster, 200, seed=1).jobs
    n = len(jobs)
    loop = _EventLoop(cluster, jobs, "easy", 1, None, PartitionChoices.single(jobs.partition),
                      Dependencies.none(n), LimitGroups.none(n), 1, None, None, None,
                      None, None, node_events=True)
    loop.run(int(jobs.submit_time.max()))          # jobs running, free counts taken
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


if __name__ == "__main__":
    for name in sys.argv[1:] or ["ai-8k", "ai-100k", "ai-1m"]:
        us = per_event_us(name)
        print(f"{name}: {statistics.median(us):.1f} us CPU per event "
              f"(rounds: {', '.join(f'{u:.1f}' for u in us)})", flush=True)
