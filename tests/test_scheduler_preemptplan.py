"""Planning with preemptable capacity (``Preemption(backfill=True)``) in the embeddable
Scheduler: driven at the simulator's instants, it starts and preempts what
``simulate(..., preemption=Preemption(backfill=True))`` does (every attempt), on drawn
cases and on the worked example of docs/lifecycle.md; ``expected_start_times``
reports the start planned by preempting; the single pass names the running jobs in
its running lists as the kernels' candidate test reads them."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fastsched import Cluster, Scheduler, simulate
from fastsched.io.slurmconf import read_cluster
from fastsched.io.workload import read_workload
from fastsched.model.cluster import Partition
from fastsched.sim.decisions import RESERVED
from fastsched.sim.preemption import site_preemption
from scheddrive import drive, drive_or_discard, simulated
from test_preemptplan import BACKFILL, NO_BACKFILL, _site
from test_scheduler_preempt import preempt_cases


def counting(s):
    """Make ``s.schedule`` count the plans made by preempting (RESERVED at now)."""
    seen = [0]
    schedule = s.schedule

    def counted(now, **kw):
        d = schedule(now, **kw)
        seen[0] += int(((d.outcome == RESERVED) & (d.start_time == now)).sum())
        return d
    s.schedule = counted
    return seen


@st.composite
def shared_preempt_cases(draw):
    """Where plans by preempting are frequent: 2-5 alike nodes, every partition on all
    of them, each class preempting those ranked below it; the jobs submitted first run
    in the lowest class, the later ones in any."""
    from fastsched.model.lifecycle import Lifecycle
    from fastsched.model.preemption import CANCEL, REQUEUE, Preemption
    from test_nodeplan import node_workloads
    n_nodes, classes = draw(st.integers(2, 5)), draw(st.integers(2, 3))
    rank = np.array(draw(st.permutations(range(classes))))
    parts = [Partition(f"p{k}", np.arange(n_nodes), priority_tier=int(rank[k]) + 1)
             for k in range(classes)]
    cluster = Cluster([f"n{i}" for i in range(n_nodes)], [4] * n_nodes, [2] * n_nodes,
                      [100] * n_nodes, partitions=parts)
    jobs = draw(node_workloads(cluster, np.ones(n_nodes, dtype=bool), max_jobs=12,
                               max_time=40))
    jobs.runtime = np.maximum(jobs.runtime, 1)     # the drive passes once per instant
    n = len(jobs)
    lowest = int(np.argmin(rank))
    first = jobs.submit_time <= np.median(jobs.submit_time)
    qos = draw(st.booleans())
    drawn = np.array(draw(st.lists(st.integers(0, classes - 1), min_size=n, max_size=n)))
    job_class = np.where(first, lowest, drawn)
    if not qos:
        jobs.partition = job_class.astype(jobs.partition.dtype)

    def per_class(values):
        return np.array(draw(st.lists(st.sampled_from(values), min_size=classes,
                                      max_size=classes)), dtype=np.int64)
    pre = Preemption("preempt/qos" if qos else "preempt/partition_prio",
                     rank[:, None] > rank[None, :], per_class([CANCEL, REQUEUE, REQUEUE]),
                     per_class([0, 0, 3]), per_class([0, 0, 5]), per_class([0, 1]),
                     job_class.astype(np.int64) if qos else None)
    lc = Lifecycle.of(n, requeue=draw(st.lists(st.booleans(), min_size=n, max_size=n)),
                      checkpoint_interval=draw(st.lists(st.integers(0, 10), min_size=n,
                                                        max_size=n)),
                      delay=draw(st.integers(1, 5)))
    return cluster, jobs, pre, lc


def _same_as_simulate(policy, case):
    cluster, jobs, pre, lc = case
    pre = replace(pre, backfill=True)
    s = Scheduler(cluster, policy, jobs=jobs, preemption=pre, lifecycle=lc)
    seen = counting(s)
    got = drive_or_discard(s, jobs, lc).attempts
    r = simulate(cluster, jobs, policy, preemption=pre, lifecycle=lc)
    assert got == simulated(r)
    event(f"plans by preempting: {min(seen[0], 3)}")
    event(f"preempted attempts: {min(sum(a[4] for a in got), 3)}")


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@settings(max_examples=17, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=preempt_cases())
def test_scheduler_plans_with_preemptable_capacity_as_the_simulator(policy, case):
    _same_as_simulate(policy, case)


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@settings(max_examples=17, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=shared_preempt_cases())
def test_scheduler_plans_on_shared_nodes_as_the_simulator(policy, case):
    _same_as_simulate(policy, case)


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=shared_preempt_cases())
def test_scheduler_plans_with_run_index_as_the_simulator(monkeypatch, policy, case):
    """The run index forced on from a type's first plan, in the Scheduler's single
    passes and the simulator's: the same attempts."""
    from fastsched.engine import loop as engine_loop, plan as engine_plan
    monkeypatch.setattr(engine_loop, "_INDEX_AFTER", 0)
    monkeypatch.setattr(engine_plan, "_INDEX_AFTER_PASS", 0)
    _same_as_simulate(policy, case)


