"""The scheduler's global slurm.conf keys, as read (``fastsched.io.slurmconf``).

Kept so that a site's configuration travels with its cluster: what the engine models
is applied by the commands that take it (``SchedulerParameters`` bf_resolution and
bf_window), the rest is data plus a warning from the reader.
"""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["SlurmSettings"]


@dataclass
class SlurmSettings:
    """Global keys of a slurm.conf.

    ``scheduler_parameters``: ``SchedulerParameters`` as a dict, lower-case option
    -> value (an int where the value is a whole number, True for a bare flag such
    as ``bf_continue``). ``priority_weights``: ``PriorityWeightAge`` and friends,
    keyed by what follows ``PriorityWeight`` (``"Age"``, ``"FairShare"``,
    ``"TRES"`` keeps its text). ``priority_decay_half_life``: seconds (None: not
    set; 0: no decay). ``other``: every other global key as written (key as spelled
    -> value). ``cloud_nodes``: the names of the nodes with ``State=CLOUD`` (powered
    down until first used: :mod:`fastsched.model.power`).
    """

    cluster_name: str = ""
    scheduler_type: str = "sched/backfill"
    scheduler_parameters: dict = field(default_factory=dict)
    select_type: str = "select/cons_tres"
    select_type_parameters: str = ""
    priority_type: str = "priority/basic"
    priority_weights: dict = field(default_factory=dict)
    priority_decay_half_life: int | None = None
    other: dict = field(default_factory=dict)
    cloud_nodes: tuple = ()

    def bf_resolution(self) -> int | None:
        """``bf_resolution`` in seconds (None: not set)."""
        value = self.scheduler_parameters.get("bf_resolution")
        return value if isinstance(value, int) and value > 0 else None

    def bf_window(self) -> int | None:
        """``bf_window`` in seconds (Slurm gives it in minutes; None: not set)."""
        value = self.scheduler_parameters.get("bf_window")
        return value * 60 if isinstance(value, int) and value > 0 else None
