"""Stopping a compiled run when asked (Ctrl-C, SIGTERM), and watching it go.

A compiled kernel never returns to the interpreter on its own, so Python's
signal handlers cannot run while it does. Long kernels therefore run in a
worker thread with the GIL released (``nogil=True``) while the calling thread
waits in short sleeps: that is where KeyboardInterrupt arrives. The two
threads share a small *control* array (int64):

* ``control[REQUEST]``: 0 = go on; :data:`STOP` = return as soon as the state
  is consistent (the kernels poll it at every instant and every job of a pass);
  :data:`PAUSE` = return at the next instant boundary (after at least one
  instant: a pause always makes progress), from which the run can go on exactly
  as if it had never stopped (tests/test_interrupt.py checks it).
* ``control[NOW]`` / ``control[DONE]``: the simulated time and the number of
  jobs finished so far, written by the kernel, read by progress bars.

:func:`call` runs a kernel so; a stop request ends in :class:`Interrupted`.
"""
from __future__ import annotations

import os
import signal
import threading

import numpy as np

REQUEST, NOW, DONE = 0, 1, 2
#: the worker threads' name
KERNEL_THREAD = "fastsched-kernel"
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
    seconds while it runs, and once when it has returned. On KeyboardInterrupt
    (or a signal turned into one by :func:`signals_interrupt`) the kernel is
    asked to stop and :class:`Interrupted` is raised, carrying the simulated
    time and jobs done.
    The kernel's own exceptions are re-raised here.
    """
    worker = _take_worker()
    try:
        worker.start(kernel, args)
        while not worker.wait(TICK):
            if tick is not None:
                tick()
        if tick is not None:
            tick()
    except KeyboardInterrupt as e:
        control[REQUEST] = STOP
        worker.wait(GRACE)
        raise interrupted(control, e) from None
    finally:
        if worker.returned():       # (one still running is not handed out again)
            _give_back(worker)
    return worker.result()


class _Worker:
    """A thread that runs kernels handed to it, one at a time (starting a thread
    per call would cost ~0.1 ms of CPU: the event loop may be called per
    PriorityCalcPeriod, tens of thousands of times). The hand-off is two locks,
    held while there is nothing to do: ``_go`` by the worker's side, ``_done`` by
    the caller's (an Event, a queue and a dict per call cost twice as much)."""

    def __init__(self):
        self._go, self._done = threading.Lock(), threading.Lock()
        self._go.acquire()
        self._done.acquire()
        self._task = self._value = self._error = None
        self._taken = True      # (caller's side) the last task's return was seen
        self.busy = False
        threading.Thread(target=self._serve, name=KERNEL_THREAD, daemon=True).start()

    def start(self, kernel, args) -> None:
        self._task, self._taken = (kernel, args), False
        self._go.release()

    def wait(self, timeout: float) -> bool:
        """Whether the task returned within ``timeout`` seconds."""
        if not self._taken:
            self._taken = self._done.acquire(timeout=timeout)
        return self._taken

    def returned(self) -> bool:
        """Whether the task handed out returned (its result is then taken with
        :meth:`result`)."""
        return self.wait(0)

    def result(self):
        value, error = self._value, self._error
        self._value = self._error = None
        if error is not None:
            raise error
        return value

    def _serve(self):
        while True:
            self._go.acquire()
            kernel, args = self._task
            self._task = None
            self.busy = True
            try:
                self._value = kernel(*args)
            except BaseException as e:      # handed to the calling thread
                self._error = e
            finally:
                self.busy = False
                self._done.release()


# Idle workers, shared by all calling threads: as many workers as calls ever ran at
# once, so callers never queue behind each other and short-lived threads leave none.
_lock = threading.Lock()
_idle: list = []
_all_workers: list = []


def _take_worker() -> _Worker:
    with _lock:
        if _idle:
            return _idle.pop()
    worker = _Worker()
    with _lock:
        _all_workers.append(worker)
    return worker


def _give_back(worker: _Worker) -> None:
    with _lock:
        _idle.append(worker)


def _forget_workers() -> None:
    """In a forked child: it has none of its parent's threads (nor a lock they held)."""
    global _lock
    _lock = threading.Lock()
    _idle.clear()
    _all_workers.clear()


os.register_at_fork(after_in_child=_forget_workers)


def kernel_running() -> bool:
    """True while some kernel still runs (e.g. one that was compiling when asked to stop)."""
    return any(w.busy for w in _all_workers)


def interrupted(control: np.ndarray, cause: KeyboardInterrupt) -> Interrupted:
    """The Interrupted for a run whose control array is ``control``."""
    if isinstance(cause, Interrupted):
        return cause
    return Interrupted(int(control[NOW]) if control[NOW] else None, int(control[DONE]),
                       getattr(cause, "signum", signal.SIGINT))


class _Terminated(KeyboardInterrupt):
    """SIGTERM, delivered like Ctrl-C."""

    signum = signal.SIGTERM


def signals_interrupt() -> None:
    """Make SIGTERM stop a run as Ctrl-C does (the CLI calls this once)."""
    def handler(signum, frame):
        raise _Terminated()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)
