"""Stopping a compiled run when asked (Ctrl-C, SIGTERM), and watching it go.

A compiled kernel never returns to the interpreter on its own, so Python's
signal handlers cannot run while it does. Long kernels therefore run in a
worker thread with the GIL released (``nogil=True``) while the calling thread
waits in short sleeps: that is where KeyboardInterrupt arrives. The two
threads share a small *control* array (int64):

* ``control[REQUEST]``: 0 = go on; :data:`STOP` = return as soon as the state
  is consistent (the kernels poll it at every instant and every job of a pass);
  :data:`PAUSE` = return at the next instant boundary, from which the run can
  go on exactly as if it had never stopped (checkpoints use it).
* ``control[NOW]`` / ``control[DONE]``: the simulated time and the number of
  jobs finished so far, written by the kernel, read by progress bars.

:func:`call` runs a kernel so; a stop request ends in :class:`Interrupted`.
"""
from __future__ import annotations

import signal
import threading

import numpy as np

REQUEST, NOW, DONE = 0, 1, 2
STOP, PAUSE = 1, 2

#: how long the waiting thread sleeps between looks at the kernel (s)
TICK = 0.1
#: after a stop request, how long to wait for the kernel to return (s); a kernel
#: still compiling cannot be stopped, and is left to end with the process
GRACE = 2.0


class Interrupted(KeyboardInterrupt):
    """A run stopped on request (Ctrl-C, SIGTERM) before it finished.

    ``at``: the simulated time reached (None if unknown); ``done``: the jobs
    finished by then; ``signum``: the signal that asked (SIGINT unless told).
    No result is returned: what the run had produced is dropped, never
    presented as whole. A KeyboardInterrupt (not an Exception), so code that
    handles Ctrl-C keeps working and ``except Exception`` does not swallow it.
    """

    def __init__(self, at=None, done=None, signum: int = signal.SIGINT):
        self.at, self.done, self.signum = at, done, signum
        where = "" if at is None else f" at simulated time {at:,}"
        jobs = "" if done is None else f" after {done:,} jobs"
        super().__init__(f"interrupted{where}{jobs}")


def new_control() -> np.ndarray:
    """A fresh control array (go on; nothing done yet)."""
    return np.zeros(4, dtype=np.int64)


def call(kernel, *args, control: np.ndarray, tick=None):
    """``kernel(*args)`` in a worker thread; returns its result.

    ``tick()`` (e.g. a progress bar's refresh) is called every :data:`TICK`
    seconds while it runs. On KeyboardInterrupt (or a signal turned into one by
    :func:`signals_interrupt`) the kernel is asked to stop and
    :class:`Interrupted` is raised, carrying the simulated time and jobs done.
    The kernel's own exceptions are re-raised here.
    """
    out = {}

    def work():
        try:
            out["value"] = kernel(*args)
        except BaseException as e:          # handed to the calling thread
            out["error"] = e

    worker = threading.Thread(target=work, name="fastsched-kernel", daemon=True)
    try:
        worker.start()
        while worker.is_alive():
            worker.join(TICK)
            if tick is not None:
                tick()
    except KeyboardInterrupt as e:
        control[REQUEST] = STOP
        worker.join(GRACE)
        raise Interrupted(int(control[NOW]) if control[NOW] else None, int(control[DONE]),
                          getattr(e, "signum", signal.SIGINT)) from None
    if "error" in out:
        raise out["error"]
    return out["value"]


class _Terminated(KeyboardInterrupt):
    """SIGTERM, delivered like Ctrl-C."""

    signum = signal.SIGTERM


def signals_interrupt() -> None:
    """Make SIGTERM stop a run as Ctrl-C does (the CLI calls this once)."""
    def handler(signum, frame):
        raise _Terminated()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)
