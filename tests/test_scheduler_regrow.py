"""Regrowth (``Lifecycle(regrow=True)``) in the embeddable Scheduler: at
``resume_nodes(nodes, now=...)`` shrunk or narrow ``--no-kill`` jobs take back the nodes
that return, as ``simulate(..., lifecycle=Lifecycle(regrow=True))`` does. Driven at the
simulator's instants (tests/scheddrive.py) it starts, shrinks, grows, kills and
requeues what ``simulate`` does, attempt for attempt; what it refuses."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from fastsched import Cluster, JobTable, Scheduler
from fastsched.model.constraints import LimitGroups
from fastsched.model.errors import UnsupportedError
from fastsched.model.lifecycle import Lifecycle
from scheddrive import drive
from test_scheduler_ranges import SETTINGS, _same, ranged
from test_scheduler_requeue import failure_cases, spare_node_cases


def _regrowing(data, case, ranges):
    cluster, jobs, rows, lc = case
    lc = replace(lc, regrow=True)
    if ranges:
        lc = ranged(data.draw, jobs, lc)
    return cluster, jobs, rows, lc


def _grows(s) -> int:
    a = s.attempts
    return int((a.state == "RESIZING").sum()) if a is not None else 0


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@SETTINGS
@given(data=st.data())
def test_regrowth_as_the_simulator(policy, data):
    case = data.draw(failure_cases(policy, shrink=True))
    cluster, jobs, rows, lc = _regrowing(data, case, data.draw(st.booleans()))
    _same(policy, cluster, jobs, lc, rows)
    event(f"ups: {min(sum(1 for _, kind, _ in rows if kind in ('up', 'resume')), 2)}")


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@SETTINGS
@given(data=st.data())
def test_regrowth_with_spare_nodes_as_the_simulator(policy, data):
    cluster, jobs, rows, lc = data.draw(spare_node_cases(policy))
    lc = replace(lc, no_kill=np.ones(len(jobs), dtype=bool))
    cluster, jobs, rows, lc = _regrowing(data, (cluster, jobs, rows, lc), data.draw(st.booleans()))
    _same(policy, cluster, jobs, lc, rows)


def _jobs():
    return JobTable.from_arrays(job_id=[1, 2], submit_time=0, time_limit=1000,
                                runtime=[100, 50], num_nodes=[4, 1], cpus_per_node=8)


def test_a_shrunk_job_takes_its_node_back_and_ends_sooner():
    jobs = _jobs()
    lc = Lifecycle.of(2, no_kill=[True, False], regrow=True)
    s = Scheduler(Cluster.homogeneous(5, cpus=8), "easy", jobs=jobs, lifecycle=lc)
    s.submit(jobs)
    s.apply(s.schedule(0))                      # 1 on node[001-004], 2 on node005
    s.fail_nodes([0], 40)                       # 240 node-seconds left on 3: 80 s more
    s.resume_nodes([0], now=52)                 # 36 done on 3 by 52; 204 on 4: 51 s
    a = s.attempts.iloc[-1]
    assert (a.state, a.start_time, a.end_time, a.remaining, a.nodes) == \
        ("RESIZING", 40, 52, 51, "node[002-004]")
    r = s.running_jobs
    assert r.nodes[:r.node_offsets[1]].tolist() == [0, 1, 2, 3]
    assert s.state.free_cpus.tolist() == [0, 0, 0, 0, 0]
    got = drive(Scheduler(Cluster.homogeneous(5, cpus=8), "easy", jobs=jobs, lifecycle=lc),
                jobs, lc, [(40, "down", [0]), (52, "up", [0])]).attempts
    assert got == [(1, 0, 40, [0, 1, 2, 3], False), (1, 40, 52, [1, 2, 3], False),
                   (1, 52, 103, [0, 1, 2, 3], False), (2, 0, 50, [4], False)]


def test_without_regrow_a_returning_node_stays_free():
    jobs = _jobs()
    lc = Lifecycle.of(2, no_kill=[True, False])
    s = Scheduler(Cluster.homogeneous(5, cpus=8), "easy", jobs=jobs, lifecycle=lc)
    s.submit(jobs)
    s.apply(s.schedule(0))
    s.fail_nodes([0], 40)
    s.resume_nodes([0], now=52)
    assert len(s.attempts) == 1 and s.state.free_cpus.tolist()[0] == 8


def test_refused_combinations():
    jobs = _jobs()
    cluster = Cluster.homogeneous(5, cpus=8)
    lc = Lifecycle.of(2, no_kill=True, regrow=True)
    limits = LimitGroups(np.array([0, 1, 1]), np.array([0]), np.array([[1, -1, -1, -1, -1]]),
                         [["QOSMaxJobsPerUserLimit"] * 5])
    with pytest.raises(UnsupportedError, match="regrow.*limits"):
        Scheduler(cluster, "easy", jobs=jobs, lifecycle=lc, limits=limits)
    with pytest.raises(UnsupportedError, match="regrow.*power"):
        Scheduler(cluster, "easy", jobs=jobs, lifecycle=lc, power="SuspendTime=60")
