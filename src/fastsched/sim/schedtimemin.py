"""``--time-min`` in the embeddable :class:`fastsched.Scheduler`: the node engine's
pass (:mod:`fastsched.engine.timemin`) over the Scheduler's queue, as
:func:`fastsched.simulate` runs it with ``time_min``. A job that cannot start now with
its time limit starts with a shorter one, at least its time minimum; its START
decision carries that limit (``Decisions.time_limit``), which :meth:`Scheduler.apply`
holds its nodes for (its planned end) and the caller ends it by. With a lifecycle and
node events, each attempt is planned anew (a requeued one asks for its own limit and
time minimum again) and a shrunk ``--no-kill`` attempt keeps the limit it started with,
as :func:`fastsched.simulate` runs them. With advance reservations, their windows
cut limits as the pass's reservations do, and a member job (``--reservation``) starts
with the limit its window leaves (a window's end is a hold on its twin node,
:mod:`.resvlayout`), as :func:`fastsched.simulate` cuts them; not in a FLEX reservation.
With preemption, as :func:`fastsched.simulate`: a cut start on free resources comes
before any preemption, and a job preempts for its own limit (docs/lifecycle.md).
"""
from __future__ import annotations

import numpy as np

from ..model.errors import InputError, UnsupportedError
from ..model.resvjobs import members_of
from ..model.timemin import check_time_min
from .resvlayout import flex_used


def scheduler_time_min(jobs, time_min, reservations=None, **refused) -> np.ndarray | None:
    """``time_min`` per row of ``jobs`` (int64; None: no job has one), checked; the
    Scheduler's options in ``refused`` (not None: given) are not modelled with it, nor
    member jobs of a FLEX reservation of ``reservations`` (the Scheduler's advance
    reservations), as :func:`fastsched.simulate` refuses them: such a job may start on
    either side of the reservation's edge, and its cut limit is measured on one side's
    holds."""
    if time_min is None:
        return None
    if jobs is None:
        raise InputError("time_min describes the jobs of a table: pass it as jobs=",
                         field="time_min")
    tmin = check_time_min(time_min, jobs.time_limit)
    if not (tmin > 0).any():
        return None
    given = [name for name, value in refused.items() if value is not None]
    if given:
        raise UnsupportedError(f"time_min with {', '.join(given)} is not modelled in the "
                               "Scheduler yet")
    members = members_of(reservations)
    if members is not None and flex_used(members):
        raise UnsupportedError("time_min with jobs running in a FLEX reservation is not "
                               "modelled")
    return tmin


def pass_limits(d, runnable: np.ndarray, asked: np.ndarray) -> np.ndarray | None:
    """The limit each queued job starts with (queue order): the pass's for the jobs it
    planned (``runnable``), the ``asked`` limits for the others; None without
    ``time_min``."""
    if d.time_limit is None:
        return None
    out = np.asarray(asked, dtype=np.int64).copy()
    out[runnable] = d.time_limit
    return out
