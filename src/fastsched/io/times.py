"""Slurm time limits: ``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``,
``D-HH:MM:SS``, ``UNLIMITED`` (as slurm.conf, sbatch and sacct write them)."""
from __future__ import annotations

from ..model.errors import InputError
from ..model.validation import MAX_SECONDS

__all__ = ["parse_time", "format_time"]


def format_time(seconds: int | None) -> str:
    """Seconds as Slurm writes a time limit: ``D-HH:MM:SS``, ``HH:MM:SS`` or ``UNLIMITED``."""
    if seconds is None:
        return "UNLIMITED"
    seconds = int(seconds)
    if seconds < 0:
        raise InputError(f"negative time {seconds}")
    d, rest = divmod(seconds, 86_400)
    h, rest = divmod(rest, 3_600)
    m, s = divmod(rest, 60)
    return f"{d}-{h:02d}:{m:02d}:{s:02d}" if d else f"{h:02d}:{m:02d}:{s:02d}"


def parse_time(text: str) -> int | None:
    """A Slurm time string as seconds (None for UNLIMITED/INFINITE).

    Accepts ``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS``.
    Raises InputError (without location; callers add it).
    """
    t = text.strip()
    if t.upper() in ("UNLIMITED", "INFINITE", "-1"):
        return None
    days = 0
    if "-" in t:
        d, _, t = t.partition("-")
        if not (d.isascii() and d.isdigit()):
            raise InputError(f"bad time {text!r}")
        days = int(d)
        parts = t.split(":")
        if not 1 <= len(parts) <= 3:
            raise InputError(f"bad time {text!r}")
        parts = parts + ["0"] * (3 - len(parts))          # D-HH, D-HH:MM, D-HH:MM:SS
    else:
        parts = t.split(":")
        if len(parts) == 1:
            parts = ["0", parts[0], "0"]                    # MM
        elif len(parts) == 2:
            parts = ["0", parts[0], parts[1]]               # MM:SS
        elif len(parts) != 3:
            raise InputError(f"bad time {text!r}")
    if not all(p.isascii() and p.isdigit() for p in parts):
        raise InputError(f"bad time {text!r}")
    h, m, s = (int(p) for p in parts)
    seconds = ((days * 24 + h) * 60 + m) * 60 + s
    if seconds > MAX_SECONDS:
        raise InputError(f"time {_short(text)} is out of range (at most {MAX_SECONDS:,} s)")
    return seconds


def _short(text: str) -> str:
    """``text`` quoted, cut to a readable length."""
    return repr(text) if len(text) <= 30 else repr(text[:12] + "..." + text[-6:])
