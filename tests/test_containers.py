"""Container images (pyxis --container-image): the engine's per-node image caches and
pulls against the twin (tests/naive_nodes.py), with and without node failures; the
records, summary and checks of a run; the pull model, the workload column, the
#SBATCH option and the CLI."""
import json

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from fastsched import Cluster, Containers, ImagePull, JobTable, NodeEvents, simulate
from fastsched.cli import main
from fastsched.engine import run_nodes
from fastsched.io.workload import read_workload, write_workload
from fastsched.model.errors import InputError, UnsupportedError
from fastsched.model.lifecycle import Lifecycle
from fastsched.sim.images import engine_images
from fastsched.tools.testing import containers, lifecycles, node_event_rows
from constrained_twin import attempt_rows, run_both
from test_constraints import SETTINGS, constrained_cases, engine_inputs


def _images(data, n):
    """(engine images, twin images) of a drawn :func:`fastsched.tools.testing.containers`."""
    c = data.draw(containers(n))
    ids, seconds, capacity = engine_images(c)
    return (ids, seconds, capacity), c


def _twin_images(ids, c):
    return ({j: c.image[i] for i, j in enumerate(ids) if c.image[i]},
            {name: c.pull.seconds.get(name, c.pull.default) for name in set(c.image.tolist())},
            c.pull.capacity, {})


@pytest.mark.parametrize("policy,depth", [("fcfs", 1), ("easy", 1), ("easy", 2),
                                          ("conservative", 1)])
@SETTINGS
@given(data=st.data())
def test_image_pulls_match_twin(data, policy, depth):
    case = data.draw(constrained_cases())
    images, c = _images(data, len(case[2]))
    twin = _twin_images([int(j) for j in case[2].job_id], c)
    run, ids, _ = run_both(case, policy, depth, engine={"images": images},
                           twin={"images": twin})
    for i, j in enumerate(ids):
        assert run.pull[i] == twin[3].get(j, 0), j
    event(f"pulls: {min(int((run.pull > 0).sum()), 3)}")


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@SETTINGS
@given(data=st.data())
def test_image_pulls_with_failures_and_requeues_match_twin(data, policy):
    """A requeued attempt pulls again only where its new nodes lack the image, and its
    checkpoints count from its pull's end."""
    case = data.draw(constrained_cases())
    case = case[:-1] + (None,)
    rows = data.draw(node_event_rows(case[0].num_nodes, max_events=8, max_time=60,
                                     kinds=("down", "down", "down", "up", "drain", "resume")))
    lc = data.draw(lifecycles(len(case[2])))
    images, c = _images(data, len(case[2]))
    run, ids, killed = run_both(case, policy, 1, rows=rows, lifecycle=lc,
                                engine={"images": images},
                                twin={"images": _twin_images([int(j) for j in case[2].job_id], c)})
    assert attempt_rows(run, ids, "pull") == sorted(killed)
    event(f"killed attempts that pulled: {min(sum(1 for k in killed if k[5] > 0), 2)}")


@SETTINGS
@given(data=st.data())
def test_without_images_the_run_is_unchanged(data):
    """A pull model whose jobs have no image, or no pull model: the same run, byte for
    byte, as before images existed."""
    cluster, available, jobs, parts, deps, groups, caps, _ = data.draw(constrained_cases())
    pc, dp, lg = engine_inputs(jobs, parts, deps, groups, caps)
    plain = run_nodes(cluster, jobs, "easy", 1, available, partitions=pc, dependencies=dp,
                      limits=lg)
    none = (np.full(len(jobs), -1, dtype=np.int64), np.zeros(0, dtype=np.int64), 4)
    with_model = run_nodes(cluster, jobs, "easy", 1, available, partitions=pc,
                           dependencies=dp, limits=lg, images=none)
    for name in ("start", "end", "alloc_offsets", "partition", "reason", "eligible"):
        assert np.array_equal(getattr(plain, name), getattr(with_model, name)), name
    held = np.repeat(plain.start >= 0, np.diff(plain.alloc_offsets))   # the rest: unset
    for name in ("alloc_nodes", "alloc_gpu_mask"):
        assert np.array_equal(getattr(plain, name)[held], getattr(with_model, name)[held])
    assert plain.pull is None and not with_model.pull.any()


