"""The node engine with constraints (dependencies, limit groups, partition
choices, queue order and its periodic recomputation) against its twin
(tests/naive_nodes.py): identical starts, nodes, GPUs, partitions and reasons."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import naive_nodes
from fastsched import Cluster, JobTable, simulate, verify
from fastsched.model.schedule import Schedule
from fastsched.model.cluster import Partition
from fastsched.model.constraints import (AFTER, AFTERANY, AFTERNOTOK, AFTEROK, CAPS, Dependencies,
                                   LimitGroups, PartitionChoices)
from fastsched.model.errors import InputError
from fastsched.engine import RunningJobs, limit_reasons, plan_nodes, run_nodes
from test_nodeplan import assert_valid, node_clusters, node_workloads

SETTINGS = settings(max_examples=31, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def constrained_cases(draw):
    cluster, available = draw(node_clusters())
    jobs = draw(node_workloads(cluster, available, max_jobs=12))
    n = len(jobs)
    ids = [int(j) for j in jobs.job_id]
    P = len(cluster.partitions)
    # partition choices: the table's partition first or among others
    parts = {}
    for i, j in enumerate(ids):
        extra = draw(st.lists(st.integers(0, P - 1), max_size=2, unique=True))
        lst = [int(jobs.partition[i])] + [p for p in extra if p != jobs.partition[i]]
        parts[j] = draw(st.permutations(lst))
    # dependencies on other jobs (any submit order: a parent may come later)
    deps = {}
    for j in ids:
        if draw(st.integers(0, 3)) == 0:
            others = [o for o in ids if o != j]
            if others:
                deps[j] = draw(st.lists(st.tuples(st.sampled_from(others),
                                                  st.sampled_from([AFTER, AFTERANY, AFTEROK,
                                                                   AFTERNOTOK])),
                                        min_size=1, max_size=2))
    # limit groups: 0-3 groups, caps small enough to bind
    G = draw(st.integers(0, 3))
    caps = [tuple(draw(st.sampled_from([-1, -1, 1, 2, 3])) if k in (0, 4) else
                  draw(st.sampled_from([-1, -1, 2, 4, 8, 16, 200])) for k in range(len(CAPS)))
            for _ in range(G)]
    groups = {j: draw(st.lists(st.integers(0, G - 1), max_size=2, unique=True)) if G else []
              for j in ids}
    rank = {j: draw(st.integers(0, 3)) for j in ids} if draw(st.booleans()) else None
    return cluster, available, jobs, parts, deps, groups, caps, rank


def engine_inputs(jobs, parts, deps, groups, caps):
    ids = [int(j) for j in jobs.job_id]
    row = {j: i for i, j in enumerate(ids)}

    def csr(lists):
        off = np.zeros(len(ids) + 1, dtype=np.int64)
        off[1:] = np.cumsum([len(x) for x in lists])
        return off, [v for x in lists for v in x]

    off, flat = csr([parts[j] for j in ids])
    pc = PartitionChoices(off, flat)
    off, flat = csr([deps.get(j, []) for j in ids])
    dp = Dependencies(off, [row[p] for p, _ in flat], [k for _, k in flat])
    off, flat = csr([groups.get(j, []) for j in ids])
    names = [tuple(f"g{g}:{c}" for c in CAPS) for g in range(len(caps))]
    lg = LimitGroups(off, flat, np.array(caps, dtype=np.int64).reshape(-1, len(CAPS)), names)
    return pc, dp, lg


class WindowedReorder:
    """A reorder the driver asks only for its queue window's jobs (``ranks``), as the
    simulator's priorities are asked; ``reorder(b, job id)`` is the key, lower first."""

    def __init__(self, reorder, ids):
        self.reorder, self.ids = reorder, ids

    def ranks(self, b, progress, rows):
        return np.array([self.reorder(b, self.ids[i]) for i in rows], dtype=np.float64)


