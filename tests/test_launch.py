"""fastsched.tools.launch: task environments worked by hand, and real local launches."""
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fastsched.tools import launch
from fastsched.model.errors import InputError, UnsupportedError
from fastsched.tools.launch import (Allocation, allocate_local, block_distribution, compress_counts,
                              expand_counts, master_port, parse_signal, run,
                              task_environments)

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
#: a bound that only stops a hung test; never a speed requirement (a busy machine is slow)
HANG_S = 600


def col(envs, key):
    return [e.get(key) for e in envs]


# --------------------------------------------------------------------------- layout

def test_three_nodes_seven_tasks_worked_by_hand():
    # Block distribution: counts dealt round-robin (3, 2, 2), ranks numbered node by node.
    alloc = allocate_local(3, 7, job_id=4242)
    assert alloc.nodes == ("node001", "node002", "node003")
    assert alloc.tasks_per_node == (3, 2, 2)
    envs = task_environments(alloc)
    assert len(envs) == 7
    assert col(envs, "RANK") == ["0", "1", "2", "3", "4", "5", "6"]
    assert col(envs, "SLURM_PROCID") == col(envs, "RANK")
    assert col(envs, "LOCAL_RANK") == ["0", "1", "2", "0", "1", "0", "1"]
    assert col(envs, "SLURM_LOCALID") == col(envs, "LOCAL_RANK")
    assert col(envs, "SLURM_NODEID") == ["0", "0", "0", "1", "1", "2", "2"]
    assert col(envs, "SLURMD_NODENAME") == ["node001"] * 3 + ["node002"] * 2 + ["node003"] * 2
    assert col(envs, "LOCAL_WORLD_SIZE") == ["3", "3", "3", "2", "2", "2", "2"]
    assert col(envs, "SLURM_GTIDS")[0] == "0,1,2" and col(envs, "SLURM_GTIDS")[5] == "5,6"
    for e in envs:
        assert e["SLURM_JOB_ID"] == "4242"
        assert e["SLURM_NTASKS"] == e["WORLD_SIZE"] == "7"
        assert e["SLURM_JOB_NUM_NODES"] == "3"
        assert e["SLURM_JOB_NODELIST"] == "node[001-003]"
        assert e["SLURM_TASKS_PER_NODE"] == "3,2(x2)"
        assert e["MASTER_ADDR"] == "node001"
        assert e["MASTER_PORT"] == str(10000 + 4242)
        # no GPUs allocated: no GPU variables at all
        assert "CUDA_VISIBLE_DEVICES" not in e and "SLURM_JOB_GPUS" not in e
        assert all(isinstance(v, str) for v in e.values())


@pytest.mark.parametrize("nodes,tasks,per_node,expected", [
    (1, 1, None, [1]),
    (4, None, None, [1, 1, 1, 1]),             # -N alone: one task per node
    (4, 7, None, [2, 2, 2, 1]),
    (2, 4, None, [2, 2]),
    (3, 10, None, [4, 3, 3]),
    (3, None, 2, [2, 2, 2]),                    # --ntasks-per-node alone: exactly K each
    (3, 5, 2, [2, 2, 1]),                       # with -n: at most K each
])
def test_block_distribution(nodes, tasks, per_node, expected):
    assert block_distribution(nodes, tasks, per_node) == expected


@pytest.mark.parametrize("counts,text", [
    ([2, 2, 2, 1], "2(x3),1"),
    ([1, 1, 1, 1], "1(x4)"),
    ([3, 2, 2], "3,2(x2)"),
    ([5], "5"),
    ([1, 2, 1], "1,2,1"),                        # only consecutive runs merge
    ([2, 2, 1, 1, 2], "2(x2),1(x2),2"),
])
def test_tasks_per_node_format(counts, text):
    assert compress_counts(counts) == text
    assert expand_counts(text) == counts


@pytest.mark.parametrize("bad", ["", "2(x", "2(3)", "a", "2(xb)", "1,,2"])
def test_expand_counts_rejects_garbage(bad):
    with pytest.raises(InputError):
        expand_counts(bad)


def test_nodelist_is_compressed_hostlist():
    alloc = Allocation(job_id=7, nodes=["gpu7", "node010", "node011", "node012", "node020"],
                       tasks_per_node=[1, 2, 2, 2, 1])
    env = task_environments(alloc)[0]
    assert env["SLURM_JOB_NODELIST"] == "gpu7,node[010-012,020]"
    assert env["SLURM_TASKS_PER_NODE"] == "1,2(x3),1"
    assert env["SLURM_JOB_NUM_NODES"] == "5"
    assert env["MASTER_ADDR"] == "gpu7"
    assert allocate_local(12, 12, job_id=1).nodelist == "node[001-012]"


# --------------------------------------------------------------------------- GPUs

