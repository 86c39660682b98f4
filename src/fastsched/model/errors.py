"""One exception family for fastsched.

Every error a user can cause derives from :class:`FastschedError`, so embedders
catch one type; the CLI turns these into a one-line message and exit code 2.
"""
from __future__ import annotations


class FastschedError(Exception):
    """Base class of every error fastsched raises on purpose."""


class InputError(FastschedError, ValueError):
    """Malformed input: a trace, config or request.

    Carries where the problem is (``file``, ``line``, ``field``) so the message
    names it, e.g. ``trace.swf:42: field 5 (allocated_processors): 'x' is not an integer``.
    """

    def __init__(self, message: str, *, file: str | None = None,
                 line: int | None = None, field: str | None = None):
        self.file = None if file is None else str(file)
        self.line = line
        self.field = field
        self.reason = message
        where = ""
        if self.file is not None:
            where = self.file + (f":{line}" if line is not None else "") + ": "
        elif line is not None:
            where = f"line {line}: "
        if field is not None:
            where += f"field {field}: "
        super().__init__(where + message)


class UnsupportedError(FastschedError):
    """A valid request that this version of the engine cannot schedule yet."""


class ConfigWarning(UserWarning):
    """A configuration key that changes scheduling in Slurm but that fastsched does not
    model (or models only in part). The message names the file and line; readers also
    collect these messages on their result (``Cluster.warnings``)."""