def assert_same(case, policy, depth=1, reorder=None, period=None, resolution=1, window=None,
                windowed=False):
    cluster, available, jobs, parts, deps, groups, caps, rank = case
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    ids = [int(j) for j in jobs.job_id]
    key = None if rank is None else np.array([rank[j] for j in ids])
    eng_reorder = None
    twin_reorder = None
    if reorder is not None:
        eng_reorder = lambda b, prog: np.array([reorder(b, j) for j in ids])  # noqa: E731
        if windowed:
            eng_reorder = WindowedReorder(reorder, ids)
        twin_reorder = lambda b, s, e, el: {j: reorder(b, j) for j in ids}  # noqa: E731
    run = run_nodes(cluster, jobs, policy, depth, available, partitions=pc, dependencies=dp,
                    limits=lg, rank=key, reorder=eng_reorder, period=period,
                    resolution=resolution, window=window)
    out, waiting = naive_nodes.simulate(
        cluster, naive_nodes.jobs_from_table(jobs), policy, depth, available, partitions=parts,
        deps=deps, groups=groups, caps=caps, rank=rank, reorder=twin_reorder, period=period,
        resolution=resolution, window=window)
    naive_nodes.assert_same_records(run, ids, out)
    for i, j in enumerate(ids):
        if j in out:
            gpus = out[j][3]
            masks = run.alloc_gpu_mask[run.alloc_offsets[i]:run.alloc_offsets[i + 1]]
            assert [int(m) for m in masks] == [sum(1 << k for k in gl) for gl in gpus], j
        else:
            why = waiting[j]
            if why == "never":
                assert run.never[i], j
            elif isinstance(why, tuple) and why[1] == 4:      # rejected at submit
                assert run.reason[i] == why[0] * len(CAPS) + 4, j
            elif isinstance(why, tuple):
                assert run.reason[i] == why[0] * len(CAPS) + why[1], j
            else:
                assert not run.never[i] and run.reason[i] == -1, j
    sched = Schedule(job_id=jobs.job_id.copy(), start_time=run.start, end_time=run.end,
                     alloc_offsets=_sub_offsets(run), alloc_nodes=_sub_alloc(run, run.start >= 0)[1])
    verify(cluster, jobs, sched, dependencies=dp, limits=lg, partitions=pc).raise_if_failed()
    started = run.start >= 0
    ran = jobs.take(started)
    ran.partition = run.partition[started]        # where each job ran
    assert_valid(cluster, available, ran, run.start[started], run.end[started],
                 *_sub_alloc(run, started))
    return run


def _sub_offsets(run):
    counts = np.where(run.start >= 0, np.diff(run.alloc_offsets), 0)
    off = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=off[1:])
    return off


def _sub_alloc(run, keep):
    counts = np.diff(run.alloc_offsets)
    off = np.zeros(int(keep.sum()) + 1, dtype=np.int64)
    np.cumsum(counts[keep], out=off[1:])
    entries = np.repeat(keep, counts)
    return off, run.alloc_nodes[entries], run.alloc_gpu_mask[entries]


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("easy", 3),
                                          ("conservative", 1)])
@SETTINGS
@given(case=constrained_cases())
def test_constraints_match_twin(case, policy, depth):
    assert_same(case, policy, depth)


@SETTINGS
@given(case=constrained_cases(), period=st.integers(1, 12), salt=st.integers(0, 5))
def test_periodic_reorder_matches_twin(case, period, salt):
    reorder = lambda b, j: (j * 7 + b * (salt + 1)) % 5  # noqa: E731
    assert_same(case, "easy", 1, reorder=reorder, period=period)


@SETTINGS
@given(case=constrained_cases(), period=st.integers(1, 12), salt=st.integers(0, 5),
       policy=st.sampled_from(["easy", "conservative"]))
def test_windowed_reorder_matches_twin(case, period, salt, policy):
    """Asked only for the queue window's jobs, the order is the whole recomputation's."""
    reorder = lambda b, j: (j * 7 + b * (salt + 1)) % 5  # noqa: E731
    assert_same(case, policy, 1, reorder=reorder, period=period, windowed=True)


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@SETTINGS
@given(case=constrained_cases(), resolution=st.sampled_from([1, 2, 5, 7]),
       window=st.sampled_from([None, 0, 3, 10]))
def test_resolution_and_window_match_twin(case, policy, resolution, window):
    assert_same(case, policy, 2, resolution=resolution, window=window)


# --------------------------------------------------------------------------- hand-worked

