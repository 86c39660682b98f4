"""Launch environment: what every task of an allocation sees, and a local launcher.

For an :class:`Allocation` (job id, nodes in order, tasks per node, GPU indices
per node), :func:`task_environments` gives one environment per task, in rank
order, with the variables ``srun`` sets and the PyTorch ``env://`` conventions;
:func:`run` (and ``fastsched run``) starts the tasks as local processes with
those environments, like ``srun`` inside an allocation whose nodes are all this
machine.

Rules (Slurm's, where Slurm has one):

- **Tasks per node** (:func:`block_distribution`): Slurm's default block
  distribution. Slurm first counts tasks per node as if dealing them out
  round-robin (so with ``-N 3 -n 7`` the counts are ``3,2,2``: every node gets
  ``n // N`` and the first ``n % N`` nodes one more), then numbers them in
  blocks: node 0 gets ranks 0-2, node 1 ranks 3-4, node 2 ranks 5-6. With
  ``--ntasks-per-node K`` a node gets at most ``K`` tasks (without ``-n``,
  exactly ``K`` on every node). Every node gets at least one task, so ``-n``
  smaller than ``-N`` is an error here (``srun`` instead warns and lowers the
  node count).
- ``SLURM_PROCID`` = ``RANK`` is the global rank, ``SLURM_LOCALID`` =
  ``LOCAL_RANK`` the rank within the node, ``SLURM_NODEID`` the node's index in
  the allocation; ``SLURM_NTASKS`` = ``WORLD_SIZE``; ``LOCAL_WORLD_SIZE`` is the
  task count of the task's own node.
- ``SLURM_JOB_NODELIST`` is the compressed hostlist
  (:func:`fastsched.io.hostlist.compress`); ``SLURM_TASKS_PER_NODE`` the counts in
  node order with runs of equal counts written ``count(xrepeat)``, e.g.
  ``2(x3),1`` (:func:`compress_counts`).
- GPUs: ``SLURM_JOB_GPUS`` and ``SLURM_STEP_GPUS`` are the node's allocated GPU
  indices, comma-separated (the launched tasks are the job's one step, so the
  two agree); ``SLURM_GPUS_ON_NODE`` their count. ``CUDA_VISIBLE_DEVICES``:
  without ``--gpus-per-task`` every task sees all of its node's GPUs; with
  ``--gpus-per-task G`` (which in Slurm implies ``--gpu-bind=per_task:G``) the
  task with local id ``L`` sees the node's GPUs at positions ``L*G .. L*G+G-1``.
  The values are *relative* indices (positions in the node's list, from 0), as
  under Slurm with ``ConstrainDevices=yes`` where a job's cgroup shows only its
  own GPUs, numbered from 0; ``Allocation(constrain_devices=False)`` gives the
  global indices instead (Slurm without device cgroups). A node without GPUs
  sets none of these variables.
- ``MASTER_ADDR`` is the first node's name (:func:`run` uses ``127.0.0.1`` for
  a local run: every node name stands for this machine). ``MASTER_PORT`` is
  ``10000 + job_id % 20000`` (:func:`master_port`): deterministic, so every task
  and every re-run agrees without talking, unprivileged, and below Linux's
  ephemeral range (32768-60999), so it does not collide with outgoing
  connections' ports. ``Allocation(master_port=P)`` overrides it.

:func:`run` semantics: each task is a child process in its own process group
with ``os.environ`` (less inherited ``SLURM_*`` variables) + its task
environment + ``env``. Task 0 inherits stdin, the others read ``/dev/null``
(like ``srun --input=0``). If a task fails (non-zero exit or a signal) the
others are terminated, like ``srun --kill-on-bad-exit=1`` (srun's default is
0; pass ``kill_on_bad_exit=False`` for that). The return value is the highest
exit status among tasks that ended by themselves (a signal ``s`` counts as
``128 + s``), as srun reports; tasks this launcher terminated do not count, so
a single failing task's status is what you get. On timeout every task is
terminated and 124 is returned; on KeyboardInterrupt every task is terminated
and the interrupt re-raised: no task outlives :func:`run`.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..model.validation import MAX_LOCAL_TASKS
from ..model.errors import InputError
from ..io.hostlist import compress

__all__ = ["Allocation", "task_environments", "allocate_local", "run", "master_port",
           "block_distribution", "compress_counts", "expand_counts",
           "LOCAL_ADDR", "MASTER_PORT_BASE", "MASTER_PORT_SPAN", "TIMEOUT_STATUS"]

#: node names of a local run resolve to this address (MASTER_ADDR of :func:`run`)
LOCAL_ADDR = "127.0.0.1"
#: MASTER_PORT = MASTER_PORT_BASE + job_id % MASTER_PORT_SPAN, i.e. 10000..29999
MASTER_PORT_BASE = 10000
MASTER_PORT_SPAN = 20000
#: exit status of :func:`run` when its timeout expires (as coreutils ``timeout``)
TIMEOUT_STATUS = 124
#: seconds between SIGTERM and SIGKILL when tasks are terminated
KILL_GRACE = 3.0


# ----------------------------------------------------------------------------- allocation

@dataclass(frozen=True)
class Allocation:
    """Nodes, tasks and GPUs of one job, as the launcher sees them.

    ``nodes`` are host names in allocation order (node ids 0, 1, ...),
    ``tasks_per_node[i]`` the task count of node ``i`` (ranks are numbered in
    blocks, node by node), ``gpus[i]`` the GPU indices allocated on node ``i``
    (empty for none; default: no GPUs anywhere). With ``gpus_per_task`` each
    task is bound to its own ``gpus_per_task`` GPUs of its node.
    """

    job_id: int
    nodes: tuple[str, ...]
    tasks_per_node: tuple[int, ...]
    gpus: tuple[tuple[int, ...], ...] = ()
    gpus_per_task: int | None = None
    constrain_devices: bool = True
    master_port: int | None = None

    def __post_init__(self):
        nodes = tuple(self.nodes) if not isinstance(self.nodes, str) else (self.nodes,)
        object.__setattr__(self, "nodes", nodes)
        object.__setattr__(self, "tasks_per_node", tuple(self.tasks_per_node))
        gpus = tuple(tuple(g) for g in self.gpus) if self.gpus else tuple(() for _ in nodes)
        object.__setattr__(self, "gpus", gpus)
        _check_int(self.job_id, "job id", minimum=0)
        if not nodes:
            raise InputError("an allocation needs at least one node")
        compress(nodes)                          # checks every name
        if len(set(nodes)) != len(nodes):
            dup = next(n for n in nodes if nodes.count(n) > 1)
            raise InputError(f"node {dup!r} appears twice in the allocation")
        if len(self.tasks_per_node) != len(nodes):
            raise InputError(f"{len(self.tasks_per_node)} task counts for {len(nodes)} nodes")
        for name, count in zip(nodes, self.tasks_per_node):
            _check_int(count, f"task count of node {name}", minimum=1)
        if len(gpus) != len(nodes):
            raise InputError(f"{len(gpus)} GPU lists for {len(nodes)} nodes")
        for name, node_gpus in zip(nodes, gpus):
            for g in node_gpus:
                _check_int(g, f"GPU index on node {name}", minimum=0)
            if len(set(node_gpus)) != len(node_gpus):
                raise InputError(f"node {name} lists a GPU twice: {list(node_gpus)}")
        if self.gpus_per_task is not None:
            _check_int(self.gpus_per_task, "gpus per task", minimum=1)
            for name, count, node_gpus in zip(nodes, self.tasks_per_node, gpus):
                need = count * self.gpus_per_task
                if need > len(node_gpus):
                    raise InputError(
                        f"node {name}: {count} task(s) x {self.gpus_per_task} GPU(s) per task "
                        f"need {need} GPUs, the node has {len(node_gpus)} allocated")
        if self.master_port is not None:
            _check_int(self.master_port, "master port", minimum=1)
            if self.master_port > 65535:
                raise InputError(f"master port must be <= 65535, got {self.master_port}")

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @property
    def num_tasks(self) -> int:
        return sum(self.tasks_per_node)

    @property
    def nodelist(self) -> str:
        """``SLURM_JOB_NODELIST``: the compressed hostlist."""
        return compress(self.nodes)

    def port(self) -> int:
        """``MASTER_PORT``: the override, else :func:`master_port` of the job id."""
        return self.master_port if self.master_port is not None else master_port(self.job_id)


def _check_int(value, what: str, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{what} must be an integer, got {value!r}")
    if value < minimum:
        raise InputError(f"{what} must be >= {minimum}, got {value}")


def master_port(job_id: int) -> int:
    """``MASTER_PORT`` for a job: ``10000 + job_id % 20000`` (10000..29999)."""
    _check_int(job_id, "job id", minimum=0)
    return MASTER_PORT_BASE + job_id % MASTER_PORT_SPAN


def block_distribution(num_nodes: int, num_tasks: int | None = None,
                       ntasks_per_node: int | None = None) -> list[int]:
    """Tasks per node under Slurm's default block distribution (see the module doc).

    ``num_tasks`` defaults to ``num_nodes * ntasks_per_node``, or one task per
    node. Counts are dealt round-robin (earlier nodes get the extra tasks),
    never more than ``ntasks_per_node`` on a node, at least one on every node.
    """
    _check_int(num_nodes, "number of nodes (-N)", minimum=1)
    if ntasks_per_node is not None:
        _check_int(ntasks_per_node, "tasks per node (--ntasks-per-node)", minimum=1)
    if num_tasks is None:
        num_tasks = num_nodes * (ntasks_per_node or 1)
    _check_int(num_tasks, "number of tasks (-n)", minimum=1)
    if max(num_tasks, num_nodes) > MAX_LOCAL_TASKS:
        raise InputError(f"{max(num_tasks, num_nodes):,} local tasks: at most "
                         f"{MAX_LOCAL_TASKS:,} processes can be started on this machine")
    if num_tasks < num_nodes:
        raise InputError(f"cannot run {num_tasks} task(s) on {num_nodes} nodes: every node "
                         f"needs at least one task (ask for -N {num_tasks} or -n {num_nodes})")
    if ntasks_per_node is not None and num_tasks > num_nodes * ntasks_per_node:
        raise InputError(f"{num_tasks} tasks do not fit on {num_nodes} node(s) with at most "
                         f"{ntasks_per_node} per node (--ntasks-per-node)")
    base, extra = divmod(num_tasks, num_nodes)
    return [base + (1 if i < extra else 0) for i in range(num_nodes)]


_COUNT = re.compile(r"([0-9]+)(?:\(x([0-9]+)\))?")


def compress_counts(counts: Sequence[int]) -> str:
    """Slurm's per-node count format: ``[2, 2, 2, 1]`` -> ``"2(x3),1"``."""
    parts: list[str] = []
    i = 0
    while i < len(counts):
        j = i
        while j + 1 < len(counts) and counts[j + 1] == counts[i]:
            j += 1
        run_len = j - i + 1
        parts.append(f"{counts[i]}(x{run_len})" if run_len > 1 else f"{counts[i]}")
        i = j + 1
    return ",".join(parts)


