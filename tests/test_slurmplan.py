"""The Slurm planning model: Slurm's own plans on recorded states, and its slow twin.

tests/data/slurm-states holds seven moments of a real Slurm 22.05.8 cluster (32 to 256
nodes x 8 GPUs, 500 to 10,000 pending jobs) with ``squeue --start``'s plan of every
pending job (README there): ``reservations="slurm"`` must give every job Slurm's
planned start and node set.
"""
from __future__ import annotations

import gzip

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fastsched
import naive_slurm
from slurm_states import NAMES, files, load
from fastsched import InputError, UnsupportedError, plan_state
from fastsched.cli import main
from fastsched.engine.slurmplan import plan_cycle
from fastsched.io.planstate import gpus_per_node, read_plan_state, read_planned
from fastsched.tools.compareplan import compare_plans

def _state(name):
    """(cluster, state, cycle time, Slurm's plan) of a recorded state."""
    return load(name)[:4]


@pytest.mark.parametrize("name", NAMES)
def test_plans_what_slurm_planned(name, tmp_path):
    cluster, state, now, planned = _state(name)
    got = plan_state(cluster, state, now)
    out = tmp_path / "planned.csv"
    from fastsched.io.planstate import nodelists, write_planned
    write_planned(out, got.job_id, got.start, nodelists(cluster, got.node_offsets, got.nodes),
                  got.reasons())
    result = compare_plans(read_planned(out), read_planned(planned))
    assert result.jobs == len(state.pend_id)
    assert (result.exact, result.same_nodes) == (result.jobs, result.jobs), \
        result.format()
    # jobs that Slurm started in this very cycle (running, start >= now) start now again
    late = state.started_by(now)
    assert got.started.sum() == late.sum()


def test_a_snapshot_after_the_cycle_replays_the_jobs_it_started():
    cluster, state, now, _ = _state("n256-p1000")
    got = plan_state(cluster, state, now)
    started = set(got.job_id[got.started].tolist())
    assert started == set(state.run_id[state.started_by(now)].tolist()) == {55, 56, 57, 68}
    # job 54 was planned before they started: it ends up behind a job ending at :40
    assert got.start[list(got.job_id).index(54)] == 1796233940


# --- the fast path against its slow twin on random states -------------------------

@st.composite
def _states(draw):
    n = draw(st.integers(1, 70))
    gpus = draw(st.lists(st.integers(1, 8), min_size=n, max_size=n))
    cores = draw(st.lists(st.integers(1, 4), min_size=n, max_size=n))
    weight = draw(st.lists(st.integers(1, 2), min_size=n, max_size=n))
    now = draw(st.integers(0, 10_000))
    free_g, free_c = list(gpus), list(cores)
    running = []
    for _ in range(draw(st.integers(0, 25))):
        k = draw(st.integers(1, 3))
        g = draw(st.integers(0, 4))
        fits = [i for i in range(n) if free_g[i] >= g and free_c[i] >= 1]
        if len(fits) < k:
            continue
        nodes = sorted(draw(st.lists(st.sampled_from(fits), min_size=k, max_size=k,
                                     unique=True)))
        for i in nodes:
            free_g[i] -= g
            free_c[i] -= 1
        end = now + draw(st.integers(1, 20_000))
        running.append(naive_slurm.Running(end, nodes, g))
    parts = [frozenset(i for i in range(n) if draw(st.booleans())) for _ in range(2)]
    queue = [naive_slurm.Pending(j, draw(st.integers(1, 4)), draw(st.integers(0, 8)),
                                 draw(st.integers(1, 30_000)),
                                 partition=parts[draw(st.integers(0, 1))],
                                 user=draw(st.integers(0, 3)))
             for j in range(draw(st.integers(1, 40)))]
    cluster = naive_slurm.Cluster(gpus, cores, weight)
    up = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    resolution = draw(st.sampled_from([1, 30, 60, 300]))
    window = draw(st.sampled_from([3600, 86400, 7 * 86400]))
    return cluster, running, queue, now, (parts, up), resolution, window