def _cluster(nodes=2, gpus=4):
    return Cluster([f"n{i}" for i in range(nodes)], [8] * nodes, [gpus] * nodes, [0] * nodes,
                   partitions=[Partition("a", np.array([0])),
                               Partition("b", np.array([nodes - 1]))])


def _jobs(**cols):
    n = len(cols["job_id"])
    base = dict(submit_time=[0] * n, time_limit=[10] * n, runtime=[10] * n, num_nodes=1,
                cpus_per_node=1, gpus_per_node=4, partition=0)
    base.update(cols)
    return JobTable.from_arrays(**base)


def test_afterok_chain_and_never_satisfied():
    # job 2 afterok 1 (1 completes); job 3 afterok 4 (4 times out: never); job 5 afternotok 4
    jobs = _jobs(job_id=[1, 2, 3, 4, 5], runtime=[10, 10, 10, 99, 5])
    dp = Dependencies([0, 0, 1, 2, 2, 3], [0, 3, 3], [AFTEROK, AFTEROK, AFTERNOTOK])
    run = run_nodes(_cluster(nodes=1), jobs, "easy", dependencies=dp,
                    partitions=PartitionChoices.single([0] * 5))
    assert list(run.start) == [0, 10, -1, 20, 30]
    assert list(run.never) == [False, False, True, False, False]
    assert run.eligible[1] == 10 and run.eligible[4] == 30


def test_after_start_releases_in_the_same_instant():
    jobs = _jobs(job_id=[1, 2], gpus_per_node=[2, 2])
    dp = Dependencies([0, 0, 1], [0], [AFTER])
    run = run_nodes(_cluster(nodes=1), jobs, "fcfs", dependencies=dp)
    assert list(run.start) == [0, 0]


def test_limit_holds_without_blocking_others():
    # one group: at most 4 GPUs running; job 2 (4 GPUs) waits for job 1, job 3 (other user) runs
    jobs = _jobs(job_id=[1, 2, 3], partition=[0, 1, 1])
    lg = LimitGroups([0, 1, 2, 2], [0, 0], [[-1, 4, -1, -1, -1]],
                     [("J", "QOSMaxGRESPerUser", "C", "M", "S")])
    run = run_nodes(_cluster(), jobs, "fcfs", limits=lg)
    assert list(run.start) == [0, 10, 0]
    d = plan_nodes(_cluster(), RunningJobs.empty(), jobs, 0, "fcfs", limits=lg,
                   limit_usage=[[1, 4, 1, 0, 2]])
    assert list(d.reason) == ["QOSMaxGRESPerUser", "QOSMaxGRESPerUser", ""]
    assert list(d.outcome) == [2, 2, 0]
    assert list(limit_reasons(lg, [1, -1])) == ["QOSMaxGRESPerUser", ""]


def test_max_submit_rejects_at_arrival():
    jobs = _jobs(job_id=[1, 2, 3], submit_time=[0, 1, 20])
    lg = LimitGroups([0, 1, 2, 3], [0, 0, 0], [[-1, -1, -1, -1, 1]],
                     [("J", "G", "C", "M", "QOSMaxSubmitJobPerUserLimit")])
    run = run_nodes(_cluster(nodes=1), jobs, "easy", limits=lg,
                    partitions=PartitionChoices.single([0] * 3))
    assert list(run.start) == [0, -1, 20]
    assert run.reason[1] == 4


def test_multi_partition_takes_the_earliest():
    # job 1 fills n0; job 2 may use a or b: b lets it start now
    jobs = _jobs(job_id=[1, 2])
    pc = PartitionChoices([0, 1, 3], [0, 0, 1])
    run = run_nodes(_cluster(), jobs, "easy", partitions=pc)
    assert list(run.start) == [0, 0] and list(run.partition) == [0, 1]
    d = plan_nodes(_cluster(), RunningJobs.empty(), jobs, 0, "easy", partitions=pc)
    assert list(d.partition) == [0, 1]


def test_unfit_partition_choice_is_dropped_and_all_unfit_rejected():
    c = Cluster(["n0", "n1"], [8, 8], [4, 8], [0, 0],
                partitions=[Partition("a", np.array([0])),
                               Partition("b", np.array([1]))])
    jobs = _jobs(job_id=[1], gpus_per_node=[8])
    run = run_nodes(c, jobs, "easy", partitions=PartitionChoices([0, 2], [0, 1]))
    assert run.partition[0] == 1
    with pytest.raises(InputError, match="partition 'a'"):
        run_nodes(c, jobs, "easy", partitions=PartitionChoices([0, 1], [0]))


