"""The compiled engine's state, declared once: named tuples of arrays.

Numba takes a ``collections.namedtuple`` of arrays as one argument and reads
its fields at no cost, so each concept of the engine travels as one value
instead of a dozen positional arrays kept in sync by hand. Each structure is
built in one Python function (``new_*`` here, or the builder named in its
comment); a kernel that may replace an array (a profile or running list that
outgrew its storage) returns the structure rebuilt around the new array.

Node-indexed arrays have one row per cluster node; job-indexed ones one row
per job in the engine's order (submit order in the event loop, queue order in
a single pass).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

#: the kept work profile, ragged (:mod:`fastsched.engine.profile`): node x's
#: breakpoints are ``WT[wo[x]:wo[x] + wlen[x]]`` with the free (GPUs, CPUs, MB)
#: ``WG/WC/WM`` from each, in a segment of ``wcap[x]`` entries; ``wst`` =
#: [top (first entry never used), holes (entries of abandoned segments)]; ``wv``
#: = the change stamps: ``wv[x]`` the count of changes of free resources when
#: node x's last changed, ``wv[X]`` that count, ``wv[X + 1]`` 1 while changes
#: are not counted (a memoised reservation's own hold and undo: :mod:`fastsched.engine.memo`)
Profile = namedtuple("Profile", ["WT", "WG", "WC", "WM", "wo", "wlen", "wcap", "wst", "wv"])

#: per node, its running jobs sorted by held end: ``RT/RG/RC/RM/RJ[x, :rlen[x]]``
#: = (held end, g, c, m, job) (job -2 - j: a leaf group held whole for
#: --exclusive=topo job j); the width ``RT.shape[1]`` grows by doubling
Running = namedtuple("Running", ["RT", "RG", "RC", "RM", "RJ", "rlen"])

#: the cluster as the kernels see it: capacities, each partition's available
#: nodes (CSR ``poff``/``pflat``, ascending) and per node the bits of its
#: partitions (``pbits``; empty beyond 64 partitions)
Nodes = namedtuple("Nodes", ["capG", "capC", "capM", "poff", "pflat", "pbits"])

#: free now (running jobs only): GPUs, CPUs, MB and free GPU bits per node, and
#: per request type the count of nodes of its partition whose free-now covers
#: it (``tcount``, -1: not counted yet; :mod:`fastsched.engine.freenow`); the
#: nodes by free GPUs: linked lists ``bnext``/``bprev`` from ``bhead[v]``, node x
#: in list ``bval[x]`` (its free GPUs, kept at every start and end; topology
#: blocks change free GPUs without moving nodes, and never read the lists); the
#: idle nodes (free-now = capacity) as bits ``idle[x >> 6] >> (x & 63)``, kept with
#: the lists (read by :mod:`fastsched.engine.wholenode` only)
FreeNow = namedtuple("FreeNow", ["fg", "fc", "fm", "fmask", "tcount", "bhead", "bnext",
                                 "bprev", "bval", "idle"])

#: the distinct (partition, gpus, cpus, mem) requests, one row each, and how many
#: available nodes of the partition can hold each (``cap``: a job of more nodes
#: cannot run there while nodes are drained)
RequestTypes = namedtuple("RequestTypes", ["p", "g", "c", "m", "cap"])

#: per job: time limit, runtime, nodes and per-node request; its partition
#: choices (CSR ``pc_off`` over ``pc_part`` and their request types
#: ``pc_type``); where its nodes go in the allocation arrays (``offsets``);
#: when it became eligible (starts a --switches wait); the fewest nodes it
#: starts on (``low``: a ``--nodes=MIN-MAX`` job's MIN, else ``nn``;
#: :func:`fastsched.engine.passes._narrow_now`); its ``--time-min`` (``tmin``, 0: none;
#: :mod:`fastsched.engine.timemin`)
Jobs = namedtuple("Jobs", ["limit", "runtime", "nn", "rg", "rc", "rm", "pc_off", "pc_part",
                           "pc_type", "offsets", "eligible", "low", "tmin"])

#: limit groups: each job's groups (CSR ``jg_off``/``jg``), their caps and
#: usage ([G, NCAPS], :mod:`fastsched.engine.limits`)
Limits = namedtuple("Limits", ["jg_off", "jg", "caps", "gusage"])

#: topology: levels (int32[L, nodes], L = 0: off), per job --segment ``unit``,
#: --switches ``max_leaves`` / ``leaf_wait`` and --exclusive=topo ``excl``;
#: GPU groups ``gmasks`` (empty: lowest free indices); each leaf group's
#: available nodes (CSR ``boff``/``bnodes``, :mod:`fastsched.engine.blocks`)
Topology = namedtuple("Topology", ["levels", "unit", "max_leaves", "leaf_wait", "gmasks",
                                   "excl", "boff", "bnodes"])

#: what a pass decides, per job: start, end, planned start (reservations),
#: nodes and GPU bits (at ``Jobs.offsets[j]``), limit reason, partition used
Outputs = namedtuple("Outputs", ["start", "end", "planned", "alloc_nodes", "alloc_mask",
                                 "reason", "part_used"])

#: how a pass plans: the policy's numbers (``Policy.kernel_rules`` of
#: :mod:`fastsched.model.policies`: ``stop_at_head``, no job passes the first that
#: cannot start; ``depth``, reservations per pass), ``full`` (walk the whole
#: queue), the time grid ``res``, the planning ``window``, after how
#: many plans a request type gets a run index (< 0: never), and ``keep``
#: (undo the pass's reservations at its end: the caller plans from the profile
#: again), ``whole``: the event loop's passes run
#: :func:`fastsched.engine.wholenode._whole_pass` (see its conditions)
Rules = namedtuple("Rules", ["stop_at_head", "depth", "full", "res", "window", "index_after",
                             "keep", "whole"])

#: planning with preemptable capacity (:mod:`fastsched.engine.preemptplan`; ``can``
#: empty: off): per job whether it may preempt (``can``), per class pair whether one
#: may preempt the other with its mode not OFF (``may``), per class PreemptExemptTime
#: (``exempt``), per job its QOS class (``qos``; empty: the class is the partition),
#: whether it is a victim in its grace time (``stopping``, kept by the Preemptor) and
#: the seconds its start waited for boots (``conf``, power saving; empty: none): Slurm's
#: start time of a job CONFIGURING is its allocation's, ``conf`` before its start
Preempting = namedtuple("Preempting", ["can", "may", "exempt", "qos", "stopping", "conf"])

#: one job's request as the planners take it: per-node (g, c, m), duration
#: ``d`` and node count ``need``
Ask = namedtuple("Ask", ["g", "c", "m", "d", "need"])

#: the event loop's queue and events: submit times, queue ``rank``, the queue
#: (job indices sorted by rank), the completion heap (``evk`` end, ``evj`` job),
#: and scratch for the jobs a pass started (``newly``)
Events = namedtuple("Events", ["submit", "rank", "queue", "evk", "evj", "newly"])

#: dependencies: each job's dependents (CSR ``ch_off``, ``ch_job``/``ch_kind``),
#: its count of unsatisfied ones (``pend``), whether it can never run
#: (``never``) and whether it was submitted (``arrived``)
Deps = namedtuple("Deps", ["ch_off", "ch_job", "ch_kind", "pend", "never", "arrived"])

#: per-job scratch of node choices: the best so far (``chosen``) and the
#: current partition's (``trial``); a pass's memoised plan, kept to the next
#: pass (:mod:`fastsched.engine.memo`: ``memo`` its key and start, ``memo_nodes``
#: its nodes, ``memo_plist`` the partition's nodes it read)
Scratch = namedtuple("Scratch", ["chosen", "trial", "memo", "memo_nodes", "memo_plist"])


def as_i64(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)


def new_free(fg, fc, fm, fmask, num_types: int, max_gpus: int, nodes: Nodes) -> FreeNow:
    """Free-now state from per-node free GPUs, CPUs, MB and GPU bits; no type counted
    yet; ``max_gpus``: the most GPUs a node has (the lists go up to it); idle bits
    against the capacities of ``nodes``."""
    fg = as_i64(fg)
    n = len(fg)
    by = np.argsort(fg, kind="stable")
    v = fg[by]
    same = v[1:] == v[:-1]
    bnext = np.full(n, -1, dtype=np.int64)
    bprev = np.full(n, -1, dtype=np.int64)
    bnext[by[:-1][same]] = by[1:][same]
    bprev[by[1:][same]] = by[:-1][same]
    bhead = np.full(max(int(max_gpus), int(v[-1]) if n else 0) + 1, -1, dtype=np.int64)
    first = np.concatenate([[True], ~same]) if n else np.zeros(0, dtype=bool)
    bhead[v[first]] = by[first]
    idle = (fg == nodes.capG) & (as_i64(fc) == nodes.capC) & (as_i64(fm) == nodes.capM)
    return FreeNow(fg, as_i64(fc), as_i64(fm), fmask, np.full(num_types, -1, dtype=np.int64),
                   bhead, bnext, bprev, fg.copy(), idle_bits(idle))


def idle_bits(idle: np.ndarray) -> np.ndarray:
    """Bools per node as uint64 words, node x at bit x & 63 of word x >> 6."""
    words = np.zeros((len(idle) + 63) // 64 * 64, dtype=bool)
    words[:len(idle)] = idle
    return np.packbits(words.reshape(-1, 8)[:, ::-1]).view("<u8").astype(np.uint64)


def new_outputs(n: int, total: int, nodes_fill=None) -> Outputs:
    """Outputs of ``n`` jobs with ``total`` node entries (nothing decided yet; node
    entries left unset unless ``nodes_fill``)."""
    return Outputs(start=np.full(n, -1, dtype=np.int64), end=np.full(n, -1, dtype=np.int64),
                   planned=np.full(n, -1, dtype=np.int64),
                   alloc_nodes=np.empty(total, dtype=np.int64) if nodes_fill is None
                   else np.full(total, nodes_fill, dtype=np.int64),
                   alloc_mask=np.zeros(total, dtype=np.uint64),
                   reason=np.full(n, -1, dtype=np.int64),
                   part_used=np.full(n, -1, dtype=np.int64))


def new_scratch(nn: np.ndarray, num_nodes: int = 0) -> Scratch:
    """Scratch for jobs of ``nn`` nodes; with ``num_nodes``, room to memoise a plan
    over a partition of up to that many nodes (none: no memo)."""
    size = max(1, int(nn.max(initial=1)))
    memo = np.full(10, -1, dtype=np.int64)
    memo[9] = 0
    return Scratch(np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64), memo,
                   np.empty(size, dtype=np.int64), np.empty(num_nodes, dtype=np.int64))


def new_request_types(types: np.ndarray, nodes: Nodes | None) -> RequestTypes:
    """From the (T, 4) rows of :func:`fastsched.engine.inputs._request_types`, over the
    available nodes of ``nodes`` (None: every job was checked to fit its partitions,
    and no node will be drained: capacities are not counted)."""
    t = RequestTypes(*(as_i64(types[:, k]) for k in range(4)),
                     np.full(len(types), np.iinfo(np.int64).max, dtype=np.int64))
    return t if nodes is None else with_capacity(t, nodes)


def with_capacity(types: RequestTypes, nodes: Nodes) -> RequestTypes:
    """``types`` with ``cap`` counted over the available nodes of ``nodes`` (a loop
    over request types, not nodes)."""
    cap = np.zeros(len(types.p), dtype=np.int64)
    for k, (p, g, c, m) in enumerate(zip(types.p, types.g, types.c, types.m)):
        xs = nodes.pflat[nodes.poff[p]:nodes.poff[p + 1]]
        cap[k] = np.count_nonzero((nodes.capG[xs] >= g) & (nodes.capC[xs] >= c)
                                  & (nodes.capM[xs] >= m))
    return types._replace(cap=cap)


#: a pass's run index (:mod:`fastsched.engine.runindex`), built inside the pass
#: (:func:`fastsched.engine.passes._new_index`): the table ``TR``, its free list
#: ``fr`` and ``meta``; ``top`` = [root, slots used, 1 if the pass may index];
#: per node its slots' bits (``elig``) and last entry (``last``); buffers of
#: ``ix_hold`` (``ids``, ``ibuf``); per request type its slot (-1: none), its
#: plans so far (``qn``) and the shortest limit of its jobs to come (``tmin``);
#: per slot its request (``sg/sc/sm``) and shortest run kept (``sth``)
Index = namedtuple("Index", ["TR", "fr", "meta", "top", "elig", "last", "ids", "ibuf", "slot",
                             "qn", "sg", "sc", "sm", "sth", "tmin"])