def _fast(cluster, running, queue, now, part, resolution, window, depth=None,
          caps=(0, 0, 0)):
    """The kernel on a twin's inputs; ``part``: (the two partitions, nodes up)."""
    parts, up = part
    n = len(cluster.gpus)
    masks = np.array([[p is None or i in p for i in range(n)] for p in parts], bool)
    ptr = np.cumsum([0] + [len(r.nodes) for r in running])
    run = ([r.end for r in running], ptr, [i for r in running for i in r.nodes],
           [r.gpus for r in running for _ in r.nodes],
           [r.cores for r in running for _ in r.nodes])
    q = ([j.nodes for j in queue], [j.gpus for j in queue], [j.cores for j in queue],
         [j.limit for j in queue], [parts.index(j.partition) for j in queue])
    start, started, optr, onodes = plan_cycle(cluster.gpus, cluster.cores, cluster.weight,
                                              masks, run, q, now, resolution=resolution,
                                              window=window, max_job_test=depth,
                                              available=np.array(up, bool), caps=caps,
                                              users=[j.user or 0 for j in queue])
    return [(None if start[i] < 0 else int(start[i]), onodes[optr[i]:optr[i + 1]].tolist(),
             bool(started[i])) for i in range(len(queue))]


@settings(max_examples=63, deadline=None)
@given(_states(), st.one_of(st.none(), st.integers(1, 40)),
       st.tuples(*[st.sampled_from([0, 0, 1, 3]) for _ in range(3)]))
def test_fast_path_gives_the_twins_decisions(case, depth, caps):
    cluster, running, queue, now, part, resolution, window = case
    available = [i for i, u in enumerate(part[1]) if u]
    want = naive_slurm.plan(cluster, running, queue, now, resolution=resolution,
                            window=window, max_job_test=depth, available=available,
                            caps=caps)
    got = _fast(cluster, running, queue, now, part, resolution, window, depth, caps)
    assert got == [(p.start, p.nodes, p.started) for p in want]


def test_will_run_groups_running_jobs_by_end_time():
    """One 8-GPU node; jobs end at 100, 125 and 200 (within the 30 s window's doubling):
    a job needing the GPUs of the first two starts at the second's end, 125, not 100."""
    cluster = naive_slurm.Cluster([8], [8])
    running = [naive_slurm.Running(100, [0], 2), naive_slurm.Running(125, [0], 2),
               naive_slurm.Running(200, [0], 4)]
    queue = [naive_slurm.Pending(1, 1, 4, 60)]
    (plan,) = naive_slurm.plan(cluster, running, queue, 0, resolution=1)
    assert plan.start == 125
    assert _fast(cluster, running, queue, 0, ([None], [True]), 1, 86400)[0][0] == 125


def test_future_jobs_hold_whole_nodes():
    """A 1-GPU job planned on a node holds it whole from its start: a later 1-GPU job
    that would fit beside it goes to another node or later."""
    cluster = naive_slurm.Cluster([8], [8])
    running = [naive_slurm.Running(1000, [0], 8)]
    queue = [naive_slurm.Pending(1, 1, 1, 600), naive_slurm.Pending(2, 1, 1, 600)]
    plans = _fast(cluster, running, queue, 0, ([None], [True]), 60, 86400)
    assert [p[0] for p in plans] == [1000, 1560]     # second after the first's slot


# --- inputs ------------------------------------------------------------------------

def test_gres_spellings():
    assert [gpus_per_node(t) for t in ("gres:gpu:8", "gres/gpu:a100:2", "gpu:4", "",
                                       "gres:gpu")] == [8, 2, 4, 0, 1]


@pytest.mark.parametrize("row, field", [
    ("1,2,2:00:00,gres:gpu:8,x", None),
    ("1,x,2:00:00,gres:gpu:8", "nodes"),
    ("1,2,soon,gres:gpu:8", "time_limit"),
    ("1,2,UNLIMITED,gres:gpu:8", "time_limit"),
    ("1,2,1:00,gres:gpu:a100:x", "tres_per_node"),
])
def test_bad_pending_rows_name_file_line_and_field(tmp_path, row, field):
    cluster, *_ = _state("n64-p1000")
    running = tmp_path / "running.csv"
    running.write_text("job_id,start,end,nodes,nodelist,tres_per_node\n")
    pending = tmp_path / "pending.csv"
    pending.write_text("job_id,nodes,time_limit,tres_per_node\n" + row + "\n")
    if field is None:
        assert len(read_plan_state(running, pending, cluster).pend_id) == 1
        return
    with pytest.raises(InputError) as e:
        read_plan_state(running, pending, cluster)
    assert (e.value.file, e.value.line, e.value.field) == (str(pending), 2, field)


def test_bad_running_nodelist_is_named(tmp_path):
    cluster, *_ = _state("n64-p1000")
    running = tmp_path / "running.csv"
    running.write_text("job_id,start,end,nodes,nodelist,tres_per_node\n"
                       "1,0,10,2,n[0064-0065],gres:gpu:8\n")
    pending = tmp_path / "pending.csv"
    pending.write_text("job_id,nodes,time_limit,tres_per_node\n")
    with pytest.raises(InputError, match="n0065") as e:
        read_plan_state(running, pending, cluster)
    assert (e.value.line, e.value.field) == (2, "nodelist")


