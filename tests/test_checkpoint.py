"""Checkpoints: a replay saved at any pause and resumed gives the uninterrupted run's
schedule, byte for byte (plain, with a queue-order function, and a whole site with
fair-share usage), from the API and from the CLI."""
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastsched as fs
from fastsched.model.constraints import LimitGroups
from fastsched.sim.checkpoint import Checkpoints, load
from fastsched.cli import main
from fastsched.model.errors import InputError

CLUSTER = fs.ai_cluster("ai-8k")
WORKLOAD = fs.ai_mix(CLUSTER, 400, seed=9)
CONFIG = fs.load_config(Path(fs.__file__).parent / "data" / "example-config.toml")


def wfp3(now, progress):
    return -fs.research_order("wfp3", WORKLOAD.jobs, now)


RUNS = {
    "plain": lambda **kw: fs.simulate(CLUSTER, WORKLOAD.jobs, "conservative",
                                      **WORKLOAD.constraints(), **kw),
    "order": lambda **kw: fs.simulate(CLUSTER, WORKLOAD.jobs, "easy", priority=wfp3,
                                      period=900, **WORKLOAD.constraints(), **kw),
    "site": lambda **kw: fs.simulate_site(CLUSTER, WORKLOAD, CONFIG, "easy", **kw),
}


class EveryPause(Checkpoints):
    """Keeps every state the run saves (pickled as a file would hold it); always due, so
    a run with a queue-order function saves after every period at least (the loop then
    returns to Python), and more wherever a look at the run lands mid-call."""

    def __init__(self):
        super().__init__(os.devnull, 0)
        self.states = []

    def save(self, state):
        import cloudpickle
        self.states.append(cloudpickle.dumps(state))


def same(a, b):
    for f in ("start_time", "end_time", "alloc_offsets", "alloc_nodes", "alloc_gpu_mask"):
        np.testing.assert_array_equal(getattr(a.schedule, f), getattr(b.schedule, f))
    np.testing.assert_array_equal(a.priority, b.priority)
    assert a.jobs.equals(b.jobs)


@pytest.fixture(scope="module")
def saved():
    """Each run once whole, and once saving at every pause it makes."""
    out = {}
    for name, run in RUNS.items():
        keep = EveryPause()
        out[name] = run(), run(checkpoints=keep), keep.states
    return out


@pytest.mark.parametrize("name", sorted(RUNS))
def test_pausing_to_save_changes_nothing(saved, name):
    whole, checkpointed, states = saved[name]
    assert len(states) >= (1 if name == "plain" else 3)
    same(whole, checkpointed)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instants=st.integers(1, 400), policy=st.sampled_from(["fcfs", "easy", "conservative"]))
def test_the_loop_pickled_at_any_instant_goes_on_exactly(instants, policy):
    """A plain run paused after a chosen number of instants (as a checkpoint would),
    its state pickled and loaded, then run on: the whole run's result."""
    import cloudpickle
    from fastsched.engine.loop import _EventLoop, run_nodes
    from fastsched.model.constraints import Dependencies, PartitionChoices
    jobs = WORKLOAD.jobs
    whole = run_nodes(CLUSTER, jobs, policy)
    loop = _EventLoop(CLUSTER, jobs, policy, 1, None, PartitionChoices.single(jobs.partition),
                      Dependencies.none(len(jobs)), LimitGroups.none(len(jobs)))
    for _ in range(instants):
        if loop.done:
            break
        loop.run(loop.next_time())
    loop = pickle.loads(cloudpickle.dumps(loop))
    loop.run()
    resumed = loop.result()
    for f in ("start", "end", "alloc_offsets", "alloc_nodes", "alloc_gpu_mask", "partition"):
        np.testing.assert_array_equal(getattr(whole, f), getattr(resumed, f))


@pytest.mark.parametrize("name", sorted(RUNS))
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(where=st.floats(0, 1))
def test_resuming_from_any_checkpoint_gives_the_whole_run(saved, name, where):
    whole, _, states = saved[name]
    state = pickle.loads(states[min(int(where * len(states)), len(states) - 1)])
    same(whole, RUNS[name](resume=state))


def test_a_checkpoint_file_is_written_whole_and_loaded(tmp_path):
    path = tmp_path / "ck"
    c = Checkpoints(path, 0, header={"argv": ["x"]})
    c.save({"loop": 1})
    assert load(path) == ({"argv": ["x"]}, {"loop": 1})
    assert os.listdir(tmp_path) == ["ck"]                   # no temporary file left
    (tmp_path / "junk").write_bytes(b"\x80\x04junk")
    with pytest.raises(InputError, match="not a fastsched checkpoint"):
        load(tmp_path / "junk")
    # a file of the previous format (a loop state of another shape) is refused by name
    (tmp_path / "old").write_bytes(pickle.dumps({"format": "fastsched-checkpoint-1",
                                                 "header": {}, "state": {}}))
    with pytest.raises(InputError, match="another version"):
        load(tmp_path / "old")


# --------------------------------------------------------------------------- the CLI

def _cli_workload(tmp_path, n=600):
    path = tmp_path / "w.csv"
    fs.write_workload(fs.ai_mix(CLUSTER, n, seed=4), CLUSTER, path)
    return ["simulate", str(path), "--cluster", "ai-8k", "--policy", "conservative",
            "--order", "wfp3", "--no-progress"]


def test_cli_resume_gives_the_same_records(tmp_path, capsys):
    args = _cli_workload(tmp_path)
    whole, ck = tmp_path / "whole.csv", tmp_path / "ck"
    assert main(args + ["--jobs-out", str(whole), "--checkpoint", str(ck),
                        "--checkpoint-every", "0"]) == 0
    resumed = tmp_path / "resumed.csv"
    assert main(["simulate", "--resume", str(ck), "--jobs-out", str(resumed)]) == 0
    assert "(resumed from" in capsys.readouterr().out
    assert resumed.read_bytes() == whole.read_bytes()


def test_cli_resume_refuses_other_inputs(tmp_path, capsys):
    args = _cli_workload(tmp_path, n=300)
    ck = tmp_path / "ck"
    assert main(args + ["--checkpoint", str(ck), "--checkpoint-every", "0"]) == 0
    fs.write_workload(fs.ai_mix(CLUSTER, 300, seed=5), CLUSTER, tmp_path / "w.csv")
    assert main(["simulate", "--resume", str(ck)]) == 2
    assert "inputs differ" in capsys.readouterr().err


def test_cli_interrupted_then_resumed_matches_an_uninterrupted_run(tmp_path):
    """Ctrl-C at some moment after a checkpoint was written, then --resume: the records
    are those of a run never interrupted (whenever the signal landed)."""
    args = _cli_workload(tmp_path, n=1200)
    whole = tmp_path / "whole.csv"
    assert main(args + ["--jobs-out", str(whole)]) == 0
    ck, out = tmp_path / "ck", tmp_path / "out.csv"
    p = subprocess.Popen([sys.executable, "-m", "fastsched.cli", *args, "--jobs-out", str(out),
                          "--checkpoint", str(ck), "--checkpoint-every", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    while not ck.exists() and p.poll() is None:
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=600)
    assert p.returncode in (0, 130), err
    if p.returncode == 130:
        assert not out.exists() and "--resume" in err
    resumed = tmp_path / "resumed.csv"
    r = subprocess.run([sys.executable, "-m", "fastsched.cli", "simulate", "--resume", str(ck),
                        "--jobs-out", str(resumed)], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    assert resumed.read_bytes() == whole.read_bytes()