def expand_counts(text: str) -> list[int]:
    """Inverse of :func:`compress_counts`: ``"2(x3),1"`` -> ``[2, 2, 2, 1]``."""
    out: list[int] = []
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"empty per-node count list {text!r}")
    for part in text.split(","):
        m = _COUNT.fullmatch(part.strip())
        if m is None or (m.group(2) or "1").startswith("0"):
            raise InputError(f"bad per-node count {part!r} in {text!r}: expected N or N(xK)")
        out.extend([int(m.group(1))] * int(m.group(2) or 1))
    return out


def allocate_local(num_nodes: int, num_tasks: int | None = None, *,
                   ntasks_per_node: int | None = None, gpus_per_node: int | None = None,
                   gpus_per_task: int | None = None, job_id: int | None = None,
                   node_prefix: str = "node", master_port: int | None = None) -> Allocation:
    """An allocation for a local run: nodes ``node[001-00N]``, GPUs ``0..G-1`` on each.

    Tasks are laid out by :func:`block_distribution`. With ``gpus_per_task`` and
    no ``gpus_per_node``, each node gets ``gpus_per_task`` GPUs per task it runs
    (as Slurm allocates for ``--gpus-per-task``). ``job_id`` defaults to one
    derived from this process id (``1 + pid % 1000000``), so concurrent local
    runs get different MASTER_PORTs; pass it for a reproducible environment.
    """
    counts = block_distribution(num_nodes, num_tasks, ntasks_per_node)
    if gpus_per_node is not None:
        _check_int(gpus_per_node, "gpus per node (--gpus-per-node)", minimum=0)
    if gpus_per_task is not None:
        _check_int(gpus_per_task, "gpus per task (--gpus-per-task)", minimum=1)
    if gpus_per_node is None:
        per_node = [c * gpus_per_task if gpus_per_task else 0 for c in counts]
    else:
        per_node = [gpus_per_node] * num_nodes
    if job_id is None:
        job_id = 1 + os.getpid() % 1_000_000
    if not isinstance(node_prefix, str) or not node_prefix or node_prefix[-1:].isdigit():
        raise InputError(f"node prefix must be a non-empty name not ending in a digit, "
                         f"got {node_prefix!r}")
    width = max(3, len(str(num_nodes)))
    nodes = [f"{node_prefix}{i:0{width}d}" for i in range(1, num_nodes + 1)]
    return Allocation(job_id=job_id, nodes=tuple(nodes), tasks_per_node=tuple(counts),
                      gpus=tuple(tuple(range(g)) for g in per_node),
                      gpus_per_task=gpus_per_task, master_port=master_port)


