"""External events on the cluster during a run: nodes drained and resumed (Slurm's
``scontrol update nodename=... state=drain|resume``), failed and back (``down``:
the jobs running there are killed, NODE_FAIL, and requeued when they may be;
``up``), as a table the engine takes through one entry point
(:meth:`fastsched.engine.loop._EventLoop.apply_node_event`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InputError, UnsupportedError

#: event kinds, in code order
NODE_EVENT_KINDS = ("drain", "resume", "down", "up")
#: the kinds the engine applies: a drained node takes no new job (its running jobs
#: go on to their ends); a down one takes none either and its running jobs are
#: killed; a resumed or up one takes jobs again (either clears drain and down)
MODELLED_KINDS = ("drain", "resume", "down", "up")


@dataclass(frozen=True)
class NodeEvents:
    """Events sorted by time (stable): event e at ``time[e]`` of kind
    ``NODE_EVENT_KINDS[kind[e]]`` on the node indices
    ``nodes[offsets[e]:offsets[e + 1]]``, for ``reason[e]``."""

    time: np.ndarray
    kind: np.ndarray
    offsets: np.ndarray
    nodes: np.ndarray
    reason: tuple = ()

    @classmethod
    def from_rows(cls, rows, num_nodes: int) -> "NodeEvents":
        """From ``(time, kind name, node indices[, reason])`` rows, in any order."""
        rows = sorted((tuple(r) for r in rows), key=lambda r: r[0])
        for r in rows:
            if r[1] not in NODE_EVENT_KINDS:
                raise InputError(f"unknown node event {r[1]!r}; choose one of "
                                 f"{', '.join(NODE_EVENT_KINDS)}", field="event")
            if int(r[0]) < 0:
                raise InputError(f"node event at negative time {r[0]}", field="time")
            bad = [x for x in r[2] if not 0 <= int(x) < num_nodes]
            if bad or not len(r[2]):
                raise InputError(f"node event at {r[0]}: node index {bad[0] if bad else None} "
                                 f"is not one of the cluster's {num_nodes} nodes", field="nodes")
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([len(r[2]) for r in rows], out=offsets[1:])
        nodes = np.array([int(x) for r in rows for x in r[2]], dtype=np.int64)
        return cls(np.array([int(r[0]) for r in rows], dtype=np.int64),
                   np.array([NODE_EVENT_KINDS.index(r[1]) for r in rows], dtype=np.int8),
                   offsets, nodes, tuple(r[3] if len(r) > 3 else "" for r in rows))

    @classmethod
    def merged(cls, *tables: "NodeEvents") -> "NodeEvents":
        """The events of ``tables`` in one table, by time (at equal times, in the order
        of the tables)."""
        time = np.concatenate([t.time for t in tables])
        order = np.argsort(time, kind="stable")
        offsets = np.zeros(len(time) + 1, dtype=np.int64)
        np.cumsum(np.concatenate([np.diff(t.offsets) for t in tables])[order], out=offsets[1:])
        starts = np.concatenate([t.offsets[:-1] + base for t, base in
                                 zip(tables, np.cumsum([0] + [len(t.nodes) for t in tables]))])
        counts = np.diff(offsets)
        index = np.arange(offsets[-1], dtype=np.int64) + np.repeat(starts[order] - offsets[:-1],
                                                                  counts)
        reason = sum((tuple(t.reason) or ("",) * len(t) for t in tables), ())
        return cls(time[order], np.concatenate([t.kind for t in tables])[order], offsets,
                   np.concatenate([t.nodes for t in tables])[index],
                   tuple(reason[k] for k in order))

    def __len__(self) -> int:
        return len(self.time)

    def at(self, e: int) -> tuple[int, str, np.ndarray]:
        """Event ``e`` as (time, kind name, node indices)."""
        return (int(self.time[e]), NODE_EVENT_KINDS[self.kind[e]],
                self.nodes[self.offsets[e]:self.offsets[e + 1]])

    def check_modelled(self) -> None:
        """UnsupportedError if an event is of a kind no engine models yet."""
        for e in range(len(self)):
            t, kind, _ = self.at(e)
            if kind not in MODELLED_KINDS:
                raise UnsupportedError(
                    f"node event {kind!r} at {t} is not modelled; "
                    f"{', '.join(MODELLED_KINDS)} are")
