"""The node-level (GPU-granular) engine: heterogeneous nodes, overlapping
partitions, partial-node jobs, unavailable nodes, dependencies, limits and
topology, behind :func:`run_nodes` (the event loop) and :func:`plan_nodes`
(one pass on a given state).

Semantics: docs/gpu-semantics.md; the executable definition is
``tests/naive_nodes.py``, and this engine must give identical starts, nodes
and GPU masks. The whole event loop runs inside compiled (Numba) kernels.

Concepts, one module each:

* :mod:`.profile` — per-node free-time profiles (ragged breakpoints);
* :mod:`.earliest` — matching: a job's earliest start and nodes, by scan or
  from the run index (:mod:`.runindex`);
* :mod:`.freenow` — free-now counts per request type (skip passes, stop walks);
* :mod:`.limits` — limit groups' caps and usage;
* :mod:`.blocks` — --exclusive=topo leaf groups held whole;
* :mod:`.running` — running jobs and the per-node running lists;
* :mod:`.passes` — one scheduling pass; :mod:`.loop` — the event loop;
  :mod:`.plan` — the single pass and its decisions; :mod:`.inputs` — checks
  and layouts of the inputs;
* support: :mod:`.heap`, :mod:`.leafkernel` (kernels without reference
  counting), :mod:`.prefetch`, :mod:`.interrupt` (stopping a compiled run),
  :mod:`._jitcache` (Numba's cache keyed on every reachable module), and the
  Cython kernels ``fastsched.engine._kernels`` (kernels/_kernels.pyx: the
  pool engine).

State: the kernels take a few named structures (:mod:`.state`), each built in
one Python function: the :class:`~.state.Profile`, :class:`~.state.Running`
lists, :class:`~.state.FreeNow` counts, :class:`~.state.Nodes`,
:class:`~.state.RequestTypes`, :class:`~.state.Jobs`, :class:`~.state.Limits`,
:class:`~.state.Topology`, :class:`~.state.Outputs`, the pass's
:class:`~.state.Rules`, the loop's :class:`~.state.Events` and
:class:`~.state.Deps`, and a pass's run :class:`~.state.Index`.
"""
from . import _jitcache  # noqa: F401  (first: kernels compiled below are keyed on it)
from .inputs import POLICY_CODES, check_node_jobs, node_availability
from .loop import NodeRun, Progress, run_nodes, simulate_nodes
from .plan import (BLOCKED, OUTCOME_NAMES, RESERVED, START, NodeDecisions, limit_reasons,
                   plan_nodes)
from .running import RunningJobs

__all__ = ["simulate_nodes", "run_nodes", "NodeRun", "Progress", "limit_reasons", "plan_nodes",
           "RunningJobs", "NodeDecisions", "check_node_jobs", "node_availability",
           "POLICY_CODES", "OUTCOME_NAMES", "START", "RESERVED", "BLOCKED"]
