"""Preemption with ``--no-kill`` jobs and node ranges in the embeddable Scheduler: driven
at the simulator's instants through the cases of tests/test_preempt_elastic.py (wide
low-tier jobs shrunk by failures or started narrow, preempted by high-tier jobs, some of
a node range), it starts, shrinks, preempts, kills and requeues what
``simulate(events=..., lifecycle=..., preemption=...)`` does, attempt for attempt;
regrowth with preemption is refused as the simulator refuses it."""
import numpy as np
import pytest
from hypothesis import event, given, reject
from hypothesis import strategies as st

from fastsched import NodeEvents, Scheduler, simulate
from fastsched.model.errors import UnsupportedError
from fastsched.model.lifecycle import Lifecycle
from scheddrive import drive_or_discard, simulated
from test_preempt_elastic import SETTINGS, _tiers, elastic_preempt_cases


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@SETTINGS
@given(data=st.data())
def test_scheduler_preempts_shrunk_and_narrow_jobs_as_the_simulator(policy, data):
    case, pre, lc, rows = data.draw(elastic_preempt_cases())
    cluster, jobs = case[0], case[2]
    s = Scheduler(cluster, policy, jobs=jobs, preemption=pre, lifecycle=lc)
    driven = drive_or_discard(s, jobs, lc, rows)
    if policy == "fcfs" and driven.held:
        # a job too few nodes are up for stops the simulator's fcfs walk but not the
        # Scheduler's (tests/test_scheduler_requeue.py): not a preemption matter
        event("discarded: fcfs with a job waiting for down nodes")
        reject()
    r = simulate(cluster, jobs, policy, preemption=pre, lifecycle=lc,
                 events=NodeEvents.from_rows(rows, cluster.num_nodes))
    assert driven.attempts == simulated(r)
    t = r.attempts
    resized = t.get("resized", np.zeros(len(t["row"]), dtype=bool))
    shrunk = {(int(a), int(b)) for a, b, z in zip(t["row"], t["attempt"], resized) if z}
    hit = any((int(t["row"][k]), int(t["attempt"][k])) in shrunk
              for k in np.flatnonzero(t["preempted"]))
    narrow = any(np.diff(t["alloc_offsets"])[k] < jobs.num_nodes[t["row"][k]]
                 for k in np.flatnonzero(t["preempted"]))
    event(f"shrunk victim: {hit}, narrow or shrunk victim: {narrow}")


def test_scheduler_refuses_regrow_with_preemption():
    cluster, pre = _tiers()
    from fastsched import JobTable
    jobs = JobTable.from_arrays(job_id=[1], submit_time=0, time_limit=10, runtime=5,
                                num_nodes=2, cpus_per_node=8, partition=0)
    lc = Lifecycle.of(1, no_kill=True, regrow=True)
    with pytest.raises(UnsupportedError, match="regrow.*preemption"):
        Scheduler(cluster, "easy", jobs=jobs, preemption=pre, lifecycle=lc)
    Scheduler(cluster, "easy", jobs=jobs, preemption=pre,
              lifecycle=Lifecycle.of(1, no_kill=True, nodes_min=1))
