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
- Set only when asked for, as srun/sbatch do (``env.c`` ``setup_env``; sbatch(1)
  OUTPUT ENVIRONMENT VARIABLES): ``SLURM_NTASKS_PER_NODE`` with
  ``--ntasks-per-node``, ``SLURM_CPUS_PER_TASK`` with ``-c``. PyTorch
  Lightning's ``SLURMEnvironment`` refuses ``SLURM_NTASKS`` > 1 without
  ``SLURM_NTASKS_PER_NODE`` (``_validate_srun_variables``), as it does under srun.
- Job arrays (:class:`ArrayTask`): ``SLURM_ARRAY_JOB_ID``, ``SLURM_ARRAY_TASK_ID``,
  ``_COUNT``, ``_MIN``, ``_MAX`` and ``_STEP`` (the number after the first ``:``
  of the ``--array`` text, else 1, as ``_create_job_array`` in job_mgr.c). The
  task's own ``SLURM_JOB_ID`` follows job_array.shtml's numbering: the highest
  index keeps the array job id, the others get the next ids in index order.
- ``torchrun=True`` adds what torchrun's agent gives each worker
  (``LocalElasticAgent._start_workers``): ``GROUP_RANK`` (the node id),
  ``GROUP_WORLD_SIZE`` (the node count), ``ROLE_NAME=default``, ``ROLE_RANK`` =
  ``RANK``, ``ROLE_WORLD_SIZE`` = ``WORLD_SIZE`` (one role),
  ``TORCHELASTIC_RUN_ID`` = the job id, ``TORCHELASTIC_RESTART_COUNT=0``,
  ``TORCHELASTIC_MAX_RESTARTS=0`` and ``TORCHELASTIC_USE_AGENT_STORE=False``:
  no agent hosts a store, so rank 0 serves ``env://``'s TCP store itself
  (torch.distributed.rendezvous ``_torchelastic_use_agent_store``). Off by
  default: ``TORCHELASTIC_RUN_ID`` makes ``is_torchelastic_launched()`` true and
  Lightning then picks ``TorchElasticEnvironment`` over ``SLURMEnvironment``.

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

