"""The engine: both reservation models' event loops. The node-level (GPU-granular) one: heterogeneous nodes, overlapping
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
  :mod:`.counts` — the counts model's event loop (Cython, no Numba);
  :mod:`.driver` — runs either loop (reorders, checkpoints) and its result;
  :mod:`.plan` — the single pass and its decisions; :mod:`.kept` and
  :mod:`.undo` — a single pass's state kept for the next one over the same
  running jobs (the Scheduler's passes); :mod:`.inputs` — checks
  and layouts of the inputs;
* support: :mod:`.heap`, :mod:`.leafkernel` (kernels without reference
  counting), :mod:`.prefetch`, :mod:`.interrupt` (stopping a compiled run),
  and the
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
import importlib

#: public name -> the module of this package that defines it, loaded on first use so
#: that light modules (``.interrupt``) load without compiling or loading any kernel
_WHERE = {
    **dict.fromkeys(("check_node_jobs", "node_availability"), "inputs"),
    **dict.fromkeys(("EngineRun", "Progress", "drive"), "driver"),
    **dict.fromkeys(("run_nodes", "simulate_nodes"), "loop"),
    "run_counts": "counts",
    **dict.fromkeys(("BLOCKED", "OUTCOME_NAMES", "RESERVED", "START", "NodeDecisions",
                     "limit_reasons", "plan_nodes"), "plan"),
    "RunningJobs": "running",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    try:
        module = _WHERE[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
