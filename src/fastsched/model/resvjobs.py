"""Jobs that use an advance reservation (``sbatch --reservation=name``): which job is a
member of which reservation, with Slurm's access rule checked at input.

A member job runs only on its reservation's nodes (within its partitions), starting
and ending (by its time limit) inside one of its windows; for it, the reservation's
nodes are free inside the windows. Slurm refuses at submission a job naming a
reservation that does not exist ("Requested reservation is invalid") or that it may
not use ("Access denied to requested reservation"): both are an InputError here.

Access (``scontrol create reservation``): each access field given (``Users``,
``Accounts``) must approve the job; a field listing names allows only them, one
listing ``-name`` denies those and allows the others; user ``root`` may use every
reservation. A reservation with neither field (a maintenance window written without
``Users=root``) lets every job in.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import InputError, UnsupportedError
from .reservations import Reservation, Reservations


@dataclass(frozen=True)
class JobReservations(Reservations):
    """:class:`Reservations` with each job's membership: ``member`` (int32 per job row,
    the index of the reservation in ``items`` the job runs in, -1: none). Build it with
    :meth:`of`; wherever ``advance_reservations=`` takes :class:`Reservations`
    (``simulate``, ``verify``), this one also makes the member jobs use them."""

    member: np.ndarray = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, reservations: Reservations, names, users=None, accounts=None,
           job_ids=None) -> "JobReservations":
        """``reservations`` with the jobs naming one of them in ``names`` (a str per job
        row, "" or None: none); ``users`` / ``accounts``: each job's user and account
        name (None: unknown, then only reservations with no such access field can be
        used). InputError naming the job (its id in ``job_ids``, else its row) and field
        ``reservation`` for a name that is not a reservation or that it may not use."""
        index = {r.name: k for k, r in enumerate(reservations.items)}
        names = ["" if n is None else str(n) for n in names]
        member = np.full(len(names), -1, dtype=np.int32)
        for row, name in enumerate(names):
            if not name:
                continue
            job = f"job row {row}" if job_ids is None else f"job {int(job_ids[row])}"
            if "," in name:
                raise UnsupportedError(f"{job}: --reservation={name}: a list of "
                                       "reservations is not modelled (name one)")
            if name not in index:
                raise InputError(f"{job}: requested reservation {name!r} is "
                                 "invalid (no such reservation)", field="reservation")
            r = reservations.items[index[name]]
            user = None if users is None else str(users[row])
            account = None if accounts is None else str(accounts[row])
            if not may_use(r, user, account):
                raise InputError(f"{job}: access denied to requested reservation "
                                 f"{name!r} (user {user}, account {account})",
                                 field="reservation")
            member[row] = index[name]
        return cls(reservations.items, reservations.num_nodes, member=member)

    def __post_init__(self):
        super().__post_init__()
        if self.member is None:
            object.__setattr__(self, "member", np.zeros(0, dtype=np.int32))
        member = np.ascontiguousarray(self.member, dtype=np.int32)
        object.__setattr__(self, "member", member)
        if len(member) and (member.min() < -1 or member.max() >= len(self.items)):
            raise InputError("a job's reservation index is outside the reservations",
                             field="reservation")

    @property
    def used(self) -> np.ndarray:
        """Indices of the reservations some job runs in, ascending."""
        return np.unique(self.member[self.member >= 0])

    def check_jobs(self, num_jobs: int) -> None:
        """InputError unless there is one membership per job."""
        if len(self.member) != num_jobs:
            raise InputError(f"advance reservations name the reservation of "
                             f"{len(self.member)} jobs, the table has {num_jobs}",
                             field="reservation")


def may_use(r: Reservation, user: str | None, account: str | None) -> bool:
    """Slurm's access rule (see the module) for a job of ``user`` in ``account``."""
    if user == "root":
        return True
    return _approves(r.users, user) and _approves(r.accounts, account)


def _approves(names: tuple, who: str | None) -> bool:
    if not names:
        return True
    denied = [n[1:] for n in names if n.startswith("-")]
    if denied:
        return who is not None and who not in denied
    return who is not None and who in names


def members_of(resv: Reservations | None) -> JobReservations | None:
    """``resv`` when some job runs in one of its reservations, else None."""
    if isinstance(resv, JobReservations) and len(resv.used):
        return resv
    return None
