"""Container images in the event loop: each node's image cache and the pull a start
costs (:mod:`fastsched.model.images` says what pyxis does).

The cache lives where starts happen, in the compiled loop (node ids are known only
there): per node ``capacity`` slots of image ids (``ids``, -1: empty) with the stamp
of their last use (``used``: a counter over all uses, so that least recently used is
a strict order). A node's cache is row ``row[node]``: a twin node of an advance
reservation's member jobs (:mod:`fastsched.sim.resvlayout`) is the same physical node,
whose disk holds one cache for both. :func:`start_pull` runs once per start, after the
pass that started the job: O(the job's nodes x capacity).
"""
from __future__ import annotations

from .. import _jitcache  # noqa: F401  (first: the cached kernels below are keyed on it)
from collections import namedtuple

import numpy as np

from .leafkernel import leaf_kernel

#: per job (submit order) its image id (``image``, -1: none) and the pull its last
#: attempt paid (``pull``, seconds; 0 too before it starts); per image id its pull seconds;
#: per node its cache slots ``ids``/``used`` [nodes, capacity]; ``count`` = [uses so
#: far, node pulls so far]; per node the row of the cache it uses (``row``)
ImageCache = namedtuple("ImageCache", ["image", "pull", "seconds", "ids", "used", "count",
                                       "row"])


def new_image_cache(n: int, num_nodes: int, image=None, seconds=None,
                    capacity: int = 0, row=None) -> ImageCache:
    """The cache of a run of ``n`` jobs (``image`` per job in submit order; None: no
    job has one, and starts cost nothing) on ``num_nodes`` empty nodes; ``row``: per
    node the node whose cache it shares (None: its own)."""
    image = np.full(n, -1, dtype=np.int64) if image is None else \
        np.ascontiguousarray(image, dtype=np.int64)
    seconds = np.zeros(0, dtype=np.int64) if seconds is None else \
        np.ascontiguousarray(seconds, dtype=np.int64)
    shape = (num_nodes, int(capacity))
    row = np.arange(num_nodes, dtype=np.int64) if row is None else \
        np.ascontiguousarray(row, dtype=np.int64)
    return ImageCache(image, np.zeros(n, dtype=np.int64), seconds,
                      np.full(shape, -1, dtype=np.int64), np.zeros(shape, dtype=np.int64),
                      np.zeros(2, dtype=np.int64), row)


@leaf_kernel
def start_pull(j, jobs, out, im):
    """Job ``j`` just started on its nodes (``out.alloc_nodes`` at ``jobs.offsets[j]``):
    its pull is its image's pull seconds if any of its nodes' caches lacks the image, else 0;
    every node of the job then holds the image (the least recently used evicted
    beyond capacity). The job's end becomes start + min(pull + runtime, limit).
    Returns the pull."""
    im_j = im.image[j]
    if im_j < 0:
        im.pull[j] = 0
        return 0
    lo = jobs.offsets[j]
    hi = lo + jobs.nn[j]
    cap = im.ids.shape[1]
    missing = False
    for q in range(lo, hi):
        x = im.row[out.alloc_nodes[q]]
        slot = _slot_of(x, im_j, im.ids, cap)
        if slot < 0:
            missing = True
            im.count[1] += 1
            slot = _oldest(x, im.used, cap)
            if slot >= 0:
                im.ids[x, slot] = im_j
        if slot >= 0:
            im.count[0] += 1
            im.used[x, slot] = im.count[0]
    pull = im.seconds[im_j] if missing else 0
    im.pull[j] = pull
    out.end[j] = out.start[j] + min(jobs.runtime[j] + pull, jobs.limit[j])
    return pull


@leaf_kernel
def _slot_of(x, image, ids, cap):
    """Node ``x``'s slot holding ``image`` (-1: none)."""
    for s in range(cap):
        if ids[x, s] == image:
            return s
    return -1


@leaf_kernel
def _oldest(x, used, cap):
    """Node ``x``'s least recently used slot (an empty one first: stamp 0; -1: no slot)."""
    best = -1
    for s in range(cap):
        if best < 0 or used[x, s] < used[x, best]:
            best = s
    return best
