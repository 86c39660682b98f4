"""Hypothesis building blocks shared by the usage tests: a small workload with
TRES requests, users, accounts and QOS, and a usage configuration."""
import numpy as np
from hypothesis import strategies as st

from fastsched.policy.config import QOS, SchedulerConfig
from fastsched.model.jobs import JobTable
from fastsched.io.workload import Workload


def draw_site(draw, n, base):
    """(config, workload) of ``n`` jobs submitted at ``base``."""
    jobs = JobTable.from_arrays(job_id=np.arange(n), submit_time=base, time_limit=1000,
                                runtime=1, num_nodes=[draw(st.integers(1, 3)) for _ in range(n)],
                                cpus_per_node=[draw(st.integers(0, 8)) for _ in range(n)],
                                gpus_per_node=[draw(st.integers(0, 4)) for _ in range(n)],
                                mem_per_node=[draw(st.integers(0, 2048)) for _ in range(n)],
                                user=[draw(st.integers(0, 2)) for _ in range(n)])
    w = Workload(jobs, np.array([draw(st.integers(0, 1)) for _ in range(n)], np.int32),
                 ["u0", "u1", "u2"], ["a0", "a1"], np.zeros(2, np.int32), ["o"])
    w.qos = np.array([draw(st.integers(0, 1)) for _ in range(n)], np.int32)
    w.qos_names = ["normal", "cheap"]
    cfg = SchedulerConfig(
        decay_half_life=draw(st.sampled_from([0, 1, 37, 300, 100000])),
        usage_reset_period=draw(st.sampled_from(["NONE", "DAILY"])),
        tres_billing_weights={"CPU": 1.0, "Mem": draw(st.sampled_from([0.0, 0.25 / 1024])),
                              "Node": draw(st.sampled_from([0.0, 3.0])),
                              "GRES/gpu": draw(st.sampled_from([0.0, 2.0]))},
        qos={"normal": QOS("normal"), "cheap": QOS("cheap", 0, 0.5)})
    return cfg, w
