"""Checkpoints of a long replay, and resuming from one.

The node engine's event loop can pause at an instant boundary and go on exactly
as if it had never stopped (:data:`fastsched.engine.interrupt.PAUSE`). A checkpoint is
the loop's state at such a pause (queue, running jobs, profile, limits in use)
together with the queue-order function's own state (usage, decay, priorities:
a site run's whole fair-share history), written every ``every`` seconds of wall
time. Resuming loads it and goes on, so the schedule is byte-identical to an
uninterrupted run's. slurmctld's state save does the same for a daemon.

The state is pickled with cloudpickle, because the queue-order functions are
closures; a checkpoint is for the same fastsched version, and is written to a
temporary file and renamed, so a crash while writing leaves the previous one.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
import time

from ..model.errors import InputError

#: what a checkpoint file starts with (after pickling): its format, changed whenever
#: the saved loop state changes shape (a field of the compiled state, the queue
#: window), so that an older file is refused by name instead of failing inside the loop
FORMAT = "fastsched-checkpoint-5"


class Checkpoints:
    """Writes a run's state to ``path`` every ``every`` seconds (0: at every pause
    the run can make); ``header`` (any picklable value, e.g. the command line)
    is stored with it."""

    def __init__(self, path, every: float, header=None):
        if every < 0:
            raise InputError(f"checkpoint interval must be >= 0 s, got {every}",
                             field="checkpoint_every")
        self.path, self.every, self.header = os.fspath(path), float(every), header
        self.next = time.monotonic() + self.every
        self.saved = 0

    def due(self) -> bool:
        return time.monotonic() >= self.next

    def save(self, state) -> None:
        """Write ``state`` atomically (temporary file in the same folder, then rename)."""
        import cloudpickle
        folder = os.path.dirname(os.path.abspath(self.path))
        fd, tmp = tempfile.mkstemp(prefix=".checkpoint-", dir=folder)
        try:
            os.chmod(tmp, 0o666 & ~_umask())        # as open() would have made it
            with os.fdopen(fd, "wb") as f:
                cloudpickle.dump({"format": FORMAT, "header": self.header, "state": state}, f)
            os.replace(tmp, self.path)
        except BaseException:           # Ctrl-C too: the previous checkpoint stays whole
            with contextlib.suppress(FileNotFoundError):     # (gone once renamed)
                os.unlink(tmp)
            raise
        self.saved += 1
        self.next = time.monotonic() + self.every


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def load(path):
    """(header, state) of a checkpoint file; InputError if it is not one."""
    import pickle
    try:
        with open(path, "rb") as f:
            data = pickle.load(f)
    except OSError:
        raise
    except Exception as e:
        raise InputError(f"not a fastsched checkpoint ({type(e).__name__})", file=path) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError("not a fastsched checkpoint (or one of another version)", file=path)
    return data["header"], data["state"]
