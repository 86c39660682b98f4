"""The node engine's warm-up: once per process, timed apart from the simulation, announced
on request."""
import io
import threading
import types

import fastsched as fs
from fastsched.sim import simulator as sim, warmup


def gpu_run():
    cluster = fs.Cluster(["g1", "g2"], cpus=[8, 8], gpus=[8, 8], mem_mb=[0, 0])
    jobs = fs.JobTable.from_arrays(job_id=[1, 2], submit_time=[0, 0], time_limit=[10, 10],
                                   runtime=[10, 10], num_nodes=1, cpus_per_node=1,
                                   gpus_per_node=1)
    return fs.simulate(cluster, jobs, "easy").summary


def test_warm_up_once_per_process_and_not_in_sim_seconds(monkeypatch):
    clock = [0.0]                       # a fake clock: only the warm-up advances it
    fake_time = types.SimpleNamespace(perf_counter=lambda: clock[0])
    calls = []

    def compile_kernels():
        calls.append(1)
        clock[0] += 100.0

    monkeypatch.setattr(warmup, "_ready", False)
    monkeypatch.setattr(warmup, "_run_tiny", compile_kernels)
    monkeypatch.setattr(warmup, "time", fake_time)
    monkeypatch.setattr(sim, "time", fake_time)
    first, second = gpu_run(), gpu_run()
    assert calls == [1]
    assert first["engine"] == "nodes"
    assert first["compile_seconds"] == 100.0 and first["sim_seconds"] == 0.0
    assert second["compile_seconds"] == 0.0
    pool = fs.simulate(fs.Cluster.homogeneous(2), fs.JobTable.from_arrays(
        job_id=[1], submit_time=[0], time_limit=[5], runtime=[5], num_nodes=1)).summary
    assert pool["engine"] == "pool" and pool["compile_seconds"] == 0.0 and calls == [1]


class Stream(io.StringIO):
    """stderr that signals its first write."""

    def __init__(self):
        super().__init__()
        self.written = threading.Event()

    def write(self, text):
        self.written.set()
        return super().write(text)


def test_announcement_when_asked(monkeypatch):
    stream = Stream()
    monkeypatch.setattr(warmup.sys, "stderr", stream)
    monkeypatch.setattr(warmup, "ANNOUNCE_AFTER", 0.0)
    monkeypatch.setattr(warmup, "_run_tiny", lambda: None)
    for announce in (False, None):      # None: only at a terminal, and this is none
        monkeypatch.setattr(warmup, "_ready", False)
        assert warmup.warm_up(announce=announce) >= 0.0
        assert stream.getvalue() == ""
    monkeypatch.setattr(warmup, "_ready", False)
    monkeypatch.setattr(warmup, "_run_tiny", lambda: stream.written.wait(60))
    warmup.warm_up(announce=True)       # returns once the line is out
    assert stream.getvalue().startswith(warmup.MESSAGE)
    assert " done in " in stream.getvalue() and stream.getvalue().endswith(" s\n")
    assert warmup.warm_up(announce=True) == 0.0
    assert stream.getvalue().count("\n") == 1


def test_compile_all_compiles_every_entry_point_called_from_python(capsys):
    """`fastsched compile` reaches each kernel that Python code calls directly (their
    callees compile with them), so that no later process compiles one."""
    from fastsched.cli import main
    from fastsched.engine import loop, passes, plan, preemptplan, profile, slurmplan, undo
    from fastsched.policy import fairshare, priority
    from fastsched.sim import gpusweep
    assert main(["compile", "--quiet"]) == 0
    assert capsys.readouterr().out == ""
    entry_points = [loop._run, loop._complete, loop._release, passes._pass, profile._build_all,
                    profile._block, profile._advance_nodes,
                    slurmplan._cycle, fairshare._fair_tree_ranks,
                    fairshare._level_fs, fairshare._sum_up, priority._multifactor_kernel,
                    gpusweep._sweep, undo.start_at, undo.move_index, undo.give_back_ended,
                    preemptplan.move_hold_end]
    assert [k.py_func.__name__ for k in entry_points if not k.signatures] == []
