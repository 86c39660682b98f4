"""Slurm job requests as users spell them: ``#SBATCH`` lines and sbatch/srun arguments.

Parsing options (``parse_args``, ``parse_script``: the option table, pyxis container
options, unknown options) is :mod:`fastsched.io.sbatchopts`. Three steps, each usable
alone::

    req = parse_script("job.sh").merged(parse_args(["-N", "2", "--gpus-per-node=8"]))
    norm = normalise(req, cluster)          # per-node numbers, seconds, MB, lists
    job = to_job_request(norm, job_id=1, submit_time=0)   # a fastsched.JobRequest

and the command ``fastsched sbatch --test-only [--cluster C] SCRIPT [options]``.

Normalisation rules (``normalise``), with the man-page wording they follow
----------------------------------------------------------------------------
Values:

* Counts are whole numbers. ``-N/--nodes=<minnodes>[-maxnodes]`` ("If only one number
  is specified, this is used as both the minimum and maximum node count"); the
  engine is given the minimum, but with ``-k/--no-kill`` the maximum, the minimum
  being the fewest nodes the job shrinks to after node failures
  (:mod:`fastsched.model.elastic`).
* Time (``--time``, ``--time-min``): "Acceptable time formats include "minutes",
  "minutes:seconds", "hours:minutes:seconds", "days-hours", "days-hours:minutes" and
  "days-hours:minutes:seconds"", plus ``UNLIMITED``/``INFINITE``; "A time limit of
  zero requests that no time limit be imposed". No ``--time``: the partition's
  MaxTime (fastsched clusters have no DefaultTime). ``--time-min`` above ``--time``
  is an error; a workload built from the request gets it as its ``time_min``
  (backfill may start the job with a limit cut down towards it:
  :mod:`fastsched.model.timemin`, docs/lifecycle.md).
* Memory (``--mem``, ``--mem-per-cpu``, ``--mem-per-gpu``): "Default units are
  megabytes. Different units can be specified using the suffix [K|M|G|T]" (K rounds
  up to whole MB; powers of 1024). "--mem, --mem-per-cpu, and --mem-per-gpu are
  mutually exclusive" (Slurm's error text) -> InputError. ``--mem=0``: "A memory
  size specification of zero is treated as a special case and grants the job access
  to all of the memory on each node" (needs the cluster to give a number).
* GPUs: ``--gres`` "The format for each entry in the list is "name[[:type]:count]"
  ... The count is the number of those resources with a default value of 1";
  ``--gpus-per-node`` "Equivalent to the --gres option for GPUs" (giving both is an
  error); ``-G/--gpus=[type:]number`` "total number of GPUs required for the job";
  ``--gpus-per-task=[type:]number`` "Requires the job to specify a task count".
  Non-GPU gres entries are kept as spelled and not modelled; ``--gres=none`` is no
  gres. Different GPU types in one request are an error.
* Dependencies: "<type:job_id[:job_id][,type:job_id[:job_id]]> or
  <type:job_id[:job_id][?type:job_id[:job_id]]>. All dependencies must be satisfied
  if the "," separator is used. Any dependency may be satisfied if the "?" separator
  is used. Only one separator may be used." Types: after (``job_id+minutes``
  allowed), afterany, afterburstbuffer, aftercorr, afternotok, afterok, singleton.
  Job ids are ``N`` or ``N_M`` (an array task). Anything else is an InputError.
* Array: "Multiple values may be specified using a comma separated list and/or a
  range of values with a "-" separator ... "--array=0-15:4" is equivalent to
  "--array=0,4,8,12". A maximum number of simultaneously running tasks from the job
  array may be specified using a "%" separator".
* ``--partition``: "a comma separated list"; without one, the cluster's default
  partition (``Default=YES``); a cluster without one refuses the job, as Slurm does.
* No ``--time``: the partition's DefaultTime, else its MaxTime.
* A typed GPU request (``--gres=gpu:a100:2``) is checked against the nodes with GPUs
  of that type (a note says so when the partition mixes types); ``fastsched sbatch
  --test-only`` plans it on those nodes (:mod:`fastsched.sim.gputypes`).

Shape, in this order:

1. Tasks. ``-n`` as given; else ``--ntasks-per-node`` x nodes (Slurm sets the task
   count implicitly); else ``--gpus`` / ``--gpus-per-task`` (must divide); else "The
   default is one task per node". ``--gpus-per-task`` with no task count, no
   ``--ntasks-per-node`` and no ``--gpus`` is an error (Slurm: "--gpus-per-task ...
   used without either --gpus or -n/--ntasks is not allowed").
2. Nodes, when ``-N`` is absent: "the default behavior is to allocate enough nodes to
   satisfy the requested resources as expressed by per-job specification options,
   e.g. -n, -c and --gpus". With a cluster: tasks per node are limited by the node's
   CPUs / CPUs per task, its GPUs / GPUs per task and ``--ntasks-per-node``; nodes =
   ceil(tasks / that); ``--gpus=G`` alone needs ceil(G / GPUs per node) nodes.
   Without a cluster: ceil(tasks / ``--ntasks-per-node``) or 1 (and a note says so).
3. ``-N`` with ``-n``: "the number of nodes used from that request will be reduced to
   match that of the number of tasks if the number of nodes in the request is
   greater than the number of tasks". fastsched lowers the *maximum* of a range
   that way but rejects a minimum above the task count (``-N 4 -n 2``) as a
   contradiction instead of silently shrinking the job.
4. Per node, with tasks_per_node = ceil(tasks / nodes):
   GPUs = ``--gres``/``--gpus-per-node``, else ``--gpus-per-task`` x tasks_per_node,
   else ``--gpus`` / nodes (rounded up, with a note, when uneven; fewer GPUs than
   nodes is an error; ``--gpus`` with ``--gpus-per-node`` must agree).
   CPUs = ``--cpus-per-gpu`` x GPUs per node, else ``--cpus-per-task`` (default 1) x
   tasks_per_node. ``--cpus-per-task`` with ``--cpus-per-gpu`` is an error.
   Memory = ``--mem``, or ``--mem-per-cpu`` x CPUs, or ``--mem-per-gpu`` x GPUs, else 0
   (a site's DefMemPerCPU is not known; 0 means "not counted").
5. ``--exclusive``: "the job is allocated all CPUs and GRES on all nodes in the
   allocation, but is only allocated as much memory as it requested" -> with a
   cluster whose candidate nodes are alike, CPUs and GPUs per node become the
   node's. ``--exclusive=topo`` is modelled by the node engine with a topology
   (``Placement.exclusive_topo``; a workload's ``exclusive`` column, docs/topology.md):
   the job's leaf groups are its alone while it runs. ``--exclusive=user|mcs`` are
   recorded, not modelled by the engines.
6. Topology (recorded for ``fastsched.engine.placement``, see docs/topology.md):
   ``--switches=<count>[@<max-time>]`` "the maximum count of leaf switches desired
   for the job allocation and optionally the maximum time to wait for that number
   of switches" -> ``switches`` (>= 1) and ``switches_wait`` (seconds; None when no
   time is given: Slurm then uses the site's ``max_switch_wait``, default 300 s).
   ``--segment=<size>``: "Requested node count must always be evenly divisible by
   the requested segment size" -> ``segment``, else an InputError.
7. With a cluster: unknown partition, a GPU type no node has, more GPUs / CPUs /
   memory per node than any node of the partitions has, and more nodes than the
   partitions have are InputErrors. A time limit over the partition's MaxTime is a
   note (Slurm leaves such a job pending unless EnforcePartLimits).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ..model.errors import InputError
from ..model.jobs import UNLIMITED, JobRequest
from .slurmconf import format_time, parse_time
from .sbatchopts import CONTAINER, IGNORED, SlurmRequest, parse_args, parse_script
from .slurmgres import typed_nodes
from ..model.validation import MAX_COUNT, MAX_MEMORY_MB

__all__ = ["SlurmRequest", "NormalisedRequest", "parse_args", "parse_script", "normalise",
           "to_job_request", "format_request", "DEPENDENCY_TYPES"]

DEPENDENCY_TYPES = ("after", "afterany", "afterburstbuffer", "aftercorr", "afternotok",
                    "afterok", "singleton")
_MAX_ARRAY = 4_000_001


# --------------------------------------------------------------------------- requests

@dataclass
class NormalisedRequest:
    """A request in per-node numbers, seconds and MB (see the module docstring)."""

    num_nodes: int
    max_nodes: int
    num_tasks: int
    tasks_per_node: int
    cpus_per_node: int
    gpus_per_node: int
    gpu_type: str
    mem_per_node: int                  # MB; 0 = not requested
    mem_all: bool                      # --mem=0 (all memory of the node)
    time_limit: int | None             # seconds; None = UNLIMITED
    time_min: int | None
    partitions: list[str]
    qos: str | None
    account: str | None
    constraint: str | None
    exclusive: str | None              # None, "node", "user", "mcs", "topo"
    dependencies: list[tuple[str, tuple[str, ...]]]
    dependency_mode: str               # "all" (",") or "any" ("?")
    array: list[int] | None
    array_max_running: int | None
    job_name: str | None = None
    gpus_total: int = 0
    other_gres: list[str] = field(default_factory=list)
    switches: int | None = None        # --switches=count: most leaf switches
    switches_wait: int | None = None   # --switches=count@time: seconds to wait for them
    segment: int | None = None         # --segment=N: nodes per segment (topology/block)
    requeue: bool | None = None        # --requeue / --no-requeue (the later one); None: neither
    no_kill: bool = False              # -k/--no-kill (not --no-kill=off): shrink on node failure
    ignored: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: pyxis/enroot options as given: name without dashes -> value (None: a flag)
    container: dict[str, str | None] = field(default_factory=dict)
    reservation: str | None = None     # --reservation=name: runs only inside it

    @property
    def whole_node_checked(self) -> bool:
        return self.exclusive == "node"


# --------------------------------------------------------------------------- parsing

def _err(message: str, origin=None, option: str | None = None) -> InputError:
    file, line, spelled = origin if origin else (None, None, None)
    return InputError(message, file=file, line=line, field=spelled or option)


# --------------------------------------------------------------------------- values

_INT = re.compile(r"^\d+$")


def _whole(text: str) -> int:
    """The number of a string of digits (matched by ``_INT``), at most MAX_COUNT."""
    if len(text) > 10 or int(text) > MAX_COUNT:
        shown = text if len(text) <= 24 else f"{text[:10]}...({len(text)} digits)"
        raise InputError(f"{shown} is out of range (at most {MAX_COUNT:,})")
    return int(text)


def _count(req: SlurmRequest, name: str, *, minimum: int = 1) -> int | None:
    if name not in req:
        return None
    text = req.get(name) or ""
    if not _INT.match(text.strip()):
        raise _err(f"--{name}: {text!r} is not a whole number", req.origin.get(name), name)
    try:
        value = _whole(text.strip())
    except InputError as e:
        raise _err(f"--{name}: {e.reason}", req.origin.get(name), name) from None
    if value < minimum:
        raise _err(f"--{name}: must be at least {minimum}, got {value}", req.origin.get(name),
                   name)
    return value


def _nodes(req: SlurmRequest) -> tuple[int, int] | None:
    if "nodes" not in req:
        return None
    text = (req.get("nodes") or "").strip()
    m = re.match(r"^(\d+)([kKmM]?)(?:-(\d+)([kKmM]?))?$", text)
    if not m:
        raise _err(f"invalid node count {text!r} (expected N or MIN-MAX)",
                   req.origin.get("nodes"), "nodes")
    mult = {"": 1, "k": 1024, "m": 1024 * 1024}
    lo = int(m.group(1)) * mult[m.group(2).lower()]
    hi = lo if m.group(3) is None else int(m.group(3)) * mult[m.group(4).lower()]
    if hi > MAX_COUNT:
        raise _err(f"node count {text!r} is out of range (at most {MAX_COUNT:,})",
                   req.origin.get("nodes"), "nodes")
    if lo < 1 or hi < lo:
        raise _err(f"invalid node count {text!r} (need 1 <= min <= max)",
                   req.origin.get("nodes"), "nodes")
    return lo, hi


_MEM = re.compile(r"^(\d+)([KMGTkmgt]?)$")


def parse_memory(text: str) -> int:
    """Slurm memory size in MB: default unit MB, suffix K, M, G or T (powers of 1024)."""
    m = _MEM.match(text.strip())
    if not m:
        raise InputError(f"invalid memory size {text!r} (expected a whole number with an "
                         "optional K, M, G or T suffix)")
    n, unit = int(m.group(1)), m.group(2).upper()
    mb = -(-n // 1024) if unit == "K" else n * {"": 1, "M": 1, "G": 1024, "T": 1024 * 1024}[unit]
    if mb > MAX_MEMORY_MB:
        raise InputError(f"memory size {text.strip()[:30]!r} is out of range (at most "
                         f"{MAX_MEMORY_MB:,} MB)")
    return mb


def _memory(req: SlurmRequest, name: str) -> int | None:
    if name not in req:
        return None
    try:
        return parse_memory(req.get(name) or "")
    except InputError as e:
        raise _err(f"--{name}: {e.reason}", req.origin.get(name), name) from None


def _time(req: SlurmRequest, name: str) -> tuple[bool, int | None]:
    """(given, seconds or None for unlimited)."""
    if name not in req:
        return False, None
    text = req.get(name) or ""
    try:
        seconds = parse_time(text)
    except InputError as e:
        reason = e.reason if "out of range" in e.reason else (
            f"invalid time {text!r} (formats: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, "
            "UNLIMITED)")
        raise _err(f"--{name}: {reason}", req.origin.get(name), name) from None
    return True, (None if seconds == 0 else seconds)


def _switches(req: SlurmRequest) -> tuple[int | None, int | None]:
    """``--switches=<count>[@<max-time>]`` as (count, wait seconds or None)."""
    if "switches" not in req:
        return None, None
    text = (req.get("switches") or "").strip()
    count, at, wait = text.partition("@")
    origin = req.origin.get("switches")
    if not _INT.match(count) or int(count) < 1 or len(count) > 10 or int(count) > MAX_COUNT:
        raise _err(f"--switches: {text[:30]!r} needs a leaf switch count in 1..{MAX_COUNT:,} "
                   "(count[@max-time])", origin, "switches")
    if not at:
        return int(count), None
    try:
        seconds = parse_time(wait)
    except InputError:
        raise _err(f"--switches: invalid max-time {wait!r} in {text!r}", origin,
                   "switches") from None
    return int(count), seconds


def _gpu_spec(req: SlurmRequest, name: str) -> tuple[str, int] | None:
    """``[type:]number`` of --gpus, --gpus-per-node, --gpus-per-task."""
    if name not in req:
        return None
    text = (req.get(name) or "").strip()
    parts = text.split(":")
    try:
        if len(parts) == 1 and _INT.match(parts[0]):
            return "", _whole(parts[0])
        if len(parts) == 2 and parts[0] and _INT.match(parts[1]):
            return parts[0], _whole(parts[1])
    except InputError as e:
        raise _err(f"--{name}: {e.reason}", req.origin.get(name), name) from None
    raise _err(f"--{name}: malformed {text!r} (expected [type:]number)",
               req.origin.get(name), name)


def parse_gres(text: str) -> tuple[tuple[str, int] | None, list[str]]:
    """``--gres`` list -> ((gpu type, GPUs per node) or None, other entries)."""
    gpu = None
    others = []
    if text.strip().lower() == "none":
        return None, []
    for item in text.split(","):
        item = item.strip()
        parts = item.split(":")
        if not item or not parts[0]:
            raise InputError(f"malformed --gres {text!r}: empty entry")
        if parts[0] != "gpu":
            others.append(item)
            continue
        if len(parts) == 1:
            spec = ("", 1)
        elif len(parts) == 2:
            spec = ("", _whole(parts[1])) if _INT.match(parts[1]) else (parts[1], 1)
        elif len(parts) == 3 and parts[1] and _INT.match(parts[2]):
            spec = (parts[1], _whole(parts[2]))
        else:
            raise InputError(f"malformed --gres {text!r}: expected gpu[[:type]:count] with a "
                             "whole-number count")
        if gpu is not None:
            raise InputError(f"malformed --gres {text!r}: gpu given twice")
        gpu = spec
    return gpu, others


def parse_dependency(text: str) -> tuple[list[tuple[str, tuple[str, ...]]], str]:
    """``--dependency`` -> ([(type, job ids)], "all" | "any")."""
    text = text.strip()
    if "," in text and "?" in text:
        raise InputError(f"dependency {text!r} mixes ',' and '?': only one separator may "
                         "be used")
    mode = "any" if "?" in text else "all"
    out = []
    for item in text.split("?" if mode == "any" else ","):
        kind, _, ids = item.partition(":")
        if kind not in DEPENDENCY_TYPES:
            raise InputError(f"unknown dependency type {kind!r} in {text!r}; Slurm knows "
                             + ", ".join(DEPENDENCY_TYPES))
        if kind == "singleton":
            if ids:
                raise InputError(f"singleton takes no job ids (got {item!r})")
            out.append(("singleton", ()))
            continue
        pattern = r"^\d+(_\d+)?(\+\d+)?$" if kind == "after" else r"^\d+(_\d+)?$"
        job_ids = tuple(ids.split(":")) if ids else ()
        if not job_ids or not all(re.match(pattern, j) for j in job_ids):
            raise InputError(f"dependency {item!r}: expected {kind}:job_id[:job_id...]"
                             + (" (job_id+minutes allowed)" if kind == "after" else ""))
        if any(len(n) > 18 for n in re.findall(r"\d+", ids)):   # no job id is that large
            raise InputError(f"dependency {item[:40]!r}: job id out of range")
        out.append((kind, job_ids))
    return out, mode


def parse_array(text: str) -> tuple[list[int], int | None]:
    """``--array`` -> (sorted task indexes, max running or None)."""
    body, pct, limit = text.strip().partition("%")
    max_running = None
    if pct:
        if not _INT.match(limit) or int(limit) < 1:
            raise InputError(f"array {text!r}: the %-limit must be a whole number >= 1")
        max_running = _whole(limit)
    indexes: set[int] = set()
    for item in body.split(","):
        m = re.match(r"^(\d+)(?:-(\d+)(?::(\d+))?)?$", item.strip())
        if not m:
            raise InputError(f"array {text!r}: bad entry {item!r} (expected N, A-B or A-B:S)")
        lo = _whole(m.group(1))
        hi = lo if m.group(2) is None else _whole(m.group(2))
        step = 1 if m.group(3) is None else _whole(m.group(3))
        if hi < lo or step < 1:
            raise InputError(f"array {text!r}: bad range {item!r}")
        if hi - lo > _MAX_ARRAY or len(indexes) > _MAX_ARRAY:
            raise InputError(f"array {text!r}: too many tasks")
        indexes.update(range(lo, hi + 1, step))
    return sorted(indexes), max_running


def _wrap(req: SlurmRequest, name: str, fn):
    try:
        return fn(req.get(name) or "")
    except InputError as e:
        raise _err(e.reason, req.origin.get(name), name) from None


# --------------------------------------------------------------------------- normalise

def _default_partition(cluster, origin) -> str:
    """The cluster's Default=YES partition; as in Slurm, none is an error."""
    try:
        return cluster.partitions[cluster.default_partition_index()].name
    except InputError as e:
        raise _err(e.reason, origin, "partition") from None