def _jobs(runtime, nodes, limit=1000, submit=0):
    n = len(runtime)
    return JobTable.from_arrays(job_id=np.arange(1, n + 1), submit_time=submit,
                                time_limit=limit, runtime=runtime, num_nodes=nodes,
                                gpus_per_node=8, cpus_per_node=8, user=0)


def _cluster(n=4):
    return Cluster.homogeneous(n, gpus=8, cpus=8, prefix="gpu")


def test_pulls_follow_the_cache_and_count_against_the_limit():
    # one after another on the same 2 nodes (fcfs, whole nodes)
    jobs = _jobs([100, 100, 100, 100, 950], [2, 2, 2, 2, 2])
    images = ["a", "a", "b", "a", "c"]
    c = Containers.of(images, ImagePull(default=60, capacity=1, seconds={"b": 30}))
    r = simulate(_cluster(2), jobs, "fcfs", containers=c)
    f = r.jobs
    # a pulls (60), a cached (0), b evicts a (30), a again (60), c's pull + 950 > 1000
    assert f.pull_time.tolist() == [60, 0, 30, 60, 60]
    assert f.start_time.tolist() == [0, 160, 260, 390, 550]
    assert f.end_time.tolist() == [160, 260, 390, 550, 1550]
    assert f.state.tolist() == ["COMPLETED"] * 4 + ["TIMEOUT"]
    im = r.summary["images"]
    assert (im["pulls"], im["images_pulled"], im["pull_seconds"]) == (4, 8, 210)
    assert im["pull_gpu_hours"] == pytest.approx(16 * 210 / 3600)
    assert r.summary["timeouts"] == 1
    assert r.verify().ok


def test_a_job_pulls_when_any_of_its_nodes_lacks_the_image():
    jobs = _jobs([100, 100, 100], [1, 1, 2], submit=[0, 0, 200])
    c = Containers.of(["x", "", "x"], ImagePull(default=50, capacity=2))
    r = simulate(_cluster(2), jobs, "fcfs", containers=c)
    f = r.jobs
    # job 1 pulled x on gpu001 only; job 3 (both nodes) still pulls: gpu002 lacks it
    assert f.pull_time.tolist() == [50, 0, 50]
    assert f.end_time.tolist() == [150, 100, 350]
    assert r.summary["images"]["images_pulled"] == 2    # gpu001 once, gpu002 once


@pytest.mark.parametrize("up,nodes,pull", [(1000, "gpu002", 40), (400, "gpu001", 0)])
def test_a_requeued_attempt_pulls_only_where_the_image_is_missing(up, nodes, pull):
    jobs = _jobs([500], [1])
    lc = Lifecycle.of(1, checkpoint_interval=100, checkpoint_cost=0)
    c = Containers.of(["img"], ImagePull(default=40, capacity=1))
    events = NodeEvents.from_rows([(300, "down", [0]), (up, "up", [0])], 2)
    r = simulate(_cluster(2), jobs, "easy", events=events, lifecycle=lc, containers=c)
    f = r.jobs
    # attempt 0 pulled 40 s, ran 260 s: 200 s checkpointed; attempt 1 (at 300 + 121) on
    # gpu002 pulls again, on gpu001 (up again) finds the image there
    assert f.pull_time.tolist() == [40, pull] and f.nodes.tolist() == ["gpu001", nodes]
    assert f.start_time.tolist() == [0, 421] and f.end_time.tolist() == [300, 421 + pull + 300]
    lc_sum = r.summary["lifecycle"]
    assert lc_sum["pull_gpu_hours"] == pytest.approx(8 * (40 + pull) / 3600)
    assert lc_sum["lost_gpu_hours"] == pytest.approx(8 * 60 / 3600)
    assert r.verify().ok


def test_runs_without_a_pull_model_are_identical(tmp_path):
    jobs = _jobs([100, 300, 50], [1, 2, 1])
    a = simulate(_cluster(), jobs, "easy", reservations="nodes")
    b = simulate(_cluster(), jobs, "easy", reservations="nodes",
                 containers=Containers.of(["", "", ""]))
    assert a.jobs.equals(b.jobs.drop(columns="pull_time"))
    assert "pull_time" not in a.jobs.columns and "images" not in a.summary