def test_gpus_per_task_binds_each_task_to_its_own_gpus():
    alloc = allocate_local(2, 4, gpus_per_node=4, gpus_per_task=2, job_id=9)
    envs = task_environments(alloc)
    assert col(envs, "CUDA_VISIBLE_DEVICES") == ["0,1", "2,3", "0,1", "2,3"]
    assert col(envs, "SLURM_JOB_GPUS") == ["0,1,2,3"] * 4
    assert col(envs, "SLURM_STEP_GPUS") == ["0,1,2,3"] * 4
    assert col(envs, "SLURM_GPUS_ON_NODE") == ["4"] * 4
    assert col(envs, "SLURM_GPUS_PER_TASK") == ["2"] * 4


def test_without_gpus_per_task_every_task_sees_the_node_gpus():
    envs = task_environments(allocate_local(2, 3, gpus_per_node=2, job_id=9))
    assert col(envs, "CUDA_VISIBLE_DEVICES") == ["0,1"] * 3
    assert "SLURM_GPUS_PER_TASK" not in envs[0]


def test_gpus_per_task_alone_allocates_what_the_tasks_need():
    alloc = allocate_local(2, 3, gpus_per_task=1, job_id=9)      # counts 2, 1
    assert alloc.gpus == ((0, 1), (0,))
    assert col(task_environments(alloc), "CUDA_VISIBLE_DEVICES") == ["0", "1", "0"]


def test_cuda_visible_devices_relative_unless_unconstrained():
    # Node 0 holds GPUs 4-7, node 1 GPUs 2-3; one GPU per task.
    kw = dict(job_id=3, nodes=["a1", "a2"], tasks_per_node=[2, 2],
              gpus=[[4, 5, 6, 7], [2, 3]], gpus_per_task=1)
    envs = task_environments(Allocation(**kw))
    assert col(envs, "SLURM_JOB_GPUS") == ["4,5,6,7", "4,5,6,7", "2,3", "2,3"]
    assert col(envs, "CUDA_VISIBLE_DEVICES") == ["0", "1", "0", "1"]     # cgroup-relative
    envs = task_environments(Allocation(**kw, constrain_devices=False))
    assert col(envs, "CUDA_VISIBLE_DEVICES") == ["4", "5", "2", "3"]     # global indices


# --------------------------------------------------------------------------- MASTER_PORT

def test_master_port_deterministic_and_in_range():
    assert master_port(0) == 10000
    assert master_port(4242) == 14242
    assert master_port(20000) == 10000
    assert master_port(123456789) == 10000 + 123456789 % 20000
    for job in random.Random(1).sample(range(10**9), 200):
        assert 10000 <= master_port(job) < 30000
    a = task_environments(allocate_local(2, 4, job_id=777))
    b = task_environments(allocate_local(2, 4, job_id=777))
    assert a == b
    assert {e["MASTER_PORT"] for e in a} == {"10777"}
    override = allocate_local(1, 1, job_id=777, master_port=29500)
    assert task_environments(override)[0]["MASTER_PORT"] == "29500"


# --------------------------------------------------------------------------- errors

@pytest.mark.parametrize("kwargs,match", [
    (dict(num_nodes=3, num_tasks=2), "every node needs at least one task"),
    (dict(num_nodes=0, num_tasks=2), "number of nodes"),
    (dict(num_nodes=2, num_tasks=0), "number of tasks"),
    (dict(num_nodes=2, num_tasks=5, ntasks_per_node=2), "do not fit"),
    (dict(num_nodes=2, num_tasks=4, gpus_per_node=2, gpus_per_task=2), "need 4 GPUs"),
    (dict(num_nodes=1, num_tasks=1, gpus_per_task=0), "gpus per task"),
    (dict(num_nodes=1, num_tasks=1, gpus_per_node=-1), "gpus per node"),
    (dict(num_nodes=1, num_tasks=1, job_id=-5), "job id"),
    (dict(num_nodes=1, num_tasks=1, node_prefix="n1"), "node prefix"),
    (dict(num_nodes=1, num_tasks=1, master_port=70000), "master port"),
    (dict(num_nodes=2.0, num_tasks=2), "must be an integer"),
])
def test_allocate_local_errors(kwargs, match):
    with pytest.raises(InputError, match=match):
        allocate_local(**kwargs)


@pytest.mark.parametrize("kwargs,match", [
    (dict(nodes=[], tasks_per_node=[]), "at least one node"),
    (dict(nodes=["a", "a"], tasks_per_node=[1, 1]), "twice"),
    (dict(nodes=["a", "b"], tasks_per_node=[1]), "1 task counts for 2 nodes"),
    (dict(nodes=["a"], tasks_per_node=[0]), "task count of node a"),
    (dict(nodes=["a[1]"], tasks_per_node=[1]), "bad host name"),
    (dict(nodes=["a"], tasks_per_node=[1], gpus=[[0, 0]]), "GPU twice"),
    (dict(nodes=["a", "b"], tasks_per_node=[1, 1], gpus=[[0]]), "1 GPU lists for 2 nodes"),
])
def test_allocation_errors(kwargs, match):
    with pytest.raises(InputError, match=match):
        Allocation(job_id=1, **kwargs)


def test_run_rejects_bad_commands():
    alloc = allocate_local(1, 1, job_id=1)
    with pytest.raises(InputError):
        run("echo hi", alloc)
    with pytest.raises(InputError):
        run([], alloc)
    with pytest.raises(InputError, match="cannot start task 0"):
        run(["/nonexistent/fastsched-no-such-program"], alloc)


