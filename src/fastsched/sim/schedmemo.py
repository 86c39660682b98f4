"""The Scheduler's last pass, answered again while nothing it reads has changed.

A pass (:meth:`fastsched.Scheduler.schedule`) is a function of the Scheduler's state
and its arguments. Every mutation bumps the Scheduler's ``_version`` (submit, apply,
complete, the node events, a requeued job's return, a regrowth), so a pass at the
same ``now``, with the same options, over the same version gives the same decisions:
the memo returns them without planning. The key also holds what a pass reads besides
the versioned state: the options a caller may reassign (policy, depth, resolution,
window, the engine), the priorities object (a pass at another ``now`` may compute
new ones and keep them) and the availability array's content (a public array a
caller may edit in place). One entry: an embedding scheduler asks again at the same
``now`` until it changes something.
"""
from __future__ import annotations

import numpy as np


class PassMemo:
    """The decisions of the last kept pass and the key they answer."""

    def __init__(self):
        self.clear()

    def clear(self) -> None:
        self._key, self._available, self._decisions = None, None, None

    def get(self, s, now: int, full: bool):
        """The decisions of a pass at ``now`` (``full``) over Scheduler ``s`` if the
        memo holds them, else None."""
        if self._key is None or not _same_key(self._key, _key(s, now, full)) or \
                not np.array_equal(self._available, s.available):
            return None
        return self._decisions

    def put(self, s, now: int, full: bool, decisions) -> None:
        """``decisions`` answer a pass at ``now`` (``full``) over ``s`` as it is now
        (after the pass: the priorities it kept)."""
        self._key, self._available = _key(s, now, full), s.available.copy()
        self._decisions = decisions


def _key(s, now: int, full: bool) -> tuple:
    return (s._version, now, full, s.policy.name, s.reserve_depth, s.engine, s.resolution,
            s.window, s._priority)


def _same_key(a: tuple, b: tuple) -> bool:
    """The same key: equal options, and the very same priorities object."""
    return a[:-1] == b[:-1] and a[-1] is b[-1]
