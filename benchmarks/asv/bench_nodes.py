"""asv: B2 / B3 / B6, one pass of the node (GPU-granular) engine on a busy standard cluster.

    asv run -E existing:$(which python3) --python=same --quick --show-stderr --bench Node

The states (fastsched.bench.state.busy_state, 85% of the GPUs held) are built once in
setup_cache, never timed. B2 is full size (ai-100k, 100,000 pending). B3 (conservative
at full depth) is the same cluster with 1,000 pending: at 100,000 a pass takes more than
120 s today (see RESULTS.md). B6 takes the scaling points that run in seconds.
"""
from fastsched.bench.state import busy_state, run_pass


def warm_up(states):
    """Load the Numba-compiled pass (cache=True) before timing: asv times in fresh processes."""
    run_pass(states[("ai-8k", 1_000)], "conservative", True)

#: (cluster, pending) states the benchmarks below use
STATES = [("ai-100k", 100_000), ("ai-100k", 1_000), ("ai-100k", 10_000),
          ("ai-8k", 1_000), ("ai-8k", 10_000)]


class NodePass:
    """One pass (B2 EASY depth 1; B3 conservative full depth; B6 points)."""

    timeout = 600
    number = 1
    repeat = (3, 7, 120.0)
    warmup_time = 0

    def setup_cache(self):
        return {key: busy_state(key[0], pending=key[1]) for key in STATES}

    setup_cache.timeout = 900

    def setup(self, states):
        warm_up(states)

    def time_b2_easy_100k(self, states):
        run_pass(states[("ai-100k", 100_000)], "easy", False)

    def peakmem_b2_easy_100k(self, states):
        run_pass(states[("ai-100k", 100_000)], "easy", False)

    def time_b3_conservative_ai100k_1k(self, states):
        run_pass(states[("ai-100k", 1_000)], "conservative", True)


class NodeScaling:
    """B6: cost of one pass vs cluster size and queue length."""

    timeout = 600
    number = 1
    repeat = (3, 5, 60.0)
    warmup_time = 0
    params = (["ai-8k", "ai-100k"], [1_000, 10_000], ["easy", "conservative"])
    param_names = ["cluster", "pending", "policy"]

    def setup_cache(self):
        return {key: busy_state(key[0], pending=key[1]) for key in STATES
                if key[1] <= 10_000}

    setup_cache.timeout = 900

    def setup(self, states, cluster, pending, policy):
        if (cluster, pending, policy) == ("ai-100k", 10_000, "conservative"):
            raise NotImplementedError("about 3 s per pass: run by fastsched bench scaling")
        warm_up(states)

    def time_pass(self, states, cluster, pending, policy):
        run_pass(states[(cluster, pending)], policy, policy == "conservative")

    def track_decisions(self, states, cluster, pending, policy):
        """Pending jobs decided by one pass (sanity: the whole queue)."""
        return len(run_pass(states[(cluster, pending)], policy, policy == "conservative"))

    track_decisions.unit = "decisions"
