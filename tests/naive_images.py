"""The twin of the engine's container images (:mod:`fastsched.engine.images`): a
per-node cache of image names, least recently used first, and the pull a start pays."""


def pull(job, chosen, images, caches):
    """The pull of ``job`` starting on ``chosen``; its image is then on every one of
    them, the most recently used there."""
    image_of, seconds, capacity = images[0], images[1], images[2]
    image = image_of.get(job.job_id)
    if image is None:
        return 0
    missing = any(image not in caches[x] for x in chosen)
    for x in chosen:
        caches[x].pop(image, None)
        caches[x][image] = None
        while len(caches[x]) > capacity:
            caches[x].popitem(last=False)
    return seconds[image] if missing else 0