# --------------------------------------------------------------------------- real launches

PRINT_ENV = ("import os; print(' '.join(os.environ.get(k, '-') for k in "
             "('RANK', 'LOCAL_RANK', 'SLURM_NODEID', 'WORLD_SIZE', 'MASTER_ADDR', "
             "'SLURMD_NODENAME', 'SLURM_TASKS_PER_NODE', 'OUTSIDE', 'SLURM_STALE')))")


def test_run_gives_every_task_its_environment(capsys, monkeypatch):
    monkeypatch.setenv("SLURM_STALE", "from-an-enclosing-job")    # inherited SLURM_* dropped
    alloc = allocate_local(2, 3, job_id=31)
    status = run([sys.executable, "-c", PRINT_ENV], alloc, label=True,
                 env={"OUTSIDE": "yes"})
    assert status == 0
    lines = sorted(capsys.readouterr().out.splitlines())
    assert lines == [
        "0: 0 0 0 3 127.0.0.1 node001 2,1 yes -",
        "1: 1 1 0 3 127.0.0.1 node001 2,1 yes -",
        "2: 2 0 1 3 127.0.0.1 node002 2,1 yes -",
    ]


def test_label_width_and_stderr(capsys):
    alloc = allocate_local(1, 11, job_id=2)
    code = "import os, sys; print('err', os.environ['RANK'], file=sys.stderr)"
    assert run([sys.executable, "-c", code], alloc, label=True) == 0
    err = capsys.readouterr().err.splitlines()
    assert sorted(err)[:2] == [" 0: err 0", " 1: err 1"] and "10: err 10" in err


def test_failing_task_exit_code_propagates_and_others_are_killed(tmp_path):
    # Rank 2 fails at once with 3; the others would sleep for a minute, then leave a file.
    code = ("import os, sys, time\n"
            "r = int(os.environ['RANK'])\n"
            "if r == 2: sys.exit(3)\n"
            "time.sleep(60)\n"
            "open(os.path.join(sys.argv[1], r'done%d' % r), 'w').close()\n")
    assert run([sys.executable, "-c", code, str(tmp_path)], allocate_local(2, 4, job_id=5)) == 3
    assert list(tmp_path.iterdir()) == []


def test_without_kill_on_bad_exit_others_finish(tmp_path):
    code = ("import os, sys, time\n"
            "r = int(os.environ['RANK'])\n"
            "if r == 0: sys.exit(7)\n"
            "time.sleep(0.3)\n"
            "open(os.path.join(sys.argv[1], r'done%d' % r), 'w').close()\n")
    status = run([sys.executable, "-c", code, str(tmp_path)], allocate_local(1, 3, job_id=5),
                 kill_on_bad_exit=False)
    assert status == 7
    assert sorted(p.name for p in tmp_path.iterdir()) == ["done1", "done2"]


def test_signal_death_reported_as_128_plus_signal():
    code = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    assert run([sys.executable, "-c", code], allocate_local(1, 1, job_id=5)) == 137


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purpose
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


class _ClockStoppedUntil:
    """``time`` for the launcher whose clock stands still until ``ready()``, then moves a
    day per reading: a timeout fires once the tasks are set up, however busy the machine."""

    def __init__(self, ready):
        self.ready, self.sleep, self.now = ready, time.sleep, 0.0

    def monotonic(self) -> float:
        if self.ready():
            self.now += 86_400.0
        return self.now


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
def test_timeout_leaves_no_orphans(tmp_path, monkeypatch):
    # Each task starts a grandchild and records both pids; all must be gone afterwards.
    code = ("import os, subprocess, sys, time\n"
            "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
            "p = os.path.join(sys.argv[1], os.environ['RANK'])\n"
            "open(p + '.tmp', 'w').write('%d %d' % (os.getpid(), c.pid))\n"
            "os.replace(p + '.tmp', p)\n"
            "time.sleep(60)\n")
    alloc = allocate_local(2, 2, job_id=5)
    monkeypatch.setattr(launch, "time", _ClockStoppedUntil(lambda: sorted(os.listdir(tmp_path)) == ["0", "1"]))
    status = run([sys.executable, "-c", code, str(tmp_path)], alloc, timeout=3)
    assert status == 124
    pids = [int(x) for f in tmp_path.iterdir() for x in f.read_text().split()]
    assert len(pids) == 4
    # signals to a process group are delivered asynchronously: wait for them (the bound
    # only stops a hang)
    hang = time.monotonic() + HANG_S
    while [p for p in pids if _pid_alive(p)] and time.monotonic() < hang:
        time.sleep(0.05)
    assert not [p for p in pids if _pid_alive(p)]


# --------------------------------------------------------------------------- the CLI