def normalise(req: SlurmRequest, cluster=None) -> NormalisedRequest:
    """Apply Slurm's rules (module docstring) to ``req``; check it against ``cluster``."""
    o = req.origin.get
    notes: list[str] = []
    nodes = _nodes(req)
    ntasks = _count(req, "ntasks")
    tpn_opt = _count(req, "ntasks-per-node")
    cpt = _count(req, "cpus-per-task")
    cpg = _count(req, "cpus-per-gpu")
    gpus = _gpu_spec(req, "gpus")
    gpn_opt = _gpu_spec(req, "gpus-per-node")
    gpt = _gpu_spec(req, "gpus-per-task")
    gres_gpu, other_gres = (None, [])
    if "gres" in req:
        gres_gpu, other_gres = _wrap(req, "gres", parse_gres)

    # ---- mutually exclusive options
    mem_given = [n for n in ("mem", "mem-per-cpu", "mem-per-gpu") if n in req]
    if len(mem_given) > 1:
        raise _err("--mem, --mem-per-cpu and --mem-per-gpu are mutually exclusive (got "
                   + " and ".join("--" + n for n in mem_given) + ")", o(mem_given[-1]),
                   mem_given[-1])
    if cpt is not None and cpg is not None:
        raise _err("--cpus-per-task and --cpus-per-gpu are mutually exclusive",
                   o("cpus-per-gpu"), "cpus-per-gpu")
    if gres_gpu is not None and gpn_opt is not None:
        raise _err("--gres=gpu and --gpus-per-node both set GPUs per node; give one",
                   o("gpus-per-node"), "gpus-per-node")
    per_node = gres_gpu or gpn_opt
    types = {spec[0] for spec in (gpus, per_node, gpt) if spec is not None and spec[0]}
    if len(types) > 1:
        raise _err(f"different GPU types in one request: {sorted(types)}")
    gpu_type = types.pop() if types else ""

    # ---- tasks
    if gpt is not None and ntasks is None and tpn_opt is None and gpus is None:
        raise _err("--gpus-per-task requires a task count (-n/--ntasks, or "
                   "--ntasks-per-node, or --gpus)", o("gpus-per-task"), "gpus-per-task")
    if ntasks is None and gpt is not None and gpus is not None and tpn_opt is None:
        if gpt[1] == 0 or gpus[1] % gpt[1]:
            raise _err(f"--gpus={gpus[1]} is not a multiple of --gpus-per-task={gpt[1]}",
                       o("gpus"), "gpus")
        ntasks = gpus[1] // gpt[1]
    cpus_per_task = cpt or (cpg * gpt[1] if cpg and gpt else 1)

    # ---- candidate nodes (cluster)
    parts = ([p.strip() for p in (req.get("partition") or "").split(",")]
             if "partition" in req else [])
    if "partition" in req and (not parts or not all(parts)):
        raise _err(f"--partition: empty name in {req.get('partition')!r}", o("partition"),
                   "partition")
    cand = None
    if cluster is not None:
        if not parts:
            parts = [_default_partition(cluster, o("partition"))]
        idx = []
        for name in parts:
            try:
                idx.append(cluster.partitions[cluster.partition_index(name)])
            except InputError as e:
                raise _err(e.reason, o("partition"), "partition") from None
        cand = np.unique(np.concatenate([p.nodes for p in idx])).astype(np.int64)
        if len(cand) == 0:
            raise _err(f"partition(s) {parts} have no nodes", o("partition"), "partition")
        if gpu_type:
            try:
                cand = typed_nodes(cluster, cand, gpu_type, notes)
            except InputError as e:
                raise _err(e.reason) from None
        node_cpus = int(cluster.cpus[cand].max())
        node_gpus = int(cluster.gpus[cand].max())
        node_mem = int(cluster.mem_mb[cand].max())
        alike = bool((cluster.cpus[cand] == cluster.cpus[cand[0]]).all()
                     and (cluster.gpus[cand] == cluster.gpus[cand[0]]).all()
                     and (cluster.mem_mb[cand] == cluster.mem_mb[cand[0]]).all())

    # ---- nodes
    if nodes is None:
        if cand is not None and (ntasks is not None or (gpus and not per_node)):
            need = 1
            if ntasks is not None:
                cap = node_cpus // cpus_per_task
                if gpt and gpt[1]:
                    cap = min(cap, node_gpus // gpt[1])
                if tpn_opt:
                    cap = min(cap, tpn_opt)
                if cap < 1:
                    raise _err(f"one task needs {cpus_per_task} CPUs"
                               + (f" and {gpt[1]} GPUs" if gpt else "")
                               + f"; the largest node has {node_cpus} CPUs and {node_gpus} GPUs")
                need = -(-ntasks // cap)
            if gpus and gpus[1] and not per_node and not gpt:
                if node_gpus == 0:
                    raise _err(f"--gpus={gpus[1]}: the partition's nodes have no GPUs",
                               o("gpus"), "gpus")
                need = max(need, -(-gpus[1] // node_gpus))
            nodes = (need, need)
        else:
            need = -(-ntasks // tpn_opt) if ntasks and tpn_opt else 1
            if cluster is None and (ntasks or gpus) and not tpn_opt:
                notes.append("no cluster given: the node count is not derived from -n/--gpus "
                             f"(assumed {need})")
            nodes = (need, need)
    nmin, nmax = nodes
    # an elastic job (--no-kill) without -n keeps its node range: one task per node it has
    keep_max = ntasks is None and _no_kill(req)
    if ntasks is None:
        ntasks = nmin * (tpn_opt or 1)          # "The default is one task per node"
    if ntasks < nmin:
        raise _err(f"-N {nmin} with -n {ntasks}: fewer tasks than nodes (Slurm would shrink "
                   f"the job to {ntasks} nodes with a warning; give -N {ntasks} or more tasks)",
                   o("nodes"), "nodes")
    if ntasks < nmax and not keep_max:
        nmax = ntasks
    tasks_per_node = -(-ntasks // nmin)
    if tpn_opt and tasks_per_node > tpn_opt:
        notes.append(f"--ntasks-per-node={tpn_opt} cannot hold {ntasks} tasks on {nmin} nodes; "
                     "Slurm ignores it with a warning")

    # ---- GPUs per node
    gpus_total = 0
    if per_node is not None:
        gpn = per_node[1]
        if gpt is not None and gpn != gpt[1] * tasks_per_node:
            raise _err(f"{gpn} GPUs per node contradicts --gpus-per-task={gpt[1]} x "
                       f"{tasks_per_node} tasks per node", o("gpus-per-task"), "gpus-per-task")
        if gpus is not None and gpus[1] != gpn * nmin:
            raise _err(f"--gpus={gpus[1]} contradicts {gpn} GPUs per node on {nmin} nodes",
                       o("gpus"), "gpus")
    elif gpt is not None:
        gpn = gpt[1] * tasks_per_node
        if gpus is not None and gpus[1] != gpt[1] * ntasks:
            raise _err(f"--gpus={gpus[1]} contradicts --gpus-per-task={gpt[1]} x {ntasks} "
                       "tasks", o("gpus"), "gpus")
    elif gpus is not None:
        if 0 < gpus[1] < nmin:
            raise _err(f"--gpus={gpus[1]} on {nmin} nodes leaves nodes without GPUs",
                       o("gpus"), "gpus")
        gpn = -(-gpus[1] // nmin)
        if gpn * nmin != gpus[1]:
            notes.append(f"--gpus={gpus[1]} does not divide evenly over {nmin} nodes; "
                         f"fastsched asks for {gpn} per node ({gpn * nmin} in all)")
    else:
        gpn = 0
    gpus_total = gpn * nmin
    if gpn == 0 and (cpg is not None or "mem-per-gpu" in req):
        name = "cpus-per-gpu" if cpg is not None else "mem-per-gpu"
        raise _err(f"--{name} without any GPUs requested", o(name), name)

    # ---- CPUs and memory per node
    cpus = cpg * gpn if cpg is not None else cpus_per_task * tasks_per_node
    mem_all = False
    if "mem" in req:
        mem = _memory(req, "mem")
        mem_all = mem == 0
    elif "mem-per-cpu" in req:
        mem = _memory(req, "mem-per-cpu") * cpus
    elif "mem-per-gpu" in req:
        mem = _memory(req, "mem-per-gpu") * gpn
    else:
        mem = 0

    exclusive = None
    if "exclusive" in req:
        value = req.get("exclusive")
        exclusive = "node" if value is None else value.lower()
        if exclusive not in ("node", "user", "mcs", "topo"):
            raise _err(f"invalid --exclusive={value!r} (user, mcs or topo)", o("exclusive"),
                       "exclusive")
        if exclusive in ("user", "mcs"):
            notes.append(f"--exclusive={exclusive} is recorded, not modelled")
        elif exclusive == "topo":
            notes.append("--exclusive=topo: the job's leaf groups (base blocks or leaf "
                         "switches) are its alone; modelled with a topology")

    switches, switches_wait = _switches(req)
    segment = _count(req, "segment")
    if segment is not None and nmin % segment:
        raise _err(f"--segment={segment}: the node count {nmin} must be a multiple of the "
                   "segment size", o("segment"), "segment")

    # ---- against the cluster
    if cand is not None:
        if mem_all:
            if alike:
                mem = node_mem
            else:
                notes.append("--mem=0 on unlike nodes: memory left as 'all' (not counted)")
        if exclusive == "node":
            if alike:
                cpus, gpn = node_cpus, node_gpus
                gpus_total = gpn * nmin
            else:
                notes.append("--exclusive on unlike nodes: per-node numbers kept as requested")
        if gpn > node_gpus:
            src = next(n for n in ("gres", "gpus-per-node", "gpus-per-task", "gpus") if n in req)
            raise _err(f"{gpn} GPUs per node requested; no node of partition(s) "
                       f"{','.join(parts)} has more than {node_gpus}", o(src), src)
        if cpus > node_cpus:
            raise _err(f"{cpus} CPUs per node requested; no node of partition(s) "
                       f"{','.join(parts)} has more than {node_cpus}")
        if mem > node_mem:
            src = mem_given[0] if mem_given else None
            raise _err(f"{mem} MB per node requested; no node of partition(s) "
                       f"{','.join(parts)} has more than {node_mem} MB",
                       o(src) if src else None, src)
        if nmin > len(cand):
            raise _err(f"{nmin} nodes requested; partition(s) {','.join(parts)} have "
                       f"{len(cand)}", o("nodes"), "nodes")
        nmax = min(nmax, len(cand))
    elif mem_all:
        notes.append("--mem=0 (all memory of each node) needs a cluster to give a number")

    # ---- time
    has_time, limit = _time(req, "time")
    has_min, tmin = _time(req, "time-min")
    if cluster is not None:
        max_times = [p.max_time for p in cluster.partitions if p.name in parts]
        part_max = None if any(t is None for t in max_times) else max(max_times)
        defaults = [p.default_time for p in cluster.partitions if p.name == parts[0]]
        if not has_time and defaults and defaults[0] is not None:
            limit = defaults[0]
            notes.append(f"no --time: the partition's DefaultTime ({format_time(limit)}) "
                         "is the time limit")
        elif not has_time:
            limit = part_max
            notes.append("no --time: the partition's MaxTime ("
                         f"{format_time(limit)}) is the time limit")
        elif part_max is not None and (limit is None or limit > part_max):
            notes.append(f"time limit {format_time(limit)} exceeds the partition MaxTime "
                         f"{format_time(part_max)}: Slurm leaves the job pending "
                         "(PartitionTimeLimit) unless EnforcePartLimits rejects it")
    if has_min and tmin is not None and limit is not None and tmin > limit:
        raise _err(f"--time-min {format_time(tmin)} is longer than --time "
                   f"{format_time(limit)}", o("time-min"), "time-min")

    deps, mode = ([], "all")
    if "dependency" in req:
        deps, mode = _wrap(req, "dependency", parse_dependency)
    array, max_running = (None, None)
    if "array" in req:
        array, max_running = _wrap(req, "array", parse_array)
    for name in ("qos", "account", "constraint", "job-name", "reservation"):
        if name in req and not (req.get(name) or "").strip():
            raise _err(f"--{name} is empty", o(name), name)

    ignored = sorted(o(n)[2] for n in req.options if n in IGNORED) + sorted(req.unknown)
    container = {n: req.options[n] for n in CONTAINER if n in req.options}
    return NormalisedRequest(
        num_nodes=nmin, max_nodes=nmax, num_tasks=ntasks, tasks_per_node=tasks_per_node,
        cpus_per_node=cpus, gpus_per_node=gpn, gpu_type=gpu_type, mem_per_node=mem,
        mem_all=mem_all, time_limit=limit, time_min=tmin if has_min else None,
        partitions=parts, qos=req.get("qos"), account=req.get("account"),
        constraint=req.get("constraint"), exclusive=exclusive, dependencies=deps,
        dependency_mode=mode, array=array, array_max_running=max_running,
        job_name=req.get("job-name"), gpus_total=gpus_total, other_gres=other_gres,
        switches=switches, switches_wait=switches_wait, segment=segment,
        requeue=_requeue(req), no_kill=_no_kill(req), ignored=ignored, notes=notes,
        container=container, reservation=req.get("reservation"))


def _no_kill(req: SlurmRequest) -> bool:
    """-k/--no-kill: "Do not automatically terminate a job if one of the nodes it has
    been allocated fails" (``--no-kill=off`` turns it off)."""
    if "no-kill" not in req:
        return False
    return (req.get("no-kill") or "").strip().lower() != "off"


def _requeue(req: SlurmRequest) -> bool | None:
    """--requeue (True) or --no-requeue (False), the later given; None: neither."""
    given = [n for n in req.options if n in ("requeue", "no-requeue")]
    return None if not given else given[-1] == "requeue"


def to_job_request(norm: NormalisedRequest, job_id: int, submit_time: int, *,
                   partition: int = 0, user: int = -1) -> JobRequest:
    """The engine's :class:`JobRequest` for ``norm`` (runtime = time limit, the
    test-only estimate; an UNLIMITED limit is :data:`fastsched.model.jobs.UNLIMITED`)."""
    limit = UNLIMITED if norm.time_limit is None else int(norm.time_limit)
    return JobRequest(job_id=int(job_id), submit_time=int(submit_time),
                      time_limit=limit, runtime=limit,
                      num_nodes=norm.num_nodes, cpus_per_node=norm.cpus_per_node,
                      gpus_per_node=norm.gpus_per_node, mem_per_node=norm.mem_per_node,
                      partition=partition, user=user)


# --------------------------------------------------------------------------- output

def _array_text(indexes: list[int]) -> str:
    runs, start, prev = [], indexes[0], indexes[0]
    for x in indexes[1:] + [None]:
        if x is not None and x == prev + 1:
            prev = x
            continue
        runs.append(str(start) if start == prev else f"{start}-{prev}")
        if x is not None:
            start = prev = x
    return ",".join(runs)


def format_request(norm: NormalisedRequest) -> list[str]:
    """``scontrol show job``-style lines for a normalised request."""
    nodes = str(norm.num_nodes) if norm.max_nodes == norm.num_nodes else \
        f"{norm.num_nodes}-{norm.max_nodes}"
    tres = [f"cpu={norm.cpus_per_node * norm.num_nodes}"]
    if norm.mem_all and not norm.mem_per_node:
        tres.append("mem=all")
    elif norm.mem_per_node:
        tres.append(f"mem={norm.mem_per_node * norm.num_nodes}M")
    tres.append(f"node={norm.num_nodes}")
    if norm.gpus_total:
        tres.append(f"gres/gpu={norm.gpus_total}")
    per_node = [f"cpu={norm.cpus_per_node}"]
    if norm.mem_per_node:
        per_node.append(f"mem={norm.mem_per_node}M")
    if norm.gpus_per_node:
        per_node.append("gres/gpu" + (f":{norm.gpu_type}" if norm.gpu_type else "")
                        + f"={norm.gpus_per_node}")
    dep = "(null)"
    if norm.dependencies:
        sep = "?" if norm.dependency_mode == "any" else ","
        dep = sep.join(k if not ids else k + ":" + ":".join(ids) for k, ids in norm.dependencies)
    lines = [
        f"JobName={norm.job_name or '(null)'}",
        f"NumNodes={nodes} NumTasks={norm.num_tasks} TasksPerNode={norm.tasks_per_node} "
        f"CPUs/Task={max(1, norm.cpus_per_node // max(norm.tasks_per_node, 1))}",
        "TRES=" + ",".join(tres),
        "TresPerNode=" + ",".join(per_node),
        f"TimeLimit={format_time(norm.time_limit)} TimeMin="
        + (format_time(norm.time_min) if norm.time_min is not None else "N/A"),
        f"Partition={','.join(norm.partitions) or '(default)'} QOS={norm.qos or '(null)'} "
        f"Account={norm.account or '(null)'}",
        f"Features={norm.constraint or '(null)'} "
        f"OverSubscribe={'NO' if norm.exclusive == 'node' else (norm.exclusive or 'OK').upper()}",
        f"Dependency={dep}",
    ]
    if norm.reservation:
        lines.append(f"Reservation={norm.reservation}")
    if norm.array is not None:
        lines.append(f"ArrayTaskId={_array_text(norm.array)}"
                     + (f"%{norm.array_max_running}" if norm.array_max_running else "")
                     + f" ArrayTasks={len(norm.array)}")
    if norm.switches is not None or norm.segment is not None:
        wait = "" if norm.switches_wait is None else "@" + format_time(norm.switches_wait)
        lines.append(f"ReqSwitch={norm.switches if norm.switches is not None else 0}{wait} "
                     f"Segment={norm.segment or 'N/A'}")
    if norm.other_gres:
        lines.append("Gres(not modelled)=" + ",".join(norm.other_gres))
    if norm.container:
        lines.append("Container(pyxis)=" + " ".join(
            f"--{k}" if v is None else f"--{k}={v}" for k, v in norm.container.items()))
    if norm.ignored:
        lines.append("Ignored(not modelled)=" + ",".join(norm.ignored))
    return lines


