"""A progress bar for a compiled run: jobs finished, simulated time, an ETA.

The kernels write the simulated time and the jobs finished into their control
array (:mod:`fastsched.engine.interrupt`); the waiting thread reads them here.
``progress``: True = always, False = never, None = only when stderr is a
terminal (and then only once the run has lasted a second).
"""
from __future__ import annotations

from ..engine.interrupt import DONE, NOW


def run_bar(total: int, progress: bool | None, desc: str = "simulating"):
    """A ``tick(control)`` that draws the bar, with ``.close()``; None when not shown."""
    if progress is False:
        return None
    from tqdm import tqdm
    bar = tqdm(total=total, unit="job", desc=desc, leave=False, delay=0 if progress else 1.0,
               disable=None if progress is None else False, dynamic_ncols=True)
    if bar.disable:
        bar.close()
        return None
    return _Bar(bar)


class _Bar:
    def __init__(self, bar):
        self.bar = bar

    def __call__(self, control) -> None:
        done = int(control[DONE])
        if done != self.bar.n:
            self.bar.set_postfix_str(f"simulated time {int(control[NOW]):,} s", refresh=False)
            self.bar.update(done - self.bar.n)

    def close(self) -> None:
        self.bar.close()