def test_rank_orders_the_queue():
    jobs = _jobs(job_id=[1, 2, 3], submit_time=[0, 1, 1])   # 1 runs; 3 outranks 2
    run = run_nodes(_cluster(nodes=1), jobs, "fcfs", rank=[0, 5, 1])
    assert list(run.start) == [0, 20, 10]


def test_bad_constraint_inputs():
    with pytest.raises(InputError, match="depends on itself"):
        Dependencies([0, 1], [0], [AFTER])
    with pytest.raises(InputError, match="reason names"):
        LimitGroups([0, 0], [], [[1, -1, -1, -1, -1]], [])
    with pytest.raises(InputError, match="at least one partition"):
        PartitionChoices([0, 0], [])
    jobs = _jobs(job_id=[1, 2])
    with pytest.raises(InputError, match="rank"):
        run_nodes(_cluster(), jobs, "easy", rank=[1])


def test_verify_catches_broken_dependency_and_limit():
    jobs = _jobs(job_id=[1, 2], gpus_per_node=[2, 2])
    dp = Dependencies([0, 0, 1], [0], [AFTEROK])
    lg = LimitGroups([0, 1, 2], [0, 0], [[1, -1, -1, -1, -1]], [("AssocMaxJobsLimit",) * 5])
    sched = Schedule(job_id=jobs.job_id.copy(), start_time=np.array([0, 0]),
                     end_time=np.array([10, 10]), alloc_offsets=np.array([0, 1, 2]),
                     alloc_nodes=np.array([0, 0]))
    report = verify(_cluster(nodes=1), jobs, sched, dependencies=dp, limits=lg)
    assert report.kinds() == {"dependency", "limit_exceeded"}
    unstarted = Schedule(job_id=jobs.job_id.copy(), start_time=np.array([0, -1]),
                         end_time=np.array([10, -1]), alloc_offsets=np.array([0, 1, 1]),
                         alloc_nodes=np.array([0]))
    assert verify(_cluster(nodes=1), jobs, unstarted).kinds() == {"not_started"}
    assert verify(_cluster(nodes=1), jobs, unstarted, limits=lg).ok


def test_simulate_records_constraints():
    jobs = _jobs(job_id=[1, 2, 3, 4], runtime=[10, 10, 99, 10], partition=[0, 0, 0, 0])
    dp = Dependencies([0, 0, 1, 1, 2], [0, 2], [AFTERANY, AFTEROK])
    pc = PartitionChoices([0, 1, 2, 4, 5], [0, 0, 1, 0, 0])      # job 3: b, then a
    result = simulate(_cluster(), jobs, "easy", dependencies=dp, partitions=pc,
                      priority=[1.0, 1.0, 5.0, 1.0])
    df = result.jobs
    assert result.summary["engine"] == "nodes" and result.summary["never_started"] == 1
    assert list(df.state) == ["COMPLETED", "COMPLETED", "TIMEOUT", "PENDING"]
    assert list(df.reason) == ["", "", "", "DependencyNeverSatisfied"]
    assert list(df.partition) == ["a", "a", "b", ""]
    assert df.start_time[:3].tolist() == [0, 10, 0]
    assert df[["start_time", "end_time", "wait_time", "run_time"]].iloc[3].isna().all()
    assert df.priority.tolist()[:3] == [1.0, 1.0, 5.0]


# --------------------------------------------------------------------------- topology

