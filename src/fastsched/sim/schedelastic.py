"""Node ranges (``--nodes=MIN-MAX``, ``Lifecycle.nodes_min``) in the embeddable
:class:`fastsched.Scheduler`: a pass plans each job on its MAX nodes and, when that
start is not now, starts it now on as many as fit, at least MIN, with the
simulator's code (:func:`fastsched.engine.passes._narrow_now`, through
:func:`fastsched.engine.plan.plan_kept`'s ``nodes_min``). Its START decision holds
the nodes it got (``Decisions.nodes_of``), :meth:`Scheduler.apply` holds them for
its time limit, and the caller runs it for ``ceil(runtime x MAX / n)`` seconds on
``n`` nodes (:mod:`fastsched.model.elastic`); a ``--no-kill`` one shrinks from
there at :meth:`Scheduler.fail_nodes` (:mod:`.schedrequeue`).
"""
from __future__ import annotations

import numpy as np

from ..model.errors import UnsupportedError
from ..model.jobs import JobTable


def check_ranges(lifecycle, placement, **refused) -> None:
    """UnsupportedError naming the Scheduler's options in ``refused`` (not None: given)
    that node ranges in ``lifecycle`` are not modelled with, nor topology ``placement``
    (a range starts on fewer nodes by best fit alone, as :func:`fastsched.simulate`'s;
    GPU groups alone are fine)."""
    if lifecycle is None or not lifecycle.ranged:
        return
    topology = placement is not None and placement.levels.shape[0] > 0
    given = [name for name, value in refused.items() if value is not None] + \
        (["topology placement"] if topology else [])
    if given:
        raise UnsupportedError(f"node ranges (nodes_min) with {', '.join(given)} are not "
                               "modelled in the Scheduler")


def asking_min(jobs: JobTable, low: np.ndarray) -> JobTable:
    """``jobs`` asking for their fewest nodes ``low``: what must fit on the available
    nodes for a job of a range to be planned at all (it may start narrow there)."""
    out = jobs.take(np.arange(len(jobs)))
    out.num_nodes = np.asarray(low, dtype=out.num_nodes.dtype)
    return out