def cli(*args, timeout=HANG_S, **kw):
    return subprocess.run([sys.executable, "-m", "fastsched.cli", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=REPO, **kw)


def test_cli_print_env():
    r = cli("run", "-N", "3", "-n", "7", "--job-id", "99", "--print-env")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "0: SLURM_TASKS_PER_NODE=3,2(x2)" in lines
    assert "6: RANK=6" in lines and "6: SLURM_NODEID=2" in lines
    assert "0: MASTER_ADDR=127.0.0.1" in lines and "3: MASTER_PORT=10099" in lines
    assert "4: SLURM_JOB_NODELIST=node[001-003]" in lines


def test_cli_runs_command_and_returns_its_status(tmp_path):
    # rank 1 fails only once rank 0 has printed (the launcher then kills the others):
    # the output does not depend on which process the machine runs first
    code = ("import os, sys, time; from pathlib import Path; r = int(os.environ['RANK']); "
            "flag = Path(sys.argv[1]) / 'printed'\n"
            "if r == 0:\n    print('rank', r, flush=True); flag.touch()\n"
            "else:\n    while not flag.exists(): time.sleep(0.01)\n"
            "    print('rank', r); sys.exit(1)")
    r = cli("run", "-N", "2", "-n", "2", "--label", "--", sys.executable, "-c", code,
            str(tmp_path))
    assert r.returncode == 1
    assert "0: rank 0" in r.stdout.splitlines()


@pytest.mark.parametrize("args,match", [
    (["run", "-N", "3", "-n", "2", "--", "true"], "at least one task"),
    (["run", "-N", "2"], "no command"),
    (["run", "-N", "1", "--gpus-per-node", "1", "--gpus-per-task", "2", "--", "true"],
     "need 2 GPUs"),
])
def test_cli_errors_exit_2(args, match):
    r = cli(*args)
    assert r.returncode == 2
    assert r.stderr.startswith("fastsched: error:") and match in r.stderr


def _free_job_id() -> int:
    """A job id whose MASTER_PORT is free on loopback right now."""
    rng = random.Random()
    for _ in range(100):
        job = rng.randrange(1, 20000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", master_port(job)))
            except OSError:
                continue
            return job
    raise RuntimeError("no free port in 10000-29999")


def test_torch_distributed_allreduce_through_cli(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "sum.json"
    r = cli("run", "-N", "2", "-n", "4", "--job-id", str(_free_job_id()), "--timeout",
            str(HANG_S), "--", sys.executable, str(TESTS / "ddp_allreduce.py"), str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    result = json.loads(out.read_text())
    assert result["sum"] == 10.0 and result["world_size"] == 4
    assert [(x["rank"], x["local_rank"], x["node_id"], x["node"]) for x in result["layout"]] == [
        (0, 0, 0, "node001"), (1, 1, 0, "node001"), (2, 0, 1, "node002"), (3, 1, 1, "node002")]


def test_absurd_task_counts_are_refused_before_any_fork():
    with pytest.raises(InputError, match="at most 4,096 processes"):
        allocate_local(100_000)
    r = cli("run", "-N", "100000", "--", "true")
    assert r.returncode == 2 and "at most 4,096 processes" in r.stderr


def test_cli_names_the_rank_that_failed():
    code = "import os, sys; sys.exit(5 if os.environ['RANK'] == '1' else 0)"
    r = cli("run", "-n", "3", "--", sys.executable, "-c", code)
    assert r.returncode == 5
    assert "task 1 (rank 1) exited with status 5" in r.stderr
    assert "task 0" not in r.stderr and "task 2 (" not in r.stderr


# --------------------------------------------------------------------------- requested options

def test_ntasks_per_node_and_cpus_per_task_set_only_when_given():
    plain = task_environments(allocate_local(2, 4, job_id=8))[0]
    assert "SLURM_NTASKS_PER_NODE" not in plain and "SLURM_CPUS_PER_TASK" not in plain
    envs = task_environments(allocate_local(2, ntasks_per_node=3, cpus_per_task=4, job_id=8))
    assert len(envs) == 6
    assert set(col(envs, "SLURM_NTASKS_PER_NODE")) == {"3"}
    assert set(col(envs, "SLURM_CPUS_PER_TASK")) == {"4"}
    assert set(col(envs, "SLURM_JOB_NUM_NODES")) == {"2"}
    # with -n too, K is the per-node maximum; the variable still says K
    envs = task_environments(allocate_local(3, 5, ntasks_per_node=2, job_id=8))
    assert set(col(envs, "SLURM_NTASKS_PER_NODE")) == {"2"}
    assert envs[0]["SLURM_TASKS_PER_NODE"] == "2(x2),1"


@pytest.mark.parametrize("kwargs,match", [
    (dict(nodes=["a"], tasks_per_node=[3], ntasks_per_node=2), "more than --ntasks-per-node"),
    (dict(nodes=["a"], tasks_per_node=[1], cpus_per_task=0), "cpus per task"),
    (dict(nodes=["a"], tasks_per_node=[1], array="3"), "ArrayTask"),
])
def test_requested_option_errors(kwargs, match):
    with pytest.raises(InputError, match=match):
        Allocation(job_id=1, **kwargs)


def test_array_numbering_as_slurms_job_array_page():
    # job_array.shtml: `sbatch --array=1-3` answered "Submitted batch job 36": task 3 is job
    # 36 (the placeholder runs last), task 1 job 37, task 2 job 38
    jobs = {}
    for task in (1, 2, 3):
        env = task_environments(allocate_local(1, job_id=36, array_task_id=task,
                                               array_indexes="1-3"))[0]
        jobs[task] = env["SLURM_JOB_ID"]
        assert env["SLURM_ARRAY_JOB_ID"] == "36" and env["SLURM_ARRAY_TASK_ID"] == str(task)
        assert (env["SLURM_ARRAY_TASK_COUNT"], env["SLURM_ARRAY_TASK_MIN"],
                env["SLURM_ARRAY_TASK_MAX"], env["SLURM_ARRAY_TASK_STEP"]) == ("3", "1", "3", "1")
        assert env["MASTER_PORT"] == str(master_port(int(env["SLURM_JOB_ID"])))
    assert jobs == {1: "37", 2: "38", 3: "36"}


@pytest.mark.parametrize("indexes,task,expected", [
    ("0-15:4", 8, ("4", "0", "12", "4")),          # sbatch(1): 0-15:4 is 0,4,8,12
    ("0-15:4%2", 0, ("4", "0", "12", "4")),        # the throttle changes nothing here
    ("1,3,5-6", 5, ("4", "1", "6", "1")),
    ("7", 7, ("1", "7", "7", "1")),
    (None, 9, ("1", "9", "9", "1")),               # --array-task alone: a one-element array
])
def test_array_counts(indexes, task, expected):
    env = task_environments(allocate_local(1, job_id=100, array_task_id=task,
                                           array_indexes=indexes))[0]
    assert (env["SLURM_ARRAY_TASK_COUNT"], env["SLURM_ARRAY_TASK_MIN"],
            env["SLURM_ARRAY_TASK_MAX"], env["SLURM_ARRAY_TASK_STEP"]) == expected


@pytest.mark.parametrize("kwargs,match", [
    (dict(array_task_id=4, array_indexes="0-15:3"), "not in the array"),
    (dict(array_task_id=1, array_indexes="1-x"), "bad entry"),
    (dict(array_indexes="1-3"), "needs the element"),
    (dict(array_task_id=-1), "array task id"),
])
def test_array_errors(kwargs, match):
    with pytest.raises(InputError, match=match):
        allocate_local(1, job_id=5, **kwargs)


def test_array_task_checks_itself():
    from fastsched.tools.launch import ArrayTask
    with pytest.raises(InputError, match="outside 1..3"):
        ArrayTask(array_job_id=1, task_id=5, job_id=1, count=3, min=1, max=3)
    with pytest.raises(InputError, match="array step"):
        ArrayTask(array_job_id=1, task_id=1, job_id=1, count=1, min=1, max=1, step=0)
    task = ArrayTask(array_job_id=1, task_id=2, job_id=3, count=3, min=1, max=3)
    with pytest.raises(InputError, match="has job id 3"):
        Allocation(job_id=1, nodes=["a"], tasks_per_node=[1], array=task)


# --------------------------------------------------------------------------- torchrun

def test_torchrun_env_only_when_asked():
    alloc = allocate_local(3, 5, job_id=64)                 # counts 2, 2, 1
    plain = task_environments(alloc)
    assert not [k for e in plain for k in e
                if k.startswith(("TORCHELASTIC_", "GROUP_", "ROLE_"))]
    envs = task_environments(alloc, torchrun=True)
    assert col(envs, "GROUP_RANK") == col(envs, "SLURM_NODEID") == ["0", "0", "1", "1", "2"]
    assert col(envs, "ROLE_RANK") == col(envs, "RANK")
    assert col(envs, "LOCAL_WORLD_SIZE") == ["2", "2", "2", "2", "1"]
    for e in envs:
        assert e["GROUP_WORLD_SIZE"] == "3" and e["ROLE_WORLD_SIZE"] == e["WORLD_SIZE"] == "5"
        assert e["ROLE_NAME"] == "default"
        assert e["TORCHELASTIC_RUN_ID"] == "64"
        assert (e["TORCHELASTIC_RESTART_COUNT"], e["TORCHELASTIC_MAX_RESTARTS"]) == ("0", "0")
        # torch.distributed.rendezvous: "True" would make rank 0 wait for an agent's store
        assert e["TORCHELASTIC_USE_AGENT_STORE"] == "False"
    # the torchrun variables never change the Slurm ones
    assert [{k: v for k, v in e.items() if k in p} for e, p in zip(envs, plain)] == plain


# --------------------------------------------------------------------------- --signal

@pytest.mark.parametrize("text,expected", [
    ("USR1", (signal.SIGUSR1, 60, False)),            # no @: 60 s
    ("usr2@90", (signal.SIGUSR2, 90, False)),
    ("SIGTERM@0", (signal.SIGTERM, 0, False)),
    ("B:USR1@30", (signal.SIGUSR1, 30, True)),
    ("b:10@65535", (10, 65535, True)),
    ("B12", (12, 60, True)),                          # get_signal_opts: the ':' is optional
    ("XCPU", (signal.SIGXCPU, 60, False)),
])
def test_parse_signal(text, expected):
    w = parse_signal(text)
    assert (w.signum, w.seconds, w.batch_only) == expected


@pytest.mark.parametrize("text,error,match", [
    ("", InputError, "unknown signal"),
    ("FOO", InputError, "unknown signal"),
    ("SEGV", InputError, "unknown signal"),           # not in Slurm's names (a number is)
    ("USR1@", InputError, "@SECS"),
    ("USR1@-1", InputError, "@SECS"),
    ("USR1@65536", InputError, "@SECS"),
    ("USR1@1.5", InputError, "@SECS"),
    ("0", InputError, "no signal number 0"),
    ("999", InputError, "no signal number"),
    ("BB:USR1", InputError, "expected"),
    ("R:USR1", UnsupportedError, "reservations"),
])
def test_parse_signal_errors(text, error, match):
    with pytest.raises(error, match=match):
        parse_signal(text)


def test_signal_needs_a_time_limit_and_kill_wait_is_checked():
    alloc = allocate_local(1, 1, job_id=1)
    with pytest.raises(InputError, match="needs a time limit"):
        run(["true"], alloc, warn=parse_signal("USR1"))
    with pytest.raises(InputError, match="kill wait"):
        run(["true"], alloc, kill_wait=-1)


class _PhasedClock:
    """``time`` for the launcher whose clock stands at 0 until every task is ready, then at
    ``middle`` (past the signal, before the limit) until every task logged the signal, then
    far past the limit: the order of events is fixed however busy the machine is."""

    def __init__(self, logs, middle):
        self.logs, self.middle, self.sleep = logs, middle, time.sleep

    def _all(self, word):
        return all(p.exists() and word in p.read_text().split() for p in self.logs)

    def monotonic(self) -> float:
        if not self._all("ready"):
            return 0.0
        return self.middle if not self._all("USR1") else 1e9


# each task logs 'ready' once its handlers are in, then the signals it gets, then sleeps;
# on SIGTERM it logs TERM and exits 0 (a job that checkpoints and stops)
_TRAP = ("import os, signal, sys, time\n"
         "log = os.path.join(sys.argv[1], os.environ['RANK'])\n"
         "def note(word):\n"
         "    with open(log, 'a') as f: f.write(word + '\\n')\n"
         "signal.signal(signal.SIGUSR1, lambda s, f: note('USR1'))\n"
         "def term(s, f):\n"
         "    note('TERM'); sys.exit(0)\n"
         "signal.signal(signal.SIGTERM, term)\n"
         "note('ready')\n"
         "for _ in range(600): time.sleep(0.1)\n")


def test_signal_before_the_limit_then_sigterm(tmp_path, monkeypatch, capsys):
    alloc = allocate_local(2, 3, job_id=5)
    logs = [tmp_path / str(r) for r in range(3)]
    # limit 100 s, USR1 at 100 - 30 = 70: the clock stands at 80 until every task has it
    monkeypatch.setattr(launch, "time", _PhasedClock(logs, middle=80.0))
    status = run([sys.executable, "-c", _TRAP, str(tmp_path)], alloc, timeout=100,
                 warn=parse_signal("USR1@30"), kill_wait=HANG_S)
    assert status == 124
    for log in logs:
        assert log.read_text().split() == ["ready", "USR1", "TERM"]
    err = capsys.readouterr().err
    assert "sent SIGUSR1 to 3 task(s), 30 s before the time limit" in err
    assert "time limit of 100 s reached; terminated 3 task(s)" in err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
def test_batch_flag_signals_only_the_task_process(tmp_path, monkeypatch):
    # The task starts a child that would log USR1 too; with B: only the task gets it.
    child = _TRAP.replace("os.environ['RANK']", "'child'")
    code = ("import subprocess, sys\n"
            "subprocess.Popen([sys.executable, '-c', sys.argv[2], sys.argv[1]])\n" + _TRAP)
    logs = [tmp_path / "0", tmp_path / "child"]
    clock = _PhasedClock(logs, middle=80.0)
    clock._all = lambda word, logs=logs: (all(p.exists() for p in logs) and
                                          word in logs[0].read_text().split()
                                          if word == "USR1" else
                                          all(p.exists() and word in p.read_text().split()
                                              for p in logs))
    monkeypatch.setattr(launch, "time", clock)
    status = run([sys.executable, "-c", code, str(tmp_path), child], allocate_local(1, 1, job_id=5),
                 timeout=100, warn=parse_signal("B:USR1@30"), kill_wait=HANG_S)
    assert status == 124
    assert logs[0].read_text().split() == ["ready", "USR1", "TERM"]
    assert logs[1].read_text().split() == ["ready", "TERM"]       # SIGTERM goes to the group


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
def test_sigkill_after_kill_wait_when_sigterm_is_ignored(tmp_path, monkeypatch):
    code = ("import os, signal, sys, time\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "p = os.path.join(sys.argv[1], os.environ['RANK'])\n"
            "open(p + '.tmp', 'w').write(str(os.getpid()))\n"
            "os.replace(p + '.tmp', p)\n"
            "time.sleep(600)\n")
    monkeypatch.setattr(launch, "time", _ClockStoppedUntil(lambda: os.path.exists(tmp_path / "0")))
    assert run([sys.executable, "-c", code, str(tmp_path)], allocate_local(1, 1, job_id=5),
               timeout=5, kill_wait=0.2) == 124
    pid = int((tmp_path / "0").read_text())
    hang = time.monotonic() + HANG_S
    while _pid_alive(pid) and time.monotonic() < hang:
        time.sleep(0.05)
    assert not _pid_alive(pid)


def test_cli_checkpoint_before_time_limit(tmp_path):
    # Real time, generous margins: USR1 is due 8 s after the start (limit 40 s, @32); each
    # task installs its handler first thing, checkpoints on USR1 and ends by itself with 0.
    code = ("import os, signal, sys, time\n"
            "def ckpt(s, f):\n"
            "    open(os.path.join(sys.argv[1], 'ckpt' + os.environ['RANK']), 'w').close()\n"
            "    sys.exit(0)\n"
            "signal.signal(signal.SIGUSR1, ckpt)\n"
            "time.sleep(600)\n")
    r = cli("run", "-n", "2", "--time", "0:40", "--signal", "USR1@32", "--",
            sys.executable, "-c", code, str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt0", "ckpt1"]
    assert "sent SIGUSR1 to 2 task(s), 32 s before the time limit" in r.stderr


def test_cli_time_limit_ends_tasks_with_124():
    r = cli("run", "-n", "2", "-t", "0:02", "--kill-wait", "1", "--", sys.executable, "-c",
            "import time; time.sleep(600)")
    assert r.returncode == 124
    assert "time limit of 2 s reached; terminated 2 task(s)" in r.stderr


@pytest.mark.parametrize("args,match", [
    (["run", "--signal", "USR1", "--", "true"], "needs a time limit"),
    (["run", "--signal", "R:USR1", "-t", "1", "--", "true"], "reservations"),
    (["run", "--signal", "NOPE", "-t", "1", "--", "true"], "unknown signal"),
    (["run", "-t", "0:00", "--", "true"], "longer than 0"),
    (["run", "-t", "1", "--timeout", "3", "--", "true"], "not allowed with"),
    (["run", "--array", "1-3", "--", "true"], "needs the element"),
    (["run", "--array", "1-3", "--array-task", "5", "--", "true"], "not in the array"),
    (["run", "-K", "2", "--", "true"], "must be <= 1"),
])
def test_cli_new_option_errors(args, match):
    r = cli(*args)
    assert r.returncode == 2, r.stderr
    assert match in r.stderr


def test_cli_kill_on_bad_exit_spellings(tmp_path):
    code = ("import os, sys, time\n"
            "r = int(os.environ['RANK'])\n"
            "if r == 0: sys.exit(4)\n"
            "time.sleep(0.3)\n"
            "open(os.path.join(sys.argv[1], 'done%d' % r), 'w').close()\n")
    r = cli("run", "-n", "2", "--kill-on-bad-exit=0", "--", sys.executable, "-c", code,
            str(tmp_path))
    assert r.returncode == 4 and [p.name for p in tmp_path.iterdir()] == ["done1"]


def test_cli_print_env_with_every_new_option():
    r = cli("run", "-N", "2", "--ntasks-per-node", "2", "-c", "4", "--job-id", "36",
            "--array", "1-3", "--array-task", "1", "--torchrun-env", "--print-env")
    assert r.returncode == 0, r.stderr
    lines = set(r.stdout.splitlines())
    for line in ("3: SLURM_NTASKS_PER_NODE=2", "3: SLURM_CPUS_PER_TASK=4",
                 "3: SLURM_JOB_ID=37", "3: SLURM_ARRAY_JOB_ID=36", "3: SLURM_ARRAY_TASK_ID=1",
                 "3: SLURM_ARRAY_TASK_COUNT=3", "3: SLURM_JOB_NUM_NODES=2", "3: GROUP_RANK=1",
                 "3: LOCAL_WORLD_SIZE=2", "3: ROLE_RANK=3", "3: TORCHELASTIC_RUN_ID=37",
                 "3: MASTER_PORT=10037"):
        assert line in lines, line


# --------------------------------------------------------------------------- PyTorch Lightning
# Lightning's cluster environments, lightning_fabric/plugins/environments/slurm.py and
# torchelastic.py (the same files as lightning/fabric/plugins/environments/ in the
# `lightning` package): SLURMEnvironment.detect() needs SLURM_NTASKS and a SLURM_JOB_NAME
# other than bash/interactive; it reads SLURM_NTASKS, SLURM_PROCID, SLURM_LOCALID,
# SLURM_NODEID, SLURM_NNODES, SLURM_NTASKS_PER_NODE, SLURM_JOB_ID, MASTER_ADDR (else
# SLURM_NODELIST) and MASTER_PORT (else from SLURM_JOB_ID), and refuses SLURM_NTASKS > 1
# without SLURM_NTASKS_PER_NODE. TorchElasticEnvironment (tried first by Fabric's
# connector) detects TORCHELASTIC_RUN_ID and reads WORLD_SIZE, RANK, LOCAL_RANK, GROUP_RANK.

def _as_task(monkeypatch, env):
    for key in [k for k in os.environ if k.startswith(("SLURM_", "TORCHELASTIC_"))]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)


def test_lightning_slurm_environment_reads_what_srun_would_set(monkeypatch):
    environments = pytest.importorskip("lightning_fabric.plugins.environments")
    alloc = allocate_local(3, ntasks_per_node=2, job_id=4321)
    for rank, env in enumerate(task_environments(alloc, master_addr="127.0.0.1")):
        _as_task(monkeypatch, env)
        assert environments.SLURMEnvironment.detect()
        assert not environments.TorchElasticEnvironment.detect()
        slurm = environments.SLURMEnvironment()
        assert (slurm.world_size(), slurm.global_rank(), slurm.local_rank(),
                slurm.node_rank()) == (6, rank, rank % 2, rank // 2)
        assert slurm.main_address == "127.0.0.1" and slurm.main_port == 14321
        assert slurm.job_id() == 4321
        slurm.validate_settings(num_devices=2, num_nodes=3)        # raises on a mismatch
        with pytest.raises(ValueError, match="ntasks-per-node=2"):
            slurm.validate_settings(num_devices=4, num_nodes=3)


def test_lightning_refuses_ntasks_without_ntasks_per_node_as_under_srun(monkeypatch):
    environments = pytest.importorskip("lightning_fabric.plugins.environments")
    _as_task(monkeypatch, task_environments(allocate_local(2, 4, job_id=1))[0])
    with pytest.raises(RuntimeError, match="--ntasks-per-node"):
        environments.SLURMEnvironment()


def test_lightning_sees_torchrun_with_torchrun_env(monkeypatch):
    environments = pytest.importorskip("lightning_fabric.plugins.environments")
    alloc = allocate_local(2, ntasks_per_node=2, job_id=77)
    for rank, env in enumerate(task_environments(alloc, torchrun=True)):
        _as_task(monkeypatch, env)
        assert environments.TorchElasticEnvironment.detect()
        elastic = environments.TorchElasticEnvironment()
        assert (elastic.world_size(), elastic.global_rank(), elastic.local_rank(),
                elastic.node_rank()) == (4, rank, rank % 2, rank // 2)
        elastic.validate_settings(num_devices=2, num_nodes=2)


# Every rank builds a Fabric (DDP on CPU, gloo), launches it (Lightning joins the process
# group through the cluster environment it detected) and all-reduces rank + 1.
_FABRIC = ("import json, os, sys\n"
           "os.environ.setdefault('GLOO_SOCKET_IFNAME', 'lo')\n"
           "import torch\n"
           "from lightning_fabric import Fabric\n"
           "fabric = Fabric(accelerator='cpu', devices=2, num_nodes=2, strategy='ddp')\n"
           "env = type(fabric._connector.cluster_environment).__name__\n"
           "fabric.launch()\n"
           "total = fabric.all_reduce(torch.tensor([fabric.global_rank + 1.0]), "
           "reduce_op='sum').item()\n"
           "rec = dict(env=env, rank=fabric.global_rank, local=fabric.local_rank, "
           "node=fabric.node_rank, world=fabric.world_size, sum=total)\n"
           "open(os.path.join(sys.argv[1], str(fabric.global_rank)), 'w').write(json.dumps(rec))\n"
           "fabric.barrier()\n")


def test_lightning_fabric_ddp_through_cli(tmp_path):
    # (with --torchrun-env Lightning picks TorchElasticEnvironment instead; the variables
    # it reads are checked above, without starting four more torch processes)
    pytest.importorskip("lightning_fabric")
    args = ["run", "-N", "2", "--ntasks-per-node", "2", "--job-id", str(_free_job_id()),
            "--timeout", str(HANG_S)]
    r = cli(*args, "--", sys.executable, "-c", _FABRIC, str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    recs = [json.loads((tmp_path / str(rank)).read_text()) for rank in range(4)]
    assert [(x["env"], x["rank"], x["local"], x["node"], x["world"], x["sum"]) for x in recs] == [
        ("SLURMEnvironment", rank, rank % 2, rank // 2, 4, 10.0) for rank in range(4)]


def test_torch_rank_crash_ends_the_ranks_blocked_in_a_collective(tmp_path):
    # Rank 1 dies once the group is formed; ranks 0, 2, 3 wait in all_reduce (gloo's
    # timeout is 600 s): the launcher ends them and exits with rank 1's status. No output
    # file: rank 0 never gets past the all-reduce.
    pytest.importorskip("torch")
    out = tmp_path / "sum.json"
    r = cli("run", "-N", "2", "-n", "4", "--job-id", str(_free_job_id()), "--timeout",
            str(HANG_S), "--", sys.executable, str(TESTS / "ddp_allreduce.py"), str(out),
            "--crash-rank", "1")
    assert r.returncode == 3, r.stdout + r.stderr
    # (gloo may also fail the waiting ranks by themselves, once they see rank 1 gone: the
    # status is still the highest, rank 1's)
    assert "task 1 (rank 1) exited with status 3" in r.stderr
    assert not out.exists()