@st.composite
def placements(draw, cluster, jobs):
    """Random two-level trees (some nodes in no switch), segments, switch limits, GPU groups."""
    n = cluster.num_nodes
    leaf = draw(st.lists(st.integers(-1, 2), min_size=n, max_size=n))
    if max(leaf) < 0:
        leaf[0] = 0
    used = sorted({x for x in leaf if x >= 0})
    leaf = [used.index(x) if x >= 0 else -1 for x in leaf]          # ids 0..k-1
    spine_of = [draw(st.integers(0, 1)) for _ in used]
    levels = [leaf, [spine_of[x] if x >= 0 else -1 for x in leaf]]
    ids = [int(j) for j in jobs.job_id]
    unit = {j: draw(st.sampled_from([1, 1, 2])) for j in ids}
    unit = {j: (u if jobs.num_nodes[i] % u == 0 else 1) for i, (j, u) in enumerate(unit.items())}
    max_leaves = {j: draw(st.sampled_from([0, 0, 1, 2])) for j in ids}
    leaf_wait = {j: draw(st.sampled_from([-1, 0, 5])) for j in ids}
    groups = draw(st.sampled_from([[], [0b0011, 0b1100], [0b0101], [0b111]]))
    return dict(levels=levels, unit=unit, max_leaves=max_leaves, leaf_wait=leaf_wait,
                gpu_groups=groups)


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@SETTINGS
@given(data=st.data())
def test_topology_placement_matches_twin(data, policy):
    from fastsched.model.constraints import Placement
    cluster, available = data.draw(node_clusters())
    jobs = data.draw(node_workloads(cluster, available, max_jobs=10))
    pl = data.draw(placements(cluster, jobs))
    ids = [int(j) for j in jobs.job_id]
    engine_pl = Placement(np.array(pl["levels"]), [pl["unit"][j] for j in ids],
                          [pl["max_leaves"][j] for j in ids], [pl["leaf_wait"][j] for j in ids],
                          pl["gpu_groups"])
    run = run_nodes(cluster, jobs, policy, 1, available, placement=engine_pl)
    out, waiting = naive_nodes.simulate(cluster, naive_nodes.jobs_from_table(jobs), policy, 1,
                                        available, placement=pl)
    for i, j in enumerate(ids):
        if j not in out:
            assert run.start[i] == -1, j
            continue
        s, e, nodes, gpus, _ = out[j]
        assert (run.start[i], run.end[i]) == (s, e), j
        assert list(run.alloc_nodes[run.alloc_offsets[i]:run.alloc_offsets[i + 1]]) == nodes, j
        masks = run.alloc_gpu_mask[run.alloc_offsets[i]:run.alloc_offsets[i + 1]]
        assert [int(m) for m in masks] == [sum(1 << k for k in gl) for gl in gpus], j


def test_topology_keeps_a_job_on_one_switch():
    # 4 nodes on two leaf switches {0,1} {2,3}; job 1 takes node 0 (1 node); a 2-node job
    # then fits on {2,3} (one switch) rather than best-fit {1,2}
    c = Cluster([f"n{i}" for i in range(4)], [8] * 4, [4] * 4, [0] * 4)
    jobs = _jobs(job_id=[1, 2], num_nodes=[1, 2], partition=[0, 0])
    from fastsched.model.constraints import Placement
    pl = Placement.topology(np.array([[0, 0, 1, 1]]), 2)
    run = run_nodes(c, jobs, "easy", placement=pl)
    assert list(run.alloc_nodes[run.alloc_offsets[1]:run.alloc_offsets[2]]) == [2, 3]
    result = simulate(c, jobs, "easy", placement=pl)
    assert result.summary["placement"]["mean_groups_spanned"] == pytest.approx(1.0)
    assert result.summary["placement"]["multi_node_single_group_share"] == 1.0


def test_switch_limit_waits_then_gives_up():
    # switch 0 = nodes 0,1; switch 1 = nodes 2,3. Jobs 1 and 2 hold nodes 0 and 2 until 100.
    # Job 3 (2 nodes, --switches=1) cannot start on nodes 1 and 3 (two switches): it waits
    # until 100, or with @30 until the first pass after its wait ran out (job 4's arrival, 40)
    from fastsched.model.constraints import Placement
    c = Cluster([f"n{i}" for i in range(4)], [8] * 4, [4] * 4, [0] * 4,
                partitions=[Partition("all", np.arange(4)), Partition("p0", np.array([0])),
                            Partition("p2", np.array([2]))])
    jobs = _jobs(job_id=[1, 2, 3, 4], num_nodes=[1, 1, 2, 1], time_limit=[100, 100, 10, 10],
                 runtime=[100, 100, 10, 10], submit_time=[0, 0, 1, 40], partition=[1, 2, 0, 1])
    levels = np.array([[0, 0, 1, 1]])
    for wait, expect, nodes in ((-1, 100, [0, 1]), (30, 40, [1, 3])):
        pl = Placement.topology(levels, 4, max_leaves=[0, 0, 1, 0], leaf_wait=wait)
        run = run_nodes(c, jobs, "easy", placement=pl)
        assert run.start[2] == expect
        assert list(run.alloc_nodes[run.alloc_offsets[2]:run.alloc_offsets[3]]) == nodes


