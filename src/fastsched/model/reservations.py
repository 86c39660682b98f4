"""Advance reservations (Slurm's ``scontrol create reservation``): nodes set aside over
a time window, for maintenance (``Flags=MAINT``) or for some users' jobs. No other job
starts on a reserved node if it would still run when the window opens, and backfill
plans no job across one: the engine holds every reserved node whole over its windows,
as if a job held it. The jobs that run in a reservation (``--reservation``, MAGNETIC):
:mod:`fastsched.model.resvjobs`.

A DAILY or WEEKLY reservation repeats every day or week; :meth:`Reservations.windows`
lists its windows up to a horizon (the simulator's: the last submission plus the
longest time limit).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import InputError, UnsupportedError

#: Slurm's reservation flags that the model takes; the others are refused by name
#: (MAGNETIC: jobs that may use it are drawn to it; FLEX: its jobs may also run outside
#: it, :mod:`fastsched.model.resvjobs`)
FLAGS = ("MAINT", "IGNORE_JOBS", "DAILY", "WEEKLY", "SPEC_NODES", "OVERLAP", "MAGNETIC",
         "FLEX")
#: FLEX with these is refused: a FLEX member of a MAINT or OVERLAP reservation would
#: ignore the other reservations' windows (Slurm's _foreach_job_test_resv_overlap), and
#: a job drawn to a MAGNETIC one would run as a member anywhere
_NOT_WITH_FLEX = ("MAINT", "OVERLAP", "MAGNETIC")
_REPEAT = {"DAILY": 86_400, "WEEKLY": 7 * 86_400}
#: windows end before this (2**40 s, some 35,000 years: the engine packs times below it)
_LATEST = 1 << 40


@dataclass(frozen=True)
class Reservation:
    """One reservation: ``name``, ``start`` and ``end`` (seconds of simulated time,
    end > start), ``nodes`` (node indices), ``users`` / ``accounts`` (who may use it:
    :class:`fastsched.model.resvjobs.JobReservations`) and ``flags``."""

    name: str
    start: int
    end: int
    nodes: tuple
    users: tuple = ()
    accounts: tuple = ()
    flags: tuple = ()

    @property
    def period(self) -> int:
        """Seconds between repeats (0: once)."""
        return max((_REPEAT[f] for f in self.flags if f in _REPEAT), default=0)


@dataclass(frozen=True)
class Reservations:
    """The reservations of a run (:class:`Reservation` each), checked against a
    cluster of ``num_nodes`` nodes."""

    items: tuple = ()
    num_nodes: int = 0
    _names: dict = field(default_factory=dict, compare=False, repr=False)
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        for r in self.items:
            where = f"reservation {r.name!r}"
            if not r.name:
                raise InputError("a reservation needs a name", field="ReservationName")
            if r.name in self._names:
                raise InputError(f"{where} is defined twice", field="ReservationName")
            self._names[r.name] = r
            if int(r.end) <= int(r.start) or int(r.start) < 0 or int(r.end) >= _LATEST:
                raise InputError(f"{where}: end {r.end} must be after start {r.start} >= 0 "
                                 f"and before {_LATEST} s", field="EndTime")
            if not len(r.nodes):
                raise InputError(f"{where} has no nodes", field="Nodes")
            bad = [x for x in r.nodes if not 0 <= int(x) < self.num_nodes]
            if bad:
                raise InputError(f"{where}: node index {bad[0]} is not one of the cluster's "
                                 f"{self.num_nodes} nodes", field="Nodes")
            unknown = [f for f in r.flags if f not in FLAGS]
            if unknown:
                raise UnsupportedError(f"{where}: flag {unknown[0]} is not modelled (modelled: "
                                       f"{', '.join(FLAGS)})")
            both = [f for f in _NOT_WITH_FLEX if f in r.flags] if "FLEX" in r.flags else []
            if both:
                raise UnsupportedError(f"{where}: FLEX with {both[0]} is not modelled")
            if r.period and r.end - r.start >= r.period:
                raise InputError(f"{where}: a window of {r.end - r.start} s cannot repeat "
                                 f"every {r.period} s", field="Duration")

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, name: str) -> Reservation:
        return self._names[name]

    def windows(self, horizon: int):
        """``(start, end, nodes)`` arrays of every window that opens before ``horizon``
        (repeats included), one row per (window, node), by start: what the engine
        holds."""
        if "once" not in self._cache:       # the windows that do not repeat, built once
            self._cache["once"] = _joined([_occurrences(r, 0) for r in self.items
                                           if not r.period])
        parts = [self._cache["once"]] + [_occurrences(r, horizon) for r in self.items
                                         if r.period]
        start, end, node = _joined(parts)
        order = np.lexsort((node, end, start))
        return start[order], end[order], node[order]

    def windows_for_pass(self, now: int, span: int):
        """The windows a single pass at ``now`` holds, as :meth:`windows` has them, when
        every plan it makes would end by ``now + span`` without reservations: a window
        a plan waits for pushes it later by at most the window's length, so the horizon
        grows by the time covered by the windows it reaches, until it stops growing (16
        rounds at most: repeating windows far beyond may be left out)."""
        horizon = now + span
        for _ in range(16):
            start, end, node = self.windows(horizon)
            keep = end > now
            grown = now + span + _covered(np.maximum(start[keep], now), end[keep])
            if grown <= horizon:
                break
            horizon = grown
        return start[keep], end[keep], node[keep]

    def overlapping(self, start, end, alloc_offsets, alloc_nodes, horizon: int):
        """``(job, reservation name, node)`` for each started job (``start``/``end``
        arrays; its nodes ``alloc_nodes[alloc_offsets[i]:alloc_offsets[i + 1]]``) that ran
        on a reserved node while one of its windows was open (its first such entry);
        for the checker. Only the jobs' entries on reserved nodes are looked at."""
        by_node: dict[int, list[tuple]] = {}
        for s, e, x, name in self._rows(horizon):
            by_node.setdefault(x, []).append((s, e, name))
        job = np.repeat(np.arange(len(start)), np.diff(alloc_offsets))
        node = np.asarray(alloc_nodes, dtype=np.int64)
        on = np.isin(node, np.fromiter(by_node, dtype=np.int64)) & (start[job] >= 0)
        out, seen = [], set()
        for i, x in zip(job[on].tolist(), node[on].tolist()):
            hit = next((name for s, e, name in by_node[x] if s < end[i] and start[i] < e), None)
            if hit is not None and i not in seen:
                seen.add(i)
                out.append((i, hit, x))
        return out

    def _rows(self, horizon: int) -> list[tuple]:
        """(start, end, node, name) of every window opening before ``horizon``, by start."""
        rows = []
        for r in self.items:
            s, step = int(r.start), r.period
            while True:
                rows += [(s, s + int(r.end) - int(r.start), int(x), r.name) for x in r.nodes]
                s += step
                if not step or s >= horizon:
                    break
        rows.sort()
        return rows


