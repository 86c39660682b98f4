"""``--time-min`` in the embeddable Scheduler: driven at the simulator's instants, it
starts what ``simulate(..., time_min=...)`` starts, with the same limits (each START
decision carries the limit the job runs with); what it refuses."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fastsched import Cluster, JobTable, NodeEvents, Scheduler, simulate
from fastsched.model.errors import InputError, UnsupportedError
from fastsched.model.lifecycle import Lifecycle
from scheddrive import drive, simulated
from test_constraints import constrained_cases, engine_inputs
from test_nodeplan import node_clusters, node_workloads
from test_scheduler_ranges import ranged
from fastsched.tools.testing import node_event_rows
from test_scheduler_requeue import _check, elastic_lifecycles, failure_cases
from test_scheduler_resv import _instants
from test_scheduler_starts import drive as drive_costs, simulated as simulated_costs
from test_timemin import _scaled_members
from fastsched.sim.decisions import START
from fastsched.tools.testing import containers, power_models


def _scaled(data, jobs, k=None):
    """The drawn jobs on a minute-scale clock (a cut limit is whole minutes; ``k``: the
    scale, else drawn), most with a time minimum below their limit."""
    k = data.draw(st.sampled_from([7, 40, 60, 90])) if k is None else k
    jobs = jobs.take(np.arange(len(jobs)))
    for name in ("submit_time", "time_limit", "runtime"):
        setattr(jobs, name, (getattr(jobs, name) * k).astype(getattr(jobs, name).dtype))
    tmin = [data.draw(st.sampled_from([0, 1, max(int(lim) // 4, 1), int(lim) // 2])
                      | st.integers(1, int(lim))) for lim in jobs.time_limit]
    return jobs, np.array(tmin, dtype=np.int64)


SETTINGS = settings(max_examples=19, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@SETTINGS
@given(data=st.data())
def test_scheduler_cuts_limits_as_the_simulator(policy, data):
    cluster, _ = data.draw(node_clusters())
    jobs = data.draw(node_workloads(cluster, np.ones(cluster.num_nodes, dtype=bool),
                                    max_jobs=14))
    jobs, tmin = _scaled(data, jobs)
    _same(policy, cluster, jobs, tmin, {})


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@SETTINGS
@given(data=st.data())
def test_scheduler_cuts_limits_with_constraints_as_the_simulator(policy, data):
    cluster, _, jobs, parts, deps, groups, caps, _ = data.draw(constrained_cases())
    jobs, tmin = _scaled(data, jobs)
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    _same(policy, cluster, jobs, tmin, {"partitions": pc, "dependencies": dp, "limits": lg})


@st.composite
def gap_cases(draw):
    """A gap to backfill: a one-node job runs, a job of every node waits for it, and
    later jobs on fewer nodes fit before that reservation only with a cut limit."""
    X = draw(st.integers(2, 5))
    k = draw(st.sampled_from([1, 60]))
    n = draw(st.integers(1, 8))
    first = draw(st.integers(2, 40))
    limits = [first, draw(st.integers(1, 40))] + draw(st.lists(st.integers(1, 80),
                                                             min_size=n, max_size=n))
    nodes = [1, X] + draw(st.lists(st.integers(1, X - 1), min_size=n, max_size=n))
    submit = [0, 0] + draw(st.lists(st.integers(0, first), min_size=n, max_size=n))
    runtime = [draw(st.integers(1, lim)) for lim in limits]
    tmin = [0, 0] + [draw(st.sampled_from([0, 1, max(lim // 4, 1)]) | st.integers(1, lim))
                     for lim in limits[2:]]
    jobs = JobTable.from_arrays(job_id=np.arange(1, n + 3), submit_time=np.array(submit) * k,
                                time_limit=np.array(limits) * k,
                                runtime=np.array(runtime) * k, num_nodes=nodes)
    return Cluster.homogeneous(X), jobs, np.array(tmin, dtype=np.int64) * k


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@SETTINGS
@given(case=gap_cases())
def test_scheduler_cuts_limits_in_gaps_as_the_simulator(policy, case):
    _same(policy, *case, {})


def _same(policy, cluster, jobs, tmin, options):
    """The Scheduler driven at the simulator's instants (with ``advance_reservations``
    among ``options``, at the windows' ends too) starts what ``simulate`` starts, with
    the same limits."""
    s = Scheduler(cluster, policy, jobs=jobs, time_min=tmin, **options)
    resv = options.get("advance_reservations")
    got = drive(s, jobs, instants=() if resv is None else _instants(s, resv, jobs)).starts
    r = simulate(cluster, jobs, policy, reservations="nodes", time_min=tmin, **options)
    sched = r.schedule
    want = {int(j): (int(sched.start_time[i]), sorted(sched.nodes_of(i).tolist()),
                     int(r.workload.time_limit[i]))
            for i, j in enumerate(jobs.job_id) if sched.start_time[i] >= 0}
    assert got == want
    cut = [i for i, j in enumerate(jobs.job_id)
           if int(j) in got and got[int(j)][2] < jobs.time_limit[i]]
    member = "" if resv is None else \
        f", of members: {min(int((np.asarray(resv.member)[cut] >= 0).sum()), 2)}"
    event(f"cut limits: {min(len(cut), 3)}{member}")


def test_a_start_carries_its_cut_limit_and_holds_its_nodes_for_it():
    jobs = JobTable.from_arrays(job_id=[1, 2, 3], submit_time=0, time_limit=[600, 1200, 3600],
                                runtime=[600, 1200, 1000], num_nodes=[1, 2, 1])
    s = Scheduler(Cluster.homogeneous(2), "easy", jobs=jobs, time_min=[0, 0, 300])
    s.submit(jobs)
    d = s.schedule(0)
    # 1 starts; 2 (both nodes) is reserved at 600; 3 fits before it only with a
    # limit cut to the 600 s left, whole minutes, at least its 300 s minimum
    assert list(d.starts) == [1, 3] and d.time_limit.tolist() == [600, 1200, 600]
    s.apply(d)
    assert s.running_jobs.planned_end.tolist() == [600, 600]


def test_refused_combinations():
    jobs = JobTable.from_arrays(job_id=[1, 2], submit_time=0, time_limit=600, runtime=60,
                                num_nodes=1)
    cluster = Cluster.homogeneous(2)
    with pytest.raises(InputError, match="jobs="):
        Scheduler(cluster, "easy", time_min=[0, 60])
    with pytest.raises(InputError, match="time_min"):
        Scheduler(cluster, "easy", jobs=jobs, time_min=[0, 700])
    with pytest.raises(UnsupportedError, match="slurm"):
        Scheduler(cluster, "conservative", jobs=jobs, time_min=[0, 60], reservations="slurm")
    assert Scheduler(cluster, "easy", jobs=jobs, time_min=[0, 0]).engine == "pool"
    from test_scheduler_preempt import _two_tiers
    tiers, two, pre = _two_tiers()
    # modelled (tests/test_timemin_preempt.py): the node engine
    assert Scheduler(tiers, "easy", jobs=two, preemption=pre, time_min=[0, 30]).engine == \
        "nodes"


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@SETTINGS
@given(data=st.data())
def test_scheduler_cuts_limits_with_failures_as_the_simulator(policy, data):
    """With a lifecycle (requeue, checkpoints, --no-kill, node ranges) and node events:
    each attempt is planned anew, and runs with the limit its start gave, as
    ``simulate`` runs it (attempt for attempt; each job's last limit)."""
    if data.draw(st.booleans()):
        cluster, jobs, rows, lc = data.draw(failure_cases(policy,
                                                          shrink=data.draw(st.booleans())))
        k = data.draw(st.sampled_from([7, 60]))
        jobs, tmin = _scaled(data, jobs, k)
    else:               # a gap to backfill, and failures in it
        cluster, jobs, tmin = data.draw(gap_cases())
        k = int(np.gcd.reduce(np.concatenate([jobs.time_limit, jobs.runtime])))
        rows = data.draw(node_event_rows(cluster.num_nodes, max_events=4, max_time=40,
                                         kinds=("down", "down", "up", "drain", "resume")))
        lc = data.draw(elastic_lifecycles(len(jobs)))
    rows = [(t * k, kind, nodes) for t, kind, nodes in rows]
    lc = replace(lc, checkpoint_interval=lc.checkpoint_interval * k, delay=lc.delay * k)
    if data.draw(st.booleans()):
        lc = ranged(data.draw, jobs, lc)
    s = Scheduler(cluster, policy, jobs=jobs, lifecycle=lc, time_min=tmin)
    driven = drive(s, jobs, lc, rows)
    r = simulate(cluster, jobs, policy, reservations="nodes", lifecycle=lc, time_min=tmin,
                 events=NodeEvents.from_rows(rows, cluster.num_nodes))
    _check(policy, driven.attempts, driven.held, r, s, jobs)
    assert driven.attempts == simulated(r)
    t, ids = r.attempts, r.workload.job_id
    limit = r.workload.time_limit[t["row"]] if t["limit"] is None else t["limit"]
    last = {}
    for q in range(len(t["row"])):
        if t["start"][q] >= 0:
            last[int(ids[t["row"][q]])] = int(limit[q])
    assert {j: v[2] for j, v in driven.starts.items()} == last
    cut = sum(1 for j, v in driven.starts.items() if v[2] < jobs.time_limit[ids == j][0])
    event(f"cut limits: {min(cut, 2)}")


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_scheduler_cuts_limits_with_advance_reservations_as_the_simulator(policy, data):
    """Windows cut limits, and member jobs (``--reservation``) start with the limit
    their window leaves (tests/test_resvjobs.py's reservations, some without members),
    as ``simulate`` cuts them; driven at the windows' ends too."""
    cluster, _, jobs, parts, deps, groups, caps, _ = data.draw(constrained_cases())
    k = data.draw(st.sampled_from([7, 60]))
    jobs, tmin = _scaled(data, jobs, k)
    jobs.cpus_per_node = np.maximum(jobs.cpus_per_node, 1).astype(jobs.cpus_per_node.dtype)
    resv = _scaled_members(data.draw, cluster, None, jobs, parts, k)
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    _same(policy, cluster, jobs, tmin, {"partitions": pc, "dependencies": dp, "limits": lg,
                                        "advance_reservations": resv})


def _maint(flags=()):
    """docs/lifecycle.md's member example: jobs 1 and 2 run in maint ([600, 1800) on
    g1), job 3 does not."""
    from fastsched.model.reservations import Reservation, Reservations
    from fastsched.model.resvjobs import JobReservations
    cluster = Cluster([f"g{i}" for i in range(1, 5)], cpus=[8] * 4, gpus=[4] * 4,
                      mem_mb=[0] * 4)
    jobs = JobTable.from_arrays(job_id=[1, 2, 3], submit_time=0, time_limit=[1800, 3600, 600],
                                runtime=[1000, 3000, 600], num_nodes=1, gpus_per_node=4,
                                cpus_per_node=1, user=0)
    maint = Reservation("maint", 600, 1800, (0,), users=("alice",), flags=flags)
    members = JobReservations.of(Reservations((maint,), 4), ["maint", "maint", ""],
                                 ["alice", "alice", "bob"])
    return cluster, jobs, members


def test_a_member_starts_with_the_limit_its_window_leaves():
    """Job 1 (30 min asked, 10 min minimum) starts as maint opens with the 20 min left
    in it, on g1; job 2 (60 min, no minimum) fits no window; a FLEX reservation is
    refused with a time minimum, as ``simulate`` refuses it."""
    cluster, jobs, members = _maint()
    s = Scheduler(cluster, "easy", jobs=jobs, advance_reservations=members,
                  time_min=[600, 0, 0])
    s.submit(jobs)
    d = s.schedule(0)
    assert list(d.starts) == [3]
    s.apply(d)
    s.complete([3], 600)
    d = s.schedule(600)
    assert list(d.starts) == [1] and d.nodes_of(0).tolist() == [0]
    assert d.time_limit[d.job_id == 1].tolist() == [1200]
    s.apply(d)
    assert s.running_jobs.planned_end[s.running_jobs.job_id == 1].tolist() == [1800]
    r = simulate(cluster, jobs, "easy", advance_reservations=members, time_min=[600, 0, 0])
    assert r.jobs.set_index("job_id").loc[1, ["start_time", "time_limit"]].tolist() == \
        [600, 1200]
    with pytest.raises(UnsupportedError, match="time_min with jobs running in a FLEX"):
        Scheduler(cluster, "easy", jobs=jobs, advance_reservations=_maint(("FLEX",))[2],
                  time_min=[600, 0, 0])


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@settings(SETTINGS, max_examples=15)
@given(data=st.data())
def test_scheduler_cuts_limits_with_boots_and_pulls_as_the_simulator(policy, data):
    """Power saving, containers or both, in gaps to backfill (fcfs has none): the cut
    limit counts from the boots' end and holds the pull; the same starts, ends, boots,
    pulls and limits as ``simulate``."""
    cluster, jobs, tmin = data.draw(gap_cases())
    which = data.draw(st.sampled_from(["power", "containers", "both"]))
    options = {}
    if which != "containers":
        options["power"] = data.draw(power_models(cluster))
    if which != "power":
        options["containers"] = data.draw(containers(len(jobs)))
    s = Scheduler(cluster, policy, jobs=jobs, time_min=tmin, **options)
    limits, schedule = {}, s.schedule
    asked = dict(zip(jobs.job_id.tolist(), jobs.time_limit.tolist()))

    def seen(now):
        d = schedule(now)
        for i in np.flatnonzero(d.outcome == START).tolist():
            j = int(d.job_id[i])           # (no time_limit: no job has a time minimum)
            limits[j] = asked[j] if d.time_limit is None else int(d.time_limit[i])
        return d
    s.schedule = seen
    got = drive_costs(s, jobs)
    r = simulate(cluster, jobs, policy, reservations="nodes", time_min=tmin, **options)
    assert got == simulated_costs(r, pulls=which != "power", boots=which != "containers")
    ran = r.schedule.start_time >= 0
    assert limits == dict(zip(jobs.job_id[ran].tolist(), r.workload.time_limit[ran].tolist()))
    cut = sum(1 for i, j in enumerate(jobs.job_id.tolist())
              if j in limits and limits[j] < jobs.time_limit[i])
    event(f"{which}: cut limits {min(cut, 2)}")


def test_a_cut_job_waits_for_its_boot_and_runs_its_cut_limit_from_then():
    """Job 2 (both nodes) is reserved at 600, when job 1 ends; job 3 fits before it on
    n002 (CLOUD, 120 s boot) with its limit cut to 600 s. The cut is made at the pass,
    and Slurm resets a CONFIGURING job's end to its ready time plus its limit
    (job_mgr.c job_config_fini): job 3 runs 120..720, and job 2 starts at 720."""
    from fastsched import PowerSaving
    cluster = Cluster.homogeneous(2, cpus=1, prefix="n")
    jobs = JobTable.from_arrays(job_id=[1, 2, 3], submit_time=0, time_limit=[600, 600, 3600],
                                runtime=[600, 600, 3600], num_nodes=[1, 2, 1],
                                cpus_per_node=1, user=0)
    pm = PowerSaving(suspend_time=None, boot=120, resume_timeout=600, resume_rate=0,
                     cloud_nodes=("n002",))
    s = Scheduler(cluster, "easy", jobs=jobs, power=pm, time_min=[0, 0, 300])
    s.submit(jobs)
    d = s.schedule(0)
    assert list(d.starts) == [1, 3] and d.time_limit.tolist() == [600, 600, 600]
    assert d.configure_time.tolist() == [0, 0, 120] and d.end_time.tolist() == [600, -1, 720]
    s.apply(d)
    assert s.running_jobs.planned_end.tolist() == [600, 720]
    s.complete([1], 600)
    assert list(s.schedule(600).starts) == []
    r = simulate(cluster, jobs, "easy", power=pm, time_min=[0, 0, 300])
    got = r.jobs.set_index("job_id")
    assert got.loc[3, ["start_time", "end_time", "time_limit", "configure_time"]].tolist() \
        == [120, 720, 600, 120]
    assert got.loc[2, "start_time"] == 720
    assert r.verify().ok