# ----------------------------------------------------------------------------- environments

def task_environments(alloc: Allocation, *, master_addr: str | None = None) -> list[dict[str, str]]:
    """One environment (str -> str) per task of ``alloc``, in rank order.

    Only the launch variables: :func:`run` adds them to ``os.environ``.
    ``master_addr`` defaults to the first node's name.
    """
    nodelist = alloc.nodelist
    tasks_per_node = compress_counts(alloc.tasks_per_node)
    ntasks = str(alloc.num_tasks)
    nnodes = str(alloc.num_nodes)
    common = {
        "SLURM_JOB_ID": str(alloc.job_id),
        "SLURM_JOBID": str(alloc.job_id),
        "SLURM_NTASKS": ntasks,
        "SLURM_NPROCS": ntasks,
        "SLURM_STEP_NUM_TASKS": ntasks,
        "SLURM_JOB_NUM_NODES": nnodes,
        "SLURM_NNODES": nnodes,
        "SLURM_STEP_NUM_NODES": nnodes,
        "SLURM_JOB_NODELIST": nodelist,
        "SLURM_NODELIST": nodelist,
        "SLURM_STEP_NODELIST": nodelist,
        "SLURM_TASKS_PER_NODE": tasks_per_node,
        "SLURM_STEP_TASKS_PER_NODE": tasks_per_node,
        "WORLD_SIZE": ntasks,
        "MASTER_ADDR": master_addr if master_addr is not None else alloc.nodes[0],
        "MASTER_PORT": str(alloc.port()),
    }
    if alloc.gpus_per_task is not None:
        common["SLURM_GPUS_PER_TASK"] = str(alloc.gpus_per_task)
    envs: list[dict[str, str]] = []
    rank = 0
    for node_id, (name, count, node_gpus) in enumerate(
            zip(alloc.nodes, alloc.tasks_per_node, alloc.gpus)):
        gtids = ",".join(str(r) for r in range(rank, rank + count))
        node_env = {
            "SLURMD_NODENAME": name,
            "SLURM_NODEID": str(node_id),
            "SLURM_GTIDS": gtids,
            "LOCAL_WORLD_SIZE": str(count),
        }
        if node_gpus:
            listed = ",".join(str(g) for g in node_gpus)
            node_env.update(SLURM_JOB_GPUS=listed, SLURM_STEP_GPUS=listed,
                            SLURM_GPUS_ON_NODE=str(len(node_gpus)))
        visible = (list(range(len(node_gpus))) if alloc.constrain_devices
                   else list(node_gpus))
        for local in range(count):
            env = dict(common)
            env.update(node_env)
            env.update(SLURM_PROCID=str(rank), SLURM_LOCALID=str(local),
                       RANK=str(rank), LOCAL_RANK=str(local))
            if node_gpus:
                if alloc.gpus_per_task:
                    g = alloc.gpus_per_task
                    mine = visible[local * g:(local + 1) * g]
                else:
                    mine = visible
                env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in mine)
            envs.append(env)
            rank += 1
    return envs


