"""Container images (pyxis ``--container-image``): what pulling them costs a job.

pyxis (NVIDIA's SPANK plugin) imports a job's image with enroot on every node of the
allocation when the job step starts (``enroot import`` then ``enroot create``:
``enroot_container_create``, called from ``slurm_spank_user_init`` in pyxis'
``pyxis_slurmstepd.c``): the pull happens inside the job, on its nodes, after Slurm
started it. So a pull lengthens the job's run and counts against its time limit.
(pyxis' ``--container-cache`` keeps the container on the node for later jobs and
marks it recently used there: the cache below.)

The model: each node keeps a cache of at most ``capacity`` images, evicting the least
recently used beyond it. A job with an image that starts on nodes where any node lacks
it runs ``pull + runtime`` (capped by its limit: past it, TIMEOUT), where ``pull`` is
the image's pull seconds (``seconds[image]``, else ``default``); a job whose nodes all
hold the image pays nothing. After the start every node of the job holds the image
(the most recently used there). A job without an image is unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import InputError
from .jobs import JOB_FIELDS, JobTable

#: duration suffixes of ``ImagePull.parse``
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class ImagePull:
    """How long pulling an image takes (``default`` seconds, or ``seconds[image]``) and
    how many images a node keeps (``capacity``, least recently used evicted; 0: none,
    every start pulls)."""

    default: int = 120
    capacity: int = 4
    seconds: dict = field(default_factory=dict)

    def __post_init__(self):
        for name, value in [("default", self.default), ("cache", self.capacity)] + \
                [(str(k), v) for k, v in self.seconds.items()]:
            if isinstance(value, bool) or int(value) != value or value < 0 or value > 2**40:
                raise InputError(f"image pull: {name}={value!r} must be a whole number >= 0",
                                 field="image_pull")
        for image in self.seconds:
            if not isinstance(image, str) or not image.strip():
                raise InputError(f"image pull: bad image name {image!r}", field="image_pull")

    @classmethod
    def parse(cls, text: str) -> "ImagePull":
        """From ``default=120s,cache=4[,IMAGE=SECONDS...]`` (durations: 90, 90s, 10m, 2h;
        an image name may hold ``=``: the last one splits it)."""
        out, seconds = {}, {}
        for item in str(text).split(","):
            key, sep, value = item.strip().rpartition("=")
            key = key.strip()
            if not sep or not key:
                raise InputError(f"image pull: {item.strip()!r} is not key=value (default=120s,"
                                 "cache=4[,IMAGE=SECONDS...])", field="image_pull")
            if key.lower() in ("default", "cache"):
                name = key.lower()
                if name in out:
                    raise InputError(f"image pull: {name} given twice", field="image_pull")
                out[name] = _seconds(value, key) if name == "default" else _count(value)
            else:
                if key in seconds:
                    raise InputError(f"image pull: image {key!r} given twice",
                                     field="image_pull")
                seconds[key] = _seconds(value, key)
        return cls(default=out.get("default", 120), capacity=out.get("cache", 4),
                   seconds=seconds)

    def pull_seconds(self, names: list[str]) -> np.ndarray:
        """Each image's pull seconds (int64, in the order of ``names``)."""
        return np.array([self.seconds.get(n, self.default) for n in names], dtype=np.int64)


@dataclass(frozen=True)
class Containers:
    """Per job (the workload's order) its image (``image``: str, "" = none) and the
    pull model ``pull``: the ``containers`` argument of :func:`fastsched.simulate`."""

    image: np.ndarray
    pull: ImagePull = field(default_factory=ImagePull)

    def __post_init__(self):
        image = np.asarray(self.image, dtype=object)
        if image.ndim != 1:
            raise InputError("containers: image must be one name per job", field="image")
        bad = [i for i, v in enumerate(image.tolist()) if not isinstance(v, str)]
        if bad:
            raise InputError(f"containers: job row {bad[0]}: image {image[bad[0]]!r} is not "
                             "a string ('' = none)", field="container_image")
        object.__setattr__(self, "image", image)

    @classmethod
    def of(cls, images, pull: ImagePull | str | None = None) -> "Containers":
        """From per-job image names (None or "" = none) and a pull model (or its text)."""
        pull = ImagePull() if pull is None else \
            (ImagePull.parse(pull) if isinstance(pull, str) else pull)
        return cls(np.array(["" if v is None else v for v in images] + [None],
                            dtype=object)[:-1], pull)

    def __len__(self) -> int:
        return len(self.image)

    def codes(self) -> tuple[np.ndarray, np.ndarray]:
        """(image id per job, int64, -1 = none; pull seconds per image id, int64)."""
        names = sorted({v for v in self.image.tolist() if v})
        index = {n: k for k, n in enumerate(names)}
        ids = np.array([index.get(v, -1) for v in self.image.tolist()], dtype=np.int64)
        return ids, self.pull.pull_seconds(names)


def with_pull(jobs: JobTable, pull) -> JobTable:
    """``jobs`` with each runtime lengthened by its image pull (``pull`` seconds per
    job; None: ``jobs`` itself): what each job ran, as the metrics and the checks see
    it (a pull runs inside the job)."""
    if pull is None:
        return jobs
    columns = {f: getattr(jobs, f) for f in JOB_FIELDS}
    columns["runtime"] = jobs.runtime + np.asarray(pull, dtype=np.int64)
    return JobTable(**columns)


def _seconds(text: str, key: str) -> int:
    t = text.strip().lower()
    unit = _UNITS.get(t[-1:]) if t else None
    number = t[:-1] if unit else t
    try:
        value = float(number) * (unit or 1)
    except ValueError:
        raise InputError(f"image pull: {key}={text!r} is not a duration (90, 90s, 10m, 2h)",
                         field="image_pull") from None
    if not value >= 0 or value > 2**40 or value != int(value):
        raise InputError(f"image pull: {key}={text!r} must be a whole number of seconds >= 0",
                         field="image_pull")
    return int(value)


def _count(text: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        value = -1
    if value < 0:
        raise InputError(f"image pull: cache={text!r} must be a whole number of images >= 0",
                         field="image_pull")
    return value
