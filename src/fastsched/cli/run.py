"""``fastsched run``: launch a command as the tasks of a local allocation (like srun)."""
from __future__ import annotations

import argparse
import signal
import threading

from ..model.errors import InputError
from ..tools.launch import LOCAL_ADDR, allocate_local, run, task_environments
from .argtypes import int_in, non_negative_int, positive_int


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def configure(r: argparse.ArgumentParser, command: str) -> None:
    r.description = ("Launch CMD as the tasks of an allocation of NODES nodes, all on this machine, "
                     "each with the environment srun gives a task (SLURM_PROCID, SLURM_LOCALID, "
                     "SLURM_NODEID, SLURM_TASKS_PER_NODE, ...) and the PyTorch variables (RANK, "
                     "LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT ="
                     " 10000 + job id % 20000). Tasks are laid out block-wise as Slurm's default "
                     "distribution. If a task fails the others are terminated; the exit status is "
                     "the failing task's.")
    r.add_argument("-N", "--nodes", type=positive_int, default=1, help="number of nodes (default 1)")
    r.add_argument("-n", "--ntasks", type=positive_int,
                   help="number of tasks (default: one per node, or NODES x --ntasks-per-node)")
    r.add_argument("--ntasks-per-node", type=positive_int, metavar="K",
                   help="tasks per node (a maximum when -n is given too)")
    r.add_argument("--gpus-per-node", type=non_negative_int, metavar="G",
                   help="GPUs allocated on each node (indices 0..G-1)")
    r.add_argument("--gpus-per-task", type=positive_int, metavar="G",
                   help="bind G GPUs to each task (its own CUDA_VISIBLE_DEVICES)")
    r.add_argument("--job-id", type=non_negative_int, metavar="ID",
                   help="SLURM_JOB_ID (default: derived from this process id); fixes MASTER_PORT")
    r.add_argument("--master-port", type=int_in(1, 65535), metavar="PORT",
                   help="override MASTER_PORT (default 10000 + job id %% 20000)")
    r.add_argument("--node-prefix", default="node", metavar="NAME",
                   help="node names are NAME001, NAME002, ... (default 'node')")
    r.add_argument("-l", "--label", action="store_true",
                   help="prefix every output line with the task rank, as srun --label")
    r.add_argument("--timeout", type=_seconds, metavar="SECONDS",
                   help="terminate every task after this long (exit status 124)")
    r.add_argument("--no-kill-on-bad-exit", dest="kill_on_bad_exit", action="store_false",
                   help="let the other tasks run on when one fails")
    r.add_argument("--print-env", action="store_true",
                   help="print each task's launch environment ('RANK: NAME=VALUE') "
                   "instead of running")
    r.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ...",
                   help="the command every task runs")
    r.set_defaults(run=_cmd_run)


def _cmd_run(args) -> int:
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    alloc = allocate_local(args.nodes, args.ntasks, ntasks_per_node=args.ntasks_per_node,
                           gpus_per_node=args.gpus_per_node, gpus_per_task=args.gpus_per_task,
                           job_id=args.job_id, node_prefix=args.node_prefix,
                           master_port=args.master_port)
    if args.print_env:
        envs = task_environments(alloc, master_addr=LOCAL_ADDR)
        width = len(str(len(envs) - 1))
        for rank, env in enumerate(envs):
            for key in sorted(env):
                print(f"{rank:>{width}}: {key}={env[key]}")
        return 0
    if not cmd:
        raise InputError("no command to run (usage: fastsched run -N NODES -n TASKS -- CMD ...)")
    # SIGTERM to the launcher (a batch system's kill, a CI timeout) ends the tasks too.
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        return run(cmd, alloc, timeout=args.timeout, label=args.label,
                   kill_on_bad_exit=args.kill_on_bad_exit)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _exit_on_sigterm(signum, frame):
    raise SystemExit(128 + signum)