def test_simulate_accepts_a_job_that_fits_only_its_second_partition():
    c = Cluster(["n0", "n1"], [8, 8], [4, 8], [0, 0],
                partitions=[Partition("a", np.array([0])), Partition("b", np.array([1]))])
    jobs = _jobs(job_id=[1], gpus_per_node=[8], partition=[0])
    result = simulate(c, jobs, "easy", partitions=PartitionChoices([0, 2], [0, 1]))
    assert list(result.jobs.partition) == ["b"] and result.schedule.start_time[0] == 0


# --------------------------------------------------------------------------- --exclusive=topo

@st.composite
def block_placements(draw, cluster, jobs):
    """Random base blocks (some nodes in none), maybe an aggregate level, --exclusive=topo
    on some jobs, some segments."""
    n = cluster.num_nodes
    leaf = draw(st.lists(st.integers(-1, 2), min_size=n, max_size=n))
    if max(leaf) < 0:
        leaf[0] = 0
    used = sorted({x for x in leaf if x >= 0})
    leaf = [used.index(x) if x >= 0 else -1 for x in leaf]
    levels = [leaf]
    if draw(st.booleans()):
        levels.append([x // 2 if x >= 0 else -1 for x in leaf])
    ids = [int(j) for j in jobs.job_id]
    unit = {j: (2 if draw(st.integers(0, 4)) == 0 and jobs.num_nodes[i] % 2 == 0 else 1)
            for i, j in enumerate(ids)}
    exclusive = {j: draw(st.booleans()) for j in ids}
    return dict(levels=levels, unit=unit, max_leaves={j: 0 for j in ids},
                leaf_wait={j: -1 for j in ids}, exclusive=exclusive, gpu_groups=[])


def _engine_placement(pl, ids):
    from fastsched.model.constraints import Placement
    return Placement(np.array(pl["levels"]), [pl["unit"][j] for j in ids],
                     [pl["max_leaves"][j] for j in ids], [pl["leaf_wait"][j] for j in ids],
                     pl["gpu_groups"], [pl["exclusive"][j] for j in ids])


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("easy", 2),
                                          ("conservative", 1)])
@SETTINGS
@given(data=st.data())
def test_exclusive_topo_matches_twin(data, policy, depth):
    cluster, available = data.draw(node_clusters())
    jobs = data.draw(node_workloads(cluster, available, max_jobs=10))
    pl = data.draw(block_placements(cluster, jobs))
    res = data.draw(st.sampled_from([1, 1, 4]))
    ids = [int(j) for j in jobs.job_id]
    engine_pl = _engine_placement(pl, ids)
    run = run_nodes(cluster, jobs, policy, depth, available, placement=engine_pl,
                    resolution=res)
    out, _ = naive_nodes.simulate(cluster, naive_nodes.jobs_from_table(jobs), policy, depth,
                                  available, placement=pl, resolution=res)
    for i, j in enumerate(ids):
        if j not in out:
            assert run.start[i] == -1, j
            continue
        s, e, nodes, gpus, p = out[j]
        assert (run.start[i], run.end[i], run.partition[i]) == (s, e, p), j
        assert list(run.alloc_nodes[run.alloc_offsets[i]:run.alloc_offsets[i + 1]]) == nodes, j
        masks = run.alloc_gpu_mask[run.alloc_offsets[i]:run.alloc_offsets[i + 1]]
        assert [int(m) for m in masks] == [sum(1 << k for k in gl) for gl in gpus], j
    sched = Schedule(job_id=jobs.job_id.copy(), start_time=run.start, end_time=run.end,
                     alloc_offsets=_sub_offsets(run),
                     alloc_nodes=_sub_alloc(run, run.start >= 0)[1])
    ran = jobs.take(np.arange(len(jobs)))
    ran.partition = np.where(run.partition >= 0, run.partition, jobs.partition).astype(np.int32)
    report = verify(cluster, ran, sched, placement=engine_pl)
    assert report.kinds() <= {"not_started"}, report   # some jobs may never get a block
    assert "exclusive_topo" in report.checks or not engine_pl.exclusive_topo.any()


