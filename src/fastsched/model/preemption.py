"""Preemption: which running jobs a pending one may stop, how, and in which order.

Slurm's two plugins (``src/plugins/preempt/``), as ``src/interfaces/preempt.c``
drives them:

* ``preempt/partition_prio``: a job in partition P may preempt a job running in
  partition Q when Q's ``PriorityTier`` is lower than P's (and Q shares nodes with P;
  only jobs on P's nodes can free anything for it). The victim's mode is Q's
  ``PreemptMode`` (else the global one), its grace time Q's ``GraceTime``.
* ``preempt/qos``: a job of QOS A may preempt a job of QOS B when B is in A's
  ``Preempt`` list (never within one QOS: ``WITHIN`` is not modelled). The victim's
  mode is B's ``PreemptMode`` (else the global one), its grace time B's ``GraceTime``.

A running job is exempt while it has run less than ``PreemptExemptTime`` (the QOS's,
else the global one: ``acct_policy_get_preemptable_time``), or when its mode is OFF.
Candidates are ordered as ``slurm_find_preemptable_jobs`` sorts them
(``_sort_by_prio``, ascending): the plugin's priority, ``tier << 16`` (QOS
``Priority`` << 16 under preempt/qos, capped at 0xffff) plus the job's node count,
so lower tiers and smaller jobs go first; Slurm's qsort leaves ties unordered, here
the youngest (latest start) goes first, then the highest job index.

Modes: ``CANCEL`` (the victim ends PREEMPTED), ``REQUEUE`` (it ends PREEMPTED and
is requeued, as a node failure requeues it; a job that may not be requeued is
cancelled instead, as ``slurm_job_preempt`` falls back to SIGKILL), ``OFF`` (never
preempted). ``SUSPEND`` and ``GANG`` are refused (:data:`SUSPEND_REFUSED` says why;
docs/lifecycle.md, "Why PreemptMode=SUSPEND is not modelled").
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InputError, UnsupportedError

__all__ = ["Preemption", "PREEMPT_TYPES", "OFF", "CANCEL", "REQUEUE", "parse_mode",
           "SUSPEND_REFUSED"]

#: why PreemptMode=SUSPEND (and GANG) is refused: what Slurm does, which the nodes
#: model cannot hold
SUSPEND_REFUSED = (
    "SUSPEND,GANG is not modelled: Slurm starts the preemptor at once on the cores of "
    "the jobs it suspends, which keep their memory and GRES (GPUs), and its gang "
    "scheduler resumes each when no higher-tier job uses its cores any more (under "
    "preempt/qos, in one partition, it time-slices them); the node engine counts CPUs per "
    "node without core identities, and holds each running job whole until one end. "
    "Use REQUEUE or CANCEL")

PREEMPT_TYPES = ("preempt/none", "preempt/partition_prio", "preempt/qos")
#: a victim class's mode (per partition or QOS)
OFF, CANCEL, REQUEUE = 0, 1, 2
_MODES = {"OFF": OFF, "CANCEL": CANCEL, "REQUEUE": REQUEUE}


def parse_mode(text: str, *, field: str, file=None, line=None) -> int:
    """A ``PreemptMode`` value: OFF, CANCEL or REQUEUE (SUSPEND and the ``GANG`` flag
    are refused with an UnsupportedError: :data:`SUSPEND_REFUSED`; so is ``PRIORITY``)."""
    words = [w.strip().upper() for w in str(text).split(",") if w.strip()]
    if not words:
        raise InputError("empty PreemptMode", file=file, line=line, field=field)
    base = [w for w in words if w in _MODES or w == "SUSPEND"]
    other = [w for w in words if w not in _MODES and w != "SUSPEND"]
    if "SUSPEND" in words or "GANG" in other:
        raise UnsupportedError(f"{field}={text}: {SUSPEND_REFUSED}")
    unknown = [w for w in other if w not in ("PRIORITY", "WITHIN")]
    if unknown or len(base) != 1:
        raise InputError(f"{text!r}: expected one of OFF, CANCEL, REQUEUE", file=file,
                         line=line, field=field)
    if other:
        raise UnsupportedError(f"{field}={text}: the {', '.join(other)} flag is not modelled")
    return _MODES[base[0]]


def _cycle(may) -> list:
    """A cycle of the relation ``may`` (class indices, the first repeated last), or []."""
    state = [0] * len(may)           # 0 new, 1 on the path, 2 done

    def visit(a, path):
        state[a] = 1
        for b in np.flatnonzero(may[a]).tolist():
            if state[b] == 1:
                return path[path.index(b):] + [b] if b in path else [a, b]
            if state[b] == 0:
                found = visit(b, path + [b])
                if found:
                    return found
        state[a] = 2
        return []
    for a in range(len(may)):
        if state[a] == 0:
            found = visit(a, [a])
            if found:
                return found
    return []


@dataclass(frozen=True)
class Preemption:
    """What may preempt what, for a run's jobs (the workload's order).

    ``kind``: one of :data:`PREEMPT_TYPES`. Each job has a class: its QOS under
    preempt/qos (``job_class``), the partition it runs in under partition_prio
    (``job_class`` unused: None). Per class: ``may[a, b]`` (a job of class a may
    preempt one of class b), ``mode`` (OFF/CANCEL/REQUEUE as a victim), ``grace``
    (seconds a victim runs on once preempted), ``exempt`` (seconds a job runs before
    it may be preempted) and ``level`` (the plugin's priority tier of the class: a
    partition's PriorityTier or a QOS's Priority, for the victims' order).
    ``backfill`` (default True, Slurm's behaviour): the plans of jobs that may preempt
    (EASY's reservations, conservative's plans) count their candidates' resources as
    free from now, as Slurm's backfill will-run test with preemptees always does
    (:mod:`fastsched.engine.preemptplan`); False (no Slurm setting does this) plans
    them on the free resources only."""

    kind: str
    may: np.ndarray
    mode: np.ndarray
    grace: np.ndarray
    exempt: np.ndarray
    level: np.ndarray
    job_class: np.ndarray | None = None
    backfill: bool = True

    def __post_init__(self):
        if self.kind not in PREEMPT_TYPES:
            raise InputError(f"PreemptType {self.kind!r}: expected one of "
                             f"{', '.join(PREEMPT_TYPES)}", field="PreemptType")
        c = len(self.mode)
        if np.shape(self.may) != (c, c) or any(len(a) != c for a in (self.grace, self.exempt,
                                                                    self.level)):
            raise InputError(f"preemption tables must cover the {c} classes", field="may")
        if (np.asarray(self.grace) < 0).any() or (np.asarray(self.exempt) < 0).any():
            raise InputError("GraceTime and PreemptExemptTime must be >= 0",
                             field="GraceTime")
        cycle = _cycle(np.asarray(self.may, dtype=bool) & (np.asarray(self.mode) != OFF)[None, :])
        if cycle:
            raise InputError(f"classes {' -> '.join(map(str, cycle))} may preempt each other "
                             "in a cycle: their jobs would preempt each other forever",
                             field="Preempt")

    @property
    def active(self) -> bool:
        """Whether any job may preempt any other."""
        return self.kind != "preempt/none" and bool(
            (np.asarray(self.may) & (np.asarray(self.mode) != OFF)[None, :]).any())

    @classmethod
    def none(cls) -> "Preemption":
        z = np.zeros(0, dtype=np.int64)
        return cls("preempt/none", np.zeros((0, 0), dtype=bool), z, z, z, z)

    @classmethod
    def partition_prio(cls, cluster, mode: int = CANCEL, exempt: int = 0) -> "Preemption":
        """preempt/partition_prio over ``cluster``'s partitions: their PriorityTier,
        PreemptMode (``preempt_mode``, "" = the global ``mode``) and GraceTime."""
        parts = cluster.partitions
        tier = np.array([p.priority_tier for p in parts], dtype=np.int64)
        modes = np.array([mode if not p.preempt_mode else
                          parse_mode(p.preempt_mode, field=f"PartitionName={p.name} PreemptMode")
                          for p in parts], dtype=np.int64)
        member = np.zeros((len(parts), cluster.num_nodes), dtype=bool)
        for k, p in enumerate(parts):
            member[k, p.nodes] = True
        share = (member.astype(np.int64) @ member.T.astype(np.int64)) > 0
        may = share & (tier[:, None] > tier[None, :])
        grace = np.array([p.grace_time for p in parts], dtype=np.int64)
        return cls("preempt/partition_prio", may, modes, grace,
                   np.full(len(parts), int(exempt), dtype=np.int64), tier)

    @classmethod
    def qos(cls, config, job_qos, mode: int = CANCEL, exempt: int = 0) -> "Preemption":
        """preempt/qos over the QOS of a :class:`fastsched.policy.config.SchedulerConfig`
        (their ``Preempt`` lists, ``PreemptMode``, ``GraceTime``, ``PreemptExemptTime``,
        ``Priority``); ``job_qos``: each job's index into ``config.qos_names``."""
        names = config.qos_names
        index = {q: k for k, q in enumerate(names)}
        c = len(names)
        may = np.zeros((c, c), dtype=bool)
        modes = np.full(c, mode, dtype=np.int64)
        grace = np.zeros(c, dtype=np.int64)
        ex = np.full(c, int(exempt), dtype=np.int64)
        level = np.zeros(c, dtype=np.int64)
        for k, q in enumerate(names):
            entry = config.qos[q]
            for other in entry.Preempt:
                if other not in index:
                    raise InputError(f"Preempt names unknown QOS {other!r}",
                                     file=config.source, field=f"qos.{q}.Preempt")
                may[k, index[other]] = other != q
            if entry.PreemptMode:
                modes[k] = parse_mode(entry.PreemptMode, field=f"qos.{q}.PreemptMode",
                                      file=config.source)
            grace[k] = entry.GraceTime
            if entry.PreemptExemptTime is not None:
                ex[k] = entry.PreemptExemptTime
            level[k] = min(int(entry.Priority), 0xFFFF)
        return cls("preempt/qos", may, modes, grace, ex, level,
                   np.asarray(job_qos, dtype=np.int64))