The timeout is the job's time limit (``--time``): with ``warn=`` a
:class:`WarnSignal` (``--signal=[B:]SIG[@SECS]``, parsed by
:func:`parse_signal` as Slurm's ``get_signal_opts``), SIG goes to every
still-running task ``SECS`` seconds before the limit (at once if the limit is
shorter), once; to each task's whole process group, or with ``B:`` to the task's
own process only (locally the task stands for sbatch's batch shell). At the
limit every task gets SIGTERM, then SIGKILL ``kill_wait`` seconds later
(slurm.conf's KillWait).
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
from ..model.errors import InputError, UnsupportedError
from ..io.hostlist import compress
from ..io.sbatch import parse_array

__all__ = ["Allocation", "ArrayTask", "WarnSignal", "task_environments", "allocate_local",
           "run", "master_port", "block_distribution", "compress_counts", "expand_counts",
           "array_task", "parse_signal", "LOCAL_ADDR", "MASTER_PORT_BASE",
           "MASTER_PORT_SPAN", "TIMEOUT_STATUS"]

#: node names of a local run resolve to this address (MASTER_ADDR of :func:`run`)
LOCAL_ADDR = "127.0.0.1"
#: MASTER_PORT = MASTER_PORT_BASE + job_id % MASTER_PORT_SPAN, i.e. 10000..29999
MASTER_PORT_BASE = 10000
MASTER_PORT_SPAN = 20000
#: exit status of :func:`run` when its timeout expires (as coreutils ``timeout``)
TIMEOUT_STATUS = 124
#: seconds between SIGTERM and SIGKILL when tasks are terminated (default kill_wait)
KILL_GRACE = 3.0
#: seconds before the time limit that --signal's SIG is sent when no @SECS is given
WARN_DEFAULT_S = 60


# ----------------------------------------------------------------------------- allocation

@dataclass(frozen=True)
class ArrayTask:
    """One element of a job array: what ``SLURM_ARRAY_*`` says (see the module doc).

    ``job_id`` is the element's own ``SLURM_JOB_ID``; build one with :func:`array_task`.
    """

    array_job_id: int
    task_id: int
    job_id: int
    count: int
    min: int
    max: int
    step: int = 1

    def __post_init__(self):
        for name in ("array_job_id", "task_id", "job_id", "min", "max"):
            _check_int(getattr(self, name), f"array {name.replace('_', ' ')}", minimum=0)
        _check_int(self.count, "array task count", minimum=1)
        _check_int(self.step, "array step", minimum=1)
        if not self.min <= self.task_id <= self.max:
            raise InputError(f"array task {self.task_id} is outside {self.min}..{self.max}")

    def environment(self) -> dict[str, str]:
        return {"SLURM_ARRAY_JOB_ID": str(self.array_job_id),
                "SLURM_ARRAY_TASK_ID": str(self.task_id),
                "SLURM_ARRAY_TASK_COUNT": str(self.count),
                "SLURM_ARRAY_TASK_MIN": str(self.min),
                "SLURM_ARRAY_TASK_MAX": str(self.max),
                "SLURM_ARRAY_TASK_STEP": str(self.step)}


def array_task(task_id: int, array_job_id: int, indexes: str | None = None) -> ArrayTask:
    """Element ``task_id`` of the array ``indexes`` (sbatch ``--array`` text, e.g.
    ``0-15:4,20%2``; default: the array holds only ``task_id``) of job ``array_job_id``."""
    _check_int(task_id, "array task id (--array-task)", minimum=0)
    _check_int(array_job_id, "array job id", minimum=0)
    if indexes is None:
        ids, step = [task_id], 1
    else:
        if not isinstance(indexes, str):
            raise InputError(f"array indexes must be a string like '0-15:4', got {indexes!r}")
        ids, _ = parse_array(indexes)       # the %-throttle means nothing for one element
        after = indexes.partition(":")[2]
        digits = re.match(r"[0-9]*", after).group()
        step = int(digits) if digits else 1
    if task_id not in ids:
        raise InputError(f"array task {task_id} is not in the array {indexes!r}")
    # job_array.shtml: the highest index keeps the array's id, the rest follow in order
    job_id = array_job_id if task_id == ids[-1] else array_job_id + 1 + ids.index(task_id)
    return ArrayTask(array_job_id=array_job_id, task_id=task_id, job_id=job_id,
                     count=len(ids), min=ids[0], max=ids[-1], step=step)


@dataclass(frozen=True)
class Allocation:
    """Nodes, tasks and GPUs of one job, as the launcher sees them.

    ``nodes`` are host names in allocation order (node ids 0, 1, ...),
    ``tasks_per_node[i]`` the task count of node ``i`` (ranks are numbered in
    blocks, node by node), ``gpus[i]`` the GPU indices allocated on node ``i``
    (empty for none; default: no GPUs anywhere). With ``gpus_per_task`` each
    task is bound to its own ``gpus_per_task`` GPUs of its node.
    ``ntasks_per_node`` and ``cpus_per_task`` are the requested ``--ntasks-per-node``
    and ``-c`` (set as ``SLURM_NTASKS_PER_NODE``/``SLURM_CPUS_PER_TASK`` only when
    given); ``array`` makes the job an element of a job array (:class:`ArrayTask`,
    whose ``job_id`` must equal ``job_id``).
    """

    job_id: int
    nodes: tuple[str, ...]
    tasks_per_node: tuple[int, ...]
    gpus: tuple[tuple[int, ...], ...] = ()
    gpus_per_task: int | None = None
    constrain_devices: bool = True
    master_port: int | None = None
    ntasks_per_node: int | None = None
    cpus_per_task: int | None = None
    array: ArrayTask | None = None

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
        self._check_requests()

    def _check_requests(self) -> None:
        if self.ntasks_per_node is not None:
            _check_int(self.ntasks_per_node, "tasks per node (--ntasks-per-node)", minimum=1)
            if max(self.tasks_per_node) > self.ntasks_per_node:
                raise InputError(f"a node runs {max(self.tasks_per_node)} tasks, more than "
                                 f"--ntasks-per-node {self.ntasks_per_node}")
        if self.cpus_per_task is not None:
            _check_int(self.cpus_per_task, "cpus per task (-c)", minimum=1)
        if self.array is not None:
            if not isinstance(self.array, ArrayTask):
                raise InputError(f"array must be an ArrayTask, got {self.array!r}")
            if self.array.job_id != self.job_id:
                raise InputError(f"array task {self.array.task_id} has job id "
                                 f"{self.array.job_id}, the allocation {self.job_id}")

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
                   node_prefix: str = "node", master_port: int | None = None,
                   cpus_per_task: int | None = None, array_task_id: int | None = None,
                   array_indexes: str | None = None) -> Allocation:
    """An allocation for a local run: nodes ``node[001-00N]``, GPUs ``0..G-1`` on each.

    Tasks are laid out by :func:`block_distribution`. With ``gpus_per_task`` and
    no ``gpus_per_node``, each node gets ``gpus_per_task`` GPUs per task it runs
    (as Slurm allocates for ``--gpus-per-task``). ``job_id`` defaults to one
    derived from this process id (``1 + pid % 1000000``), so concurrent local
    runs get different MASTER_PORTs; pass it for a reproducible environment.
    With ``array_task_id`` the job is that element of the array ``array_indexes``
    (:func:`array_task`) and ``job_id`` is the array's job id.
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
    array = None
    if array_task_id is not None:
        array = array_task(array_task_id, job_id, array_indexes)
        job_id = array.job_id
    elif array_indexes is not None:
        raise InputError("an array (--array) needs the element to run (--array-task)")
    width = max(3, len(str(num_nodes)))
    nodes = [f"{node_prefix}{i:0{width}d}" for i in range(1, num_nodes + 1)]
    return Allocation(job_id=job_id, nodes=tuple(nodes), tasks_per_node=tuple(counts),
                      gpus=tuple(tuple(range(g)) for g in per_node),
                      gpus_per_task=gpus_per_task, master_port=master_port,
                      ntasks_per_node=ntasks_per_node, cpus_per_task=cpus_per_task,
                      array=array)


# ----------------------------------------------------------------------------- environments

def task_environments(alloc: Allocation, *, master_addr: str | None = None,
                      torchrun: bool = False) -> list[dict[str, str]]:
    """One environment (str -> str) per task of ``alloc``, in rank order.

    Only the launch variables: :func:`run` adds them to ``os.environ``.
    ``master_addr`` defaults to the first node's name; ``torchrun`` adds the
    variables torchrun gives its workers (module doc).
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
    common.update(_requested(alloc))
    if torchrun:
        common.update(_torchrun_common(alloc))
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
            if torchrun:
                env.update(GROUP_RANK=str(node_id), ROLE_RANK=str(rank))
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


def _requested(alloc: Allocation) -> dict[str, str]:
    """Variables Slurm sets only when the option behind them was given."""
    env: dict[str, str] = {}
    if alloc.gpus_per_task is not None:
        env["SLURM_GPUS_PER_TASK"] = str(alloc.gpus_per_task)
    if alloc.ntasks_per_node is not None:
        env["SLURM_NTASKS_PER_NODE"] = str(alloc.ntasks_per_node)
    if alloc.cpus_per_task is not None:
        env["SLURM_CPUS_PER_TASK"] = str(alloc.cpus_per_task)
    if alloc.array is not None:
        env.update(alloc.array.environment())
    return env


def _torchrun_common(alloc: Allocation) -> dict[str, str]:
    """torchrun's per-worker variables that every task shares (module doc)."""
    return {"GROUP_WORLD_SIZE": str(alloc.num_nodes),
            "ROLE_NAME": "default",
            "ROLE_WORLD_SIZE": str(alloc.num_tasks),
            "TORCHELASTIC_RUN_ID": str(alloc.job_id),
            "TORCHELASTIC_RESTART_COUNT": "0",
            "TORCHELASTIC_MAX_RESTARTS": "0",
            "TORCHELASTIC_USE_AGENT_STORE": "False"}


# ----------------------------------------------------------------------------- signals

#: Slurm's signal names (proc_args.c ``signals_mapping``), without the SIG prefix
SIGNAL_NAMES = ("HUP", "INT", "QUIT", "ABRT", "KILL", "ALRM", "TERM", "CHLD", "USR1", "USR2",
                "PIPE", "URG", "CONT", "STOP", "TSTP", "TTIN", "TTOU", "XCPU")


@dataclass(frozen=True)
class WarnSignal:
    """``--signal``: send ``signum`` ``seconds`` before the time limit; with
    ``batch_only`` to each task's own process, else to its whole process group."""

    signum: int
    seconds: int = WARN_DEFAULT_S
    batch_only: bool = False


_SIGNAL_SPEC = re.compile(r"([RB]{0,2}):?([^@]*)(?:@(.*))?", re.IGNORECASE | re.DOTALL)


def parse_signal(text: str) -> WarnSignal:
    """``[B:]SIG[@SECS]`` as sbatch/srun ``--signal`` (proc_args.c ``get_signal_opts``).

    SIG is a number or a name of :data:`SIGNAL_NAMES`, any case, ``SIG`` prefix
    optional; SECS is 0..65535, default 60. ``R:`` (reservations) is refused.
    """
    m = _SIGNAL_SPEC.fullmatch(text) if isinstance(text, str) else None
    flags = m.group(1).upper() if m else ""
    if m is None or len(set(flags)) != len(flags):
        raise InputError(f"bad --signal {text!r}: expected [B:]SIG[@SECS], e.g. B:USR1@90")
    if "R" in flags:
        raise UnsupportedError(f"--signal {text!r}: the R: flag concerns reservations "
                               f"(MaxStartDelay); a local run has none")
    signum = _signal_number(m.group(2).strip(), text)
    seconds = WARN_DEFAULT_S
    if m.group(3) is not None:
        if not re.fullmatch(r"[0-9]{1,5}", m.group(3)) or int(m.group(3)) > 65535:
            raise InputError(f"bad --signal {text!r}: @SECS must be a whole number 0..65535")
        seconds = int(m.group(3))
    return WarnSignal(signum=signum, seconds=seconds, batch_only="B" in flags)


def _signal_number(name: str, text: str) -> int:
    if re.fullmatch(r"[0-9]+", name):
        number = int(name)
    else:
        bare = name.upper()[3:] if name.upper().startswith("SIG") else name.upper()
        if bare not in SIGNAL_NAMES:
            raise InputError(f"bad --signal {text!r}: unknown signal {name!r} (a number or "
                             f"one of {', '.join(SIGNAL_NAMES)})")
        number = int(getattr(signal, "SIG" + bare))
    if not 1 <= number < signal.NSIG:
        raise InputError(f"bad --signal {text!r}: no signal number {number} on this system")
    return number


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
        kill_on_bad_exit: bool = True, cwd: str | os.PathLike | None = None,
        warn: WarnSignal | None = None, kill_wait: float = KILL_GRACE,
        torchrun: bool = False) -> int:
    """Start every task of ``alloc`` as a local process running ``cmd``; wait; exit status.

    ``local`` makes MASTER_ADDR ``127.0.0.1`` (node names stand for this
    machine); ``label`` prefixes each output line with the task's rank, as
    ``srun --label`` (``"0: ..."``, ranks right-aligned to the widest).
    ``timeout`` is the time limit in seconds, ``warn`` the signal sent before it
    (needs ``timeout``), ``kill_wait`` the seconds between SIGTERM and SIGKILL;
    ``torchrun`` adds torchrun's worker variables. See the module doc for the
    failure, timeout and interrupt rules.
    """
    if isinstance(cmd, str) or not cmd or not all(isinstance(c, (str, os.PathLike)) for c in cmd):
        raise InputError(f"command must be a non-empty list of strings, got {cmd!r}")
    if timeout is not None and not timeout > 0:
        raise InputError(f"timeout must be > 0 seconds, got {timeout!r}")
    if warn is not None and (timeout is None or not isinstance(warn, WarnSignal)):
        raise InputError("--signal needs a time limit (--time): it is sent SECS before it")
    if isinstance(kill_wait, bool) or not isinstance(kill_wait, (int, float)) or \
            not 0 <= kill_wait <= 3600:
        raise InputError(f"kill wait must be 0..3600 seconds, got {kill_wait!r}")
    envs = task_environments(alloc, master_addr=LOCAL_ADDR if local else None,
                             torchrun=torchrun)
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
        status = _wait(procs, timeout=timeout, kill_on_bad_exit=kill_on_bad_exit,
                       warn=warn, kill_wait=kill_wait)
    except BaseException:
        _terminate(procs, kill_wait)
        raise
    finally:
        for t in pumps:
            t.join(timeout=5)
    return status


def _wait(procs: list[subprocess.Popen], *, timeout: float | None, kill_on_bad_exit: bool,
          warn: WarnSignal | None = None, kill_wait: float = KILL_GRACE) -> int:
    start = time.monotonic()
    deadline = None if timeout is None else start + timeout
    warn_at = None if warn is None else start + max(0.0, timeout - warn.seconds)
    statuses: dict[int, int] = {}
    delay = 0.005
    while len(statuses) < len(procs):
        for i, p in enumerate(procs):
            if i not in statuses and p.poll() is not None:
                statuses[i] = _status(p.returncode)
        if kill_on_bad_exit and any(s != 0 for s in statuses.values()):
            _report_failures(statuses)
            killed = _terminate(procs, kill_wait)
            for i, p in enumerate(procs):     # tasks that ended meanwhile by themselves
                if i not in statuses and i not in killed:
                    statuses[i] = _status(p.returncode)
            if killed:
                print(f"fastsched run: terminated {len(killed)} other task(s)", file=sys.stderr)
            return max(statuses.values())
        if len(statuses) == len(procs):
            _report_failures(statuses)
            break
        now = time.monotonic()
        if warn_at is not None and now >= warn_at:
            _warn(procs, warn)
            warn_at = None
        if deadline is not None and now >= deadline:
            killed = _terminate(procs, kill_wait)
            print(f"fastsched run: time limit of {timeout:g} s reached; terminated "
                  f"{len(killed)} task(s)", file=sys.stderr)
            return TIMEOUT_STATUS
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    return max(statuses.values(), default=0)


def _warn(procs: Sequence[subprocess.Popen], warn: WarnSignal) -> None:
    """Send ``--signal``'s signal to every task still running (module doc)."""
    running = [p for p in procs if p.poll() is None]
    for p in running:
        if warn.batch_only:
            try:
                p.send_signal(warn.signum)
            except ProcessLookupError:
                pass
        else:
            _signal_group(p, warn.signum)
    name = signal.Signals(warn.signum).name if warn.signum in signal.valid_signals() \
        else str(warn.signum)
    print(f"fastsched run: sent {name} to {len(running)} task(s), {warn.seconds} s before "
          f"the time limit", file=sys.stderr)


def _report_failures(statuses: dict[int, int]) -> None:
    """Name every task that failed by itself, as srun does (``task 3: exited with ...``)."""
    for rank in sorted(statuses):
        if statuses[rank] != 0:
            print(f"fastsched run: error: task {rank} (rank {rank}) exited with status "
                  f"{statuses[rank]}", file=sys.stderr)