def _occurrences(r: Reservation, horizon: int):
    """``(start, end, node)`` arrays of ``r``'s windows: the first, then each repeat
    that opens before ``horizon``, on each of its nodes."""
    first, length, step = int(r.start), int(r.end) - int(r.start), r.period
    count = 1 if not step else 1 + max(0, -(-(horizon - first) // step) - 1)
    starts = first + step * np.arange(count, dtype=np.int64)
    nodes = np.asarray(r.nodes, dtype=np.int64)
    start = np.repeat(starts, len(nodes))
    return start, start + length, np.tile(nodes, count)


def _joined(parts):
    """``(start, end, node)`` arrays of several such triples, end to end."""
    if not parts:
        return tuple(np.zeros(0, dtype=np.int64) for _ in range(3))
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(3))


def _covered(start, end) -> int:
    """The length of the union of the intervals [start, end)."""
    if not len(start):
        return 0
    order = np.argsort(start, kind="stable")
    start, end = start[order], end[order]
    reach = np.maximum.accumulate(end)          # furthest end covered so far
    before = np.concatenate(([start[0]], reach[:-1]))
    return int(np.maximum(end - np.maximum(start, before), 0).sum())


def check_jobs_held_off(jobs) -> None:
    """UnsupportedError for a job asking for no CPU, GPU or MB: a reserved node is held
    whole, and such a job would still fit there (Slurm's jobs hold at least one CPU)."""
    nothing = (jobs.cpus_per_node == 0) & (jobs.gpus_per_node == 0) & (jobs.mem_per_node == 0)
    if nothing.any():
        raise UnsupportedError(f"job {int(jobs.job_id[np.argmax(nothing)])} asks for no CPU, "
                               "GPU or memory: advance reservations cannot keep it off their "
                               "nodes")
