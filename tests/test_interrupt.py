"""Runs stop when asked: the kernels poll their control array, Ctrl-C becomes
Interrupted, and the CLI exits 130 (143 on SIGTERM) without presenting a partial
result as whole."""
import json
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

import fastsched as fs
from fastsched.engine import interrupt, loop as engine_loop, plan as engine_plan
from fastsched.engine.interrupt import DONE, NOW, PAUSE, REQUEST, STOP, Interrupted
from fastsched.engine.loop import _EventLoop, run_nodes
from fastsched.model.constraints import Dependencies, LimitGroups, PartitionChoices

CLUSTER = fs.Cluster.homogeneous(3, cpus=4, gpus=4, mem_mb=100)


def workload(n=60, seed=0):
    rng = np.random.default_rng(seed)
    limit = rng.integers(5, 50, n)
    return fs.JobTable.from_arrays(
        job_id=np.arange(n), submit_time=np.sort(rng.integers(0, 200, n)), time_limit=limit,
        runtime=rng.integers(0, 60, n), num_nodes=rng.integers(1, 3, n),
        cpus_per_node=1, gpus_per_node=rng.integers(1, 5, n))


def event_loop(jobs, policy="conservative"):
    n = len(jobs)
    return _EventLoop(CLUSTER, jobs, policy, 1, None, PartitionChoices.single(jobs.partition),
                      Dependencies.none(n), LimitGroups.none(n))


def fields(run):
    return (run.start, run.end, run.alloc_offsets, run.alloc_nodes, run.alloc_gpu_mask,
            run.partition, run.reason)


def test_a_stop_request_returns_before_the_next_instant():
    loop = event_loop(workload())
    loop.control[REQUEST] = STOP
    loop.run()
    assert loop.sc[0] == 0 and loop.sc[4] == 0          # no arrival, no pass
    assert (loop.out.start == -1).all()


def test_a_pause_request_returns_after_one_instant():
    jobs = workload()
    loop = event_loop(jobs)
    loop.control[REQUEST] = PAUSE
    loop.run()
    first = int(jobs.submit_time.min())
    assert loop.control[NOW] == first and loop.next_time() > first
    assert loop.sc[0] == (jobs.submit_time == first).sum()      # that instant's arrivals


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
def test_pausing_at_every_instant_changes_nothing(policy):
    """A pause returns at an instant boundary, from which the loop goes on exactly."""
    jobs = workload(seed=1)
    whole = run_nodes(CLUSTER, jobs, policy)
    loop = event_loop(jobs, policy)
    calls = 0
    while not loop.done:
        loop.run(loop.next_time())         # one instant, as a pause after it would leave it
        calls += 1
        if loop.done:
            break
        t = loop.next_time()
        loop.control[REQUEST] = PAUSE
        loop.run()                         # one instant more (a pause makes progress)
        assert loop.done or loop.next_time() > t
        loop.control[REQUEST] = 0
    assert calls > 10
    for a, b in zip(fields(whole), fields(loop.result())):
        np.testing.assert_array_equal(a, b)
    assert loop.control[DONE] == (whole.start >= 0).sum()


def test_a_stop_request_cuts_a_single_pass_short(monkeypatch):
    """plan_nodes polls the request in its job loop: stopped at once, nothing planned."""
    jobs = workload()
    sched = fs.Scheduler(CLUSTER, "conservative")
    for r in (jobs.request(i) for i in range(len(jobs))):
        sched.submit(r)
    planned = sched.expected_start_times(now=0)
    assert (planned["expected_start"] >= 0).all()

    def stopped():
        c = np.zeros(4, dtype=np.int64)
        c[REQUEST] = STOP
        return c
    monkeypatch.setattr(engine_loop, "new_control", stopped)
    monkeypatch.setattr(engine_plan, "new_control", stopped)
    d = sched.schedule(now=0, full=True).to_pandas()
    assert (d["outcome"] == "blocked").all()


def test_ctrl_c_while_a_kernel_runs_raises_interrupted_with_where_it_was():
    jobs = workload(n=200)
    ticks = []

    def tick(control):
        ticks.append(int(control[DONE]))
        raise KeyboardInterrupt
    with pytest.raises(Interrupted) as e:
        run_nodes(CLUSTER, jobs, "conservative", tick=tick)
    assert isinstance(e.value, KeyboardInterrupt) and not isinstance(e.value, Exception)
    assert e.value.done >= ticks[0]
    assert "interrupted" in str(e.value)