def test_a_job_in_several_partitions_is_refused():
    cluster, state, now, _ = _state("n64-p1000")
    state.pend_partition = ["gpu,other"] + [""] * (len(state.pend_id) - 1)
    with pytest.raises(UnsupportedError, match="several partitions"):
        plan_state(cluster, state, now)
    state.pend_partition = ["other"] + [""] * (len(state.pend_id) - 1)
    with pytest.raises(InputError, match="'other' is not in the cluster"):
        plan_state(cluster, state, now)


# --- command line --------------------------------------------------------------------

def test_plan_and_compare_from_the_command_line(tmp_path, capsys):
    state = tmp_path / "state"
    assert main(["generate", "slurm-state", "-o", str(state)]) == 0
    out = tmp_path / "planned.csv"
    assert main(["plan", "--cluster", str(state / "slurm.conf"), "--running",
                 str(state / "running.csv"), "--pending", str(state / "squeue_start.csv"),
                 "--now", "2026-12-02T16:56:11", "-o", str(out)]) == 0
    assert "planned 311 of 986 jobs" in capsys.readouterr().out
    assert main(["compare-plan", str(out), str(state / "squeue_start.csv")]) == 0
    text = capsys.readouterr().out
    assert "exact start           986 (100.0%)" in text
    assert "same node set         986 (100.0%)" in text


def test_compare_names_the_likely_rule():
    result = compare_plans({1: (130, "n1"), 2: (None, "")}, {1: (100, "n2"), 2: (60, "n1")})
    assert (result.jobs, result.exact, result.within_60s, result.same_nodes) == (2, 0, 1, 0)
    assert "bf_window" in result.diverging[1][5]
    assert "cascade" in result.diverging[0][5]


