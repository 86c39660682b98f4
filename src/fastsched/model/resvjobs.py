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

``Flags=FLEX``: a member is not bound to the reservation's nodes or windows (Slurm's
job_test_resv): it may also run on any other node of its partitions, before, during or
after the windows, keeping off other reservations' nodes while they are open, as any
job does (:mod:`fastsched.sim.resvlayout`; docs/lifecycle.md has what differs).

A job may name several reservations (``--reservation=a,b``): each must exist and
let it in, as one (Slurm's _get_resv_list; a name given twice counts once). Slurm queues
it once per reservation, in the order they were created (the file's), and starts it in
the first record that can start: it runs in whichever lets it start first, the one
defined first on a tie, by that one's rule (job_queue_rec_resv_list sets the record's
reservation, so job_test_resv applies its flags: a FLEX one in a list is FLEX for that
record). ``member`` is then the first of them (in the file's order) and ``listed``
marks them all.

``Flags=MAGNETIC``: a job naming no reservation that may use a magnetic one is drawn
to it (Slurm queues it once per magnetic reservation and once without): it runs in
whichever lets it start first, inside the reservation on a tie, as a member when
inside.
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
    #: bool (jobs x reservations): the MAGNETIC reservations each job is drawn to
    attracted: np.ndarray = field(default=None, compare=False, repr=False)
    #: bool (jobs x reservations): every reservation each job names (``--reservation``
    #: lists; None: its ``member`` alone)
    listed: np.ndarray = field(default=None, compare=False, repr=False)
    #: bool per reservation: running jobs run in it (a state rebuilt by
    #: :meth:`fastsched.Scheduler.from_state`; None: none)
    occupied: np.ndarray = field(default=None, compare=False, repr=False)

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
        listed = np.zeros((len(names), len(reservations.items)), dtype=bool)
        for row, name in enumerate(names):
            if not name:
                continue
            job = f"job row {row}" if job_ids is None else f"job {int(job_ids[row])}"
            user = None if users is None else str(users[row])
            account = None if accounts is None else str(accounts[row])
            for word in name.split(","):
                if word not in index:
                    raise InputError(f"{job}: requested reservation {word!r} is "
                                     "invalid (no such reservation)", field="reservation")
                if not may_use(reservations.items[index[word]], user, account):
                    raise InputError(f"{job}: access denied to requested reservation "
                                     f"{word!r} (user {user}, account {account})",
                                     field="reservation")
                listed[row, index[word]] = True
        member = np.where(listed.any(axis=1), listed.argmax(axis=1), -1).astype(np.int32)
        attracted = np.zeros((len(names), len(reservations.items)), dtype=bool)
        for k, r in enumerate(reservations.items):
            if "MAGNETIC" in r.flags:
                attracted[:, k] = (member < 0) & _may_use_all(r, users, accounts, len(names))
        return cls(reservations.items, reservations.num_nodes, member=member,
                   attracted=attracted, listed=listed)

    def __post_init__(self):
        super().__post_init__()
        if self.member is None:
            object.__setattr__(self, "member", np.zeros(0, dtype=np.int32))
        member = np.ascontiguousarray(self.member, dtype=np.int32)
        object.__setattr__(self, "member", member)
        attracted = np.zeros((len(member), len(self.items)), dtype=bool) \
            if self.attracted is None else np.asarray(self.attracted, dtype=bool)
        if attracted.shape != (len(member), len(self.items)):
            raise InputError(f"attracted is {attracted.shape}, not jobs x reservations "
                             f"{(len(member), len(self.items))}", field="reservation")
        object.__setattr__(self, "attracted", attracted)
        if len(member) and (member.min() < -1 or member.max() >= len(self.items)):
            raise InputError("a job's reservation index is outside the reservations",
                             field="reservation")
        listed = np.zeros_like(attracted)
        if self.listed is None:
            listed[np.flatnonzero(member >= 0), member[member >= 0]] = True
        else:
            listed = np.asarray(self.listed, dtype=bool)
            first = np.where(listed.any(axis=1), listed.argmax(axis=1), -1) \
                if listed.shape == attracted.shape else None
            if first is None or (first != member).any():
                raise InputError("listed must be jobs x reservations, each job's first "
                                 "its member", field="reservation")
        object.__setattr__(self, "listed", listed)
        occupied = np.zeros(len(self.items), dtype=bool) if self.occupied is None else \
            np.asarray(self.occupied, dtype=bool)
        if occupied.shape != (len(self.items),):
            raise InputError("occupied needs one entry per reservation", field="reservation")
        object.__setattr__(self, "occupied", occupied)

    @property
    def used(self) -> np.ndarray:
        """Indices of the reservations some job runs in or is drawn to, or running jobs
        run in (``occupied``), ascending."""
        return np.flatnonzero(self.listed.any(axis=0) | self.attracted.any(axis=0)
                              | self.occupied)

    def take(self, rows) -> "JobReservations":
        """The memberships of job ``rows`` (e.g. the pending jobs of
        :meth:`fastsched.SimulationResult.state_at`, for
        :meth:`fastsched.Scheduler.from_state`)."""
        rows = np.asarray(rows, dtype=np.int64)
        return JobReservations(self.items, self.num_nodes, member=self.member[rows],
                               attracted=self.attracted[rows], listed=self.listed[rows],
                               occupied=self.occupied)

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


def _may_use_all(r: Reservation, users, accounts, n: int) -> np.ndarray:
    """:func:`may_use` for every job at once (bool per job)."""
    users = None if users is None else np.asarray(users, dtype=object).astype(str)
    accounts = None if accounts is None else np.asarray(accounts, dtype=object).astype(str)
    ok = _approve_all(r.users, users, n) & _approve_all(r.accounts, accounts, n)
    return ok if users is None else ok | (users == "root")


def _approve_all(names: tuple, who, n: int) -> np.ndarray:
    if not names:
        return np.ones(n, dtype=bool)
    if who is None:
        return np.zeros(n, dtype=bool)
    denied = [x[1:] for x in names if x.startswith("-")]
    return ~np.isin(who, denied) if denied else np.isin(who, list(names))


def _approves(names: tuple, who: str | None) -> bool:
    if not names:
        return True
    denied = [n[1:] for n in names if n.startswith("-")]
    if denied:
        return who is not None and who not in denied
    return who is not None and who in names


def members_of(resv: Reservations | None) -> JobReservations | None:
    """``resv`` when some job runs in or is drawn to one of its reservations, else
    None. UnsupportedError for a MAGNETIC reservation without the jobs (the
    :class:`Reservations` alone: who is drawn to it is unknown)."""
    if isinstance(resv, JobReservations):
        return resv if len(resv.used) else None
    magnetic = [r.name for r in (resv.items if resv else ()) if "MAGNETIC" in r.flags]
    if magnetic:
        raise UnsupportedError(f"reservation {magnetic[0]!r} is MAGNETIC: give the jobs' "
                               "reservations (JobReservations.of, Workload.reservations)")
    return None