def _block_cluster(n=8, gpus=4):
    return Cluster([f"n{i}" for i in range(n)], [8] * n, [gpus] * n, [0] * n)


def _excl(levels, flags):
    from fastsched.model.constraints import Placement
    return Placement.topology(np.array(levels), len(flags), exclusive_topo=flags)


def test_exclusive_job_keeps_a_small_job_off_its_block_until_it_ends():
    # blocks {0-3} {4-7}; job 1 (exclusive, 2 nodes) takes 0,1 and holds 2,3 as well;
    # job 3 (1 GPU) finds block 0 full and block 1 taken by job 2 until 50: it waits for
    # whichever frees first, job 1's block at 30 -- on node 0 (best fit, lowest index)
    jobs = _jobs(job_id=[1, 2, 3], num_nodes=[2, 4, 1], gpus_per_node=[4, 4, 1],
                 time_limit=[30, 50, 10], runtime=[30, 50, 10], submit_time=[0, 0, 1])
    pl = _excl([[0, 0, 0, 0, 1, 1, 1, 1]], [True, False, False])
    result = simulate(_block_cluster(), jobs, "easy", placement=pl)
    assert list(result.schedule.start_time) == [0, 0, 30]
    assert list(result.jobs.nodes) == ["n[0-1]", "n[4-7]", "n0"]
    result.verify().raise_if_failed()
    # without the flag job 3 runs at once on node 2
    plain = simulate(_block_cluster(), jobs, "easy", placement=_excl([[0] * 4 + [1] * 4],
                                                                     [False] * 3))
    assert list(plain.schedule.start_time) == [0, 0, 1] and plain.jobs.nodes[2] == "n2"


def test_exclusive_job_waits_for_an_idle_block_without_a_reservation():
    # one block of 4 nodes; job 1 (1 GPU) runs on node 0 until 50. Exclusive job 2 fits
    # now on nodes 1-3 but its block is busy: no start, no reservation, so job 3 (1 GPU,
    # limit 100) backfills at 2 and job 2 starts only when the block is idle, at 102
    jobs = _jobs(job_id=[1, 2, 3], num_nodes=[1, 2, 1], gpus_per_node=[1, 4, 1],
                 time_limit=[50, 10, 100], runtime=[50, 10, 100], submit_time=[0, 1, 2])
    pl = _excl([[0, 0, 0, 0]], [False, True, False])
    result = simulate(_block_cluster(4), jobs, "easy", placement=pl)
    assert list(result.schedule.start_time) == [0, 102, 2]
    result.verify().raise_if_failed()
    d = plan_nodes(_block_cluster(4), RunningJobs.empty(), jobs.take(np.array([0, 1])), 0,
                   "conservative", placement=pl.take(np.array([0, 1])), full=True)
    assert list(d.outcome) == [0, 2]        # START, BLOCKED (-2: neither start nor plan)


def test_exclusive_job_that_does_not_fit_now_is_reserved_by_the_plain_rule():
    # blocks {0,1} {2,3}; job 1 holds every node until 100; exclusive job 2 (2 nodes) is
    # reserved at 100 (plain rule) and then starts there on one idle block
    jobs = _jobs(job_id=[1, 2], num_nodes=[4, 2], gpus_per_node=[4, 4],
                 time_limit=[100, 10], runtime=[100, 10], submit_time=[0, 1])
    pl = _excl([[0, 0, 1, 1]], [False, True])
    running = RunningJobs.from_arrays(job_id=[1], planned_end=[100], node_offsets=[0, 4],
                                      nodes=[0, 1, 2, 3], gpus=4, cpus=1, mem=0)
    d = plan_nodes(_block_cluster(4), running, jobs.take(np.array([1])), 1, "easy",
                   placement=pl.take(np.array([1])), full=True)
    assert list(d.outcome) == [1] and list(d.planned_start) == [100]
    result = simulate(_block_cluster(4), jobs, "easy", placement=pl)
    assert list(result.schedule.start_time) == [0, 100]
    assert result.jobs.nodes[1] == "n[0-1]"


