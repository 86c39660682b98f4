"""Container images in the embeddable :class:`fastsched.Scheduler`: each node's image
cache and what a start pulls, by the simulator's rule (:mod:`fastsched.model.images`,
:mod:`fastsched.engine.images`).

Per node ``capacity`` slots of image ids (``slots``, -1: empty) with the stamp of
their last use (``used``: one counter over all uses, so that least recently used is a
strict order). A pass computes its starts' pulls on a copy of the caches of their nodes
only (:meth:`SchedulerImages.pulls`, the what-if); :meth:`fastsched.Scheduler.apply`
computes them again and keeps the caches (``commit``): O(the started jobs' nodes x
capacity) either way. A node that fails or is drained keeps its cache, as in the
simulator; so do the nodes of a preempted job (its requeued attempt pulls again only
where a node lacks its image, like any start).
"""
from __future__ import annotations

import numpy as np

from ..model.images import Containers
from .images import check_containers


class SchedulerImages:
    """The image caches of a Scheduler's nodes and the image of each job of its table
    (catalog rows)."""

    def __init__(self, containers: Containers, jobs, num_nodes: int):
        check_containers(containers, jobs)
        self.image, self.seconds = containers.codes()
        self.names = sorted({v for v in containers.image.tolist() if v})   # per image id
        shape = (num_nodes, int(containers.pull.capacity))
        self.slots = np.full(shape, -1, dtype=np.int64)
        self.used = np.zeros(shape, dtype=np.int64)
        self.uses = 0              # stamps given so far
        self.node_pulls = 0        # images pulled, node by node
        #: per catalog row, the pull of the attempt it runs now (or ran last), as the
        #: simulator keeps it: a preempted attempt's checkpoints count from its end
        self.pull = np.zeros(len(self.image), dtype=np.int64)

    def pulls(self, rows: np.ndarray, node_lists: list, *, commit: bool) -> np.ndarray:
        """The pull (seconds) of each job of ``rows`` started, in this order, on its
        nodes (``node_lists``): its image's pull when any of its nodes lacks the image,
        else 0; after each start its nodes hold the image (the least recently used
        evicted). ``commit``: keep the caches so changed."""
        touched: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        uses, node_pulls = self.uses, self.node_pulls
        out = np.zeros(len(rows), dtype=np.int64)
        for k, (row, nodes) in enumerate(zip(rows.tolist(), node_lists)):
            image = int(self.image[row])
            if image < 0:
                continue
            missing = False
            for x in nodes:
                if x not in touched:
                    touched[x] = (self.slots[x].copy(), self.used[x].copy())
                slots, used = touched[x]
                hit = np.flatnonzero(slots == image)
                slot = int(hit[0]) if len(hit) else -1
                if slot < 0:
                    missing = True
                    node_pulls += 1
                    if len(slots):            # the least recently used slot (empty: 0)
                        slot = int(np.argmin(used))
                        slots[slot] = image
                if slot >= 0:
                    uses += 1
                    used[slot] = uses
            out[k] = self.seconds[image] if missing else 0
        if commit:
            for x, (slots, used) in touched.items():
                self.slots[x], self.used[x] = slots, used
            self.uses, self.node_pulls = uses, node_pulls
            self.pull[rows] = out
        return out

    def cached(self, node: int) -> list[str]:
        """The images node ``node`` holds, most recently used first."""
        keep = self.slots[node] >= 0
        ids = self.slots[node][keep][np.argsort(-self.used[node][keep])]
        return [self.names[i] for i in ids.tolist()]
