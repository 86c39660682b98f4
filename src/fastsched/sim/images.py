"""Container images in a simulation: the engine's inputs and the summary's ``images``
part (:mod:`fastsched.model.images`; ``pull_workload``: the jobs as they ran, pull
included)."""
from __future__ import annotations

import numpy as np

from ..model.errors import InputError
from ..model.images import Containers, with_pull as pull_workload  # noqa: F401 (simulator)
from ..model.jobs import JobTable


def check_containers(containers: Containers | None, jobs: JobTable) -> None:
    if containers is None:
        return
    if not isinstance(containers, Containers):
        raise InputError(f"containers must be a fastsched.Containers, got "
                         f"{type(containers).__name__}", field="containers")
    if len(containers) != len(jobs):
        raise InputError(f"containers cover {len(containers)} jobs, the table has "
                         f"{len(jobs)}", field="containers")


def engine_images(containers: Containers, cache_of=None) -> tuple:
    """(image id per job, pull seconds per image id, images a node caches[, per node
    the node whose cache it uses: ``cache_of``, e.g. the twin layout's ``node_of``]):
    the ``images`` argument of :func:`fastsched.engine.loop.run_nodes`."""
    ids, seconds = containers.codes()
    out = ids, seconds, int(containers.pull.capacity)
    return out if cache_of is None else out + (np.asarray(cache_of, dtype=np.int64),)


def images_summary(jobs: JobTable, run, attempts: dict | None,
                   containers: Containers) -> dict:
    """The summary's ``images``: starts that pulled (``pulls``: attempts, each pulling
    on the nodes lacking the image), ``images_pulled`` (node by node), the pull
    seconds and pull GPU-hours (pull x the job's GPUs, over every attempt), the
    jobs with an image, and the model's cache size and default pull."""
    if attempts is not None:
        row, pull = attempts["row"], attempts["pull"]
    else:
        row = np.flatnonzero(run.start >= 0)
        pull = run.pull[row]
    gpus = jobs.num_nodes[row].astype(np.float64) * jobs.gpus_per_node[row]
    return {"jobs_with_image": int(sum(1 for v in containers.image.tolist() if v)),
            "pulls": int((pull > 0).sum()),
            "images_pulled": int(run.images_pulled),
            "pull_seconds": int(pull.sum()),
            "pull_gpu_hours": float(np.dot(gpus, pull)) / 3600.0,
            "cache": int(containers.pull.capacity),
            "default_pull": int(containers.pull.default)}


def images_line(summary: dict) -> str:
    """One line on what image pulls cost a run (its summary's ``images``)."""
    im = summary["images"]
    return (f"container images: {im['pulls']:,} start(s) pulled ({im['images_pulled']:,} "
            f"node pulls, cache {im['cache']} per node); {im['pull_gpu_hours']:,.1f} GPU-h "
            "pulling")
