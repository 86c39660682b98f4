"""Named scheduling policies, registered in one table (not spread through ``if``s)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InputError


#: "every blocked job gets a reservation" as a reservation depth
UNLIMITED = 1 << 62


@dataclass(frozen=True)
class Policy:
    """A policy as the engines run it: two numbers (:meth:`kernel_rules`), no code.

    ``stop_at_head``: no job passes the first one that cannot start now.
    ``reserves``: which blocked jobs get a reservation in a pass: "head" (the
    first, only to say when it will start), "depth" (the first ``reserve_depth``)
    or "all".
    """

    name: str
    stop_at_head: bool
    reserves: str
    description: str

    @property
    def uses_reservations(self) -> bool:
        """Whether a job may pass a reserved one (backfilling)."""
        return not self.stop_at_head

    def kernel_rules(self, reserve_depth: int = 1) -> tuple[bool, int]:
        """(stop at head?, reservations per pass) as the kernels take them."""
        depth = {"head": 1, "depth": reserve_depth, "all": UNLIMITED}[self.reserves]
        return self.stop_at_head, depth


POLICIES: dict[str, Policy] = {
    "fcfs": Policy("fcfs", True, "head",
                   "first come, first served: start jobs in queue order while they fit; "
                   "the first job that does not fit blocks every later one"),
    "easy": Policy("easy", False, "depth",
                   "EASY backfilling (Lifka): FCFS, then the first reserve_depth blocked jobs "
                   "get reservations; a later job starts now only if it fits now and delays "
                   "no reservation"),
    "conservative": Policy("conservative", False, "all",
                           "conservative backfilling (Mu'alem and Feitelson): every pending job, "
                           "in queue order, gets the earliest start that delays no earlier job; "
                           "re-planned from scratch every pass"),
}


#: reservation model -> the engine that plans with it: "counts" (free-node counts, the
#: textbook algorithms; the pool engine), "nodes" (concrete nodes and GPU counts) or
#: "slurm" (Slurm 22.05's backfill cycle: whole nodes reserved; a cycle per event)
RESERVATION_MODELS = {"counts": "pool", "nodes": "nodes", "slurm": "slurm"}


def check_reservations(reservations) -> str | None:
    """A reservation model name, or None (the caller's default rule)."""
    if reservations is not None and reservations not in RESERVATION_MODELS:
        raise InputError(f"unknown reservation model {reservations!r}; choose one of "
                         f"{sorted(RESERVATION_MODELS)}", field="reservations")
    return reservations


def get_policy(name: str) -> Policy:
    try:
        return POLICIES[name]
    except KeyError:
        raise InputError(f"unknown policy {name!r}; choose one of {sorted(POLICIES)}",
                         field="policy") from None


def check_reserve_depth(reserve_depth) -> int:
    """EASY's number of reservations: an integer >= 1."""
    if isinstance(reserve_depth, bool) or not isinstance(reserve_depth, (int, np.integer)) \
            or reserve_depth < 1:
        raise InputError(f"reserve_depth must be an integer >= 1, got {reserve_depth!r}",
                         field="reserve_depth")
    return int(reserve_depth)
