"""asv: B4 `kth-easy`, the whole bundled KTH-SP2 trace (28,475 jobs, 100 processors), in-process.

    asv run -E existing:$(which python3) --python=same --quick --show-stderr   # smoke
    asv run -E existing:$(which python3) --python=same --show-stderr           # full

Parsing the trace is in setup (not timed); each time_* is one whole simulation.
"""
import fastsched


class KTHSP2:
    """Simulate KTH-SP2 under each policy (B4: EASY <= 30 ms, conservative <= 100 ms)."""

    timeout = 300
    # a whole simulation is tens of ms: one call per sample, several samples
    number = 1
    repeat = (7, 15, 60.0)
    warmup_time = 0.1

    def setup(self):
        self.trace = fastsched.read_swf(fastsched.bundled_trace("KTH-SP2"))
        self.cluster = fastsched.Cluster.homogeneous(self.trace.procs)

    def time_easy(self):
        fastsched.simulate(self.cluster, self.trace.jobs, "easy")

    def time_conservative(self):
        fastsched.simulate(self.cluster, self.trace.jobs, "conservative")

    def time_fcfs(self):
        fastsched.simulate(self.cluster, self.trace.jobs, "fcfs")

    def peakmem_easy(self):
        fastsched.simulate(self.cluster, self.trace.jobs, "easy")

    def track_jobs(self):
        """Number of jobs simulated (sanity: the whole trace)."""
        return len(self.trace.jobs)

    track_jobs.unit = "jobs"