def _squeue_json(newer=False):
    """The state as ``squeue --json`` writes it (22.05; ``newer``: 23.02+ style)."""
    import csv
    wrap = (lambda v: {"set": True, "infinite": False, "number": v}) if newer else \
        (lambda v: v)
    jobs = []
    _, running, planned, _ = files("n64-p1000")
    with open(running) as f:
        for r in csv.DictReader(f):
            jobs.append({"job_id": int(r["job_id"]), "job_state": ["RUNNING"] if newer
                         else "RUNNING", "nodes": r["nodelist"],
                         "node_count": wrap(int(r["nodes"])),
                         "start_time": wrap(int(r["start"])), "end_time": wrap(int(r["end"])),
                         "tres_per_node": r["tres_per_node"].replace("gres:", "gres/")})
    from fastsched.io.times import parse_time
    with gzip.open(planned, "rt") as f:
        for r in csv.DictReader(f):
            jobs.append({"job_id": int(r["job_id"]), "job_state": "PENDING",
                         "node_count": wrap(int(r["nodes"])), "partition": "gpu",
                         "priority": wrap(4294901760 - int(r["job_id"])),
                         "time_limit": wrap(parse_time(r["time_limit"]) // 60),
                         "tres_per_node": r["tres_per_node"], "start_time": wrap(0)})
    jobs.append({"job_id": 99999, "job_state": "COMPLETED"})
    import json
    return json.dumps({"jobs": jobs})


@pytest.mark.parametrize("newer", [False, True])
def test_plan_from_squeue_json(tmp_path, capsys, newer):
    conf, _, planned, _ = files("n64-p1000")
    dump = tmp_path / "squeue.json"
    dump.write_text(_squeue_json(newer))
    out = tmp_path / "planned.csv"
    assert main(["plan", "--cluster", str(conf), "--squeue-json", str(dump), "--now",
                 "1796230571", "-o", str(out)]) == 0
    result = compare_plans(read_planned(out), read_planned(planned))
    assert (result.jobs, result.exact, result.same_nodes) == (986, 986, 986)


def test_bad_squeue_json_is_named(tmp_path):
    from fastsched.io.squeuejson import read_squeue_json
    cluster, *_ = _state("n64-p1000")
    dump = tmp_path / "squeue.json"
    dump.write_text('{"jobs": [{"job_id": 1, "job_state": "PENDING", "time_limit": null}]}')
    with pytest.raises(InputError, match="finite time limit") as e:
        read_squeue_json(dump, cluster)
    assert (e.value.file, e.value.field) == (str(dump), "jobs[0].time_limit")
    dump.write_text('{"jobs": [')
    with pytest.raises(InputError, match="not JSON"):
        read_squeue_json(dump, cluster)


def test_plan_needs_its_inputs(capsys):
    assert main(["plan", "--cluster", str(files("n64-p1000")[0]), "--running",
                 "x.csv", "--now", "1"]) == 2
    assert "give --running and --pending, or --squeue-json" in capsys.readouterr().err


@pytest.mark.parametrize("model", ["nodes", "counts"])
def test_the_other_models_plan_the_same_state(model):
    cluster, state, now, _ = _state("n64-p1000")
    cons = plan_state(cluster, state, now, reservations=model)
    easy = plan_state(cluster, state, now, reservations=model, policy="easy")
    assert ((easy.start >= 0) & ~easy.started).sum() == 1     # only the head is reserved
    assert ((cons.start >= 0) & ~cons.started).sum() > 300
    assert (cons.start <= now + 7 * 86400).all()               # bf_window from slurm.conf
    assert (len(cons.nodes) == 0) == (model == "counts")
    with pytest.raises(UnsupportedError, match="conservative"):
        plan_state(cluster, state, now, policy="easy")


def test_slurm_settings_the_model_does_not_take_are_said():
    cluster, state, now, _ = _state("n64-p1000")
    cluster.settings.select_type = "select/linear"
    with pytest.raises(UnsupportedError, match="SelectType=select/linear"):
        plan_state(cluster, state, now)
    cluster.settings.select_type = "select/cons_tres"
    cluster.settings.priority_type = "priority/multifactor"
    with pytest.warns(fastsched.ConfigWarning, match="job-id order"):
        plan_state(cluster, state, now)


def _scheduler(name):
    """A Scheduler holding a recorded state, planning with reservations="slurm"."""
    from fastsched import JobTable, RunningJobs, Scheduler
    cluster, state, now, planned = _state(name)
    per = np.diff(state.run_offsets)
    running = RunningJobs.from_arrays(
        job_id=state.run_id, planned_end=state.run_end, node_offsets=state.run_offsets,
        nodes=state.run_nodes, gpus=np.repeat(state.run_gpus, per),
        cpus=np.repeat(state.run_cores, per), mem=np.zeros(len(state.run_nodes), np.int64))
    order = np.argsort(state.pend_id)
    pending = JobTable.from_arrays(
        job_id=state.pend_id[order], submit_time=np.full(len(order), now - 60),
        time_limit=state.pend_limit[order], runtime=state.pend_limit[order],
        num_nodes=state.pend_nodes[order], gpus_per_node=state.pend_gpus[order])
    s = Scheduler.from_state(cluster, running, pending, "conservative", reservations="slurm")
    return s, cluster, now, planned


def test_the_scheduler_plans_with_slurms_backfill():
    s, cluster, now, planned = _scheduler("n64-p1000")
    d = s.schedule(now)
    want = read_planned(planned)
    hosts = d.to_pandas().set_index("job_id")
    got = {int(j): (None if t < 0 else int(t), n) for j, t, n in
           zip(hosts.index, hosts["start_time"], hosts["nodes"])}
    result = compare_plans(got, want)
    assert (result.jobs, result.exact, result.same_nodes) == (986, 986, 986), result.format()
    table = s.expected_start_times(now)
    assert (table["expected_start"].to_numpy() == d.start_time).all()


def test_the_scheduler_starts_what_slurm_starts():
    """After the 16 running jobs ending first complete, a cycle starts jobs on their GPUs
    (lowest free GPU indices), and applying it changes the next cycle's plan."""
    s, cluster, now, _ = _scheduler("n64-p1000")
    r = s.running_jobs
    first = np.sort(r.planned_end)[15]
    done = r.job_id[r.planned_end <= first]
    s.complete(done, int(first))
    d = s.schedule(int(first))
    assert len(d.starts) > 0
    s.apply(d)
    assert set(d.starts.tolist()) <= set(s.running)
    again = s.schedule(int(first))
    assert len(again.starts) == 0


def test_the_scheduler_refuses_what_the_slurm_model_does_not_take():
    from fastsched import Scheduler
    cluster, *_ = _state("n64-p1000")
    with pytest.raises(UnsupportedError, match="conservative"):
        Scheduler(cluster, "easy", reservations="slurm")
    with pytest.raises(UnsupportedError, match="policy 'conservative'"):
        fastsched.simulate(cluster, fastsched.JobTable.from_requests([]), "easy",
                           reservations="slurm")


def test_per_user_and_partition_caps_from_slurm_conf():
    """bf_max_job_user=2: a user's third and later jobs get no plan in the cycle."""
    cluster, state, now, _ = _state("n64-p1000")
    state.pend_user = ["alice" if i % 2 else "bob" for i in range(len(state.pend_id))]
    cluster.settings.scheduler_parameters["bf_max_job_user"] = 2
    got = plan_state(cluster, state, now)
    assert ((got.start >= 0).sum()) == 4
    cluster.settings.scheduler_parameters.update(bf_max_job_user=0, bf_max_job_part=3)
    assert ((plan_state(cluster, state, now).start >= 0).sum()) == 3
    cluster.settings.scheduler_parameters.update(bf_max_job_part=0, bf_max_job_test=5)
    assert ((plan_state(cluster, state, now).start >= 0).sum()) <= 5


# --- replays under Slurm's backfill ----------------------------------------------------

@st.composite
def _workloads(draw):
    n_nodes = draw(st.integers(1, 12))
    gpus = draw(st.lists(st.integers(1, 8), min_size=n_nodes, max_size=n_nodes))
    cluster = naive_slurm.Cluster(gpus, [4] * n_nodes)
    jobs = []
    for j in range(draw(st.integers(1, 30))):
        limit = draw(st.integers(1, 20)) * 300
        job = naive_slurm.Pending(j, draw(st.integers(1, min(3, n_nodes))),
                                  draw(st.integers(0, min(gpus))), limit)
        jobs.append(naive_slurm.Submitted(draw(st.integers(0, 5000)), job,
                                          draw(st.integers(0, limit + 600))))
    return cluster, jobs


def _replay(cluster, workload, **kw):
    from fastsched import Cluster, JobTable
    from fastsched.sim.slurmsim import run_slurm
    n = len(cluster.gpus)
    fs_cluster = Cluster(node_names=[f"n{i}" for i in range(n)],
                         cpus=np.array(cluster.cores), gpus=np.array(cluster.gpus),
                         mem_mb=np.zeros(n, np.int64))
    jobs = JobTable.from_arrays(
        job_id=[w.job.job_id for w in workload], submit_time=[w.submit for w in workload],
        time_limit=[w.job.limit for w in workload], runtime=[w.runtime for w in workload],
        num_nodes=[w.job.nodes for w in workload],
        gpus_per_node=[w.job.gpus for w in workload])
    return run_slurm(fs_cluster, jobs, **kw)


@settings(max_examples=42, deadline=None)
@given(_workloads(), st.sampled_from([1, 60]))
def test_replay_gives_the_twins_starts(case, resolution):
    cluster, workload = case
    want = naive_slurm.simulate(cluster, workload, resolution=resolution, window=86400)
    run = _replay(cluster, workload, resolution=resolution, window=86400, max_job_test=500)
    got = [(None if run.start[j] < 0 else int(run.start[j]),
            run.alloc_nodes[run.alloc_offsets[j]:run.alloc_offsets[j + 1]].tolist())
           for j in range(len(workload))]
    assert got == want
    for j in range(len(workload)):          # GPU bits: as many as asked, on every node
        masks = run.alloc_gpu_mask[run.alloc_offsets[j]:run.alloc_offsets[j + 1]]
        assert all(bin(int(m)).count("1") == workload[j].job.gpus for m in masks)


def test_simulate_replays_a_workload_under_slurms_backfill(tmp_path, capsys):
    """A generated ai-mix workload replayed with reservations="slurm" from the API and the
    command line: every job runs, no resource is overcommitted, and the summary says which
    model ran."""
    conf = tmp_path / "slurm.conf"
    assert main(["generate", "cluster", "ai-8k", "-o", str(conf)]) == 0
    work = tmp_path / "jobs.csv"
    assert main(["generate", "workload", "ai-mix", "--cluster", str(conf), "--jobs", "300",
                 "--seed", "3", "-o", str(work)]) == 0
    cluster = fastsched.read_cluster(conf)
    workload = fastsched.read_workload(work, cluster)
    result = fastsched.simulate(cluster, workload.jobs, "conservative", reservations="slurm")
    assert result.summary["reservations"] == result.summary["engine"] == "slurm"
    assert (result.schedule.start_time >= 0).all()
    assert result.verify().ok
    with pytest.raises(UnsupportedError, match="no policy check"):
        result.verify("conservative")
    out = tmp_path / "out.csv"
    assert main(["simulate", str(work), "--cluster", str(conf), "--policy", "conservative",
                 "--reservations", "slurm", "--jobs-out", str(out)]) == 0
    assert "slurm" in capsys.readouterr().out
    assert main(["check", str(out), "--cluster", str(conf), "--trace", str(work)]) == 0