def test_plan_nodes_sees_the_blocks_running_exclusive_jobs_hold():
    # job 1 (exclusive) runs on nodes 0,1 of block {0-3} until 40: a 1-GPU job is planned
    # at 40, not started on node 2; without the running flag it starts now
    c = _block_cluster(4)
    pending = _jobs(job_id=[2], gpus_per_node=[1])
    pl = _excl([[0, 0, 0, 0]], [False])

    def running(flag):
        return RunningJobs.from_arrays(job_id=[1], planned_end=[40], node_offsets=[0, 2],
                                       nodes=[0, 1], gpus=4, cpus=1, mem=0,
                                       exclusive_topo=[flag])
    d = plan_nodes(c, running(True), pending, 0, "easy", placement=pl, full=True)
    assert list(d.outcome) == [1] and list(d.planned_start) == [40]
    d = plan_nodes(c, running(False), pending, 0, "easy", placement=pl, full=True)
    assert list(d.outcome) == [0] and list(d.nodes) == [2]
    busy = RunningJobs.from_arrays(job_id=[1, 3], planned_end=[40, 40], node_offsets=[0, 2, 3],
                                   nodes=[0, 1, 3], gpus=1, cpus=1, mem=0,
                                   exclusive_topo=[True, False])
    with pytest.raises(InputError, match="exclusive=topo"):
        plan_nodes(c, busy, pending, 0, "easy", placement=pl)


@SETTINGS
@given(data=st.data())
def test_state_at_and_plan_nodes_agree_with_the_simulator(data):
    # at every instant where the simulator started jobs (one pass there), a plan_nodes
    # pass on its state at that instant starts the same jobs on the same nodes
    cluster, available = data.draw(node_clusters())
    jobs = data.draw(node_workloads(cluster, available, max_jobs=8))
    pl = data.draw(block_placements(cluster, jobs))
    ids = [int(j) for j in jobs.job_id]
    engine_pl = _engine_placement(pl, ids)
    result = simulate(cluster, jobs, "easy", placement=engine_pl)     # every node up
    assert result.verify().kinds() <= {"not_started"}     # a segment may never fit
    s, e = result.schedule.start_time, result.schedule.end_time
    for t in np.unique(s[s >= 0]):
        if ((s == t) & (e == t)).any():
            continue            # a zero-length job: several passes at t, not one
        running, _ = result.state_at(int(t))
        rows = np.flatnonzero((jobs.submit_time <= t) & ((s >= t) | (s < 0)))
        d = plan_nodes(cluster, running, jobs.take(rows), int(t), "easy",
                       placement=engine_pl.take(rows))
        got = {int(j): list(d.nodes_of(i)) for i, j in enumerate(d.job_id) if d.outcome[i] == 0}
        want = {ids[i]: list(result.schedule.nodes_of(i)) for i in np.flatnonzero(s == t)}
        assert got == want, t


def test_verify_catches_a_job_on_an_exclusive_block():
    jobs = _jobs(job_id=[1, 2, 3], num_nodes=[2, 1, 1], gpus_per_node=[1, 1, 0],
                 cpus_per_node=[1, 1, 0])
    pl = _excl([[0, 0, 0, 0]], [True, False, False])
    sched = Schedule(job_id=jobs.job_id.copy(), start_time=np.array([0, 5, 0]),
                     end_time=np.array([10, 15, 10]), alloc_offsets=np.array([0, 2, 3, 4]),
                     alloc_nodes=np.array([0, 1, 3, 2]))
    report = verify(_block_cluster(4), jobs, sched, placement=pl)
    assert report.kinds() == {"exclusive_topo"}
    assert "job 1 (--exclusive=topo, 0-10) shares leaf group 0 with job 2" in \
        report.violations[0].message
    later = Schedule(job_id=jobs.job_id.copy(), start_time=np.array([0, 10, 0]),
                     end_time=np.array([10, 20, 10]), alloc_offsets=np.array([0, 2, 3, 4]),
                     alloc_nodes=np.array([0, 1, 3, 2]))
    assert verify(_block_cluster(4), jobs, later, placement=pl).ok   # job 3 uses nothing
    assert not verify(_block_cluster(4), jobs, later,
                      placement=_excl([[0, 0, 0, 0]], [True, False, True])).ok
