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
                                 partition=parts[draw(st.integers(0, 1))])
             for j in range(draw(st.integers(1, 40)))]
    cluster = naive_slurm.Cluster(gpus, cores, weight)
    up = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    resolution = draw(st.sampled_from([1, 30, 60, 300]))
    window = draw(st.sampled_from([3600, 86400, 7 * 86400]))
    return cluster, running, queue, now, (parts, up), resolution, window


def _fast(cluster, running, queue, now, part, resolution, window, depth=None):
    """The kernel on a twin's inputs; ``part``: (the two partitions, nodes up)."""
    parts, up = part
    n = len(cluster.gpus)
    masks = np.array([[p is None or i in p for i in range(n)] for p in parts], bool)
    ptr = np.cumsum([0] + [len(r.nodes) for r in running])
    run = ([r.end for r in running], ptr, [i for r in running for i in r.nodes],
           [r.gpus for r in running], [r.cores for r in running])
    q = ([j.nodes for j in queue], [j.gpus for j in queue], [j.cores for j in queue],
         [j.limit for j in queue], [parts.index(j.partition) for j in queue])
    start, started, optr, onodes = plan_cycle(cluster.gpus, cluster.cores, cluster.weight,
                                              masks, run, q, now, resolution=resolution,
                                              window=window, max_job_test=depth,
                                              available=np.array(up, bool))
    return [(None if start[i] < 0 else int(start[i]), onodes[optr[i]:optr[i + 1]].tolist(),
             bool(started[i])) for i in range(len(queue))]


@settings(max_examples=150, deadline=None)
@given(_states(), st.one_of(st.none(), st.integers(1, 40)))
def test_fast_path_gives_the_twins_decisions(case, depth):
    cluster, running, queue, now, part, resolution, window = case
    available = [i for i, u in enumerate(part[1]) if u]
    want = naive_slurm.plan(cluster, running, queue, now, resolution=resolution,
                            window=window, max_job_test=depth, available=available)
    got = _fast(cluster, running, queue, now, part, resolution, window, depth)
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