# ----------------------------------------------------------------------------- launcher

def _status(returncode: int) -> int:
    """A Popen return code as a shell exit status (signal s -> 128 + s)."""
    return 128 - returncode if returncode < 0 else returncode


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, sig)
        else:  # pragma: no cover - not POSIX
            proc.send_signal(sig)
    except (ProcessLookupError, PermissionError):
        pass


def _terminate(procs: Sequence[subprocess.Popen], grace: float = KILL_GRACE) -> set[int]:
    """SIGTERM every still-running task's process group, SIGKILL after ``grace`` s.

    Returns the indices of the tasks that were still running (terminated here).
    """
    running = {i for i, p in enumerate(procs) if p.poll() is None}
    for i in running:
        _signal_group(procs[i], signal.SIGTERM)
    deadline = time.monotonic() + grace
    for i in running:
        try:
            procs[i].wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for i in running:
        # the whole group, even if its leader is gone: a grandchild may ignore SIGTERM
        _signal_group(procs[i], signal.SIGKILL)
        procs[i].wait()
    return running


def _pump(stream, out, prefix: str, lock: threading.Lock) -> None:
    """Copy ``stream`` line by line to ``out`` with ``prefix`` (srun --label)."""
    try:
        for raw in iter(stream.readline, b""):
            line = raw.decode(errors="replace")
            if not line.endswith("\n"):
                line += "\n"
            with lock:
                out.write(prefix + line)
                out.flush()
    finally:
        stream.close()