def _example(tmp_path):
    conf, path = _site(tmp_path)
    cluster = read_cluster(conf)
    w = read_workload(path, cluster)
    return cluster, w.jobs, site_preemption(cluster), w.lifecycle(True, 121)


def _by_attempt(got):
    seen, out = {}, {}
    for j, start, end, _, _ in sorted(got, key=lambda a: (a[0], a[1])):
        out[(j, seen.get(j, 0))] = (start, end)
        seen[j] = seen.get(j, 0) + 1
    return out


@pytest.mark.parametrize("policy", ["easy", "conservative"])
def test_worked_example_through_the_scheduler(tmp_path, policy):
    """docs/lifecycle.md's example: without planning by preempting (opted out) job 4
    backfills and job 3 waits for it; with it, job 3's reservation at 10,000 keeps job
    4 off."""
    cluster, jobs, pre, lc = _example(tmp_path)
    for backfill, want in ((False, NO_BACKFILL), (True, BACKFILL)):
        s = Scheduler(cluster, policy, jobs=jobs, preemption=replace(pre, backfill=backfill),
                      lifecycle=lc)
        assert _by_attempt(drive(s, jobs, lc).attempts) == want


def test_scheduler_plans_with_preemptable_capacity_by_default(tmp_path):
    """Slurm's behaviour is the Scheduler's default: the site's preemption as given."""
    cluster, jobs, pre, lc = _example(tmp_path)
    s = Scheduler(cluster, "easy", jobs=jobs, preemption=pre, lifecycle=lc)
    assert _by_attempt(drive(s, jobs, lc).attempts) == BACKFILL


def test_expected_start_counts_preemptable_capacity(tmp_path):
    """At 200 (jobs 1, 2 running; 3 and 4 queued), job 3 (high) is expected at 10,000
    when job 2's (scavenger) nodes count as free, else at job 2's limit end."""
    cluster, jobs, pre, lc = _example(tmp_path)
    starts = {}
    for backfill in (False, True):
        s = Scheduler(cluster, "conservative", jobs=jobs,
                      preemption=replace(pre, backfill=backfill), lifecycle=lc)
        s.submit(jobs.take(jobs.submit_time == 0))
        s.apply(s.schedule(0))
        s.submit(jobs.take(jobs.submit_time > 0))
        e = s.expected_start_times(200)
        starts[backfill] = dict(zip(e.job_id.tolist(), e.expected_start.tolist()))
    assert starts[False][3] == 86_400 and starts[False][4] == 200
    assert starts[True][3] == 10_000 and starts[True][4] == 10_000 + 7_200


def test_single_pass_names_running_entries():
    """The running lists' entries name their jobs (pending count + running index) in
    the lists' order: by held end on the grid, equal ends in entry order."""
    from fastsched.engine.passpreempt import _name_entries
    from fastsched.engine.running import RunningJobs, _running_state
    cluster = Cluster(["a", "b"], [8, 8], [0, 0], [0, 0],
                      partitions=[Partition("p", np.arange(2))])
    r = RunningJobs.from_arrays(job_id=[7, 8, 9], planned_end=[50, 31, 40],
                                node_offsets=[0, 2, 3, 4], nodes=[0, 1, 0, 0],
                                gpus=0, cpus=1, mem=0)
    _, run, _ = _running_state(cluster, r, 0, 10)
    _name_entries(run, r, 10, 5)
    assert run.RJ[0, :3].tolist() == [6, 7, 5]       # ends 40 (31 on the grid), 40, 50
    assert run.RT[0, :3].tolist() == [40, 40, 50]
    assert run.RJ[1, :1].tolist() == [5]


def test_cli_says_why_sbatch_and_plan_take_no_preempt_backfill(capsys):
    """sbatch --test-only plans on an empty cluster (nothing to preempt); plan's models
    have no preemptees, one partition, or no running partitions: both say so."""
    from fastsched.cli import main
    assert main(["sbatch", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "on an empty cluster: no job runs there to be preempted, so there is no " \
        "--preempt-backfill" in text
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    text = " ".join(capsys.readouterr().out.split()).replace("- ", "-")   # (wrapped)
    assert "Preemption is not planned (no --preempt-backfill)" in text
    with pytest.raises(SystemExit):
        main(["plan", "--cluster", "x", "--now", "0", "--preempt-backfill"])
    assert "unrecognized arguments: --preempt-backfill" in capsys.readouterr().err