def test_the_counts_model_refuses_a_pull_model():
    jobs = _jobs([100], [1])
    with pytest.raises(UnsupportedError, match="containers"):
        simulate(_cluster(), jobs, "easy", reservations="counts",
                 containers=Containers.of(["a"]))
    with pytest.raises(InputError, match="cover 2 jobs"):
        simulate(_cluster(), jobs, "easy", containers=Containers.of(["a", "b"]))


@pytest.mark.parametrize("text,expected", [
    ("default=120s,cache=4", ImagePull(120, 4, {})),
    ("cache=0,nvcr.io#nvidia/pytorch:24.01-py3=5m", ImagePull(120, 0, {
        "nvcr.io#nvidia/pytorch:24.01-py3": 300})),
    ("default=2m,ubuntu:22.04=30", ImagePull(120, 4, {"ubuntu:22.04": 30})),
])
def test_pull_specs_parse(text, expected):
    assert ImagePull.parse(text) == expected


@pytest.mark.parametrize("text,match", [
    ("default=soon", "not a duration"), ("cache=-1", "cache"), ("cache", "key=value"),
    ("default=1s,default=2s", "twice"), ("default=1.5", "whole"),
])
def test_pull_specs_are_checked(text, match):
    with pytest.raises(InputError, match=match):
        ImagePull.parse(text)


def test_workload_column_round_trips_and_is_checked(tmp_path):
    cluster = Cluster.homogeneous(2, gpus=8, cpus=8, prefix="gpu")
    path = tmp_path / "w.csv"
    path.write_text("job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,"
                    "cpus_per_node,mem_per_node,partition,user,account,container_image\n"
                    "1,0,100,50,1,8,8,0,all,u,a,nvcr.io#nvidia/pytorch:24.01-py3\n"
                    "2,0,100,50,1,8,8,0,all,u,a,\n")
    w = read_workload(path, cluster)
    assert w.container_image.tolist() == ["nvcr.io#nvidia/pytorch:24.01-py3", ""]
    out = tmp_path / "out.csv"
    write_workload(w, cluster, out)
    assert read_workload(out, cluster).container_image.tolist() == w.container_image.tolist()
    assert w.containers("default=10").codes()[0].tolist() == [0, -1]
    bad = tmp_path / "bad.csv"
    bad.write_text(path.read_text().replace(",\n", ",a b\n"))
    with pytest.raises(InputError) as e:
        read_workload(bad, cluster)
    assert e.value.line == 3 and e.value.field == "container_image"


def test_sbatch_container_image_reaches_the_workload():
    from fastsched.io.sbatch import normalise, parse_script
    from fastsched.io.workload import requests_to_workload
    cluster = Cluster.homogeneous(2, gpus=8, cpus=8, prefix="gpu")
    script = ("#!/bin/bash\n#SBATCH -N 1 -t 10:00\n"
              "#SBATCH --container-image=\"nvcr.io#nvidia/pytorch:24.01-py3\"\nsrun python x.py\n")
    norm = normalise(parse_script(script), cluster)
    w = requests_to_workload([(norm, 0, 60), (normalise(parse_script(
        "#!/bin/bash\n#SBATCH -N 1 -t 10:00\nsrun true\n"), cluster), 0, 60)], cluster)
    assert w.container_image.tolist() == ["nvcr.io#nvidia/pytorch:24.01-py3", ""]