def _task_env(base: Mapping[str, str], task: Mapping[str, str],
              extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in base.items() if not k.startswith("SLURM_")}
    env.update(task)
    if extra:
        env.update({str(k): str(v) for k, v in extra.items()})
    return env


def run(cmd: Sequence[str], alloc: Allocation, *, env: Mapping[str, str] | None = None,
        timeout: float | None = None, label: bool = False, local: bool = True,
        kill_on_bad_exit: bool = True, cwd: str | os.PathLike | None = None) -> int:
    """Start every task of ``alloc`` as a local process running ``cmd``; wait; exit status.

    ``local`` makes MASTER_ADDR ``127.0.0.1`` (node names stand for this
    machine); ``label`` prefixes each output line with the task's rank, as
    ``srun --label`` (``"0: ..."``, ranks right-aligned to the widest). See the
    module doc for the failure, timeout and interrupt rules.
    """
    if isinstance(cmd, str) or not cmd or not all(isinstance(c, (str, os.PathLike)) for c in cmd):
        raise InputError(f"command must be a non-empty list of strings, got {cmd!r}")
    if timeout is not None and not timeout > 0:
        raise InputError(f"timeout must be > 0 seconds, got {timeout!r}")
    envs = task_environments(alloc, master_addr=LOCAL_ADDR if local else None)
    width = len(str(len(envs) - 1))
    lock = threading.Lock()
    procs: list[subprocess.Popen] = []
    pumps: list[threading.Thread] = []
    base = dict(os.environ)
    try:
        for rank, task_env in enumerate(envs):
            pipe = subprocess.PIPE if label else None
            try:
                proc = subprocess.Popen(
                    [os.fspath(c) for c in cmd], env=_task_env(base, task_env, env), cwd=cwd,
                    stdin=None if rank == 0 else subprocess.DEVNULL, stdout=pipe, stderr=pipe,
                    start_new_session=True)
            except OSError as e:
                raise InputError(f"cannot start task {rank}: {cmd[0]}: "
                                 f"{e.strerror or e}") from None
            procs.append(proc)
            if label:
                prefix = f"{rank:>{width}}: "
                for stream, out in ((proc.stdout, sys.stdout), (proc.stderr, sys.stderr)):
                    t = threading.Thread(target=_pump, args=(stream, out, prefix, lock),
                                         daemon=True)
                    t.start()
                    pumps.append(t)
        status = _wait(procs, timeout=timeout, kill_on_bad_exit=kill_on_bad_exit)
    except BaseException:
        _terminate(procs)
        raise
    finally:
        for t in pumps:
            t.join(timeout=5)
    return status


def _wait(procs: list[subprocess.Popen], *, timeout: float | None,
          kill_on_bad_exit: bool) -> int:
    deadline = None if timeout is None else time.monotonic() + timeout
    statuses: dict[int, int] = {}
    delay = 0.005
    while len(statuses) < len(procs):
        for i, p in enumerate(procs):
            if i not in statuses and p.poll() is not None:
                statuses[i] = _status(p.returncode)
        if kill_on_bad_exit and any(s != 0 for s in statuses.values()):
            _report_failures(statuses)
            killed = _terminate(procs)
            for i, p in enumerate(procs):     # tasks that ended meanwhile by themselves
                if i not in statuses and i not in killed:
                    statuses[i] = _status(p.returncode)
            if killed:
                print(f"fastsched run: terminated {len(killed)} other task(s)", file=sys.stderr)
            return max(statuses.values())
        if len(statuses) == len(procs):
            _report_failures(statuses)
            break
        if deadline is not None and time.monotonic() >= deadline:
            killed = _terminate(procs)
            print(f"fastsched run: timed out after {timeout:g} s; terminated "
                  f"{len(killed)} task(s)", file=sys.stderr)
            return TIMEOUT_STATUS
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    return max(statuses.values(), default=0)


def _report_failures(statuses: dict[int, int]) -> None:
    """Name every task that failed by itself, as srun does (``task 3: exited with ...``)."""
    for rank in sorted(statuses):
        if statuses[rank] != 0:
            print(f"fastsched run: error: task {rank} (rank {rank}) exited with status "
                  f"{statuses[rank]}", file=sys.stderr)