def test_ctrl_c_in_a_priority_recomputation_says_where_the_run_was():
    jobs = workload(n=80)
    calls = []

    def reorder(now, progress):
        calls.append(now)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return np.zeros(len(jobs))
    with pytest.raises(Interrupted) as e:
        run_nodes(CLUSTER, jobs, "easy", reorder=reorder, period=20)
    assert e.value.at is not None and e.value.at < calls[-1]


def test_kernel_errors_reach_the_caller():
    def boom():
        raise ValueError("inside")
    with pytest.raises(ValueError, match="inside"):
        interrupt.call(boom, control=interrupt.new_control())
    assert interrupt.call(lambda x: x + 1, 41, control=interrupt.new_control()) == 42


# --------------------------------------------------------------------------- the CLI

def _write_workload(path, n):
    cluster = fs.ai_cluster("ai-8k")
    fs.write_workload(fs.ai_mix(cluster, n, seed=7), cluster, path)


def _simulate(tmp_path, delay, sig):
    out, summary = tmp_path / "jobs.csv", tmp_path / "summary.json"
    cmd = [sys.executable, "-m", "fastsched.cli", "simulate", str(tmp_path / "w.csv"),
           "--cluster", "ai-8k", "--policy", "conservative", "--jobs-out", str(out),
           "--summary-json", str(summary)]
    # a shell without job control starts background commands with SIGINT ignored
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(delay)
    p.send_signal(sig)
    stdout, stderr = p.communicate(timeout=600)
    return p.returncode, stdout, stderr, out, summary


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupting_the_cli_at_a_random_moment_exits_cleanly(tmp_path, sig):
    """Wherever the signal lands after start-up (compilation, the loop or the writing,
    as the machine's speed decides), the run either finished with whole files or
    stopped with one line, and any file written is whole. (A signal during the
    imports, the first second, still gets Python's own KeyboardInterrupt.)"""
    n = 3000
    _write_workload(tmp_path / "w.csv", n)
    delay = random.Random(int(sig)).uniform(0.5, 6.0)
    code, stdout, stderr, out, summary = _simulate(tmp_path, delay, sig)
    assert "Traceback" not in stderr
    if code == -int(sig):
        # the signal landed in the interpreter's teardown, after the run had finished and
        # flushed its output (Python's handlers are gone by then)
        assert stdout.rstrip().endswith(f"wrote summary to {summary}"), stdout
    elif code != 0:
        assert code == 128 + int(sig), stderr
        assert stderr.strip().splitlines()[-1].startswith("fastsched: interrupted")
    # a file written is whole (the signal may land after it was written)
    if out.exists():
        assert len(pd.read_csv(out)) == n
    if summary.exists():
        assert json.loads(summary.read_text())["jobs"] == n
    if code == 0:
        assert out.exists() and summary.exists()


def test_a_forked_child_runs_kernels_with_its_own_worker():
    """fork() copies only the calling thread: a child must not hand kernels to its
    parent's worker thread, which it does not have (it would wait forever)."""
    assert interrupt.call(lambda: 1, control=interrupt.new_control()) == 1   # parent's worker
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                    # the child: report, then leave at once
        try:
            value = interrupt.call(lambda: 7, control=interrupt.new_control())
            os.write(w, str(value).encode())
        finally:
            os._exit(0)
    os.close(w)
    import select
    ready, _, _ = select.select([r], [], [], 300)
    if not ready:                   # the child waits for a thread it does not have
        os.kill(pid, signal.SIGKILL)
    got = os.read(r, 16) if ready else b""
    os.waitpid(pid, 0)
    assert got == b"7"


def test_calling_threads_share_idle_workers():
    """A thread per call (an embedding server's request threads) leaves no thread behind."""
    import threading
    def one():
        interrupt.call(lambda: 1, control=interrupt.new_control())
    one()
    before = threading.active_count()
    for _ in range(20):
        t = threading.Thread(target=one)
        t.start()
        t.join()
    assert threading.active_count() == before