def test_cli_image_pull(tmp_path, capsys):
    conf = tmp_path / "slurm.conf"
    conf.write_text("NodeName=gpu[001-002] CPUs=8 RealMemory=1000 Gres=gpu:8\n"
                    "PartitionName=gpu Nodes=ALL Default=YES MaxTime=UNLIMITED\n")
    w = tmp_path / "w.csv"
    w.write_text("job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,"
                 "cpus_per_node,mem_per_node,partition,user,account,container_image\n"
                 "1,0,1000,100,2,8,8,0,gpu,u,a,img\n2,0,1000,100,2,8,8,0,gpu,u,a,img\n")
    out = tmp_path / "jobs.csv"
    summary = tmp_path / "s.json"
    assert main(["simulate", str(w), "--cluster", str(conf), "--image-pull",
                 "default=1m,cache=2", "--jobs-out", str(out), "--summary-json",
                 str(summary), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "container images: 1 start(s) pulled (2 node pulls" in text
    import pandas as pd
    f = pd.read_csv(out)
    assert f.pull_time.tolist() == [60, 0] and f.end_time.tolist() == [160, 260]
    assert json.loads(summary.read_text())["images"]["images_pulled"] == 2
    assert main(["check", str(out), "--trace", str(w), "--cluster", str(conf)]) == 0
    with pytest.raises(SystemExit):
        main(["simulate", str(w), "--cluster", str(conf), "--image-pull", "cache=x"])


def test_a_run_with_images_resumes_from_any_checkpoint_exactly():
    """The image caches are part of the saved state: a resumed run pulls as an
    uninterrupted one does."""
    import pickle

    import cloudpickle
    import fastsched as fs
    from fastsched.model.failures import FailureModel
    from fastsched.sim.checkpoint import Checkpoints

    class EveryPause(Checkpoints):
        def __init__(self):
            super().__init__("/dev/null", 0)
            self.states = []

        def save(self, state):
            self.states.append(cloudpickle.dumps(state))

    cluster = fs.ai_cluster("ai-8k")
    w = fs.ai_mix(cluster, 300, seed=4)
    images = np.array(["a", "b", "c", ""], dtype=object)[np.arange(len(w.jobs)) % 4]
    c = Containers.of(images, "default=10m,cache=2,c=1m")
    lc = Lifecycle.of(len(w.jobs), checkpoint_interval=600, checkpoint_cost=30)
    failures = FailureModel.parse("mtbf=20d,repair=2h,seed=5")

    def run(**kw):
        return simulate(cluster, w.jobs, "easy", failures=failures, lifecycle=lc,
                        containers=c, **kw)
    whole = run()
    assert whole.summary["images"]["pulls"] > 20 and whole.verify().ok
    assert (whole.jobs.pull_time == 0).sum() > len(w.jobs) // 4   # cache hits, no image
    keep = EveryPause()
    run(checkpoints=keep)
    assert len(keep.states) > 3
    for k in (1, len(keep.states) // 2, len(keep.states) - 1):
        resumed = run(resume=pickle.loads(keep.states[k]))
        assert resumed.jobs.equals(whole.jobs)
        assert resumed.summary["images"] == whole.summary["images"]


def test_runs_with_failures_and_no_pull_model_have_no_pull_columns():
    jobs = _jobs([500, 300], [1, 1])
    r = simulate(_cluster(2), jobs, "easy", lifecycle=Lifecycle.of(2),
                 events=NodeEvents.from_rows([(100, "down", [0])], 2))
    assert "pull_time" not in r.jobs.columns and r.attempts["pull"] is None
    assert "pull_gpu_hours" not in r.summary["lifecycle"] and "images" not in r.summary


def test_cli_check_reads_pull_times_with_and_without_failures(tmp_path, capsys):
    import pandas as pd
    conf = tmp_path / "slurm.conf"
    conf.write_text("NodeName=gpu[001-003] CPUs=8 RealMemory=1000 Gres=gpu:8\n"
                    "PartitionName=gpu Nodes=ALL Default=YES MaxTime=UNLIMITED\n")
    w = tmp_path / "w.csv"
    w.write_text("job_id,submit_time,time_limit,runtime,num_nodes,gpus_per_node,"
                 "cpus_per_node,mem_per_node,partition,user,account,container_image,"
                 "checkpoint_interval\n"
                 "1,0,2000,1000,2,8,8,0,gpu,u,a,img,100\n2,0,1000,100,1,8,8,0,gpu,u,a,img,0\n"
                 "3,50,1000,100,1,8,8,0,gpu,u,a,other,0\n")
    events = tmp_path / "events.csv"
    events.write_text("time,event,nodes\n500,down,gpu001\n")
    for extra, name in (([], "plain"), (["--events", str(events)], "failures")):
        out = tmp_path / f"{name}.csv"
        assert main(["simulate", str(w), "--cluster", str(conf), "--image-pull",
                     "default=30,cache=1", "--jobs-out", str(out), "--no-progress"] + extra) == 0
        assert main(["check", str(out), "--trace", str(w), "--cluster", str(conf)]
                    + extra) == 0
        f = pd.read_csv(out)
        assert (f.pull_time > 0).any()
        if name == "failures":
            assert "NODE_FAIL" in f.state.tolist()
        f.loc[f.pull_time > 0, "pull_time"] += 7          # the ends no longer add up
        f.to_csv(out, index=False)
        assert main(["check", str(out), "--trace", str(w), "--cluster", str(conf)]
                    + extra) == 1
    capsys.readouterr()
