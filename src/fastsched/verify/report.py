"""What :func:`fastsched.verify` returns: violations, the report, the error it raises."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..model.errors import FastschedError
from ..model.policies import POLICIES as MODEL_POLICIES

__all__ = ["Violation", "VerifyReport", "ScheduleError", "VIOLATION_KINDS", "POLICIES"]

VIOLATION_KINDS = ("not_started", "early_start", "wrong_end", "bad_allocation", "overcommit",
                   "fcfs_order", "reservation_delayed", "could_start", "dependency",
                   "limit_exceeded", "exclusive_topo", "on_down_node", "attempt_overlap",
                   "killed_without_failure", "resumed_work", "reserved_node",
                   "outside_reservation",
                   "not_booted", "needless_configure", "resume_rate", "suspend_rate",
                   "bad_resize",
                   "preempt_exempt", "preemptor", "time_limit")
#: the policies a check can judge: those of the one table
POLICIES = tuple(MODEL_POLICIES)


class ScheduleError(FastschedError):
    """A schedule broke the rules :func:`verify` checks; ``report`` has them all."""

    def __init__(self, message: str, report: "VerifyReport | None" = None):
        super().__init__(message)
        self.report = report


@dataclass(frozen=True)
class Violation:
    kind: str       # one of VIOLATION_KINDS
    job_id: int
    time: int
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


@dataclass
class VerifyReport:
    violations: list[Violation]
    checked_jobs: int
    checks: list[str] = field(default_factory=list)
    #: checks asked for but not made, with why (e.g. a policy the schedule was not planned under)
    not_checked: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    def counts(self) -> dict[str, int]:
        """Number of violations per kind."""
        return dict(Counter(v.kind for v in self.violations))

    def kinds(self) -> set[str]:
        return {v.kind for v in self.violations}

    def raise_if_failed(self) -> None:
        if self.ok:
            return
        lines = [str(self)] + [f"  {v}" for v in self.violations[:10]]
        if len(self.violations) > 10:
            lines.append(f"  ... and {len(self.violations) - 10} more")
        raise ScheduleError("\n".join(lines), self)

    def __str__(self) -> str:
        checks = ", ".join(self.checks)
        skipped = "".join(f"; NOT CHECKED: {s}" for s in self.not_checked)
        if self.ok:
            return f"ok: {self.checked_jobs} jobs, checks: {checks}{skipped}"
        counts = ", ".join(f"{k} {c}" for k, c in sorted(self.counts().items()))
        return (f"{len(self.violations)} violations ({counts}) in {self.checked_jobs} jobs, "
                f"checks: {checks}{skipped}; first: {self.violations[0].message}")


