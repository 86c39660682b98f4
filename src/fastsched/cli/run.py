"""``fastsched run``: launch a command as the tasks of a local allocation (like srun)."""
from __future__ import annotations

import argparse
import signal
import threading

from ..io.times import parse_time
from ..model.errors import InputError
from ..tools.launch import (KILL_GRACE, LOCAL_ADDR, allocate_local, parse_signal, run,
                            task_environments)
from .argtypes import int_in, non_negative_int, positive_int


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _time_limit(text: str) -> float:
    """``-t/--time`` in Slurm's formats (MM, MM:SS, HH:MM:SS, D-HH[:MM[:SS]])."""
    try:
        seconds = parse_time(text)
    except InputError as e:
        raise argparse.ArgumentTypeError(e.reason) from None
    if seconds is None:
        return None
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be longer than 0 s, got {text!r}")
    return float(seconds)


def _signal_spec(text: str):
    try:
        return parse_signal(text)
    except InputError as e:
        raise argparse.ArgumentTypeError(e.reason) from None


def _kill_wait(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"must be 0..3600 seconds, got {text}")
    return value


def configure(r: argparse.ArgumentParser, command: str) -> None:
    r.description = ("Launch CMD as the tasks of an allocation of NODES nodes, all on this machine, "
                     "each with the environment srun gives a task (SLURM_PROCID, SLURM_LOCALID, "
                     "SLURM_NODEID, SLURM_TASKS_PER_NODE, ...) and the PyTorch variables (RANK, "
                     "LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT ="
                     " 10000 + job id % 20000). Tasks are laid out block-wise as Slurm's default "
                     "distribution. If a task fails the others are terminated; the exit status is "
                     "the failing task's. --signal and --time give checkpoint-before-timeout; "
                     "--torchrun-env adds torchrun's worker variables. docs/launcher.md lists "
                     "every variable.")
    r.add_argument("-N", "--nodes", type=positive_int, default=1, help="number of nodes (default 1)")
    r.add_argument("-n", "--ntasks", type=positive_int,
                   help="number of tasks (default: one per node, or NODES x --ntasks-per-node)")
    r.add_argument("--ntasks-per-node", type=positive_int, metavar="K",
                   help="tasks per node (a maximum when -n is given too)")
    r.add_argument("--gpus-per-node", type=non_negative_int, metavar="G",
                   help="GPUs allocated on each node (indices 0..G-1)")
    r.add_argument("--gpus-per-task", type=positive_int, metavar="G",
                   help="bind G GPUs to each task (its own CUDA_VISIBLE_DEVICES)")
    r.add_argument("-c", "--cpus-per-task", type=positive_int, metavar="NCPUS",
                   help="sets SLURM_CPUS_PER_TASK (nothing is bound: all tasks share this machine)")
    r.add_argument("--job-id", type=non_negative_int, metavar="ID",
                   help="SLURM_JOB_ID (default: derived from this process id); fixes MASTER_PORT."
                   " With --array-task: the array's job id (SLURM_ARRAY_JOB_ID)")
    r.add_argument("--array-task", type=non_negative_int, metavar="N",
                   help="run as element N of a job array (SLURM_ARRAY_TASK_ID=N; "
                   "SLURM_JOB_ID numbered as Slurm's job_array docs)")
    r.add_argument("-a", "--array", metavar="INDEXES",
                   help="the whole array, as sbatch --array (e.g. 0-15:4,20%%2): gives "
                   "SLURM_ARRAY_TASK_COUNT/_MIN/_MAX/_STEP (default: only --array-task)")
    r.add_argument("--master-port", type=int_in(1, 65535), metavar="PORT",
                   help="override MASTER_PORT (default 10000 + job id %% 20000)")
    r.add_argument("--node-prefix", default="node", metavar="NAME",
                   help="node names are NAME001, NAME002, ... (default 'node')")
    r.add_argument("-l", "--label", action="store_true",
                   help="prefix every output line with the task rank, as srun --label")
    limit = r.add_mutually_exclusive_group()
    limit.add_argument("-t", "--time", type=_time_limit, metavar="TIME", dest="timeout",
                       help="time limit as Slurm writes it (MM, MM:SS, HH:MM:SS, D-HH:MM:SS): "
                       "at the limit every task gets SIGTERM, then SIGKILL after --kill-wait "
                       "(exit status 124)")
    limit.add_argument("--timeout", type=_seconds, metavar="SECONDS",
                       help="the time limit in seconds (as --time)")
    r.add_argument("--signal", type=_signal_spec, metavar="[B:]SIG[@SECS]", dest="warn",
                   help="send SIG (number or name, e.g. USR1) to every task SECS (default 60) "
                   "seconds before the --time limit, e.g. to checkpoint; B: sends it to each "
                   "task's own process only, not to its children")
    r.add_argument("--kill-wait", type=_kill_wait, metavar="SECONDS", default=KILL_GRACE,
                   help=f"seconds between SIGTERM and SIGKILL (default {KILL_GRACE:g}, "
                   "slurm.conf's KillWait)")
    r.add_argument("-K", "--kill-on-bad-exit", type=int_in(0, 1), nargs="?", const=1,
                   default=1, metavar="0|1",
                   help="1 (the default here; srun's is 0): when a task fails, terminate the "
                   "others; 0: let them run on")
    r.add_argument("--no-kill-on-bad-exit", dest="kill_on_bad_exit", action="store_const",
                   const=0, help="same as --kill-on-bad-exit=0")
    r.add_argument("--torchrun-env", action="store_true",
                   help="also set what torchrun gives each worker: GROUP_RANK, "
                   "GROUP_WORLD_SIZE, ROLE_NAME, ROLE_RANK, ROLE_WORLD_SIZE, TORCHELASTIC_RUN_ID,"
                   " TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS, "
                   "TORCHELASTIC_USE_AGENT_STORE (frameworks then see a torchrun launch)")
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
                           master_port=args.master_port, cpus_per_task=args.cpus_per_task,
                           array_task_id=args.array_task, array_indexes=args.array)
    if args.warn is not None and args.timeout is None:
        raise InputError("--signal needs a time limit (--time): it is sent SECS before it")
    if args.print_env:
        envs = task_environments(alloc, master_addr=LOCAL_ADDR, torchrun=args.torchrun_env)
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
                   kill_on_bad_exit=bool(args.kill_on_bad_exit), warn=args.warn,
                   kill_wait=args.kill_wait, torchrun=args.torchrun_env)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _exit_on_sigterm(signum, frame):
    raise SystemExit(128 + signum)
